#!/bin/bash
# t1311-exclusive-steps: `grun --exclusive` inside an allocation of 2 tasks (gsub --alloc -N 2):
# an exclusive step of 2 tasks runs; a second exclusive step waits (PENDING, "waiting for 1 of
# job A's 2 tasks (0 free)") while a plain step still runs at once on the shared tasks; when
# the first ends, the second starts and completes; an exclusive step of 3 tasks is refused at
# once (it could never fit). Each step's rank runs on a task of its own: the first's two ranks
# on the allocation's two nodes.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2
need_bins grun

cat >"$WORK/inside.sh" <<'SH'
#!/bin/sh
grun --exclusive -n 2 -- sh -c 'echo "first rank=$RANK host=$(hostname)"; touch "$WORK/first.run"; while [ ! -e "$WORK/go" ]; do sleep 0.2; done' >"$WORK/first.out" 2>"$WORK/first.err" &
while [ ! -e "$WORK/first.run" ]; do sleep 0.2; done
grun --exclusive -- sh -c 'echo "second ran"' >"$WORK/second.out" 2>"$WORK/second.err" &
grun -- sh -c 'echo "shared ran"' >"$WORK/shared.out" 2>"$WORK/shared.err"
echo "rc_shared=$?" >"$WORK/rc_shared"
grun --exclusive -n 3 -- true 2>"$WORK/three.err"
echo "rc_three=$?" >"$WORK/rc_three"
wait
SH
chmod 0755 "$WORK/inside.sh"
(as_user env WORK="$WORK" gsub --alloc -N 2 -- "$WORK/inside.sh" >"$WORK/a.out" 2>"$WORK/a.err"
	echo $? >"$WORK/a.rc") &
check "the exclusive 2-task step runs" wait_until 60 test -e "$WORK/first.run"
check "a plain step runs at once beside it" wait_until 30 test -s "$WORK/rc_shared"
is "$(cat "$WORK/rc_shared")" "rc_shared=0" "and completes (grun exits 0)"
like "$(cat "$WORK/shared.out")" "^shared ran" "with its output"
check "grun --exclusive -n 3 is refused at once" wait_until 30 test -s "$WORK/rc_three"
is "$(cat "$WORK/rc_three")" "rc_three=1" "grun exits 1"
like "$(cat "$WORK/three.err")" "^grun: an exclusive step of 3 tasks can never run in job [0-9]+, which has 2" \
	"saying why ($(cat "$WORK/three.err"))"
second_id() { sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' "$WORK/second.err"; }
check "the second exclusive step was submitted" wait_until 20 eval '[ -n "$(second_id)" ]'
S2=$(second_id)
sleep 2
is "$(job_state "$S2")" PENDING "the second exclusive step waits while the first holds both tasks"
like "$(job_field "$S2" reason)" "waiting for 1 of job [0-9]+'s 2 tasks \\(0 free\\)" \
	"its reason: $(job_field "$S2" reason)"
is "$(cat "$WORK/second.out" 2>/dev/null)" "" "it printed nothing yet"
touch "$WORK/go"
check "once the first ends, the second runs and completes" wait_state "$S2" COMPLETED 30
like "$(cat "$WORK/second.out")" "^second ran" "its output"
out=$(cat "$WORK/first.out")
h0=$(sed -n 's/^first rank=0 host=//p' <<<"$out")
h1=$(sed -n 's/^first rank=1 host=//p' <<<"$out")
isnt=$([ -n "$h0" ] && [ "$h0" != "$h1" ] && echo yes)
is "$isnt" yes "the first step's two ranks ran on the allocation's two tasks ($h0, $h1)"
wait_until 30 test -s "$WORK/a.rc"
is "$(cat "$WORK/a.rc")" 0 "the allocation's command ended (gsub exits 0)"
done_testing
