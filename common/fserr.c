/* fserr.c - a full, over-quota or read-only file system named with its directory (fserr.h) */
#include "common/fserr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

bool gp_fs_full_or_ro(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EROFS;
}

int64_t gp_fs_free(const char *dir)
{
	struct statvfs v;
	if (statvfs(dir, &v) < 0)
		return -1;
	return (int64_t)v.f_bavail * (int64_t)v.f_frsize;
}

/* "1.5 GiB": bytes for a reader */
static const char *human(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* " (N needed, M free)", " (M free)" or "" */
static void amounts(const char *dir, uint64_t need, char *buf, size_t len)
{
	char a[32], b[32];
	int64_t avail = gp_fs_free(dir);
	if (need && avail >= 0)
		snprintf(buf, len, " (%s needed, %s free)", human(need, a, sizeof(a)),
			 human((uint64_t)avail, b, sizeof(b)));
	else if (need)
		snprintf(buf, len, " (%s needed)", human(need, a, sizeof(a)));
	else if (avail >= 0)
		snprintf(buf, len, " (%s free)", human((uint64_t)avail, b, sizeof(b)));
	else
		buf[0] = '\0';
}

const char *gp_fs_why(int e, const char *dir, uint64_t need, char *buf, size_t len)
{
	char amt[96];
	switch (e) {
	case ENOSPC:
		amounts(dir, need, amt, sizeof(amt));
		snprintf(buf, len, "no space left on the file system of '%s'%s", dir, amt);
		break;
	case EDQUOT:
		snprintf(buf, len, "disk quota of uid %u reached on the file system of '%s'",
			 (unsigned)geteuid(), dir);
		break;
	case EROFS:
		snprintf(buf, len, "'%s' is on a read-only file system", dir);
		break;
	default:
		snprintf(buf, len, "%s", strerror(e));
	}
	return buf;
}

int gp_fs_errprintf(gp_error_t *err, int e, const char *dir, uint64_t need, const char *fmt, ...)
{
	char what[256], why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	gp_fs_why(e, dir, need, why, sizeof(why));
	gp_errprintf(err, "%s: %s", what, why);
	errno = e;
	return -1;
}
