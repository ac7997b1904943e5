#!/bin/bash
# t1262-gpu-share-memory: the card memory each slice of a shared card holds is reported
# (docs/gpu-share.md). On fake cards whose per-process memory the test sets (STATE_DIR/
# fake-card-0.vram, "PID BYTES" lines, as NVML's and ROCm SMI's process lists would say): two
# slices on h1's NVIDIA card and one on h2's AMD card; each job's memory, summed over its own
# processes only (a line of another pid is not counted), shows in gstat --json, gstat -l
# (CardMemory=) and /metrics (gpool_job_card_memory_bytes{job,node,card}, with the peak and the
# budget), follows a change within seconds, keeps the peak; an NVIDIA slice over its budget is
# left to MPS (not stopped by the agent) while an AMD one is stopped with the reason; an ended
# job's lines are gone.
#   h1: RTX 3060 12 GiB (MPS: a stand-in control program)     h2: RX 6700 XT 12 GiB
# timeout: 150
. "$(dirname "$0")/lib.sh"
FAKE_DIR=$(mktemp -d /tmp/gp-owneradmin-fake.XXXXXX)
chmod 0755 "$FAKE_DIR"
cp "$GPOOL_SRC_DIR/worker/node/test/fake-mps-control.sh" "$FAKE_DIR/mps-control"
chmod 0755 "$FAKE_DIR/mps-control"
trap 'rm -rf "$FAKE_DIR"' EXIT
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
test_under_cluster 2 --cpus 4 --sched-arg "--http-listen=127.0.0.1:$port" --worker-arg "--mps-control=$FAKE_DIR/mps-control" --fake-cards \
	"h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W;h2=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W"
at_cleanup 'rm -rf "$FAKE_DIR"'
vram1=$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h1 state)/fake-card-0.vram
vram2=$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h2 state)/fake-card-0.vram

# a slice that writes its pid and waits
slice() { # slice NAME VENDOR
	submit --gpu-share --gpu-vendor "$2" --gpu-mem 4G -o /dev/null -- sh -c "echo \$\$ > $WORK/pid-$1; exec sleep 90"
}
has_pid() { [ -s "$WORK/pid-$1" ]; }
a=$(slice a nvidia)
b=$(slice b nvidia)
c=$(slice c amd)
if wait_state "$a" RUNNING 20 && wait_state "$b" RUNNING 20 && wait_state "$c" RUNNING 20 &&
	wait_until 10 has_pid a && wait_until 10 has_pid b && wait_until 10 has_pid c; then
	ok "two 4 GiB slices run on h1's NVIDIA card, one on h2's AMD card"
else
	fail "the slices run" "$(job_state "$a") $(job_state "$b") $(job_state "$c")"
fi
is "$(job_field "$a" nodelist)|$(job_field "$b" nodelist)|$(job_field "$c" nodelist)" "h1|h1|h2" \
	"a and b on h1, c on h2"
pa=$(cat "$WORK/pid-a") pb=$(cat "$WORK/pid-b") pc=$(cat "$WORK/pid-c")
G=1073741824
# a: 1 GiB + 512 MiB (two allocations); b: 3 GiB; pid 1 (no job's): 8 GiB, counted for none
printf '%s %s\n%s %s\n%s %s\n1 %s\n' "$pa" $G "$pa" $((G / 2)) "$pb" $((3 * G)) $((8 * G)) >"$vram1"
printf '%s %s\n1 %s\n' "$pc" $G $((5 * G)) >"$vram2"

# mem JOB: "NODE:CARD BYTES PEAK BUDGET" of the job's first card_memory entry in gstat --json
mem() {
	job_json "$1" | "$PY" -c "$_PY_RECORDS"'
want = sys.argv[1]
for j in records(lambda x: "state" in x and str(x.get("id", "")) == want):
    m = j.get("card_memory") or []
    if m:
        e = m[0]
        print("%s:%s %d %d %d" % (e.get("node"), e.get("card", 0), int(e.get("bytes", 0)), int(e.get("peak", 0)), int(e.get("budget", 0))))
    else:
        print("none")
    break' "$1"
}
seen() { [ "$(mem "$1" | cut -d' ' -f2)" = "$2" ]; }
check "gstat --json: a's processes hold 1.5 GiB on h1:0 (its two lines summed)" \
	wait_until 15 seen "$a" $((3 * G / 2))
is "$(mem "$a")" "h1:0 $((3 * G / 2)) $((3 * G / 2)) $((4 * G))" "with its peak and its 4 GiB budget"
check "b's: 3 GiB" wait_until 10 seen "$b" $((3 * G))
check "c's on the AMD card: 1 GiB" wait_until 10 seen "$c" $G
is "$(mem "$c" | cut -d' ' -f1)" "h2:0" "c's is on h2's card 0"
like "$(gstat -l -j "$a" 2>&1)" 'CardMemory=h1:0=1.5G\(peak 1.5G\)' "gstat -l shows it"

metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v k="$1{job=\"$2\"," 'index($1, k) == 1 { print $1, $NF }'; }
is "$(metric gpool_job_card_memory_bytes "$a")" "gpool_job_card_memory_bytes{job=\"$a\",node=\"h1\",card=\"0\"} $((3 * G / 2))" \
	"/metrics: gpool_job_card_memory_bytes of a"
is "$(metric gpool_job_card_memory_budget_bytes "$b" | awk '{print $2}')" $((4 * G)) "/metrics: b's budget"
is "$(metric gpool_job_card_memory_bytes "$c" | awk '{print $2}')" $G "/metrics: c's, on the AMD card"

# a frees memory: the figure follows, the peak stays
printf '%s %s\n%s %s\n' "$pa" $((G / 2)) "$pb" $((5 * G)) >"$vram1"
check "a's figure follows the change to 512 MiB" wait_until 10 seen "$a" $((G / 2))
is "$(mem "$a" | cut -d' ' -f3)" $((3 * G / 2)) "its peak stays 1.5 GiB"
check "b's: 5 GiB, over its 4 GiB budget" wait_until 10 seen "$b" $((5 * G))
sleep 3
is "$(job_state "$b")" RUNNING "an NVIDIA slice over its budget is MPS's to refuse: the agent leaves it running"

# the AMD slice over its budget is stopped, with the reason
printf '%s %s\n' "$pc" $((6 * G)) >"$vram2"
if wait_state "$c" FAILED 15; then
	ok "the AMD slice over its budget is stopped"
else
	fail "the AMD slice over its budget is stopped" "$(job_json "$c")"
fi
like "$(job_field "$c" reason)" "OverBudget \(its processes used 6.0G of VRAM on card 0 of h2, over its --gpu-mem budget of 4.0G\)" \
	"with the reason: $(job_field "$c" reason)"

# ended jobs: their lines are gone
as_user gcancel "$a" "$b" >/dev/null 2>&1
check "a ends" wait_final "$a" 20
check "b ends" wait_final "$b" 20
gone() { [ -z "$(metric gpool_job_card_memory_bytes "$a")$(metric gpool_job_card_memory_bytes "$b")$(metric gpool_job_card_memory_bytes "$c")" ]; }
check "/metrics has no line of an ended job" wait_until 10 gone
done_testing
