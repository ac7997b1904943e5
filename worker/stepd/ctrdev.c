/* ctrdev.c: the device nodes and driver files of a container task's cards (ctrdev.h). */
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "worker/node/cards.h"
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
		       const uint32_t *dev_node, size_t ncards, char (*out)[GP_CTRDEV_PATH],
		       size_t max)
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
		int m = gp_card_dev_minor(vendor[i], dev_node ? dev_node[i] : 0, ord);
		if (vendor[i] == 1) {
			snprintf(p, sizeof(p), "/dev/nvidia%d", m);
			any_nv = true;
		} else {
			snprintf(p, sizeof(p), "/dev/dri/renderD%d", m);
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

/* dir (no trailing slash) into dirs[*n] unless there already or not absolute */
static void add_dir(char (*dirs)[256], size_t *n, size_t max, const char *dir, size_t len)
{
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (!len || dir[0] != '/' || len >= 256 || *n >= max)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strlen(dirs[i]) == len && !strncmp(dirs[i], dir, len))
			return;
	memcpy(dirs[*n], dir, len);
	dirs[(*n)++][len] = '\0';
}

/* each directory of a colon-separated list */
static void add_list(char (*dirs)[256], size_t *n, size_t max, const char *list)
{
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ":");
		add_dir(dirs, n, max, p, len);
		p += len;
		if (*p == ':')
			p++;
	}
}

/* the directories one ld.so.conf file names (an absolute path a line; "include" lines and
 * comments skipped: Debian's and Ubuntu's ld.so.conf only includes ld.so.conf.d, read here) */
static void add_conf(char (*dirs)[256], size_t *n, size_t max, const char *file)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		size_t len = strcspn(p, " \t\r\n#");
		if (*p == '/')
			add_dir(dirs, n, max, p, len);
	}
	fclose(f);
}

size_t gp_ctrdev_lib_dirs(const char *root, const char *ld_library_path, char (*dirs)[256],
			  size_t max)
{
	size_t n = 0;
	add_list(dirs, &n, max, ld_library_path);
	char pat[512];
	snprintf(pat, sizeof(pat), "%s/etc/ld.so.conf.d/*.conf", root);
	glob_t g;
	if (glob(pat, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			add_conf(dirs, &n, max, g.gl_pathv[i]);
	globfree(&g);
	snprintf(pat, sizeof(pat), "%s/etc/ld.so.conf", root);
	add_conf(dirs, &n, max, pat);
	static const char *const std_dirs[] = {GP_CTRDEV_LIBDIR, "/lib/x86_64-linux-gnu",
					       "/usr/lib64", "/usr/lib"};
	for (size_t i = 0; i < sizeof(std_dirs) / sizeof(std_dirs[0]); i++)
		add_dir(dirs, &n, max, std_dirs[i], strlen(std_dirs[i]));
	return n;
}

/* one file a name: the first the loader's order finds (on a merged-/usr host /lib/... and
 * /usr/lib/... hold the same files) */
static size_t add_file(struct gp_ctrdev_file *out, size_t n, size_t max, const char *host,
		       const char *ctr)
{
	const char *base = strrchr(ctr, '/');
	for (size_t i = 0; i < n; i++)
		if (!strcmp(strrchr(out[i].ctr, '/'), base))
			return n;
	if (n < max && strlen(host) < sizeof(out[n].host) && strlen(ctr) < sizeof(out[n].ctr)) {
		snprintf(out[n].host, sizeof(out[n].host), "%s", host);
		snprintf(out[n].ctr, sizeof(out[n].ctr), "%s", ctr);
		n++;
	}
	return n;
}

size_t gp_ctrdev_nvidia_files(const char *root, const char *ld_library_path, const char *path,
			      const char *ctr_libdir, struct gp_ctrdev_file *out, size_t max)
{
	static const char *const libs[] = {
	    "libcuda.so*",	  "libnvidia-ml.so*",	   "libnvidia-ptxjitcompiler.so*",
	    "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*", "libcudadebugger.so*",
	    "libnvidia-cfg.so*",  "libnvidia-opencl.so*"};
	static const char *const bins[] = {"nvidia-smi", "nvidia-debugdump"};
	char dirs[64][256];
	size_t nd = gp_ctrdev_lib_dirs(root, ld_library_path, dirs, 64);
	size_t n = 0;
	size_t rl = strlen(root);
	char pat[600], ctr[600];
	for (size_t d = 0; d < nd; d++)
		for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++) {
			snprintf(pat, sizeof(pat), "%s%s/%s", root, dirs[d], libs[l]);
			glob_t g;
			if (glob(pat, 0, NULL, &g) != 0)
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++) {
				const char *host = g.gl_pathv[i] + rl;
				snprintf(ctr, sizeof(ctr), "%s/%s", ctr_libdir,
					 strrchr(host, '/') + 1);
				n = add_file(out, n, max, host, ctr);
			}
			globfree(&g);
		}
	/* the tools: where PATH finds them on the host, /usr/bin in the container */
	char pdirs[32][256];
	size_t np = 0;
	add_list(pdirs, &np, 32, path && *path ? path : "/usr/bin:/bin");
	for (size_t b = 0; b < sizeof(bins) / sizeof(bins[0]); b++)
		for (size_t d = 0; d < np; d++) {
			struct stat st;
			snprintf(pat, sizeof(pat), "%s%s/%s", root, pdirs[d], bins[b]);
			if (stat(pat, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			snprintf(ctr, sizeof(ctr), "/usr/bin/%s", bins[b]);
			n = add_file(out, n, max, pat + rl, ctr);
			break;
		}
	return n;
}

const char *gp_ctrdev_image_libdir(const char *rootfs)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s%s", rootfs, GP_CTRDEV_LIBDIR);
	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return GP_CTRDEV_LIBDIR;
	snprintf(p, sizeof(p), "%s/usr/lib64", rootfs);
	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return "/usr/lib64";
	return GP_CTRDEV_LIBDIR;
}
