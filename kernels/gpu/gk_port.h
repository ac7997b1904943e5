/* gk_port.h - one spelling for the CUDA and HIP runtimes, so the kernels in this folder
 * are one source: nvcc compiles them for the cuda backend, hipcc -x hip for the hip one.
 *
 * Names are gk* for the runtime (gkMalloc -> cudaMalloc / hipMalloc). f16 uses each
 * runtime's hardware conversion; bf16 uses cuda_bf16.h on CUDA and, because HIP 5.2 ships
 * no CUDA-style bf16 header, the software conversion from gk_scalar.h (the "bf16 shim",
 * which rounds the same way: nearest even, NaN kept). */
#ifndef GK_PORT_H
#define GK_PORT_H

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define GK_HIP 1
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#define GK_API "hip"
typedef hipError_t gkError_t;
typedef hipStream_t gkStream_t;
typedef hipEvent_t gkEvent_t;
typedef hipDeviceProp_t gkDeviceProp;
#define gkSuccess		hipSuccess
#define gkErrorMemoryAllocation hipErrorOutOfMemory
typedef hipMemcpyKind gkMemcpyKind;
#define GK_CUDA_OR_HIP(c, h)   (h)
#define gkGetErrorString       hipGetErrorString
#define gkGetLastError	       hipGetLastError
#define gkGetDeviceCount       hipGetDeviceCount
#define gkSetDevice	       hipSetDevice
#define gkGetDeviceProperties  hipGetDeviceProperties
#define gkRuntimeGetVersion    hipRuntimeGetVersion
#define gkDriverGetVersion     hipDriverGetVersion
#define gkMemGetInfo	       hipMemGetInfo
#define gkMalloc	       hipMalloc
#define gkFree		       hipFree
#define gkMallocHost(p, n)     hipHostMalloc((p), (n), hipHostMallocDefault)
#define gkFreeHost	       hipHostFree
#define gkMemsetAsync	       hipMemsetAsync
#define gkMemcpy	       hipMemcpy
#define gkMemcpyAsync	       hipMemcpyAsync
#define gkMemcpyHostToDevice   hipMemcpyHostToDevice
#define gkMemcpyDeviceToHost   hipMemcpyDeviceToHost
#define gkMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gkMemcpyDefault	       hipMemcpyDefault
#define gkStreamCreate	       hipStreamCreate
#define gkStreamDestroy	       hipStreamDestroy
#define gkStreamSynchronize    hipStreamSynchronize
#define gkStreamWaitEvent      hipStreamWaitEvent
#define gkEventCreate	       hipEventCreate
#define gkEventDestroy	       hipEventDestroy
#define gkEventRecord	       hipEventRecord
#define gkEventSynchronize     hipEventSynchronize
#define gkEventElapsedTime     hipEventElapsedTime
#define gkEventQuery	       hipEventQuery
#define gkErrorNotReady	       hipErrorNotReady
typedef hipPointerAttribute_t gkPointerAttributes_t;
#define gkPointerGetAttributes hipPointerGetAttributes
/* HIP 5.2 names the field memoryType */
#define GK_PTR_IS_DEVICE(a)			    ((a).memoryType == hipMemoryTypeDevice)
#define gkDeviceSynchronize			    hipDeviceSynchronize
#define gkOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
typedef hipStreamCaptureStatus gkStreamCaptureStatus;
#define gkStreamIsCapturing	  hipStreamIsCapturing
#define gkStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gkShflXor(v, m)		  __shfl_xor((v), (m), 32)
#define gkFma(a, b, c)		  fmaf((a), (b), (c))
typedef hipGraph_t gkGraph_t;
typedef hipGraphExec_t gkGraphExec_t;
#else
#define GK_CUDA 1
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define GK_API					    "cuda"
typedef cudaError_t gkError_t;
typedef cudaStream_t gkStream_t;
typedef cudaEvent_t gkEvent_t;
typedef cudaDeviceProp gkDeviceProp;
#define gkSuccess				    cudaSuccess
#define gkErrorMemoryAllocation			    cudaErrorMemoryAllocation
typedef cudaMemcpyKind gkMemcpyKind;
#define GK_CUDA_OR_HIP(c, h)			    (c)
#define gkGetErrorString			    cudaGetErrorString
#define gkGetLastError				    cudaGetLastError
#define gkGetDeviceCount			    cudaGetDeviceCount
#define gkSetDevice				    cudaSetDevice
#define gkGetDeviceProperties			    cudaGetDeviceProperties
#define gkRuntimeGetVersion			    cudaRuntimeGetVersion
#define gkDriverGetVersion			    cudaDriverGetVersion
#define gkMemGetInfo				    cudaMemGetInfo
#define gkMalloc				    cudaMalloc
#define gkFree					    cudaFree
#define gkMallocHost				    cudaMallocHost
#define gkFreeHost				    cudaFreeHost
#define gkMemsetAsync				    cudaMemsetAsync
#define gkMemcpy				    cudaMemcpy
#define gkMemcpyAsync				    cudaMemcpyAsync
#define gkMemcpyHostToDevice			    cudaMemcpyHostToDevice
#define gkMemcpyDeviceToHost			    cudaMemcpyDeviceToHost
#define gkMemcpyDeviceToDevice			    cudaMemcpyDeviceToDevice
#define gkMemcpyDefault				    cudaMemcpyDefault
#define gkStreamCreate				    cudaStreamCreate
#define gkStreamDestroy				    cudaStreamDestroy
#define gkStreamSynchronize			    cudaStreamSynchronize
#define gkStreamWaitEvent(s, e, f)		    cudaStreamWaitEvent((s), (e), (f))
#define gkEventCreate				    cudaEventCreate
#define gkEventDestroy				    cudaEventDestroy
#define gkEventRecord				    cudaEventRecord
#define gkEventSynchronize			    cudaEventSynchronize
#define gkEventElapsedTime			    cudaEventElapsedTime
#define gkEventQuery				    cudaEventQuery
#define gkErrorNotReady				    cudaErrorNotReady
typedef cudaPointerAttributes gkPointerAttributes_t;
#define gkPointerGetAttributes			    cudaPointerGetAttributes
#define GK_PTR_IS_DEVICE(a)			    ((a).type == cudaMemoryTypeDevice || (a).type == cudaMemoryTypeManaged)
#define gkDeviceSynchronize			    cudaDeviceSynchronize
#define gkOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
typedef cudaStreamCaptureStatus gkStreamCaptureStatus;
#define gkStreamIsCapturing			    cudaStreamIsCapturing
#define gkStreamCaptureStatusNone		    cudaStreamCaptureStatusNone
#define gkShflXor(v, m)				    __shfl_xor_sync(0xffffffffu, (v), (m), 32)
#define gkFma(a, b, c)				    __fmaf_rn((a), (b), (c))
typedef cudaGraph_t gkGraph_t;
typedef cudaGraphExec_t gkGraphExec_t;
#endif

#include "kernels/gk_scalar.h"

/* gkShflXor: a butterfly within groups of 32 lanes (a CUDA warp; on a wave64 AMD card, half a
 * wave, which keeps the kernels' 32-lane reductions right). gkFma: an explicit fused
 * multiply-add, for sums whose order the cpu reference does not fix (the module builds with
 * -fmad=false / -ffp-contract=off, so nothing else is fused). */

/* f16 / bf16 as raw bits in memory, f32 in registers */
__device__ static inline float gk_d_f16_to_f32(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

__device__ static inline uint16_t gk_d_f32_to_f16(float f)
{
	return __half_as_ushort(__float2half_rn(f));
}

__device__ static inline float gk_d_bf16_to_f32(uint16_t h)
{
	return gk_sw_bf16_to_f32(h);
}

__device__ static inline uint16_t gk_d_f32_to_bf16(float f)
{
#ifdef GK_CUDA
	return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
	return gk_sw_f32_to_bf16(f);
#endif
}

#endif
