#!/bin/bash
# t0020-docs: the shell examples of README.md and docs/ run as written (docs/testing.md "Docs
# that are tested"): every one is marked, run or not runnable with a reason
# (tests/docs/doctest.py check), and the runnable ones run as gpool-user against a 2-host
# cluster, each in a directory of its own, and print what their page shows.
# timeout: 300
. "$(dirname "$0")/lib.sh"
# the containers recipe: Debian's busybox-static and umoci (deploy/install-deps.sh)
for b in busybox umoci crun; do
	command -v "$b" >/dev/null || skip_all "$b is not installed (deploy/install-deps.sh)"
done
test_under_cluster 2 --cpus 4

out=$("$PY" "$GPOOL_SRC_DIR/tests/docs/doctest.py" check "$GPOOL_SRC_DIR" 2>&1)
rc=$?
diag "$out"
is "$rc" 0 "every shell example of README.md and docs/ is marked run or not runnable"
mkdir -p "$WORK/docs"
chown "$TEST_USER:" "$WORK/docs"
# the harness's own TAP lines, renumbered into this test's
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) fail "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done < <(PATH="$USER_BIN:$PATH" "$PY" "$GPOOL_SRC_DIR/tests/docs/doctest.py" run "$GPOOL_SRC_DIR" \
	"$WORK/docs" "$TEST_USER" 2>&1)
done_testing
