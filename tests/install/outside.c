/* outside.c: a program outside gpool's tree, built by install-test.sh against the installed
 * libgcomm and kernels through pkg-config only: a sum on the kernels' cpu backend, then an
 * allreduce on a communicator of one rank. Exit 0 when both give the expected numbers. */
#include <stdio.h>
#include <stdlib.h>

#include <gpool/gcomm.h>
#include <gpool/kernels.h>

int main(int argc, char **argv)
{
	gk_error_t kerr;
	gk_backend_t *b = gk_backend_open("cpu", &kerr);
	if (!b) {
		fprintf(stderr, "outside: kernels: %s\n", kerr.text);
		return 1;
	}
	float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, z[4];
	const void *srcs[2] = {x, y};
	if (gk_reduce(b, GK_F32, GK_SUM, z, srcs, 2, 4, NULL) < 0 || gk_stream_sync(b, NULL) < 0 ||
	    z[0] != 11 || z[3] != 44) {
		fprintf(stderr, "outside: kernels: wrong sum %g %g\n", z[0], z[3]);
		return 1;
	}
	gk_backend_close(&b);

	if (argc < 2) {
		fprintf(stderr, "usage: outside tcp://127.0.0.1:PORT\n");
		return 2;
	}
	gc_params_t p = {.rank = 0,
			 .size = 1,
			 .rdv = argv[1],
			 .transport = "tcp",
			 .backend = "cpu",
			 .timeout_ms = 10000,
			 .addr = "127.0.0.1"};
	gc_error_t cerr;
	gc_comm_t *c = gc_comm_create(&p, &cerr);
	if (!c) {
		fprintf(stderr, "outside: gcomm: %s\n", cerr.text);
		return 1;
	}
	float v[3] = {1.5f, -2, 7};
	if (gc_allreduce(c, GC_IN_PLACE, v, 3, GC_F32, GC_SUM) < 0 || v[0] != 1.5f || v[2] != 7) {
		fprintf(stderr, "outside: gcomm: allreduce: %s\n", gc_error(c));
		gc_comm_destroy(&c);
		return 1;
	}
	gc_comm_destroy(&c);
	printf("outside: kernels sum and gcomm allreduce ok\n");
	return 0;
}
