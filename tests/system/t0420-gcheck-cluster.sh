#!/bin/bash
# t0420-gcheck-cluster: gcheck --cluster, one screening job per card, whose agents report the
# grades. Three hosts, four fake cards:
#   h1: GTX 1660 SUPER (card 0)   h2: RTX 3060 (card 0) + RX 6600 (card 1)   h3: RX 6700 XT
# Root screens the cluster with the "stable" profile and the "erroring" one for h2 card 1:
# that card is FAILED (drained with the reason) in gnodes -G, the other three good, each grade
# set by its own job; a one-card job on h2 card 1 then waits. A user can neither submit a
# screening job (gsub --screen, gcheck --cluster) nor get the agent to report a file an
# ordinary job wrote. Screening jobs whose result is garbage, oversized, a symbolic link, a
# FIFO or about another card report nothing, and the agent lives on. Screened again with
# "stable", the failed card is back and the waiting job runs. Last, a real measurement on the
# cpu backend through the whole path. The agents run root's jobs (allow_root): the screening
# jobs are root's.
# timeout: 180
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --cpus 2 --worker-arg --allow-root --fake-cards \
	"h1=nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W;h2=nvidia:GeForce RTX 3060:12GiB:8.6:170W,amd:Radeon RX 6600:8GiB:gfx1032:132W;h3=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W"
need_bins gcheck gp-probe

# card NODE INDEX FIELD: one field of a card in gnodes -G --json
card() {
	gnodes -G --json 2>/dev/null | "$PY" -c '
import json, sys
node, idx, field = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for n in json.load(sys.stdin).get("nodes", []):
    if n.get("name") == node:
        for c in n.get("cards", []):
            if int(c.get("index", 0)) == idx:
                print(c.get(field, ""))
' "$1" "$2" "$3"
}
agent_pid() { cat "$CLUSTER_DIR/$1/gworkerd.pid"; }
agent_alive() { kill -0 "$(agent_pid "$1")" 2>/dev/null; }

# ---- root screens the cluster: one job per card, the agents report ----
out=$(gcheck --cluster --profile stable --card-profile h2:1=erroring 2>&1)
rc=$?
diag "$out"
is "$rc" 1 "gcheck --cluster exits 1: a card failed"
like "$out" 'NODE +CARD +NAME +GRADE +BW\(GB/s\) +FLUCT +ERRORS +F32\(TFLOP/s\) +F16\(TFLOP/s\) +STATE +JOB +REASON' \
	"one table for the cluster"
is "$(printf '%s\n' "$out" | grep -cE '^h[123] ')" 4 "a row for each of the four cards"
like "$out" 'h2 +1 +Radeon RX 6600 +fail +400\.0 +±3\.2% +3 .* failed +[0-9]+ +3 memory errors' \
	"h2 card 1: fail, 3 memory errors, failed"
for c in "h1 +0" "h2 +0" "h3 +0"; do
	like "$out" "$c +[^ ].* good +400\\.0 .* up +[0-9]+ +-" "${c/ +/ card } graded good, up"
done
is "$(card h2 1 grade)" fail "gnodes -G: h2 card 1 grade fail"
like "$(card h2 1 state)" 'FAILED' "gnodes -G: h2 card 1 FAILED ($(card h2 1 state))"
like "$(card h2 1 state_reason)" '^screening failed: 3 memory errors$' "with the reason"
g=$(gnodes -G 2>&1)
diag "$g"
like "$g" 'h2 +1 .*fail .*screening failed: 3 memory errors' "gnodes -G shows it"
for hc in "h1 0" "h2 0" "h3 0"; do
	# shellcheck disable=SC2086
	is "$(card $hc grade)" good "gnodes -G: ${hc/ / card } grade good"
done
# each grade came from the card's own screening job, through its node's agent
jobs=$(printf '%s\n' "$out" | awk '/^h[123] / {
	for (i = 3; i < NF; i++) if ($i ~ /^(up|failed|drained)$/) { print $1 ":" $2 "=" $(i + 1); break } }' | sort)
