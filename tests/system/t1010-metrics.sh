#!/bin/bash
# t1010-metrics: gschedd's /metrics passes `promtool check metrics`, says what the cluster is
# (nodes up, cards, a busy card's power and utilization from the heartbeats, the job running,
# the scheduling-latency histogram, energy per user after the job ends), and a real Prometheus
# (loopback only) scrapes it: a series is queried back from Prometheus' own API.
# Nothing hangs on a fixed pace: the job runs until the test lets it end (a file), Prometheus is
# waited for on /-/ready before its scrapes are, and each wait is generous (a slow or loaded CI
# machine); what is asserted is unchanged.
# timeout: 240
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null && command -v prometheus >/dev/null ||
	skip_all "prometheus is not installed (deploy/install-deps.sh)"
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
test_under_cluster 2 --cpus 2 --heartbeat-interval 1s --sched-arg "--http-listen=127.0.0.1:$port" \
	--fake-cards "h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W:draw=150:idle=15;h2=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W:draw=200:idle=20"
URL=http://127.0.0.1:$port/metrics
# the value of one series, named with its labels exactly as printed (label values hold spaces)
metric() { curl -s "$URL" | awk -v k="$1" 'substr($0, 1, length($0) - length($NF) - 1) == k { print $NF }'; }

out=$(curl -s "$URL")
is "$?" 0 "GET /metrics answers without a credential"
out=$(curl -s "$URL" | promtool check metrics 2>&1)
is "$?" 0 "promtool check metrics accepts it${out:+: $out}"
is "$(metric 'gpool_nodes{state="up"}')" 2 "gpool_nodes{state=up} is 2"
is "$(metric 'gpool_cards{state="up",grade=""}')" 2 "two cards up, not screened"

# the job holds its card until the test creates $WORK/release (at the end)
id=$(submit -w h1 --gpus-per-task 1 -- /bin/sh -c "while [ ! -e $WORK/release ]; do sleep 0.2; done")
at_cleanup "touch $WORK/release"
check "the job runs" wait_state "$id" RUNNING 60
util() { [ "$(metric 'gpool_card_utilization_ratio{node="h1",card="0",model="GeForce RTX 3060"}')" = 1 ]; }
check "the busy card's utilization reaches 1 (heartbeat)" wait_until 30 util
is "$(metric 'gpool_card_power_watts{node="h1",card="0",model="GeForce RTX 3060"}')" 150 "its power is its draw, 150 W"
is "$(metric 'gpool_card_temperature_celsius{node="h1",card="0",model="GeForce RTX 3060"}')" 70 "and its (simulated) temperature 70"
idle_h2() { [ "$(metric 'gpool_card_power_watts{node="h2",card="0",model="Radeon RX 6700 XT"}')" = 20 ]; }
check "the idle card on h2 draws 20 W" wait_until 30 idle_h2
is "$(metric 'gpool_jobs{state="RUNNING"}')" 1 "one job RUNNING"
like "$(metric 'gpool_scheduling_latency_seconds_count')" '^[1-9]' "the latency histogram counted the start"

# a real Prometheus scrapes it every second
pport=$((port + 1))
mkdir -p "$TEST_DIR/prom"
cat >"$TEST_DIR/prom/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gschedd
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
out=$(promtool check config "$TEST_DIR/prom/prometheus.yml" 2>&1)
is "$?" 0 "promtool check config accepts the scrape config"
# its TSDB and web server take a while to start on a loaded machine: wait for it, then for a
# scrape. A Prometheus that exits before it is ready (its port taken meanwhile, say) is started
# again on the next free port, at most 3 times; its log is shown when it never gets ready.
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$pport/-/ready")" = 200 ]; }
ready_or_gone() { ready || ! kill -0 "$ppid_" 2>/dev/null; }
for try in 1 2 3; do
	while ss -ltnH "sport = :$pport" 2>/dev/null | grep -q .; do pport=$((pport + 1)); done
	prometheus --config.file="$TEST_DIR/prom/prometheus.yml" --storage.tsdb.path="$TEST_DIR/prom/data" \
		--web.listen-address="127.0.0.1:$pport" >"$TEST_DIR/prom/log.$try" 2>&1 &
	ppid_=$!
	at_cleanup "kill $ppid_ 2>/dev/null; wait $ppid_ 2>/dev/null"
	wait_until 90 ready_or_gone
	ready && break
	diag "prometheus (try $try, port $pport, $(kill -0 "$ppid_" 2>/dev/null && echo running || echo exited)): $(tail -n 8 "$TEST_DIR/prom/log.$try" | tr '\n' '|')"
	kill "$ppid_" 2>/dev/null
	wait "$ppid_" 2>/dev/null
	pport=$((pport + 1))
done
check "Prometheus is ready (/-/ready)" ready
query() {
	curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
		/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null
}
scraped() { [ "$(query 'gpool_nodes{state="up"}')" = 2 ]; }
check "Prometheus scraped gschedd: gpool_nodes{state=up} reads 2 back" wait_until 60 scraped
is "$(query 'up{job="gschedd"}')" 1 "the target is up"
# the job still runs (it waits for $WORK/release): a scrape has seen its card busy
is "$(job_state "$id")" RUNNING "the job still holds its card while Prometheus scrapes"
peak() { [[ "$(query 'max_over_time(gpool_card_power_watts{node="h1"}[1m])')" == 150* ]]; }
check "the h1 card's power over the last minute peaks at 150 W" wait_until 30 peak

touch "$WORK/release"
check "the job ends" wait_state "$id" COMPLETED 60
energy() { awk -v u="gpool_user_energy_joules_total{user=\"$TEST_USER\"}" '$1 == u { print ($2 > 0) }' <(curl -s "$URL"); }
grew() { [ "$(energy)" = 1 ]; }
check "the user's energy counter grew" wait_until 10 grew
like "$(curl -s "$URL" | grep "^gpool_job_energy_cost{job=\"$id\"")" "user=\"$TEST_USER\"" "the job's energy cost is a series"
done_testing
