#!/bin/bash
# pty-latency.sh [RUNS]: time from `gsub --pty` to its task's exit (one-node netns cluster,
# `sh -c 'echo ready'`, stdin /dev/null) against `gsub --wait` for the same job, and from
# `gsub --pty -- bash -i` on a real terminal to the shell's prompt (bench/pty-prompt.py:
# "prompt" lines; "local-prompt" the same bash started here), RUNS each (default 12), as
# gpool-user. Run as root, under the system tests' lock:
#   flock /tmp/gpool-netns.lock bench/pty-latency.sh
# Prints "pty SECONDS" and "wait SECONDS" lines, then the medians. SLURM=1: the same two on
# Debian's Slurm in the same run (bench/slurm/lib-slurm.sh: a private slurmctld + slurmd on
# this machine, jobs as root): `srun --pty` and plain `srun` ("srun-pty", "srun" lines) and
# `srun --pty bash -i` to its prompt ("srun-prompt").
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-12}
bin=${GPOOL_BIN_DIR:-$here/build/bin}
dir=$(mktemp -d /tmp/gpool-ptybench.XXXXXX)
chmod 0755 "$dir"
"$here/deploy/gpool-cluster" start -n 1 --dir "$dir/cluster" --bin "$bin" --timeout 60 --cpus 2 \
	>/dev/null 2>&1 || { echo "pty-latency: the cluster did not start" >&2; exit 1; }
trap '"$here/deploy/gpool-cluster" stop --dir "$dir/cluster" >/dev/null 2>&1; rm -rf "$dir"' EXIT
eval "$("$here/deploy/gpool-cluster" env --dir "$dir/cluster")"
as_user() {
	runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"
}
cd /tmp || exit 1
SHELL_CMD=(env "PS1=gp-prompt-ready\$ " bash --norc --noprofile -i)
PROMPT=$here/bench/pty-prompt.py
for mode in pty wait; do
	for _ in $(seq 1 "$runs"); do
		t0=$(date +%s.%N)
		if [ $mode = pty ]; then
			as_user "$bin/gsub" --pty -- /bin/sh -c 'echo ready' </dev/null >/dev/null 2>&1
		else
			as_user "$bin/gsub" --wait -- /bin/sh -c 'echo ready' >/dev/null 2>&1
		fi
		echo "$mode $(echo "$(date +%s.%N) - $t0" | bc)"
	done
done | tee "$dir/times"
for _ in $(seq 1 "$runs"); do
	echo "local-prompt $(as_user python3 "$PROMPT" "${SHELL_CMD[@]}")"
	echo "prompt $(as_user python3 "$PROMPT" "$bin/gsub" --pty -- "${SHELL_CMD[@]}")"
done | tee -a "$dir/times"
if [ "${SLURM:-0}" = 1 ]; then
	(
		log() { printf '[pty-latency] %s\n' "$*" >&2; }
		die() { log "ERROR: $*"; exit 1; }
		SCHED_PARAMS='' OVERSUB=NO SLURM_EXTRA_CONF=''
		# shellcheck source=bench/slurm/lib-slurm.sh
		. "$here/bench/slurm/lib-slurm.sh"
		for mode in srun-pty srun; do
			for _ in $(seq 1 "$runs"); do
				t0=$(date +%s.%N)
				if [ $mode = srun-pty ]; then
					srun --pty /bin/sh -c 'echo ready' </dev/null >/dev/null 2>&1
				else
					srun /bin/sh -c 'echo ready' </dev/null >/dev/null 2>&1
				fi
				echo "$mode $(echo "$(date +%s.%N) - $t0" | bc)"
			done
		done
		for _ in $(seq 1 "$runs"); do
			echo "srun-prompt $(python3 "$PROMPT" srun --pty "${SHELL_CMD[@]}")"
		done
	) | tee -a "$dir/times"
fi
for mode in pty wait srun-pty srun local-prompt prompt srun-prompt; do
	grep -q "^$mode " "$dir/times" || continue
	printf '%s median %s s\n' $mode "$(awk -v m=$mode '$1 == m {print $2}' "$dir/times" | sort -n |
		awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
done
