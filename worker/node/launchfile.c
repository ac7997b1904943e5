/* launchfile.c: the launch file a gstepd runs from. */
#include "worker/node/launchfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define LAUNCH_MAX (256u << 20)

int gp_launch_path(char *buf, size_t len, const char *state_dir, uint64_t job, uint32_t attempt)
{
	int n = snprintf(buf, len, "%s/steps/%" PRIu64 ".%u.launch", state_dir, job, attempt);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int gp_launch_name_parse(const char *name, uint64_t *job, uint32_t *attempt)
{
	unsigned long long j;
	unsigned a;
	int end = 0;
	if (sscanf(name, "%llu.%u.launch%n", &j, &a, &end) != 2 || name[end] != '\0' || j == 0) {
		errno = EINVAL;
		return -1;
	}
	*job = j;
	*attempt = a;
	return 0;
}

int gp_launch_write(const char *path, const Gpool__Launch *l, gp_error_t *err)
{
	size_t n = gpool__launch__get_packed_size(l);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return gp_errprintf(err, "out of memory");
	gpool__launch__pack(l, buf);
	int rc = gp_write_file(path, buf, n, 0600);
	int e = errno;
	free(buf);
	if (rc < 0) {
		errno = e;
		return gp_errprintf(err, "cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}

Gpool__Launch *gp_launch_read(const char *path, gp_error_t *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	if (gp_read_file(path, LAUNCH_MAX, &data, &len) < 0) {
		gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	Gpool__Launch *l = gpool__launch__unpack(NULL, len, data);
	free(data);
	if (!l) {
		errno = EINVAL;
		gp_errprintf(err, "'%s' is not a launch file", path);
	}
	return l;
}
