#!/bin/bash
# t1325-container-ddp: t0600's unmodified PyTorch DDP script (gloo, init_method="env://") as a
# 3-rank job on 3 hosts, every rank inside a container of an image with Debian's python3-torch
# pulled from a registry on the LAN (docs/containers.md). The host's own python3-torch is not
# used: the image's marker and its torch's file path are printed from inside. The ranks meet
# through RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT and GLOO_SOCKET_IFNAME as in t0600 (the
# container shares the host's network), train on different data and end with identical
# parameters. The image (about 1 GB unpacked) is built once per machine
# (tests/system/lib-container.sh); the test skips (77) when it cannot be built.
# timeout: 600
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need registry
ctr_torch_image_build || skip_all "no python3-torch image: $CTR_WHY"
REG=$(slot_addr 1):5000
# the pulled archive, skopeo's temporary copy and the unpacked tree in each host's tmpfs
export GPOOL_CLUSTER_STATE_SIZE=${GPOOL_TORCH_STATE_SIZE:-4000m}
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG"
test_under_cluster 3 --cpus 2
grep -q '^MODE=netns' "$CLUSTER_DIR/cluster.env" || skip_all "the hosts are not network namespaces"

reg_start "$REG" "$TEST_DIR/registry" || { fail "a registry starts" "$CTR_WHY"; done_testing; }
check "the python3-torch image is pushed to the registry" reg_push "$CTR_TORCH_IMAGE" "$REG/gpool/torch:1"

cp "$GPOOL_SRC_DIR/tests/system/ddp_train.py" "$WORK/train.py"
cat >"$WORK/run.sh" <<'SH'
#!/bin/sh
# inside the container: where torch comes from, then the unmodified script
echo "where rank $RANK $(cat /etc/gpool-test-image | tr ' ' _) $(python3 -c 'import torch; print(torch.__file__, torch.__version__)') iface $GLOO_SOCKET_IFNAME"
exec python3 train.py
SH
chmod 0755 "$WORK/run.sh"
chown "$TEST_USER:" "$WORK/train.py" "$WORK/run.sh"

t0=$(date +%s.%N)
job=$(submit -n 3 -N 3 -t 8 --container "$REG/gpool/torch:1" --stage train.py --stage run.sh -- ./run.sh)
check "the container DDP job is submitted" test -n "$job"
wait_final "$job" 420
t1=$(date +%s.%N)
out=$(as_user glogs "$job" 2>&1)
is "$(job_state "$job")" COMPLETED "the DDP job in containers completes"
[ "$(job_state "$job")" = COMPLETED ] || diag "$(job_field "$job" reason) $(tail -30 <<<"$out")"
where=$(grep '^where rank' <<<"$out")
diag "$where"
is "$(grep -c 'gpool_torch_test_image /usr/lib/python3/dist-packages/torch/__init__.py' <<<"$where")" 3 \
	"each rank imported the image's torch (Debian's, in the image)"
is "$(awk '{print $NF}' <<<"$where" | sort -u)" eth0 "each rank was given the interface that joins the hosts"
params=$(grep '^params rank' <<<"$out")
is "$(grep -c . <<<"$params")" 3 "each of the 3 ranks printed its parameters' hash"
is "$(awk '{print $5}' <<<"$params" | sort -u | grep -c .)" 3 "the ranks ran on 3 distinct hosts"
is "$(awk '{print $7}' <<<"$params" | sort -u | grep -c .)" 1 "every rank ends with identical parameters"
is "$(grep '^step 0 rank' <<<"$out" | awk '{print $6}' | sort -u | grep -c .)" 3 \
	"the ranks trained on different data (3 distinct first losses)"
diag "$(grep -E '^(init|params)' <<<"$out")"
diag "$(grep -h ': image .*torch:1' "$CLUSTER_DIR"/h*/gworkerd.log | sed 's/.*gstepd[^:]*: //')"
diag "3-host DDP job in containers, image pulled on every host: submit to end $(echo "$t1 - $t0" | bc) s"

done_testing
