/* pmixsrv.h: the PMIx server gstepd hosts for a `gsub --mpi=pmix` job (direct launch, as
 * `srun --mpi=pmix`): every task of the job is an MPI rank that gstepd starts like any other
 * task; this server gives each the job's map and wires them up. A PMIx fence between nodes
 * goes through the job's rendezvous in gschedd (RdvPut/RdvGet): each node puts the blob of
 * its ranks and reads every other node's. One per gstepd (PMIx allows one server per process).
 */
#ifndef GPOOL_WORKER_PMIXSRV_H
#define GPOOL_WORKER_PMIXSRV_H

#include <sys/types.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

struct gp_config;

typedef struct gp_pmixsrv gp_pmixsrv_t;

/* Start the server for launch l (its rank_nodes must hold the job's map) on node, its clients
 * running as uid/gid; cfg reaches gschedd (borrowed: it must outlive the server). */
gp_pmixsrv_t *gp_pmixsrv_create(const Gpool__Launch *l, const char *node, uid_t uid, gid_t gid,
				const struct gp_config *cfg, gp_error_t *err);
/* Register rank as a client and add what it needs to find the server to *env (a
 * NULL-terminated malloc'd vector, as gp_env_build makes; it may be reallocated). */
int gp_pmixsrv_client(gp_pmixsrv_t *p, uint32_t rank, char ***env, gp_error_t *err);
/* The server's rendezvous and shared-memory directory (a container binds it: container.c). */
const char *gp_pmixsrv_dir(const gp_pmixsrv_t *p);
/* Stop the server and remove its directory. */
void gp_pmixsrv_destroy(gp_pmixsrv_t **p);

#endif
