#!/bin/bash
# install-deps.sh: install the Debian packages gpool needs (only those missing) and make sure
# munged runs. Idempotent; runs `apt-get update` at most once. Needs root.
#   GPOOL_DEPS_EXTRA="pkg ..."  extra packages to install too (the benches add theirs)
set -eu

pkgs="build-essential cmake pkg-config git iproute2 procps psmisc util-linux
  libzmq3-dev libsodium-dev libprotobuf-c-dev protobuf-c-compiler libmunge-dev munge
  libsqlite3-dev sqlite3 libjansson-dev libssl-dev libcmocka-dev zlib1g-dev libevent-dev libhttp-parser-dev curl wrk nginx
  libucx-dev ucx-utils libopenmpi-dev openmpi-bin libpmix-dev libopenblas-dev
  clang libclang-rt-14-dev libfuzzer-14-dev clang-format clang-tidy shellcheck python3
  hipcc libamdhip64-dev
  python3-torch
  python3-yaml python3-jsonschema prometheus chromium chromium-driver
  python3-selenium lintian ${GPOOL_DEPS_EXTRA:-}"
# python3-torch: tests/system/t0600-pytorch-ddp.sh runs an unmodified DDP script as a job

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
echo "install-deps: ok"
