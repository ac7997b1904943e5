#!/bin/bash
# t0390-haclients: the clients' half of a standby scheduler (docs/reliability.md, "A standby
# scheduler"). The agents and the commands are given a list of three schedulers: first a dead
# address (a test-net host nobody holds), then a standby (gp-standby: answers every request with
# ERROR_NOT_LEADER naming the real gschedd, sealed with the scheduler's credential), then the
# real gschedd. Everything still works: the agents register, gsub, gstat, gcancel and gnodes
# answer, an agent started again while the standby runs is sent on to the leader. A job control
# request sent again with its request id (gp-control) across a gschedd restart is applied once
# and answered with the first answer; the same id from gpool-other is gpool-other's own request.
# The REST API's Idempotency-Key does the same for a POST.
# timeout: 200
. "$(dirname "$0")/lib.sh"
need_bins gp-standby gp-control
PORT=$((21000 + RANDOM % 9000))
busy() { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }
while busy "$PORT" || busy $((PORT + 1)) || busy $((PORT + 2)); do PORT=$((PORT + 3)); done
DEAD=tcp://$(slot_addr 60):7820 # in the slot's network, no host's
STANDBY=tcp://$(slot_addr 1):$((PORT + 1))
LEADER=tcp://$(slot_addr 1):$PORT
HPORT=$((PORT + 2))
test_under_cluster 2 --cpus 2 --port "$PORT" --extra-scheduler "$DEAD" --extra-scheduler "$STANDBY" \
	--sched-arg "--http-listen=127.0.0.1:$HPORT"
[ "$GPOOL_SCHEDULER" = "$DEAD,$STANDBY,$LEADER" ] ||
	skip_all "the cluster is not on network namespaces (scheduler '$GPOOL_SCHEDULER')"
grep -q "^scheduler = $DEAD,$STANDBY,$LEADER\$" "$GPOOL_CONF" &&
	ok "gpool.conf lists the dead address, the standby and the leader" ||
	fail "gpool.conf lists three schedulers" "$(grep scheduler "$GPOOL_CONF")"

# the agents registered through the list (the standby was not up yet: no answer there either)
is "$(node_state h1)$(node_state h2)" UPUP "both agents registered with the leader, third of their list"

"$GPOOL_BIN_DIR/gp-standby" "$STANDBY" "$LEADER" >"$TEST_DIR/standby.log" 2>&1 &
STANDBY_PID=$!
at_cleanup "kill $STANDBY_PID 2>/dev/null; wait $STANDBY_PID 2>/dev/null"
sleep 0.5
kill -0 $STANDBY_PID 2>/dev/null && ok "the standby stand-in listens at $STANDBY" ||
	{ fail "the standby stand-in starts" "$(cat "$TEST_DIR/standby.log")"; done_testing; }

# commands: past the dead address (given up within a second), to the standby, on to the leader
t0=$(date +%s.%N)
job=$(submit -- /bin/sh -c 'echo hello from the leader')
t1=$(date +%s.%N)
[ -n "$job" ] && ok "gsub through the list: job $job ($("$PY" -c "print(round($t1 - $t0, 2))") s)" ||
	fail "gsub through the list"
wait_state "$job" COMPLETED 30 && ok "the job ran to completion" || fail "job $job completes"
grep -q "^submit [0-9a-f]\{32\} uid $(id -u gpool-user)\$" "$TEST_DIR/standby.log" &&
	ok "the standby saw gsub's submission, with a request id" ||
	fail "the standby saw the submission" "$(cat "$TEST_DIR/standby.log")"
like "$(as_user gstat 2>&1)" "JOBID|$job" "gstat answers through the list"
like "$(as_user gnodes 2>&1)" "h1" "gnodes answers through the list"
grep -q "^job_query - uid" "$TEST_DIR/standby.log" && ok "queries carry no request id" ||
	fail "a query without a request id" "$(cat "$TEST_DIR/standby.log")"

long=$(submit -- sleep 300)
wait_state "$long" RUNNING 30 || diag "job $long did not start"
as_user gcancel "$long" && ok "gcancel through the list" || fail "gcancel through the list"
wait_state "$long" CANCELLED 30 && ok "the job was cancelled" || fail "job $long cancelled"
n_ctl=$(grep -c "^job_control [0-9a-f]\{32\} " "$TEST_DIR/standby.log")
[ "$n_ctl" -ge 1 ] && ok "the standby saw the cancel with a request id" ||
	fail "the standby saw the cancel" "$(cat "$TEST_DIR/standby.log")"

# an agent started again while the standby runs: dead (3 s), standby (NOT_LEADER), leader
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h1 TERM
wait_until 15 eval '! kill -0 "$(cat "$CLUSTER_DIR/h1/gworkerd.pid")" 2>/dev/null' || diag "h1's agent still runs"
# only what the new agent logs counts
before=$(wc -l <"$CLUSTER_DIR/h1/gworkerd.log")
new_log() { tail -n +"$((before + 1))" "$CLUSTER_DIR/h1/gworkerd.log"; }
t0=$(date +%s.%N)
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h1
if wait_until 30 eval 'new_log | grep -q "registered as h1"'; then
	t1=$(date +%s.%N)
	ok "the restarted agent registered again ($("$PY" -c "print(round($t1 - $t0, 1))") s: 3 s at the dead address)"
