#!/bin/bash
# t1241-limits-begin-exclusive: user_limits (applied by SIGHUP) keep gpool-user to one running
# job while gpool-other's run: the second job stays PENDING with UserLimit in gstat and starts
# when the first ends; gpool limits shows the limit and what the user holds. gsub --begin=now+6
# waits with BeginTime and starts no sooner; a time that does not parse is refused.
# gsub --exclusive takes an idle node and no other job is placed beside it while it runs.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2
need_bins gpool

spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf
printf 'user_limits = %s:jobs=1\n' "$TEST_USER" >>"$conf"
kill -HUP "$spid"
reloaded() { grep -q "reload: user_limits = '$TEST_USER:jobs=1'" "$slog"; }
check "gschedd applies user_limits on SIGHUP" wait_until 10 reloaded

# --- a limit holds
j1=$(submit -o /dev/null -- sleep 6)
j2=$(submit -o /dev/null -- sleep 1)
o1=$(as_other gsub --parsable -o /dev/null -- sleep 3)
check "gpool-user's first job runs" wait_state "$j1" RUNNING 15
check "gpool-other's job runs beside it" wait_state "$o1" RUNNING 15
limited() { [[ $(job_field "$j2" reason) == UserLimit* ]]; }
check "the second job waits with UserLimit" wait_until 10 limited
diag "its reason: $(job_field "$j2" reason)"
is "$(job_state "$j2")" PENDING "it is still PENDING while the first runs"
like "$(as_user gstat 2>&1)" "UserLimit" "gstat shows the reason"
lim=$(as_other gpool limits 2>&1)
diag "$lim"
like "$(echo "$lim" | grep "^$TEST_USER ")" "^$TEST_USER +1 +- +- +1 +1 +0" \
	"gpool limits: gpool-user at most 1 job, holding 1 job and 1 CPU"
check "the second job starts once the first has ended" wait_state "$j2" RUNNING\|COMPLETED 20
s1=$(job_field "$j1" end_time) s2=$(job_field "$j2" start_time)
check "and not before ($s2 >= $s1)" "$PY" -c "import sys; sys.exit(0 if $s2 + 0.01 >= $s1 else 1)"
printf 'user_limits =\n' >>"$conf"
kill -HUP "$spid"

# --- --begin
t0=$(date +%s.%N)
jb=$(submit --begin=now+6 -o /dev/null -- true)
is "$?" 0 "gsub --begin=now+6 is accepted"
is "$(job_state "$jb")" PENDING "the job waits"
begin_reason() { [ "$(job_field "$jb" reason)" = BeginTime ]; }
check "with reason BeginTime" wait_until 5 begin_reason
check "it completes after its begin time" wait_state "$jb" COMPLETED 30
sb=$(job_field "$jb" start_time)
check "it started no sooner than 6 s after submission ($sb - $t0)" \
	"$PY" -c "import sys; sys.exit(0 if $sb >= $t0 + 5.9 else 1)"
if out=$(as_user gsub --begin=tomorrowish -- true 2>&1); then
	fail "gsub refuses --begin=tomorrowish" "$out"
else
	like "$out" "invalid time 'tomorrowish'" "gsub refuses a time that does not parse: $out"
fi

# --- --exclusive: h1 holds one of gpool-other's jobs; the exclusive job gets h2, alone
ob=$(as_other gsub --parsable -w h1 -o /dev/null -- sleep 30)
check "gpool-other's job runs on h1" wait_state "$ob" RUNNING 15
jx=$(submit --exclusive -o /dev/null -- sleep 30)
check "the --exclusive job runs" wait_state "$jx" RUNNING 15
is "$(job_field "$jx" nodelist)" h2 "on the idle node h2"
n1=$(as_other gsub --parsable -o /dev/null -- sleep 30)
check "a one-CPU job runs beside it" wait_state "$n1" RUNNING 15
is "$(job_field "$n1" nodelist)" h1 "on h1, not on the exclusive job's node"
n2=$(as_other gsub --parsable -o /dev/null -- sleep 30)
sleep 3
is "$(job_state "$n2")" PENDING "another one-CPU job waits: h1 is full and h2 is the exclusive job's"
diag "its reason: $(job_field "$n2" reason)"
as_user gcancel "$jx"
check "once the exclusive job is gone it runs on h2" wait_state "$n2" RUNNING 20
is "$(job_field "$n2" nodelist)" h2 "on h2"
as_other gcancel "$ob" "$n1" "$n2"
done_testing
