/* gp-mpi-check: a plain Open MPI program for the MPI system tests (t0610-mpi) and the launch
 * benchmark (bench/mpi-launch.sh). Every rank: MPI_Init, an MPI_Allreduce of its rank and of a
 * vector, a ring exchange (send to rank+1, receive from rank-1), each result checked; rank 0
 * gathers the host names and prints them. Prints, per rank:
 *
 *   rank R of N on HOST: init_done=SECONDS.MICRO allreduce ok ring ok
 *
 * (init_done: the wall clock when MPI_Init returned). With --hold SECONDS the ranks then
 * stay, meeting in a barrier every 100 ms, for that long (the cancel tests). Exit 0 when
 * every check passed, 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define VEC 4096

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	struct timeval init_done;
	gettimeofday(&init_done, NULL);
	int rank, size, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	double hold = 0;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--hold"))
			hold = atof(argv[i + 1]);
	char host[MPI_MAX_PROCESSOR_NAME] = "";
	int hl;
	MPI_Get_processor_name(host, &hl);

	long mine = rank, sum = -1;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	int ar_ok = sum == (long)size * (size - 1) / 2;
	static double v[VEC], w[VEC];
	for (int i = 0; i < VEC; i++)
		v[i] = rank + i;
	MPI_Allreduce(v, w, VEC, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < VEC; i++)
		if (w[i] != (double)size * (size - 1) / 2 + (double)size * i)
			ar_ok = 0;

	int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
	MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	int ring_ok = got == left;
	bad = !ar_ok || !ring_ok;

	char *all = rank == 0 ? calloc((size_t)size, MPI_MAX_PROCESSOR_NAME) : NULL;
	MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	printf("rank %d of %d on %s: init_done=%ld.%06ld allreduce %s ring %s\n", rank, size, host,
	       (long)init_done.tv_sec, (long)init_done.tv_usec, ar_ok ? "ok" : "FAILED",
	       ring_ok ? "ok" : "FAILED");
	if (rank == 0) {
		printf("hosts:");
		for (int i = 0; i < size; i++)
			printf("%s%s", i ? "," : " ", all + (size_t)i * MPI_MAX_PROCESSOR_NAME);
		printf("\n");
		free(all);
	}
	fflush(stdout);
	if (hold > 0) {
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			usleep(100000);
			MPI_Barrier(MPI_COMM_WORLD);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < hold);
	}
	int anybad = 0;
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Finalize();
	return anybad ? 1 : 0;
}
