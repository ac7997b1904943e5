# lib.sh: what every system test sources. A test calls `test_under_cluster N [options]` to get
# an N-host cluster (deploy/gpool-cluster) in a temporary directory that is torn down on every
# exit path, then asserts with ok/fail/is/like/check and ends with done_testing. Output is
# TAP-like; exit 0 all passed, 1 something failed, 77 skipped (not root, no munged, no build).
#
# Environment (ctest sets the first three):
#   GPOOL_BIN_DIR     the build's bin directory (gschedd, gworkerd, gsub, ..., gp-probe)
#   GPOOL_SRC_DIR     the source tree
#   GPOOL_TEST_LIMIT  seconds ctest allows; a watchdog ends the test a little earlier
#   GPOOL_TEST_KEEP=1 keep the test directory (logs, state) after the test
#   GPOOL_TEST_KEEP_FAILED=1 keep it only when the test failed
#   GPOOL_CLUSTER_LOG_LEVEL=debug  the cluster's daemons log at that level (deploy/gpool-cluster)
#   GPOOL_TEST_VERBOSE=1 echo every command run as a user
#   GPOOL_SLOT        the network slot (0-3, deploy/gpool-cluster) when ctest allocates none
#
# Slots: ctest runs system tests side by side, each in a network slot of its own (ctest
# --resource-spec-file tests/netslots.json; every system test asks for "netslot:1"): its bridge,
# namespaces, addresses, cgroups (deploy/gpool-cluster, GPOOL_SLOT) and fixed loopback ports
# (slot_port) are the slot's alone. A test that must have the machine to itself says so in a
# "# exclusive: REASON" line and is given every slot (tests/CMakeLists.txt). See docs/testing.md.
# shellcheck shell=bash

set -u
GPOOL_SRC_DIR=${GPOOL_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
GPOOL_BIN_DIR=${GPOOL_BIN_DIR:-$GPOOL_SRC_DIR/build/bin}
CLUSTER=$GPOOL_SRC_DIR/deploy/gpool-cluster
PY=/usr/bin/python3
TEST_NAME=$(basename "$0" .sh)
TEST_USER=gpool-user
OTHER_USER=gpool-other
export PATH="$GPOOL_BIN_DIR:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The slot: ctest's allocation (CTEST_RESOURCE_GROUP_0_NETSLOT="id:2,slots:1"), else GPOOL_SLOT,
# else 0 (a test run by hand, as before slots).
if [ -n "${CTEST_RESOURCE_GROUP_COUNT:-}" ]; then
	_alloc=${CTEST_RESOURCE_GROUP_0_NETSLOT:-}
	_alloc=${_alloc#id:}
	GPOOL_SLOT=${_alloc%%,*}
	unset _alloc
fi
GPOOL_SLOT=${GPOOL_SLOT:-0}
case $GPOOL_SLOT in 0 | 1 | 2 | 3) ;; *)
	echo "1..0 # SKIP no usable network slot '$GPOOL_SLOT' (0-3)"
	exit 77
	;;
esac
export GPOOL_SLOT

# slot_port PORT: a fixed loopback port of a test made the slot's own (PORT + 200 * slot): tests
# that share a fixed port (t0820, t1120) may then run side by side in different slots.
slot_port() { echo $(($1 + 200 * GPOOL_SLOT)); }
# slot_addr N: address N of the slot's network: 198.18.0.(64 * slot + N) (deploy/gpool-cluster);
# slot_addr 1 is the root namespace's side of the bridge, where gschedd listens.
slot_addr() { echo "198.18.0.$((64 * GPOOL_SLOT + $1))"; }
# slot_bits: the prefix length of the slot's network (slot 0: 24, others: 26)
slot_bits() { if [ "$GPOOL_SLOT" = 0 ]; then echo 24; else echo 26; fi; }
# slot_bridge, slot_ns hN|sK: the slot's bridge and a host's network namespace
slot_bridge() { echo "gpbr$GPOOL_SLOT"; }
slot_ns() { if [ "$GPOOL_SLOT" = 0 ]; then echo "gp-$1"; else echo "gp$GPOOL_SLOT-$1"; fi; }
# slot_veth hN|sK: a host's veth end on the slot's bridge (gpv-hN in slot 0, gpv<S>-hN)
slot_veth() { if [ "$GPOOL_SLOT" = 0 ]; then echo "gpv-$1"; else echo "gpv$GPOOL_SLOT-$1"; fi; }
# hosts_re N: an extended regex matching the addresses of h1..hN (dots escaped)
hosts_re() {
	local i re=""
	for i in $(seq 1 "$1"); do re="${re:+$re|}$(slot_addr $((10 + i)))"; done
	echo "(${re//./\\.})"
}
# the pattern of the slot's namespace names (grep -E)
slot_ns_re() { echo "^$(slot_ns '')[hs][0-9]+"; }

