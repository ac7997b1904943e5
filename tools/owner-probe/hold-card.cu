#include <cstdio>
#include <unistd.h>
#include <cuda_runtime.h>
int main() { void *p; cudaMalloc(&p, 1<<28); printf("pid %d holds 256 MiB\n", getpid()); fflush(stdout); sleep(20); return 0; }
