#!/bin/bash
# t1301-pty-reattach: a detached terminal and gsub --attach (docs/interactive.md, "Detaching").
# A shell started with gsub --pty --pty-keep 60s on a terminal (python3's pty module plays the
# user) sets a variable, and "~." at the start of a line detaches: gsub exits 0 saying how to
# come back, the job runs on. gpool-other can neither reattach with gsub --attach (the
# rendezvous is the owner's) nor through the port with its own credential; the owner's
# credential with a made-up key is refused too. The owner's gsub --attach, on a terminal, gets
# the same shell (the variable is there); while it is attached a second reattach is refused;
# closing that terminal (SIGHUP) detaches again; a third gsub --attach, through a pipe, runs the
# shell to its exit and exits with its status. A terminal left detached past its --pty-keep is
# hung up and its job ends. --pty-keep without --pty is a usage error.
# timeout: 240
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2
need_bins gp-ptyprobe gpool

PROBE=$GPOOL_BIN_DIR/gp-ptyprobe
cat >"$WORK/drive.py" <<'PY'
# Play a user at a terminal running argv: "first" sets X and types ~.; "again" reattaches,
# checks X, waits for $WORK/probed, then closes the terminal. Prints "check NAME ok|bad",
# "job N" and "exit N" lines.
import os, sys, time
from ptydrive import Term, check
role, work = sys.argv[1], os.environ["WORK"]
t = Term(sys.argv[2:])
if role == "first":
    m = t.expect(rb"job (\d+) submitted")
    print("job %s" % (m.group(1).decode() if m else "?"), flush=True)
    check("prompt", t.expect(rb"PTY> "))
    t.send(b"X=persist-$((6*7)); echo set-$X\r")
    check("set", t.expect(rb"set-persist-42\r\n") and t.expect(rb"PTY> "))
    t.send(b"~.")
    check("detached", t.expect(rb"detached: its terminal waits 60 s for 'gsub --attach \d+'"))
else:
    check("attached", t.expect(rb"attached"))
    t.send(b"echo again-$X\r")
    check("same-shell", t.expect(rb"again-persist-42\r\n") and t.expect(rb"PTY> "))
    open(os.path.join(work, "attached"), "w").close()
    end = time.time() + 60
    while not os.path.exists(os.path.join(work, "probed")) and time.time() < end:
        time.sleep(0.2)
    t.close()  # the terminal goes away: the kernel hangs gsub up
print("exit %d" % t.wait(), flush=True)
PY
user_env=(runuser -u "$TEST_USER" -- env PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER"
	GPOOL_CONF="$GPOOL_CONF" TERM=xterm)
out=$(cd "$WORK" && env WORK="$WORK" PYTHONPATH="$GPOOL_SRC_DIR/tests/system" timeout 90 "$PY" "$WORK/drive.py" first "${user_env[@]}" PS1='PTY> ' \
	gsub --pty --pty-keep 60s -- /bin/bash --norc --noprofile -i 2>&1)
J=$(sed -n 's/^job \([0-9]*\)$/\1/p' <<<"$out")
for c in prompt set detached; do
	like "$out" "check $c ok" "on a terminal: $c"
done
like "$out" "exit 0" "gsub exits 0 when it detaches (~.)"
is "$(job_state "$J")" RUNNING "the job runs on, detached"

out=$(as_other gsub --attach "$J" </dev/null 2>&1)
rc=$?
like "$rc $out" "^1 .*permission denied" "gpool-other cannot reattach with gsub --attach ($out)"
port=$(on_host h1 ss -ltnpH 2>/dev/null | sed -n 's/.*:\([0-9]*\) .*"gstepd".*/\1/p' | head -1)
EP=$(host_addr h1):$port
like "$(as_other "$PROBE" "$EP" nokey "$J" 1 2>&1)" "refused: uid [0-9]+ is not the job's owner" \
	"nor through the terminal's port with its own credential"
like "$(as_user "$PROBE" "$EP" self "$J" 1 2>&1)" "refused: wrong key" \
	"the owner's credential with a made-up key is refused"

(cd "$WORK" && env WORK="$WORK" PYTHONPATH="$GPOOL_SRC_DIR/tests/system" timeout 90 "$PY" "$WORK/drive.py" again "${user_env[@]}" \
	gsub --attach "$J" >"$WORK/again.out" 2>&1) &
apid=$!
check "the owner's gsub --attach attaches" wait_until 40 test -e "$WORK/attached"
like "$(as_user "$PROBE" "$EP" nokey "$J" 1 2>&1)" "refused: the terminal is not detached" \
	"while it is attached, another reattach is refused"
touch "$WORK/probed"
wait $apid
out=$(cat "$WORK/again.out")
for c in attached same-shell; do
	like "$out" "check $c ok" "gsub --attach on a terminal: $c"
done
like "$out" "exit 0" "closing its terminal detaches again: gsub exits 0"
is "$(job_state "$J")" RUNNING "the job still runs"

# strangers fill every slot of connections not yet authenticated (8) and keep them: the
# owner's reattach still gets in (the one that has waited longest makes room)
"$PY" - "$EP" "$WORK/held" <<'PYEOF' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
socks = [socket.create_connection((host, int(port))) for _ in range(12)]
open(sys.argv[2], "w").close()
time.sleep(8)
PYEOF
hp=$!
wait_until 10 test -e "$WORK/held"
out=$(printf 'echo third-$X\nexit 5\n' | as_user gsub --attach "$J" 2>"$WORK/third.err")
rc=$?
like "$(tr -d '\r' <<<"$out")" "third-persist-42" "a third gsub --attach, through a pipe, drives the same shell"
is "$rc" 5 "and exits with its exit status (5), beside 12 strangers' idle connections"
kill "$hp" 2>/dev/null
wait "$hp" 2>/dev/null
check "the job ends" wait_final "$J" 30

# ---- a terminal left detached past --pty-keep is hung up -----------------------------------
(sleep 60 | as_user gsub --pty --pty-keep 3s -- /bin/sh -c 'echo k-started; exec sleep 1301' \
	>"$WORK/k.out" 2>"$WORK/k.err") &
check "a job with --pty-keep 3 runs" wait_until 60 grep -q k-started "$WORK/k.out"
K=$(sed -n 's/^gsub: job \([0-9]*\) submitted.*/\1/p' "$WORK/k.err" | head -1)
pkill -HUP -u "$TEST_USER" -f '^gsub --pty --pty-keep 3s'
check "its gsub, hung up, detaches" wait_until 20 grep -q "detached" "$WORK/k.err"
check "3 s later its terminal is hung up and the job ends" wait_final "$K" 30
like "$(grep "job $K.1: nobody reattached" "$CLUSTER_DIR/h1/gworkerd.log")" \
	"nobody reattached to the terminal: hanging up" "gstepd says why"
pkill -u "$TEST_USER" -f '^sleep 60$' 2>/dev/null

out=$(as_user gsub --pty-keep 5s -- true 2>&1)
rc=$?
like "$rc $out" "^2 .*option '--pty-keep' is for '--pty' jobs" "--pty-keep without --pty is a usage error"
done_testing
