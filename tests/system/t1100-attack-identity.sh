#!/bin/bash
# t1100-attack-identity: nobody runs a job as someone else. gpool-other's gsub with getpwuid
# preloaded to answer "gpool-user" still submits gpool-other's job (the protocol carries no
# name; the uid comes from the MUNGE credential): it runs as gpool-other and gpool-user cannot
# see its output. System accounts (daemon, nobody) are refused at submission with the reason. A
# node where gpool-user's uid has another name (h3's /etc/passwd bind-mounted over in its mount
# namespace) refuses the launch with the reason in gstat and never runs it as that account;
# once its agent registers again, gschedd places gpool-user's jobs only on h1 and h2 and
# refuses one that can only run on h3 (NoAccount).
# timeout: 150
. "$(dirname "$0")/lib.sh"
need_bins glogs
command -v cc >/dev/null || skip_all "no C compiler for the preloaded getpwuid"
test_under_cluster 3 --cpus 2

# -- a client that claims another user's name: getpwuid and getpwnam answer gpool-user's entry
cat >"$WORK/claim.c" <<'EOF2'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pwd.h>
#include <sys/types.h>
static struct passwd *victim(void)
{
	struct passwd *(*real)(const char *) = dlsym(RTLD_NEXT, "getpwnam");
	return real("gpool-user");
}
struct passwd *getpwuid(uid_t uid) { (void)uid; return victim(); }
int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **res)
{
	int (*real)(const char *, struct passwd *, char *, size_t, struct passwd **) =
	    dlsym(RTLD_NEXT, "getpwnam_r");
	(void)uid;
	return real("gpool-user", pw, buf, len, res);
}
EOF2
cc -shared -fPIC -o "$WORK/claim.so" "$WORK/claim.c" -ldl && chmod 0755 "$WORK/claim.so"
is "$?" 0 "a getpwuid that answers gpool-user builds"
claimed=$(as_other env LD_PRELOAD="$WORK/claim.so" sh -c 'id -un 2>/dev/null; gsub --parsable -- sh -c "id -un; id -u"' 2>&1)
diag "gpool-other with the preload: $claimed"
cid=$(echo "$claimed" | tail -1)
[[ $cid =~ ^[0-9]+$ ]] && ok "the claiming client submits job $cid" || fail "the claiming client submits" "$claimed"
check "the job ends" wait_final "$cid" 30
is "$(job_field "$cid" user)" "$OTHER_USER" "gstat names its owner gpool-other, not the claimed name"
is "$(job_field "$cid" uid)" "$(id -u "$OTHER_USER")" "its uid is gpool-other's"
out=$(as_other glogs "$cid" 2>&1)
# the preload travels in the exported environment (id -un inside asks it too): the uid tells
is "$(echo "$out" | sed -n 2p)" "$(id -u "$OTHER_USER")" "it ran as gpool-other's uid (id -un; id -u inside: $(echo "$out" | tr '\n' ' '))"
out=$(as_user glogs "$cid" 2>&1)
rc=$?
[ $rc != 0 ] && ok "gpool-user cannot read it: it is not theirs (exit $rc)" || fail "gpool-user cannot read it" "exit 0: $out"

# -- system accounts: refused at submission, with the reason
for acct in daemon nobody; do
	out=$(runuser -u "$acct" -- env PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" gsub --parsable -- id 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "$acct cannot submit (exit $rc)" || fail "$acct cannot submit" "exit 0: $out"
	like "$out" "is a system account \(outside [0-9]+-[0-9]+\)" "and is told why ($out)"
done
is "$(job_count)" "1" "nothing of theirs is in the queue"

# -- a node where gpool-user's uid has another name
uid=$(id -u "$TEST_USER")
sed "s/^$TEST_USER:/gpool-imposter:/" /etc/passwd >"$WORK/passwd.h3"
chmod 0644 "$WORK/passwd.h3"
on_host h3 mount --bind "$WORK/passwd.h3" /etc/passwd
is "$(on_host h3 getent passwd "$uid" | cut -d: -f1)" gpool-imposter "on h3, uid $uid is now gpool-imposter"
is "$(getent passwd "$uid" | cut -d: -f1)" "$TEST_USER" "elsewhere it is still $TEST_USER"
# h3's agent registered before the change: gschedd may still place there, the node refuses
id1=$(submit -w h3 -- sh -c 'id -un; sleep 1')
check "a job placed on h3 ends" wait_final "$id1" 30
is "$(job_state "$id1")" FAILED "it failed rather than run as someone else"
reason=$(job_field "$id1" reason)
like "$reason" "uid $uid is 'gpool-imposter' on node h3 but '$TEST_USER' in the pool: the pool needs one uid space" \
	"gstat gives h3's reason ($reason)"
out=$(as_user glogs "$id1" 2>&1)
unlike "$out" "gpool-imposter" "nothing ran as gpool-imposter"
# once h3's agent registers again with its accounts, gschedd keeps gpool-user's jobs off it
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h3 TERM >/dev/null 2>&1
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h3 >/dev/null 2>&1
check "h3 is back" wait_node_state h3 UP 30
out=$(as_user gsub --parsable -w h3 -- true 2>&1)
rc=$?
[ $rc != 0 ] && ok "a job that can only run on h3 is refused at submission (exit $rc)" ||
	fail "a job that can only run on h3 is refused" "exit 0: $out"
like "$out" "NoAccount \(uid $uid is not '$TEST_USER' on enough nodes" "with NoAccount ($out)"
ids=""
for _ in 1 2 3 4 5 6; do ids="$ids $(submit -- sh -c 'hostname; sleep 2')"; done
for id in $ids; do wait_final "$id" 60 >/dev/null; done
hosts=$(for id in $ids; do job_field "$id" nodelist; done | sort | uniq -c | tr '\n' ' ')
diag "six jobs of gpool-user ran on: $hosts"
all_done=1
for id in $ids; do [ "$(job_state "$id")" = COMPLETED ] || all_done=0; done
is "$all_done" 1 "all six of gpool-user's jobs completed"
unlike "$hosts" "h3" "none of them on h3"
# gpool-other's uid is the same name everywhere: h3 still takes their jobs
oid=$(as_other gsub --parsable -w h3 -- id -un 2>&1)
check "gpool-other's job on h3 completes" wait_state "$oid" COMPLETED 30
on_host h3 umount /etc/passwd
done_testing
