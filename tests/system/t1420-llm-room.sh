#!/bin/bash
# t1420-llm-room: issue 37's room, end to end. A language model served by gllm as a gpool service
# whose one replica is a gang of 3 ranks, one per host (`gsub --service -N 2-3`), the model staged
# to the hosts lazily (`--stage-lazy`: each host fetches its rank's layers), reached through
# ggated at the service's address. 8 streaming clients at once; a host holding a stage is switched
# off mid-stream (its link cut, its agent and processes killed): every answer is complete and
# equal to what one rank makes (greedy), or ends with an SSE error event and no [DONE], never a
# cut answer with its [DONE]. The replica is served again by the 2 hosts left (the seconds from
# the switch-off to the first token are printed), its answers again equal to one rank's; the host
# returns and the replica is re-planned onto 3. Then rank 0's own host is switched off mid-stream:
# the same verdict, the streams' error events from ggated (its health check) within 20 s. Another
# user (gpool-other) and a process with no credential talk to a rank's data port while the gang
# forms: closed without a byte; once formed no stage port listens at all. The ranks meet through
# gschedd's rendezvous (gllm's default in a gpool job).
# timeout: 180
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
need_bins ggated gllm gllm-mkmodel
command -v curl >/dev/null || skip_all "curl is not installed"
test_under_cluster 3 --node-timeout 4s --heartbeat-interval 1s --kill-grace 2s
CL=$HERE/llm_clients.py

# the model: random weights of a llama of dim 256 (GQA 8/4) and 24 layers in q8_0: slow enough
# on this machine (tens of tokens a second) that 8 streams are still running when the host goes
"$GPOOL_BIN_DIR/gllm-mkmodel" --shape test-kquant --layers 24 --type q8_0 --seed 11 \
	"$WORK/m.gguf" >/dev/null 2>&1 || { fail "gllm-mkmodel writes the model"; done_testing; }
chown "$TEST_USER:" "$WORK/m.gguf"
SERVE=(--backend cpu --ctx 128 --parallel 8 --max-batch-tokens 128)
N_TOK=100
"$PY" - "$WORK/prompts.json" <<'EOF'
import json, sys
json.dump(["%s %d:" % (w, i) for i, w in enumerate("once upon a time the quick brown fox".split())],
          open(sys.argv[1], "w"))
EOF

# -- the reference: one rank, on loopback, the same 8 prompts at once (greedy; on the cpu a
# batch computes every row as alone: docs/llm.md)
RP=$(slot_port 18861)
ss -ltn "sport = :$RP" | grep -q LISTEN && skip_all "port $RP is taken"
env -u GCOMM_RDV "$GPOOL_BIN_DIR/gllm" serve "$WORK/m.gguf" --port "$RP" "${SERVE[@]}" \
	>"$TEST_DIR/ref.log" 2>&1 &
refpid=$!
at_cleanup "kill $refpid 2>/dev/null"
ref_up() { [ "$(curl -s -m 1 "http://127.0.0.1:$RP/health")" = ok ]; }
wait_until 60 ref_up || { fail "one rank serves the reference" "$(tail -3 "$TEST_DIR/ref.log")"; done_testing; }
"$PY" "$CL" stream "http://127.0.0.1:$RP" "$WORK/prompts.json" "$N_TOK" "$WORK/ref.json"
kill "$refpid"
wait "$refpid" 2>/dev/null
"$PY" - "$WORK/ref.json" "$WORK/refs.json" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))
assert all(r["done"] and r["text"] for r in res), res
json.dump({r["prompt"]: r["text"] for r in res}, open(sys.argv[2], "w"))
EOF
check "one rank answers the 8 prompts (the reference)" test -s "$WORK/refs.json"

# -- the gateway
GW=127.0.0.1:$(slot_port 18860)
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--health-interval 300 --connect-timeout 400 --poll-interval 300 --keepalive 2000 \
	>"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 10) ----'; tail -10 $TEST_DIR/ggated.log | sed 's/^/# /'"
URL=http://$GW/svc/llm

# -- the service: one replica, a gang of 2 to 3 ranks. Rank 2 waits 2.5 s before its gllm starts
# while $WORK/slow exists, so that ranks 0 and 1 hold their data ports open for the intruders
# (within GCOMM_TIMEOUT, which bounds the rendezvous too).
touch "$WORK/slow"
chmod 0666 "$WORK/slow"
CMD='[ "$GPOOL_RANK" = 2 ] && [ -e '"$WORK"'/slow ] && sleep 2.5
exec gllm serve m.gguf "$@"'
svc=$(GCOMM_TIMEOUT=4000 GLLM_SPEED=10 GLLM_MEM=2G submit --service -N 2-3 \
	--health-path /health -J llm --stage-lazy m.gguf -- /bin/sh -c "$CMD" gllm "${SERVE[@]}" \
	--stage-timeout 10)
