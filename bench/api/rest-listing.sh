#!/bin/bash
# rest-listing.sh: the REST API's job listing against `gstat --json`, with N jobs in the queue.
#   A 1-host loopback cluster (no network namespaces), N held jobs (gp-submit-many --hold), then
#   1. GET /api/v1/jobs with a token, wrk: C connections, D seconds (req/s, p50/p99 latency);
#   2. `gstat --json` (one process, one MUNGE-authenticated request) run K times in a row
#      (per-call p50/p99) and by P loops at once for K calls (calls/s).
# Both return every one of the N jobs. Raw output goes to stdout (commit it under
# bench/results/api/).  usage: bench/api/rest-listing.sh [N] [C] [D] [K] [P]
set -euo pipefail
N=${1:-10000}
C=${2:-8}
DUR=${3:-10}
K=${4:-40}
P=${5:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
D=$(mktemp -d /var/tmp/gpool-restbench.XXXXXX)
CL="$TOP/deploy/gpool-cluster"
PORT=${PORT:-27821}
cleanup() { "$CL" stop --dir "$D" >/dev/null 2>&1 || true; rm -rf "$D"; }
trap cleanup EXIT
"$CL" users >/dev/null
"$CL" start -n 1 --loopback --dir "$D" --bin "$BIN" --cpus 2 \
	--sched-arg "--http-listen=127.0.0.1:$PORT" >/dev/null
eval "$("$CL" env --dir "$D")"
U() { runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
U "$BIN/gp-submit-many" "$N" 500 --hold -- /bin/true
tok=$(U /usr/bin/python3 "$TOP/tests/tools/gp-api.py" --url "http://127.0.0.1:$PORT" POST /api/v1/token |
	sed 1d | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
n_rest=$(curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/v1/jobs" |
	/usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
n_gstat=$(U "$BIN/gstat" --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
bytes=$(curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/v1/jobs" | wc -c)
echo "== jobs listed: REST $n_rest ($bytes bytes), gstat --json $n_gstat"
echo "== REST: wrk -t2 -c$C -d${DUR}s --latency GET /api/v1/jobs (Bearer token)"
wrk -t2 -c"$C" -d"${DUR}s" --latency -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/v1/jobs"
echo "== gstat --json: $K calls in a row (ms each)"
for _ in $(seq "$K"); do
	s=$(date +%s%N)
	U "$BIN/gstat" --json >/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000))
done | sort -n | awk '{a[NR]=$1/1000} END {printf "calls %d  p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%.1f calls/s in a row)\n", NR, a[int(NR*0.5+0.999)], a[int(NR*0.99+0.999)], a[NR], NR/(s/1000)} {s+=$1/1000}'
echo "== gstat --json: $P loops at once, $K calls in all"
s=$(date +%s%N)
U bash -c "seq $K | xargs -P $P -I{} $BIN/gstat --json >/dev/null"
e=$(date +%s%N)
awk -v k="$K" -v ns=$((e - s)) 'BEGIN {printf "%d calls in %.2f s: %.1f calls/s\n", k, ns/1e9, k/(ns/1e9)}'
echo "== gschedd: $(grep -E 'VmRSS|VmHWM' /proc/"$(cat "$D/sched/gschedd.pid")"/status | tr -s ' \n' ' ')"
