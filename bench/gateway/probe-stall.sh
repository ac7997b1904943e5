#!/bin/bash
# probe-stall.sh: where ggated's long requests come from, by hand: a --loopback cluster with a
# 2-replica nginx service (as bench/gateway.sh), ggated and nginx (proxy_pass, keepalive 64)
# in front of it, then ROUNDS rounds of `wrk -t1 -c16 -dSECONDS` on each, an idle pause between
# runs as in bench/gateway.sh. Each run: wrk's max and p99 (wrk corrects for coordinated
# omission: a few long stalls make its p99), the kernel's TCP counters over the run (nstat:
# retransmissions, timeouts, listen drops), and for ggated its own histogram (request read ->
# answer from the replica) beside wrk's. As root, under flock /tmp/gpool-netns.lock.
#   bench/gateway/probe-stall.sh [SECONDS [ROUNDS [PAUSE]]]
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/gateway/lib.sh
. "$SRC/bench/gateway/lib.sh"
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
DUR=${1:-5}
ROUNDS=${2:-4}
PAUSE=${3:-8}
DIR=$(mktemp -d /tmp/gpool-probe-stall.XXXXXX)
chmod 755 "$DIR"
SPORT=17990 GWPORT=18990 NGPORT=18991
cleanup() {
	bench_cleanup "$DIR" "${gw:-}" "${ng:-}" "${gw1:-}" "${gwo:-}" "${gws:-}"
}
trap cleanup EXIT
echo "# probe-stall.sh $(date -u +%FT%TZ), load average: $(cat /proc/loadavg)"
bench_two_replicas "$DIR" 4 $SPORT 19300
"$BIN/ggated" --listen 127.0.0.1:$GWPORT --config "$GPOOL_CONF" --log-level info ${GGATED_ARGS:-} \
	>"$DIR/gw.log" 2>&1 &
gw=$!
# the same ggated kept off CPU 0, where the replicas' cpusets put them on a --loopback cluster
taskset -c 1 "$BIN/ggated" --listen 127.0.0.1:$((GWPORT + 2)) --config "$GPOOL_CONF" --log-level info \
	${GGATED_ARGS:-} >"$DIR/gw1.log" 2>&1 &
gw1=$!
# the same ggated in a session of its own (a scheduler autogroup of its own, as a daemon has),
# not in this script's with wrk
setsid "$BIN/ggated" --listen 127.0.0.1:$((GWPORT + 4)) --config "$GPOOL_CONF" --log-level info \
	${GGATED_ARGS:-} >"$DIR/gws.log" 2>&1 &
gws=$!
# GGATED_OLD=PATH: another ggated build on the same replicas (path "old")
if [ -n "${GGATED_OLD:-}" ]; then
	"$GGATED_OLD" --listen 127.0.0.1:$((GWPORT + 3)) --config "$GPOOL_CONF" --log-level info \
		>"$DIR/gwold.log" 2>&1 &
	gwo=$!
fi
nginx_proxy_conf "$DIR/proxy.conf" "$DIR" "$NGPORT" "${R[@]}"
/usr/sbin/nginx -c "$DIR/proxy.conf" -p "$DIR" &
ng=$!
sleep 2
# ggated's own histogram of all requests, as "le=count" pairs (cumulative)
hist() {
	curl -s "http://127.0.0.1:$1/metrics" | awk -F'[{}]' '/^ggated_request_duration_seconds_bucket/ {
		split($2, a, "le=\""); sub(/".*/, "", a[2]); printf "%s=%s ", a[2], $3 }'
}
TCP="TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPSynRetrans TcpExtListenOverflows TcpExtListenDrops TcpExtTCPLossProbes TcpExtTCPAbortOnData TcpExtTCPBacklogDrop TcpExtTCPRcvQDrop"
for round in $(seq "$ROUNDS"); do
	for p in ${PATHS:-ggated nginx}; do
		case $p in
		ggated) url=http://127.0.0.1:$GWPORT/svc/bench/ pid=$gw ;;
		ggated-cpu1) url=http://127.0.0.1:$((GWPORT + 2))/svc/bench/ pid=$gw1 ;;
		old) url=http://127.0.0.1:$((GWPORT + 3))/svc/bench/ pid=$gwo ;;
		ggated-setsid) url=http://127.0.0.1:$((GWPORT + 4))/svc/bench/ pid=$gws ;;
		nginx) url=http://127.0.0.1:$NGPORT/ pid=$(pgrep -P "$ng" | head -1) ;;
		esac
		# which CPU the proxy's loop thread ran on, sampled every 10 ms
		(end=$((SECONDS + DUR)); while [ $SECONDS -lt $end ]; do awk '{print $39}' "/proc/$pid/stat"; sleep 0.01; done | sort | uniq -c | tr '\n' ' ' >"$DIR/psr") &
		psp=$!
		[ $p = ggated ] && echo "# ggated histogram before: $(hist $GWPORT)"
		[ $p = ggated-cpu1 ] && echo "# ggated-cpu1 histogram before: $(hist $((GWPORT + 2)))"
		nstat -n
		if [ -n "${SAMPLE:-}" ] && [ $p = ggated ]; then
			# the sockets between ggated and the replicas that hold unread bytes, every 20 ms
			(end=$((SECONDS + DUR + 1)); while [ $SECONDS -lt $end ]; do
				ss -Htn "( sport = :${R[0]##*:} or dport = :${R[0]##*:} or sport = :${R[1]##*:} or dport = :${R[1]##*:} )" |
					awk -v t="$(date +%s.%N | cut -c7-14)" '$2 > 0 || $3 > 0 {print "# ss", t, $0}'
				sleep 0.02; done) >"$DIR/ss.$round" &
			sp=$!
		fi
		out=$(wrk -t1 -c16 -d"${DUR}s" --latency "$url")
		# shellcheck disable=SC2086 # the counter names
		tcp=$(nstat -z $TCP | awk 'NR > 1 && $2 != 0 {printf "%s=%s ", $1, $2}')
		echo "## round $round $p: $(echo "$out" | awk '/Latency  / {print "avg", $2, "max", $4} / 99%/ {print "p99", $2} /Requests\/sec/ {print "rps", $2}' | tr '\n' ' ')"
		echo "# tcp counters over the run: ${tcp:-none}"
		wait "$psp"
		echo "# $p's loop on CPU (samples cpu): $(cat "$DIR/psr")"
		[ $p = ggated ] && echo "# ggated histogram after:  $(hist $GWPORT)"
		[ $p = ggated-cpu1 ] && echo "# ggated-cpu1 histogram after:  $(hist $((GWPORT + 2)))"
		[ $p = old ] && echo "# old histogram after:  $(hist $((GWPORT + 3)))"
		[ $p = ggated-setsid ] && echo "# ggated-setsid histogram after:  $(hist $((GWPORT + 4)))"
		if [ -n "${sp:-}" ]; then
			wait "$sp"
			sp=
			echo "# unread bytes seen: $(grep -c . "$DIR/ss.$round") samples; first 40:"
			head -40 "$DIR/ss.$round"
		fi
		sleep "$PAUSE"
	done
done
grep -v " info: listening\| known$\| added$" "$DIR/gw.log" | tail -20
echo "# done $(date -u +%FT%TZ), load average: $(cat /proc/loadavg)"
