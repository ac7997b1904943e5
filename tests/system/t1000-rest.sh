#!/bin/bash
# t1000-rest: gschedd's REST API (http_listen) does what the CLI does, as the same users with
# the same rights, and every answer matches docs/api.yaml: nodes, cards, submit, the job in the
# list (and in gstat), its output by long poll, another user's cancel refused (403), hold and
# release, drain and resume (root only), tokens; no credential, a credential for another
# request and a replayed one are refused (401); bad input is 400/404/405 and the daemon lives.
# timeout: 150
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null ||
	skip_all "python3-jsonschema and python3-yaml are needed (deploy/install-deps.sh)"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
URL=http://127.0.0.1:$port
test_under_cluster 2 --cpus 2 --sched-arg "--http-listen=127.0.0.1:$port"

GP_API=$GPOOL_SRC_DIR/tests/tools/gp-api.py
SPEC=$GPOOL_SRC_DIR/docs/api.yaml
# api [--as user|other|root] ARGS...: status on line 1, body after; exit 3 if off the spec
api() {
	local who=user
	case $1 in --as) who=$2; shift 2 ;; esac
	local -a py=(/usr/bin/python3 "$GP_API" --url "$URL" --check "$SPEC")
	case $who in
	user) as_user "${py[@]}" "$@" ;;
	other) as_other "${py[@]}" "$@" ;;
	root) "${py[@]}" "$@" ;;
	esac
}
status() { head -1 <<<"$1"; }
body() { sed 1d <<<"$1"; }
jget() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

out=$(api GET /api/v1/nodes)
is "$?" 0 "GET /api/v1/nodes matches the spec"
is "$(status "$out")" 200 "GET /api/v1/nodes: 200"
is "$(body "$out" | jget "' '.join(sorted(n['name'] for n in d['nodes']))")" "h1 h2" "it lists h1 and h2"
out=$(api GET /api/v1/cards)
is "$?/$(status "$out")" 0/200 "GET /api/v1/cards matches the spec"
out=$(api GET /api/v1/whoami)
is "$(body "$out" | jget "d['user']")" "$TEST_USER" "whoami: the MUNGE credential's user"

out=$(api POST /api/v1/jobs '{"argv":["/bin/sh","-c","echo rest-hello; sleep 1; echo rest-bye"],"name":"restjob","chdir":"'"$WORK"'"}')
is "$?/$(status "$out")" 0/201 "POST /api/v1/jobs: 201, matches the spec"
id=$(body "$out" | jget "d['id']")
like "$id" '^[0-9]+$' "the new job's id ($id)"
like "$(api GET "/api/v1/jobs?all=1")" "\"id\":$id," "the job is in GET /api/v1/jobs?all=1"
is "$(job_field "$id" user)" "$TEST_USER" "gstat shows it as the user's job"
# long poll until done
text="" off=0 offe=0 done=False
for _ in $(seq 30); do
	out=$(api GET "/api/v1/jobs/$id/output?offset=$off&offset_err=$offe&wait=1") || break
	text+=$(body "$out" | jget "d['out']")
	off=$(body "$out" | jget "d['next_offset']")
	offe=$(body "$out" | jget "d['next_offset_err']")
	done=$(body "$out" | jget "d['done']")
	[ "$done" = True ] && break
done
is "$done" True "the output long poll ends when the job is done"
like "$text" "rest-hello" "the output has the first line"
like "$text" "rest-bye" "and the last"
out=$(api GET "/api/v1/jobs/$id")
is "$(body "$out" | jget "d['state']+' '+d['name']")" "COMPLETED restjob" "GET /api/v1/jobs/$id: COMPLETED, its name"
out=$(api GET /api/v1/jobs/999999)
is "$?/$(status "$out")" 0/404 "an unknown job: 404 per the spec"

# another user may not cancel it; its owner may
long=$(body "$(api POST /api/v1/jobs '{"argv":["sleep","60"],"chdir":"'"$WORK"'"}')" | jget "d['id']")
wait_state "$long" RUNNING 20 >/dev/null
out=$(api --as other POST "/api/v1/jobs/$long/cancel")
is "$?/$(status "$out")" 0/403 "gpool-other cancelling gpool-user's job: 403"
is "$(job_state "$long")" RUNNING "the job still runs"
out=$(api DELETE "/api/v1/jobs/$long")
is "$?/$(status "$out")" 0/200 "its owner cancels it with DELETE ($(body "$out" | head -c 200))"
check "it ends CANCELLED" wait_state "$long" CANCELLED 20

# hold and release
held=$(body "$(api POST /api/v1/jobs '{"argv":["true"],"hold":true,"chdir":"'"$WORK"'"}')" | jget "d['id']")
sleep 1
is "$(job_state "$held")" PENDING "a job submitted held waits"
out=$(api POST "/api/v1/jobs/$held/release")
is "$?/$(status "$out")" 0/200 "release: 200"
check "the released job runs to COMPLETED" wait_state "$held" COMPLETED 20

# drain and resume: root only
out=$(api POST /api/v1/nodes/h2/drain '{"reason":"rest test"}')
is "$?/$(status "$out")" 0/403 "a user may not drain a node: 403"
out=$(api --as root POST /api/v1/nodes/h2/drain '{"reason":"rest test"}')
is "$?/$(status "$out")" 0/200 "root drains h2"
is "$(node_state h2)" DRAINED "gnodes shows h2 DRAINED"
out=$(api --as root POST /api/v1/nodes/h2/resume)
is "$?/$(status "$out")" 0/200 "root resumes h2"
is "$(node_state h2)" UP "h2 is UP again"

# authentication
out=$(api --as user --no-auth GET /api/v1/jobs)
is "$?/$(status "$out")" 0/401 "no credential: 401"
out=$(api --cred-for "GET /api/v1/nodes" GET /api/v1/jobs)
is "$(status "$out")" 401 "a credential made for another request: 401"
out=$(api --replay GET /api/v1/whoami)
like "$(sed -n 3,4p <<<"$out")" "ERROR_REPLAY" "the same credential twice: the second is refused as a replay"
tok=$(body "$(api POST /api/v1/token)" | jget "d['token']")
like "$tok" '^[0-9a-f]{32}$' "POST /api/v1/token issues a token"
out=$(api --token "$tok" GET /api/v1/whoami)
is "$(body "$out" | jget "d['user']")" "$TEST_USER" "the token stands for its user"
out=$(api --token 00000000000000000000000000000000 GET /api/v1/whoami)
is "$(status "$out")" 401 "an unknown token: 401"

# bad input
out=$(api POST /api/v1/jobs '{"argv":"not a list"}')
is "$?/$(status "$out")" 0/400 "a malformed job: 400 per the spec"
like "$(body "$out")" "argv" "the reason names the field"
out=$(api POST /api/v1/jobs '{"argv":["true"],"ntasks":0}')
is "$(status "$out")" 400 "ntasks 0: 400"
out=$(api GET /api/v1/nope)
is "$(status "$out")" 404 "an unknown path: 404"
out=$(api PUT /api/v1/jobs 2>/dev/null)
like "$(status "$out")" '^(405|501)$' "an unknown method: refused"
out=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: MUNGE garbage' "$URL/api/v1/jobs")
is "$out" 401 "a garbage credential: 401"
check "gschedd still runs" kill -0 "$(cat "$CLUSTER_DIR/sched/gschedd.pid")"
check "gnodes still answers" gnodes

done_testing
