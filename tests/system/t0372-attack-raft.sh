#!/bin/bash
# t0372-attack-raft: the standby group's Raft port (7830) attacked (docs/standby.md,
# "Security"). libraft's TCP transport trusts whoever connects; gschedd's wraps it
# (scheduler/repl_auth.c): a connection is given to Raft only with a MUNGE credential of
# sched_uid (or root) bound to the member id its handshake claims.
# - A peer with no credential claiming to be a member: closed, logged.
# - gpool-other's own credential (a user of the pool, not the scheduler's account): closed.
# - root's credential made for another member id than the one claimed: closed.
# - A peer that sends its handshake and then nothing: closed after 5 s.
# Then: the leader still leads, a job is accepted and every member holds it.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 1 --schedulers 3 --no-wait

ep_of() { echo "tcp://$(slot_addr $((1 + ${1#s}))):7820"; }
role() { cat "$CLUSTER_DIR/$1/state/role" 2>/dev/null; }
db_jobs() { sqlite3 -readonly "$CLUSTER_DIR/$1/state/jobs.db" 'SELECT count(*) FROM jobs' 2>/dev/null; }
has_leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" >/dev/null 2>&1; }
check "a scheduler leads" wait_until 10 has_leader
L=$("$CLUSTER" sched-leader --dir "$CLUSTER_DIR")
ip=$(slot_addr $((1 + ${L#s})))
other=$(( ${L#s} % 3 + 1 )) # a member id the attacker claims
PEER="$GPOOL_SRC_DIR/tests/system/raft_peer.py"
cp "$PEER" "$WORK/raft_peer.py" && chmod 0755 "$WORK/raft_peer.py"
log() { cat "$CLUSTER_DIR/$L/gschedd.log"; }

is "$(python3 "$WORK/raft_peer.py" "$ip" 7830 "$other" junk)" closed \
	"no credential, claiming member $other: the connection is closed"
like "$(log)" "refused a connection claiming member $other .*: .*(invalid|format|refused)" \
	"and logged"
is "$(as_other python3 "$WORK/raft_peer.py" "$ip" 7830 "$other" cred)" closed \
	"gpool-other's credential: closed"
like "$(log)" "refused a connection claiming member $other .*: credential of uid $(id -u "$OTHER_USER"), not sched_uid" \
	"logged: not sched_uid"
wrong=$(( other % 3 + 1 ))
out=$(python3 - "$ip" "$other" "$wrong" <<'PY'
import socket, struct, subprocess, sys
ip, claim, made_for = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
addr = b"198.18.0.9:7830\0"
s = socket.create_connection((ip, 7830), timeout=10)
cred = subprocess.run(["munge", "-n", "-s", "gpool-raft %d" % made_for], capture_output=True).stdout.strip()
s.sendall(struct.pack("<QQQ", 1, claim, len(addr)) + addr + struct.pack(">I", len(cred)) + cred)
s.settimeout(8)
try:
    print("closed" if s.recv(100) == b"" else "open")
except ConnectionResetError:
    print("closed")
except socket.timeout:
    print("open")
PY
)
is "$out" closed "root's credential made for member $wrong, claiming $other: closed"
like "$(log)" "claiming member $other .*: the credential is for another member" "logged"
is "$(python3 "$WORK/raft_peer.py" "$ip" 7830 "$other" silent)" closed \
	"a handshake and then silence: closed"
like "$(log)" "no credential within 5 s" "logged"

is "$(role "$L")" leader "$L still leads"
export GPOOL_SCHEDULER
GPOOL_SCHEDULER=$(ep_of "$L")
id=$(submit -H -J after-attacks -- /bin/true)
like "$id" '^[0-9]+$' "a job is accepted after the attacks (id $id)"
all_hold() {
	local k
	for k in s1 s2 s3; do [ "$(db_jobs "$k")" = 1 ] || return 1; done
}
check "every member holds it" wait_until 10 all_hold
done_testing
