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
 * NVIDIA, 2: AMD, as Vendor in gpool.proto), fake flags and Card.dev_node are vendor[], fake[]
 * and dev_node[] (NULL: all unknown)): NVIDIA /dev/nvidia<M> for each given card, then once
 * /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and /dev/nvidia-modeset; AMD /dev/kfd
 * once and /dev/dri/renderD<M> for each, M from gp_card_dev_minor (the driver's number when
 * the agent learnt it, else the card's place among the node's cards of its vendor), as the
 * cgroup's device rules number them (worker/node/cgroup.c). A fake card has no device.
 * Returns how many paths were written to out (at most max). */
size_t gp_ctrdev_paths(const uint32_t *given, size_t ngiven, const int *vendor, const bool *fake,
		       const uint32_t *dev_node, size_t ncards, char (*out)[GP_CTRDEV_PATH],
		       size_t max);

/* The loader's own library directory of a Debian or Ubuntu image (and host). */
#define GP_CTRDEV_LIBDIR "/usr/lib/x86_64-linux-gnu"

/* The directories the host's dynamic loader searches, in its order, under root ("" for the
 * host): ld_library_path's (a colon-separated list, may be NULL), those that
 * the files of root/etc/ld.so.conf.d and root/etc/ld.so.conf name, then the standard ones. A driver
 * installed outside them (/usr/local/nvidia/lib64 on some cloud images, /usr/lib64/nvidia) is
 * found through the first two, as the host's programs find it. Returns how many (at most
 * max) were written to dirs. */
size_t gp_ctrdev_lib_dirs(const char *root, const char *ld_library_path, char (*dirs)[256],
			  size_t max);

/* One driver file for a container: where it is on the host, where it goes in the container. */
struct gp_ctrdev_file {
	char host[256];
	char ctr[256];
};

/* The NVIDIA driver's user-space files present under root ("" for the host): libcuda,
 * libnvidia-ml and the other libraries CUDA programs load from the driver, found in the
 * loader's directories (gp_ctrdev_lib_dirs; the first file of a name wins, as for the loader),
 * and nvidia-smi and nvidia-debugdump where path (a PATH list; NULL or empty: /usr/bin:/bin)
 * finds them. In the container every library goes into ctr_libdir (gp_ctrdev_image_libdir: a
 * directory the image's loader searches without a cache), the tools into /usr/bin. Returns how
 * many were written to out (at most max). */
size_t gp_ctrdev_nvidia_files(const char *root, const char *ld_library_path, const char *path,
			      const char *ctr_libdir, struct gp_ctrdev_file *out, size_t max);

/* Where an image's loader looks for libraries without a cache: GP_CTRDEV_LIBDIR in a Debian or
 * Ubuntu tree (rootfs has it), else /usr/lib64 when rootfs has that (Fedora, RHEL, UBI), else
 * GP_CTRDEV_LIBDIR. */
const char *gp_ctrdev_image_libdir(const char *rootfs);

#endif
