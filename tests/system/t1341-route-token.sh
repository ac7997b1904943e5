#!/bin/bash
# t1341-route-token: a service route that requires its owner's token (gsub --route-token FILE),
# attacked. gsub makes the token in a file only gpool-user reads (0600) and sends gschedd its
# SHA-256 only: gstat's JSON and ggated's view never hold the token. Through ggated: no token is
# 401, a forged one 403 (header, cookie, query), on plain HTTP and on the WebSocket handshake
# alike (which then never reaches the replica); the owner's token passes as X-Gpool-Token, and
# once in the query it is answered with a redirect that sets an HttpOnly cookie, which passes
# from then on (HTTP and WebSocket). gpool-other cannot read the file, and gpool-other's own
# token (of its own service) is 403 on gpool-user's route. gsub refuses a token file others
# may read, one that holds no token, and --route-token without --service. A route without a
# token stays open.
# timeout: 200
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 2 --node-timeout 4s --heartbeat-interval 1s
need_bins ggated
command -v curl >/dev/null || skip_all "curl is not installed"

GW=127.0.0.1:$(slot_port 18845)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--service-port priv="$(slot_port 18846)" --health-interval 300 --connect-timeout 400 --poll-interval 300 \
	--client-timeout 3000 >"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

SYS=$(cd "$(dirname "$0")" && pwd)
install -m 0755 "$SYS/ws_echo.py" "$SYS/ws_client.py" "$WORK/"
mkdir -p "$WORK/u" "$WORK/o"
chown "$TEST_USER:" "$WORK/u"
chown "$OTHER_USER:" "$WORK/o"
chmod 0711 "$WORK/u" "$WORK/o"
ECHO="exec python3 $WORK/ws_echo.py \$GPOOL_PORT"

# -- gsub's refusals
out=$(as_user gsub --parsable --route-token "$WORK/u/x" -- /bin/true 2>&1)
[ $? != 0 ] && [[ $out == *"'--route-token' needs '--service'"* ]] && ok "--route-token without --service is refused ($out)" || fail "--route-token needs --service" "$out"
as_user sh -c "umask 022; printf '%064d\n' 0 >$WORK/u/readable"
out=$(as_user gsub --parsable --service --route-token "$WORK/u/readable" -J bad -- /bin/sh -c "$ECHO" 2>&1)
[ $? != 0 ] && [[ $out == *"only you may read"* ]] && ok "a token file others may read is refused ($out)" || fail "a readable token file is refused" "$out"
as_user sh -c "umask 077; echo not-a-token >$WORK/u/junk"
out=$(as_user gsub --parsable --service --route-token "$WORK/u/junk" -J bad -- /bin/sh -c "$ECHO" 2>&1)
[ $? != 0 ] && [[ $out == *"does not hold a token"* ]] && ok "a file that holds no token is refused ($out)" || fail "a junk token file is refused" "$out"

# -- gpool-user's private service, gpool-other's, and an open one
svc=$(submit --service --route-token "$WORK/u/token" -J priv -- /bin/sh -c "$ECHO")
osvc=$(as_other gsub --parsable --service --route-token "$WORK/o/token" -J otherpriv -- /bin/sh -c "$ECHO" 2>&1)
open=$(submit --service -J open -- /bin/sh -c "$ECHO")
for s in "$svc" "$osvc" "$open"; do
	[[ $s =~ ^[0-9]+$ ]] && wait_ready "$s" 1 30 || { fail "the services run" "$s: $(replicas "$s")"; done_testing; }
done
ok "gpool-user's route-token service (job $svc), gpool-other's (job $osvc) and an open one run"
known() { curl -s -m 2 "http://$GW/metrics" | grep -c '^ggated_replica_healthy{service="\(priv\|otherpriv\|open\)".*} 1$'; }
wait_eq 10 3 known

