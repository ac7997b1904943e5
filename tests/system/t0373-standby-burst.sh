#!/bin/bash
# t0373-standby-burst: the leader of three gschedd (docs/standby.md) is killed (SIGKILL) in the
# middle of a burst of 1,000 submissions from 8 concurrent gsub loops (gpool-user, the list of
# the three schedulers, one gsub process per job, each job named by its loop and index):
# - every one of the 1,000 gsub exits 0 with a job id: the ones in flight at the kill were sent
#   again by gsub (same request id, docs/reliability.md) to the next leader and acknowledged;
# - the new leader holds each of the 1,000 names exactly once, under the id gsub printed (0
#   lost, 0 duplicated, no job nobody was told about), and no id was given twice;
# - every job runs to COMPLETED, exactly once (attempt markers: 0 repeated, 0 overlapping);
# - the killed scheduler, started again, follows and its jobs.db catches up with every job.
# Shown as diagnostics: the failover time, how many submissions spanned the kill, how many the
# new leader answered from its request-id store (a retry of one a majority already held).
# timeout: 420
. "$(dirname "$0")/lib.sh"
LOOPS=${T0373_LOOPS:-8}
PER=${T0373_PER:-125}
KILL_AT=${T0373_KILL_AT:-400}
N=$((LOOPS * PER))
test_under_cluster 2 --cpus 8 --schedulers 3 --no-wait --node-timeout 8s --heartbeat-interval 1s

ep_of() { echo "tcp://$(slot_addr $((1 + ${1#s}))):7820"; }
leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" 2>/dev/null; }
has_leader() { leader >/dev/null; }
db_jobs() { sqlite3 -readonly "$CLUSTER_DIR/$1/state/jobs.db" 'SELECT count(*) FROM jobs' 2>/dev/null; }
nodes_up2() { [ "$(gnodes 2>/dev/null | grep -cw up)" -ge 2 ]; }

check "a scheduler leads within 10 s of the start" wait_until 10 has_leader
L=$(leader)
ok "leader: $L (GPOOL_SCHEDULER=$GPOOL_SCHEDULER)"
like "$GPOOL_SCHEDULER" "^tcp://[^,]+, *tcp://[^,]+, *tcp://[^,]+$" "the clients are given the three schedulers"
check "both agents registered" wait_until 30 nodes_up2

marker_setup
RES=$WORK/res
mkdir -p "$RES" && chown "$TEST_USER:" "$RES"
# one loop: PER submissions one after another, each line: loop index rc id t_start t_end
cat >"$WORK/loop.sh" <<'EOF'
#!/bin/bash
loop=$1 per=$2 res=$3 task=$4
for i in $(seq 1 "$per"); do
	t0=$(date +%s.%N)
	id=$(gsub --parsable -J "b$loop-$i" -- /bin/sh "$task" 0 2>>"$res/$loop.err")
	rc=$?
	echo "$loop $i $rc ${id:-none} $t0 $(date +%s.%N)" >>"$res/$loop.txt"
