#!/bin/bash
# profile-cpu.sh: where ggated's CPU goes per request. A --loopback cluster with a 2-replica
# nginx service (as bench/gateway.sh), ggated (and GGATED_BEFORE=PATH, another build, as path
# "before") and nginx (proxy_pass, keepalive 64) in front of it. Then ROUNDS rounds of
# `wrk -t1 -c16 -dSECONDS` through each, the paths taking turns, each run followed by the CPU
# the proxy spent per request served (utime + stime from /proc over the run, all threads);
# then, PERF=1, `perf record -g` of ggated's loop over one more run and its report (self and
# children), and STRACE=1, `strace -c` of each proxy over a 16-connection run (system calls a
# request). H2O=1: h2o 2.2.5's own reverse proxy (Debian's h2o, one thread, to the first
# replica: its proxy takes one upstream) as one more path. As root, under
# flock /tmp/gpool-netns.lock. Raw output on stdout.
#   bench/gateway/profile-cpu.sh [SECONDS [ROUNDS]]
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/gateway/lib.sh
. "$SRC/bench/gateway/lib.sh"
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
DUR=${1:-5}
ROUNDS=${2:-3}
DIR=$(mktemp -d /tmp/gpool-profile-cpu.XXXXXX)
chmod 755 "$DIR"
SPORT=17970 GWPORT=18970 NGPORT=18971 GWBPORT=18972 H2PORT=18973
BEFORE=${GGATED_BEFORE:-}
cleanup() {
	bench_cleanup "$DIR" "${gw:-}" "${gwb:-}" "${ng:-}" "${h2:-}"
}
trap cleanup EXIT
echo "# profile-cpu.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs; load average: $(cat /proc/loadavg)"
bench_two_replicas "$DIR" 2 $SPORT 19400
"$BIN/ggated" --listen 127.0.0.1:$GWPORT --config "$GPOOL_CONF" --log-level warn &
gw=$!
if [ -n "$BEFORE" ]; then
	echo "# GGATED_BEFORE: $BEFORE (sha256 $(sha256sum "$BEFORE" | cut -c1-12))"
	"$BEFORE" --listen 127.0.0.1:$GWBPORT --config "$GPOOL_CONF" --log-level warn &
	gwb=$!
fi
nginx_proxy_conf "$DIR/proxy.conf" "$DIR" "$NGPORT" "${R[@]}"
/usr/sbin/nginx -c "$DIR/proxy.conf" -p "$DIR" &
ng=$!
if [ "${H2O:-0}" = 1 ]; then
	[ -x /usr/bin/h2o ] || { echo "profile-cpu: H2O=1 needs Debian's h2o (apt-get install h2o)" >&2; exit 1; }
	h2o_proxy_conf "$DIR/h2o.conf" "$H2PORT" "${R[0]}"
	/usr/bin/h2o -c "$DIR/h2o.conf" &
	h2=$!
	echo "# h2o $(/usr/bin/h2o --version | head -1 | cut -d' ' -f3), one thread, to ${R[0]}"
fi
sleep 3
ngw=$(pgrep -P "$ng" | head -1)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
path() { # NAME -> "pid url"
	case $1 in
	ggated) echo "$gw http://127.0.0.1:$GWPORT/svc/bench/" ;;
	before) echo "$gwb http://127.0.0.1:$GWBPORT/svc/bench/" ;;
	nginx) echo "$ngw http://127.0.0.1:$NGPORT/" ;;
	h2o) echo "$h2 http://127.0.0.1:$H2PORT/" ;;
	esac
}
paths="ggated nginx${BEFORE:+ before}"
[ "${H2O:-0}" = 1 ] && paths="$paths h2o"
for round in $(seq "$ROUNDS"); do
	# shellcheck disable=SC2086 # the words of $paths
	set -- $paths
	for ((i = 0; i < $#; i++)); do
		a=("$@")
		p=${a[$(((round + i) % $#))]}
		read -r pid url < <(path "$p")
		t0=$(cpu "$pid")
		out=$(wrk -t1 -c16 -d"${DUR}s" --latency "$url")
		t1=$(cpu "$pid")
		n=$(echo "$out" | awk '/requests in/ {print $1}')
		p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
		p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
		rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
		echo "$p round $round: $n requests, $rps req/s, p50 $p50, p99 $p99, cpu $(((t1 - t0) * 1000000 / $(getconf CLK_TCK) / n)) us a request ($((t1 - t0)) ticks); load $(cut -d' ' -f1-3 /proc/loadavg)"
	done
done
if [ "${PERF:-0}" = 1 ]; then
	perf record -g -o "$DIR/perf.data" -p "$gw" -- sleep "$DUR" >/dev/null 2>&1 &
	pp=$!
	sleep 0.3
	wrk -t1 -c16 -d"${DUR}s" "http://127.0.0.1:$GWPORT/svc/bench/" | grep -E 'requests in|Requests/sec'
	wait "$pp"
	echo "## perf report --sort dso (self), ggated"
	perf report -i "$DIR/perf.data" --no-children --stdio --sort dso -g none 2>/dev/null | grep -v '^$'
	echo "## perf report --no-children (self), ggated, user space"
	perf report -i "$DIR/perf.data" --no-children --stdio -g none --percent-limit 0.2 2>/dev/null | grep -v '^$' | grep -v '\[k\]'
	echo "## perf report --no-children (self), ggated"
	perf report -i "$DIR/perf.data" --no-children --stdio -g none --percent-limit 0.7 2>/dev/null | grep -v '^$'
	echo "## perf report --children, ggated"
	perf report -i "$DIR/perf.data" --children --stdio -g none --percent-limit 3 2>/dev/null | grep -v '^$'
fi
if [ "${STRACE:-0}" = 1 ]; then
	for p in $paths; do
		read -r pid url < <(path "$p")
		timeout -s INT 5 strace -c -f -p "$pid" -o "$DIR/strace.out" 2>/dev/null &
		sp=$!
		sleep 0.5
		k=$(wrk -t1 -c16 -d3s "$url" | awk '/requests in/ {print $1}')
		wait "$sp"
		echo "## system calls of $p (pid $pid), $k requests at 16 connections: strace -c -f -p $pid"
		cat "$DIR/strace.out"
		awk -v n="$k" '$NF == "total" && n > 0 {printf "# %.1f system calls a request\n", $4 / n}' "$DIR/strace.out"
	done
fi
echo "# done $(date -u +%FT%TZ); load average: $(cat /proc/loadavg)"
