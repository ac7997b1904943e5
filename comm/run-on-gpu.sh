#!/bin/bash
# run-on-gpu.sh - build comm/ (with kernels/) standalone on a GPU machine and run the
# device-buffer tests and benchmark: several ranks sharing the card, rank-0 rendezvous,
# gpool's tcp transport (and ucx / mpi where their headers exist there).
# Logs go to $OUT (default /tmp/gc-gpu-out). Usage: comm/run-on-gpu.sh [ARCHS]
set -u
OUT=${OUT:-/tmp/gc-gpu-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SRC=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/gc-build}
ARCHS=${1:-90}
log() { echo "=== $* ($(date +%T))"; }

log probe
{ ls /usr/include/ucp/api/ucp.h /usr/include/mpi.h /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h 2>&1
  which mpicc mpirun ucx_info 2>&1; ucx_info -v 2>&1 | head -3; nproc; } > "$OUT/probe.log" 2>&1
cat "$OUT/probe.log"

log build
rm -rf "$BUILD"
( cmake -S "$SRC" -B "$BUILD" -DGK_CUDA_ARCHS="$ARCHS" -DGK_WITH_HIP=OFF ${GC_CMAKE_ARGS:--DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF} &&
  cmake --build "$BUILD" -j"$(nproc)" ) > "$OUT/build.log" 2>&1
rc=$?
grep -E "gcomm:|gpool-kernels:" "$OUT/build.log"
echo "build rc=$rc"; [ $rc -eq 0 ] || { tail -30 "$OUT/build.log"; exit 1; }

log kernels-ctest
( cd "$BUILD/kernels" && timeout 200 ctest --output-on-failure ) > "$OUT/kernels-ctest.log" 2>&1
echo "kernels ctest rc=$?"; grep -E "tests passed|Failed|SKIP" "$OUT/kernels-ctest.log"

log comm-host-tests
for np in 2 3 4; do
  ( cd "$BUILD" && timeout 300 ./gcomm-test --np $np ) >> "$OUT/comm-host.log" 2>&1
  echo "host np=$np rc=$?"
done
tail -3 "$OUT/comm-host.log"

log comm-cuda-tests
for np in 1 2 3 4 5; do
  ( cd "$BUILD" && timeout 300 ./gcomm-test --np $np --backend cuda ) >> "$OUT/comm-cuda.log" 2>&1
  echo "cuda np=$np rc=$?"
done
for np in 2 3 4; do # card ranks and CPU-only ranks in one communicator
  ( cd "$BUILD" && timeout 300 ./gcomm-test --np $np --backend cuda --mixed ) >> "$OUT/comm-cuda.log" 2>&1
  echo "cuda+cpu mixed np=$np rc=$?"
done
grep -E "passed|FAILED|wrong|SKIP" "$OUT/comm-cuda.log" | head -20
( cd "$BUILD" && timeout 200 ./gcomm-test --np 3 --backend cuda --kill-test ) > "$OUT/comm-cuda-kill.log" 2>&1
echo "cuda kill rc=$?"; grep "kill test" "$OUT/comm-cuda-kill.log"

log comm-bench
for np in 2 4; do
  for be in cpu cuda; do
    ( cd "$BUILD" && timeout 240 ./gcomm-bench --np $np --backend $be -b 8 -e 256M -f 4 \
        --json "$OUT/bench-$be-np$np.json" ) > "$OUT/bench-$be-np$np.log" 2>&1
    echo "bench $be np=$np rc=$?"; cat "$OUT/bench-$be-np$np.log"
  done
done
( cd "$BUILD" && timeout 120 ./gcomm-bench --np 4 --backend cuda --wire bf16 -b 1M -e 256M -f 16 ) > "$OUT/bench-cuda-np4-bf16.log" 2>&1
echo "bench cuda bf16 rc=$?"; cat "$OUT/bench-cuda-np4-bf16.log"
log done
