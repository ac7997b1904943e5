#!/bin/bash
# t1235-owner-train: a 3-node gtrain job survives one PC's owner coming back. The job (3 ranks
# on h1-h3, -N 2-3, checkpoints every 20 steps into a store outside the nodes through
# --ckpt-cmd / --resume-cmd) is running past its first checkpoint when the owner of one of its
# PCs returns: a job of several nodes is vacated, not frozen (one frozen rank would stall the
# others), so it gets its checkpoint signal, ends, is queued again without counting against
# max_attempts (1 here), runs again on the 3 PCs left, resumes from its last checkpoint and
# finishes with >= 97 % test accuracy; gacct counts the vacate.
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_bins gtrain
DATA_CACHE=${GPOOL_DATA_DIR:-/var/cache/gpool}
mkdir -p "$DATA_CACHE" 2>/dev/null
"$GPOOL_SRC_DIR/train/fetch-digits.sh" "$DATA_CACHE/digits.csv.gz" >/dev/null 2>&1 ||
	skip_all "the digits set is not available: $("$GPOOL_SRC_DIR/train/fetch-digits.sh" "$DATA_CACHE/digits.csv.gz" 2>&1 | tail -1)"
test_under_cluster 4 --cpus 2 --sched-arg --max-attempts=1 --worker-arg --owner-sources=file \
	--worker-arg --owner-idle=1s --worker-arg --owner-poll=100ms
for h in h1 h2 h3 h4; do check "$h is up" wait_node_state $h UP 20; done

cp "$DATA_CACHE/digits.csv.gz" "$WORK/digits.csv.gz"
chown "$TEST_USER:" "$WORK/digits.csv.gz"
STORE=$WORK/store # stands for the checkpoint store (gpool ckpt put/get)
mkdir -p "$STORE" && chown "$TEST_USER:" "$STORE"

# SGD, 150 epochs of 8 steps: long enough to be cut well before its end
args=(--data digits.csv.gz --optimizer sgd --lr 0.1 --epochs 150 --ckpt run.ckpt --ckpt-every 20
	--ckpt-cmd "cp \"\$GTRAIN_CKPT\" $STORE/run.ckpt.tmp && mv $STORE/run.ckpt.tmp $STORE/run.ckpt"
	--resume-cmd "cp $STORE/run.ckpt \"\$GTRAIN_CKPT\"" --model "$WORK/m.gpm")
job=$(submit -t 10 -n 3 -N 3 -c 1 --signal=TERM@5 --stage digits.csv.gz -- gtrain "${args[@]}")
check "the training job runs" wait_state "$job" RUNNING 30
nodes=$(job_field "$job" nodelist)
like "$nodes" "^h[1-4],h[1-4],h[1-4]$" "on 3 hosts ($nodes)"
victim=${nodes##*,}
check "a checkpoint reached the store" wait_until 60 test -s "$STORE/run.ckpt"

# the owner of one of its PCs comes back while the job runs
STATE=$("$CLUSTER" path --dir "$CLUSTER_DIR" "$victim" state)
on_host "$victim" touch "$STATE/owner-active"
check "$victim's agent vacates the job" wait_until 5 grep -q "owner: vacating job $job.1" "$CLUSTER_DIR/$victim/gworkerd.log"
check "the job runs again" wait_eq 60 2 job_field "$job" attempt
check "and completes" wait_state "$job" COMPLETED 240
out=$(as_user glogs "$job" 2>&1)
nodes2=$(job_field "$job" nodelist)
unlike "$nodes2" "$victim" "its second attempt kept off $victim, whose owner is active ($nodes2)"
like "$out" "resuming from run.ckpt at step [1-9][0-9]* on 3 ranks" "the second attempt resumed from a checkpoint"
diag "$(grep -E 'resuming|gtrain: done' <<<"$out")"
acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$out" | tail -1)
check "test accuracy >= 97% after the resume (got ${acc:-none})" "$PY" -c "import sys; sys.exit(0 if float('${acc:-0}') >= 97 else 1)"
check "the model file was written" test -s "$WORK/m.gpm"
is "$(job_field "$job" vacates)" 1 "one vacate, not counted against max_attempts = 1"
like "$(gacct -j "$job" 2>&1 | awk 'NR == 2')" "COMPLETED" "gacct: COMPLETED"
done_testing
