#!/bin/bash
# t1300-pty: gsub --pty gives a task a real pseudo-terminal whose bytes go between gsub and the
# node's gstepd directly (docs/interactive.md). On a terminal (python3's pty module plays the
# user's): the shell's input is echoed and run, `stty size` shows the window size gsub had and
# the new size after the window changed (SIGWINCH forwarded), Ctrl-C kills the foreground
# `sleep` and the shell goes on, and gsub exits with the shell's exit status. Through a pipe
# bytes pass, the end of input ends the shell, and its exit code and a signal's (128+N) are
# gsub's. The pty port lets in the job's owner with the job's key only: gpool-other's own
# credential, the owner's credential with a made-up key, no credential, a credential that is
# none and an oversized header are each refused, and the real gsub still attaches afterwards.
# A pending --pty job says its place in the queue.
# timeout: 240
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2
need_bins gp-ptyprobe gpool

PROBE=$GPOOL_BIN_DIR/gp-ptyprobe

# ---- on a terminal ---------------------------------------------------------------------------
cat >"$WORK/drive.py" <<'PY'
# Play a user at a terminal of 30 rows and 100 columns running gsub --pty; print what was seen
# as "check NAME ok|bad" lines and gsub's exit status as "exit N".
import os, sys, time
from ptydrive import Term, check
t = Term(sys.argv[1:])
t.winsize(30, 100)
check("prompt", t.expect(rb"PTY> "))
t.send(b"echo hello-$((6*7)); [ -t 0 ] && [ -t 1 ] && echo tty-yes\r")
check("echo", t.expect(rb"hello-42\r\ntty-yes\r\n") and t.expect(rb"PTY> "))
t.send(b"stty size\r")
check("size", t.expect(rb"\r30 100\r\n") and t.expect(rb"PTY> "))
t.winsize(40, 120)  # the kernel sends gsub SIGWINCH; gsub passes the size on
time.sleep(1)
t.send(b"stty size\r")
check("resize", t.expect(rb"\r40 120\r\n") and t.expect(rb"PTY> "))
t.send(b"sleep 1300\r")  # a duration no other test sleeps: pgrep below sees every slot
time.sleep(1.5)
t0 = time.time()
t.send(b"\x03")  # Ctrl-C, a byte in raw mode: the remote terminal makes it SIGINT
check("ctrl-c", t.expect(rb"PTY> ", 10) and time.time() - t0 < 10)
t.send(b"pgrep -u $(id -u) -f '^sleep 1300' || echo no-sleep-left\r")
check("sleep-killed", t.expect(rb"\rno-sleep-left\r\n") and t.expect(rb"PTY> "))
t.send(b"echo after-$((1+1))\r")
check("continues", t.expect(rb"after-2\r\n") and t.expect(rb"PTY> "))
t.send(b"exit 7\r")
t.expect(rb"$^", 3)
print("exit %d" % t.wait())
PY
out=$(cd "$WORK" && PYTHONPATH="$GPOOL_SRC_DIR/tests/system" timeout 90 "$PY" "$WORK/drive.py" runuser -u "$TEST_USER" -- env \
	PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
	TERM=xterm PS1='PTY> ' gsub --pty -- /bin/bash --norc --noprofile -i 2>&1)
diag "$(grep -v '^check\|^exit' <<<"$out" | head -5)"
for c in prompt echo size resize ctrl-c sleep-killed continues; do
	like "$out" "check $c ok" "on a terminal: $c"
done
like "$out" "exit 7" "gsub exits with the shell's exit status (7)"

