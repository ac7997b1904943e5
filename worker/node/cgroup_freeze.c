/* cgroup_freeze.c: a job's cgroup frozen and thawed by name (see cgroup_freeze.h). */
#include "worker/node/cgroup_freeze.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CG_ROOT "/sys/fs/cgroup"

static int write_file(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, v, strlen(v));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

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
		if (read_file(path, buf, sizeof(buf)) == 0 && strstr(buf, want))
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
	snprintf(path, sizeof(path), "%s/gpool/%s/cgroup.freeze", CG_ROOT, name);
	if (access(path, W_OK) == 0) {
		if (write_file(path, frozen ? "1" : "0") < 0)
			return -1;
		snprintf(ev, sizeof(ev), "%s/gpool/%s/cgroup.events", CG_ROOT, name);
		return settle(ev, frozen ? "frozen 1" : "frozen 0", wait_ms);
	}
	snprintf(path, sizeof(path), "%s/freezer/gpool/%s/freezer.state", CG_ROOT, name);
	if (access(path, W_OK) == 0) {
		if (write_file(path, frozen ? "FROZEN" : "THAWED") < 0)
			return -1;
		return settle(path, frozen ? "FROZEN" : "THAWED", wait_ms);
	}
	errno = ENOENT;
	return -1;
}
