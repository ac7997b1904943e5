#!/bin/bash
# t0000-syntax: every shell script of the tree parses (bash -n) and shellcheck finds no
# warning in it.
# timeout: 300
. "$(dirname "$0")/lib.sh"

# every shell script of the tree: *.sh and the files that start with a bash or sh #! line
# (the fuzz corpora are data, not scripts)
scripts=()
while IFS= read -r -d '' f; do
	case $f in
	*.sh) scripts+=("$f") ;;
	*) head -n 1 "$f" 2>/dev/null | grep -Eq '^#!.*(/|env )(ba)?sh( |$)' && scripts+=("$f") ;;
	esac
done < <(find "$GPOOL_SRC_DIR" \( -name .git -o -name 'build*' -o -name corpus \) -prune -o \
	-type f -not -name '*.[ch]' -not -name '*.md' -not -name '*.py' -print0 | sort -z)
for s in "${scripts[@]}"; do
	out=$(bash -n "$s" 2>&1) && ok "bash -n ${s#"$GPOOL_SRC_DIR"/}" || fail "bash -n ${s#"$GPOOL_SRC_DIR"/}" "$out"
done
# deploy/install-deps.sh installs shellcheck: without it this test fails, it does not skip.
# The scripts' "shellcheck source=" lines name paths from the top of the tree, and shellcheck
# reads them from its working directory: run it there, whatever directory ctest runs in.
if command -v shellcheck >/dev/null; then
	for s in "${scripts[@]}"; do
		out=$(cd "$GPOOL_SRC_DIR" && shellcheck -S warning -x "$s" 2>&1) && ok "shellcheck ${s#"$GPOOL_SRC_DIR"/}" ||
			fail "shellcheck ${s#"$GPOOL_SRC_DIR"/}" "$out"
	done
else
	fail "shellcheck is installed (deploy/install-deps.sh)"
fi
done_testing
