#!/bin/bash
# t1310-alloc-steps: gsub --alloc -N 2 holds two nodes and runs a command where it was typed
# with GPOOL_JOB_ID and GPOOL_NODELIST set; inside it `grun -n 2` starts job steps on the
# allocation's nodes, each a job of its own with its own id, output, exit code and accounting
# (gstat/gacct name its allocation in step_of); a step that fails does not stop the next one;
# when the command ends the allocation is given back. A batch job starts a step in itself the
# same way. gpool-other cannot start a step in someone's allocation; grun outside any job is a
# usage error; an allocation that reaches its time limit ends its running step with it and
# revokes the local command (SIGHUP to its process group, as salloc does);
# grun --pty runs a step on a terminal.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2
need_bins grun gacct glogs

# ---- an allocation with three steps -----------------------------------------------------------
cat >"$WORK/inside.sh" <<'SH'
#!/bin/sh
echo "alloc=$GPOOL_JOB_ID nodes=$GPOOL_NODELIST"
grun -n 2 -- sh -c 'echo "step1 rank=$RANK host=$(hostname)"'
echo "rc1=$?"
grun -- sh -c 'echo "step2 rank=$RANK"; exit 3'
echo "rc2=$?"
grun -- sh -c 'echo "step3 runs"'
echo "rc3=$?"
grun --pty -- sh -c 'echo "pty-step $(tty)"; exit 6' </dev/null
echo "rcp=$?"
while [ ! -e "$WORK/go" ]; do sleep 0.2; done
exit 4
SH
chmod 0755 "$WORK/inside.sh"
(as_user env WORK="$WORK" gsub --alloc -N 2 -- "$WORK/inside.sh" >"$WORK/a.out" 2>"$WORK/a.err"
	echo $? >"$WORK/a.rc") &
