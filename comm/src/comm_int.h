/* comm_int.h - the communicator's insides, shared by comm/src files. */
#ifndef GCOMM_INT_H
#define GCOMM_INT_H

#define GC_CHUNK_HOST (256u << 10) /* pipeline chunk of a communicator without cards */
#define GC_CHUNK_DEV  (1u << 20)   /* ... with a GPU backend on some rank */

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gpool/gcomm.h"
#include "gpool/kernels.h"
#include "comm/src/tp.h"

enum {
	GC_BUF_RING = 0,  /* the ring engine's mirror, slots and temporaries */
	GC_BUF_RING2 = 1, /* the same for the second ring of a bidirectional allreduce */
	GC_BUF_STAGE = 2, /* a device buffer's host copy (algorithms that run on the host) */
	GC_BUF_WORK = 3,  /* a full-size result buffer (out-of-place reduce-scatter) */
	GC_BUF_TMP = 4,	  /* small algorithms' receive buffers */
	GC_NBUF = 5
};

/* The collectives of one data path: the native one (algorithms over a transport) or
 * MPI's. Buffers here are already resolved: sbuf is never GC_IN_PLACE (sbuf == rbuf
 * means in place). */
typedef struct gc_coll_ops {
	const char *name;
	int (*allreduce)(gc_comm_t *c, const void *s, void *r, size_t n, gc_dtype_t t, gc_op_t op);
	int (*reduce_scatter)(gc_comm_t *c, const void *s, void *r, size_t rn, gc_dtype_t t,
			      gc_op_t op);
	int (*allgather)(gc_comm_t *c, const void *s, void *r, size_t sn, gc_dtype_t t);
	int (*broadcast)(gc_comm_t *c, void *buf, size_t n, gc_dtype_t t, int root);
	int (*barrier)(gc_comm_t *c);
	void (*destroy)(gc_comm_t *c);
} gc_coll_ops_t;

struct gc_comm {
	int rank, size;
	int timeout_ms;
	const gc_coll_ops_t *coll;
	const gc_tp_ops_t *tpo; /* NULL for mpi */
	gc_tp_t *tp;
	void *mpi;	      /* the mpi data path's state */
	gk_backend_t *gk;     /* the backend buffers may live on (cpu if none) */
	gk_backend_t *cpu;    /* host reductions */
	int gpu;	      /* gk is a GPU backend */
	gk_stream_t *stream;  /* copies and device reductions */
	gc_algo_t algo;	      /* forced, or AUTO */
	gc_dtype_t wire;      /* f32 (none), f16, bf16 */
	size_t chunk;	      /* pipeline chunk in bytes (GCOMM_CHUNK), 0: chunk_default */
	size_t chunk_default; /* GC_CHUNK_DEV when any rank has a GPU backend, else _HOST */
	int window;	      /* chunks in flight (GCOMM_WINDOW) */
	size_t small;	      /* below this many bytes auto picks rhd (GCOMM_SMALL) */
	size_t ring2_min;     /* auto runs two rings from this many bytes (GCOMM_RING2_MIN) */
	size_t ring2_max;     /* ... up to below this many (GCOMM_RING2_MAX) */
	int spin_us;	      /* transports poll this long for small messages (GCOMM_SPIN) */
	int local_pull;	      /* same-host ranks copy from each other's memory (GCOMM_CMA) */
	/* host layout: host_of[rank] = index of its host; hosts in order of first rank */
	int nhosts;
	int *host_of;
	int broken;   /* a data-path failure happened: every call fails */
	uint32_t seq; /* collective sequence number (tags) */
	/* buffers grown on demand: [which][0 host (pinned when gpu), 1 device] */
	struct {
		void *p;
		size_t len;
	} bufs[GC_NBUF][2];
	/* non-blocking operations: a worker thread runs queued operations in order */
	pthread_t thread;
	int thread_up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct gc_req *head, *tail; /* queued, not yet started */
	int running;		    /* the worker is inside an operation */
	int stopping;
	char err[256];
};

/* Set C's error message (and errno = E); returns -1. */
int gc_fail(gc_comm_t *c, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Mark the data path broken after a transport failure, close it; returns -1. */
int gc_break(gc_comm_t *c, const char *what);

/* Buffer WHICH of at least LEN bytes, host (pinned when the backend is a GPU one) or on
 * the card (DEV); grown on demand, kept until the communicator is destroyed. */
void *gc_buf(gc_comm_t *c, int which, size_t len, int dev);
/* Is P device memory of C's backend? */
int gc_is_device(gc_comm_t *c, const void *p);

/* Wait until every request in R[0..n) is done (driving progress); -1 if one failed. */
int gc_waitall(gc_comm_t *c, gc_tpreq_t *r, int n);

/* ---- native algorithms (algo.c over ring.c) ---- */
extern const gc_coll_ops_t gc_coll_native;

/* ---- non-blocking operations (nb.c) ---- */
/* A request: a queued collective (nb.c), or a point-to-point send or receive (p2p.c) posted
 * on the transport at once and driven from the caller's thread. */
enum { GC_REQ_SEND = 16, GC_REQ_RECV = 17 };
struct gc_req {
	gc_comm_t *c;
	int kind;
	const void *s;
	void *d;
	size_t n;
	gc_dtype_t t;
	gc_op_t op;
	int root;
	int done, rc, err;
	struct gc_req *next;
	/* point-to-point */
	gc_tpreq_t tr;
	void *stage;  /* pinned host copy of a device buffer, or NULL */
	size_t *lenp; /* a receive's size, for the caller */
};
/* Drive C's transport until Q is done or TIMEOUT_MS passed: 1 (collected, freed), 0, -1. */
int gc_p2p_wait(gc_req_t **q, int timeout_ms);
int gc_p2p_test(gc_req_t *q, int *done);

/* Stop the communicator's worker thread after the queued operations finished. */
void gc_nb_stop(gc_comm_t *c);

/* ---- the mpi data path (mpi.c; built when mpi.h is found) ---- */
#ifdef GCOMM_HAVE_MPI
/* Join MPI_COMM_WORLD (MPI_Init_thread if MPI is not initialized yet; then destroy
 * finalizes it too); sets c->rank, c->size, c->mpi. */
int gc_mpi_open(gc_comm_t *c, gc_error_t *err);
extern const gc_coll_ops_t gc_coll_mpi;
#endif

#endif
