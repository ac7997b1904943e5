#!/bin/bash
# pipe-on-gpu.sh - the pipeline split on the device tool's one card, in one call (issue 37, "On
# the device: 3 ranks on its one card, and one card rank with two CPU ranks, against one rank"):
#   a  one rank on the card
#   b  three ranks on the one card, each its layer range, the activations between them over
#      libgcomm's tcp transport on 127.0.0.1; the three are given the same speed (GLLM_SPEED:
#      three measures taken at once on one card are noise), so the plan splits the layers
#      evenly
#   c  one card rank and two CPU ranks (--backend cpu for ranks 1 and 2), as the planner
#      splits them by measured speed: a card holds everything it can, so the CPU ranks may
#      well hold no layer (its plan is printed)
#   d  as c, with the card rank's memory held to CARD_SHARE (default 0.5) of what case a's
#      one rank used (GLLM_MEM): a model bigger than the card, the rest on the CPU ranks
# The ranks are started as tests/system/t1401-llm-pipeline.sh starts them, without a gpool
# cluster: GCOMM_SIZE/GCOMM_RANK and a tcp rendezvous on 127.0.0.1; --peer-auth none (no munged
# on that machine; the credential check is not what is measured). Each rank is named a host of
# its own (GCOMM_HOST=rankN), so libgcomm sends every activation through its socket on
# 127.0.0.1 as it would between PCs; HOSTS=one names them alike, and libgcomm's same-host path
# (process_vm_readv of frames over 32 KiB, docs/comm.md) takes the larger ones instead. Each case is `gllm serve`
# with a Python client (bench/llm/pipe_client.py) that measures, warm (a first request is left
# out), the time to the first streamed text and the decode rate over the streamed answer, the
# median of REPS requests; each case's greedy text is compared with case a's.
# The programs come from bench/llm/bundle.sh's .llmbundle/bundle.tar.xz (made here, carried
# there), or from BIN (a folder with gllm and gllm-mkmodel, e.g. build/bin).
# Environment: BACKEND (the card ranks' backend, default cuda; cpu tests this script on a PC
# without a card), SHAPE/TYPE/LAYERS (the model, default llama2-7b q4_0 of 8 layers), NTOK
# (tokens an answer, 128), REPS (3), CTX (512), CASES ("a b c d"), CARD_SHARE, HOSTS (apart or one), OUT (the
# logs, at most 8 files).
# Prints one line per measure.
set -u
TREE=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/gpool-pipe-out}
WORK=${WORK:-/tmp/gpool-pipe}
BACKEND=${BACKEND:-cuda}
SHAPE=${SHAPE:-llama2-7b}
TYPE=${TYPE:-q4_0}
LAYERS=${LAYERS:-8}
NTOK=${NTOK:-128}
REPS=${REPS:-3}
CTX=${CTX:-512}
CASES=${CASES:-a b c d}
CARD_SHARE=${CARD_SHARE:-0.5}
HOSTS=${HOSTS:-apart}
PORT=${PORT:-18961}
RDV=${RDV:-18962}
PROMPT=${PROMPT:-"The pipeline splits the model into ranges of layers; each rank holds one range and hands its activations to the next rank over the network, and the last one returns them to the head, which samples the next token."}
PY=${PY:-python3}
mkdir -p "$OUT" "$WORK"

log() { echo "=== $* ($(date +%T))"; }

# the programs: BIN, or the bundle unpacked (its libraries only for gllm: the client's python3
# must keep the machine's own libssl and libz)
if [ -z "${BIN:-}" ]; then
	b=$WORK/bundle
	if [ ! -x "$b/bin/gllm" ] || [ "$TREE/.llmbundle/bundle.tar.xz" -nt "$b/bin/gllm" ]; then
		rm -rf "$b" && mkdir -p "$b"
		tar -C "$b" -xJf "$TREE/.llmbundle/bundle.tar.xz" ||
			{ echo "no bundle: run bench/llm/bundle.sh first"; exit 1; }
	fi
	BIN=$b/bin
	LIBS=$b/lib
	export GPOOL_KERNELS_DIR=$b/lib/gpool
fi
LIBS=${LIBS:-}

