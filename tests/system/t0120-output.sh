#!/bin/bash
# t0120-output: stdout and stderr are captured apart (-o/-e with %j), merged without -e, large
# output arrives whole, glogs prints it and glogs -f follows a running job.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2

# Output is kept by the scheduler (not on a shared filesystem): -o/-e patterns name the files
# in its output store, <state>/output/<job id>/<expanded pattern> (docs/commands/gsub.md).
stored() { # JOB NAME: path of a stored output file, if there is one
	find "$CLUSTER_DIR/sched" -path "*/$1/$2" -type f 2>/dev/null | head -n 1
}

# -- stdout and stderr apart, %j in the pattern
id=$(submit -o "out-%j.txt" -e "err-%j.txt" -- /bin/sh -c 'echo to-stdout; echo to-stderr >&2')
if [ -n "$id" ] && wait_state "$id" COMPLETED 30; then
	ok "a job writing to both streams completes"
	like "$(as_user glogs "$id" 2>/dev/null)" '^to-stdout$' "glogs prints stdout"
	unlike "$(as_user glogs "$id" 2>/dev/null)" 'to-stderr' "glogs' stdout has no stderr in it"
	like "$(as_user glogs --err "$id" 2>/dev/null)" '^to-stderr$' "glogs --err prints stderr"
	unlike "$(as_user glogs --err "$id" 2>/dev/null)" 'to-stdout' "glogs --err has no stdout in it"
	f=$(stored "$id" "out-$id.txt")
	if [ -n "$f" ]; then
		ok "-o out-%j.txt is stored as out-$id.txt"
		is "$(cat "$f")" to-stdout "the stored stdout file holds stdout only"
		is "$(cat "$(stored "$id" "err-$id.txt")" 2>/dev/null)" to-stderr "the stored err-$id.txt holds stderr only"
	else
		fail "-o out-%j.txt is stored as out-$id.txt" "$(find "$CLUSTER_DIR/sched" -path "*/$id/*" 2>&1)"
	fi
else
	fail "a job writing to both streams completes"
fi

# -- without -e, stderr goes with stdout (as Slurm does)
id=$(submit -- /bin/sh -c 'echo merged-out; echo merged-err >&2')
if [ -n "$id" ] && wait_state "$id" COMPLETED 30; then
	out=$(as_user glogs "$id" 2>/dev/null)
	like "$out" '^merged-out$' "without -e glogs shows stdout"
	like "$out" '^merged-err$' "... and stderr with it"
else
	fail "the merged-output job completes"
fi

# -- about 5.5 MB of output, checked byte for byte against the same command run here
big='seq 1 800000; echo end-of-output'
id=$(submit -o "big-%j.out" -- /bin/sh -c "$big")
want=$(/bin/sh -c "$big" | md5sum)
if [ -n "$id" ] && wait_state "$id" COMPLETED 60; then
	ok "a job writing 5.5 MB completes"
	as_user glogs "$id" >"$TEST_DIR/big.glogs" 2>/dev/null
	size=$(stat -c %s "$TEST_DIR/big.glogs")
	is "$size" "$(/bin/sh -c "$big" | wc -c)" "glogs returns all of it ($size bytes)"
	is "$(md5sum <"$TEST_DIR/big.glogs")" "$want" "glogs' copy is exact (md5)"
	f=$(stored "$id" "big-$id.out")
	[ -n "$f" ] && is "$(md5sum <"$f")" "$want" "the stored file is exact (md5)" ||
		fail "the big job's output is stored as big-$id.out"
	out=$(as_user gsub --wait -- /bin/sh -c "$big" 2>/dev/null | tail -n +2 | md5sum)
	is "$out" "$want" "gsub --wait streams all of it, exactly"
else
	fail "a job writing 5.5 MB completes" "$(job_json "$id")"
fi

# -- glogs -f follows a running job: lines arrive while it runs, and it ends with the job
id=$(submit -- /bin/sh -c 'for i in 1 2 3 4 5 6; do echo "tick $i"; sleep 1; done')
if [ -n "$id" ]; then
	wait_state "$id" RUNNING 20
	as_user glogs -f "$id" >"$TEST_DIR/follow.out" 2>&1 &
	gl=$!
	sleep 2.5
	partial=$(cat "$TEST_DIR/follow.out")
	like "$partial" '^tick 1$' "glogs -f shows lines while the job runs"
	unlike "$partial" 'tick 6' "... before the job has written them all"
	if wait_until 20 sh -c "! kill -0 $gl 2>/dev/null"; then
		ok "glogs -f returns when the job ends"
		wait "$gl"
		is "$?" 0 "glogs -f exits 0"
	else
		fail "glogs -f returns when the job ends"
		kill "$gl" 2>/dev/null
	fi
	is "$(grep -c '^tick [1-6]$' "$TEST_DIR/follow.out")" 6 "glogs -f printed all six lines once"
else
	fail "submit the ticking job"
fi

done_testing
