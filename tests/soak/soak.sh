#!/bin/bash
# soak.sh: faults together under load, then an independent verdict (issue 39; docs/reliability.md,
# "The soak"). Starts a netns cluster (tests/system/lib.sh: 4 hosts, 3 schedulers, node_timeout
# 7 s = 7 heartbeats), runs the workload (tests/soak/workload.py: clients that record every call)
# and the seeded fault schedule (tests/soak/faults.py) side by side, waits for the jobs to end,
# and runs tests/soak/checker.py over what they recorded. Exit 0 when the checker finds no
# violation, 1 when it does or the run failed, 77 when the machine cannot run a cluster.
#
#   tests/soak/soak.sh --seed N (--minutes M | --seconds S) [--hosts H] [--kinds K,...]
#                      [--clients C] [--owner-policy suspend|vacate] [--out DIR]
#
# The seed decides the fault schedule (printed first) and the workload's submissions; `--seed N`
# again replays both. --out DIR keeps the history, the fault log, the tasks' records, the
# checker's report and the daemons' logs there. As root, in the network slot GPOOL_SLOT.
set -u
SOAK_DIR=$(cd "$(dirname "$0")" && pwd)
seed=1 secs=60 hosts=4 kinds="" clients=2 policy=vacate out=""
while [ $# -gt 0 ]; do
	case $1 in
	--seed) seed=$2; shift 2 ;;
	--minutes) secs=$(($2 * 60)); shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--hosts) hosts=$2; shift 2 ;;
	--kinds) kinds=$2; shift 2 ;;
	--clients) clients=$2; shift 2 ;;
	--owner-policy) policy=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[[ $seed =~ ^[0-9]+$ && $secs =~ ^[0-9]+$ && $hosts =~ ^[0-9]+$ && $clients =~ ^[0-9]+$ ]] ||
	{ echo "soak.sh: seed, duration, hosts and clients are whole numbers" >&2; exit 2; }
NODE_TIMEOUT=7 HEARTBEAT=1 KILL_GRACE=2
DRAIN=$((120 + secs / 10))
# lib.sh's watchdog: the run, the drain and the cluster's start and stop
export GPOOL_TEST_LIMIT=${GPOOL_TEST_LIMIT:-$((secs + DRAIN + 180))}
# shellcheck source=tests/system/lib.sh
. "$SOAK_DIR/../system/lib.sh"
TEST_NAME=soak

kind_args=()
[ -z "$kinds" ] || kind_args=(--kinds "$kinds")
"$PY" "$SOAK_DIR/faults.py" plan --seed "$seed" --duration "$secs" --hosts "$hosts" "${kind_args[@]}" ||
	exit 2
diag "soak: seed $seed, $secs s, $hosts hosts, 3 schedulers, $clients clients, owner_policy $policy"
diag "replay: tests/soak/soak.sh --seed $seed --seconds $secs --hosts $hosts${kinds:+ --kinds $kinds} --clients $clients --owner-policy $policy"

test_under_cluster "$hosts" --cpus 2 --schedulers 3 --no-wait \
	--node-timeout "${NODE_TIMEOUT}s" --heartbeat-interval "${HEARTBEAT}s" --kill-grace "${KILL_GRACE}s" \
	--worker-arg --owner-sources=file --worker-arg --owner-idle=1s --worker-arg --owner-poll=200ms \
	--worker-arg "--owner-policy=$policy"

keep_results() {
	[ -n "$out" ] || return 0
	mkdir -p "$out"
	cp "$WORK"/history.jsonl "$WORK"/faults.jsonl "$WORK"/tasks.jsonl "$WORK"/verdict.txt \
		"$WORK"/workload.log "$out"/ 2>/dev/null
	local f
	for f in "$CLUSTER_DIR"/s[0-9]*/gschedd.log "$CLUSTER_DIR"/h[0-9]*/gworkerd.log; do
		[ -f "$f" ] && cp "$f" "$out/$(basename "$(dirname "$f")")-$(basename "$f")"
	done
	return 0
}
at_cleanup keep_results

up() { nodes_up "$hosts"; }
check "a scheduler leads" wait_until 30 sched_leads
check "all $hosts agents registered" wait_until 60 up
# a host's scratch small enough to fill in a moment (1 GiB of tmpfs otherwise)
for i in $(seq 1 "$hosts"); do
	on_host "h$i" mount -o remount,size=64m "$("$CLUSTER" path --dir "$CLUSTER_DIR" "h$i" scratch)" ||
		diag "h$i: scratch not remounted smaller"
done

cp "$SOAK_DIR/task.sh" "$WORK/task.sh"
chmod 0755 "$WORK/task.sh"
: >"$WORK/tasks.jsonl"
chmod 0666 "$WORK/tasks.jsonl"
export SOAK_TASKS=$WORK/tasks.jsonl

# the lease an agent cut off from everyone keeps its jobs for: node_timeout less two
# heartbeats, and one heartbeat more for its last round of questions (docs/reliability.md)
lease=$((NODE_TIMEOUT - HEARTBEAT))
"$PY" "$SOAK_DIR/faults.py" run --seed "$seed" --duration "$secs" --hosts "$hosts" "${kind_args[@]}" \
	--cluster-dir "$CLUSTER_DIR" --gpool-cluster "$CLUSTER" --out "$WORK/faults.jsonl" \
	--lease "$lease" --kill-grace "$KILL_GRACE" --node-timeout "$NODE_TIMEOUT" --heartbeat "$HEARTBEAT" \
	>"$WORK/faults.log" 2>&1 &
fpid=$!
as_user env SOAK_TASKS="$SOAK_TASKS" "$PY" "$SOAK_DIR/workload.py" --dir "$WORK" --task "$WORK/task.sh" \
	--seed "$seed" --duration "$secs" --drain "$DRAIN" --clients "$clients" >"$WORK/workload.log" 2>&1
wrc=$?
wait "$fpid"
frc=$?
is "$wrc" 0 "the workload ran ($(tail -n 1 "$WORK/workload.log"))"
is "$frc" 0 "the fault schedule ran ($(tail -n 1 "$WORK/faults.log"))"
grep -v '^#' "$WORK/faults.log" | grep -v '^faults: [0-9]* injected' | head -n 20 | sed 's/^/# faults: /'
planned=$(sed -n 's/^# fault schedule of seed [0-9]*: \([0-9]*\) faults$/\1/p' "$WORK/faults.log")
injected=$(sed -n 's/^faults: \([0-9]*\) injected.*/\1/p' "$WORK/faults.log")
is "$injected" "$planned" "every fault of the schedule was injected"

"$PY" "$SOAK_DIR/checker.py" "$WORK/faults.jsonl" "$WORK/history.jsonl" "$WORK/tasks.jsonl" >"$WORK/verdict.txt" 2>&1
crc=$?
sed 's/^/# /' "$WORK/verdict.txt" | head -n 200
verdict=$(grep '^soak-check: ' "$WORK/verdict.txt")
is "$crc" 0 "the checker finds no violation: $verdict"
done_testing
