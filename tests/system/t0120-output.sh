#!/bin/bash
# t0120-output: stdout and stderr are captured apart (-o/-e with %j), large output arrives
# whole, glogs prints it and glogs -f follows a running job.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2

# -- stdout and stderr apart, %j in the pattern
id=$(submit -o "$WORK/out-%j.txt" -e "$WORK/err-%j.txt" -- /bin/sh -c 'echo to-stdout; echo to-stderr >&2')
if [ -n "$id" ] && wait_state "$id" COMPLETED 30; then
	ok "a job writing to both streams completes"
	like "$(as_user glogs "$id" 2>/dev/null)" '^to-stdout$' "glogs prints stdout"
	unlike "$(as_user glogs "$id" 2>/dev/null)" 'to-stderr' "glogs' stdout has no stderr in it"
	like "$(as_user glogs --err "$id" 2>/dev/null)" '^to-stderr$' "glogs --err prints stderr"
	if wait_until 10 test -f "$WORK/out-$id.txt"; then
		ok "-o out-%j.txt became out-$id.txt"
		is "$(cat "$WORK/out-$id.txt")" to-stdout "the -o file holds stdout only"
		is "$(cat "$WORK/err-$id.txt" 2>/dev/null)" to-stderr "the -e file holds stderr only"
		is "$(stat -c %U "$WORK/out-$id.txt")" "$TEST_USER" "the output file belongs to the job's owner"
	else
		fail "-o out-%j.txt became out-$id.txt" "$(ls -la "$WORK")"
	fi
else
	fail "a job writing to both streams completes"
fi

# -- 5 MB of output, checked byte for byte
id=$(submit -o "$WORK/big-%j.out" -- /bin/sh -c 'head -c 5242880 /dev/urandom | base64 -w 100; echo end-of-output')
if [ -n "$id" ] && wait_state "$id" COMPLETED 60; then
	ok "a job writing 5 MB completes"
	as_user glogs "$id" >"$TEST_DIR/big.glogs" 2>/dev/null
	size=$(stat -c %s "$TEST_DIR/big.glogs")
	[ "$size" -gt 7000000 ] && ok "glogs returns all of it ($size bytes)" || fail "glogs returns all of it" "$size bytes"
	is "$(tail -n 1 "$TEST_DIR/big.glogs")" end-of-output "glogs' copy ends with the last line"
	bad=$(grep -cvE '^[A-Za-z0-9+/=]{1,100}$|^end-of-output$' "$TEST_DIR/big.glogs")
	is "$bad" 0 "no line of glogs' copy is torn or mixed"
	if wait_until 10 test -f "$WORK/big-$id.out"; then
		is "$(md5sum <"$WORK/big-$id.out")" "$(md5sum <"$TEST_DIR/big.glogs")" \
			"the -o file and glogs agree (md5)"
		# decodes back to exactly 5 MiB
		n=$(head -n -1 "$WORK/big-$id.out" | tr -d '\n' | base64 -d 2>/dev/null | wc -c)
		is "$n" 5242880 "the output decodes to the 5 MiB the job wrote"
	else
		fail "the -o file of the big job exists"
	fi
else
	fail "a job writing 5 MB completes" "$(job_json "$id")"
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

# -- %j in the default-less pattern of another user is refused for a directory it cannot write
id=$(submit -o /root/forbidden-%j.out -- /bin/echo x)
if [ -n "$id" ]; then
	wait_final "$id" 30
	[ ! -e "/root/forbidden-$id.out" ] && ok "the owner's rights apply to the -o file (none in /root)" ||
		{ fail "the owner's rights apply to the -o file"; rm -f "/root/forbidden-$id.out"; }
else
	ok "an -o file the owner cannot write is refused at submission"
fi

done_testing
