#!/bin/bash
# run-on-gpu.sh - on a GPU machine (the device tool): build one part of gpool fresh and
# standalone (a C compiler, cmake and the CUDA toolkit only: none of gpool's Debian
# libraries) and run its tests and measurements there.
#
#   tools/run-on-gpu.sh kernels [ARCHS]       kernels/: every test, gk-bench --check, a huge
#                                             run and compute-sanitizer
#   tools/run-on-gpu.sh comm [ARCHS]          comm/ with kernels/: host, cuda and mixed
#                                             ranks, the kill test, gcomm-bench
#   tools/run-on-gpu.sh gcheck-local [ARCHS]  tools/gcheck-local: its tests, gcheck of every
#                                             card (JSON and table), a fault it must catch
#
# ARCHS sets GK_CUDA_ARCHS (e.g. 90). Default: kernels every architecture nvcc lists, comm
# 90, gcheck-local the compute capability nvidia-smi reports for card 0.
# Logs go to $OUT (default /tmp/gpool-gpu-out/PART), the build to $BUILD (default
# /tmp/gpool-gpu-build/PART); env.log says what the machine is.
set -u
part=${1:-}
[ $# -gt 0 ] && shift
case $part in
kernels | comm | gcheck-local) ;;
*)
	echo "usage: tools/run-on-gpu.sh kernels|comm|gcheck-local [ARCHS]" >&2
	exit 2
	;;
esac
TREE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gpool-gpu-out/$part}
BUILD=${BUILD:-/tmp/gpool-gpu-build/$part}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
# so the cuda backend finds cuBLAS with dlopen (it falls back to its own kernel otherwise)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log() { echo "=== $* ($(date +%T))"; }

env_log() {
	{
		log env
		nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,driver_version,compute_cap --format=csv
		nvcc --version | tail -2
		cmake --version | head -1
		gcc --version | head -1
		nproc
	} >"$OUT/env.log" 2>&1
}

# build SRC [CMAKE ARGS...]: a fresh build of SRC into $BUILD (build.log); exits on failure
build() {
	local src=$1 start rc
	shift
	log "build ${src#"$TREE"/} $*"
	rm -rf "$BUILD"
	start=$(date +%s)
	(cmake -S "$src" -B "$BUILD" "$@" && cmake --build "$BUILD" -j"$(nproc)") >"$OUT/build.log" 2>&1
	rc=$?
	echo "build rc=$rc in $(($(date +%s) - start)) s" | tee -a "$OUT/build.log"
	grep -E 'gpool-kernels:|gcomm:' "$OUT/build.log"
	[ $rc -eq 0 ] || {
		tail -30 "$OUT/build.log"
		exit 1
	}
}

run_kernels() {
	build "$TREE/kernels" ${1:+-DGK_CUDA_ARCHS=$1}
	cuobjdump --list-elf "$BUILD/libgpool-kernels-cuda.so" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | tr '\n' ' ' | tee -a "$OUT/build.log"
	cuobjdump --list-ptx "$BUILD/libgpool-kernels-cuda.so" 2>/dev/null | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/ptx \1/' | sort -u | tr '\n' ' ' | tee -a "$OUT/build.log"
	echo

	log ctest
	(cd "$BUILD" && timeout 240 ctest -V) >"$OUT/ctest.log" 2>&1
	echo "ctest rc=$?"
	grep -E 'tests passed|Test +#|SKIP' "$OUT/ctest.log"
	grep -E '^(FAIL|gk-test|  note|  device|  sgemm)' "$OUT/ctest.log" | head -40

	log bench
	(cd "$BUILD" && timeout 120 ./bench/gk-bench --backend cuda --size 1G --runs 30 --warmup 3 --check) >"$OUT/bench.log" 2>&1
	echo "bench rc=$?"
	(cd "$BUILD" && GPOOL_KERNELS_WAVES=2 timeout 60 ./bench/gk-bench --backend cuda --size 1G --runs 20) >"$OUT/bench-w2.log" 2>&1
	echo "waves 2:"
	grep -E 'reduce|cast|copy' "$OUT/bench-w2.log"
	cat "$OUT/bench.log"

	log huge
	(cd "$BUILD" && timeout 200 ./gk-test cuda --huge 67108867) >"$OUT/test-huge.log" 2>&1
	echo "huge rc=$?"
	tail -16 "$OUT/test-huge.log"

	log sanitizer
	if command -v compute-sanitizer >/dev/null; then
		(cd "$BUILD" && timeout 90 compute-sanitizer --tool memcheck --print-limit 20 ./gk-test cuda --huge 4099) >"$OUT/sanitizer.log" 2>&1
		echo "sanitizer rc=$?"
		tail -6 "$OUT/sanitizer.log"
	fi
}

