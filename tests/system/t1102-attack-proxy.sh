#!/bin/bash
# t1102-attack-proxy: the exec-proxies of a `gsub --mpi=mpirun` job (how mpirun starts its
# daemons on the other hosts, docs/mpi.md) under attack. While the job's script waits before
# calling mpirun, gpool-other on h3 opens 300 idle connections to h2's proxy and holds them, and
# sends it an AUTH that is no credential and one of 1 MiB: the proxy closes those, mpirun still
# starts its daemons through it, and the job completes. Nothing a proxy was told on the wire
# lets another user run a command: gpool-other's own credential (gpool-rsh with the proxies'
# file and the job id) is refused.
# timeout: 240
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-mpi.sh"
command -v mpirun >/dev/null || skip_all "Open MPI's mpirun is not installed"
need_bins gp-mpi-check gpool-launch gpool-rsh
test_under_cluster 3 --cpus 2

cat >mpi-job.sh <<'SH'
#!/bin/sh
cp "$GPOOL_MPI_PROXIES" "$1/proxies" 2>/dev/null
chmod 0644 "$1/proxies"
while [ ! -e "$1/go" ]; do sleep 0.2; done
mpirun --mca mpi_yield_when_idle 1 gp-mpi-check || exit
while [ ! -e "$1/end" ]; do sleep 0.2; done
SH
chmod 0755 mpi-job.sh
chown "$TEST_USER:" mpi-job.sh
id=$(submit --mpi=mpirun -n 3 -N 3 -t 4 mpi-job.sh "$WORK")
check "the MPI job runs" wait_state "$id" RUNNING 30
check "its proxies are published (rank 0 copied their file)" wait_until 30 test -s "$WORK/proxies"
line=$(grep '^h2 ' "$WORK/proxies")
read -r _ paddr pport _ <<<"$line"
diag "h2's proxy: $line"
unlike "$(cat "$WORK/proxies")" '[0-9a-f]{32}' "the proxies' file holds no secret"

# gpool-other on h3: idle connections, a junk AUTH, a 1 MiB frame
cat >"$WORK/attack.py" <<'PY'
import socket, struct, sys, time
addr, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
socks, refused = [], 0
for i in range(n):
    try:
        s = socket.create_connection((addr, port), timeout=2)
        socks.append(s)
    except OSError:
        refused += 1
def said(s):
    try:
        s.settimeout(3)
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                return data
            data += b
    except OSError:
        return data
junk = socket.create_connection((addr, port), timeout=2)
junk.sendall(struct.pack(">II", 1, 16) + b"not-a-credential")
big = socket.create_connection((addr, port), timeout=2)
big.sendall(struct.pack(">II", 1, 1 << 20))
j, b = said(junk), said(big)
print("junk-auth:", b"authentication failed" in j, "big-frame:", b"too large before authentication" in b, flush=True)
time.sleep(hold)
closed = 0
for s in socks:
    s.settimeout(0.05)
    try:
        while True:
            b = s.recv(4096)
            if not b:
                closed += 1
                break
    except OSError:
        pass
print(f"opened {len(socks)} refused {refused} closed-by-proxy {closed}")
PY
chmod 0644 "$WORK/attack.py"
on_host h3 runuser -u "$OTHER_USER" -- "$PY" "$WORK/attack.py" "$paddr" "$pport" 300 8 >"$WORK/attack.out" 2>&1 &
att=$!
at_cleanup "kill $att 2>/dev/null"
# mpirun starts once the idle connections are open and the junk is refused; the job then
# holds its proxies open (it waits for "end") until the attacker has counted what they closed
check "the attacker's connections are open" wait_until 60 grep -q junk-auth "$WORK/attack.out"
touch "$WORK/go"
wait $att
touch "$WORK/end"
check "the job completes while its proxy is flooded" wait_state "$id" COMPLETED 120
diag "attacker: $(cat "$WORK/attack.out")"
like "$(cat "$WORK/attack.out")" "junk-auth: True big-frame: True" "the proxy refused a junk AUTH and a 1 MiB frame"
like "$(cat "$WORK/attack.out")" "opened [0-9]+ refused [0-9]+ closed-by-proxy ([3-9][0-9]|[1-9][0-9][0-9])" "it closed the idle connections"
logs=$(as_user glogs "$id" 2>&1)
is "$(grep -c 'allreduce ok ring ok' <<<"$logs")" 3 "every rank passed its checks"

# another user with the proxies' file and the job id: refused
mkdir -p "$WORK/2" && chown "$TEST_USER:" "$WORK/2"
id2=$(submit --mpi=mpirun -n 3 -N 3 -t 4 mpi-job.sh "$WORK/2")
check "a second MPI job runs" wait_until 30 test -s "$WORK/2/proxies"
out=$(on_host h1 runuser -u "$OTHER_USER" -- env GPOOL_MPI_PROXIES="$WORK/2/proxies" GPOOL_JOB_ID="$id2" \
	GPOOL_NODENAME=h1 "$USER_BIN/gpool-rsh" h2 touch "$WORK/2/pwned" 2>&1)
rc=$?
is "$rc" 255 "gpool-other's gpool-rsh to the job's proxy fails"
like "$out" "authentication failed: credential of uid $(id -u "$OTHER_USER"), not the job's owner" "with the reason ($out)"
[ ! -e "$WORK/2/pwned" ] && ok "nothing ran" || fail "nothing ran" "$WORK/2/pwned exists"
touch "$WORK/2/go" "$WORK/2/end"
check "the second job completes" wait_state "$id2" COMPLETED 120
done_testing
