#!/bin/bash
# t1210-owner-vacate: owner_policy = vacate. A card job (fake cards) with --signal=USR1@3 runs
# on h1 (h2's owner is active, so it cannot go there); h1's owner comes back: the job gets
# USR1, ends, is queued again without counting against max_attempts (1 here), runs on h2 (its
# owner has left) and finishes; gacct counts the vacate.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 1 --fake-cards default --sched-arg --max-attempts=1 \
	--worker-arg --owner-policy=vacate --worker-arg --owner-sources=file \
	--worker-arg --owner-idle=1s --worker-arg --owner-poll=100ms
STATE=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 state)
OWNER=$STATE/owner-active
check "h1 is up" wait_node_state h1 UP 20
check "h2 is up" wait_node_state h2 UP 20
on_host h2 touch "$OWNER"
h2_active() { gnodes 2>/dev/null | awk '$1 == "h2"' | grep -q "active:file"; }
check "h2's owner is active" wait_until 10 h2_active

cat >"$WORK/job.sh" <<'SH'
#!/bin/sh
trap 'echo "got USR1 on $(hostname) attempt $GPOOL_ATTEMPT"; exit 0' USR1
echo "start on $(hostname)"
i=0
while [ $i -lt 24 ]; do sleep 0.25 & wait $!; i=$((i + 1)); done
echo "finished on $(hostname)"
SH
chmod 0755 "$WORK/job.sh"
job=$(submit -t 2 --gpus 1 --signal=USR1@3 --stage job.sh -- ./job.sh)
check "the card job runs" wait_state "$job" RUNNING 30
is "$(job_field "$job" nodelist)" h1 "on h1 (h2's owner is active)"
on_host h2 rm -f "$OWNER"
h2_idle() { gnodes 2>/dev/null | awk '$1 == "h2"' | grep -q "idle since"; }
check "h2's owner leaves" wait_until 10 h2_idle
sleep 1
on_host h1 touch "$OWNER"
check "the agent vacates the job" wait_until 5 grep -q "owner: vacating job $job.1: signal 10" "$CLUSTER_DIR/h1/gworkerd.log"
check "the job's supervisor sent USR1 to its tasks" wait_until 10 grep -q "job $job.1: kill with signal 10 (grace 3000 ms)" "$CLUSTER_DIR/h1/gworkerd.log"
check "the job runs again" wait_eq 30 2 job_field "$job" attempt
check "and completes" wait_state "$job" COMPLETED 60
is "$(job_field "$job" nodelist)" h2 "its second attempt ran on h2"
like "$(as_user glogs "$job" 2>&1)" "finished on h2" "it finished there"
is "$(job_field "$job" vacates)" 1 "one vacate, not counted against max_attempts = 1"
like "$(gacct -j "$job" 2>&1 | awk 'NR == 2')" "COMPLETED" "gacct: COMPLETED"
check "h1 takes no new job while its owner is active" test "$(gnodes 2>/dev/null | awk '$1 == "h1"' | grep -c active:file)" = 1
done_testing
