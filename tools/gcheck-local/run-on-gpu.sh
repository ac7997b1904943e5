#!/bin/bash
# run-on-gpu.sh - build tools/gcheck-local fresh and screen this machine's cards with it, on the
# cuda backend: the measurement a node's gcheck makes, without gpool's libraries or a cluster.
# Everything goes to $OUT (default /tmp/gcheck-local-out): env.log, build.log, ctest.log,
# gcheck.json (--duration 20, every card), gcheck.txt (the table), fault.json (a flipped bit
# that the memory test must catch) and summary.txt.
# Usage: tools/gcheck-local/run-on-gpu.sh [ARCHS]   ARCHS sets GK_CUDA_ARCHS (e.g. 90);
# default: the compute capability nvidia-smi reports for card 0, else every one nvcc knows.
set -u
OUT=${OUT:-/tmp/gcheck-local-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SRC=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/gcheck-local-build}
ARCHS=${1:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
log() { echo "=== $* ($(date +%T))"; }

{
  log env
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,driver_version,compute_cap --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
  gcc --version | head -1
  nproc
} > "$OUT/env.log" 2>&1

log "build (GK_CUDA_ARCHS=${ARCHS:-all})"
rm -rf "$BUILD"
start=$(date +%s)
( cmake -S "$SRC" -B "$BUILD" -DGK_WITH_HIP=OFF ${ARCHS:+-DGK_CUDA_ARCHS=$ARCHS} &&
  cmake --build "$BUILD" -j"$(nproc)" ) > "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - start )) s" | tee -a "$OUT/build.log"
grep -E 'gpool-kernels:' "$OUT/build.log"
[ $rc -eq 0 ] || { tail -20 "$OUT/build.log"; exit 1; }

# gcheck-local's own tests (cpu backend); the kernels' tests are kernels/run-on-gpu.sh's
log ctest
( cd "$BUILD" && timeout 120 ctest -R '^gcheck-local' --output-on-failure ) > "$OUT/ctest.log" 2>&1
echo "ctest rc=$?"
grep -E 'tests passed|Test +#' "$OUT/ctest.log"

G=$BUILD/gcheck-local
log "gcheck-local --backend cuda --duration 20 --json"
start=$(date +%s)
timeout 600 "$G" --backend cuda --duration 20 --json > "$OUT/gcheck.json" 2> "$OUT/gcheck.err"
grc=$?
echo "gcheck rc=$grc (0 good/warn, 1 fail, 3 not measured) in $(( $(date +%s) - start )) s"
cat "$OUT/gcheck.err"

log "gcheck-local --backend cuda --duration 5 (table)"
timeout 300 "$G" --backend cuda --duration 5 > "$OUT/gcheck.txt" 2>&1
echo "table rc=$?"
cat "$OUT/gcheck.txt"

log "gcheck-local --backend cuda --inject-fault (must fail with memory errors)"
timeout 300 "$G" --backend cuda --card 0 --duration 2 --mem-fraction 0.1 --inject-fault --json \
  > "$OUT/fault.json" 2> "$OUT/fault.err"
frc=$?
echo "fault rc=$frc (want 1)"
cat "$OUT/fault.err"

log summary
python3 - "$OUT" > "$OUT/summary.txt" 2>&1 <<'PYEOF'
import json, sys, os
out = sys.argv[1]
for name in ("gcheck.json", "fault.json"):
    try:
        d = json.load(open(os.path.join(out, name)))
    except Exception as e:
        print(f"{name}: unreadable: {e}")
        continue
    for c in d.get("cards", []):
        bw, mt = c["bandwidth"], c["memtest"]
        print(f"{name}: card {c['card']} {c['backend']} {c['device']}: "
              f"copy {bw['mean_gbps']:.1f} GB/s ±{bw['fluct_pct']:.2f}% ({bw['samples']} samples, "
              f"min {bw['min_gbps']:.1f} max {bw['max_gbps']:.1f}), "
              f"memtest {mt['bytes'] / 2**30:.1f} GiB {mt['errors']} errors, "
              f"f32 {c['f32_gflops']} f16 {c['f16_gflops']} GFLOP/s, "
              f"{c['temperature_c']} C {c['power_w']} W, grade {c['grade']} {c['reason']!r}")
PYEOF
cat "$OUT/summary.txt"
log "done"
