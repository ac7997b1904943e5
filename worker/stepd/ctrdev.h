/* ctrdev.h: what of the host a container task gets for its cards (docs/containers.md "Cards"):
 * exactly the device nodes of the cards bound to the task, and for NVIDIA cards the driver's
 * user-space files bound read-only from the host, as the NVIDIA container toolkit does (the
 * driver's libraries must match the kernel module, so they cannot come from the image).
 */
#ifndef GPOOL_WORKER_STEPD_CTRDEV_H
#define GPOOL_WORKER_STEPD_CTRDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_CTRDEV_PATH 64

/* The device paths for the cards given (positions in the node's card list, whose vendor (1:
 * NVIDIA, 2: AMD, as Vendor in gpool.proto) and fake flags are vendor[] and fake[]): NVIDIA
 * /dev/nvidia<ordinal> for each given card, then once /dev/nvidiactl, /dev/nvidia-uvm,
 * /dev/nvidia-uvm-tools and /dev/nvidia-modeset; AMD /dev/kfd once and
 * /dev/dri/renderD<128+ordinal> for each. The ordinal counts the node's cards of that vendor
 * before it, as the cgroup's device rules do (worker/node/cgroup.c). A fake card has no
 * device. Returns how many paths were written to out (at most max). */
size_t gp_ctrdev_paths(const uint32_t *given, size_t ngiven, const int *vendor, const bool *fake,
		       size_t ncards, char (*out)[GP_CTRDEV_PATH], size_t max);

/* The NVIDIA driver's user-space files present under root ("" for the host): libcuda,
 * libnvidia-ml and the other libraries CUDA programs load from the driver, and nvidia-smi.
 * Returns how many paths (without root) were written to out (at most max). */
size_t gp_ctrdev_nvidia_files(const char *root, char (*out)[256], size_t max);

#endif
