#!/bin/bash
# mixed-on-gpu.sh - on a GPU machine (CUDA toolkit + PyTorch): gtrain's mixed precision (issue
# 27). Builds train/ standalone (kernels/ and comm/ with it: only the CUDA toolkit and libc),
# then, by STAGES (default "test acc bench"):
#   test   gk-test cuda on the new products, epilogues, the card-side loss scaler, fused AdamW
#          and graphs, each against the cpu reference (relative error bounds in gk_test.c)
#   acc    gtrain --backend cuda on digits (64-256-256-10) and a synthetic 784-feature set in
#          f32, tf32, bf16, f16: test accuracy of each (the same as f32 within 0.5 points?)
#   bench  gt-step-bench (gtrain's step, data on the card; eager and one replayed graph)
#          against bench/train/torch_amp.py (autocast, AdamW fused=True, data on the card),
#          each precision, on 784-4096-4096-10 at batch 512 and 4096 and 4096-8192-8192-4096-1000
#          at batch 4096 (compute-bound), alternating the two, plus the bf16 product's peak
#   serve  gserve's forward pass (model/test/test_infer.c) on cuda and cpu, f32 and the model
#          stored bf16/f16, against the reference within stated bounds, batch 1 and 64 costs;
#          PyTorch's inference of the same model beside
#          GT_VARIANTS (default "eager graph") adds "graph-O" (AdamW beside backward, -O),
#          "graph-tuned" (GPOOL_KERNELS_LT_TUNE=1: cuBLASLt's candidates timed) and
#          "graph-O-tuned"; TUNE_TEST=1 runs the test stage's products tuned as well
#   compile the same with torch.compile, bf16 and f16 (slow to start: a stage of its own)
#   mixed  one job of a card rank and CPU ranks (gtrain's own rendezvous on loopback: RANK,
#          WORLD_SIZE, MASTER_ADDR/PORT, as gpool sets them): digits and the synthetic set in
#          f32 and bf16, 1 cuda + 2 cpu ranks, accuracy and the speed-weighted shares
# Logs go to $OUT. Usage: STAGES="..." bench/train/mixed-on-gpu.sh [ARCHS]
set -u
OUT=${OUT:-/tmp/mp-gpu-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-/tmp/mp-build}
ARCHS=${1:-90}
STAGES=${STAGES:-test serve acc bench}
PY=${PY:-python3}
log() { echo "=== $* ($(date +%T))"; }
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

{
	nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv
	nvcc --version | tail -1
	$PY -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
	git -C "$ROOT" log -1 --format='commit %h %s' 2>/dev/null || true
} >"$OUT/env.log" 2>&1
cat "$OUT/env.log"

if [ ! -x "$BUILD/gt-step-bench" ]; then
	log build
	start=$(date +%s)
	(cmake -S "$ROOT/train" -B "$BUILD" -DCMAKE_C_FLAGS="-O2 -Wno-maybe-uninitialized" -DGK_CUDA_ARCHS="$ARCHS" \
		-DGK_WITH_HIP=OFF -DGCOMM_WITH_UCX=OFF -DGCOMM_WITH_MPI=OFF &&
		cmake --build "$BUILD" -j"$(nproc)") >"$OUT/build.log" 2>&1
	rc=$?
	echo "build rc=$rc in $(($(date +%s) - start)) s" | tee -a "$OUT/build.log"
	[ $rc -eq 0 ] || { grep -E "error" "$OUT/build.log" | head -20; exit 1; }
fi
GK_TEST=$(find "$BUILD" -name gk-test -type f | head -1)

if has test; then
	log gk-test cuda
	(cd "$(dirname "$GK_TEST")" && GK_TEST_ONLY="${GK_TEST_ONLY:-mixed,amp,graph,sgemm,nn layers,optim}" \
		timeout 240 "$GK_TEST" cuda) >"$OUT/gk-test.log" 2>&1
	echo "gk-test cuda rc=$?"
	if [ "${TUNE_TEST:-0}" = 1 ]; then
		(cd "$(dirname "$GK_TEST")" && GK_TEST_ONLY="${GK_TEST_ONLY:-mixed,amp,graph,sgemm,nn layers,optim}" \
			GPOOL_KERNELS_LT_TUNE=1 timeout 240 "$GK_TEST" cuda) >"$OUT/gk-test-tuned.log" 2>&1
		echo "gk-test cuda, products tuned rc=$?"
		grep -E '^(FAIL|gk-test)|checks' "$OUT/gk-test-tuned.log" | head -20
	fi
	grep -E '^(FAIL|gk-test|  note)|checks' "$OUT/gk-test.log" | head -40
fi

if has serve; then
	log serve
	TI=$(find "$BUILD" -name test_model_infer -type f | head -1)
	for b in cuda cpu; do
		echo "## GS_TEST_BACKEND=$b" >>"$OUT/serve.log"
		GS_TEST_BACKEND=$b timeout 60 "$TI" >>"$OUT/serve.log" 2>&1
		echo "rc=$?" >>"$OUT/serve.log"
	done
	timeout 60 $PY "$HERE/torch_amp.py" --infer --layers 64,256,256,10 >>"$OUT/serve.log" 2>&1
	cat "$OUT/serve.log"
fi

