#!/bin/bash
# t0100-submit: a job is submitted, runs and completes; exit codes come back; a script job
# carries its content and #GPOOL directives; --stage, --export and --chdir reach the task.
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2

# -- a command that succeeds
out=$(as_user gsub --wait -- /bin/echo hello 2>&1)
rc=$?
is "$rc" 0 "gsub --wait of echo exits 0"
like "$out" '^hello$' "gsub --wait prints the job's output"
id=$(sed -n 's/^Submitted job \([0-9][0-9]*\)$/\1/p' <<<"$out")
like "$id" '^[0-9]+$' "gsub --wait names the job it submitted"
if [ -n "$id" ]; then
	check "gstat shows the job COMPLETED" wait_state "$id" COMPLETED 10
	is "$(job_field "$id" exit_code)" 0 "its exit code is 0"
	is "$(job_field "$id" user)" "$TEST_USER" "it belongs to $TEST_USER"
	like "$(gstat -a -j "$id" 2>&1)" 'COMPLETED|CD' "gstat's table shows it done"
fi

# -- a plain submission returns at once and the job completes
id=$(submit -- /bin/echo plain-output)
like "$id" '^[0-9]+$' "gsub --parsable prints only the job id"
check "the job completes" wait_state "$id" COMPLETED 30
like "$(as_user glogs "$id" 2>&1)" '^plain-output$' "glogs prints its output"

# -- exit codes
out=$(as_user gsub --wait -- /bin/sh -c 'exit 3' 2>&1)
rc=$?
is "$rc" 3 "gsub --wait exits with the job's exit code 3"
id=$(sed -n 's/^Submitted job \([0-9][0-9]*\)$/\1/p' <<<"$out")
if [ -n "$id" ]; then
	check "a job exiting 3 ends FAILED" wait_state "$id" FAILED 10
	is "$(job_field "$id" exit_code)" 3 "gstat reports exit code 3"
else
	fail "gsub --wait names the failing job" "$out"
fi
out=$(as_user gsub --wait -- /nonexistent/program 2>&1)
rc=$?
[ "$rc" != 0 ] && ok "a command that cannot start fails (exit $rc)" || fail "a command that cannot start fails" "$out"

# -- a script job: the content travels (the file is gone before the job runs), directives apply
cat >"$WORK/job.sh" <<'SCRIPT'
#!/bin/sh
#GPOOL -J scripted-job
#GPOOL -t 2:00
echo "script-ran arg=$1 user=$(id -un)"
SCRIPT
chown "$TEST_USER:" "$WORK/job.sh"
chmod 0755 "$WORK/job.sh"
# held until the file is gone, when `gpool release` exists to let it go
hold=""
[ -x "$GPOOL_BIN_DIR/gpool" ] && hold=--hold
id=$(submit $hold job.sh first-arg)
if [ -n "$id" ]; then
	rm -f "$WORK/job.sh"
	is "$(job_field "$id" spec.name)" scripted-job "#GPOOL -J names the job"
	is "$(job_field "$id" spec.time_limit_sec)" 120 "#GPOOL -t sets the time limit"
	if [ -n "$hold" ]; then
		as_user gpool release "$id" >/dev/null 2>&1 || fail "gpool release of the held job"
	else
		skip "hold the job until its script is removed" "gpool is not built"
	fi
	if wait_state "$id" COMPLETED 30; then
		ok "the script job completes after its file was removed"
		like "$(as_user glogs "$id" 2>&1)" "^script-ran arg=first-arg user=$TEST_USER\$" \
			"the script's content ran with its argument, as the owner"
	else
		fail "the script job completes after its file was removed" "$(job_json "$id")"
	fi
else
	fail "gsub $hold job.sh"
fi
out=$(as_user gsub missing-script.sh 2>&1)
[ $? != 0 ] && ok "a missing script is refused" || fail "a missing script is refused" "$out"

# -- --stage: a file shipped to every node's scratch directory (not read from here)
mkdir -p "$WORK/src"
echo "staged-content-$RANDOM" >"$WORK/src/input.txt"
chown -R "$TEST_USER:" "$WORK/src"
want=$(cat "$WORK/src/input.txt")
reader='for d in "${GPOOL_SCRATCH:-}" "${GPOOL_SCRATCH_DIR:-}" "${TMPDIR:-}" .; do
  [ -n "$d" ] && [ -f "$d/input.txt" ] && { cat "$d/input.txt"; exit 0; }; done
echo "input.txt not found (pwd $(pwd), GPOOL_SCRATCH=${GPOOL_SCRATCH:-})"; exit 9'
id=$(submit $hold --stage src/input.txt -- /bin/sh -c "$reader")
if [ -n "$id" ]; then
	rm -rf "$WORK/src"
	[ -z "$hold" ] || as_user gpool release "$id" >/dev/null 2>&1
	wait_final "$id" 30
	is "$(job_state "$id")" COMPLETED "a job reading a staged file completes"
	like "$(as_user glogs "$id" 2>&1)" "^$want\$" "the staged file's content arrived"
else
	fail "gsub --stage"
fi

# -- --export: only what is named (Slurm's semantics), with values set on the command line
out=$(as_user env FOO=bar-$$ BAZ=should-not-pass gsub --wait --export PATH,FOO,ZED=set-here -- \
	/bin/sh -c 'echo "FOO=${FOO:-unset} BAZ=${BAZ:-unset} ZED=${ZED:-unset}"' 2>&1)
like "$out" "^FOO=bar-$$ BAZ=unset ZED=set-here\$" "--export passes FOO and ZED=value, not BAZ"
out=$(as_user env FOO=all-$$ gsub --wait -- /bin/sh -c 'echo "FOO=${FOO:-unset}"' 2>&1)
like "$out" "^FOO=all-$$\$" "the default exports the whole environment"

# -- --chdir
mkdir -p "$TEST_DIR/elsewhere"
chown "$TEST_USER:" "$TEST_DIR/elsewhere"
out=$(as_user gsub --wait --chdir "$TEST_DIR/elsewhere" -- /bin/pwd 2>&1)
like "$out" "^$TEST_DIR/elsewhere\$" "--chdir sets the task's working directory"
out=$(as_user gsub --wait -- /bin/pwd 2>&1)
like "$out" "^$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 scratch)/[^/]+\$" "by default the task runs in its node's scratch directory (docs/commands/gsub.md)"

done_testing
