#!/bin/bash
# t0612-mpi-workdir: `mpirun ./prog` from a job script, as on separate PCs. Under
# `gsub --mpi=mpirun --stage prog` every node gets prog in the job's directory, which has the
# same name on every node (the configured scratch path is the same on every PC); Open MPI's
# daemons enter rank 0's working directory on their own host and start ./prog from there. Every
# rank reports its host, its working directory and that directory's file system: one rank on
# each of h1-h3, all in the directory named for the job, each on its own host's scratch tmpfs.
# On a test bed whose hosts have scratch directories at paths of their own, the daemons on h2
# and h3 cannot enter rank 0's directory and ./prog is not found there: this test fails.
# timeout: 240
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || skip_all "Open MPI's mpirun is not installed"
need_bins gpool-launch gpool-rsh
test_under_cluster 3 --cpus 2

# prog runs as a plain program (no MPI calls): mpirun starts it the same way
cat >prog <<'SH'
#!/bin/sh
echo "rank ${OMPI_COMM_WORLD_RANK:-none} on $(hostname) in $(pwd) dev $(stat -c %d .) fs $(stat -f -c %T .)"
SH
cat >job.sh <<'SH'
#!/bin/sh
echo "script on $(hostname) in $(pwd)"
exec mpirun ./prog
SH
chmod 0755 prog job.sh
chown "$TEST_USER:" prog job.sh

scratch=$("$CLUSTER" path --dir "$CLUSTER_DIR" h1 scratch)
like "$scratch" "^/" "h1's scratch directory is known ($scratch)"
for h in h2 h3; do
	is "$("$CLUSTER" path --dir "$CLUSTER_DIR" "$h" scratch)" "$scratch" "$h's scratch directory has h1's path ($scratch)"
done

id=$(submit --mpi=mpirun -n 3 -N 3 -t 2 --stage prog job.sh)
if [ -z "$id" ] || ! wait_final "$id" 120; then
	fail "the job ends" "$(job_json "$id")"
	done_testing
fi
logs=$(as_user glogs "$id" 2>&1)
is "$(job_state "$id")" COMPLETED "mpirun ./prog on 3 hosts completes"
dir="$scratch/job$id.1"
is "$(grep -c '^script on' <<<"$logs")" 1 "the script ran once"
like "$logs" "^script on h[123] in $dir\$" "the script ran in the job's directory ($dir)"
ranks=$(grep '^rank ' <<<"$logs" | sort)
is "$(awk '{print $2}' <<<"$ranks" | paste -sd' ')" "0 1 2" "ranks 0, 1 and 2 report"
is "$(awk '{print $4}' <<<"$ranks" | sort | paste -sd' ')" "h1 h2 h3" "one rank on each host"
is "$(awk '{print $6}' <<<"$ranks" | sort -u)" "$dir" "every rank ran ./prog in the same-named job directory $dir"
is "$(awk '{print $10}' <<<"$ranks" | sort -u)" tmpfs "every rank's directory is on a tmpfs"
is "$(awk '{print $8}' <<<"$ranks" | sort -u | wc -l)" 3 "each on its own host's file system (3 distinct devices)"
[ "$(job_state "$id")" = COMPLETED ] && [ -n "$ranks" ] || diag "$(tail -30 <<<"$logs")"

done_testing
