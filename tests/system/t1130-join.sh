#!/bin/bash
# t1130-join: adding a PC with one command, and taking it out. h3 starts bare (gpool-cluster
# --bare): no MUNGE key, no munged socket and no /etc/gpool/gpool.conf of its own, private
# tmpfs over /etc/munge, /run/munge and /etc/gpool in its mount namespace. gpool-other cannot
# make a token; root's token names a sealed bundle in gschedd's state directory that does not
# hold the key in clear; a token with a wrong secret is refused ("does not decrypt") and burns
# it (the right one is then refused as already used); an expired token is refused; the right
# token installs the key (0400, munge's) and gpool.conf on h3, a munged of h3's own with that key
# makes credentials the scheduler's PC accepts, h3's agent (reading only the joined gpool.conf
# for the scheduler) registers and runs a job; the same token again is refused; one address
# asking too often gets no answer; `gpool leave` on h3 drains it, stops its agent and munged,
# removes the key and gpool.conf, and gschedd places nothing there afterwards (while a job still
# ran there it stopped, h3 drained, the key in place).
# timeout: 180
. "$(dirname "$0")/lib.sh"
need_bins gpool gpool-join glogs
command -v munged >/dev/null || skip_all "no munged"
test_under_cluster 3 --cpus 2 --bare h3

STATE=$CLUSTER_DIR/sched/state
H3=$CLUSTER_DIR/h3
H3STATE=$("$CLUSTER" path --dir "$CLUSTER_DIR" h3 state) # the agent's, as h3 sees it

# -- h3 has nothing of the pool's
on_host h3 test -e /etc/munge/munge.key
[ $? != 0 ] && ok "h3 has no munge key" || fail "h3 has no munge key" "/etc/munge/munge.key is there"
on_host h3 test -e /etc/gpool/gpool.conf
[ $? != 0 ] && ok "h3 has no gpool.conf" || fail "h3 has no gpool.conf" "it is there"
on_host h3 sh -c 'munge -n >/dev/null 2>&1'
[ $? != 0 ] && ok "h3 reaches no munged" || fail "h3 reaches no munged" "munge -n worked on h3"
is "$(node_state h3)" "" "gschedd does not know h3"

# -- a token: root only
out=$(as_other gpool join-token --config "$GPOOL_CONF" --state-dir "$STATE" 2>&1)
rc=$?
[ $rc != 0 ] && ok "gpool-other cannot make a join token (exit $rc)" || fail "gpool-other cannot make a join token" "$out"
like "$out" "only root may make a join token" "and is told why ($out)"
out=$(gpool join-token --node x 2>&1)
[ $? = 2 ] && like "$out" "join-token takes --ttl" "an option join-token does not use is refused ($out)" ||
	fail "an option join-token does not use is refused" "$out"

