#!/bin/bash
# t1323-container-registry: images from a registry on the LAN (docs/containers.md). A registry
# (Debian's docker-registry) serves plain HTTP on the bridge's root-namespace side 198.18.0.1,
# which the cluster's gpool.conf lists in container_insecure_registries; the test pushes the
# debootstrap image with skopeo. Two 3-host jobs submitted together with
# --container 198.18.0.1:5000/gpool/minbase:1 run (their ranks meet through RANK/MASTER_*), and
# the registry's log shows each host fetched the image's layer exactly once (the two jobs' pulls
# on a host coalesce); a third job fetches nothing. A missing tag fails its job with the
# registry's reason, a blob tampered with in the registry's storage (a digest mismatch) is
# refused and nothing of it kept, and a registry not in container_insecure_registries is spoken
# to over TLS only (its plain HTTP is refused).
# timeout: 500
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need registry
ctr_image_build || skip_all "no test image: $CTR_WHY"
REG=$(slot_addr 1):5000
# the pulled archive, skopeo's temporary copy and two jobs' unpacks at once, in each host's tmpfs
export GPOOL_CLUSTER_STATE_SIZE=1500m
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG"
test_under_cluster 3 --cpus 2

# the registry listens on the bridge (up now that the cluster is); a second one on :5001, not
# listed as insecure, serves the same storage
reg_start "$REG" "$TEST_DIR/registry" || { fail "a registry starts" "$CTR_WHY"; done_testing; }
ok "a registry serves $REG"
reg_start "$(slot_addr 1)":5001 "$TEST_DIR/registry" || { fail "a second registry starts" "$CTR_WHY"; done_testing; }
REGLOG=$TEST_DIR/registry/log
check "the test image is pushed to the registry" reg_push "$CTR_IMAGE" "$REG/gpool/minbase:1"
layer=$(reg_layer "$REG/gpool/minbase:1")
like "$layer" '^[0-9a-f]{64}$' "the image's layer is sha256:${layer:0:12}..."
base=$(reg_blob_gets "$REGLOG" "$layer")
diag "layer GETs before the jobs: $base"

cp "$(dirname "$0")/container-meet.py" "$WORK/meet.py"
chown "$TEST_USER:" "$WORK/meet.py"
uid=$(id -u "$TEST_USER")

# ---- two 3-host jobs at once, the image on no host yet ----
t0=$(date +%s.%N)
(cd "$WORK" && as_user timeout 240 gsub --wait -N 3 -n 3 --container "$REG/gpool/minbase:1" --stage meet.py -- python3 meet.py >"$WORK/a.out" 2>&1; echo $? >"$WORK/a.rc") &
pa=$!
(cd "$WORK" && as_user timeout 240 gsub --wait -N 3 -n 3 --container "$REG/gpool/minbase:1" --stage meet.py -- python3 meet.py >"$WORK/b.out" 2>&1; echo $? >"$WORK/b.rc") &
pb=$!
wait $pa $pb
t1=$(date +%s.%N)
diag "two 3-host registry-image jobs at once, submit to end (image on no host): $(echo "$t1 - $t0" | bc) s"
for j in a b; do
	out=$(cat "$WORK/$j.out")
	diag "$out"
	is "$(cat "$WORK/$j.rc")" 0 "job $j with the registry image completes"
	like "$out" "rank0 got 1 h[123] gpool_minbase_test_image uid=$uid" "job $j: rank 1 ran in the registry image as the user"
	like "$out" "rank0 got 2 h[123] gpool_minbase_test_image uid=$uid" "job $j: rank 2 too"
	like "$out" "rank0 is 0 h[123] gpool_minbase_test_image uid=$uid" "job $j: rank 0 too"
	hosts=$(grep -oE '^rank0 (got [12]|is 0) h[123]' <<<"$out" | awk '{print $NF}' | sort -u | wc -l)
	is "$hosts" 3 "job $j: the 3 ranks ran on 3 hosts"
