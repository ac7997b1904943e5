#!/bin/bash
# install-test.sh BUILD_DIR: install the tree's build into a scratch prefix (cmake --install)
# and build tests/install/outside.c there as a program outside the tree would: with the
# compiler and `pkg-config --cflags --libs gpool-comm gpool-kernels` only, then run it.
# Fails when a header, a library or a .pc file is missing or wrong, and when the install writes
# anywhere outside DESTDIR (the packages' /etc files included: they are absolute destinations).
set -eu
build=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gpool-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
outside=$(grep -E '^-- (Installing|Up-to-date): ' "$tmp/install.log" | grep -v -- ": $root/" || true)
if [ -n "$outside" ]; then
	echo "install-test: installed outside DESTDIR:" >&2
	echo "$outside" >&2
	exit 1
fi
[ -f "$root/etc/gpool/gpool.conf" ] || { echo "install-test: no /etc/gpool/gpool.conf under DESTDIR" >&2; exit 1; }
pc=$(find "$root" -name gpool-comm.pc -printf '%h\n' | head -1)
[ -n "$pc" ] || { echo "install-test: no gpool-comm.pc installed" >&2; cat "$tmp/install.log"; exit 1; }
export PKG_CONFIG_PATH=$pc # relocatable: the .pc files find their prefix from where they are
flags=$(pkg-config --cflags --libs gpool-comm gpool-kernels)
echo "install-test: cc outside.c $flags"
cp "$src/outside.c" "$tmp/"
# shellcheck disable=SC2086 # the flags are words
(cd "$tmp" && cc -std=c11 -Wall -Wextra -Werror -o outside outside.c $flags)
libdir=$(pkg-config --variable=libdir gpool-comm)
port=$((20000 + RANDOM % 20000))
LD_LIBRARY_PATH=$libdir "$tmp/outside" "tcp://127.0.0.1:$port"
