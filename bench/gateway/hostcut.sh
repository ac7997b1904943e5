#!/bin/bash
# bench/gateway/hostcut.sh: a host cut under load (issue 13): the time from the cut to the first
# request served by the remaining replicas, and to 3 replicas again. A 4-host netns gpool
# cluster (deploy/gpool-cluster; NODE_TIMEOUT and HEARTBEAT, default gschedd's own 10s and 2s);
# a service of 3 replicas spread over 3 hosts, each nginx answering its own name
# (bench/gateway/replica-nginx.sh id, health path /health); ggated in front (its defaults but
# --timeout 5000) and, side by side, the rival: nginx 1.22 with passive failover in front of the
# same 3 replicas (max_fails=1 fail_timeout=10s, its defaults; proxy_connect_timeout 500ms as
# ggated's --connect-timeout, proxy_read_timeout 5s as ggated's --timeout, 3 tries, keep-alive
# upstream). Steady load on both through bench/gateway/cutload.py (CLIENTS keep-alive
# connections a path, each a GET every PACE ms), every request logged. Per trial: 3 s of load,
# then one replica's host cut (its link down, as t0810-gateway does), load until 3 replicas
# are ready off that host and the replacement has answered through ggated, 2 s more; the link
# up again, and the next trial cuts another replica's host once all is back. The figures
# (bench/gateway/hostcut.py): per path, the first answer from another replica to a request
# sent after the cut, the requests in flight at the cut (worst latency, failures), those sent
# after it that stalled (over STALL_MS) or failed; the steps back to 3 replicas from
# gschedd's and ggated's logs and a 0.1 s gstat poll. Raw output:
# bench/results/gateway/hostcut-<date>.log. As root, under the netns lock:
#   flock /tmp/gpool-netns.lock bench/gateway/hostcut.sh [TRIALS]
# NGINX=0 leaves the rival out; GGATED_ARGS adds ggated options.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/gateway/lib.sh
. "$SRC/bench/gateway/lib.sh"
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
TRIALS=${1:-5}
NT=${NODE_TIMEOUT:-10s} HB=${HEARTBEAT:-2s}
CLIENTS=${CLIENTS:-4} PACE=${PACE:-10} STALL_MS=${STALL_MS:-200}
SPORT=17970 GWPORT=18970 NGPORT=18971
[ "$(id -u)" = 0 ] || { echo "hostcut.sh: needs root (network namespaces)"; exit 77; }
export TZ=UTC # the daemons' log stamps and hostcut.py's reading of them
OUT=$SRC/bench/results/gateway/hostcut-$(date +%Y%m%d-%H%M).log
DIR=$(mktemp -d /tmp/gpool-bench-cut.XXXXXX)
chmod 755 "$DIR"
mkdir -p "$SRC/bench/results/gateway"
exec > >(tee "$OUT") 2>&1
echo "# bench/gateway/hostcut.sh $TRIALS $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, $(/usr/sbin/nginx -v 2>&1)"
echo "# node_timeout $NT, heartbeat_interval $HB; $CLIENTS connections a path, a GET every $PACE ms each; stalled: over $STALL_MS ms"
echo "# load average: $(cat /proc/loadavg)"

cleanup() {
	touch "$DIR/stop"
	[ -n "${host:-}" ] && ip link set "gpv-$host" up 2>/dev/null
	for p in ${load:-} ${poller:-} ${gw:-} ${ng:-}; do kill "$p" 2>/dev/null; done
	"$SRC/deploy/gpool-cluster" stop --dir "$DIR/cluster" >/dev/null 2>&1
	rm -rf "$DIR"
}
trap cleanup EXIT
"$SRC/deploy/gpool-cluster" start --dir "$DIR/cluster" -n 4 --port $SPORT --bin "$BIN" \
	--node-timeout "$NT" --heartbeat-interval "$HB" --kill-grace 2s --sched-arg --log-level=debug \
	>"$DIR/start.log" 2>&1 || { cat "$DIR/start.log"; echo "cluster did not start"; exit 1; }
eval "$("$SRC/deploy/gpool-cluster" env --dir "$DIR/cluster" | sed 's/GPOOL_CLUSTER_DIR=[^ ]*//')"
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$DIR/user")
cp "$SRC/bench/gateway/replica-nginx.sh" "$DIR/replica-nginx.sh"
chmod 755 "$DIR/replica-nginx.sh"
cd "$DIR" || exit 1
asu() { runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
# the replicas: "node addr port ready job" lines
reps() {
	"$BIN/gstat" --json -j "$svc" 2>/dev/null | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    for r in j.get("replicas", []):
        print(r.get("node") or "-", r.get("addr") or "-", r.get("port", 0),
              "yes" if r.get("ready") else "no", r.get("job_id", 0))'
}
nodes_up() { "$BIN/gnodes" --json 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for n in json.load(sys.stdin).get("nodes", []) if str(n.get("state", "")).upper().replace("NODE_", "") == "UP"))' 2>/dev/null; }
# 4 nodes up and 3 replicas ready on 3 hosts, the same for 2 s
settled() {
	local prev="" cur _
	for _ in $(seq 120); do
		cur=$(reps | awk '$4 == "yes" {print $1, $3}' | sort)
		if [ "$(nodes_up)" = 4 ] && [ "$(echo "$cur" | awk '{print $1}' | sort -u | grep -c .)" = 3 ] &&
			[ "$(reps | wc -l)" = 3 ] && [ "$cur" = "$prev" ]; then
			return 0
		fi
		prev=$cur
		sleep 1
	done
	echo "# not settled: $(nodes_up) nodes up; replicas: $(reps | tr '\n' ';')"
	return 1
}

