#!/bin/bash
# staging.sh: staging 200 MB to 1, 2, 3 and 4 netns hosts (docs/staging.md), against the link
# bandwidth iperf3 measures in the same run (one TCP stream, scheduler side -> h1).
# For each host count: a fresh 200 MB file (nothing cached anywhere), `gsub --stage` on that
# many hosts; reported: gsub's upload time, each host's fetch time from its gstepd log line,
# the last host's against the one-host figure, the bandwidth each host saw as a share of the
# iperf3 figure, and the wall time from gsub's start to the job's end. Then the same file once
# more on 4 hosts (cached on every host): what gsub sent, its time and each host's.
#   usage: bench/staging.sh [MB]        (default 200)
#   PEER_PORT=0 bench/staging.sh        no fan-out: every host fetches from gschedd; unset: the
#                                       agents' default (fan-out along a chain of hosts, 7821)
#   SHAPE=1gbit bench/staging.sh        emulate a LAN: every host's link (its veth, both
#                                       directions) and the scheduler PC's side (the bridge
#                                       device gpbr0, what gschedd sends) limited with tc tbf to
#                                       that rate; iperf3 checks it (scheduler->h1 and h2->h1)
#   HOSTS="1" bench/staging.sh          only these host counts (default "1 2 3 4"); CACHED=0
#                                       skips the cached second staging
#   PERF=FILE bench/staging.sh          perf record -a -g into FILE while the jobs run (see
#                                       `perf report -i FILE --sort comm,dso,sym`)
# Run it under `flock /tmp/gpool-netns.lock` on a shared machine (it holds the hosts about 3
# minutes). Needs iperf3: `GPOOL_DEPS_EXTRA=iperf3 deploy/install-deps.sh`.
set -euo pipefail
MB=${1:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
export PATH="$BIN:$PATH"
CL="$TOP/deploy/gpool-cluster"
[ "$(id -u)" = 0 ] || { echo "staging: needs root (network namespaces)" >&2; exit 1; }
command -v iperf3 >/dev/null ||
	{ echo "staging: needs iperf3 (GPOOL_DEPS_EXTRA=iperf3 deploy/install-deps.sh)" >&2; exit 1; }
D=$(mktemp -d /var/tmp/gpool-bench-staging.XXXXXX)
chmod 0755 "$D"
IPERF_PID=
cleanup() {
	[ -z "$IPERF_PID" ] || kill "$IPERF_PID" 2>/dev/null || true
	"$CL" stop --dir "$D/cl" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
# shellcheck source=deploy/lib-users.sh
. "$TOP/deploy/lib-users.sh"
# job_state and job_field (what the system tests read gstat's JSON with)
# shellcheck source=tests/system/lib.sh
. "$TOP/tests/system/lib.sh"
"$CL" users >/dev/null
UB=$(gpool_users_bin "$BIN" "$D/user")
WARGS=()
[ -n "${PEER_PORT:-}" ] && WARGS=(--worker-arg "--peer_port=$PEER_PORT")
SHAPE=${SHAPE:-}
"$CL" start -n 4 --dir "$D/cl" --bin "$BIN" --node-timeout 10s --heartbeat-interval 1s \
	"${WARGS[@]}" >"$D/start.log" 2>&1 || { tail -20 "$D/start.log" >&2; exit 1; }
eval "$("$CL" env --dir "$D/cl")"
export GPOOL_SCHEDULER GPOOL_CONF
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); $MB MB; peer_port=${PEER_PORT:-default} ($([ "${PEER_PORT:-}" != 0 ] && echo fan-out || echo 'no fan-out')); links ${SHAPE:-not shaped}"
if [ -n "$SHAPE" ]; then
	# tbf on every egress a byte crosses: the host's eth0 (what it sends), the bridge side of
	# its veth (what it receives) and the bridge device (what the scheduler PC sends)
	tbf=(root tbf rate "$SHAPE" burst 512kb latency 20ms)
	tc qdisc replace dev gpbr0 "${tbf[@]}"
	for h in 1 2 3 4; do
		tc qdisc replace dev "gpv-h$h" "${tbf[@]}"
		ip netns exec "gp-h$h" tc qdisc replace dev eth0 "${tbf[@]}"
	done
	tc qdisc show dev gpbr0 | sed 's/^/# /'
fi

# the link: one TCP stream from the scheduler's side (198.18.0.1) to h1, 5 s
iperf3 -s -B 198.18.0.1 -p 5299 -1 >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5
bw=$("$CL" exec --dir "$D/cl" h1 iperf3 -c 198.18.0.1 -p 5299 -R -t 5 -J |
	python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6))')
