#!/bin/bash
# probe-tail.sh: one look at ggated's p99 tail with 2 replicas, by hand: a --loopback cluster
# with a 2-replica nginx service (as bench/gateway.sh), the replica workers' CPU affinity and
# cgroups, wrk -c16 through ggated, ggated's /metrics. As root, under
# flock /tmp/gpool-netns.lock. Raw output of its one run: bench/results/gateway/gateway-probe-*.log.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
DIR=/tmp/gpool-cluster-probe
rm -rf "$DIR"
mkdir -p "$DIR"
chmod 755 "$DIR"
"$SRC/deploy/gpool-cluster" start --dir "$DIR/cluster" -n 4 --loopback --port 17990 --bin "$BIN" \
	--heartbeat-interval 1s >"$DIR/start.log" 2>&1 || { cat "$DIR/start.log"; exit 1; }
export GPOOL_SCHEDULER=tcp://127.0.0.1:17990 GPOOL_CONF=$DIR/cluster/gpool.conf
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$DIR/user")
cp "$SRC/bench/gateway/replica-nginx.sh" "$DIR/replica-nginx.sh"
chmod 755 "$DIR/replica-nginx.sh"
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
	"$BIN/gsub" --parsable --service --replicas 2 --port 19300 -J bench -- "$DIR/replica-nginx.sh"
ready() {
	"$BIN/gstat" --json | python3 -c 'import json,sys; print(sum(1 for j in json.load(sys.stdin)["jobs"] for r in j.get("replicas",[]) if r.get("ready")))'
}
for _ in $(seq 40); do [ "$(ready)" = 2 ] && break; sleep 1; done
sleep 4
"$BIN/gstat" --json | python3 -c 'import json,sys; [print(r["addr"],r["port"],r.get("node")) for j in json.load(sys.stdin)["jobs"] for r in j.get("replicas",[])]'
"$BIN/ggated" --listen 127.0.0.1:18990 --config "$GPOOL_CONF" --log-level info >"$DIR/gw.log" 2>&1 &
gw=$!
sleep 2
for p in $(pgrep -f "nginx: worker"); do echo "pid $p $(taskset -cp "$p" 2>&1 | tail -c 30) $(tail -c 80 "/proc/$p/cgroup")"; done
wrk -t1 -c16 -d8s --latency http://127.0.0.1:18990/svc/bench/
curl -s http://127.0.0.1:18990/metrics | grep -v "^#" | grep -E "latency|requests|errors|retries" | head -60
kill "$gw"
tail -5 "$DIR/gw.log"
"$SRC/deploy/gpool-cluster" stop --dir "$DIR/cluster" >/dev/null 2>&1
