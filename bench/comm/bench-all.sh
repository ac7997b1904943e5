#!/bin/bash
# bench-all.sh [HOSTS...] - the side-by-side allreduce benchmark on gpool's own test hosts:
# for each host count (default 2 3 4) start a gpool cluster in network namespaces
# (deploy/gpool-cluster), run the ring ceiling, Open MPI (three ways) and gloo on its hosts,
# and gcomm-bench as a gsub job (one rank per host) — all in one run-side-by-side.sh run, so
# the ratios compare peers measured minutes apart under the same load. Needs root.
# Results: bench/results/comm/<time>-n<N>/ (compare.txt, busbw.png, every peer's rows).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$ROOT/build/bin}
[ -x "$BIN/gcomm-bench" ] || { echo "bench-all: no $BIN/gcomm-bench (build first, or set GPOOL_BIN_DIR)" >&2; exit 1; }
# CPUs per host: the hosts are network namespaces of one machine, so every host has all of
# its CPUs. A gsub task is bound to the CPUs it asks for (a cpuset, as Slurm binds), and
# with one CPU each every rank would be bound to the same first core of the machine while
# the peers run unbound: the gcomm job asks for all of them (-c) like the peers get.
CPUS=${GCB_CPUS:-$(nproc)}
make -s -C "$HERE" >/dev/null
"$ROOT/deploy/lib-users.sh" >/dev/null
for n in "${@:-2 3 4}"; do
	dir=/tmp/gpool-commbench-$n
	"$ROOT/deploy/gpool-cluster" start -n "$n" --dir "$dir" --bin "$BIN" --cpus "$CPUS" --timeout 60 >/dev/null
	eval "$("$ROOT/deploy/gpool-cluster" env --dir "$dir")"
	hosts=""
	for i in $(seq 1 "$n"); do
		hosts+="${hosts:+,}gp-h$i:$("$ROOT/deploy/gpool-cluster" exec --dir "$dir" "h$i" \
			ip -4 -o addr show | awk '$4 ~ /^198\.18\.0\./ {sub("/.*", "", $4); print $4; exit}')"
	done
	export GPOOL_SCHEDULER GPOOL_CONF BIN CPUS
	# gcomm: one gsub job, a rank per host with all its CPUs, run as the test user; rows from
	# its output
	export GCOMM_BENCH_CMD='cd /tmp && runuser -u gpool-user -- env PATH="$BIN:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" gsub -n "$GCB_NHOSTS" -N "$GCB_NHOSTS" -c "$CPUS" --wait -t 30 -- gcomm-bench --env -b "$GCB_MIN" -e "$GCB_MAX" --json /dev/null'
	rc=0
	# shellcheck disable=SC2086 # BENCH_ARGS: more driver options, split on blanks
	"$HERE/run-side-by-side.sh" --hosts "$hosts" ${BENCH_ARGS:-} || rc=$?
	"$ROOT/deploy/gpool-cluster" stop --dir "$dir" >/dev/null || true
	[ $rc = 0 ] || exit $rc
done
