#!/bin/bash
# t0620-staging: files in and out without a shared filesystem (docs/staging.md). A 200 MB file
# and a directory of 1,000 small files reach 3 hosts through the scheduler's chunk store and
# arrive intact on every host (checked by hash in the task); a second job with the same data
# sends nothing (gsub's count of chunks sent, and every agent's count of chunks fetched); a
# chunk corrupted in one host's cache is refused and fetched again; --collect brings files
# back after success, failure and a time limit (gsub --wait, gpool fetch); a checkpoint put in
# attempt 1 is read back by attempt 2 after its host was cut.
# timeout: 400
. "$(dirname "$0")/lib.sh"
test_under_cluster 3 --node-timeout 8s --heartbeat-interval 1s

# ---- the data -----------------------------------------------------------------------------
mkdir -p "$WORK/data/small/sub"
head -c 200000000 /dev/urandom >"$WORK/data/big.bin"
for i in $(seq 1 1000); do
	d=$WORK/data/small
	[ $((i % 2)) = 0 ] && d=$WORK/data/small/sub
	echo "small file $i $RANDOM" >"$d/f$i.txt"
done
chmod 0750 "$WORK/data/small/sub"
chmod 0755 "$WORK/data/small/f1.txt"
chown -R "$TEST_USER:" "$WORK/data"
big_sum=$(sha256sum <"$WORK/data/big.bin" | cut -c1-64)
small_sum=$(cd "$WORK/data" && find small -type f | sort | xargs sha256sum | sha256sum | cut -c1-64)
mode_sub=$(stat -c %a "$WORK/data/small/sub")
want="$big_sum $small_sum $mode_sub 755"
# every rank prints its host and what it sees
check_cmd='printf "%s %s %s %s %s\n" "$(hostname)" "$(sha256sum <big.bin | cut -c1-64)" \
  "$(find small -type f | sort | xargs sha256sum | sha256sum | cut -c1-64)" \
  "$(stat -c %a small/sub)" "$(stat -c %a small/f1.txt)"'