# ---- through pipes ---------------------------------------------------------------------------
out=$(printf 'echo piped-$((2+3))\nexit 3\n' | as_user gsub --pty -- /bin/sh 2>"$WORK/err1")
rc=$?
like "$(tr -d '\r' <<<"$out")" "piped-5" "through a pipe: the bytes pass and run"
is "$rc" 3 "through a pipe: gsub exits with the task's exit code (3)"
like "$(cat "$WORK/err1")" "gsub: job [0-9]+ submitted" "gsub says which job it is"
out=$(as_user gsub --pty -- /bin/sh -c 'tty; kill -TERM $$' </dev/null 2>"$WORK/term.err")
rc=$?
is "$rc" 143 "a task killed by SIGTERM: gsub exits 128+15"
[ "$rc" = 143 ] || diag "gsub's stderr: $(cat "$WORK/term.err")"
like "$out" "/dev/pts/" "the task's stdin is a pseudo-terminal"
out=$(as_user gsub --pty -n 2 -- /bin/true 2>&1)
is "$?" 2 "--pty with -n 2 is a usage error"

# ---- a pending job says its place; the port refuses strangers ---------------------------------
rm -f "$WORK/gsub.out" "$WORK/gsub.err"
mkfifo "$WORK/in"
chmod 0666 "$WORK/in"
(as_user gsub --pty --hold -- /bin/sh -c 'read line; echo "legit-$line"; exit 5' \
	<"$WORK/in" >"$WORK/gsub.out" 2>"$WORK/gsub.err"; echo $? >"$WORK/gsub.rc") &
exec 9>"$WORK/in" # the pipe stays open until the test writes the line
wait_until 20 grep -q "queued: place 1 of" "$WORK/gsub.err"
ok_place=$?
is "$ok_place" 0 "a held --pty job says its place in the queue ($(head -2 "$WORK/gsub.err" | tr '\n' ' '))"
JOB=$(sed -n 's/^gsub: job \([0-9]*\) submitted$/\1/p' "$WORK/gsub.err")
GSUB=$(pgrep -u "$TEST_USER" -f -- "gsub --pty --hold" | head -1)
diag "gsub is pid $GSUB"
kill -STOP "$GSUB" # it may not attach before the strangers have knocked
as_user gpool release "$JOB" >/dev/null 2>&1
wait_state "$JOB" RUNNING 30
EP=""
for _ in $(seq 1 50); do
	port=$(on_host h1 ss -ltnpH 2>/dev/null | sed -n 's/.*:\([0-9]*\) .*"gstepd".*/\1/p' | head -1)
	[ -n "$port" ] && EP=$(host_addr h1):$port && break
	sleep 0.2
done
like "$EP" "^[0-9.]+:[0-9]+$" "the job's gstepd listens for its terminal's client ($EP)"
ATT=$(job_field "$JOB" attempt)
out=$(as_other "$PROBE" "$EP" self "$JOB" "${ATT:-1}" 2>&1)
like "$out" "refused: uid [0-9]+ is not the job's owner" "gpool-other's credential is refused ($out)"
out=$(as_user "$PROBE" "$EP" self "$JOB" "${ATT:-1}" 2>&1)
like "$out" "refused: wrong key" "the owner's credential with a made-up key is refused ($out)"
out=$("$PROBE" "$EP" none 2>&1)
like "$out" "refused: no credential" "a peer with no credential is refused ($out)"
out=$("$PROBE" "$EP" garbage 2>&1)
like "$out" "refused: invalid credential" "a credential that is none is refused ($out)"
out=$("$PROBE" "$EP" oversize 2>&1)
like "$out" "refused: bad frame" "an oversized header is refused before its payload ($out)"
# runuser stops itself when its child stops (as su does): both go on
kill -CONT "$GSUB" "$(ps -o ppid= -p "$GSUB")"
echo "line" >&9
exec 9>&-
wait_until 30 test -s "$WORK/gsub.rc"
like "$(tr -d '\r' <"$WORK/gsub.out")" "legit-line" "the real gsub attaches after the strangers were refused"
is "$(cat "$WORK/gsub.rc" 2>/dev/null)" 5 "and exits with its task's code (5)"
out=$("$PROBE" "$EP" none 2>&1)
unlike "$out" "accepted" "the port is closed once the job's terminal is attached and done"
wait_final "$JOB" 20 >/dev/null
is "$(job_state "$JOB")" FAILED "gstat shows the --pty job FAILED with its exit code"

done_testing
