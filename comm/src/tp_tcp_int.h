/* tp_tcp_int.h - what tp_tcp.c (connections, framing, waiting) and tp_tcp_local.c (ranks
 * on one host) share. */
#ifndef GCOMM_TP_TCP_INT_H
#define GCOMM_TP_TCP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "comm/src/cma.h"
#include "comm/src/spin.h"
#include "comm/src/tp.h"

#define FRAME_DATA     0x4743u		      /* payload follows */
#define FRAME_EAGER    0x4745u		      /* payload follows (same-host peer) */
#define FRAME_PULL     0x4750u		      /* payload at addr in the sender (same-host peer) */
#define FRAME_ACK      0x4741u		      /* len PULL frames were copied (same-host peer) */
#define EAGER_MAX      (32 * 1024)	      /* same host: larger messages are pulled */
#define IB_LOCAL       (2 * (EAGER_MAX + 64)) /* a same-host peer's inbound buffer */
#define IB_SIZE	       4096	   /* per-peer inbound buffer: headers and small payloads */
#define SPIN_MAX_BYTES (64 * 1024) /* poll only when a receive has this little left */

struct frame {
	uint32_t tag;
	uint32_t magic; /* FRAME_* */
	uint64_t len;
	uint64_t addr; /* FRAME_PULL */
};

struct peer {
	int fd;
	uint32_t events;	  /* registered with epoll */
	int closed;		  /* end of file seen, or hung up */
	gc_tpreq_t *sq, *sq_tail; /* sends, in order */
	gc_tpreq_t *rq, *rq_tail; /* receives, in order */
	struct frame sh;	  /* header of the frame being written */
	int sh_live;		  /* sh is being written */
	size_t sh_off;
	struct frame rh; /* header of the message being read */
	size_t rh_off;
	size_t ib_lo, ib_hi; /* unread bytes of ib */
	/* same host (see the top) */
	int local;
	pid_t pid;
	gc_tpreq_t *aq, *aq_tail; /* sends the peer has still to pull */
	uint64_t acks_owed;	  /* pulls done, not acknowledged yet */
	gc_fifo_t early;	  /* frames (and eager payloads) before their receive */
	char *ib;		  /* inbound buffer, ib_cap bytes */
	size_t ib_cap;
};

struct gc_tp {
	gc_tp_params_t p;
	char token[128];
	char addr[64];
	int lfd;
	int ep;
	int broken;
	int broken_err;
	uint64_t probe[2]; /* what same-host peers read back to see they can pull from us */
	gc_spin_t spin;	   /* poll or sleep (spin.c) */
	struct peer *peers;
	char err[256];
	void *auth;	  /* the MUNGE context while connecting (GCOMM_AUTH=munge) */
	unsigned refused; /* connections closed unanswered while connecting */
};

/* tp_tcp_base.c: what the transport's files share (failures, queues, headers, blobs) */
int gc_tcp_fail(gc_tp_t *t, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gc_tcp_complete(gc_tpreq_t *r, int err);
/* Fail every request on every peer and close the connections. */
void gc_tcp_breakdown(gc_tp_t *t, int e);
int gc_tcp_peer_fail(gc_tp_t *t, int peer, int e, const char *what);
void gc_tcp_enqueue(gc_tpreq_t **h, gc_tpreq_t **tl, gc_tpreq_t *r);
void gc_tcp_pop(gc_tpreq_t **h, gc_tpreq_t **tl);
/* Check the header in peer J's rh against receive R (sets R's len). */
int gc_tcp_header_ok(gc_tp_t *t, int j, gc_tpreq_t *r);
int gc_tcp_parse_blob(const void *blob, size_t len, char *addr, size_t alen, int *port, long *pid,
		      uint64_t *probe);

/* tp_tcp_auth.c: MUNGE credentials at connect time (tp_params auth_munge). -1 with errno;
 * auth_recv fails with EACCES for a credential that does not vouch for this job's peer. */
int gc_tcp_auth_open(gc_tp_t *t);
void gc_tcp_auth_close(gc_tp_t *t);
int gc_tcp_auth_send(gc_tp_t *t, int fd, int to, int64_t deadline);
int gc_tcp_auth_recv(gc_tp_t *t, int fd, int *from, int64_t deadline);

/* tp_tcp_local.c */
int gc_tcp_local_pairs(gc_tp_t *t, const void *const *blobs, const size_t *lens, const int *host_of,
		       int64_t deadline);
int gc_tcp_drive_recv_local(gc_tp_t *t, int j);

#endif
