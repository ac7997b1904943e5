/* gpool/gcomm.h - collectives for the ranks of a job: allreduce and friends over TCP,
 * UCX or MPI, on host or GPU buffers, across NVIDIA, AMD and CPU-only ranks.
 *
 * A communicator joins SIZE ranks. Each rank calls the same collectives in the same order
 * (as with MPI). Buffers may be host memory or device memory of the communicator's
 * kernels backend (gpool/kernels.h); device buffers are staged through pinned host
 * memory, so ranks on different vendors' cards share one communicator.
 *
 * Conventions: 0 on success, -1 with errno set on failure; gc_error() gives a lowercase
 * message. After a failure of the data path (a peer died: EPIPE/ECONNRESET, or it went
 * silent longer than the timeout: ETIMEDOUT) the communicator is broken: every later
 * call fails with EPIPE, and the peers' calls fail too (it closes its connections), so
 * no rank hangs. Destroy it and make a new one.
 *
 * Thread safety: one thread calls a communicator's functions at a time; non-blocking
 * operations progress in the communicator's own thread.
 */
#ifndef GPOOL_GCOMM_H
#define GPOOL_GCOMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gc_comm gc_comm_t;
typedef struct gc_req gc_req_t;

/* The same values as gk_dtype_t and gk_redop_t of gpool/kernels.h. */
typedef enum {
	GC_F32 = 0,
	GC_F16 = 1,
	GC_BF16 = 2,
	GC_F64 = 3,
	GC_I32 = 4,
} gc_dtype_t;

typedef enum {
	GC_SUM = 0,
	GC_MAX = 1,
	GC_MIN = 2,
	GC_AVG = 3,
} gc_op_t;

/* Pass as the send buffer for an in-place operation (or pass the receive buffer). */
#define GC_IN_PLACE ((const void *)1)

typedef struct {
	char text[256];
} gc_error_t;

typedef struct {
	int rank; /* 0 .. size-1 */
	int size;
	/* Rendezvous: "tcp://ADDR:PORT" (rank 0 serves it, others connect), "gpool" (the
	 * job's control path, when built with it), or NULL: GCOMM_RDV, else gpool's job
	 * environment (MASTER_ADDR/MASTER_PORT). */
	const char *rdv;
	/* Data path: "tcp" (gpool's own sockets), "ucx" (UCP tag API), "mpi" (MPI
	 * collectives on MPI_COMM_WORLD), or NULL: GCOMM_TRANSPORT, else "tcp". */
	const char *transport;
	/* Kernels backend for device buffers and reductions: "cpu", "cuda", "hip", "auto";
	 * NULL: GCOMM_BACKEND, else "cpu". */
	const char *backend;
	int device; /* card index for a GPU backend (default: the first visible one) */
	/* A peer that stops answering is declared dead after this many ms (GCOMM_TIMEOUT,
	 * default 10000). Peers that are merely busy keep answering: the kernel does. */
	int timeout_ms;
	/* Local address to listen on (GCOMM_ADDR; default: the address this host uses to
	 * reach the rendezvous). */
	const char *addr;
	/* Shared secret both the rendezvous and the data connections check (GCOMM_TOKEN,
	 * default: none). */
	const char *token;
} gc_params_t;

/* Make a communicator. Every rank of the job calls this; it returns when all are
 * connected (or fails after the timeout). */
gc_comm_t *gc_comm_create(const gc_params_t *p, gc_error_t *err);
/* From the environment: GPOOL_RANK/GPOOL_SIZE (or RANK/WORLD_SIZE, or Open MPI's
 * OMPI_COMM_WORLD_RANK/SIZE) and the GCOMM_* variables above. */
gc_comm_t *gc_comm_from_env(gc_error_t *err);
/* Destroy *C (NULL allowed) and set it to NULL; waits for pending operations. */
void gc_comm_destroy(gc_comm_t **c);

int gc_rank(const gc_comm_t *c);
int gc_size(const gc_comm_t *c);
/* Message of the last failure on C. */
const char *gc_error(const gc_comm_t *c);
/* Hosts the ranks are on (ranks sharing a host name are on one host). */
int gc_host_count(const gc_comm_t *c);
/* "tcp", "ucx" or "mpi". */
const char *gc_transport(const gc_comm_t *c);

/* Algorithms for allreduce (GCOMM_ALGO: auto, ring, rhd, hier, ring2). */
typedef enum {
	GC_ALGO_AUTO = 0,
	GC_ALGO_RING = 1,  /* reduce-scatter + allgather around a ring, chunked and pipelined */
	GC_ALGO_RHD = 2,   /* recursive halving/doubling: small messages */
	GC_ALGO_HIER = 3,  /* reduce within each host, ring across hosts, broadcast back */
	GC_ALGO_RING2 = 4, /* two rings in opposite directions, each on half the buffer */
} gc_algo_t;
#define GC_ALGO_LAST GC_ALGO_RING2
/* Algorithm by name ("auto", "ring", ...): 0, or -1 with EINVAL. */
int gc_algo_parse(const char *name, gc_algo_t *a);
int gc_set_algo(gc_comm_t *c, gc_algo_t a);
const char *gc_algo_name(gc_algo_t a);
/* The algorithm auto would pick for COUNT elements of T. */
gc_algo_t gc_algo_for(const gc_comm_t *c, size_t count, gc_dtype_t t);

