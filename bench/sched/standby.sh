#!/bin/bash
# standby.sh: a standby group's figures (docs/standby.md, docs/benchmarks.md), in one run:
# - failover: KILLS times, the leader of a 3-scheduler group killed (SIGKILL); the time until
#   another's STATE_DIR/role says leader (it has applied every earlier entry and loaded jobs.db:
#   it serves), polled every 20 ms; p50 and max. The killed one is started again and caught up
#   before the next kill.
# - throughput: N held jobs acknowledged over one connection (gp-submit-many, BATCH per
#   envelope), one scheduler vs the leader of three (each acknowledgement after a majority's
#   append), same machine, same run.
#   bench/sched/standby.sh [KILLS [N [BATCH]]]   (root: network namespaces; build first)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
CLUSTER=$SRC/deploy/gpool-cluster
KILLS=${1:-10}
N=${2:-5000}
BATCH=${3:-100}
DIR=${BENCH_DIR:-/tmp/gp-raft-bench}
[ "$(id -u)" = 0 ] || { echo "standby.sh: needs root (network namespaces)" >&2; exit 77; }
for b in gschedd gworkerd gnodes gp-submit-many; do
	[ -x "$BIN/$b" ] || { echo "standby.sh: '$BIN/$b' is not built" >&2; exit 77; }
done
trap '"$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1 || true' EXIT

now() { date +%s.%N; }
role() { cat "$DIR/$1/state/role" 2>/dev/null; }
# sK's endpoint: the K-th of the cluster's list (its addresses are its slot's: GPOOL_SLOT)
ep_of() { sed -n 's/^scheduler *= *//p' "$DIR/gpool.conf" | tr ',' '\n' | sed -n "${1#s}p" | tr -d ' '; }
db_jobs() { sqlite3 -readonly "$DIR/$1/state/jobs.db" 'SELECT count(*) FROM jobs' 2>/dev/null || echo -1; }

# ---- throughput: one scheduler, then three
"$CLUSTER" start -n 1 --dir "$DIR" --bin "$BIN" --cpus 1 >/dev/null 2>&1
one=$(GPOOL_CONF=$DIR/gpool.conf GPOOL_SCHEDULER=$("$CLUSTER" env --dir "$DIR" | sed -n 's/.*GPOOL_SCHEDULER=\([^ ]*\).*/\1/p') \
	"$BIN/gp-submit-many" "$N" "$BATCH" --hold -- /bin/true)
"$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1
"$CLUSTER" start -n 1 --dir "$DIR" --bin "$BIN" --cpus 1 --schedulers 3 --no-wait >/dev/null 2>&1
until L=$("$CLUSTER" sched-leader --dir "$DIR" 2>/dev/null); do sleep 0.1; done
three=$(GPOOL_CONF=$DIR/gpool.conf GPOOL_SCHEDULER=$(ep_of "$L") "$BIN/gp-submit-many" "$N" "$BATCH" --hold -- /bin/true)
echo "throughput, $N held jobs, $BATCH per envelope:"
echo "  1 scheduler:             $one"
echo "  3 schedulers (leader $L): $three"

# ---- failover
times=()
for i in $(seq 1 "$KILLS"); do
	until L=$("$CLUSTER" sched-leader --dir "$DIR" 2>/dev/null); do sleep 0.05; done
	"$CLUSTER" sched-kill --dir "$DIR" "$L" KILL >/dev/null 2>&1
	t0=$(now)
	new=""
	while [ -z "$new" ]; do
		for k in s1 s2 s3; do [ "$k" != "$L" ] && [ "$(role "$k")" = leader ] && new=$k; done
		[ -n "$new" ] || sleep 0.02
		awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 30) }' && { echo "no leader within 30 s" >&2; exit 1; }
	done
	t1=$(now)
	dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	times+=("$dt")
	echo "kill $i: $L killed, $new leads after $dt s"
	"$CLUSTER" sched-start --dir "$DIR" "$L" >/dev/null 2>&1
	want=$(db_jobs "$new")
	until [ "$(role "$L")" = standby ] && [ "$(db_jobs "$L")" = "$want" ]; do sleep 0.1; done
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END {
	printf "failover over %d kills: p50 %.2f s, max %.2f s\n", NR, a[int((NR + 1) / 2)], a[NR] }'
