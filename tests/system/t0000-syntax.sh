#!/bin/bash
# t0000-syntax: every shell script of the deploy and test tooling parses (bash -n), and
# no errors from shellcheck when it is installed.
# timeout: 60
. "$(dirname "$0")/lib.sh"

scripts=("$GPOOL_SRC_DIR"/deploy/gpool-cluster "$GPOOL_SRC_DIR"/deploy/*.sh
	"$GPOOL_SRC_DIR"/tests/system/*.sh "$GPOOL_SRC_DIR"/.ci/run)
for s in "${scripts[@]}"; do
	[ -f "$s" ] || continue
	out=$(bash -n "$s" 2>&1) && ok "bash -n ${s#"$GPOOL_SRC_DIR"/}" || fail "bash -n ${s#"$GPOOL_SRC_DIR"/}" "$out"
done
if command -v shellcheck >/dev/null; then
	for s in "${scripts[@]}"; do
		[ -f "$s" ] || continue
		out=$(shellcheck -S error -s bash "$s" 2>&1) && ok "shellcheck ${s#"$GPOOL_SRC_DIR"/}" ||
			fail "shellcheck ${s#"$GPOOL_SRC_DIR"/}" "$out"
	done
else
	skip "shellcheck" "not installed"
fi
done_testing
