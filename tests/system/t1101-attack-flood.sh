#!/bin/bash
# t1101-attack-flood: hosts on the LAN with no credential cannot stop the scheduler. For
# T1101_SECS seconds (60) three hosts send at once, continuously and without waiting: h1
# envelopes of the largest size gschedd takes (max_request) full of zeros and, beside them,
# frames of 80 MiB (max_message, ZeroMQ drops them as they come), h2 envelopes of 8 million empty
# messages (the kind that took gschedd to 4.4 GB before it counted members first), h3 the same
# sealed with a real credential (refused by the member count after the credential). Meanwhile
# gstat and gnodes answer with p99 under 2 s, gsub takes new jobs, no node goes DOWN, every job
# accepted before and during the attack completes, and gschedd's RSS stays under 256 MB. The
# figures are printed (and appended to $T1101_OUT when set). The attackers run niced: they
# stand for other PCs, whose CPUs are their own, on a machine of 2 CPUs.
# timeout: 240
# exclusive: three hosts flood gschedd for 60 s while p99 bounds hold on gstat and gnodes (set on a quiet machine)
. "$(dirname "$0")/lib.sh"
need_bins gp-probe
SECS=${T1101_SECS:-60}
test_under_cluster 3 --cpus 2

before=""
for _ in 1 2 3 4 5 6; do before="$before $(submit -J before -- sleep $((SECS / 2 + 10)))"; done
for id in $before; do wait_state "$id" RUNNING 30 >/dev/null; done
ok "six jobs accepted and running before the attack"
spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$spid/status")

declare -A kind=([h1]=big [h2]=empties [h3]=empties-cred [h1o]=oversized) att=()
for a in h1 h2 h3 h1o; do
	# the attackers stand for other PCs: niced, they take what CPU gschedd leaves (this machine
	# has 2), as the PCs they stand for would have their own
	on_host "${a:0:2}" nice -n 19 runuser -u "$OTHER_USER" -- env PATH="$USER_BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" gp-probe hostile "$SECS" "${kind[$a]}" >"$WORK/attack.$a" 2>&1 &
	att[$a]=$!
done
at_cleanup "kill ${att[*]} 2>/dev/null"
sleep 1

# while it lasts: gstat's latency, gschedd's RSS, the nodes' states, and new submissions
: >"$WORK/gstat.ms"
: >"$WORK/rss.kb"
: >"$WORK/down"
during=""
end=$((SECONDS + SECS - 2))
n=0
while [ $SECONDS -lt $end ]; do
	t0=$(date +%s%N)
	as_user gstat >/dev/null 2>>"$WORK/gstat.err" || echo fail >>"$WORK/gstat.fail"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$WORK/gstat.ms"
	awk '/^VmRSS/ {print $2}' "/proc/$spid/status" >>"$WORK/rss.kb"
	t0=$(date +%s%N)
	gnodes 2>>"$WORK/gstat.err" | grep -E '^h[0-9]+ +(down|DOWN)' >>"$WORK/down"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$WORK/gstat.ms"
	n=$((n + 1))
	if [ $((n % 10)) = 0 ]; then
		id=$(submit -J during -- true) && during="$during $id" || echo "submit failed" >>"$WORK/submit.fail"
	fi
	sleep 0.3
done
for a in h1 h2 h3 h1o; do wait "${att[$a]}"; done
for a in h1 h2 h3 h1o; do diag "attacker $a: $(cat "$WORK/attack.$a")"; done

sent=$(cat "$WORK"/attack.h* | sed -n 's/.*sent \([0-9]*\) envelopes of \([0-9]*\) bytes.*/\1 \2/p' |
	awk '{b += $1 * $2; e += $1} END {printf "%d envelopes, %.1f GB", e, b / 1e9}')
p=$(sort -n "$WORK/gstat.ms" | "$PY" -c '
import sys
v = [int(x) for x in sys.stdin.read().split()]
q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
print(len(v), q(0.5), q(0.99), v[-1])')
read -r ncalls p50 p99 pmax <<<"$p"
rssmax=$(sort -n "$WORK/rss.kb" | tail -1)
fig="attack ${SECS}s from 3 hosts ($sent sent): gstat and gnodes p50 ${p50} ms p99 ${p99} ms max ${pmax} ms over $ncalls calls; gschedd RSS ${rss0} kB before, max $((rssmax / 1024)) MB during"
diag "$fig"
[ -n "${T1101_OUT:-}" ] && echo "$(date -u +%FT%TZ) $fig" >>"$T1101_OUT"
total=$(cat "$WORK"/attack.h* | sed -n 's/.*sent \([0-9]*\) envelopes.*/\1/p' | awk '{s += $1} END {print s + 0}')
[ "$total" -gt 10 ] && ok "the attackers sent $total envelopes" || fail "the attackers sent envelopes" "$total"
[ "$p99" -lt 2000 ] && ok "the p99 of gstat and gnodes during the attack is $p99 ms, under 2 s" || fail "gstat's and gnodes' p99 under 2 s" "$p99 ms"
[ ! -s "$WORK/gstat.fail" ] && ok "every gstat answered ($ncalls calls of both)" || fail "every gstat answered" "$(wc -l <"$WORK/gstat.fail") failed: $(head -3 "$WORK/gstat.err")"
[ "$rssmax" -lt $((256 * 1024)) ] && ok "gschedd's RSS stayed under 256 MB (max $((rssmax / 1024)) MB)" ||
	fail "gschedd's RSS under 256 MB" "$((rssmax / 1024)) MB"
[ ! -s "$WORK/down" ] && ok "no node went DOWN" || fail "no node went DOWN" "$(sort -u "$WORK/down" | head -3)"
[ ! -s "$WORK/submit.fail" ] && ok "every submission during the attack was accepted ($(echo $during | wc -w))" ||
	fail "submissions during the attack" "$(wc -l <"$WORK/submit.fail") failed"
lost=0
for id in $before $during; do
	wait_state "$id" COMPLETED 60 >/dev/null 2>&1 || { lost=$((lost + 1)); diag "job $id: $(job_state "$id")"; }
done
is "$lost" 0 "every job accepted before and during the attack completed ($(echo $before $during | wc -w))"
like "$(cat "$WORK/attack.h3")" "refused [1-9]" "the sealed ones were answered with a refusal"
grep -q "over the limit of 65536" "$CLUSTER_DIR/sched/gschedd.log" &&
	ok "gschedd logs the member count it refused" || fail "gschedd logs the member count" "$(grep -c refused "$CLUSTER_DIR/sched/gschedd.log") refusals logged"
done_testing
