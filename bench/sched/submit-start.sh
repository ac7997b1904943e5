#!/bin/bash
# submit-start.sh: submit-to-start latency and jobs/s with one gschedd and with a group of three
# (docs/standby.md), side by side in one run, on the same 2-host netns cluster shape.
#   bench/sched/submit-start.sh [M [N [PAR [ROUNDS [K]]]]]   (root: network namespaces; build first)
# Each round starts a 1-scheduler cluster, then a 3-scheduler one (ROUNDS times, alternating, so
# that a change of load on the machine falls on both), and on each:
# - latency as the job sees it: M sequential submissions of `/bin/date +%s.%N`; the client's
#   clock is read as gpool-user right before gsub, the job's first instruction prints its own
#   (the hosts share the machine's clock); p50 / p99 over every round's samples;
# - latency on the scheduler's clock: submission received -> launch sent (gstat -a --json);
# - throughput: N `gsub -- /bin/true` from PAR loops at once (a process per job, as a user's
#   loop of sbatch), first submit to last job final: jobs/s;
# - a 2-rank job's communicator made over gschedd's rendezvous (GCOMM_RDV=gpool: every put
#   and fence entry is a commit, which three schedulers hold on a majority before answering),
#   K jobs, the slower rank's time (gcomm-bench prints it);
# - a staged submission: gsub --stage of 9 MiB the store lacks (its chunks ride in the
#   submission's commit), K times, gsub's wall time.
# The commands are given what gpool.conf gives users: one endpoint, or the list of three (a
# command whose first entry is a standby follows its NOT_LEADER to the leader: counted in).
# In the same run, the machine's process-start ceiling: 1000 `/bin/true` 8 at a time.
set -euo pipefail
M=${1:-50}
N=${2:-300}
PAR=${3:-8}
ROUNDS=${4:-2}
K=${5:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
CL=$SRC/deploy/gpool-cluster
DIR=${BENCH_DIR:-/tmp/gp-haburst-bench}
[ "$(id -u)" = 0 ] || { echo "submit-start.sh: needs root (network namespaces)" >&2; exit 77; }
for b in gschedd gworkerd gsub gstat glogs gcomm-bench; do
	[ -x "$BIN/$b" ] || { echo "submit-start.sh: '$BIN/$b' is not built" >&2; exit 77; }
done
"$CL" users >/dev/null
trap '"$CL" stop --dir "$DIR" >/dev/null 2>&1 || true' EXIT
RAW=$(mktemp -d "${STATE_ROOT:-/tmp}/gp-submit-start.XXXXXX")
chmod 0755 "$RAW"

pct() { # pct P: nearest-rank percentile of the numbers on stdin
	sort -n | awk -v p="$1" '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} i=int(NR*p/100+0.999999); if (i<1) i=1; printf "%.1f\n", a[i]}'
}
jobs_left() { "$BIN/gstat" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("jobs",[])))'; }

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
seq 1000 | xargs -P 8 -I{} /bin/true
t1=$(date +%s.%N)
echo "process starts, 1000 /bin/true 8 at a time: $(echo "1000 / ($t1 - $t0)" | bc -l | xargs printf '%.0f')/s"

