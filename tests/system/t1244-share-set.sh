#!/bin/bash
# t1244-share-set: an administrator changes shares and limits while the pool runs (gpool share
# set, gpool limits set; docs/fairshare.md). gpool-user and gpool-other have used the pool
# (2 s and 6 s); one job of each, held, is released at once on a one-CPU host: with equal
# shares gpool-user's (less use) starts first; after root's `gpool share set gpool-user 0.05`
# gpool-other's does. gpool-other (no administrator) is refused with the reason and nothing
# changes; a request sent again with its request id (gp-control) is applied once, also after a
# restart; a SIGHUP of gpool.conf does not undo the change, a restart of gschedd keeps it (the
# order too), `gpool share clear` gives gpool.conf's share back. `gpool limits set --max-jobs 1`
# keeps gpool-user's second job PENDING (UserLimit) beside an idle host.
# timeout: 200
. "$(dirname "$0")/lib.sh"
GPOOL_TEST_LIMIT=200 test_under_cluster 2 --cpus 1
need_bins gpool gp-control

spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf

share_json() { gpool share --json 2>/dev/null; }
# share_of USER: the user's share as gschedd has it now, and whether an administrator set it
share_of() {
	share_json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
u = [x for x in d["users"] if x["user"] == sys.argv[1]]
print("%g %s" % (u[0]["share"], "admin" if u[0].get("admin_share") else "conf") if u else "none")
' "$1"
}

# who_first: one held job of each user on h1, released together by root; prints the user
# whose job started first
who_first() {
	local a b sa sb
	a=$(submit --hold -w h1 -o /dev/null -- sleep 1) || return 1
	b=$(as_other gsub --parsable --hold -w h1 -o /dev/null -- sleep 1) || return 1
	gpool release "$b" "$a" >/dev/null 2>&1 || return 1
	wait_state "$a" COMPLETED 30 >/dev/null || return 1
	wait_state "$b" COMPLETED 30 >/dev/null || return 1
	sa=$(job_field "$a" start_time) sb=$(job_field "$b" start_time)
	diag "$TEST_USER's job $a started at $sa, $OTHER_USER's job $b at $sb" >&2
	if "$PY" -c "import sys; sys.exit(0 if $sa < $sb else 1)"; then
		echo "$TEST_USER"
	else
		echo "$OTHER_USER"
	fi
}

# --- use: gpool-user 2 s, gpool-other 6 s
u=$(submit -w h1 -o /dev/null -- sleep 2)
o=$(as_other gsub --parsable -w h1 -o /dev/null -- sleep 6)
check "gpool-user's 2 s job completes" wait_state "$u" COMPLETED 40
check "gpool-other's 6 s job completes" wait_state "$o" COMPLETED 40
diag "$(gpool share 2>&1)"

# --- equal shares: the user with less use first
is "$(who_first)" "$TEST_USER" "equal shares: gpool-user's job (less use) starts first"

# --- the administrator lowers gpool-user's share
out=$(gpool share set "$TEST_USER" 0.05 2>&1)
is "$?" 0 "root sets gpool-user's share: $out"
like "$out" "share 0.05 \(set by an administrator" "the answer shows the new share"
is "$(share_of "$TEST_USER")" "0.05 admin" "gpool share --json: gpool-user's share 0.05, set by an administrator"
like "$(gpool share 2>&1 | grep "^$TEST_USER ")" " 0\.05\* " "gpool share marks it"
like "$(grep "fair share of '$TEST_USER' changed by uid 0" "$slog")" "share=0.05" \
	"gschedd logs who changed what"
is "$(who_first)" "$OTHER_USER" "the next placements follow it: gpool-other's job starts first"

# --- attack: gpool-other is no administrator
if out=$(as_other gpool share set "$OTHER_USER" 100 2>&1); then
	fail "gpool-other cannot raise their own share" "$out"
else
	like "$out" "permission denied" "gpool-other cannot raise their own share: $out"
fi
if out=$(as_other gpool share set "$TEST_USER" 100 2>&1); then
	fail "gpool-other cannot change gpool-user's share" "$out"
else
	like "$out" "only root, the scheduler's account .* may change shares" \
		"gpool-other cannot change gpool-user's share: $out"
fi
if out=$(as_other gpool limits set "$TEST_USER" --max-jobs 0 2>&1); then
	fail "gpool-other cannot change limits" "$out"
else
	like "$out" "permission denied" "gpool-other cannot change limits either"
