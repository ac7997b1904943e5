#!/bin/bash
# array-vs-slurm.sh: the issue's comparison in one run: gpool's N-task array (bench/array.sh,
# 4 netns hosts x 8 slots), then Slurm's `sbatch --array=1-N` tuned on the same 32 slots
# (bench/slurm/slurm-throughput.sh, ARRAY=1, OverSubscribe=FORCE:16 on this machine's 2 cores),
# then gpool's again, so Slurm sits between two gpool runs of the same build and any drift in
# the machine's load shows as a difference between those two. The load average is printed
# before each run (the machine may be shared). gpool's runs hold the netns lock; Slurm's does
# not need it.
#   usage: bench/array-vs-slurm.sh [N]      (default 10000)
set -uo pipefail
N=${1:-10000}
HERE=$(cd "$(dirname "$0")" && pwd)
LOCK=${GPOOL_NETNS_LOCK:-/tmp/gpool-netns.lock}
stamp() { echo "== $(date -u +%H:%M:%S) $* (load average: $(cut -d' ' -f1-3 /proc/loadavg))"; }
gpool_run() {
	stamp "gpool bench/array.sh $N ($1)"
	flock "$LOCK" "$HERE/array.sh" "$N"
	echo "rc=$?"
}
gpool_run first
stamp "slurm sbatch --array=1-$N, 32 slots"
ARRAY=1 LAT_M=5 SLURM_OVERSUBSCRIBE=FORCE:16 "$HERE/slurm/slurm-throughput.sh" "$N" 1
echo "rc=$?"
gpool_run second
stamp end
