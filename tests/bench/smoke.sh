#!/bin/bash
# smoke.sh NAME REGEX COMMAND...: one of gpool's benchmark scripts run with a tiny N, so that a
# benchmark broken by a change fails CI instead of the next person who measures (issue 40). The
# script must exit 0 and print a line matching REGEX (the line of its figure: a script that ends
# early prints none). The figure itself is not judged: speed is measured in bench/, not here.
# ctest gives the network slot (CTEST_RESOURCE_GROUP_0_NETSLOT), as tests/system/lib.sh reads it;
# by hand: GPOOL_SLOT=1 tests/bench/smoke.sh ... Exit 0 passed, 1 failed, 77 skipped.
set -u
name=$1 regex=$2
shift 2
SRC=${GPOOL_SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export GPOOL_BIN_DIR=${GPOOL_BIN_DIR:-$SRC/build/bin}
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP $name: needs root (network namespaces, test users)"; exit 77; }
alloc=${CTEST_RESOURCE_GROUP_0_NETSLOT:-}
if [ -n "$alloc" ]; then
	alloc=${alloc#id:}
	export GPOOL_SLOT=${alloc%%,*}
fi
export GPOOL_SLOT=${GPOOL_SLOT:-0}
# the script's state and raw samples (STATE_ROOT, BENCH_DIR: kept by a run by hand, for reading)
# in a directory of this run's, removed after it
work=$(mktemp -d /var/tmp/gpool-bench-smoke.XXXXXX)
chmod 0755 "$work"
export STATE_ROOT=$work BENCH_DIR=$work/cluster
out=$work/output
trap 'rm -rf "$work"' EXIT
cd "$SRC" || exit 1
start=$(date +%s.%N)
"$@" >"$out" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "# $name (slot $GPOOL_SLOT): $* -> exit $rc in $took s"
if [ "$rc" = 77 ]; then
	echo "1..0 # SKIP $name: $(tail -n 1 "$out")"
	exit 77
fi
fail=0
if [ "$rc" = 0 ]; then echo "ok 1 - $name exits 0"; else echo "not ok 1 - $name exits 0 (got $rc)"; fail=1; fi
if grep -Eq -- "$regex" "$out"; then
	echo "ok 2 - $name prints its figure: $(grep -Em1 -- "$regex" "$out" | cut -c1-160)"
else
	echo "not ok 2 - $name prints a line matching /$regex/"
	fail=1
fi
echo "1..2"
[ "$fail" = 0 ] || { echo "# ---- its output (last 30 lines)"; tail -n 30 "$out" | sed 's/^/# /'; }
exit "$fail"
