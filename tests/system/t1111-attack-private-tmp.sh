#!/bin/bash
# t1111-attack-private-tmp: a job's own /tmp, /var/tmp and /dev/shm (docs/security.md "A job's
# own /tmp"). Two ranks of gpool-user's job on one node share them (a file one rank writes,
# the other reads) and still reach their working directory, which lies under the node's /tmp
# (and outside the test's directory, which lib.sh has every job keep: private_tmp_keep);
# the node's own directories never see their files; gpool-other, by a job of its own on the
# same node and by hand there, can neither see nor read them; they are gone when the job ends;
# --no-private-tmp gives the node's. Then the node's agent with private_tmp = tmpfs (16 MiB):
# gpool-other's job that fills its own /tmp stops at its size and the user's job beside it
# keeps its file and its room; and what a job keeps in its tmpfs counts against its --mem (15
# MiB there and 34 MiB of its own memory pass a 48 MiB limit: OUT_OF_MEMORY, while the 34 MiB
# alone fit).
# timeout: 240
. "$(dirname "$0")/lib.sh"
test_under_cluster 1 --cpus 4

scratch=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 scratch)
mark="gpt$$"
# a job's script, its @MARK@ and @WORK@ filled in
script() {
	sed -e "s|@MARK@|$mark|g" -e "s|@WORK@|$WORK|g" >"$WORK/$1"
	chmod 755 "$WORK/$1"
	chown "$TEST_USER:" "$WORK/$1"
}
script ranks.sh <<'END'
#!/bin/sh
r=$GPOOL_RANK
o=$((1 - r))
echo "tmp $r" >/tmp/@MARK@-$r
echo "shm $r" >/dev/shm/@MARK@-$r
echo "vtmp $r" >/var/tmp/@MARK@-$r
i=0
while [ ! -f /tmp/@MARK@-$o ] || [ ! -f /dev/shm/@MARK@-$o ] || [ ! -f /var/tmp/@MARK@-$o ]; do
	i=$((i + 1))
	[ $i -lt 200 ] || break
	sleep 0.1
done
echo "rank $r reads: $(cat /tmp/@MARK@-$o /dev/shm/@MARK@-$o /var/tmp/@MARK@-$o 2>&1 | tr '\n' ' ')"
[ "$r" = 0 ] && echo "the user's secret" >/tmp/@MARK@-secret && chmod 644 /tmp/@MARK@-secret
touch "reached-$r" && echo "rank $r reached its working directory"
echo "rank $r ready"
exec sleep 120
END

wd=/tmp/wd-$mark
mkdir "$wd"
chown "$TEST_USER:" "$wd"
at_cleanup "rm -rf $wd"
cp -p "$WORK/ranks.sh" "$wd/"
id=$(submit -n 2 -D "$wd" -- ./ranks.sh)
[ -n "$id" ] || { fail "the user's job is submitted"; done_testing; }
at_cleanup "as_user gcancel $id >/dev/null 2>&1"
check "the user's 2-rank job runs" wait_state "$id" RUNNING 60
both_ready() { [ "$(as_user glogs "$id" 2>/dev/null | grep -c ' ready$')" = 2 ]; }
check "both ranks are ready" wait_until 30 both_ready
out=$(as_user glogs "$id" 2>&1)
diag "$out"
like "$out" "rank 0 reads: tmp 1 shm 1 vtmp 1" "rank 0 reads rank 1's /tmp, /dev/shm and /var/tmp files"
like "$out" "rank 1 reads: tmp 0 shm 0 vtmp 0" "rank 1 reads rank 0's"
like "$out" "rank 0 reached its working directory" "the working directory under the node's /tmp is reached"
check "and written" test -f "$wd/reached-1"
for d in /tmp /dev/shm /var/tmp; do
	out=$(on_host h1 sh -c "ls $d/$mark-* 2>&1")
	like "$out" 'No such file' "the node's $d has none of the job's files"
done
backing=$scratch/tmp-job$id.1
is "$(on_host h1 stat -c '%U %a' "$backing" 2>&1)" "root 700" "the job's directories are under $backing, root's, 0700"
is "$(on_host h1 cat "$backing/tmp/$mark-secret" 2>&1)" "the user's secret" "root finds the secret there"

# gpool-other: by hand on the node, and by a job of its own there
out=$(on_host h1 runuser -u "$OTHER_USER" -- cat "$backing/tmp/$mark-secret" 2>&1)
like "$out" 'Permission denied' "gpool-other cannot read the user's /tmp through the node's scratch directory"
out=$(on_host h1 runuser -u "$OTHER_USER" -- ls "$backing" 2>&1)
like "$out" 'Permission denied' "nor list the job's directories"
upid=$(on_host h1 pgrep -u "$TEST_USER" -f 'sleep 120' | head -1)
out=$(on_host h1 runuser -u "$OTHER_USER" -- ls "/proc/$upid/root/tmp/" 2>&1)
unlike "$out" "$mark" "nor reach it through /proc/PID/root of the user's task"
script other.sh <<END
#!/bin/sh
echo "other sees: \$(ls /tmp /dev/shm /var/tmp 2>&1 | grep -c $mark) files"
cat /tmp/$mark-secret 2>&1
cat $backing/tmp/$mark-secret 2>&1
dd if=/dev/zero of=/tmp/$mark-other bs=1M count=4 2>/dev/null && echo "other wrote its own"
END
chown "$OTHER_USER:" "$WORK/other.sh"
oid=$(as_other gsub --parsable -- "$WORK/other.sh")
[ -n "$oid" ] && at_cleanup "as_other gcancel $oid >/dev/null 2>&1"
check "gpool-other's job ends" wait_final "$oid" 60
out=$(as_other glogs "$oid" 2>&1)
diag "$out"
like "$out" "other sees: 0 files" "gpool-other's job sees none of the user's files in its /tmp, /dev/shm, /var/tmp"
like "$out" "/tmp/$mark-secret: No such file" "nor the secret at its path"
like "$out" "tmp-job$id.1/tmp/$mark-secret: Permission denied" "nor through the scratch directory"
like "$out" "other wrote its own" "and writes its own /tmp"
is "$(on_host h1 cat "$backing/tmp/$mark-secret" 2>&1)" "the user's secret" "the user's secret is untouched"
is "$(on_host h1 sh -c "ls -d $scratch/tmp-job$oid.1 2>/dev/null | wc -l")" 0 "gpool-other's job's directories are removed at its end"

