#!/bin/bash
# t1243-fairshare-cards: the same flood as t1240 with card jobs: 2 hosts with 2 fake cards and
# 4 CPUs each (the cards are what is short), shares 1:2 this time (gpool-other the larger), both
# users flood the queue with one-card jobs; their card-time converges to 1:2 (gpool-user's part
# within 10 % of 1/3) and gpool share counts card-seconds.
# timeout: 200
. "$(dirname "$0")/lib.sh"
card='nvidia:GeForce RTX 3060:12GiB:8.6:170W'
GPOOL_TEST_LIMIT=200 test_under_cluster 2 --cpus 4 --fake-cards "h1=$card,$card;h2=$card,$card"
need_bins gpool

spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
printf 'fairshare_shares = %s:1,%s:2\nfairshare_half_life = 1h\n' "$TEST_USER" "$OTHER_USER" \
	>>"$CLUSTER_DIR/gpool.conf"
kill -HUP "$spid"
reloaded() { grep -q "reload: fairshare_shares = '$TEST_USER:1,$OTHER_USER:2'" "$slog"; }
check "gschedd applies fairshare_shares on SIGHUP" wait_until 10 reloaded

a=$(as_user gsub --parsable --array=0-199 --gpus 1 -o /dev/null -- sleep 1 2>&1)
b=$(as_other gsub --parsable --array=0-199 --gpus 1 -o /dev/null -- sleep 1 2>&1)
like "$a $b" "^[0-9]+ [0-9]+$" "both users' arrays of one-card jobs are accepted ($a, $b)"
sleep 30
t1=$(date +%s.%N)
gstat --json -a >"$TEST_DIR/jobs.json"
as_user gpool share --json >"$TEST_DIR/share.json" 2>&1
diag "$(as_user gpool share 2>&1)"
use=$("$PY" "$GPOOL_SRC_DIR/tests/system/fairshare_usage.py" --at "$t1" <"$TEST_DIR/jobs.json")
diag "card-time per user: $(echo "$use" | tr '\n' ' ')"
mine=$(echo "$use" | awk -v u="$TEST_USER" '$1 == u {print $2}')
theirs=$(echo "$use" | awk -v u="$OTHER_USER" '$1 == u {print $2}')
frac=$("$PY" -c "print('%.3f' % (${mine:-0} / max(1e-9, ${mine:-0} + ${theirs:-0})))")
check "gpool-user's part of the card-time ($frac) is within 10 % of 1/3" \
	"$PY" -c "import sys; sys.exit(0 if abs($frac - 1/3) <= 0.1 / 3 else 1)"
read -r pend cs <<<"$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(min(u["pending_jobs"] for u in d["users"]), min(u["card_sec"] for u in d["users"]))' "$TEST_DIR/share.json")"
check "both users still had jobs waiting when measured (fewest $pend)" test "${pend:-0}" -gt 0
check "gpool share counts both users' card-seconds (least $cs)" \
	"$PY" -c "import sys; sys.exit(0 if ${cs:-0} > 5 else 1)"
as_user gcancel "$a" >/dev/null 2>&1
as_other gcancel "$b" >/dev/null 2>&1
done_testing
