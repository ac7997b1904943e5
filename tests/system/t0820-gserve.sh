#!/bin/bash
# t0820-gserve: the reference model server as a service's replicas, behind ggated. Its answers
# match a plain-Python forward pass of the same model file (tests/tools/gen-model.py); rows
# that arrive together are served by one batch; malformed JSON, wrong shapes, a wrong method
# and a huge body get 4xx while the others keep being served. The forward pass on the kernels
# backend (--backend cpu here: the path a card takes, on the kernels' own CPU code) answers the
# same; a backend that is not there is refused at start. A replica started with --listen-fd
# serves the socket gstepd bound and handed it (LISTEN_FDS, fd 3).
# timeout: 180
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 2 --kill-grace 2s
need_bins ggated gserve
command -v curl >/dev/null || skip_all "curl is not installed"
GEN=$GPOOL_SRC_DIR/tests/tools/gen-model.py

"$PY" "$GEN" write "$WORK/digits.gpm" --layers 64,48,10 --seed 7 --input-scale 0.0625 --extra-key
chmod a+r "$WORK/digits.gpm"
svc=$(submit --service --replicas 2 --port 8500 --health-path /health -J digits \
	--stage "$WORK/digits.gpm" -- "$USER_BIN/gserve" --model digits.gpm --max-batch 64 \
	--max-wait-us 20000 --max-body 64KiB)
[ -n "$svc" ] && wait_ready "$svc" 2 30 || { fail "2 gserve replicas run" "$(replicas "$svc")"; done_testing; }
ok "2 gserve replicas run (job $svc)"

GW=127.0.0.1:$(slot_port 18820)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--health-interval 300 --poll-interval 300 >"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null"
wait_eq 10 200 http_get "http://$GW/svc/digits/health"
is "$(http_get "http://$GW/svc/digits/health")" 200 "GET /health through the gateway"

"$PY" -c '
import json, random
r = random.Random(11)
print(json.dumps({"inputs": [[r.randint(0, 16) for _ in range(64)] for _ in range(5)]}))' >"$WORK/in.json"
curl -s -m 5 -d @"$WORK/in.json" "http://$GW/svc/digits/v1/predict" >"$WORK/out.json"
"$PY" "$GEN" predict "$WORK/digits.gpm" <"$WORK/in.json" >"$WORK/ref.json"
# vs_reference ANSWER: "same" when gserve's answer is the reference forward pass's
vs_reference() {
	"$PY" -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
d = max(abs(x - y) for p, q in zip(a["probabilities"], b["probabilities"]) for x, y in zip(p, q))
print("same" if a["classes"] == b["classes"] and len(a["probabilities"]) == 5 and d < 1e-4 else "differ %g" % d)
' "$1" "$WORK/ref.json" 2>&1
}
cmp=$(vs_reference "$WORK/out.json")
is "$cmp" same "5 rows predicted through the gateway match the reference forward pass"

# 32 requests at once, straight to one replica: served in fewer batches than requests
read -r _ _ _ addr port _ < <(replicas "$svc" | head -1)
before=$(curl -s -m 2 "http://$addr:$port/v1/model")
"$PY" - "$addr" "$port" "$WORK/in.json" >"$TEST_DIR/burst" <<'PYEOF'
import http.client, json, sys, threading
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = json.dumps({"inputs": json.load(open(path))["inputs"][:1]})
codes, start = [], threading.Barrier(32)
def one():
    c = http.client.HTTPConnection(host, port, timeout=5)
    start.wait()
    c.request("POST", "/v1/predict", body, {"Content-Type": "application/json"})
    codes.append(c.getresponse().status)
