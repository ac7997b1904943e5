/* tp.h - the point-to-point layer under the collectives (one per transport).
 *
 * A transport connects the SIZE ranks of a communicator pairwise. Messages between two
 * ranks are matched in order: the n-th receive rank A posts for peer B gets the n-th
 * message B sent to A (the tag is a check only: a mismatch is a protocol error, EPROTO).
 * Requests are storage owned by the caller; a transport never allocates per message.
 * progress() must block (epoll, never spin) when nothing can move, so ranks that
 * outnumber cores do not starve each other.
 *
 * Failure: a broken or silent peer (no answer for timeout_ms: TCP_USER_TIMEOUT and
 * keepalive for tcp, UCX's peer error handling for ucx) fails every pending and later
 * request with EPIPE/ECONNRESET/ETIMEDOUT, and progress() returns -1.
 */
#ifndef GCOMM_TP_H
#define GCOMM_TP_H

#include <stddef.h>
#include <stdint.h>

#include "gpool/gcomm.h"

#define GC_TP_BLOB_MAX 1024 /* largest address blob a transport publishes */

typedef struct gc_tp gc_tp_t;

typedef struct gc_tpreq {
	int done;	       /* set to 1 by the transport when complete (ok or failed) */
	int err;	       /* 0, or errno of the failure */
	size_t len;	       /* bytes received (receives) */
	int peer;	       /* set by isend/irecv */
	uint32_t tag;	       /* set by isend/irecv */
	void *buf;	       /* set by isend/irecv */
	size_t size;	       /* set by isend/irecv: bytes to send / room to receive */
	size_t off;	       /* the transport's progress through buf */
	void *tp_priv;	       /* the transport's use */
	struct gc_tpreq *next; /* the transport's queues */
} gc_tpreq_t;

typedef struct {
	int rank, size;
	int timeout_ms;	   /* peer liveness: declare dead after this long without answer */
	int spin_us;	   /* poll this long for small messages before sleeping (0: never) */
	int local_pull;	   /* same-host peers may copy payloads from each other's memory */
	const char *addr;  /* local IPv4 address to listen on ("0.0.0.0" allowed) */
	const char *token; /* shared secret checked on every connection, may be NULL */
	uint64_t comm_key; /* random, agreed through the rendezvous: connections of another
			      communicator are refused */
	int auth_munge;	   /* peers prove their uid with a MUNGE credential first (tcp) */
} gc_tp_params_t;

typedef struct gc_tp_ops {
	const char *name;
	/* Create the local endpoint; fill BLOB (at most GC_TP_BLOB_MAX bytes) with what
	 * peers need to reach it. */
	gc_tp_t *(*create)(const gc_tp_params_t *p, void *blob, size_t *blob_len, gc_error_t *err);
	/* Connect to every peer. BLOBS[i] is rank i's blob (own included); HOST_OF[i] its
	 * host's index (ranks with the same index share a host). Returns when all
	 * connections are up, or -1 after timeout_ms. */
	int (*connect)(gc_tp_t *t, const void *const *blobs, const size_t *lens, const int *host_of,
		       gc_error_t *err);
	/* Post a send / receive (buf must stay valid until r->done). A receive of a
	 * message longer than LEN fails with EMSGSIZE. */
	int (*isend)(gc_tp_t *t, int peer, uint32_t tag, const void *buf, size_t len,
		     gc_tpreq_t *r);
	int (*irecv)(gc_tp_t *t, int peer, uint32_t tag, void *buf, size_t len, gc_tpreq_t *r);
	/* Move data. When nothing can move, wait up to TIMEOUT_MS (-1: until something
	 * happens) for the network. Returns >= 0 (requests completed), -1 on a failure
	 * (the transport is then broken: see above). */
	int (*progress)(gc_tp_t *t, int timeout_ms);
	/* Close every connection at once so peers fail fast (after a local failure). */
	void (*abort)(gc_tp_t *t);
	void (*destroy)(gc_tp_t *t);
	/* The last failure's message. */
	const char *(*error)(const gc_tp_t *t);
} gc_tp_ops_t;

extern const gc_tp_ops_t gc_tp_tcp;
#ifdef GCOMM_HAVE_UCX
extern const gc_tp_ops_t gc_tp_ucx;
#endif

/* Transport by name, NULL if unknown or not built in. */
const gc_tp_ops_t *gc_tp_find(const char *name);

#endif
