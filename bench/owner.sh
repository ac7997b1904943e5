#!/bin/bash
# bench/owner.sh — how fast a PC is given back to its owner (docs/owner.md): over N trials,
# the time from the owner's activity (the file source's file created) to
#
#   frozen   owner_policy = suspend: the job's cgroup frozen (the agent's "frozen" log line,
#            written once the freezer reports every process frozen)
#   freed    owner_policy = vacate: the job's card freed, i.e. its process gone (a card job on
#            a fake card that exits on the checkpoint signal; the bench polls /proc/PID every
#            5 ms from outside)
#
# Both from the owner file's mtime (its creation: what the agent can first see); the frozen
# trials also print the time from the start of the `touch` command, which includes entering the
# host's namespaces (tens to hundreds of ms on a loaded machine).
#
# on a 2-host netns cluster (deploy/gpool-cluster), owner_poll (default 200ms: the file is
# read that often) and owner_idle 1s. One machine, one clock: the agent's log time stamps and
# the bench's `date` compare. Prints every trial, then p50 and max.
#
#   flock /tmp/gpool-netns.lock bench/owner.sh [--trials N] [--poll DURATION] [--log FILE]
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
N=20 POLL=200ms LOG=""
while [ $# -gt 0 ]; do
	case $1 in
	--trials) N=$2; shift 2 ;;
	--poll) POLL=$2; shift 2 ;;
	--log) LOG=$2; shift 2 ;;
	*) echo "usage: $0 [--trials N] [--poll DURATION] [--log FILE]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "owner.sh: needs root (network namespaces)" >&2; exit 77; }
[ -z "$LOG" ] || exec > >(tee "$LOG") 2>&1
DIR=/tmp/gpool-cluster-ownerbench
CL="$SRC/deploy/gpool-cluster"
"$CL" start -n 2 --dir "$DIR" --bin "$BIN" --cpus 2 --fake-cards default \
	--worker-arg --owner-sources=file --worker-arg --owner-idle=1s \
	--worker-arg "--owner-poll=$POLL" >/tmp/owner-bench-start.log 2>&1 ||
	{ echo "owner.sh: the cluster did not start" >&2; tail -5 /tmp/owner-bench-start.log >&2; exit 1; }
