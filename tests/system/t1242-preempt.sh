#!/bin/bash
# t1242-preempt: fair-share preemption. gpool-other fills the one host (2 CPUs) with two
# requeueable jobs that take SIGUSR1 as their checkpoint signal (--signal=USR1@5); gpool-user,
# with no usage, submits a job. With preempt off (the default) it waits. With preempt = true and
# preempt_grace = 2s (SIGHUP) the younger of gpool-other's jobs gets SIGUSR1 first, ends, goes
# back to the queue (max_attempts = 1, yet it is not failed: a preemption is not counted) and
# gpool-user's job runs; the older one is left alone; the preempted job runs again later.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2
spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf
printf 'max_attempts = 1\nfairshare_half_life = 1h\n' >>"$conf"
kill -HUP "$spid"

cat >"$WORK/ckpt.sh" <<'EOS'
#!/bin/bash
# a job that checkpoints on SIGUSR1: notes it and ends
trap 'echo "usr1 $GPOOL_JOB_ID $(date +%s.%N)" >>"$1/sig.$GPOOL_JOB_ID"; exit 0' USR1
echo "start $(date +%s.%N)" >>"$1/run.$GPOOL_JOB_ID"
sleep "${2:-40}" &
wait
EOS
chmod 0755 "$WORK/ckpt.sh"
old=$(as_other gsub --parsable --signal=USR1@5 -o /dev/null -- "$WORK/ckpt.sh" "$WORK" 40)
check "gpool-other's first job runs" wait_state "$old" RUNNING 15
sleep 1
young=$(as_other gsub --parsable --signal=USR1@5 -o /dev/null -- "$WORK/ckpt.sh" "$WORK" 40)
check "and its second" wait_state "$young" RUNNING 15
mine=$(submit -o /dev/null -- sleep 2)
sleep 6
is "$(job_state "$mine")" PENDING "with preempt off gpool-user's job waits"
check "and nothing was signalled" test ! -e "$WORK/sig.$young" -a ! -e "$WORK/sig.$old"

printf 'preempt = true\npreempt_grace = 2s\n' >>"$conf"
kill -HUP "$spid"
signalled() { [ -s "$WORK/sig.$young" ]; }
check "with preempt on, the younger job gets its checkpoint signal (SIGUSR1)" wait_until 20 signalled
diag "$(cat "$WORK/sig.$young" 2>/dev/null)"
check "gpool-user's job runs" wait_state "$mine" RUNNING\|COMPLETED 20
like "$(grep "preempted for job $mine" "$slog")" "job $young" "gschedd logs the preemption of job $young"
is "$(job_field "$young" vacates)" 1 "the preempted attempt is counted as a vacate"
st=$(job_state "$young")
check "the preempted job is back in the queue or running again, not failed ($st)" \
	test "$st" = PENDING -o "$st" = RUNNING
is "$(job_state "$old")" RUNNING "the older job is left alone"
check "no signal reached the older job" test ! -e "$WORK/sig.$old"
check "gpool-user's job completes" wait_state "$mine" COMPLETED 20
check "the preempted job runs again (attempt 2 with max_attempts 1)" wait_state "$young" RUNNING 20
is "$(job_field "$young" attempt)" 2 "its attempt is 2"
as_other gcancel "$old" "$young"
done_testing