_ntests=0
_nfail=0
TEST_DIR=""
CLUSTER_DIR=""
_watchdog=""
_cleanup_hooks=()

# at_cleanup CMD: run CMD (a string, eval'd) when the test ends, before the cluster stops.
at_cleanup() { _cleanup_hooks+=("$1"); }

# ---- TAP ------------------------------------------------------------------------------------

ok() {
	_ntests=$((_ntests + 1))
	echo "ok $_ntests - $*"
}
fail() {
	_ntests=$((_ntests + 1))
	_nfail=$((_nfail + 1))
	echo "not ok $_ntests - $1"
	shift
	local l
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
# skip one assertion (counts as passed, says why)
skip() {
	_ntests=$((_ntests + 1))
	echo "ok $_ntests - $1 # SKIP ${2:-}"
}
# todo DESC REASON CMD...: a known gap: reported, not counted as a failure (TAP's TODO)
todo() {
	local desc=$1 why=$2
	shift 2
	_ntests=$((_ntests + 1))
	if "$@"; then echo "ok $_ntests - $desc # TODO passes now: $why"; else echo "not ok $_ntests - $desc # TODO $why"; fi
}
diag() { printf '%s\n' "$*" | sed 's/^/# /'; }
# The whole test cannot run here.
skip_all() {
	echo "1..0 # SKIP $*"
	exit 77
}
# check DESC CMD...: passes when CMD succeeds
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else fail "$desc" "command failed: $*"; fi
}
# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else fail "$3" "got:  '$1'" "want: '$2'"; fi
}
# like GOT REGEX DESC (extended regex, matched against the whole text)
like() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then ok "$3"; else
		fail "$3" "got:  '$(printf '%s' "$1" | head -c 2000)'" "want: /$2/"
	fi
}
unlike() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then
		fail "$3" "got:  '$(printf '%s' "$1" | head -c 2000)'" "must not match: /$2/"
	else ok "$3"; fi
}
done_testing() {
	echo "1..$_ntests"
	if [ "$_nfail" -gt 0 ]; then
		echo "# $TEST_NAME: $_nfail of $_ntests failed"
		exit 1
	fi
	exit 0
}

# ---- preconditions --------------------------------------------------------------------------

need_root() {
	[ "$(id -u)" = 0 ] || skip_all "needs root (network namespaces, mounts, test users)"
}
# The system tests simulate PCs with network namespaces; where none can be made (a chroot
# without its own mount tree, a container without the privilege) they skip, saying so.
need_netns() {
	local probe=gp-probe-$$
	local ok=0
	if ip netns add "$probe" 2>/dev/null; then
		ip netns exec "$probe" true 2>/dev/null && ok=1
		ip netns del "$probe" 2>/dev/null
	fi
	[ $ok = 1 ] || skip_all "network namespaces cannot be used here (ip netns add/exec failed: a chroot or a container?)"
}
need_munge() {
	command -v munge >/dev/null && munge -n 2>/dev/null | unmunge >/dev/null 2>&1 ||
		skip_all "munged does not answer (run deploy/install-deps.sh as root)"
}
need_bins() {
	local b
	for b in "$@"; do
		[ -x "$GPOOL_BIN_DIR/$b" ] || skip_all "'$GPOOL_BIN_DIR/$b' is not built"
	done
}

# ---- the cluster ------------------------------------------------------------------------------

