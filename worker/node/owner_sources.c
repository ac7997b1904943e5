/* owner_sources.c: the owner's sources, windows and names (see owner_sources.h). */
#include "worker/node/owner_sources.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cards/card_procs.h"

#ifdef GPOOL_HAVE_SDBUS
#include <systemd/sd-bus.h>
#endif

static const char *const policy_names[] = {"", "suspend", "vacate", "ignore"};

int gp_owner_policy_parse(const char *s)
{
	for (int i = 1; i < 4; i++)
		if (!strcmp(s, policy_names[i]))
			return i;
	return -1;
}

const char *gp_owner_policy_name(int policy)
{
	return policy >= 1 && policy <= 3 ? policy_names[policy] : "none";
}

int gp_owner_sources_parse(const char *s, unsigned *mask, gp_error_t *err)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"file", GP_OWNER_FILE},
		     {"logind", GP_OWNER_LOGIND},
		     {"cards", GP_OWNER_CARDS},
		     {"cpu", GP_OWNER_CPU}};
	unsigned m = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	char *save = NULL;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(t, "none"))
			continue;
		size_t i = 0;
		while (i < sizeof(names) / sizeof(names[0]) && strcmp(t, names[i].name))
			i++;
		if (i == sizeof(names) / sizeof(names[0]))
			return gp_errprintf(
			    err, "invalid owner source '%s' (file, logind, cards, cpu)", t);
		m |= names[i].bit;
	}
	*mask = m;
	return 0;
}

static int day_of(const char *s, size_t len)
{
	static const char *const d[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
	for (int i = 0; i < 7; i++)
		if (len == 3 && !strncasecmp(s, d[i], 3))
			return i;
	return -1;
}

/* "Mon-Fri", "Sat,Sun", "*" -> a mask of days. -1 when bad. */
static int days_parse(const char *s)
{
	if (!strcmp(s, "*"))
		return 0x7f;
	int mask = 0;
	while (*s) {
		const char *e = s + strcspn(s, ",");
		const char *dash = memchr(s, '-', (size_t)(e - s));
		int a = day_of(s, (size_t)((dash ? dash : e) - s));
		int b = dash ? day_of(dash + 1, (size_t)(e - dash - 1)) : a;
		if (a < 0 || b < 0)
			return -1;
		for (int d = a;; d = (d + 1) % 7) {
			mask |= 1 << d;
			if (d == b)
				break;
		}
		s = *e ? e + 1 : e;
	}
	return mask ? mask : -1;
}

static int hhmm(const char *s, uint16_t *min)
{
	unsigned h, m;
	char extra;
	if (sscanf(s, "%u:%u%c", &h, &m, &extra) != 2 || h > 24 || m > 59 || (h == 24 && m))
		return -1;
	*min = (uint16_t)(h * 60 + m);
	return 0;
}

int gp_owner_windows_parse(const char *s, struct gp_owner_window *w, size_t max, size_t *n,
			   gp_error_t *err)
{
	size_t k = 0;
	char buf[1024];
	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return gp_errprintf(err, "window list too long");
	char *save = NULL;
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		while (isspace((unsigned char)*t))
			t++;
		if (!*t)
			continue;
		char days[64], range[64], extra[8];
		int got = sscanf(t, "%63s %63s %7s", days, range, extra);
		char *dash = got == 2 ? strchr(range, '-') : NULL;
		struct gp_owner_window x;
		int dm = got == 2 ? days_parse(days) : -1;
		if (!dash || dm < 0)
			return gp_errprintf(err, "invalid window '%s' (DAYS HH:MM-HH:MM)", t);
		*dash = '\0';
		if (hhmm(range, &x.from) < 0 || hhmm(dash + 1, &x.to) < 0 || x.from == x.to)
			return gp_errprintf(err, "invalid window '%s' (DAYS HH:MM-HH:MM)", t);
		if (k == max)
			return gp_errprintf(err, "more than %zu windows", max);
		x.days = (uint8_t)dm;
		w[k++] = x;
	}
	*n = k;
	return 0;
}

