// alloc.cu: the CUDA client of tools/mps-probe: allocates each size given (MB) in turn, keeps
// every allocation, and prints one line per size: "alloc N MB: ok" or "alloc N MB: refused
// (ERROR)". Exit 0 when every line ran (refusals included), 2 when CUDA did not start.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaFree(0); /* the context: with MPS, the connection to its server */
	if (e != cudaSuccess) {
		printf("cuda: %s\n", cudaGetErrorString(e));
		return 2;
	}
	size_t free_b = 0, total_b = 0;
	cudaMemGetInfo(&free_b, &total_b);
	printf("device %d: %zu MB free of %zu MB\n", dev, free_b >> 20, total_b >> 20);
	for (int i = 1; i < argc; i++) {
		size_t mb = strtoull(argv[i], NULL, 10);
		void *p = NULL;
		e = cudaMalloc(&p, mb << 20);
		if (e == cudaSuccess) {
			cudaMemset(p, 0, mb << 20);
			e = cudaDeviceSynchronize();
		}
		if (e == cudaSuccess)
			printf("alloc %zu MB: ok\n", mb);
		else
			printf("alloc %zu MB: refused (%s)\n", mb, cudaGetErrorString(e));
		fflush(stdout);
		cudaGetLastError();
	}
	return 0;
}