_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$_watchdog" ]; then
		# the watchdog first (or it wakes and fires), then its sleep
		local kids
		kids=$(pgrep -P "$_watchdog" 2>/dev/null)
		kill "$_watchdog" 2>/dev/null
		[ -z "$kids" ] || kill $kids 2>/dev/null
	fi
	local hook
	for hook in "${_cleanup_hooks[@]}"; do eval "$hook" || true; done
	if [ -n "$CLUSTER_DIR" ]; then
		cd /
		if [ "$rc" != 0 ] && [ "$rc" != 77 ] || [ "$_nfail" -gt 0 ]; then
			local f
			for f in "$CLUSTER_DIR"/sched/gschedd.log "$CLUSTER_DIR"/s[0-9]*/gschedd.log "$CLUSTER_DIR"/h*/gworkerd.log; do
				[ -f "$f" ] || continue
				echo "# ---- ${f#"$CLUSTER_DIR"/} (last 25 lines) ----"
				tail -n 25 "$f" | sed 's/^/# /'
			done
		fi
		# the cluster's mark (gpool-cluster), read before stop removes cluster.env
		local mark
		mark=$(sed -n 's/^MARK=\(..*\)/GPOOL_CLUSTER_MARK=\1/p' "$CLUSTER_DIR/cluster.env" 2>/dev/null || true)
		"$CLUSTER" stop --dir "$CLUSTER_DIR" >/dev/null 2>&1 || true
		# nothing of ours may outlive the test
		local left
		left=$(ip netns list 2>/dev/null | grep -E "$(slot_ns_re)" || true)
		[ -z "$left" ] || { echo "# cleanup: namespaces left: $left"; rc=1; }
		left=$([ -z "$mark" ] || _procs_with_marker "$mark")
		[ -z "$left" ] || { echo "# cleanup: processes left: $left"; rc=1; }
		# what the test itself started with the cluster's environment (a ggated, a loop in
		# the background) is the test's, which gpool-cluster stop leaves alone
		_kill_marked "$CLUSTER_DIR"
		local keep=${GPOOL_TEST_KEEP:-}
		[ "$rc" = 0 ] || [ -z "${GPOOL_TEST_KEEP_FAILED:-}" ] || keep=1
		if [ -n "$keep" ]; then
			echo "# kept $TEST_DIR"
		else
			rm -rf "$TEST_DIR"
		fi
	fi
	exit "$rc"
}

# Kill the processes carrying GPOOL_CLUSTER_DIR=DIR, but for this shell and its ancestors.
_kill_marked() {
	local f p a=$BASHPID mine=" $BASHPID $$ " pids=""
	while [ -n "$a" ] && [ "$a" -gt 1 ]; do
		a=$(awk '{print $4}' "/proc/$a/stat" 2>/dev/null)
		mine+="$a "
	done
	for f in $(grep -lzxF "GPOOL_CLUSTER_DIR=$1" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/environ}
		[[ $mine == *" $p "* ]] || pids+=" $p"
	done
	# shellcheck disable=SC2086 # one word per pid
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	sleep 0.2
}

# Live (not zombie) processes carrying a cluster's mark (VAR=VALUE).
_procs_with_marker() {
	local f p st
	# one grep over every environment, not one a process (slow on a busy machine)
	for f in $(grep -lzxF "$1" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/environ}
		st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && echo -n "$p($(cat "/proc/$p/comm" 2>/dev/null)) "
	done
}

