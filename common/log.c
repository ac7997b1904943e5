/* log.c - daemon and tool logging, one line per event with time, program, pid and level
 * (log.h) */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *names[] = {"error", "warning", "info", "debug"};
static char progname[64] = "gpool";
static int cur_level = GP_LOG_INFO;
static FILE *out;

void gp_log_init(const char *prog, int level)
{
	snprintf(progname, sizeof(progname), "%s", prog);
	cur_level = level;
}

int gp_log_file(const char *path)
{
	if (!path || !*path) {
		if (out)
			fclose(out);
		out = NULL;
		return 0;
	}
	FILE *f = fopen(path, "a");
	if (!f)
		return -1;
	setvbuf(f, NULL, _IOLBF, 0);
	if (out)
		fclose(out);
	out = f;
	return 0;
}

void gp_log_set_level(int level)
{
	cur_level = level;
}

int gp_log_level(void)
{
	return cur_level;
}

int gp_log_level_parse(const char *s)
{
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (strcmp(s, names[i]) == 0 || (i == 0 && strcmp(s, "err") == 0) ||
		    (i == 1 && strcmp(s, "warn") == 0))
			return i;
	return -1;
}

void gp_log(int level, const char *fmt, ...)
{
	if (level > cur_level)
		return;
	struct timeval tv;
	struct tm tm;
	char ts[32];
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	FILE *f = out ? out : stderr;
	va_list ap;
	va_start(ap, fmt);
	flockfile(f);
	fprintf(f, "%s.%03ld %s[%d] %s: ", ts, (long)tv.tv_usec / 1000, progname, (int)getpid(),
		names[level]);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	funlockfile(f);
	va_end(ap);
}
