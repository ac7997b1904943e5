#!/bin/bash
# netns-launch.sh — run one process per host (network namespace) with env:// variables.
#
#   netns-launch.sh --hosts NS:IP,NS:IP,... [--port P] [--log-dir DIR] [--grace S] -- CMD [ARGS...]
#
# Rank r runs CMD in namespace NS_r with
#   RANK=r WORLD_SIZE=n LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=IP_0 MASTER_PORT=P
#   GCB_ADDR=IP_r GCB_IFNAME=<interface holding IP_r> GLOO_SOCKET_IFNAME=<same>
# (torch.distributed's env:// initialisation; also suits a rank-0 rendezvous at
# MASTER_ADDR:MASTER_PORT). Rank 0's stdout and stderr pass through; the other ranks' go to
# DIR/rank<r>.log (default: discarded unless they fail, then their tail is shown).
# When one rank fails the others get --grace seconds (default 10) and are then killed (by pid).
# Exit status: the first failing rank's, else 0.
set -uo pipefail

PORT=29511 LOGDIR="" GRACE=10 HOSTS=()
while [ $# -gt 0 ]; do
	case $1 in
	--hosts) IFS=, read -r -a HOSTS <<<"$2"; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--log-dir) LOGDIR=$2; shift 2 ;;
	--grace) GRACE=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "netns-launch.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "netns-launch.sh: no command" >&2; exit 2; }
n=${#HOSTS[@]}
[ "$n" -ge 1 ] || { echo "netns-launch.sh: --hosts NS:IP,... required" >&2; exit 2; }

TMPLOG=""
if [ -z "$LOGDIR" ]; then
	TMPLOG=$(mktemp -d /tmp/gcb-launch.XXXXXX)
	LOGDIR=$TMPLOG
fi
mkdir -p "$LOGDIR"
master=${HOSTS[0]#*:}

declare -A RANK_OF
PIDS=()
for r in $(seq 0 $((n - 1))); do
	ns=${HOSTS[$r]%%:*} addr=${HOSTS[$r]#*:}
	ifname=$(ip -n "$ns" -o -4 addr show 2>/dev/null | awk -v a="$addr" 'index($4, a "/") == 1 { print $2; exit }')
	if [ -z "$ifname" ]; then
		echo "netns-launch.sh: no interface with $addr in namespace $ns" >&2
		for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
		exit 2
	fi
	envs=("RANK=$r" "WORLD_SIZE=$n" LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "MASTER_ADDR=$master"
		"MASTER_PORT=$PORT" "GCB_ADDR=$addr" "GCB_IFNAME=$ifname" "GLOO_SOCKET_IFNAME=$ifname")
	if [ "$r" = 0 ]; then
		ip netns exec "$ns" env "${envs[@]}" "$@" &
	else
		ip netns exec "$ns" env "${envs[@]}" "$@" >"$LOGDIR/rank$r.log" 2>&1 &
	fi
	PIDS+=($!)
	RANK_OF[$!]=$r
done

rc=0 left=$n
while [ "$left" -gt 0 ]; do
	done_pid=""
	wait -n -p done_pid "${PIDS[@]}"
	st=$?
	[ -n "$done_pid" ] || break
	left=$((left - 1))
	r=${RANK_OF[$done_pid]}
	rest=()
	for p in "${PIDS[@]}"; do [ "$p" = "$done_pid" ] || rest+=("$p"); done
	PIDS=("${rest[@]}")
	if [ "$st" != 0 ] && [ "$rc" = 0 ]; then
		rc=$st
		echo "netns-launch.sh: rank $r exited with status $st" >&2
		[ "$r" != 0 ] && tail -20 "$LOGDIR/rank$r.log" >&2
		# give the others a grace period, then kill them by pid
		(
			sleep "$GRACE"
			for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
			sleep 2
			for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
		) &
		KILLER=$!
	fi
done
[ -n "${KILLER:-}" ] && kill "$KILLER" 2>/dev/null
[ -n "$TMPLOG" ] && rm -rf "$TMPLOG"
exit "$rc"
