#!/bin/bash
# t0170-garbage: random bytes, truncated, oversized (over max_request, 1 MiB here), empty and
# undecodable messages and a wrong protocol version sent to gschedd's port are each refused
# (an error reply or silence, never an answer), gschedd stays up and serves a normal gsub.
# timeout: 120
. "$(dirname "$0")/lib.sh"
need_bins gp-probe
test_under_cluster 1 --sched-arg --max-request=1MiB

sched_pid=$(cat "$CLUSTER_DIR/sched/gschedd.pid")
sched_alive() { kill -0 "$sched_pid" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$sched_pid/stat")" != Z ]; }

probe() { # DESC EXPECTED-REGEX gp-probe args...
	local desc=$1 want=$2
	shift 2
	local out
	out=$(as_user gp-probe --timeout 2000 "$@" 2>&1)
	like "$out" "$want" "$desc: refused ($out)"
	unlike "$out" '^reply: ok' "$desc: not answered as valid"
	sched_alive && ok "$desc: gschedd still runs" || fail "$desc: gschedd still runs" "$(tail -n 20 "$CLUSTER_DIR/sched/gschedd.log")"
}

probe "100 random bytes" 'ERROR_MALFORMED|ERROR_VERSION|ERROR_AUTH|no reply' random 100
probe "64 KiB of random bytes" 'ERROR_MALFORMED|ERROR_VERSION|ERROR_AUTH|no reply' random 65536
probe "a truncated envelope" 'ERROR_MALFORMED|ERROR_AUTH|no reply' truncated
probe "a 2 MB envelope over max_request" 'ERROR_TOO_LARGE|no reply' oversized 2000000
probe "protocol version 2" 'ERROR_VERSION' version 2
probe "protocol version 0" 'ERROR_VERSION|ERROR_MALFORMED' version 0
probe "a sealed body that is no Batch" 'ERROR_MALFORMED|no reply' badbody
probe "an empty message" 'ERROR_MALFORMED|ERROR_AUTH|ERROR_VERSION|no reply' empty

# a burst of garbage from several connections at once
burst=()
for _ in $(seq 20); do
	as_user gp-probe --timeout 300 random $((RANDOM % 4096 + 1)) >/dev/null 2>&1 &
	burst+=($!)
done
wait "${burst[@]}"
sched_alive && ok "gschedd survives a burst of 20 garbage senders" || fail "gschedd survives a burst of 20 garbage senders"

out=$(as_user gp-probe valid 2>&1)
like "$out" '^reply: ok job_query_reply' "a valid envelope is still answered"
out=$(as_user gsub --wait -- /bin/echo after-garbage 2>&1)
like "$out" '^after-garbage$' "a normal gsub works right after"
is "$(node_state h1)" UP "the node is still UP"

done_testing
