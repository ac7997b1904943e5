/* ctrdev.c: the device nodes and driver files of a container task's cards (ctrdev.h). */
#include <glob.h>
#include <stdio.h>
#include <string.h>

#include "worker/stepd/ctrdev.h"

static size_t add(char (*out)[GP_CTRDEV_PATH], size_t n, size_t max, const char *p)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(out[i], p))
			return n;
	if (n < max)
		snprintf(out[n++], GP_CTRDEV_PATH, "%s", p);
	return n;
}

size_t gp_ctrdev_paths(const uint32_t *given, size_t ngiven, const int *vendor, const bool *fake,
		       size_t ncards, char (*out)[GP_CTRDEV_PATH], size_t max)
{
	size_t n = 0;
	int nv = 0, amd = 0;
	bool any_nv = false, any_amd = false;
	char p[GP_CTRDEV_PATH];
	for (size_t i = 0; i < ncards; i++) {
		int ord = vendor[i] == 1 ? nv++ : vendor[i] == 2 ? amd++ : -1;
		bool mine = false;
		for (size_t k = 0; k < ngiven; k++)
			mine |= given[k] == i;
		if (!mine || fake[i] || ord < 0)
			continue;
		if (vendor[i] == 1) {
			snprintf(p, sizeof(p), "/dev/nvidia%d", ord);
			any_nv = true;
		} else {
			snprintf(p, sizeof(p), "/dev/dri/renderD%d", 128 + ord);
			any_amd = true;
		}
		n = add(out, n, max, p);
	}
	if (any_nv) {
		static const char *const shared[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
						     "/dev/nvidia-uvm-tools",
						     "/dev/nvidia-modeset"};
		for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
			n = add(out, n, max, shared[i]);
	}
	if (any_amd)
		n = add(out, n, max, "/dev/kfd");
	return n;
}

size_t gp_ctrdev_nvidia_files(const char *root, char (*out)[256], size_t max)
{
	static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"};
	static const char *const libs[] = {
	    "libcuda.so*",	  "libnvidia-ml.so*",	   "libnvidia-ptxjitcompiler.so*",
	    "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*", "libcudadebugger.so*",
	    "libnvidia-cfg.so*",  "libnvidia-opencl.so*"};
	static const char *const bins[] = {"/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump"};
	size_t n = 0;
	size_t rl = strlen(root);
	char pat[512];
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++)
		for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++) {
			snprintf(pat, sizeof(pat), "%s%s/%s", root, dirs[d], libs[l]);
			glob_t g;
			if (glob(pat, 0, NULL, &g) != 0)
				continue;
			for (size_t i = 0; i < g.gl_pathc && n < max; i++)
				snprintf(out[n++], 256, "%s", g.gl_pathv[i] + rl);
			globfree(&g);
		}
	for (size_t b = 0; b < sizeof(bins) / sizeof(bins[0]) && n < max; b++) {
		snprintf(pat, sizeof(pat), "%s%s", root, bins[b]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc)
			snprintf(out[n++], 256, "%s", bins[b]);
		globfree(&g);
	}
	return n;
}