diag "jobs: $(printf "%s " "$jobs" | tr "\n" " ")"
for j in $jobs; do
	hc=${j%=*}
	id=${j#*=}
	is "$(card "${hc%:*}" "${hc#*:}" screen_job)" "$id" "${hc/:/ card } was graded by its job $id"
	like "$(job_field "$id" spec.name)" "^gcheck:$hc\$" "job $id is named gcheck:$hc"
	is "$(job_field "$id" spec.screen)" true "job $id is a screening job"
done
check "h2's agent reported the failed card itself" grep -q \
	'card 1 graded fail (400.0 GB/s, 3 memory errors): reported' "$CLUSTER_DIR/h2/gworkerd.log"

# --json: the same, for scripts
js=$(gcheck --cluster --nodes h3 --profile stable --json 2>/dev/null)
res=$(printf '%s' "$js" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
c = d["cards"]
print(len(c), c[0]["node"], c[0]["card"], c[0]["grade"], c[0]["reported"], c[0]["state"],
      c[0]["bandwidth"]["mean_gbps"], c[0]["memtest"]["errors"], c[0]["job_id"] > 0)
' 2>&1)
is "$res" "1 h3 0 good True up 400.0 0 True" "--json --nodes h3: one card, good, reported, up"

# the failed card takes no new job
waiting=$(submit -w h2 --gpu-index 1 -- true)
sleep 3
is "$(job_state "$waiting")" PENDING "a user's job pinned to h2 card 1 waits while it is failed"

# ---- users cannot forge a screening result ----
n0=$(job_count)
out=$(as_user gsub --screen -w h1 --gpu-index 0 -- true 2>&1)
rc=$?
is "$rc" 1 "a user's gsub --screen is refused (exit 1)"
like "$out" "only root or the agents' account may submit screening jobs" "with gschedd's reason"
out=$(as_user gcheck --cluster --profile erroring 2>&1)
rc=$?
is "$rc" 3 "a user's gcheck --cluster is refused (exit 3)"
like "$out" "only root or the agents' account may submit screening jobs" "with gschedd's reason"
is "$(job_count)" "$n0" "and no job was submitted"
# an ordinary job writes a failing result where a screening job's would go, and points
# GPOOL_SCREEN_RESULT at it: the agent reads results of screening jobs only
forged='{"cards": [{"card": 0, "grade": "fail", "reason": "forged", "bandwidth": {"mean_gbps": 1}}]}'
id=$(submit -w h1 --gpu-index 0 -- sh -c "
f=\"\$GPOOL_SCRATCH/.gpool-screen.\$GPOOL_ATTEMPT.\$GPOOL_RANK.json\"
printf '%s' '$forged' > \"\$f\"; export GPOOL_SCREEN_RESULT=\"\$f\"
echo \"screen=\${GPOOL_SCREEN_RESULT}\"")
check "the forging job completes" wait_state "$id" COMPLETED 30
is "$(card h1 0 grade)" good "h1 card 0 is still good"
unlike "$(card h1 0 state)" FAILED "and not failed"
# a CardReport that claims to relay h1's screening job, sent by hand: a user is refused as
# for any grade; root too, since a relayed result comes over the node's own agent link
h1job=$(printf '%s\n' "$jobs" | sed -n 's/^h1:0=//p')
out=$(as_user gp-probe relay "h1:0:$h1job" 2>&1)
like "$out" "ERROR_PERMISSION.*only root or the agents' account may grade cards" \
	"a user's forged relay is refused ($out)"
out=$(gp-probe relay "h1:0:$h1job" 2>&1)
like "$out" "ERROR_PERMISSION.*comes from its own agent" "so is one signed by root ($out)"
is "$(card h1 0 grade)" good "h1 card 0 is still good"

# ---- the agent reads results defensively ----
pid1=$(agent_pid h1)
# shellcheck disable=SC2016 # expanded by the job
bad=(
	'echo garbage >"$GPOOL_SCREEN_RESULT"'
	'head -c 100000 /dev/zero | tr "\0" " " >"$GPOOL_SCREEN_RESULT"'
	'ln -s /etc/passwd "$GPOOL_SCREEN_RESULT"'
	'mkfifo "$GPOOL_SCREEN_RESULT"'
	'printf "{\"cards\": [{\"card\": 0\"grade\": \"fail\"" >"$GPOOL_SCREEN_RESULT"'
	'printf "{\"cards\": [{\"card\": 5, \"grade\": \"fail\", \"bandwidth\": {\"mean_gbps\": 1}}]}" >"$GPOOL_SCREEN_RESULT"'
	'true'
)
ids=""
for cmd in "${bad[@]}"; do
	ids+=" $(gsub --parsable --screen -w h1 --gpu-index 0 -- sh -c "$cmd")"
done
for id in $ids; do wait_final "$id" 30 >/dev/null; done
is "$(card h1 0 grade)" good "after 7 screening jobs with bad results h1 card 0 is still good"
is "$(card h1 0 screen_job)" "$(printf '%s\n' "$jobs" | sed -n 's/^h1:0=//p')" \
	"and its grade is still the first screening job's"
check "h1's agent is still the same process" test "$(agent_pid h1)" = "$pid1"
check "and alive" agent_alive h1
is "$(node_state h1)" UP "h1 is UP"
log=$(grep -E 'screening result not reported|not given: ignored|no result for its card' "$CLUSTER_DIR/h1/gworkerd.log")
diag "$log"
like "$log" 'not JSON' "garbage: not JSON"
like "$log" 'has 100000 bytes \(at most 65536\)' "oversized: refused by size"
like "$log" 'a symbolic link' "a symbolic link: not followed"
like "$log" 'not a regular file' "a FIFO: refused"
like "$log" 'result for card 5, which the task was not given: ignored' "another card: ignored"
like "$log" 'the task wrote none' "no file: nothing reported"

# ---- screened again: the failed card passes and is used again ----
out=$(gcheck --cluster --nodes h2 --card 1 --profile stable 2>&1)
rc=$?
diag "$out"
is "$rc" 0 "screening h2 card 1 again with a stable profile exits 0"
like "$out" 'h2 +1 .* good .* up ' "the screening job took the failed card and graded it good"
is "$(card h2 1 grade)" good "gnodes -G: h2 card 1 good"
unlike "$(card h2 1 state)" FAILED "no longer failed"
check "the waiting job runs on it" wait_state "$waiting" COMPLETED 30
id2=$(submit -w h2 --gpu-index 1 -- true)
check "a new job pinned to h2 card 1 runs" wait_state "$id2" COMPLETED 30

# ---- a real measurement, cpu backend, through the whole path ----
js=$(gcheck --cluster --nodes h1 --backend cpu --duration 1 --size 16M --fluct-warn 1000 \
	--fluct-fail 1000 --json 2>/dev/null)
rc=$?
res=$(printf '%s' "$js" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["cards"][0]
print(c["backend"], c["bandwidth"]["mean_gbps"] > 0, c["memtest"]["bytes"] == 16 << 20,
      c["memtest"]["errors"], c["f32_gflops"] > 0, c["grade"], c["reported"])
' 2>&1)
is "$rc/$res" "0/cpu True True 0 True good True" "a cpu measurement: fields, no errors, reported"
like "$(card h1 0 throughput)" '^[0-9.]+$' "gschedd keeps its throughput ($(card h1 0 throughput))"

# ---- --no-wait and bad use ----
out=$(gcheck --cluster --nodes h3 --profile stable --no-wait 2>&1)
rc=$?
is "$rc" 0 "--no-wait exits 0"
like "$out" '^h3 card 0: job [0-9]+$' "and prints the job"
check "that job completes" wait_final "$(printf '%s' "$out" | awk '{print $NF}')" 30
out=$(gcheck --cluster --report 2>&1)
is "$?" 2 "--cluster with --report is a usage error"
out=$(gcheck --nodes h1 --profile stable 2>&1)
is "$?" 2 "--nodes without --cluster is a usage error"
out=$(gcheck --cluster --nodes nosuch 2>&1)
rc=$?
is "$rc" 3 "an unknown node: exit 3"
like "$out" "no node 'nosuch'" "naming it"

done_testing
