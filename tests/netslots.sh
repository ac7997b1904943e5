#!/bin/sh
# netslots.sh [N [FIRST]]: a ctest resource spec file (on stdout) with N network slots
# (default 4), numbered from FIRST (default 0), and the 4 "machine" shares an exclusive system
# test takes whole (tests/CMakeLists.txt). tests/netslots.json is `netslots.sh 4`.
# Example: the slots 1-3 only, leaving slot 0 to someone running single tests by hand:
#   tests/netslots.sh 3 1 >/tmp/s.json; ctest --test-dir build -L system -j3 --resource-spec-file /tmp/s.json
set -eu
n=${1:-4}
first=${2:-0}
case $n$first in *[!0-9]*) echo "netslots.sh: usage: netslots.sh [N [FIRST]]" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] && [ $((first + n)) -le 4 ] || { echo "netslots.sh: slots are 0-3" >&2; exit 2; }
printf '{\n  "version": {"major": 1, "minor": 0},\n  "local": [\n    {\n      "netslot": [\n'
i=$first
while [ "$i" -lt $((first + n)) ]; do
	sep=,
	[ "$i" = $((first + n - 1)) ] && sep=
	printf '        {"id": "%s", "slots": 1}%s\n' "$i" "$sep"
	i=$((i + 1))
done
printf '      ],\n      "machine": [\n        {"id": "m", "slots": 4}\n      ]\n    }\n  ]\n}\n'
