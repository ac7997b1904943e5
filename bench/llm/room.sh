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
#   B2. B's 3 hosts again with the links at $SLOW (default 4mbit), where a token's activations
#      take longer on the wire than the compute's noise: the floor is measurable there
#   C. the same with --wire f16
#   D. the model's start as a gpool service staged to 3 PCs (gsub --stage; the file travels
#      through gschedd's chunk store over the shaped links) against a local load on one rank
#   E. seconds from a PC holding a stage switched off (link cut, agent and processes killed) to
#      tokens flowing again through ggated (node_timeout 4 s)
#   F. (with D) the same service started the same way with the file local on every PC: the
#      start and the restart against D's, so the ratio is what staging adds and nothing else
# The hosts share this machine's 2 cores: more ranks cannot mean more speed here.
# Raw logs and a summary go to $OUT (default bench/results/llm/room-DATE). Run as root:
#   bench/llm/room.sh [--model FILE.gguf]
#   SECTIONS="B B2" SLOW=1mbit SHAPE=test-kquant LAYERS=24 TYPE=q8_0 bench/llm/room.sh
#      (the network's cost with a model whose compute is small against the wire's time)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
export GPOOL_SLOT=${GPOOL_SLOT:-2}
CLUSTER=$SRC/deploy/gpool-cluster
CL=$SRC/tests/system/llm_clients.py
PY=/usr/bin/python3
RATE=${RATE:-1gbit}
SLOW=${SLOW:-4mbit} # B again at a rate where a token's activations take longer than the noise
LAYERS=${LAYERS:-6}
NTOK=${NTOK:-16}
OUT=${OUT:-$SRC/bench/results/llm/room-$(date -u +%Y%m%dT%H%M)}
DIR=/tmp/gpool-room.$GPOOL_SLOT
SECTIONS=${SECTIONS:-A B B2 C D E}
STAGE_OPT=${STAGE_OPT:---stage} # D and E: --stage-lazy has each PC fetch only its rank's layers
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
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
	"$BIN/gllm-mkmodel" --shape "${SHAPE:-tinyllama-1.1b}" --layers "$LAYERS" --type "${TYPE:-q4_0}" --seed 3 "$MODEL" | tee -a "$OUT/summary.txt"
fi
chmod 0644 "$MODEL"
DIM=$("$BIN/gllm-mkmodel" --info "$MODEL" 2>/dev/null | sed -n 's/.*embedding_length[^0-9]*\([0-9]*\).*/\1/p' | head -1)
say "room.sh $(date -u +%FT%TZ) on $(hostname): model $(basename "$MODEL") ($(du -m "$MODEL" | cut -f1) MB, dim $DIM), links $RATE, load $(cut -d' ' -f1-3 /proc/loadavg)"

"$CLUSTER" start -n 3 --dir "$DIR" --bin "$BIN" --node-timeout 4s --heartbeat-interval 1s \
	--kill-grace 2s >"$OUT/cluster.log" 2>&1 || { cat "$OUT/cluster.log"; exit 1; }
eval "$("$CLUSTER" env --dir "$DIR")"
export GPOOL_SCHEDULER GPOOL_CONF

# the links: tbf on the bridge side (into the host) and on the host's eth0 (out of it); a
# burst of 2 packets, so that a token's activations (8 KiB at dim 2048) wait for the wire as on
# a real link instead of leaving at once from a full bucket
veth() { if [ "$GPOOL_SLOT" = 0 ]; then echo "gpv-$1"; else echo "gpv$GPOOL_SLOT-$1"; fi; }
shape() {
	local h
	for h in h1 h2 h3; do
		tc qdisc replace dev "$(veth $h)" root tbf rate "$1" burst 3000 latency 100ms
		"$CLUSTER" exec --dir "$DIR" "$h" tc qdisc replace dev eth0 root tbf rate "$1" burst 3000 latency 100ms
	done
}
shape "$RATE"
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

