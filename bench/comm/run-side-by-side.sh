#!/bin/bash
# run-side-by-side.sh — allreduce side by side on network-namespace hosts, in one go:
# the ring ceiling (iperf3, all links at once), Open MPI's MPI_Allreduce (ob1/tcp defaults;
# ob1 + mpi_yield_when_idle 1; pml ucx forced), PyTorch gloo, and gcomm-bench (a hook).
#
#   run-side-by-side.sh -n N [options]                    own test hosts gcb-h1..gcb-hN (netns.sh)
#   run-side-by-side.sh --hosts NS:IP,NS:IP,... [options] existing namespaces (e.g. gpool-cluster's
#                                                         gp-h1:198.18.0.11,gp-h2:198.18.0.12,...)
# Options:
#   --out DIR            results directory (default bench/results/comm/<UTC time>-n<N>)
#   --peers LIST         subset of ceiling,mpi-ob1,mpi-yield,mpi-ucx,gloo,gcomm (default: all)
#   --min B --max B      sizes (8, 256M), doubling
#   --iters N --warmup N --min-iters N --size-time S
#                        per size at most N timed iterations (20) after at most N warm-ups (5);
#                        big sizes get fewer: about S seconds per size (1.5), at least
#                        --min-iters (3)
#   --ceiling-time S     iperf3 seconds (10)
#   --peer-timeout S     wall-clock limit of each peer (300)
#   --net CIDR           TCP network for Open MPI (198.18.0.0/24)
#   --gcomm-cmd CMD      same as GCOMM_BENCH_CMD (below)
#   --mpi-extra "ARGS"   more mpirun arguments for every Open MPI peer (split on blanks), e.g.
#                        "-x GLIBC_TUNABLES=glibc.malloc.mmap_max=0" (see README: 32 MiB drop)
#   --keep-netns         with -n: leave gcb-h1..N up afterwards (default: torn down at the end
#                        when this run created them)
# gcomm hook: GCOMM_BENCH_CMD (or --gcomm-cmd) is a shell command run once, from the root
# namespace, with GCB_HOSTS (NS:IP,...), GCB_NHOSTS, GCB_NS, GCB_IPS, GCB_MASTER_ADDR, GCB_NET,
# GCB_MIN, GCB_MAX, GCB_ITERS, GCB_WARMUP, GCB_MIN_ITERS, GCB_SIZE_TIME, GCB_JSON (where to
# write JSON rows, optional), GCB_BENCH_DIR (this directory) and GCB_RSH_AGENT exported. It
# prints the table rows (`size_bytes count time_us algbw_GBps busbw_GBps check`) on stdout, e.g.
#   GCOMM_BENCH_CMD='$GCB_BENCH_DIR/netns-launch.sh --hosts $GCB_HOSTS -- \
#       /work/main/build/comm/gcomm-bench --min $GCB_MIN --max $GCB_MAX --json $GCB_JSON'
# Empty: gcomm is skipped, with a note.
# The ceiling is measured first and again last (ceiling-end); the table uses the higher one.
# Results: DIR/{ceiling,ceiling-end,mpi-ob1,mpi-yield,mpi-ucx,gloo,gcomm}.{txt,json,log}, run.json,
# compare.txt/.md/.json (compare.py) and busbw.png (plot.py).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
N="" HOSTS_ARG="" OUT="" PEERS="ceiling,mpi-ob1,mpi-yield,mpi-ucx,gloo,gcomm"
MIN=8 MAX=256M ITERS=20 WARMUP=5 MIN_ITERS=3 SIZE_TIME=1.5 CEIL_TIME=10 PEER_TIMEOUT=300
NET=198.18.0.0/24 KEEP=0 GCMD=${GCOMM_BENCH_CMD:-} MPI_EXTRA=""
PY=${GCB_PYTHON:-/usr/bin/python3} # Debian's python3-torch lives in Debian's interpreter

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	--hosts) HOSTS_ARG=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--peers) PEERS=$2; shift 2 ;;
	--min) MIN=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--warmup) WARMUP=$2; shift 2 ;;
	--min-iters) MIN_ITERS=$2; shift 2 ;;
	--size-time) SIZE_TIME=$2; shift 2 ;;
	--ceiling-time) CEIL_TIME=$2; shift 2 ;;
	--peer-timeout) PEER_TIMEOUT=$2; shift 2 ;;
	--net) NET=$2; shift 2 ;;
	--gcomm-cmd) GCMD=$2; shift 2 ;;
	--mpi-extra) MPI_EXTRA=$2; shift 2 ;;
	--keep-netns) KEEP=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run-side-by-side.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "run-side-by-side.sh: must run as root (ip netns exec)" >&2; exit 2; }
