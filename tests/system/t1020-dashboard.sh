#!/bin/bash
# t1020-dashboard: gschedd's dashboard in a real browser (Debian's chromium and chromium-driver
# driven by python3-selenium) against a running cluster: the page loads with no console errors,
# shows every node and a job just submitted (through the CLI), and that job's output appears in
# its detail. The screenshot is kept as the test's artifact (build/Testing/t1020-dashboard.png).
# timeout: 150
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
	skip_all "chromium, chromium-driver and python3-selenium are needed (deploy/install-deps.sh)"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
URL=http://127.0.0.1:$port
test_under_cluster 3 --cpus 2 --heartbeat-interval 1s --sched-arg "--http-listen=127.0.0.1:$port" \
	--sched-arg "--web-dir=$GPOOL_SRC_DIR/scheduler/web" \
	--fake-cards "h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W:draw=150:idle=15;h2=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W:draw=200:idle=20;h3=nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W:draw=110:idle=10"

out=$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$URL/")
is "$out" "200 text/html; charset=utf-8" "GET / serves the page"
out=$(curl -s -o /dev/null -w '%{http_code}' "$URL/web/../../etc/passwd")
like "$out" '^40[04]$' "a path outside web_dir is not served"

id=$(submit --gpus-per-task 1 -- sh -c 'for i in $(seq 1 20); do echo dashboard-line-$i; sleep 1; done')
is "$?" 0 "a job is submitted with gsub ($id)"
tok=$(as_user /usr/bin/python3 "$GPOOL_SRC_DIR/tests/tools/gp-api.py" --url "$URL" POST /api/v1/token |
	sed 1d | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
like "$tok" '^[0-9a-f]{32}$' "the user gets a token for the dashboard"
wait_state "$id" RUNNING 20 >/dev/null
shot=$GPOOL_BIN_DIR/../Testing/t1020-dashboard.png
mkdir -p "$(dirname "$shot")"
out=$(timeout 100 /usr/bin/python3 "$GPOOL_SRC_DIR/tests/tools/dashboard-check.py" "$URL" "$tok" "$id" \
	dashboard-line-3 "$shot" h1 h2 h3 2>&1)
rc=$?
diag "$out"
is "$rc" 0 "the dashboard shows every node, the job and its output, with no console errors"
check "the screenshot was saved ($shot)" test -s "$shot"
done_testing
