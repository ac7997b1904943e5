#!/bin/bash
# tidy-check.sh SRC_DIR BUILD_DIR: clang-tidy, with the tree's .clang-tidy, over every C file
# of the tree that BUILD_DIR's compile_commands.json compiles (not the generated protobuf
# code, not the CUDA sources, not the files tidy-exempt.txt names with its reason). Exit 0
# when it finds nothing, 1 with its findings, 77 when clang-tidy is not installed.
set -u
src=$1
build=$2
command -v clang-tidy >/dev/null || { echo "tidy-check: no clang-tidy (deploy/install-deps.sh)"; exit 77; }
[ -s "$build/compile_commands.json" ] || { echo "tidy-check: no $build/compile_commands.json"; exit 1; }
exempt=$src/tests/style/tidy-exempt.txt
files=$(python3 - "$src" "$build" "$exempt" <<'PYEOF'
import json, os, sys
src, build, exempt = (os.path.realpath(a) for a in sys.argv[1:])
skip = {l.split()[0] for l in open(exempt) if l.strip() and not l.startswith("#")}
seen = set()
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, src)
    if rel.startswith("..") or f.startswith(build + "/") or not f.endswith(".c") or rel in skip:
        continue
    if f not in seen:
        seen.add(f)
        print(f)
PYEOF
)
[ -n "$files" ] || { echo "tidy-check: no files"; exit 1; }
out=$(printf '%s\n' "$files" | xargs -P "$(nproc)" -n 8 clang-tidy -p "$build" --quiet 2>&1)
rc=$?
n=$(printf '%s\n' "$files" | wc -l)
if [ $rc != 0 ] || grep -q 'error:\|warning:' <<<"$out"; then
	grep -B1 -A3 'error:\|warning:' <<<"$out" | head -200
	echo "tidy-check: findings in the $n files (fix them, or see .clang-tidy)"
	exit 1
fi
echo "tidy-check: $n files clean"
