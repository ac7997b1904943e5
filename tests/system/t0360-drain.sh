#!/bin/bash
# t0360-drain: `gnodes drain NODE --reason ...` lets the node's running job finish and keeps new
# jobs off it; `gnodes resume` brings it back; one card drained keeps card jobs off that card,
# and stays drained, with its reason, when h1's agent restarts and when gschedd restarts; so
# does a whole node's drain over a restart of gschedd.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2 --fake-cards "h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W;h2=nvidia:GeForce RTX 3060:12GiB:8.6:170W"

id=$(submit -w h2 -- sleep 4)
wait_state "$id" RUNNING 20 >/dev/null
out=$(gnodes drain h2 --reason "fan replacement" 2>&1)
is "$?" 0 "gnodes drain h2 succeeds ($out)"
is "$(node_state h2)" DRAINED "h2 shows DRAINED"
like "$(gnodes 2>&1 | grep h2)" 'fan replacement' "with its reason"
if out=$(as_user gnodes drain h1 --reason x 2>&1); then
	fail "a user may not drain a node" "$out"
else
	ok "a user may not drain a node ($out)"
fi
check "the running job on h2 finishes normally" wait_state "$id" COMPLETED 20
n2=$(submit -w h2 -- true)
sleep 2
is "$(job_state "$n2")" PENDING "a job that must run on h2 waits while h2 is drained"
like "$(job_field "$n2" reason)" 'ReqNodeNotAvail' "reason: $(job_field "$n2" reason)"
n1=$(submit -N 1 -- hostname)
wait_state "$n1" COMPLETED 20 >/dev/null
is "$(glogs "$n1")" h1 "other jobs go to h1"
gnodes resume h2 >/dev/null
is "$(node_state h2)" UP "gnodes resume: h2 is UP"
check "the waiting job now runs on h2" wait_state "$n2" COMPLETED 20

# one card: drain h1's card, a card job goes to h2
gnodes drain h1:0 --reason "artifacts" >/dev/null
like "$(gnodes -G 2>&1 | grep '^h1')" 'drained' "gnodes -G shows h1's card drained"
c=$(submit --gpus-per-task 1 -- hostname)
wait_state "$c" COMPLETED 20 >/dev/null
is "$(glogs "$c")" h2 "a card job avoids the drained card"

# the card's state is the scheduler's: an agent's new registration does not reset it ...
registrations() { grep -c 'node h1 registered' "$CLUSTER_DIR/sched/gschedd.log"; }
before=$(registrations)
registered_again() { [ "$(registrations)" -gt "$before" ]; }
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h1
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h1
check "h1's agent registers again" wait_until 20 registered_again
like "$(gnodes -G 2>&1 | grep '^h1')" 'drained +artifacts' "after h1's agent restarted its card is still drained, with its reason"
# ... and neither does a restart of gschedd (jobs.db keeps it), nor of a whole node's drain
gnodes drain h2 --reason "psu swap" >/dev/null
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
check "gschedd answers again" wait_until 30 eval 'gnodes >/dev/null 2>&1'
check "h1 registers with the new gschedd" wait_node_state h1 UP 30
check "h2 is still DRAINED after gschedd's restart" wait_node_state h2 DRAINED 30
like "$(gnodes 2>&1 | grep h2)" 'psu swap' "with its reason"
n3=$(submit -w h2 -- true)
sleep 2
is "$(job_state "$n3")" PENDING "a job that must run on h2 still waits"
gnodes resume h2 >/dev/null
check "resumed, it runs there" wait_state "$n3" COMPLETED 20
like "$(gnodes -G 2>&1 | grep '^h1')" 'drained +artifacts' "after gschedd restarted h1's card is still drained, with its reason"
c=$(submit --gpus-per-task 1 -- hostname)
wait_state "$c" COMPLETED 20 >/dev/null
is "$(glogs "$c")" h2 "a card job still avoids it"
gnodes resume h1:0 >/dev/null
like "$(gnodes -G 2>&1 | grep '^h1')" ' up ' "resume: the card is up again"

done_testing
