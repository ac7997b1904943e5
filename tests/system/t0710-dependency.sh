#!/bin/bash
# t0710-dependency: gsub --dependency. afterok waits for a job to complete (reason Dependency
# meanwhile) and starts after it ended; afternotok on a job that completed can never be met
# (DependencyNeverSatisfied); afterany runs after a failure; after waits only for the start;
# afterok on an array waits for every task; '?' is any-of; singleton runs same-named jobs one
# at a time; a dependency on a job that does not exist is refused; and a dependent job keeps
# waiting across `kill -9 gschedd` and a restart, then runs once its dependency is met.
# timeout: 180
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2 --node-timeout 30s --heartbeat-interval 1s

reason() { job_field "$1" reason; }
t_start() { job_field "$1" start_time; }
t_end() { job_field "$1" end_time; }
ge() { "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) - 0.001 else 1)" "$1" "$2"; }

# -- afterok: waits, then runs after the end
a=$(submit -- /bin/sleep 3)
b=$(submit --dependency=afterok:"$a" -- /bin/echo b-ran)
if [ -n "$a" ] && [ -n "$b" ]; then
	check "the first job runs" wait_state "$a" RUNNING 20
	sleep 1
	is "$(job_state "$b")" PENDING "afterok:$a pends while $a runs"
	is "$(reason "$b")" Dependency "its reason is Dependency"
	like "$(gstat 2>&1)" "(^| )$b .*\(Dependency\)" "gstat shows (Dependency)"
	check "the dependent job completes" wait_state "$b" COMPLETED 30
	check "it started after its dependency ended" ge "$(t_start "$b")" "$(t_end "$a")"
	is "$(as_user glogs "$b" 2>&1)" b-ran "it ran its command"
fi

# -- gsub --wait says a pending job's reason
w=$(submit -- /bin/sleep 3)
out=$(as_user gsub --wait --dependency=afterok:"$w" -- /bin/echo waited 2>&1)
is "$?" 0 "gsub --wait of a dependent job exits 0"
like "$out" "gsub: job [0-9]+ pending: Dependency" "it says on stderr that the job pends for its dependency"
like "$out" "waited" "then streams its output"

# -- afternotok on a job that completed: never
c=$(submit --dependency=afternotok:"$a" -- /bin/true)
if [ -n "$c" ]; then
	check "afternotok on a completed job: DependencyNeverSatisfied" \
		wait_until 10 eval '[ "$(reason '"$c"')" = DependencyNeverSatisfied ]'
	is "$(job_state "$c")" PENDING "it stays pending (as Slurm, until cancelled)"
	check "it can be cancelled" as_user gcancel "$c"
fi

# -- afterany after a failure; afternotok after a failure
f=$(submit -- /bin/sh -c 'exit 4')
d=$(submit --dependency=afterany:"$f" -- /bin/true)
e=$(submit --dependency=afternotok:"$f" -- /bin/true)
g=$(submit --dependency=afterok:"$f" -- /bin/true)
check "afterany on a failing job runs" wait_state "$d" COMPLETED 30
check "afternotok on a failing job runs" wait_state "$e" COMPLETED 30
check "afterok on a failing job: DependencyNeverSatisfied" \
	wait_until 10 eval '[ "$(reason '"$g"')" = DependencyNeverSatisfied ]'
as_user gcancel "$g" >/dev/null 2>&1

# -- '?': any one suffices
h=$(submit --dependency="afterok:$f?afterany:$f" -- /bin/true)
check "afterok:F?afterany:F runs (one of them holds)" wait_state "$h" COMPLETED 30

# -- after: the start is enough
s=$(submit -- /bin/sleep 4)
i=$(submit --dependency=after:"$s" -- /bin/true)
check "after:J runs once J started" wait_state "$i" COMPLETED 30
check "... before J ended" eval '[ "$(job_state '"$s"')" = RUNNING ]'

# -- afterok on an array waits for every task
arr=$(submit --array=0-3 -- /bin/sh -c 'sleep $((1 + GPOOL_ARRAY_TASK_ID % 2))')
k=$(submit --dependency=afterok:"$arr" -- /bin/true)
if [ -n "$arr" ] && [ -n "$k" ]; then
	check "afterok on the array runs" wait_state "$k" COMPLETED 60
	latest=0
	for t in 0 1 2 3; do
		e_t=$(t_end "$((arr + t))")
		"$PY" -c "import sys; sys.exit(0 if float('$e_t') > float('$latest') else 1)" && latest=$e_t
	done
	check "it started after the array's last task ended" ge "$(t_start "$k")" "$latest"
fi
# on one task of an array
k2=$(submit --dependency=afterok:"${arr}_2" -- /bin/true)
check "afterok:${arr}_2 runs" wait_state "$k2" COMPLETED 30

# -- singleton
s1=$(submit -J one-at-a-time --dependency=singleton -- /bin/sleep 2)
s2=$(submit -J one-at-a-time --dependency=singleton -- /bin/sleep 1)
if [ -n "$s1" ] && [ -n "$s2" ]; then
	check "the second singleton completes" wait_state "$s2" COMPLETED 40
	check "it started after the first ended" ge "$(t_start "$s2")" "$(t_end "$s1")"
fi

# -- refused at submission
out=$(as_user gsub --dependency=afterok:987654 -- /bin/true 2>&1)
rc=$?
[ $rc != 0 ] && like "$out" "job 987654 not found" "a dependency on an unknown job is refused" ||
	fail "a dependency on an unknown job is refused" "exit $rc: $out"
for bad in afterok before:1 'afterok:1,afterok:2?afterany:3' afterok:x; do
	out=$(as_user gsub --dependency="$bad" -- /bin/true 2>&1)
	is "$?" 2 "gsub --dependency=$bad is a usage error"
done

# -- kept across a scheduler restart
long=$(submit -- /bin/sleep 6)
dep=$(submit --dependency=afterok:"$long" -- /bin/echo after-restart)
if [ -n "$long" ] && [ -n "$dep" ]; then
	check "the long job runs" wait_state "$long" RUNNING 20
	"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL
	sleep 1
	"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
	check "gschedd answers again" wait_until 30 eval 'gstat >/dev/null 2>&1'
	is "$(job_state "$dep")" PENDING "after the restart the dependent job still pends"
	like "$(reason "$dep")" '^Dependency$' "... for its dependency"
	check "it completes after the long job" wait_state "$dep" COMPLETED 60
	check "it started after the long job ended" ge "$(t_start "$dep")" "$(t_end "$long")"
	is "$(as_user glogs "$dep" 2>&1)" after-restart "and ran once"
fi
done_testing
