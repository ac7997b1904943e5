#!/bin/bash
# t0110-gang: a 3-task job over 3 hosts starts every rank once, each on its own host, with the
# environment a PyTorch DDP or MPI program expects (ranks, world size, master address/port).
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 3

cmd='env | grep -E "^(GPOOL_|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_)" | sort | sed "s/^/$GPOOL_RANK: /"; echo "$GPOOL_RANK: HOST_ADDRS=$(ip -4 -o addr show 2>/dev/null | awk "{print \$4}" | tr "\n" " ")"'
out=$(as_user gsub -n 3 -N 3 --wait -- /bin/sh -c "$cmd" 2>&1)
rc=$?
is "$rc" 0 "gsub -n 3 -N 3 --wait exits 0"
diag "$(grep -E '^[0-9]+: (RANK|GPOOL_NODE|MASTER|HOST_ADDRS)' <<<"$out" | sort)"

# value of VAR as rank R printed it
val() { sed -n "s/^$1: $2=//p" <<<"$out" | head -n 1; }

ranks=$(sed -n 's/^\([0-9][0-9]*\): RANK=\([0-9]*\)$/\1=\2/p' <<<"$out" | sort | tr '\n' ' ')
is "$ranks" "0=0 1=1 2=2 " "ranks 0, 1 and 2 each ran once, RANK matches GPOOL_RANK"
for r in 0 1 2; do
	is "$(val $r WORLD_SIZE)" 3 "rank $r: WORLD_SIZE=3"
	is "$(val $r LOCAL_RANK)" 0 "rank $r: LOCAL_RANK=0 (one task a node)"
	is "$(val $r LOCAL_WORLD_SIZE)" 1 "rank $r: LOCAL_WORLD_SIZE=1"
	like "$(val $r MASTER_PORT)" '^[0-9]+$' "rank $r: MASTER_PORT is a number"
	like "$(val $r GPOOL_JOB_ID)" '^[0-9]+$' "rank $r: GPOOL_JOB_ID is set"
done
m0=$(val 0 MASTER_ADDR)
same=1
for r in 1 2; do [ "$(val $r MASTER_ADDR)" = "$m0" ] || same=0; done
[ $same = 1 ] && ok "every rank has the same MASTER_ADDR ($m0)" || fail "every rank has the same MASTER_ADDR"
[ "$(val 0 MASTER_PORT)" = "$(val 1 MASTER_PORT)" ] && [ "$(val 1 MASTER_PORT)" = "$(val 2 MASTER_PORT)" ] &&
	ok "every rank has the same MASTER_PORT" || fail "every rank has the same MASTER_PORT"

# each rank on its own host: the addresses each rank's host has differ
a0=$(val 0 HOST_ADDRS) a1=$(val 1 HOST_ADDRS) a2=$(val 2 HOST_ADDRS)
if grep -q '^MODE=netns' "$CLUSTER_DIR/cluster.env"; then
	[ -n "$a0" ] && [ "$a0" != "$a1" ] && [ "$a1" != "$a2" ] && [ "$a0" != "$a2" ] &&
		ok "the three ranks ran on three different hosts" ||
		fail "the three ranks ran on three different hosts" "$a0 / $a1 / $a2"
	like "$m0" '^198\.18\.0\.[0-9]+$' "MASTER_ADDR is a test-host address"
	like "$a0" "(^| )$m0/$(slot_bits)( |\$)" "MASTER_ADDR is rank 0's host address"
fi
id=$(val 0 GPOOL_JOB_ID)
if [ -n "$id" ]; then
	hosts=$(job_field "$id" tasks | "$PY" -c 'import sys,json; print(" ".join(sorted(json.loads(l)["node"] for l in sys.stdin if l.strip())))')
	is "$hosts" "h1 h2 h3" "gstat places the ranks on h1, h2 and h3"
	nl=$(val 0 GPOOL_NODELIST)
	for h in h1 h2 h3; do
		if "$PY" - "$nl" "$h" <<'PY'
import re, sys
# accept "h1,h2,h3" and the compressed "h[1-3]"
nl, h = sys.argv[1], sys.argv[2]
names = set()
for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", nl):
    m = re.match(r"^(.*)\[(.*)\]$", part)
    if not m:
        names.add(part); continue
    for r in m.group(2).split(","):
        a, _, b = r.partition("-")
        for i in range(int(a), int(b or a) + 1):
            names.add(m.group(1) + str(i))
sys.exit(0 if h in names else 1)
PY
		then ok "GPOOL_NODELIST ($nl) lists $h"; else fail "GPOOL_NODELIST ($nl) lists $h"; fi
	done
	[ "$(val 0 GPOOL_NODELIST)" = "$(val 2 GPOOL_NODELIST)" ] && ok "every rank sees the same node list" ||
		fail "every rank sees the same node list"
	check "the gang job is COMPLETED" wait_state "$id" COMPLETED 10
fi

# -- a gang that cannot fit (4 nodes of 3) is refused at submission, as sbatch refuses it
# ("Requested node configuration is not available"); nothing of it is queued or started
out=$(as_user gsub -n 4 -N 4 -- /bin/true 2>&1)
rc=$?
is "$rc" 1 "gsub of a 4-node job on 3 nodes exits 1"
like "$out" '^gsub: requested node configuration is not available: 4 tasks of 1 CPU, on 4-4 nodes; the cluster has 3 nodes, [0-9]+ CPUs, 0 cards; the largest node [0-9]+ CPUs, [0-9]+ MB$' \
	"it says why, with what the cluster has ($out)"
is "$(as_user gstat --json 2>/dev/null | grep -c '"ntasks": *4')" 0 "nothing of it is queued"
is "$(cluster_user_pids | wc -w)" 0 "no task of it runs anywhere"

# -- a node drained (or down) still counts: a 3-node job waits for it rather than being refused
gnodes drain h3 --reason "t0110: capacity" >/dev/null 2>&1
if id=$(submit -n 3 -N 3 -- /bin/true); then
	ok "a 3-node job with one of 3 nodes drained is accepted ($id)"
	sleep 1
	is "$(job_state "$id")" PENDING "it waits for the drained node"
	gnodes resume h3 >/dev/null 2>&1
	check "it runs once the node is back" wait_state "$id" COMPLETED 20
else
	fail "a 3-node job with one of 3 nodes drained is accepted" "gsub refused it"
	gnodes resume h3 >/dev/null 2>&1
fi

done_testing
