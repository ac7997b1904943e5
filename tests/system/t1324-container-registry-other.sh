#!/bin/bash
# t1324-container-registry-other: another user (gpool-other) against gpool-user's image pulled
# from a registry (docs/containers.md). While the user's job runs, gpool-other cannot list the
# node's pulled archives, nor read the user's pulled image's archive knowing its name, nor the
# user's unpacked copy; gpool-other's own job with the same image name runs in an unpacked copy
# of its own, and the node does not fetch the image again (pulled once per node, unpacked once
# per account). A second node setting: an image larger than container_pull_max is refused.
# timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need registry
ctr_image_build || skip_all "no test image: $CTR_WHY"
REG=$(slot_addr 1):5000
export GPOOL_CLUSTER_STATE_SIZE=1500m
# the test image is about 94 MB: a bound of 200 MiB lets it through, the large one is refused
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG
container_pull_max = 200MiB"
test_under_cluster 1 --cpus 4

reg_start "$REG" "$TEST_DIR/registry" || { fail "a registry starts" "$CTR_WHY"; done_testing; }
REGLOG=$TEST_DIR/registry/log
check "the test image is pushed to the registry" reg_push "$CTR_IMAGE" "$REG/gpool/minbase:1"
layer=$(reg_layer "$REG/gpool/minbase:1")
base=$(reg_blob_gets "$REGLOG" "$layer")

echo "user secret $RANDOM" >"$WORK/secret.txt"
chmod 600 "$WORK/secret.txt"
chown "$TEST_USER:" "$WORK/secret.txt"
uid=$(id -u "$TEST_USER")
ouid=$(id -u "$OTHER_USER")

id=$(submit --container "$REG/gpool/minbase:1" --stage secret.txt -- /bin/bash -c 'echo "scratch $GPOOL_SCRATCH"; echo "pid $$"; exec sleep 120')
[ -n "$id" ] || { fail "the user's registry-image job is submitted"; done_testing; }
at_cleanup "as_user gcancel $id >/dev/null 2>&1"
check "the user's registry-image job runs" wait_state "$id" RUNNING 90
got_pid() { as_user glogs "$id" 2>/dev/null | grep -q '^pid '; }
wait_until 30 got_pid
logs=$(as_user glogs "$id" 2>/dev/null)
scratch=$(sed -n 's/^scratch //p' <<<"$logs")
pid=$(sed -n 's/^pid //p' <<<"$logs")
images=$CLUSTER_DIR/node/state/images
other() { on_host h1 runuser -u "$OTHER_USER" -- "$@"; }
archive=$(on_host h1 sh -c "ls '$images'/pulled/*.tar" | head -1)
like "$archive" '/images/pulled/[0-9a-f]{64}\.tar$' "the node keeps the pulled image as an archive named by its manifest digest"
is "$(on_host h1 stat -c '%U %a' "$images/pulled")" "root 700" "the pulled archives' directory is root's, mode 700"

out=$(other ls "$images/pulled" 2>&1)
like "$out" 'Permission denied' "gpool-other cannot list the node's pulled images"
out=$(other cat "$archive" 2>&1 | head -c 200)
like "$out" 'Permission denied' "nor read the user's pulled image knowing its name"
out=$(other ls "$images/u$uid" 2>&1)
like "$out" 'Permission denied' "nor list the user's unpacked images"
out=$(other cat "$images/u$uid"/*/rootfs/etc/gpool-test-image 2>&1)
unlike "$out" 'gpool minbase' "nor read the user's unpacked copy"
out=$(other cat "/proc/$pid/root$scratch/secret.txt" 2>&1)
unlike "$out" 'user secret' "nor the user's staged file through the container's root"

# gpool-other's own job, same image name: its own unpacked copy, no second fetch
probe="cat /etc/gpool-test-image; id -u; cat '$scratch/secret.txt' 2>&1; ls '$images/u$uid' 2>&1"
out=$(cd "$WORK" && as_other timeout 240 gsub --wait --container "$REG/gpool/minbase:1" -- /bin/bash -c "$probe" 2>&1)
diag "$out"
like "$out" 'gpool minbase test image' "gpool-other's job runs in the registry image"
like "$out" "^$ouid\$" "as gpool-other's uid"
unlike "$out" 'user secret' "it cannot read the user's working directory"
is "$(reg_blob_gets "$REGLOG" "$layer")" $((base + 1)) "the node fetched the image once for both users"
n=$(on_host h1 find "$images" -mindepth 2 -maxdepth 2 -type d -path "$images/u*/*" ! -name 'tmp.*' | wc -l)
is "$n" 2 "the node holds two unpacked copies: one per user"
okey=$(on_host h1 ls "$images/u$ouid" | grep -v '^tmp\.' | head -1)
is "$(on_host h1 stat -c '%U' "$images/u$ouid/$okey/rootfs")" "$OTHER_USER" "gpool-other's copy was unpacked by gpool-other"
as_user gcancel "$id" >/dev/null 2>&1
check "the user's job ends when cancelled" wait_final "$id" 30

# ---- container_pull_max: an image whose manifest declares more is refused before a fetch ----
big=$WORK/big
mkdir -p "$big/etc"
head -c 220M /dev/urandom >"$big/etc/blob"
ctr_pack "$big" "$WORK/big.tar" "gpool big image" >/dev/null
check "a 220 MB image is pushed" reg_push "$WORK/big.tar" "$REG/gpool/big:1"
rm -rf "$big" "$WORK/big.tar"
bl=$(reg_layer "$REG/gpool/big:1")
out=$(cd "$WORK" && as_user timeout 240 gsub --wait --container "$REG/gpool/big:1" -- /bin/true 2>&1)
bid=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
is "$(job_state "$bid")" FAILED "a job whose image is larger than container_pull_max fails"
like "$(job_field "$bid" reason)" "larger than container_pull_max" "its reason names the bound"
is "$(reg_blob_gets "$REGLOG" "$bl")" 0 "the node fetched none of it"

done_testing