{
	date -u
	uname -a
	echo "cpus $(nproc), $(free -g | awk '/Mem/ {print $2}') GiB"
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
	echo "BACKEND=$BACKEND SHAPE=$SHAPE TYPE=$TYPE LAYERS=$LAYERS NTOK=$NTOK REPS=$REPS CTX=$CTX HOSTS=$HOSTS"
} >"$OUT/env.log"
cat "$OUT/env.log"

MODEL=$WORK/$SHAPE-$TYPE-$LAYERS.gguf
if [ ! -s "$MODEL" ]; then
	log "gllm-mkmodel $SHAPE $TYPE --layers $LAYERS"
	start=$(date +%s)
	LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 300 "$BIN/gllm-mkmodel" --shape "$SHAPE" --type "$TYPE" --layers "$LAYERS" \
		--seed 1 "$MODEL.tmp" >"$OUT/mkmodel.log" 2>&1 && mv "$MODEL.tmp" "$MODEL"
	echo "mkmodel rc=$? in $(($(date +%s) - start)) s, $(du -h "$MODEL" 2>/dev/null | cut -f1)"
	[ -s "$MODEL" ] || { tail -5 "$OUT/mkmodel.log"; exit 1; }
fi

# the card's module: the bundle's (sm_90, CUDA 13.0's runtime linked in), unless the card
# cannot take it (another architecture, an older driver): then kernels/ is built here for
# this card (cmake and nvcc are here) and GPOOL_KERNELS_DIR points the loader at it.
# `gllm plan` opens the backend and measures it, and loads no weights.
plan_probe() {
	env -u GCOMM_SIZE LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$BIN/gllm" plan "$MODEL" --backend "$BACKEND" --ctx "$CTX" --parallel 1 >>"$OUT/env.log" 2>&1
}
if [ "$BACKEND" != cpu ] && ! plan_probe; then
	tail -2 "$OUT/env.log"
	archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
	log "the bundle's $BACKEND module does not open: building kernels/ for sm_${archs:-90} here"
	start=$(date +%s)
	(export PATH=/usr/local/cuda/bin:$PATH
	 cmake -S "$TREE/kernels" -B "$WORK/kbuild" -DCMAKE_BUILD_TYPE=Release -DGK_WITH_HIP=OFF \
		-DGK_CUDA_ARCHS="${archs:-90}" &&
		cmake --build "$WORK/kbuild" -j"$(nproc)" --target gpool-kernels-cuda) >"$OUT/kbuild.log" 2>&1
	echo "kernels build rc=$? in $(($(date +%s) - start)) s"
	export GPOOL_KERNELS_DIR=$WORK/kbuild
	plan_probe || { tail -3 "$OUT/env.log"; exit 1; }
fi

