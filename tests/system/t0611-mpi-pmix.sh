#!/bin/bash
# t0611-mpi-pmix: Open MPI programs launched directly, as `srun --mpi=pmix` does. Under
# `gsub --mpi=pmix` every task is a rank that gstepd starts (no mpirun, no orted, no ssh) and
# wires up through the PMIx server it hosts; the fences between hosts go through gschedd's
# rendezvous. gp-mpi-check (MPI_Allreduce + a ring, checked by every rank) on 3 hosts; every
# rank's output reaches glogs with its rank; gcancel in the middle leaves no process of the
# job on any host; a host cut in the middle gives NODE_FAIL/requeue and leaves no orphan.
# timeout: 600
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-mpi.sh"
command -v mpirun >/dev/null || skip_all "Open MPI is not installed"
need_bins gp-mpi-check
test_under_cluster 3 --cpus 2 --node-timeout 4s --heartbeat-interval 1s

# ranks over-subscribe 2 CPUs a host: without yield they spin against each other
cat >pmix-job.sh <<'SH'
#!/bin/sh
export OMPI_MCA_mpi_yield_when_idle=1
exec gp-mpi-check "$@"
SH
chmod 0755 pmix-job.sh
chown "$TEST_USER:" pmix-job.sh

# the hosts of OUT's rank lines of a world of N ranks (a rank started as a singleton says
# "of 1"), sorted: "h1 h2 h3"
rank_hosts() { sed -n "s/^rank [0-9]* of $2 on \([^:]*\): .*allreduce ok ring ok\$/\1/p" <<<"$1" | sort | paste -sd' '; }
ranks_everywhere() { # every host runs a rank of the job
	local h
	for h in h1 h2 h3; do
		host_pgrep "$h" -u "$TEST_USER" -f 'gp-mpi-check' >/dev/null || return 1
	done
}

pmix_dirs_before=$(ls -d /tmp/gpool-pmix.* 2>/dev/null)

# ---- one rank a host ----------------------------------------------------------------------------
out=$(as_user gsub --mpi=pmix -n 3 -N 3 -t 4 --wait pmix-job.sh 2>&1)
rc=$?
is "$rc" 0 "--mpi=pmix, 3 hosts: the job exits 0"
is "$(rank_hosts "$out" 3)" "h1 h2 h3" "every rank passed its allreduce and ring checks, one on each host"
like "$out" 'hosts: h[123],h[123],h[123]' "rank 0 gathered the three host names"
unlike "$out" 'orted|mpirun' "no mpirun, no orted"
[ "$rc" = 0 ] || diag "$(tail -30 <<<"$out")"

# ---- two ranks a host, through glogs ---------------------------------------------------------------
id=$(submit --mpi=pmix -n 6 -N 3 -t 4 pmix-job.sh)
if [ -n "$id" ] && wait_final "$id" 240; then
	is "$(job_state "$id")" COMPLETED "6 ranks on 3 hosts complete"
	logs=$(as_user glogs "$id" 2>&1)
	is "$(rank_hosts "$logs" 6)" "h1 h1 h2 h2 h3 h3" "glogs has the output of all 6 ranks, two on each host"
	logs1=$(as_user glogs --rank 4 "$id" 2>&1)
	like "$logs1" 'rank 4 of 6 on h[123]' "glogs --rank 4 gives rank 4's own output"
else
	fail "6 ranks on 3 hosts: the job ends" "$(job_json "$id")" "$(as_user glogs "$id" 2>&1 | tail -20)"
fi

# ---- gcancel in the middle -------------------------------------------------------------------
id=$(submit --mpi=pmix -n 3 -N 3 -t 2 pmix-job.sh --hold 120)
if [ -n "$id" ] && wait_state "$id" RUNNING 20 && wait_until 30 ranks_everywhere; then
	ok "a long direct-launched MPI job runs a rank on every host"
	as_user gcancel "$id" >/dev/null 2>&1
	wait_state "$id" CANCELLED 20 && ok "gcancel ends it CANCELLED" || fail "gcancel ends it CANCELLED" "$(job_json "$id")"
	if wait_until 15 no_job_procs; then
		ok "after gcancel no process of the job is left on any host"
	else
		fail "after gcancel no process of the job is left on any host" "$(ps -o pid,user,args -p "$(cluster_user_pids | paste -sd,)" 2>&1)"
	fi
else
	fail "a long direct-launched MPI job runs a rank on every host" "$(job_json "$id")" "$(as_user glogs "$id" 2>&1 | tail -20)"
fi
# the servers' directories this test's jobs made (gstepd makes /tmp/gpool-pmix.XXXXXX)
new_pmix_dirs() { comm -13 <(sort <<<"$pmix_dirs_before") <(ls -d /tmp/gpool-pmix.* 2>/dev/null | sort); }
if wait_until 10 eval '[ -z "$(new_pmix_dirs)" ]'; then
	ok "the PMIx servers' directories are removed"
else
	fail "the PMIx servers' directories are removed" "$(new_pmix_dirs)"
fi

# ---- a host cut in the middle ------------------------------------------------------------------
mpi_host_cut ranks_everywhere "ranks" "ranks" --mpi=pmix -n 3 -N 3 -t 2 pmix-job.sh --hold 120

done_testing