one_config() { # one_config TAG SCHEDULERS ROUND
	local tag=$1 ns=$2 round=$3
	local args=(start -n 2 --dir "$DIR" --bin "$BIN" --cpus 8 --timeout 60)
	[ "$ns" = 1 ] || args+=(--schedulers "$ns" --no-wait)
	"$CL" "${args[@]}" >/dev/null 2>&1
	# the endpoints only: the cluster's marker (GPOOL_CLUSTER_DIR) stays out of this shell
	GPOOL_CONF=$DIR/gpool.conf
	GPOOL_SCHEDULER=$(sed -n 's/^scheduler *= *//p' "$GPOOL_CONF" | head -n 1)
	export GPOOL_SCHEDULER GPOOL_CONF
	if [ "$ns" != 1 ]; then
		until "$CL" sched-leader --dir "$DIR" >/dev/null 2>&1; do sleep 0.1; done
	fi
	until [ "$("$BIN/gnodes" 2>/dev/null | grep -cw up)" -ge 2 ]; do sleep 0.2; done
	local leader=""
	[ "$ns" = 1 ] || leader=" (leader $("$CL" sched-leader --dir "$DIR"))"
	# latency as the job sees it
	local c id st s
	for _ in $(seq "$M"); do
		read -r c id < <(runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
			GPOOL_CONF="$GPOOL_CONF" bash -c \
			'c=$(date +%s.%N) && id=$("$0" --parsable --export=NONE -- /bin/date +%s.%N) && echo "$c $id"' "$BIN/gsub")
		for _ in $(seq 500); do
			s=$("$BIN/gstat" --json -a -j "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])')
			[ "$s" = COMPLETED ] && break
			sleep 0.02
		done
		st=$("$BIN/glogs" "$id" | head -1)
		echo "($st - $c) * 1000" | bc -l >>"$RAW/job-$tag.txt"
	done
	# throughput, then the scheduler's clock over every job of this cluster
	local b0 b1
	b0=$(date +%s.%N)
	runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" bash -c \
		"seq $N | xargs -P $PAR -I{} $BIN/gsub --parsable --export=NONE -- /bin/true >/dev/null"
	until [ "$(jobs_left)" = 0 ]; do sleep 0.1; done
	b1=$(date +%s.%N)
	local rate
	rate=$(echo "$N / ($b1 - $b0)" | bc -l | xargs printf '%.1f')
	echo "$rate" >>"$RAW/rate-$tag.txt"
	"$BIN/gstat" -a --json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j.get("start_time") and j.get("submit_time"):
        print((j["start_time"] - j["submit_time"]) * 1000)' >>"$RAW/sched-$tag.txt"
	# the rendezvous: a 2-rank job's communicator, the slower rank's time
	local out
	for _ in $(seq "$K"); do
		out=$(runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
			"$BIN/gsub" --wait -n 2 -N 2 --export=ALL,GCOMM_RDV=gpool -- \
			"$BIN/gcomm-bench" --env -b 8 -e 8 --iters 1 2>&1)
		sed -n 's/.*communicator made in \([0-9.]*\) ms.*/\1/p' <<<"$out" | sort -n | tail -1 \
			>>"$RAW/rdv-$tag.txt"
	done
	# a staged submission: 9 MiB of new bytes each time
	local s0 s1
	for _ in $(seq "$K"); do
		head -c $((9 << 20)) /dev/urandom >"$RAW/stage.bin"
		chmod 0644 "$RAW/stage.bin"
		s0=$(date +%s.%N)
		(cd "$RAW" && runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
			GPOOL_CONF="$GPOOL_CONF" "$BIN/gsub" --parsable --export=NONE --stage stage.bin \
			-- /bin/true >/dev/null)
		s1=$(date +%s.%N)
		echo "($s1 - $s0) * 1000" | bc -l >>"$RAW/stage-$tag.txt"
	done
	until [ "$(jobs_left)" = 0 ]; do sleep 0.1; done
	echo "round $round, $ns scheduler(s)$leader: job clock p50 $(tail -n "$M" "$RAW/job-$tag.txt" | pct 50) ms," \
		"$N jobs PAR $PAR: $rate jobs/s, communicator p50 $(tail -n "$K" "$RAW/rdv-$tag.txt" | pct 50) ms," \
		"9 MiB staged submission p50 $(tail -n "$K" "$RAW/stage-$tag.txt" | pct 50) ms"
	"$CL" stop --dir "$DIR" >/dev/null 2>&1
}

for r in $(seq "$ROUNDS"); do
	(one_config one 1 "$r")
	(one_config three 3 "$r")
done
echo
echo "| | 1 scheduler | 3 schedulers (Raft) |"
echo "|---|---:|---:|"
echo "| submit-to-start p50 / p99, job clock ($((M * ROUNDS)) sequential) | $(pct 50 <"$RAW/job-one.txt") / $(pct 99 <"$RAW/job-one.txt") ms | $(pct 50 <"$RAW/job-three.txt") / $(pct 99 <"$RAW/job-three.txt") ms |"
echo "| submit-to-start p50 / p99, scheduler clock (every job) | $(pct 50 <"$RAW/sched-one.txt") / $(pct 99 <"$RAW/sched-one.txt") ms | $(pct 50 <"$RAW/sched-three.txt") / $(pct 99 <"$RAW/sched-three.txt") ms |"
echo "| jobs/s end to end, $N gsub, PAR $PAR (each round) | $(paste -sd' ' "$RAW/rate-one.txt") | $(paste -sd' ' "$RAW/rate-three.txt") |"
echo "| a 2-rank job's communicator over gschedd's rendezvous, p50 / max ($((K * ROUNDS)) jobs) | $(pct 50 <"$RAW/rdv-one.txt") / $(pct 100 <"$RAW/rdv-one.txt") ms | $(pct 50 <"$RAW/rdv-three.txt") / $(pct 100 <"$RAW/rdv-three.txt") ms |"
echo "| gsub --stage 9 MiB (new chunks) to its answer, p50 / max ($((K * ROUNDS))) | $(pct 50 <"$RAW/stage-one.txt") / $(pct 100 <"$RAW/stage-one.txt") ms | $(pct 50 <"$RAW/stage-three.txt") / $(pct 100 <"$RAW/stage-three.txt") ms |"
echo "raw samples: $RAW"
