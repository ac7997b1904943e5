#!/bin/bash
# share-card.sh - on a GPU machine: W ranks sharing one card (issue 16's one-card rows). gtrain
# --backend cuda with 1 and 2 ranks on card 0 (libgcomm over loopback TCP, the card's buffers
# staged through host memory), against PyTorch DDP over gloo with 1 and 2 ranks on the same card
# (NCCL refuses two ranks on one card), same model, global batch, optimizer and sample order
# (torch_mlp.py). Builds train/ standalone as run-on-gpu.sh does. Logs and a table in $OUT.
# Usage: bench/train/share-card.sh [ARCHS]   (BACKEND=cpu DEVICE=cpu: the same on the CPU)
set -u
OUT=${OUT:-/tmp/share-card-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-/tmp/share-card-build}
ARCHS=${1:-90}
REPS=${REPS:-2}
BACKEND=${BACKEND:-cuda}
DEVICE=${DEVICE:-cuda}
ROWS=${ROWS:-32768}
EPOCHS=${EPOCHS:-5}
PY=${PY:-python3}
log() { echo "=== $* ($(date +%T))"; }

log build
if [ ! -x "$BUILD/gtrain" ]; then
	cuda=ON
	[ "$BACKEND" = cuda ] || cuda=OFF
	(cmake -S "$ROOT/train" -B "$BUILD" -DGK_CUDA_ARCHS="$ARCHS" -DGK_WITH_CUDA=$cuda \
		-DGK_WITH_HIP=OFF -DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF &&
		cmake --build "$BUILD" -j"$(nproc)") >"$OUT/build.log" 2>&1 ||
		{ tail -20 "$OUT/build.log"; exit 1; }
fi
data=$OUT/big.csv
[ -s "$data" ] || $PY "$HERE/synth.py" "$ROWS" 784 10 "$data"
args=(--data "$data" --layers "${LAYERS:-784,4096,4096,10}" --batch "${BATCH:-512}" --epochs "$EPOCHS")

# W ranks of one trainer on this machine, torchrun's variables; rank 0's last line
ranks() { # WHO W
	local who=$1 w=$2 port=$((29500 + RANDOM % 1000)) r pids=()
	for r in $(seq 0 $((w - 1))); do
		if [ "$who" = gtrain ]; then
			RANK=$r WORLD_SIZE=$w MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
				timeout 300 "$BUILD/gtrain" --backend "$BACKEND" "${args[@]}" >"$OUT/rank$r.out" 2>&1 &
		else
			RANK=$r WORLD_SIZE=$w MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
				timeout 300 $PY "$HERE/torch_mlp.py" --device "$DEVICE" "${args[@]}" >"$OUT/rank$r.out" 2>&1 &
		fi
		pids+=($!)
	done
	wait "${pids[@]}"
	cat "$OUT"/rank*.out >>"$OUT/runs.log"
	tail -1 "$OUT/rank0.out"
}

log runs
: >"$OUT/raw.txt"
for rep in $(seq 1 "$REPS"); do
	for w in 1 2; do
		for who in gtrain torch; do
			echo "## $who $w ranks rep $rep" >>"$OUT/runs.log"
			line=$(ranks "$who" "$w")
			sps=$(sed -n 's/.*test accuracy \([0-9.]*\)%.* \([0-9]*\) samples\/s.*/\1 \2/p' <<<"$line")
			echo "$who $w ${sps:-fail fail}" | tee -a "$OUT/raw.txt"
		done
	done
done
log table
$PY - "$OUT/raw.txt" <<'PY' | tee "$OUT/table.txt"
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    who, w, acc, sps = l.split()
    if sps != "fail":
        rows.setdefault((who, int(w)), []).append((float(acc), float(sps)))
print("%-7s %5s %5s %12s %8s" % ("trainer", "ranks", "runs", "samples/s", "acc %"))
med = {}
for k in sorted(rows):
    s = [x[1] for x in rows[k]]
    med[k] = statistics.median(s)
    print("%-7s %5d %5d %12.0f %8.2f" % (k[0], k[1], len(s), med[k], rows[k][0][0]))
for w in (1, 2):
    if ("gtrain", w) in med and ("torch", w) in med:
        print("%d rank%s on one card: gtrain/torch %.2f" % (w, "s" if w > 1 else "",
              med[("gtrain", w)] / med[("torch", w)]))
PY
log "done"
