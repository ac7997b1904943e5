#!/bin/sh
# run.sh: build the libFuzzer harnesses (clang, GPOOL_FUZZ=ON) and run each for a while on
# a scratch corpus seeded from tests/fuzz/corpus/<name>/. Crashes land in BUILD/crashes/.
#   tests/fuzz/run.sh [SECONDS] [NAME...]      (env: BUILD_FUZZ, default build-fuzz)
# To keep what a run found: tests/fuzz/run.sh --merge NAME... (see docs/fuzzing.md).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_FUZZ:-build-fuzz}
merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
secs=${FUZZ_SECONDS:-60}
case "${1:-}" in [0-9]*) secs=$1; shift ;; esac
CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPOOL_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzzers
names=${*:-$(cd "$src/tests/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')}
mkdir -p "$build/crashes"
rc=0
for n in $names; do
	bin=$build/bin/fuzz_$n
	seeds=$src/tests/fuzz/corpus/$n
	work=$build/corpus/fuzz_$n
	mkdir -p "$work"
	if [ $merge = 1 ]; then
		# add to the saved corpus only the inputs of work that bring new coverage
		echo "== merge $n"
		"$bin" -merge=1 -max_len=4096 "$seeds" "$work"
		continue
	fi
	echo "== fuzz_$n ($secs s)"
	"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$build/crashes/$n-" -print_final_stats=1 "$work" "$seeds" || rc=1
done
exit $rc
