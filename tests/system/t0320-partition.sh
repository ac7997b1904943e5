#!/bin/bash
# t0320-partition: a 2-node job (12 s of work) runs; one of its hosts loses its link
# (`ip link set gpv-hN down`, the host's veth on the bridge). The node goes DOWN after
# node_timeout (6 s), the job is REQUEUED and completes on the two other hosts in attempt 2;
# the partitioned agent's lease (node_timeout - 2 heartbeats = 4 s) kills attempt 1 before
# attempt 2 starts. When the link comes back the node is UP again with nothing of attempt 1
# left. Marker lines as in t0300: attempts of the job never overlap, none runs after another
# completed.
# timeout: 110
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --cpus 4 --node-timeout 6s --heartbeat-interval 1s

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

id=$(submit -N 2 -n 2 -J part -- /bin/sh "$WORK/task.sh" 12)
echo "$id" >"$WORK/ids"
if [ -z "$id" ] || ! wait_state "$id" RUNNING 20; then
	fail "a 2-node job runs" "$(job_json "$id")"
	done_testing
fi
starts() { [ "$(grep -c "^start $id $1 " "$MARK")" -ge 2 ]; }
check "a 2-node job runs, both ranks started" wait_until 10 starts 1
nl=$(job_field "$id" nodelist)
victim=$(tr ',' '\n' <<<"$nl" | tail -n 1)
victim=${victim//[^a-z0-9]/}
diag "nodelist $nl; cutting $victim"
like "$victim" '^h[0-9]+$' "the job's second host is known ($victim)"
veth=gpv-$victim
ip link show "$veth" >/dev/null 2>&1 && ok "$victim's veth is $veth" || fail "$victim's veth is $veth" "$(ip -o link | grep gpv)"
at_cleanup "ip link set $veth up 2>/dev/null"
sleep 2

t_cut=$(date +%s.%N)
ip link set "$veth" down
ok "the link of $victim is cut"
if wait_node_state "$victim" DOWN 15; then
	t_down=$(date +%s.%N)
	ok "$victim is DOWN $("$PY" -c "print(round($t_down - $t_cut, 1))") s after the cut (node_timeout 6 s)"
else
	fail "$victim goes DOWN" "$(gnodes 2>&1)"
fi
att2() { [ "$(job_field "$id" attempt)" -ge 2 ] && [ "$(job_state "$id")" = RUNNING ]; }
if wait_until 20 att2; then
	t_req=$(date +%s.%N)
	ok "the job runs again in attempt $(job_field "$id" attempt), $("$PY" -c "print(round($t_req - $t_cut, 1))") s after the cut"
	nl2=$(job_field "$id" nodelist)
	unlike "$nl2" "$victim\\b" "not on the partitioned $victim ($nl2)"
else
	fail "the job is requeued and runs again" "$(job_json "$id")"
fi
# the partitioned host, still cut off: its lease must have ended attempt 1 there
left=$(host_user_pids "$victim" | wc -w)
is "$left" 0 "attempt 1 no longer runs on the partitioned $victim (its lease ended it)"
sleep 3
ip link set "$veth" up
t_up=$(date +%s.%N)
ok "the link of $victim is back"
if wait_node_state "$victim" UP 20; then
	ok "$victim is UP again $("$PY" -c "print(round($(date +%s.%N) - $t_up, 1))") s after the link came back"
else
	fail "$victim is UP again" "$(gnodes 2>&1)"
fi
check "no stale task of attempt 1 is left on $victim" wait_until 10 no_user_pids "$victim"
if wait_state "$id" COMPLETED 30; then
	ok "the job COMPLETED in attempt $(job_field "$id" attempt), $("$PY" -c "print(round($(date +%s.%N) - $t_cut, 1))") s after the cut"
else
	fail "the job COMPLETED" "$(job_json "$id")"
fi
sleep 1
res=$(analyze "$WORK/ids")
diag "$res"
diag "marker: $(awk '$1 != "tick"' "$MARK" | tr '\n' '|')"
diag "last tick of attempt 1: $(awk -v j="$id" '$2 == j && $3 == 1 {t = ($1 == "run") ? $6 : $5} END {print t}' "$MARK"); first start of attempt 2: $(awk -v j="$id" '$1 == "start" && $2 == j && $3 == 2 {print $5; exit}' "$MARK")"
line=$(head -n 1 <<<"$res")
like "$line" '^accepted 1 lost 0 repeated 0 overlapping 0 notfinal 0 ' "marker: not lost, not repeated, attempts never overlap"
grep -i "$victim" "$CLUSTER_DIR/sched/gschedd.log" | grep -i 'down\|requeue\|fenc\|stale\|kill' | tail -n 5 | sed 's/^/# sched: /'
grep -i 'lease\|fenc\|stale\|superseded' "$CLUSTER_DIR/$victim/gworkerd.log" | tail -n 5 | sed 's/^/# agent: /'

done_testing
