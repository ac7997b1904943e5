#!/bin/bash
# t0330-diskfull: gschedd's state directory on a small tmpfs (4 MiB) that is then filled up:
# submissions are refused with a clear error (gsub exits non-zero and names the cause),
# gschedd keeps running, nothing acknowledged before is lost (also across a restart), and once
# space returns submissions work again. Then the same with the state directory remounted
# read-only (unwritable).
# timeout: 100
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 4

ST=$CLUSTER_DIR/sched/state
# move the state onto a small tmpfs under the stopped scheduler
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM
wait_until 10 eval '! kill -0 $(cat "$CLUSTER_DIR/sched/gschedd.pid") 2>/dev/null'
mkdir -p "$TEST_DIR/state.save"
cp -a "$ST/." "$TEST_DIR/state.save/"
mount -t tmpfs -o size=4m,mode=0755 gp-t0330 "$ST"
at_cleanup "umount -l '$ST' 2>/dev/null"
cp -a "$TEST_DIR/state.save/." "$ST/"
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
check "gschedd runs again with its state on a 4 MiB tmpfs" wait_until 20 eval 'gstat >/dev/null 2>&1'
wait_node_state h1 UP 20 || diag "h1 not UP: $(gnodes 2>&1)"

# acknowledged before the disk fills: 3 held (pending) jobs and 3 completed ones
held=() done_ids=()
for i in 1 2 3; do held+=("$(submit -H -J held$i -- /bin/true)"); done
for i in 1 2 3; do done_ids+=("$(submit -J done$i -- /bin/echo ok$i)"); done
for j in "${done_ids[@]}"; do wait_state "$j" COMPLETED 20 || true; done
acked=("${held[@]}" "${done_ids[@]}")
is "$(printf '%s\n' "${acked[@]}" | grep -c '^[0-9][0-9]*$')" 6 "6 jobs acknowledged before the disk fills"

# fill the tmpfs
dd if=/dev/zero of="$ST/filler" bs=64k 2>/dev/null || true
diag "state tmpfs: $(df -h "$ST" | tail -n 1)"
# a job with a 48 KiB script: the store must grow for it
big=$WORK/big.sh
{ echo '#!/bin/sh'; for i in $(seq 700); do echo "# padding line $i ............................................................"; done; echo 'echo big'; } >"$big"
chmod 0644 "$big"
refused=0 accepted_full=() msg=""
for i in $(seq 1 20); do
	t0=$(date +%s%N)
	if out=$(as_user gsub --parsable "$big" 2>&1); then
		accepted_full+=("$out")
	else
		refused=1
		msg=$out
		dt=$((($(date +%s%N) - t0) / 1000000))
		break
	fi
done
diag "accepted while full before the first refusal: ${#accepted_full[@]}"
if [ $refused = 1 ]; then
	ok "a submission on the full disk is refused (gsub exit non-zero after $dt ms)"
	like "$msg" 'cannot save jobs now \(cannot save state: database or disk is full\)' "the error names the cause: $msg"
else
	fail "a submission on the full disk is refused" "20 submissions accepted"
fi
pid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
kill -0 "$pid" 2>/dev/null && ok "gschedd still runs" || fail "gschedd still runs" "$(tail -n 20 "$CLUSTER_DIR/sched/gschedd.log")"
out=$(gstat -a 2>&1)
check "gstat answers while the disk is full" eval 'gstat -a >/dev/null 2>&1'
grep -i 'space\|full\|cannot save' "$CLUSTER_DIR/sched/gschedd.log" | tail -n 3 | sed 's/^/# sched: /'

# space returns
rm -f "$ST/filler"
sleep 0.5
id=$(submit -J after -- /bin/echo after-space)
[ -n "$id" ] && check "after space returns a submission works and runs" wait_state "$id" COMPLETED 20 ||
	fail "after space returns a submission works" "no id"
acked+=("${accepted_full[@]}")

# nothing acknowledged is lost, also across a restart
states() { local j s=""; for j in "${acked[@]}"; do s+="$(job_state "$j") "; done; echo "$s"; }
s=$(states)
like "$s" '^(PENDING ){3}(COMPLETED ){3}' "the jobs acknowledged before are all there ($s)"
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
sleep 1
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
wait_until 20 eval 'gstat >/dev/null 2>&1'
s2=$(states)
is "$s2" "$s" "and still after kill -9 and a restart"
for j in "${accepted_full[@]}"; do
	[ -n "$(job_state "$j")" ] || fail "job $j accepted on the nearly full disk is kept"
done

# unwritable: a mount with a file open for writing cannot be made read-only, so gschedd is
# stopped, its state directory remounted read-only and gschedd started on it: it must either
# refuse to start with an error naming the cause, or run and refuse every submission
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM
wait_until 10 eval '! kill -0 $(cat "$CLUSTER_DIR/sched/gschedd.pid") 2>/dev/null'
if mount -o remount,ro "$ST"; then
	ok "the state directory is read-only now"
	: >"$TEST_DIR/log.mark"
	logsize=$(stat -c %s "$CLUSTER_DIR/sched/gschedd.log")
	"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
	sleep 3
	rolog=$(tail -c +$((logsize + 1)) "$CLUSTER_DIR/sched/gschedd.log")
	if kill -0 "$(cat "$CLUSTER_DIR/sched/gschedd.pid")" 2>/dev/null; then
		out=$(as_user gsub --parsable -- /bin/true 2>&1)
		rc=$?
		[ $rc != 0 ] && ok "gschedd runs on the read-only state and refuses a submission (exit $rc)" ||
			fail "a submission on a read-only state directory is refused" "accepted as $out"
		like "$out" 'cannot save jobs now \(cannot save state: .*(readonly|read-only|disk I/O error)' "the error names the cause: $out"
		"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM
		wait_until 10 eval '! kill -0 $(cat "$CLUSTER_DIR/sched/gschedd.pid") 2>/dev/null'
	else
		ok "gschedd refuses to start on a read-only state directory"
		cause=$(grep ' error: cannot set up ' <<<"$rolog" | tail -n 1)
		like "$cause" "cannot set up '$ST/jobs\\.db': (unable to open database file|attempt to write a readonly database)" "its log names the cause: $cause"
	fi
	mount -o remount,rw "$ST"
else
	fail "the state directory can be remounted read-only"
fi
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
check "gschedd runs again on the writable state" wait_until 20 eval 'gstat >/dev/null 2>&1'
id=$(submit -J afterro -- /bin/echo after-ro)
[ -n "$id" ] && check "writable again: a submission works and runs" wait_state "$id" COMPLETED 20 ||
	fail "writable again: a submission works" "no id"
s3=$(states)
is "$s3" "$s" "the acknowledged jobs are unchanged"
# the scheduler must not keep the tmpfs busy when the cluster stops
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM
wait_until 10 eval '! kill -0 $(cat "$CLUSTER_DIR/sched/gschedd.pid") 2>/dev/null'

done_testing
