#!/bin/bash
# t1260-gpu-share: cards shared by small jobs (gsub --gpu-share, docs/gpu-share.md) on fake
# cards in 2 netns hosts. Two 5 GiB slices of one user pack onto the 12 GiB RTX 3060 of h1 and
# run at once while a third waits; an exclusive job does not land on the shared card; another
# user's slice waits though its budget fits (MPS serves one user a card); the agent starts the
# card's MPS control daemon (a stand-in program here) as the job's user when the first slice
# arrives and stops it when the last has gone; each task gets its budget and MPS settings.
#   h1: RTX 3060 12 GiB     h2: RX 6700 XT 12 GiB
# timeout: 150
. "$(dirname "$0")/lib.sh"
# the stand-in for nvidia-cuda-mps-control, where the job's user can run it
FAKE_DIR=$(mktemp -d /tmp/gp-gpushare-fake.XXXXXX)
chmod 0755 "$FAKE_DIR"
cp "$GPOOL_SRC_DIR/worker/node/test/fake-mps-control.sh" "$FAKE_DIR/mps-control"
chmod 0755 "$FAKE_DIR/mps-control"
trap 'rm -rf "$FAKE_DIR"' EXIT
port=$((20000 + RANDOM % 20000))
while ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
test_under_cluster 2 --cpus 4 --sched-arg "--http-listen=127.0.0.1:$port" --worker-arg "--mps-control=$FAKE_DIR/mps-control" --fake-cards \
	"h1=nvidia:GeForce RTX 3060:12GiB:8.6:170W;h2=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W"
at_cleanup 'rm -rf "$FAKE_DIR"'

user_uid=$(id -u "$TEST_USER")
mpslog=$("$CLUSTER" path --dir "$CLUSTER_DIR" --outside h1 scratch)/mps/card0/log/control.log

out=$(as_user gsub --gpu-share -- true 2>&1)
is "$?" 1 "--gpu-share without --gpu-mem is refused"
like "$out" 'gpu-share needs --gpu-mem' "with the reason ($out)"
out=$(as_user gsub --gpu-share --gpu-mem 1G --gpus-per-task 2 -- true 2>&1)
is "$?" 1 "--gpu-share with two cards a task is refused"

# a slice that holds its card until $WORK/go-NAME exists, after printing what it was given
slice() { # slice NAME GSUB_ARGS...
	local name=$1
	shift
	submit --gpu-share --gpu-vendor nvidia "$@" -- sh -c "echo \"\$(hostname) CUDA=\$CUDA_VISIBLE_DEVICES BUDGET=\$GPOOL_GPU_BUDGET PIPE=\$CUDA_MPS_PIPE_DIRECTORY LIMIT=\$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT PCT=\$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\"; while [ ! -e $WORK/go-$name ]; do sleep 0.2; done"
}
a=$(slice a --gpu-mem 5G)
b=$(slice b --gpu-mem 5G)
if wait_state "$a" RUNNING 20 && wait_state "$b" RUNNING 20; then
	ok "two 5 GiB slices run at once on the one 12 GiB NVIDIA card"
else
	fail "two 5 GiB slices run at once" "$(job_json "$a") $(job_json "$b")"
fi
is "$(job_field "$a" nodelist)|$(job_field "$b" nodelist)" "h1|h1" "both on h1"
c=$(slice c --gpu-mem 5G)
sleep 2
is "$(job_state "$c")" PENDING "a third 5 GiB slice does not fit the card's 2 GiB left: it waits"
like "$(job_field "$c" reason)" 'waiting for 1 slices of 5.0G' "reason: $(job_field "$c" reason)"

logged() { [ -n "$(glogs "$1" 2>/dev/null)" ]; }
wait_until 10 logged "$a" || true
line=$(glogs "$a" 2>/dev/null | head -1)
diag "$line"
like "$line" "^h1 CUDA=GPU-[^ ]* BUDGET=5368709120 " "the task sees its card and its budget"
like "$line" "PIPE=/[^ ]*/mps/card0/pipe LIMIT=0=5120M PCT=42" \
	"and its card's MPS pipe, a 5120 MB pinned memory limit, 42 % of the SMs"
if wait_until 10 grep -q "start uid=$user_uid visible=GPU-" "$mpslog"; then
	ok "the agent started card 0's MPS control daemon as the job's user ($user_uid)"
else
	fail "the MPS control daemon started as the job's user" "$(cat "$mpslog" 2>&1)"
fi
is "$(grep -c start "$mpslog")" 1 "one daemon for the card, not one per slice"

