#!/bin/bash
# staging.sh: staging 200 MB to 1, 2, 3 and 4 netns hosts (docs/staging.md), against the link
# bandwidth iperf3 measures in the same run (one TCP stream, scheduler side -> h1).
# For each host count: a fresh 200 MB file (nothing cached anywhere), `gsub --stage` on that
# many hosts; reported: gsub's upload time, each host's fetch time from its gstepd log line,
# the last host's against the one-host figure, and the bandwidth each host saw as a share of
# the iperf3 figure. Then the same file once more (cached on every host): its staging time.
#   usage: bench/staging.sh [MB]        (default 200; PEER_PORT=0: no fan-out between agents)
# Run it under `flock /tmp/gpool-netns.lock` on a shared machine.
set -euo pipefail
MB=${1:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
D=$(mktemp -d /var/tmp/gpool-bench-staging.XXXXXX)
chmod 0755 "$D"
CL="$TOP/deploy/gpool-cluster"
IPERF_PID=
cleanup() {
	[ -n "$IPERF_PID" ] && kill "$IPERF_PID" 2>/dev/null || true
	"$CL" stop --dir "$D" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "staging: needs root (network namespaces)" >&2; exit 1; }
"$CL" users >/dev/null
WARGS=()
[ -n "${PEER_PORT:-}" ] && WARGS=(--worker-arg "--peer_port=$PEER_PORT")
"$CL" start -n 4 --dir "$D/cl" --bin "$BIN" "${WARGS[@]}" >&2
eval "$("$CL" env --dir "$D/cl")"
export GPOOL_SCHEDULER GPOOL_CONF
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); peer_port=${PEER_PORT:-default}"

# the link: one TCP stream from the scheduler's side (198.18.0.1) to h1, 5 s
iperf3 -s -B 198.18.0.1 -p 5299 -1 >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5
bw=$("$CL" exec --dir "$D/cl" h1 iperf3 -c 198.18.0.1 -p 5299 -R -t 5 -J |
	python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6))')
IPERF_PID=
echo "iperf3 scheduler->h1 one stream: $bw MB/s"

W=$D/work
mkdir -p "$W" && chown gpool-user: "$W"
as_user() { (cd "$W" && runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" PATH="$BIN:$PATH" "$@"); }
fetch_time() { # HOST JOB
	grep -h "job $2\.1: staged" "$D/cl/$1/gworkerd.log" | tail -1 | sed -n 's/.*fetch \([0-9.]*\) s.*/\1/p'
}
wait_done() { # JOB
	for _ in $(seq 1 600); do
		s=$(gstat --json -a -j "$1" 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); print(d["jobs"][0]["state"] if d.get("jobs") else "")' 2>/dev/null || true)
		case $s in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) echo "$s"; return ;; esac
		sleep 0.2
	done
	echo "stuck"
}
one=
printf "%-6s %-8s %-10s %-30s %-8s %-8s %s\n" hosts upload_s state fetch_s_per_host last_s last/one MB/s_per_host/link
for n in 1 2 3 4; do
	# nothing cached: new bytes, empty caches and store
	for h in h1 h2 h3 h4; do "$CL" exec --dir "$D/cl" $h sh -c "rm -rf $D/cl/$h/state/cache"; done
	rm -rf "$D/cl/sched/state/chunks"
	head -c $((MB * 1000000)) /dev/urandom >"$W/data.bin"
	chown gpool-user: "$W/data.bin"
	out=$(as_user gsub -n "$n" -N "$n" --stage data.bin -- /bin/true 2>&1)
	id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
	up=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$out")
	st=$(wait_done "$id")
	ts=()
	for h in $(gstat --json -a -j "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["nodelist"].replace(",", " "))'); do
		ts+=("$(fetch_time "$h" "$id")")
	done
	last=$(printf '%s\n' "${ts[@]}" | sort -g | tail -1)
	[ -z "$one" ] && one=$last
	ratio=$(python3 -c "print('%.2f' % ($last / $one))")
	share=$(python3 -c "print('%.0f / %s = %.2f' % ($MB / $last, $bw, $MB / $last / $bw))")
	printf "%-6s %-8s %-10s %-30s %-8s %-8s %s\n" "$n" "$up" "$st" "$(echo "${ts[*]}" | tr ' ' ',')" "$last" "$ratio" "$share"
done
# the same file again: every host has it cached
out=$(as_user gsub -n 4 -N 4 --stage data.bin -- /bin/true 2>&1)
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
st=$(wait_done "$id")
ts=()
for h in h1 h2 h3 h4; do ts+=("$(fetch_time "$h" "$id")"); done
echo "cached second staging, 4 hosts: gsub: $(grep -o 'sent .*' <<<"$out"); state $st; fetch s per host: ${ts[*]}"
grep -h "job $id\.1: staged" "$D"/cl/h*/gworkerd.log | sed 's/^/# /'
