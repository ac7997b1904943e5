#!/bin/bash
# t1200-owner-suspend: the PC's owner comes back (the file source) while a CPU job runs on it:
# the job's cgroup is frozen within 1 s (its progress stops), gnodes shows the owner active
# and since when, nothing new is placed there (a pinned job waits, another goes to h2); when
# the owner has been quiet for owner_idle (3 s) the job is thawed, runs on and completes, and
# gacct shows its frozen time, which did not count against its time limit. A job of two nodes
# is vacated instead of frozen, and runs again. Another user
# (gpool-other) can neither make the owner "active" nor change the node's policy.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 1 --worker-arg --owner-sources=file --worker-arg --owner-idle=3s \
	--worker-arg --owner-poll=100ms
STATE=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 state)
OWNER=$STATE/owner-active
alog=$CLUSTER_DIR/h1/gworkerd.log
apid=$(cat "$CLUSTER_DIR/h1/gworkerd.pid")
check "h1 is up" wait_node_state h1 UP 20
check "h2 is up" wait_node_state h2 UP 20
like "$(gnodes 2>&1 | awk '$1 == "h1"')" "idle since" "gnodes shows h1's owner idle"

# a CPU job on h1 that records its progress (a counter, with the time) as it spins
cat >"$WORK/spin.py" <<'PY'
import sys, time
n, path, cpu = 0, sys.argv[1], float(sys.argv[2])
while time.process_time() < cpu:
    n += 1
    if n % 20000 == 0:
        with open(path + ".tmp", "w") as f:
            f.write("%d %.3f\n" % (n, time.time()))
        import os; os.replace(path + ".tmp", path)
print("done", n)
PY
chmod 0644 "$WORK/spin.py"
# in $WORK, which the job sees in its own /tmp (a file of its own /tmp the test could not read)
CNT=$WORK/count
# 15 s of CPU: still spinning when the owner returns, after the steps below (slow in a loaded CI:
# with 4 s the job once ended before them)
job=$(submit -w h1 -t 2 --stage spin.py -- python3 spin.py "$CNT" 15)
check "the CPU job runs on h1" wait_state "$job" RUNNING 30
counter() { on_host h1 cat "$CNT" 2>/dev/null | awk '{print $1}'; }
advancing() { local a b; a=$(counter); sleep 0.5; b=$(counter); [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]; }
check "the job makes progress" wait_until 20 advancing

# ---- another user cannot play the owner or change the policy -----------------------------------
if on_host h1 runuser -u "$OTHER_USER" -- touch "$OWNER" 2>/dev/null; then
	fail "gpool-other cannot create h1's owner file" "it could"
	on_host h1 rm -f "$OWNER"
else
	ok "gpool-other cannot create h1's owner file ($(on_host h1 stat -c '%U %a' "$STATE"))"
fi
if runuser -u "$OTHER_USER" -- kill -HUP "$apid" 2>/dev/null; then
	fail "gpool-other cannot signal h1's agent (a reload)" "it could"
else
	ok "gpool-other cannot signal h1's agent (a reload)"
fi
if runuser -u "$OTHER_USER" -- sh -c "echo owner_policy = ignore >>'$GPOOL_CONF'" 2>/dev/null; then
	fail "gpool-other cannot change the policy in gpool.conf" "it could"
else
	ok "gpool-other cannot change the policy in gpool.conf"
fi
check "the job still runs, not frozen" advancing

# ---- the owner returns --------------------------------------------------------------------------
t0=$(date +%s.%N)
on_host h1 touch "$OWNER"
frozen_line() { grep -m1 "owner: job $job.1 frozen" "$alog"; }
check "the agent freezes the job" wait_until 5 frozen_line
ts=$(frozen_line | awk '{print $1}')
lat=$("$PY" -c 'import sys, datetime; t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp(); print("%.3f" % (t - float(sys.argv[2])))' "$ts" "$t0")
check "frozen within 1 s of the owner's return ($lat s)" "$PY" -c "import sys; sys.exit(0 if float('$lat') < 1.0 else 1)"
c1=$(counter)
sleep 1.5
c2=$(counter)
is "$c2" "$c1" "the frozen job makes no progress (counter $c1 over 1.5 s)"
check "gschedd hears the job is frozen" wait_eq 10 true job_field "$job" frozen
like "$(gnodes 2>&1 | awk '$1 == "h1"')" "active:file since [0-9:]+" "gnodes shows h1's owner active, from the file, and since when"
like "$(gnodes --json 2>&1)" '"active": true' "gnodes --json carries the owner state"
pinned=$(submit -w h1 -t 1 -- true)
other=$(submit -t 1 -- hostname)
check "a job not pinned runs elsewhere" wait_state "$other" COMPLETED 30
is "$(as_user glogs "$other" 2>&1)" h2 "on h2"
sleep 1
is "$(job_state "$pinned")" PENDING "a job pinned to h1 waits while its owner is active"

# ---- the owner leaves: thawed after owner_idle (3 s) of quiet -----------------------------------
on_host h1 rm -f "$OWNER"
t2=$(date +%s.%N)
thawed_line() { grep -m1 "owner: job $job.1 thawed" "$alog"; }
check "the agent thaws the job" wait_until 10 thawed_line
ts=$(thawed_line | awk '{print $1}')
quiet=$("$PY" -c 'import sys, datetime; t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp(); print("%.3f" % (t - float(sys.argv[2])))' "$ts" "$t2")
check "thawed after the quiet time, not before (${quiet} s, owner_idle 3 s)" "$PY" -c "import sys; q = float('$quiet'); sys.exit(0 if 2.8 <= q < 4.5 else 1)"
check "the job makes progress again" wait_until 10 advancing
check "the job completes" wait_state "$job" COMPLETED 90
check "the pinned job runs once the owner is gone" wait_state "$pinned" COMPLETED 30
fz=$(gacct --json -j "$job" 2>/dev/null | "$PY" -c 'import json,sys; d=json.load(sys.stdin); j=[x for x in d["jobs"] if str(x.get("id"))==sys.argv[1]][0]; print(int(float(j.get("frozen_sec", 0))))' "$job")
check "gacct shows the frozen time (${fz} s)" test "${fz:-0}" -ge 3
like "$(gacct -j "$job" 2>&1 | head -1)" "Frozen +Vacates" "gacct's table has Frozen and Vacates"
on_host h1 rm -f "$CNT"

# ---- a job of several nodes is never frozen (one frozen rank stalls the others): vacated ------
mj=$(submit -n 2 -N 2 -t 2 -- sh -c 'i=0; while [ $i -lt 32 ]; do sleep 0.25; i=$((i + 1)); done')
check "a two-node job runs" wait_state "$mj" RUNNING 30
sleep 1
on_host h1 touch "$OWNER"
check "h1's agent vacates it rather than freeze it" wait_until 5 grep -q "owner: vacating job $mj.1" "$alog"
if grep -q "owner: job $mj.1 frozen" "$alog"; then fail "the two-node job is not frozen" "it was"; else ok "the two-node job is not frozen"; fi
check "it is queued again" wait_state "$mj" PENDING 20
on_host h1 rm -f "$OWNER"
check "it runs again once h1's owner is gone, and completes" wait_state "$mj" COMPLETED 90
is "$(job_field "$mj" vacates)" 1 "one vacate"
is "$(job_field "$mj" attempt)" 2 "in its second attempt"
done_testing