if has acc; then
	log accuracy
	work=/tmp/mp-work
	mkdir -p "$work"
	zcat "$ROOT/bench/train/data/digits.csv.gz" >"$work/digits.csv"
	[ "${ACC_SYNTH:-1}" = 0 ] || [ -f "$work/synth.csv" ] || $PY "$HERE/synth.py" 20000 784 10 "$work/synth.csv"
	for p in ${ACC_PRECS:-f32 tf32 bf16 f16}; do
		echo "## digits $p" >>"$OUT/acc.log"
		timeout 120 "$BUILD/gtrain" --backend cuda --data "$work/digits.csv" --layers 64,256,256,10 \
			--batch 192 --epochs 20 -p "$p" >>"$OUT/acc.log" 2>&1
		[ "${ACC_SYNTH:-1}" = 0 ] && continue
		echo "## synth $p" >>"$OUT/acc.log"
		timeout 120 "$BUILD/gtrain" --backend cuda --data "$work/synth.csv" --layers 784,1024,1024,10 \
			--batch 256 --epochs "${SYNTH_EPOCHS:-6}" -p "$p" >>"$OUT/acc.log" 2>&1
	done
	# the optimizer beside backward must train the same model (bf16; it is exact on the cpu)
	if [ "${ACC_OPTOVER:-0}" = 1 ]; then
		echo "## digits bf16 optover" >>"$OUT/acc.log"
		timeout 120 "$BUILD/gtrain" --backend cuda --data "$work/digits.csv" --layers 64,256,256,10 \
			--batch 192 --epochs 20 -p bf16 --overlap-optimizer on >>"$OUT/acc.log" 2>&1
		echo "## synth bf16 optover" >>"$OUT/acc.log"
		timeout 120 "$BUILD/gtrain" --backend cuda --data "$work/synth.csv" --layers 784,1024,1024,10 \
			--batch 256 --epochs "${SYNTH_EPOCHS:-6}" -p bf16 --overlap-optimizer on >>"$OUT/acc.log" 2>&1
	fi
	grep -E "^## |gtrain: done|overflow|error" "$OUT/acc.log" | grep -v "step .*overflow" | head -40
fi

if has mixed; then
	log "mixed card + cpu ranks"
	work=/tmp/mp-work
	mkdir -p "$work"
	[ -f "$work/digits.csv" ] || zcat "$ROOT/bench/train/data/digits.csv.gz" >"$work/digits.csv"
	[ -f "$work/synth.csv" ] || $PY "$HERE/synth.py" 20000 784 10 "$work/synth.csv"
	port=29611
	for set in "digits 64,256,256,10 192 20" "synth 784,1024,1024,10 256 6"; do
		read -r name layers batch epochs <<<"$set"
		for p in f32 bf16; do
			port=$((port + 1))
			echo "## $name $p: rank 0 cuda, ranks 1-2 cpu" >>"$OUT/mixed.log"
			for r in 0 1 2; do
				be=cpu
				[ $r = 0 ] && be=${MIXED_CARD_BACKEND:-cuda}
				RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=4 \
					timeout 200 "$BUILD/gtrain" --backend $be --data "$work/$name.csv" --layers "$layers" \
					--batch "$batch" --epochs "$epochs" -p "$p" >"$OUT/mixed-$name-$p-r$r.log" 2>&1 &
			done
			wait
			cat "$OUT/mixed-$name-$p-r0.log" >>"$OUT/mixed.log"
			grep -h "error\|gtrain:" "$OUT/mixed-$name-$p-r1.log" "$OUT/mixed-$name-$p-r2.log" | head -5 >>"$OUT/mixed.log"
		done
	done
	grep -E "^## |gtrain: done|epoch +[0-9]+/[0-9]+ .*shares|error" "$OUT/mixed.log" | awk '/^## /{n=0} {n++; if (n < 4 || /done|error|^## /) print}' | head -60
fi

# one configuration: NAME LAYERS BATCH STEPS
bench_one() {
	local layers=$2 batch=$3 steps=$4 p
	local v flags tune
	for p in ${PRECS:-f32 tf32 bf16 f16}; do
		for v in ${GT_VARIANTS:-eager graph}; do
			[ -z "$TORCH_ARGS" ] || break
			flags="" tune=0
			case $v in *graph*) flags="-g" ;; esac
			case $v in *-O*) flags="$flags -O" ;; esac
			case $v in *tuned*) tune=1 ;; esac
			# f16's step must see the whole gradient: no optimizer beside backward
			case "$p $flags" in "f16 "*-O*) continue ;; esac
			# shellcheck disable=SC2086 # flags are words
			GPOOL_KERNELS_LT_TUNE=$tune timeout 120 "$BUILD/gt-step-bench" -b cuda -l "$layers" -B "$batch" \
				-p "$p" -n "$steps" -w 10 $flags 2>&1
		done
		timeout 200 $PY "$HERE/torch_amp.py" --layers "$layers" --batch "$batch" --prec "$p" \
			--steps "$steps" --warmup 10 $TORCH_ARGS 2>&1 | grep -v Warning
	done
}

configs() {
	bench_one mlp512 784,4096,4096,10 512 ${S1:-400}
	bench_one mlp4096 784,4096,4096,10 4096 ${S2:-100}
	bench_one big 4096,8192,8192,4096,1000 4096 ${S3:-30}
}

if has bench; then
	log bench
	$PY "$HERE/torch_amp.py" --peak 2>&1 | tee -a "$OUT/bench.log"
	for rep in $(seq 1 "${REPS:-2}"); do
		echo "## rep $rep" >>"$OUT/bench.log"
		TORCH_ARGS="" configs >>"$OUT/bench.log"
	done
	grep -E "samples/s|peak|error|failed" "$OUT/bench.log" | sed 's/, loss.*//' | head -80
fi

if has compile; then
	log compile
	PRECS=${COMPILE_PRECS:-bf16 f16} TORCH_ARGS="--compile" configs 2>&1 | grep "^torch" >>"$OUT/compile.log"
	cat "$OUT/compile.log"
fi
log "done"
