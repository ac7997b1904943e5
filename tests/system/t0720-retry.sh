#!/bin/bash
# t0720-retry: commands ride out a scheduler restart. With gschedd killed, gsub keeps asking
# (saying so on stderr) and succeeds once gschedd is back; a burst of 200 submissions from 4
# loops (no retrying of their own) across `kill -9 gschedd` and a start 2 s later: every gsub
# exits 0 and every acknowledged id is one job, with no second job made by a request that was
# sent again (the submission token); --retry-for 0 fails at once with the "no answer" message.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2

# -- one gsub while gschedd is away
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
as_user gsub --parsable -J lone -- /bin/true >"$WORK/lone.out" 2>"$WORK/lone.err" &
pid=$!
sleep 2
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
wait $pid
is "$?" 0 "gsub started while gschedd was down succeeds once it is back"
like "$(cat "$WORK/lone.err")" "no answer from the scheduler at .* yet; trying again for up to 60 s" \
	"it says on stderr that it is trying again"
id=$(cat "$WORK/lone.out")
like "$id" '^[0-9]+$' "it prints the job id"
[ -n "$id" ] && check "the job completes" wait_state "$id" COMPLETED 30

# -- a burst across a kill and a restart
TOTAL=200 LOOPS=4
cat >"$WORK/loop.sh" <<'EOF2'
#!/bin/bash
k=$1 n=$2 dir=$3
for i in $(seq 1 "$n"); do
	if out=$(gsub --parsable -J burst -- /bin/true 2>>"$dir/err.$k"); then
		echo "$out" >>"$dir/ids.$k"
	else
		echo "gsub $i failed" >>"$dir/fails.$k"
	fi
done
EOF2
chmod 0755 "$WORK/loop.sh"
for k in $(seq 1 $LOOPS); do
	as_user "$WORK/loop.sh" "$k" $((TOTAL / LOOPS)) "$WORK" &
	eval "loop$k=\$!"
done
acked() { cat "$WORK"/ids.* 2>/dev/null | wc -l; }
wait_until 60 eval '[ "$(acked)" -ge $((TOTAL / 3)) ]' || diag "only $(acked) acknowledged after 60 s"
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
diag "gschedd killed after $(acked) acknowledged submissions"
sleep 2
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
for k in $(seq 1 $LOOPS); do eval "wait \$loop$k"; done
is "$(cat "$WORK"/fails.* 2>/dev/null | wc -l)" 0 "no gsub of the burst failed"
is "$(acked)" $TOTAL "all $TOTAL submissions were acknowledged"
is "$(cat "$WORK"/ids.* | sort -u | wc -l)" $TOTAL "with $TOTAL distinct job ids"
n=$(gstat --json -a 2>/dev/null | "$PY" -c '
import json, sys
print(sum(1 for j in json.load(sys.stdin).get("jobs", []) if j.get("spec", {}).get("name") == "burst"))')
is "$n" $TOTAL "the scheduler holds exactly $TOTAL jobs named burst (no duplicate from a retried request)"
retried=$(cat "$WORK"/err.* 2>/dev/null | grep -c "trying again")
diag "$retried gsub of the burst said they were trying again"

# -- no retrying
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
t0=$SECONDS
out=$(as_user gsub --retry-for 0 -- /bin/true 2>&1)
rc=$?
[ $rc != 0 ] && ok "gsub --retry-for 0 fails while gschedd is down (exit $rc)" || fail "gsub --retry-for 0 fails while gschedd is down"
like "$out" "no answer from the scheduler" "it says there is no answer"
unlike "$out" "trying again" "and does not try again"
[ $((SECONDS - t0)) -le 15 ] && ok "within one call's wait ($((SECONDS - t0)) s)" || fail "within one call's wait" "took $((SECONDS - t0)) s"
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
check "gschedd answers again" wait_until 30 eval 'gstat >/dev/null 2>&1'
done_testing
