# gpool.bash: bash completion for every gpool command (gsub, gstat, gcancel, gacct, glogs,
# gnodes, gpool, gcheck, gschedd, gworkerd). The options come from the command's own --help,
# so a new option completes without an edit here; values that name something are completed
# from what they name: job ids (pending and running, and an array's tasks as 12_7) for the
# commands that take jobs, node names for --nodelist / --exclude / -w / -x, files for scripts,
# --stage, --config and --output. The gpool-client package installs it in
# /usr/share/bash-completion/completions/ under each command's name; from a build tree, source
# it from ~/.bashrc.

_gpool_options() { # the --long options of command $1, from its --help
	"$1" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*=?' | sort -u
}

_gpool_jobs() { # job ids in the queue, array tasks as ARRAY_INDEX
	gstat --json 2>/dev/null | python3 -c '
import json, sys
try:
    for j in json.load(sys.stdin).get("jobs", []):
        if j.get("array_job_id"):
            print("%s_%s" % (j["array_job_id"], j.get("array_task_id", 0)))
            print(j["array_job_id"])
        print(j["id"])
except Exception:
    pass' 2>/dev/null | sort -u
}

_gpool_nodes() {
	gnodes --json 2>/dev/null | python3 -c '
import json, sys
try:
    for n in json.load(sys.stdin).get("nodes", []):
        print(n["name"])
except Exception:
    pass' 2>/dev/null
}

_gpool_complete() {
	local cur prev cmd
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[0]##*/}
	COMPREPLY=()
	# -o is a field list for gstat and gnodes (squeue's and sinfo's -o), a file for gsub
	if [[ $cmd == gstat || $cmd == gnodes ]] && [[ $prev == -o || $prev == --format ]]; then
		local fields="'%.8i %j %u %t %M %D %R'"
		[ "$cmd" = gnodes ] && fields="'%N %t %C %m %G %E'"
		mapfile -t COMPREPLY < <(compgen -W "$fields" -- "$cur")
		return
	fi
	case $prev in
	-w | --nodelist | -x | --exclude)
		mapfile -t COMPREPLY < <(compgen -W "$(_gpool_nodes)" -- "$cur")
		return ;;
	--config | --stage | -o | --output | -e | --error | -D | --chdir)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	-d | --dependency)
		mapfile -t COMPREPLY < <(compgen -W "after: afterok: afternotok: afterany: singleton" -- "$cur")
		compopt -o nospace 2>/dev/null
		return ;;
	--gpu-vendor)
		mapfile -t COMPREPLY < <(compgen -W "nvidia amd any" -- "$cur")
		return ;;
	esac
	if [[ $cur == --*=* ]]; then
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_gpool_options "${COMP_WORDS[0]}")" -- "$cur")
		[[ ${COMPREPLY[0]:-} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	case $cmd in
	gcancel | glogs | gstat | gacct)
		mapfile -t COMPREPLY < <(compgen -W "$(_gpool_jobs)" -- "$cur") ;;
	gpool)
		if [ "$COMP_CWORD" = 1 ]; then
			mapfile -t COMPREPLY < <(compgen -W "hold release priority power cost version" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_gpool_jobs)" -- "$cur")
		fi ;;
	gsub)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	gnodes)
		mapfile -t COMPREPLY < <(compgen -W "drain resume $(_gpool_nodes)" -- "$cur") ;;
	esac
}

complete -F _gpool_complete gsub gstat gcancel gacct glogs gnodes gpool gcheck gschedd gworkerd
