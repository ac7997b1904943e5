#!/bin/bash
# t0377-standby-rdv: a job's ranks making their communicator when the leader is lost go on with
# the new one (docs/standby.md). Three gschedd; a 2-rank job runs gp-rdv-rank (libgcomm's gpool
# rendezvous: put addr.<rank>, fence, get every rank's, fence): rank 0 starts at once, puts its
# key and waits in the fence; rank 1 waits for a file. The key and rank 0's fence entry are rows
# of the leader's jobs.db (scheduler/store_rdv.c), so they are in the majority's state when the
# leader is killed (SIGKILL). The new leader starts from them: rank 1, let go then, puts its key,
# completes the fence and reads addr.0, which rank 0 never put again; both ranks print both
# keys and the job COMPLETES in attempt 1. gpool-other can read nothing of it from the new
# leader. What the ranks printed before the failover (their output, kept by the leader) is in
# the new leader's glogs too, once; so is what rank 1 printed just after the kill, which its
# agent had forwarded to the dead leader and sent again to the new one. Then a 2-host
# gcomm-test job makes its communicator over the new leader's rendezvous.
# timeout: 200
. "$(dirname "$0")/lib.sh"
need_bins gp-rdv-rank glogs
test_under_cluster 2 --cpus 2 --schedulers 3 --no-wait
command -v sqlite3 >/dev/null || skip_all "sqlite3 is not installed"

check "a scheduler leads within 10 s of the start" wait_until 10 sched_leads
check "the 2 agents registered" wait_until 30 nodes_up 2

cat >"$WORK/rank.sh" <<SH
#!/bin/sh
echo "rank \$GPOOL_RANK starts"
if [ "\$GPOOL_RANK" = 1 ]; then while [ ! -e "$WORK/go" ]; do sleep 0.2; done; echo "rank 1 goes"; fi
exec gp-rdv-rank >"$WORK/rdv.\$GPOOL_RANK.out" 2>&1
SH
chmod 0755 "$WORK/rank.sh"
job=$(submit -n 2 -N 2 -t 3 -- "$WORK/rank.sh")
check "the 2-rank job runs" wait_state "$job" RUNNING 30
L=$(sched_leader)
rows() { sqlite3 "file:$CLUSTER_DIR/$L/state/jobs.db?mode=ro" "SELECT fence, name, rank FROM repl_rdv WHERE job=$job ORDER BY fence, name" 2>/dev/null | tr '\n' ' '; }
in_fence() { [ "$(rows)" = "0|addr.0|0 1|fence.1|0 " ]; }
check "rank 0's key and fence entry are rows of $L's jobs.db" wait_until 30 in_fence
diag "rows: $(rows)"
outrows() { sqlite3 "file:$CLUSTER_DIR/$L/state/jobs.db?mode=ro" "SELECT count(*) FROM repl_output WHERE job=$job" 2>/dev/null; }
has_out() { [ "$(outrows)" -ge 2 ]; }
check "both ranks' first line is in $L's jobs.db (repl_output)" wait_until 30 has_out

"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L" KILL 2>/dev/null
# rank 1 goes at once: what it prints now its agent forwards to the dead leader (it notices
# only when three heartbeats go unanswered); the agent keeps it until a scheduler answers for it
# (worker/agent/outkeep.h) and sends it again to the new leader
touch "$WORK/go"
check "another scheduler leads within 10 s" wait_until 10 sched_leads_other "$L"
L2=$(sched_leader)
export GPOOL_SCHEDULER
GPOOL_SCHEDULER=$(sched_ep "$L2")
like "$(grep "replicated rendezvous restored" "$CLUSTER_DIR/$L2/gschedd.log")" \
	"restored: 1 keys and 1 fence entries of 1 jobs" "$L2 started from the replicated rendezvous"
att=$(job_field "$job" attempt)
out=$(as_other gp-rdv-rank peek "$job:$att" addr.0 2>&1)
is "$?" 3 "gpool-other cannot read the job's rendezvous from $L2 ($out)"
check "the job COMPLETED" wait_state "$job" COMPLETED 90
is "$(job_field "$job" attempt)" 1 "in attempt 1 (not restarted)"
went() { as_user glogs "$job" 2>/dev/null | grep -q "^rank 1 goes$"; }
check "glogs on $L2 shows what rank 1 printed just after the kill (sent again by its agent)" \
	wait_until 20 went
out=$(as_user glogs "$job" 2>&1)
is "$(grep -c "^rank [01] starts$" <<<"$out")" 2 "and what both ranks printed before the failover, once each"
is "$(grep -c "^rank 1 goes$" <<<"$out")" 1 "each line once"
# gp-rdv-rank's own lines go to files of the ranks
out=$(cat "$WORK/rdv.0.out" "$WORK/rdv.1.out" 2>&1)
diag "$out"
like "$out" "rank 1: addr.0 = .*[|]rank0[|]" "rank 1 read rank 0's key, put before the failover"
like "$out" "rank 0: addr.1 = .*[|]rank1[|]" "rank 0 read rank 1's, put after it"

# a whole communicator over the new leader's rendezvous, on 2 hosts: each rank publishes the
# address of its route to the schedulers, the first of the list that has one (read as one
# endpoint, the list gave none and the ranks published 0.0.0.0 to each other)
need_bins gcomm-test
list=$(sed -n 's/^scheduler *= *//p' "$GPOOL_CONF" | head -1)
like "$list" "^tcp://[^,]+, *tcp://[^,]+, *tcp://[^,]+$" "gpool.conf names the 3 schedulers ($list)"
out=$(GPOOL_SCHEDULER=$list as_user gsub --wait -t 5 -n 2 -N 2 --export=ALL,GCOMM_RDV=gpool -- \
	gcomm-test --env --quick 2>&1)
is "$?" 0 "a 2-host gcomm-test job over the gpool rendezvous with 3 schedulers exits 0"
n=$(grep -c 'of 2 (tcp, 2 hosts): all passed' <<<"$out")
is "$n" 2 "both ranks passed every check"
[ "$n" = 2 ] || diag "$(tail -5 <<<"$out")"
done_testing
