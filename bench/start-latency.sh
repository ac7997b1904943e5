#!/bin/bash
# start-latency.sh: where one job's start time goes, on a local 4-host cluster (docs/benchmarks.md).
#   M jobs one at a time on an idle cluster, each `gsub -- date +%s.%N` as gpool-user: the
#   latency is the job's first printed time minus the client's time just before gsub (as
#   bench/slurm measures Slurm), split at the scheduler's two timestamps: client -> submission
#   received (gsub's start-up, connect, MUNGE, the request), received -> launch sent (commit,
#   placement), launch sent -> the job's first instruction (agent, supervisor, exec). Beside it,
#   in the same run: gsub's own start-up (`gsub --help`: every library loaded, nothing parsed)
#   and /bin/true's, each the mean of M runs.
#   usage: bench/start-latency.sh [M]   (default 30; LOOPBACK=1 PORT=18680: hosts on 127.0.0.1)
set -euo pipefail
M=${1:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
D=$(mktemp -d "${STATE_ROOT:-/var/tmp}/gpool-bench-lat.XXXXXX")
CL="$TOP/deploy/gpool-cluster"
cleanup() { "$CL" stop --dir "$D" >/dev/null 2>&1 || true; rm -rf "$D"; }
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "start-latency: needs root" >&2; exit 1; }
"$CL" users >/dev/null
"$CL" start -n 4 --dir "$D" --bin "$BIN" --cpus 8 \
	${LOOPBACK:+--loopback --port "${PORT:-18680}"} >&2
eval "$("$CL" env --dir "$D")"
as_user() { runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" "$@"; }
mean_ms() { # mean_ms CMD...: mean wall time of M runs of CMD, in ms
	local a b
	a=$(date +%s%N)
	for _ in $(seq "$M"); do "$@" >/dev/null 2>&1 || true; done
	b=$(date +%s%N)
	echo $(((b - a) / M / 1000))
}
true_us=$(mean_ms /bin/true)
gsub_us=$(mean_ms "$BIN/gsub" --help)
: >"$D/lat"
for _ in $(seq "$M"); do
	# the client's clock is read as gpool-user right before gsub (runuser's PAM session start,
	# about 8 ms here, is not part of a submission; Slurm's side reads it right before sbatch)
	read -r tc id < <(as_user bash -c \
		'tc=$(date +%s.%N) && id=$("$0" --parsable --export=NONE -- date +%s.%N) && echo "$tc $id"' "$BIN/gsub")
	for _ in $(seq 300); do
		st=$("$BIN/gstat" -a -j "$id" -o '%T' 2>/dev/null | tail -n 1)
		[ "$st" = COMPLETED ] && break
		sleep 0.05
	done
	ts=$(as_user "$BIN/glogs" "$id" 2>/dev/null | head -n 1)
	"$BIN/gstat" -a -j "$id" --json | python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]
tc, ts = float(sys.argv[1]), float(sys.argv[2])
sub, start = float(j['submit_time']), float(j['start_time'])
print(f'{(ts - tc) * 1000:.1f} {(sub - tc) * 1000:.1f} {(start - sub) * 1000:.1f} {(ts - start) * 1000:.1f}')" "$tc" "$ts" >>"$D/lat"
done
python3 - "$D/lat" "$true_us" "$gsub_us" <<'PY'
import sys
rows = [list(map(float, x.split())) for x in open(sys.argv[1])]
def p(col, q):
    v = sorted(r[col] for r in rows)
    return v[min(len(v) - 1, max(0, int((q * len(v) + 99) // 100) - 1))]
print(f"{len(rows)} jobs one at a time: client -> job's first instruction p50 {p(0, 50):.1f} ms, "
      f"p90 {p(0, 90):.1f} ms, min {p(0, 0):.1f} ms")
print(f"  p50 of its parts: client -> received {p(1, 50):.1f} ms, received -> launch sent "
      f"{p(2, 50):.1f} ms, launch sent -> first instruction {p(3, 50):.1f} ms")
print(f"gsub start-up (gsub --help): {int(sys.argv[3]) / 1000:.1f} ms; /bin/true: {int(sys.argv[2]) / 1000:.1f} ms")
PY