# stage JOBNAME: submit the check on 3 hosts with the data staged; prints gsub's stderr line
stage_job() {
	local out
	out=$(cd "$WORK/data" && as_user gsub -n 3 -N 3 -J "$1" --stage big.bin --stage small/ -- \
		/bin/bash -c "$check_cmd" 2>&1)
	echo "$out"
}
job_of() { sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$1"; }
sent_of() { sed -n 's/.*: sent \([0-9]*\) of \([0-9]*\) chunks.*/\1 \2/p' <<<"$1"; }

# the line gstepd logs on HOST for JOB's staging
staged_line() { grep -h "job $2\.[0-9]*: staged" "$CLUSTER_DIR/$1/gworkerd.log" 2>/dev/null | tail -1; }
field() { sed -n "s/.* \([0-9]*\) $2.*/\1/p" <<<"$1"; }

check_hosts() { # JOB DESC
	local id=$1 desc=$2 lines
	if ! wait_state "$id" COMPLETED 120; then
		fail "$desc: the job completes" "$(job_json "$id")" "$(tail -5 "$CLUSTER_DIR"/h*/gworkerd.log)"
		return
	fi
	lines=$(as_user glogs "$id" 2>&1)
	local n=0 h
	for h in h1 h2 h3; do
		if grep -qx "$h $want" <<<"$lines"; then n=$((n + 1)); else
			fail "$desc: $h has the file and the directory intact" "got: $lines" "want: $h $want"
		fi
	done
	[ $n = 3 ] && ok "$desc: all 3 hosts have the 200 MB file and the 1,000 files, hashes and modes equal"
}

# ---- 1. first staging: everything is sent once --------------------------------------------
t0=$(date +%s.%N)
out=$(stage_job first)
id1=$(job_of "$out")
diag "$(grep 'gsub: staged' <<<"$out")"
if [ -z "$id1" ]; then
	fail "gsub --stage FILE --stage DIR submits" "$out"
	done_testing
fi
read -r sent total <<<"$(sent_of "$out")"
[ "${total:-0}" -ge 1000 ] && [ "$sent" = "$total" ] && ok "the first upload sends every chunk ($sent of $total)" ||
	fail "the first upload sends every chunk" "$out"
check_hosts "$id1" "first staging"
diag "first staging took $(echo "$(date +%s.%N) - $t0" | bc) s end to end"
for h in h1 h2 h3; do
	l=$(staged_line $h "$id1")
	diag "$h: $l"
	is "$(field "$l" fetched)" "$total" "$h fetched every chunk ($total) into its cache"
done

# ---- 2. the same data again: nothing is sent, nothing fetched ------------------------------
out=$(stage_job second)
id2=$(job_of "$out")
read -r sent total2 <<<"$(sent_of "$out")"
is "$sent" 0 "a second job with the same data uploads nothing (0 of $total2 chunks)"
check_hosts "$id2" "second staging"
for h in h1 h2 h3; do
	l=$(staged_line $h "$id2")
	like "$l" " 0 fetched \(0 bytes\)" "$h fetches nothing for the second job (all from its cache)"
done

# ---- 3. a corrupted chunk in h2's cache is refused and fetched again -----------------------
h2_state=$("$CLUSTER" path --dir "$CLUSTER_DIR" h2 state)
victim=$(on_host h2 sh -c 'ls -S "$0"/cache | head -1' "$h2_state")
if [ -n "$victim" ]; then
	on_host h2 sh -c 'printf "CORRUPT" | dd of="$0/cache/$1" bs=1 seek=1000 conv=notrunc status=none' \
		"$h2_state" "$victim"
	out=$(stage_job third)
	id3=$(job_of "$out")
	check_hosts "$id3" "after corrupting a cached chunk on h2"
	l=$(staged_line h2 "$id3")
	like "$l" " 1 fetched .* 1 refused" "h2 refused its damaged chunk and fetched it again ($l)"
	l=$(staged_line h1 "$id3")
	like "$l" " 0 fetched .* 0 refused" "h1 fetched nothing"
else
	fail "h2 has a chunk cache" "$(on_host h2 ls -la "$h2_state" 2>&1)"
fi

# ---- 4. --collect after success, failure and a time limit ----------------------------------
mkdir -p "$WORK/res" && chown "$TEST_USER:" "$WORK/res"
writer='mkdir -p out; echo "rank $GPOOL_RANK on $(hostname)" >"out/r.$GPOOL_RANK"; echo summary >summary.txt'
out=$(as_user gsub --wait -n 3 -N 3 --collect summary.txt --collect 'out/r.%t' \
	--collect-dir "$WORK/res/ok" -- /bin/bash -c "$writer" 2>&1)
rc=$?
is "$rc" 0 "gsub --wait --collect: the job succeeds"
is "$(cat "$WORK/res/ok/summary.txt" 2>&1)" summary "rank 0's summary.txt came back"
n=$(ls "$WORK/res/ok/out" 2>/dev/null | wc -l)
is "$n" 3 "every rank's out/r.%t came back ($(ls "$WORK/res/ok/out" 2>&1 | tr '\n' ' '))"
like "$(cat "$WORK/res/ok/out/r.2" 2>&1)" "^rank 2 on h[123]$" "rank 2's file has rank 2's content"

out=$(as_user gsub --wait --collect 'res*.txt' --collect-dir "$WORK/res/fail" -- \
	/bin/bash -c 'echo partial >res-fail.txt; exit 3' 2>&1)
rc=$?
is "$rc" 3 "a failing job: gsub --wait exits with its code"
is "$(cat "$WORK/res/fail/res-fail.txt" 2>&1)" partial "its files came back all the same"

out=$(as_user gsub --parsable -t 0:03 --collect 'late.txt' -- \
	/bin/bash -c 'echo before-timeout >late.txt; exec sleep 100' 2>&1)
if [[ $out =~ ^[0-9]+$ ]]; then
	idt=$out
	wait_state "$idt" TIMEOUT 40 && ok "the job hits its time limit" || fail "the job hits its time limit" "$(job_json "$idt")"
	out=$(as_user gpool fetch "$idt" --dir "$WORK/res/timeout" 2>&1)
	is "$(cat "$WORK/res/timeout/late.txt" 2>&1)" before-timeout "gpool fetch brings back a timed-out job's files ($out)"
else
	fail "gsub --collect -t 0:03" "$out"
fi
out=$(as_other gpool fetch "$id1" --dir /tmp 2>&1)
[ $? != 0 ] && ok "another user cannot fetch the job's files" || fail "another user cannot fetch" "$out"

# ---- 5. a checkpoint outlives its host ------------------------------------------------------
ckpt='if gpool ckpt get state state.txt 2>/dev/null; then echo "attempt $GPOOL_ATTEMPT read: $(cat state.txt)"; exit 0; fi
echo "written by attempt $GPOOL_ATTEMPT on $(hostname)" >state.txt
gpool ckpt put state state.txt || exit 7
echo put-done; exec sleep 1000'
idc=$(submit -- /bin/bash -c "$ckpt")
[ -n "$idc" ] && wait_state "$idc" RUNNING 20
for _ in $(seq 1 40); do as_user glogs "$idc" 2>/dev/null | grep -q put-done && break; sleep 0.5; done
host=$(job_field "$idc" nodelist)
if as_user glogs "$idc" 2>/dev/null | grep -q put-done && [ -n "$host" ]; then
	ok "attempt 1 on $host saved its checkpoint"
	"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" "$host" KILL
	if wait_state "$idc" COMPLETED 60; then
		ok "the job was requeued and attempt $(job_field "$idc" attempt) completed elsewhere"
		like "$(as_user glogs "$idc" 2>&1)" "attempt [2-9] read: written by attempt 1 on $host" \
			"the later attempt read attempt 1's checkpoint"
	else
		fail "the job was requeued and completed" "$(job_json "$idc")"
	fi
	"$CLUSTER" agent-start --dir "$CLUSTER_DIR" "$host"
else
	fail "attempt 1 saved its checkpoint" "$(as_user glogs "$idc" 2>&1)" "$(job_json "$idc")"
fi
out=$(as_user gpool ckpt get state /tmp/x.$$ 2>&1)
[ $? != 0 ] && ok "gpool ckpt outside a job says so" || fail "gpool ckpt outside a job says so" "$out"

done_testing
