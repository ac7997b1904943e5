#!/bin/bash
# room.sh: a language model split over 3 simulated PCs (issue 37's "measured across 3 PCs").
# Three network-namespace hosts (deploy/gpool-cluster, slot $GPOOL_SLOT, default 2) whose links
# are shaped to $RATE (default 1gbit: tc tbf on both ends of every host's veth; netem is not
# available), one model (default: random weights of TinyLlama's shapes, dim 2048, cut to
# $LAYERS layers, q4_0), and:
#   A. decode tokens/s and time to first token on 1, 2 and 3 ranks (one stream; gllm's ranks
#      started in the hosts' namespaces with libgcomm's tcp rendezvous)
#   B. the network's cost per token: 3 ranks on 3 hosts against the same 3 ranks in one host
#      (their frames over its loopback), against the floor hops x dim x 4 bytes / link rate
#   C. the same with --wire f16
#   D. the model's start as a gpool service staged to 3 PCs (gsub --stage; the file travels
#      through gschedd's chunk store over the shaped links) against a local load on one rank
#   E. seconds from a PC holding a stage switched off (link cut, agent and processes killed) to
#      tokens flowing again through ggated (node_timeout 4 s)
# The hosts share this machine's 2 cores: more ranks cannot mean more speed here.
# Raw logs and a summary go to $OUT (default bench/results/llm/room-DATE). Run as root:
#   bench/llm/room.sh [--model FILE.gguf]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
export GPOOL_SLOT=${GPOOL_SLOT:-2}
CLUSTER=$SRC/deploy/gpool-cluster
CL=$SRC/tests/system/llm_clients.py
PY=/usr/bin/python3
RATE=${RATE:-1gbit}
LAYERS=${LAYERS:-6}
NTOK=${NTOK:-16}
OUT=${OUT:-$SRC/bench/results/llm/room-$(date -u +%Y%m%dT%H%M)}
DIR=/tmp/gpool-room.$GPOOL_SLOT
MODEL=
[ "${1:-}" = --model ] && MODEL=$2
[ "$(id -u)" = 0 ] || { echo "room.sh: run as root (network namespaces)" >&2; exit 77; }
mkdir -p "$OUT" "$DIR.work"
chmod 0777 "$DIR.work"
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
addr() { echo "198.18.0.$((64 * GPOOL_SLOT + 10 + ${1#h}))"; }
pids=()
# the hosts' gllm processes (the exec wrapper's pid is not gllm's)
host_gllm() {
	local h p
	for h in h1 h2 h3; do
		for p in $("$CLUSTER" pids --dir "$DIR" "$h" 2>/dev/null); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = gllm ] && echo "$p"
		done
	done
}
stop_ranks() {
	local p
	for p in $(host_gllm) "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for _ in $(seq 50); do [ -z "$(host_gllm)" ] && break; sleep 0.1; done
	pids=()
}
cleanup() {
	stop_ranks
	[ -n "${gw:-}" ] && kill "$gw" 2>/dev/null
	"$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1
}
trap cleanup EXIT

if [ -z "$MODEL" ]; then
	MODEL=$DIR.work/m.gguf
	"$BIN/gllm-mkmodel" --shape tinyllama-1.1b --layers "$LAYERS" --type q4_0 --seed 3 "$MODEL" | tee -a "$OUT/summary.txt"
fi
chmod 0644 "$MODEL"
DIM=$("$BIN/gllm-mkmodel" --info "$MODEL" 2>/dev/null | sed -n 's/.*embedding_length[^0-9]*\([0-9]*\).*/\1/p' | head -1)
say "room.sh $(date -u +%FT%TZ) on $(hostname): model $(basename "$MODEL") ($(du -m "$MODEL" | cut -f1) MB, dim $DIM), links $RATE, load $(cut -d' ' -f1-3 /proc/loadavg)"

"$CLUSTER" start -n 3 --dir "$DIR" --bin "$BIN" --node-timeout 4s --heartbeat-interval 1s \
	--kill-grace 2s >"$OUT/cluster.log" 2>&1 || { cat "$OUT/cluster.log"; exit 1; }
eval "$("$CLUSTER" env --dir "$DIR")"
export GPOOL_SCHEDULER GPOOL_CONF

