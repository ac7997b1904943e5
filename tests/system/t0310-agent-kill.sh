#!/bin/bash
# t0310-agent-kill: `kill -9 gworkerd` on h2 while four of its tasks run (8 s each), the agent
# started again 3 s later: the tasks live on in their supervisors, the new agent re-adopts them
# and they finish COMPLETED in their first attempt: none requeued, none run twice, none lost.
# Marker lines as in t0300 (start/tick/run per attempt, in the shared work directory).
# timeout: 90
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 8 --node-timeout 20s --heartbeat-interval 1s

MARK=$WORK/marker
: >"$MARK"
chmod 0666 "$MARK"
cat >"$WORK/task.sh" <<EOF
#!/bin/sh
# one attempt of a job: a start line, SECS seconds of ticks, a run line at the end
M=$MARK
s=\$(date +%s.%N)
echo "start \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$s" >>"\$M"
n=\$(( \${1:-0} * 2 ))
while [ \$n -gt 0 ]; do sleep 0.5; echo "tick \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$(date +%s.%N)" >>"\$M"; n=\$((n - 1)); done
echo "run \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$s \$(date +%s.%N)" >>"\$M"
EOF
chmod 0755 "$WORK/task.sh"

# analyze IDS: "accepted N lost N repeated N overlapping N notfinal N", then a line per problem.
# lost: an acknowledged job that is not COMPLETED or has no finished attempt in the marker;
# repeated: more than one attempt finished, or an attempt started after one had finished;
# overlapping: two attempts of one job whose [start, last sign of life] intervals intersect.
analyze() {
	gstat --json -a >"$WORK/gstat.json" 2>"$WORK/gstat.err"
	"$PY" - "$MARK" "$1" "$WORK/gstat.json" <<'PYEOF'
import json, sys, collections
marker, idsf, gs = sys.argv[1:4]
ids = sorted({int(x) for x in open(idsf).read().split() if x.isdigit()})
att = collections.defaultdict(dict)  # job -> attempt -> [start, last, end or None]
for line in open(marker):
    p = line.split()
    if len(p) < 5 or p[0] not in ("start", "tick", "run"):
        continue
    try:
        j, a, t = int(p[1]), int(p[2]), float(p[4])
    except ValueError:
        continue
    e = att[j].setdefault(a, [t, t, None])
    e[0] = min(e[0], t)
    if p[0] == "run":
        end = float(p[5])
        e[1] = max(e[1], end)
        e[2] = end if e[2] is None else max(e[2], end)
    else:
        e[1] = max(e[1], t)
state = {}
def walk(x):
    if isinstance(x, dict):
        if "state" in x and "id" in x:
            state[int(x["id"])] = str(x["state"]).replace("JOB_STATE_", "").upper()
            return
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
try:
    walk(json.load(open(gs)))
except Exception as ex:
    print("# gstat --json unreadable:", ex)
final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
lost = rep = ovl = nf = 0
out = []
for j in ids:
    A = att.get(j, {})
    done = [a for a, e in A.items() if e[2] is not None]
    st = state.get(j, "MISSING")
    if st not in final:
        nf += 1
    if st != "COMPLETED" or not done:
        lost += 1
        out.append(f"lost: job {j} state {st}, attempts seen {sorted(A)}")
    if len(done) > 1 or any(A[a][0] > min(A[d][2] for d in done) for a in A if done and a not in done):
        rep += 1
        out.append(f"repeated: job {j} {dict(sorted(A.items()))}")
    iv = sorted(A.items(), key=lambda kv: kv[1][0])
    if any(iv[i + 1][1][0] < iv[i][1][1] for i in range(len(iv) - 1)):
        ovl += 1
        out.append(f"overlapping: job {j} {dict(iv)}")
extra = sorted(set(att) - set(ids))
print(f"accepted {len(ids)} lost {lost} repeated {rep} overlapping {ovl} notfinal {nf} "
      f"unacknowledged-but-ran {len(extra)} multi-attempt {sum(1 for j in ids if len(att.get(j, {})) > 1)}")
for l in out[:20]:
    print(l)
PYEOF
}

ids=()
for i in 1 2 3 4; do
	id=$(submit -w h2 -J ak$i -- /bin/sh "$WORK/task.sh" 8) && ids+=("$id")
done
printf '%s\n' "${ids[@]}" >"$WORK/ids"
is "${#ids[@]}" 4 "four jobs submitted to h2"
allrun() { local j; for j in "${ids[@]}"; do [ "$(job_state "$j")" = RUNNING ] || return 1; done; }
started() { [ "$(grep -c '^start ' "$MARK")" -ge 4 ]; }
check "all four run on h2" wait_until 20 allrun
check "and their tasks have started" wait_until 10 started
sleep 1
before=$(host_user_pids h2 | wc -w)

t_kill=$(date +%s.%N)
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h2 KILL
ok "h2's gworkerd killed with SIGKILL ($before task processes on h2)"
sleep 1
after=$(host_user_pids h2 | wc -w)
[ "$after" -ge 4 ] && ok "the tasks outlive their agent ($after processes)" ||
	fail "the tasks outlive their agent" "before $before, after $after"
sleep 2
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h2
t_start=$(date +%s.%N)
ok "h2's gworkerd started again"
is "$(node_state h2)" UP "h2 stays UP (node_timeout 20 s)"
states=""
for j in "${ids[@]}"; do states+="$(job_state "$j") "; done
like "$states" '^(RUNNING )+$' "the jobs are still RUNNING after the restart ($states)"

alldone() { local j; for j in "${ids[@]}"; do [ "$(job_state "$j")" = COMPLETED ] || return 1; done; }
if wait_until 30 alldone; then
	t_done=$(date +%s.%N)
	ok "all four COMPLETED, $("$PY" -c "print(round($t_done - $t_kill, 1))") s after the kill (tasks had ~7 s left)"
else
	s=""; for j in "${ids[@]}"; do s+="$j:$(job_state "$j")/$(job_field "$j" reason) "; done
	fail "all four COMPLETED after the agent restart" "$s"
fi
att=""
for j in "${ids[@]}"; do att+="$(job_field "$j" attempt) "; done
like "$att" '^(1 )+$' "each in its first attempt, not requeued (attempts: $att)"
sleep 1
res=$(analyze "$WORK/ids")
diag "$res"
line=$(head -n 1 <<<"$res")
like "$line" '^accepted 4 lost 0 repeated 0 overlapping 0 notfinal 0 .* multi-attempt 0$' "marker: none lost, repeated, overlapping or run in a second attempt"
grep -i 'adopt\|held\|re-adopt' "$CLUSTER_DIR/h2/gworkerd.log" | tail -n 4 | sed 's/^/# agent: /'
check "no task process is left on h2" wait_until 10 no_user_pids h2

done_testing