# token TTL: the "gpool join ADDR TOKEN" line gpool join-token prints, as "ADDR TOKEN"
token() {
	gpool join-token --config "$GPOOL_CONF" --state-dir "$STATE" --ttl "$1" 2>&1 |
		sed -n 's/^  gpool join //p'
}
line=$(token 10m)
addr=${line%% *}
tok_a=${line#* }
is "$addr" "$GPOOL_SCHEDULER" "the token's command names the scheduler's address"
like "$tok_a" '^gpj1-[0-9a-f]{32}-[0-9a-f]{64}$' "and a token ($tok_a)"
id_a=${tok_a:5:32}
bundle=$STATE/join/$id_a.bundle
is "$(stat -c '%a %u' "$bundle" 2>&1)" "600 $(stat -c %u "$STATE")" \
	"its sealed bundle is in gschedd's state directory, mode 0600, gschedd's account's"
"$PY" - "$bundle" /etc/munge/munge.key <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
k = open(sys.argv[2], "rb").read()
sys.exit(1 if any(k[i:i + 16] in b for i in range(0, len(k) - 16, 16)) else 0)
EOF
is "$?" 0 "no 16 bytes of the munge key are in the bundle in clear"

# -- a wrong secret: the bundle does not decrypt, nothing is installed, the token is spent
last=${tok_a: -1}
[ "$last" = 0 ] && other=1 || other=0
out=$(on_host h3 gpool join "$addr" "${tok_a%?}$other" 2>&1)
rc=$?
[ $rc != 0 ] && ok "a token with a wrong secret fails (exit $rc)" || fail "a wrong secret fails" "$out"
like "$out" "does not decrypt with this token: its secret is wrong" "with a clear message ($out)"
on_host h3 test -e /etc/munge/munge.key
[ $? != 0 ] && ok "nothing was installed" || fail "nothing was installed" "a key is on h3"
out=$(on_host h3 gpool join "$addr" "$tok_a" 2>&1)
like "$out" "already used" "the id a wrong secret fetched is spent: the right token is then refused ($out)"

# -- an expired token
line=$(token 1s)
tok_b=${line#* }
sleep 2.2
out=$(on_host h3 gpool join "$addr" "$tok_b" 2>&1)
rc=$?
[ $rc != 0 ] && like "$out" "has expired" "an expired token is refused ($out)" || fail "an expired token is refused" "$out"
[ ! -e "$STATE/join/${tok_b:5:32}.bundle" ] && ok "and its bundle is gone" || fail "the expired bundle is gone"

# -- the right token joins h3
line=$(token 15m)
tok_c=${line#* }
out=$(on_host h3 gpool join "$addr" "$tok_c" 2>&1)
rc=$?
is "$rc" 0 "gpool join with a good token succeeds"
diag "$out"
like "$out" "installed the pool's munge key in /etc/munge/munge.key" "it says what it installed"
like "$out" "systemd does not run here: start munged" "and what to start, without systemd"
is "$(on_host h3 stat -c '%a %U:%G' /etc/munge/munge.key 2>&1)" "400 munge:munge" "h3's key is mode 0400, munge's"
on_host h3 cmp -s /etc/munge/munge.key /dev/stdin </etc/munge/munge.key
is "$?" 0 "it is the pool's key"
like "$(on_host h3 cat /etc/gpool/gpool.conf)" "scheduler = $GPOOL_SCHEDULER" "h3's gpool.conf names the scheduler"
[ ! -e "$STATE/join/${tok_c:5:32}.bundle" ] && ok "the bundle is gone from gschedd's state" || fail "the used bundle is gone"
out=$(on_host h3 gpool join "$addr" "$tok_c" 2>&1)
rc=$?
[ $rc != 0 ] && like "$out" "already used" "the same token again is refused ($out)" || fail "the same token again is refused" "$out"

# -- h3's own munged, on the key it received
on_host h3 runuser -u munge -- munged --key-file=/etc/munge/munge.key \
	--seed-file=/run/munge/munged.seed --log-file=/run/munge/munged.log --pid-file=/run/munge/munged.pid
is "$?" 0 "munged starts on h3 with the joined key"
check "h3's munged answers" wait_until 5 on_host h3 sh -c 'munge -n | unmunge >/dev/null'
cred=$(on_host h3 munge -n -s h3-was-here)
is "$(echo "$cred" | unmunge 2>/dev/null | tail -1)" "h3-was-here" \
	"a credential h3's munged makes decodes at the scheduler's munged (the same key)"

# -- h3's agent, from the joined gpool.conf alone (no --scheduler, no cluster conf)
cmd=$(sed -e "s| --config [^ ]*| --config /etc/gpool/gpool.conf|" -e "s| --scheduler [^ ]*||" "$H3/agent.cmd")
like "$cmd" "--config /etc/gpool/gpool.conf" "h3's agent reads the joined gpool.conf ($cmd)"
on_host h3 env -u GPOOL_CONF -u GPOOL_SCHEDULER /bin/sh -c "exec $cmd" </dev/null >>"$H3/gworkerd.log" 2>&1 &
check "h3 comes up" wait_node_state h3 UP 20
id=$(submit -w h3 -- sh -c 'hostname; id -un')
check "a job on h3 ends" wait_final "$id" 30
is "$(job_state "$id")" COMPLETED "it completed"
is "$(as_user glogs "$id" 2>&1 | head -1)" h3 "it ran on h3"

hexbytes() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# -- one address asking too often: answered 10 times a minute, then not at all. The 11
# requests go at once: the limit is a bucket of 10 that gains one every 6 s, so requests one
# after the other, slower than 0.6 s each on a busy machine, earned an 11th answer.
rl=$WORK/rate
mkdir -p "$rl"
jp=()
for k in $(seq 11); do
	on_host h1 gpool join "$addr" "gpj1-$(hexbytes 16)-$(hexbytes 32)" \
		--timeout 1s --munge-key "$rl/key" --config "$rl/conf" >"$rl/out$k" 2>&1 &
	jp+=($!)
done
wait "${jp[@]}"
answered=$(grep -l "unknown join token" "$rl"/out* | wc -l)
o=$(for k in $(seq 11); do grep -q "unknown join token" "$rl/out$k" || cat "$rl/out$k"; done)
like "$o" "no answer from the scheduler" "the 11th request from h1 within a minute is not answered ($o)"
is "$answered" 10 "the first 10 were answered (unknown token)"
[ ! -e "$rl/key" ] && ok "nothing was installed on h1" || fail "nothing installed on h1"

# -- gpool leave on h3: not while a job runs there
long=$(submit -w h3 -- sleep 120)
check "a long job runs on h3" wait_state "$long" RUNNING 20
out=$(on_host h3 env -u GPOOL_CONF -u GPOOL_SCHEDULER gpool leave --state-dir "$H3STATE" --timeout 2s 2>&1)
rc=$?
[ $rc = 1 ] && like "$out" "jobs still run on h3 after 2 s \\(1 cpu in use\\): it stays drained" \
	"gpool leave stops while a job runs on h3 (exit 1: $out)" || fail "gpool leave waits for jobs" "exit $rc: $out"
is "$(node_state h3)" DRAINED "h3 is drained"
is "$(job_state "$long")" RUNNING "the job runs on"
on_host h3 test -e /etc/munge/munge.key
is "$?" 0 "h3 keeps its key meanwhile"
as_user gcancel "$long" >/dev/null 2>&1
check "the job is cancelled" wait_final "$long" 30
# -- then it leaves
out=$(on_host h3 env -u GPOOL_CONF -u GPOOL_SCHEDULER gpool leave --state-dir "$H3STATE" --timeout 20s 2>&1)
rc=$?
is "$rc" 0 "gpool leave succeeds on h3"
# (until node_timeout passes: then gnodes shows it DOWN, "not responding", the drain kept)
like "$(gnodes 2>&1 | grep '^h3')" "left the pool" "gnodes says why"
diag "$out"
like "$out" "drained node h3" "it drained h3"
like "$out" "stopped gworkerd" "stopped its agent"
like "$out" "removed the munge key /etc/munge/munge.key" "removed the key"
like "$out" "removed the gpool configuration /etc/gpool/gpool.conf" "removed gpool.conf"
on_host h3 test -e /etc/munge/munge.key
[ $? != 0 ] && ok "h3 has no key any more" || fail "h3 has no key any more"
on_host h3 sh -c 'munge -n >/dev/null 2>&1'
[ $? != 0 ] && ok "h3's munged has stopped" || fail "h3's munged has stopped"
like "$(node_state h3)" "DRAINED|DOWN" "gschedd keeps h3, drained ($(node_state h3))"
id2=$(submit -w h3 -- true)
sleep 3
is "$(job_state "$id2")" PENDING "a job for h3 is not placed there"
as_user gcancel "$id2" >/dev/null 2>&1
is "$(node_state h1)" UP "h1 stays UP"
done_testing