# the links: tbf on the bridge side (into the host) and on the host's eth0 (out of it); a small
# burst so that one token's activations wait for the wire as on a real link
veth() { if [ "$GPOOL_SLOT" = 0 ]; then echo "gpv-$1"; else echo "gpv$GPOOL_SLOT-$1"; fi; }
for h in h1 h2 h3; do
	tc qdisc replace dev "$(veth $h)" root tbf rate "$RATE" burst 16kb latency 50ms
	"$CLUSTER" exec --dir "$DIR" "$h" tc qdisc replace dev eth0 root tbf rate "$RATE" burst 16kb latency 50ms
done
tc qdisc show dev "$(veth h1)" >>"$OUT/summary.txt"

PORT=$((28080 + 200 * GPOOL_SLOT))
RDV=$((29500 + 200 * GPOOL_SLOT))
PROMPTS=$DIR.work/prompt.json
"$PY" -c 'import json,sys; json.dump([" ".join(["the room of spare cards serves a model that fits on none of them"] * 2)], open(sys.argv[1], "w"))' "$PROMPTS"
SERVE=(--backend cpu --ctx 512 --parallel 2)

# start K HOSTS... -- ARGS: one gllm rank per host (a host may repeat), rank 0 on the first;
# prints the seconds until rank 0 answers /health
start() {
	local k=$1 i=0 h t0 up=0
	shift
	local hosts=()
	while [ "$1" != -- ]; do hosts+=("$1"); shift; done
	shift
	t0=$(date +%s.%N)
	for h in "${hosts[@]}"; do
		if [ "$k" = 1 ]; then
			"$CLUSTER" exec --dir "$DIR" "$h" env GLLM_SPEED=10 GLLM_MEM=4G "$BIN/gllm" serve "$MODEL" \
				--host 0.0.0.0 --port "$PORT" "${SERVE[@]}" "$@" >"$OUT/rank-$k-$i.log" 2>&1 &
		else
			"$CLUSTER" exec --dir "$DIR" "$h" env GLLM_SPEED=10 GLLM_MEM=4G GCOMM_RDV="tcp://$(addr "${hosts[0]}"):$RDV" \
				GCOMM_SIZE="$k" GCOMM_RANK=$i GCOMM_TIMEOUT=10000 "$BIN/gllm" serve "$MODEL" --host 0.0.0.0 \
				--port "$PORT" "${SERVE[@]}" "$@" >"$OUT/rank-$k-$i.log" 2>&1 &
		fi
		pids+=($!)
		i=$((i + 1))
	done
	for _ in $(seq 1200); do
		[ "$(curl -s -m 1 "http://$(addr "${hosts[0]}"):$PORT/health")" = ok ] && { up=1; break; }
		sleep 0.1
	done
	[ "$up" = 1 ] || { echo "room.sh: the ranks did not come up: $(tail -2 "$OUT/rank-$k-0.log")" >&2; return 1; }
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

# measure LABEL HOST: one stream (the file is in the page cache already: the ranks loaded it)
measure() {
	local label=$1 h=$2
	"$PY" "$CL" stream "http://$(addr "$h"):$PORT" "$PROMPTS" "$NTOK" "$OUT/$label.json"
	"$PY" - "$OUT/$label.json" "$label" <<'EOF' | tee -a "$OUT/summary.txt"
import json, statistics, sys
r = json.load(open(sys.argv[1]))[0]
t = r["times"]
gaps = [b - a for a, b in zip(t, t[1:])]
u = r.get("usage") or {}
print("%-22s prompt %s tokens, ttft %.3f s, %s tokens, decode %.2f tokens/s (median gap %.1f ms)" % (
    sys.argv[2], u.get("prompt_tokens"), r["ttft"], u.get("completion_tokens"),
    (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 else 0, 1000 * statistics.median(gaps) if gaps else 0))
EOF
}

say ""
say "A. 1, 2 and 3 ranks, one per host, links $RATE"
s=$(start 1 h1 --) && say "1 rank: up in $s s (local file)" && measure ranks1 h1
stop_ranks
s=$(start 2 h1 h2 --) && say "2 ranks: up in $s s" && measure ranks2 h1
stop_ranks
s=$(start 3 h1 h2 h3 --) && say "3 ranks: up in $s s" && measure ranks3 h1
stop_ranks
say ""
say "B. the same 3 ranks in one host (no link): the network's cost is the difference"
s=$(start 3 h1 h1 h1 --) && say "3 ranks on h1: up in $s s" && measure ranks3-onehost h1
stop_ranks
say ""
say "C. 3 ranks, one per host, --wire f16"
s=$(start 3 h1 h2 h3 -- --wire f16) && measure ranks3-f16 h1
stop_ranks
"$PY" - "$OUT" "$DIM" "$RATE" <<'EOF' | tee -a "$OUT/summary.txt"
import json, statistics, sys
out, dim, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bps = {"gbit": 1e9, "mbit": 1e6}[rate[-4:]] * float(rate[:-4]) / 8
def gap(label):
    t = json.load(open("%s/%s.json" % (out, label)))[0]["times"]
    return statistics.median([b - a for a, b in zip(t, t[1:])])
def ttft(label):
    return json.load(open("%s/%s.json" % (out, label)))[0]["ttft"]
try:
    ntok = json.load(open(out + "/ranks3.json"))[0]["usage"]["prompt_tokens"]
    for wire, b, lab in (("f32", 4, "ranks3"), ("f16", 2, "ranks3-f16")):
        floor = 3 * dim * b / bps
        d = gap(lab) - gap("ranks3-onehost")
        print("network cost a token, %s: %.3f ms (3 hosts %.1f ms - one host %.1f ms a token); floor 3 hops x %d x %d B / %.0f MB/s = %.3f ms: %.1fx" % (
            wire, 1000 * d, 1000 * gap(lab), 1000 * gap("ranks3-onehost"), dim, b, bps / 1e6, 1000 * floor, d / floor))
    floor = 3 * ntok * dim * 4 / bps
    d = ttft("ranks3") - ttft("ranks3-onehost")
    print("network cost of the prompt's %d tokens (f32): %.3f s (ttft %.3f - %.3f); floor %.3f s: %.1fx" % (
        ntok, d, ttft("ranks3"), ttft("ranks3-onehost"), floor, d / floor))
except (OSError, KeyError, IndexError, ValueError, TypeError, ZeroDivisionError) as e:
    print("network cost: not computed (%s)" % e)
EOF

# -- D. a service staged to 3 PCs, through ggated; E. a PC switched off
say ""
say "D. start: a service of 3 ranks with the file staged to the 3 PCs, against a local load"
GW=127.0.0.1:$((18870 + 200 * GPOOL_SLOT))
"$BIN/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" --health-interval 300 \
	--connect-timeout 400 --poll-interval 300 --stream-timeout 20000 >"$OUT/ggated.log" 2>&1 &
gw=$!
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$DIR.work/user")
cp "$MODEL" "$DIR.work/svc.gguf"
chown gpool-user: "$DIR.work/svc.gguf"
cd "$DIR.work" || exit 1
t0=$(date +%s.%N)
svc=$(runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
	GCOMM_RDV=gpool GCOMM_TIMEOUT=4000 GLLM_SPEED=10 GLLM_MEM=4G gsub --parsable --service -N 2-3 \
	--health-path /health -J room --stage svc.gguf -- gllm serve svc.gguf "${SERVE[@]}" --stage-timeout 10 | tail -1)
for _ in $(seq 1800); do
	[ "$(curl -s -m 1 "http://$GW/svc/room/health")" = ok ] && break
	sleep 0.1
done
t1=$(date +%s.%N)
st=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
loc=$(sed -n 's/^1 rank: up in \([0-9.]*\) s.*/\1/p' "$OUT/summary.txt")
say "staged to 3 PCs and served through ggated: $st s from gsub to /health ok; one rank, local file: $loc s ($(awk -v a="$st" -v b="$loc" 'BEGIN { if (b > 0) printf "%.1fx", a / b }'))"
grep -h "staged 1 file" "$DIR"/h*/gworkerd.log | tee -a "$OUT/summary.txt"

say ""
say "E. a PC holding a stage switched off, to tokens again (node_timeout 4 s)"
r0=$("$BIN/gstat" -l -j "$svc" 2>/dev/null | sed -n 's/.*Replica=0 .*Node=\([^ ]*\).*/\1/p')
off=$(for h in h1 h2 h3; do [ "$h" != "$r0" ] && echo "$h"; done | tail -1)
t0=$(date +%s.%N)
ip link set "$(veth "$off")" down
"$CLUSTER" agent-kill --dir "$DIR" "$off" >/dev/null 2>&1
for p in $("$CLUSTER" pids --dir "$DIR" "$off"); do
	[ "$(stat -c %U "/proc/$p" 2>/dev/null)" = gpool-user ] && kill -9 "$p"
done
first=$("$PY" "$CL" first "http://$GW/svc/room" 120)
t1=$(date +%s.%N)
say "$off switched off (rank 0 on $r0): tokens again after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s ($first)"
ip link set "$(veth "$off")" up
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" gcancel "$svc"
say "raw logs: $OUT"