WORK=""
trap '"$CL" stop --dir "$DIR" >/dev/null 2>&1; [ -z "$WORK" ] || rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT
eval "$("$CL" env --dir "$DIR")"
export GPOOL_SCHEDULER GPOOL_CONF
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" /tmp/gpool-cluster-ownerbench-user) || exit 1
WORK=$(mktemp -d /tmp/gpool-ownerbench.XXXXXX)
chmod 0777 "$WORK"
cd "$WORK" || exit 1
STATE=$("$CL" path --dir "$DIR" h1 state)
OWNER=$STATE/owner-active
ALOG=$DIR/h1/gworkerd.log
APID=$(cat "$DIR/h1/gworkerd.pid")
as_user() { runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
on_h1() { "$CL" exec --dir "$DIR" h1 "$@"; }
logts() { python3 -c 'import sys, datetime; print("%.6f" % datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp())' "$1"; }
state() {
	gstat --json -a -j "$1" 2>/dev/null | python3 -c '
import json, sys
def walk(x):
    if isinstance(x, dict):
        if "state" in x and str(x.get("id", x.get("job_id", ""))) == sys.argv[1]:
            print(str(x["state"]).upper().replace("JOB_STATE_", "")); sys.exit(0)
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(json.load(sys.stdin))' "$1" 2>/dev/null
}
wait_for() { local t=$1; shift; local end=$((SECONDS + t)); until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.05; done; }
stats() { sort -n | awk '{v[NR] = $1} END {if (!NR) {print "none"; exit} printf "p50 %.3f s, max %.3f s (%d trials)\n", v[int((NR + 1) / 2)], v[NR], NR}'; }
idle_agent() { grep -c "owner: idle" "$ALOG"; }

echo "# owner: owner activity -> job frozen / card freed, $N trials each, owner_poll $POLL, owner_idle 1s"
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- suspend: one long CPU job on h1, frozen and thawed N times ---------------------------------
job=$(as_user gsub --parsable -w h1 -t 30 -- sh -c 'while :; do :; done')
wait_for 30 eval '[ "$(state "$job")" = RUNNING ]' || { echo "owner.sh: the CPU job did not start"; exit 1; }
sleep 1
: >"$WORK/frozen"
for i in $(seq 1 "$N"); do
	# shellcheck disable=SC2034 # read by the eval below
	n=$(grep -c "owner: job $job.1 frozen" "$ALOG")
	t0=$(date +%s.%N)
	on_h1 touch "$OWNER"
	if ! wait_for 5 eval '[ $(grep -c "owner: job $job.1 frozen" "$ALOG") -gt $n ]'; then
		echo "frozen trial $i: no freeze in 5 s"; on_h1 rm -f "$OWNER"; continue
	fi
	ts=$(grep "owner: job $job.1 frozen" "$ALOG" | tail -1 | awk '{print $1}')
	tm=$(on_h1 stat -c %.9Y "$OWNER")
	dt=$(python3 -c "print('%.3f' % ($(logts "$ts") - $tm))")
	dc=$(python3 -c "print('%.3f' % ($(logts "$ts") - $t0))")
	echo "frozen trial $i: $dt s from the file's creation, $dc s from the touch command's start (the freeze itself: $(grep "owner: job $job.1 frozen" "$ALOG" | tail -1 | sed 's/.*frozen (//; s/)//'))"
	echo "$dt" >>"$WORK/frozen"
	# shellcheck disable=SC2034 # read by the eval below
	m=$(grep -c "owner: job $job.1 thawed" "$ALOG")
	on_h1 rm -f "$OWNER"
	wait_for 10 eval '[ $(grep -c "owner: job $job.1 thawed" "$ALOG") -gt $m ]' || echo "frozen trial $i: not thawed"
	sleep 0.3
done
as_user gcancel "$job" >/dev/null 2>&1
wait_for 30 eval '[ "$(state "$job")" = CANCELLED ]'

# ---- vacate: a card job pinned to h1, vacated N times (it runs again when the owner leaves) ----
echo "owner_policy = vacate" >>"$GPOOL_CONF"
kill -HUP "$APID"
wait_for 10 grep -q "owner: policy vacate" "$ALOG" || { echo "owner.sh: the agent did not take owner_policy = vacate"; exit 1; }
cat >"$WORK/card.sh" <<'SH'
#!/bin/sh
echo $$ >/tmp/ownerbench-pid.$GPOOL_ATTEMPT
trap 'exit 0' TERM
while :; do sleep 0.05; done
SH
chmod 0755 "$WORK/card.sh"
job=$(as_user gsub --parsable -w h1 -t 30 --gpus 1 --stage card.sh -- ./card.sh)
: >"$WORK/freed"
for i in $(seq 1 "$N"); do
	wait_for 60 eval '[ "$(state "$job")" = RUNNING ]' || { echo "freed trial $i: the job did not run again"; break; }
	wait_for 10 on_h1 test -s "/tmp/ownerbench-pid.$i" || { echo "freed trial $i: no pid"; break; }
	pid=$(on_h1 cat "/tmp/ownerbench-pid.$i")
	sleep 0.3
	rm -f "$WORK/gone"
	(while [ -d "/proc/$pid" ]; do sleep 0.005; done; date +%s.%N >"$WORK/gone") &
	poller=$!
	on_h1 touch "$OWNER"
	tm=$(on_h1 stat -c %.9Y "$OWNER")
	wait "$poller"
	t1=$(cat "$WORK/gone")
	dt=$(python3 -c "print('%.3f' % ($t1 - $tm))")
	echo "freed trial $i: $dt s from the file's creation (attempt $i's process $pid gone)"
	echo "$dt" >>"$WORK/freed"
	wait_for 10 eval '[ "$(state "$job")" = PENDING ]' || echo "freed trial $i: not requeued"
	on_h1 rm -f "$OWNER"
done
as_user gcancel "$job" >/dev/null 2>&1
on_h1 sh -c 'rm -f /tmp/ownerbench-pid.*'
echo "owner activity -> job frozen: $(stats <"$WORK/frozen")"
echo "owner activity -> card freed (vacate): $(stats <"$WORK/freed")"