if [ -n "$N" ] && [ -n "$HOSTS_ARG" ]; then echo "run-side-by-side.sh: -n or --hosts, not both" >&2; exit 2; fi
if [ -z "$N" ] && [ -z "$HOSTS_ARG" ]; then usage >&2; exit 2; fi

CREATED=0
if [ -n "$N" ]; then
	missing=0
	for i in $(seq 1 "$N"); do [ -e "/run/netns/gcb-h$i" ] || missing=1; done
	[ $missing = 1 ] && CREATED=1
	"$HERE/netns.sh" up "$N" >/dev/null || { echo "run-side-by-side.sh: netns.sh up $N failed" >&2; exit 1; }
	HOSTS_ARG=$("$HERE/netns.sh" hosts "$N")
fi
IFS=, read -r -a HOSTS <<<"$HOSTS_ARG"
NH=${#HOSTS[@]}
[ "$NH" -ge 2 ] || { echo "run-side-by-side.sh: need at least 2 hosts" >&2; exit 2; }
NS=() IPS=() MAP=""
for h in "${HOSTS[@]}"; do
	ns=${h%%:*} ip=${h#*:}
	[ -e "/run/netns/$ns" ] || { echo "run-side-by-side.sh: no network namespace $ns" >&2; exit 2; }
	ip -n "$ns" -o -4 addr show | awk '{print $4}' | grep -qx "$ip/[0-9]*" ||
		{ echo "run-side-by-side.sh: $ns does not hold $ip" >&2; exit 2; }
	NS+=("$ns") IPS+=("$ip") MAP="$MAP $ip=$ns"
done

cleanup_netns() {
	if [ "$CREATED" = 1 ] && [ "$KEEP" = 0 ]; then "$HERE/netns.sh" down; fi
}
trap cleanup_netns EXIT
trap 'echo "run-side-by-side.sh: interrupted" >&2; exit 130' INT TERM

[ -n "$OUT" ] || OUT=$HERE/../results/comm/$(date -u +%Y%m%d-%H%M%S)-n$NH
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
say() { echo "$*" | tee -a "$LOG"; }
has_peer() { [[ ",$PEERS," == *",$1,"* ]]; }

if has_peer mpi-ob1 || has_peer mpi-yield || has_peer mpi-ucx; then
	make -s -C "$HERE" mpi_allreduce || { echo "run-side-by-side.sh: build of mpi_allreduce failed" >&2; exit 1; }
fi

STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
BENCH_ARGS=(--min "$MIN" --max "$MAX" --iters "$ITERS" --warmup "$WARMUP" --min-iters "$MIN_ITERS"
	--size-time "$SIZE_TIME")
say "# side by side: $NH hosts: ${HOSTS[*]}; results in $OUT"
say "# sizes $MIN..$MAX, iters<=$ITERS warmup<=$WARMUP min-iters=$MIN_ITERS size-time=${SIZE_TIME}s; $(nproc) CPUs"
/usr/bin/python3 - "$OUT/run.json" "$STARTED" "$NH" "$HOSTS_ARG" "$PEERS" "$MIN" "$MAX" "$ITERS" \
	"$WARMUP" "$MIN_ITERS" "$SIZE_TIME" "$CEIL_TIME" "$(nproc)" "$(uname -r)" "$GCMD" "$MPI_EXTRA" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, sys
a = sys.argv[1:]
json.dump({"started": a[1], "nhosts": int(a[2]), "hosts": a[3].split(","), "peers": a[4].split(","),
           "min": a[5], "max": a[6], "iters": int(a[7]), "warmup": int(a[8]), "min_iters": int(a[9]),
           "size_time_s": float(a[10]), "ceiling_time_s": float(a[11]), "cpus": int(a[12]),
           "kernel": a[13], "gcomm_bench_cmd": a[14], "mpi_extra": a[15],
           "loadavg_at_start": a[16]}, open(a[0], "w"), indent=1)
EOF

# run PEER CMD...: stdout -> PEER.txt (and the terminal), stderr -> PEER.log, wall time and load
STATUS=()
run_peer() {
	local peer=$1 t0 t1 rc
	shift
	say ""
	say "## $peer   (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "$*" >"$OUT/$peer.cmd"
	t0=$(date +%s)
	timeout -k 10 "$PEER_TIMEOUT" "$@" 2>"$OUT/$peer.log" | tee "$OUT/$peer.txt"
	rc=${PIPESTATUS[0]}
	t1=$(date +%s)
	[ $rc = 124 ] && say "!! $peer: timed out after ${PEER_TIMEOUT}s"
	[ $rc != 0 ] && { say "!! $peer: exit status $rc; stderr tail:"; tail -15 "$OUT/$peer.log" | tee -a "$LOG"; }
	say "## $peer: ${peer} took $((t1 - t0)) s, status $rc"
	STATUS+=("$peer=$rc")
	return $rc
}

if has_peer ceiling; then
	run_peer ceiling "$HERE/ring-ceiling.sh" --time "$CEIL_TIME" --json "$OUT/ceiling.json" "${HOSTS[@]}"
fi

MPI_HOSTS=$(printf '%s:1,' "${IPS[@]}")
MPI_HOSTS=${MPI_HOSTS%,}
mpi_run() { # mpi_run PEER [mca options...]
	local peer=$1
	shift
	run_peer "$peer" ip netns exec "${NS[0]}" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		GCB_NETNS_MAP="${MAP# }" \
		mpirun -np "$NH" --host "$MPI_HOSTS" --bind-to none \
		--mca plm_rsh_agent "$HERE/netns-rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include "$NET" --mca btl_tcp_if_include "$NET" --mca btl_tcp_disable_family 6 \
		$MPI_EXTRA "$@" "$HERE/mpi_allreduce" "${BENCH_ARGS[@]}" --label "$peer" --json "$OUT/$peer.json"
}
# (a) the defaults: ob1 over tcp (btl restricted to tcp,self so that no shared memory between
#     the namespaces can be used; ucx is not chosen over tcp here unless forced anyway)
has_peer mpi-ob1 && mpi_run mpi-ob1 --mca pml ob1 --mca btl tcp,self
# (b) ob1/tcp, ranks yield the CPU while waiting
has_peer mpi-yield && mpi_run mpi-yield --mca pml ob1 --mca btl tcp,self --mca mpi_yield_when_idle 1
# (c) pml ucx forced (UCX picks tcp between the namespaces: its log says ep_cfg tag(tcp/eth0))
has_peer mpi-ucx && mpi_run mpi-ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any

if has_peer gloo; then
	run_peer gloo "$HERE/netns-launch.sh" --hosts "$HOSTS_ARG" --log-dir "$OUT/gloo-ranks" -- \
		"$PY" "$HERE/gloo_allreduce.py" "${BENCH_ARGS[@]}" --label gloo --json "$OUT/gloo.json"
fi

if has_peer gcomm; then
	if [ -z "$GCMD" ]; then
		say ""
		say "## gcomm: skipped (GCOMM_BENCH_CMD is empty)"
		STATUS+=("gcomm=skipped")
	else
		export GCB_HOSTS=$HOSTS_ARG GCB_NHOSTS=$NH GCB_NS="${NS[*]}" GCB_IPS="${IPS[*]}" \
			GCB_MASTER_ADDR=${IPS[0]} GCB_NET=$NET GCB_MIN=$MIN GCB_MAX=$MAX GCB_ITERS=$ITERS \
			GCB_WARMUP=$WARMUP GCB_MIN_ITERS=$MIN_ITERS GCB_SIZE_TIME=$SIZE_TIME \
			GCB_JSON=$OUT/gcomm.json GCB_BENCH_DIR=$HERE GCB_RSH_AGENT=$HERE/netns-rsh.sh \
			GCB_NETNS_MAP="${MAP# }"
		run_peer gcomm bash -c "$GCMD"
	fi
fi

# the ceiling again at the end: the machine is shared and its load drifts; the table uses the
# higher of the two (the harder bar)
if has_peer ceiling; then
	run_peer ceiling-end "$HERE/ring-ceiling.sh" --time "$CEIL_TIME" --json "$OUT/ceiling-end.json" "${HOSTS[@]}"
fi

say ""
say "# status: ${STATUS[*]}"
"$PY" "$HERE/compare.py" "$OUT" --json "$OUT/compare.json" >"$OUT/compare.txt" &&
	"$PY" "$HERE/compare.py" "$OUT" --markdown >"$OUT/compare.md"
cat "$OUT/compare.txt" | tee -a "$LOG"
if "$PY" -c 'import matplotlib' 2>/dev/null; then
	"$PY" "$HERE/plot.py" "$OUT" -o "$OUT/busbw.png" >/dev/null && say "plot: $OUT/busbw.png"
else
	say "plot: skipped (python3-matplotlib missing)"
fi
say "results: $OUT"
