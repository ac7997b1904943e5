#!/bin/bash
# private-tmp.sh: what a job's own /tmp costs its start (docs/benchmarks/security.md). Runs
# bench/start-latency.sh on a fresh 4-host cluster for each of private_tmp = off, scratch and
# tmpfs, ROUNDS times in turn (off, scratch, tmpfs, off, ...), so that the machine's load drifts
# over all three alike; each run prints start-latency's lines, prefixed by its mode and round.
#   usage: bench/private-tmp.sh [M] [ROUNDS]   (M jobs a run, default 30; ROUNDS default 2)
set -euo pipefail
M=${1:-30}
ROUNDS=${2:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "private-tmp: needs root" >&2; exit 1; }
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
	for mode in off scratch tmpfs; do
		GPOOL_CLUSTER_CONF_EXTRA="private_tmp = $mode" "$HERE/start-latency.sh" "$M" 2>/dev/null |
			sed "s/^/$mode round $r: /"
	done
done
echo "# done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
