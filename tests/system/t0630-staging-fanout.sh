#!/bin/bash
# t0630-staging-fanout: with the agents serving their caches to each other (peer_port), a
# 200 MB file staged to 3 hosts arrives intact on every host, each host gets part of it from
# its peers, and the scheduler sends about one copy in all instead of three (docs/staging.md).
# timeout: 300
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --node-timeout 10s --heartbeat-interval 1s --worker-arg --peer_port=7821

head -c 200000000 /dev/urandom >"$WORK/big.bin"
chown "$TEST_USER:" "$WORK/big.bin"
want=$(sha256sum <"$WORK/big.bin" | cut -c1-64)
out=$(as_user gsub -n 3 -N 3 --stage big.bin -- /bin/bash -c 'echo "$(hostname) $(sha256sum <big.bin | cut -c1-64)"' 2>&1)
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
total=$(sed -n 's/.*: sent [0-9]* of \([0-9]*\) chunks.*/\1/p' <<<"$out")
if [ -z "$id" ] || ! wait_state "$id" COMPLETED 180; then
	fail "a 3-host job with a staged 200 MB file completes" "$out" "$(job_json "$id")"
	done_testing
fi
lines=$(as_user glogs "$id" 2>&1)
for h in h1 h2 h3; do
	grep -qx "$h $want" <<<"$lines" && ok "$h has the file intact" || fail "$h has the file intact" "$lines"
done
from_sched=0
for h in h1 h2 h3; do
	l=$(grep -h "job $id\.[0-9]*: staged" "$CLUSTER_DIR/$h/gworkerd.log" | tail -1)
	diag "$h: $l"
	f=$(sed -n 's/.* \([0-9]*\) fetched .*/\1/p' <<<"$l")
	p=$(sed -n 's/.* \([0-9]*\) from peers .*/\1/p' <<<"$l")
	if [ -z "$f" ] || [ -z "$p" ]; then
		fail "$h logs its staging" "$l"
		continue
	fi
	[ "$p" -gt 0 ] && ok "$h got $p of its $f chunks from its peers" || fail "$h got chunks from its peers" "$l"
	from_sched=$((from_sched + f - p))
done
[ "$from_sched" -le $((total + total / 10)) ] &&
	ok "the scheduler sent about one copy to the 3 hosts ($from_sched chunks for $total distinct)" ||
	fail "the scheduler sent about one copy" "$from_sched chunks for $total distinct"
done_testing