if want A; then
	say ""
	say "A. 1, 2 and 3 ranks, one per host, links $RATE"
	s=$(start 1 h1 --) && say "1 rank: up in $s s (local file)" && measure ranks1 h1
	stop_ranks
	s=$(start 2 h1 h2 --) && say "2 ranks: up in $s s" && measure ranks2 h1
	stop_ranks
	s=$(start 3 h1 h2 h3 --) && say "3 ranks: up in $s s" && measure ranks3 h1
	stop_ranks
fi
if want B; then
	say ""
	say "B. 3 ranks on 3 hosts, links $RATE, then the same 3 ranks in one host (no link): the network's cost is the difference"
	start 3 h1 h2 h3 -- >/dev/null && measure ranks3-net h1
	stop_ranks
	start 3 h1 h1 h1 -- >/dev/null && measure ranks3-onehost h1
	stop_ranks
fi
if want B2; then
	say ""
	say "B2. 3 ranks, one per host, links $SLOW: a token's activations take longer than the noise"
	shape "$SLOW"
	start 3 h1 h2 h3 -- >/dev/null && measure ranks3-slow h1
	stop_ranks
	shape "$RATE"
fi
if want C; then
	say ""
	say "C. 3 ranks, one per host, --wire f16"
	start 3 h1 h2 h3 -- --wire f16 >/dev/null && measure ranks3-f16 h1
	stop_ranks
fi
"$PY" - "$OUT" "$DIM" "$RATE" "$SLOW" <<'EOF' | tee -a "$OUT/summary.txt"
import json, statistics, sys
out, dim, rate, slow = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def bytes_s(r):
    return {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}[r[-4:]] * float(r[:-4]) / 8
bps = bytes_s(rate)
def gap(label):
    t = json.load(open("%s/%s.json" % (out, label)))[0]["times"]
    return statistics.median([b - a for a, b in zip(t, t[1:])])
def ttft(label):
    return json.load(open("%s/%s.json" % (out, label)))[0]["ttft"]
def cost(lab, base, r, b):
    floor = 3 * dim * b / bytes_s(r)
    d = gap(lab) - gap(base)
    print("network cost a token, %s wire at %s: %.3f ms (3 hosts %.2f ms - one host %.2f ms a token); floor 3 hops x %d x %d B / %.3f MB/s = %.3f ms: %.2fx" % (
        "f32" if b == 4 else "f16", r, 1000 * d, 1000 * gap(lab), 1000 * gap(base), dim, b, bytes_s(r) / 1e6, 1000 * floor, d / floor))
for lab, r, b in (("ranks3-net", rate, 4), ("ranks3-slow", slow, 4), ("ranks3-f16", rate, 2)):
    try:
        cost(lab, "ranks3-onehost", r, b)
    except (OSError, KeyError, IndexError, ValueError, TypeError, ZeroDivisionError) as e:
        pass
try:
    ntok = json.load(open(out + "/ranks3-net.json"))[0]["usage"]["prompt_tokens"]
    floor = 3 * ntok * dim * 4 / bps
    d = ttft("ranks3-net") - ttft("ranks3-onehost")
    print("network cost of the prompt's %d tokens (f32): %.3f s (ttft %.3f - %.3f); floor %.3f s: %.1fx" % (
        ntok, d, ttft("ranks3-net"), ttft("ranks3-onehost"), floor, d / floor))
except (OSError, KeyError, IndexError, ValueError, TypeError, ZeroDivisionError) as e:
    print("prompt's network cost: not computed (%s)" % e)
EOF

if want D || want E; then
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
	GCOMM_TIMEOUT=4000 GLLM_SPEED=10 GLLM_MEM=4G gsub --parsable --service -N 2-3 \
	--health-path /health -J room "$STAGE_OPT" svc.gguf -- gllm serve svc.gguf "${SERVE[@]}" --stage-timeout 10 | tail -1)
