#!/bin/bash
# bundle.sh - here (Debian 12, the build done): what bench/container-gpu/run.sh needs on the
# GPU machine, which has the CUDA toolkit but none of gpool's Debian libraries, no munge and no
# crun: gpool's daemons and commands (stripped), every shared library they, crun and munged
# load except glibc's own (the machine's is newer), munge's and crun's programs, and a small
# OCI image (Debian 12's libc6 and busybox-static, with cudacheck built against the PTX of
# saxpy.cu). Writes DIR/bundle.tar.xz (DIR default .devbundle in the checkout; keep it out of
# git: .git/info/exclude), about 12 MB, which the device tool carries; run.sh unpacks it.
# Usage: bench/container-gpu/bundle.sh [DIR]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUTDIR=${1:-$TOP/.devbundle}
BIN=${GPOOL_BIN_DIR:-$TOP/build/bin}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
FINAL=$OUTDIR
OUTDIR=$(mktemp -d)
trap 'rm -rf "$OUTDIR"' EXIT
mkdir -p "$OUTDIR/bin" "$OUTDIR/lib" "$OUTDIR/sbin"
progs="gschedd gworkerd gstepd gsub gstat glogs gnodes gcancel gacct gpool gpool-image gpool-launch"
for p in $progs; do
	cp "$BIN/$p" "$OUTDIR/bin/"
	strip "$OUTDIR/bin/$p"
done
for p in munged munge unmunge crun; do cp "$(command -v $p || echo /usr/sbin/$p)" "$OUTDIR/sbin/"; done
# the shared libraries, glibc's excepted
for f in "$OUTDIR"/bin/* "$OUTDIR"/sbin/*; do ldd "$f"; done |
	awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
	grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so' |
	while read -r l; do cp -L "$l" "$OUTDIR/lib/"; done
# the image: libc6 and busybox-static from Debian, cudacheck
w=$(mktemp -d)
trap 'rm -rf "$w" "$OUTDIR"' EXIT
(cd "$w" && apt-get download libc6 busybox-static >/dev/null)
mkdir -p "$w/rootfs"
for d in "$w"/*.deb; do dpkg-deb -x "$d" "$w/rootfs"; done
mkdir -p "$w/rootfs/bin" "$w/rootfs/usr/local/bin" "$w/rootfs/proc" "$w/rootfs/sys" \
	"$w/rootfs/dev" "$w/rootfs/tmp" "$w/rootfs/etc"
# bookworm's libc6 keeps its files in /lib and /usr/lib: the merged-usr links the image needs
[ -e "$w/rootfs/lib64" ] || ln -s usr/lib64 "$w/rootfs/lib64" 2>/dev/null || true
for t in sh ls cat env id ps mount; do ln -sf busybox "$w/rootfs/bin/$t"; done
"$NVCC" -ptx -arch=compute_75 -o "$w/saxpy.ptx" "$HERE/saxpy.cu"
(cd "$w" && cp saxpy.ptx saxpy_ptx && xxd -i saxpy_ptx >saxpy_ptx.c)
gcc -O2 -Wall -Werror -o "$w/rootfs/usr/local/bin/cudacheck" "$HERE/cudacheck.c" "$w/saxpy_ptx.c" \
	-ldl -lm
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$w/rootfs/etc/passwd"
# shellcheck source=tests/system/lib-container.sh
. "$TOP/tests/system/lib-container.sh"
ctr_pack "$w/rootfs" "$OUTDIR/cudacheck.oci.tar" "gpool cudacheck image"
rm -rf "$FINAL"
mkdir -p "$FINAL"
tar -C "$OUTDIR" -cf - . | xz -T2 -6 >"$FINAL/bundle.tar.xz"
ls -la "$FINAL/bundle.tar.xz"
