#!/bin/bash
# t0371-standby-cut: the leading scheduler's PC unplugged (its host's link down, the process
# alive: gpool-cluster sched-cut), in a group of three (docs/standby.md).
# - The two others elect a leader within 10 s; it holds every job the old one accepted.
# - The cut one steps down by itself (it hears no majority) and starts again as a standby: it
#   can no longer take anything in, and its memory is dropped.
# - Its link back (sched-heal), it follows the new leader: its jobs.db holds the jobs accepted
#   while it was away, and the new leader still leads.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 1 --schedulers 3 --no-wait

ep_of() { echo "tcp://$(slot_addr $((1 + ${1#s}))):7820"; }
role() { cat "$CLUSTER_DIR/$1/state/role" 2>/dev/null; }
db_jobs() { sqlite3 -readonly "$CLUSTER_DIR/$1/state/jobs.db" 'SELECT count(*) FROM jobs' 2>/dev/null; }
has_leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" >/dev/null 2>&1; }

check "a scheduler leads" wait_until 10 has_leader
L=$("$CLUSTER" sched-leader --dir "$CLUSTER_DIR")
ok "leader: $L"
export GPOOL_SCHEDULER
GPOOL_SCHEDULER=$(ep_of "$L")
ids=()
for i in 1 2 3 4 5; do
	id=$(submit -H -J "before$i" -- /bin/true) || break
	ids+=("$id")
done
is "${#ids[@]}" 5 "$L accepted 5 held jobs"

pid_before=$(cat "$CLUSTER_DIR/$L/gschedd.pid")
"$CLUSTER" sched-cut --dir "$CLUSTER_DIR" "$L" >/dev/null 2>&1
at_cleanup "ip -n $(slot_ns "$L") link set eth0 up 2>/dev/null"
t0=$(date +%s.%N)
other_leads() {
	local k
	for k in s1 s2 s3; do
		[ "$k" != "$L" ] && [ "$(role "$k")" = leader ] && { echo "$k"; return 0; }
	done
	return 1
}
check "another scheduler leads within 10 s of the cut" wait_until 10 other_leads
t1=$(date +%s.%N)
L2=$(other_leads)
ok "new leader $L2 after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
GPOOL_SCHEDULER=$(ep_of "$L2")
answers() { gstat >/dev/null 2>&1; }
check "$L2 answers" wait_until 10 answers
found=0
for id in "${ids[@]}"; do [ "$(job_state "$id")" = PENDING ] && found=$((found + 1)); done
is "$found" 5 "the 5 jobs $L accepted are on $L2"
id6=$(submit -H -J during -- /bin/true)
like "$id6" '^[0-9]+$' "$L2 accepts a job while $L is cut off (id $id6)"

stepped_down() { [ "$(role "$L")" = standby ]; }
check "$L, cut off, stepped down and started again as a standby" wait_until 20 stepped_down
like "$(cat "$CLUSTER_DIR/$L/gschedd.log")" "no longer the leader" "$L says why"
is "$(cat "$CLUSTER_DIR/$L/gschedd.pid")" "$pid_before" "the same process (it executed itself again)"

"$CLUSTER" sched-heal --dir "$CLUSTER_DIR" "$L" >/dev/null 2>&1
n=$(db_jobs "$L2")
caught_up() { [ "$(db_jobs "$L")" = "$n" ]; }
check "$L, its link back, follows: its jobs.db holds the leader's $n jobs" wait_until 20 caught_up
sleep 2
is "$(role "$L2")" leader "$L2 still leads"
is "$(role "$L")" standby "$L is a standby"
out=$(GPOOL_SCHEDULER=$(ep_of "$L") timeout 10 gstat 2>&1)
rc=$?
if [ $rc = 0 ]; then
	ok "$L passes a request on to the leader (the client follows)"
else
	like "$out" "standby.*$(ep_of "$L2")" "$L answers with the new leader's endpoint"
fi
done_testing
