#!/bin/bash
# t0190-backfill: EASY backfill on 3 hosts of 2 CPUs. A holds 4 CPUs; wide B (6 CPUs) waits
# with a reservation at A's limit; short C fits the hole and ends before the reservation, so
# it starts at once; long D would delay B, so it waits for B. B starts no later than its
# reservation. Pending reasons are what gstat shows.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --cpus 2

f() { "$PY" -c 'import sys; print(float(sys.argv[1] or 0))' "${1:-0}"; }
le() { "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) + float(sys.argv[3]) else 1)' "$1" "$2" "${3:-0}"; }

total=$(gnodes --json 2>/dev/null | "$PY" -c '
import json, sys
def nodes(x):
    if isinstance(x, dict):
        if "name" in x and "cpus" in x and "state" in x: yield x
        for v in x.values(): yield from nodes(v)
    elif isinstance(x, list):
        for v in x: yield from nodes(v)
print(sum(int(n["cpus"]) for n in nodes(json.load(sys.stdin))))')
is "$total" 6 "the cluster offers 6 CPUs (3 hosts x --cpus 2)"

A=$(submit -J A -n 4 -t 0:30 -- /bin/sleep 20)
wait_state "$A" RUNNING 20 && ok "A (4 CPUs, 30 s limit) runs" || fail "A runs" "$(job_json "$A")"
a_start=$(job_field "$A" start_time)

B=$(submit -J B -n 6 -t 0:20 -- /bin/sleep 2)
sleep 1
is "$(job_state "$B")" PENDING "B (6 CPUs) waits"
like "$(job_field "$B" reason)" 'Resources' "B's reason is Resources ($(job_field "$B" reason))"
b_res=$(job_field "$B" reserved_start)
if [ -n "$b_res" ] && [ "$(f "$b_res")" != 0.0 ]; then
	ok "B has a reservation (reserved_start $b_res)"
	le "$b_res" "$a_start" 32 && ok "B's reservation is no later than A's limit (A started $a_start)" ||
		fail "B's reservation is no later than A's limit" "reserved $b_res, A started $a_start"
else
	fail "B has a reservation" "$(job_json "$B")"
fi

C=$(submit -J C -n 1 -t 0:05 -- /bin/sleep 3)
D=$(submit -J D -n 1 -t 10:00 -- /bin/sleep 1)
if wait_state "$C" RUNNING 5; then
	ok "C (1 CPU, 5 s) is backfilled at once, ahead of B"
else
	fail "C is backfilled at once" "$(job_json "$C")"
fi
sleep 1
is "$(job_state "$D")" PENDING "D (1 CPU, 10 min) does not start: it would delay B"
like "$(job_field "$D" reason)" 'Priority|Resources' "D's reason is Priority or Resources ($(job_field "$D" reason))"
is "$(job_state "$B")" PENDING "B still waits for A"
check "C completes before B's reservation" wait_state "$C" COMPLETED 10

# B starts when A ends, no later than its reservation; D only after B started
if wait_state "$B" RUNNING 40; then
	b_start=$(job_field "$B" start_time)
	ok "B runs (started $b_start)"
	le "$b_start" "${b_res:-0}" 2 && ok "B started no later than its reservation" ||
		fail "B started no later than its reservation" "started $b_start, reserved $b_res"
	d_start=$(job_field "$D" start_time)
	if [ -z "$d_start" ] || [ "$(f "$d_start")" = 0.0 ] || le "$b_start" "$d_start" 0; then
		ok "D did not start before B"
	else
		fail "D did not start before B" "D $d_start, B $b_start"
	fi
else
	fail "B runs once A has ended" "$(job_json "$B")"
fi
check "D completes in the end" wait_state "$D" COMPLETED 30
check "B completes" wait_state "$B" COMPLETED 30
c_end=$(job_field "$C" end_time)
le "$c_end" "${b_res:-0}" 0 && ok "C ended before B's reservation" || fail "C ended before B's reservation" "C ended $c_end, reserved $b_res"

# a held job says so; a job larger than the cluster says it can never run
H=$(submit --hold -n 1 -- /bin/true)
sleep 1
like "$(job_field "$H" reason)" 'Held' "a held job's reason is JobHeld* ($(job_field "$H" reason))"
# it is refused at submission with sbatch's reason, and what the cluster has (3 x 2 CPUs)
out=$(as_user gsub -n 7 -- /bin/true 2>&1)
rc=$?
is "$rc" 1 "gsub of a 7-CPU job on 6 CPUs exits 1"
like "$out" '^gsub: requested node configuration is not available: 7 tasks of 1 CPU; the cluster has 3 nodes, 6 CPUs, 0 cards; the largest node 2 CPUs, [0-9]+ MB$' \
	"a 7-CPU job on 6 CPUs is refused ($out)"
out=$(as_user gsub -c 3 -- /bin/true 2>&1)
like "$out" '^gsub: requested node configuration is not available: 1 task of 3 CPUs; the cluster has 3 nodes, 6 CPUs' \
	"a 3-CPU task on nodes of 2 CPUs is refused ($out)"
out=$(as_user gsub --mem 100T -- /bin/true 2>&1)
like "$out" '^gsub: requested node configuration is not available: 1 task of 1 CPU, [0-9]+ MB a node; ' \
	"100 TB of memory on one node is refused ($out)"
as_user gcancel "$H" >/dev/null 2>&1

done_testing
