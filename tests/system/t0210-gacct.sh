#!/bin/bash
# t0210-gacct: gacct lists the caller's finished jobs (never a pending one) with their final
# state, exit code, attempt and nodes; -s filters by state, -j and operands by job, -a shows
# every user's while the default hides another user's; --json carries the same fields; a
# bad option exits 2 naming it.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 2

ok_id=$(submit -J acct-ok -- /bin/true)
bad_id=$(submit -J acct-bad -- /bin/sh -c 'exit 3')
held_id=$(submit --hold -J acct-held -- /bin/true)
other_id=$(as_other gsub --parsable -J acct-other -- /bin/true 2>&1)
check "the good job completes" wait_state "$ok_id" COMPLETED 30
check "the failing job fails" wait_state "$bad_id" FAILED 30
check "the other user's job completes" wait_state "$other_id" COMPLETED 30

# the table: one line per finished job of the caller
out=$(as_user gacct 2>&1)
is "$?" 0 "gacct exits 0"
diag "$out"
like "$(head -n 1 <<<"$out")" '^ *JobID +JobName +User +State +ExitCode +Attempts +Start +End' "the table has its header"
line() { awk -v id="$1" '$1 == id' <<<"$out"; }
like "$(line "$ok_id")" "^ *$ok_id +acct-ok +$TEST_USER +COMPLETED +0 +1 " "the good job: COMPLETED, exit 0, attempt 1"
like "$(line "$bad_id")" "^ *$bad_id +acct-bad +$TEST_USER +FAILED +3 +1 " "the failing job: FAILED, exit 3"
like "$(line "$ok_id")" ' gp-h[12]|h[12] *$' "the good job names the node it ran on"
is "$(line "$held_id")" "" "the pending job is not listed"
is "$(line "$other_id")" "" "another user's job is not listed"

# filters
out=$(as_user gacct -s F 2>&1)
is "$(awk 'NR > 1 {print $1}' <<<"$out" | tr '\n' ' ')" "$bad_id " "-s F lists only the failed job"
out=$(as_user gacct "$ok_id" 2>&1)
is "$(awk 'NR > 1 {print $1}' <<<"$out" | tr '\n' ' ')" "$ok_id " "a job operand lists only that job"
out=$(as_user gacct -a 2>&1)
[ -n "$(line "$other_id")" ] && ok "-a lists the other user's job too" ||
	fail "-a lists the other user's job too" "$out"

# JSON: the same jobs and fields
out=$(as_user gacct --json 2>&1)
is "$?" 0 "gacct --json exits 0"
got=$("$PY" -c '
import json, sys
d = json.load(sys.stdin)
jobs = sorted(d["jobs"], key=lambda j: int(j["id"]))
print(" ".join("%s:%s:%s" % (j["id"], j["state"], j.get("exit_code", 0)) for j in jobs))' <<<"$out" 2>&1)
is "$got" "$ok_id:COMPLETED:0 $bad_id:FAILED:3" "--json lists the same two jobs, states and exit codes"

# bad input
out=$(as_user gacct -s RUNNINGX 2>&1)
is "$?" 2 "an unknown state exits 2"
like "$out" "^gacct: .*RUNNINGX" "and names it: $out"
out=$(as_user gacct -S 2026-12-02 -E 2026-12-01 2>&1)
is "$?" 2 "a start after the end exits 2"
like "$out" '^gacct: the start time is after the end time$' "and says so"

as_user gcancel "$held_id" >/dev/null 2>&1
done_testing
