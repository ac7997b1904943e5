#!/bin/bash
# t1040-refused: an agent with the wrong MUNGE key is told so plainly: its log names the wrong
# key, and `gnodes` (and gnodes --json, and the REST API) lists it as refused with the reason;
# an agent speaking another protocol version (gp-probe registers as one) is listed with that
# reason. The cluster's own nodes stay UP.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_bins gp-probe
test_under_cluster 1

# -- a second munged with a key of its own, and an agent on it
M2=$TEST_DIR/munge2
mkdir -p "$M2"
dd if=/dev/urandom of="$M2/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$M2"
chmod 0755 "$M2"
chmod 0400 "$M2/munge.key"
at_cleanup '[ -s "$M2/munged.pid" ] && kill "$(cat "$M2/munged.pid")" 2>/dev/null'
runuser -u munge -- /usr/sbin/munged --socket="$M2/munge.sock" --key-file="$M2/munge.key" \
	--pid-file="$M2/munged.pid" --seed-file="$M2/munged.seed" --log-file="$M2/munged.log" &&
	wait_until 5 test -S "$M2/munge.sock"
is "$?" 0 "a second munged with another key runs"
R=$TEST_DIR/rogue
mkdir -p "$R/state" "$R/scratch"
GPOOL_MUNGE_SOCKET=$M2/munge.sock "$GPOOL_BIN_DIR/gworkerd" --config "$GPOOL_CONF" \
	--node-name rogue --scheduler "$GPOOL_SCHEDULER" --state-dir "$R/state" --scratch-dir "$R/scratch" \
	--cpus 1 --cgroups off --node-addr 127.0.0.1 --log-file "$R/gworkerd.log" </dev/null &
rogue=$!
at_cleanup "kill $rogue 2>/dev/null; wait $rogue 2>/dev/null"
listed() { gnodes 2>/dev/null | grep -q '^rogue refused'; }
check "gnodes lists the agent with the wrong key as refused" wait_until 20 listed
like "$(gnodes | grep '^rogue refused')" "wrong MUNGE key" "with the reason: $(gnodes | grep '^rogue refused')"
told() { grep -q 'wrong MUNGE key' "$R/gworkerd.log"; }
check "the agent's log says its MUNGE key is wrong" wait_until 20 told
diag "$(grep -m1 'wrong MUNGE key' "$R/gworkerd.log")"
like "$(gnodes --json)" '"state": *"refused"' "gnodes --json has it as refused"
is "$(node_state h1)" UP "h1 stays UP"

# -- another protocol version
out=$(gp-probe register-version 99 oldpc 2>&1)
like "$out" 'ERROR_VERSION|no reply' "a NodeRegister of protocol version 99 is refused ($out)"
like "$(gnodes | grep '^oldpc refused')" "incompatible protocol version: the agent speaks 99" \
	"gnodes lists it as refused for its protocol version"
check "gschedd still runs" kill -0 "$(cat "$CLUSTER_DIR/sched/gschedd.pid")"
done_testing
