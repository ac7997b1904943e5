#!/bin/bash
# t1261-gpu-share-budget: an AMD card shared by small jobs (docs/gpu-share.md) holds each slice
# to its budget by sampling: on a fake RX 6700 XT (12 GiB) whose per-process VRAM the test sets
# (STATE_DIR/fake-card-0.vram, "PID BYTES" lines, as ROCm SMI's process list would say), a slice
# that uses 3 GiB of its 2 GiB budget is stopped within seconds and fails with the reason
# (gstat, gacct), while a slice of gpool-user's within its budget runs on; and a process of
# another job using memory does not count against a slice.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 4 --fake-cards "h1=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W"
vram=$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h1 state)/fake-card-0.vram

# a slice that writes its pid and waits
slice() { # slice NAME
	submit --gpu-share --gpu-vendor amd --gpu-mem 2G -- sh -c "echo \$\$ > $WORK/pid-$1; exec sleep 60"
}
has_pid() { [ -s "$WORK/pid-$1" ]; }
over=$(slice over)
under=$(slice under)
if wait_state "$over" RUNNING 20 && wait_state "$under" RUNNING 20 && wait_until 10 has_pid over &&
	wait_until 10 has_pid under; then
	ok "two 2 GiB slices run on the AMD card"
else
	fail "two slices run" "$(job_state "$over") $(job_state "$under")"
fi
is "$(job_field "$over" nodelist)|$(job_field "$under" nodelist)" "h1|h1" "both on h1"
# within budget: 1 GiB; over: 3 GiB; a pid of nobody's job: 8 GiB (not counted for any slice)
printf '%s %s\n%s %s\n%s %s\n' "$(cat "$WORK/pid-under")" 1073741824 \
	"$(cat "$WORK/pid-over")" 3221225472 1 8589934592 >"$vram"
if wait_state "$over" FAILED 15; then
	ok "the slice over its budget is stopped"
else
	fail "the slice over its budget is stopped" "$(job_state "$over") $(job_field "$over" reason)"
fi
reason=$(job_field "$over" reason)
like "$reason" 'OverBudget \(its processes used 3.0G of VRAM on card 0 of h1, over its --gpu-mem budget of 2.0G\)' \
	"with the reason: $reason"
like "$(as_user gacct -j "$over" --json 2>&1)" 'OverBudget' "gacct --json shows it"
sleep 2
is "$(job_state "$under")" RUNNING "the slice within its budget runs on"
as_user gcancel "$under" >/dev/null 2>&1
wait_final "$under" 20 >/dev/null
done_testing
