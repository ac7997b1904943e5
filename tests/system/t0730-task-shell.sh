#!/bin/bash
# t0730-task-shell: the tasks of an array that land on one node share one supervisor (a gstepd
# task shell, docs/gworkerd.md) and still keep everything a supervisor of their own gives:
# each its own cgroup, exit status, output and state; cancelling one task, one over its time
# limit and one over its memory limit leave their siblings running and completing; the shell
# exits once idle.
# timeout: 180
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 4 --kill-grace 2s
# the test user's sleep processes on this cluster's host (other slots run the same user's jobs)
user_sleeps() { cluster_pgrep -u "$TEST_USER" -x sleep; }
user_sleeps_at_least() { [ "$(user_sleeps | wc -l)" -ge "$1" ]; }
no_user_sleep() { ! user_sleeps >/dev/null; }

cgroups=0
on_host h1 sh -c '[ -w /sys/fs/cgroup/memory/cgroup.procs ] ||
	grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null' && cgroups=1

# -- the agent put the kernel's cgroup migration lock in favordynmods mode (cgroup_dynmods.h),
# so a task joins its cgroup without waiting an RCU grace period: its log says so, and the
# kernel shows it (cgroup2's mount options; on v1 the hierarchy it mounted)
if [ "$cgroups" = 1 ]; then
	like "$(grep favordynmods "$CLUSTER_DIR/h1/gworkerd.log")" \
		'info: cgroups: favordynmods (already on|turned on: )' "the agent turned favordynmods on"
	check "the kernel has a cgroup hierarchy with favordynmods" on_host h1 sh -c \
		'grep -q " - cgroup2 .*favordynmods" /proc/self/mountinfo || grep -q ":name=gpool-dynmods:" /proc/self/cgroup'
else
	skip "favordynmods" "no writable cgroup controller on h1"
fi

# -- four tasks at once: one supervisor, four cgroups, four exit statuses, four outputs
A=$(submit --array=0-3 -- /bin/sh -c \
	'echo "sup $PPID $(cat /proc/$PPID/comm)"; echo "cg $(grep -c "job${GPOOL_JOB_ID}\." /proc/self/cgroup)"; sleep 2; echo "task $GPOOL_ARRAY_TASK_ID"; exit $GPOOL_ARRAY_TASK_ID')
if [ -n "$A" ]; then
	check "every task ends" wait_final "$((A + 3))" 60
	for i in 0 1 2 3; do wait_final "$((A + i))" 20 2>/dev/null || true; done
	sups="" good=0 cg=0
	for i in 0 1 2 3; do
		id=$((A + i))
		out=$(as_user glogs "$id" 2>&1)
		sups="$sups $(sed -n 's/^sup \([0-9]*\) gstepd$/\1/p' <<<"$out")"
		grep -qx "task $i" <<<"$out" && good=$((good + 1)) || diag "task $i: '$out'"
		n=$(sed -n 's/^cg //p' <<<"$out")
		[ "${n:-0}" -ge 1 ] && cg=$((cg + 1))
	done
	is "$(tr ' ' '\n' <<<"$sups" | grep -c .)" 4 "each task's parent is a gstepd"
	is "$(tr ' ' '\n' <<<"$sups" | grep . | sort -u | wc -l)" 1 "the four tasks share one supervisor"
	is "$good" 4 "each task's output is its own"
	if [ $cgroups = 1 ]; then
		is "$cg" 4 "each task runs in a cgroup named after its own job (job<id>.<attempt>.<node>)"
	else
		skip "each task in its own cgroup" "no writable memory cgroup on the test hosts"
	fi
	is "$(job_state "$A")" COMPLETED "task 0 exited 0: COMPLETED"
	st=""
	for i in 1 2 3; do st="$st $(job_state "$((A + i))"):$(job_field "$((A + i))" exit_code)"; done
	is "$st" " FAILED:1 FAILED:2 FAILED:3" "tasks 1-3 failed with their own exit codes 1, 2, 3"
	sup=$(tr ' ' '\n' <<<"$sups" | grep . | head -n 1)
	[ -n "$sup" ] && check "the shell exits once idle" wait_until 15 sh -c "! kill -0 $sup 2>/dev/null"
fi

# -- cancelling one task: its siblings in the same shell keep running
C=$(submit --array=0-2 -- /bin/sleep 30)
if [ -n "$C" ]; then
	for i in 0 1 2; do wait_state "$((C + i))" RUNNING 30 || true; done
	wait_until 10 user_sleeps_at_least 3
	pp=$(for p in $(user_sleeps); do ps -o ppid= -p "$p"; done | sort -u | tr -d ' ')
	is "$(grep -c . <<<"$pp")" 1 "three sleeping tasks, one supervisor ($(echo $pp))"
	check "gcancel ${C}_1 succeeds" as_user gcancel "${C}_1"
	check "task 1 ends CANCELLED" wait_state "$((C + 1))" CANCELLED 20
	sleep 1
	is "$(job_state "$C") $(job_state "$((C + 2))")" "RUNNING RUNNING" "tasks 0 and 2 still run"
	is "$(user_sleeps | wc -l)" 2 "two sleep processes are left"
	check "the shell is still there" kill -0 "$pp"
	check "gcancel $C cancels the rest" as_user gcancel "$C"
	check "task 2 ends CANCELLED" wait_state "$((C + 2))" CANCELLED 20
	check "no task process is left" wait_until 10 no_user_sleep
