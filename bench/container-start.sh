#!/bin/bash
# container-start.sh [RUNS]: time from `gsub --container` to the task's first instruction
# (docs/containers.md; one-node netns cluster, as gpool-user), RUNS each (default 8):
#   plain     the same job without a container
#   cached    --container, the image already unpacked on the node (and its chunks there)
#   uncached  --container, the node's unpacked image and its chunk cache removed first: the
#             node fetches the archive from the scheduler's store and unpacks it
# The task's first instruction is `date +%s.%N` (the job's command itself); the figure is that
# time less the time taken just before gsub started. The image is the system tests'
# (tests/system/lib-container.sh, built once per machine). Run as root, under the system
# tests' lock:
#   flock /tmp/gpool-netns.lock bench/container-start.sh
# Prints one "MODE SECONDS" line per run, then the medians; the raw log goes to
# bench/results/container-start-<date>.log when LOG=1.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-8}
bin=${GPOOL_BIN_DIR:-$here/build/bin}
# shellcheck source=tests/system/lib-container.sh
. "$here/tests/system/lib-container.sh"
ctr_image_build || { echo "container-start: no image: $CTR_WHY" >&2; exit 1; }
dir=$(mktemp -d /tmp/gp-containers-bench.XXXXXX)
chmod 0755 "$dir"
export GPOOL_CLUSTER_STATE_SIZE=1500m
"$here/deploy/gpool-cluster" start -n 1 --dir "$dir/cluster" --bin "$bin" --timeout 60 --cpus 2 \
	>/dev/null 2>&1 || { echo "container-start: the cluster did not start" >&2; exit 1; }
trap '"$here/deploy/gpool-cluster" stop --dir "$dir/cluster" >/dev/null 2>&1; rm -rf "$dir"' EXIT
eval "$("$here/deploy/gpool-cluster" env --dir "$dir/cluster")"
mkdir -p "$dir/work"
cp "$CTR_IMAGE" "$dir/work/img.tar"
chown -R gpool-user: "$dir/work"
# the node's state directory is a tmpfs of the host's own mount namespace: act there
on_h1() { "$here/deploy/gpool-cluster" exec --dir "$dir/cluster" h1 "$@"; }
state=$dir/cluster/node/state
as_user() {
	runuser -u gpool-user -- env GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"
}
cd "$dir/work" || exit 1
# one run: MODE; prints "MODE SECONDS"
run() {
	local mode=$1 t0 out first args=()
	[ "$mode" = plain ] || args=(--container img.tar)
	if [ "$mode" = uncached ]; then
		on_h1 sh -c "rm -rf '$state'/images/u*/* '$state'/cache/*"
	fi
	t0=$(date +%s.%N)
	out=$(as_user "$bin/gsub" --wait "${args[@]}" -- date +%s.%N 2>/dev/null)
	first=$(grep -E '^[0-9]+\.[0-9]+$' <<<"$out" | head -1)
	[ -n "$first" ] || { echo "$mode FAILED"; return; }
	echo "$mode $(echo "$first - $t0" | bc)"
}
echo "# $(date -u +%FT%TZ) $(uname -r) image $(stat -c %s "$CTR_IMAGE") bytes, $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
run cached >/dev/null # the first unpack, and a warm cluster
for _ in $(seq 1 "$runs"); do
	run plain
	run cached
	run uncached
done | tee "$dir/times"
for mode in plain cached uncached; do
	printf '%s median %s s\n' $mode "$(awk -v m=$mode '$1 == m && $2 != "FAILED" {print $2}' "$dir/times" |
		sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
done
grep -h ': image ' "$dir/cluster/h1/gworkerd.log" | sed 's/^[^ ]* //' | tail -4 | sed 's/^/# /'
