#!/bin/bash
# t1400-llm-serve: gllm serve on one rank (no cluster: a process on 127.0.0.1) with a
# random-weight llama written by gllm-mkmodel, driven with curl and Python as OpenAI clients
# drive it: /v1/models; a completion with its usage; greedy answers that repeat; a streamed chat
# completion (role chunk first, text chunks, the finish chunk, usage, [DONE]); bad JSON, a
# prompt longer than the context, n=2 and a body over 1 MiB refused with 400/413 in OpenAI's
# error shape; no key and a wrong bearer refused with 401; requests at once all answered; a
# client that leaves mid-stream does not stop the others; SIGTERM ends the server cleanly.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_bins gllm gllm-mkmodel
command -v curl >/dev/null || skip_all "curl is not installed"

WORK=$(mktemp -d /tmp/t1400.XXXXXX)
srv=""
stop_all() {
	[ -z "$srv" ] || kill "$srv" 2>/dev/null
	[ -z "$srv" ] || wait "$srv" 2>/dev/null
	rm -rf "$WORK"
}
trap stop_all EXIT

"$GPOOL_BIN_DIR/gllm-mkmodel" --shape test-llama --type f32 --seed 3 "$WORK/m.gguf" >/dev/null 2>&1 ||
	{ fail "gllm-mkmodel writes a model"; done_testing; }
echo "k-$RANDOM$RANDOM" >"$WORK/keys"
KEY=$(cat "$WORK/keys")
PORT=$(slot_port 18850)
ss -ltn "sport = :$PORT" | grep -q LISTEN && skip_all "port $PORT is taken"
U=http://127.0.0.1:$PORT/v1
GLLM_SPEED=10 "$GPOOL_BIN_DIR/gllm" serve "$WORK/m.gguf" --port "$PORT" --backend cpu \
	--name tiny --api-key-file "$WORK/keys" --ctx 128 --parallel 4 >"$WORK/log" 2>&1 &
srv=$!
wait_up() { curl -s -o /dev/null -m 1 "http://127.0.0.1:$PORT/health"; }
for _ in $(seq 50); do wait_up && break; sleep 0.2; done
check "gllm serve answers /health" wait_up
like "$(cat "$WORK/log")" "plan: 'test-llama', 2 layers on 1 ranks" "the plan is printed before serving"

auth=(-H "Authorization: Bearer $KEY")
code() { curl -s -o "$WORK/out" -w '%{http_code}' -m 10 "$@"; }

is "$(code "$U/models")" 401 "no key: 401"
like "$(cat "$WORK/out")" '"code":"invalid_api_key"' "401 in OpenAI's error shape"
is "$(code -H "Authorization: Bearer wrong" "$U/models")" 401 "a wrong bearer: 401"
is "$(code "${auth[@]}" "$U/models")" 200 "GET /v1/models"
like "$(cat "$WORK/out")" '"data":\[\{"id":"tiny","object":"model"' "the model is listed by --name"

# check_json FILE PYTHON-EXPR: "yes" when the expression holds for j = the file's JSON
check_json() { "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("yes" if eval(sys.argv[2]) else "no: %s" % j)' "$1" "$2" 2>&1; }

is "$(code "${auth[@]}" "$U/completions" -d '{"model":"tiny","prompt":"Once upon","max_tokens":6,"temperature":0}')" 200 "a completion"
is "$(check_json "$WORK/out" 'j["object"]=="text_completion" and j["choices"][0]["finish_reason"]=="length" and j["usage"]["completion_tokens"]==6 and j["usage"]["total_tokens"]==j["usage"]["prompt_tokens"]+6')" yes \
	"the completion has its text, finish_reason length and the usage counts"
cp "$WORK/out" "$WORK/first"
code "${auth[@]}" "$U/completions" -d '{"prompt":"Once upon","max_tokens":6,"temperature":0}' >/dev/null
is "$("$PY" -c 'import json,sys; a,b=(json.load(open(f))["choices"][0]["text"] for f in sys.argv[1:]); print("same" if a==b else "differ")' "$WORK/first" "$WORK/out")" same \
	"greedy answers to the same prompt are the same"

# a streamed chat completion, read as an OpenAI client reads server-sent events
"$PY" - "$U/chat/completions" "$KEY" >"$WORK/stream" 2>&1 <<'PYEOF'
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=json.dumps({
    "model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
    "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}).encode(),
    headers={"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"})
r = urllib.request.urlopen(req, timeout=10)
assert r.headers["Content-Type"].startswith("text/event-stream"), r.headers["Content-Type"]
events = [l[6:] for l in r.read().decode().split("\n\n") if l.startswith("data: ")]
assert events[-1] == "[DONE]", events[-1]
chunks = [json.loads(e) for e in events[:-1]]
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
fin = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
assert len(fin) == 1 and fin[0]["choices"][0]["finish_reason"] == "length", fin
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 8
print("stream ok")
PYEOF
is "$(tail -1 "$WORK/stream")" "stream ok" "a streamed chat completion: role, chunks, finish, usage, [DONE]"

is "$(code "${auth[@]}" "$U/completions" -d '{"prompt":')" 400 "bad JSON: 400"
like "$(cat "$WORK/out")" '^\{"error":\{"message":"the body is not JSON' "bad JSON's error message"
"$PY" -c 'import json; print(json.dumps({"prompt": "word " * 400}))' >"$WORK/long.json"
is "$(code "${auth[@]}" "$U/completions" -d @"$WORK/long.json")" 400 "a prompt longer than the context: 400"
like "$(cat "$WORK/out")" '"param":"prompt"' "the too-long prompt's error names the prompt"
is "$(code "${auth[@]}" "$U/completions" -d '{"prompt":"a","n":2}')" 400 "n=2: 400"
head -c 1100000 /dev/zero | tr '\0' a | sed 's/^/{"prompt":"/; s/$/"}/' >"$WORK/huge.json"
is "$(code "${auth[@]}" "$U/completions" -d @"$WORK/huge.json")" 413 "a body over 1 MiB: 413"

# 4 streams at once, and a client that leaves in the middle of a fifth
"$PY" - "$U/completions" "$KEY" >"$WORK/many" 2>&1 <<'PYEOF'
import json, socket, sys, threading, urllib.parse, urllib.request
url, key = sys.argv[1], sys.argv[2]
def body(n): return json.dumps({"prompt": "count", "max_tokens": n, "stream": True}).encode()
u = urllib.parse.urlparse(url)
s = socket.create_connection((u.hostname, u.port))
b = body(100)
s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n" % (u.path.encode(), key.encode(), len(b)) + b)
s.recv(200)
s.close()  # leaves mid-stream
res = []
def one():
    r = urllib.request.urlopen(urllib.request.Request(url, data=body(20), headers={"Authorization": "Bearer " + key}), timeout=20)
    ev = [l for l in r.read().decode().split("\n\n") if l.startswith("data: ")]
    res.append(ev[-1] == "data: [DONE]")
ts = [threading.Thread(target=one) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("all done" if res == [True] * 4 else "got %s" % res)
PYEOF
is "$(tail -1 "$WORK/many")" "all done" "4 streams at once all end with [DONE], one client leaving mid-stream"

kill -TERM "$srv"
for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$srv" 2>/dev/null; then fail "SIGTERM ends the server"; else
	wait "$srv"
	is "$?" 0 "SIGTERM ends the server with status 0"
fi
srv=""
done_testing
