/* gcomm_p2p_test.c - libgcomm's point-to-point sends and receives on N forked ranks: a ring
 * of header + payload frames of sizes the receiver learns from the header, many in flight at
 * once in both directions, a receive that times out, collectives after point-to-point, a
 * message larger than the receive's room (EMSGSIZE, on every rank), and a rank that dies
 * while its neighbour waits (the wait fails, never hangs).
 *
 *   gcomm-p2p-test --np N [--transport T]
 * Exit 0 when everything passed, 1 on a failure. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpool/gcomm.h"
#include "comm/test/spawn.h"

static const char *transport = "tcp";

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "rank %d: line %d: ", rank, __LINE__);                     \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static gc_comm_t *make(int rank, int size, const char *rdv, int timeout_ms)
{
	gc_params_t p = {.rank = rank,
			 .size = size,
			 .rdv = rdv,
			 .transport = transport,
			 .backend = "cpu",
			 .device = -1,
			 .timeout_ms = timeout_ms};
	gc_error_t e;
	gc_comm_t *c = gc_comm_create(&p, &e);
	if (!c)
		fprintf(stderr, "rank %d: cannot make a communicator: %s\n", rank, e.text);
	return c;
}

static size_t frame_len(int from, int k)
{
	return (size_t)(k * 7919 + from * 131) % 200000 + 1; /* 1 byte .. ~200 kB */
}

static uint8_t byte_of(int from, int k, size_t i)
{
	return (uint8_t)(from * 37 + k * 11 + i * 3);
}

enum { NFRAMES = 12 };

/* Every rank sends NFRAMES header + payload frames right and receives as many from the left,
 * all posted before any wait, sizes known to the receiver only from each header. */
static int ring_frames(gc_comm_t *c, int rank, int size)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	uint64_t shdr[NFRAMES];
	uint8_t *sbuf[NFRAMES];
	gc_req_t *sreq[2 * NFRAMES];
	for (int k = 0; k < NFRAMES; k++) {
		shdr[k] = frame_len(rank, k);
		sbuf[k] = malloc(shdr[k]);
		CHECK(sbuf[k], "out of memory");
		for (size_t i = 0; i < shdr[k]; i++)
			sbuf[k][i] = byte_of(rank, k, i);
		CHECK(gc_isend(c, right, 1, &shdr[k], sizeof(shdr[k]), &sreq[2 * k]) == 0, "%s",
		      gc_error(c));
		CHECK(gc_isend(c, right, 2, sbuf[k], shdr[k], &sreq[2 * k + 1]) == 0, "%s",
		      gc_error(c));
	}
	for (int k = 0; k < NFRAMES; k++) {
		uint64_t hdr = 0;
		size_t got = 0;
		CHECK(gc_recv(c, left, 1, &hdr, sizeof(hdr), &got) == 0, "%s", gc_error(c));
		CHECK(got == sizeof(hdr) && hdr == frame_len(left, k), "header %d: %zu bytes, %llu",
		      k, got, (unsigned long long)hdr);
		uint8_t *rb = malloc(hdr + 64);
		CHECK(rb, "out of memory");
		/* room to spare: the size comes back in got */
		CHECK(gc_recv(c, left, 2, rb, hdr + 64, &got) == 0, "%s", gc_error(c));
		CHECK(got == hdr, "payload %d: %zu bytes, %llu expected", k, got,
		      (unsigned long long)hdr);
		for (size_t i = 0; i < got; i++)
			CHECK(rb[i] == byte_of(left, k, i), "payload %d byte %zu wrong", k, i);
		free(rb);
	}
	for (int k = 0; k < 2 * NFRAMES; k++)
		CHECK(gc_wait(&sreq[k]) == 0 && !sreq[k], "send %d: %s", k, gc_error(c));
	for (int k = 0; k < NFRAMES; k++)
		free(sbuf[k]);
	return 0;
}

/* A receive nobody answers yet times out with 0 and stays; the answer, asked for after the
 * timeout, then completes it. (No collective meanwhile: it would share the pending pair.) */
static int timeout_then_answer(gc_comm_t *c, int rank)
{
	int32_t v = -1, go = 1;
	size_t got = 0;
	if (rank == 1) {
		CHECK(gc_recv(c, 0, 7, &go, sizeof(go), NULL) == 0, "%s", gc_error(c));
		v = 4242;
		CHECK(gc_send(c, 0, 3, &v, sizeof(v)) == 0, "%s", gc_error(c));
	}
	if (rank != 0)
		return 0;
	gc_req_t *r;
	CHECK(gc_irecv(c, 1, 3, &v, sizeof(v), &got, &r) == 0, "%s", gc_error(c));
	int rc = gc_wait_for(&r, 50);
	CHECK(rc == 0 && r, "a receive with no sender did not time out: %d %s", rc, gc_error(c));
	int done = 1;
	CHECK(gc_test(r, &done) == 0 && !done, "test says done with no sender");
	CHECK(gc_send(c, 1, 7, &go, sizeof(go)) == 0, "%s", gc_error(c));
	CHECK(gc_wait_for(&r, 10000) == 1 && !r, "the answer did not arrive: %s", gc_error(c));
	CHECK(v == 4242 && got == sizeof(v), "got %d (%zu bytes)", v, got);
	return 0;
}

