#!/bin/bash
# standalone-train.sh BUILD_DIR: train/ builds on its own as it must on the GPU machine (only a
# C compiler, cmake and libc; here without the CUDA/HIP backends, UCX and MPI), with kernels/
# and comm/, and the gtrain it builds trains the digits demo's shape on a small synthetic set.
# Catches a move of a file the standalone build takes from the tree (it broke once this way).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1/standalone-train
rm -rf "$dir" && mkdir -p "$dir"
if ! { cmake -S "$src/train" -B "$dir" -DGK_WITH_CUDA=OFF -DGK_WITH_HIP=OFF \
	-DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF && cmake --build "$dir" -j"$(nproc)"; } >"$dir/build.log" 2>&1; then
	tail -30 "$dir/build.log"
	echo "standalone-train: train/ does not build standalone (log: $dir/build.log)"
	exit 1
fi
[ -x "$dir/gtrain" ] || { echo "standalone-train: no gtrain in $dir"; exit 1; }
# three separable classes of 12 features: the standalone gtrain must learn them
python3 - >"$dir/syn.csv" <<'PY'
import random
random.seed(1)
for i in range(600):
    c = i % 3
    f = [random.gauss(3.0 if j % 3 == c else 0.0, 1.0) for j in range(12)]
    print(",".join("%.3f" % x for x in f) + ",%d" % c)
PY
out=$("$dir/gtrain" --data "$dir/syn.csv" --layers 12,32,3 --epochs 5 --batch 64 2>&1)
acc=$(sed -n 's/.*test accuracy \([0-9]*\)\..*/\1/p' <<<"$out")
if [ "${acc:-0}" -lt 80 ]; then
	echo "$out" | tail -5
	echo "standalone-train: the standalone gtrain reaches ${acc:-no} % test accuracy, not >= 80 %"
	exit 1
fi
echo "standalone-train: train/ built standalone; its gtrain reaches $acc % on the synthetic set"