T=$(cat "$WORK/u/token")
OT=$(cat "$WORK/o/token")
[[ $T =~ ^[0-9a-f]{64}$ ]] && ok "gsub made a 256-bit token" || fail "gsub made a token" "$T"
is "$(stat -c '%U %a' "$WORK/u/token")" "$TEST_USER 600" "in a file of gpool-user's, mode 0600"
as_other cat "$WORK/u/token" >/dev/null 2>&1 && fail "gpool-other cannot read the token" "it could" || ok "gpool-other cannot read it"
H=$(printf %s "$T" | sha256sum | cut -d' ' -f1)
js=$(as_other gstat --json -j "$svc" 2>&1; as_user gstat --json -j "$svc" 2>&1)
unlike "$js" "$T" "gstat's JSON (either user's) never shows the token"
p=$(grep -c "$T" "$CLUSTER_DIR"/sched/state/* 2>/dev/null | awk -F: '{s+=$2} END {print s+0}')
is "$p" 0 "gschedd's state holds no copy of the token (its hash only)"

code() { curl -s -o /dev/null -m 3 -w '%{http_code}' "$@"; }
# -- plain HTTP
is "$(code "http://$GW/svc/priv/")" 401 "no token: 401"
like "$(curl -s -D - -o /dev/null -m 3 "http://$GW/svc/priv/")" 'WWW-Authenticate: Bearer' "with WWW-Authenticate"
is "$(code -H "X-Gpool-Token: $(printf '%064d' 0)" "http://$GW/svc/priv/")" 403 "a forged X-Gpool-Token: 403"
is "$(code -H "X-Gpool-Token: $H" "http://$GW/svc/priv/")" 403 "the token's hash (what gpool knows) is no token: 403"
is "$(code -b "gpool_token=$OT" "http://$GW/svc/priv/")" 403 "gpool-other's own token as a cookie: 403"
is "$(code "http://$GW/svc/priv/?gpool_token=$OT")" 403 "gpool-other's token in the query: 403"
is "$(code -H "X-Gpool-Token: $OT" "http://127.0.0.1:$(slot_port 18846)/")" 403 "and on the service's own port"
is "$(curl -s -m 3 -H "X-Gpool-Token: $T" "http://$GW/svc/priv/" | cut -d' ' -f1)" "$(replicas "$svc" | awk '{print $3}')" "the owner's token as X-Gpool-Token: the replica answers"
is "$(code -H "X-Gpool-Token: $OT" "http://$GW/svc/otherpriv/")" 200 "gpool-other's token opens gpool-other's own route"
is "$(code "http://$GW/svc/open/")" 200 "a route without a token stays open"
hdr=$(curl -s -D - -o /dev/null -m 3 "http://$GW/svc/priv/tree?a=1&gpool_token=$T&b=2")
like "$hdr" '^HTTP/1.1 302' "the token in the query: a redirect"
like "$hdr" 'Location: /svc/priv/tree\?a=1&b=2' "to the same place without the token"
like "$hdr" "Set-Cookie: gpool_token=$T; Path=/svc/priv/; HttpOnly; SameSite=Strict" "setting an HttpOnly cookie for the route's path"
is "$(code -b "gpool_token=$T" "http://$GW/svc/priv/")" 200 "the cookie passes"
is "$(code -b "other=1; gpool_token=$OT; gpool_token=$T" "http://$GW/svc/priv/")" 200 "also beside a stale one of another path"
hdr=$(curl -s -D - -o /dev/null -m 3 "http://127.0.0.1:$(slot_port 18846)/x?gpool_token=$T")
like "$hdr" "Set-Cookie: gpool_token=$T; Path=/;" "on the service's own port the cookie's path is /"

# -- the WebSocket handshake
WSC="python3 $WORK/ws_client.py"
before=$(curl -s -m 2 "http://$GW/metrics" | sed -n 's/^ggated_websocket_handshakes_total{result="switched"} //p')
like "$($WSC "$GW" /svc/priv/ handshake)" '^HTTP/1.1 401' "a WebSocket handshake without the token: 401"
like "$(WS_HEADERS="X-Gpool-Token: $OT" $WSC "$GW" /svc/priv/ handshake)" '^HTTP/1.1 403' "with gpool-other's token: 403"
like "$(WS_HEADERS="Cookie: gpool_token=$(printf '%064d' 7)" $WSC "127.0.0.1:$(slot_port 18846)" / handshake)" '^HTTP/1.1 403' "with a forged cookie on the service's port: 403"
like "$(as_other python3 "$WORK/ws_client.py" "$GW" /svc/priv/ handshake)" '^HTTP/1.1 401' "gpool-other's own client without it: 401"
after=$(curl -s -m 2 "http://$GW/metrics" | sed -n 's/^ggated_websocket_handshakes_total{result="switched"} //p')
is "${after:-0}" "${before:-0}" "none of the refused handshakes reached the replica"
out=$(WS_HEADERS="X-Gpool-Token: $T" $WSC "$GW" /svc/priv/ echo 100000)
like "$out" 'echo 100000 ok' "the owner's token as a header: the WebSocket works"
out=$(WS_HEADERS="Cookie: gpool_token=$T" $WSC "127.0.0.1:$(slot_port 18846)" / echo 70000)
like "$out" 'echo 70000 ok' "and with the cookie, on the service's port"
[ "$(curl -s -m 2 "http://$GW/metrics" | sed -n 's/^ggated_route_token_refused_total //p')" -ge 10 ] &&
	ok "refusals counted (ggated_route_token_refused_total)" || fail "refusals counted" "$(curl -s "http://$GW/metrics" | grep route_token)"
kill -0 $gwpid 2>/dev/null && ok "ggated still runs" || fail "ggated still runs" "it exited"
as_user gcancel "$svc" "$open" >/dev/null 2>&1
as_other gcancel "$osvc" >/dev/null 2>&1
done_testing
