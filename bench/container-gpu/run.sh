#!/bin/bash
# run.sh - on the GPU machine (root; the CUDA toolkit, no Debian packages of gpool's): a real
# gpool node on a real card running container jobs (issue 29; docs/containers.md "On a real
# card"). Unpacks .devbundle/bundle.tar.xz (bench/container-gpu/bundle.sh), starts munged and a
# one-host loopback cluster (deploy/gpool-cluster) whose gworkerd finds the card through NVML,
# and submits as gpool-user:
#   1. cudacheck on the host (-G 1, no container): the control
#   2. cudacheck in the container (-G 1): libcuda, the device nodes and the PTX JIT from the host
#   3. nvidia-smi -L in the container (-G 1): the driver's tool bound in
#   4. the container's /dev, uid_map and driver files (-G 1)
#   5. cudacheck in the container with no card asked for: must fail (no device, no driver);
#      on the host a job without a card that unsets CUDA_VISIBLE_DEVICES: the devices cgroup
#      must deny the card (and with -G 1 allow it)
#   6. gsub --wait to exit, 5 times each, with and without the container (cached image)
#   7. --gpu-share slices (MPS started by the agent): an allocation over the budget refused
#   8. the same in the container (the pipe directory, /dev/shm and IPC the host's)
# Everything is logged to $OUT/run.log; gworkerd's and gschedd's logs to $OUT.
# Usage: OUT=DIR bench/container-gpu/run.sh
set -u
OUT=${OUT:-/tmp/ctr-gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=/opt/gpool-bundle
say() { echo "=== $* ($(date +%T))"; }

say probe
uname -r
head -2 /etc/os-release
ldd --version | head -1
mount | grep -E 'cgroup' | head -5
ls -la /dev/nvidia* 2>&1
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
ldconfig -p | grep -E 'libcuda\.so|libnvidia-ml\.so|ptxjit' | head
cat /etc/ld.so.conf.d/*.conf 2>/dev/null | grep -v '^#' | head
command -v nvidia-smi
nvidia-smi -L
for c in useradd runuser flock pgrep ss ip xz unshare; do printf '%s: %s\n' $c "$(command -v $c || echo MISSING)"; done
unshare -U -r id 2>&1 | head -1

say unpack
rm -rf "$B" && mkdir -p "$B" && xz -dc "$TOP/.devbundle/bundle.tar.xz" | tar -C "$B" -xf - || exit 1
chmod -R a+rX "$B"
# the driver's directory, where the machine's own loader configuration does not name it
ml=$(ldconfig -p | awk '/libnvidia-ml\.so\.1 / {print $NF; exit}')
[ -n "$ml" ] || ml=$(find /usr /opt -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
drv=
[ -n "$ml" ] && ! ldconfig -p | grep -q 'libnvidia-ml\.so\.1 ' && drv=$(dirname "$ml")
echo "libnvidia-ml: ${ml:-none}; added to the loader's path: ${drv:-nothing}"
export PATH=$B/bin:$B/sbin:$PATH
# crun where a package puts it: gstepd runs it from a task's clean PATH
[ -x /usr/bin/crun ] || ln -sf "$B/sbin/crun" /usr/bin/crun
# gpool's libraries where the loader looks for every process (as a package installs them):
# programs gstepd runs with a clean environment (gpool-image as the job's user) find them too
echo "$B/lib" >/etc/ld.so.conf.d/zz-gpool-bundle.conf
ldconfig
[ -z "$drv" ] || export LD_LIBRARY_PATH=$drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

say munged
id munge >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin munge
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
[ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	runuser -u munge -- "$B/sbin/munged" --force
	sleep 1
fi
munge -n | unmunge | head -3 || exit 1

say cluster
export GPOOL_CLUSTER_DIR=/tmp/gpc
# CLUSTER_ARGS: --fake-cards default for a dry run on a machine without a card
# shellcheck disable=SC2086
"$TOP/deploy/gpool-cluster" start -n 1 --loopback --bin "$B/bin" --port 27820 --cpus 8 \
	--memory 16GiB --timeout 60 ${CLUSTER_ARGS:-} || { cat /tmp/gpc/*/*.log | tail -50; exit 1; }