bool gp_owner_windows_on(const struct gp_owner_window *w, size_t n, const struct tm *lt)
{
	int day = (lt->tm_wday + 6) % 7; /* Monday 0 */
	int prev = (day + 6) % 7;
	int min = lt->tm_hour * 60 + lt->tm_min;
	for (size_t i = 0; i < n; i++) {
		if (w[i].from < w[i].to) {
			if (w[i].days >> day & 1 && min >= w[i].from && min < w[i].to)
				return true;
		} else { /* past midnight: the evening of a day, the morning after it */
			if (w[i].days >> day & 1 && min >= w[i].from)
				return true;
			if (w[i].days >> prev & 1 && min < w[i].to)
				return true;
		}
	}
	return false;
}

bool gp_owner_file_active(const char *path)
{
	return *path && access(path, F_OK) == 0;
}

/* Is pid an MPS daemon (nvidia-cuda-mps-control or -server: comm keeps 15 bytes) whose pipe
 * directory lies under mps_root? Its own environment's, else its parent's (the server is the
 * control daemon's child). */
static bool gpool_mps(const char *proc_root, const char *mps_root, pid_t pid, int depth)
{
	char path[512], line[256];
	snprintf(path, sizeof(path), "%s/%d/comm", proc_root, (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool mps = fgets(line, sizeof(line), f) && !strncmp(line, "nvidia-cuda-mps", 15);
	fclose(f);
	if (!mps)
		return false;
	snprintf(path, sizeof(path), "%s/%d/environ", proc_root, (int)pid);
	char env[32768];
	size_t n = 0;
	if ((f = fopen(path, "re"))) {
		n = fread(env, 1, sizeof(env) - 1, f);
		fclose(f);
	}
	env[n] = '\0';
	size_t rl = strlen(mps_root);
	for (size_t at = 0; at < n; at += strlen(env + at) + 1)
		if (!strncmp(env + at, "CUDA_MPS_PIPE_DIRECTORY=", 24))
			return !strncmp(env + at + 24, mps_root, rl) && env[at + 24 + rl] == '/' &&
			       !strstr(env + at + 24 + rl, "/..");
	if (depth > 0)
		return false;
	/* no pipe directory of its own: its parent's */
	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
	char buf[1024];
	if (!(f = fopen(path, "re")))
		return false;
	size_t k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = '\0';
	const char *p = strrchr(buf, ')');
	int ppid = 0;
	if (!p || p[1] != ' ' || sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid <= 1)
		return false;
	return gpool_mps(proc_root, mps_root, (pid_t)ppid, depth + 1);
}

bool gp_owner_pid_is_gpool(const char *proc_root, const char *mps_root, pid_t pid)
{
	char path[512], line[1024];
	snprintf(path, sizeof(path), "%s/%d/comm", proc_root, (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		bool ours = fgets(line, sizeof(line), f) &&
			    (!strcmp(line, "gworkerd\n") || !strcmp(line, "gstepd\n"));
		fclose(f);
		if (ours)
			return true;
	}
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
	if ((f = fopen(path, "re"))) {
		bool ours = false;
		while (!ours && fgets(line, sizeof(line), f))
			ours = strstr(line, "/gpool/") != NULL;
		fclose(f);
		if (ours)
			return true;
	}
	return mps_root && *mps_root && gpool_mps(proc_root, mps_root, pid, 0);
}

/* utime + stime of one process, and whether it is a kernel thread (PF_KTHREAD). -1: gone. */
static int stat_ticks(const char *proc_root, pid_t pid, uint64_t *ticks, bool *kthread)
{
	char path[512], buf[1024];
	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	if (!p)
		return -1;
	/* after ")": state(3) ppid pgrp session tty tpgid flags(9) minflt cminflt majflt cmajflt
	 * utime(14) stime(15) */
	unsigned long flags = 0;
	unsigned long long ut = 0, st = 0;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %llu %llu", &flags, &ut,
		   &st) != 3)
		return -1;
	*kthread = flags & 0x00200000; /* PF_KTHREAD */
	*ticks = ut + st;
	return 0;
}

int gp_owner_cpu_ticks(const char *proc_root, const char *mps_root, uint64_t *ticks)
{
	DIR *d = opendir(proc_root);
	if (!d)
		return -1;
	uint64_t sum = 0;
	pid_t self = getpid();
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		uint64_t t;
		bool kthread;
		if (stat_ticks(proc_root, (pid_t)pid, &t, &kthread) < 0 || kthread ||
		    gp_owner_pid_is_gpool(proc_root, mps_root, (pid_t)pid))
			continue;
		sum += t;
	}
	closedir(d);
	*ticks = sum;
	return 0;
}

