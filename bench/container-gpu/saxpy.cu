// saxpy.cu: the kernel cudacheck loads as PTX (bench/container-gpu/bundle.sh makes saxpy.ptx
// with nvcc -ptx), so that the driver's JIT (libnvidia-ptxjitcompiler, bound into the
// container from the host) compiles it on the card.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}
