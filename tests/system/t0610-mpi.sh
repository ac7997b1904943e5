#!/bin/bash
# t0610-mpi: Open MPI programs across hosts without ssh. A job script calling plain `mpirun`
# under `gsub --mpi=mpirun` runs gp-mpi-check (MPI_Allreduce + a ring, checked by every rank)
# on 3 hosts, its daemons started through gpool's exec-proxies; every rank's output reaches
# glogs; gcancel in the middle leaves no process of the job on any host; a host cut in the
# middle gives NODE_FAIL/requeue and leaves no orphan.
# timeout: 600
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-mpi.sh"
command -v mpirun >/dev/null || skip_all "Open MPI's mpirun is not installed"
need_bins gp-mpi-check gpool-launch gpool-rsh
test_under_cluster 3 --cpus 2 --node-timeout 4s --heartbeat-interval 1s

# ranks over-subscribe 2 CPUs a host: without yield they spin against each other
cat >mpi-job.sh <<'SH'
#!/bin/sh
echo "script on $(hostname)"
exec mpirun --mca mpi_yield_when_idle 1 gp-mpi-check "$@"
SH
chmod 0755 mpi-job.sh
chown "$TEST_USER:" mpi-job.sh

# rank lines of OUT per host: "h1 h2 h3" sorted
rank_hosts() { sed -n 's/^rank [0-9]* of [0-9]* on \([^:]*\): .*allreduce ok ring ok$/\1/p' <<<"$1" | sort | paste -sd' '; }

# ---- mpirun inside a job script ---------------------------------------------------------------
out=$(as_user gsub --mpi=mpirun -n 3 -N 3 -t 4 --wait mpi-job.sh 2>&1)
rc=$?
is "$rc" 0 "--mpi=mpirun, 3 hosts: the job (mpirun in its script) exits 0"
is "$(rank_hosts "$out")" "h1 h2 h3" "every rank passed its allreduce and ring checks, one on each host"
like "$out" 'hosts: h[123],h[123],h[123]' "rank 0 gathered the three host names"
is "$(grep -c '^script on' <<<"$out")" 1 "the script ran once (rank 0)"
[ "$rc" = 0 ] || diag "$(tail -30 <<<"$out")"

id=$(submit --mpi=mpirun -n 6 -N 3 -t 4 mpi-job.sh)
if [ -n "$id" ] && wait_final "$id" 240; then
	is "$(job_state "$id")" COMPLETED "6 slots on 3 hosts: plain mpirun (no -n) fills them and completes"
	logs=$(as_user glogs "$id" 2>&1)
	is "$(rank_hosts "$logs")" "h1 h1 h2 h2 h3 h3" "glogs has the output of all 6 ranks, two on each host"
else
	fail "6 slots on 3 hosts: the job ends" "$(job_json "$id")"
fi

# ---- gcancel in the middle -------------------------------------------------------------------
orteds_everywhere() { # every host but rank 0's runs an orted or a rank of the job
	local h
	for h in h2 h3; do
		host_pgrep "$h" -u "$TEST_USER" -f 'orted|gp-mpi-check' >/dev/null || return 1
	done
}

id=$(submit --mpi=mpirun -n 3 -N 3 -t 2 mpi-job.sh --hold 120)
if [ -n "$id" ] && wait_state "$id" RUNNING 20 && wait_until 30 orteds_everywhere; then
	ok "a long MPI job runs its daemons and ranks on h2 and h3"
	diag "h2: $(host_pgrep h2 -a -u "$TEST_USER" 2>&1 | cut -c1-100 | paste -sd'|')"
	as_user gcancel "$id" >/dev/null 2>&1
	wait_state "$id" CANCELLED 20 && ok "gcancel ends it CANCELLED" || fail "gcancel ends it CANCELLED" "$(job_json "$id")"
	if wait_until 15 no_job_procs; then
		ok "after gcancel no process of the job is left on any host (no orted, no rank)"
	else
		fail "after gcancel no process of the job is left on any host" "$(ps -o pid,user,args -p "$(cluster_user_pids | paste -sd,)" 2>&1)"
	fi
else
	fail "a long MPI job runs its daemons and ranks on h2 and h3" "$(job_json "$id")" "$(as_user glogs "$id" 2>&1 | tail -20)"
fi

# ---- a host cut in the middle ------------------------------------------------------------------
mpi_host_cut orteds_everywhere "mpirun, orted, ranks, proxies" "proxy, orted and rank" --mpi=mpirun -n 3 -N 3 -t 2 mpi-job.sh --hold 120

done_testing
