#!/bin/bash
# t1312-step-memory: job steps share their allocation's memory (docs/interactive.md). In an
# allocation of 120 MB (gsub --alloc --mem 120M), a step that holds 90 MB alone completes; its
# cgroup is inside the allocation's. Two steps at once that hold 90 MB and 50 MB, each under
# the allocation's 120 MB but not together, cannot both finish: one ends OUT_OF_MEMORY (the
# kernel's choice of which), the allocation runs on and its next step completes. Before steps
# were nested each had the allocation's limit of its own, and both completed.
# timeout: 200
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2
need_bins grun
[ -r /sys/fs/cgroup/memory/memory.limit_in_bytes ] ||
	skip_all "no cgroup v1 memory controller here (steps nest in their job's group on v1 only)"

cat >"$WORK/hold.py" <<'PY'
import os, sys, time
mb, name = int(sys.argv[1]), sys.argv[2]
work = os.environ["WORK"]
block = b"\x01" * (mb << 20)  # written, so resident
open(os.path.join(work, name + ".held"), "w").close()
while not os.path.exists(os.path.join(work, "go")) and name != "alone":
    time.sleep(0.1)
print(name, "held", len(block) >> 20, "MB")
PY
cat >"$WORK/inside.sh" <<'SH'
#!/bin/sh
grun -- sh -c 'grep memory /proc/self/cgroup; python3 "$WORK/hold.py" 90 alone' >"$WORK/alone.out" 2>"$WORK/alone.err"
echo "rc_alone=$?" >"$WORK/rc_alone"
grun -- python3 "$WORK/hold.py" 90 big >"$WORK/big.out" 2>"$WORK/big.err" &
while [ ! -e "$WORK/big.held" ]; do sleep 0.1; done
grun -- python3 "$WORK/hold.py" 50 small >"$WORK/small.out" 2>"$WORK/small.err" &
small=$!
# both hold their memory now, or the kernel has killed one: then they are let go
while [ ! -e "$WORK/small.held" ] && kill -0 "$small" 2>/dev/null; do sleep 0.1; done
touch "$WORK/go"
wait
grun -- echo "next step ran" >"$WORK/next.out" 2>"$WORK/next.err"
echo "rc_next=$?" >"$WORK/rc_next"
while [ ! -e "$WORK/done" ]; do sleep 0.2; done
SH
chmod 0755 "$WORK/inside.sh" "$WORK/hold.py"
(as_user env WORK="$WORK" gsub --alloc -N 1 --mem 120M -- "$WORK/inside.sh" >"$WORK/a.out" 2>"$WORK/a.err"
	echo $? >"$WORK/a.rc") &
check "the allocation's first step ended" wait_until 90 test -s "$WORK/rc_alone"
is "$(cat "$WORK/rc_alone")" "rc_alone=0" "a step holding 90 MB of the allocation's 120 MB completes"
like "$(cat "$WORK/alone.out")" "alone held 90 MB" "its output"
A=$(sed -n 's/^grun: step [0-9]* of job \([0-9]*\).*/\1/p' "$WORK/alone.err" | head -1)
S=$(sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' "$WORK/alone.err" | head -1)
like "$(grep memory "$WORK/alone.out")" "/gpool/job$A\\.1\\.h1/job$S\\.1\\.h1\$" \
	"the step's memory cgroup is inside the allocation's ($(grep memory "$WORK/alone.out"))"
check "the two steps at once ended" wait_until 90 test -s "$WORK/rc_next"
B=$(sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' "$WORK/big.err" | head -1)
M=$(sed -n 's/^grun: step \([0-9]*\) of job .*/\1/p' "$WORK/small.err" | head -1)
states="$(job_state "$B") $(job_state "$M")"
diag "90 MB step $B: $(job_state "$B"), 50 MB step $M: $(job_state "$M")"
like "$states" "OUT_OF_MEMORY" "one of the two steps (90 + 50 MB together) ran out of the allocation's memory ($states)"
unlike "$states" "COMPLETED COMPLETED" "they did not both complete"
is "$(job_state "$A")" RUNNING "the allocation runs on"
is "$(cat "$WORK/rc_next")" "rc_next=0" "its next step completes"
like "$(cat "$WORK/next.out")" "next step ran" "with its output"
touch "$WORK/done"
check "the allocation ends with its command" wait_until 30 test -s "$WORK/a.rc"
done_testing
