#!/bin/bash
# format-check.sh SRC_DIR: every C, header and CUDA file of the tree is as clang-format
# (with the tree's .clang-format) writes it, with no exceptions. Exit 0 clean, 1 with the
# files and a diff of each, 77 when clang-format is not installed.
set -u
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
command -v clang-format >/dev/null || { echo "format-check: no clang-format (deploy/install-deps.sh)"; exit 77; }
bad=0
n=0
while IFS= read -r f; do
	n=$((n + 1))
	if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "format-check: $f is not formatted (clang-format -i $f):"
		clang-format "$f" | diff "$f" - | head -20
		bad=1
	fi
done < <(find cards cli comm common kernels model proto scheduler tests tools worker bench train launch gateway serve \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -not -path '*/corpus/*' -not -path '*-fixture/*' | sort)
[ $bad = 0 ] && echo "format-check: all $n files are formatted"
exit $bad
