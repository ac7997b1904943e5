#!/bin/bash
# t1105-https-caps: http/'s TLS and connection caps, in ggated and gschedd's REST API. ggated
# started with --tls-cert/--tls-key (a pool's CA, deploy/gpool-ca) forwards HTTPS requests to a
# service's replica for a client that trusts the CA; a plain-HTTP client and a client without
# the CA get nothing. One address (127.0.0.1) opens 100 idle connections to ggated and to
# gschedd's REST port: the caps (--max-clients-per-addr 8; http_max_conns_per_addr 8) close
# those past 8 when accepted, and a client from another address (127.0.0.2) is still served by
# both, while the idle ones stay open until the client timeout.
# timeout: 180
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
command -v openssl >/dev/null || skip_all "the openssl command is missing"
command -v curl >/dev/null || skip_all "curl is missing"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
gw=$((port + 1))
CA=$(mktemp -d /tmp/gpool-ca.XXXXXX)
at_cleanup "rm -rf $CA"
"$GPOOL_SRC_DIR/deploy/gpool-ca" init "$CA/pool" >/dev/null &&
	"$GPOOL_SRC_DIR/deploy/gpool-ca" issue "$CA/pool" gw --ip 127.0.0.1 --dns localhost >/dev/null
is "$?" 0 "gpool-ca makes a CA and ggated's certificate"
"$GPOOL_SRC_DIR/deploy/gpool-ca" init "$CA/other" >/dev/null
chmod 0755 "$CA" "$CA/pool"
test_under_cluster 1 --cpus 2 --sched-arg "--http-listen=127.0.0.1:$port" \
	--sched-arg "--http-max-conns-per-addr=8"
need_bins ggated

"$GPOOL_BIN_DIR/ggated" --listen "127.0.0.1:$gw" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--poll-interval 300 --health-interval 300 --client-timeout 20000 \
	--tls-cert "$CA/pool/gw.crt" --tls-key "$CA/pool/gw.key" --max-clients-per-addr 8 \
	>"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

svc=$(submit --service --replicas 1 --port 8080 --health-path /id -J tlsweb -- /bin/sh -c \
	"mkdir -p $WORK/t\$GPOOL_PORT && echo replica-\$GPOOL_NODENAME > $WORK/t\$GPOOL_PORT/id && exec python3 -m http.server --bind 0.0.0.0 --directory $WORK/t\$GPOOL_PORT \"\$GPOOL_PORT\"")
[ -n "$svc" ] && wait_ready "$svc" 1 30 || { fail "the replica runs" "$(replicas "$svc")"; done_testing; }
GURL=https://127.0.0.1:$gw
get() { curl -s -m 5 --cacert "$CA/pool/ca.crt" "$@"; }
wait_until 10 get -f -o /dev/null "$GURL/svc/tlsweb/id"
is "$(get "$GURL/svc/tlsweb/id")" "replica-h1" "HTTPS through ggated reaches the replica"
is "$(get -X POST --data-binary @/dev/null -o /dev/null -w '%{http_code}' "$GURL/svc/tlsweb/id")" 501 \
	"a POST over HTTPS gets the replica's own answer (python's 501)"
curl -s -m 5 -o /dev/null "http://127.0.0.1:$gw/svc/tlsweb/id"
rc=$?
[ $rc != 0 ] && ok "plain HTTP to ggated's TLS port gets no answer (curl exit $rc)" || fail "plain HTTP gets no answer" "exit 0"
curl -s -m 5 -o /dev/null --cacert "$CA/other/ca.crt" "$GURL/svc/tlsweb/id"
is "$?" 60 "a client trusting another CA refuses ggated's certificate (curl exit 60)"
curl -s -m 5 -o /dev/null --tls-max 1.1 --cacert "$CA/pool/ca.crt" "$GURL/svc/tlsweb/id"
rc=$?
[ $rc != 0 ] && ok "TLS 1.1 is refused by ggated (curl exit $rc)" || fail "TLS 1.1 is refused" "exit 0"

# 100 idle connections from 127.0.0.1 to each server; how many stay open after a second
idle() { # PORT -> "open closed"
	/usr/bin/python3 - "$1" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(100)]
time.sleep(1)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print(100 - closed, closed, flush=True)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 6)
PY
}
for target in "ggated $gw" "gschedd $port"; do
	set -- $target
	idle "$2" >"$TEST_DIR/idle-$1" &
	ip=$!
	wait_until 10 test -s "$TEST_DIR/idle-$1"
	read -r open closed <"$TEST_DIR/idle-$1"
	is "$open $closed" "8 92" "$1: 100 idle connections from one address, 8 kept, 92 closed when accepted"
	if [ "$1" = ggated ]; then
		out=$(get --interface 127.0.0.2 "$GURL/svc/tlsweb/id")
		is "$out" "replica-h1" "ggated: a client from 127.0.0.2 is served meanwhile"
		refused=$(get --interface 127.0.0.2 "$GURL/metrics" | sed -n 's/^ggated_client_connections_refused_total //p')
		[ "${refused:-0}" -ge 92 ] && ok "ggated counts $refused refused connections" ||
			fail "ggated counts the refused connections" "$refused"
		out=$(get "$GURL/svc/tlsweb/id")
		[ -z "$out" ] && ok "a ninth connection from 127.0.0.1 is not served" ||
			fail "a ninth connection from 127.0.0.1 is not served" "$out"
	else
		out=$(curl -s -m 5 --interface 127.0.0.2 "http://127.0.0.1:$2/metrics" | grep -c '^gpool_nodes')
		[ "$out" -ge 1 ] && ok "gschedd: a client from 127.0.0.2 gets /metrics meanwhile" ||
			fail "gschedd serves 127.0.0.2" "$out"
		t0=$(date +%s%N)
		as_user gstat >/dev/null
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ $ms -lt 2000 ] && ok "gstat answers in $ms ms meanwhile" || fail "gstat answers quickly" "$ms ms"
	fi
	wait $ip
done
out=$(get "$GURL/svc/tlsweb/id")
is "$out" "replica-h1" "once the idle client has gone, 127.0.0.1 is served again"
done_testing
