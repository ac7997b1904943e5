#!/bin/bash
# t1326-container-mpi-pmix: an Open MPI program launched directly (`gsub --mpi=pmix`, as t0611)
# with every rank inside a container of an image that has Debian's Open MPI libraries (pulled
# from a registry on the LAN, docs/containers.md). gp-mpi-check (MPI_Allreduce and a ring,
# checked by every rank) is staged and runs with the image's libmpi; each node's gstepd hosts the
# PMIx server and binds its rendezvous directory into the container, where the PMIX_* variables
# lead the ranks. 3 hosts, one rank each; then 6 ranks, two a host. --mpi=mpirun with
# --container is refused by gsub (its tasks are gpool-launch's, not in the image).
# timeout: 400
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need registry
need_bins gp-mpi-check
ctr_mpi_image_build || skip_all "no Open MPI image: $CTR_WHY"
REG=$(slot_addr 1):5000
export GPOOL_CLUSTER_STATE_SIZE=1200m
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG"
test_under_cluster 3 --cpus 2

reg_start "$REG" "$TEST_DIR/registry" || { fail "a registry starts" "$CTR_WHY"; done_testing; }
check "the Open MPI image is pushed to the registry" reg_push "$CTR_MPI_IMAGE" "$REG/gpool/mpi:1"

cp "$GPOOL_BIN_DIR/gp-mpi-check" "$WORK/gp-mpi-check"
# ranks over-subscribe 2 CPUs a host: without yield they spin against each other
cat >"$WORK/pmix-job.sh" <<'SH'
#!/bin/sh
export OMPI_MCA_mpi_yield_when_idle=1
echo "inside rank $GPOOL_RANK $(tr ' ' _ </etc/gpool-test-image) $(ls /usr/lib/x86_64-linux-gnu/libmpi.so.40) pmix ${PMIX_SERVER_TMPDIR:-none}"
exec ./gp-mpi-check "$@"
SH
chmod 0755 "$WORK/pmix-job.sh" "$WORK/gp-mpi-check"
chown "$TEST_USER:" "$WORK/pmix-job.sh" "$WORK/gp-mpi-check"
rank_hosts() { sed -n "s/^rank [0-9]* of $2 on \([^:]*\): .*allreduce ok ring ok\$/\1/p" <<<"$1" | sort | paste -sd' '; }

out=$(cd "$WORK" && as_user timeout 240 gsub --wait --mpi=pmix -n 3 -N 3 -t 4 --container "$REG/gpool/mpi:1" \
	--stage gp-mpi-check --stage pmix-job.sh -- ./pmix-job.sh 2>&1)
rc=$?
diag "$out"
is "$rc" 0 "--mpi=pmix in containers, 3 hosts: the job exits 0"
is "$(rank_hosts "$out" 3)" "h1 h2 h3" "every rank passed its allreduce and ring checks, one on each host"
is "$(grep -c '^inside rank [0-2] gpool_mpi_test_image /usr/lib/x86_64-linux-gnu/libmpi.so.40' <<<"$out")" 3 \
	"every rank ran in the image, with its libmpi"
unlike "$out" 'orted|mpirun' "no mpirun, no orted"

out=$(cd "$WORK" && as_user timeout 240 gsub --wait --mpi=pmix -n 6 -N 3 -t 4 --container "$REG/gpool/mpi:1" \
	--stage gp-mpi-check --stage pmix-job.sh -- ./pmix-job.sh 2>&1)
is "$(rank_hosts "$out" 6)" "h1 h1 h2 h2 h3 h3" "6 ranks, two a host, in containers: all pass"
[ "$(rank_hosts "$out" 6)" = "h1 h1 h2 h2 h3 h3" ] || diag "$(tail -30 <<<"$out")"

out=$(cd "$WORK" && as_user gsub --mpi=mpirun -n 2 --container "$REG/gpool/mpi:1" -- ./gp-mpi-check 2>&1)
like "$out" "option '--container' does not take '--mpi=mpirun': use '--mpi=pmix'" "--mpi=mpirun with --container is refused with the reason"

done_testing
