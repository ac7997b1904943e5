#!/bin/bash
# t1240-fairshare: two users flood the queue with one-CPU jobs at once; with shares 2:1
# (fairshare_shares, applied by SIGHUP) their run time converges to 2:1 (gpool-user's part of
# the time within 10 % of 2/3); gpool share shows both users, their shares and factors (the one
# further over its share has the lower factor); gpool-other can read the shares but not change
# them (gpool.conf and gschedd are root's); the usage survives a restart of gschedd.
# timeout: 200
. "$(dirname "$0")/lib.sh"
GPOOL_TEST_LIMIT=200 test_under_cluster 2 --cpus 2
need_bins gpool

spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf
printf 'fairshare_shares = %s:2,%s:1\nfairshare_half_life = 1h\n' "$TEST_USER" "$OTHER_USER" >>"$conf"
kill -HUP "$spid"
reloaded() { grep -q "reload: fairshare_shares = '$TEST_USER:2,$OTHER_USER:1'" "$slog"; }
check "gschedd applies fairshare_shares on SIGHUP" wait_until 10 reloaded

out=$(as_other gpool share 2>&1)
is "$?" 0 "gpool-other may read the shares"
like "$out" "$TEST_USER" "gpool share lists gpool-user: $(echo "$out" | tr '\n' '|')"

# another user cannot change them: the file and the daemon are root's
if as_other sh -c "echo 'fairshare_shares = $OTHER_USER:100' >>'$conf'" 2>/dev/null; then
	fail "gpool-other cannot write gpool.conf"
else
	ok "gpool-other cannot write gpool.conf"
fi
if as_other kill -HUP "$spid" 2>/dev/null; then
	fail "gpool-other cannot make gschedd reload"
else
	ok "gpool-other cannot make gschedd reload"
fi

# the flood: 4 CPUs, 2 x 200 one-second jobs, both users' arrays submitted at once
a=$(as_user gsub --parsable --array=0-199 -o /dev/null -- sleep 1 2>&1)
b=$(as_other gsub --parsable --array=0-199 -o /dev/null -- sleep 1 2>&1)
t0=$(date +%s.%N)
like "$a $b" "^[0-9]+ [0-9]+$" "both users' arrays are accepted ($a, $b)"
sleep 30
t1=$(date +%s.%N)
gstat --json -a >"$TEST_DIR/jobs.json"
as_user gpool share >"$TEST_DIR/share.txt" 2>&1
as_user gpool share --json >"$TEST_DIR/share.json" 2>&1
diag "$(cat "$TEST_DIR/share.txt")"
use=$("$PY" "$GPOOL_SRC_DIR/tests/system/fairshare_usage.py" --at "$t1" <"$TEST_DIR/jobs.json")
diag "run time per user over $(echo "$t1 - $t0" | bc) s: $(echo "$use" | tr '\n' ' ')"
mine=$(echo "$use" | awk -v u="$TEST_USER" '$1 == u {print $2}')
theirs=$(echo "$use" | awk -v u="$OTHER_USER" '$1 == u {print $2}')
frac=$("$PY" -c "print('%.3f' % (${mine:-0} / max(1e-9, ${mine:-0} + ${theirs:-0})))")
check "gpool-user's part of the run time ($frac) is within 10 % of 2/3" \
	"$PY" -c "import sys; sys.exit(0 if abs($frac - 2/3) <= 0.1 * 2/3 else 1)"
pend=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(min(u["pending_jobs"] for u in d["users"]))' "$TEST_DIR/share.json")
check "both users still had jobs waiting when measured (the flood lasted; fewest $pend)" \
	test "${pend:-0}" -gt 0
fs=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = {u["user"]: u for u in d["users"]}
a, b = f[sys.argv[2]], f[sys.argv[3]]
print("%g %g %.4f %.4f %.4f %.4f" % (a["share"], b["share"], a["share_norm"], b["share_norm"], a["factor"], b["factor"]))
' "$TEST_DIR/share.json" "$TEST_USER" "$OTHER_USER")
diag "shares, normalised shares, factors: $fs"
read -r s1 s2 n1 n2 f1 f2 <<<"$fs"
is "$s1 $s2" "2 1" "gpool share --json gives the shares asked"
check "the normalised shares are 2/3 and 1/3" \
	"$PY" -c "import sys; sys.exit(0 if abs($n1 - 2/3) < 1e-3 and abs($n2 - 1/3) < 1e-3 else 1)"
check "the factors are near each other (both near their shares: 2^-1)" \
	"$PY" -c "import sys; sys.exit(0 if abs($f1 - 0.5) < 0.15 and abs($f2 - 0.5) < 0.15 else 1)"
as_user gcancel "$a" >/dev/null 2>&1
as_other gcancel "$b" >/dev/null 2>&1

# the usage survives a restart: gschedd stopped and started again on the same state
before=$(as_user gpool share --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%.0f" % (u["user"], u["cpu_sec"]) for u in d["users"]))')
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM >/dev/null 2>&1
gone() { ! kill -0 "$spid" 2>/dev/null; }
check "gschedd stops on SIGTERM" wait_until 15 gone
out=$("$CLUSTER" sched-start --dir "$CLUSTER_DIR" 2>&1)
is "$?" 0 "gschedd starts again on its state ($out)"
up() { as_user gpool share >/dev/null 2>&1; }
check "gschedd answers after the restart" wait_until 30 up
after=$(as_user gpool share --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%.0f" % (u["user"], u["cpu_sec"]) for u in d["users"]))')
diag "CPU-seconds before the restart: $before; after: $after"
check "the usage is kept over the restart" "$PY" -c '
import sys
b = dict(x.split(":") for x in sys.argv[1].split())
a = dict(x.split(":") for x in sys.argv[2].split())
sys.exit(0 if b and all(abs(float(a.get(u, 0)) - float(v)) <= 2 + 0.01 * float(v) for u, v in b.items()) else 1)
' "$before" "$after"
done_testing
