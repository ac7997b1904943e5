#!/bin/bash
# t0800-service: a service's replicas are jobs of their own: spread over the hosts, each with a
# free port (GPOOL_PORT; two on one host differ), restarted when one is killed, a crash loop
# shown and backed off, scaled up and down, moved off a drained host, re-placed when a host
# goes down, its staged files replaced by a rolling update (gpool update --stage; bad updates
# refused; gschedd killed and restarted while a replica drains: the update goes on), and all
# stopped by gcancel. The replica is `python3 -m http.server`, unmodified.
# timeout: 300
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
like "$gl" 'Replica=0 JobId=[0-9]+ State=RUNNING Node=h[1-3] Addr='"$(hosts_re 3)"':8080 Ready=yes Restarts=0' \
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
moved=0 state=""
while [ $SECONDS -lt $deadline ]; do
	# one listing for both halves of the condition (two gstat calls could see two moments)
	state=$(replicas "$svc")
	if [ "$(awk '$7 == "yes"' <<<"$state" | wc -l)" = 2 ] && ! awk '{print $3}' <<<"$state" | grep -qx "$khost"; then
		moved=1
		break
	fi
	sleep 0.3
done
if [ $moved = 1 ]; then
	ok "with $khost down, 2 replicas run again elsewhere after $((SECONDS - t0)) s"
else
	fail "with $khost down, 2 replicas run again elsewhere" "$state"
fi
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" "$khost" >/dev/null 2>&1

# -- a crash loop is shown and backed off. Asserted from gschedd's own log, not from a count
# in a fixed sleep (which a loaded machine breaks): each quick exit is logged with how long the
# replica ran and the delay chosen ("exited with code 3 after 0.0 s ...; restarting in 500 ms");
# the delays must double (500, 1000, 2000, 4000 ms) and each next attempt must start no sooner
# than its delay after the exit before it (start = the next exit's time minus its run time).
bad=$(submit --service --replicas 1 -J crashy -- /bin/sh -c 'exit 3')
exits() { # the exit lines of job $1: "seconds-of-the-log's-clock ran delay_ms"
	grep -F "(job $1): exited with code" "$CLUSTER_DIR/sched/gschedd.log" 2>/dev/null |
		"$PY" -c '
import re, sys, datetime
for l in sys.stdin:
    m = re.match(r"(\S+) .* after ([0-9.]+) s.*restarting in ([0-9]+) ms", l)
    if m:
        t = datetime.datetime.fromisoformat(m.group(1)).timestamp()
        print("%.3f %s %s" % (t, m.group(2), m.group(3)))'
}
rj=""
have_rj() { rj=$(replicas "$bad" | awk '{print $2}'); [ -n "$rj" ] && [ "$rj" != 0 ]; }
five_exits() { [ "$(exits "$rj" | wc -l)" -ge 5 ]; }
wait_until 20 have_rj && wait_until 60 five_exits
ex=$(exits "$rj")
is "$(echo "$ex" | head -4 | awk '{print $3}' | tr '\n' ' ')" "500 1000 2000 4000 " \
	"restarts back off: the delays after 4 quick exits double ($(echo "$ex" | wc -l) exits logged)"
# the gap from an exit to the next attempt's start, against the delay announced (the run time
# is logged to 0.1 s: 0.05 s of rounding allowed)
short=$(echo "$ex" | head -5 | awk 'NR > 1 && $1 - $2 - pt < pd / 1000 - 0.05 {
	printf "exit %d at %.3f + %d ms, next start %.3f; ", NR - 1, pt, pd, $1 - $2 }
	{ pt = $1; pd = $3 }')
gaps=$(echo "$ex" | head -5 | awk 'NR > 1 { printf "%.2f ", $1 - $2 - pt } { pt = $1 }')
[ -n "$ex" ] && [ -z "$short" ] && ok "each restart waited its delay (exit to next start: $gaps s)" ||
	fail "each restart waited its delay" "$short" "$ex"
r=$(replicas "$bad")
like "$r" '^0 [0-9]+ .* yes$' "a replica that keeps exiting at once is in a crash loop ($r)"
n1=$(echo "$r" | awk '{print $8}')
[ "${n1:-0}" -ge 4 ] && ok "gstat counts its restarts ($n1)" || fail "gstat counts its restarts" "$r"
like "$(gstat -l -j "$bad")" 'State=CRASH_LOOP.*CrashLoop=yes' "gstat -l says CRASH_LOOP"

# -- a replica's output rotates: the newest is kept (output_limit 64 KiB here)
chatty=$(submit --service --replicas 1 -J chatty -- /bin/sh -c 'seq 1 40000; exec sleep 1000')
chatty_state() { replicas "$chatty" | awk '{print $6}'; }
if [ -n "$chatty" ] && wait_eq 20 RUNNING chatty_state; then
	rj=$(replicas "$chatty" | awk '{print $2}')
	sleep 3
	out=$(as_user glogs "$rj" 2>&1)
	like "$(echo "$out" | tail -1)" '^40000$' "the replica's newest output line is kept after rotation"
	unlike "$(echo "$out" | head -1)" '^1$' "its oldest lines were rotated away ($(echo "$out" | wc -c) bytes kept)"
