#!/bin/bash
# t0310-agent-kill: `kill -9 gworkerd` on h2 while four of its tasks run (20 s each), the agent
# started again 3 s later: the tasks live on in their supervisors, the new agent re-adopts them
# and they finish COMPLETED in their first attempt: none requeued, none run twice, none lost.
# Marker lines as in t0300 (start/tick/run per attempt, in the shared work directory).
# timeout: 90
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 8 --node-timeout 20s --heartbeat-interval 1s

marker_setup

ids=()
for i in 1 2 3 4; do
	# 20 s: the checks between the kill and "still RUNNING" took over 7 s on a busy machine,
	# and 8 s tasks had COMPLETED by then
	id=$(submit -w h2 -J ak$i -- /bin/sh "$WORK/task.sh" 20) && ids+=("$id")
done
printf '%s\n' "${ids[@]}" >"$WORK/ids"
is "${#ids[@]}" 4 "four jobs submitted to h2"
allrun() { local j; for j in "${ids[@]}"; do [ "$(job_state "$j")" = RUNNING ] || return 1; done; }
started() { [ "$(grep -c '^start ' "$MARK")" -ge 4 ]; }
check "all four run on h2" wait_until 20 allrun
check "and their tasks have started" wait_until 10 started
sleep 1
before=$(host_user_pids h2 | wc -w)

t_kill=$(date +%s.%N)
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h2 KILL
ok "h2's gworkerd killed with SIGKILL ($before task processes on h2)"
sleep 1
after=$(host_user_pids h2 | wc -w)
[ "$after" -ge 4 ] && ok "the tasks outlive their agent ($after processes)" ||
	fail "the tasks outlive their agent" "before $before, after $after"
sleep 2
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h2
ok "h2's gworkerd started again"
is "$(node_state h2)" UP "h2 stays UP (node_timeout 20 s)"
states=""
for j in "${ids[@]}"; do states+="$(job_state "$j") "; done
like "$states" '^(RUNNING )+$' "the jobs are still RUNNING after the restart ($states)"

alldone() { local j; for j in "${ids[@]}"; do [ "$(job_state "$j")" = COMPLETED ] || return 1; done; }
if wait_until 30 alldone; then
	t_done=$(date +%s.%N)
	ok "all four COMPLETED, $("$PY" -c "print(round($t_done - $t_kill, 1))") s after the kill (tasks had ~19 s left)"
else
	s=""; for j in "${ids[@]}"; do s+="$j:$(job_state "$j")/$(job_field "$j" reason) "; done
	fail "all four COMPLETED after the agent restart" "$s"
fi
att=""
for j in "${ids[@]}"; do att+="$(job_field "$j" attempt) "; done
like "$att" '^(1 )+$' "each in its first attempt, not requeued (attempts: $att)"
sleep 1
res=$(analyze "$WORK/ids")
diag "$res"
line=$(head -n 1 <<<"$res")
like "$line" '^accepted 4 lost 0 repeated 0 overlapping 0 notfinal 0 .* multi-attempt 0$' "marker: none lost, repeated, overlapping or run in a second attempt"
grep -i 'adopt\|held\|re-adopt' "$CLUSTER_DIR/h2/gworkerd.log" | tail -n 4 | sed 's/^/# agent: /'
check "no task process is left on h2" wait_until 10 no_user_pids h2

done_testing
