#!/bin/bash
# t0200-limits: the memory limit is enforced with cgroups: a --mem 50M job that touches 200 MB
# ends OUT_OF_MEMORY and leaves nothing behind; one that stays within its limit completes.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 1

if ! on_host h1 sh -c '[ -w /sys/fs/cgroup/memory/cgroup.procs ] ||
	grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null'; then
	skip_all "no writable memory cgroup on the test hosts"
fi
ok "h1 sees a writable memory cgroup"

hog='import time; b = b"x" * (200 << 20); print("allocated", len(b)); time.sleep(2)'
id=$(submit --mem 50M -- /usr/bin/python3 -c "$hog")
if [ -n "$id" ] && wait_final "$id" 40; then
	is "$(job_state "$id")" OUT_OF_MEMORY "a 50 MB job touching 200 MB ends OUT_OF_MEMORY"
	unlike "$(as_user glogs "$id" 2>/dev/null)" '^allocated' "it never got the 200 MB"
	diag "reason: $(job_field "$id" reason), exit code $(job_field "$id" exit_code)"
else
	fail "the memory hog ends" "$(job_json "$id")"
fi
check "nothing of it is left on h1" wait_until 10 no_user_pids h1

out=$(as_user gsub --wait --mem 100M -- /usr/bin/python3 -c 'b = b"x" * (10 << 20); print("fits", len(b))' 2>&1)
like "$out" '^fits 10485760$' "a job within its limit completes"

# the limit also counts the children of the task
id=$(submit --mem 50M -- /bin/sh -c "/usr/bin/python3 -c '$hog'; echo after")
if [ -n "$id" ] && wait_final "$id" 40; then
	s=$(job_state "$id")
	diag "a task whose child was killed by the limit ends $s"
	todo "a child over the limit makes the job OUT_OF_MEMORY (as Slurm)" \
		"gworkerd reports oom only when the task itself was SIGKILLed (worker/stepd/task.c)" \
		[ "$s" = OUT_OF_MEMORY ]
fi

done_testing
