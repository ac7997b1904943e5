#!/bin/bash
# funcsize-test.sh: funcsize-check.py on a made-up tree: a function of 121 lines fails, one of
# 120 passes, one named in the exceptions passes, a stale exception is a note, an exception
# without a reason fails, and tests and benchmarks are left out. Exit 0 passed, 1 failed.
set -u
check=$(cd "$(dirname "$0")" && pwd)/funcsize-check.py
tmp=$(mktemp -d /tmp/funcsize-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
# fn NAME LINES: a function whose closing brace is LINES lines below its opening one
fn() {
	printf 'static int %s(void)\n{\n' "$1"
	for ((i = 1; i < $2; i++)); do printf '\tx++;\n'; done
	printf '}\n\n'
}
mkdir -p "$tmp/tests/style" "$tmp/lib" "$tmp/lib/test" "$tmp/bench"
{ fn long 121; fn fits 120; fn kept 200; } >"$tmp/lib/a.c"
fn in_test 300 >"$tmp/lib/test/t.c"
fn in_bench 300 >"$tmp/bench/b.c"
fn in_bench_file 300 >"$tmp/lib/x_bench.c"
printf '# exceptions\nlib/a.c kept a reason\nlib/a.c gone a stale one\n' >"$tmp/tests/style/funcsize-exempt.txt"
out=$(python3 "$check" "$tmp" 2>&1)
rc=$?
expect() { grep -q -- "$1" <<<"$out" || { echo "funcsize-test: wanted '$1' in:"; echo "$out"; fail=1; }; }
reject() { ! grep -q -- "$1" <<<"$out" || { echo "funcsize-test: did not want '$1' in:"; echo "$out"; fail=1; }; }
[ $rc = 1 ] || { echo "funcsize-test: exit $rc, wanted 1"; fail=1; }
expect 'lib/a.c:1: long is 121 lines'
reject ' fits '
reject 'kept is'
reject 'in_test\|in_bench'
expect 'note: lib/a.c gone is no longer over'
printf 'lib/a.c long\n' >>"$tmp/tests/style/funcsize-exempt.txt"
out=$(python3 "$check" "$tmp" 2>&1)
[ $? = 1 ] && grep -q 'gives no reason' <<<"$out" || { echo "funcsize-test: a reasonless line passed: $out"; fail=1; }
[ $fail = 0 ] && echo "funcsize-test: passed"
exit $fail
