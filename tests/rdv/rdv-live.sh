#!/bin/bash
# rdv-live: libgcomm's gpool rendezvous (comm/src/rdv_gpool.c + gschedd's rdv.c) on a live
# loopback cluster of 3 hosts (deploy/gpool-cluster --loopback: 127.0.0.1 only, no bridge).
#   1. a 3-rank gang job (gsub -n 3 -N 3): each rank puts addr.<rank>, fences, gets all three
#      and prints them: every rank saw every value, the same values
#   2. a running job's keys: its owner reads them; another user (gpool-other) can neither read
#      nor write them; after the job ends nobody reads them (the attempt is not running)
# Environment: GPOOL_BIN_DIR (the build's bin/), RDV_PORT (27600), RDV_DIR (a fresh directory
# under /tmp). Exit 0 passed, 1 failed, 77 skipped (not root, no munged, not built).
set -u
SRC=${GPOOL_SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
PORT=${RDV_PORT:-27600}
CLUSTER=$SRC/deploy/gpool-cluster
PY=/usr/bin/python3
export PATH="$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

n=0 nfail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() {
	n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $1"; shift
	local l; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
is() { if [ "$1" = "$2" ]; then ok "$3"; else fail "$3" "got:  '$1'" "want: '$2'"; fi; }
like() { if printf '%s' "$1" | grep -Eq -- "$2"; then ok "$3"; else fail "$3" "got: '$1'" "want: /$2/"; fi; }
unlike() { if printf '%s' "$1" | grep -Eq -- "$2"; then fail "$3" "got: '$1'" "must not match: /$2/"; else ok "$3"; fi; }
skip_all() { echo "1..0 # SKIP $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip_all "needs root (the test users gpool-user and gpool-other)"
munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || skip_all "munged does not answer"
for b in gschedd gworkerd gsub gstat gcancel glogs gp-rdv-rank; do
	[ -x "$BIN/$b" ] || skip_all "'$BIN/$b' is not built"
done
"$SRC/deploy/lib-users.sh" >/dev/null || skip_all "cannot create the test users"

TMP=$(mktemp -d /tmp/gp-rdv-live.XXXXXX)
chmod 0755 "$TMP"
DIR=${RDV_DIR:-$TMP/cluster}
cleanup() {
	local rc=$?
	if [ "$nfail" -gt 0 ] || [ "$rc" != 0 ]; then
		for f in "$DIR"/sched/gschedd.log "$DIR"/h*/gworkerd.log; do
			[ -f "$f" ] && { echo "# ---- $f"; tail -n 20 "$f" | sed 's/^/# /'; }
		done
	fi
	"$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
# the users' commands are under $TMP, in the machine's /tmp: the jobs still see it there in
# their own /tmp (private_tmp_keep, as tests/system/lib.sh does)
out=$(GPOOL_CLUSTER_CONF_EXTRA="private_tmp_keep = $TMP$(case $SRC in /tmp/*) echo ", $SRC" ;; esac)" "$CLUSTER" start --loopback --port "$PORT" --dir "$DIR" --bin "$BIN" -n 3 2>&1) ||
	{ fail "a 3-host loopback cluster starts" "$out"; exit 1; }
eval "$("$CLUSTER" env --dir "$DIR")"
export GPOOL_SCHEDULER GPOOL_CONF
# shellcheck source=deploy/lib-users.sh
. "$SRC/deploy/lib-users.sh"
UBIN=$(gpool_users_bin "$BIN" "$TMP/user") || { fail "the test users can run the commands"; exit 1; }
cd "$TMP" || exit 1
ok "a 3-host loopback cluster is up on port $PORT"

as() {
	local u=$1; shift
	runuser -u "$u" -- env PATH="$UBIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"
}
job_field() { # JOB FIELD
	gstat --json -a -j "$1" 2>/dev/null | "$PY" -c '
import json, sys
def jobs(x):
    if isinstance(x, dict):
        if "state" in x and str(x.get("id", x.get("job_id", ""))) == sys.argv[1]:
            yield x
        for v in x.values(): yield from jobs(v)
    elif isinstance(x, list):
        for v in x: yield from jobs(v)
for j in jobs(json.load(sys.stdin)):
    print(j.get(sys.argv[2], "")); break
' "$1" "$2"
}
wait_state() { # JOB REGEX SECONDS
	local end=$((SECONDS + $3)) s
	while [ $SECONDS -lt $end ]; do
		s=$(job_field "$1" state)
		[[ ${s^^} =~ $2 ]] && return 0
		sleep 0.2
	done
	echo "# job $1 is '$s', not /$2/ after $3 s"
	return 1
}

# ---- 1. every rank sees every rank's value --------------------------------------------------
out=$(as gpool-user gsub -n 3 -N 3 -t 2m --wait -- "$UBIN/gp-rdv-rank" 2>&1)
rc=$?
is "$rc" 0 "a 3-rank gang job that puts, fences and gets exits 0"
printf '%s\n' "$out" | sed 's/^/# /'
lines=$(grep -cE '^rank [0-2]: addr\.[0-2] = ' <<<"$out")
is "$lines" 9 "9 values read: 3 ranks x 3 keys"
for r in 0 1 2; do
	for k in 0 1 2; do
		is "$(grep -cxE "rank $r: addr\\.$k = 127\\.0\\.0\\.1\\|rank$k\\|pid[0-9]+" <<<"$out")" 1 \
			"rank $r saw addr.$k (put by rank $k, from local address 127.0.0.1)"
	done
done
for k in 0 1 2; do
	is "$(sed -n "s/^rank [0-2]: addr\\.$k = //p" <<<"$out" | sort -u | wc -l)" 1 \
		"every rank read the same addr.$k"
done

# ---- 2. another user cannot read or write a job's keys ----------------------------------------
id=$(as gpool-user gsub --parsable -n 2 -N 2 -t 2m -- "$UBIN/gp-rdv-rank" hold 60 2>&1)
if ! [[ $id =~ ^[0-9]+$ ]]; then
	fail "a holding job is submitted" "$id"
	exit 1
fi
end=$((SECONDS + 30))
while [ $SECONDS -lt $end ]; do
	[ "$(as gpool-user glogs "$id" 2>/dev/null | grep -c ': ready$')" = 2 ] && break
	sleep 0.3
done
is "$(as gpool-user glogs "$id" 2>/dev/null | grep -c ': ready$')" 2 "both ranks of job $id put their secret and fenced"
att=$(job_field "$id" attempt)
[ -n "$att" ] || att=1
out=$(as gpool-user gp-rdv-rank peek "$id:$att" secret.1 2>&1)
is "$out" "s3cret-$id-1" "its owner (gpool-user) reads secret.1 from outside the job"
out=$(as gpool-other gp-rdv-rank peek "$id:$att" secret.1 2>&1)
rc=$?
is "$rc" 3 "gpool-other is refused (exit 3: EACCES)"
like "$out" "permission denied" "with the scheduler's reason ($out)"
unlike "$out" "s3cret" "and sees nothing of the value"
out=$(as gpool-other gp-rdv-rank poke "$id:$att" secret.0 forged 2>&1)
is "$?" 3 "gpool-other cannot overwrite a key ($out)"
out=$(as gpool-other gp-rdv-rank poke "$id:$att" planted x 2>&1)
is "$?" 3 "nor add one ($out)"
out=$(as gpool-user gp-rdv-rank peek "$id:$att" secret.0 2>&1)
is "$out" "s3cret-$id-0" "secret.0 is unchanged"
out=$(as gpool-user gp-rdv-rank peek "$id:$att" planted 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"not put within"* ]] && ok "the key gpool-other tried to add is not there ($out)" ||
	fail "the key gpool-other tried to add is not there" "exit $rc: $out"
out=$(as gpool-user gp-rdv-rank peek "$id:$((att + 1))" secret.0 2>&1)
is "$?" 4 "another attempt's store is refused (exit 4: not running) ($out)"
as gpool-user gcancel "$id" >/dev/null 2>&1
wait_state "$id" '^(JOB_STATE_)?CANCELLED$' 30 && ok "job $id is cancelled" || fail "job $id is cancelled"
out=$(as gpool-user gp-rdv-rank peek "$id:$att" secret.0 2>&1)
rc=$?
is "$rc" 4 "after the job ended even its owner reads nothing (exit 4: $out)"
unlike "$out" "s3cret" "no value is left"

echo "1..$n"
[ "$nfail" = 0 ] || { echo "# rdv-live: $nfail of $n failed"; exit 1; }
exit 0
