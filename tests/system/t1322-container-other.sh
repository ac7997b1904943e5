#!/bin/bash
# t1322-container-other: another user (gpool-other) against gpool-user's container job
# (docs/containers.md). While the job runs, gpool-other cannot list or read gpool-user's
# unpacked image on the node (nor can the user change it outside a container), cannot reach the container's root through /proc/PID/root, cannot
# enter its namespaces (nsenter), cannot use crun's state to exec into it, and a container job
# of gpool-other's with the same image gets an unpacked copy of its own and reads neither the
# user's working directory nor the user's container's files.
# timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need
ctr_image_build || skip_all "no test image: $CTR_WHY"
# two accounts' unpacked copies of the 226 MB image, and the chunks, in the host's state tmpfs
export GPOOL_CLUSTER_STATE_SIZE=1500m
test_under_cluster 1 --cpus 4

cp "$CTR_IMAGE" "$WORK/img.tar"
cp "$CTR_IMAGE" "$WORK/img-other.tar"
echo "user secret $RANDOM" >"$WORK/secret.txt"
chmod 600 "$WORK/secret.txt"
chown "$TEST_USER:" "$WORK/img.tar" "$WORK/secret.txt"
chown "$OTHER_USER:" "$WORK/img-other.tar"
uid=$(id -u "$TEST_USER")

id=$(submit --container img.tar --stage secret.txt -- /bin/bash -c 'echo "scratch $GPOOL_SCRATCH"; echo "pid $$"; exec sleep 120')
[ -n "$id" ] || { fail "the user's container job is submitted"; done_testing; }
at_cleanup "as_user gcancel $id >/dev/null 2>&1"
check "the user's container job runs" wait_state "$id" RUNNING 60
got_pid() { as_user glogs "$id" 2>/dev/null | grep -q '^pid '; }
wait_until 30 got_pid
logs=$(as_user glogs "$id" 2>/dev/null)
scratch=$(sed -n 's/^scratch //p' <<<"$logs")
pid=$(sed -n 's/^pid //p' <<<"$logs")
diag "scratch $scratch, container pid $pid"
# the node's state directory is a tmpfs of the host's own mount namespace: look from there
images=$(on_host h1 sh -c "ls -d '$CLUSTER_DIR'/node/state/images 2>/dev/null || find '$CLUSTER_DIR' -maxdepth 4 -type d -name images | head -1")
other() { on_host h1 runuser -u "$OTHER_USER" -- "$@"; }
crunroot=$(dirname "$images")/crun
like "$images" '/images$' "the node has an image cache"

out=$(other ls "$images/u$uid" 2>&1)
like "$out" 'Permission denied' "gpool-other cannot list the user's unpacked images"
key=$(on_host h1 ls "$images/u$uid" | grep -v '^tmp\.' | head -1)
out=$(other ls "$images/u$uid/$key/rootfs/etc" 2>&1)
like "$out" 'Permission denied' "nor enter the user's unpacked image knowing its key"
out=$(on_host h1 runuser -u "$TEST_USER" -- touch "$images/u$uid/$key/rootfs/etc/planted" 2>&1)
like "$out" 'Permission denied' "the user cannot change the unpacked image outside a container either"
out=$(other cat "$images/u$uid"/*/rootfs/etc/gpool-test-image 2>&1)
unlike "$out" 'gpool minbase' "gpool-other cannot read the user's unpacked image"
out=$(other cat "/proc/$pid/root/etc/gpool-test-image" 2>&1)
unlike "$out" 'gpool minbase' "gpool-other cannot reach the container's root through /proc/$pid/root"
out=$(other cat "/proc/$pid/root$scratch/secret.txt" 2>&1)
unlike "$out" 'user secret' "nor the user's staged file through it"
if command -v nsenter >/dev/null; then
	out=$(other nsenter -t "$pid" -m -- cat /etc/gpool-test-image 2>&1)
	rc=$?
	ok_rc=$([ $rc != 0 ] && echo failed || echo "succeeded: $out")
	is "$ok_rc" failed "gpool-other cannot enter the container's mount namespace (nsenter)"
fi
cid=$(on_host h1 ls "$crunroot" | grep "^gpool-$id\." | head -1)
like "$cid" "^gpool-$id\\.[0-9]+\\.0\$" "crun knows the user's container ($cid)"
out=$(other crun --root "$crunroot" exec "$cid" /bin/cat "$scratch/secret.txt" 2>&1)
unlike "$out" 'user secret' "gpool-other cannot exec into the container with crun"
out=$(other crun --root "$crunroot" list 2>&1)
unlike "$out" "gpool-$id" "nor list it"

# gpool-other's own container job, same image bytes: its own copy, and no way into the user's
probe="cat /etc/gpool-test-image; id -u; cat '$scratch/secret.txt' 2>&1; ls /proc/$pid/root/ 2>&1 | head -2; ls '$images/u$uid' 2>&1"
out=$(cd "$WORK" && as_other gsub --wait --container img-other.tar -- /bin/bash -c "$probe" 2>&1)
diag "$out"
oid=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
diag "gpool-other's job: $(job_state "$oid") $(job_field "$oid" reason)"
diag "$(on_host h1 sh -c "grep 'job ${oid}[ .]' '$CLUSTER_DIR'/h1/gworkerd.log | tail -5")"
like "$out" 'gpool minbase test image' "gpool-other's container job runs in the same image"
like "$out" "^$(id -u "$OTHER_USER")\$" "as gpool-other's uid"
unlike "$out" 'user secret' "it cannot read the user's working directory"
like "$out" "ls: cannot (access|open directory) '/proc/$pid/root/'" "nor the user's container's root"
n=$(on_host h1 find "$images" -mindepth 2 -maxdepth 2 -type d ! -name 'tmp.*' | wc -l)
is "$n" 2 "the node holds two unpacked copies: one per user"
okey=$(on_host h1 ls "$images/u$(id -u "$OTHER_USER")" | grep -v '^tmp\.' | head -1)
is "$(on_host h1 stat -c '%U %a' "$images/u$(id -u "$OTHER_USER")/$okey")" "root 700" "each copy is root's, mode 700 (reachable only as a container's root)"
is "$(on_host h1 stat -c '%U' "$images/u$(id -u "$OTHER_USER")/$okey/rootfs")" "$OTHER_USER" "gpool-other's copy was unpacked by gpool-other"

as_user gcancel "$id" >/dev/null 2>&1
check "the user's job ends when cancelled" wait_final "$id" 30

done_testing
