#!/bin/bash
# t0900-gtrain: gtrain across 3 network-namespace hosts through gsub, the digits set staged to
# every node (--stage; no shared disk): >= 97 % test accuracy and a model file; with SGD, the
# same model (to rounding: 1e-3 of the largest weight, the same test accuracy) on 2 ranks as on
# 3 (fixed global batch); a rank made slower is named, its share shrinks, and the model stays
# the same; a run cut at step 50 on 3 hosts resumes from its last checkpoint (kept in a store
# outside the nodes through --ckpt-cmd / --resume-cmd) on 2 hosts and ends with the uncut
# run's model. The model file a run wrote is served by gserve (the model library reads what
# it wrote) and answers as a plain-Python forward pass of the file (tests/tools/gen-model.py).
# timeout: 420
. "$(dirname "$0")/lib.sh"
need_bins gtrain gserve
DATA_CACHE=${GPOOL_DATA_DIR:-/var/cache/gpool}
mkdir -p "$DATA_CACHE" 2>/dev/null
"$GPOOL_SRC_DIR/train/fetch-digits.sh" "$DATA_CACHE/digits.csv.gz" >/dev/null 2>&1 ||
	skip_all "the digits set is not available: $("$GPOOL_SRC_DIR/train/fetch-digits.sh" "$DATA_CACHE/digits.csv.gz" 2>&1 | tail -1)"
test_under_cluster 3 --cpus 2

cp "$DATA_CACHE/digits.csv.gz" "$WORK/digits.csv.gz"
chown "$TEST_USER:" "$WORK/digits.csv.gz"
STORE=$WORK/store # stands for the checkpoint store (gpool ckpt put/get)
mkdir -p "$STORE" && chown "$TEST_USER:" "$STORE"

run_job() { # ARGS... -> output (--wait), exit code in $job_rc
	job_out=$(as_user gsub --wait -t 5 --stage digits.csv.gz "$@" 2>&1)
	job_rc=$?
}
# relative difference of two model files' weights (largest |a-b| over the largest |a|)
model_diff() {
	"$PY" - "$1" "$2" <<'PYEOF'
import array, sys
def load(p):
    b = open(p, "rb").read()
    assert b.startswith(b"GPMODEL1\n")
    a = array.array("f"); a.frombytes(b[b.index(b"\n", 9) + 1:]); return a
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b)
print("%.3g" % (max(abs(x - y) for x, y in zip(a, b)) / max(abs(x) for x in a)))
PYEOF
}
small() { "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$1" "$2"; }

# 1. three ranks on three hosts
run_job -n 3 -N 3 -- gtrain --data digits.csv.gz --model "$WORK/m3.gpm"
is "$job_rc" 0 "3 ranks on 3 hosts: gtrain exits 0"
diag "$(grep -E '^(gtrain|epoch +(1|10|20)/)' <<<"$job_out")"
acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$job_out")
like "$(grep 'gtrain: done' <<<"$job_out")" "on 3 ranks" "the run used 3 ranks"
check "test accuracy >= 97% (got ${acc:-none})" "$PY" -c "import sys; sys.exit(0 if float('${acc:-0}') >= 97 else 1)"
is "$(grep -c '^epoch ' <<<"$job_out")" 20 "a progress line for each of the 20 epochs"
is "$(head -c 9 "$WORK/m3.gpm" 2>/dev/null)" "GPMODEL1" "the model file starts with GPMODEL1"
is "$(sed -n 2p "$WORK/m3.gpm" 2>/dev/null | head -c 95)" \
	'{"kind":"mlp","layers":[64,256,256,10],"activation":"relu","dtype":"f32","input_scale":0.0625}' \
	"the model file's JSON line"
like "$job_out" "model written to h[0-9]+:$WORK/m3.gpm" "the output says where the model is"

