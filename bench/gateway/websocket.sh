#!/bin/bash
# bench/gateway/websocket.sh: a WebSocket through ggated against nginx (Debian's 1.22, one
# worker, proxy_pass with the Upgrade and Connection headers set as nginx's WebSocket proxying
# guide says) in front of the same replica, and against the replica called directly. The
# replica is a real service job on a --loopback gpool cluster: tests/system/ws_echo.py (the
# standard library's sockets, a thread per connection); the client is tests/system/ws_client.py
# with WS_ZERO_MASK=1 (frames masked with a zero key, as RFC 6455 allows, so that Python's XOR
# is not what is measured). Per path and repetition, the paths taking turns (the order rotates):
#   rtt   COUNT round trips of a 32-byte message, one at a time: p50 and p99 in microseconds
#   tput  SECONDS of 64 KiB messages echoed, 8 in flight: MB/s one way
#   down  64 MiB streamed from the replica to the client: MB/s
# A summary (median, min-max) ends the log. Raw output: bench/results/gateway/websocket-<date>.log.
# Needs root, nginx, a build.
#   bench/gateway/websocket.sh [REPS [COUNT [SECONDS]]]
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/gateway/lib.sh
. "$SRC/bench/gateway/lib.sh"
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
REPS=${1:-5}
COUNT=${2:-2000}
SECS=${3:-5}
OUT=$SRC/bench/results/gateway/websocket-$(date +%Y%m%d-%H%M).log
DIR=$(mktemp -d /tmp/gpool-bench-ws.XXXXXX)
chmod 755 "$DIR"
SPORT=17970 GWPORT=18970 GWSPORT=18971 NGPORT=18972
mkdir -p "$SRC/bench/results/gateway"
exec > >(tee "$OUT") 2>&1
echo "# bench/gateway/websocket.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, $(/usr/sbin/nginx -v 2>&1), $(/usr/bin/python3 --version)"
echo "# load average: $(cat /proc/loadavg)"
cleanup() { bench_cleanup "$DIR" "${gw:-}" "${ng:-}"; }
trap cleanup EXIT
"$SRC/deploy/gpool-cluster" start --dir "$DIR/cluster" -n 1 --loopback --port $SPORT --bin "$BIN" \
	--heartbeat-interval 1s >/dev/null 2>&1 || { echo "cluster did not start"; exit 1; }
export GPOOL_SCHEDULER=tcp://127.0.0.1:$SPORT GPOOL_CONF=$DIR/cluster/gpool.conf
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$DIR/user")
install -m 0755 "$SRC/tests/system/ws_echo.py" "$SRC/tests/system/ws_client.py" "$DIR/"
svc=$(runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER=$GPOOL_SCHEDULER \
	GPOOL_CONF=$GPOOL_CONF gsub --parsable --service -J wsbench -- /bin/sh -c \
	"exec /usr/bin/python3 $DIR/ws_echo.py \$GPOOL_PORT")
rep=""
for _ in $(seq 60); do
	rep=$("$BIN/gstat" --json -j "$svc" | /usr/bin/python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    for r in j.get("replicas", []):
        if r.get("ready"): print("%s:%s" % (r["addr"], r["port"]))')
	[ -n "$rep" ] && break
	sleep 1
done
[ -n "$rep" ] || { echo "the replica did not start"; exit 1; }
echo "# replica (job $svc) at $rep"
"$BIN/ggated" --listen 127.0.0.1:$GWPORT --config "$GPOOL_CONF" --service-port wsbench=$GWSPORT \
	--poll-interval 300 --log-level warn &
gw=$!
cat >"$DIR/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $DIR/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $DIR/pbody; proxy_temp_path $DIR/pproxy; fastcgi_temp_path $DIR/pf;
  uwsgi_temp_path $DIR/pu; scgi_temp_path $DIR/ps;
  upstream reps { server $rep; }
  server {
    listen 127.0.0.1:$NGPORT;
    location / {
      proxy_pass http://reps; proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade; proxy_set_header Connection "upgrade";
      proxy_read_timeout 3600s;
    }
  }
}
CONF
/usr/sbin/nginx -c "$DIR/nginx.conf" -p "$DIR" &
ng=$!
sleep 2
C="/usr/bin/python3 $DIR/ws_client.py"
export WS_ZERO_MASK=1
for p in "$rep" 127.0.0.1:$GWSPORT 127.0.0.1:$NGPORT; do
	$C "$p" / handshake | grep -q ' 101 ' || { echo "no WebSocket through $p"; exit 1; }
done
name() { case $1 in "$rep") echo direct ;; "127.0.0.1:$GWSPORT") echo ggated ;; *) echo nginx ;; esac; }
paths=("$rep" "127.0.0.1:$GWSPORT" "127.0.0.1:$NGPORT")
for r in $(seq "$REPS"); do
	for k in 0 1 2; do
		p=${paths[$(((k + r) % 3))]}
		n=$(name "$p")
		read -r _ p50 p99 < <($C "$p" / rtt "$COUNT" 32 | sed -n 1p)
		read -r _ mbs < <($C "$p" / tput "$SECS" 65536 | sed -n 1p)
		read -r _ _ _ secs < <($C "$p" / stream 67108864 | sed -n 1p)
		down=$(awk -v s="$secs" 'BEGIN { printf "%.1f", 67.108864 / s }')
		echo "rep $r $n rtt_p50_us $p50 rtt_p99_us $p99 tput_MBps $mbs down_MBps $down"
	done
done
echo "# load average: $(cat /proc/loadavg)"
echo "# summary: median (min-max) over $REPS repetitions"
grep '^rep ' "$OUT" | /usr/bin/python3 -c '
import sys, statistics
d = {}
for l in sys.stdin:
    f = l.split()
    for i in range(3, len(f), 2):
        d.setdefault((f[2], f[i]), []).append(float(f[i + 1]))
for n in ("direct", "ggated", "nginx"):
    print("# %-7s" % n + "".join("  %s %g (%g-%g)" % (k, statistics.median(v), min(v), max(v))
          for (nn, k), v in d.items() if nn == n))'
