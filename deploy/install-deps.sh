#!/bin/bash
# install-deps.sh: install the Debian packages gpool needs (only those missing) and make sure
# munged runs. Idempotent; runs `apt-get update` at most once. Needs root.
#   install-deps.sh [--runtime | --build | --test]   (or GPOOL_DEPS=runtime|build|test)
#     --runtime  what a PC that only runs gschedd, gworkerd, ggated and the commands needs
#                (the libraries they link, munge, sqlite3 for backups, openssl for gpool-ca):
#                the same set the Debian packages depend on (docs/install.md)
#     --build    runtime + compilers and -dev packages: enough to build and `make deb`
#     --test     (default) build + everything the tests and benchmarks use (chromium,
#                prometheus, nginx, wrk, torch, clang, lintian, ...): `make test` and CI
#   GPOOL_DEPS_EXTRA="pkg ..."  extra packages to install too (the benches add theirs)
set -eu

mode=${GPOOL_DEPS:-test}
case ${1:-} in
--runtime | --build | --test) mode=${1#--} ;;
"") ;;
-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "install-deps: unknown option '$1' (--runtime, --build or --test)" >&2; exit 2 ;;
esac

# what the programs load (deploy/deb/packaging.cmake's Depends come from the same libraries)
runtime="munge sqlite3 openssl adduser
  libzmq5 libsodium23 libprotobuf-c1 libmunge2 libsqlite3-0 libjansson4 libssl3 zlib1g
  libevent-2.1-7 libhttp-parser2.9 libucx0 libopenmpi3 libpmix2
  libopenblas0 crun skopeo tar gzip libraft2 libuv1"
build="build-essential cmake pkg-config git
  libzmq3-dev libsodium-dev libprotobuf-c-dev protobuf-c-compiler libmunge-dev libsystemd-dev
  libsqlite3-dev libraft-dev libuv1-dev libjansson-dev libssl-dev libcmocka-dev zlib1g-dev libevent-dev libhttp-parser-dev
  libucx-dev libopenmpi-dev libpmix-dev libopenblas-dev
  hipcc libamdhip64-dev"
# python3-torch: tests/system/t0600-pytorch-ddp.sh runs an unmodified DDP script as a job;
# jupyter-notebook, python3-ipykernel: t1342-jupyter runs a notebook server as a service;
# debootstrap: the container tests' image (tests/system/lib-container.sh); crun (runtime above):
# gstepd runs --container tasks with it, and pulls registry images with skopeo (runtime above);
# docker-registry: the registry the container tests push to and pull from (t1323, t1324);
# fortunes, python3-sentencepiece: tools/llm/train.py's corpus and tokenizer (the demo model)
test="iproute2 debootstrap docker-registry procps psmisc util-linux curl wrk nginx ucx-utils openmpi-bin
  clang libclang-rt-14-dev libfuzzer-14-dev clang-format clang-tidy shellcheck python3
  python3-torch fortunes python3-sentencepiece
  python3-yaml python3-jsonschema prometheus chromium chromium-driver
  python3-selenium lintian jupyter-notebook python3-ipykernel"
# python3-regex (with fortunes and python3-sentencepiece above): unit.llm.tok_compare checks the
# tokenizer against SentencePiece and a Python BPE split by llama.cpp's patterns
test="$test python3-regex"
# busybox-static, umoci: docs/containers.md's recipe for a small image, which t0020-docs runs
test="$test busybox-static umoci"
case $mode in
runtime) pkgs="$runtime" ;;
build) pkgs="$runtime $build" ;;
test) pkgs="$runtime $build $test" ;;
*) echo "install-deps: unknown GPOOL_DEPS '$mode' (runtime, build or test)" >&2; exit 2 ;;
esac
pkgs="$pkgs ${GPOOL_DEPS_EXTRA:-}"

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: must run as root (apt-get and munged need it)" >&2
	exit 1
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# munged: a key, a run directory, a running daemon (no systemd needed).
if [ ! -s /etc/munge/munge.key ]; then
	mkdir -p /etc/munge
	if command -v mungekey >/dev/null; then mungekey -c -f -k /etc/munge/munge.key; else
		dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; fi
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
fi
# a real PC (--runtime, systemd running): munge.service, started at boot from now on
if [ "$mode" = runtime ] && [ -d /run/systemd/system ]; then
	systemctl enable munge.service >/dev/null 2>&1 || true
	munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || systemctl restart munge.service
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	rm -f /run/munge/munged.pid
	runuser -u munge -- /usr/sbin/munged --force
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
		sleep 0.1
	done
	munge -n | unmunge >/dev/null || { echo "install-deps: munged does not answer" >&2; exit 1; }
fi
echo "install-deps: ok ($mode)"
