#!/bin/bash
# purpose-check.sh SRC_DIR: every C, C++ and CUDA source of the tree opens with a comment, the
# line that says what the file is for (a reader who opens plan.c learns it is placement before
# reading code).
# Build folders (build*), test fixtures (*-fixture) and fuzz corpora are not the tree's own
# code. The check sees only that the first line opens a comment; that the comment says the
# purpose is the reviewer's part. Exit 0 clean, 1 with the files.
set -u
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
bad=0
n=0
while IFS= read -r f; do
	n=$((n + 1))
	IFS= read -r first <"$f" || first=
	case $first in
	/\** | //*) ;;
	*)
		echo "purpose-check: $f: the first line is not a comment saying the file's purpose"
		bad=1
		;;
	esac
done < <(find . \( -path './build*' -o -path ./.git -o -path '*-fixture' -o -path '*/corpus' \) -prune \
	-o -type f \( -name '*.c' -o -name '*.cu' -o -name '*.cc' -o -name '*.cpp' \) -print |
	sed 's|^\./||' | sort)
[ $bad = 0 ] && echo "purpose-check: all $n C, C++ and CUDA sources open with a comment"
exit $bad
