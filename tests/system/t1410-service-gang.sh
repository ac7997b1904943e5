#!/bin/bash
# t1410-service-gang: a service replica that is a gang of ranks on several PCs (issue 37's
# "the room"): `gsub --service -N 2-3` runs one replica as 3 ranks, one a host, started
# together (each prints its rank; rank 0 serves HTTP, reached through ggated); a host switched
# off (its link cut) ends the whole replica, which is served again by 2 ranks on the hosts
# left; when the host comes back the replica is re-planned onto 3. The seconds from the host
# off to served again, and from its return to 3 ranks, are printed (docs/benchmarks.md). A gang
# of --gpus-per-task 0-1 mixes a card rank (h1's fake card) with CPU-only ranks. A rank's PC
# whose owner comes back (policy suspend) has its rank vacated, not frozen: the replica runs on
# the other 2 PCs, and on 3 again once the owner is idle.
# timeout: 240
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 3 --node-timeout 4s --heartbeat-interval 1s --kill-grace 2s \
	--fake-cards "h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W" \
	--worker-arg --owner-sources=file --worker-arg --owner-idle=2s --worker-arg --owner-poll=100ms
need_bins ggated
command -v curl >/dev/null || skip_all "curl is not installed"

GW=127.0.0.1:$(slot_port 18850)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--health-interval 300 --connect-timeout 400 --poll-interval 300 --client-timeout 3000 \
	>"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

# each rank says who it is (stdout, and a file per attempt and rank); rank 0 serves the size of
# its gang and the attempt
D=$WORK/gang
mkdir -p "$D"
chmod 0777 "$D"
RANKS='echo "rank $GPOOL_RANK of $GPOOL_SIZE on $GPOOL_NODENAME"
echo "$GPOOL_NODENAME" >'"$D"'/a$GPOOL_ATTEMPT-r$GPOOL_RANK
if [ "$GPOOL_RANK" = 0 ]; then
	mkdir -p '"$D"'/www$GPOOL_ATTEMPT
	echo "size=$GPOOL_SIZE attempt=$GPOOL_ATTEMPT" >'"$D"'/www$GPOOL_ATTEMPT/id
	exec python3 -m http.server --bind 0.0.0.0 --directory '"$D"'/www$GPOOL_ATTEMPT "$GPOOL_PORT"
fi
exec sleep 100000'
svc=$(submit --service -N 2-3 --health-path /id -J gang -- /bin/sh -c "$RANKS")
[[ $svc =~ ^[0-9]+$ ]] || { fail "a gang service is submitted" "$svc"; done_testing; }

