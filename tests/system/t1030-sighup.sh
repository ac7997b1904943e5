#!/bin/bash
# t1030-sighup: `--check-config` says whether a gpool.conf is good (and which key is wrong);
# SIGHUP makes gschedd and gworkerd apply changed settings without a restart (gschedd: a new
# max_time_limit refuses a long job at once; log_level), keeps the old settings when the new
# file is bad, and reopens the log file after logrotate moved it. Both daemons live on.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 2 --cpus 2

B=$GPOOL_BIN_DIR
good=$TEST_DIR/good.conf bad=$TEST_DIR/bad.conf
printf 'sync = normal\nmax_attempts = 5\nlog_level = debug\ncgroups = off\n' >"$good"
out=$("$B/gschedd" --config "$good" --check-config 2>&1)
is "$?" 0 "gschedd --check-config accepts a good file ($out)"
out=$("$B/gworkerd" --config "$good" --check-config 2>&1)
is "$?" 0 "gworkerd --check-config accepts it too ($out)"
printf 'sync = fast\n' >"$bad"
if out=$("$B/gschedd" --config "$bad" --check-config 2>&1); then
	fail "gschedd --check-config refuses sync = fast" "$out"
else
	like "$out" "invalid value 'fast' for sync" "gschedd --check-config refuses sync = fast: $out"
fi
printf 'max_attempts = many\n' >"$bad"
if out=$("$B/gschedd" --config "$bad" --check-config 2>&1); then
	fail "gschedd --check-config refuses max_attempts = many" "$out"
else
	like "$out" "bad.conf:1: invalid number 'many' for max_attempts" "with the line: $out"
fi
printf 'cgroups = v3\n' >"$bad"
if out=$("$B/gworkerd" --config "$bad" --check-config 2>&1); then
	fail "gworkerd --check-config refuses cgroups = v3" "$out"
else
	like "$out" "cgroups" "gworkerd --check-config refuses cgroups = v3: $out"
fi

spid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
slog=$CLUSTER_DIR/sched/gschedd.log
conf=$CLUSTER_DIR/gpool.conf
cp "$conf" "$TEST_DIR/orig.conf"

# a long job is accepted before the reload
id=$(submit -t 30 -- true)
is "$?" 0 "a 30-minute job is accepted before the reload"

# gschedd: a new max_time_limit and log level, live
printf 'max_time_limit = 10m\nlog_level = debug\nsync = normal\n' >>"$conf"
kill -HUP "$spid"
reloaded() { grep -q 'reload: done' "$slog"; }
check "gschedd logs the reload" wait_until 10 reloaded
like "$(grep 'reload:' "$slog")" "max_time_limit = '10m'" "it names the applied key"
like "$(grep 'reload:' "$slog")" "sync changed: it takes effect at the next restart" \
	"and the key that needs a restart"
check "gschedd still runs after SIGHUP" kill -0 "$spid"
if out=$(as_user gsub -t 30 -- true 2>&1); then
	fail "a 30-minute job is refused after max_time_limit became 10m" "$out"
else
	like "$out" "time limit" "a 30-minute job is now refused: $out"
fi
id=$(submit -t 5 -- true)
check "a 5-minute job still runs" wait_state "$id" COMPLETED 20

# a bad file changes nothing
echo 'max_time_limit = soon' >>"$conf"
kill -HUP "$spid"
kept() { grep -q 'keeping the running configuration' "$slog"; }
check "a bad file on SIGHUP is refused, with the reason" wait_until 10 kept
check "gschedd still runs" kill -0 "$spid"
if out=$(as_user gsub -t 30 -- true 2>&1); then
	fail "the old max_time_limit stays in force" "$out"
else
	ok "the old max_time_limit stays in force"
fi

# logrotate: log_file set, moved away, SIGHUP: a new file is written
cp "$TEST_DIR/orig.conf" "$conf"
echo "log_file = $CLUSTER_DIR/sched/rot.log" >>"$conf"
kill -HUP "$spid"
has_rot() { [ -s "$CLUSTER_DIR/sched/rot.log" ]; }
check "gschedd switches to the new log_file" wait_until 10 has_rot
mv "$CLUSTER_DIR/sched/rot.log" "$CLUSTER_DIR/sched/rot.log.1"
kill -HUP "$spid"
check "after the move and SIGHUP gschedd writes a fresh rot.log" wait_until 10 has_rot
like "$(cat "$CLUSTER_DIR/sched/rot.log")" "reload: done" "the fresh file has the reload line"
check "gnodes still answers" gnodes

# gworkerd: SIGHUP applies log_level and kill_grace, the agent lives on and stays UP
cp "$TEST_DIR/orig.conf" "$conf"
printf 'kill_grace = 3s\nlog_level = debug\n' >>"$conf"
apid=$(cat "$CLUSTER_DIR/h1/gworkerd.pid")
alog=$CLUSTER_DIR/h1/gworkerd.log
kill -HUP "$apid"
areloaded() { grep -q 'reload: done' "$alog"; }
check "gworkerd logs the reload" wait_until 10 areloaded
like "$(grep 'reload:' "$alog")" "kill_grace = '3s'" "it applies kill_grace"
check "gworkerd still runs" kill -0 "$apid"
sleep 1
is "$(node_state h1)" UP "h1 stays UP"
id=$(submit -w h1 -- hostname)
check "a job still runs on h1" wait_state "$id" COMPLETED 20

done_testing
