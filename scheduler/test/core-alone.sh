#!/bin/sh
# core-alone.sh ARCHIVE ALLOWED: fail when gschedd's core (ARCHIVE, libgschedd_core.a) calls a
# symbol that neither the archive defines nor ALLOWED (scheduler/test/core-allowed.txt) lists:
# the core does no I/O and needs nothing but gpool_base, gpool_msg and the protocol's code
# (docs/architecture.md, "Inside gschedd"). ctest style.sched_core runs it.
set -eu
archive=$1
allowed=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -g --defined-only "$archive" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/defined"
nm -u "$archive" | awk '$1 == "U" { print $2 }' | sort -u >"$tmp/undefined"
comm -23 "$tmp/undefined" "$tmp/defined" >"$tmp/calls"
bad=0
while read -r sym; do
	ok=0
	while read -r pat; do
		case $pat in '' | '#'*) continue ;; esac
		# shellcheck disable=SC2254
		case $sym in $pat) ok=1 && break ;; esac
	done <"$allowed"
	if [ $ok = 0 ]; then
		echo "core-alone: gschedd's core calls '$sym', which $allowed does not allow"
		bad=1
	fi
done <"$tmp/calls"
[ $bad = 0 ] && echo "core-alone: $(wc -l <"$tmp/calls") outside calls, all allowed"
exit $bad
