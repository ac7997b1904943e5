#!/bin/bash
# t0130-cancel: a pending job cancelled never runs; a running job cancelled ends CANCELLED with
# every process of it gone (its children too); another user cannot cancel it.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --kill-grace 2s

# -- a pending (held) job
id=$(submit --hold -- /bin/sh -c "touch $WORK/held-ran")
if [ -n "$id" ]; then
	is "$(job_state "$id")" PENDING "a held job is PENDING"
	like "$(job_field "$id" reason)" 'Held|held|JobHeld' "its reason says it is held"
	out=$(as_user gcancel "$id" 2>&1)
	is "$?" 0 "gcancel of the pending job exits 0"
	check "the pending job is CANCELLED" wait_state "$id" CANCELLED 10
	sleep 2
	[ ! -e "$WORK/held-ran" ] && ok "the cancelled pending job never ran" || fail "the cancelled pending job never ran"
	st=$(job_field "$id" start_time)
	[ -z "$st" ] || [ "${st%.*}" = 0 ] && ok "it has no start time" || fail "it has no start time" "start_time $st"
	out=$(as_user gcancel "$id" 2>&1)
	rc=$?
	diag "gcancel of a finished job: exit $rc: $out"
	is "$(job_state "$id")" CANCELLED "cancelling it again changes nothing"
fi

# -- a running job with a background child
id=$(submit -- /bin/sh -c 'sleep 1001 & sleep 1000')
if [ -n "$id" ] && wait_state "$id" RUNNING 20; then
	ok "the sleeping job runs"
	host=$(job_field "$id" tasks | "$PY" -c 'import sys,json; print(json.loads(sys.stdin.readline())["node"])' 2>/dev/null)
	[ -n "$host" ] || host=$(job_field "$id" nodelist)
	wait_until 5 user_pids_at_least "$host" 2
	pids=$(host_user_pids "$host")
	n=$(echo $pids | wc -w)
	[ "$n" -ge 2 ] && ok "both sleeps run on $host ($n processes of $TEST_USER)" ||
		fail "both sleeps run on $host" "pids: $pids"

	# another user may not cancel it
	out=$(as_other gcancel "$id" 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "gpool-other's gcancel fails (exit $rc)" || fail "gpool-other's gcancel fails" "$out"
	like "$out" '[Pp]ermission|not allowed|not yours|denied|owner' "with a permission error: $out"
	sleep 1
	is "$(job_state "$id")" RUNNING "the job still runs"
	n=$(host_user_pids "$host" | wc -w)
	[ "$n" -ge 2 ] && ok "its processes are untouched" || fail "its processes are untouched"

	# the owner may
	t0=$SECONDS
	out=$(as_user gcancel "$id" 2>&1)
	is "$?" 0 "the owner's gcancel exits 0"
	check "the running job ends CANCELLED" wait_state "$id" CANCELLED 15
	diag "cancel took $((SECONDS - t0)) s"
	if wait_until 10 no_user_pids "$host"; then
		ok "no process of the job is left on $host (the background sleep too)"
	else
		fail "no process of the job is left on $host" "$(ps -o pid,user,args -p "$(host_user_pids "$host" | tr '\n' ',' | sed 's/,$//')" 2>&1)"
	fi
	is "$(cluster_user_pids | wc -w)" 0 "nor on any other host"
else
	fail "the sleeping job runs" "$(job_json "$id")"
fi

# -- cancelling what does not exist, or what is not a job id
out=$(as_user gcancel 999999 2>&1)
[ $? != 0 ] && ok "gcancel of an unknown job fails" || fail "gcancel of an unknown job fails" "$out"
like "$out" 'not found|unknown|no such|invalid' "and says so: $out"

done_testing
