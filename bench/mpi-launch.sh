#!/bin/bash
# bench/mpi-launch.sh — how long an Open MPI job takes to start: from submission to MPI_Init
# done on every rank, for 2, 3 and 4 hosts (one rank per host), three ways:
#
#   gpool    `gsub --mpi=mpirun -n K -N K job.sh` on a netns cluster (deploy/gpool-cluster):
#            scheduling, gstepd, the exec-proxies, then mpirun with gpool-rsh (docs/mpi.md)
#   pmix     `gsub --mpi=pmix -n K -N K pmix-job.sh` on the same cluster: direct launch, every
#            rank started by its node's gstepd and wired up by gstepd's PMIx server
#   plain    Open MPI's own mpirun in host h1's namespace over the same hosts, its daemons
#            started with an `ip netns exec` agent (bench/comm/netns-rsh.sh): no scheduler
#
# The time is the latest rank's wall clock when MPI_Init returned (gp-mpi-check prints it)
# minus the wall clock just before gsub / mpirun started (one machine: one clock). Every
# run's checks (allreduce, ring) must pass. Prints one line per run and a median table.
#
#   flock /tmp/gpool-netns.lock bench/mpi-launch.sh [--reps N] [--hosts "2 3 4"] [--log FILE]
#
# Needs root (namespaces), a build (build/bin: gp-mpi-check, gpool-launch, gpool-rsh) and
# Open MPI.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
REPS=5 HOSTS_LIST="2 3 4" LOG=""
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift 2 ;;
	--hosts) HOSTS_LIST=$2; shift 2 ;;
	--log) LOG=$2; shift 2 ;;
	*) echo "usage: $0 [--reps N] [--hosts \"2 3 4\"] [--log FILE]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "mpi-launch.sh: needs root (network namespaces)" >&2; exit 77; }
for b in gp-mpi-check gpool-launch gpool-rsh gsub; do
	[ -x "$BIN/$b" ] || { echo "mpi-launch.sh: $BIN/$b is not built" >&2; exit 77; }
done
command -v mpirun >/dev/null || { echo "mpi-launch.sh: no mpirun" >&2; exit 77; }
[ -z "$LOG" ] || exec > >(tee "$LOG") 2>&1

max=0
for k in $HOSTS_LIST; do [ "$k" -gt "$max" ] && max=$k; done
# (not exported before start: its cleanup would take the marker for one of the cluster's)
GPOOL_CLUSTER_DIR=/tmp/gpool-cluster-mpibench
CL="$SRC/deploy/gpool-cluster"
"$CL" start -n "$max" --dir "$GPOOL_CLUSTER_DIR" --bin "$BIN" --cpus 2 >/tmp/mpi-bench-start.log 2>&1 ||
	{ echo "mpi-launch.sh: the cluster did not start" >&2; tail -5 /tmp/mpi-bench-start.log >&2; exit 1; }
WORK=""
trap '"$CL" stop --dir "$GPOOL_CLUSTER_DIR" >/dev/null 2>&1; [ -z "$WORK" ] || rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT
eval "$("$CL" env --dir "$GPOOL_CLUSTER_DIR")"
export GPOOL_SCHEDULER GPOOL_CONF
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" /tmp/gpool-cluster-mpibench-user) || exit 1
WORK=$(mktemp -d /tmp/gpool-mpibench.XXXXXX)
chmod 0777 "$WORK"
cd "$WORK" || exit 1
cat >job.sh <<'SH'
#!/bin/sh
exec mpirun --mca mpi_yield_when_idle 1 gp-mpi-check
SH
chmod 0755 job.sh
cat >pmix-job.sh <<'SH'
#!/bin/sh
export OMPI_MCA_mpi_yield_when_idle=1
exec gp-mpi-check
SH
chmod 0755 pmix-job.sh

echo "# mpi-launch: submission -> MPI_Init done on every rank, one rank per host, $REPS runs each"
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cpus, Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}')"
# latest init_done in FILE minus T0; "" when a rank failed its checks or is missing
launch_time() {
	local file=$1 t0=$2 k=$3
	# every rank in one world of k (a rank started as a singleton says "of 1")
	[ "$(grep -c "of $k on .*allreduce ok ring ok" "$file")" = "$k" ] || return 1
	sed -n 's/.*init_done=\([0-9.]*\).*/\1/p' "$file" | sort -n | tail -1 | awk -v t0="$t0" '{printf "%.3f\n", $1 - t0}'
}
declare -A RES
for k in $HOSTS_LIST; do
	hostfile=$WORK/hosts.$k
	: >"$hostfile"
	# the hosts' addresses in the cluster's slot (deploy/gpool-cluster's host_ip)
	for i in $(seq 1 "$k"); do echo "198.18.0.$((64 * ${GPOOL_SLOT:-0} + 10 + i)) slots=1" >>"$hostfile"; done
	for r in $(seq 1 "$REPS"); do
		t0=$(date +%s.%N)
		runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
			timeout 120 gsub --mpi=mpirun -n "$k" -N "$k" -t 2 --wait job.sh >out.g 2>&1
		if dt=$(launch_time out.g "$t0" "$k"); then
			echo "gpool $k hosts run $r: $dt s"
			RES[gpool.$k]+="$dt "
		else
			echo "gpool $k hosts run $r: FAILED"; tail -5 out.g
		fi
		t0=$(date +%s.%N)
		runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" \
			timeout 120 gsub --mpi=pmix -n "$k" -N "$k" -t 2 --wait pmix-job.sh >out.x 2>&1
		if dt=$(launch_time out.x "$t0" "$k"); then
			echo "pmix $k hosts run $r: $dt s"
			RES[pmix.$k]+="$dt "
		else
			echo "pmix $k hosts run $r: FAILED"; tail -5 out.x
		fi
		t0=$(date +%s.%N)
		# h1's namespace in the cluster's slot (deploy/gpool-cluster: gp-h1 in slot 0, gpS-h1)
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 \
			ip netns exec "gp$([ "${GPOOL_SLOT:-0}" = 0 ] || echo "${GPOOL_SLOT}")-h1" mpirun --hostfile "$hostfile" --mca plm_rsh_agent "$SRC/bench/comm/netns-rsh.sh" \
			--mca plm_rsh_no_tree_spawn 1 --mca mpi_yield_when_idle 1 -n "$k" "$BIN/gp-mpi-check" >out.p 2>&1
		if dt=$(launch_time out.p "$t0" "$k"); then
			echo "plain $k hosts run $r: $dt s"
			RES[plain.$k]+="$dt "
		else
			echo "plain $k hosts run $r: FAILED"; tail -5 out.p
		fi
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "-"}'; }
echo
echo "| hosts | gpool: gsub --mpi=pmix (median s) | gpool: gsub --mpi=mpirun (median s) | plain mpirun, ip netns exec agent (median s) |"
echo "| ---: | ---: | ---: | ---: |"
for k in $HOSTS_LIST; do
	echo "| $k | $(median <<<"${RES[pmix.$k]:-}") | $(median <<<"${RES[gpool.$k]:-}") | $(median <<<"${RES[plain.$k]:-}") |"
done
