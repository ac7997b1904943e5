/* ring.h - the pipelined ring engine (ring.c), shared by allreduce, reduce-scatter,
 * allgather and the hierarchical algorithm. */
#ifndef GCOMM_RING_H
#define GCOMM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpool/gcomm.h"

typedef struct {
	const int *members; /* ranks in ring order */
	int n, me;	    /* members, my index */
	int shift;	    /* 0: allreduce layout (own me+1 after reduce-scatter); -1: own me */
	int do_rs, do_ag;
	const size_t *off, *len; /* segment k, in elements */
	gc_dtype_t t;
	gc_op_t op;	 /* SUM, MAX, MIN (AVG is SUM + scale_by) */
	int scale_by;	 /* > 1: divide the owned segment by this after reduce-scatter */
	const void *src; /* local contribution (may equal dst); allgather-only: unused */
	void *dst;	 /* full-size result */
	int dev;	 /* src and dst are device memory */
	gc_dtype_t wire; /* type on the wire (t, or f16/bf16 for f32) */
	uint32_t tag;
} gc_ring_args_t;

int gc_ring_run(gc_comm_t *c, const gc_ring_args_t *a);
/* Allreduce around MEMBERS (count elements split in n balanced segments); TWO: on two rings
 * in opposite directions, each on half the buffer (when there are 3 or more members). */
int gc_ring_allreduce_members(gc_comm_t *c, const int *members, int n, int me, const void *s,
			      void *d, size_t count, gc_dtype_t t, gc_op_t op, int scale_by,
			      int dev, int two);

#endif
