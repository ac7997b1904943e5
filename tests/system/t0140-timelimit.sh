#!/bin/bash
# t0140-timelimit: a job over its time limit ends TIMEOUT within a bound and leaves no process;
# one that ignores SIGTERM is killed with SIGKILL after the grace period (2 s here).
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --kill-grace 2s
# the test user's processes on this cluster's hosts (other slots run the same user's jobs)
no_user_sleep() { ! cluster_pgrep -u "$TEST_USER" -x sleep >/dev/null; }
no_user_process() { ! cluster_pgrep -u "$TEST_USER" >/dev/null; }

# elapsed END - START of a job, in whole seconds (rounded)
elapsed() {
	"$PY" -c 'import sys; s, e = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print(round(e - s) if s and e else -1)' \
		"$(job_field "$1" start_time)" "$(job_field "$1" end_time)"
}

# -- sleep 100 with a 3 s limit
id=$(submit -t 0:03 -- /bin/sleep 100)
if [ -n "$id" ]; then
	is "$(job_field "$id" spec.time_limit_sec)" 3 "-t 0:03 is a 3 s limit"
	wait_state "$id" RUNNING 20
	t0=$SECONDS
	if wait_state "$id" TIMEOUT 15; then
		ok "the job ends TIMEOUT ($((SECONDS - t0)) s after it was seen running)"
		e=$(elapsed "$id")
		[ "$e" -ge 3 ] && [ "$e" -le 8 ] && ok "it ran ${e} s (3 s limit, 2 s grace at most)" ||
			fail "it ran between 3 and 8 s" "ran $e s"
	else
		fail "the job ends TIMEOUT" "$(job_json "$id")"
	fi
	check "no process of it is left" wait_until 5 no_user_sleep
	out=$(as_user gsub --wait -t 0:02 -- /bin/sleep 50 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "gsub --wait of a timed-out job exits non-zero ($rc)" || fail "gsub --wait of a timed-out job exits non-zero"
	like "$out" 'TIMEOUT' "and says it ended TIMEOUT"
fi

# -- a job that ignores SIGTERM: SIGKILL follows after the grace
id=$(submit -t 0:03 -- /bin/sh -c 'trap "echo got-term" TERM; echo started; while :; do sleep 0.2; done')
if [ -n "$id" ]; then
	if wait_state "$id" TIMEOUT 25; then
		ok "the job ignoring SIGTERM ends TIMEOUT"
		e=$(elapsed "$id")
		[ "$e" -ge 4 ] && [ "$e" -le 10 ] && ok "it was killed after the grace (ran $e s: 3 s + 2 s grace)" ||
			fail "it was killed after the grace" "ran $e s"
		out=$(as_user glogs "$id" 2>&1)
		like "$out" '^got-term$' "it got SIGTERM first"
	else
		fail "the job ignoring SIGTERM ends TIMEOUT" "$(job_json "$id")"
	fi
	check "no process of it is left anywhere" wait_until 5 no_user_process
fi

# -- a malformed limit is refused before anything is submitted
out=$(as_user gsub -t 3x -- /bin/true 2>&1)
[ $? != 0 ] && ok "-t 3x is refused" || fail "-t 3x is refused" "$out"
like "$out" "invalid time limit '3x'|'3x'" "with a message naming '3x'"

done_testing
