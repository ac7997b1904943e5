#!/bin/bash
# gpu-share.sh - on the GPU machine (CUDA toolkit, python3 with PyTorch, root): cards shared by
# small jobs (issue 28, docs/gpu-share.md) measured on card 0 the way gworkerd shares a card:
# one MPS control daemon for the card, each client with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = its
# budget and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = its budget's share of the card's VRAM
# (worker/node/mps.c's rule).
#   infer  4 inference replicas (bench/gpu-share/replica.py: 12 x Linear(4096) fp16, batch 32,
#          one request at a time each) sharing the card against 1 replica on the whole card:
#          requests/s of all replicas together, p50 and p99 latency. Four ways: 1 alone; 4 under
#          MPS with gpool's thread percentage for a 16 GiB budget; 4 under MPS with no thread
#          cap (100 %); 4 without MPS (the driver's time slicing).
#   train  2 training processes (784-4096-4096-10 MLP, AdamW, batch 512) sharing the card under
#          MPS (32 GiB budget each) against 1 alone: samples/s.
# Each run measures SECONDS_RUN (default 20) after every process has warmed up. Finishes in
# about 4 minutes, under 7 at worst (each of the 6 runs is cut at SECONDS_RUN + 45 s). Logs: $OUT/gpu-share.log, one JSON line per
# process in $OUT/runs.jsonl, the MPS daemon's logs in $OUT/mps-log/.
# Usage: OUT=DIR bench/gpu-share.sh [STAGES]    (STAGES default "infer train")
set -u
OUT=${OUT:-/tmp/gpu-share-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
SECONDS_RUN=${SECONDS_RUN:-20}
STAGES=${1:-infer train}
CARD=${CARD:-0}
CONTROL=${MPS_CONTROL:-nvidia-cuda-mps-control}
MPS=$(mktemp -d /tmp/gpu-share-mps.XXXXXX)
LOG=$OUT/gpu-share.log
RUNS=$OUT/runs.jsonl
: >"$RUNS"
exec > >(tee "$LOG") 2>&1
log() { echo "=== $* ($(date +%T))"; }
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

mps_stop() {
	[ -e "$MPS/pipe/control" ] || return 0
	echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS/pipe "$CONTROL" >/dev/null 2>&1
	for _ in $(seq 100); do
		pgrep -f nvidia-cuda-mps-control >/dev/null || break
		sleep 0.1
	done
}
cleanup() {
	mps_stop
	mkdir -p "$OUT/mps-log"
	cp -r "$MPS/log/." "$OUT/mps-log/" 2>/dev/null
	rm -rf "$MPS"
}
trap cleanup EXIT

mps_start() {
	mkdir -p "$MPS/pipe" "$MPS/log"
	chmod 0700 "$MPS/pipe" "$MPS/log"
	CUDA_MPS_PIPE_DIRECTORY=$MPS/pipe CUDA_MPS_LOG_DIRECTORY=$MPS/log CUDA_VISIBLE_DEVICES=$CARD \
		"$CONTROL" -d || { echo "cannot start $CONTROL"; return 1; }
	for _ in $(seq 100); do
		[ -e "$MPS/pipe/control" ] && return 0
		sleep 0.1
	done
	echo "no MPS control pipe after 10 s"
	return 1
}

# gpool's thread percentage for a budget of GIB on this card (gp_mps_thread_pct)
vram_mb=$(nvidia-smi -i "$CARD" --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
pct_for() { # GIB
	local b=$(($1 * 1024))
	[ "$b" -ge "$vram_mb" ] && { echo 100; return; }
	echo $(((b * 100 + vram_mb - 1) / vram_mb))
}

# run NAME N MODE MPS PCT LIMIT_MB ARGS...: N processes at once, measured together
run() {
	local name=$1 n=$2 mode=$3 mps=$4 pct=$5 limit=$6
	shift 6
	local sync i pids=() env=()
	sync=$(mktemp -d /tmp/gpu-share-sync.XXXXXX)
	if [ "$mps" = yes ]; then
		env=(CUDA_MPS_PIPE_DIRECTORY="$MPS/pipe" CUDA_MPS_LOG_DIRECTORY="$MPS/log"
			CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=${limit}M" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$pct")
	fi
	log "$name: $n x $mode, MPS $mps${pct:+, $pct % of the SMs}${limit:+, ${limit} MB pinned limit}"
	for i in $(seq 0 $((n - 1))); do
		env -u CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES="$CARD" "${env[@]}" \
			timeout $((SECONDS_RUN + 45)) "$PY" "$HERE/gpu-share/replica.py" --mode "$mode" --index "$i" \
			--sync "$sync" --seconds "$SECONDS_RUN" "$@" >"$sync/out.$i" 2>"$sync/err.$i" &
		pids+=($!)
	done
	for _ in $(seq 400); do # warm-up: at most 40 s
		[ "$(find "$sync" -name 'ready.*' | wc -l)" -ge "$n" ] && break
		sleep 0.1
	done
	touch "$sync/go"
	wait "${pids[@]}"
	for i in $(seq 0 $((n - 1))); do
		if [ -s "$sync/out.$i" ]; then
			sed "s/^{/{\"run\": \"$name\", /" "$sync/out.$i" | tee -a "$RUNS"
		else
			echo "$name replica $i failed:"
			tail -5 "$sync/err.$i"
		fi
	done
	rm -rf "$sync"
}

{
	nvidia-smi -i "$CARD" --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv
	$PY -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
	git -C "$HERE/.." log -1 --format='commit %h %s' 2>/dev/null || true
	nproc
}

if has infer; then
	run infer-1-whole 1 infer no "" ""
	mps_start || exit 1
	run infer-4-mps-gpool 4 infer yes "$(pct_for 16)" 16384
	run infer-4-mps-full 4 infer yes 100 16384
	mps_stop
	run infer-4-timeslice 4 infer no "" ""
fi
if has train; then
	run train-1-whole 1 train no "" "" --batch 512
	mps_start || exit 1
	run train-2-mps-gpool 2 train yes "$(pct_for 32)" 32768 --batch 512
	mps_stop
fi

log summary
"$PY" - "$RUNS" <<'PYEOF'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["run"], []).append(r)
print(f"{'run':22} {'procs':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'samples/s':>11}")
for name, rs in runs.items():
    if rs[0]["mode"] == "infer":
        rps = sum(r["rps"] for r in rs)
        p50 = sum(r["p50_ms"] for r in rs) / len(rs)
        p99 = max(r["p99_ms"] for r in rs)
        print(f"{name:22} {len(rs):5} {rps:9.1f} {p50:8.3f} {p99:8.3f} {'':>11}")
    else:
        sps = sum(r["samples_per_s"] for r in rs)
        print(f"{name:22} {len(rs):5} {'':>9} {'':>8} {'':>8} {sps:11.1f}")
PYEOF