int gp_owner_fake_card_pids(const char *path, pid_t *out, size_t max)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t k = 0;
	char line[64];
	while (k < max && fgets(line, sizeof(line), f)) {
		char *end;
		errno = 0;
		long pid = strtol(line, &end, 10);
		/* a pid the kernel could give (PID_MAX_LIMIT is 2^22); anything else is skipped */
		if (end != line && !errno && pid > 0 && pid <= (1L << 22))
			out[k++] = (pid_t)pid;
	}
	fclose(f);
	return (int)k;
}

/* ---- NVML and ROCm SMI: the process lists (cards/card_procs.h) ---- */

int gp_owner_card_pids(int vendor, const char *pci_bus_id, pid_t *out, size_t max)
{
	struct gp_card_proc v[256];
	int n = gp_card_procs(vendor, pci_bus_id, v, max < 256 ? max : 256);
	for (int i = 0; i < n; i++)
		out[i] = v[i].pid;
	return n;
}

/* ---- systemd-logind ---- */

#ifdef GPOOL_HAVE_SDBUS
struct gp_logind {
	sd_bus *bus;
};

struct gp_logind *gp_logind_open(gp_error_t *err)
{
	struct gp_logind *l = calloc(1, sizeof(*l));
	if (!l) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	int r = sd_bus_open_system(&l->bus);
	if (r < 0) {
		gp_errprintf(err, "no system bus: %s", strerror(-r));
		free(l);
		return NULL;
	}
	bool idle;
	uint64_t since;
	if (gp_logind_idle(l, &idle, &since, err) < 0) {
		gp_logind_close(&l);
		return NULL;
	}
	return l;
}

void gp_logind_close(struct gp_logind **pl)
{
	if (!pl || !*pl)
		return;
	sd_bus_unref((*pl)->bus);
	free(*pl);
	*pl = NULL;
}

int gp_logind_idle(struct gp_logind *l, bool *idle, uint64_t *since_us, gp_error_t *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int hint = 0;
	uint64_t since = 0;
	int r = sd_bus_get_property_trivial(
	    l->bus, "org.freedesktop.login1", "/org/freedesktop/login1",
	    "org.freedesktop.login1.Manager", "IdleHint", &e, 'b', &hint);
	if (r >= 0)
		r = sd_bus_get_property_trivial(
		    l->bus, "org.freedesktop.login1", "/org/freedesktop/login1",
		    "org.freedesktop.login1.Manager", "IdleSinceHint", &e, 't', &since);
	if (r < 0) {
		gp_errprintf(err, "systemd-logind: %s", e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return -1;
	}
	*idle = hint;
	*since_us = since;
	return 0;
}
#else
struct gp_logind *gp_logind_open(gp_error_t *err)
{
	gp_errprintf(err, "systemd-logind: this gworkerd was built without libsystemd (sd-bus)");
	return NULL;
}

void gp_logind_close(struct gp_logind **pl)
{
	if (pl)
		*pl = NULL;
}

int gp_logind_idle(struct gp_logind *l, bool *idle, uint64_t *since_us, gp_error_t *err)
{
	return gp_errprintf(err, "systemd-logind: no sd-bus");
}
#endif
