#!/bin/bash
# t0300-sched-kill: `kill -9 gschedd` in the middle of a 500-job burst (4 parallel gsub loops as
# gpool-user; 1 s jobs on 6 slots, so jobs are queued and running at the kill), then the same gschedd started again on its state directory: every job whose id
# gsub printed (acknowledged) completes exactly once: no job lost, no attempt run again after
# one completed, no two attempts of a job at once, each job in one final state (COMPLETED).
# Every attempt appends "start JOB ATTEMPT RANK T" and "run JOB ATTEMPT RANK START END" lines to
# a marker in the test's work directory (hosts share it; their state and scratch are private).
# timeout: 200
. "$(dirname "$0")/lib.sh"
# 6 slots for 1 s jobs submitted faster than that: at the kill jobs are both running and queued
test_under_cluster 3 --cpus 2 --node-timeout 30s --heartbeat-interval 1s

TOTAL=${T0300_JOBS:-500}
LOOPS=4
marker_setup

# the burst: LOOPS parallel loops, each submitting its share; a submission refused or unanswered
# (the scheduler is away) is retried, and only ids gsub printed count as acknowledged
per=$((TOTAL / LOOPS))
cat >"$WORK/loop.sh" <<'EOF2'
#!/bin/bash
# loop.sh K N TASK: submit N jobs; retry what fails; acknowledged ids to ids.K
k=$1 n=$2 task=$3 dir=$(dirname "$3")
for i in $(seq 1 "$n"); do
	for try in $(seq 1 40); do
		if out=$(gsub --parsable -J "b$k" -- /bin/sh "$task" 1 2>>"$dir/gsub-err.$k"); then
			[[ $out =~ ^[0-9]+$ ]] && echo "$out" >>"$dir/ids.$k"
			break
		fi
		echo "$(date +%s.%N) try $try of $i failed" >>"$dir/fails.$k"
		sleep 0.5
	done
done
EOF2
chmod 0755 "$WORK/loop.sh"
t_burst=$(date +%s.%N)
for k in $(seq 1 $LOOPS); do
	as_user "$WORK/loop.sh" "$k" "$per" "$WORK/task.sh" &
	eval "loop$k=\$!"
done
acked() { cat "$WORK"/ids.* 2>/dev/null | wc -l; }

# kill in the middle: once a third of the burst is acknowledged
wait_until 60 eval '[ "$(acked)" -ge $((TOTAL / 3)) ]' || diag "only $(acked) acknowledged after 60 s"
n_kill=$(acked)
t_kill=$(date +%s.%N)
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
ok "gschedd killed with SIGKILL after $n_kill acknowledged submissions"
sleep 2
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
if wait_until 30 eval 'gstat >/dev/null 2>&1'; then
	t_up=$(date +%s.%N)
	ok "gschedd answers again $("$PY" -c "print(round($t_up - $t_kill, 1))") s after the kill (2 s of it down on purpose)"
else
	fail "gschedd answers again after the restart" "$(tail -n 20 "$CLUSTER_DIR/sched/gschedd.log")"
fi
for k in $(seq 1 $LOOPS); do eval "wait \$loop$k"; done
cat "$WORK"/ids.* >"$WORK/ids"
n=$(wc -l <"$WORK/ids")
nfails=$(cat "$WORK"/fails.* 2>/dev/null | wc -l)
t_acked=$(date +%s.%N)
diag "acknowledged $n of $TOTAL in $("$PY" -c "print(round($t_acked - $t_burst, 1))") s; $nfails submissions failed and were retried"
diag "gsub errors: $(cat "$WORK"/gsub-err.* 2>/dev/null | sort | uniq -c | sort -rn | head -3 | tr '\n' '|')"
is "$n" "$TOTAL" "every submission was acknowledged in the end"

# every acknowledged job ends
alldone() {
	gstat --json -a 2>/dev/null | "$PY" -c '
import json, sys
ids = {int(x) for x in open(sys.argv[1]).read().split()}
d = json.load(sys.stdin)
fin = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
seen = {int(j["id"]): str(j["state"]).upper() for j in d.get("jobs", [])}
sys.exit(0 if all(seen.get(i) in fin for i in ids) else 1)' "$WORK/ids"
}
loaded=$(grep 'jobs loaded' "$CLUSTER_DIR/sched/gschedd.log" | tail -n 1 | sed -n 's/.* \([0-9]*\) jobs loaded.*/\1/p')
[ "${loaded:-0}" -gt 0 ] && ok "the restarted gschedd loaded $loaded unfinished (queued or running) jobs" ||
	fail "the kill hit while jobs were queued or running" "restart loaded '${loaded:-}' jobs"
if wait_until 100 alldone; then
	t_done=$(date +%s.%N)
	ok "every acknowledged job reached a final state ($("$PY" -c "print(round($t_done - $t_kill, 1))") s after the kill)"
else
	fail "every acknowledged job reached a final state" "$(gstat 2>&1 | tail -n 10)"
fi
sleep 1
res=$(analyze "$WORK/ids")
diag "$res"
line=$(head -n 1 <<<"$res")
like "$line" "^accepted $TOTAL " "all $TOTAL acknowledged jobs are accounted for"
like "$line" ' lost 0 ' "no acknowledged job lost"
like "$line" ' repeated 0 ' "none ran again after completing"
like "$line" ' overlapping 0 ' "no two attempts of a job at once"
like "$line" ' notfinal 0 ' "each in one final state"
grep -q 'recover\|adopt\|restor\|load' "$CLUSTER_DIR/sched/gschedd.log" &&
	diag "gschedd on restart: $(grep -i 'recover\|adopt\|restor\|loaded' "$CLUSTER_DIR/sched/gschedd.log" | tail -n 3 | tr '\n' '|')"

done_testing