static int bad_calls(gc_comm_t *c, int rank, int size)
{
	char b[4] = {0};
	CHECK(gc_send(c, rank, 1, b, 4) < 0 && errno == EINVAL, "a send to itself was taken");
	CHECK(gc_send(c, size, 1, b, 4) < 0 && errno == EINVAL, "a send to rank %d was taken",
	      size);
	CHECK(gc_send(c, (rank + 1) % size, GC_TAG_MAX + 1u, b, 4) < 0 && errno == EINVAL,
	      "a tag above GC_TAG_MAX was taken");
	return 0;
}

static int rank_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gc_comm_t *c = make(rank, size, rdv, 10000);
	if (!c)
		return 1;
	if (ring_frames(c, rank, size) || timeout_then_answer(c, rank) || bad_calls(c, rank, size))
		return 1;
	/* collectives still agree after point-to-point traffic */
	float x = (float)rank;
	CHECK(gc_allreduce(c, GC_IN_PLACE, &x, 1, GC_F32, GC_SUM) == 0, "%s", gc_error(c));
	CHECK(x == (float)((size * (size - 1)) >> 1), "allreduce gave %g", x);
	/* every rank done with the allreduce before rank 1 breaks the communicator: a rank's
	 * last sends of a collective may still be on their way when its neighbour returns */
	char done = 1;
	for (int i = 0; i < size; i++)
		if (i != 1)
			CHECK(rank == 1 ? gc_recv(c, i, 9, &done, 1, NULL) == 0
					: rank != i || gc_send(c, 1, 9, &done, 1) == 0,
			      "%s", gc_error(c));
	/* too long for the room: the receiver fails EMSGSIZE, and every rank learns of it */
	char big[64] = {0}, small[8];
	if (rank == 0)
		gc_send(c, 1, 4, big, sizeof(big)); /* may fail once rank 1 breaks */
	if (rank == 1) {
		CHECK(gc_recv(c, 0, 4, small, sizeof(small), NULL) < 0 && errno == EMSGSIZE,
		      "an oversized message was taken (errno %d)", errno);
	}
	CHECK(gc_barrier(c) < 0 || rank > 1, "the break did not reach rank %d", rank);
	CHECK(gc_send(c, (rank + 1) % size, 1, big, 1) < 0, "a broken communicator sent");
	gc_comm_destroy(&c);
	return 0;
}

/* The last rank dies while its left neighbour waits on it: the wait fails within the
 * communicator's timeout. */
static int kill_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gc_comm_t *c = make(rank, size, rdv, 3000);
	if (!c)
		return 1;
	int32_t v;
	if (rank == size - 1) {
		CHECK(gc_recv(c, 0, 5, &v, sizeof(v), NULL) == 0, "%s", gc_error(c));
		_exit(0); /* dies without closing the communicator */
	}
	if (rank == 0) {
		v = 7;
		CHECK(gc_send(c, size - 1, 5, &v, sizeof(v)) == 0, "%s", gc_error(c));
	}
	if (rank == size - 2) {
		gc_req_t *r;
		CHECK(gc_irecv(c, size - 1, 6, &v, sizeof(v), NULL, &r) == 0, "%s", gc_error(c));
		int rc = gc_wait_for(&r, 20000);
		CHECK(rc < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ETIMEDOUT),
		      "waiting on a dead rank gave %d (errno %d)", rc, errno);
	}
	gc_comm_destroy(&c);
	return 0;
}

int main(int argc, char **argv)
{
	int np = 3;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--np") && i + 1 < argc)
			np = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--transport") && i + 1 < argc)
			transport = argv[++i];
		else {
			fprintf(stderr, "usage: gcomm-p2p-test [--np N] [--transport T]\n");
			return 2;
		}
	}
	if (np < 3 || np > 16) {
		fprintf(stderr, "gcomm-p2p-test: --np must be 3..16\n");
		return 2;
	}
	if (gc_spawn(np, rank_main, NULL, 120)) {
		fprintf(stderr, "FAIL: point-to-point\n");
		return 1;
	}
	printf("ok: point-to-point on %d ranks (%s)\n", np, transport);
	if (gc_spawn(np, kill_main, NULL, 60)) {
		fprintf(stderr, "FAIL: a rank that died\n");
		return 1;
	}
	printf("ok: a rank's death fails its neighbour's wait\n");
	return 0;
}
