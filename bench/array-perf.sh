#!/bin/bash
# array-perf.sh BIN TAG: perf of a 400-task array of /bin/true on a 4-host loopback cluster
# (8 slots each): samples of gschedd, the agents and what they fork (supervisors, tasks), by
# process name (docs/benchmarks.md, "Task shells"). perf data in /tmp/array2-perf/TAG.data.
set -u
BIN=$1; TAG=$2; OUTD=/tmp/array2-perf; mkdir -p $OUTD
CL=$(cd "$(dirname "$0")/.." && pwd)/deploy/gpool-cluster
D=$(mktemp -d /var/tmp/gpool-perf-array2.XXXXXX)
$CL start -n 4 --dir $D --bin $BIN --cpus 8 --loopback --port 18791 >&2 || exit 1
eval "$($CL env --dir $D)"; export GPOOL_SCHEDULER
pids="$(cat $D/sched/gschedd.pid) $(cat $D/h*/gworkerd.pid 2>/dev/null)"
out=$(runuser -u gpool-user -- env GPOOL_SCHEDULER=$GPOOL_SCHEDULER $BIN/gsub --export=NONE --hold --array=0-399 -- /bin/true)
first=$(sed -n 's/^Submitted array job \([0-9]*\) .*/\1/p' <<<"$out")
perf record -F 499 -g -o $OUTD/$TAG.data -p "$(echo $pids | tr ' ' ',')" 2>/dev/null &
pp=$!
sleep 1
runuser -u gpool-user -- env GPOOL_SCHEDULER=$GPOOL_SCHEDULER $BIN/gpool release $first >/dev/null
while [ "$($BIN/gstat -t PD,R,CG 2>/dev/null | tail -n +2 | wc -l)" != 0 ]; do sleep 0.2; done
sleep 4
kill -INT $pp; wait $pp
$CL stop --dir $D >/dev/null 2>&1; rm -rf $D
perf script -i $OUTD/$TAG.data -F comm 2>/dev/null | sort | uniq -c | sort -rn
echo "total $(perf script -i $OUTD/$TAG.data -F comm 2>/dev/null | wc -l) samples at 499 Hz, 400 tasks"
