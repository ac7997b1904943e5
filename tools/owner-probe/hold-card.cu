/* hold-card.cu: a process that holds 256 MiB on card 0 for 20 s, for owner-probe to see in
 * NVML's process list (the cards source of docs/owner.md). nvcc -o hold hold-card.cu */
#include <cstdio>
#include <cuda_runtime.h>
#include <unistd.h>

int main()
{
	void *p;
	if (cudaMalloc(&p, 1 << 28) != cudaSuccess)
		return 1;
	printf("pid %d holds 256 MiB\n", getpid());
	fflush(stdout);
	sleep(20);
	return 0;
}
