#!/bin/bash
# t0630-staging-fanout: with the agents serving their caches to each other (peer_port, on by
# default), a 200 MB file staged to 3 hosts travels along a chain (docs/staging.md): it arrives
# intact on every host, the first host of the chain gets it from the scheduler, the others
# from the host before them, and the scheduler sends one copy in all instead of three. Then,
# with the hosts cut off from each other (blackhole routes), the same staging falls
# back to the scheduler: the job completes with the file intact and nothing from peers.
# timeout: 400
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --node-timeout 10s --heartbeat-interval 1s --worker-arg --peer_port=7821

# stage_check DESC: stage a fresh 200 MB file on the 3 hosts; sets id, total, lines
stage_check() {
	head -c 200000000 /dev/urandom >"$WORK/big.bin"
	chown "$TEST_USER:" "$WORK/big.bin"
	want=$(sha256sum <"$WORK/big.bin" | cut -c1-64)
	local out
	out=$(as_user gsub -n 3 -N 3 --stage big.bin -- /bin/bash -c 'echo "$(hostname) $(sha256sum <big.bin | cut -c1-64)"' 2>&1)
	id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
	total=$(sed -n 's/.*: sent [0-9]* of \([0-9]*\) chunks.*/\1/p' <<<"$out")
	if [ -z "$id" ] || ! wait_state "$id" COMPLETED 180; then
		fail "$1: a 3-host job with a staged 200 MB file completes" "$out" "$(job_json "$id")"
		done_testing
	fi
	local out2
	out2=$(as_user glogs "$id" 2>&1)
	for h in h1 h2 h3; do
		grep -qx "$h $want" <<<"$out2" && ok "$1: $h has the file intact" || fail "$1: $h has the file intact" "$out2"
	done
	lines=()
	for h in h1 h2 h3; do
		lines+=("$(grep -h "job $id\.[0-9]*: staged" "$CLUSTER_DIR/$h/gworkerd.log" | tail -1)")
		diag "$h: ${lines[-1]}"
	done
}
fetched() { sed -n 's/.* \([0-9]*\) fetched .*/\1/p' <<<"$1"; }
peers() { sed -n 's/.* \([0-9]*\) from peers .*/\1/p' <<<"$1"; }

# ---- 1. the chain ------------------------------------------------------------------------
stage_check "chain"
from_sched=0 all_peers=0 heads=0
for l in "${lines[@]}"; do
	f=$(fetched "$l") p=$(peers "$l")
	if [ -z "$f" ] || [ -z "$p" ]; then
		fail "every host logs its staging" "$l"
		continue
	fi
	from_sched=$((from_sched + f - p))
	[ "$p" = 0 ] && heads=$((heads + 1))
	[ "$p" = "$f" ] && [ "$f" -gt 0 ] && all_peers=$((all_peers + 1))
done
is "$heads $all_peers" "1 2" "one host (the chain's first) fetched from the scheduler, the 2 others every chunk from a peer"
[ "$from_sched" -le $((total + total / 10)) ] &&
	ok "the scheduler sent one copy to the 3 hosts ($from_sched chunks for $total distinct)" ||
	fail "the scheduler sent one copy" "$from_sched chunks for $total distinct"

# ---- 2. peers that do not answer: everything from the scheduler --------------------------
# each host drops what it would send to the other hosts (the job itself talks to no other
# host): requests to a peer get no answer, as from a PC switched off
for h in h1 h2 h3; do
	for o in 1 2 3; do
		[ "h$o" = "$h" ] || on_host "$h" ip route add blackhole "$(slot_addr $((10 + o)))/32"
	done
done
t0=$(date +%s)
stage_check "peers unreachable"
dt=$(($(date +%s) - t0))
n0=0
for l in "${lines[@]}"; do
	f=$(fetched "$l") p=$(peers "$l")
	[ "$p" = 0 ] && [ "$f" = "$total" ] && n0=$((n0 + 1))
done
is "$n0" 3 "with the peers unreachable every host fetched all $total chunks from the scheduler"
[ "$dt" -lt 120 ] && ok "the fallback cost seconds, not the job ($dt s end to end)" ||
	fail "the fallback is quick" "$dt s"
done_testing