tg=$(date +%s.%N)
served_at() {
	for _ in $(seq 1800); do
		[ "$(curl -s -m 1 "http://$GW/svc/room/health")" = ok ] && break
		sleep 0.1
	done
	date +%s.%N
}
t1=$(served_at)
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
st=$(secs "$t0" "$t1")
d_first=$st
loc=$(sed -n 's/^1 rank: up in \([0-9.]*\) s.*/\1/p' "$OUT/summary.txt" | tail -1)
loc3=$(sed -n 's/^3 ranks: up in \([0-9.]*\) s.*/\1/p' "$OUT/summary.txt" | tail -1)
say "first start, the file staged to 3 PCs ($STAGE_OPT): $st s from gsub to /health ok through ggated (gsub itself: hashing and upload to gschedd $(secs "$t0" "$tg") s); local file: one rank $loc s, 3 ranks $loc3 s ($(awk -v a="$st" -v b="$loc3" 'BEGIN { if (b > 0) printf "%.1fx", a / b }') the 3 ranks' local start)"
grep -h "staged 1 file" "$DIR"/h*/gworkerd.log | sed 's/.*info: //' | tee -a "$OUT/summary.txt"
rj=$("$BIN/gstat" --json -j "$svc" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["replicas"][0]["job_id"])')
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
	glogs "$rj" 2>/dev/null | grep "lazily staged" | tee -a "$OUT/summary.txt"
# a second start (the replica restarted: gcancel REPLICA): the chunks are in the PCs' caches now
down() { [ "$(curl -s -m 1 "http://$GW/svc/room/health")" != ok ]; }
t0=$(date +%s.%N)
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" gcancel "$rj"
for _ in $(seq 100); do down && break; sleep 0.1; done
t1=$(served_at)
st=$(secs "$t0" "$t1")
d_restart=$st
say "a restart, the file cached on the PCs: $st s from gcancel of the replica to /health ok ($(awk -v a="$st" -v b="$loc3" 'BEGIN { if (b > 0) printf "%.1fx", a / b }') the 3 ranks' local start; it includes the replica's stop, kill_grace 2 s at most, and a restart backoff of 0.5 s)"
grep -h "staged 1 file" "$DIR"/h*/gworkerd.log | sed 's/.*info: //' | tail -3 | tee -a "$OUT/summary.txt"

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

# -- F. the same service, the same way, with the file local on every PC (the hosts share this
# machine's disk, so the path reads on each): what staging adds is the difference from D
say ""
say "F. the same service with the file local on every PC (no staging), against D"
for _ in $(seq 100); do down && break; sleep 0.1; done
sleep 1
t0=$(date +%s.%N)
svc=$(runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
	GCOMM_TIMEOUT=4000 GLLM_SPEED=10 GLLM_MEM=4G gsub --parsable --service -N 2-3 \
	--health-path /health -J room -- gllm serve "$DIR.work/svc.gguf" "${SERVE[@]}" | tail -1)
t1=$(served_at)
f_first=$(secs "$t0" "$t1")
rj=$("$BIN/gstat" --json -j "$svc" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["replicas"][0]["job_id"])')
t0=$(date +%s.%N)
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" gcancel "$rj"
for _ in $(seq 100); do down && break; sleep 0.1; done
t1=$(served_at)
f_restart=$(secs "$t0" "$t1")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b }'; }
say "first start, file local: $f_first s from gsub to /health ok; staged ($STAGE_OPT, D): ${d_first:-?} s: $(ratio "${d_first:-0}" "$f_first")"
say "a restart, file local: $f_restart s from gcancel of the replica to /health ok; staged and cached (D): ${d_restart:-?} s: $(ratio "${d_restart:-0}" "$f_restart")"
runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" gcancel "$svc"
fi
for h in h1 h2 h3; do tc -s qdisc show dev "$(veth $h)"; "$CLUSTER" exec --dir "$DIR" "$h" tc -s qdisc show dev eth0; done >"$OUT/qdisc.txt" 2>&1
say "raw logs: $OUT"
