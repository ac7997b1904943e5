#!/bin/sh
# fetch-digits.sh [DEST]: the handwritten-digits set (1,797 8x8 images, 64 features + label a
# row, gzip'd CSV) out of Debian's python3-sklearn package, without installing it and without
# Python: `apt-get download` fetches the .deb into a temporary directory and only
# sklearn/datasets/data/digits.csv.gz is unpacked from it. DEST defaults to
# ./digits.csv.gz; an existing DEST is kept. Exit 0 with DEST in place, 1 with the reason.
set -eu
dest=${1:-digits.csv.gz}
if [ -s "$dest" ]; then
	echo "fetch-digits: $dest already present"
	exit 0
fi
for tool in apt-get dpkg-deb tar; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "fetch-digits: '$tool' not found: this script needs Debian's apt-get and dpkg-deb" >&2
		exit 1
	}
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; _apt must be able to write there
chmod 0777 "$tmp"
if ! (cd "$tmp" && apt-get download python3-sklearn >"$tmp/apt.log" 2>&1); then
	echo "fetch-digits: 'apt-get download python3-sklearn' failed (no package lists? run apt-get update):" >&2
	sed 's/^/  /' "$tmp/apt.log" >&2
	exit 1
fi
deb=$(find "$tmp" -maxdepth 1 -name 'python3-sklearn_*.deb' | head -n 1)
[ -n "$deb" ] || {
	echo "fetch-digits: apt-get download left no python3-sklearn .deb" >&2
	exit 1
}
(cd "$tmp" && dpkg-deb --fsys-tarfile "$deb" | tar -x --wildcards '*digits.csv.gz')
src=$(find "$tmp" -name digits.csv.gz -path '*sklearn/datasets/data/*' | head -n 1)
if [ -z "$src" ] || [ ! -s "$src" ]; then
	echo "fetch-digits: $deb holds no sklearn/datasets/data/digits.csv.gz" >&2
	exit 1
fi
cp "$src" "$dest.tmp.$$" && mv "$dest.tmp.$$" "$dest"
echo "fetch-digits: $dest ($(wc -c <"$dest") bytes) from $(basename "$deb")"