svc=$(asu "$BIN/gsub" --parsable --service --replicas 3 --port 19000 --health-path /health -J cut \
	-- "$DIR/replica-nginx.sh" id)
[ -n "$svc" ] || exit 1
settled || exit 1
# shellcheck disable=SC2086 # GGATED_ARGS: words
"$BIN/ggated" --listen 127.0.0.1:$GWPORT --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--timeout 5000 ${GGATED_ARGS:-} --log-level info >"$DIR/ggated.log" 2>&1 &
gw=$!
echo "# service $svc; ggated of commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null), options --timeout 5000 ${GGATED_ARGS:-}"
sleep 2

# the rival: nginx with passive failover in front of the replicas (bench/gateway/lib.sh)
NGINX_SERVER_ARGS="max_fails=1 fail_timeout=10s"
NGINX_PROXY_ARGS="proxy_connect_timeout 500ms; proxy_read_timeout 5s; proxy_send_timeout 5s;
      proxy_next_upstream error timeout; proxy_next_upstream_tries 3;"

for k in $(seq "$TRIALS"); do
	settled || break
	reps | sort >"$DIR/t$k.pre"
	echo "# trial $k: replicas (node addr port ready job): $(tr '\n' ';' <"$DIR/t$k.pre"); load average: $(cat /proc/loadavg)"
	# the host cut: each trial another replica's (the replicas' hosts in order, by trial)
	host=$(awk '{print $1}' "$DIR/t$k.pre" | sed -n "$(((k - 1) % 3 + 1))p")
	targets=("ggated=http://127.0.0.1:$GWPORT/svc/cut/")
	if [ "${NGINX:-1}" != 0 ]; then
		mapfile -t R < <(awk '{print $2 ":" $3}' "$DIR/t$k.pre")
		nginx_proxy_conf "$DIR/rival.conf" "$DIR" "$NGPORT" "${R[@]}"
		/usr/sbin/nginx -e stderr -c "$DIR/rival.conf" -p "$DIR" &
		ng=$!
		targets+=("nginx=http://127.0.0.1:$NGPORT/")
		sleep 0.5
	fi
	rm -f "$DIR/stop"
	python3 "$SRC/bench/gateway/hostcut.py" poll "$BIN/gstat" "$svc" "$DIR/stop" >"$DIR/t$k.poll" &
	poller=$!
	python3 "$SRC/bench/gateway/cutload.py" --clients "$CLIENTS" --pace "$PACE" "$DIR/stop" \
		"${targets[@]}" >"$DIR/t$k.req" &
	load=$!
	# 3 s of load before the cut, from its first answers (python's start can take seconds on
	# a loaded machine)
	for _ in $(seq 100); do [ "$(wc -l <"$DIR/t$k.req")" -ge 20 ] && break; sleep 0.2; done
	sleep 3
	cut=$(date +%s.%N)
	ip link set "gpv-$host" down
	# until 3 replicas are ready off the cut host and the replacement answered through ggated
	new=""
	for _ in $(seq 240); do
		sleep 0.25
		[ -z "$new" ] && new=$(reps | awk -v h="$host" '$4 == "yes" && $1 != h {print $1, $2, $3, $4, $5}' |
			sort | comm -13 "$DIR/t$k.pre" - | awk '{print $1 ":" $3}' | head -1)
		[ -n "$new" ] && [ "$(reps | awk -v h="$host" '$4 == "yes" && $1 != h' | wc -l)" = 3 ] &&
			grep -q "^ggated .* 200 $new\$" "$DIR/t$k.req" && break
	done
	sleep 2
	touch "$DIR/stop"
	wait "$load" "$poller"
	load="" poller=""
	ip link set "gpv-$host" up
	if [ -n "${ng:-}" ]; then
		kill "$ng"
		wait "$ng" 2>/dev/null
		ng=""
	fi
	echo "# trial $k: $(wc -l <"$DIR/t$k.req") requests logged; $host cut at $cut, up again at $(date +%s.%N)"
	python3 "$SRC/bench/gateway/hostcut.py" trial --trial "$k" --cut "$cut" --host "$host" \
		--req "$DIR/t$k.req" --poll "$DIR/t$k.poll" --pre "$DIR/t$k.pre" --sched-log "$DIR/cluster/sched/gschedd.log" \
		--gw-log "$DIR/ggated.log" --node-timeout "${NT%s}" --stall-ms "$STALL_MS" --json "$DIR/trials.json"
	# what stalled or failed, for the record (every request with its times: $DIR/t$k.req)
	awk -v c="$cut" -v s="$STALL_MS" '$4 - $3 > s / 1000 || $5 != 200 {
		printf "#   %s client %s sent %+.3f s answered %+.3f s (%.0f ms) status %s %s\n", $1, $2, $3 - c, $4 - c, ($4 - $3) * 1000, $5, $6 }' \
		"$DIR/t$k.req"
	host=""
done
echo "# ggated's log from the first cut on:"
grep -E "ejected|added|healthy|removed" "$DIR/ggated.log" | sed 's/^/#   /'
echo "# gschedd's log, the lines of nodes and the replicas' jobs:"
grep -E "DOWN|registered|requeued|started|stale" "$DIR/cluster/sched/gschedd.log" | sed 's/^/#   /'
echo "# done $(date -u +%FT%TZ); load average: $(cat /proc/loadavg)"
python3 "$SRC/bench/gateway/hostcut.py" summary "$DIR/trials.json"