else
	fail "a chatty replica runs" "$(replicas "$chatty")"
fi
as_user gcancel "$chatty" >/dev/null 2>&1

# -- a rolling update of staged files (no new command): every replica serves the new ones
mkdir -p "$WORK/v1/site" "$WORK/v2/site"
echo v1 >"$WORK/v1/site/id"
echo v2 >"$WORK/v2/site/id"
chmod -R a+rX "$WORK/v1" "$WORK/v2"
site=$(submit --service --replicas 2 --port 8300 --health-path /id -J site --stage "$WORK/v1/site" -- \
	/bin/sh -c 'exec python3 -m http.server --bind 0.0.0.0 --directory site "$GPOOL_PORT"')
answers() { replicas "$site" | while read -r _ _ _ addr port st _; do
	[ "$st" = RUNNING ] && curl -s -m 2 "http://$addr:$port/id"; done | sort | paste -sd' '; }
if [ -n "$site" ] && wait_ready "$site" 2 30 && wait_eq 10 "v1 v1" answers; then
	ok "a service with staged files serves them (v1 on both replicas)"
	out=$(as_user gpool update "$site" --stage "$WORK/v2/site" 2>&1)
	is "$?" 0 "gpool update --stage (files only) is accepted ($out)"
	if wait_eq 60 "v2 v2" answers; then
		ok "both replicas serve the new files after the rolling update"
	else
		fail "both replicas serve the new files" "$(answers)" "$(replicas "$site")"
	fi
	is "$(replicas "$site" | awk '$8 >= 1' | wc -l)" 2 "each replica was restarted once for it"
	out=$(as_user gpool update "$site" --stage "$WORK/no-such-file" 2>&1)
	rc=$?
	like "$rc $out" '^1 .*no-such-file' "a missing file: a clear error, exit 1 ($out)"
	out=$(as_user gpool update "$site" 2>&1)
	like "$? $out" '^2 .*new command .* or files' "neither a command nor files: a usage error ($out)"
	plain=$(submit -- /bin/sleep 60)
	out=$(as_user gpool update "$plain" --stage "$WORK/v2/site" 2>&1)
	like "$? $out" '^1 .*not a service' "a job that is not a service cannot be updated ($out)"
	as_user gcancel "$plain" >/dev/null 2>&1
	out=$(as_other gpool update "$site" --stage "$WORK/v2/site" 2>&1)
	like "$? $out" '^1 .*permission denied' "another user's service cannot be updated ($out)"
	is "$(answers)" "v2 v2" "and the service still answers with the new files"

	# gschedd killed while the first replica drains: the restarted one goes on with the
	# update (the replicas' specs in the store are not yet the service's)
	mkdir -p "$WORK/v3/site"
	echo v3 >"$WORK/v3/site/id"
	chmod -R a+rX "$WORK/v3"
	drains() { grep -c 'draining for [0-9]* ms before it is replaced' "$CLUSTER_DIR/sched/gschedd.log"; }
	before=$(drains)
	out=$(as_user gpool update "$site" --stage "$WORK/v3/site" 2>&1)
	is "$?" 0 "a second update (v3) is accepted ($out)"
	if wait_eq 30 $((before + 1)) drains; then
		"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" KILL >/dev/null 2>&1
		sleep 1
		"$CLUSTER" sched-start --dir "$CLUSTER_DIR" >/dev/null 2>&1
		if wait_eq 60 "v3 v3" answers; then
			ok "gschedd killed during a drain: after its restart both replicas serve v3"
		else
			fail "the update goes on after gschedd's restart" "$(answers)" "$(replicas "$site")"
		fi
		wait_ready "$site" 2 30
		is "$(ready_count "$site")" 2 "and both replicas are ready"
	else
		fail "a replica drains for the v3 update" "$(drains) drains, $before before"
	fi
else
	fail "a service with staged files runs" "$(replicas "$site")"
fi
as_user gcancel "$site" >/dev/null 2>&1

# -- gcancel stops every replica
as_user gcancel "$svc" "$bad" >/dev/null 2>&1
check "the service ends CANCELLED" wait_state "$svc" CANCELLED 10
sleep 3
# the test directory in their command lines: only this test's replicas match
left=$(pgrep -u "$TEST_USER" -f "http.server.*$WORK" | wc -l)
is "$left" 0 "no replica process is left on any host"
is "$(replicas "$svc" | awk '$6 != "CANCELLED"' | wc -l)" 0 "every replica job ended CANCELLED"
done_testing
