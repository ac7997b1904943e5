#!/bin/bash
# t1401-llm-pipeline: gllm serve as a job of 3 ranks on this host (libgcomm's tcp rendezvous
# on 127.0.0.1, as gpool's GCOMM_* variables would give it), a random-weight llama of 6 layers:
# the plan splits it 2/2/2 and is printed before loading; a greedy completion through the 3
# ranks is the text `gllm run` makes on one rank; a stream behind a stage frozen for 2.5 s gets
# SSE keep-alive comments and then its [DONE]; `gllm plan` prints the plan of a job too big
# for its ranks as an error; then the last rank is killed in the middle of a stream: the client
# gets an SSE error event and no [DONE] (never a broken answer that ends cleanly), and the
# server exits with status 3 so its service restarts it; SIGTERM to rank 0 ends every rank
# cleanly.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_bins gllm gllm-mkmodel
command -v curl >/dev/null || skip_all "curl is not installed"

WORK=$(mktemp -d /tmp/t1401.XXXXXX)
pids=()
stop_all() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap stop_all EXIT

"$GPOOL_BIN_DIR/gllm-mkmodel" --shape test-llama --layers 6 --type f32 --seed 5 "$WORK/m.gguf" \
	>/dev/null 2>&1 || { fail "gllm-mkmodel writes a model of 6 layers"; done_testing; }
PORT=$(slot_port 18851)
RDV=$(slot_port 18852)
for p in "$PORT" "$RDV"; do
	ss -ltn "sport = :$p" | grep -q LISTEN && skip_all "port $p is taken"
done
export GLLM_SPEED=10 GLLM_MEM=1G GCOMM_RDV=tcp://127.0.0.1:$RDV GCOMM_SIZE=3 GCOMM_TIMEOUT=3000

# start_ranks ARGS...: the 3 ranks of a job, rank 0's output in $WORK/r0.log
start_ranks() {
	local r
	pids=()
	for r in 0 1 2; do
		GCOMM_RANK=$r "$GPOOL_BIN_DIR/gllm" "$@" >"$WORK/r$r.log" 2>&1 &
		pids+=($!)
	done
}

GLLM_KEEPALIVE_MS=500 start_ranks serve "$WORK/m.gguf" --port "$PORT" --backend cpu --ctx 256 \
	--parallel 4
up() { curl -s -o /dev/null -m 1 "http://127.0.0.1:$PORT/health"; }
for _ in $(seq 100); do up && break; sleep 0.2; done
check "3 ranks serve" up
plan=$(cat "$WORK/r0.log")
like "$plan" "6 layers on 3 ranks" "rank 0 prints the plan"
like "$plan" "1 +[^ ]+ +cpu .* 2-3 \(2\)" "rank 1 holds layers 2-3"
like "$plan" "2 +[^ ]+ +cpu .* 4-5 \(2\)" "rank 2 holds layers 4-5"

curl -s -m 20 http://127.0.0.1:$PORT/v1/completions \
	-d '{"prompt":"the quick brown fox","max_tokens":12,"temperature":0}' >"$WORK/c.json"
got=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"], end="")' "$WORK/c.json" 2>&1)
ref=$(env -u GCOMM_SIZE -u GCOMM_RDV "$GPOOL_BIN_DIR/gllm" run "$WORK/m.gguf" --backend cpu \
	--ctx 256 -p "the quick brown fox" -n 12 --temp 0 2>/dev/null)
is "the quick brown fox$got" "$ref" "3 ranks answer the text one rank (gllm run) makes"

# a stage frozen for 2.5 s (SIGSTOP) before a request: its stream is silent (no token can
# come) and gets SSE keep-alive comments, then goes on to its [DONE] when the stage is thawed
kill -STOP "${pids[1]}"
"$PY" - "$PORT" >"$WORK/frozen" 2>&1 <<'PYEOF' &
import json, sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % sys.argv[1],
    data=json.dumps({"prompt": "once", "max_tokens": 40, "stream": True}).encode())
r = urllib.request.urlopen(req, timeout=30)
for line in r:
    line = line.decode().strip()
    if line.startswith("data: "):
        print("event", line[6:40], flush=True)
    elif line.startswith(":"):
        print("comment", line, flush=True)
PYEOF
client=$!
sleep 2.5
kill -CONT "${pids[1]}"
wait "$client"
like "$(grep -c '^comment : keep-alive' "$WORK/frozen")" '^[1-9]' "a stream silent behind a frozen stage gets keep-alive comments"
is "$(tail -1 "$WORK/frozen")" "event [DONE]" "and ends with [DONE] once the stage is thawed"

# the last rank dies mid-stream: the client stops the middle stage the moment the first token
# comes, so the answer cannot end before the kill (a small model's 200 tokens take well under
# the time a poll of the client's output did: the stream once ended with [DONE] first)
"$PY" - "$PORT" "${pids[1]}" >"$WORK/broken" 2>&1 <<'PYEOF' &
import json, os, signal, sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % sys.argv[1],
    data=json.dumps({"prompt": "once", "max_tokens": 200, "stream": True}).encode())
r = urllib.request.urlopen(req, timeout=30)
events = []
for line in r:
    line = line.decode().strip()
    if line.startswith("data: "):
        if not events:
            os.kill(int(sys.argv[2]), signal.SIGSTOP)
            print("stopped", flush=True)
        events.append(line[6:])
        print("event", events[-1][:80], flush=True)
print("last:", events[-1])
print("done seen:", "[DONE]" in events)
PYEOF
client=$!
for _ in $(seq 100); do grep -q '^stopped' "$WORK/broken" && break; sleep 0.1; done
kill -9 "${pids[2]}"
wait "${pids[2]}" 2>/dev/null
kill -CONT "${pids[1]}"
wait "$client"
last=$(grep '^last:' "$WORK/broken")
like "$last" '^last: \{"error":\{"message":"the answer broke off' "the stream ends with an SSE error event"
is "$(grep '^done seen:' "$WORK/broken")" "done seen: False" "and no [DONE] after a rank died"
for _ in $(seq 100); do kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.1; done
wait "${pids[0]}"
is "$?" 3 "rank 0 exits with status 3 (the ranks failed)"

# a clean stop: SIGTERM to rank 0 ends every rank with status 0
start_ranks serve "$WORK/m.gguf" --port "$PORT" --backend cpu --ctx 256
for _ in $(seq 100); do up && break; sleep 0.2; done
curl -s -m 10 http://127.0.0.1:$PORT/v1/completions -d '{"prompt":"x","max_tokens":3}' >/dev/null
kill -TERM "${pids[0]}"
codes=""
for p in "${pids[@]}"; do
	wait "$p"
	codes="$codes $?"
done
is "$codes" " 0 0 0" "SIGTERM to rank 0 ends all 3 ranks with status 0"

# a plan that does not fit: every rank says so, nothing is loaded
GLLM_MEM=100K start_ranks plan "$WORK/m.gguf" --backend cpu
for p in "${pids[@]}"; do wait "$p"; done
like "$(cat "$WORK/r0.log")" "does not fit" "gllm plan refuses a model too big for the job's ranks"
pids=()
done_testing
