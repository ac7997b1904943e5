#!/bin/bash
# bench/gateway.sh: what ggated adds, against calling one replica directly and against nginx
# (Debian's 1.22, proxy_pass to a keep-alive upstream, one worker) in front of the same
# replicas, with 1, 2 and 4 replicas, 1 and 16 connections; each proxy also once more pinned
# to CPU 1 (taskset), off the CPU 0 that every replica's cpuset is on a --loopback cluster;
# then (GSERVE=0 skips it) gserve with dynamic batching on and off. PATHS, COUNTS, CONNS: a subset.
# All on loopback (a --loopback gpool cluster: the replicas are real service jobs), measured
# with wrk. Every figure REPS times, the paths taking turns within each repetition (the order
# rotates), so that the machine's load falls on all of them alike; a summary (median, min-max)
# ends the log. WRK_CPU=N: wrk pinned to CPU N (taskset). Raw output: bench/results/gateway/gateway-<date>.log. Needs root, wrk, nginx, a build.
# GGATED_BEFORE=PATH adds another ggated binary (an older build, say) on the same replicas as
# one more path. STRACE=1: the system calls a request of each proxy's event loop (strace -c
# over a one-connection run) end it.
#   bench/gateway.sh [SECONDS [REPS]]
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/gateway/lib.sh
. "$SRC/bench/gateway/lib.sh"
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
DUR=${1:-10}
REPS=${2:-5}
OUT=$SRC/bench/results/gateway/gateway-$(date +%Y%m%d-%H%M).log
DIR=$(mktemp -d /tmp/gpool-bench-gw.XXXXXX)
chmod 755 "$DIR"
SPORT=17960 GWPORT=18960 NGPORT=18961 GWBPORT=18962 GW1PORT=18963 NG1PORT=18964
BEFORE=${GGATED_BEFORE:-}
mkdir -p "$SRC/bench/results/gateway"
exec > >(tee "$OUT") 2>&1
echo "# bench/gateway.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), $(/usr/sbin/nginx -v 2>&1)"
echo "# load average: $(cat /proc/loadavg)"

cleanup() {
	bench_cleanup "$DIR" "${gw:-}" "${gwb:-}" "${ng:-}" "${ng1:-}" "${gw1:-}"
}
trap cleanup EXIT
"$SRC/deploy/gpool-cluster" start --dir "$DIR/cluster" -n 4 --loopback --port $SPORT --bin "$BIN" \
	--heartbeat-interval 1s >/dev/null 2>&1 || { echo "cluster did not start"; exit 1; }
export GPOOL_SCHEDULER=tcp://127.0.0.1:$SPORT GPOOL_CONF=$DIR/cluster/gpool.conf
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$DIR/user")
cp "$SRC/bench/gateway/replica-nginx.sh" "$DIR/replica-nginx.sh"
chmod 755 "$DIR/replica-nginx.sh"
asu() { runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER=$GPOOL_SCHEDULER GPOOL_CONF=$GPOOL_CONF "$@"; }
# ready replicas of SVC as addr:port lines
reps() {
	"$BIN/gstat" --json -j "$1" | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    for r in j.get("replicas", []):
        if r.get("ready"): print("%s:%s" % (r["addr"], r["port"]))'
}
# SVC N: N replicas ready, and the same for 3 s (on loopback the agents share one network
# namespace: two may give the same port at once, and one replica restarts)
wait_reps() {
	local prev="" cur
	for _ in $(seq 60); do
		cur=$(reps "$1" | sort)
		[ "$(echo "$cur" | grep -c .)" = "$2" ] && [ "$cur" = "$prev" ] && return 0
		prev=$cur
		sleep 3
	done
	echo "# only $(reps "$1" | wc -l) of $2 replicas ready"; return 1
}
run() { # LABEL CONNS URL [wrk args]
	local label=$1 c=$2 url=$3
	shift 3
	echo "## $label, $c connection(s): ${WRK_CPU:+taskset -c $WRK_CPU }wrk -t1 -c$c -d${DUR}s --latency $* $url"
	${WRK_CPU:+taskset -c "$WRK_CPU"} wrk -t1 -c"$c" -d"${DUR}s" --latency "$@" "$url"
}
# cpu PID: its CPU time (all threads, user + system) in clock ticks
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# runcpu PID LABEL CONNS URL: run, then the CPU PID used per request served
runcpu() {
	local pid=$1 a b out n
	shift
	a=$(cpu "$pid")
	out=$(run "$@")
	b=$(cpu "$pid")
	echo "$out"
	n=$(echo "$out" | awk '/requests in/ {print $1}')
	[ "${n:-0}" -gt 0 ] && echo "# cpu: $(((b - a) * 1000000 / $(getconf CLK_TCK) / n)) us a request ($((b - a)) ticks, $n requests, pid $pid)"
}
# rotate K WORDS...: the words, starting from the K-th (mod their count)
rotate() {
	local k=$1
	shift
	local a=("$@") n=$# i
	for ((i = 0; i < n; i++)); do echo "${a[$(((k + i) % n))]}"; done
}

svc=$(asu "$BIN/gsub" --parsable --service --replicas 1 --port 19000 -J bench -- "$DIR/replica-nginx.sh")
wait_reps "$svc" 1 || exit 1
"$BIN/ggated" --listen 127.0.0.1:$GWPORT --config "$GPOOL_CONF" --log-level warn &
gw=$!
# the same ggated and an nginx kept off CPU 0: on a --loopback cluster every agent hands out
# the same CPUs, so every replica's cpuset is CPU 0 (bench/gateway/probe-stall.sh)
taskset -c 1 "$BIN/ggated" --listen 127.0.0.1:$GW1PORT --config "$GPOOL_CONF" --log-level warn &
gw1=$!
if [ -n "$BEFORE" ]; then
	echo "# GGATED_BEFORE: $BEFORE (sha256 $(sha256sum "$BEFORE" | cut -c1-12))"
	"$BEFORE" --listen 127.0.0.1:$GWBPORT --config "$GPOOL_CONF" --log-level warn &
	gwb=$!
