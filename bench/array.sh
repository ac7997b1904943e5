#!/bin/bash
# array.sh: a job array end to end on a local 4-host netns cluster (docs/benchmarks.md).
#   One `gsub --array=0-(N-1) -- /bin/true` as gpool-user (authenticated, durable before
#   acknowledged: SQLite WAL, synchronous=FULL, on disk), run as its owner on HOSTS netns hosts
#   of CPUS slots each. Reports: the submission's round trip (all N tasks in one commit), tasks/s
#   from submission to the last task's end, gschedd's RSS with the array queued, and in the same
#   run the bare process-start rate of this machine (`seq 2000 | xargs -P8 -I{} /bin/true`),
#   before and after the run (the machine is shared: the rate moves), and the CPU time the
#   cluster spent per task (gschedd and every gworkerd, with the supervisors and tasks they
#   reaped: utime+stime+cutime+cstime from /proc), which other load does not inflate much.
#   usage: bench/array.sh [N]      (default 10000; HOSTS=4 CPUS=8; LOOPBACK=1: hosts on
#   127.0.0.1 instead of network namespaces, PORT=18650)
set -euo pipefail
N=${1:-10000}
HOSTS=${HOSTS:-4}
CPUS=${CPUS:-8}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
D=$(mktemp -d "${STATE_ROOT:-/var/tmp}/gpool-bench-array.XXXXXX")
CL="$TOP/deploy/gpool-cluster"
cleanup() { "$CL" stop --dir "$D" >/dev/null 2>&1 || true; rm -rf "$D"; }
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "array: needs root (network namespaces)" >&2; exit 1; }
"$CL" users >/dev/null
"$CL" start -n "$HOSTS" --dir "$D" --bin "$BIN" --cpus "$CPUS" \
	${LOOPBACK:+--loopback --port "${PORT:-18650}"} >&2
echo "== $HOSTS hosts ($(sed -n 's/^MODE=//p' "$D/cluster.env")), $CPUS slots each, state in $D" >&2
eval "$("$CL" env --dir "$D")"
export GPOOL_SCHEDULER
SCHED_PID=$(cat "$D/sched/gschedd.pid")

# the ceiling: processes started per second by this machine, now
p0=$(date +%s.%N)
seq 2000 | xargs -P8 -I{} /bin/true
p1=$(date +%s.%N)

# CPU seconds of gschedd and the agents, with what they reaped (supervisors, and through them
# the tasks)
cluster_cpu() {
	local tck pids
	tck=$(getconf CLK_TCK)
	pids="$SCHED_PID $(for f in "$D"/h*/gworkerd.pid "$D"/*/state/gworkerd.pid; do [ -f "$f" ] && cat "$f"; done)"
	for p in $pids; do
		awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2>/dev/null
	done | awk -v t="$tck" '{ s += $1 } END { printf "%.3f", s / t }'
}

rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$SCHED_PID/status")
t0=$(date +%s.%N)
out=$(runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
	"$BIN/gsub" --export=NONE --hold --array="0-$((N - 1))" -- /bin/true)
t1=$(date +%s.%N)
first=$(sed -n 's/^Submitted array job \([0-9]*\) .*/\1/p' <<<"$out")
rss_queued=$(awk '/VmRSS/ {print $2}' "/proc/$SCHED_PID/status")
# released at once: the run is measured from the release, the submission on its own above
runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" "$BIN/gpool" release "$first" >/dev/null 2>&1 ||
	for i in $(seq 0 $((N - 1))); do echo $((first + i)); done |
	xargs -n 1000 sh -c 'ids=$(echo "$@" | tr " " ","); runuser -u gpool-user -- env GPOOL_SCHEDULER='"$GPOOL_SCHEDULER"' '"$BIN"'/gpool release "$ids"' _
c2=$(cluster_cpu)
t2=$(date +%s.%N)
while :; do
	left=$("$BIN/gstat" -t PD,R,CG 2>/dev/null | tail -n +2 | wc -l)
	[ "$left" = 0 ] && break
	sleep 0.2
done
t3=$(date +%s.%N)
# the supervisors' last exits reaped (a task shell closes after its idle grace): their CPU is
# in the agents' cutime only then; at most 20 s
agents="$(for f in "$D"/h*/gworkerd.pid "$D"/*/state/gworkerd.pid; do [ -f "$f" ] && cat "$f"; done || true)"
for _ in $(seq 1 100); do
	kids=0
	for a in $agents; do kids=$((kids + $(pgrep -c -P "$a" 2>/dev/null || true))); done
	[ "$kids" = 0 ] && break
	sleep 0.2
done
sleep 0.5
c3=$(cluster_cpu)
q0=$(date +%s.%N)
seq 2000 | xargs -P8 -I{} /bin/true
q1=$(date +%s.%N)
ok=$("$BIN/gstat" -a --json | python3 -c "
import json,sys
print(sum(1 for j in json.load(sys.stdin)['jobs'] if j.get('array_job_id') == $first and j['state'] == 'COMPLETED'))")
python3 - "$N" "$p0" "$p1" "$t0" "$t1" "$t2" "$t3" "$ok" "$rss_before" "$rss_queued" "$q0" "$q1" "$c2" "$c3" <<'PY'
import sys
n, p0, p1, t0, t1, t2, t3, ok, r0, r1, q0, q1, c2, c3 = sys.argv[1:]
n = int(n); ok = int(ok)
p0, p1, t0, t1, t2, t3, q0, q1, c2, c3 = map(float, (p0, p1, t0, t1, t2, t3, q0, q1, c2, c3))
print(f"array of {n} /bin/true tasks, {ok} COMPLETED")
print(f"submission (one gsub, one commit): {t1 - t0:.3f} s")
print(f"release -> last task ended: {t3 - t2:.2f} s = {ok / (t3 - t2):.0f} tasks/s")
print(f"bare process starts (seq 2000 | xargs -P8 -I{{}} /bin/true): {2000 / (p1 - p0):.0f} /s before, "
      f"{2000 / (q1 - q0):.0f} /s after the run")
print(f"cluster CPU (gschedd + agents + supervisors + tasks): {c3 - c2:.2f} s = "
      f"{(c3 - c2) * 1000 / max(ok, 1):.2f} ms per task")
print(f"gschedd RSS: {int(r0) / 1024:.1f} MiB idle, {int(r1) / 1024:.1f} MiB with the array queued "
      f"({(int(r1) - int(r0)) * 1024 / n:.0f} bytes per pending task)")
PY
