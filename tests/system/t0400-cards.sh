#!/bin/bash
# t0400-cards: placement on fake mixed-vendor cards across 3 netns hosts: VRAM, vendor, model
# and compute-capability filters; best fit on VRAM; exclusive cards; a gang job over nodes;
# every task's binding variables read from inside the task (two tasks on one host: one card
# each); pending reasons; the power cap.
#   h1: GTX 1660 SUPER 6 GiB cc 7.5 125 W
#   h2: RX 6700 XT 12 GiB gfx1031 230 W
#   h3: RTX 3060 12 GiB cc 8.6 170 W + RX 6600 8 GiB gfx1032 132 W
# timeout: 150
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --cpus 4 --sched-arg --power-cap-watts=600 --fake-cards \
	"h1=nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W;h2=amd:Radeon RX 6700 XT:12GiB:gfx1031:230W;h3=nvidia:GeForce RTX 3060:12GiB:8.6:170W,amd:Radeon RX 6600:8GiB:gfx1032:132W"

cards=$(gnodes -G 2>&1)
diag "$cards"
like "$cards" 'GTX 1660 SUPER' "gnodes -G lists the 1660"
like "$cards" 'RX 6700 XT' "gnodes -G lists the 6700 XT"
n=$(gnodes -G --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sum(len(n.get("cards",[])) for n in d.get("nodes",[])))')
is "$n" 4 "four cards in the inventory (--json)"

# where a one-card job lands, and what it sees
place() { # place GSUB_ARGS...: run one task that prints its binding; echo "node|vars"
	local id
	id=$(submit "$@" -- sh -c 'echo "$(hostname)|CUDA=${CUDA_VISIBLE_DEVICES-unset}|HIP=${HIP_VISIBLE_DEVICES-unset}|GPUS=${GPOOL_GPUS-unset}"') || return 1
	wait_state "$id" COMPLETED 30 >/dev/null || { echo "job $id did not complete: $(job_field "$id" reason)"; return 1; }
	glogs "$id" | head -1
}

out=$(place --gpus-per-task 1 --gpu-mem 4G)
like "$out" '^h1\|' "a 4 GiB job takes the 6 GiB card (best fit), not a 12 GiB one: $out"
like "$out" 'CUDA=GPU-' "it sees its card by UUID in CUDA_VISIBLE_DEVICES"
out=$(place --gpus-per-task 1 --gpu-vendor amd --gpu-mem 10G)
like "$out" '^h2\|' "amd with >= 10 GiB goes to the 6700 XT: $out"
like "$out" 'HIP=0' "it sees one AMD device in HIP_VISIBLE_DEVICES"
like "$out" 'CUDA=\|' "and no NVIDIA device"
out=$(place --gpus-per-task 1 --gpu-cc 8.0)
like "$out" '^h3\|' "compute capability >= 8.0 only the RTX 3060: $out"
out=$(place --gpus-per-task 1 --gpu-model '*6600*')
like "$out" '^h3\|.*HIP=0' "a model pattern finds the RX 6600: $out"
out=$(place)
like "$out" 'CUDA=\|' "a job without cards sees none"

# a gang over the two AMD cards of different models needs --gpu-mixed
out=$(as_user gsub -n 2 --gpus-per-task 1 --gpu-vendor amd -- true 2>&1)
is "$?" 1 "two AMD cards of one model do not exist: the job is refused"
like "$out" '^gsub: requested node configuration is not available: TooLarge \(not 2 cards of one model at once in this cluster\); the cluster has 3 nodes' \
	"with the reason ($out)"
id=$(submit -n 2 --gpu-mixed --gpus-per-task 1 --gpu-vendor amd -- sh -c 'echo "$GPOOL_RANK $(hostname) $HIP_VISIBLE_DEVICES"')
if wait_state "$id" COMPLETED 30; then
	ok "with --gpu-mixed it runs on both AMD cards"
	like "$(glogs "$id" | sort | tr '\n' ' ')" '0 h[23] 0 1 h[23] 0' "each rank sees exactly one device"
else
	fail "with --gpu-mixed it runs on both AMD cards" "$(job_json "$id")"
fi

# two tasks on one host with two cards: each task is bound to its own card, and only to it
id=$(submit -n 2 -N 1 -w h3 --gpu-mixed --gpus-per-task 1 -- sh -c 'echo "$GPOOL_RANK $(hostname) CUDA=${CUDA_VISIBLE_DEVICES-unset} HIP=${HIP_VISIBLE_DEVICES-unset}"')
if wait_state "$id" COMPLETED 30; then
	out=$(glogs "$id" | sort)
	diag "$out"
	is "$(grep -c ' h3 ' <<<"$out")" 2 "both tasks ran on h3"
	is "$(grep -c 'CUDA=GPU-[^ ]* HIP=$' <<<"$out")" 1 "one task sees only the RTX 3060, by UUID"
	is "$(grep -c 'CUDA= HIP=0$' <<<"$out")" 1 "the other sees only the RX 6600"
else
	fail "two one-card tasks on h3 run" "$(job_json "$id")"
fi

# no such card anywhere
out=$(as_user gsub --gpus-per-task 1 --gpu-mem 32G -- true 2>&1)
is "$?" 1 "a 32 GiB request is refused"
like "$out" '^gsub: requested node configuration is not available: NoMatchingCard \(.*32.*\)' \
	"it says no card has 32 GiB ($out)"

# exclusive cards: while one job holds the 1660, a second one waits for it
a=$(submit --gpus-per-task 1 --gpu-model '*1660*' -- sleep 6)
wait_state "$a" RUNNING 20 >/dev/null
b=$(submit --gpus-per-task 1 --gpu-model '*1660*' -- true)
sleep 2
is "$(job_state "$b")" PENDING "the second 1660 job waits while the card is taken"
like "$(job_field "$b" reason)" 'waiting for 1 cards' "reason: $(job_field "$b" reason)"
check "it runs once the first one ends" wait_state "$b" COMPLETED 30

# the power cap (600 W): 230 W + 170 W + 132 W = 532 W fit; adding the 125 W card does not
ids=()
for m in '*6700*' '*3060*' '*6600*'; do
	ids+=("$(submit --gpus-per-task 1 --gpu-model "$m" -- sleep 8)")
done
for i in "${ids[@]}"; do wait_state "$i" RUNNING 20 >/dev/null; done
c=$(submit --gpus-per-task 1 --gpu-model '*1660*' -- true)
sleep 2
is "$(job_state "$c")" PENDING "a job that would go over the power cap waits"
like "$(job_field "$c" reason)" 'PowerCap' "reason: $(job_field "$c" reason)"
check "it runs when power is free again" wait_state "$c" COMPLETED 40

# the power report
pw=$(gpool power 2>&1)
diag "$pw"
like "$pw" 'h3 +2 +302 +7.50 +371.4' "gpool power: h3 = (170 + 132 + 2 x 3.75) x 1.2 = 371.4 W"

done_testing
