#!/bin/bash
# t0731-job-shell: single-task jobs of one user that are not an array (separate gsub runs) share
# a supervisor on a node (a gstepd task shell, docs/gworkerd.md "Task shells") and still keep
# everything a supervisor of their own gives: each its own cgroup with its own memory limit, its
# own environment, its own exit status, and exact accounting (gacct's CPU time is the job's
# own, not its siblings'); two users never share a shell; a job the shells do not take (here
# --stage) gets a supervisor of its own; the shell exits once idle; batch scripts share one.
# timeout: 180
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 8 --kill-grace 2s

cgroups=0
on_host h1 sh -c '[ -w /sys/fs/cgroup/memory/cgroup.procs ] ||
	grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null' && cgroups=1

# What every job prints: its supervisor (pid and name), how many of its cgroup lines name its
# own job, its cgroup's memory limit (v1 memory.limit_in_bytes or v2 memory.max; a test host
# sees its own part of the hierarchy at /sys/fs/cgroup, so the leading parts of the path
# /proc/self/cgroup gives are dropped until the file is there), and the variables its
# submission set
probe='lim() { while [ -n "$2" ] && [ ! -r "$1$2/$3" ]; do case $2 in /*/*) set -- "$1" "/${2#/*/}" "$3" ;; *) set -- "$1" "" "$3" ;; esac; done
	[ -n "$2" ] && cat "$1$2/$3"; }
