#!/bin/bash
# t1320-container: gsub --container IMAGE.tar (docs/containers.md) on one host with a fake
# NVIDIA card. A job runs in the debootstrap test image (its marker file, a host-only file
# absent), as the user's uid (not root) in a user namespace that maps that uid alone, with no
# capability, in its working directory with its staged file and
# GPOOL_*/RANK variables, in the job's cgroup (/proc/self/cgroup names the job's group, and a
# --mem 50M job that grows without end ends OUT_OF_MEMORY); its /dev holds no card device (the
# fake card has none) and only the default nodes. The image is unpacked once and reused (the
# second job's gstepd line says "cached"). A garbage tar and an archive without its config fail
# their jobs with a clear reason while the agent stays up and the next job runs.
# timeout: 400
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need
ctr_image_build || skip_all "no test image: $CTR_WHY"
test_under_cluster 1 --cpus 4 --fake-cards "h1=nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W"

cp "$CTR_IMAGE" "$WORK/img.tar"
echo "staged hello $RANDOM" >"$WORK/hello.txt"
chown "$TEST_USER:" "$WORK/img.tar" "$WORK/hello.txt"
uid=$(id -u "$TEST_USER")
job_of() { sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$1"; }
gw_log() { cat "$CLUSTER_DIR"/h1/gworkerd.log 2>/dev/null; }

# ---- a container job: the image, the user, the directory, the variables, the cgroup, /dev ----
probe='echo "marker $(cat /etc/gpool-test-image)"
echo "uid $(id -u) gid $(id -g)"
echo "uidmap $(tr -s " " <"/proc/self/uid_map")"
echo "capeff $(sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status)"
echo "pwd $(pwd) scratch $GPOOL_SCRATCH"
echo "staged $(cat hello.txt)"
echo "vars job=$GPOOL_JOB_ID rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT cuda=$CUDA_VISIBLE_DEVICES"
echo "cgroup $(grep -E ":(memory|):" /proc/self/cgroup | head -1)"
echo "dev $(ls /dev | sort | tr "\n" " ")"
echo "rootfs $(stat -f -c %T /)"
echo "rootwrite $(touch /gpool-rootwrite 2>/dev/null && echo yes || echo no)"
echo "hostbin $([ -e '"$GPOOL_BIN_DIR"'/gsub ] && echo visible || echo absent)"
echo wrote >out.txt'
t0=$(date +%s.%N)
out=$(as_user gsub --wait --container img.tar --stage hello.txt -G 1 --mem 200M -- /bin/bash -c "$probe" 2>&1)
rc=$?
t1=$(date +%s.%N)
diag "$out"
is "$rc" 0 "the container job completes (gsub --wait exits 0)"
like "$out" 'marker gpool minbase test image' "it ran in the image (its marker file /etc/gpool-test-image)"
like "$out" 'hostbin absent' "the host's files are not in it (the build's gsub is absent)"
like "$out" "uid $uid gid [0-9]+" "it ran as the user's uid ($uid), not root"
like "$out" "uidmap +$uid $uid 1" "in a user namespace that maps the user's uid and nothing else ($(grep '^uidmap' <<<"$out"))"
like "$out" "capeff 0+\s*(\n|$)" "with no capability"
pwdline=$(grep '^pwd ' <<<"$out")
like "$pwdline" '^pwd (/[^ ]+) scratch \1$' "its working directory is the job's (GPOOL_SCRATCH)"
like "$out" "staged $(cat "$WORK/hello.txt")" "the staged file is in it"
like "$out" 'vars job=[0-9]+ rank=0 world=1 master=[^:]+:[0-9]+ cuda=(0|GPU-fake-0)' "GPOOL_*, RANK, WORLD_SIZE, MASTER_*, CUDA_VISIBLE_DEVICES are passed in"
id1=$(sed -n 's/.*vars job=\([0-9]*\) .*/\1/p' <<<"$out")
like "$(grep '^cgroup ' <<<"$out")" "job$id1\\." "it is in the job's own cgroup (/proc/self/cgroup)"
devline=$(grep '^dev ' <<<"$out")
unlike "$devline" 'nvidia|dri|kfd' "a fake card gives no device node: no /dev/nvidia*, /dev/dri, /dev/kfd"
extra=$(tr ' ' '\n' <<<"${devline#dev }" | grep -vxE 'console|core|fd|full|mqueue|null|ptmx|pts|random|shm|stderr|stdin|stdout|tty|urandom|zero|' | tr '\n' ' ')
is "$extra" "" "its /dev holds only the default nodes"
like "$out" 'rootfs overlayfs' "its root is an overlay of the image (what crun makes there stays out of the node's copy: $(grep '^rootfs' <<<"$out"))"
like "$out" 'rootwrite no' "and it is read-only to the task"
line=$(gw_log | grep "job $id1\.[0-9]*: image" | tail -1)
like "$line" 'unpacked in' "the first job unpacked the image ($line)"
diag "first container job, submit to end: $(echo "$t1 - $t0" | bc) s"

# ---- the cache: the second job of the same image and user unpacks nothing ----
out=$(as_user gsub --wait --container img.tar -- /bin/cat /etc/gpool-test-image 2>&1)
like "$out" 'gpool minbase test image' "a second container job runs"
line=$(gw_log | grep ': image .* cached in' | tail -1)
like "$line" 'cached in' "the second job reuses the unpacked image ($line)"
# the node's state directory is a tmpfs of the host's own mount namespace
images=$(on_host h1 sh -c "ls -d '$CLUSTER_DIR'/node/state/images 2>/dev/null || find '$CLUSTER_DIR' -maxdepth 4 -type d -name images | head -1")
rootfs=$(on_host h1 sh -c "ls -d '$images'/u$uid/*/rootfs")
is "$(wc -l <<<"$rootfs")" 1 "one unpacked copy on the node ($rootfs)"
is "$(on_host h1 stat -c %U "$rootfs")" "$TEST_USER" "the image was unpacked by the user, not root"
is "$(on_host h1 stat -c '%U %a' "$(dirname "$rootfs")")" "root 700" "the cache entry is root's, mode 700"
setuid=$(on_host h1 find "$rootfs" -xdev -perm -4000 -user root 2>/dev/null | head -3)
is "$setuid" "" "nothing in it is setuid root"

# ---- the job's memory limit holds inside ----
# tail keeps the last lines of a stream without newlines: all of it, until the limit kills it
id=$(submit --container img.tar --mem 50M -- /usr/bin/tail /dev/zero)
if [ -n "$id" ] && wait_final "$id" 60; then
	is "$(job_state "$id")" OUT_OF_MEMORY "a --mem 50M container job that grows without end ends OUT_OF_MEMORY"
	diag "reason: $(job_field "$id" reason), exit code $(job_field "$id" exit_code)"
else
	fail "the memory hog in a container ends" "$(job_json "$id")"
	as_user gcancel "$id" >/dev/null 2>&1
fi

# ---- bad images fail their jobs with a reason; the agent stays up ----
head -c 2000000 /dev/urandom >"$WORK/garbage.tar"
w=$(mktemp -d)
mkdir -p "$w/blobs/sha256"
man='{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":2},"layers":[]}'
msha=$(printf %s "$man" | sha256sum | cut -c1-64)
printf %s "$man" >"$w/blobs/sha256/$msha"
printf '{"schemaVersion":2,"manifests":[{"digest":"sha256:%s","size":%s}]}' "$msha" "${#man}" >"$w/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
tar -C "$w" -cf "$WORK/noconfig.tar" oci-layout index.json blobs
rm -rf "$w"
chown "$TEST_USER:" "$WORK/garbage.tar" "$WORK/noconfig.tar"
for bad in garbage noconfig; do
	id=$(submit --container $bad.tar -- /bin/true)
	if [ -n "$id" ] && wait_final "$id" 60; then
		st=$(job_state "$id")
		why=$(job_field "$id" reason)
		diag "$bad.tar: $st: $why"
		is "$st" FAILED "a job with $bad.tar fails"
		case $bad in
		garbage) like "$why" "container image 'garbage.tar': the image is not a tar archive" "its reason says the image is not a tar archive" ;;
		noconfig) like "$why" "container image 'noconfig.tar': the image has no readable config" "its reason says the config is missing" ;;
		esac
	else
		fail "the $bad.tar job ends" "$(job_json "$id")"
	fi
done
check "gworkerd is still running on h1" host_pgrep h1 -x gworkerd >/dev/null
out=$(as_user gsub --wait --container img.tar -- /bin/echo still fine 2>&1)
like "$out" 'still fine' "the next container job runs"
check "no unpack directory is left behind" on_host h1 sh -c "! ls '$images'/u$uid | grep -q '^tmp\.'"

# ---- --container with a bad registry name, or no file, is refused by gsub, saying why ----
# (registry images themselves: t1323, t1324)
out=$(as_user gsub --container 'registry:5000/Minbase;id:1' -- /bin/true 2>&1)
like "$out" "invalid image name 'registry:5000/Minbase;id:1'" "a malformed registry image name is refused with the reason"
out=$(as_user gsub --container nosuch.tar:1 -- /bin/true 2>&1)
like "$out" "no such file, nor an image in a registry" "a missing archive is refused with the reason"

done_testing
