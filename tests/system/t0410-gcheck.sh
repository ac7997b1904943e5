#!/bin/bash
# t0410-gcheck: card screening on the cpu backend and its report to gschedd. One host, h1,
# with one fake card (card 0). gcheck measures on the cpu backend (fields present, no memory
# errors); a fixed "erroring" profile reported for h1 card 0 drains it as FAILED with the
# reason, so a one-card job on h1 waits; a "stable" report makes it usable again; the test-only
# fault injection must be caught by the memory test. Grading of reports uses profiles, so the
# test does not depend on how busy the machine is.
# timeout: 120
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 2 --fake-cards "h1=nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W"
need_bins gcheck

# card FIELD: one field of h1 card 0 in gnodes -G --json
card() {
	gnodes -G --json 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for n in d.get("nodes", []):
    if n.get("name") == "h1":
        for c in n.get("cards", []):
            if int(c.get("index", 0)) == 0:
                print(c.get(sys.argv[1], ""))
' "$1"
}

# ---- a real measurement on the cpu backend ----
out=$(gcheck --backend cpu --duration 2 --size 16M --json 2>&1)
rc=$?
diag "$(printf '%s' "$out" | head -c 1500)"
like "$rc" '^[01]$' "gcheck on the cpu backend runs (exit $rc: 0 good/warn, 1 fail)"
chk=$(printf '%s' "$out" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
c = d["cards"][0]
bw, mt = c["bandwidth"], c["memtest"]
ok = (c["backend"] == "cpu" and bw["mean_gbps"] > 0 and bw["fluct_pct"] >= 0
      and bw["samples"] >= 3 and mt["bytes"] == 16 << 20 and len(mt["patterns"]) == 4
      and c["f32_gflops"] > 0 and c["f16_gflops"] > 0 and c["grade"] in ("good", "warn", "fail")
      and "temperature_c" in c and "power_w" in c and "reason" in c)
print("fields" if ok else "missing", mt["errors"])
' 2>&1)
is "$chk" "fields 0" "--json has bandwidth, memtest (4 patterns), f32/f16, grade; 0 memory errors"
tab=$(gcheck --backend cpu --duration 0.5 --size 4M 2>&1)
like "$tab" 'CARD +BACKEND .*GRADE' "the readable table has a header"
like "$tab" '^0 +cpu ' "and a row for card 0 on the cpu backend"

# ---- a failed card is drained with the reason ----
out=$(gcheck --profile erroring --report --node h1 --card 0 2>&1)
rc=$?
diag "$out"
is "$rc" 1 "an erroring card grades fail (exit 1)"
like "$out" 'fail +yes +3 memory errors' "the table says fail, reported, and why"
is "$(card grade)" fail "gnodes -G: h1 card 0 grade fail"
like "$(card state)" 'FAILED' "gnodes -G: h1 card 0 is FAILED ($(card state))"
like "$(card state_reason)" 'screening failed: 3 memory errors' "with the reason ($(card state_reason))"
like "$(card throughput)" '^400(\.0)?$' "the throughput is the mean bandwidth"
g=$(gnodes -G 2>&1)
diag "$g"
like "$g" 'h1 .*fail .*screening failed' "gnodes -G shows the grade and the reason"
id=$(submit --gpus-per-task 1 -w h1 -- true)
sleep 3
is "$(job_state "$id")" PENDING "a one-card job on h1 waits while its only card is failed"

# only root or the agents' account grades cards
out=$(as_user gcheck --profile stable --report --node h1 --card 0 2>&1)
rc=$?
is "$rc" 3 "a user's report is refused (exit 3)"
like "$out" 'only root or the agents' "with the scheduler's reason"
is "$(card grade)" fail "and the card stays failed"

# ---- screened again and passed: usable again ----
out=$(gcheck --profile stable --report --node h1 --card 0 2>&1)
rc=$?
is "$rc" 0 "a stable card grades good (exit 0)"
like "$out" 'good +yes' "reported good"
is "$(card grade)" good "gnodes -G: grade good"
unlike "$(card state)" 'FAILED' "the card is no longer failed ($(card state))"
check "the waiting job runs on it" wait_state "$id" COMPLETED 30

# an unknown card is refused by gschedd
out=$(gcheck --profile stable --report --node h1 --card 5 2>&1)
like "$out" 'no card 5 on node' "a report for a card h1 does not have is refused"

# ---- fault injection: the memory test catches a flipped bit ----
out=$(gcheck --backend cpu --duration 0.5 --size 8M --inject-fault --json 2>&1)
rc=$?
is "$rc" 1 "with --inject-fault the card fails (exit 1)"
res=$(printf '%s' "$out" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["cards"][0]
print(c["memtest"]["errors"] > 0, c["grade"], "memory errors" in c["reason"])
' 2>&1)
is "$res" "True fail True" "errors > 0, grade fail, the reason names the memory errors"

done_testing
