#!/bin/bash
# t0500-comm: libgcomm across hosts, launched with gsub: every collective, data type,
# operation and algorithm on 3 ranks over 3 hosts and 5 ranks over 3 hosts (two hosts with
# two ranks each, so the hierarchical algorithm has work), the rendezvous through gschedd,
# gcomm-bench as a job with its
# correctness check, and a rank killed in the middle of a 256 MiB allreduce: the others fail
# cleanly within 10 s, for each algorithm.
# timeout: 420
. "$(dirname "$0")/lib.sh"
need_bins gcomm-test gcomm-bench
test_under_cluster 3 --cpus 4

run_job() { # ARGS... -> output of the job (--wait), exit code in $job_rc
	job_out=$(as_user gsub --wait -t 5 "$@" 2>&1)
	job_rc=$?
}

run_job -n 3 -N 3 -- gcomm-test --env --quick
is "$job_rc" 0 "3 ranks on 3 hosts: gcomm-test exits 0"
is "$(grep -c 'of 3 (tcp, 3 hosts): all passed' <<<"$job_out")" 3 "3 ranks on 3 hosts: every rank passed every check"
[ "$job_rc" = 0 ] || diag "$(tail -20 <<<"$job_out")"

run_job -n 5 -N 3 -- gcomm-test --env --quick
is "$job_rc" 0 "5 ranks on 3 hosts: gcomm-test exits 0"
is "$(grep -c 'of 5 (tcp, 3 hosts): all passed' <<<"$job_out")" 5 "5 ranks on 3 hosts (hierarchy in use): every rank passed"
[ "$job_rc" = 0 ] || diag "$(tail -20 <<<"$job_out")"

# the rendezvous over gpool's control path (RdvPut/RdvGet/RdvFence to gschedd, MUNGE)
# instead of rank 0's socket
run_job -n 3 -N 3 --export=ALL,GCOMM_RDV=gpool -- gcomm-test --env --quick
is "$job_rc" 0 "rendezvous through gschedd: gcomm-test exits 0"
is "$(grep -c 'of 3 (tcp, 3 hosts): all passed' <<<"$job_out")" 3 "rendezvous through gschedd: every rank passed"
[ "$job_rc" = 0 ] || diag "$(tail -20 <<<"$job_out")"

run_job -n 3 -N 3 -- gcomm-bench --env -b 8 -e 16M -f 8 --iters 3
is "$job_rc" 0 "gcomm-bench runs as a 3-rank job"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok ' <<<"$job_out")
is "$rows" 8 "gcomm-bench: 8 sizes from 8 B to 16 MiB, each checked ok"
diag "$(grep -E '^#|^ +[0-9]' <<<"$job_out")"

for algo in ring ring2 rhd hier; do
	run_job -n 4 -N 3 --no-requeue -- gcomm-test --env --die-rank 1 --algo "$algo"
	[ "$job_rc" != 0 ] && ok "$algo: the job with a killed rank fails" ||
		fail "$algo: the job with a killed rank fails" "$(tail -5 <<<"$job_out")"
	lines=$(grep -E "allreduce \($algo\) failed cleanly after" <<<"$job_out")
	n=$(grep -c . <<<"$lines")
	is "$n" 3 "$algo: the 3 surviving ranks each got an error"
	[ "$n" = 3 ] || diag "$(tail -20 <<<"$job_out")"
	slow=$(awk '{for (i = 1; i <= NF; i++) if ($i == "after") print $(i + 1)}' <<<"$lines" |
		awk '$1 >= 10 {n++} END {print n + 0}')
	is "$slow" 0 "$algo: every survivor failed within 10 s of the allreduce's start"
	diag "$lines"
done
done_testing
