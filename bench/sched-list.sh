#!/bin/bash
# sched-list.sh [RUNS]: what a list of schedulers costs a command (docs/protocol.md, "A list of
# schedulers"). One gschedd on loopback (no agents, no namespaces: no lock needed) and gp-standby
# (a standby's answers: ERROR_NOT_LEADER naming that gschedd); `gstat` timed RUNS times (default
# 30) with GPOOL_SCHEDULER set to: the leader alone; the standby, then the leader; a port where
# nobody listens, the standby, the leader; and (5 runs) an unreachable test-net host, then the
# leader (only while the system tests' bridge gpbr0 exists). Prints one line per case: p50, min and max in ms.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-30}
bin=${GPOOL_BIN_DIR:-$here/build/bin}
for b in gschedd gstat gp-standby; do
	[ -x "$bin/$b" ] || { echo "sched-list: no $bin/$b (build first)" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/gp-schedlist-bench.XXXXXX)
port=$((30000 + RANDOM % 5000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q . ||
	ss -ltnH "sport = :$((port + 1))" 2>/dev/null | grep -q . ||
	ss -ltnH "sport = :$((port + 2))" 2>/dev/null | grep -q .; do port=$((port + 3)); done
L=tcp://127.0.0.1:$port S=tcp://127.0.0.1:$((port + 1)) X=tcp://127.0.0.1:$((port + 2))
printf 'scheduler = %s\nsched_uid = %s\nagent_uid = %s\n' "$L" "$(id -u)" "$(id -u)" >"$dir/gpool.conf"
mkdir -p "$dir/state"
"$bin/gschedd" --config "$dir/gpool.conf" --listen "$L" --state-dir "$dir/state" >"$dir/gschedd.log" 2>&1 &
sched=$!
"$bin/gp-standby" "$S" "$L" >"$dir/standby.log" 2>&1 &
standby=$!
trap 'kill $sched $standby 2>/dev/null; wait $sched $standby 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 50); do GPOOL_CONF=$dir/gpool.conf "$bin/gstat" >/dev/null 2>&1 && break; sleep 0.1; done
timeit() {
	/usr/bin/python3 - "$dir/gpool.conf" "$bin/gstat" "$@" <<'PYEOF'
import os, statistics, subprocess, sys, time
conf, gstat, n, label, sched = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
ts = []
for _ in range(n):
    env = dict(os.environ, GPOOL_CONF=conf, GPOOL_SCHEDULER=sched)
    t = time.monotonic()
    r = subprocess.run([gstat], env=env, capture_output=True)
    ts.append((time.monotonic() - t) * 1000)
    if r.returncode:
        sys.exit(f"sched-list: gstat failed: {r.stderr.decode()}")
ts.sort()
print(f"{label:34s} n={n:3d} p50 {statistics.median(ts):8.1f} ms  min {ts[0]:8.1f}  max {ts[-1]:8.1f}")
PYEOF
}
timeit "$runs" "leader" "$L"
timeit "$runs" "standby, leader" "$S,$L"
timeit "$runs" "refused, standby, leader" "$X,$S,$L"
# a test-net host nobody holds, reached over the system tests' bridge only
if ip link show gpbr0 >/dev/null 2>&1; then
	timeit 5 "unreachable host, leader" "tcp://198.18.0.250:7820,$L"
else
	echo "unreachable host, leader: skipped (no gpbr0 bridge: start a netns cluster)"
fi
