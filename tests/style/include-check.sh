#!/bin/bash
# include-check.sh SRC_DIR: every project #include "..." names its header by its path from the
# tree root ("common/wire.h", "scheduler/jobs.h"), the one include path of the build, so no two
# headers can shadow each other or a system header (scheduler/sched.h once hid <sched.h>).
# Allowed besides: the generated "proto/gpool.pb-c.h" (in the build root) and the installed
# public headers "gpool/<x>.h" (comm/include, kernels/include). Exit 0 clean, 1 with the lines.
set -u
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
bad=0
while IFS= read -r f; do
	while IFS=: read -r line name; do
		case $name in
		proto/gpool.pb-c.h) continue ;;
		gpool/*.h) [ -f "comm/include/$name" ] || [ -f "kernels/include/$name" ] && continue ;;
		*/*) [ -f "$name" ] && continue ;;
		esac
		# generated code includes its own header by its bare name
		[ "$f:$name" = "proto/gpool.pb-c.c:gpool.pb-c.h" ] && continue
		echo "include-check: $f:$line: #include \"$name\" is not a path from the tree root"
		bad=1
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done < <(find cards cli comm common kernels model proto scheduler tests tools worker bench train launch gateway serve \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -not -path '*/corpus/*' -not -path '*-fixture/*' | sort)
[ $bad = 0 ] && echo "include-check: every project include is a path from the tree root"
exit $bad
