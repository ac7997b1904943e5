#!/bin/bash
# t0160-auth: gschedd believes only credentials of its own MUNGE key, each once, and only
# while they are fresh: another key's credential, a replayed envelope, an expired credential,
# a missing credential and an altered message are refused, nothing is submitted, and the
# scheduler keeps serving.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_bins gp-probe
test_under_cluster 1

before=$(job_count)
like "$before" '^[0-9]+$' "gstat -a counts the jobs ($before)"

# -- a second munged with a key of its own
M2=$TEST_DIR/munge2
mkdir -p "$M2"
dd if=/dev/urandom of="$M2/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$M2"
chmod 0755 "$M2" # gpool-user reaches the socket; the key stays munge's (0400)
chmod 0400 "$M2/munge.key"
at_cleanup '[ -s "$M2/munged.pid" ] && kill "$(cat "$M2/munged.pid")" 2>/dev/null'
if runuser -u munge -- /usr/sbin/munged --socket="$M2/munge.sock" --key-file="$M2/munge.key" \
	--pid-file="$M2/munged.pid" --seed-file="$M2/munged.seed" --log-file="$M2/munged.log" 2>"$TEST_DIR/munged2.err" &&
	wait_until 5 test -S "$M2/munge.sock"; then
	ok "a second munged with another key runs"
	out=$(GPOOL_MUNGE_SOCKET=$M2/munge.sock as_user gsub -- /bin/touch "$WORK/foreign-ran" 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "gsub with another key's credential fails (exit $rc)" || fail "gsub with another key's credential fails" "$out"
	like "$out" '[Aa]uth|credential|refused|[Mm]unge' "with an authentication error: $out"
	out=$(GPOOL_MUNGE_SOCKET=$M2/munge.sock as_user gp-probe valid 2>&1)
	like "$out" 'ERROR_AUTH|no reply' "gp-probe: the scheduler refuses it ($out)"
	sleep 1
	is "$(job_count)" "$before" "nothing was submitted"
	[ ! -e "$WORK/foreign-ran" ] && ok "and nothing ran" || fail "and nothing ran"
else
	fail "a second munged with another key runs" "$(cat "$TEST_DIR/munged2.err" "$M2/munged.log" 2>/dev/null)"
fi

# -- the baseline: a valid envelope is answered
out=$(as_user gp-probe valid 2>&1)
like "$out" '^reply: ok job_query_reply' "a valid envelope is answered ($out)"

# -- a replayed envelope
out=$(as_user gp-probe replay 2>&1)
first=$(sed -n 1p <<<"$out")
second=$(sed -n 2p <<<"$out")
like "$first" '^reply: ok' "the first copy is answered ($first)"
like "$second" 'ERROR_REPLAY' "the second copy is refused as a replay ($second)"

# -- an expired credential (1 s to live, sent after 3 s)
out=$(as_user gp-probe --ttl 1 expired 3 2>&1)
like "$out" 'ERROR_EXPIRED' "an expired credential is refused as expired ($out)"

# -- no credential, an altered body
out=$(as_user gp-probe nocred 2>&1)
like "$out" 'ERROR_AUTH|no reply' "an envelope without a credential is refused ($out)"
out=$(as_user gp-probe tampered 2>&1)
like "$out" 'ERROR_AUTH|no reply' "an envelope altered after sealing is refused ($out)"

# -- an impostor on another port, run by another user: it cannot decode the command's
# credential (restricted to the scheduler's uid), so it learns no reply key; neither its own
# credential nor a guessed key makes gstat believe its answer
port=$((20000 + RANDOM % 20000))
for how in cred mac; do
	as_other gp-probe --scheduler "tcp://127.0.0.1:$port" --timeout 8000 impostor "$how" \
		>"$TEST_DIR/impostor-$how.out" 2>&1 &
	ipid=$!
	wait_until 5 grep -q listening "$TEST_DIR/impostor-$how.out"
	out=$(GPOOL_SCHEDULER="tcp://127.0.0.1:$port" as_user timeout 20 gstat 2>&1)
	rc=$?
	wait $ipid
	imp=$(cat "$TEST_DIR/impostor-$how.out")
	like "$imp" 'decode: credential refused: Unauthorized' "impostor ($how): the command's credential does not decode for another uid"
	like "$imp" 'answered' "impostor ($how): it answered"
	[ $rc != 0 ] && [ $rc != 124 ] && ok "impostor ($how): gstat refuses its answer (exit $rc)" ||
		fail "impostor ($how): gstat refuses its answer (exit $rc)" "$out"
	[ "$how" = cred ] && like "$out" "not the scheduler's uid" "impostor (cred): signed by the wrong uid: $out"
	[ "$how" = mac ] && like "$out" 'reply key does not match' "impostor (mac): under a key it guessed: $out"
done

# -- and the scheduler still serves
out=$(as_user gsub --wait -- /bin/echo still-serving 2>&1)
like "$out" '^still-serving$' "a normal gsub works afterwards"
is "$(job_count)" "$((before + 1))" "exactly that one job was added"

done_testing