fi

# -- a task over its time limit: the others (started while it runs) complete
T=$(submit --array=0-3%2 -t 0:04 -- /bin/sh -c \
	'echo "sup $PPID"; if [ "$GPOOL_ARRAY_TASK_ID" = 1 ]; then trap "" TERM; sleep 60; else sleep 1; fi; echo ok')
if [ -n "$T" ]; then
	check "task 1 ends TIMEOUT" wait_state "$((T + 1))" TIMEOUT 40
	for i in 0 2 3; do wait_final "$((T + i))" 30 2>/dev/null || true; done
	is "$(job_state "$T") $(job_state "$((T + 2))") $(job_state "$((T + 3))")" \
		"COMPLETED COMPLETED COMPLETED" "tasks 0, 2 and 3 complete"
	outs=""
	for i in 0 2 3; do outs="$outs $(as_user glogs "$((T + i))" 2>&1 | grep -c '^ok$')"; done
	is "$outs" " 1 1 1" "and print their output"
	sups=$(for i in 0 1 2 3; do as_user glogs "$((T + i))" 2>&1 | sed -n 's/^sup //p'; done | sort -u | wc -l)
	[ "$sups" -le 2 ] && ok "the tasks ran in a shared supervisor ($sups for 4 tasks)" ||
		fail "the tasks ran in a shared supervisor" "$sups supervisors for 4 tasks"
fi

# -- a task over its memory limit is OUT_OF_MEMORY; its sibling completes
if [ $cgroups = 1 ]; then
	hog='import os, time
if os.environ["GPOOL_ARRAY_TASK_ID"] == "0":
    b = b"x" * (200 << 20)
    print("allocated", len(b))
time.sleep(2)
print("fine")'
	M=$(submit --array=0-1 --mem 50M -- /usr/bin/python3 -c "$hog")
	if [ -n "$M" ]; then
		wait_final "$M" 40 || true
		wait_final "$((M + 1))" 40 || true
		is "$(job_state "$M") $(job_state "$((M + 1))")" "OUT_OF_MEMORY COMPLETED" \
			"task 0 over its memory limit is OUT_OF_MEMORY, task 1 COMPLETED"
		like "$(as_user glogs "$((M + 1))" 2>&1)" '^fine' "task 1 printed its output"
	fi
else
	skip "a task over its memory limit, its sibling completes" "no writable memory cgroup"
fi

# -- a shell's next task takes the cgroup of the task before it (the same directory, renamed to
# the new job's name) with its own limits: an earlier task's OOM kill is not the next one's;
# the idle groups go when the shell does
if [ $cgroups = 1 ]; then
	reuse='import os
cg = [l.split(":")[2].strip() for l in open("/proc/self/cgroup") if l.split(":")[1] == "memory"][0]
print("sup", os.getppid())
print("cg", os.stat("/sys/fs/cgroup/memory/gpool/" + os.path.basename(cg)).st_ino, cg)
if os.environ["GPOOL_ARRAY_TASK_ID"] == "0":
    b = b"x" * (200 << 20)
print("fine")'
	R=$(submit --array=0-3%1 --mem 50M -- /usr/bin/python3 -c "$reuse")
	if [ -n "$R" ]; then
		for i in 0 1 2 3; do wait_final "$((R + i))" 40 || true; done
		st="" inos="" names=0 sups=""
		for i in 0 1 2 3; do
			st="$st $(job_state "$((R + i))")"
			out=$(as_user glogs "$((R + i))" 2>&1)
			sups="$sups $(sed -n 's/^sup //p' <<<"$out")"
			read -r ino path <<<"$(sed -n 's/^cg //p' <<<"$out")"
			inos="$inos $ino"
			case "$path" in */job$((R + i)).1.h*) names=$((names + 1)) ;; *) diag "task $i: cgroup '$path': $out" ;; esac
		done
		is "$st" " OUT_OF_MEMORY COMPLETED COMPLETED COMPLETED" \
			"one after another in 50M: task 0 OUT_OF_MEMORY, the three after it COMPLETED"
		is "$names" 4 "each ran in a cgroup named after its own job"
		sup=$(tr ' ' '\n' <<<"$sups" | grep . | sort -u)
		if [ "$(grep -c . <<<"$sup")" = 1 ]; then
			is "$(tr ' ' '\n' <<<"$inos" | grep . | sort -u | wc -l)" 1 \
				"in one shell, the four ran in the same cgroup directory (inode$inos)"
			check "the shell exits once idle" wait_until 15 sh -c "! kill -0 $sup 2>/dev/null"
			is "$(on_host h1 sh -c "ls -d /sys/fs/cgroup/*/gpool/idle.s$sup.* 2>/dev/null | wc -l")" 0 \
				"no idle cgroup of the shell is left behind"
		else
			skip "one cgroup directory for four tasks" "the tasks ran in $(echo $sup | wc -w) shells"
		fi
	fi
else
	skip "a shell's cgroups taken again" "no writable memory cgroup"
fi

done_testing