fi
# nginx_start NAME PORT [taskset CPU]: nginx proxy_pass in front of the replicas R
nginx_start() {
	local name=$1 port=$2
	shift 2
	nginx_proxy_conf "$DIR/$name.conf" "$DIR" "$port" "${R[@]}"
	"$@" /usr/sbin/nginx -c "$DIR/$name.conf" -p "$DIR" &
}
path_url() {
	case $1 in
	direct) echo "0|direct to one replica, $n replica(s)|http://${R[0]}/" ;;
	ggated) echo "$gw|ggated, $n replica(s)|http://127.0.0.1:$GWPORT/svc/bench/" ;;
	ggated-cpu1) echo "$gw1|ggated on CPU 1, $n replica(s)|http://127.0.0.1:$GW1PORT/svc/bench/" ;;
	nginx) echo "${ngw:-0}|nginx proxy_pass keepalive, $n replica(s)|http://127.0.0.1:$NGPORT/" ;;
	nginx-cpu1) echo "${ng1w:-0}|nginx on CPU 1, $n replica(s)|http://127.0.0.1:$NG1PORT/" ;;
	before) echo "$gwb|ggated before (GGATED_BEFORE), $n replica(s)|http://127.0.0.1:$GWBPORT/svc/bench/" ;;
	esac
}
paths="${PATHS:-direct ggated nginx ggated-cpu1 nginx-cpu1}${BEFORE:+ before}"
for n in ${COUNTS:-1 2 4}; do
	asu "$BIN/gpool" scale "$svc" "$n"
	wait_reps "$svc" "$n" || exit 1
	mapfile -t R < <(reps "$svc")
	echo "# $n replica(s): ${R[*]}; load average: $(cat /proc/loadavg)"
	[ -n "${ng:-}" ] && kill "$ng" "$ng1" 2>/dev/null && wait "$ng" "$ng1" 2>/dev/null
	nginx_start proxy $NGPORT
	ng=$!
	nginx_start proxy1 $NG1PORT taskset -c 1
	ng1=$!
	sleep 2 # nginx up, ggated's discovery has the new set
	ngw=$(pgrep -P "$ng" | head -1) ng1w=$(pgrep -P "$ng1" | head -1)
	for c in ${CONNS:-1 16}; do
		for rep in $(seq "$REPS"); do
			# shellcheck disable=SC2086 # the words of $paths
			for p in $(rotate "$rep" $paths); do
				IFS='|' read -r pid label url < <(path_url "$p")
				if [ "$pid" != 0 ]; then runcpu "$pid" "$label" "$c" "$url"; else run "$label" "$c" "$url"; fi
			done
		done
	done
done
# syscalls PID LABEL URL: the system calls of PID's main thread (the event loop) during a 3 s
# one-connection run
syscalls() {
	timeout -s INT 5 strace -c -p "$1" -o "$DIR/strace.out" 2>/dev/null &
	local sp=$! k
	sleep 0.5
	k=$(wrk -t1 -c1 -d3s "$3" | awk '/requests in/ {print $1}')
	wait "$sp"
	echo "## system calls of $2 (pid $1, its event loop thread), $k requests: strace -c -p $1"
	cat "$DIR/strace.out"
	awk -v n="$k" '$NF == "total" && n > 0 {printf "# %.1f system calls a request\n", $4 / n}' "$DIR/strace.out"
}
if [ -n "${STRACE:-}" ]; then
	syscalls "$gw" ggated "http://127.0.0.1:$GWPORT/svc/bench/"
	[ -n "${ngw:-}" ] && syscalls "$ngw" "nginx's worker" "http://127.0.0.1:$NGPORT/"
fi
asu "$BIN/gcancel" "$svc"
[ "${GSERVE:-1}" = 0 ] && { echo "# done $(date -u +%FT%TZ); load average: $(cat /proc/loadavg)"; sleep 1; python3 "$SRC/bench/gateway/summary.py" "$OUT"; exit 0; }

# gserve: dynamic batching on (max wait 1 ms, batch 32) and off, one replica, 16 connections
python3 "$SRC/tests/tools/gen-model.py" write "$DIR/m.gpm" --layers 64,256,256,10 --seed 1
chmod a+r "$DIR/m.gpm"
for wait_us in 0 1000; do
	s=$(asu "$BIN/gsub" --parsable --service --replicas 1 --port 19100 -J gs$wait_us \
		--stage "$DIR/m.gpm" -- "$UB/gserve" --model m.gpm --max-batch 32 --max-wait-us $wait_us)
	wait_reps "$s" 1 || exit 1
	r=$(reps "$s")
	sleep 1
	for rep in $(seq "$REPS"); do
		run "gserve 64-256-256-10, max-wait-us $wait_us, direct" 16 "http://$r/v1/predict" \
			-s "$SRC/bench/gateway/predict.lua"
	done
	curl -s "http://$r/v1/model"; echo
	asu "$BIN/gcancel" "$s"
	sleep 1
done
echo "# done $(date -u +%FT%TZ); load average: $(cat /proc/loadavg)"
sleep 1
python3 "$SRC/bench/gateway/summary.py" "$OUT"
