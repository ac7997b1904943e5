#!/bin/bash
# t1328-container-nofit: a container image that does not fit the node's state directory (a
# 160 MiB tmpfs: the 90 MiB test image's chunks in the node's cache leave less than the twice
# its size that unpacking a staged archive writes) fails its job before anything is unpacked,
# and the reason names the cause and the directory: "does not fit on this node (checked before
# unpacking it): no space left on the file system of '.../images' (N needed, M free)", not
# "layer 0 of the image cannot be unpacked". Nothing is left under images/, and the agent runs
# the next job. Missing dependencies are named too: with crun hidden on h1, a container job
# fails with "crun is not installed on this node"; a command the node lacks (a jupyter-notebook
# not installed) says "not found on node h1 (PATH=...)".
# timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need
ctr_image_build || skip_all "no test image: $CTR_WHY"
export GPOOL_CLUSTER_STATE_SIZE=160m
test_under_cluster 1 --cpus 2

cp "$CTR_IMAGE" "$WORK/img.tar"
chown "$TEST_USER:" "$WORK/img.tar"
diag "image $(du -h "$WORK/img.tar" | cut -f1)"
id=$(submit --container img.tar -- /bin/true)
[ -n "$id" ] || { fail "the container job is submitted"; done_testing; }
check "the job fails" wait_final "$id" 120
is "$(job_state "$id")" FAILED "it ended FAILED"
reason=$(job_field "$id" reason)
diag "reason: $reason"
like "$reason" "container image 'img.tar' does not fit on this node \\(checked before unpacking it\\)" \
	"the reason says the image does not fit, before unpacking"
like "$reason" "no space left on the file system of '[^']*/images' \\([0-9.]+ MiB needed, [0-9.]+ (KiB|MiB) free\\)" \
	"and names the image directory, the room needed and the room free"
unlike "$reason" 'cannot be unpacked' "not the unpacker's failure"
state=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 state)
left=$(on_host h1 sh -c "find '$state/images' -mindepth 2 -maxdepth 2 -name 'tmp.*' 2>/dev/null | wc -l")
is "$left" 0 "nothing half-unpacked is left under images/"
nid=$(submit -- /bin/true)
check "the agent runs the next job" wait_final "$nid" 60
is "$(job_state "$nid")" COMPLETED "it completed"

# crun missing on h1 (hidden in h1's own mount namespace)
on_host h1 mount --bind /dev/null "$(command -v crun)"
echo "not an image" >"$WORK/small.tar"
chown "$TEST_USER:" "$WORK/small.tar"
cid=$(submit --container small.tar -- /bin/true)
check "a container job without crun ends" wait_final "$cid" 60
like "$(job_field "$cid" reason)" "container image 'small.tar': crun is not installed on this node" \
	"its reason names crun as missing ($(job_field "$cid" reason))"
on_host h1 umount "$(command -v crun)"

# a command the node does not have
jid=$(submit -- jupyter-notebook-not-installed --no-browser)
check "a job of a missing command ends" wait_final "$jid" 60
like "$(as_user glogs "$jid" 2>&1)" "cannot execute 'jupyter-notebook-not-installed': not found on node h1 \(PATH=" \
	"its stderr names the command, the node and the PATH looked in"

done_testing
