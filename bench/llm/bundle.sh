#!/bin/bash
# bundle.sh - here (Debian 12): what bench/llm/pipe-on-gpu.sh needs on the GPU machine (Ubuntu
# 24.04, the CUDA toolkit, a newer glibc and libstdc++, none of libzmq, protobuf-c, libevent or
# jansson): gllm and gllm-mkmodel (and llm-bench where the build has it), stripped, the CUDA
# kernels module built for sm_90 only (small; cudart is linked into it statically), and every
# shared library they load except glibc's own, libstdc++, libgcc_s and libcuda (the machine's
# are newer, or are its driver's). The same approach as bench/container-gpu/bundle.sh.
# Writes DIR/bundle.tar.xz (DIR default .llmbundle in the checkout, which git ignores), which
# the device tool carries (carry: [".llmbundle"]); pipe-on-gpu.sh unpacks it. Layout inside:
#   bin/     the programs          lib/        their libraries (LD_LIBRARY_PATH)
#   lib/gpool/libgpool-kernels-cuda.so   found by the loader as BIN/../lib/gpool, or through
#            GPOOL_KERNELS_DIR (kernels/loader.c)
# Then it proves the bundle here: the programs run in a chroot that holds only the bundle and
# the libraries it leaves out (so nothing of this machine's /usr/lib is found by accident).
# Usage: bench/llm/bundle.sh [DIR]      env: BUILD (default build/), JOBS (default 2)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
FINAL=${1:-$TOP/.llmbundle}
BUILD=${BUILD:-$TOP/build}
JOBS=${JOBS:-2}
MAX_MIB=60
# what the GPU machine has of its own: glibc, the compiler's runtime, the driver
LEAVE_OUT='/(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda)\.so'

log() { echo "bundle: $*" >&2; }

# the programs, built (incrementally) in BUILD; a new BUILD is configured for sm_90 and no HIP
build_programs() {
	if [ ! -f "$BUILD/CMakeCache.txt" ]; then
		log "configuring $BUILD"
		cmake -S "$TOP" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGK_WITH_HIP=OFF \
			-DGK_CUDA_ARCHS=90 >/dev/null
	fi
	local t targets=(gllm gllm-mkmodel)
	# llm-bench is a target only where bench/ adds bench/llm (else run-on-gpu.sh builds it there)
	if cmake --build "$BUILD" --target help 2>/dev/null | grep -q '\bllm-bench\b'; then
		targets+=(llm-bench)
	fi
	log "building ${targets[*]}"
	cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >/dev/null
	for t in "${targets[@]}"; do
		cp "$(find "$BUILD" -type f -name "$t" -perm -u+x | head -1)" "$WORK/bin/"
		strip "$WORK/bin/$t"
	done
}

# the CUDA module: BUILD's if it was built for sm_90 alone, else a build of kernels/ by itself
build_module() {
	local archs kdir
	archs=$(sed -n 's/^GK_CUDA_ARCHS:STRING=//p' "$BUILD/CMakeCache.txt")
	case "$archs" in
	90 | 90-real | "90;90-virtual" | "90-real;90-virtual")
		kdir=$BUILD
		;;
	*)
		kdir=$BUILD-k90
		log "the build's CUDA architectures are '${archs:-all}': building kernels/ for sm_90 in $kdir"
		[ -f "$kdir/CMakeCache.txt" ] || cmake -S "$TOP/kernels" -B "$kdir" \
			-DCMAKE_BUILD_TYPE=Release -DGK_CUDA_ARCHS=90 -DGK_WITH_HIP=OFF >/dev/null
		;;
	esac
	cmake --build "$kdir" -j"$JOBS" --target gpool-kernels-cuda >/dev/null
	local so
	so=$(find "$kdir" -name libgpool-kernels-cuda.so -type f | head -1)
	[ -n "$so" ] || { log "no libgpool-kernels-cuda.so in $kdir (no nvcc?)"; exit 1; }
	cp "$so" "$WORK/lib/gpool/"
	strip --strip-unneeded "$WORK/lib/gpool/libgpool-kernels-cuda.so"
}

