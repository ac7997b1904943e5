#!/bin/bash
# t1411-llm-stage-lazy: a model staged lazily (gsub --stage-lazy, docs/staging.md "Lazy
# staging") to a 3-host gllm job: each host's cache ends up holding only the chunks of its
# rank's layers (rank 0's also the header, the embedding and the head), never the whole file,
# and the 3 ranks' greedy completion is the one `gllm run` makes on one rank from the whole file.
# Attacks: a chunk damaged in the scheduler's store is refused (the job fails with the reason,
# no weights loaded from it); another user's process cannot use a job's stager (SO_PEERCRED),
# while the job's own account can. Measured: a model's start (staging + load + one token) lazily
# to 3 hosts, whole to 3 hosts, and from a local file (printed; docs/benchmarks.md).
# timeout: 420
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --node-timeout 10s --heartbeat-interval 1s --worker-arg --peer_port=7821
need_bins gllm gllm-mkmodel

D=$WORK/llm
mkdir -p "$D"
chmod 0777 "$D"
PROMPT="the quick brown fox"
# mkmodel SEED FILE: a random-weight TinyLlama of 6 layers in q4_0 (about 220 MB)
mkmodel() {
	"$GPOOL_BIN_DIR/gllm-mkmodel" --shape tinyllama-1.1b --type q4_0 --layers 6 --seed "$1" \
		"$WORK/$2" >/dev/null 2>&1 && chown "$TEST_USER:" "$WORK/$2"
}
# chunks FILE: "HASH LENGTH" of each 4 MiB chunk
chunks() {
	"$PY" - "$1" <<'EOF'
import hashlib, sys
with open(sys.argv[1], 'rb') as f:
    while True:
        b = f.read(4 << 20)
        if not b:
            break
        print(hashlib.sha256(b).hexdigest(), len(b))
EOF
}
# held FILE HOST: bytes of FILE's chunks in HOST's cache
held() {
	local cache
	cache=$("$CLUSTER" path --dir "$CLUSTER_DIR" "$2" state)/cache
	on_host "$2" ls "$cache" 2>/dev/null | sort >"$D/ls.$2"
	chunks "$1" | sort | join - "$D/ls.$2" | awk '{s += $2} END {print s + 0}'
}
# run_llm TAG STAGEOPT FILE TOKENS: gllm run as 3 ranks on 3 hosts, FILE staged with STAGEOPT;
# each rank's output in $D/TAG.out.R and .err.R; sets job_rc, job_out, secs
run_llm() {
	local t0 t1
	R="$USER_BIN/gllm run $3 --backend cpu --ctx 64 --parallel 1 -p '$PROMPT' -n $4 --temp 0 \
>$D/$1.out.\$GPOOL_RANK 2>$D/$1.err.\$GPOOL_RANK; s=\$?; echo \"\$GPOOL_NODENAME\" >$D/$1.host.\$GPOOL_RANK; exit \$s"
	t0=$(date +%s.%N)
	job_out=$(as_user gsub --wait -t 5 -n 3 -N 3 --export=ALL,GLLM_MEM=2G,GLLM_SPEED=10 \
		"$2" "$3" -- /bin/sh -c "$R" 2>&1)
	job_rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

mkmodel 5 m.gguf || { fail "gllm-mkmodel writes a model"; done_testing; }
size=$(stat -c %s "$WORK/m.gguf")
ref=$("$GPOOL_BIN_DIR/gllm" run "$WORK/m.gguf" --backend cpu --ctx 64 --parallel 1 -p "$PROMPT" \
	-n 8 --temp 0 2>/dev/null)

# ---- 1. lazily to 3 hosts: each holds its share, the answer is one rank's -------------------
run_llm lazy --stage-lazy m.gguf 8
is "$job_rc" 0 "a 3-rank gllm job on a lazily staged model completes"
[ "$job_rc" = 0 ] || diag "$job_out" "$(cat "$D"/lazy.err.* 2>/dev/null | tail -20)"
is "$(cat "$D/lazy.out.0" 2>/dev/null)" "$ref" "3 ranks from the lazy file answer what one rank makes from the whole file"
diag "$(grep -h "lazily staged" "$D"/lazy.err.* 2>/dev/null)"
sum=0 small=0 n=0
for h in h1 h2 h3; do
	b=$(held "$WORK/m.gguf" "$h")
	diag "$h holds $b of $size bytes: $(grep -h "lazy staging fetched" "$CLUSTER_DIR/$h/gworkerd.log" | tail -1)"
	sum=$((sum + b))
	[ "$b" -gt 0 ] && [ "$b" -lt $((size * 6 / 10)) ] && small=$((small + 1))
	n=$((n + 1))
done
is "$small" 3 "every host holds part of the model, none more than 60 % of it"
# the spans' boundary chunks and the header may be on two or three hosts: at most 3 chunks each
[ "$sum" -ge $((size - (4 << 20))) ] && [ "$sum" -le $((size + 9 * (4 << 20))) ] &&
	ok "the 3 hosts hold the model about once between them ($sum bytes for $size)" ||
	fail "the 3 hosts hold the model about once" "$sum bytes for $size"
h0=$(cat "$D/lazy.host.0" 2>/dev/null)
b0=$(held "$WORK/m.gguf" "${h0:-h1}")
[ "$b0" -ge $((size * 3 / 10)) ] && ok "rank 0's host holds the header, embedding and head with its layers ($b0 bytes)" ||
	fail "rank 0's host holds the embedding and head" "$b0 bytes"

# ---- 2. a chunk damaged in the store is refused --------------------------------------------
mkmodel 9 bad.gguf
# blk.5's down projection: the last layer's, read by the last rank only
k=$("$PY" - "$WORK/bad.gguf" "$GPOOL_SRC_DIR/tests/tools" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
import gguf
r = gguf.Reader(sys.argv[1])
t = r.tensors['blk.5.ffn_down.weight']
off = r.buf.find(bytes(t.data[:4096]))
print((off + len(t.data) // 2) >> 22)
EOF
)
h=$(chunks "$WORK/bad.gguf" | sed -n "$((k + 1))p" | cut -d' ' -f1)
# the chunks reach the store (a job that reads nothing), then one is damaged there
as_user gsub --wait -t 2 --stage-lazy bad.gguf -- /bin/true >/dev/null 2>&1
store=$CLUSTER_DIR/sched/state/chunks/$h
if [ -n "$h" ] && [ -f "$store" ]; then
	printf 'EVIL' | dd of="$store" bs=1 seek=1000 conv=notrunc 2>/dev/null
	run_llm bad --stage-lazy bad.gguf 4
	[ "$job_rc" != 0 ] && ok "a job whose chunk is damaged in the store fails" ||
		fail "a job whose chunk is damaged in the store fails" "$job_out"
	errs=$(cat "$D"/bad.err.* 2>/dev/null)
	like "$errs" "damaged|not found|refused|no such" "the rank that needed it says why"
	diag "$(tail -qn1 "$D"/bad.err.* 2>/dev/null)"
	[ ! -s "$D/bad.out.0" ] || ! grep -qF "$PROMPT" "$D/bad.out.0" &&
		ok "no answer came from damaged weights" || fail "no answer from damaged weights" "$(cat "$D/bad.out.0")"
	got=0
	for x in h1 h2 h3; do
		on_host "$x" test -f "$("$CLUSTER" path --dir "$CLUSTER_DIR" "$x" state)/cache/$h" && got=1
	done
	is "$got" 0 "no host keeps the damaged chunk in its cache"
else
	fail "the store holds the chunk to damage" "k=$k h=$h"
fi

# ---- 3. the stager answers only the job's account -------------------------------------------
CLIENT=$D/lazyclient.py
cat >"$CLIENT" <<'EOF'
import os, socket, struct, sys
name, path, off, ln = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect('\0' + name[1:])
fd = os.open(path, os.O_RDONLY)
try:
    socket.send_fds(s, [struct.pack('<IIQQ', 0x5a4c5047, 0, off, ln)], [fd])
except OSError:
    pass
rep = s.recv(512)
_, st, _ = struct.unpack('<IIQ', rep[:16])
print(st, rep[16:].split(b'\0')[0].decode())
EOF
chmod 0644 "$CLIENT"
id=$(submit --stage-lazy m.gguf -- /bin/sh -c "echo \"\$GPOOL_NODENAME \$GPOOL_STAGE_SOCK \$PWD\" >$D/sock; sleep 60")
for _ in $(seq 100); do [ -s "$D/sock" ] && break; sleep 0.2; done
read -r sh sname swd <"$D/sock"
if [ -n "$sname" ]; then
	echo secret >"$D/other.bin"
	chmod 0666 "$D/other.bin"
	r=$(on_host "$sh" runuser -u "$OTHER_USER" -- "$PY" "$CLIENT" "$sname" "$D/other.bin" 0 100 2>&1)
	like "$r" "^13 " "another user's process is refused by the job's stager (EACCES)"
	r=$(on_host "$sh" runuser -u "$TEST_USER" -- "$PY" "$CLIENT" "$sname" "$swd/m.gguf" 0 100 2>&1)
	is "$r" "0 " "the job's account gets a range of its lazy file"
	r=$(on_host "$sh" runuser -u "$TEST_USER" -- "$PY" "$CLIENT" "$sname" "$D/other.bin" 0 1 2>&1)
	like "$r" "^2 " "a file that is not the job's lazy file is not written (ENOENT: read it whole)"
	is "$(cat "$D/other.bin")" "secret" "the other file is untouched"
else
	fail "a job with a lazy file gets GPOOL_STAGE_SOCK" "$(cat "$D/sock" 2>/dev/null)"
fi
as_user gcancel "$id" >/dev/null 2>&1

# ---- 4. a model's start: lazy to 3 hosts, whole to 3 hosts, local ---------------------------
mkmodel 11 lz.gguf
mkmodel 12 wh.gguf
# both uploaded first, by a job that reads neither (lazy: no node fetches anything), so that
# the timed jobs measure the nodes' staging and the load, not gsub's hashing and upload
as_user gsub --wait -t 2 --stage-lazy lz.gguf --stage-lazy wh.gguf -- /bin/true >/dev/null 2>&1
# the links shaped to a LAN's 1 Gbit/s (tc tbf, as bench/staging.sh): every host's link both
# ways and the scheduler PC's side (the bridge)
shaped="not shaped"
if command -v tc >/dev/null; then
	tbf=(root tbf rate 1gbit burst 512kb latency 20ms)
	tc qdisc replace dev "$(slot_bridge)" "${tbf[@]}" && shaped="shaped to 1 Gbit/s"
	at_cleanup "tc qdisc del dev $(slot_bridge) root 2>/dev/null"
	for h in h1 h2 h3; do
		tc qdisc replace dev "$(slot_veth "$h")" "${tbf[@]}"
		on_host "$h" tc qdisc replace dev eth0 "${tbf[@]}"
	done
fi
t0=$(date +%s.%N)
"$GPOOL_BIN_DIR/gllm" run "$WORK/lz.gguf" --backend cpu --ctx 64 --parallel 1 -p "$PROMPT" -n 1 \
	--temp 0 >/dev/null 2>&1
local_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
run_llm lzt --stage-lazy lz.gguf 1
lazy_rc=$job_rc lazy_s=$secs
run_llm wht --stage wh.gguf 1
is "$lazy_rc $job_rc" "0 0" "the timed jobs (lazy and whole) complete"
diag "a model's start, $size bytes, links $shaped, staging + load + 1 token: lazily to 3 hosts $lazy_s s," \
	"whole to 3 hosts $secs s, local file $local_s s (submit to end; the chunks in the store already)"
done_testing