# test_under_cluster N [gpool-cluster start options...]
# Starts N hosts, exports GPOOL_SCHEDULER/GPOOL_CONF, and leaves the shell in $WORK, a
# directory owned by gpool-user. Skips (77) when the machine cannot run it.
test_under_cluster() {
	local n=$1
	shift
	need_root
	need_netns
	need_munge
	need_bins gschedd gworkerd gsub gstat gcancel gnodes
	"$GPOOL_SRC_DIR/deploy/lib-users.sh" >/dev/null || skip_all "cannot create the test users"
	# a test killed outright (ctest's timeout) leaves its cluster: end it first
	local active=/run/gpool-cluster.active
	[ "$GPOOL_SLOT" = 0 ] || active=/run/gpool-cluster$GPOOL_SLOT.active
	if [ -f "$active" ]; then
		local prev
		prev=$(cat "$active")
		case $prev in /tmp/gpool-test.*) "$CLUSTER" stop --dir "$prev" >/dev/null 2>&1 || true ;; esac
	fi
	TEST_DIR=$(mktemp -d /tmp/gpool-test.XXXXXX)
	chmod 0755 "$TEST_DIR"
	CLUSTER_DIR=$TEST_DIR/cluster
	WORK=$TEST_DIR/work
	mkdir -p "$WORK"
	chown "$TEST_USER:" "$WORK"
	chmod 0777 "$WORK" # gpool-other writes here too
	trap _cleanup EXIT
	trap 'echo "# interrupted"; exit 130' INT TERM
	local limit=${GPOOL_TEST_LIMIT:-150}
	if [ "$limit" -gt 20 ]; then
		# its sleep holds none of the test's output: ctest waits for that to close
		(
			exec </dev/null >/dev/null
			sleep $((limit - 12)) 2>/dev/null
			echo "# watchdog: $TEST_NAME ran past $((limit - 12)) s, stopping it" >&2
			kill -TERM $$ 2>/dev/null
			sleep 2 2>/dev/null
			pkill -TERM -P $$ 2>/dev/null
		) &
		_watchdog=$!
	fi
	local out
	# the tests' files are under the machine's /tmp, which the hosts share as PCs share a
	# network file system: every job still sees them in its own /tmp (docs/testing.md)
	local extra="private_tmp_keep = $TEST_DIR"
	# and the checkout, where it lies under /tmp (a clone there: the jobs run its build's programs)
	local src bin
	src=$(readlink -m "$GPOOL_SRC_DIR") bin=$(readlink -m "$GPOOL_BIN_DIR")
	case $src in /tmp/* | /var/tmp/* | /dev/shm/*) extra+=", $src" ;; esac
	case $bin in "$src"/*) ;; /tmp/* | /var/tmp/* | /dev/shm/*) extra+=", $bin" ;; esac
	[ -z "${GPOOL_CLUSTER_CONF_EXTRA:-}" ] || extra+=$'\n'"$GPOOL_CLUSTER_CONF_EXTRA"
	if ! out=$(GPOOL_CLUSTER_CONF_EXTRA=$extra "$CLUSTER" start -n "$n" --dir "$CLUSTER_DIR" \
		--bin "$GPOOL_BIN_DIR" --timeout 30 "$@" 2>&1); then
		fail "a $n-host cluster starts" "$out"
		exit 1
	fi
	eval "$("$CLUSTER" env --dir "$CLUSTER_DIR")"
	export GPOOL_SCHEDULER GPOOL_CONF GPOOL_CLUSTER_DIR
	cd "$WORK" || exit 1
	# the test users run the commands: from a copy when the build is in root's private home
	# shellcheck source=deploy/lib-users.sh
	. "$GPOOL_SRC_DIR/deploy/lib-users.sh"
	USER_BIN=$(gpool_users_bin "$GPOOL_BIN_DIR" "$TEST_DIR/user") ||
		{ fail "the test users can run the commands" "see above"; exit 1; }
	ok "a $n-host cluster is up ($(sed -n 's/^MODE=//p' "$CLUSTER_DIR/cluster.env" 2>/dev/null))"
}

# ---- acting as users ---------------------------------------------------------------------------

# as_user CMD...: run as gpool-user (munge vouches for its uid), in the current directory.
as_user() {
	[ -z "${GPOOL_TEST_VERBOSE:-}" ] || echo "# $TEST_USER\$ $*" >&2
	runuser -u "$TEST_USER" -- env PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" ${GPOOL_MUNGE_SOCKET:+GPOOL_MUNGE_SOCKET=$GPOOL_MUNGE_SOCKET} "$@"
}
as_other() {
	[ -z "${GPOOL_TEST_VERBOSE:-}" ] || echo "# $OTHER_USER\$ $*" >&2
	runuser -u "$OTHER_USER" -- env PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" "$@"
}

# submit GSUB_ARGS...: submit as gpool-user, print the job id. Non-zero when gsub failed.
submit() {
	local out rc said
	said=$(mktemp)
	out=$(as_user gsub --parsable "$@" 2>"$said")
	rc=$?
	# what gsub said on stderr (a notice that it tries again, say) is the log's, not the id's
	if [ $rc != 0 ] || ! [[ $out =~ ^[0-9]+$ ]]; then
		echo "gsub failed (exit $rc): $out $(cat "$said")" >&2
		rm -f "$said"
		return 1
	fi
	[ -s "$said" ] && sed 's/^/# gsub said: /' "$said" >&2
	rm -f "$said"
	echo "$out"
}

# ---- job state -------------------------------------------------------------------------------------

# job_json JOB: gstat's JSON record of one job (finished ones too).
job_json() {
	gstat --json -a -j "$1" 2>/dev/null
}

# The Python that job_field, job_count and node_state start with: walk(x, pred, outer_only)
# is every dict in the JSON value x (depth first) that pred accepts, the members of one it
# accepts searched too unless outer_only; records(pred) walks the JSON on stdin, exiting 1 when
# stdin is not JSON.
_PY_RECORDS='
import json, sys
def walk(x, pred, outer_only=False):
    if isinstance(x, dict):
        if pred(x):
            yield x
            if outer_only:
                return
        for v in x.values():
            yield from walk(v, pred, outer_only)
    elif isinstance(x, list):
        for v in x:
            yield from walk(v, pred, outer_only)
def records(pred):
    try:
        d = json.load(sys.stdin)
    except Exception:
        sys.exit(1)
    return walk(d, pred)
'

# job_field JOB FIELD[.SUB...]: one field of a job's record ("" when missing). Enum names are
# printed as gstat gives them; lists are printed one item a line.
job_field() {
	job_json "$1" | "$PY" -c "$_PY_RECORDS"'
want, path = sys.argv[1], sys.argv[2].split(".")
for j in records(lambda x: "state" in x and str(x.get("id", x.get("job_id", ""))) == want):
    v = j
    for p in path:
        v = v.get(p, "") if isinstance(v, dict) else ""
    if isinstance(v, list):
        for i in v:
            print(json.dumps(i) if isinstance(i, (dict, list)) else i)
    elif isinstance(v, bool):
        print("true" if v else "false")
    elif isinstance(v, (dict)):
        print(json.dumps(v))
    else:
        print(v)
    break
' "$1" "$2"
}

# The state name without a prefix: RUNNING, COMPLETED, ...
job_state() {
	local s
	s=$(job_field "$1" state)
	s=${s#JOB_STATE_}
	echo "${s^^}"
}

# wait_state JOB STATE[|STATE...] TIMEOUT: 0 when the job reaches one of the states.
wait_state() {
	local job=$1 want=$2 timeout=$3 s=""
	local deadline=$((SECONDS + timeout))
	while :; do
		s=$(job_state "$job")
		[[ "|$want|" == *"|$s|"* ]] && return 0
		[ $SECONDS -ge "$deadline" ] && break
		sleep 0.2
	done
	echo "job $job is '$s', not $want after ${timeout}s" >&2
	return 1
}

# wait_final JOB TIMEOUT: until the job has ended, whatever the state.
wait_final() {
	wait_state "$1" "COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL" "$2"
}

# Number of jobs gstat -a lists (for "nothing was submitted" checks).
job_count() {
	gstat --json -a 2>/dev/null | "$PY" -c "$_PY_RECORDS"'
def is_job(x):
    return "state" in x and ("id" in x or "job_id" in x)
try:
    print(sum(1 for _ in walk(json.load(sys.stdin), is_job, outer_only=True)))
except Exception:
    print(-1)
'
}

# node_state NAME: UP, DOWN, DRAINED (as gnodes --json reports it, prefix removed).
node_state() {
	gnodes --json 2>/dev/null | "$PY" -c "$_PY_RECORDS"'
for n in records(lambda x: "name" in x and "state" in x and "cpus" in x):
    if n["name"] == sys.argv[1]:
        print(str(n["state"]).upper().replace("NODE_", ""))
        break
' "$1"
}
wait_node_state() {
	local node=$1 want=$2 timeout=$3 s=""
	local deadline=$((SECONDS + timeout))
	while :; do
		s=$(node_state "$node")
		[[ "|$want|" == *"|$s|"* ]] && return 0
		[ $SECONDS -ge "$deadline" ] && break
		sleep 0.2
	done
	echo "node $node is '$s', not $want after ${timeout}s" >&2
	return 1
}

# ---- standby schedulers (test_under_cluster ... --schedulers N) ---------------------------------------
# sched_ep sK: scheduler sK's endpoint; sched_leader: the one leading now (fails while none does);
# sched_leads: one does; sched_leads_other sK: one other than sK does; nodes_up N: N nodes are UP
sched_ep() { echo "tcp://$(slot_addr $((1 + ${1#s}))):7820"; }
sched_leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" 2>/dev/null; }
sched_leads() { sched_leader >/dev/null; }
sched_leads_other() {
	local l
	l=$(sched_leader) && [ "$l" != "$1" ]
}
nodes_up() { [ "$(gnodes 2>/dev/null | grep -cw up)" -ge "$1" ]; }

# ---- hosts ------------------------------------------------------------------------------------------

on_host() { "$CLUSTER" exec --dir "$CLUSTER_DIR" "$@"; }

# Live processes of USER on HOST (the agent and the namespace holder excluded).
host_user_pids() {
	local host=$1 user=${2:-$TEST_USER} uid p
	uid=$(id -u "$user")
	for p in $("$CLUSTER" pids --dir "$CLUSTER_DIR" "$host" 2>/dev/null); do
		[ -r "/proc/$p/status" ] || continue
		awk -v u="$uid" '/^Uid:/ { exit ($2 == u ? 0 : 1) }' "/proc/$p/status" 2>/dev/null || continue
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] && continue
		echo "$p"
	done
}

user_pids_at_least() { [ "$(host_user_pids "$1" | wc -w)" -ge "$2" ]; }
no_user_pids() { [ -z "$(host_user_pids "$1")" ]; }

# Every process in the cluster's host and scheduler namespaces, one a line (daemons included).
cluster_ns_pids() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$(slot_ns_re)\$"); do
		ip netns pids "$ns" 2>/dev/null
	done
}
# cluster_pgrep PGREP_ARGS...: pgrep, limited to this cluster's hosts (other slots' clusters
# run the same users' processes on the same machine). 1 when none.
cluster_pgrep() {
	local all
	all=$(pgrep "$@") || return 1
	_pids_among "$all" "$(cluster_ns_pids)"
}
# _pids_among PGREP_OUTPUT PIDS: the lines of PGREP_OUTPUT whose first word is one of PIDS
# (pgrep -a and -l lines too); 1 when none
_pids_among() {
	awk 'NR == FNR { p[$1]; next } ($1 in p) { print; n++ } END { exit n ? 0 : 1 }' \
		<(printf '%s\n' "$2") <(printf '%s\n' "$1")
}
# host_pgrep HOST PGREP_ARGS...: pgrep, limited to HOST's processes (its namespace). 1 when none.
host_pgrep() {
	local h=$1 all
	shift
	all=$(pgrep "$@") || return 1
	_pids_among "$all" "$(ip netns pids "$(slot_ns "$h")" 2>/dev/null)"
}

# All live processes of USER on any host.
cluster_user_pids() {
	local i n
	n=$(sed -n 's/^HOSTS=//p' "$CLUSTER_DIR/cluster.env")
	for i in $(seq 1 "$n"); do host_user_pids "h$i" "${1:-$TEST_USER}"; done
}

# wait_until TIMEOUT CMD...: poll CMD every 0.2 s.
wait_until() {
	local timeout=$1
	shift
	local deadline=$((SECONDS + timeout))
	while ! "$@"; do
		[ $SECONDS -ge "$deadline" ] && return 1
		sleep 0.2
	done
	return 0
}

# wait_eq TIMEOUT WANT CMD...: until CMD prints WANT, CMD run again each time (a "$(...)" in
# wait_until's arguments is expanded once, before the wait: never write that)
wait_eq() {
	local timeout=$1 want=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	while [ "$("$@")" != "$want" ]; do
		[ $SECONDS -ge "$deadline" ] && return 1
		sleep 0.2
	done
	return 0
}

# The address of a host (198.18.0.1N in slot 0 as root, slot_addr 1N in others; 127.0.0.1 on
# loopback).
host_addr() {
	if grep -q '^MODE=netns' "$CLUSTER_DIR/cluster.env"; then
		slot_addr $((10 + ${1#h}))
	else
		echo 127.0.0.1
	fi
}

# ---- attempt markers (the fault suite) ------------------------------------------------------

# marker_setup: $MARK, a file every host appends to (only state and scratch are private), and
# $WORK/task.sh SECS, one attempt of a job that records a start line, a tick every 0.5 s and
# a run line at its end, so repeats and overlapping attempts show.
marker_setup() {
	MARK=$WORK/marker
	: >"$MARK"
	chmod 0666 "$MARK"
	cat >"$WORK/task.sh" <<EOF
#!/bin/sh
# one attempt of a job: a start line, SECS seconds of ticks, a run line at the end
M=$MARK
s=\$(date +%s.%N)
echo "start \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$s" >>"\$M"
n=\$(( \${1:-0} * 2 ))
while [ \$n -gt 0 ]; do sleep 0.5; echo "tick \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$(date +%s.%N)" >>"\$M"; n=\$((n - 1)); done
echo "run \$GPOOL_JOB_ID \$GPOOL_ATTEMPT \$GPOOL_RANK \$s \$(date +%s.%N)" >>"\$M"
EOF
	chmod 0755 "$WORK/task.sh"
}

# analyze IDS: "accepted N lost N repeated N overlapping N notfinal N", then a line per problem.
# lost: an acknowledged job that is not COMPLETED or has no finished attempt in the marker;
# repeated: more than one attempt finished, or an attempt started after one had finished;
# overlapping: two attempts of one job whose [start, last sign of life] intervals intersect.
analyze() {
	gstat --json -a >"$WORK/gstat.json" 2>"$WORK/gstat.err"
	"$PY" - "$MARK" "$1" "$WORK/gstat.json" <<'PYEOF'
import json, sys, collections
marker, idsf, gs = sys.argv[1:4]
ids = sorted({int(x) for x in open(idsf).read().split() if x.isdigit()})
att = collections.defaultdict(dict)  # job -> attempt -> [start, last, end or None]
for line in open(marker):
    p = line.split()
    if len(p) < 5 or p[0] not in ("start", "tick", "run"):
        continue
    try:
        j, a, t = int(p[1]), int(p[2]), float(p[4])
    except ValueError:
        continue
    e = att[j].setdefault(a, [t, t, None])
    e[0] = min(e[0], t)
    if p[0] == "run":
        end = float(p[5])
        e[1] = max(e[1], end)
        e[2] = end if e[2] is None else max(e[2], end)
    else:
        e[1] = max(e[1], t)
state = {}
def walk(x):
    if isinstance(x, dict):
        if "state" in x and "id" in x:
            state[int(x["id"])] = str(x["state"]).replace("JOB_STATE_", "").upper()
            return
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
try:
    walk(json.load(open(gs)))
except Exception as ex:
    print("# gstat --json unreadable:", ex)
final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
lost = rep = ovl = nf = 0
out = []
for j in ids:
    A = att.get(j, {})
    done = [a for a, e in A.items() if e[2] is not None]
    st = state.get(j, "MISSING")
    if st not in final:
        nf += 1
    if st != "COMPLETED" or not done:
        lost += 1
        out.append(f"lost: job {j} state {st}, attempts seen {sorted(A)}")
    if len(done) > 1 or any(A[a][0] > min(A[d][2] for d in done) for a in A if done and a not in done):
        rep += 1
        out.append(f"repeated: job {j} {dict(sorted(A.items()))}")
    iv = sorted(A.items(), key=lambda kv: kv[1][0])
    if any(iv[i + 1][1][0] < iv[i][1][1] for i in range(len(iv) - 1)):
        ovl += 1
        out.append(f"overlapping: job {j} {dict(iv)}")
extra = sorted(set(att) - set(ids))
print(f"accepted {len(ids)} lost {lost} repeated {rep} overlapping {ovl} notfinal {nf} "
      f"unacknowledged-but-ran {len(extra)} multi-attempt {sum(1 for j in ids if len(att.get(j, {})) > 1)}")
for l in out[:20]:
    print(l)
PYEOF
}
