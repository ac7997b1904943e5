#!/bin/bash
# slow-rank.sh - one slow rank among 3 (network-namespace hosts, one rank each, gsub jobs with
# every CPU of the host): rank 2 sleeps SLOW_MS (0.05) ms a row of its share after forward, as
# a PC that computes slower would (the same --throttle in gtrain and ddp_mlp.py). Step time
# (192 / samples/s) for: gtrain with equal shares (--rebalance 0), gtrain with speed-weighted
# shares (--rebalance 10), PyTorch DDP (gloo); each also without the slow rank; and gtrain's
# allreduce during backward vs after it (--no-overlap). REPS (3) alternating runs each.
# Needs root, the digits set, python3-torch. Raw outputs: bench/results/train/<time>-slow/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/train/lib.sh
. "$HERE/lib.sh"
SLOW_MS=${SLOW_MS:-0.05}
out=$HERE/../results/train/$(date -u +%Y-%m-%dT%H%M)-slow
mkdir -p "$out"
trainbench_up 3
job() {
	runuser -u gpool-user -- env PATH="$BIN:/usr/bin:/bin" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" gsub -n 3 -N 3 -c "$CPUS" --wait -t 10 \
		--stage digits.csv.gz --stage ddp_mlp.py "$@" 2>&1
}
declare -A CMD=(
	[gtrain-equal]="gtrain --data digits.csv.gz --rebalance 0"
	[gtrain-weighted]="gtrain --data digits.csv.gz --rebalance 10"
	[gtrain-no-overlap]="gtrain --data digits.csv.gz --rebalance 0 --no-overlap"
	[ddp]="/usr/bin/python3 ddp_mlp.py --data digits.csv.gz"
)
{
	echo "# one slow rank of 3 (rank 2 sleeps $SLOW_MS ms a row after forward), digits MLP, batch 192, 20 epochs"
	echo "# $(date -u), $(nproc) CPUs, hosts: network namespaces, -c $CPUS, $REPS reps"
	git -C "$ROOT" log -1 --format='# commit %h %s' 2>/dev/null || true
} >"$out/header.txt"
for rep in $(seq 1 "$REPS"); do
	for name in gtrain-equal gtrain-weighted gtrain-no-overlap ddp; do
		for slow in none "2:$SLOW_MS"; do
			extra=()
			[ "$slow" = none ] || extra=(--throttle "$slow")
			[ "$name" = gtrain-no-overlap ] && [ "$slow" != none ] && continue
			[ "$name" = gtrain-weighted ] && [ "$slow" = none ] && continue
			log=$out/$name-${slow/:/_}-r$rep.log
			# shellcheck disable=SC2086 # the command line, split on blanks
			job -- ${CMD[$name]} "${extra[@]}" >"$log" || true
			sps=$(sed -n 's/.*, \([0-9]*\) samples\/s.*/\1/p' "$log" | tail -1)
			echo "$name $slow $rep ${sps:-fail} $(grep -o 'allreduce [0-9.]* ms a step exposed, [0-9.]* ms blocking' "$log" | tr ' ' _)"
		done
	done
done | tee "$out/raw.txt"
/usr/bin/python3 - "$out/raw.txt" <<'PY' | tee "$out/table.txt"
import collections, statistics, sys
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[3] != "fail":
        r[(f[0], f[1])].append(float(f[3]))
print("| run | slow rank | samples/s (median) | step time ms |")
print("|---|---|---|---|")
for (name, slow), v in sorted(r.items()):
    m = statistics.median(v)
    print("| %s | %s | %.0f | %.2f |" % (name, "none" if slow == "none" else "rank " + slow, m, 192e3 / m))
PY
echo "results in $out"
