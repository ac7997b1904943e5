#!/bin/bash
# t0011-cluster-stop: gpool-cluster stop ends the cluster's processes and no others. A shell
# that evaluated `gpool-cluster env` carries GPOOL_CLUSTER_DIR, and so does everything it runs:
# stop, run from it in a pipeline (`gpool-cluster stop | tail`), must spare the pipeline's
# other commands and the shell's other jobs, and still end the daemons (recorded pids), what
# runs on the hosts (their namespaces) and a process the cluster's daemons left outside both
# (a gstepd an agent's restart left: it carries the cluster's own mark). Stand-in daemons.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_root
need_netns
need_munge

TEST_DIR=$(mktemp -d /tmp/gpool-test.XXXXXX)
chmod 0755 "$TEST_DIR"
CLUSTER_DIR=$TEST_DIR/cluster
fake=$TEST_DIR/bin
mkdir -p "$fake"
for b in gschedd gworkerd; do
	printf '#!/bin/sh\nexec sleep 100000\n' >"$fake/$b"
	chmod 0755 "$fake/$b"
done
# gone: no such process, or a zombie its new parent has not reaped yet
gone() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}
bystander=""
cleanup_bystander() { [ -z "$bystander" ] || kill "$bystander" 2>/dev/null || true; }
at_cleanup cleanup_bystander
trap _cleanup EXIT
trap 'exit 130' INT TERM

"$CLUSTER" start -n 2 --dir "$CLUSTER_DIR" --bin "$fake" --no-wait >/dev/null 2>&1
is "$?" 0 "gpool-cluster start -n 2 with stand-in daemons"
sched=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
agent=$(cat "$CLUSTER_DIR/h1/gworkerd.pid")
mark=GPOOL_CLUSTER_MARK=$(sed -n 's/^MARK=//p' "$CLUSTER_DIR/cluster.env")
check "gschedd's stand-in carries the cluster's mark" grep -qzxF "$mark" "/proc/$sched/environ"
check "env does not print the mark" sh -c "! '$CLUSTER' env --dir '$CLUSTER_DIR' | grep -q GPOOL_CLUSTER_MARK"
# a gstepd an agent's restart left behind: outside every namespace and not a descendant of a
# recorded pid, carrying the mark the agent had
env "$mark" setsid sleep 100002 </dev/null >/dev/null 2>&1 &
orphan=$!
disown
on_host h1 sleep 100003 >/dev/null 2>&1 &
disown
sleep 0.5

# the caller: a shell that evaluated env, with a job of its own, running stop in a pipeline
# whose reader outlives stop
out=$TEST_DIR/reader
(
	eval "$("$CLUSTER" env --dir "$CLUSTER_DIR")"
	sleep 100004 >/dev/null 2>&1 &
	echo $! >"$TEST_DIR/bystander"
	"$CLUSTER" stop --dir "$CLUSTER_DIR" 2>&1 | { cat >/dev/null; sleep 1; echo "reader lived" >"$out"; }
)
bystander=$(cat "$TEST_DIR/bystander")
is "$(cat "$out" 2>/dev/null)" "reader lived" "the pipeline's reader (with GPOOL_CLUSTER_DIR) outlived stop"
check "the caller's own job (with GPOOL_CLUSTER_DIR) still runs" kill -0 "$bystander"
check "gschedd (a recorded pid) is gone" gone "$sched"
check "h1's agent (a recorded pid) is gone" gone "$agent"
sleep 0.3
check "the process left with the cluster's mark is gone" gone "$orphan"
check "what ran on h1 is gone" sh -c "! pgrep -f 'sleep 10000[3]' >/dev/null"
is "$(_procs_with_marker "$mark")" "" "no process with the cluster's mark is left"
is "$(ip netns list | grep -cE "$(slot_ns_re)")" 0 "no namespace of the cluster is left"
kill "$bystander"
bystander=""

done_testing
