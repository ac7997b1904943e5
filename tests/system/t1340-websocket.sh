#!/bin/bash
# t1340-websocket: ggated carries WebSocket upgrades (RFC 6455) to a one-replica service: a
# WebSocket echo server of the standard library only (tests/system/ws_echo.py), driven by a
# client of the standard library only (ws_client.py, which checks Sec-WebSocket-Accept). The
# handshake passes through (/svc/NAME/ and a --service-port), messages of 1 B to 16 MiB come
# back whole (larger than every buffer on the way: ggated's 64 KiB reads and 1 MiB backlog),
# 32 MiB stream from the replica alone, four clients at once, the same over TLS (wss), the close
# handshake ends each connection cleanly; the replica runs on the job's node (it says its host name). A replica's
# refusal (403) is relayed; malformed handshakes get 400 or 426 and never reach the replica;
# plain HTTP to the same service still works; an open WebSocket counts as a request in flight
# at its replica (what drains wait for); one idle past --ws-idle-timeout is closed, one idle
# less is not; the gauges go back to 0.
# timeout: 240
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 2 --node-timeout 4s --heartbeat-interval 1s
need_bins ggated
command -v curl >/dev/null || skip_all "curl is not installed"

GW=127.0.0.1:$(slot_port 18840)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--service-port ws="$(slot_port 18841)" --health-interval 300 --connect-timeout 400 --poll-interval 300 \
	--client-timeout 3000 --ws-idle-timeout 10000 >"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