# every library the programs and the module load, but those the GPU machine has of its own
copy_libraries() {
	local f l
	for f in "$WORK"/bin/* "$WORK"/lib/gpool/*.so; do ldd "$f"; done |
		awk '$2 == "=>" && $3 ~ /^\// {print $3} $2 == "=>" && $3 == "not" {print "MISSING " $1}' |
		sort -u >"$WORK/needed"
	if grep -q '^MISSING' "$WORK/needed"; then
		log "libraries not found here: $(grep '^MISSING' "$WORK/needed" | tr '\n' ' ')"
		exit 1
	fi
	grep -Ev "$LEAVE_OUT" "$WORK/needed" | while read -r l; do cp -L "$l" "$WORK/lib/"; done
	grep -E "$LEAVE_OUT" "$WORK/needed" >"$WORK/left-out"
	rm -f "$WORK/needed"
}

# the proof: a chroot with the bundle and only the left-out libraries runs gllm-mkmodel and
# gllm on the cpu, and finds the CUDA module. /dev and /proc are mounted in a mount namespace of
# its own, so that they go with it (never under a folder that rm -rf later empties).
check_bundle() {
	local root=$1 l out
	mkdir -p "$root/opt" "$root/lib64" "$root/usr/lib/x86_64-linux-gnu" "$root/tmp" "$root/dev" \
		"$root/proc" "$root/bin"
	tar -C "$root/opt" -xJf "$FINAL/bundle.tar.xz"
	while read -r l; do cp -L "$l" "$root/usr/lib/x86_64-linux-gnu/"; done <"$root/opt/left-out"
	cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
	cp /bin/busybox "$root/bin/sh" 2>/dev/null || cp "$(command -v dash)" "$root/bin/sh"
	# shellcheck disable=SC2016 # $0 is the inner shell's
	out=$(env -i LD_LIBRARY_PATH=/opt/lib PATH=/usr/sbin:/usr/bin:/sbin:/bin unshare -m /bin/sh -c '
		mount --bind /dev "$0/dev" && mount -t proc proc "$0/proc" || exit 9
		exec chroot "$0" /bin/sh -c "
		/opt/bin/gllm-mkmodel --shape test-llama --type f32 --seed 3 /tmp/m.gguf 2>&1 &&
		/opt/bin/gllm run /tmp/m.gguf --backend cpu --ctx 64 -p hello -n 4 --temp 0 2>&1
		echo run rc=\$?
		/opt/bin/gllm run /tmp/m.gguf --backend cuda --ctx 64 -p hi -n 1 2>&1"' "$root" 2>&1) ||
		true
	echo "$out" | sed 's/^/bundle: chroot: /' >&2
	echo "$out" | grep -q 'run rc=0' || { log "gllm does not run from the bundle alone"; return 1; }
	# no driver here: the module must be found (and fail for want of libcuda), not go unfound
	if echo "$out" | grep -q 'not built or not found'; then
		log "the loader does not find the CUDA module in the bundle"
		return 1
	fi
	log "checked: gllm runs in a chroot of the bundle and glibc, libstdc++, libgcc_s alone"
}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin" "$WORK/lib/gpool"
build_programs
build_module
copy_libraries
rm -rf "$FINAL"
mkdir -p "$FINAL"
tar -C "$WORK" -cf - . | xz -T"$JOBS" -6 >"$FINAL/bundle.tar.xz"
size=$(stat -c %s "$FINAL/bundle.tar.xz")
log "$(du -sh "$WORK" | cut -f1) unpacked, $((size / 1024)) KiB packed: $(ls "$WORK/bin" | tr '\n' ' ')"
log "libraries: $(ls "$WORK/lib" | tr '\n' ' ')"
[ "$size" -lt $((MAX_MIB << 20)) ] || { log "over $MAX_MIB MiB"; exit 1; }
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
	root=$(mktemp -d)
	trap 'rm -rf "$WORK" "$root"' EXIT
	check_bundle "$root"
else
	log "not root: the chroot check is skipped"
fi
