/* schedlist.c: the schedulers a client may talk to (see schedlist.h). */
#include "common/schedlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gp_schedlist_valid(const char *ep)
{
	size_t n = strlen(ep);
	if (n == 0 || n > GP_SCHEDLIST_EP_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)ep[i] <= 0x20 || ep[i] == 0x7f || ep[i] == ',')
			return false;
	if (!strncmp(ep, "ipc://", 6))
		return n > 6;
	if (!strncmp(ep, "inproc://", 9)) /* a test's scheduler in the same process */
		return n > 9;
	if (strncmp(ep, "tcp://", 6) != 0)
		return false;
	const char *colon = strrchr(ep + 6, ':');
	if (!colon || colon == ep + 6 || !colon[1])
		return false;
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	return !*end && !errno && port > 0 && port < 65536 && isdigit((unsigned char)colon[1]);
}

int gp_schedlist_parse(struct gp_schedlist *l, const char *text, gp_error_t *err)
{
	struct gp_schedlist t = {0};
	const char *p = text ? text : "";
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0) {
			errno = EINVAL;
			return gp_errprintf(err, "invalid scheduler list '%.128s': an empty entry",
					    text ? text : "");
		}
		if (t.n == GP_SCHEDLIST_MAX) {
			errno = EINVAL;
			return gp_errprintf(err, "invalid scheduler list '%.128s': more than %d",
					    text, GP_SCHEDLIST_MAX);
		}
		if (len > GP_SCHEDLIST_EP_MAX) {
			errno = EINVAL;
			return gp_errprintf(err, "invalid scheduler endpoint '%.64s...': too long",
					    p);
		}
		memcpy(t.ep[t.n], p, len);
		t.ep[t.n][len] = 0;
		if (!gp_schedlist_valid(t.ep[t.n])) {
			errno = EINVAL;
			return gp_errprintf(err,
					    "invalid scheduler endpoint '%s' (tcp://HOST:PORT or "
					    "ipc://PATH)",
					    t.ep[t.n]);
		}
		for (size_t i = 0; i < t.n; i++)
			if (!strcmp(t.ep[i], t.ep[t.n])) {
				errno = EINVAL;
				return gp_errprintf(err, "scheduler endpoint '%s' listed twice",
						    t.ep[t.n]);
			}
		t.n++;
		if (!e)
			break;
		p = e + 1;
	}
	*l = t;
	return 0;
}

const char *gp_schedlist_current(const struct gp_schedlist *l)
{
	return l->n ? l->ep[l->cur] : "";
}

bool gp_schedlist_next(struct gp_schedlist *l)
{
	if (l->n == 0)
		return true;
	l->cur = (l->cur + 1) % l->n;
	return l->cur == 0;
}

int gp_schedlist_follow(struct gp_schedlist *l, const char *leader)
{
	if (!leader || !gp_schedlist_valid(leader) || !strcmp(leader, gp_schedlist_current(l))) {
		gp_schedlist_next(l);
		return -1;
	}
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->ep[i], leader)) {
			l->cur = i;
			return 0;
		}
	if (l->n == GP_SCHEDLIST_MAX) { /* no room: the last learned one makes way */
		snprintf(l->ep[l->n - 1], sizeof(l->ep[0]), "%s", leader);
		l->cur = l->n - 1;
		return 0;
	}
	snprintf(l->ep[l->n], sizeof(l->ep[0]), "%s", leader);
	l->cur = l->n++;
	return 0;
}
