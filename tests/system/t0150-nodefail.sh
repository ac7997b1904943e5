#!/bin/bash
# t0150-nodefail: an agent killed with SIGKILL while its job runs: the node goes DOWN after
# node_timeout (4 s here), the job ends NODE_FAIL, the other nodes keep taking jobs; the agent
# started again brings the node back and what was left of the job is cleaned away.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --node-timeout 4s --heartbeat-interval 1s

id=$(submit --no-requeue -w h2 -- /bin/sleep 1000)
if [ -z "$id" ] || ! wait_state "$id" RUNNING 20; then
	fail "a job runs on h2" "$(job_json "$id")"
	done_testing
fi
ok "a job runs on h2"
is "$(job_field "$id" nodelist)" h2 "gstat places it on h2"
wait_until 5 user_pids_at_least h2 1

"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h2 KILL
t0=$SECONDS
if wait_node_state h2 DOWN 15; then
	dt=$((SECONDS - t0))
	ok "h2 is DOWN ${dt} s after its agent died"
	[ $dt -ge 2 ] && [ $dt -le 10 ] && ok "within node_timeout's bound (4 s, 1 s heartbeats)" ||
		fail "DOWN within node_timeout's bound" "$dt s"
	diag "gnodes: $(gnodes 2>&1 | tr '\n' '|')"
else
	fail "h2 goes DOWN after its agent died" "$(gnodes 2>&1)"
fi
if wait_state "$id" NODE_FAIL 10; then
	ok "the job on h2 ends NODE_FAIL"
else
	fail "the job on h2 ends NODE_FAIL" "$(job_json "$id")"
fi
is "$(node_state h1)" UP "h1 is still UP"
is "$(node_state h3)" UP "h3 is still UP"

# the rest of the cluster keeps working
id2=$(submit -n 2 -N 2 -- /bin/hostname)
if [ -n "$id2" ] && wait_state "$id2" COMPLETED 20; then
	ok "a 2-node job runs on the two live nodes"
	nl=$(job_field "$id2" nodelist)
	unlike "$nl" 'h2' "it was not placed on the dead h2 ($nl)"
else
	fail "a 2-node job runs on the two live nodes" "$(job_json "$id2")"
fi
id3=$(submit -n 3 -N 3 -- /bin/true)
if [ -n "$id3" ]; then
	sleep 2
	is "$(job_state "$id3")" PENDING "a 3-node job waits while h2 is down"
	diag "its reason: $(job_field "$id3" reason)"
fi

# the agent comes back: the node is UP again and the orphaned task is killed
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h2
if wait_node_state h2 UP 15; then
	ok "h2 is UP again after its agent restarted"
	if wait_until 15 no_user_pids h2; then
		ok "the task of the NODE_FAIL job is gone from h2"
	else
		fail "the task of the NODE_FAIL job is gone from h2" "$(ps -o pid,user,args -p "$(host_user_pids h2 | paste -sd,)" 2>&1)"
	fi
	[ -n "${id3:-}" ] && check "the waiting 3-node job now runs to the end" wait_state "$id3" COMPLETED 20
	is "$(job_state "$id")" NODE_FAIL "the NODE_FAIL job stays NODE_FAIL"
else
	fail "h2 is UP again after its agent restarted" "$(gnodes 2>&1)"
fi

done_testing
