#!/bin/bash
# gtrain-vs-ddp.sh [RANKS...] - gtrain against PyTorch DDP over gloo on gpool's network-namespace
# test hosts: the digits MLP 64-256-256-10, global batch 192, 20 epochs, AdamW lr 2e-3, the same
# split and sample order (ddp_mlp.py), one rank per host, both as gsub jobs with every CPU of
# the host (-c, so neither is pinned to one core) and one compute thread a rank. For each rank
# count (default 1 2 3 4) the two alternate REPS times (default 3) so they share the load of
# the machine. Needs root (network namespaces), the digits set (train/fetch-digits.sh) and
# Debian's python3-torch. Raw job outputs and a table: bench/results/train/<time>/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/train/lib.sh
. "$HERE/lib.sh"
RANKS=("${@:-1 2 3 4}")
read -r -a RANKS <<<"${RANKS[*]}"
[ -x "$BIN/gtrain" ] || { echo "gtrain-vs-ddp: no $BIN/gtrain (build first)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
	{ echo "gtrain-vs-ddp: no PyTorch (apt-get install python3-torch)" >&2; exit 1; }
out=$HERE/../results/train/$(date -u +%Y-%m-%dT%H%M)
mkdir -p "$out"
max=0
for n in "${RANKS[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
trainbench_up "$max"
job() { # N ARGS... -> the job's output
	local n=$1
	shift
	runuser -u gpool-user -- env PATH="$BIN:/usr/bin:/bin" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" \
		GPOOL_CONF="$GPOOL_CONF" gsub -n "$n" -N "$n" -c "$CPUS" --wait -t 10 \
		--stage digits.csv.gz --stage ddp_mlp.py "$@" 2>&1
}
{
	echo "# gtrain vs PyTorch DDP (gloo), digits 64-256-256-10, batch 192, 20 epochs, AdamW"
	echo "# $(date -u), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
	echo "# hosts: network namespaces of this machine, one rank per host, -c $CPUS, $REPS reps"
	git -C "$ROOT" log -1 --format='# commit %h %s' 2>/dev/null || true
} >"$out/header.txt"
for n in "${RANKS[@]}"; do
	for rep in $(seq 1 "$REPS"); do
		job "$n" -- gtrain --data digits.csv.gz >"$out/gtrain-n$n-r$rep.log" || true
		job "$n" -- /usr/bin/python3 ddp_mlp.py --data digits.csv.gz >"$out/ddp-n$n-r$rep.log" || true
		g=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*, \([0-9]*\) samples\/s.*/\1 \2/p' "$out/gtrain-n$n-r$rep.log")
		d=$(sed -n 's/^ddp: .*test accuracy \([0-9.]*\)%, \([0-9]*\) samples\/s.*/\1 \2/p' "$out/ddp-n$n-r$rep.log")
		echo "$n $rep gtrain ${g:-fail fail}"
		echo "$n $rep ddp ${d:-fail fail}"
	done
done | tee "$out/raw.txt"
/usr/bin/python3 - "$out/raw.txt" <<'PY' | tee "$out/table.txt"
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, rep, who, acc, sps = line.split()
    if sps != "fail":
        rows[(int(n), who)].append((float(sps), float(acc)))
print("| ranks | gtrain samples/s (median) | gtrain test acc | DDP samples/s (median) | DDP test acc | gtrain / DDP |")
print("|---|---|---|---|---|---|")
for n in sorted({k[0] for k in rows}):
    g, d = rows.get((n, "gtrain"), []), rows.get((n, "ddp"), [])
    gs = statistics.median(x[0] for x in g) if g else 0
    ds = statistics.median(x[0] for x in d) if d else 0
    ga = "/".join("%.2f%%" % x[1] for x in g) or "-"
    da = "/".join("%.2f%%" % x[1] for x in d) or "-"
    print("| %d | %.0f | %s | %.0f | %s | %s |" % (n, gs, ga, ds, da, "%.1fx" % (gs / ds) if ds else "-"))
PY
echo "results in $out"
