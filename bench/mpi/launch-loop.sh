#!/bin/bash
# launch-loop.sh: N `gsub --mpi=mpirun -n 3 -N 3` jobs in a row on a 3-host netns cluster
# (--cpus 2), one line per job (state, seconds, load); a job not ended after 45 s is taken for
# hung: the script prints every process of the job's user with its wait channel, its open
# files and a gdb backtrace, then the job's output, and cancels it. How the launch hang of
# docs/mpi.md ("Notes") was caught and how its fix was checked.
#   flock /tmp/gpool-netns.lock bench/mpi/launch-loop.sh [N] [MPIRUN-OPTIONS...]
set -uo pipefail
N=${1:-20}
shift || true
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${GPOOL_BIN_DIR:-$SRC/build/bin}
CL=$SRC/deploy/gpool-cluster
D=/tmp/gpool-cluster-launchloop
[ "$(id -u)" = 0 ] || { echo "launch-loop.sh: needs root (network namespaces)" >&2; exit 77; }
W=$(mktemp -d /tmp/gpool-launchloop.XXXXXX)
chmod 0777 "$W"
"$CL" start -n 3 --dir $D --bin "$BIN" --cpus 2 --node-timeout 4s --heartbeat-interval 1s >"$W/start.log" 2>&1 ||
	{ tail "$W/start.log" >&2; exit 1; }
trap '"$CL" stop --dir $D >/dev/null 2>&1; rm -rf "$W"' EXIT
trap 'exit 143' TERM INT
eval "$("$CL" env --dir $D)"
export GPOOL_SCHEDULER GPOOL_CONF
# shellcheck source=deploy/lib-users.sh
. "$SRC/deploy/lib-users.sh"
UB=$(gpool_users_bin "$BIN" "$W/user") || exit 1
cd "$W" || exit 1
cat >job.sh <<SH
#!/bin/sh
echo "script on \$(hostname)"
exec mpirun --mca mpi_yield_when_idle 1 $* gp-mpi-check
SH
chmod 0755 job.sh
u() { runuser -u gpool-user -- env PATH="$UB:$PATH" GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
state() {
	u gstat --json -a -j "$1" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])' 2>/dev/null
}
echo "# $(date -u +%FT%TZ) $N jobs, $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$N"); do
	t0=$(date +%s.%N)
	id=$(u gsub --parsable --mpi=mpirun -n 3 -N 3 -t 2 job.sh)
	st="" dl=$((SECONDS + 45))
	while [ $SECONDS -lt $dl ]; do
		st=$(state "$id")
		case $st in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) break ;; esac
		sleep 0.2
	done
	t1=$(date +%s.%N)
	echo "run $i job $id $st $(python3 -c "print('%.1f' % ($t1 - $t0))") s, load $(cut -d' ' -f1 /proc/loadavg)"
	[ "$st" = COMPLETED ] && continue
	echo "=== job $id not ended or failed: its processes"
	for p in $(pgrep -u gpool-user -f 'mpirun|orted|gp-mpi-check|gpool-rsh|gpool-launch'); do
		echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-300)"
		echo "wchan $(cat "/proc/$p/wchan") stat $(cut -d' ' -f3 "/proc/$p/stat")"
		find "/proc/$p/fd" -mindepth 1 -printf '%f -> %l  ' 2>/dev/null
		echo
		timeout 20 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null | grep -E '^#|^Thread' | head -40
	done
	u glogs "$id" 2>&1 | tail -80
	u gcancel "$id"
	sleep 3
done
