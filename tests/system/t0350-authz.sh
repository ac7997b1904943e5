#!/bin/bash
# t0350-authz: one user cannot cancel, or read the output (glogs) of, another user's job (an
# error, exit non-zero, the job untouched, nothing of its output shown); a forged (altered after
# sealing, or without credential) and a replayed credential are refused (gp-probe); a task always
# runs as the submitter's own account (`id -un` inside = the submitter, for both users): a job
# specification has no field to ask for another uid, the uid comes from the MUNGE credential.
# timeout: 90
. "$(dirname "$0")/lib.sh"
need_bins gp-probe glogs
test_under_cluster 2 --cpus 4

# -- cancel another user's job
id=$(submit -J victim -- /bin/sleep 60)
check "gpool-user's job runs" wait_state "$id" RUNNING 20
out=$(as_other gcancel "$id" 2>&1)
rc=$?
[ $rc != 0 ] && ok "gpool-other cannot cancel it (exit $rc: $out)" || fail "gpool-other cannot cancel it" "exit 0: $out"
like "$out" '[Pp]ermission|[Nn]ot (your|allowed|permitted|the owner)|[Dd]enied|[Nn]o such job|[Aa]uthori|[Ff]orbidden|owner' "with an error that says so"
sleep 1
is "$(job_state "$id")" RUNNING "the job still runs"
as_user gcancel "$id" >/dev/null 2>&1
check "its owner can cancel it" wait_state "$id" CANCELLED 15

# -- read another user's output
secret="secret-$RANDOM$RANDOM"
id2=$(submit -J secret -- /bin/echo "$secret")
check "gpool-user's job with a secret in its output completes" wait_state "$id2" COMPLETED 20
out=$(as_user glogs "$id2" 2>&1)
like "$out" "$secret" "its owner reads the output with glogs"
out=$(as_other glogs "$id2" 2>&1)
rc=$?
[ $rc != 0 ] && ok "gpool-other cannot read it (exit $rc: $out)" || fail "gpool-other cannot read it" "exit 0: $out"
unlike "$out" "$secret" "and sees nothing of it"
out=$(as_other glogs --err "$id2" 2>&1)
rc=$?
[ $rc != 0 ] && ok "nor its stderr (exit $rc)" || fail "gpool-other cannot read its stderr" "exit 0: $out"

# -- forged and replayed credentials
out=$(as_user gp-probe tampered 2>&1)
like "$out" 'ERROR_AUTH|no reply' "an envelope altered after sealing (forged) is refused ($out)"
out=$(as_user gp-probe nocred 2>&1)
like "$out" 'ERROR_AUTH|no reply' "an envelope without a credential is refused ($out)"
out=$(as_user gp-probe replay 2>&1)
like "$(sed -n 2p <<<"$out")" 'ERROR_REPLAY' "a replayed credential is refused ($(sed -n 2p <<<"$out"))"

# -- the task's uid is the submitter's
for who in user other; do
	if [ $who = user ]; then u=$TEST_USER; j=$(submit -J whoami -- /bin/sh -c 'id -un; id -u'); else
		u=$OTHER_USER
		j=$(as_other gsub --parsable -J whoami -- /bin/sh -c 'id -un; id -u' 2>&1)
	fi
	if [[ $j =~ ^[0-9]+$ ]] && wait_state "$j" COMPLETED 20; then
		if [ $who = user ]; then out=$(as_user glogs "$j" 2>&1); else out=$(as_other glogs "$j" 2>&1); fi
		is "$(tr '\n' ' ' <<<"$out")" "$u $(id -u "$u") " "$u's task runs as $u"
	else
		fail "$u's whoami job completes" "$j $(job_json "$j")"
	fi
done
done_testing
