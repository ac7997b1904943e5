#!/bin/bash
# t1103-attack-rest: the REST API under a user who pushes it. A token cannot mint tokens (403);
# a token in the URL (?token=, which ends up in logs and Referer headers) is not taken (401); a
# user who mints 20 tokens keeps the newest 16 (the oldest stop working) while another user's
# token is untouched; wrk hammering the unauthenticated /metrics for 5 s makes gschedd's loop
# render it about once a second, not once a request, and gstat stays quick meanwhile.
# timeout: 120
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null ||
	skip_all "python3-jsonschema and python3-yaml are needed (deploy/install-deps.sh)"
command -v wrk >/dev/null || skip_all "wrk is not installed"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
URL=http://127.0.0.1:$port
test_under_cluster 1 --cpus 2 --sched-arg "--http-listen=127.0.0.1:$port"

GP_API=$GPOOL_SRC_DIR/tests/tools/gp-api.py
api() {
	local who=user
	case $1 in --as) who=$2; shift 2 ;; esac
	local -a py=(/usr/bin/python3 "$GP_API" --url "$URL")
	case $who in
	user) as_user "${py[@]}" "$@" ;;
	other) as_other "${py[@]}" "$@" ;;
	esac
}
status() { head -1 <<<"$1"; }
body() { sed 1d <<<"$1"; }
jget() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
mint() { body "$(api "$@" POST /api/v1/token)" | jget "d['token']"; }

tok=$(mint)
like "$tok" '^[0-9a-f]{32}$' "gpool-user gets a token with a MUNGE credential"
out=$(api --token "$tok" POST /api/v1/token)
is "$(status "$out")" 403 "a token cannot mint tokens: 403"
like "$(body "$out")" "a token cannot mint tokens" "and says so"
out=$(curl -s -m 10 -w '\n%{http_code}' "$URL/api/v1/whoami?token=$tok")
is "$(tail -1 <<<"$out")" 401 "a token in the URL is not taken: 401"
out=$(curl -s -m 10 -H "Authorization: Bearer $tok" "$URL/api/v1/whoami")
is "$(jget "d['user']" <<<"$out")" "$TEST_USER" "the same token in the header is"

otok=$(mint --as other)
toks=()
for i in $(seq 1 20); do toks+=("$(mint)"); done
code() { curl -s -m 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$URL/api/v1/whoami"; }
old="$(code "$tok") "
for i in 0 1 2 3; do old="$old$(code "${toks[$i]}") "; done
new=""
for i in $(seq 4 19); do new="$new$(code "${toks[$i]}") "; done
diag "gpool-user minted 21 tokens: the oldest five answer $old; the newest 16 $new"
like "$old" "^401 401 401 401 401 $" "gpool-user's five oldest tokens stopped working (16 a user at most)"
unlike "$new" "401" "the newest 16 work"
is "$(code "$otok")" 200 "gpool-other's token still works"

m0=$(curl -s -m 10 "$URL/metrics" | sed -n 's/^gpool_metrics_renders_total \([0-9]*\)$/\1/p')
w=$(wrk -t1 -c16 -d5s "$URL/metrics" 2>&1)
reqs=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$w")
sleep 1.1
m1=$(curl -s -m 10 "$URL/metrics" | sed -n 's/^gpool_metrics_renders_total \([0-9]*\)$/\1/p')
diag "wrk: $reqs requests for /metrics in 5 s; renders $m0 -> $m1"
[ "${reqs:-0}" -gt 100 ] && ok "wrk sent $reqs requests" || fail "wrk sent requests" "$w"
[ $((m1 - m0)) -le 9 ] && ok "gschedd rendered /metrics $((m1 - m0)) times for them" ||
	fail "gschedd rendered /metrics at most about once a second" "$((m1 - m0)) renders"
t0=$(date +%s%N)
as_user gstat >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -lt 2000 ] && ok "gstat answers in $ms ms afterwards" || fail "gstat answers quickly" "$ms ms"
done_testing
