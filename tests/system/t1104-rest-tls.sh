#!/bin/bash
# t1104-rest-tls: the REST API over HTTPS with a pool's own CA (deploy/gpool-ca). gschedd
# started with http_tls_cert/http_tls_key answers a MUNGE-authenticated request and a token
# over TLS to a client that trusts the pool's CA; plain HTTP on that port gets nothing, a client
# without the CA refuses the server, TLS 1.1 is refused; gschedd with a key that is not the
# certificate's, or only one of the two keys, does not start and says why.
# timeout: 90
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip_all "the openssl command is missing"
command -v curl >/dev/null || skip_all "curl is missing"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
CA=$(mktemp -d /tmp/gpool-ca.XXXXXX)
at_cleanup "rm -rf $CA"
"$GPOOL_SRC_DIR/deploy/gpool-ca" init "$CA/pool" >/dev/null &&
	"$GPOOL_SRC_DIR/deploy/gpool-ca" issue "$CA/pool" sched --ip 127.0.0.1 --dns localhost >/dev/null
is "$?" 0 "gpool-ca makes a CA and a certificate for 127.0.0.1"
is "$(stat -c %a "$CA/pool/ca.key") $(stat -c %a "$CA/pool/sched.key")" "600 600" "the keys are mode 0600"
chmod 0755 "$CA" "$CA/pool"
test_under_cluster 1 --cpus 2 --sched-arg "--http-listen=127.0.0.1:$port" \
	--sched-arg "--http-tls-cert=$CA/pool/sched.crt" --sched-arg "--http-tls-key=$CA/pool/sched.key"
URL=https://127.0.0.1:$port

cred() { as_user munge -s "$1" 2>/dev/null; }
out=$(curl -s -m 10 --cacert "$CA/pool/ca.crt" -H "Authorization: MUNGE $(cred 'GET /api/v1/whoami')" "$URL/api/v1/whoami")
like "$out" "\"user\":\"$TEST_USER\"" "HTTPS with the pool's CA: whoami answers gpool-user ($out)"
tok=$(curl -s -m 10 --cacert "$CA/pool/ca.crt" -X POST -H "Authorization: MUNGE $(cred 'POST /api/v1/token')" "$URL/api/v1/token" |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' 2>/dev/null)
like "$tok" '^[0-9a-f]{32}$' "a token minted over HTTPS"
out=$(curl -s -m 10 --cacert "$CA/pool/ca.crt" -H "Authorization: Bearer $tok" "$URL/api/v1/whoami")
like "$out" "\"user\":\"$TEST_USER\"" "and used over HTTPS"
curl -s -m 10 -o /dev/null "http://127.0.0.1:$port/api/v1/whoami"
rc=$?
[ $rc != 0 ] && ok "plain HTTP to the TLS port gets no answer (curl exit $rc)" || fail "plain HTTP gets no answer" "exit 0"
curl -s -m 10 -o /dev/null "$URL/metrics"
is "$?" 60 "a client without the pool's CA refuses the server's certificate (curl exit 60)"
curl -s -m 10 -o /dev/null --tls-max 1.1 --cacert "$CA/pool/ca.crt" "$URL/metrics"
rc=$?
[ $rc != 0 ] && ok "TLS 1.1 is refused (curl exit $rc)" || fail "TLS 1.1 is refused" "exit 0"
check "gschedd still serves HTTPS" curl -s -m 10 -o /dev/null --cacert "$CA/pool/ca.crt" "$URL/metrics"

# a wrong key, or one half of the pair: gschedd does not start, and says why
"$GPOOL_SRC_DIR/deploy/gpool-ca" issue "$CA/pool" other --dns other.invalid >/dev/null
bad() {
	local out rc
	out=$(timeout 10 "$GPOOL_BIN_DIR/gschedd" --listen tcp://127.0.0.1:0 --state-dir "$CA/state" \
		--http-listen "127.0.0.1:$((port + 1))" "$@" 2>&1)
	rc=$?
	echo "$rc $(tr '\n' ' ' <<<"$out")" # one line: the patterns below span gschedd's log lines
}
out=$(bad --http-tls-cert "$CA/pool/sched.crt" --http-tls-key "$CA/pool/other.key")
like "$out" "^1 .*cannot load the key '$CA/pool/other.key': .*mismatch" "a key that is not the certificate's: gschedd exits 1 and says so"
out=$(bad --http-tls-cert "$CA/pool/sched.crt")
like "$out" "^1 .*http_tls_cert and http_tls_key go together" "a certificate without its key: refused"
out=$(bad --http-tls-cert /nonexistent.crt --http-tls-key "$CA/pool/sched.key")
like "$out" "^1 .*cannot load the certificate '/nonexistent.crt'" "a missing certificate: refused"
done_testing