echo "sup $PPID $(cat /proc/$PPID/comm)"
echo "cg $(grep -c "job${GPOOL_JOB_ID}\." /proc/self/cgroup)"
m=$(lim /sys/fs/cgroup/memory "$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)" memory.limit_in_bytes)
[ -n "$m" ] || m=$(lim /sys/fs/cgroup "$(sed -n "s/^0:://p" /proc/self/cgroup)" memory.max)
echo "mem $m"
echo "var ${MARK:-unset} ${ONLY2:-unset}"'
N=6
ids=()
for i in $(seq 1 $N); do
	exp=ALL,MARK=job$i
	[ "$i" = 2 ] && exp=$exp,ONLY2=yes
	id=$(submit --mem $((32 * i))M --export=$exp -- /bin/sh -c "$probe; sleep 4; exit $i") ||
		break
	ids+=("$id")
done
is "${#ids[@]}" $N "$N separate single-task jobs submitted"

# a second user's jobs on the same node at the same time, and two jobs the shells do not take
O1=$(as_other gsub --parsable -- /bin/sh -c 'echo "sup $PPID"; sleep 4' 2>&1)
O2=$(as_other gsub --parsable -- /bin/sh -c 'echo "sup $PPID"; sleep 4' 2>&1)
echo "staged" >"$WORK/in.txt"
chmod 0644 "$WORK/in.txt"
S1=$(cd "$WORK" && submit --stage in.txt -- /bin/sh -c 'echo "sup $PPID"; cat in.txt; sleep 3')
S2=$(cd "$WORK" && submit --stage in.txt -- /bin/sh -c 'echo "sup $PPID"; cat in.txt; sleep 3')

for id in "${ids[@]}" $O1 $O2 $S1 $S2; do wait_final "$id" 60 >/dev/null 2>&1 || true; done
sups="" good_cg=0 good_mem=0 good_var=0 good_exit=0 mems=""
for k in $(seq 0 $((N - 1))); do
	i=$((k + 1)) id=${ids[$k]}
	out=$(as_user glogs "$id" 2>&1)
	sups="$sups $(sed -n 's/^sup \([0-9]*\) gstepd$/\1/p' <<<"$out")"
	n=$(sed -n 's/^cg //p' <<<"$out")
	[ "${n:-0}" -ge 1 ] && good_cg=$((good_cg + 1))
	m=$(sed -n 's/^mem //p' <<<"$out")
	mems="$mems $m"
	[ "$m" = $((32 * i * 1048576)) ] && good_mem=$((good_mem + 1))
	want="var job$i unset"
	[ "$i" = 2 ] && want="var job$i yes"
	grep -qx "$want" <<<"$out" && good_var=$((good_var + 1)) || diag "job $id ($i): '$out'"
	[ "$(job_field "$id" exit_code)" = "$i" ] && good_exit=$((good_exit + 1))
done
nsup=$(tr ' ' '\n' <<<"$sups" | grep -c .)
ndist=$(tr ' ' '\n' <<<"$sups" | grep . | sort -u | wc -l)
is "$nsup" $N "each job's parent is a gstepd"
[ "$nsup" = $N ] && [ "$ndist" -lt $N ] && ok "the $N jobs ran in fewer supervisors than jobs ($ndist)" ||
	fail "the $N jobs ran in fewer supervisors than jobs" "$ndist distinct of $nsup:$sups"
is "$ndist" 1 "all $N (running at once) shared one task shell"
is "$good_var" $N "each job's environment is its own (MARK set per job, ONLY2 in job 2 only)"
is "$good_exit" $N "each job's exit code is its own (1..$N)"
if [ $cgroups = 1 ]; then
	is "$good_cg" $N "each job runs in a cgroup named after its own job"
	is "$good_mem" $N "each job's cgroup has its own memory limit (--mem 32M x i):$mems"
else
	skip "each job in its own cgroup with its own limit" "no writable memory cgroup on the test hosts"
fi

# two users never share a shell
osups=$(for id in $O1 $O2; do as_other glogs "$id" 2>&1 | sed -n 's/^sup //p'; done | sort -u)
is "$(grep -c . <<<"$osups")" 1 "gpool-other's two jobs share their own shell"
shared=$(comm -12 <(tr ' ' '\n' <<<"$sups" | grep . | sort -u) <(grep . <<<"$osups" | sort -u))
is "$shared" "" "no supervisor ran jobs of both users"

# the staged jobs: a supervisor each, shared with no one
s1=$(as_user glogs "$S1" 2>&1 | sed -n 's/^sup //p')
s2=$(as_user glogs "$S2" 2>&1 | sed -n 's/^sup //p')
is "$(job_state "$S1") $(job_state "$S2")" "COMPLETED COMPLETED" "the two --stage jobs complete"
like "$(as_user glogs "$S1" 2>&1)" "staged" "and read their staged file"
if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" != "$s2" ] &&
	! grep -qw -e "$s1" -e "$s2" <<<"$sups $osups"; then
	ok "each --stage job had a supervisor of its own ($s1, $s2)"
else
	fail "each --stage job had a supervisor of its own" "staged: '$s1' '$s2'; shells:$sups / $osups"
fi

# accounting: three jobs in one shell burn 0.3, 0.6 and 0.9 s of CPU; gacct gives each its own
burn='import os, resource, time
want = float(os.environ["BURN"])
while True:
    r = resource.getrusage(resource.RUSAGE_SELF)
    if r.ru_utime + r.ru_stime >= want:
        break
print("sup", os.getppid())
print("self", r.ru_utime + r.ru_stime)
time.sleep(1)'
B=()
for b in 0.3 0.6 0.9; do
	B+=("$(submit --export=ALL,BURN=$b -- /usr/bin/python3 -c "$burn")")
done
acct_ok=0 bsups=""
for id in "${B[@]}"; do
	wait_final "$id" 60 >/dev/null 2>&1 || true
	out=$(as_user glogs "$id" 2>&1)
	bsups="$bsups $(sed -n 's/^sup //p' <<<"$out")"
	self=$(sed -n 's/^self //p' <<<"$out")
	cpu=$(as_user gacct --json "$id" 2>/dev/null | "$PY" -c "$_PY_RECORDS"'
for j in records(lambda x: "cpu_sec" in x):
    print(j["cpu_sec"]); break')
	# the job's own CPU (what it measured of itself, plus python's exit), not its siblings'
	if [ -n "$self" ] && [ -n "$cpu" ] && "$PY" -c "import sys; s, c = map(float, sys.argv[1:]); sys.exit(0 if s <= c <= s + 0.25 else 1)" "$self" "$cpu"; then
		acct_ok=$((acct_ok + 1))
	else
		diag "job $id: measured itself ${self:-?} s, gacct says ${cpu:-?} s"
	fi
done
is "$(tr ' ' '\n' <<<"$bsups" | grep . | sort -u | wc -l)" 1 "the three CPU burners shared one shell"
is "$acct_ok" 3 "gacct's CPU time of each is its own (within 0.25 s above what it measured of itself)"

# the shell closes once idle
sup=$(tr ' ' '\n' <<<"$bsups" | grep . | head -n 1)
[ -n "$sup" ] && check "the shell exits once idle" wait_until 15 sh -c "! kill -0 $sup 2>/dev/null"

# -- batch scripts share a shell too: each job's script is written into its own working
# directory as the user (the file is the user's), and runs with its own variables and exit
# status
cat >"$WORK/batch.sh" <<'EOF'
#!/bin/sh
#GPOOL -J batch-in-shell
echo "sup $PPID $(cat /proc/$PPID/comm)"
echo "own $(stat -c %U "$0") $(id -un)"
echo "mark $MARK"
sleep 2
exit 3
EOF
chmod 0755 "$WORK/batch.sh"
S=()
for m in a b c; do S+=("$(cd "$WORK" && submit --export=ALL,MARK=$m batch.sh)"); done
good=0 ssups=""
k=0
for m in a b c; do
	id=${S[$k]}
	k=$((k + 1))
	wait_final "$id" 60 >/dev/null 2>&1 || true
	out=$(as_user glogs "$id" 2>&1)
	ssups="$ssups $(sed -n 's/^sup \([0-9]*\) gstepd$/\1/p' <<<"$out")"
	if grep -qx "own $TEST_USER $TEST_USER" <<<"$out" && grep -qx "mark $m" <<<"$out" &&
		[ "$(job_field "$id" exit_code)" = 3 ]; then
		good=$((good + 1))
	else
		diag "job $id (exit $(job_field "$id" exit_code)): $out"
	fi
done
is "$(tr ' ' '\n' <<<"$ssups" | grep -c .) $(tr ' ' '\n' <<<"$ssups" | grep . | sort -u | wc -l)" "3 1" \
	"three batch scripts ran under one gstepd shell"
is "$good" 3 "each script was written as the user and ran with its own variables and exit status"
done_testing