pids=()
stop_ranks() {
	local p alive
	[ ${#pids[@]} -gt 0 ] || return 0
	kill -TERM "${pids[0]}" 2>/dev/null # rank 0 ends the others
	for _ in $(seq 100); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
trap stop_ranks EXIT

# start_ranks TAG "BACKEND..." ARGS...: one `gllm ARGS` per backend named, as the ranks of one
# job (a job of one: no rank variables), rank R with the assignments in ${rank_env[R]} too;
# rank R's stdout in TAG.rR.out, stderr in TAG.rR.log.
# Each is started by env (exec'd), so that $! is gllm itself, which stop_ranks signals.
start_ranks() {
	local tag=$1 bes r=0 be extra
	read -ra bes <<<"$2"
	shift 2
	local n=${#bes[@]} job=(-u GCOMM_SIZE -u GPOOL_SIZE -u WORLD_SIZE)
	pids=()
	for be in "${bes[@]}"; do
		[ "$n" -gt 1 ] && job=("GCOMM_SIZE=$n" "GCOMM_RANK=$r" "GCOMM_RDV=tcp://127.0.0.1:$RDV"
			GCOMM_ADDR=127.0.0.1 "GCOMM_TIMEOUT=${GCOMM_TIMEOUT:-120000}")
		[ "$n" -gt 1 ] && [ "$HOSTS" != one ] && job+=("GCOMM_HOST=rank$r")
		read -ra extra <<<"${rank_env[$r]:-}"
		env "${job[@]}" "${extra[@]}" LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$BIN/gllm" "$@" --backend "$be" --ctx "$CTX" --parallel 1 --peer-auth none \
			>"$WORK/$tag.r$r.out" 2>"$WORK/$tag.r$r.log" &
		pids+=($!)
		r=$((r + 1))
	done
}

# wait_ranks SECONDS: until every rank has exited (then 0), or stop them (1)
wait_ranks() {
	local p alive
	for _ in $(seq $(($1 * 5))); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && { stop_ranks; return 0; }
		sleep 0.2
	done
	stop_ranks
	return 1
}

# run_case NAME TITLE "BACKEND..." [ENV...]: the engine's own clock (`gllm run`: one cold request, its
# summary line), then `gllm serve` measured warm by pipe_client.py; the logs in case-NAME.log
run_case() {
	local name=$1 title=$2 bes r tag rc=0 start
	read -ra bes <<<"$3"
	rank_env=("${@:4}")
	start=$(date +%s)
	log "case $name: $title"
	rm -f "$WORK/$name".* "$WORK/$name-run".*
	# a port pair for each start: nothing of the one before can hold it
	PORT=$((PORT + 2)) RDV=$((RDV + 2))
	start_ranks "$name-run" "$3" run "$MODEL" -p "$PROMPT" -n "$NTOK" --temp 0
	wait_ranks 240 || echo "$name: gllm run did not end in 240 s"
	PORT=$((PORT + 2)) RDV=$((RDV + 2))
	start_ranks "$name" "$3" serve "$MODEL" --host 127.0.0.1 --port "$PORT"
	PIDS="${pids[*]}" "$PY" "$TREE/bench/llm/pipe_client.py" measure --port "$PORT" \
		--prompt "$PROMPT" --ntok "$NTOK" --reps "$REPS" --wait 240 --out "$WORK/$name.json" \
		>"$WORK/$name.client" 2>&1 || rc=$?
	stop_ranks
	{
		echo "# case $name: $title (client rc=$rc, $(($(date +%s) - start)) s)"
		cat "$WORK/$name.client"
		for tag in "$name-run" "$name"; do
			for r in "${!bes[@]}"; do
				echo "# $tag: rank $r (${bes[$r]} ${rank_env[$r]:-}): stderr, then stdout"
				cat "$WORK/$tag.r$r.log" "$WORK/$tag.r$r.out"
				echo # gllm run's text ends without a newline
			done
		done
	} >"$OUT/case-$name.log"
	sed -n '/^plan:/,/^slowest stage/p' "$WORK/$name.r0.log" | sed "s/^/  $name plan: /"
	if [ $rc -ne 0 ]; then
		echo "$name FAILED: $title (client rc=$rc; $OUT/case-$name.log)"
		tail -5 "$WORK/$name.client"
		tail -3 "$WORK/$name.r0.log"
	fi
	"$PY" "$TREE/bench/llm/pipe_client.py" report --name "$name" --title "$title" \
		--prompt "$PROMPT" --work "$WORK" | tee -a "$OUT/summary.log"
}

: >"$OUT/summary.log"
# case d's card memory: CARD_SHARE of what one rank used (case a's plan, its "used" column)
card_mem() {
	sed -n 's/^0 .* \([0-9.]*\) GiB *\([0-9.]*\) GiB .*/\2/p' "$WORK/a.r0.log" 2>/dev/null |
		awk -v s="$CARD_SHARE" 'NR == 1 && $1 > 0 {printf "%.3fG", $1 * s}'
}
rank_env=()
same=GLLM_SPEED=${SPEED_B:-1000}
for c in $CASES; do
	case $c in
	a) run_case a "1 rank ($BACKEND)" "$BACKEND" ;;
	b) run_case b "3 ranks ($BACKEND) on one card" "$BACKEND $BACKEND $BACKEND" "$same" "$same" "$same" ;;
	c) run_case c "1 rank ($BACKEND) + 2 cpu ranks" "$BACKEND cpu cpu" ;;
	d)
		mem=$(card_mem)
		if [ -z "$mem" ]; then
			echo "d: skipped: no case a plan to size the card rank by"
			continue
		fi
		run_case d "1 rank ($BACKEND, $mem) + 2 cpu" "$BACKEND cpu cpu" "GLLM_MEM=$mem"
		;;
	*) echo "unknown case '$c' (a, b, c or d)" ;;
	esac
done
log "done"
