#!/bin/bash
# t0600-pytorch-ddp: an unmodified PyTorch DDP script (gloo, init_method="env://") as a 3-rank
# job on 3 hosts whose /etc/hosts maps each host's own name to 127.0.1.1, as Debian does on
# every PC: the ranks find each other over the network that joins the hosts (gpool sets
# GLOO_SOCKET_IFNAME and friends, MASTER_ADDR, and a MASTER_PORT rank 0's agent held free),
# train on different data and end with identical parameters. Also: without the interface
# variable gloo falls back to loopback and fails, as it does on a real LAN (the setup is
# realistic); a submitter's own GLOO_SOCKET_IFNAME wins over gpool's; concurrent jobs with
# rank 0 on one host get distinct master ports from its agent's pool.
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_root
"$PY" -c 'import torch, torch.distributed' 2>/dev/null ||
	skip_all "python3-torch is not importable (deploy/install-deps.sh installs it)"
test_under_cluster 3 --cpus 2

grep -q '^MODE=netns' "$CLUSTER_DIR/cluster.env" || skip_all "the hosts are not network namespaces"

# ---- the hosts resolve names as PCs on a LAN do ------------------------------------------------
is "$(on_host h2 getent hosts h2 | awk '{print $1}')" 127.0.1.1 "h2 resolves its own name to 127.0.1.1 (Debian's /etc/hosts)"
is "$(on_host h2 getent hosts h3 | awk '{print $1}')" "$(host_addr h3)" "h2 resolves h3 to its LAN address"
is "$(on_host h1 hostname)" h1 "h1 is called h1"

cp "$GPOOL_SRC_DIR/tests/system/ddp_train.py" "$WORK/train.py"
chmod 0644 "$WORK/train.py"

# ---- the DDP job ----------------------------------------------------------------------------------
t0=$(date +%s.%N)
job=$(submit -n 3 -N 3 -t 3 --stage train.py -- python3 train.py)
check "the DDP job is submitted" test -n "$job"
wait_final "$job" 150
t1=$(date +%s.%N)
is "$(job_state "$job")" COMPLETED "the DDP job completes"
out=$(as_user glogs "$job" 2>&1)
params=$(grep '^params rank' <<<"$out")
is "$(grep -c . <<<"$params")" 3 "each of the 3 ranks printed its parameters' hash"
is "$(awk '{print $5}' <<<"$params" | sort -u | grep -c .)" 3 "the ranks ran on 3 distinct hosts"
is "$(awk '{print $7}' <<<"$params" | sort -u | grep -c .)" 1 "every rank ends with identical parameters"
losses=$(grep '^step 0 rank' <<<"$out" | awk '{print $6}' | sort -u | grep -c .)
is "$losses" 3 "the ranks trained on different data (3 distinct first losses)"
# all ranks and both streams share one file: a line written in two calls stays whole
is "$(grep -cE '(init|step [0-9]+|params) rank .*(init|step [0-9]+|params) rank' <<<"$out")" 0 \
	"no output line holds two ranks' lines"
diag "$(grep -E '^(init|params|step 0 )' <<<"$out")"
last_init=$(grep '^init rank' <<<"$out" | awk '{print $NF}' | sort -n | tail -1)
[ -z "$last_init" ] || diag "$(printf 'submit to all 3 ranks past init_process_group: %.1f s; submit to COMPLETED: %.1f s' \
	"$(echo "$last_init - $t0" | bc)" "$(echo "$t1 - $t0" | bc)")"
if [ "$(job_state "$job")" != COMPLETED ]; then
	diag "$(as_user glogs "$job" 2>&1 | tail -20)"
fi

# ---- what the tasks were given -------------------------------------------------------------------
# shellcheck disable=SC2016
envjob=$(submit -n 3 -N 3 -t 1 -- sh -c 'echo "vars $GPOOL_RANK $(hostname) $GLOO_SOCKET_IFNAME $NCCL_SOCKET_IFNAME $TP_SOCKET_IFNAME $OMPI_MCA_btl_tcp_if_include $OMPI_MCA_oob_tcp_if_include $MASTER_ADDR $MASTER_PORT"')
wait_final "$envjob" 60
vars=$(as_user glogs "$envjob" 2>&1 | grep '^vars ')
lan="$(slot_addr 0)/$(slot_bits)" # the hosts' network: 198.18.0.0/24 in slot 0
is "$(awk '{print $4, $5, $6, $7, $8}' <<<"$vars" | sort -u)" "eth0 eth0 eth0 $lan $lan" \
	"every rank is told the interface that joins the hosts"
is "$(awk '{print $9}' <<<"$vars" | sort -u)" "$(host_addr h1)" "MASTER_ADDR is rank 0's host address, the same for every rank"
port=$(awk '{print $10}' <<<"$vars" | sort -u)
like "$port" '^28[5-9][0-9][0-9]$' "MASTER_PORT comes from the agents' range (28500-28999), the same for every rank"

# ---- the submitter's own value wins ---------------------------------------------------------------
# shellcheck disable=SC2016
userjob=$(submit -n 2 -N 2 -t 1 --export=ALL,GLOO_SOCKET_IFNAME=lo -- sh -c 'echo "vars $GLOO_SOCKET_IFNAME $NCCL_SOCKET_IFNAME"')
wait_final "$userjob" 60
is "$(as_user glogs "$userjob" 2>&1 | grep '^vars ' | sort -u)" "vars lo eth0" \
	"a GLOO_SOCKET_IFNAME the submitter exports wins; the others are still gpool's"

# ---- the setup is realistic: with gloo left to the host name, the job fails -------------------------
# (the submitter's value wins, so an empty interface list in a wrapper takes gpool's away)
cat >"$WORK/noiface.sh" <<'SH'
#!/bin/sh
# run the script as gloo would without gpool's interface: it picks from the host name
exec env -u GLOO_SOCKET_IFNAME python3 train.py
SH
chmod 0755 "$WORK/noiface.sh"
badjob=$(submit -n 2 -N 2 -t 1 --no-requeue --stage train.py --stage noiface.sh -- ./noiface.sh)
wait_final "$badjob" 90
is "$(job_state "$badjob")" FAILED "without GLOO_SOCKET_IFNAME the DDP job fails on these hosts"
like "$(as_user glogs "$badjob" 2>&1)" '127\.0\.(0|1)\.1|loopback' "gloo fell back to loopback, as on a real PC"

# ---- concurrent jobs with rank 0 on one host: distinct ports ------------------------------------------
# shellcheck disable=SC2016
a=$(submit -n 1 -w h1 -t 1 -- sh -c 'echo "port $MASTER_PORT"; sleep 3')
# shellcheck disable=SC2016
b=$(submit -n 1 -w h1 -t 1 -- sh -c 'echo "port $MASTER_PORT"; sleep 3')
wait_final "$a" 60
wait_final "$b" 60
pa=$(as_user glogs "$a" 2>&1 | awk '/^port/ {print $2}')
pb=$(as_user glogs "$b" 2>&1 | awk '/^port/ {print $2}')
check "two jobs running at once on h1 have distinct master ports ($pa, $pb)" test -n "$pa" -a -n "$pb" -a "$pa" != "$pb"
done_testing
