#!/bin/bash
# t0800-service: a service's replicas are jobs of their own: spread over the hosts, each with a
# free port (GPOOL_PORT; two on one host differ), restarted when one is killed, a crash loop
# shown and backed off, scaled up and down, moved off a drained host, re-placed when a host
# goes down, and all stopped by gcancel. The replica is `python3 -m http.server`, unmodified.
# timeout: 240
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
test_under_cluster 3 --node-timeout 4s --heartbeat-interval 1s --kill-grace 2s \
	--sched-arg --output-limit=64KiB
command -v curl >/dev/null || skip_all "curl is not installed"

svc=$(submit --service --replicas 3 --port 8080 --health-path / -J web -- \
	/bin/sh -c "exec python3 -m http.server --bind 0.0.0.0 --directory $WORK \"\$GPOOL_PORT\"")
[ -n "$svc" ] || { fail "a 3-replica service is accepted"; done_testing; }
ok "a 3-replica service is accepted (job $svc)"
if wait_ready "$svc" 3 30; then ok "3 replicas run"; else
	fail "3 replicas run" "$(replicas "$svc")" "$(gstat -l -j "$svc")"; done_testing
fi
is "$(job_state "$svc")" RUNNING "the service itself is RUNNING"
nodes=$(replicas "$svc" | awk '{print $3}' | sort -u | wc -l)
is "$nodes" 3 "the replicas are spread over the 3 hosts"
is "$(replicas "$svc" | awk '{print $5}' | sort -u)" 8080 "each got the wished port 8080 (one per host)"
good=0
while read -r _ _ _ addr port _; do
	[ "$(http_get "http://$addr:$port/")" = 200 ] && good=$((good + 1))
done < <(replicas "$svc")
is "$good" 3 "every replica answers HTTP at its node's address and port"
gl=$(gstat -l -j "$svc")
like "$gl" 'Replica=0 JobId=[0-9]+ State=RUNNING Node=h[1-3] Addr=198\.18\.0\.1[1-3]:8080 Ready=yes Restarts=0' \
	"gstat -l shows each replica's node, address, state and restarts"

# -- a replica killed: restarted
read -r idx rjob host _ port _ < <(replicas "$svc" | head -1)
# the process listening on the replica's port in its host's network namespace
pid=$(on_host "$host" ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$pid" ] && on_host "$host" kill -KILL "$pid"
deadline=$((SECONDS + 20))
while [ $SECONDS -lt $deadline ]; do
	r=$(replicas "$svc" | awk -v i="$idx" '$1 == i')
	[ "$(echo "$r" | awk '{print $8}')" -ge 1 ] 2>/dev/null && [ "$(echo "$r" | awk '{print $7}')" = yes ] && break
	sleep 0.3
done
like "$r" "^$idx $rjob h[1-3] .* RUNNING yes 1 no" "a killed replica is restarted (same job, restarts 1)"

# -- scale up: two replicas on one host get different ports
out=$(as_user gpool scale "$svc" 5 2>&1)
is "$?" 0 "gpool scale to 5 succeeds ($out)"
if wait_ready "$svc" 5 30; then ok "5 replicas run"; else fail "5 replicas run" "$(replicas "$svc")"; fi
dup=$(replicas "$svc" | awk '{print $3":"$5}' | sort | uniq -d)
is "$dup" "" "no two replicas on one host share a port"
like "$(replicas "$svc" | awk '{print $5}' | sort -u | tr '\n' ' ')" '8080 808[1-9]' \
	"a second replica on a host gets the next free port"
good=0
while read -r _ _ _ addr port _; do
	[ "$(http_get "http://$addr:$port/")" = 200 ] && good=$((good + 1))
done < <(replicas "$svc")
is "$good" 5 "all 5 answer"

# -- scale down
as_user gpool scale "$svc" 2 >/dev/null 2>&1
if wait_ready "$svc" 2 20; then ok "scaled down to 2"; else fail "scaled down to 2" "$(replicas "$svc")"; fi
is "$(replicas "$svc" | awk '{print $1}' | tr '\n' ' ')" "0 1 " "the lowest indices stay"
out=$(as_other gpool scale "$svc" 4 2>&1)
[ $? != 0 ] && ok "another user cannot scale it" || fail "another user cannot scale it" "$out"

# -- drain a host that runs a replica: it moves
read -r _ _ dhost _ < <(replicas "$svc" | head -1)
gnodes drain "$dhost" --reason "t0800 move" >/dev/null 2>&1
sleep 1
if wait_ready "$svc" 2 20 && ! replicas "$svc" | awk '{print $3}' | grep -qx "$dhost"; then
	ok "the replica on drained $dhost moved ($(replicas "$svc" | awk '{print $3}' | tr '\n' ' '))"
else
	fail "the replica on drained $dhost moved" "$(replicas "$svc")"
fi
gnodes resume "$dhost" >/dev/null 2>&1

# -- a host goes down: its replica is placed elsewhere
read -r _ _ khost _ < <(replicas "$svc" | head -1)
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" "$khost" KILL
t0=$SECONDS
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
	if [ "$(ready_count "$svc")" = 2 ] && ! replicas "$svc" | awk '{print $3}' | grep -qx "$khost"; then break; fi
	sleep 0.3
done
if [ "$(ready_count "$svc")" = 2 ] && ! replicas "$svc" | awk '{print $3}' | grep -qx "$khost"; then
	ok "with $khost down, 2 replicas run again elsewhere after $((SECONDS - t0)) s"
else
	fail "with $khost down, 2 replicas run again elsewhere" "$(replicas "$svc")"
fi
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" "$khost" >/dev/null 2>&1

# -- a crash loop is shown and backed off
bad=$(submit --service --replicas 1 -J crashy -- /bin/sh -c 'exit 3')
sleep 8
r=$(replicas "$bad")
like "$r" '^0 [0-9]+ .* yes$' "a replica that keeps exiting at once is in a crash loop ($r)"
n1=$(echo "$r" | awk '{print $8}')
[ "${n1:-0}" -ge 3 ] && [ "${n1:-0}" -le 6 ] && ok "restarts back off (restarts after 8 s: $n1)" ||
	fail "restarts back off" "restarts after 8 s: $n1"
like "$(gstat -l -j "$bad")" 'State=CRASH_LOOP.*CrashLoop=yes' "gstat -l says CRASH_LOOP"

# -- a replica's output rotates: the newest is kept (output_limit 64 KiB here)
chatty=$(submit --service --replicas 1 -J chatty -- /bin/sh -c 'seq 1 40000; exec sleep 1000')
if [ -n "$chatty" ] && wait_until 20 test "$(replicas "$chatty" | awk '{print $6}')" = RUNNING; then
	rj=$(replicas "$chatty" | awk '{print $2}')
	sleep 3
	out=$(as_user glogs "$rj" 2>&1)
	like "$(echo "$out" | tail -1)" '^40000$' "the replica's newest output line is kept after rotation"
	unlike "$(echo "$out" | head -1)" '^1$' "its oldest lines were rotated away ($(echo "$out" | wc -c) bytes kept)"
else
	fail "a chatty replica runs" "$(replicas "$chatty")"
fi
as_user gcancel "$chatty" >/dev/null 2>&1

# -- gcancel stops every replica
as_user gcancel "$svc" "$bad" >/dev/null 2>&1
check "the service ends CANCELLED" wait_state "$svc" CANCELLED 10
sleep 3
# the test directory in their command lines: only this test's replicas match
left=$(pgrep -u "$TEST_USER" -f "http.server.*$WORK" | wc -l)
is "$left" 0 "no replica process is left on any host"
is "$(replicas "$svc" | awk '$6 != "CANCELLED"' | wc -l)" 0 "every replica job ended CANCELLED"
done_testing
