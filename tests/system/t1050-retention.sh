#!/bin/bash
# t1050-retention: job_retention (set by SIGHUP) purges finished jobs older than it: gone from
# gstat, the REST API, glogs and the output store, while a recent job stays whole and gacct
# still lists every purged job from its summary row; /metrics counts them. After a gschedd
# restart nothing purged comes back, the summaries and the recent job remain, and new jobs get
# ids after the purged ones (never one again).
# timeout: 200
. "$(dirname "$0")/lib.sh"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
test_under_cluster 1 --cpus 2 --sched-arg "--http-listen=127.0.0.1:$port"
URL=http://127.0.0.1:$port
GP_API=$GPOOL_SRC_DIR/tests/tools/gp-api.py
api() { as_user /usr/bin/python3 "$GP_API" --url "$URL" "$@"; }
status() { head -1 <<<"$1"; }
body() { sed 1d <<<"$1"; }
jget() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
OUT=$CLUSTER_DIR/sched/state/output
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf
AGE=20 # job_retention, seconds

# three jobs that will be old, each with output
old=()
for i in 1 2 3; do
	id=$(submit -- echo "old-$i") || { fail "submit an old job"; done_testing; }
	old+=("$id")
done
for id in "${old[@]}"; do check "old job $id completes" wait_state "$id" COMPLETED 60; done
check "the old jobs' output is in the output store" test -d "$OUT/${old[0]}" -a -d "$OUT/${old[2]}"
t_old=$SECONDS

# they age past AGE; then a recent one
wait_s=$((AGE + 5 - (SECONDS - t_old)))
[ "$wait_s" -gt 0 ] && sleep "$wait_s"
recent=$(submit -- echo recent)
check "the recent job completes" wait_state "$recent" COMPLETED 60
like "$(as_user glogs "$recent")" "recent" "glogs shows the recent job's output"

# SIGHUP with job_retention set: the old ones go at the next pass
spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
cp "$conf" "$TEST_DIR/orig.conf"
echo "job_retention = ${AGE}s" >>"$conf"
kill -HUP "$spid"
gone() { ! gstat -a -j "$1" >/dev/null 2>&1; }
all_gone() { for id in "${old[@]}"; do gone "$id" || return 1; done; }
check "gschedd applies job_retention on SIGHUP" wait_until 10 eval "grep -q \"reload: job_retention = '${AGE}s'\" '$slog'"
check "the old jobs are purged within 10 s" wait_until 10 all_gone
# keep the recent job from aging out while the rest is checked: retention off again
cp "$TEST_DIR/orig.conf" "$conf"
kill -HUP "$spid"
check "job_retention off again" wait_until 10 eval "[ \$(grep -c 'reload: done' '$slog') -ge 2 ]"

# what is purged is gone everywhere but gacct, what is recent is whole
olds=$(IFS=,; echo "${old[*]}")
after_purge() {
	local when=$1 out id
	for id in "${old[@]}"; do
		out=$(gstat -a -j "$id" 2>&1)
		like "$out" "not found" "$when: gstat -a -j $id: not found"
		out=$(api GET "/api/v1/jobs/$id")
		is "$(status "$out")" 404 "$when: GET /api/v1/jobs/$id: 404"
		check "$when: job $id's output left the output store" test ! -e "$OUT/$id"
		if out=$(as_user glogs "$id" 2>&1); then
			fail "$when: glogs $id fails" "$out"
		else
			ok "$when: glogs $id fails ($out)"
		fi
	done
	out=$(api GET "/api/v1/jobs?all=1")
	is "$(status "$out")" 200 "$when: GET /api/v1/jobs?all=1: 200"
	is "$(body "$out" | jget "sorted(j['id'] for j in d['jobs'] if j['id'] in ($olds, $recent))")" \
		"[$recent]" "$when: the REST listing has the recent job and none of the purged"
	is "$(job_state "$recent")" COMPLETED "$when: gstat still shows the recent job"
	check "$when: the recent job's output is kept" test -d "$OUT/$recent"
	like "$(as_user glogs "$recent")" "recent" "$when: glogs still shows it"
	out=$(as_user gacct --json -S now-1hours)
	is "$(jget "sorted(j['id'] for j in d['jobs'])" <<<"$out")" \
		"$(/usr/bin/python3 -c "print(sorted([$olds, $recent]))")" \
		"$when: gacct lists the purged jobs (summary rows) and the recent one"
	out=$(as_user gacct -j "${old[1]}")
	like "$out" "${old[1]}.*COMPLETED" "$when: gacct -j ${old[1]} shows it COMPLETED"
}
after_purge "after the purge"
m=$(curl -s "$URL/metrics")
like "$(grep '^gpool_jobs_purged_total' <<<"$m")" "gpool_jobs_purged_total [3-9]" \
	"/metrics counts the purged jobs"

# a restart: nothing purged comes back
"$CLUSTER" sched-kill --dir "$CLUSTER_DIR" TERM
wait_until 20 eval '! kill -0 '"$spid"' 2>/dev/null' || diag "gschedd took long to stop"
"$CLUSTER" sched-start --dir "$CLUSTER_DIR"
check "gschedd answers after the restart" wait_until 30 eval 'gstat >/dev/null 2>&1'
check "its REST API too" wait_until 30 eval "curl -sf '$URL/metrics' >/dev/null"
after_purge "after a restart"
new=$(submit -- echo new)
check "a new job runs after the restart" wait_state "$new" COMPLETED 60
max=$(printf '%s\n' "${old[@]}" "$recent" | sort -n | tail -1)
if [ "$new" -gt "$max" ]; then
	ok "the new job's id ($new) comes after every purged one"
else
	fail "the new job's id ($new) comes after every purged one" "the largest was $max"
fi

done_testing
