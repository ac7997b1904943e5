#!/bin/bash
# run-on-gpu.sh - on a GPU machine: build train/ standalone (with kernels/ and comm/: only the
# CUDA toolkit and libc), run gk-test cuda (every kernel, the nn ones included), then gtrain
# --backend cuda against the same model, batch and optimizer in PyTorch on the same card
# (torch_mlp.py): the digits MLP 64-256-256-10 (batch 192, 20 epochs) and a large MLP
# 784-4096-4096-10 on synthetic data of that shape (synth.py; batch 512). One rank, f32 (no
# TF32 on either side), AdamW lr 2e-3, the two alternating REPS times (default 3).
# Logs and a table go to $OUT (default /tmp/gt-gpu-out). Usage: bench/train/run-on-gpu.sh [ARCHS]
set -u
OUT=${OUT:-/tmp/gt-gpu-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
# so the cuda backend finds cuBLAS with dlopen (it falls back to its own kernel otherwise)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-/tmp/gt-build}
ARCHS=${1:-90}
REPS=${REPS:-3}
BIG_ROWS=${BIG_ROWS:-32768}
BIG_EPOCHS=${BIG_EPOCHS:-10}
PY=${PY:-python3}
log() { echo "=== $* ($(date +%T))"; }

{
	log env
	nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv
	nvcc --version | tail -2
	cmake --version | head -1
	gcc --version | head -1
	nproc
	ls /usr/include/zlib.h /usr/include/jansson.h 2>&1
	$PY -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
	git -C "$ROOT" log -1 --format='commit %h %s' 2>/dev/null || true
} >"$OUT/env.log" 2>&1
cat "$OUT/env.log"

log build
rm -rf "$BUILD"
start=$(date +%s)
(cmake -S "$ROOT/train" -B "$BUILD" -DGK_CUDA_ARCHS="$ARCHS" -DGK_WITH_HIP=OFF \
	-DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF &&
	cmake --build "$BUILD" -j"$(nproc)") >"$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(($(date +%s) - start)) s" | tee -a "$OUT/build.log"
grep -E "gtrain:|gcomm:|gpool-kernels:" "$OUT/build.log"
[ $rc -eq 0 ] || { tail -30 "$OUT/build.log"; exit 1; }
GK_TEST=$(find "$BUILD" -name gk-test -type f | head -1)

log gk-test cuda
(cd "$(dirname "$GK_TEST")" && timeout 300 "$GK_TEST" cuda) >"$OUT/gk-test.log" 2>&1
echo "gk-test cuda rc=$?"
grep -E '^(FAIL|ok|gk-test|  note|  device)|passed|failed' "$OUT/gk-test.log" | tail -40

log data
work=/tmp/gt-work
mkdir -p "$work"
zcat "$ROOT/bench/train/data/digits.csv.gz" >"$work/digits.csv"
start=$(date +%s)
$PY "$HERE/synth.py" "$BIG_ROWS" 784 10 "$work/big.csv"
echo "synth.py $BIG_ROWS rows in $(($(date +%s) - start)) s, $(du -h "$work/big.csv" | cut -f1)"

run() { # NAME REP ARGS...: one gtrain and one torch run of the same configuration
	local name=$1 rep=$2
	shift 2
	local g t
	echo "## $name rep $rep: gtrain --backend cuda $*" >>"$OUT/runs.log"
	g=$(timeout 300 "$BUILD/gtrain" --backend cuda "$@" 2>&1 | tee -a "$OUT/runs.log" |
		sed -n 's/.*test accuracy \([0-9.]*\)%.*, \([0-9]*\) samples\/s.*/\1 \2/p')
	echo "## $name rep $rep: torch_mlp.py $*" >>"$OUT/runs.log"
	t=$(TORCH_MLP_EPOCH_TIMES=1 timeout 300 $PY "$HERE/torch_mlp.py" "$@" 2>&1 | tee -a "$OUT/runs.log" |
		sed -n 's/^torch: .*test accuracy \([0-9.]*\)%, \([0-9]*\) samples\/s.*/\1 \2/p')
	echo "$name $rep gtrain ${g:-fail fail}"
	echo "$name $rep torch ${t:-fail fail}"
}

log train
for rep in $(seq 1 "$REPS"); do
	run digits "$rep" --data "$work/digits.csv" --layers 64,256,256,10 --batch 192 --epochs 20
	run big "$rep" --data "$work/big.csv" --layers 784,4096,4096,10 --batch 512 \
		--epochs "$BIG_EPOCHS"
done | tee "$OUT/raw.txt"

log table
$PY - "$OUT/raw.txt" <<'PY' | tee "$OUT/table.txt"
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, rep, who, acc, sps = line.split()
    if sps != "fail":
        rows[(name, who)].append((float(acc), float(sps)))
print("%-7s %-7s %5s %12s %12s %8s" % ("model", "trainer", "runs", "samples/s", "(min-max)", "acc %"))
for name in ("digits", "big"):
    med = {}
    for who in ("gtrain", "torch"):
        r = rows.get((name, who), [])
        if not r:
            print("%-7s %-7s %5d %12s" % (name, who, 0, "fail"))
            continue
        s = [x[1] for x in r]
        med[who] = statistics.median(s)
        print("%-7s %-7s %5d %12.0f %5.0f-%-6.0f %8.2f" % (name, who, len(r), med[who], min(s),
              max(s), statistics.median(x[0] for x in r)))
    if len(med) == 2:
        print("%-7s gtrain/torch %.2f" % (name, med["gtrain"] / med["torch"]))
PY
log "steady state"
# samples/s over epochs 2..last, from each run's clock at the epochs' ends (gtrain: its
# cumulative rate per epoch line; PyTorch: TORCH_MLP_EPOCH_TIMES): the first epoch holds each
# side's start-up on the card (kernels loaded on first use, cuBLAS handle in PyTorch's case)
$PY - "$OUT/runs.log" <<'PY' | tee "$OUT/steady.txt"
import collections, re, statistics, sys
runs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"## (\S+) rep (\d+): (gtrain|torch)", line)
    if m:
        cur = {"name": m.group(1), "who": m.group(3), "t": {}, "per": None}
        runs.append(cur)
        continue
    if cur is None:
        continue
    m = re.search(r"global batch (\d+), (\d+) steps/epoch", line)
    if m:
        cur["per"] = int(m.group(1)) * int(m.group(2))
    m = re.match(r"epoch +(\d+)/\d+ .* (\d+) samples/s", line)
    if m and cur["per"]:
        k = int(m.group(1))
        cur["t"][k] = k * cur["per"] / float(m.group(2))
    m = re.match(r"torch: epoch (\d+) done at ([0-9.]+) s", line)
    if m:
        cur["t"][int(m.group(1))] = float(m.group(2))
    m = re.search(r"batch (\d+), (\d+) steps,", line)
    if m and cur["who"] == "torch" and cur["t"]:
        cur["per"] = int(m.group(1)) * int(m.group(2)) / max(cur["t"])
res = collections.defaultdict(list)
for r in runs:
    t, last = r["t"], max(r["t"]) if r["t"] else 0
    if last >= 2 and r["per"]:
        res[(r["name"], r["who"])].append(((last - 1) * r["per"] / (t[last] - t[1]), t[1]))
print("%-7s %-7s %5s %14s %16s" % ("model", "trainer", "runs", "steady samp/s", "1st epoch s"))
for name in ("digits", "big"):
    med = {}
    for who in ("gtrain", "torch"):
        v = res.get((name, who), [])
        if v:
            med[who] = statistics.median(x[0] for x in v)
            print("%-7s %-7s %5d %14.0f %16.4f" % (name, who, len(v), med[who],
                  statistics.median(x[1] for x in v)))
    if len(med) == 2:
        print("%-7s steady gtrain/torch %.2f" % (name, med["gtrain"] / med["torch"]))
PY
log "done"