as_user gcancel "$id" >/dev/null 2>&1
check "the user's job ends" wait_final "$id" 60
gone() { [ "$(on_host h1 sh -c "ls -d '$backing' 2>/dev/null | wc -l")" = 0 ]; }
check "the user's job's directories are removed at its end" wait_until 20 gone

# --no-private-tmp: the node's own /tmp
nid=$(submit --no-private-tmp -- /bin/sh -c "echo shared >/tmp/$mark-node")
at_cleanup "rm -f /tmp/$mark-node"
check "a --no-private-tmp job ends" wait_final "$nid" 60
is "$(job_state "$nid")" COMPLETED "it completed"
is "$(on_host h1 cat "/tmp/$mark-node" 2>&1)" shared "its file is in the node's /tmp"

# private_tmp = tmpfs, 16 MiB a job: the other user's job fills its own, not the user's
"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h1
sleep 0.5
printf '%s' " --private-tmp=tmpfs --private-tmp-size=16MiB" >>"$CLUSTER_DIR/h1/agent.cmd"
"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h1
check "h1's agent is back with private_tmp = tmpfs" wait_node_state h1 UP 30
script keep.sh <<'END'
#!/bin/sh
dd if=/dev/urandom of=/tmp/@MARK@-keep bs=1M count=4 2>/dev/null
sum=$(cksum </tmp/@MARK@-keep)
echo "keep: $(df -k /tmp | awk 'NR == 2 {print $2}') KiB tmpfs"
echo "keep: ready"
while [ ! -f "@WORK@/other-filled" ]; do sleep 0.2; done
[ "$(cksum </tmp/@MARK@-keep)" = "$sum" ] && echo "keep: file intact"
dd if=/dev/zero of=/tmp/@MARK@-more bs=1M count=4 2>/dev/null && echo "keep: room left"
END
script fill.sh <<'END'
#!/bin/sh
dd if=/dev/zero of=/tmp/@MARK@-fill bs=1M count=64 2>&1 | grep -o 'No space left on device' | head -1
echo "fill: $(du -k /tmp/@MARK@-fill | cut -f1) KiB written"
touch "@WORK@/other-filled"
END
chown "$OTHER_USER:" "$WORK/fill.sh"
kid=$(submit -D "$WORK" -- ./keep.sh)
keep_ready() { as_user glogs "$kid" 2>/dev/null | grep -q 'keep: ready'; }
check "the user's job wrote 4 MiB into its tmpfs" wait_until 60 keep_ready
like "$(as_user glogs "$kid" 2>&1)" 'keep: 16384 KiB tmpfs' "its /tmp is a tmpfs of 16 MiB"
fid=$(as_other gsub --parsable -- "$WORK/fill.sh")
check "gpool-other's filling job ends" wait_final "$fid" 60
check "the user's job ends" wait_final "$kid" 60
fill=$(as_other glogs "$fid" 2>&1)
out="$fill
$(as_user glogs "$kid" 2>&1)"
diag "$out"
like "$out" 'No space left on device' "gpool-other's job fills its own /tmp and stops"
kib=$(sed -n 's/^fill: \([0-9]*\) KiB written/\1/p' <<<"$fill")
check "it wrote at most 16 MiB ($kib KiB)" test "${kib:-99999}" -le 16384
like "$out" 'keep: file intact' "the user's file is intact beside it"
like "$out" 'keep: room left' "and the user's /tmp still has room"

# the job's tmpfs is charged to its memory cgroup: 15 MiB in /tmp and 34 MiB of memory do not
# fit --mem 48M together, the 34 MiB alone do
grow='python3 -c "b = b\"x\" * (34 << 20); print(\"grew\", len(b))"'
alone=$(submit --mem 48M -- /bin/sh -c "$grow")
with=$(submit --mem 48M -- /bin/sh -c "dd if=/dev/zero of=/tmp/$mark-m bs=1M count=15 2>/dev/null; $grow")
check "a job that grows 34 MiB ends" wait_final "$alone" 60
check "one that also keeps 15 MiB in its /tmp ends" wait_final "$with" 60
is "$(job_state "$alone")" COMPLETED "34 MiB fit its 48 MiB limit ($(as_user glogs "$alone" 2>&1 | tail -n 1))"
is "$(job_state "$with")" OUT_OF_MEMORY "with 15 MiB in its tmpfs they do not: the tmpfs counts against --mem"

done_testing
