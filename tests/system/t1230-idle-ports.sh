#!/bin/bash
# t1230-idle-ports: an idle agent takes nothing from its PC's ports. On an idle host the
# owner's own torchrun can bind its default 29500 (and every port of the agents' old range
# 29500-29531), and gworkerd holds no socket in its master_ports range (28500-28999, neither
# torchrun's default nor ephemeral); a job still gets a working MASTER_PORT from that range
# (rank 0 listens on it, a rank on another host connects to it), reserved at launch only, and
# free again once the job is gone. (t0600, t0610, t0611: DDP and MPI over it.)
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2
grep -q '^MODE=netns' "$CLUSTER_DIR/cluster.env" || skip_all "the hosts are not network namespaces"

# the agent has registered and reported its free ports at least once
check "both nodes are up" wait_node_state h2 UP 20

bind_py='
import socket, sys
ok = []
for p in map(int, sys.argv[1:]):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", p)); s.listen(1); ok.append(p)
    except OSError as e:
        print("taken %d: %s" % (p, e))
    s.close()
print("bound %d of %d" % (len(ok), len(sys.argv) - 1))
'
out=$(on_host h1 "$PY" -c "$bind_py" 29500)
is "$out" "bound 1 of 1" "a bind to 29500 (torchrun's default) succeeds on an idle host"
out=$(on_host h1 "$PY" -c "$bind_py" $(seq 29500 29531))
is "$out" "bound 32 of 32" "so does every port of 29500-29531 (the range agents used to hold)"
out=$(on_host h1 "$PY" -c "$bind_py" $(seq 28500 28531))
is "$out" "bound 32 of 32" "and every port of the agent's own range 28500-28531: it binds none while idle"

apid=$(cat "$CLUSTER_DIR/h1/gworkerd.pid")
held=$(on_host h1 ss -tanpH 2>/dev/null | grep "pid=$apid," | awk '{print $4}' | grep -E ':(28[5-9][0-9][0-9]|29[5-9][0-9][0-9])$' || true)
is "$held" "" "the idle agent holds no TCP socket on a master port"

# a job's MASTER_PORT: from the agent's range, rank 0 listens on it, rank 1 on h2 connects
cat >"$WORK/rdv.py" <<'PY'
import os, socket, time
rank, port, addr = int(os.environ["GPOOL_RANK"]), int(os.environ["MASTER_PORT"]), os.environ["MASTER_ADDR"]
if rank == 0:
    s = socket.socket(); s.bind(("0.0.0.0", port)); s.listen(1)
    c, _ = s.accept(); print("rank0 got", c.recv(16).decode(), "on", port)
else:
    for _ in range(100):
        try:
            c = socket.create_connection((addr, port), timeout=2); c.sendall(b"hello"); break
        except OSError:
            time.sleep(0.1)
    print("rank1 sent to", addr, port)
PY
chmod 0644 "$WORK/rdv.py"
job=$(submit -n 2 -N 2 -t 1 --stage rdv.py -- python3 rdv.py)
check "the two-host job completes" wait_state "$job" COMPLETED 60
out=$(as_user glogs "$job" 2>&1)
port=$(sed -n 's/^rank0 got hello on //p' <<<"$out")
like "$port" '^28[5-9][0-9][0-9]$' "rank 0 listened on a MASTER_PORT of 28500-28999 and rank 1 reached it ($out)"
# (the job's own port may sit in TIME_WAIT a minute: its listener set no SO_REUSEADDR)
# shellcheck disable=SC2046 # one argument per port
out=$(on_host h1 "$PY" -c "$bind_py" 29500 $(seq 28500 28531 | grep -vx "$port"))
is "$out" "bound 32 of 32" "after the job the other ports are all free"
held=$(on_host h1 ss -tanpH 2>/dev/null | grep "pid=$apid," | awk '{print $4}' | grep -E ':(28[5-9][0-9][0-9]|29[5-9][0-9][0-9])$' || true)
is "$held" "" "and the agent holds no socket on a master port"
done_testing