fi
if out=$(as_other gpool share clear "$TEST_USER" 2>&1); then
	fail "gpool-other cannot clear a share" "$out"
else
	like "$out" "permission denied" "nor clear one"
fi
is "$(share_of "$TEST_USER") / $(share_of "$OTHER_USER")" "0.05 admin / 1 conf" \
	"nothing changed by gpool-other's attempts"
like "$(grep -c "share set for .* refused: not an administrator" "$slog")" "^[4-9]" \
	"gschedd logs the refusals"

# --- a request sent again with its id is applied once
X=0123456789abcdef0123456789abcdef
Y=fedcba9876543210fedcba9876543210
is "$(gp-control share "$TEST_USER" 0.2 "$X")" "ok 0.2" "share 0.2 with request id X"
is "$(gp-control share "$TEST_USER" 0.05 "$Y")" "ok 0.05" "share 0.05 with request id Y"
is "$(gp-control share "$TEST_USER" 0.2 "$X")" "ok 0.2" "X sent again: its first answer"
is "$(share_of "$TEST_USER")" "0.05 admin" "and not applied again: the share stays 0.05"

# --- a reload of gpool.conf does not undo it
printf 'fairshare_shares = %s:1,%s:1\n' "$TEST_USER" "$OTHER_USER" >>"$conf"
kill -HUP "$spid"
reloaded() { grep -q "reload: fairshare_shares = '$TEST_USER:1,$OTHER_USER:1'" "$slog"; }
check "gschedd reloads gpool.conf" wait_until 10 reloaded
is "$(share_of "$TEST_USER")" "0.05 admin" "the administrator's share outlives the reload"

# --- a restart keeps it
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM >/dev/null 2>&1
gone() { ! kill -0 "$spid" 2>/dev/null; }
check "gschedd stops on SIGTERM" wait_until 15 gone
out=$("$CLUSTER" sched-start --dir "$CLUSTER_DIR" 2>&1)
is "$?" 0 "gschedd starts again on its state ($out)"
up() { gpool share >/dev/null 2>&1 && [ "$(node_state h1)" = UP ]; }
check "gschedd answers after the restart, h1 UP" wait_until 40 up
is "$(share_of "$TEST_USER")" "0.05 admin" "the share set before the restart is kept"
is "$(gp-control share "$TEST_USER" 0.2 "$X")" "ok 0.2" "X sent again after the restart: its first answer"
is "$(share_of "$TEST_USER")" "0.05 admin" "still not applied"
is "$(who_first)" "$OTHER_USER" "after the restart gpool-other's job still starts first"

# --- cleared: gpool.conf's share again, the order back
out=$(gpool share clear "$TEST_USER" 2>&1)
is "$?" 0 "root clears gpool-user's share: $out"
is "$(share_of "$TEST_USER")" "1 conf" "gpool-user's share is gpool.conf's again"
is "$(who_first)" "$TEST_USER" "the order is back: gpool-user's job first"

# --- limits: at most one running job for gpool-user, h2 idle beside
out=$(gpool limits set "$TEST_USER" --max-jobs 1 2>&1)
is "$?" 0 "root sets gpool-user's --max-jobs 1: $out"
like "$(gpool limits 2>&1 | grep "^$TEST_USER ")" "^$TEST_USER +1 +- +- .*admin" \
	"gpool limits shows it, set by an administrator"
j1=$(submit -o /dev/null -- sleep 60)
j2=$(submit -o /dev/null -- sleep 1)
check "gpool-user's first job runs" wait_state "$j1" RUNNING 15
limited() { [[ $(job_field "$j2" reason) == UserLimit* ]]; }
check "the second waits with UserLimit though a host is idle" wait_until 10 limited
out=$(gpool limits clear "$TEST_USER" 2>&1)
is "$?" 0 "root clears the limits: $out"
check "the second job starts once the limit is gone" wait_state "$j2" RUNNING\|COMPLETED 15
is "$(job_state "$j1")" RUNNING "beside the first, still running"
as_user gcancel "$j1" >/dev/null 2>&1
# usage errors
out=$(gpool limits set "$TEST_USER" 2>&1)
is "$?" 2 "limits set with no limit is a usage error: $out"
out=$(gpool share set "$TEST_USER" -3 2>&1)
is "$?" 2 "a negative share is a usage error: $out"
out=$(gpool share --max-jobs 3 2>&1)
is "$?" 2 "--max-jobs outside limits set is a usage error: $out"
done_testing
