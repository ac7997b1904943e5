#!/bin/bash
# throughput.sh: gpool's control-plane throughput on a local 4-host netns cluster.
#   N jobs of /bin/true, each submitted by its own gsub process (as a user's loop of sbatch
#   would), PAR loops at once, authenticated, durable before acknowledged (SQLite WAL,
#   synchronous=FULL, on disk), run as their owner (gpool-user) on 4 netns hosts.
# Reports: submits/s, completions/s end to end, p50/p99 submit-to-start (scheduler clock:
# submission received -> launch sent; and job clock: client time before gsub -> first
# instruction of the job, on a sequential sample as for Slurm), gschedd peak RSS with 100,000
# queued jobs, and the share of gschedd's time spent in MUNGE over the burst alone (its
# gpool_munge_seconds_total and its /proc CPU sampled right before the first gsub and right after
# the last job ended, divided by the burst's own wall time and CPU).
# What bounds a job's start from outside gpool, measured in the same run as gpool-user: the
# cost of starting gsub itself (`gsub --help`) and of /bin/true, sequentially (ms each) and PAR
# at a time (starts/s).
# Optionally the same on Slurm (bench/slurm/slurm-throughput.sh) in the same run: SLURM=1.
#   usage: bench/sched/throughput.sh [N] [PAR]      (defaults 5000 8; LOOPBACK=1: hosts on 127.0.0.1)
#   LAT_M=50: latency samples; MANY=0: skip the 100,000 queued jobs (rss_100k_queued_kb is 0);
#   PERF_OUT=FILE: perf record -a over the burst alone (perf report -i FILE --sort comm),
#   PERF_ARGS: more of its options (-g); SCRIPT=1: each job a batch script (`gsub job.sh`, the
#   script `exit 0`) instead of `gsub -- /bin/true`
set -euo pipefail
N=${1:-5000}
PAR=${2:-8}
HOSTS=${HOSTS:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
STATE_ROOT=${STATE_ROOT:-/var/tmp} # a real disk, not tmpfs
D=$(mktemp -d "$STATE_ROOT/gpool-bench.XXXXXX")
CL="$TOP/deploy/gpool-cluster"
OUT=${OUT_JSON:-$D/result.json}
cleanup() {
	"$CL" stop --dir "$D" >/dev/null 2>&1 || true
	[ -z "${SD:-}" ] || rm -rf "$SD"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "throughput: needs root (network namespaces)" >&2; exit 1; }
"$CL" users >/dev/null
echo "== gpool: $HOSTS netns hosts, state in $D (on $(df --output=source "$D" | tail -1))" >&2
# gschedd's /metrics on loopback: its MUNGE seconds, sampled around the burst
HTTP_PORT=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$HTTP_PORT" 2>/dev/null | grep -q .; do HTTP_PORT=$((HTTP_PORT + 1)); done
"$CL" start -n "$HOSTS" --dir "$D" --bin "$BIN" --cpus 8 ${LOOPBACK:+--loopback} \
	--sched-arg "--http-listen=127.0.0.1:$HTTP_PORT" >&2
eval "$("$CL" env --dir "$D")"
export GPOOL_SCHEDULER
SCHED_PID=$(cat "$D/sched/gschedd.pid")

pct() { # pct P: nearest-rank percentile of numbers on stdin
	sort -n | awk -v p="$1" '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} i=int(NR*p/100+0.999999); if (i<1) i=1; print a[i]}'
}

# gschedd's seconds in MUNGE so far (its counter), and its CPU seconds (/proc: utime + stime)
munge_now() { curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk '$1 == "gpool_munge_seconds_total" {print $2}'; }
cpu_now() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f\n", ($14 + $15) / hz}' "/proc/$SCHED_PID/stat"; }

# 0. what bounds a start from outside: gsub's own start-up and a bare /bin/true, as gpool-user
startup() { # startup CMD...: ms per start, sequential (200), then starts/s PAR at a time (1000)
	runuser -u gpool-user -- bash -c '
		t0=$(date +%s.%N); for _ in $(seq 200); do "$@" >/dev/null 2>&1; done; t1=$(date +%s.%N)
		seq 1000 | xargs -P '"$PAR"' -I{} "$@" >/dev/null 2>&1; t2=$(date +%s.%N)
		echo "($t1 - $t0) * 1000 / 200" | bc -l | xargs printf "%.2f "
		echo "1000 / ($t2 - $t1)" | bc -l | xargs printf "%.1f\n"' _ "$@"
}
read -r true_ms true_rate <<<"$(startup /bin/true)"
read -r gsub_ms gsub_rate <<<"$(startup "$BIN/gsub" --help)"
echo "start-up as gpool-user: /bin/true $true_ms ms ($true_rate/s at $PAR), gsub --help $gsub_ms ms ($gsub_rate/s at $PAR)" >&2

# 1. throughput: N gsub processes, PAR at a time, as gpool-user
m0=$(munge_now)
c0=$(cpu_now)
if [ -n "${PERF_OUT:-}" ]; then # the burst alone, every CPU, sampled (perf report -i PERF_OUT)
	# shellcheck disable=SC2086 # PERF_ARGS: more perf record options (-g), split on spaces
	perf record -q -a -F 499 ${PERF_ARGS:-} -o "$PERF_OUT" -- sleep 600 2>/dev/null &
	perf_pid=$!
	sleep 0.5
fi
JOB="-- /bin/true"
if [ "${SCRIPT:-0}" = 1 ]; then # a batch script gpool-user can read, its content sent each time
	SD=$(mktemp -d /tmp/gpool-bench-script.XXXXXX)
	printf '#!/bin/sh\nexit 0\n' >"$SD/job.sh"
	chmod 755 "$SD" "$SD/job.sh"
	JOB="$SD/job.sh"
fi
t0=$(date +%s.%N)
runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" bash -c \
	"seq $N | xargs -P $PAR -I{} $BIN/gsub --parsable --export=NONE $JOB >/dev/null"
t1=$(date +%s.%N)
while :; do
	left=$("$BIN/gstat" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("jobs",[])))')
	[ "$left" = 0 ] && break
	sleep 0.1
