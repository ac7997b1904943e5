/* cma.h - same-host transfers without the socket: a receiver pulls a payload straight
 * out of the sender's memory (process_vm_readv, one copy), and a byte FIFO holds frames
 * that arrive before their receive is posted. Used by the tcp transport for ranks on one
 * host; the connection stays for ordering, acknowledgements and liveness. */
#ifndef GCOMM_CMA_H
#define GCOMM_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Copy LEN bytes at address SRC of process PID to DST. 0, or -1 with errno (ESRCH: the
 * process is gone; EFAULT: the range is not mapped there; EPERM: not allowed). */
int gc_cma_pull(pid_t pid, void *dst, uint64_t src, size_t len);

/* Can we pull from PID? 1 when LEN bytes at ADDR there read back as EXPECT, else 0. */
int gc_cma_check(pid_t pid, uint64_t addr, const void *expect, size_t len);

typedef struct {
	char *p;
	size_t lo, hi, cap;
} gc_fifo_t;

/* Append A (AL bytes) then B (BL bytes) as one entry's bytes. 0, or -1 (ENOMEM). */
int gc_fifo_push(gc_fifo_t *f, const void *a, size_t al, const void *b, size_t bl);
/* The oldest bytes (NULL when empty) and how many there are. */
static inline void *gc_fifo_head(const gc_fifo_t *f, size_t *n)
{
	*n = f->hi - f->lo;
	return *n ? f->p + f->lo : NULL;
}
void gc_fifo_drop(gc_fifo_t *f, size_t n);
void gc_fifo_free(gc_fifo_t *f);

#endif
