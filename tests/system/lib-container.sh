#!/bin/bash
# shellcheck disable=SC2034 # CTR_WHY and CTR_ROOTFS are read by the tests that source this file
# lib-container.sh: the test image of the container tests (docs/containers.md), built here with
# debootstrap --variant=minbase from apt's configured Debian mirror (and python3-minimal),
# once per machine, and packed
# as an OCI image archive (oci-layout, index.json, blobs/sha256/: one gzip layer, an image
# config, a manifest) by hand, so no registry and no podman are needed.
#
#   . tests/system/lib-container.sh
#   ctr_image_build || skip "..."   # sets CTR_IMAGE (the archive) and CTR_ROOTFS
#
# The cache (GPOOL_TEST_IMAGES, default /var/cache/gpool-test-images) keeps the rootfs and the
# archive; a build holds a lock so parallel tests build it once.

CTR_CACHE=${GPOOL_TEST_IMAGES:-/var/cache/gpool-test-images}
CTR_ROOTFS=$CTR_CACHE/minbase/rootfs
CTR_IMAGE=$CTR_CACHE/minbase-py.oci.tar
CTR_WHY=

# Pack rootfs directory $1 as an OCI archive $2 (marker file /etc/gpool-test-image: $3).
ctr_pack() {
	local rootfs=$1 out=$2 marker=$3 w
	w=$(mktemp -d) || return 1
	mkdir -p "$w/blobs/sha256"
	printf '%s\n' "$marker" >"$rootfs/etc/gpool-test-image" || return 1
	tar -C "$rootfs" --numeric-owner -cf - . | gzip -1 >"$w/layer.tar.gz" || return 1
	local diff lsha lsize csha csize msha msize
	diff=$(gzip -dc "$w/layer.tar.gz" | sha256sum | cut -d' ' -f1)
	lsha=$(sha256sum <"$w/layer.tar.gz" | cut -d' ' -f1)
	lsize=$(stat -c %s "$w/layer.tar.gz")
	mv "$w/layer.tar.gz" "$w/blobs/sha256/$lsha"
	printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["/bin/bash"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$diff" >"$w/config.json"
	csha=$(sha256sum <"$w/config.json" | cut -d' ' -f1)
	csize=$(stat -c %s "$w/config.json")
	mv "$w/config.json" "$w/blobs/sha256/$csha"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$csha" "$csize" "$lsha" "$lsize" >"$w/manifest.json"
	msha=$(sha256sum <"$w/manifest.json" | cut -d' ' -f1)
	msize=$(stat -c %s "$w/manifest.json")
	mv "$w/manifest.json" "$w/blobs/sha256/$msha"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s}]}' \
		"$msha" "$msize" >"$w/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
	tar -C "$w" --numeric-owner --owner=0 --group=0 -cf "$out.tmp" oci-layout index.json blobs &&
		mv "$out.tmp" "$out"
	local rc=$?
	rm -rf "$w"
	return $rc
}