done
t2=$(date +%s.%N)
if [ -n "${PERF_OUT:-}" ]; then
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" 2>/dev/null || true
fi
m2=$(munge_now)
c2=$(cpu_now)
"$BIN/gstat" -a --json >"$D/jobs.json"
read -r done_ok lat50 lat99 <<<"$(python3 - "$D/jobs.json" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
ok = sum(1 for j in jobs if j["state"] == "COMPLETED")
lat = sorted((j["start_time"] - j["submit_time"]) * 1000 for j in jobs if j.get("start_time"))
def pct(p):
    import math
    return lat[max(0, math.ceil(len(lat) * p / 100) - 1)] if lat else float("nan")
print(ok, round(pct(50), 2), round(pct(99), 2))
PY
)"
sub_rate=$(echo "$N / ($t1 - $t0)" | bc -l)
e2e_rate=$(echo "$N / ($t2 - $t0)" | bc -l)

# 2. latency as the job sees it: sequential submissions of a job that prints its start time
: >"$D/lat.txt"
for _ in $(seq "${LAT_M:-50}"); do
	# the client's clock is read as gpool-user right before gsub, as Slurm's side reads it right
	# before sbatch: runuser's own PAM session start (about 8 ms here) is not the scheduler's
	read -r c id < <(runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" bash -c \
		'c=$(date +%s.%N) && id=$("$0" --parsable --export=NONE -- /bin/date +%s.%N) && echo "$c $id"' "$BIN/gsub")
	for _ in $(seq 200); do
		s=$("$BIN/gstat" --json -j "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])')
		[ "$s" = COMPLETED ] && break
		sleep 0.02
	done
	st=$("$BIN/glogs" "$id" | head -1)
	echo "($st - $c) * 1000" | bc -l >>"$D/lat.txt"
done
jl50=$(pct 50 <"$D/lat.txt")
jl99=$(pct 99 <"$D/lat.txt")

# 3. memory with 100,000 queued jobs (held, so they stay queued), submitted in batches
rss_kb=0
echo skipped >"$D/many.txt"
if [ "${MANY:-1}" != 0 ]; then
	"$BIN/gp-submit-many" 100000 100 --hold >"$D/many.txt"
	rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$SCHED_PID/status")
fi
"$CL" stop --dir "$D" >/dev/null
munge=$(grep 'stopping:' "$D/sched/gschedd.log" | tail -1 | sed -n 's/.* \([0-9.]*\) s in munge, \([0-9.]*\) s cpu.*/\1 \2/p')
read -r munge_s cpu_s <<<"$munge"
wall=$(echo "$t2 - $t0" | bc -l)
# over the burst alone (first gsub to last job final)
bm=$(echo "${m2:-0} - ${m0:-0}" | bc -l)
bc_=$(echo "$c2 - $c0" | bc -l)

printf '{"system":"gpool","jobs":%d,"parallel":%d,"hosts":%d,"submit_per_s":%.1f,"complete_per_s":%.1f,"completed":%d,"sched_lat_p50_ms":%s,"sched_lat_p99_ms":%s,"job_lat_p50_ms":%.2f,"job_lat_p99_ms":%.2f,"rss_100k_queued_kb":%d,"many_submit":"%s","burst_s":%.3f,"burst_munge_s":%.3f,"burst_gschedd_cpu_s":%.3f,"munge_s":%s,"gschedd_cpu_s":%s,"true_ms":%s,"true_per_s":%s,"gsub_help_ms":%s,"gsub_help_per_s":%s}\n' \
	"$N" "$PAR" "$HOSTS" "$sub_rate" "$e2e_rate" "$done_ok" "$lat50" "$lat99" "$jl50" "$jl99" \
	"$rss_kb" "$(cat "$D/many.txt")" "$wall" "$bm" "$bc_" "${munge_s:-0}" "${cpu_s:-0}" \
	"$true_ms" "$true_rate" "$gsub_ms" "$gsub_rate" | tee "$OUT"
echo "burst alone: $(printf %.2f "$wall") s wall, gschedd $(printf %.2f "$bc_") s CPU, $(printf %.3f "$bm") s in munge:" \
	"$(echo "$bm / $wall * 100" | bc -l | xargs printf %.1f) % of the burst's wall time waited on munged" \
	"(gschedd busy $(echo "$bc_ / $wall * 100" | bc -l | xargs printf %.1f) % of it)" >&2

if [ "${SLURM:-0}" = 1 ] && [ -x "$TOP/bench/slurm/slurm-throughput.sh" ]; then
	echo "== slurm, same machine, same run" >&2
	"$TOP/bench/slurm/slurm-throughput.sh" "${SLURM_N:-1000}" "$PAR"
fi
