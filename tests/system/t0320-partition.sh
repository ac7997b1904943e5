#!/bin/bash
# t0320-partition: a 2-node job (12 s of work) runs; one of its hosts loses its link
# (`ip link set gpv-hN down`, the host's veth on the bridge). The node goes DOWN after
# node_timeout (6 s), the job is REQUEUED and completes on the two other hosts in attempt 2;
# the partitioned agent's lease (node_timeout - 2 heartbeats = 4 s) kills attempt 1 before
# attempt 2 starts. When the link comes back the node is UP again with nothing of attempt 1
# left. Marker lines as in t0300: attempts of the job never overlap, none runs after another
# completed.
# timeout: 110
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --cpus 4 --node-timeout 6s --heartbeat-interval 1s

marker_setup

id=$(submit -N 2 -n 2 -J part -- /bin/sh "$WORK/task.sh" 12)
echo "$id" >"$WORK/ids"
if [ -z "$id" ] || ! wait_state "$id" RUNNING 20; then
	fail "a 2-node job runs" "$(job_json "$id")"
	done_testing
fi
starts() { [ "$(grep -c "^start $id $1 " "$MARK")" -ge 2 ]; }
check "a 2-node job runs, both ranks started" wait_until 10 starts 1
nl=$(job_field "$id" nodelist)
victim=$(tr ',' '\n' <<<"$nl" | tail -n 1)
victim=${victim//[^a-z0-9]/}
diag "nodelist $nl; cutting $victim"
like "$victim" '^h[0-9]+$' "the job's second host is known ($victim)"
veth=$(slot_veth "$victim")
ip link show "$veth" >/dev/null 2>&1 && ok "$victim's veth is $veth" || fail "$victim's veth is $veth" "$(ip -o link | grep gpv)"
at_cleanup "ip link set $veth up 2>/dev/null"
sleep 2

t_cut=$(date +%s.%N)
ip link set "$veth" down
ok "the link of $victim is cut"
if wait_node_state "$victim" DOWN 15; then
	t_down=$(date +%s.%N)
	ok "$victim is DOWN $("$PY" -c "print(round($t_down - $t_cut, 1))") s after the cut (node_timeout 6 s)"
else
	fail "$victim goes DOWN" "$(gnodes 2>&1)"
fi
att2() { [ "$(job_field "$id" attempt)" -ge 2 ] && [ "$(job_state "$id")" = RUNNING ]; }
if wait_until 20 att2; then
	t_req=$(date +%s.%N)
	ok "the job runs again in attempt $(job_field "$id" attempt), $("$PY" -c "print(round($t_req - $t_cut, 1))") s after the cut"
	nl2=$(job_field "$id" nodelist)
	unlike "$nl2" "$victim\\b" "not on the partitioned $victim ($nl2)"
else
	fail "the job is requeued and runs again" "$(job_json "$id")"
fi
# the partitioned host, still cut off: its lease must have ended attempt 1 there
left=$(host_user_pids "$victim" | wc -w)
is "$left" 0 "attempt 1 no longer runs on the partitioned $victim (its lease ended it)"
sleep 3
ip link set "$veth" up
t_up=$(date +%s.%N)
ok "the link of $victim is back"
if wait_node_state "$victim" UP 20; then
	ok "$victim is UP again $("$PY" -c "print(round($(date +%s.%N) - $t_up, 1))") s after the link came back"
else
	fail "$victim is UP again" "$(gnodes 2>&1)"
fi
check "no stale task of attempt 1 is left on $victim" wait_until 10 no_user_pids "$victim"
if wait_state "$id" COMPLETED 30; then
	ok "the job COMPLETED in attempt $(job_field "$id" attempt), $("$PY" -c "print(round($(date +%s.%N) - $t_cut, 1))") s after the cut"
else
	fail "the job COMPLETED" "$(job_json "$id")"
fi
sleep 1
res=$(analyze "$WORK/ids")
diag "$res"
diag "marker: $(awk '$1 != "tick"' "$MARK" | tr '\n' '|')"
diag "last tick of attempt 1: $(awk -v j="$id" '$2 == j && $3 == 1 {t = ($1 == "run") ? $6 : $5} END {print t}' "$MARK"); first start of attempt 2: $(awk -v j="$id" '$1 == "start" && $2 == j && $3 == 2 {print $5; exit}' "$MARK")"
line=$(head -n 1 <<<"$res")
like "$line" '^accepted 1 lost 0 repeated 0 overlapping 0 notfinal 0 ' "marker: not lost, not repeated, attempts never overlap"
grep -i "$victim" "$CLUSTER_DIR/sched/gschedd.log" | grep -i 'down\|requeue\|fenc\|stale\|kill' | tail -n 5 | sed 's/^/# sched: /'
grep -i 'lease\|fenc\|stale\|superseded' "$CLUSTER_DIR/$victim/gworkerd.log" | tail -n 5 | sed 's/^/# agent: /'

done_testing
