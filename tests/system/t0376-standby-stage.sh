#!/bin/bash
# t0376-standby-stage: a submission's staged input outlives the leader (docs/standby.md). With
# three gschedd, a job and a 3-task array that stage a 9 MiB file (3 chunks) and a small one
# are submitted held, so that they are still PENDING when the leader is killed (SIGKILL). The
# chunks' bytes were in the submission's commit (scheduler/store_files.c, kind "stage"): the
# new leader writes them back into its own chunk store when it takes the lead; released there,
# every job stages, reads the same bytes (sha256) and COMPLETES; gpool-other can neither release
# the job there nor read its output. The bytes are kept once in
# jobs.db however many tasks hold them.
# timeout: 240
. "$(dirname "$0")/lib.sh"
need_bins gpool glogs
test_under_cluster 2 --cpus 2 --schedulers 3 --no-wait
command -v sqlite3 >/dev/null || skip_all "sqlite3 is not installed"

check "a scheduler leads within 10 s of the start" wait_until 10 sched_leads
check "the 2 agents registered" wait_until 30 nodes_up 2

head -c $((9 << 20)) /dev/urandom >"$WORK/big.bin"
echo "small input $RANDOM" >"$WORK/small.txt"
chown "$TEST_USER:" "$WORK/big.bin" "$WORK/small.txt"
sum=$(sha256sum <"$WORK/big.bin" | cut -d' ' -f1)
small=$(cat "$WORK/small.txt")
cd "$WORK" || exit 1
one=$(submit --hold --stage big.bin -- sh -c 'sha256sum big.bin')
arr=$(submit --hold -a 1-3 --stage big.bin --stage small.txt -- sh -c 'cat small.txt; sha256sum big.bin')
like "$one $arr" "^[0-9]+ [0-9]+$" "a job and a 3-task array submitted held ($one, $arr)"
# an array's tasks are jobs of their own with consecutive ids, the first the array's
tasks="$arr $((arr + 1)) $((arr + 2))"
is "$(job_state $((arr + 2)))" PENDING "the array's third task is queued ($tasks)"
is "$(job_state "$one")" PENDING "the job waits (held)"

L=$(sched_leader)
db="$CLUSTER_DIR/$L/state/jobs.db"
kept=$(sqlite3 "file:$db?mode=ro" "SELECT count(*), coalesce(sum(length(data)), 0) FROM repl_chunks WHERE kind='stage'" 2>/dev/null)
diag "staged chunk rows and bytes in $L's jobs.db: $kept"
# a row per chunk of each (3 for the job; 3 + 1 for each of the 3 tasks), the bytes in one each
is "$kept" "15|$(((9 << 20) + ${#small} + 1))" \
	"the 4 jobs' 15 chunk rows are in jobs.db, the bytes once ($((9 << 20)) + $((${#small} + 1)))"

"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L" KILL 2>/dev/null
check "another scheduler leads within 10 s" wait_until 10 sched_leads_other "$L"
L2=$(sched_leader)
export GPOOL_SCHEDULER
GPOOL_SCHEDULER=$(sched_ep "$L2")
# said right after it takes the lead, which the scheduler list may name a moment before
check "$L2 wrote the staged chunks back into its store" wait_until 10 grep -qE \
	"replicated files restored: [0-9]+ file sets, [4-9] chunks" "$CLUSTER_DIR/$L2/gschedd.log"
check "the 2 agents are UP with $L2" wait_until 30 nodes_up 2
out=$(as_other gpool release "$one" 2>&1)
rc=$?
like "$rc $out" "^1 .*(not yours|permission denied)" "gpool-other cannot release the job on the new leader ($out)"
is "$(job_state "$one")" PENDING "it stays held"
released=0
as_user gpool release "$one" $tasks >/dev/null 2>&1 && released=1
is "$released" 1 "the jobs are released on the new leader"
check "the job COMPLETED on $L2" wait_state "$one" COMPLETED 90
like "$(as_user glogs "$one" 2>&1)" "^$sum  big.bin" "it staged the same 9 MiB (sha256)"
out=$(as_other glogs "$one" 2>&1)
like "$? $out" "^1 .*permission denied" "gpool-other cannot read its output ($out)"
for t in $tasks; do
	check "array task $t COMPLETED" wait_state "$t" COMPLETED 90
	out=$(as_user glogs "$t" 2>&1)
	like "$out" "^$small" "task $t read the small file"
	like "$out" "$sum  big.bin" "task $t read the big one"
done
done_testing
