/* args.c - what every command's command line shares: the option table scanner with
 * --help, job ids ("42", "42,43") or names and signal names (args.h) */
#include "cli/lib/args.h"
#include "cli/lib/jobname.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gp_args_jobids(const char *s, uint64_t **ids, size_t *n, gp_error_t *err)
{
	const char *p = s;
	if (!*s)
		goto bad;
	while (1) {
		size_t len = strcspn(p, ",");
		char *end;
		if (len == 0 || p[0] < '0' || p[0] > '9')
			goto bad;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || end != p + len || v == 0)
			goto bad;
		uint64_t *nv = realloc(*ids, (*n + 1) * sizeof(*nv));
		if (!nv) {
			errno = ENOMEM;
			return gp_errprintf(err, "out of memory");
		}
		*ids = nv;
		nv[(*n)++] = v;
		if (!p[len])
			return 0;
		p += len + 1;
	}
bad:
	errno = EINVAL;
	return gp_errprintf(err, "invalid job id '%s'", s);
}

int gp_args_jobs(const char *s, uint64_t **ids, size_t *n, const char ***names, size_t *nnames,
		 gp_error_t *err)
{
	if (!gp_jobname_is_name(s))
		return gp_args_jobids(s, ids, n, err);
	const char **nv = realloc(*names, (*nnames + 1) * sizeof(*nv));
	if (!nv) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	*names = nv;
	nv[(*nnames)++] = s;
	return 0;
}

int gp_args_signal(const char *s, int *sig, gp_error_t *err)
{
	const char *name = strncasecmp(s, "SIG", 3) ? s : s + 3;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s >= '0' && *s <= '9' && !*end && v > 0 && v < SIGRTMIN) {
		*sig = (int)v;
		return 0;
	}
	for (int i = 1; i < SIGRTMIN && *name; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && !strcasecmp(abbrev, name)) {
			*sig = i;
			return 0;
		}
	}
	errno = EINVAL;
	return gp_errprintf(err, "invalid signal '%s'", s);
}

int gp_args_parse(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx,
		  const bool *help, const char *prog, const char *operands, const char *what,
		  char ***ops, int *nops, gp_error_t *err)
{
	if (gp_opt_parse_mixed(tab, n, argc, argv, ctx, ops, nops, err) < 0)
		return -1;
	if (!*help)
		return 0;
	printf("usage: %s [options] %s\n%s\n\noptions:\n", prog, operands, what);
	gp_opt_usage(tab, n, stdout);
	return 1;
}
