#!/bin/bash
# t0010-cluster: gpool-cluster itself, with stand-in daemons (sleep): hosts are network
# namespaces on the bridge with their own addresses, private state/scratch tmpfs (at one path on
# every host, as on separate PCs; the root namespace reaches them through `path --outside`) and
# their own cgroup subtree; munged's socket is shared; an agent can die and start again; stop removes
# every namespace, process, bridge and cgroup, and is safe to repeat.
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
	printf '#!/bin/sh\necho "$0 $*"\nexec sleep 100000\n' >"$fake/$b"
	chmod 0755 "$fake/$b"
done
trap _cleanup EXIT
trap 'exit 130' INT TERM
# the slot's names and addresses (lib.sh; slot 0: gpbr0, gp-hN, 198.18.0.1N/24, gpool-cluster)
BR=$(slot_bridge)
NS=$(slot_ns h)
CG=gpool-cluster
[ "$GPOOL_SLOT" = 0 ] || CG=gpool-cluster$GPOOL_SLOT
root_side=$(slot_addr 1)

"$CLUSTER" start -n 3 --dir "$CLUSTER_DIR" --bin "$fake" --no-wait --cpus 2 --fake-cards default >/dev/null 2>&1
is "$?" 0 "gpool-cluster start -n 3 with stand-in daemons"
is "$(ip netns list | grep -cE "^${NS}[1-3]( |\$)")" 3 "three namespaces ${NS}1..${NS}3"
like "$(ip -4 -o addr show dev "$BR" 2>&1)" "${root_side//./\\.}/$(slot_bits)" "the bridge $BR has $root_side/$(slot_bits)"
for i in 1 2 3; do
	addrs=$(on_host "h$i" ip -4 -o addr show 2>&1 | awk '{print $4}' | sort | tr '\n' ' ')
	is "$addrs" "127.0.0.1/8 $(slot_addr $((10 + i)))/$(slot_bits) " "h$i has lo and $(slot_addr $((10 + i))) only"
done
a=$(grep -ho '\b[0-9]\{1,3\}\.[0-9]\{1,3\}\.[0-9]\{1,3\}\.[0-9]\{1,3\}\b' "$CLUSTER_DIR"/h*/agent.cmd "$CLUSTER_DIR"/gpool.conf | sort -u | tr '\n' ' ')
bad=$(tr ' ' '\n' <<<"$a" | grep -vE '^(198\.18\.0\.[0-9]+|127\.0\.0\.1)?$' || true)
is "$bad" "" "every configured address is in 198.18.0.0/24"
like "$(cat "$CLUSTER_DIR/h2/gworkerd.log")" "--node-name h2 .*--scheduler tcp://${root_side//./\\.}:[0-9]+" "h2's agent got its name and the scheduler's address"
like "$(cat "$CLUSTER_DIR/h2/gworkerd.log")" '--cpus 2' "--cpus reaches the agents"
like "$(cat "$CLUSTER_DIR/h1/gworkerd.log")" 'fake-cards nvidia:GeForce GTX 1660' "h1 got fake cards"

# private tmpfs at one path on every host, as the same configured paths on separate PCs: a file
# written on h1's scratch is invisible to h2 and to the root namespace, which reaches it only
# through h1's holder (path --outside)
node=$CLUSTER_DIR/node
for i in 1 2 3; do
	like "$(cat "$CLUSTER_DIR/h$i/agent.cmd")" "--state-dir $node/state --scratch-dir $node/scratch( |\$)" \
		"h$i's agent has the common state and scratch paths"
	is "$("$CLUSTER" path --dir "$CLUSTER_DIR" "h$i" scratch)" "$node/scratch" "path h$i scratch is $node/scratch"
