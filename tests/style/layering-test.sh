#!/bin/sh
# layering-test.sh SOURCE_DIR: tools/layering/layering.py on the tree itself (no include goes
# against docs/architecture.md's layers) and on a made-up tree whose every wrong include must be
# reported (tests/style/layering-fixture): a checker that found nothing would pass the first
# half alone.
set -u
src=$1
chk=$src/tools/layering/layering.py
fix=$src/tests/style/layering-fixture
python3 "$chk" "$src" || { echo "FAIL: the tree breaks its layers (above)"; exit 1; }
out=$(python3 "$chk" "$fix") && { echo "FAIL: the made-up tree passed"; exit 1; }
expect='app/a.c:3: lib/src/p.h is private to lib
app/a.c:4: lib/secret.h is private to lib
app/a.c:5: lib/q_int.h is private to lib
other/o.c:1: other may not include lib/lib.h (lib is not among the units other uses)
other/o.c:2: gpool/nobody.h is published by no unit
layering: 5 include(s) against the layers of docs/architecture.md'
if [ "$out" != "$expect" ]; then
	echo "FAIL: the made-up tree's report differs"
	echo "--- got"; echo "$out"; echo "--- expected"; echo "$expect"
	exit 1
fi
echo "ok: the tree keeps its layers; the made-up tree's 5 wrong includes reported"
