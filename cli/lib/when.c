/* when.c - points in time as sacct and sbatch --begin take them (when.h) */
#include "cli/lib/when.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct unit {
	const char *name;
	double sec;
};

static const struct unit units[] = {
    {"seconds", 1},  {"second", 1},  {"s", 1},	      {"minutes", 60},	 {"minute", 60},
    {"min", 60},     {"m", 60},	     {"hours", 3600}, {"hour", 3600},	 {"h", 3600},
    {"days", 86400}, {"day", 86400}, {"d", 86400},    {"weeks", 604800}, {"w", 604800},
};

int gp_when_parse(const char *s, double now, double *t, gp_error_t *err)
{
	if (!strcmp(s, "now")) {
		*t = now;
		return 0;
	}
	if (!strncmp(s, "now-", 4) || !strncmp(s, "now+", 4)) {
		char *end;
		double sign = s[3] == '+' ? 1 : -1;
		if (s[4] < '0' || s[4] > '9')
			goto bad;
		double n = strtod(s + 4, &end);
		if (end == s + 4 || n < 0)
			goto bad;
		if (!*end) { /* as Slurm: a bare count is seconds */
			*t = now + sign * n;
			return 0;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(end, units[i].name)) {
				*t = now + sign * n * units[i].sec;
				return 0;
			}
		goto bad;
	}
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *fmts[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d", NULL};
	for (int i = 0; fmts[i]; i++) {
		memset(&tm, 0, sizeof(tm));
		const char *e = strptime(s, fmts[i], &tm);
		if (e && !*e) {
			tm.tm_isdst = -1;
			*t = (double)mktime(&tm);
			return 0;
		}
	}
	/* HH:MM[:SS] today */
	time_t tn = (time_t)now;
	localtime_r(&tn, &tm);
	int h, m, sec = 0, used = 0;
	if ((sscanf(s, "%d:%d:%d%n", &h, &m, &sec, &used) == 3 && !s[used]) ||
	    (sec = 0, sscanf(s, "%d:%d%n", &h, &m, &used) == 2 && !s[used])) {
		if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59)
			goto bad;
		tm.tm_hour = h;
		tm.tm_min = m;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		*t = (double)mktime(&tm);
		return 0;
	}
bad:
	errno = EINVAL;
	return gp_errprintf(err,
			    "invalid time '%s' (use 2026-12-02, 2026-12-02T13:05, 13:05, "
			    "now, now-2hours or now+30minutes)",
			    s);
}