eval "$("$TOP/deploy/gpool-cluster" env)"
gnodes
gnodes -G
grep -h "card [0-9]*:" /tmp/gpc/h1/*.log | head -4
img=/tmp/cudacheck.oci.tar
cp "$B/cudacheck.oci.tar" "$img" && chmod 0644 "$img"
as_user() { timeout 60 runuser -u gpool-user -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
	GPOOL_SCHEDULER="$GPOOL_SCHEDULER" GPOOL_CONF="$GPOOL_CONF" "$@"; }
# cudacheck on the host: built into the image; a copy outside it for the control
mkdir -p /tmp/cc && tar -C /tmp/cc -xf "$img" && chmod -R a+rX /tmp/cc
layer=$(ls -S /tmp/cc/blobs/sha256/ | head -1)
mkdir -p /tmp/cc/root && tar -C /tmp/cc/root -xzf "/tmp/cc/blobs/sha256/$layer" ./usr/local/bin/cudacheck
chmod -R a+rX /tmp/cc
cd /tmp || exit 1

say "1. cudacheck on the host, -G 1"
as_user gsub --wait -G 1 -- /tmp/cc/root/usr/local/bin/cudacheck
echo "exit $?"
say "2. cudacheck in the container, -G 1"
as_user gsub --wait -G 1 --container "$img" -- /usr/local/bin/cudacheck
echo "exit $?"
say "3. nvidia-smi -L in the container, -G 1"
as_user gsub --wait -G 1 --container "$img" -- nvidia-smi -L
echo "exit $?"
say "4. the container's /dev, uid_map, driver files, -G 1"
as_user gsub --wait -G 1 --container "$img" -- sh -c 'id; cat /proc/self/uid_map; ls -la /dev | grep -v -E " (pts|shm|fd|stdin|stdout|stderr|core)$"; ls -la /usr/lib/x86_64-linux-gnu | grep -E "cuda|nvidia"; ls -la /usr/bin/nvidia-smi; echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; echo rootfs $(stat -f -c %T /)'
echo "exit $?"
say "5. cudacheck in the container without a card: must fail"
as_user gsub --wait --container "$img" -- /usr/local/bin/cudacheck
echo "exit $? (non-zero expected)"
say "5b. a job given no card unsets CUDA_VISIBLE_DEVICES: the devices cgroup still denies the card"
as_user gsub --wait -- sh -c 'grep devices /proc/self/cgroup; env -u CUDA_VISIBLE_DEVICES /tmp/cc/root/usr/local/bin/cudacheck'
echo "exit $? (non-zero expected)"
say "5c. the same with -G 1: allowed"
as_user gsub --wait -G 1 -- sh -c 'env -u CUDA_VISIBLE_DEVICES /tmp/cc/root/usr/local/bin/cudacheck'
echo "exit $?"
say "6. gsub --wait to exit, cached image: with and without the container"
for i in 1 2 3 4 5; do
	for mode in host ctr; do
		t0=$(date +%s.%N)
		if [ $mode = ctr ]; then
			as_user gsub --wait -G 1 --container "$img" -- /usr/local/bin/cudacheck >/dev/null
		else
			as_user gsub --wait -G 1 -- /tmp/cc/root/usr/local/bin/cudacheck >/dev/null
		fi
		rc=$?
		t1=$(date +%s.%N)
		echo "time $mode run $i rc $rc $(echo "$t1 - $t0" | bc 2>/dev/null || awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')"
	done
done
say "7. slices of a shared card (MPS through the agent), 2 GiB budget: 1000 MiB allocated, 3000 refused"
cc=/tmp/cc/root/usr/local/bin/cudacheck
as_user gsub --wait --gpu-share --gpu-mem=2G -- "$cc" alloc 1000
echo "exit $? (0 expected)"
as_user gsub --wait --gpu-share --gpu-mem=2G -- "$cc" alloc 3000
echo "exit $? (2 expected: over the budget)"
as_user gsub --wait --gpu-share --gpu-mem=2G -- sh -c "$cc alloc 1000 && sleep 5" &
sp=$!
sleep 3
for p in $(pgrep -f nvidia-cuda-mps); do
	echo "mps process $p ($(cat /proc/$p/comm)), parent $(awk '{print $4}' /proc/$p/stat): $(tr '\0' '\n' </proc/$p/environ | grep CUDA_MPS_PIPE)"
done
wait $sp
echo "exit $? (0 expected: the card's MPS server stays on the card 5 s: not the owner's use)"
as_user gsub --wait -G 1 -- "$cc" alloc 3000
echo "exit $? (0 expected: a whole card)"
grep -h "owner:" /tmp/gpc/h1/*.log | grep -v "logind" | head -5
echo "owner freezes: $(grep -h -c "frozen" /tmp/gpc/h1/gworkerd.log) (0 expected)"
say "8. the same slices in the container"
as_user gsub --wait --gpu-share --gpu-mem=2G --container "$img" -- /usr/local/bin/cudacheck alloc 1000
echo "exit $? (0 expected)"
as_user gsub --wait --gpu-share --gpu-mem=2G --container "$img" -- /usr/local/bin/cudacheck alloc 3000
echo "exit $? (2 expected: over the budget)"
grep -h "mps:" /tmp/gpc/h1/*.log | tail -6
find /tmp/gpc -path '*mps*' -name '*.log' 2>/dev/null | head -3 | while read -r f; do echo "--- $f"; tail -8 "$f"; done
gacct 2>&1 | tail -30
rm -f /etc/ld.so.conf.d/zz-gpool-bundle.conf
ldconfig
say finished
cp /tmp/gpc/h1/*.log /tmp/gpc/sched/*.log "$OUT/" 2>/dev/null
"$TOP/deploy/gpool-cluster" stop
