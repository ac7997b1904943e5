#!/bin/bash
# cpu-bench.sh: the language model on this machine's CPU, gpool's engine (llm-bench --backend cpu)
# beside llama.cpp's own CPU path (npm's node-llama-cpp, which ships prebuilt llama.cpp builds:
# Debian 12 packages none), on the same GGUF files, the same thread count, in the same run, one
# after the other per model and thread count. Reported per model: load time, prefill tokens/s
# (PREFILL tokens, best of REPS), decode tokens/s at batch 1 (after a PROMPT-token prompt), the
# CPU time per token beside the wall clock (the machine is shared: the load average is logged),
# and our figure over llama.cpp's. Then the greedy cross-check: the same prompt through both
# tokenizers and GREEDY_N greedy tokens from both, on the trained models models/gpool-fortunes*.gguf
# when they are there and on small random-weight models.
#   usage: bench/llm/cpu-bench.sh                 (log: bench/results/llm/cpu-DATE-TIME.log)
#   SHAPES="tinyllama-1.1b" TYPES="q4_0 q8_0 f16" THREADS="2" PREFILL=128 PROMPT=16 DECODE=32
#   REPS=3 GREEDY_N=32                           the defaults (TYPES= : the greedy check only)
#   GREEDY_MODELS="test-llama:q8_0 ..."          random-weight SHAPE:TYPE for the greedy check
#   NLC_DIR=/path                                a folder whose node_modules has node-llama-cpp
#                                                 3.21.1 (default: ~/.cache/gpool-bench/nlc,
#                                                 installed there with npm on first use: ~730 MB)
#   MODEL_DIR=/path                              where the random-weight models are made (cached)
# The benchmark's only download is that npm install, never at build or test time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
CACHE=${GPOOL_BENCH_CACHE:-$HOME/.cache/gpool-bench}
NLC_DIR=${NLC_DIR:-$CACHE/nlc}
NLC_VERSION=3.21.1
MODEL_DIR=${MODEL_DIR:-$CACHE/models}
SHAPES=${SHAPES:-tinyllama-1.1b}
TYPES=${TYPES-q4_0 q8_0 f16}
THREADS=${THREADS:-2}
PREFILL=${PREFILL:-128}
PROMPT=${PROMPT:-16}
DECODE=${DECODE:-32}
REPS=${REPS:-3}
GREEDY_N=${GREEDY_N:-32}
GREEDY_MODELS=${GREEDY_MODELS-test-llama:q8_0 test-llama:f16 test-qwen2:q4_0 test-kquant:q4_K}
GREEDY_TEXT=${GREEDY_TEXT:-"A fortune a day keeps the"}
FORTUNES=${FORTUNES:-$TOP/models/gpool-fortunes.gguf $TOP/models/gpool-fortunes-q8_0.gguf}
LOG=${LOG:-$TOP/bench/results/llm/cpu-$(date -u +%Y%m%d-%H%M).log}

for b in llm-bench gllm-mkmodel; do
	[ -x "$BIN/$b" ] || { echo "cpu-bench: no $BIN/$b (cmake --build build --target $b)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "cpu-bench: needs node and npm" >&2; exit 1; }
if [ ! -f "$NLC_DIR/node_modules/node-llama-cpp/package.json" ]; then
	echo "cpu-bench: installing node-llama-cpp@$NLC_VERSION into $NLC_DIR (about 730 MB)" >&2
	mkdir -p "$NLC_DIR"
	npm i -E --prefix "$NLC_DIR" --no-audit --no-fund "node-llama-cpp@$NLC_VERSION" >&2
fi
# node resolves "node-llama-cpp" from the script's own folder: run a copy placed beside it
cp "$HERE/llamacpp_bench.mjs" "$NLC_DIR/llamacpp_bench.mjs"
mkdir -p "$MODEL_DIR" "$(dirname "$LOG")"

model() { # SHAPE TYPE: the random-weight model's path, made once
	local f="$MODEL_DIR/$1-$2.gguf"
	if [ ! -f "$f" ]; then
		"$BIN/gllm-mkmodel" --shape "$1" --type "$2" "$f.tmp" >&2
		mv "$f.tmp" "$f"
	fi
	echo "$f"
}

ours() { # MODEL THREADS [ARGS]
	local m=$1 t=$2
	shift 2
	"$BIN/llm-bench" "$m" --backend cpu --threads "$t" --batches 1 --kv f16 --reps "$REPS" "$@"
}

theirs() { # MODEL THREADS [ARGS]
	local m=$1 t=$2
	shift 2
	node "$NLC_DIR/llamacpp_bench.mjs" "$m" --threads "$t" --reps "$REPS" "$@"
}

exec > >(tee "$LOG") 2>&1
echo "# bench/llm/cpu-bench.sh $(date -u +%FT%TZ) on $(hostname): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
echo "# gpool $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo '?'), node-llama-cpp $NLC_VERSION, node $(node --version)"
echo "# PREFILL=$PREFILL PROMPT=$PROMPT DECODE=$DECODE REPS=$REPS THREADS=\"$THREADS\" TYPES=\"$TYPES\" SHAPES=\"$SHAPES\""
for shape in $SHAPES; do
	for type in $TYPES; do
		m=$(model "$shape" "$type")
		for t in $THREADS; do
			echo "== $shape $type, $t threads: llama.cpp (load average $(cut -d' ' -f1-3 /proc/loadavg))"
			theirs "$m" "$t" --prefill "$PREFILL" --prompt "$PROMPT" --decode "$DECODE"
			echo "== $shape $type, $t threads: gpool (load average $(cut -d' ' -f1-3 /proc/loadavg))"
			ours "$m" "$t" --prefill "$PREFILL" --prompt "$PROMPT" --decode "$DECODE"
		done
	done
done
# the greedy cross-check: the trained model (when present) and small random ones
checks=""
for f in $FORTUNES; do
	[ -f "$f" ] && checks="$checks $f"
done
for st in $GREEDY_MODELS; do
	checks="$checks $(model "${st%%:*}" "${st##*:}")"
done
for m in $checks; do
	t=${THREADS%% *}
	echo "== greedy $(basename "$m"), $t threads: llama.cpp"
	theirs "$m" "$t" --prefill 64 --prompt 16 --decode 16 --greedy "$GREEDY_TEXT" --greedy-n "$GREEDY_N"
	echo "== greedy $(basename "$m"), $t threads: gpool"
	ours "$m" "$t" --prefill 64 --prompt 16 --decode 16 --greedy "$GREEDY_TEXT" --greedy-n "$GREEDY_N"
done
summary=$(awk -f "$HERE/cpu-bench-summary.awk" "$LOG")
echo "== summary (g/l: gpool over llama.cpp, above 1 is gpool faster)"
echo "$summary"
