#!/bin/bash
# t1120-attack-services: a second user attacks gpool-user's service. gpool-other's service of
# the same name is refused and /svc/NAME/ keeps reaching gpool-user's replica (by its job id,
# and after gschedd restarts); names that read as job ids are refused; a squatter run by
# gpool-other on the replica's host, listening on the port the replica was given (the replica
# itself does not listen), gets no traffic through ggated and gstat -l shows the replica not
# ready with the reason; reports forged by gpool-other in a ServiceQuery (health failing,
# draining, requests in flight) change nothing gstat shows and are logged; a client's
# X-Forwarded-For is replaced by ggated (kept and appended to only for a front proxy named
# with --trust-forwarded).
# timeout: 180
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 2 --node-timeout 4s --heartbeat-interval 1s --kill-grace 2s
need_bins ggated gp-probe
command -v curl >/dev/null || skip_all "curl is not installed"

GW=127.0.0.1:$(slot_port 18820)
GWT=127.0.0.1:$(slot_port 18821)
start_gw() { # ADDR LOG [ARGS...]: ggated as root, the cluster's gateway_uid
	local addr=$1 log=$2
	shift 2
	"$GPOOL_BIN_DIR/ggated" --listen "$addr" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
		--health-interval 300 --connect-timeout 400 --poll-interval 300 "$@" >"$log" 2>&1 &
	local pid=$!
	at_cleanup "kill $pid 2>/dev/null; wait $pid 2>/dev/null; echo '# ---- $(basename "$log") (last 15) ----'; tail -15 $log | sed 's/^/# /'"
}
start_gw "$GW" "$TEST_DIR/ggated.log"
start_gw "$GWT" "$TEST_DIR/ggated-trust.log" --trust-forwarded 127.0.0.1
is "$(grep -c '^gateway_uid = ' "$GPOOL_CONF")" 1 "the cluster names ggated's account (gateway_uid) in gpool.conf"

# the replica: GET /who answers its owner's word, GET /xff the X-Forwarded-For it was sent
cat >"$WORK/echo.py" <<'PY'
import http.server, os, sys
who = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (who if self.path != "/xff" else
                " | ".join(self.headers.get_all("X-Forwarded-For") or ["none"])).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(os.environ["GPOOL_PORT"])), H).serve_forever()
PY
chmod 0644 "$WORK/echo.py"

# -- a service name belongs to its owner
svc=$(submit --service --replicas 1 --port 18900 --health-path /who -J digits -- \
	python3 "$WORK/echo.py" gpool-user)
[ -n "$svc" ] && wait_ready "$svc" 1 30 || { fail "gpool-user's service 'digits' runs" "$(replicas "$svc")"; done_testing; }
ok "gpool-user's service 'digits' runs (job $svc)"
up() { curl -s -m 2 "http://$1/metrics" | grep -c "^ggated_replica_healthy{service=\"$2\".*} 1$"; }
wait_eq 10 1 up "$GW" digits
out=$(as_other gsub --parsable --service -J digits -- python3 "$WORK/echo.py" gpool-other 2>&1)
rc=$?
[ $rc != 0 ] && [[ $out == *"gsub: service name 'digits' belongs to another user"* ]] &&
	ok "gpool-other's service named 'digits' is refused ($out)" ||
	fail "gpool-other's service named 'digits' is refused" "exit $rc: $out"
for _ in $(seq 20); do curl -s -m 2 "http://$GW/svc/digits/who"; echo; done >"$TEST_DIR/who"
is "$(sort "$TEST_DIR/who" | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')" "gpool-userx20 " "20 requests to /svc/digits/ all reach gpool-user's replica"
is "$(curl -s -m 2 "http://$GW/svc/$svc/who")" gpool-user "and /svc/$svc/ (its job id) too"
# the owner may start another of the name (the gateways take the newest), as before
again=$(submit --service --replicas 1 --port 18900 --health-path /who -J digits -- python3 "$WORK/echo.py" gpool-user-2)
[ -n "$again" ] && ok "gpool-user may reuse their own name (job $again)" || fail "gpool-user may reuse their own name"
who() { curl -s -m 2 "http://$GW/svc/digits/who"; }
[ -n "$again" ] && wait_eq 15 gpool-user-2 who && ok "/svc/digits/ goes to the owner's newest" || fail "/svc/digits/ goes to the owner's newest" "$(who)"
[ -n "$again" ] && as_user gcancel "$again" >/dev/null 2>&1 && wait_final "$again" 20
wait_eq 10 gpool-user who || fail "/svc/digits/ goes back to job $svc once job $again ended" "$(who)"

