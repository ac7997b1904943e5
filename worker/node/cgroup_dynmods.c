/* cgroup_dynmods.c: favordynmods for the kernel's cgroup migration lock (cgroup_dynmods.h). */
#include "worker/node/cgroup_dynmods.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/util.h"

#define OPT	"favordynmods"
#define V1_NAME "gpool-dynmods"
#define V1_DIR	"/run/gpool/cgroup-dynmods"

/* the per-mount options of mountinfo's field 6 that a remount must repeat to keep them */
static const struct {
	const char *name;
	unsigned long flag;
} mnt_flags[] = {
    {"ro", MS_RDONLY},	       {"nosuid", MS_NOSUID},		{"nodev", MS_NODEV},
    {"noexec", MS_NOEXEC},     {"noatime", MS_NOATIME},		{"nodiratime", MS_NODIRATIME},
    {"relatime", MS_RELATIME}, {"strictatime", MS_STRICTATIME},
};

/* one line of mountinfo, split in place (the fields point into line) */
struct mi_line {
	char *point; /* field 5, unescaped */
	char *mopts; /* field 6 */
	char *fstype;
	char *sopts;
};

/* mountinfo writes space, tab, newline and backslash in paths as \ooo */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static int split(char *line, struct mi_line *m)
{
	char *save = NULL, *f[6];
	for (int i = 0; i < 6; i++)
		if (!(f[i] = strtok_r(i ? NULL : line, " ", &save)))
			return -1;
	char *t;
	while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
		; /* optional fields, up to the separator */
	if (!t || !(m->fstype = strtok_r(NULL, " ", &save)) || !strtok_r(NULL, " ", &save) ||
	    !(m->sopts = strtok_r(NULL, " ", &save)))
		return -1;
	m->point = f[4];
	m->mopts = f[5];
	unescape(m->point);
	return 0;
}

static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, opt, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

static unsigned long flags_of(const char *mopts)
{
	unsigned long fl = 0;
	for (size_t i = 0; i < sizeof(mnt_flags) / sizeof(mnt_flags[0]); i++)
		if (has_opt(mopts, mnt_flags[i].name))
			fl |= mnt_flags[i].flag;
	return fl;
}

/* the super options without rw/ro (those are the mount's flags), plus favordynmods */
static int v2_data(const char *sopts, char *out, size_t len)
{
	size_t n = 0;
	out[0] = '\0';
	char buf[512];
	if (snprintf(buf, sizeof(buf), "%s", sopts) >= (int)sizeof(buf))
		return -1;
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "rw") || !strcmp(t, "ro"))
			continue;
		int w = snprintf(out + n, len - n, "%s,", t);
		if (w < 0 || (size_t)w >= len - n)
			return -1;
		n += (size_t)w;
	}
	int w = snprintf(out + n, len - n, "%s", OPT);
	return w < 0 || (size_t)w >= len - n ? -1 : 0;
}

int gp_dynmods_plan(const char *mountinfo, const char *root, struct gp_dynmods_plan *p)
{
	memset(p, 0, sizeof(*p));
	char *text = strdup(mountinfo ? mountinfo : "");
	if (!text)
		return -1;
	bool v1 = false, v2 = false;
	int rc = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mi_line m;
		if (split(line, &m) < 0)
			continue; /* not a mount line: nothing of ours */
		bool is_v2 = !strcmp(m.fstype, "cgroup2");
		if (!is_v2 && strcmp(m.fstype, "cgroup"))
			continue;
		if (has_opt(m.sopts, OPT)) {
			p->how = GP_DYNMODS_ALREADY;
			goto out;
		}
		if (!is_v2) {
			v1 = true;
			continue;
		}
		if (strcmp(m.point, root))
			continue;
		/* the last mount at root is the one on top */
		v2 = true;
		if (snprintf(p->target, sizeof(p->target), "%s", m.point) >=
			(int)sizeof(p->target) ||
		    v2_data(m.sopts, p->data, sizeof(p->data)) < 0) {
			rc = -1;
			goto out;
		}
		p->flags = flags_of(m.mopts);
	}
	p->how = v2 ? GP_DYNMODS_REMOUNT_V2 : v1 ? GP_DYNMODS_MOUNT_V1 : GP_DYNMODS_NONE;
out:
	free(text);
	if (rc < 0) {
		memset(p, 0, sizeof(*p));
		errno = EINVAL;
	}
	return rc;
}

int gp_dynmods_apply(const struct gp_dynmods_plan *p, const char *v1_dir, gp_error_t *err)
{
	switch (p->how) {
	case GP_DYNMODS_NONE:
	case GP_DYNMODS_ALREADY:
		return 0;
	case GP_DYNMODS_REMOUNT_V2:
		if (mount("cgroup2", p->target, "cgroup2", MS_REMOUNT | p->flags, p->data) < 0)
			return gp_errprintf(err, "remount %s with %s: %s", p->target, p->data,
					    strerror(errno));
		return 0;
	case GP_DYNMODS_MOUNT_V1:
		if (gp_mkdir_p(v1_dir, 0755) < 0)
			return gp_errprintf(err, "mkdir %s: %s", v1_dir, strerror(errno));
		if (mount("cgroup", v1_dir, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "none,name=" V1_NAME "," OPT) < 0)
			return gp_errprintf(err, "mount the v1 hierarchy name=%s on %s: %s",
					    V1_NAME, v1_dir, strerror(errno));
		return 0;
	}
	return gp_errprintf(err, "invalid plan");
}

int gp_cgroup_favor_dynmods(char *what, size_t len, gp_error_t *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return gp_errprintf(err, "/proc/self/mountinfo: %s", strerror(errno));
	char *text = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(text);
		return gp_errprintf(err, "/proc/self/mountinfo: cannot read it");
	}
	struct gp_dynmods_plan p;
	int rc = gp_dynmods_plan(text, "/sys/fs/cgroup", &p);
	free(text);
	if (rc < 0)
		return gp_errprintf(err, "/proc/self/mountinfo: a cgroup line does not parse");
	static const char *const said[] = {
	    [GP_DYNMODS_NONE] = "no cgroup file system mounted",
	    [GP_DYNMODS_ALREADY] = "already on",
	    [GP_DYNMODS_REMOUNT_V2] = "turned on: /sys/fs/cgroup remounted with " OPT,
	    [GP_DYNMODS_MOUNT_V1] = "turned on: v1 hierarchy name=" V1_NAME " mounted on " V1_DIR,
	};
	if (gp_dynmods_apply(&p, V1_DIR, err) < 0)
		return -1;
	snprintf(what, len, "%s", said[p.how]);
	return p.how == GP_DYNMODS_REMOUNT_V2 || p.how == GP_DYNMODS_MOUNT_V1;
}
