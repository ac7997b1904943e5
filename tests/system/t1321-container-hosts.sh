#!/bin/bash
# t1321-container-hosts: a container job across 3 hosts (docs/containers.md). The image reaches
# the hosts as staged files do (the chain of the job's nodes) and is unpacked on each; the 3
# ranks, each in its own host's container, meet through RANK, WORLD_SIZE, MASTER_ADDR and
# MASTER_PORT: rank 0 listens (python3 in the image), ranks 1 and 2 connect and send their rank,
# host, the image's marker and uid; rank 0 prints what it got. A second run unpacks nothing.
# (PyTorch DDP in a container is not tested: its image, with python3-torch, is not built.)
# timeout: 400
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need
ctr_image_build || skip_all "no test image: $CTR_WHY"
test_under_cluster 3 --cpus 2

cp "$CTR_IMAGE" "$WORK/img.tar"
cp "$(dirname "$0")/container-meet.py" "$WORK/meet.py"
chown "$TEST_USER:" "$WORK/img.tar" "$WORK/meet.py"
uid=$(id -u "$TEST_USER")

t0=$(date +%s.%N)
out=$(as_user gsub --wait -N 3 -n 3 --container img.tar --stage meet.py -- python3 meet.py 2>&1)
rc=$?
t1=$(date +%s.%N)
diag "$out"
diag "3-host container job, submit to end (image not cached): $(echo "$t1 - $t0" | bc) s"
is "$rc" 0 "the 3-host container job completes"
for r in 1 2; do
	like "$out" "rank0 got $r h[123] gpool_minbase_test_image uid=$uid" "rank 0 got rank $r's message, sent from the image as the user"
	like "$out" "rank $r answer ack" "rank $r got rank 0's answer"
done
like "$out" "rank0 is 0 h[123] gpool_minbase_test_image uid=$uid" "rank 0 ran in the image as the user"
hosts=$(grep -oE '^rank0 (got [12]|is 0) h[123]' <<<"$out" | awk '{print $NF}' | sort -u | wc -l)
is "$hosts" 3 "the 3 ranks ran on 3 different hosts"
n=0
for h in h1 h2 h3; do
	grep -q ': image .* unpacked in' "$CLUSTER_DIR/$h/gworkerd.log" 2>/dev/null && n=$((n + 1))
done
is "$n" 3 "each host unpacked the image once"
diag "$(grep -h 'staged .*chunks' "$CLUSTER_DIR"/h*/gworkerd.log | sed 's/.*gstepd[^:]*: //')"

t0=$(date +%s.%N)
out=$(as_user gsub --wait -N 3 -n 3 --container img.tar --stage meet.py -- python3 meet.py 2>&1)
t1=$(date +%s.%N)
like "$out" "rank0 is 0" "a second 3-host container job runs"
n=0
for h in h1 h2 h3; do
	[ "$(grep -c ': image .* unpacked in' "$CLUSTER_DIR/$h/gworkerd.log")" = 1 ] && n=$((n + 1))
done
is "$n" 3 "no host unpacked it again"
diag "3-host container job, submit to end (image cached): $(echo "$t1 - $t0" | bc) s"

done_testing
