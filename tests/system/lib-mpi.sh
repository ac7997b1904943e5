# lib-mpi.sh: helpers of the MPI tests (t0610 mpirun, t0611 pmix), sourced after lib.sh.
# shellcheck shell=bash

# no process of the test user is left on any host
no_job_procs() { local left; left=$(cluster_user_pids); [ -z "$left" ]; }

# mpi_host_cut READY PROCS H3_PROCS SUBMIT_ARG...: a host cut in the middle of an MPI job. A
# long job of 3 ranks on h1-h3 (`submit SUBMIT_ARG...`) runs until READY (a command: its
# processes are up on every host); h3's agent is killed: the job ends NODE_FAIL or goes back to
# the queue, and h1 and h2 keep none of its PROCS (words for the messages); h3 back, the first
# attempt's H3_PROCS there are gone; the requeued job runs again on 3 hosts (attempt 2: one that
# cannot run is a failure, e.g. h3's attempt 1 gstepd, ending, removing attempt 2's working
# directory) and, cancelled, leaves no process on any host.
mpi_host_cut() {
	local ready=$1 procs=$2 h3_procs=$3 id h3_pids
	shift 3
	id=$(submit "$@")
	if [ -z "$id" ] || ! wait_state "$id" RUNNING 20 || ! wait_until 30 "$ready"; then
		fail "a long MPI job runs (before the cut)" "$(job_json "$id")" "$(as_user glogs "$id" 2>&1 | tail -20)"
		return
	fi
	ok "a long MPI job runs (before the cut)"
	h3_pids=$(host_user_pids h3 | paste -sd' ')
	"$CLUSTER" agent-kill --dir "$CLUSTER_DIR" h3 KILL
	if wait_state "$id" "NODE_FAIL|REQUEUED|PENDING" 20; then
		ok "h3 cut: the job ends NODE_FAIL or goes back to the queue ($(job_state "$id"))"
	else
		fail "h3 cut: the job ends NODE_FAIL or is requeued" "$(job_json "$id")"
	fi
	if wait_until 20 no_user_pids h1 && wait_until 5 no_user_pids h2; then
		ok "the live hosts h1 and h2 keep no process of the job ($procs)"
	else
		fail "the live hosts keep no process of the job ($procs)" "$(ps -o pid,user,args -p "$( (host_user_pids h1; host_user_pids h2) | paste -sd,)" 2>&1)"
	fi
	"$CLUSTER" agent-start --dir "$CLUSTER_DIR" h3
	old_alive() { local p; for p in $h3_pids; do [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && return 0; done; return 1; }
	if wait_node_state h3 UP 20 && wait_until 20 eval '! old_alive'; then
		ok "h3 back: the first attempt's $h3_procs there are gone"
	else
		fail "h3 back: the first attempt's $h3_procs there are gone" "$(ps -o pid,user,args -p "${h3_pids// /,}" 2>&1)"
	fi
	if wait_state "$id" RUNNING 30 && [ "$(job_field "$id" attempt)" = 2 ] && wait_until 30 "$ready"; then
		ok "the requeued job runs again on 3 hosts (attempt 2)"
	else
		fail "the requeued job runs again on 3 hosts (attempt 2)" \
			"state $(job_state "$id"), attempt $(job_field "$id" attempt)" "$(job_json "$id")" \
			"$(as_user glogs "$id" 2>&1 | tail -20)"
	fi
	as_user gcancel "$id" >/dev/null 2>&1
	wait_final "$id" 30 >/dev/null
	wait_until 15 no_job_procs && ok "cancelled at last: no process of it on any host" ||
		fail "cancelled at last: no process of it on any host" "$(ps -o pid,user,args -p "$(cluster_user_pids | paste -sd,)" 2>&1)"
}
