#!/bin/bash
# container-start.sh [RUNS]: time from `gsub --container` to the task's first instruction
# (docs/containers.md; one-node netns cluster, as gpool-user), RUNS each (default 8):
#   plain     the same job without a container
#   cached    --container, the image already unpacked on the node (and its chunks there)
#   uncached  --container, the node's unpacked image and its chunk cache removed first: the
#             node fetches the archive from the scheduler's store and unpacks it
#   registry-first   --container 198.18.0.1:5000/gpool/minbase:1 from a docker-registry the
#             script starts on the bridge, the node's pulled and unpacked images removed first:
#             the tag resolved, the image pulled with skopeo, unpacked
#   registry-cached  the same name, the image pulled and unpacked on the node already (the
#             tag is resolved again: one manifest request)
# (the registry modes run when docker-registry and skopeo are installed)
# The task's first instruction is `date +%s.%N` (the job's command itself); the figure is that
# time less the time taken just before gsub started. The image is the system tests'
# (tests/system/lib-container.sh, built once per machine). Run as root, under the system
# tests' lock:
#   flock /tmp/gpool-netns.lock bench/container-start.sh
# Prints one "MODE SECONDS" line per run, then the medians; the raw log goes to
# bench/results/containers/container-start-<date>.log when LOG=1.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-8}
bin=${GPOOL_BIN_DIR:-$here/build/bin}
# shellcheck source=tests/system/lib-container.sh
. "$here/tests/system/lib-container.sh"
ctr_image_build || { echo "container-start: no image: $CTR_WHY" >&2; exit 77; }
dir=$(mktemp -d /tmp/gp-containers-bench.XXXXXX)
chmod 0755 "$dir"
export GPOOL_CLUSTER_STATE_SIZE=1500m
# the bridge's address in the cluster's slot (deploy/gpool-cluster: .1 in slot 0, .64*S+1)
REG=198.18.0.$((64 * ${GPOOL_SLOT:-0} + 1)):5000
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG"
"$here/deploy/gpool-cluster" start -n 1 --dir "$dir/cluster" --bin "$bin" --timeout 60 --cpus 2 \
	>/dev/null 2>&1 || { echo "container-start: the cluster did not start" >&2; exit 1; }
regpid=
trap '[ -z "$regpid" ] || kill $regpid; "$here/deploy/gpool-cluster" stop --dir "$dir/cluster" >/dev/null 2>&1; rm -rf "$dir"' EXIT
modes="plain cached uncached"
if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
	mkdir -p "$dir/registry"
	printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n' \
		"$dir/registry/data" "$REG" >"$dir/registry/config.yml"
	docker-registry serve "$dir/registry/config.yml" >"$dir/registry/log" 2>&1 &
	regpid=$!
	for _ in $(seq 50); do curl -sf "http://$REG/v2/" >/dev/null && break; sleep 0.2; done
	skopeo copy --insecure-policy --quiet --dest-tls-verify=false "oci-archive:$CTR_IMAGE" \
		"docker://$REG/gpool/minbase:1" && modes="$modes registry-first registry-cached"
fi
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
	case $mode in
	plain) ;;
	registry-*) args=(--container "$REG/gpool/minbase:1") ;;
	*) args=(--container img.tar) ;;
	esac
	if [ "$mode" = uncached ]; then
		on_h1 sh -c "rm -rf '$state'/images/u*/* '$state'/cache/*"
	fi
	if [ "$mode" = registry-first ]; then
		# the registry image's entry only: the archive's (its key in archive_key) stays cached
		on_h1 sh -c "for e in '$state'/images/u*/*; do [ \"\${e##*/}\" = '$archive_key' ] || rm -rf \"\$e\"; done; rm -f '$state'/images/pulled/*.tar"
	fi
	t0=$(date +%s.%N)
	out=$(as_user "$bin/gsub" --wait "${args[@]}" -- date +%s.%N 2>/dev/null)
	first=$(grep -E '^[0-9]+\.[0-9]+$' <<<"$out" | head -1)
	[ -n "$first" ] || { echo "$mode FAILED"; return; }
	echo "$mode $(echo "$first - $t0" | bc)"
}
echo "# $(date -u +%FT%TZ) $(uname -r) image $(stat -c %s "$CTR_IMAGE") bytes, $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
run cached >/dev/null # the first unpack, and a warm cluster
archive_key=$(on_h1 sh -c "ls '$state'/images/u*/ | grep -v '^tmp' | head -1")
for _ in $(seq 1 "$runs"); do
	for mode in $modes; do
		run "$mode"
	done
done | tee "$dir/times"
for mode in $modes; do
	printf '%s median %s s\n' "$mode" "$(awk -v m="$mode" '$1 == m && $2 != "FAILED" {print $2}' "$dir/times" |
		sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
done
grep -h ': image ' "$dir/cluster/h1/gworkerd.log" | sed 's/^[^ ]* //' | tail -8 | sed 's/^/# /'