done
for h in h1 h2 h3; do
	addr=$(host_addr "$h")
	is "$(reg_blob_gets "$REGLOG" "$layer" "$addr:")" 1 "$h ($addr) fetched the layer from the registry once for both jobs"
	is "$(grep -c ': image .*minbase:1 (sha256:[0-9a-f]*) pulled:' "$CLUSTER_DIR/$h/gworkerd.log")" 1 "$h's gstepds pulled it once"
done
diag "$(grep -h ': image .*minbase:1' "$CLUSTER_DIR"/h*/gworkerd.log | sed 's/.*gstepd[^:]*: //')"

# ---- a third job: the tag is resolved again, no blob fetched ----
t0=$(date +%s.%N)
out=$(cd "$WORK" && as_user timeout 240 gsub --wait -N 3 -n 3 --container "$REG/gpool/minbase:1" --stage meet.py -- python3 meet.py 2>&1)
t1=$(date +%s.%N)
like "$out" "rank0 is 0 h[123] gpool_minbase_test_image" "a third job runs in the registry image"
is "$(reg_blob_gets "$REGLOG" "$layer")" $((base + 3)) "it fetched no blob: the hosts had the image"
n=0
for h in h1 h2 h3; do
	grep -q ': image .*minbase:1 (sha256:[0-9a-f]*) already on the node' "$CLUSTER_DIR/$h/gworkerd.log" && n=$((n + 1))
done
is "$n" 3 "every host said the image was already on the node"
diag "3-host registry-image job, submit to end (image cached on every host): $(echo "$t1 - $t0" | bc) s"

# ---- a tag the registry does not have ----
out=$(cd "$WORK" && as_user timeout 240 gsub --wait --container "$REG/gpool/minbase:nope" -- /bin/true 2>&1)
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
diag "$out"
is "$(job_state "$id")" FAILED "a job with a missing tag fails"
like "$(job_field "$id" reason)" "container image '$REG/gpool/minbase:nope': the registry has no such image \\(.*manifest unknown" "its reason says the registry has no such image"

# ---- a blob tampered with in the registry's storage ----
mkdir -p "$WORK/tiny/bin" "$WORK/tiny/etc"
ctr_pack "$WORK/tiny" "$WORK/tiny.tar" "gpool tiny image" >/dev/null
check "a small image is pushed" reg_push "$WORK/tiny.tar" "$REG/gpool/tiny:1"
tl=$(reg_layer "$REG/gpool/tiny:1")
blob=$TEST_DIR/registry/data/docker/registry/v2/blobs/sha256/${tl:0:2}/$tl/data
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0xff; open(p,"wb").write(b)' "$blob"
ok "one byte of its layer is flipped in the registry's storage (same size)"
out=$(cd "$WORK" && as_user timeout 240 gsub --wait --container "$REG/gpool/tiny:1" -- /bin/true 2>&1)
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
is "$(job_state "$id")" FAILED "a job whose image's blob does not match its digest fails"
like "$(job_field "$id" reason)" "a blob the registry sent does not match its digest, refused \\(.*Digest did not match" "its reason names the digest mismatch"
tars=$(for h in h1 h2 h3; do on_host "$h" sh -c "find '$CLUSTER_DIR'/node/state/images/pulled -maxdepth 1 -name '*.tar*' 2>/dev/null"; done | wc -l)
is "$tars" 3 "nothing of the tampered image was kept (the hosts hold only minbase's archive)"

# ---- a registry that is not listed as insecure: TLS only ----
out=$(cd "$WORK" && as_user timeout 240 gsub --wait --container "$(slot_addr 1):5001/gpool/minbase:1" -- /bin/true 2>&1)
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
is "$(job_state "$id")" FAILED "a job from a registry not in container_insecure_registries fails"
like "$(job_field "$id" reason)" "speaks plain HTTP and is not in container_insecure_registries" "its reason says plain HTTP was refused"

# the agents stayed up through all of it
out=$(cd "$WORK" && as_user timeout 240 gsub --wait -N 3 -n 3 --container "$REG/gpool/minbase:1" -- /bin/cat /etc/gpool-test-image 2>&1)
like "$out" "gpool minbase test image" "the next registry job runs on the 3 hosts"

done_testing