[[ $svc =~ ^[0-9]+$ ]] || { fail "the gllm service is submitted" "$svc"; done_testing; }

# while the gang forms: every listening socket of a gllm on the hosts, attacked twice
declare -A hit
att_pids=()
attack_round() {
	local h ns line port pid
	for h in h1 h2 h3; do
		ns=$(slot_ns "$h")
		while read -r line; do
			port=$(awk '{print $4}' <<<"$line")
			port=${port##*:}
			[ -n "$port" ] && [ -z "${hit[$h:$port]:-}" ] || continue
			hit[$h:$port]=1
			pid=$(grep -o 'pid=[0-9]*' <<<"$line" | head -1 | cut -d= -f2)
			# the HTTP port of rank 0 is the API's, not a stage port
			[ "$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^GPOOL_RANK=//p')" = 0 ] &&
				[ "$port" = "$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^GPOOL_PORT=//p')" ] && continue
			echo "$h:$port other: $(ip netns exec "$ns" runuser -u "$OTHER_USER" -- "$PY" "$HERE/llm_attack.py" "$(host_addr "$h")" "$port" cred 2>&1)" >>"$WORK/attacks" &
			att_pids+=($!)
			echo "$h:$port nocred: $(ip netns exec "$ns" "$PY" "$HERE/llm_attack.py" "$(host_addr "$h")" "$port" nocred 2>&1)" >>"$WORK/attacks" &
			att_pids+=($!)
		done < <(ip netns exec "$ns" ss -ltnpH 2>/dev/null | grep '"gllm"')
	done
}
served() { [ "$(curl -s -m 1 "$URL/health")" = ok ]; }
deadline=$((SECONDS + 90))
while ! served && [ $SECONDS -lt $deadline ]; do
	attack_round
	sleep 0.1
done
replica_job() { gstat --json -j "$svc" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["replicas"][0]["job_id"])' 2>/dev/null; }
rjob=$(replica_job)
wait_until 20 served || { fail "the gang serves through ggated" "$(as_user glogs "$rjob" 2>&1 | tail -8)"; done_testing; }
rm -f "$WORK/slow"
for p in "${att_pids[@]}"; do wait "$p"; done
diag "$(cat "$WORK/attacks" 2>/dev/null)"
n_att=$(grep -c . "$WORK/attacks" 2>/dev/null)
like "$n_att" '^[1-9]' "intruders reached a rank's data port while the gang formed ($n_att tries)"
is "$(grep -Evc 'answered 0 bytes, closed|refused: Connection refused' "$WORK/attacks")" 0 "every one closed without a byte or refused (another user's credential; none at all)"
listening=$(for h in h1 h2 h3; do ip netns exec "$(slot_ns "$h")" ss -ltnpH 2>/dev/null | grep '"gllm"'; done | wc -l)
is "$listening" 1 "once formed, no stage port listens (only rank 0's HTTP port)"

log=$(as_user glogs "$rjob" 2>/dev/null)
like "$log" "24 layers on 3 ranks" "rank 0 printed its plan: 24 layers on 3 ranks"
# staged lazily: each rank fetched the chunks of its own layers only
lazy=$(grep -c "lazily staged 'm.gguf': layers" <<<"$log")
like "$lazy" '^[3-9]' "each of the 3 ranks fetched its own layers ($(grep -o "layers [0-9]*-[0-9]*[^:]*: [0-9.]* MiB in" <<<"$log" | head -3 | tr '\n' ';'))"
rank_hosts() { for h in h1 h2 h3; do host_pgrep "$h" -x gllm >/dev/null && echo "$h"; done; }
is "$(rank_hosts | wc -l)" 3 "a gllm rank runs on each host"
r0=$(gstat -l -j "$svc" 2>/dev/null | sed -n 's/.*Replica=0 .*Node=\([^ ]*\).*/\1/p')
off=$(rank_hosts | grep -vx "$r0" | tail -1)

# -- 8 streams through ggated; once each has its first token, $off is switched off
"$PY" "$CL" stream "$URL" "$WORK/prompts.json" "$N_TOK" "$WORK/run1.json" --started "$WORK/started" &
cl=$!
wait_until 60 test -s "$WORK/started" || fail "the 8 streams start"
veth=$(slot_veth "$off")
at_cleanup "ip link set $veth up 2>/dev/null"
t0=$(date +%s.%N)
ip link set "$veth" down
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" "$off" >/dev/null 2>&1
for p in $(host_user_pids "$off"); do kill -9 "$p" 2>/dev/null; done
wait "$cl"
verdict=$("$PY" "$CL" verdict "$WORK/run1.json" "$WORK/refs.json")
vrc=$?
diag "$verdict"
is "$vrc" 0 "$off (rank 0 on $r0) off mid-stream: every answer complete and right, or an error event ($(grep -c '^complete' <<<"$verdict") complete, $(grep -c '^error' <<<"$verdict") errors)"
like "$(grep -c '^error' <<<"$verdict")" '^[1-9]' "answers were in flight when $off went (else this tests nothing)"

# -- served again by the 2 hosts left: the first token, then 8 answers equal to one rank's
first=$("$PY" "$CL" first "$URL" 90)
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
like "$first" '^[0-9]' "served again by 2 hosts: the first token $secs s after $off was switched off"
diag "bench: llm room: first token $secs s after a host off (node_timeout 4 s)"
like "$(as_user glogs "$rjob" 2>/dev/null)" "24 layers on 2 ranks" "the replica re-planned: 24 layers on 2 ranks"
"$PY" "$CL" stream "$URL" "$WORK/prompts.json" "$N_TOK" "$WORK/run2.json"
verdict=$("$PY" "$CL" verdict "$WORK/run2.json" "$WORK/refs.json")
is "$(grep -c '^complete' <<<"$verdict")" 8 "on 2 ranks all 8 answers equal one rank's" || diag "$verdict"

# -- the host returns: re-planned onto 3 ranks
t2=$(date +%s.%N)
ip link set "$veth" up
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" "$off" >/dev/null 2>&1
last_plan() { as_user glogs "$rjob" 2>/dev/null | grep -o 'layers on [0-9] ranks' | tail -1; }
three() { [ "$(rank_hosts | wc -l)" = 3 ] && [ "$(last_plan)" = "layers on 3 ranks" ] && served; }
if wait_until 60 three; then
	t3=$(date +%s.%N)
	ok "back on 3 ranks $(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }') s after $off returned"
	"$PY" "$CL" stream "$URL" "$WORK/prompts.json" "$N_TOK" "$WORK/run3.json"
	verdict=$("$PY" "$CL" verdict "$WORK/run3.json" "$WORK/refs.json")
	is "$(grep -c '^complete' <<<"$verdict")" 8 "on 3 ranks again all 8 answers equal one rank's" || diag "$verdict"
else
	fail "the replica is re-planned onto 3 ranks when $off returns" "$(rank_hosts | tr '\n' ' ') / $(gstat -l -j "$svc" 2>&1 | tail -2)"
fi

# -- rank 0's PC switched off: no FIN or RST comes from it; ggated's health check finds the
# replica unreachable and ends its streams with the error event (not after --stream-timeout's
# 10 minutes of silence)
r0=$(gstat -l -j "$svc" 2>/dev/null | sed -n 's/.*Replica=0 .*Node=\([^ ]*\).*/\1/p')
rm -f "$WORK/started"
timeout 60 "$PY" "$CL" stream "$URL" "$WORK/prompts.json" "$N_TOK" "$WORK/run4.json" --started "$WORK/started" &
cl=$!
wait_until 60 test -s "$WORK/started" || fail "the 8 streams start again"
veth0=$(slot_veth "$r0")
at_cleanup "ip link set $veth0 up 2>/dev/null"
t4=$(date +%s.%N)
ip link set "$veth0" down
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" "$r0" >/dev/null 2>&1
for p in $(host_user_pids "$r0"); do kill -9 "$p" 2>/dev/null; done
wait "$cl"
t5=$(date +%s.%N)
verdict=$("$PY" "$CL" verdict "$WORK/run4.json" "$WORK/refs.json")
vrc=$?
diag "$verdict"
secs=$(awk -v a="$t4" -v b="$t5" 'BEGIN { printf "%.2f", b - a }')
is "$vrc" 0 "rank 0's host $r0 off mid-stream: every answer complete and right, or an error event, within $secs s"
like "$(grep -c '^error' <<<"$verdict")" '^[1-9]' "answers were in flight when $r0 went"
like "$secs" '^([0-9]|1[0-9])\.' "the streams ended within 20 s of the switch-off"
first=$("$PY" "$CL" first "$URL" 60)
like "$first" '^[0-9]' "served again by the other 2 hosts after rank 0's host went"

as_user gcancel "$svc" >/dev/null 2>&1
none_left() { no_user_pids h1 && no_user_pids h2 && no_user_pids h3; }
wait_until 20 none_left && ok "gcancel leaves no rank running" || fail "no rank left" "$(cluster_user_pids)"
done_testing