else
	fail "the restarted agent registered again" "$(new_log | tail -n 15)"
fi
new_log | grep -q "is not the leader; the leader is $LEADER" &&
	ok "the agent followed the standby's NOT_LEADER to the leader" ||
	fail "the agent followed NOT_LEADER" "$(new_log | grep -i 'scheduler' | tail -n 8)"
grep -q "^node_register - uid" "$TEST_DIR/standby.log" && ok "the standby saw the registration" ||
	fail "the standby saw the registration" "$(cat "$TEST_DIR/standby.log")"
wait_node_state h1 UP 20 && ok "h1 is UP again" || fail "h1 UP again"
job2=$(submit -w h1 -- /bin/true)
wait_state "$job2" COMPLETED 30 && ok "a job runs on the restarted agent" || fail "job $job2 on h1"

# a request id applied once, across a gschedd restart
held=$(submit --hold -- /bin/true)
theirs=$(as_other gsub --parsable --hold -- /bin/true)
X=0123456789abcdef0123456789abcdef
Y=fedcba9876543210fedcba9876543210
is "$(as_user gp-control priority "$held" -5 "$X")" ok "priority -5 with request id X"
is "$(job_field "$held" spec.priority)" -5 "job $held has priority -5"
is "$(as_user gp-control priority "$held" -10 "$Y")" ok "priority -10 with request id Y"
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
sleep 1
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
wait_until 30 eval 'gstat >/dev/null 2>&1' || diag "gschedd does not answer after its restart"
# raising a priority is refused to a user: applied again, X would be refused; kept, it is "ok"
is "$(as_user gp-control priority "$held" -5 "$X")" ok "X sent again after the restart: the first answer"
is "$(job_field "$held" spec.priority)" -10 "and not applied again (priority still -10)"
is "$(as_user gp-control priority "$held" -5 0000000000000000000000000000abcd | cut -d: -f1)" \
	"permission denied" "the same change under a new id is judged afresh (refused)"
grep -q "request id of uid $(id -u gpool-user) seen before" "$CLUSTER_DIR/sched/gschedd.log" &&
	ok "gschedd logged the retry it answered from its store" ||
	fail "gschedd logged the retry" "$(tail -n 5 "$CLUSTER_DIR/sched/gschedd.log")"

# attack: gpool-other sends gpool-user's id X, on their own job and on gpool-user's: each is
# gpool-other's own request (the id is looked up under their uid), never gpool-user's answer
is "$(as_other gp-control priority "$theirs" -7 "$X")" ok "X from gpool-other on their own job: applied as their request"
is "$(job_field "$theirs" spec.priority)" -7 "their job has priority -7 (not matched to gpool-user's X)"
is "$(as_other gp-control priority "$held" -20 fedcba98765432100123456789abcdef | cut -d: -f1)" \
	"permission denied" "gpool-other changing gpool-user's job is refused"
as_other gp-control priority "$held" -20 "$X" >/dev/null 2>&1
is "$(job_field "$held" spec.priority)" -10 "gpool-other replaying X on gpool-user's job changes nothing"

# the REST API: Idempotency-Key is the request id of a POST
api() {
	local who=$1
	shift
	"as_$who" /usr/bin/python3 "$GPOOL_SRC_DIR/tests/tools/gp-api.py" --url "http://127.0.0.1:$HPORT" "$@" | head -n 1
}
waiting=$(submit -d "afterok:$held" -- /bin/true)
is "$(api user --idempotency-key "hold-$waiting" POST "/api/v1/jobs/$waiting/hold")" 200 "REST hold with Idempotency-Key K1: 200"
is "$(job_field "$waiting" spec.hold)" true "job $waiting is held"
is "$(api user --idempotency-key "release-$waiting" POST "/api/v1/jobs/$waiting/release")" 200 "REST release with K2: 200"
is "$(api user --idempotency-key "hold-$waiting" POST "/api/v1/jobs/$waiting/hold")" 200 "REST hold with K1 again: the first answer (200)"
is "$(job_field "$waiting" spec.hold)" false "and not applied again: job $waiting is not held"
is "$(api other --idempotency-key "hold-$waiting" POST "/api/v1/jobs/$waiting/hold")" 403 "gpool-other with gpool-user's key: their own request, refused (403)"
is "$(api user --idempotency-key "" POST "/api/v1/jobs/$waiting/hold")" 400 "an empty Idempotency-Key: 400"

as_user gcancel "$held" "$waiting" >/dev/null 2>&1
as_other gcancel "$theirs" >/dev/null 2>&1
done_testing