wait_until 60 grep -q "rcp=" "$WORK/a.out"
out=$(cat "$WORK/a.out")
diag "$(cat "$WORK/a.err")"
ALLOC=$(sed -n 's/^alloc=\([0-9]*\) .*/\1/p' <<<"$out")
like "$out" "^alloc=[0-9]+ nodes=h[12],h[12]" "the command runs here with the allocation's id and nodes"
is "$(job_state "$ALLOC")" RUNNING "the allocation runs while its command does"
like "$(cat "$WORK/a.err")" "allocation $ALLOC granted on" "gsub says the allocation is granted"
mapfile -t STEPS < <(sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' "$WORK/a.err")
is "${#STEPS[@]}" 4 "four steps, each with an id of its own (${STEPS[*]})"
like "$out" "step1 rank=0 host=h[12]" "step 1's rank 0 ran"
like "$out" "step1 rank=1 host=h[12]" "step 1's rank 1 ran"
h0=$(sed -n 's/^step1 rank=0 host=//p' <<<"$out")
h1=$(sed -n 's/^step1 rank=1 host=//p' <<<"$out")
isnt=$([ -n "$h0" ] && [ "$h0" != "$h1" ] && echo yes)
is "$isnt" yes "step 1's two ranks ran on the allocation's two nodes ($h0, $h1)"
like "$out" "rc1=0" "grun exits with step 1's code (0)"
like "$out" "rc2=3" "grun exits with the failed step 2's code (3)"
like "$out" "step3 runs" "the step after a failed one still runs"
like "$out" "rc3=0" "and grun exits 0 for it"
like "$(tr -d '\r' <<<"$out")" "pty-step /dev/pts/[0-9]+" "grun --pty runs a step on a terminal"
like "$out" "rcp=6" "and exits with its code (6)"

# ---- a stranger, and grun outside any job ---------------------------------------------------------
out=$(as_other grun --jobid "$ALLOC" -- /bin/true 2>&1)
rc=$?
like "$out" "not yours" "gpool-other cannot start a step in the allocation ($out)"
is "$rc" 1 "and grun fails"
out=$(as_user env -u GPOOL_JOB_ID grun -- /bin/true 2>&1)
is "$?" 2 "grun outside any job is a usage error ($out)"
touch "$WORK/go"
wait_until 30 test -s "$WORK/a.rc"
is "$(cat "$WORK/a.rc")" 4 "gsub --alloc exits with its command's status (4)"
like "$(cat "$WORK/a.err")" "allocation $ALLOC released" "and gives the allocation back"
wait_final "$ALLOC" 20 >/dev/null
is "$(job_state "$ALLOC")" CANCELLED "the allocation ended (CANCELLED) when its command did"
out=$(as_user grun --jobid "$ALLOC" -- /bin/true 2>&1)
like "$out" "not running" "no step starts in an allocation that ended ($out)"

# ---- accounting: each step its own record ----------------------------------------------------------
S1=${STEPS[0]} S2=${STEPS[1]} S3=${STEPS[2]}
is "$(job_state "$S1")/$(job_field "$S1" exit_code)" "COMPLETED/0" "step 1: COMPLETED, exit code 0"
is "$(job_state "$S2")/$(job_field "$S2" exit_code)" "FAILED/3" "step 2: FAILED, exit code 3"
is "$(job_state "$S3")/$(job_field "$S3" exit_code)" "COMPLETED/0" "step 3: COMPLETED, exit code 0"
is "$(job_field "$S2" step_of)" "$ALLOC" "gstat names the step's allocation (step_of)"
acct=$(as_user gacct -j "$S1,$S2,$S3" 2>&1)
diag "$acct"
for s in "$S1" "$S2" "$S3"; do
	like "$acct" "(^|[^0-9])$s([^0-9]|$)" "gacct has a record of step $s"
done
l1=$(as_user glogs "$S1" 2>&1)
l3=$(as_user glogs "$S3" 2>&1)
like "$l1" "step1 rank=1" "step 1's output is its own (glogs)"
unlike "$l1" "step3" "step 1's output has nothing of step 3"
is "$l3" "step3 runs" "step 3's output is its own"

# ---- a step in a batch job ---------------------------------------------------------------------
B=$(submit -N 1 -- /bin/sh -c 'grun -- sh -c "echo in-batch-step \$GPOOL_JOB_ID"; echo "grun=$?"')
wait_final "$B" 60 >/dev/null
out=$(as_user glogs "$B" 2>&1)
like "$out" "in-batch-step [0-9]+" "a batch job starts a step in itself ($out)"
like "$out" "grun=0" "and grun returns its code there"

# ---- an allocation that reaches its time limit takes its step with it ----------------------------
out=$(as_user gsub --alloc -t 8s -- /bin/sh -c 'grun -- sleep 120; echo "step-ended=$?"' 2>&1)
diag "$out"
TS=$(sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' <<<"$out")
TA=$(sed -n 's/^gsub: job \([0-9]*\) submitted/\1/p' <<<"$out")
is "$(job_state "$TA")" TIMEOUT "the allocation ended at its time limit"
wait_final "$TS" 20 >/dev/null
is "$(job_state "$TS")" CANCELLED "its running step ended with it (CANCELLED)"

# ---- and revokes the command gsub runs here, with everything it started -------------------------
t0=$(date +%s)
out=$(as_user gsub --alloc -t 6s -- /bin/sh -c 'sleep 301 & wait; echo not-reached' 2>&1)
rc=$?
took=$(($(date +%s) - t0))
diag "$out"
like "$out" "gsub: allocation [0-9]+ revoked: TIMEOUT" "gsub says the allocation was revoked at its time limit"
unlike "$out" "not-reached" "the local command was hung up"
is "$rc" 129 "gsub exits with the command's status (SIGHUP: 129)"
check "within seconds of the limit (${took} s)" test "$took" -lt 30
check "nothing it started is left (sleep 301)" wait_until 5 sh -c '! pgrep -u gpool-user -f "sleep 301" >/dev/null'

done_testing
