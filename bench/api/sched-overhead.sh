#!/bin/bash
# sched-overhead.sh: does the HTTP server slow scheduling? End-to-end throughput of N jobs of
# /bin/true (gp-submit-many, batches of 100, not held; time from the first submission until
# gstat lists no job) on a 2-host loopback cluster, alternately
#   A: gschedd without http_listen, and
#   B: with http_listen, a Prometheus-style scrape of /metrics every second and a REST
#      GET /api/v1/jobs (token) every second while the jobs run;
# R rounds of each, alternating (LIST=0: B scrapes /metrics only; PIN=1: gschedd and the
# scraper on CPU 1, the agents, their tasks and the submitter on CPU 0, so that what the API
# costs lands on the scheduler's own CPU, as on a PC of its own). Each run also prints the CPU
# time of gschedd's threads (loop: the main thread; http: the HTTP server thread; zmq: ZeroMQ's
# I/O threads). At the end: median, min and max of each mode and B's median against A's.
# Raw lines to stdout.  usage: bench/api/sched-overhead.sh [N] [R]
set -euo pipefail
N=${1:-3000}
R=${2:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
CL="$TOP/deploy/gpool-cluster"
PORT=${PORT:-27831}
"$CL" users >/dev/null
echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); N=$N LIST=${LIST:-1} PIN=${PIN:-0}"
run() { # run A|B
	local mode=$1 D
	D=$(mktemp -d /var/tmp/gpool-ovh.XXXXXX)
	local -a extra=()
	[ "$mode" = B ] && extra=(--sched-arg "--http-listen=127.0.0.1:$PORT")
	"$CL" start -n 2 --loopback --dir "$D" --bin "$BIN" --cpus 8 "${extra[@]}" >/dev/null
	eval "$("$CL" env --dir "$D")"
	local on_sched=() on_rest=()
	if [ "${PIN:-0}" = 1 ]; then
		taskset -a -p -c 1 "$(cat "$D/sched/gschedd.pid")" >/dev/null
		for a in "$D"/h*/gworkerd.pid; do taskset -a -p -c 0 "$(cat "$a")" >/dev/null; done
		on_sched=(taskset -c 1)
		on_rest=(taskset -c 0)
	fi
	U() { runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
	local poller=""
	if [ "$mode" = B ]; then
		local tok
		tok=$(U /usr/bin/python3 "$TOP/tests/tools/gp-api.py" --url "http://127.0.0.1:$PORT" POST /api/v1/token |
			sed 1d | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
		# shellcheck disable=SC2016 # the loop's own arguments, expanded by its bash
		"${on_sched[@]}" bash -c 'while :; do
			curl -s "http://127.0.0.1:$0/metrics" >/dev/null
			[ "$1" = 0 ] || curl -s -H "Authorization: Bearer $2" "http://127.0.0.1:$0/api/v1/jobs" >/dev/null
			sleep 1
		done' "$PORT" "${LIST:-1}" "$tok" &
		poller=$!
	fi
	local t0 t1
	t0=$(date +%s%N)
	"${on_rest[@]}" runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
		"$BIN/gp-submit-many" "$N" 100 -- /bin/true >/dev/null
	while [ "$(U "$BIN/gstat" --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')" != 0 ]; do
		sleep 0.2
	done
	t1=$(date +%s%N)
	[ -n "$poller" ] && kill "$poller" && wait "$poller" 2>/dev/null || true
	local pid cpu
	pid=$(cat "$D/sched/gschedd.pid")
	cpu=$(for t in /proc/"$pid"/task/*; do
		k=zmq
		[ "${t##*/}" = "$pid" ] && k=loop
		[ "${t##*/}" != "$pid" ] && grep -q '^gschedd' "$t/comm" && k=http
		echo "$k $(awk '{print $14 + $15}' "$t/stat")"
	done | awk -v hz="$(getconf CLK_TCK)" '{c[$1] += $2} END {printf "cpu loop %.2f s, http %.2f s, zmq %.2f s", c["loop"]/hz, c["http"]/hz, c["zmq"]/hz}')
	awk -v m="$mode" -v n="$N" -v ns=$((t1 - t0)) -v cpu="$cpu" 'BEGIN {printf "%s: %d jobs in %.2f s: %.1f jobs/s (%s)\n", m, n, ns/1e9, n/(ns/1e9), cpu}' | tee -a "$RES"
	"$CL" stop --dir "$D" >/dev/null 2>&1 || true
	rm -rf "$D"
}
RES=$(mktemp)
for _ in $(seq "$R"); do
	run A
	run B
done
echo "== load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$RES" <<'PYEOF'
import re, statistics, sys
r = {"A": [], "B": []}
for line in open(sys.argv[1]):
    m = re.match(r"([AB]): .*: ([0-9.]+) jobs/s", line)
    if m:
        r[m.group(1)].append(float(m.group(2)))
for k in "AB":
    v = r[k]
    if v:
        print(f"{k}: n={len(v)} median {statistics.median(v):.1f} jobs/s, min {min(v):.1f}, max {max(v):.1f}")
if r["A"] and r["B"]:
    a, b = statistics.median(r["A"]), statistics.median(r["B"])
    print(f"B vs A (medians): {100 * (b - a) / a:+.1f} %")
PYEOF
rm -f "$RES"
