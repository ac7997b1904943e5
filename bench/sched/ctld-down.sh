#!/bin/bash
# ctld-down.sh: the scheduler down for DOWN seconds while a job runs, gpool beside Slurm on the
# same machine, the same job and the same one node (docs/benchmarks.md, "Scheduler outage
# against Slurm"; docs/reliability.md, "Scheduler outages").
#   Slurm: a private slurmctld + slurmd (bench/slurm/lib-slurm.sh). gpool: a 1-host netns
#   cluster (deploy/gpool-cluster). On each: one 1-task job that writes a tick a second for
#   DOWN + 40 s; 5 s into it the scheduler is SIGKILLed; a submission is tried while it is down;
#   after DOWN s it is started again (Slurm: its saved state, no -i); then
#   - the job's ticks: how many, the longest gap (a job killed or frozen shows a gap or stops),
#   - how it ended and in which run (Slurm's Restarts, gpool's attempt),
#   - a submission started 3 s into the outage (in the background): refused (its message) or
#     accepted once the scheduler is back (a client that retries rides through the outage),
#   - after the restart: seconds until a new trivial job has run (submit -> end).
# One JSON line per system on stdout; the raw log on stderr.
#   usage: bench/sched/ctld-down.sh [DOWN]      (default 60; as root: namespaces, Slurm)
set -euo pipefail
DOWN=${1:-60}
RUN=$((DOWN + 40))
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
CL="$TOP/deploy/gpool-cluster"
log() { printf '[ctld-down] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, slurmd)"

# ticks FILE: "count maxgap" of a file of epoch seconds, one a line
ticks() { sort -n "$1" | awk 'NR > 1 && $1 - p > g {g = $1 - p} {p = $1} END {printf "%d %d\n", NR, g}'; }
# outcome FILE: what a submission made during the outage printed: "accepted" (a job id alone
# on its last line) or "refused: <its first line>"
outcome() {
	if tail -n 1 "$1" | grep -qE '^[0-9]+$'; then echo accepted; else echo "refused: $(head -n 1 "$1" | tr '"' "'")"; fi
}
# ready_after CMD...: seconds from now until CMD (a submit that waits for its job) succeeds
ready_after() {
	local t0 t1
	t0=$(date +%s.%N)
	until "$@" >/dev/null 2>&1; do sleep 0.2; done
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}'
}

# ---- Slurm ---------------------------------------------------------------------------------
slurm_side() (
	SCHED_PARAMS='' OVERSUB=NO SLURM_EXTRA_CONF=''
	# shellcheck source=bench/slurm/lib-slurm.sh
	. "$TOP/bench/slurm/lib-slurm.sh"
	jid=$(sbatch --parsable -n 1 -o "$T/job.out" --wrap \
		"for i in \$(seq $RUN); do date +%s >>$T/ticks; sleep 1; done")
	until [ "$(squeue -h -j "$jid" -o %T 2>/dev/null)" = RUNNING ]; do sleep 0.2; done
	sleep 5
	kill -KILL "$CTLD_PID"
	wait "$CTLD_PID" 2>/dev/null || true
	log "slurm: slurmctld killed; job $jid keeps running? ${DOWN}s"
	sleep 3
	(sbatch --parsable -o /dev/null --wrap=/bin/true >"$T/during" 2>&1 || true) &
	during_pid=$!
	sleep $((DOWN - 3))
	slurm_ctld_start
	until squeue -h >/dev/null 2>&1; do sleep 0.2; done
	# sbatch --wait polls slowly: submit, then watch the queue as gpool's --wait would
	run_one() {
		local j
		j=$(sbatch --parsable -o /dev/null --wrap=/bin/true) || return 1
		while [ -n "$(squeue -h -j "$j" -o %i 2>/dev/null)" ]; do sleep 0.1; done
	}
	ready=$(ready_after run_one)
	wait "$during_pid" || true
	during=$(outcome "$T/during")
	until [ -z "$(squeue -h -j "$jid" -o %i 2>/dev/null)" ]; do sleep 0.5; done
	state=$(scontrol show job "$jid" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
	restarts=$(scontrol show job "$jid" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
	read -r n gap < <(ticks "$T/ticks")
	printf '{"system":"slurm","version":"%s","down_s":%d,"job_state":"%s","runs":%d,"ticks":%d,"expected_ticks":%d,"max_gap_s":%d,"submit_during_outage":"%s","ready_after_restart_s":%s}\n' \
		"$VERSION" "$DOWN" "$state" $((restarts + 1)) "$n" "$RUN" "$gap" "$during" "$ready"
)

# ---- gpool ---------------------------------------------------------------------------------
gpool_side() (
	D=$(mktemp -d /var/tmp/gpool-ctld-down.XXXXXX)
	trap '"$CL" stop --dir "$D" >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
	"$CL" users >/dev/null
	"$CL" start -n 1 --dir "$D" --bin "$BIN" --cpus 2 >&2
	eval "$("$CL" env --dir "$D")"
	export GPOOL_SCHEDULER GPOOL_CONF
	tk=$D/ticks
	: >"$tk" && chmod 666 "$tk"
	# field F of job J from gstat --json (the first record that has it)
	jf() { gstat --json -a -j "$1" 2>/dev/null | python3 -c '
import json, sys
def walk(x):
    if isinstance(x, dict):
        if sys.argv[1] in x and "state" in x:
            print(str(x[sys.argv[1]]).removeprefix("JOB_STATE_").upper()); sys.exit(0)
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(json.load(sys.stdin))' "$2"; }
	as_user() { runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" PATH="$PATH" "$@"; }
	jid=$(as_user gsub --parsable -n 1 -- /bin/sh -c \
		"for i in \$(seq $RUN); do date +%s >>$tk; sleep 1; done")
	until [ "$(jf "$jid" state)" = RUNNING ]; do sleep 0.2; done
	sleep 5
	"$CL" sched-kill --dir "$D" KILL
	log "gpool: gschedd killed; job $jid keeps running? ${DOWN}s"
	sleep 3
	(as_user gsub --parsable -- /bin/true >"$D/during" 2>&1 || true) &
	during_pid=$!
	sleep $((DOWN - 3))
	"$CL" sched-start --dir "$D" >&2
	until gstat >/dev/null 2>&1; do sleep 0.2; done
	ready=$(ready_after as_user gsub --wait -- /bin/true)
	wait "$during_pid" || true
	during=$(outcome "$D/during")
	until [[ "$(jf "$jid" state)" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$ ]]; do sleep 0.5; done
	state=$(jf "$jid" state)
	attempt=$(jf "$jid" attempt)
	read -r n gap < <(ticks "$tk")
	printf '{"system":"gpool","version":"%s","down_s":%d,"job_state":"%s","runs":%s,"ticks":%d,"expected_ticks":%d,"max_gap_s":%d,"submit_during_outage":"%s","ready_after_restart_s":%s}\n' \
		"$("$BIN/gpool" version | awk '{print $2}')" "$DOWN" "$state" "${attempt:-0}" "$n" "$RUN" "$gap" "$during" "$ready"
)

slurm_side
gpool_side