done
EOF
chmod 0755 "$WORK/loop.sh"
acked() { cat "$RES"/*.txt 2>/dev/null | wc -l; }
acked_at_least() { [ "$(acked)" -ge "$1" ]; }

t_burst=$(date +%s.%N)
pids=()
for l in $(seq 1 "$LOOPS"); do
	as_user "$WORK/loop.sh" "$l" "$PER" "$RES" "$WORK/task.sh" &
	pids+=($!)
done
at_cleanup "kill ${pids[*]} 2>/dev/null"
check "$KILL_AT submissions answered before the kill" wait_until 200 acked_at_least "$KILL_AT"
# ---- the leader killed in the middle of the burst
L=$(leader)
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L" KILL 2>/dev/null
t_kill=$(date +%s.%N)
ok "leader $L killed after $(acked) answered submissions"
new_leader() { local l; l=$(leader) && [ "$l" != "$L" ]; }
check "another scheduler leads within 10 s" wait_until 10 new_leader
L2=$(leader)
diag "new leader $L2 after $(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
t_end=$(date +%s.%N)
is "$rcs" 0 "the $LOOPS submit loops ended"
cat "$RES"/*.txt >"$WORK/all.txt"
is "$(wc -l <"$WORK/all.txt")" "$N" "$N submissions made"
is "$(awk '$3 == 0 && $4 ~ /^[0-9]+$/' "$WORK/all.txt" | wc -l)" "$N" \
	"every one of the $N gsub was acknowledged with a job id (exit 0)"
bad=$(awk '$3 != 0 || $4 !~ /^[0-9]+$/' "$WORK/all.txt" | head -n 5)
[ -z "$bad" ] || diag "not acknowledged: $bad" "$(cat "$RES"/*.err | sort | uniq -c | sort -rn | head -n 5)"
awk '{ print $4 }' "$WORK/all.txt" | grep -E '^[0-9]+$' >"$WORK/ids"
is "$(sort "$WORK/ids" | uniq -d | wc -l)" 0 "no job id was given twice"
span=$(awk -v k="$t_kill" '$5 < k && $6 > k' "$WORK/all.txt" | wc -l)
check "submissions were in flight at the kill ($span)" test "$span" -ge 1
diag "burst: $N submissions in $(awk -v a="$t_burst" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s;" \
	"the slowest took $(awk '{ d = $6 - $5; if (d > m) m = d } END { printf "%.1f", m }' "$WORK/all.txt") s;" \
	"gsub said it would try again $(cat "$RES"/*.err | grep -c 'trying again') times"

# ---- what the new leader holds: each name once, under the id its gsub printed
GPOOL_SCHEDULER=$(ep_of "$L2")
all_final() {
	gstat --json -a >"$WORK/gstat.json" 2>/dev/null || return 1
	"$PY" - "$WORK/gstat.json" <<'PYEOF'
import json, sys
final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
jobs = json.load(open(sys.argv[1])).get("jobs", [])
sys.exit(0 if jobs and all(str(j["state"]).replace("JOB_STATE_", "").upper() in final for j in jobs) else 1)
PYEOF
}
check "every job ended" wait_until 240 all_final
res=$("$PY" - "$WORK/gstat.json" "$WORK/all.txt" "$LOOPS" "$PER" <<'PYEOF'
import collections, json, sys
jobs = json.load(open(sys.argv[1])).get("jobs", [])
loops, per = int(sys.argv[3]), int(sys.argv[4])
acked = {}
for line in open(sys.argv[2]):
    p = line.split()
    if p[2] == "0" and p[3].isdigit():
        acked["b%s-%s" % (p[0], p[1])] = int(p[3])
def name_of(j):
    return j.get("name") or (j.get("spec") or {}).get("name") or ""
by_name = collections.defaultdict(list)
for j in jobs:
    by_name[name_of(j)].append(int(j["id"]))
want = {"b%d-%d" % (l, i) for l in range(1, loops + 1) for i in range(1, per + 1)}
missing = sorted(n for n in want if n not in by_name)
dup = sorted(n for n in want if len(by_name.get(n, [])) > 1)
wrong = sorted(n for n in want if n in acked and by_name.get(n) and acked[n] not in by_name[n])
extra = sorted(n for n in by_name if n not in want)
print("missing %d duplicated %d other-id %d unknown %d" % (len(missing), len(dup), len(wrong), len(extra)))
for n in (missing + dup + wrong + extra)[:10]:
    print("  %s: %s (acknowledged as %s)" % (n, by_name.get(n), acked.get(n)))
PYEOF
)
is "$(head -n 1 <<<"$res")" "missing 0 duplicated 0 other-id 0 unknown 0" \
	"the new leader holds each of the $N names once, under the id gsub printed"
[ "$(head -n 1 <<<"$res")" = "missing 0 duplicated 0 other-id 0 unknown 0" ] || diag "$res"
a=$(analyze "$WORK/ids")
like "$(head -n 1 <<<"$a")" "^accepted $N lost 0 repeated 0 overlapping 0 notfinal 0 unacknowledged-but-ran 0 " \
	"every acknowledged job COMPLETED, ran once (attempt markers)"
diag "$a"
seen=$(grep -c "seen before: answered with its first reply" "$CLUSTER_DIR/$L2/gschedd.log")
diag "the new leader answered $seen retried submission(s) from its request-id store"

# ---- the killed one back: it follows and catches up
"$CLUSTER" sched-start --dir "$CLUSTER_DIR" "$L" 2>/dev/null
n_now=$(db_jobs "$L2")
catch_up() { [ "$(db_jobs "$L")" = "$n_now" ] && [ "$(cat "$CLUSTER_DIR/$L/state/role")" = standby ]; }
check "$L, started again, is a standby holding the leader's $n_now jobs" wait_until 30 catch_up
is "$n_now" "$N" "the leader's jobs.db holds $N jobs"
done_testing