ts = [threading.Thread(target=one) for _ in range(32)]
[t.start() for t in ts]
[t.join() for t in ts]
print(sum(1 for c in codes if c == 200))
PYEOF
is "$(cat "$TEST_DIR/burst")" 32 "32 simultaneous requests all answered 200"
after=$(curl -s -m 2 "http://$addr:$port/v1/model")
batches=$("$PY" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(b["batches"]-a["batches"], b["requests"]-a["requests"])' "$before" "$after")
read -r nb nr <<<"$batches"
[ "$nr" = 32 ] && [ "$nb" -lt 32 ] && ok "dynamic batching: 32 requests in $nb batches" ||
	fail "dynamic batching: fewer batches than requests" "$nb batches for $nr requests"

# bad requests
code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$@"; }
is "$(code -d '{"inputs": [[1,2' "http://$GW/svc/digits/v1/predict")" 400 "malformed JSON is 400"
is "$(code -d '{"inputs": [[1,2,3]]}' "http://$GW/svc/digits/v1/predict")" 400 "a row of the wrong width is 400"
is "$(code -d '{"rows": []}' "http://$GW/svc/digits/v1/predict")" 400 "no inputs is 400"
is "$(code "http://$GW/svc/digits/v1/predict")" 405 "GET on /v1/predict is 405"
head -c 200000 /dev/zero | tr '\0' '1' >"$WORK/big"
like "$(code --data-binary @"$WORK/big" "http://$addr:$port/v1/predict")" '^(413|000)$' \
	"a 200 KB body (limit 64 KiB) is refused"
curl -s -m 5 -d @"$WORK/in.json" "http://$GW/svc/digits/v1/predict" >"$WORK/out2.json"
cmp -s "$WORK/out.json" "$WORK/out2.json" && ok "and the same request is still answered the same" ||
	fail "still answered the same" "$(head -c 300 "$WORK/out2.json")"

# the kernels backend's forward pass (a card's path; the kernels' cpu backend here)
"$GPOOL_BIN_DIR/gserve" --model "$WORK/digits.gpm" --backend cpu --listen "127.0.0.1:$(slot_port 18821)" \
	>"$TEST_DIR/gserve-k.log" 2>&1 &
kpid=$!
at_cleanup "kill $kpid 2>/dev/null"
wait_eq 10 200 http_get "http://127.0.0.1:$(slot_port 18821)/health"
curl -s -m 5 -d @"$WORK/in.json" "http://127.0.0.1:$(slot_port 18821)/v1/predict" >"$WORK/out-k.json"
cmp=$(vs_reference "$WORK/out-k.json")
is "$cmp" same "the kernels backend's forward pass (--backend cpu) matches the reference"
like "$(grep -o 'forward pass on the [a-z]* backend' "$TEST_DIR/gserve-k.log")" 'on the cpu backend' "gserve says which backend it runs on"
kill "$kpid" 2>/dev/null
if ! nvidia-smi -L >/dev/null 2>&1; then
	"$GPOOL_BIN_DIR/gserve" --model "$WORK/digits.gpm" --backend cuda --listen "127.0.0.1:$(slot_port 18822)" \
		>"$TEST_DIR/gserve-cuda.log" 2>&1
	rc=$?
	like "$rc $(head -c 300 "$TEST_DIR/gserve-cuda.log")" '^1 .*cannot open the cuda backend' \
		"no card here: --backend cuda is refused at start (exit 1, a reason)"
fi

# gsub --listen-fd: gstepd binds the replica's port and hands gserve the socket (fd 3,
# LISTEN_FDS): served as is, ready (its own cgroup holds it), answering through the gateway
fd=$(submit --service --replicas 1 --port 8600 --health-path /health -J digits-fd --listen-fd \
	--stage "$WORK/digits.gpm" -- "$USER_BIN/gserve" --model digits.gpm)
[ -n "$fd" ] && wait_ready "$fd" 1 30 && ok "a gserve replica handed its socket is ready (job $fd)" ||
	fail "a gserve replica handed its socket is ready" "$(gstat -l -j "$fd")"
wait_eq 10 200 http_get "http://$GW/svc/digits-fd/health"
is "$(http_get "http://$GW/svc/digits-fd/health")" 200 "and answers through the gateway"
rjob=$(replicas "$fd" | awk '{print $2}')
handed() { as_user glogs "$rjob" 2>&1 | grep -c 'served on fd 3 (handed over)'; }
wait_eq 10 1 handed
is "$(handed)" 1 "gserve serves the socket it was handed ($(as_user glogs "$rjob" 2>&1 | grep -o 'served on [^,]*'))"
as_user gcancel "$fd" >/dev/null 2>&1

as_user gcancel "$svc" >/dev/null 2>&1
check "the service ends CANCELLED" wait_state "$svc" CANCELLED 10
done_testing