# Build (or find) the minbase image (with python3-minimal, which the 3-host test's ranks use to
# meet over TCP). 0 with CTR_IMAGE set, 1 with CTR_WHY.
ctr_image_build() {
	[ -s "$CTR_IMAGE" ] && return 0
	if ! command -v debootstrap >/dev/null; then
		CTR_WHY="debootstrap is not installed"
		return 1
	fi
	mkdir -p "$CTR_CACHE" || { CTR_WHY="cannot make $CTR_CACHE"; return 1; }
	(
		flock 9
		[ -s "$CTR_IMAGE" ] && exit 0
		local mirror log=$CTR_CACHE/minbase/debootstrap.log
		mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
		[ -n "$mirror" ] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
		[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
		# a finished debootstrap is kept: only the steps after it run again
		if ! grep -q "Base system installed successfully" "$log" 2>/dev/null; then
			rm -rf "$CTR_CACHE/minbase"
			mkdir -p "$CTR_CACHE/minbase"
			debootstrap --variant=minbase bookworm "$CTR_ROOTFS" "$mirror" >"$log" 2>&1 || exit 1
		fi
		if [ ! -x "$CTR_ROOTFS/usr/bin/python3" ]; then
			cp /etc/resolv.conf "$CTR_ROOTFS/etc/resolv.conf" 2>/dev/null
			chroot "$CTR_ROOTFS" apt-get update >>"$log" 2>&1 &&
				chroot "$CTR_ROOTFS" apt-get install -y --no-install-recommends python3-minimal \
				>>"$log" 2>&1 || exit 1
		fi
		rm -rf "$CTR_ROOTFS/var/cache/apt/archives/"*.deb "$CTR_ROOTFS/var/lib/apt/lists/"*
		ctr_pack "$CTR_ROOTFS" "$CTR_IMAGE" "gpool minbase test image"
	) 9>"$CTR_CACHE/.lock"
	if [ ! -s "$CTR_IMAGE" ]; then
		CTR_WHY="debootstrap could not build the test image (see $CTR_CACHE/minbase/debootstrap.log)"
		return 1
	fi
	return 0
}

# ---- a registry on the LAN (t1323, t1324) --------------------------------------------------
# ctr_need [registry]: skip the test (77, saying why) unless it runs as root with crun, and
# with skopeo and docker-registry too when "registry" is given.
ctr_need() {
	need_root
	local p
	for p in crun ${1:+skopeo docker-registry}; do
		command -v "$p" >/dev/null || skip_all "$p is not installed (deploy/install-deps.sh installs it)"
	done
}

# reg_start ADDR DIR [HTPASSWD]: Debian's docker-registry (the distribution registry) serving
# plain HTTP on ADDR, its storage and log in DIR (log: DIR/log), asking for a login of the
# HTPASSWD file (bcrypt) when given; stopped by the test's cleanup. 0, or 1 with CTR_WHY.
reg_start() {
	local addr=$1 dir=$2 htpasswd=${3:-}
	command -v docker-registry >/dev/null || { CTR_WHY="docker-registry is not installed (deploy/install-deps.sh installs it)"; return 1; }
	command -v skopeo >/dev/null || { CTR_WHY="skopeo is not installed (deploy/install-deps.sh installs it)"; return 1; }
	mkdir -p "$dir/data"
	cat >"$dir/config.yml" <<YML
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: $dir/data
http:
  addr: $addr
YML
	[ -z "$htpasswd" ] || printf 'auth:\n  htpasswd:\n    realm: gpool-test\n    path: %s\n' \
		"$htpasswd" >>"$dir/config.yml"
	docker-registry serve "$dir/config.yml" >>"$dir/log" 2>&1 &
	local pid=$!
	at_cleanup "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	local i
	for i in $(seq 50); do
		# 200, or 401 from one that wants a login
		case $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/") in 200 | 401) return 0 ;; esac
		sleep 0.2
	done
	CTR_WHY="docker-registry did not answer on $addr (see $dir/log)"
	return 1
}

# reg_push ARCHIVE ADDR/NAME:TAG: push an OCI archive to the registry (plain HTTP).
reg_push() {
	skopeo copy --insecure-policy --quiet --dest-tls-verify=false "oci-archive:$1" "docker://$2"
}

# reg_layer ADDR/NAME:TAG: the digest (hex) of the image's first layer.
reg_layer() {
	skopeo inspect --raw --tls-verify=false "docker://$1" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"][7:])'
}

# reg_blob_gets LOG HEX [REMOTE]: how many GETs of blob sha256:HEX the registry answered (from
# address REMOTE only, when given).
reg_blob_gets() {
	grep 'msg="response completed"' "$1" | grep 'http.request.method=GET' |
		grep "/blobs/sha256:$2" | grep -c "http.request.remoteaddr=\"${3:-}"
}

# ---- the PyTorch image (t1325) ------------------------------------------------------------
CTR_TORCH_ROOTFS=$CTR_CACHE/torch/rootfs
CTR_TORCH_IMAGE=$CTR_CACHE/torch-py.oci.tar

# Build (or find) an image with python3-torch (Debian's, with --no-install-recommends) on top of
# a copy of the minbase tree: large (about 1 GB unpacked), built once per machine. 0 with
# CTR_TORCH_IMAGE set, 1 with CTR_WHY.
ctr_torch_image_build() {
	[ -s "$CTR_TORCH_IMAGE" ] && return 0
	ctr_image_build || return 1
	(
		flock 9
		[ -s "$CTR_TORCH_IMAGE" ] && exit 0
		local log=$CTR_CACHE/torch/build.log
		rm -rf "$CTR_CACHE/torch"
		mkdir -p "$CTR_CACHE/torch"
		cp -a "$CTR_ROOTFS" "$CTR_TORCH_ROOTFS" || exit 1
		cp /etc/resolv.conf "$CTR_TORCH_ROOTFS/etc/resolv.conf" 2>/dev/null
		chroot "$CTR_TORCH_ROOTFS" apt-get update >"$log" 2>&1 &&
			chroot "$CTR_TORCH_ROOTFS" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
				--no-install-recommends python3-torch >>"$log" 2>&1 || exit 1
		chroot "$CTR_TORCH_ROOTFS" python3 -c 'import torch, torch.distributed' >>"$log" 2>&1 || exit 1
		rm -rf "$CTR_TORCH_ROOTFS/var/cache/apt/archives/"*.deb "$CTR_TORCH_ROOTFS/var/lib/apt/lists/"*
		ctr_pack "$CTR_TORCH_ROOTFS" "$CTR_TORCH_IMAGE" "gpool torch test image"
	) 9>"$CTR_CACHE/.lock-torch"
	if [ ! -s "$CTR_TORCH_IMAGE" ]; then
		CTR_WHY="could not build the python3-torch image (see $CTR_CACHE/torch/build.log)"
		return 1
	fi
	return 0
}

# ---- the Open MPI image (t1326) -----------------------------------------------------------
CTR_MPI_ROOTFS=$CTR_CACHE/mpi/rootfs
CTR_MPI_IMAGE=$CTR_CACHE/mpi.oci.tar

# Build (or find) an image with Debian's Open MPI libraries (libopenmpi3, with its libpmix2) on
# a copy of the minbase tree, once per machine: programs built on the host (gp-mpi-check) run
# in it with the image's libmpi. 0 with CTR_MPI_IMAGE set, 1 with CTR_WHY.
ctr_mpi_image_build() {
	[ -s "$CTR_MPI_IMAGE" ] && return 0
	ctr_image_build || return 1
	(
		flock 9
		[ -s "$CTR_MPI_IMAGE" ] && exit 0
		local log=$CTR_CACHE/mpi/build.log
		rm -rf "$CTR_CACHE/mpi"
		mkdir -p "$CTR_CACHE/mpi"
		cp -a "$CTR_ROOTFS" "$CTR_MPI_ROOTFS" || exit 1
		cp /etc/resolv.conf "$CTR_MPI_ROOTFS/etc/resolv.conf" 2>/dev/null
		chroot "$CTR_MPI_ROOTFS" apt-get update >"$log" 2>&1 &&
			chroot "$CTR_MPI_ROOTFS" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
				--no-install-recommends libopenmpi3 >>"$log" 2>&1 || exit 1
		rm -rf "$CTR_MPI_ROOTFS/var/cache/apt/archives/"*.deb "$CTR_MPI_ROOTFS/var/lib/apt/lists/"*
		ctr_pack "$CTR_MPI_ROOTFS" "$CTR_MPI_IMAGE" "gpool mpi test image"
	) 9>"$CTR_CACHE/.lock-mpi"
	if [ ! -s "$CTR_MPI_IMAGE" ]; then
		CTR_WHY="could not build the Open MPI image (see $CTR_CACHE/mpi/build.log)"
		return 1
	fi
	return 0
}