SYS=$(cd "$(dirname "$0")" && pwd)
install -m 0755 "$SYS/ws_echo.py" "$SYS/ws_client.py" "$WORK/"
svc=$(submit --service --replicas 1 -J ws -- /bin/sh -c "exec python3 $WORK/ws_echo.py \$GPOOL_PORT")
[ -n "$svc" ] && wait_ready "$svc" 1 30 || { fail "the echo service runs" "$(replicas "$svc")"; done_testing; }
read -r _ _ node _ < <(replicas "$svc")
ok "a one-replica WebSocket echo service runs on $node (job $svc)"
known() { curl -s -m 2 "http://$GW/metrics" | grep -c '^ggated_replica_healthy{service="ws".*} 1$'; }
wait_eq 10 1 known
WSC="python3 $WORK/ws_client.py"
metric() { curl -s -m 2 "http://$GW/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

like "$($WSC "$GW" /svc/ws/ handshake)" '^HTTP/1.1 101 Switching Protocols$' "the handshake passes through /svc/ws/ (101, the replica's Sec-WebSocket-Accept checked)"
like "$($WSC "127.0.0.1:$(slot_port 18841)" /any/path handshake)" '^HTTP/1.1 101' "and through the service's own port"

out=$($WSC "$GW" /svc/ws/ echo 1 125 126 65535 65536 1048577 4194304 16777216)
is "$(grep -c ' ok$' <<<"$out")" 8 "messages of 1 B to 16 MiB come back whole through ggated ($(tr '\n' ' ' <<<"$out"))"
like "$out" 'closed clean' "the close handshake ends the connection cleanly"
out=$($WSC "$GW" /svc/ws/ stream 33554432)
like "$out" '^stream 33554432 ok' "32 MiB from the replica alone, the client reading as it comes ($(head -1 <<<"$out"))"
is "$($WSC "$GW" /svc/ws/ whoami | sed -n 1p)" "$node" "the replica answering on the WebSocket runs on the job's node ($node)"

pids=()
for i in 1 2 3 4; do
	$WSC "$GW" /svc/ws/ echo 1048576 300000 >"$TEST_DIR/par$i" &
	pids+=($!)
done
wait "${pids[@]}"
is "$(cat "$TEST_DIR"/par? | grep -c ' ok$')" 8 "four clients at once, each message back whole"
is "$(cat "$TEST_DIR"/par? | grep -c 'closed clean')" 4 "and each closed cleanly"

is "$(curl -s -m 2 "http://$GW/svc/ws/")" "$node $(replicas "$svc" | awk '{print $5}')" "plain HTTP to the same service still works"
like "$(curl -s -m 2 "http://$GW/svc/ws/headers")" "x-forwarded-for" "and is sent X-Forwarded-For as before"

like "$($WSC "$GW" /svc/ws/refuse handshake)" '^HTTP/1.1 403' "a replica's refusal of the handshake (403) is relayed"

# malformed handshakes: refused by ggated, never sent on
K='Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='
hs() { curl -s -o /dev/null -m 3 -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: websocket' "$@"; }
is "$(hs -H 'Sec-WebSocket-Version: 8' -H "$K" "http://$GW/svc/ws/")" 426 "version 8: 426 Upgrade Required"
like "$(curl -s -D - -o /dev/null -m 3 -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 8' -H "$K" "http://$GW/svc/ws/")" 'Sec-WebSocket-Version: 13' "with the version ggated carries"
is "$(hs -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: short' "http://$GW/svc/ws/")" 400 "a malformed key: 400"
is "$(hs -H 'Sec-WebSocket-Version: 13' "http://$GW/svc/ws/")" 400 "no key: 400"
is "$(hs -H 'Sec-WebSocket-Version: 13' -H "$K" -X POST -d x "http://$GW/svc/ws/")" 400 "a POST with a body: 400"
is "$(curl -s -o /dev/null -m 3 -w '%{http_code}' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H "$K" "http://$GW/svc/ws/")" 400 "Upgrade without 'Connection: Upgrade': 400"

# over TLS (wss): the client's connection is TLS in raw mode too
CA=$(mktemp -d /tmp/gpool-ca.XXXXXX)
at_cleanup "rm -rf $CA"
if "$GPOOL_SRC_DIR/deploy/gpool-ca" init "$CA/pool" >/dev/null 2>&1 &&
	"$GPOOL_SRC_DIR/deploy/gpool-ca" issue "$CA/pool" gw --ip 127.0.0.1 >/dev/null 2>&1; then
	"$GPOOL_BIN_DIR/ggated" --listen "127.0.0.1:$(slot_port 18844)" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
		--tls-cert "$CA/pool/gw.crt" --tls-key "$CA/pool/gw.key" --health-interval 300 \
		--poll-interval 300 >"$TEST_DIR/ggated-tls.log" 2>&1 &
	tlspid=$!
	at_cleanup "kill $tlspid 2>/dev/null; wait $tlspid 2>/dev/null"
	tlsup() { curl -s -o /dev/null -m 2 -w '%{http_code}' --cacert "$CA/pool/ca.crt" "https://127.0.0.1:$(slot_port 18844)/svc/ws/"; }
	wait_eq 10 200 tlsup
	out=$(WS_CAFILE="$CA/pool/ca.crt" $WSC "127.0.0.1:$(slot_port 18844)" /svc/ws/ echo 1 70000 4194304)
	is "$(grep -c ' ok$' <<<"$out")" 3 "over TLS (wss): messages of 1 B to 4 MiB come back whole ($(tr '\n' ' ' <<<"$out"))"
	like "$out" 'closed clean' "and the close handshake ends it cleanly"
	out=$(WS_CAFILE="$CA/pool/ca.crt" $WSC "127.0.0.1:$(slot_port 18844)" /svc/ws/ stream 16777216)
	like "$out" '^stream 16777216 ok' "16 MiB from the replica over TLS"
	kill $tlspid 2>/dev/null
	wait $tlspid 2>/dev/null
else
	skip "gpool-ca cannot make a certificate here: no wss check"
fi

# an open WebSocket is a request in flight at its replica; idle ones are closed
$WSC "$GW" /svc/ws/ hold 2 >"$TEST_DIR/hold2" &
h2=$!
idle0=$(metric ggated_websocket_idle_closed_total)
$WSC "$GW" /svc/ws/ hold 14 >"$TEST_DIR/hold6" &
h6=$!
sleep 1
is "$(metric ggated_websockets)" 2 "two WebSockets open (ggated_websockets)"
like "$(curl -s -m 2 "http://$GW/metrics" | grep '^ggated_replica_outstanding{service="ws"')" ' 2$' "they count as requests in flight at the replica (a drain waits for them)"
wait $h2 $h6
is "$(head -1 "$TEST_DIR/hold2")" "hold ok" "a WebSocket idle 2 s (under --ws-idle-timeout 10000, long for a loaded CI) stays open"
is "$(head -1 "$TEST_DIR/hold6")" "hold closed" "one idle 14 s is closed"
is "$(metric ggated_websocket_idle_closed_total)" $((idle0 + 1)) "ggated_websocket_idle_closed_total counts it"
wait_eq 5 0 metric ggated_websockets
is "$(metric ggated_websockets)" 0 "no WebSocket left open"
like "$(curl -s -m 2 "http://$GW/metrics" | grep '^ggated_replica_outstanding{service="ws"')" ' 0$' "nothing in flight at the replica"
sw=$(curl -s -m 2 "http://$GW/metrics" | sed -n 's/^ggated_websocket_handshakes_total{result="switched"} //p')
is "$sw" 11 "each of the 11 handshakes the replica took is counted as switched (ggated_websocket_handshakes_total)"
kill -0 $gwpid 2>/dev/null && ok "ggated still runs" || fail "ggated still runs" "it exited"
as_user gcancel "$svc" >/dev/null 2>&1
done_testing