wait "$IPERF_PID" 2>/dev/null || true
IPERF_PID=
echo "iperf3 scheduler->h1, one stream: $bw MB/s"
# between two hosts (what a chain of hosts uses), h2 -> h1
"$CL" exec --dir "$D/cl" h1 iperf3 -s -B 198.18.0.11 -p 5299 -1 >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5
bw2=$("$CL" exec --dir "$D/cl" h2 iperf3 -c 198.18.0.11 -p 5299 -t 3 -J |
	python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6))')
wait "$IPERF_PID" 2>/dev/null || true
IPERF_PID=
echo "iperf3 h2->h1, one stream: $bw2 MB/s"

W=$D/work
mkdir -p "$W" && chown gpool-user: "$W"
as_user() { (cd "$W" && runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" PATH="$UB:$PATH" "$@"); }
fetch_time() { # HOST JOB
	grep -h "job $2\.[0-9]*: staged" "$D/cl/$1/gworkerd.log" | tail -1 | sed -n 's/.*fetch \([0-9.]*\) s.*/\1/p'
}
wait_done() { # JOB: its final state ("stuck" after 300 s)
	local s
	for _ in $(seq 1 1500); do
		s=$(job_state "$1")
		case $s in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) echo "$s"; return ;; esac
		sleep 0.2
	done
	echo "stuck"
}
# gsub --stage data.bin on N hosts: sets id, up (gsub's staging line), st, wall
stage_job() {
	local t0 t1 out
	t0=$(date +%s.%N)
	out=$(as_user gsub -n "$1" -N "$1" -t 10 --stage data.bin -- /bin/true 2>&1)
	id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
	up=$(grep -o 'sent .*' <<<"$out" || echo "gsub: $out")
	[ -n "$id" ] || { echo "gsub failed: $out" >&2; exit 1; }
	st=$(wait_done "$id")
	t1=$(date +%s.%N)
	wall=$(python3 -c "print('%.1f' % ($t1 - $t0))")
}

one=
printf "%-5s %-9s %-9s %-27s %-7s %-8s %-20s %s\n" hosts upload_s state fetch_s_per_host last_s last/one "MB/s(last)/link" wall_s
PERF_PID=
if [ -n "${PERF:-}" ]; then
	perf record -a -g -o "$PERF" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 1
fi
for n in ${HOSTS:-1 2 3 4}; do
	# nothing cached: new bytes, empty caches and store
	for h in h1 h2 h3 h4; do "$CL" exec --dir "$D/cl" "$h" rm -rf "$("$CL" path --dir "$D/cl" "$h" state)/cache"; done
	rm -rf "$D/cl/sched/state/chunks"
	head -c $((MB * 1000000)) /dev/urandom >"$W/data.bin"
	chown gpool-user: "$W/data.bin"
	stage_job "$n"
	ts=()
	for h in $(job_field "$id" nodelist | tr , ' '); do ts+=("$(fetch_time "$h" "$id")"); done
	last=$(printf '%s\n' "${ts[@]}" | sort -g | tail -1)
	[ -n "$last" ] || { echo "job $id ($st): no staging line on its hosts" >&2; exit 1; }
	[ -n "$one" ] || one=$last
	ratio=$(python3 -c "print('%.2f' % ($last / $one))")
	share=$(python3 -c "print('%.0f/%s=%.2f' % ($MB / $last, $bw, $MB / $last / $bw))")
	upt=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$up")
	printf "%-5s %-9s %-9s %-27s %-7s %-8s %-20s %s\n" "$n" "${upt:-?}" "$st" "$(
		IFS=,
		echo "${ts[*]}"
	)" "$last" "$ratio" "$share" "$wall"
	grep -h "job $id\.[0-9]*: staged" "$D"/cl/h*/gworkerd.log | sed 's/^/#   /'
done
if [ -n "$PERF_PID" ]; then
	kill -INT "$PERF_PID"
	wait "$PERF_PID" 2>/dev/null || true
fi
[ "${CACHED:-1}" = 0 ] && exit 0
# the same file again: every host has it cached
stage_job 4
ts=()
for h in h1 h2 h3 h4; do ts+=("$(fetch_time "$h" "$id")"); done
echo "cached second staging, 4 hosts: gsub $up; state $st; fetch s per host: ${ts[*]}; wall $wall s"
grep -h "job $id\.[0-9]*: staged" "$D"/cl/h*/gworkerd.log | sed 's/^/#   /'
