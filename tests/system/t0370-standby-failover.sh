#!/bin/bash
# t0370-standby-failover: three gschedd, each in a network-namespace host of its own with its
# own state directory (no shared disk), keep one state with Raft (docs/standby.md).
# - One leads within 10 s of the start; each standby answers with ERROR_NOT_LEADER and the
#   leader's endpoint (or, with clients that follow it, the request succeeds through it).
# - 20 jobs accepted by the leader, then the leader killed (SIGKILL): another leads within 10 s
#   and holds all 20 (0 accepted lost); a job submitted to it is accepted (2 of 3: a majority).
# - The killed one started again follows: its jobs.db holds what the leader's does.
# - A follower killed: the leader stays, submissions go on.
# - The leader killed too (1 of 3 left, no quorum): a submission is refused with a clear error,
#   nothing is accepted.
# - Where the agents follow the leader (a scheduler list in gworkerd, issue 26's client side), a
#   job running across the leader's kill is re-adopted: still RUNNING in attempt 1, COMPLETED;
#   without that the part is skipped with the reason.
# timeout: 330
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2 --schedulers 3 --no-wait --node-timeout 8s --heartbeat-interval 1s

ep_of() { echo "tcp://$(slot_addr $((1 + ${1#s}))):7820"; }
leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" 2>/dev/null; }
has_leader() { leader >/dev/null; }
# count of jobs a scheduler's jobs.db holds (any replica; read-only)
db_jobs() { sqlite3 -readonly "$CLUSTER_DIR/$1/state/jobs.db" 'SELECT count(*) FROM jobs' 2>/dev/null; }
sub_to() { # sub_to sK GSUB_ARGS...: submit to one scheduler
	local ep
	ep=$(ep_of "$1")
	shift
	GPOOL_SCHEDULER=$ep submit "$@"
}

check "a scheduler leads within 10 s of the start" wait_until 10 has_leader
L=$(leader)
ok "leader: $L"
export GPOOL_SCHEDULER
GPOOL_SCHEDULER=$(ep_of "$L")
for k in s1 s2 s3; do
	[ "$k" = "$L" ] && continue
	out=$(GPOOL_SCHEDULER=$(ep_of "$k") timeout 10 gstat 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		ok "$k (standby): the request reached the leader through it (the client follows)"
	else
		like "$out" "standby.*$(ep_of "$L")" "$k (standby) answers with the leader's endpoint"
	fi
	is "$(cat "$CLUSTER_DIR/$k/state/role")" standby "$k's role file says standby"
done

# ---- agents: do they follow the leader? (gworkerd with a scheduler list)
agents=0
nodes_up2() { [ "$(gnodes 2>/dev/null | grep -cw up)" -ge 2 ]; }
if wait_until 30 nodes_up2; then
	agents=1
	ok "the agents registered with the leader"
else
	diag "the agents did not register: $(tail -n 2 "$CLUSTER_DIR/h1/gworkerd.log" | tr '\n' '|')"
fi

ids=()
for i in $(seq 1 20); do
	id=$(submit -H -J "held$i" -- /bin/true) || break
	ids+=("$id")
done
is "${#ids[@]}" 20 "the leader accepted 20 held jobs"
if [ $agents = 1 ]; then
	marker_setup
	run=$(submit -n 1 -J across -- /bin/sh "$WORK/task.sh" 40)
	echo "$run" >"$WORK/ids"
	check "a job runs" wait_state "$run" RUNNING 30
	sleep 2
fi
follow() { # every follower's jobs.db holds n jobs
	local k
	for k in s1 s2 s3; do
		[ "$k" = "$L" ] && continue
		[ "$(db_jobs "$k")" = "$1" ] || return 1
	done
}
n_before=$(db_jobs "$L")
check "both standbys' jobs.db hold the leader's $n_before jobs" wait_until 10 follow "$n_before"

# ---- the leader killed
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L" KILL 2>/dev/null
t0=$(date +%s.%N)
new_leader() { local l; l=$(leader) && [ "$l" != "$L" ]; }
check "another scheduler leads within 10 s" wait_until 10 new_leader
t1=$(date +%s.%N)
L2=$(leader)
ok "new leader $L2 after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
GPOOL_SCHEDULER=$(ep_of "$L2")
answers() { gstat >/dev/null 2>&1; }
check "$L2 answers" wait_until 10 answers
found=0
for id in "${ids[@]}"; do
	[ "$(job_state "$id")" = PENDING ] && found=$((found + 1))
done
is "$found" 20 "all 20 accepted jobs are on the new leader, PENDING (held): 0 lost"
id21=$(submit -H -J after -- /bin/true)
like "$id21" '^[0-9]+$' "the new leader accepts a job with 2 of 3 schedulers (id $id21)"
for id in "${ids[@]}"; do
	[ "$id21" = "$id" ] && fail "job id $id21 was given twice"
done
if [ $agents = 1 ]; then
	is "$(job_state "$run")" RUNNING "the running job is still RUNNING on the new leader"
	is "$(job_field "$run" attempt)" 1 "in attempt 1"
	check "it COMPLETED" wait_state "$run" COMPLETED 90
	res=$(analyze "$WORK/ids")
	diag "$res"
	like "$(head -n 1 <<<"$res")" '^accepted 1 lost 0 repeated 0 overlapping 0 notfinal 0 ' \
		"marker: it ran once, through the failover"
else
	skip "a running job re-adopted by the new leader" \
		"this build's agents take one scheduler, not the list (issue 26's client side)"
fi

# ---- the old leader back: it follows
"$CLUSTER" sched-start --dir "$CLUSTER_DIR" "$L" 2>/dev/null
n_now=$(db_jobs "$L2")
catch_up() { [ "$(db_jobs "$L")" = "$n_now" ] && [ "$(cat "$CLUSTER_DIR/$L/state/role")" = standby ]; }
check "$L, started again, is a standby holding the leader's $n_now jobs" wait_until 20 catch_up
is "$(leader)" "$L2" "$L2 still leads"

# ---- a follower killed: nothing changes
F=""
for k in s1 s2 s3; do [ "$k" != "$L2" ] && [ "$k" != "$L" ] && F=$k; done
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$F" KILL 2>/dev/null
sleep 3
is "$(leader)" "$L2" "a follower ($F) killed: $L2 still leads"
id22=$(submit -H -J follower-gone -- /bin/true)
like "$id22" '^[0-9]+$' "a job is accepted with the follower gone (id $id22)"

# ---- the leader killed too: no quorum
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L2" KILL 2>/dev/null
sleep 4
is "$(leader)" "" "1 of 3 schedulers left: none leads"
n_left=$(db_jobs "$L")
# (a client that follows the list tries every scheduler again for a while: up to 60 s)
out=$(GPOOL_SCHEDULER=$(ep_of "$L") as_user timeout 100 gsub -H -J noquorum -- /bin/true 2>&1)
rc=$?
isnt_zero() { [ "$1" != 0 ]; }
check "a submission without a quorum fails (exit $rc)" isnt_zero "$rc"
like "$out" "standby|no leader|no quorum|leader|no answer|no scheduler" "with a clear error: $(tail -n 1 <<<"$out" | head -c 200)"
is "$(db_jobs "$L")" "$n_left" "nothing was accepted"
done_testing
