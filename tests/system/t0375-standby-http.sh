#!/bin/bash
# t0375-standby-http: the HTTP side of a standby group (docs/standby.md, "A standby's HTTP").
# Three gschedd with http_listen on every one (0.0.0.0:PORT in its own netns host):
# - a standby answers the REST API and /metrics with 503, ERROR_NOT_LEADER and the leader's
#   HTTP address (JSON "leader" and a Gpool-Leader header), and redirects the dashboard (307
#   to the same path on the leader); the leader answers as usual;
# - what a standby tells a peer with no credential is that address and nothing more (no job,
#   whatever the path);
# - REST tokens do not outlive a failover (they live in the leader's memory, by design: a client
#   logs in again with its MUNGE credential): a token issued by the old leader gets 401 from the
#   new one, and a new one issued there works; the new leader's standbys name it; the old
#   leader started again is a standby that names it too (its port was given up and taken again).
# timeout: 200
. "$(dirname "$0")/lib.sh"
HPORT=$((21000 + RANDOM % 9000))
test_under_cluster 1 --cpus 2 --schedulers 3 --no-wait --sched-arg "--http-listen=0.0.0.0:$HPORT"
command -v curl >/dev/null || skip_all "curl is not installed"

ip_of() { slot_addr $((1 + ${1#s})); }
url_of() { echo "http://$(ip_of "$1"):$HPORT"; }
leader() { "$CLUSTER" sched-leader --dir "$CLUSTER_DIR" 2>/dev/null; }
has_leader() { leader >/dev/null; }
http() { # http URL [curl args...]: "STATUS" on the first line, then the headers and body
	local u=$1
	shift
	curl -s -m 5 -D - -o "$WORK/body" -w '%{http_code}\n' "$@" "$u" >"$WORK/head" 2>/dev/null
	tail -n 1 "$WORK/head"
}
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$WORK/body" "$1" 2>/dev/null; }
api() { # api URL ARGS...: gp-api as gpool-user
	local u=$1
	shift
	as_user "$PY" "$GPOOL_SRC_DIR/tests/tools/gp-api.py" --url "$u" "$@"
}
serves() { [ "$(http "$(url_of "$1")/metrics")" = 200 ]; }

check "a scheduler leads within 10 s of the start" wait_until 10 has_leader
L=$(leader)
check "the leader $L serves HTTP" wait_until 15 serves "$L"
standby_names() { # standby_names sK LEADER: sK answers 503 naming LEADER
	[ "$(http "$(url_of "$1")/api/v1/jobs")" = 503 ] && [ "$(jget "d['leader']")" = "$(url_of "$2")" ]
}
for k in s1 s2 s3; do
	[ "$k" = "$L" ] && continue
	check "$k (standby) answers the REST API" wait_until 10 standby_names "$k" "$L"
	is "$(http "$(url_of "$k")/api/v1/jobs")" 503 "$k: GET /api/v1/jobs: 503"
	is "$(jget "d['error']['code']")" ERROR_NOT_LEADER "$k: error ERROR_NOT_LEADER"
	is "$(jget "d['leader']")" "$(url_of "$L")" "$k: names the leader's HTTP address"
	like "$(cat "$WORK/head")" "Gpool-Leader: $(url_of "$L")" "$k: Gpool-Leader header"
	is "$(http "$(url_of "$k")/metrics")" 503 "$k: /metrics: 503"
	is "$(jget "d['leader']")" "$(url_of "$L")" "$k: /metrics names the leader"
	is "$(http "$(url_of "$k")/jobs.html?x=1")" 307 "$k: the dashboard is redirected"
	like "$(cat "$WORK/head")" "Location: $(url_of "$L")/jobs.html\\?x=1" "$k: to the same path on the leader"
	# a peer with no credential, a POST with a body, another path: the same answer, no data
	is "$(http "$(url_of "$k")/api/v1/jobs" -X POST -H 'Content-Type: application/json' -d '{"command":["/bin/true"]}')" \
		503 "$k: a POST with no credential: 503"
	unlike "$(cat "$WORK/body")" '"jobs"|"id"|"user"' "$k: its answer holds no job data"
done
job=$(submit -H -J held -- /bin/true)

# ---- REST tokens and a failover
out=$(api "$(url_of "$L")" POST /api/v1/token)
tok=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1].split("\n",1)[1])["token"])' "$out" 2>/dev/null)
like "$tok" '^[0-9a-f]{32}$' "the leader issues a REST token"
is "$(api "$(url_of "$L")" --token "$tok" GET "/api/v1/jobs/$job" | head -n 1)" 200 "the token works on the leader"
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" "$L" KILL 2>/dev/null
new_leader() { local l; l=$(leader) && [ "$l" != "$L" ]; }
check "another scheduler leads within 10 s" wait_until 10 new_leader
L2=$(leader)
check "the new leader $L2 serves HTTP (the port its standby held)" wait_until 15 serves "$L2"
out=$(api "$(url_of "$L2")" --token "$tok" GET "/api/v1/jobs/$job")
is "$(head -n 1 <<<"$out")" 401 "the old leader's token gets 401 from the new one (tokens are not replicated)"
like "$out" "unknown or expired token" "with the reason"
out=$(api "$(url_of "$L2")" POST /api/v1/token)
tok2=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1].split("\n",1)[1])["token"])' "$out" 2>/dev/null)
like "$tok2" '^[0-9a-f]{32}$' "logged in again on the new leader (MUNGE credential)"
is "$(api "$(url_of "$L2")" --token "$tok2" GET "/api/v1/jobs/$job" | head -n 1)" 200 \
	"the new token works, and the job is there"
for k in s1 s2 s3; do
	[ "$k" = "$L" ] || [ "$k" = "$L2" ] || check "$k (standby) now names $L2" wait_until 10 standby_names "$k" "$L2"
done
"$CLUSTER" sched-start --dir "$CLUSTER_DIR" "$L" 2>/dev/null
check "$L, started again, answers as a standby naming $L2" wait_until 20 standby_names "$L" "$L2"
grep -q "standby: no HTTP answers" "$CLUSTER_DIR"/s*/gschedd.log &&
	fail "every standby bound its HTTP port" "$(grep -h "no HTTP answers" "$CLUSTER_DIR"/s*/gschedd.log)" ||
	ok "every standby bound its HTTP port"
as_user gcancel "$job" >/dev/null 2>&1
done_testing