# gstat -l, gnodes -G and /metrics say who shares what
like "$(gstat -l -j "$a" 2>&1)" 'GpuShare=yes GpuBudget=5.0G/Task Slices=h1:0' "gstat -l: the slice's budget and card"
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v k="$1" '$1 ~ "^" k "[{]node=\"h1\",card=\"0\"" { print $NF }'; }
is "$(metric gpool_card_shared_slices)" 2 "/metrics: two slices on h1's card 0"
is "$(metric gpool_card_shared_budget_bytes)" 10737418240 "/metrics: their budgets, 10 GiB"
is "$(metric gpool_card_shared_uid)" "$user_uid" "/metrics: gpool-user's"
like "$(gnodes -G 2>&1 | awk '$1 == "h1" && $2 == "0"')" " 2:10G/12G:$TEST_USER " "gnodes -G: h1's card 0 holds 2 slices, 10G of 12G, gpool-user's"
like "$(gnodes -G 2>&1 | head -1)" "POWER +SHARED +STATE" "gnodes -G has a SHARED column"

# an exclusive NVIDIA job does not land on the shared card
e=$(submit --gpus-per-task 1 --gpu-vendor nvidia -- true)
# another user's slice fits the budget left (2 GiB) but not the card's user
o=$(as_other gsub --parsable --gpu-share --gpu-vendor nvidia --gpu-mem 1G -- sh -c 'echo "$CUDA_MPS_PIPE_DIRECTORY"')
sleep 2
is "$(job_state "$e")" PENDING "an exclusive job waits while the card is shared"
# Resources, or Priority behind the third slice's reservation
like "$(job_field "$e" reason)" 'waiting for 1 cards|Priority' "reason: $(job_field "$e" reason)"
is "$(job_state "$o")" PENDING "gpool-other's 1 GiB slice waits: MPS serves one user a card"
# a sharing job on the AMD card is not held up by the NVIDIA card's user
d=$(submit --gpu-share --gpu-vendor amd --gpu-mem 4G -- sh -c 'echo "$(hostname) BUDGET=$GPOOL_GPU_BUDGET PIPE=${CUDA_MPS_PIPE_DIRECTORY-unset}"')
if wait_state "$d" COMPLETED 20; then
	like "$(glogs "$d")" '^h2 BUDGET=4294967296 PIPE=unset$' "a slice of the AMD card: its budget, no MPS"
else
	fail "a slice of the AMD card runs" "$(job_json "$d")"
fi

# the first ends: the third slice takes its room while b still holds the card for gpool-user;
# gpool-other's slice still waits for the card's user. (Both ended in one pass, the card would be
# whole again, and gpool-other's slice, first by fair share, could take it before the third.)
touch "$WORK/go-a"
if wait_state "$c" RUNNING 20; then ok "the third slice runs once one has ended"; else fail "the third slice runs" "$(job_json "$c")"; fi
touch "$WORK/go-b"
sleep 1
is "$(job_state "$o")" PENDING "gpool-other's slice still waits (the card is gpool-user's)"
touch "$WORK/go-c"
# the card whole again: gpool-other's slice (queued first) or the exclusive job, then the other
if wait_state "$o" COMPLETED 30 && wait_state "$e" COMPLETED 30; then
	ok "the card's user changes once it is whole again: gpool-other's slice and the exclusive job run"
else
	fail "gpool-other's slice and the exclusive job run" "$(job_state "$o") $(job_field "$o" reason) / $(job_state "$e") $(job_field "$e" reason)"
fi
other_uid=$(id -u "$OTHER_USER")
if wait_until 10 grep -q "start uid=$other_uid" "$mpslog"; then
	ok "gpool-other's slice had a daemon of its own user"
else
	fail "a daemon of gpool-other's" "$(cat "$mpslog" 2>&1)"
fi
# gpool-user's daemon was stopped when gpool-other's slice came (its directory, log included, then
# cleared for the new user); gpool-other's once its slice had ended: no daemon of either is left
if wait_until 10 grep -q "^stop uid=$other_uid" "$mpslog"; then
	ok "gpool-other's daemon stopped once its slice had ended"
else
	fail "gpool-other's daemon stopped" "$(cat "$mpslog" 2>&1)"
fi
if wait_until 10 no_user_pids h1 && wait_until 10 no_user_pids h1 "$OTHER_USER"; then
	ok "no daemon of either user is left on h1"
else
	fail "no daemon left on h1" "$(host_user_pids h1) $(host_user_pids h1 "$OTHER_USER")"
fi
dirs=$(stat -c '%U %a' "$(dirname "$(dirname "$mpslog")")" 2>&1)
is "$dirs" "$OTHER_USER 700" "the card's MPS directory is the last user's alone (mode 0700)"
diag "$(cat "$mpslog")"
done_testing
