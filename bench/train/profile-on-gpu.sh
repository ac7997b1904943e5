#!/bin/bash
# profile-on-gpu.sh - on a GPU machine: where the large MLP's step goes (784-4096-4096-10,
# batch 512, f32), gtrain against PyTorch on the same card. Builds train/ standalone (as
# run-on-gpu.sh), and, with OLD_ROOT set, a second tree (the one before a change) for an A/B;
# then:
#   1. gtrain with GTRAIN_PROFILE=1 (a wait after each phase: per-phase ms a step) and
#      torch_mlp.py with TORCH_MLP_EPOCH_TIMES=1 (the clock at each epoch's end);
#   2. REPS rounds of old gtrain / new gtrain / PyTorch, alternating (samples/s);
#   3. ncu (--clock-control none, one metric: gpu__time_duration) over a window of steady-state
#      kernels of each, summed by kernel name (ncu-*.txt).
# Logs under $OUT. Usage: bench/train/profile-on-gpu.sh [ARCHS]
set -u
OUT=${OUT:-/tmp/gt-prof-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ARCHS=${1:-90}
REPS=${REPS:-3}
PY=${PY:-python3}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
log() { echo "=== $* ($(date +%T))"; }

build() { # SRC BUILD
	(cmake -S "$1/train" -B "$2" -DGK_CUDA_ARCHS="$ARCHS" -DGK_WITH_HIP=OFF \
		-DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF && cmake --build "$2" -j"$(nproc)") \
		>"$OUT/build-$(basename "$2").log" 2>&1
}
log build
rm -rf /tmp/gt-new /tmp/gt-old
build "$ROOT" /tmp/gt-new || { tail -30 "$OUT/build-gt-new.log"; exit 1; }
NEW=/tmp/gt-new/gtrain
OLD=
if [ -n "${OLD_ROOT:-}" ]; then
	build "$OLD_ROOT" /tmp/gt-old && OLD=/tmp/gt-old/gtrain || tail -5 "$OUT/build-gt-old.log"
fi
GK_TEST=$(find /tmp/gt-new -name gk-test -type f | head -1)
log gk-test cuda
(cd "$(dirname "$GK_TEST")" && timeout 300 "$GK_TEST" cuda) >"$OUT/gk-test.log" 2>&1
echo "gk-test cuda rc=$?"
grep -E 'checks|FAIL' "$OUT/gk-test.log" | tail -5

log data
work=/tmp/gt-work
mkdir -p "$work"
[ -s "$work/big.csv" ] || $PY "$HERE/synth.py" 32768 784 10 "$work/big.csv"
ARGS="--data $work/big.csv --layers 784,4096,4096,10 --batch 512"

log profile
GTRAIN_PROFILE=1 timeout 120 "$NEW" --backend cuda $ARGS --epochs 10 2>&1 | tee "$OUT/gtrain-profile.log" |
	grep -E "profile|done"
TORCH_MLP_EPOCH_TIMES=1 timeout 120 $PY "$HERE/torch_mlp.py" $ARGS --epochs 10 2>&1 |
	tee "$OUT/torch-epochs.log" | grep -E "epoch (1|2|10) |samples"
timeout 120 "$NEW" --backend cuda $ARGS --epochs 10 >"$OUT/gtrain-epochs.log" 2>&1
grep -E "^epoch +(1|2|10)/|done" "$OUT/gtrain-epochs.log"

log ab
for rep in $(seq 1 "$REPS"); do
	for who in old new torch; do
		case $who in
		old) [ -n "$OLD" ] || continue
			r=$(timeout 120 "$OLD" --backend cuda $ARGS --epochs 10 2>&1 | tee -a "$OUT/ab.log" |
				sed -n 's/.*test accuracy \([0-9.]*\)%.*, \([0-9]*\) samples\/s.*/\1 \2/p') ;;
		new) r=$(timeout 120 "$NEW" --backend cuda $ARGS --epochs 10 2>&1 | tee -a "$OUT/ab.log" |
				sed -n 's/.*test accuracy \([0-9.]*\)%.*, \([0-9]*\) samples\/s.*/\1 \2/p') ;;
		torch) r=$(timeout 120 $PY "$HERE/torch_mlp.py" $ARGS --epochs 10 2>&1 | tee -a "$OUT/ab.log" |
				sed -n 's/^torch: .*test accuracy \([0-9.]*\)%, \([0-9]*\) samples\/s.*/\1 \2/p') ;;
		esac
		echo "big $rep $who ${r:-fail fail}"
	done
done | tee "$OUT/ab.txt"

summ() { # CSV -> per kernel name: count, total us, mean us
	$PY - "$1" <<'PY'
import collections, csv, sys
tot = collections.defaultdict(float); cnt = collections.Counter()
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
if not rows:
    print("no ncu rows"); sys.exit()
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
for r in rows[1:]:
    if len(r) <= vi: continue
    v = float(r[vi].replace(",", "")); u = r[ui]
    us = v / 1e3 if u in ("ns", "nsecond") else v * 1e3 if u in ("ms", "msecond") else v
    tot[r[ki][:90]] += us; cnt[r[ki][:90]] += 1
all_us = sum(tot.values())
print("%8s %6s %9s  %s" % ("total us", "count", "mean us", "kernel"))
for k, v in sorted(tot.items(), key=lambda x: -x[1]):
    print("%8.0f %6d %9.1f  %s" % (v, cnt[k], v / cnt[k], k))
print("%8.0f in all" % all_us)
PY
}
if [ -n "$NCU" ]; then
	log ncu "$NCU"
	timeout 200 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
		--launch-skip 1100 --launch-count 400 "$NEW" --backend cuda $ARGS --epochs 3 \
		>"$OUT/ncu-gtrain.csv" 2>"$OUT/ncu-gtrain.err"
	summ "$OUT/ncu-gtrain.csv" | tee "$OUT/ncu-gtrain.txt" | head -25
	timeout 200 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
		--launch-skip 2000 --launch-count 600 $PY "$HERE/torch_mlp.py" $ARGS --epochs 4 \
		>"$OUT/ncu-torch.csv" 2>"$OUT/ncu-torch.err"
	summ "$OUT/ncu-torch.csv" | tee "$OUT/ncu-torch.txt" | head -25
else
	echo "no ncu"
fi
log finished
