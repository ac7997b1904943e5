#!/bin/bash
# lib.sh - what the training benchmarks share (sourced by gtrain-vs-ddp.sh, slow-rank.sh):
# trainbench_up N starts an N-host network-namespace cluster (stopped again when the script
# exits), puts the digits set and ddp_mlp.py in its work directory as gpool-user's and cds
# there. The caller sets HERE (its folder); this sets ROOT, BIN, REPS and CPUS (environment:
# GPOOL_BIN_DIR, REPS, CPUS).
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$ROOT/build/bin}
REPS=${REPS:-3}
CPUS=${CPUS:-$(nproc)}

trainbench_up() {
	local n=$1
	dir=${GPOOL_CLUSTER_DIR:-/tmp/gpool-cluster-trainbench}
	"$ROOT/deploy/lib-users.sh" >/dev/null
	"$ROOT/deploy/gpool-cluster" start -n "$n" --dir "$dir" --bin "$BIN" --cpus "$CPUS" --timeout 60 >/dev/null
	trap '"$ROOT/deploy/gpool-cluster" stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
	eval "$("$ROOT/deploy/gpool-cluster" env --dir "$dir")"
	work=$dir/work
	mkdir -p "$work"
	"$ROOT/train/fetch-digits.sh" "$work/digits.csv.gz" >/dev/null
	cp "$HERE/ddp_mlp.py" "$work/"
	chown -R gpool-user: "$work"
	cd "$work" || exit 1
}
