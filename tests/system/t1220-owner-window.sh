#!/bin/bash
# t1220-owner-window: office hours. A window of owner_never that begins (set by a reload, as
# an administrator would) acts as the owner returning: the running job is frozen, gnodes says
# "active:window", nothing new starts there; when the window is gone the job is thawed and
# completes. owner_always wins over the sources: while such a window holds, an owner file does
# not stop a job.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2 --worker-arg --owner-sources=file --worker-arg --owner-idle=1s \
	--worker-arg --owner-poll=100ms
STATE=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 state)
OWNER=$STATE/owner-active
alog=$CLUSTER_DIR/h1/gworkerd.log
apid=$(cat "$CLUSTER_DIR/h1/gworkerd.pid")
conf=$GPOOL_CONF
cp "$conf" "$TEST_DIR/orig.conf"
check "h1 is up" wait_node_state h1 UP 20
# a window of local time from this minute to 5 minutes on (it may run past midnight)
window=$("$PY" -c 'import time; t = time.localtime(); d = ["Mon","Tue","Wed","Thu","Fri","Sat","Sun"][t.tm_wday]; m = t.tm_hour * 60 + t.tm_min; e = (m + 5) % 1440; print("%s %02d:%02d-%02d:%02d" % (d, m // 60, m % 60, e // 60, e % 60))')
diag "window: $window"
reload() {
	local n
	n=$(grep -c 'reload: done' "$alog")
	kill -HUP "$apid"
	wait_until 10 eval "[ \$(grep -c 'reload: done' '$alog') -gt $n ]"
}

job=$(submit -t 2 -- sh -c 'i=0; while [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done; echo done')
check "a job runs" wait_state "$job" RUNNING 30
cp "$TEST_DIR/orig.conf" "$conf"
echo "owner_never = $window" >>"$conf"
check "the agent reloads its configuration" reload
check "the closed window freezes the running job" wait_until 5 grep -q "owner: job $job.1 frozen" "$alog"
window_shown() { gnodes 2>/dev/null | awk '$1 == "h1"' | grep -q "active:window since"; }
check "gnodes: active:window, since when (the next heartbeat)" wait_until 10 window_shown
late=$(submit -t 1 -- true)
sleep 2
is "$(job_state "$late")" PENDING "a job submitted during office hours waits"
cp "$TEST_DIR/orig.conf" "$conf"
check "the window is removed (reload)" reload
check "the job is thawed" wait_until 10 grep -q "owner: job $job.1 thawed" "$alog"
check "the job completes" wait_state "$job" COMPLETED 60
check "the waiting job runs" wait_state "$late" COMPLETED 30

# owner_always: offered whatever the owner does
echo "owner_always = $window" >>"$conf"
check "an owner_always window is set (reload)" reload
on_host h1 touch "$OWNER"
sleep 1
job2=$(submit -t 1 -- true)
check "a job runs while the owner file exists, inside owner_always" wait_state "$job2" COMPLETED 30
idle_shown() { gnodes 2>/dev/null | awk '$1 == "h1"' | grep -q "idle since"; }
check "gnodes: idle (the window wins)" wait_until 10 idle_shown
# both: owner_never wins
echo "owner_never = $window" >>"$conf"
check "and owner_never too (reload)" reload
check "owner_never wins over owner_always" wait_until 10 eval "gnodes 2>/dev/null | grep -q active:window"
on_host h1 rm -f "$OWNER"
cp "$TEST_DIR/orig.conf" "$conf"
done_testing