# ranks of replica 0: "JOB RANKS WANTED READY"
gang() {
	gstat --json -j "$svc" 2>/dev/null | "$PY" -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    sys.exit(0)
for j in d.get("jobs", []):
    for r in j.get("replicas", []):
        print(r.get("job_id", 0), r.get("ranks", 0), r.get("ranks_wanted", 0), "yes" if r.get("ready") else "no")
'
}
ready_ranks() { gang | awk '$4 == "yes" {print $2}'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
served() { curl -s -m 1 "http://$GW/svc/gang/id" 2>/dev/null | cut -d' ' -f1; }
wait_eq 40 3 ready_ranks || { fail "the replica runs 3 ranks" "$(gang)"; done_testing; }
read -r rjob _ wanted _ < <(gang)
is "$wanted" 3 "a replica of 3 ranks at most (job $rjob)"
wait_eq 15 size=3 served && ok "rank 0 answers through ggated: $(curl -s -m 1 "http://$GW/svc/gang/id")" || fail "served by 3 ranks" "$(served)"
att=$(job_field "$rjob" attempt)
for r in 0 1 2; do [ -s "$D/a$att-r$r" ] || break; done
is "$(cat "$D"/a"$att"-r* 2>/dev/null | sort -u | wc -l)" 3 "its 3 ranks ran on 3 hosts ($(cat "$D"/a"$att"-r* | tr '\n' ' '))"
out=$(as_user glogs "$rjob" 2>/dev/null)
like "$out" "rank 2 of 3 on h[1-3]" "the ranks' output is the replica's (glogs: $(echo "$out" | grep "^rank" | tr '\n' ';'))"

# -- a host switched off: the one running rank 1 (rank 0's would do as well: the whole replica goes)
off=$(cat "$D/a$att-r1")
veth=$(slot_veth "$off")
at_cleanup "ip link set $veth up 2>/dev/null"
t0=$(date +%s.%N)
ip link set "$veth" down
wait_eq 60 size=2 served
t1=$(date +%s.%N)
if [ "$(served)" = size=2 ]; then
	ok "served again by 2 ranks $(secs "$t0" "$t1") s after $off was switched off"
else
	fail "served again by 2 ranks" "$(gang) / $(served)"
fi
diag "bench: gang replica served again $(secs "$t0" "$t1") s after a host off (node_timeout 4 s)"
att2=$(job_field "$rjob" attempt)
hosts2=$(cat "$D"/a"$att2"-r* 2>/dev/null | sort -u | tr '\n' ' ')
is "$(cat "$D"/a"$att2"-r* 2>/dev/null | sort -u | wc -l)" 2 "attempt $att2 runs 2 ranks on 2 hosts ($hosts2)"
unlike "$hosts2" "$off" "not on $off"
read -r _ nr nw _ < <(gang)
is "$nr/$nw" 2/3 "gstat shows the replica at 2 of 3 ranks"
like "$(as_user gstat -l -j "$svc" 2>/dev/null)" "Ranks=2/3" "gstat -l says Ranks=2/3"

# -- gschedd restarts meanwhile: the 2-rank replica is re-adopted as it runs (its stored spec says 2)
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL >/dev/null 2>&1
"$CLUSTER" sched-start --dir "$CLUSTER_DIR" >/dev/null 2>&1
readopted() { gang | awk '{print $2 "/" $3 " " $4}'; }
wait_eq 30 "2/3 yes" readopted && ok "after a gschedd restart the replica runs on as 2 of 3 ranks" || fail "re-adopted on 2 ranks" "$(gang)"
is "$(job_field "$rjob" attempt)" "$att2" "in the same attempt ($att2)"
is "$(served)" size=2 "still served by it"

# -- the host comes back: the replica is re-planned onto 3
t2=$(date +%s.%N)
ip link set "$veth" up
wait_eq 60 size=3 served
t3=$(date +%s.%N)
if [ "$(served)" = size=3 ]; then
	ok "back to 3 ranks $(secs "$t2" "$t3") s after $off returned"
else
	fail "back to 3 ranks" "$(gang) / $(served)"
fi
diag "bench: gang replica back on 3 ranks $(secs "$t2" "$t3") s after the host returned"
att3=$(job_field "$rjob" attempt)
is "$(cat "$D"/a"$att3"-r* 2>/dev/null | sort -u | wc -l)" 3 "attempt $att3 runs on 3 hosts again"
like "$(grep -h "re-planned" "$CLUSTER_DIR"/sched/*.log 2>/dev/null | tail -3)" "re-planned onto more nodes|re-planned from 2 to 3" "gschedd logs the re-plan"

# -- the owner of a rank's PC comes back (owner_policy suspend): the rank is vacated, not frozen
att=$(job_field "$rjob" attempt)
own=$(cat "$D/a$att-r2")
OWNER=$("$CLUSTER" path --dir "$CLUSTER_DIR" "$own" state)/owner-active
t4=$(date +%s.%N)
on_host "$own" touch "$OWNER"
at_cleanup "on_host $own rm -f $OWNER"
wait_eq 30 size=2 served
t5=$(date +%s.%N)
[ "$(served)" = size=2 ] && ok "served by 2 ranks $(secs "$t4" "$t5") s after $own's owner came back" || fail "served by 2 ranks after the owner came back" "$(gang) / $(served)"
diag "bench: gang replica served again $(secs "$t4" "$t5") s after a rank's owner came back"
like "$(cat "$CLUSTER_DIR/$own/gworkerd.log")" "owner: vacating job $rjob\\.$att" "$own's agent vacated the rank"
unlike "$(cat "$CLUSTER_DIR/$own/gworkerd.log")" "owner: job $rjob\\.$att frozen" "and did not freeze it"
att2=$(job_field "$rjob" attempt)
unlike "$(cat "$D"/a"$att2"-r* 2>/dev/null | tr '\n' ' ')" "$own" "attempt $att2 is not on $own"
is "$(job_field "$rjob" vacates)" 1 "gstat counts the vacate"
on_host "$own" rm -f "$OWNER"
wait_eq 30 size=3 served && ok "back on 3 ranks once the owner is idle" || fail "back on 3 after the owner left" "$(gang) / $(served)"

as_user gcancel "$svc" >/dev/null 2>&1
none_left() { no_user_pids h1 && no_user_pids h2 && no_user_pids h3; }
wait_until 20 none_left && ok "gcancel leaves no rank running" || fail "no rank left" "$(cluster_user_pids)"

# -- card ranks and CPU-only ranks in one replica: h1 has a card, h2 and h3 none
MIX='echo "$GPOOL_NODENAME gpus=$GPOOL_GPUS cuda=$CUDA_VISIBLE_DEVICES" >'"$D"'/mix-r$GPOOL_RANK
[ "$GPOOL_RANK" = 0 ] && exec python3 -m http.server --bind 0.0.0.0 --directory '"$D"' "$GPOOL_PORT"
exec sleep 100000'
mix=$(submit --service -N 3 --gpus-per-task 0-1 -J mix -- /bin/sh -c "$MIX")
mixed() { cat "$D"/mix-r* 2>/dev/null | wc -l; }
if [[ $mix =~ ^[0-9]+$ ]] && wait_eq 30 3 mixed; then
	diag "$(cat "$D"/mix-r*)"
	is "$(cat "$D"/mix-r* | grep -c '^h1 gpus=0:nvidia')" 1 "the rank on h1 got its card"
	is "$(cat "$D"/mix-r* | grep -c '^h[23] gpus= cuda=$')" 2 "the ranks on h2 and h3 run without one"
else
	fail "a gang of card and CPU-only ranks runs" "$mix: $(cat "$D"/mix-r* 2>/dev/null)"
fi
as_user gcancel "$mix" >/dev/null 2>&1
wait_until 20 none_left || fail "no rank left after the mixed gang" "$(cluster_user_pids)"
done_testing
