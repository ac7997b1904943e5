#!/bin/bash
# gcomm-on-hosts.sh N MIN MAX [VAR=VALUE...] - gcomm-bench straight on test hosts gcb-h1..gcb-hN
# (network namespaces, netns.sh), one rank per host, unbound, without a gpool cluster: for A/B
# runs of libgcomm's settings (e.g. GCOMM_ALGO=ring2, GCOMM_SPIN=0). Prints gcomm-bench's rows
# and each rank's CPU time. Needs root; leaves the hosts up (netns.sh down removes them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${GPOOL_BIN_DIR:-$HERE/../../build/bin}
[ $# -ge 3 ] || { echo "usage: $0 N MIN MAX [VAR=VALUE...]" >&2; exit 2; }
n=$1 min=$2 max=$3
shift 3
"$HERE/netns.sh" up "$n" >/dev/null
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
env "$@" "$HERE/netns-launch.sh" --hosts "$("$HERE/netns.sh" hosts "$n")" --log-dir "$logs" -- \
	/usr/bin/time -f "rank cpu: user %U s, sys %S s, wall %e s" \
	"$BIN/gcomm-bench" --env -b "$min" -e "$max" --iters 10 --warmup 3
cat "$logs"/rank*.log 2>/dev/null | grep "rank cpu" || true
