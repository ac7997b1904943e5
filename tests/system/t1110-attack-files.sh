#!/bin/bash
# t1110-attack-files: the files of a shared pool, attacked (docs/security.md, Files).
# 1. A job makes a setuid copy of a shell, a setgid file and a sticky world-writable directory
#    and collects them; `gpool fetch` run by root writes them without those bits. A link the
#    job's owner planted in root's fetch directory is refused, not followed.
# 2. gpool-other knows the hash of a chunk gpool-user staged: the store says it lacks it, and
#    a file set of their own naming it, a job staging it and ChunkGet are refused with a clear
#    reason (gp-chunk). gpool-user's second staging still sends nothing; gpool-other, once they
#    send the same bytes themselves, may use them.
# 3. h2's agent, started afresh on a scratch root that is a symbolic link, owned by gpool-user,
#    or world-writable without the sticky bit, stops at once with a clear error and a
#    non-zero exit; on its real scratch root it starts and runs a job again.
# timeout: 150
. "$(dirname "$0")/lib.sh"
need_bins gp-chunk gpool glogs
test_under_cluster 2 --node-timeout 8s --heartbeat-interval 1s

# ---- 1. setuid, setgid and sticky bits through collect and a root fetch -----------------------
maker='cp /bin/sh rootsh && chmod 4755 rootsh && cp /bin/true gidtool && chmod 2755 gidtool &&
mkdir -p shared && chmod 1777 shared && echo x >shared/f && stat -c "%a %n" rootsh gidtool shared'
id=$(submit -w h1 --collect rootsh --collect gidtool --collect shared -- /bin/bash -c "$maker")
if [ -n "$id" ] && wait_state "$id" COMPLETED 40; then
	logs=$(as_user glogs "$id" 2>&1)
	like "$logs" "4755 rootsh" "the job made a setuid copy of a shell ($(tr '\n' ' ' <<<"$logs"))"
	mkdir -p "$WORK/asroot"
	out=$(cd "$WORK/asroot" && gpool fetch "$id" 2>&1)
	is "$?" 0 "root fetches the job's collected files ($out)"
	is "$(stat -c '%a %U' "$WORK/asroot/rootsh" 2>&1)" "755 root" \
		"the setuid shell comes out as 755, root's, without the setuid bit"
	is "$(stat -c %a "$WORK/asroot/gidtool" 2>&1)" 755 "the setgid file comes out without the setgid bit"
	is "$(stat -c %a "$WORK/asroot/shared" 2>&1)" "$(printf %o $((0777 & ~$(umask))))" \
		"the sticky directory comes out without the sticky bit (rwx less root's umask)"
	is "$(find "$WORK/asroot" -perm /7000 | wc -l)" 0 "nothing fetched has a setuid, setgid or sticky bit"
	# a link the owner planted where root fetches: refused, the place it names untouched
	victim=$TEST_DIR/victim
	mkdir -p "$victim" "$WORK/planted"
	chown "$TEST_USER:" "$WORK/planted"
	as_user ln -s "$victim" "$WORK/planted/shared"
	out=$(gpool fetch "$id" --dir "$WORK/planted" 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "root's fetch through a planted link fails (exit $rc)" ||
		fail "root's fetch through a planted link fails" "exit 0: $out"
	like "$out" "symbolic link" "and says why: $out"
	is "$(ls -A "$victim" | wc -l)" 0 "nothing was written where the link points"
	is "$(find "$WORK/planted" -perm /7000 | wc -l)" 0 "and no setuid file was left behind"
else
	fail "a job collects a setuid shell" "$(job_json "$id")"
fi

# ---- 2. a chunk hash named by another user ----------------------------------------------------
head -c 3000 /dev/urandom | base64 >"$WORK/secret.txt"
chown "$TEST_USER:" "$WORK/secret.txt"
chmod 0600 "$WORK/secret.txt"
hash=$(sha256sum <"$WORK/secret.txt" | cut -c1-64)
size=$(stat -c %s "$WORK/secret.txt")
out=$(cd "$WORK" && as_user gsub --wait --stage secret.txt -- /bin/true 2>&1)
is "$?" 0 "gpool-user stages a secret file ($size bytes, one chunk)"
is "$(as_user gp-chunk have "$hash")" have "the store tells gpool-user it has the chunk"
is "$(as_other gp-chunk have "$hash")" missing \
	"the store tells gpool-other, who knows only the hash, that it has no such chunk"
ido=$(as_other gsub --parsable -w h1 -- /bin/sleep 60 2>&1)
if [[ $ido =~ ^[0-9]+$ ]] && wait_state "$ido" RUNNING 20; then
	out=$(as_other gp-chunk set "$ido" stolen "$hash" "$size")
	rc=$?
	is "$rc" 4 "gpool-other's file set naming the chunk is refused"
	like "$out" "ERROR_PERMISSION .*'stolen'.*not uploaded by uid [0-9]+ .*permission denied" \
		"with ERROR_PERMISSION and a clear reason ($out)"
	out=$(as_other gp-chunk get "$hash" "$ido" ckpt stolen)
	like "$out" "^reply: ERROR_(PERMISSION|NOT_FOUND)" "ChunkGet through that set is refused ($out)"
	unlike "$out" "bytes" "and returns no bytes"
else
	fail "gpool-other has a running job" "$ido"
fi
out=$(as_other gp-chunk get "$hash")
like "$out" "^reply: ERROR_PERMISSION" "ChunkGet naming no file set is refused ($out)"
out=$(as_other gp-chunk submit "$hash" "$size")
like "$out" "^reply: ERROR_PERMISSION .*permission denied" "a job of gpool-other staging the chunk is refused ($out)"
is "$(as_other gstat --json -a 2>/dev/null | grep -c '"stolen"')" 0 "no such job exists"
nohash=$(head -c 64 /dev/urandom | sha256sum | cut -c1-64)
out2=$(as_other gp-chunk submit "$nohash" "$size")
is "$out2" "$out" "a hash the store does not hold is refused alike (the answer tells nothing)"
out=$(cd "$WORK" && as_user gsub --wait --stage secret.txt -- /bin/true 2>&1)
like "$out" "sent 0 of 1 chunks" "gpool-user's second staging of the file sends nothing (deduplicated)"
# the bytes, not the hash: gpool-other with a copy of their own sends it once and may use it
mkdir -p "$WORK/other" && cp "$WORK/secret.txt" "$WORK/other/" && chown -R "$OTHER_USER:" "$WORK/other"
out=$(cd "$WORK/other" && as_other gsub --wait --stage secret.txt -- /bin/true 2>&1)
rc=$?
like "$out" "sent 1 of 1 chunks" "gpool-other, holding the bytes, sends them itself"
is "$rc" 0 "and its job with them runs"
is "$(as_other gp-chunk have "$hash")" have "after which the store tells them it has the chunk"
[ -n "$ido" ] && as_other gcancel "$ido" >/dev/null 2>&1

# ---- 3. a scratch root that is a link, someone else's, or writable by all ----------------------
scratch=$("$CLUSTER" path --dir "$CLUSTER_DIR" h2 scratch)
cmd=$(cat "$CLUSTER_DIR/h2/agent.cmd")
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h2 KILL
wait_until 10 sh -c "! kill -0 $(cat "$CLUSTER_DIR/h2/gworkerd.pid") 2>/dev/null"
# start_bad DIR: h2's agent command with the scratch root DIR; prints its exit code and stderr
start_bad() {
	local out rc
	out=$(on_host h2 timeout 20 /bin/sh -c "exec $cmd --scratch-dir '$1'" 2>&1)
	rc=$?
	echo "$rc $(grep -m1 'scratch directory' <<<"$out")"
}
ln -s "$scratch" "$TEST_DIR/scratch-link"
r=$(start_bad "$TEST_DIR/scratch-link")
like "$r" "^[1-9][0-9]* " "an agent whose scratch root is a symbolic link stops (exit ${r%% *})"
[[ ${r%% *} != 124 ]] && ok "at once, not after a timeout" || fail "at once, not after a timeout" "$r"
like "$r" "scratch directory '$TEST_DIR/scratch-link' is a symbolic link: refused" "with a clear error (${r#* })"
on_host h2 chown "$TEST_USER" "$scratch"
r=$(start_bad "$scratch")
like "$r" "^[1-9][0-9]* .*scratch directory '$scratch' is owned by uid $(id -u "$TEST_USER"), not root: refused" \
	"a scratch root owned by gpool-user stops the agent (${r})"
on_host h2 chown root "$scratch"
on_host h2 chmod 0777 "$scratch"
r=$(start_bad "$scratch")
like "$r" "^[1-9][0-9]* .*without the sticky bit \(mode 0777\): refused" \
	"a scratch root writable by all without the sticky bit stops the agent (${r})"
on_host h2 chmod 0755 "$scratch"
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h2
check "on its real scratch root h2's agent starts and h2 is UP" wait_node_state h2 UP 30
idh=$(submit -w h2 -- /bin/pwd)
if [ -n "$idh" ] && wait_state "$idh" COMPLETED 30; then
	like "$(as_user glogs "$idh" 2>&1)" "^$scratch/job$idh\.[0-9]+$" "and a job runs in a job directory under it"
else
	fail "a job runs on h2 again" "$(job_json "$idh")"
fi
done_testing