run_comm() {
	log probe
	{
		ls /usr/include/ucp/api/ucp.h /usr/include/mpi.h /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h 2>&1
		which mpicc mpirun ucx_info 2>&1
		ucx_info -v 2>&1 | head -3
		nproc
	} >"$OUT/probe.log" 2>&1
	cat "$OUT/probe.log"

	local extra
	read -r -a extra <<<"${GC_CMAKE_ARGS:--DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF}"
	build "$TREE/comm" -DGK_CUDA_ARCHS="${1:-90}" -DGK_WITH_HIP=OFF "${extra[@]}"

	log kernels-ctest
	(cd "$BUILD/kernels" && timeout 200 ctest --output-on-failure) >"$OUT/kernels-ctest.log" 2>&1
	echo "kernels ctest rc=$?"
	grep -E "tests passed|Failed|SKIP" "$OUT/kernels-ctest.log"

	log comm-host-tests
	local np be
	for np in 2 3 4; do
		(cd "$BUILD" && timeout 300 ./gcomm-test --np $np) >>"$OUT/comm-host.log" 2>&1
		echo "host np=$np rc=$?"
	done
	tail -3 "$OUT/comm-host.log"

	log comm-cuda-tests
	for np in 1 2 3 4 5; do
		(cd "$BUILD" && timeout 300 ./gcomm-test --np $np --backend cuda) >>"$OUT/comm-cuda.log" 2>&1
		echo "cuda np=$np rc=$?"
	done
	for np in 2 3 4; do # card ranks and CPU-only ranks in one communicator
		(cd "$BUILD" && timeout 300 ./gcomm-test --np $np --backend cuda --mixed) >>"$OUT/comm-cuda.log" 2>&1
		echo "cuda+cpu mixed np=$np rc=$?"
	done
	grep -E "passed|FAILED|wrong|SKIP" "$OUT/comm-cuda.log" | head -20
	(cd "$BUILD" && timeout 200 ./gcomm-test --np 3 --backend cuda --kill-test) >"$OUT/comm-cuda-kill.log" 2>&1
	echo "cuda kill rc=$?"
	grep "kill test" "$OUT/comm-cuda-kill.log"

	log comm-bench
	for np in 2 4; do
		for be in cpu cuda; do
			(cd "$BUILD" && timeout 240 ./gcomm-bench --np $np --backend $be -b 8 -e 256M -f 4 \
				--json "$OUT/bench-$be-np$np.json") >"$OUT/bench-$be-np$np.log" 2>&1
			echo "bench $be np=$np rc=$?"
			cat "$OUT/bench-$be-np$np.log"
		done
	done
	(cd "$BUILD" && timeout 120 ./gcomm-bench --np 4 --backend cuda --wire bf16 -b 1M -e 256M -f 16) >"$OUT/bench-cuda-np4-bf16.log" 2>&1
	echo "bench cuda bf16 rc=$?"
	cat "$OUT/bench-cuda-np4-bf16.log"
}

run_gcheck_local() {
	local archs=${1:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
	build "$TREE/tools/gcheck-local" -DGK_WITH_HIP=OFF ${archs:+-DGK_CUDA_ARCHS=$archs}

	# gcheck-local's own tests (cpu backend); the kernels' tests are the kernels part's
	log ctest
	(cd "$BUILD" && timeout 120 ctest -R '^gcheck-local' --output-on-failure) >"$OUT/ctest.log" 2>&1
	echo "ctest rc=$?"
	grep -E 'tests passed|Test +#' "$OUT/ctest.log"

	local g=$BUILD/gcheck-local start
	log "gcheck-local --backend cuda --duration 20 --json"
	start=$(date +%s)
	timeout 600 "$g" --backend cuda --duration 20 --json >"$OUT/gcheck.json" 2>"$OUT/gcheck.err"
	echo "gcheck rc=$? (0 good/warn, 1 fail, 3 not measured) in $(($(date +%s) - start)) s"
	cat "$OUT/gcheck.err"

	log "gcheck-local --backend cuda --duration 5 (table)"
	timeout 300 "$g" --backend cuda --duration 5 >"$OUT/gcheck.txt" 2>&1
	echo "table rc=$?"
	cat "$OUT/gcheck.txt"

	log "gcheck-local --backend cuda --inject-fault (must fail with memory errors)"
	timeout 300 "$g" --backend cuda --card 0 --duration 2 --mem-fraction 0.1 --inject-fault --json \
		>"$OUT/fault.json" 2>"$OUT/fault.err"
	echo "fault rc=$? (want 1)"
	cat "$OUT/fault.err"

	log summary
	python3 - "$OUT" >"$OUT/summary.txt" 2>&1 <<'PYEOF'
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
}

env_log
"run_${part//-/_}" "$@"
log finished
