#!/bin/bash
# run-on-gpu.sh - build kernels/ fresh, run every test and the bench on a GPU machine.
# Logs go to $OUT (default /tmp/gk-gpu-out). Usage: kernels/run-on-gpu.sh [ARCHS]
# ARCHS (optional) sets GK_CUDA_ARCHS, e.g. 90; default: every architecture nvcc lists.
set -u
OUT=${OUT:-/tmp/gk-gpu-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
# so the cuda backend finds cuBLAS with dlopen (it falls back to its own kernel otherwise)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SRC=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/gk-build}
ARCHS=${1:-}
log() { echo "=== $* ($(date +%T))"; }

{
  log env
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
  gcc --version | head -1
  nproc
} > "$OUT/env.log" 2>&1

log build
rm -rf "$BUILD"
start=$(date +%s)
( cmake -S "$SRC" -B "$BUILD" ${ARCHS:+-DGK_CUDA_ARCHS=$ARCHS} &&
  cmake --build "$BUILD" -j"$(nproc)" ) > "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - start )) s" | tee -a "$OUT/build.log"
tail -5 "$OUT/build.log"
[ $rc -eq 0 ] || exit 1
cuobjdump --list-elf "$BUILD/libgpool-kernels-cuda.so" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | tr '\n' ' ' | tee -a "$OUT/build.log"
cuobjdump --list-ptx "$BUILD/libgpool-kernels-cuda.so" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/ptx \1/' | sort -u | tr '\n' ' ' | tee -a "$OUT/build.log"
echo

log ctest
( cd "$BUILD" && timeout 240 ctest -V ) > "$OUT/ctest.log" 2>&1
echo "ctest rc=$?"
grep -E 'tests passed|Test +#|SKIP' "$OUT/ctest.log"
grep -E '^(FAIL|gk-test|  note|  device|  sgemm)' "$OUT/ctest.log" | head -40

log bench
( cd "$BUILD" && timeout 120 ./bench/gk-bench --backend cuda --size 1G --runs 30 --warmup 3 --check ) > "$OUT/bench.log" 2>&1
echo "bench rc=$?"
for w in 2; do
  ( cd "$BUILD" && GPOOL_KERNELS_WAVES=$w timeout 60 ./bench/gk-bench --backend cuda --size 1G --runs 20 ) > "$OUT/bench-w$w.log" 2>&1
done
for w in 2; do echo "waves $w:"; grep -E 'reduce|cast|copy' "$OUT/bench-w$w.log"; done
cat "$OUT/bench.log"

log huge
( cd "$BUILD" && timeout 200 ./gk-test cuda --huge 67108867 ) > "$OUT/test-huge.log" 2>&1
echo "huge rc=$?"; tail -16 "$OUT/test-huge.log"

log sanitizer
if command -v compute-sanitizer >/dev/null; then
  ( cd "$BUILD" && timeout 90 compute-sanitizer --tool memcheck --print-limit 20 ./gk-test cuda --huge 4099 ) > "$OUT/sanitizer.log" 2>&1
  echo "sanitizer rc=$?"; tail -6 "$OUT/sanitizer.log"
fi
log done