done
on_host h1 sh -c "echo secret >'$node/scratch/f'"
is "$(on_host h1 cat "$node/scratch/f" 2>&1)" secret "h1 reads its own scratch file"
[ ! -e "$node/scratch/f" ] && ok "the root namespace does not see h1's scratch at its path" || fail "the root namespace does not see h1's scratch at its path"
[ "$(on_host h2 sh -c "ls '$node/scratch' | wc -l")" = 0 ] && ok "h2's scratch at the same path is its own (empty)" || fail "h2's scratch at the same path is its own (empty)"
outside=$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h1 scratch)
like "$outside" "^/proc/[0-9]+/root$node/scratch\$" "path --outside h1 scratch names it through h1's holder ($outside)"
is "$(cat "$outside/f" 2>&1)" secret "the root namespace reads h1's scratch file there"
[ ! -e "$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h2 scratch)/f" ] && ok "and h2's, reached the same way, has no such file" || fail "and h2's, reached the same way, has no such file"
like "$(on_host h3 mount)" "on $node/state type tmpfs" "h3's state dir is a tmpfs"
dev1=$(on_host h1 stat -c %d "$node/scratch")
dev2=$(on_host h2 stat -c %d "$node/scratch")
[ -n "$dev1" ] && [ "$dev1" != "$dev2" ] && ok "h1 and h2 have different file systems at $node/scratch ($dev1, $dev2)" ||
	fail "h1 and h2 have different file systems at $node/scratch" "h1 $dev1, h2 $dev2"

# cgroups: back under /sys/fs/cgroup, each host in its own subtree
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	check "h1 sees cgroup2" on_host h1 test -f /sys/fs/cgroup/cgroup.controllers
	on_host h1 mkdir /sys/fs/cgroup/probe-t0010
	check "h1's cgroups are its own subtree" test -d "/sys/fs/cgroup/$CG/h1/probe-t0010"
	on_host h1 rmdir /sys/fs/cgroup/probe-t0010
else
	check "h1 sees the memory controller" on_host h1 test -f /sys/fs/cgroup/memory/cgroup.procs
	check "h1 sees the pids controller" on_host h1 test -f /sys/fs/cgroup/pids/cgroup.procs
	on_host h1 mkdir /sys/fs/cgroup/memory/probe-t0010
	check "h1's memory cgroups are its own subtree" test -d "/sys/fs/cgroup/memory/$CG/h1/probe-t0010"
	[ ! -d "/sys/fs/cgroup/memory/$CG/h2/probe-t0010" ] && ok "h2 does not see it" || fail "h2 does not see it"
	on_host h1 rmdir /sys/fs/cgroup/memory/probe-t0010
fi
is "$(on_host h3 hostname)" h3 "h3's host name is h3"
check "munged answers inside h2" on_host h2 sh -c 'munge -n | unmunge >/dev/null'

# an agent dies and starts again in the same namespaces
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h2
sleep 0.5
like "$("$CLUSTER" status --dir "$CLUSTER_DIR")" 'h2 gworkerd: pid [0-9]+ dead' "status shows h2's agent dead"
check "exec still reaches h2" on_host h2 true
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h2
sleep 0.5
like "$("$CLUSTER" status --dir "$CLUSTER_DIR")" 'h2 gworkerd: pid [0-9]+ running' "agent-start brings it back"
on_host h2 sleep 100001 >/dev/null 2>&1 &
disown
sleep 0.5
like "$("$CLUSTER" pids --dir "$CLUSTER_DIR" h2 | tr '\n' ' ')" '[0-9]' "pids lists a process started on h2"

mark=GPOOL_CLUSTER_MARK=$(sed -n 's/^MARK=//p' "$CLUSTER_DIR/cluster.env")
like "$mark" '^GPOOL_CLUSTER_MARK=[0-9a-f]{16}$' "cluster.env records the cluster's mark"
check "gpool-cluster stop" "$CLUSTER" stop --dir "$CLUSTER_DIR"
is "$(ip netns list | grep -c "^$NS")" 0 "no $NS namespace is left"
check "no bridge is left" sh -c "! ip link show $BR >/dev/null 2>&1"
is "$(_procs_with_marker "$mark")" "" "no process of the cluster (its mark) is left"
is "$(_procs_with_marker "GPOOL_CLUSTER_DIR=$CLUSTER_DIR")" "" "no process with its directory is left"
check "no sleep 100001 is left" sh -c '! pgrep -f "sleep 10000[01]" >/dev/null'
check "no cgroup subtree is left" sh -c "! ls -d /sys/fs/cgroup/*/$CG /sys/fs/cgroup/$CG 2>/dev/null | grep -q ."
check "stop again is harmless" "$CLUSTER" stop --dir "$CLUSTER_DIR"
check "stop of a directory that never held a cluster is harmless" "$CLUSTER" stop --dir "$TEST_DIR/none"

done_testing
