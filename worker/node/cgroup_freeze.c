/* cgroup_freeze.c: a job's cgroup frozen and thawed by name (see cgroup_freeze.h): the first
 * version whose freezer file the group has (v2, then v1), with the files and values of that
 * version's table (cgroup_int.h). */
#include "worker/node/cgroup_freeze.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/node/cgroup_int.h"

static void nap(void)
{
	struct timespec ts = {0, 2 * 1000000L};
	nanosleep(&ts, NULL);
}

/* Poll path until want is in it, up to wait_ms. */
static int settle(const char *path, const char *want, int wait_ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char buf[512];
	for (;;) {
		/* the trailing blanks gp_cg_read_path cuts are in no settled value */
		if (gp_cg_read_path(path, buf, sizeof(buf)) == 0 && strstr(buf, want))
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= wait_ms)
			break;
		nap();
	}
	errno = ETIMEDOUT;
	return -1;
}

int gp_cgroup_freeze_name(const char *name, bool frozen, int wait_ms)
{
	char path[4200], ev[4200];
	for (size_t i = 0; i < GP_CG_NVERSIONS; i++) {
		const struct gp_cg_ops *v = gp_cg_versions[i];
		snprintf(path, sizeof(path), "%s%s/gpool/%s/%s", CG_ROOT, v->freeze_dir, name,
			 v->freeze_file);
		if (access(path, W_OK) < 0)
			continue;
		if (gp_cg_write_path(path, v->freeze_val[frozen]) < 0)
			return -1;
		snprintf(ev, sizeof(ev), "%s%s/gpool/%s/%s", CG_ROOT, v->freeze_dir, name,
			 v->settle_file);
		return settle(ev, v->settled[frozen], wait_ms);
	}
	errno = ENOENT;
	return -1;
}
