#!/bin/bash
# run-on-gpu.sh - the language model on a card (the device tool's machine: a C compiler, cmake,
# the CUDA toolkit and PyTorch; none of gpool's Debian libraries), in one call:
#   1. build bench/llm standalone (kernels, common's base, llm) for the card's architecture
#   2. gk-test cuda: every kernel against the cpu reference (the language-model layers included)
#   3. random-weight models of Llama-2-7B's shapes in f16 and q4_0 (gllm-mkmodel)
#   4. llm-bench on each (prefill, decode at batch 1/8/32 against the copy bandwidth)
#   5. PyTorch's eager and compiled forward on the same f16 weights (torch_bench.py)
#   6. (check) llm_check.py with the C side on the card: logits and greedy text against PyTorch
# STEPS (default "build test models bench torch") picks steps, TYPES the weight types (default
# "f16 q4_0"), GK_TEST_ONLY=llm only the language-model kernels' checks; logs go to $OUT.
set -u
TREE=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/gpool-llm-out}
BUILD=${BUILD:-/tmp/gpool-llm-build}
MODELS=${MODELS:-/tmp/gpool-llm-models}
STEPS=${STEPS:-build test models bench torch}
SHAPE=${SHAPE:-llama2-7b}
TYPES=${TYPES:-f16 q4_0}
mkdir -p "$OUT" "$MODELS"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log() { echo "=== $* ($(date +%T))"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }

archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv >"$OUT/env.log" 2>&1
cat "$OUT/env.log"

if want build; then
	log "build (sm_${archs:-90})"
	start=$(date +%s)
	(cmake -S "$TREE/bench/llm" -B "$BUILD" -DGK_WITH_HIP=OFF -DGK_CUDA_ARCHS="${archs:-90}" \
		-DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j"$(nproc)") >"$OUT/build.log" 2>&1
	rc=$?
	echo "build rc=$rc in $(($(date +%s) - start)) s"
	[ $rc -eq 0 ] || { tail -40 "$OUT/build.log"; exit 1; }
fi
if want test; then
	log "gk-test cuda"
	(cd "$BUILD/kernels" && GK_TEST_ONLY=${GK_TEST_ONLY:-} timeout 100 ./gk-test cuda) >"$OUT/gk-test-cuda.log" 2>&1
	echo "gk-test cuda rc=$?"
	grep -iE 'fail|llm|qmatmul|attention|rope|rmsnorm|passed' "$OUT/gk-test-cuda.log" | head -60
fi
if want models; then
	for t in $TYPES; do
		[ -s "$MODELS/$SHAPE-$t.gguf" ] && continue
		log "gllm-mkmodel $SHAPE $t"
		start=$(date +%s)
		timeout 400 "$BUILD/llm/gllm-mkmodel" --shape "$SHAPE" --type $t --seed 1 "$MODELS/$SHAPE-$t.gguf" >>"$OUT/mkmodel.log" 2>&1
		echo "mkmodel $t rc=$? in $(($(date +%s) - start)) s, $(du -h "$MODELS/$SHAPE-$t.gguf" | cut -f1)"
	done
fi
if want bench; then
	for t in $TYPES; do
		log "llm-bench $SHAPE $t"
		timeout 120 "$BUILD/llm-bench" "$MODELS/$SHAPE-$t.gguf" --backend cuda ${BENCH_ARGS:-} 2>&1 | tee "$OUT/llm-bench-$t.log"
	done
fi
if want check; then
	log "llm_check on cuda (the C forward pass on the card against PyTorch's reference)"
	LLM_CHECK_BACKEND=cuda timeout 150 python3 "$TREE/tests/tools/llm_check.py" "$BUILD/llm" >"$OUT/llm-check-cuda.log" 2>&1
	echo "llm_check cuda rc=$?"
	grep -vE '^ok ' "$OUT/llm-check-cuda.log" | tail -25
fi
if want torch; then
	log "torch_bench $SHAPE f16"
	PYTHONUNBUFFERED=1 timeout 260 python3 "$TREE/bench/llm/torch_bench.py" "$MODELS/$SHAPE-f16.gguf" ${TORCH_ARGS:-} 2>&1 |
		grep -vE 'Warning|warn\(' | tee "$OUT/torch-bench.log"
fi
log "done"