# trained, then served: gserve loads the model gtrain wrote and answers five digits as the
# reference forward pass of the same file does
"$GPOOL_BIN_DIR/gserve" --model "$WORK/m3.gpm" --listen "127.0.0.1:$(slot_port 18901)" >"$TEST_DIR/gserve.log" 2>&1 &
spid=$!
at_cleanup "kill $spid 2>/dev/null"
wait_eq 10 200 curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$(slot_port 18901)/health"
"$PY" -c '
import gzip, json, sys
rows = [l.split(",") for l in gzip.open(sys.argv[1], "rt") if l.strip() and l[0] != "#"][:5]
print(json.dumps({"inputs": [[float(v) for v in r[:-1]] for r in rows]}))' "$WORK/digits.csv.gz" >"$WORK/in.json"
curl -s -m 5 -d @"$WORK/in.json" "http://127.0.0.1:$(slot_port 18901)/v1/predict" >"$WORK/out.json"
"$PY" "$GPOOL_SRC_DIR/tests/tools/gen-model.py" predict "$WORK/m3.gpm" <"$WORK/in.json" >"$WORK/ref.json"
served=$("$PY" -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
d = max(abs(x - y) for p, q in zip(a["probabilities"], b["probabilities"]) for x, y in zip(p, q))
print("same" if a["classes"] == b["classes"] and len(a["probabilities"]) == 5 and d < 1e-4 else "differ %g" % d)
' "$WORK/out.json" "$WORK/ref.json" 2>&1)
is "$served" same "gserve serves the trained model: 5 digits answered as the reference forward pass"
kill "$spid" 2>/dev/null

# 2. the same global batch on 2 ranks: the same model up to rounding. SGD with momentum here:
# AdamW divides by the root of tiny second moments late in training, which amplifies rounding
# differences in the gradient sums (1e-5 -> 1e-2 between epochs 12 and 20 on this set; see
# docs/training.md); SGD keeps them at rounding size.
SGD=(--optimizer sgd --lr 0.1)
run_job -n 3 -N 3 -- gtrain --data digits.csv.gz "${SGD[@]}" --rebalance 0 --model "$WORK/s3.gpm"
is "$job_rc" 0 "SGD, 3 ranks with equal shares: gtrain exits 0"
ref_out=$job_out
run_job -n 2 -N 2 -- gtrain --data digits.csv.gz "${SGD[@]}" --model "$WORK/m2.gpm"
is "$job_rc" 0 "2 ranks on 2 hosts: gtrain exits 0"
d=$(model_diff "$WORK/s3.gpm" "$WORK/m2.gpm" 2>&1)
# Another rank count (or cut) sums the gradients in another order: rounding differences of
# 1e-7, which usually stay there (3.9e-7 seen) but now and then tip one ReLU or one sample's
# loss over an edge and end near 3e-4 of the largest weight (seen in 2 of 6 comparisons):
# the bound is 1e-3, and the test accuracies must agree within one test sample.
acc3=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$ref_out")
acc_close() { # OUTPUT: test accuracy within one of 359 samples of the 3-rank run's
	local a
	a=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$1")
	"$PY" -c "import sys; sys.exit(0 if abs(float('${a:-0}') - float('${acc3:-0}')) < 0.3 else 1)"
}
check "2 and 3 ranks give the same model (relative difference $d < 1e-3)" small "$d" 1e-3
check "2 and 3 ranks: the same test accuracy (within a sample)" acc_close "$job_out"

# 3. speed-weighted shares: rank 2 made slower (0.05 ms a row: 3.2 ms a step at an equal share,
# a few times its compute)
run_job -n 3 -N 3 -- gtrain --data digits.csv.gz "${SGD[@]}" --model "$WORK/mslow.gpm" --throttle 2:0.05 --rebalance 5
is "$job_rc" 0 "a throttled rank: gtrain exits 0"
like "$job_out" "rank 2 on h[0-9]+ is slow" "the slow rank is named in the job's output"
last=$(grep '^epoch  20/20' <<<"$job_out" | sed -n 's/.*shares \([0-9/]*\).*/\1/p')
IFS=/ read -r s0 _ s2 <<<"$last"
check "its share shrank (last shares $last)" test "${s2:-99}" -lt "${s0:-0}"
d=$(model_diff "$WORK/s3.gpm" "$WORK/mslow.gpm" 2>&1)
check "weighted shares give the same model (relative difference $d < 1e-3)" small "$d" 1e-3
check "weighted shares: the same test accuracy (within a sample)" acc_close "$job_out"
diag "$(grep -E 'slow|^epoch +(1|20)/' <<<"$job_out")"

# 4. cut at step 50 on 3 hosts (checkpoints every 20 into the store), resumed on 2 hosts
hooks=("${SGD[@]}" --ckpt run.ckpt --ckpt-every 20 --ckpt-cmd "cp \"\$GTRAIN_CKPT\" $STORE/run.ckpt"
	--resume-cmd "cp $STORE/run.ckpt \"\$GTRAIN_CKPT\"")
run_job -n 3 -N 3 --no-requeue -- gtrain --data digits.csv.gz "${hooks[@]}" --stop-after 50
is "$job_rc" 0 "the first part (stopped after step 50) exits 0"
check "a checkpoint reached the store" test -s "$STORE/run.ckpt"
run_job -n 2 -N 2 -- gtrain --data digits.csv.gz "${hooks[@]}" --model "$WORK/mres.gpm"
is "$job_rc" 0 "the resumed part on 2 hosts exits 0"
like "$job_out" "resuming from run.ckpt at step 40 on 2 ranks" "it resumed from the step-40 checkpoint"
d=$(model_diff "$WORK/s3.gpm" "$WORK/mres.gpm" 2>&1)
check "the resumed run ends with the uncut run's model (relative difference $d < 1e-3)" small "$d" 1e-3
check "the resumed run: the same test accuracy (within a sample)" acc_close "$job_out"
done_testing
