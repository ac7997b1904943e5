#!/bin/bash
# fairshare.sh [SECONDS]: fair-share convergence. A 2-host netns cluster (2 CPUs each), shares
# gpool-user:2, gpool-other:1 (SHARES=A:B to change them), both users flood the queue at once
# with arrays of JOBS (default 150) one-CPU `sleep 1` jobs; every 2 s for SECONDS (default 60)
# the run time each user's jobs had so far (from gstat: ended jobs whole, running ones so far).
# Run as root, under the system tests' lock:
#   flock /tmp/gpool-netns.lock bench/fairshare.sh 60
# Prints the table "T USER_S OTHER_S USER_PART TARGET" and writes it to OUT (default
# bench/results/fairshare/fairshare-<date>.txt), with an SVG plot beside it (SVG=..., default
# docs/img/fairshare-convergence.svg).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
jobs=${JOBS:-150}
shares=${SHARES:-2:1}
sa=${shares%%:*} sb=${shares##*:}
bin=${GPOOL_BIN_DIR:-$here/build/bin}
out=${OUT:-$here/bench/results/fairshare/fairshare-$(date -u +%Y%m%d-%H%M).txt}
mkdir -p "$(dirname "$out")"
svg=${SVG:-$here/docs/img/fairshare-convergence.svg}
dir=$(mktemp -d /tmp/gpool-fsbench.XXXXXX)
chmod 0755 "$dir"
"$here/deploy/gpool-cluster" start -n 2 --dir "$dir/cluster" --bin "$bin" --timeout 60 --cpus 2 \
	>/dev/null 2>&1 || { echo "fairshare: the cluster did not start" >&2; exit 1; }
trap '"$here/deploy/gpool-cluster" stop --dir "$dir/cluster" >/dev/null 2>&1; rm -rf "$dir"' EXIT
eval "$("$here/deploy/gpool-cluster" env --dir "$dir/cluster")"
printf 'fairshare_shares = gpool-user:%s,gpool-other:%s\nfairshare_half_life = 1h\n' "$sa" "$sb" \
	>>"$GPOOL_CONF"
kill -HUP "$(cat "$dir/cluster/sched/gschedd.pid")"
sleep 1
as() {
	local u=$1
	shift
	runuser -u "$u" -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"
}
cd /tmp || exit 1
a=$(as gpool-user "$bin/gsub" --parsable --array=0-$((jobs - 1)) -o /dev/null -- sleep 1)
b=$(as gpool-other "$bin/gsub" --parsable --array=0-$((jobs - 1)) -o /dev/null -- sleep 1)
t0=$(date +%s.%N)
target=$(python3 -c "print('%.4f' % ($sa / ($sa + $sb)))")
{
	echo "# fair-share convergence: shares gpool-user:$sa gpool-other:$sb, 4 CPUs (2 netns hosts x 2),"
	echo "# $jobs one-CPU 'sleep 1' jobs per user submitted at once ($(date -u +%FT%TZ), $(nproc) cores)"
	echo "# T: seconds since the submissions; USER_S, OTHER_S: run time of each user's jobs so far"
	echo "# T USER_S OTHER_S USER_PART TARGET"
	for t in $(seq 2 2 "$secs"); do
		sleep_until=$(python3 -c "print(max(0, $t0 + $t - __import__('time').time()))")
		sleep "$sleep_until"
		now=$(date +%s.%N)
		use=$("$bin/gstat" --json -a 2>/dev/null |
			python3 "$here/tests/system/fairshare_usage.py" --at "$now")
		u=$(echo "$use" | awk '$1 == "gpool-user" {print $2}')
		o=$(echo "$use" | awk '$1 == "gpool-other" {print $2}')
		python3 -c "u, o = ${u:-0}, ${o:-0}; print('%d %.1f %.1f %.4f $target' % ($t, u, o, u / max(1e-9, u + o)))"
	done
	echo "# gpool share at the end:"
	as gpool-user "$bin/gpool" share | sed 's/^/# /'
} | tee "$out"
as gpool-user "$bin/gcancel" "$a" >/dev/null 2>&1
as gpool-other "$bin/gcancel" "$b" >/dev/null 2>&1
python3 "$here/bench/fairshare_svg.py" "$out" "$svg" && echo "plot: $svg"