/* Wire compression for f32 sums/averages: send f16 or bf16, accumulate in f32
 * (GCOMM_WIRE: f32, f16, bf16). Other types are always sent as they are. */
int gc_set_wire(gc_comm_t *c, gc_dtype_t wire);

/* ---- collectives (sbuf may be GC_IN_PLACE or equal rbuf) ---- */

/* rbuf[i] = op over ranks of sbuf[i], i < count, on every rank. */
int gc_allreduce(gc_comm_t *c, const void *sbuf, void *rbuf, size_t count, gc_dtype_t t,
		 gc_op_t op);
/* sbuf holds size*rcount elements; rank r receives the reduction of block r. In place:
 * rbuf holds size*rcount elements and block r is the result. */
int gc_reduce_scatter(gc_comm_t *c, const void *sbuf, void *rbuf, size_t rcount, gc_dtype_t t,
		      gc_op_t op);
/* rbuf (size*scount elements) gets every rank's sbuf in rank order. In place: rank r's
 * block of rbuf is its input. */
int gc_allgather(gc_comm_t *c, const void *sbuf, void *rbuf, size_t scount, gc_dtype_t t);
/* buf of root goes to every rank. */
int gc_broadcast(gc_comm_t *c, void *buf, size_t count, gc_dtype_t t, int root);
int gc_barrier(gc_comm_t *c);

/* Non-blocking allreduce: returns at once; progress happens in the communicator's
 * thread. Buffers must stay untouched until gc_wait() or a gc_test() that says done.
 * Operations complete in the order they were started. */
int gc_iallreduce(gc_comm_t *c, const void *sbuf, void *rbuf, size_t count, gc_dtype_t t,
		  gc_op_t op, gc_req_t **req);
/* Wait for *REQ, free it and set it to NULL; returns the operation's result. */
int gc_wait(gc_req_t **req);
/* *done = 1 when *REQ finished (then call gc_wait to collect it), else 0. */
int gc_test(gc_req_t *req, int *done);

/* ---- point-to-point (tcp and ucx transports; mpi: ENOTSUP) ----
 * Messages from one rank to another arrive in the order they were sent, and the n-th receive
 * a rank posts for a peer gets the n-th message that peer sent it: TAG (< GC_TAG_MAX) is a
 * check only; a mismatch breaks the communicator (EPROTO), as does a message longer than the
 * receive's room (EMSGSIZE). A shorter one is fine: *LEN gets its size, so a frame of unknown
 * size is a fixed header that bounds it, then the payload into a buffer of that size.
 * Buffers are host memory or device memory of the communicator's backend (staged through a
 * pinned host copy per request: a device send's buffer is free as soon as gc_isend returns).
 * Point-to-point requests progress in the caller's thread (gc_wait, gc_test, gc_wait_for): no
 * non-blocking collective may be queued meanwhile (EBUSY), and a pair of ranks must not have
 * point-to-point messages pending when they start a collective (its messages share the
 * pair's ordered channel). Failures break the communicator as for collectives. */
#define GC_TAG_MAX 0x7fffffffu
int gc_send(gc_comm_t *c, int peer, uint32_t tag, const void *buf, size_t len);
/* LEN may be NULL. */
int gc_recv(gc_comm_t *c, int peer, uint32_t tag, void *buf, size_t cap, size_t *len);
int gc_isend(gc_comm_t *c, int peer, uint32_t tag, const void *buf, size_t len, gc_req_t **req);
/* *LEN (may be NULL; must stay valid until the request is collected) gets the size. */
int gc_irecv(gc_comm_t *c, int peer, uint32_t tag, void *buf, size_t cap, size_t *len,
	     gc_req_t **req);
/* Wait up to TIMEOUT_MS (-1: no limit) for *REQ: 1 when it finished (collected as by gc_wait:
 * freed, *REQ NULL; a failed one: -1 with its errno), 0 on timeout (*REQ kept). */
int gc_wait_for(gc_req_t **req, int timeout_ms);

size_t gc_dtype_size(gc_dtype_t t);
const char *gc_dtype_name(gc_dtype_t t);
const char *gc_op_name(gc_op_t op);
/* Parse "f32", "sum", ...; -1 with EINVAL if unknown. */
int gc_dtype_parse(const char *s, gc_dtype_t *t);
int gc_op_parse(const char *s, gc_op_t *op);

#ifdef __cplusplus
}
#endif
#endif
