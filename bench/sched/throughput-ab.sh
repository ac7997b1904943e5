#!/bin/bash
# throughput-ab.sh: bench/sched/throughput.sh (one gsub process per job, 4 netns hosts of 8
# slots: 32) for two builds, alternated A B A B ..., with Slurm's bench/slurm/slurm-throughput.sh
# on the same 32 slots (one node of 2 CPUs, OverSubscribe=FORCE:16) after the first pair, all
# in one run; the load average before each part (the machine is shared). Each part's JSON line
# and stderr go to stdout, each prefixed by its label.
#   usage: bench/sched/throughput-ab.sh A_BIN B_BIN [N] [PAR] [ROUNDS]   (defaults 1000 8 2)
#   run it under the netns lock: flock /tmp/gpool-netns.lock bench/sched/throughput-ab.sh ...
#   SLURM=0: no Slurm part; MANY, LAT_M: passed to throughput.sh (defaults here 0 and 50);
#   NAME_A, NAME_B: the labels of the two builds in the log (default A and B)
set -uo pipefail
A=${1:?usage: throughput-ab.sh A_BIN B_BIN [N] [PAR] [ROUNDS]}
B=${2:?usage: throughput-ab.sh A_BIN B_BIN [N] [PAR] [ROUNDS]}
N=${3:-1000}
PAR=${4:-8}
ROUNDS=${5:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

part() { # part LABEL CMD...: the command's stdout and stderr, each line prefixed
	local label=$1
	shift
	echo "[$label] $(date -u +%H:%M:%S) load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	"$@" 2>&1 | sed "s/^/[$label] /"
	echo "[$label] exit ${PIPESTATUS[0]}"
}
gpool() { # gpool LABEL BIN
	part "$1" env GPOOL_BIN_DIR="$2" MANY="${MANY:-0}" LAT_M="${LAT_M:-50}" \
		"$HERE/throughput.sh" "$N" "$PAR"
}

echo "A=$A ($(cat "$A/COMMIT" 2>/dev/null || echo '?')) B=$B N=$N PAR=$PAR rounds=$ROUNDS; $(nproc) CPUs"
for r in $(seq 1 "$ROUNDS"); do
	gpool "${NAME_A:-A}$r" "$A"
	gpool "${NAME_B:-B}$r" "$B"
	if [ "$r" = 1 ] && [ "${SLURM:-1}" != 0 ]; then
		part slurm env SLURM_OVERSUBSCRIBE=FORCE:16 LAT_M="${LAT_M:-50}" \
			"$TOP/bench/slurm/slurm-throughput.sh" "$N" "$PAR"
	fi
done
echo "end $(date -u +%H:%M:%S) load average: $(cut -d' ' -f1-3 /proc/loadavg)"
