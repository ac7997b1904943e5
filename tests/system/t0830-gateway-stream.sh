#!/bin/bash
# t0830-gateway-stream: event streams (text/event-stream, as OpenAI-style servers stream
# tokens) through ggated, from a replica that streams slowly (tests/system/sse_upstream.py):
# a whole stream arrives whole, event by event, with keep-alive comments while the replica is
# silent, and stays open through a silence longer than --timeout (--stream-timeout is the
# limit of a stream); a stream the replica cuts mid-way ends with an SSE error event
# (upstream_error) and no last chunk; a chunked text body cut mid-way ends without its last
# chunk (curl sees it incomplete); a route token passes as Authorization: Bearer.
# timeout: 150
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 1 --node-timeout 4s --heartbeat-interval 1s
need_bins ggated
command -v curl >/dev/null || skip_all "curl is not installed"

GW=127.0.0.1:$(slot_port 18830)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--health-interval 300 --connect-timeout 400 --poll-interval 300 --client-timeout 3000 \
	--timeout 1500 --stream-timeout 20000 --keepalive 700 >"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

SYS=$GPOOL_SRC_DIR/tests/system
install -m 0755 "$SYS/sse_upstream.py" "$WORK/"
mkdir -p "$WORK/u"
chown "$TEST_USER:" "$WORK/u"
chmod 0711 "$WORK/u"
svc=$(submit --service --route-token "$WORK/u/token" --health-path /health -J stream -- \
	/bin/sh -c "exec python3 $WORK/sse_upstream.py \$GPOOL_PORT")
[[ $svc =~ ^[0-9]+$ ]] && wait_ready "$svc" 1 30 || { fail "the streaming service runs" "$svc $(replicas "$svc")"; done_testing; }
ok "a streaming replica runs (job $svc)"
healthy() { curl -s -m 2 "http://$GW/metrics" | grep -c '^ggated_replica_healthy{service="stream".*} 1$'; }
wait_eq 10 1 healthy
T=$(cat "$WORK/u/token")
U="http://$GW/svc/stream"

# -- Authorization: Bearer is the route's token
is "$(curl -s -o /dev/null -w '%{http_code}' -m 3 "$U/health")" 401 "no token: 401"
is "$(curl -s -o /dev/null -w '%{http_code}' -m 3 -H "Authorization: Bearer nope" "$U/health")" 403 "a wrong Bearer: 403"
is "$(curl -s -o /dev/null -w '%{http_code}' -m 3 -H "Authorization: Bearer $T" "$U/health")" 200 "the route's token as Bearer: 200"
B=(-H "Authorization: Bearer $T")

# -- a whole stream with a silence of 2.5 s (over --timeout 1.5 s): keep-alives, then [DONE]
curl -sN -m 15 "${B[@]}" -o "$TEST_DIR/whole" -w '%{http_code} %{time_total}\n' \
	"$U/sse?n=3&gap=0.2&silence=2.5" >"$TEST_DIR/whole.code"
rc=$?
is "$rc" 0 "a stream silent longer than --timeout ends whole (curl exit $rc, $(cat "$TEST_DIR/whole.code"))"
is "$(grep -c '^data: {"n": [0-2]}$' "$TEST_DIR/whole")" 3 "its 3 events came"
is "$(tail -2 "$TEST_DIR/whole" | head -1)" "data: [DONE]" "and its end"
ka=$(grep -c '^: keep-alive$' "$TEST_DIR/whole")
[ "$ka" -ge 2 ] && ok "keep-alive comments while the replica was silent ($ka)" || fail "keep-alives during a 2.5 s silence (--keepalive 700)" "$ka: $(cat -A "$TEST_DIR/whole")"
unlike "$(cat "$TEST_DIR/whole")" "upstream_error" "no error event in a whole stream"

# events arrive as they are sent, not at the end: the first within 1 s of a 4 s stream
s0=$(date +%s%N)
ms=$(curl -sN -m 10 "${B[@]}" "$U/sse?n=2&gap=2" | { IFS= read -r _; echo $((($(date +%s%N) - s0) / 1000000)); })
[ "${ms:-99999}" -lt 1000 ] && ok "the first event is passed on at once (${ms} ms of a 4 s stream)" || fail "the first event at once" "${ms} ms"

# -- a stream cut mid-way: an error event, and no last chunk
curl -sN -m 15 "${B[@]}" -o "$TEST_DIR/cut" "$U/sse?n=2&gap=0.2&silence=1.2&break=1"
rc=$?
[ "$rc" = 18 ] && ok "the cut stream is incomplete to curl (exit 18: no last chunk)" || fail "curl sees the cut stream incomplete" "exit $rc: $(cat -A "$TEST_DIR/cut")"
is "$(grep -c '^data: {"n": [01]}$' "$TEST_DIR/cut")" 2 "the events before the cut came"
last=$(grep '^data:' "$TEST_DIR/cut" | tail -1)
like "$last" '^data: \{"error": \{"message": "upstream replica .* closed mid-stream", "type": "upstream_error"\}\}$' "the last event is the error ($last)"
# the half event the replica had begun is ended before the error: the error is an event of its own
like "$(tr '\n' '|' <"$TEST_DIR/cut")" 'data: \{"n": 9\|\|data: \{"error"' "the half event is ended before the error event"

# -- a chunked text body cut mid-way: no error event (not a stream of events), incomplete to curl
wait_eq 10 1 healthy # the cut ejected the replica until its next health check
curl -s -m 10 "${B[@]}" -o "$TEST_DIR/text" "$U/text-break"
rc=$?
[ "$rc" = 18 ] && ok "a cut chunked body is incomplete to curl (exit 18)" || fail "a cut chunked body is incomplete" "exit $rc: $(cat -A "$TEST_DIR/text")"
like "$(cat "$TEST_DIR/text")" "part one" "what came before the cut came"
unlike "$(cat "$TEST_DIR/text")" "upstream_error" "and no error event in a text body"

m=$(curl -s -m 2 "http://$GW/metrics")
like "$(grep '^ggated_event_stream_errors_total' <<<"$m")" ' [1-9]' "metrics count the error event"
like "$(grep '^ggated_event_stream_keepalives_total' <<<"$m")" ' [1-9]' "and the keep-alives"
done_testing