# -- gschedd restarted: the name is still gpool-user's (rebuilt from its store), and the
# replica is ready again once its agent has said its port is its own
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL >/dev/null 2>&1
"$CLUSTER" sched-start --dir "$CLUSTER_DIR" >/dev/null 2>&1
wait_ready "$svc" 1 20 && ok "gschedd restarted: the replica is ready again" || fail "gschedd restarted: the replica is ready again" "$(gstat -l -j "$svc")"
out=$(as_other gsub --parsable --service -J digits -- python3 "$WORK/echo.py" gpool-other 2>&1)
rc=$?
[ $rc != 0 ] && [[ $out == *"belongs to another user"* ]] && ok "after the restart too ($out)" ||
	fail "gpool-other's 'digits' is refused after a restart" "exit $rc: $out"
wait_eq 10 gpool-user who || fail "/svc/digits/ reaches gpool-user's replica after the restart" "$(who)"

# -- names that read as job ids
for name in "$svc" 12345 12_3 12.1; do
	out=$(as_other gsub --parsable --service -J "$name" -- python3 "$WORK/echo.py" x 2>&1)
	rc=$?
	[ $rc != 0 ] && [[ $out == *"reads as a job id"* ]] && ok "a service named '$name' is refused ($out)" ||
		fail "a service named '$name' is refused" "exit $rc: $out"
done
is "$(curl -s -m 2 "http://$GW/svc/$svc/who")" gpool-user "/svc/$svc/ still reaches job $svc"

# -- a squatter on a replica's port: the replica does not listen, gpool-other does
sq=$(submit --service --replicas 1 --port 18950 --health-path / -J squatted -- \
	/bin/sh -c "echo \$GPOOL_PORT > $WORK/sq.port; exec sleep 600")
[ -n "$sq" ] || { fail "the service to squat is accepted"; done_testing; }
wait_until 20 test -s "$WORK/sq.port" || { fail "its replica starts" "$(replicas "$sq")"; done_testing; }
# gschedd learns the port from the agent's TASK_STARTED, a moment after the task wrote it
port_known() { replicas "$sq" | awk '$5 != 0 {f = 1} END {exit !f}'; }
wait_until 10 port_known
read -r _ _ sqhost sqaddr sqport _ < <(replicas "$sq")
is "$sqport" "$(cat "$WORK/sq.port")" "its replica got port $sqport on $sqhost"
closed() { gstat -l -j "$sq" | grep -c "Replica=0 .*Ready=no .*Reason=nothing listens on port $sqport yet"; }
wait_eq 5 1 closed
gl=$(gstat -l -j "$sq" | grep Replica=0)
like "$gl" "Ready=no .*Reason=nothing listens on port $sqport yet" "a replica that does not listen is not ready ($(echo "$gl" | grep -o 'Reason=.*'))"
mkdir -p "$WORK/squat" && echo squatter >"$WORK/squat/index.html" && chmod -R a+rX "$WORK/squat"
on_host "$sqhost" runuser -u "$OTHER_USER" -- python3 -m http.server --bind 0.0.0.0 --directory "$WORK/squat" "$sqport" \
	>"$TEST_DIR/squatter.log" 2>&1 &
sqpid=$!
at_cleanup "kill $sqpid 2>/dev/null; on_host $sqhost pkill -u $OTHER_USER -f 'http.server --bind 0.0.0.0 --directory $WORK/squat' 2>/dev/null"
wait_eq 10 200 http_get "http://$sqaddr:$sqport/" || fail "the squatter listens" "$(cat "$TEST_DIR/squatter.log")"
squatted() { gstat -l -j "$sq" | grep -c "Replica=0 .*Ready=no .*Reason=port $sqport is held by pid [0-9]* (uid $(id -u "$OTHER_USER")), a process outside the replica"; }
wait_eq 10 1 squatted
gl=$(gstat -l -j "$sq" | grep Replica=0)
[ "$(squatted)" = 1 ] && ok "gstat -l: the squatted replica is not ready, and says why ($(echo "$gl" | grep -o 'Reason=.*'))" ||
	fail "gstat -l: the squatted replica is not ready, and says why" "$gl"
