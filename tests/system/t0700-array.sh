#!/bin/bash
# t0700-array: job arrays. `gsub --array` makes one task per index (0-9, steps, lists), each a
# job with consecutive ids whose environment names its array and index (GPOOL_ARRAY_* and the
# SLURM_ARRAY_* aliases) and whose output pattern expands %A and %a; a %N limit caps the tasks
# running at once; gstat collapses pending tasks into one row (12_[0-99]); gcancel takes 12_7,
# 12_[3-5] and 12 (the whole array); gacct names tasks 12_7; bad --array values are refused.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2

# -- ten tasks, their variables
out=$(as_user gsub --array=0-9 -J arr -o 'arr-%A_%a.out' -- /bin/sh -c \
	'echo "$GPOOL_ARRAY_JOB_ID $GPOOL_ARRAY_TASK_ID $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $GPOOL_JOB_ID"' 2>&1)
like "$out" '^Submitted array job [0-9]+ \(10 tasks, job ids [0-9]+-[0-9]+\)$' "gsub --array=0-9 says the array's id and tasks"
A=$(sed -n 's/^Submitted array job \([0-9]*\) .*/\1/p' <<<"$out")
if [ -n "$A" ]; then
	last=$((A + 9))
	check "the last task completes" wait_state "$last" COMPLETED 60
	good=0
	for i in $(seq 0 9); do
		id=$((A + i))
		wait_state "$id" COMPLETED 30 2>/dev/null || true
		got=$(as_user glogs "$id" 2>&1)
		[ "$got" = "$A $i $A $i 10 0 9 $id" ] && good=$((good + 1)) || diag "task $i (job $id): '$got'"
	done
	is "$good" 10 "each task sees its array id, index, count, min and max (GPOOL_ and SLURM_ names)"
	is "$(job_field "$((A + 7))" array_job_id)" "$A" "gstat --json names the task's array"
	is "$(job_field "$((A + 7))" array_task_id)" 7 "gstat --json names the task's index"
	like "$(gacct -j "$((A + 7))" 2>&1)" "(^|[^0-9])${A}_7 " "gacct names the task ${A}_7"
	like "$(gstat -l -j "$((A + 3))" 2>&1)" "ArrayJobId=$A ArrayTaskId=3" "gstat -l shows ArrayJobId and ArrayTaskId"
	f="$CLUSTER_DIR/sched/state/output/$((A + 4))/arr-${A}_4.out"
	check "the output pattern arr-%A_%a.out became arr-${A}_4.out" test -f "$f"
fi

# -- steps and lists
S=$(submit --array=0-20:5 -- /bin/sh -c 'echo $GPOOL_ARRAY_TASK_ID')
if [ -n "$S" ]; then
	# every task, not only the last: they run side by side and end in any order
	for i in 0 1 2 3 4; do
		check "the stepped array's task $((S + i)) completes" wait_state "$((S + i))" COMPLETED 60
	done
	got=""
	for i in 0 1 2 3 4; do got="$got $(as_user glogs "$((S + i))" 2>&1)"; done
	is "$got" " 0 5 10 15 20" "--array=0-20:5 runs indices 0 5 10 15 20"
	check "no sixth task" eval "! gstat -a -j $((S + 5)) 2>/dev/null | grep -q '${S}_'"
fi
L=$(submit --array=7,1,3 -- /bin/true)
[ -n "$L" ] && is "$(job_field "$L" array_task_id) $(job_field "$((L + 2))" array_task_id)" "7 3" \
	"--array=7,1,3 gives its tasks the listed indices in order"

# -- %2: at most two running at once
P=$(submit --array=0-5%2 -- /bin/sleep 2)
if [ -n "$P" ]; then
	most=0 limited=0
	for _ in $(seq 1 40); do
		n=$(gstat -t R 2>/dev/null | grep -c " ${P}_")
		[ "$n" -gt "$most" ] && most=$n
		gstat 2>/dev/null | grep -q "${P}_.*JobArrayTaskLimit" && limited=1
		[ "$(job_state "$((P + 5))")" = COMPLETED ] && break
		sleep 0.3
	done
	[ "$most" -le 2 ] && [ "$most" -ge 1 ] && ok "--array=0-5%2 runs at most 2 tasks at once (saw $most)" ||
		fail "--array=0-5%2 runs at most 2 tasks at once" "saw $most running"
	is "$limited" 1 "the waiting tasks' reason is JobArrayTaskLimit"
	check "all six complete" wait_state "$((P + 5))" COMPLETED 60
fi

# -- pending tasks collapse; cancelling tasks
H=$(submit --hold --array=0-99 -- /bin/true)
if [ -n "$H" ]; then
	t=$(gstat 2>&1)
	like "$t" "(^|[ ])${H}_\[0-99\] " "gstat shows 100 held tasks as one row ${H}_[0-99]"
	is "$(grep -c "${H}_" <<<"$t")" 1 "only one row for them"
	check "gcancel ${H}_[3-5] succeeds" as_user gcancel "${H}_[3-5]"
	check "gcancel ${H}_7 succeeds" as_user gcancel "${H}_7"
	is "$(job_state "$((H + 4))")" CANCELLED "task 4 was cancelled"
	is "$(job_state "$((H + 8))")" PENDING "task 8 still pends"
	like "$(gstat 2>&1)" "${H}_\[0-2,6,8-99\] " "gstat shows the rest as ${H}_[0-2,6,8-99]"
	out=$(as_user gcancel "${H}_[3-5]" 2>&1)
	[ $? != 0 ] && ok "cancelling the same tasks again fails ($out)" || fail "cancelling the same tasks again fails"
	check "gcancel $H cancels the whole array" as_user gcancel "$H"
	is "$(job_state "$((H + 99))")" CANCELLED "the last task is cancelled"
	is "$(gstat 2>&1 | grep -c "${H}_")" 0 "nothing of the array is left in the queue"
fi

# -- gsub --wait on an array: counts, then the highest exit code (not a terminal: plain lines)
out=$(as_user gsub --wait --array=0-3 -- /bin/sh -c 'exit $((GPOOL_ARRAY_TASK_ID == 2 ? 5 : 0))' 2>&1)
rc=$?
is "$rc" 5 "gsub --wait on an array exits with the highest task exit code"
like "$out" "gsub: array [0-9]+: 4 done \(1 not ok\), 0 running, 0 pending, " "it ends with the done / running / pending counts"

# -- bad values
for bad in 5-3 0-9:0 1,1 x 0-100000 '0-9%0' '1-3,2'; do
	out=$(as_user gsub --array="$bad" -- /bin/true 2>&1)
	rc=$?
	[ $rc = 2 ] && like "$out" "array '$(sed 's/[][%]/./g' <<<"$bad")'" "gsub --array=$bad is refused (exit 2)" ||
		fail "gsub --array=$bad is refused (exit 2)" "exit $rc: $out"
done
out=$(as_user gcancel '12_[' 2>&1)
is "$?" 2 "gcancel '12_[' is a usage error"
done_testing
