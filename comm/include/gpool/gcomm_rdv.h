/* gpool/gcomm_rdv.h - libgcomm's rendezvous, its published interface: put/get/fence of small
 * blobs among the ranks of a job, used once while a communicator is made (to swap transport
 * addresses), and by gpool's launchers (gpool-launch, gstepd's PMIx server) for the same.
 *
 * Two implementations: "tcp" (rank 0 serves at ADDR:PORT over plain TCP: no ZeroMQ, so
 * comm/ builds where only a compiler exists) and "gpool" (the job's control path: the
 * RdvPut/RdvGet/RdvFence messages served by gschedd, authenticated with MUNGE; built
 * only with the rest of gpool).
 */
#ifndef GCOMM_RDV_H
#define GCOMM_RDV_H

#include <stddef.h>

#include "gpool/gcomm.h"

#define GC_RDV_KEY_MAX 128
#define GC_RDV_VAL_MAX 65536

typedef struct gc_rdv gc_rdv_t;

typedef struct gc_rdv_ops {
	const char *name;
	/* Join the rendezvous SPEC (meaning is the implementation's: "ADDR:PORT" for tcp,
	 * the job id for gpool) as RANK of SIZE. */
	gc_rdv_t *(*open)(const char *spec, int rank, int size, const char *token, int timeout_ms,
			  gc_error_t *err);
	/* Publish KEY = VAL (replacing an earlier value of this rank's). */
	int (*put)(gc_rdv_t *r, const char *key, const void *val, size_t len);
	/* Wait until all SIZE ranks have called fence (puts made before it are then
	 * visible to every get). */
	int (*fence)(gc_rdv_t *r);
	/* Read KEY (waiting for it up to the timeout); *val is malloc'ed. */
	int (*get)(gc_rdv_t *r, const char *key, void **val, size_t *len);
	/* The local address the rendezvous connection uses (IPv4 text): the address peers
	 * can most likely reach this host at. Empty if unknown. */
	const char *(*local_addr)(const gc_rdv_t *r);
	void (*close)(gc_rdv_t *r);
	const char *(*error)(const gc_rdv_t *r);
} gc_rdv_ops_t;

extern const gc_rdv_ops_t gc_rdv_tcp;
#ifdef GCOMM_HAVE_GPOOL_RDV
extern const gc_rdv_ops_t gc_rdv_gpool;
struct gp_config;
/* As gc_rdv_gpool.open, but reaching gschedd with cfg (borrowed: it must outlive the
 * rendezvous) rather than the commands' configuration: for gstepd, which has the scheduler's
 * endpoint from its agent. */
gc_rdv_t *gc_rdv_gpool_open_cfg(const struct gp_config *cfg, const char *spec, int rank, int size,
				int timeout_ms, gc_error_t *err);
#endif

#endif