sleep 2 # several polls and health checks of both gateways
codes=$(for _ in $(seq 10); do http_get "http://$GW/svc/squatted/"; echo; done | sort | uniq -c | tr '\n' ' ')
body=$(curl -s -m 2 "http://$GW/svc/squatted/")
[[ $codes != *200* ]] && [[ $body != *squatter* ]] && ok "ggated sends the squatted replica nothing (codes: $codes; '$body')" ||
	fail "ggated sends the squatted replica nothing" "codes $codes, body '$body'"
is "$(curl -s -m 2 "http://$GW/metrics" | grep -c "^ggated_replica_healthy{service=\"squatted\".*} 1$")" 0 "ggated lists no healthy replica of it"
grep -q "port $sqport is held by pid" "$CLUSTER_DIR/sched/gschedd.log" && ok "gschedd logs the squatter" ||
	fail "gschedd logs the squatter" "$(grep -i squat "$CLUSTER_DIR/sched/gschedd.log" | tail -3)"
as_user gcancel "$sq" >/dev/null 2>&1
kill "$sqpid" 2>/dev/null
on_host "$sqhost" pkill -u "$OTHER_USER" -f "http.server --bind 0.0.0.0 --directory $WORK/squat" 2>/dev/null

# -- forged gateway reports
read -r _ rjob _ < <(replicas "$svc")
restarts=$(replicas "$svc" | awk '{print $8}')
health() { gstat -l -j "$svc" | grep -o 'Replica=0 .*' | grep -o 'Draining=[a-z]* Health=[a-z]* Requests=[0-9]* Gateways=[0-9]*'; }
wait_until 10 sh -c "gstat -l -j $svc | grep -q 'Draining=no Health=ok Requests=[0-9]* Gateways=2'"
before=$(health)
like "$before" 'Draining=no Health=ok Requests=[0-9]+ Gateways=2' "before: both gateways report the replica healthy ($before)"
for _ in $(seq 5); do
	out=$(as_other gp-probe svc-report "$rjob:$restarts" 2>&1)
	sleep 0.3
done
like "$out" 'reply: ok service_query_reply' "gpool-other's forged ServiceQuery is still answered ($out)"
after=$(health)
like "$after" 'Draining=no Health=ok Requests=[0-9]+ Gateways=2' "gpool-other's forged reports (failing, draining, 1000 in flight) change nothing gstat shows ($after)"
grep -q "replica reports from uid $(id -u "$OTHER_USER") .* ignored" "$CLUSTER_DIR/sched/gschedd.log" &&
	ok "gschedd logs the ignored reports" || fail "gschedd logs the ignored reports"
is "$(grep -c "replica reports from uid $(id -u "$OTHER_USER")" "$CLUSTER_DIR/sched/gschedd.log")" 1 "once for 5 of them (rate-limited)"
out=$(as_user gp-probe svc-report "$rjob:$restarts" 2>&1)
after=$(health)
like "$after" 'Health=ok .*Gateways=2' "nor do gpool-user's own forged reports on their replica ($after)"

# -- X-Forwarded-For
is "$(curl -s -m 2 -H 'X-Forwarded-For: 6.6.6.6' "http://$GW/svc/digits/xff")" 127.0.0.1 \
	"a client's X-Forwarded-For is replaced by the address ggated saw"
is "$(curl -s -m 2 -H 'X-Forwarded-For: 6.6.6.6' -H 'X-Forwarded-For: 7.7.7.7' "http://$GW/svc/digits/xff")" 127.0.0.1 \
	"two of them too"
is "$(curl -s -m 2 "http://$GW/svc/digits/xff")" 127.0.0.1 "one is set when the client sent none"
wait_eq 10 1 up "$GWT" digits
is "$(curl -s -m 2 -H 'X-Forwarded-For: 203.0.113.7' "http://$GWT/svc/digits/xff")" "203.0.113.7, 127.0.0.1" \
	"behind a trusted front proxy (--trust-forwarded 127.0.0.1) its X-Forwarded-For is kept, the peer appended"

as_user gcancel "$svc" >/dev/null 2>&1
done_testing
