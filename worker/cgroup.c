/* cgroup.c: per-job control groups, v1 and v2. */
#include "worker/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "worker/cgroup_devices.h"
#include "common/log.h"
#include "common/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CG_ROOT "/sys/fs/cgroup"

/* snprintf for paths: a path that does not fit is cut (and then simply not found). */
static int fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n;
}

enum cg_ver { CG_OFF = 0, CG_V1, CG_V2 };

/* v1 hierarchies gpool uses, in the order their cgroup.procs are joined */
static const char *const v1_ctrls[] = {"memory", "cpuset", "pids", "freezer", "devices"};
#define NV1 (sizeof(v1_ctrls) / sizeof(v1_ctrls[0]))
enum { V1_MEMORY = 0, V1_CPUSET, V1_PIDS, V1_FREEZER, V1_DEVICES };

struct gp_cgroup {
	enum cg_ver ver;
	bool strict;		   /* v1/v2 asked explicitly: failures are errors */
	char *dir[NV1];		   /* v2: dir[0] only; v1: per controller, NULL when not used */
	char procs[NV1][PATH_MAX]; /* cgroup.procs of each dir, for attach_self */
	int nprocs;
	bool mem;
	uint64_t oom_seen;
};

static int write_str(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX];
	fmt(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, val, strlen(val));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

static int read_str(const char *dir, const char *file, char *buf, size_t len)
{
	char p[PATH_MAX];
	fmt(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static bool fs_is(const char *path, long magic)
{
	struct statfs s;
	return statfs(path, &s) == 0 && (long)s.f_type == magic;
}

int gp_cpulist_parse(const char *s, uint32_t **cpus, size_t *n)
{
	uint32_t *v = NULL;
	size_t cnt = 0;
	const char *p = s;
	while (p && *p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;
		if (end == p)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || b < a)
				goto bad;
		}
		if (b - a > 65536 || cnt + (b - a + 1) > 65536)
			goto bad;
		uint32_t *nv = realloc(v, (cnt + (b - a + 1)) * sizeof(*nv));
		if (!nv)
			goto bad;
		v = nv;
		for (unsigned long c = a; c <= b; c++)
			v[cnt++] = (uint32_t)c;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end && *end != '\n')
			goto bad;
	}
	*cpus = v;
	*n = cnt;
	return 0;
bad:
	free(v);
	errno = EINVAL;
	return -1;
}

/* Map the node's logical CPU indices onto the CPUs the parent group allows. */
static int cpuset_string(const char *parent_list, const struct gp_cgroup_limits *lim, char *out,
			 size_t len)
{
	uint32_t *avail = NULL;
	size_t navail = 0;
	char online[4096];
	if ((!parent_list || gp_cpulist_parse(parent_list, &avail, &navail) < 0 || !navail) &&
	    (read_str("/sys/devices/system/cpu", "online", online, sizeof(online)) < 0 ||
	     gp_cpulist_parse(online, &avail, &navail) < 0 || !navail)) {
		free(avail);
		return -1;
	}
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < lim->ncpus; i++) {
		uint32_t c = avail[lim->cpus[i] % navail];
		char item[16];
		fmt(item, sizeof(item), "%u", c);
		/* a CPU named twice (more tasks than CPUs) is listed once */
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			if (avail[lim->cpus[j] % navail] == c)
				dup = true;
		if (dup)
			continue;
		int n = fmt(out + o, len - o, "%s%s", o ? "," : "", item);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	free(avail);
	return 0;
}

/* A limit that cannot be set: an error when strict, one debug line when auto. */
static int limit_failed(gp_cgroup_t *cg, const char *what, gp_error_t *err)
{
	if (cg->strict)
		return gp_errprintf(err, "cannot set cgroup %s: %s", what, strerror(errno));
	gp_debug("cgroup: %s not writable (%s): skipped", what, strerror(errno));
	return 0;
}

static int v2_setup(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		    gp_error_t *err)
{
	char top[PATH_MAX], dir[PATH_MAX], buf[4096];
	fmt(top, sizeof(top), "%s/gpool", CG_ROOT);
	if (mkdir(top, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", top, strerror(errno));
	static const char *const ctrls[] = {"+memory", "+cpuset", "+pids"};
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		if (write_str(CG_ROOT, "cgroup.subtree_control", ctrls[i]) < 0 ||
		    write_str(top, "cgroup.subtree_control", ctrls[i]) < 0)
			gp_debug("cgroup: cannot enable %s: %s", ctrls[i] + 1, strerror(errno));
	}
	fmt(dir, sizeof(dir), "%s/%s", top, name);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", dir, strerror(errno));
	if (!(cg->dir[0] = strdup(dir)))
		return gp_errprintf(err, "out of memory");
	fmt(cg->procs[0], PATH_MAX, "%s/cgroup.procs", dir);
	cg->nprocs = 1;
	/* before any process joins: v2 has no devices.deny, a BPF program does its work */
	gp_error_t e2;
	if (gp_cgdev_deny(dir, lim->deny, lim->ndeny, &e2) < 0) {
		if (cg->strict)
			return gp_errprintf(err, "cannot deny card device files: %s", e2.text);
		gp_info(
		    "cgroup v2: cannot deny %zu card device file(s): %s: the card binding is by "
		    "environment only",
		    lim->ndeny, e2.text);
	}
	if (lim->mem_bytes) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		if (write_str(dir, "memory.max", buf) < 0) {
			if (limit_failed(cg, "memory.max", err) < 0)
				return -1;
		} else {
			cg->mem = true;
			write_str(dir, "memory.swap.max", "0");
		}
	}
	if (lim->ncpus) {
		char parent[4096];
		const char *pl = read_str(top, "cpuset.cpus.effective", parent, sizeof(parent)) == 0
				     ? parent
				     : NULL;
		if (cpuset_string(pl, lim, buf, sizeof(buf)) == 0 &&
		    write_str(dir, "cpuset.cpus", buf) < 0 &&
		    limit_failed(cg, "cpuset.cpus", err) < 0)
			return -1;
	}
	if (lim->pids_max) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		if (write_str(dir, "pids.max", buf) < 0 && limit_failed(cg, "pids.max", err) < 0)
			return -1;
	}
	return 0;
}

/* v1 cpuset groups need cpus and mems before a process may join: copy them from the parent. */
static int v1_cpuset_inherit(const char *parent, const char *dir)
{
	char buf[4096];
	if (read_str(dir, "cpuset.cpus", buf, sizeof(buf)) == 0 && !*buf &&
	    (read_str(parent, "cpuset.cpus", buf, sizeof(buf)) < 0 ||
	     write_str(dir, "cpuset.cpus", buf) < 0))
		return -1;
	if (read_str(dir, "cpuset.mems", buf, sizeof(buf)) == 0 && !*buf &&
	    (read_str(parent, "cpuset.mems", buf, sizeof(buf)) < 0 ||
	     write_str(dir, "cpuset.mems", buf) < 0))
		return -1;
	return 0;
}

static int v1_setup(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		    gp_error_t *err)
{
	char base[PATH_MAX], top[PATH_MAX], dir[PATH_MAX], buf[4096];
	for (size_t c = 0; c < NV1; c++) {
		if (c == V1_DEVICES && !lim->ndeny)
			continue; /* only jobs that must not see some cards pay for it */
		fmt(base, sizeof(base), "%s/%s", CG_ROOT, v1_ctrls[c]);
		if (!fs_is(base, CGROUP_SUPER_MAGIC)) {
			gp_debug("cgroup: v1 %s hierarchy not mounted: skipped", v1_ctrls[c]);
			continue;
		}
		fmt(top, sizeof(top), "%s/gpool", base);
		fmt(dir, sizeof(dir), "%s/%s", top, name);
		if ((mkdir(top, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(dir, 0755) < 0 && errno != EEXIST)) {
			if (cg->strict)
				return gp_errprintf(err, "cannot make '%s': %s", dir,
						    strerror(errno));
			gp_debug("cgroup: cannot make '%s': %s: skipped", dir, strerror(errno));
			continue;
		}
		if (c == V1_CPUSET &&
		    (v1_cpuset_inherit(base, top) < 0 || v1_cpuset_inherit(top, dir) < 0)) {
			/* a cpuset group without cpus cannot hold processes: do not join it */
			gp_debug("cgroup: cannot prepare cpuset '%s': skipped", dir);
			rmdir(dir);
			continue;
		}
		if (!(cg->dir[c] = strdup(dir)))
			return gp_errprintf(err, "out of memory");
		fmt(cg->procs[cg->nprocs++], PATH_MAX, "%s/cgroup.procs", dir);
	}
	if (cg->strict && !cg->nprocs)
		return gp_errprintf(err, "no cgroup v1 hierarchy is usable");
	if (lim->mem_bytes && cg->dir[V1_MEMORY]) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		if (write_str(cg->dir[V1_MEMORY], "memory.limit_in_bytes", buf) < 0) {
			if (limit_failed(cg, "memory.limit_in_bytes", err) < 0)
				return -1;
		} else {
			cg->mem = true;
			/* absent without swap accounting: then swap is not limited */
			write_str(cg->dir[V1_MEMORY], "memory.memsw.limit_in_bytes", buf);
		}
	}
	if (lim->ncpus && cg->dir[V1_CPUSET]) {
		char parent[4096], ptop[PATH_MAX];
		fmt(ptop, sizeof(ptop), "%s/cpuset/gpool", CG_ROOT);
		const char *pl =
		    read_str(ptop, "cpuset.cpus", parent, sizeof(parent)) == 0 ? parent : NULL;
		if (cpuset_string(pl, lim, buf, sizeof(buf)) == 0 &&
		    write_str(cg->dir[V1_CPUSET], "cpuset.cpus", buf) < 0 &&
		    limit_failed(cg, "cpuset.cpus", err) < 0)
			return -1;
	}
	for (size_t i = 0; i < lim->ndeny; i++) {
		if (!cg->dir[V1_DEVICES]) {
			if (limit_failed(cg, "devices.deny", err) < 0)
				return -1;
			break;
		}
		if (write_str(cg->dir[V1_DEVICES], "devices.deny", lim->deny[i]) < 0 &&
		    limit_failed(cg, "devices.deny", err) < 0)
			return -1;
	}
	if (lim->pids_max && cg->dir[V1_PIDS]) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		if (write_str(cg->dir[V1_PIDS], "pids.max", buf) < 0 &&
		    limit_failed(cg, "pids.max", err) < 0)
			return -1;
	}
	return 0;
}

gp_cgroup_t *gp_cgroup_create(const char *mode, const char *name,
			      const struct gp_cgroup_limits *lim, gp_error_t *err)
{
	gp_cgroup_t *cg = calloc(1, sizeof(*cg));
	if (!cg) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	bool v2 = fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC);
	char probe[PATH_MAX];
	fmt(probe, sizeof(probe), "%s/memory", CG_ROOT);
	bool v1 = !v2 &&
		  (fs_is(probe, CGROUP_SUPER_MAGIC) || fs_is(CG_ROOT "/pids", CGROUP_SUPER_MAGIC) ||
		   fs_is(CG_ROOT "/freezer", CGROUP_SUPER_MAGIC));
	int rc = 0;
	if (!mode || !strcmp(mode, "off")) {
		return cg;
	} else if (!strcmp(mode, "auto")) {
		if (v2)
			cg->ver = CG_V2;
		else if (v1)
			cg->ver = CG_V1;
		else {
			gp_info("cgroup file system not mounted under %s: running without cgroups",
				CG_ROOT);
			return cg;
		}
	} else if (!strcmp(mode, "v2")) {
		if (!v2) {
			gp_errprintf(err, "cgroups v2 asked for, but %s is not a cgroup2 mount",
				     CG_ROOT);
			goto fail;
		}
		cg->ver = CG_V2;
		cg->strict = true;
	} else if (!strcmp(mode, "v1")) {
		if (!v1) {
			gp_errprintf(
			    err, "cgroups v1 asked for, but no v1 hierarchy is mounted under %s",
			    CG_ROOT);
			goto fail;
		}
		cg->ver = CG_V1;
		cg->strict = true;
	} else {
		gp_errprintf(err, "invalid cgroups mode '%s' (auto, v1, v2 or off)", mode);
		goto fail;
	}
	rc = cg->ver == CG_V2 ? v2_setup(cg, name, lim, err) : v1_setup(cg, name, lim, err);
	if (rc < 0) {
		if (cg->strict)
			goto fail;
		gp_info("cgroups unusable (%s): running without them", err ? err->text : "?");
	}
	return cg;
fail:
	gp_cgroup_destroy(&cg);
	errno = EINVAL;
	return NULL;
}

const char *gp_cgroup_version(const gp_cgroup_t *cg)
{
	if (!cg)
		return "off";
	static const char *const names[] = {[CG_OFF] = "off", [CG_V1] = "v1", [CG_V2] = "v2"};
	return cg->nprocs ? names[cg->ver] : "off";
}

int gp_cgroup_attach_self(const gp_cgroup_t *cg)
{
	if (!cg)
		return 0;
	char pid[24];
	int n = 0;
	char tmp[24];
	for (long v = (long)getpid(); v > 0; v /= 10)
		tmp[n++] = (char)('0' + v % 10);
	for (int i = 0; i < n; i++)
		pid[i] = tmp[n - 1 - i];
	for (int i = 0; i < cg->nprocs; i++) {
		int fd = open(cg->procs[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		if (write(fd, pid, (size_t)n) < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* Call f for every pid in the group. */
static int each_pid(gp_cgroup_t *cg, int sig)
{
	if (!cg)
		return 0;
	if (!cg->nprocs)
		return 0;
	FILE *f = fopen(cg->procs[0], "re");
	if (!f)
		return 0;
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid > 0 && pid != getpid() && kill((pid_t)pid, sig) == 0)
			n++;
	}
	fclose(f);
	return n;
}

int gp_cgroup_signal(gp_cgroup_t *cg, int sig)
{
	return each_pid(cg, sig);
}

bool gp_cgroup_empty(gp_cgroup_t *cg)
{
	if (!cg || !cg->nprocs)
		return true;
	char buf[64];
	char dir[PATH_MAX];
	fmt(dir, sizeof(dir), "%s", cg->procs[0]);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (read_str(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
		return true;
	return buf[0] == '\0';
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void gp_cgroup_kill(gp_cgroup_t *cg)
{
	if (!cg)
		return;
	if (!cg->nprocs)
		return;
	if (cg->ver == CG_V2 && write_str(cg->dir[0], "cgroup.kill", "1") == 0)
		return;
	const char *fz = cg->ver == CG_V1 ? cg->dir[V1_FREEZER] : NULL;
	/* freezing first stops a fork bomb from outrunning the kill loop */
	if (fz && write_str(fz, "freezer.state", "FROZEN") == 0) {
		char st[32] = "";
		for (int i = 0; i < 100; i++) {
			if (read_str(fz, "freezer.state", st, sizeof(st)) == 0 &&
			    !strcmp(st, "FROZEN"))
				break;
			sleep_ms(5);
		}
	}
	for (int i = 0; i < 50 && each_pid(cg, SIGKILL) > 0; i++) {
		if (fz)
			break;
		sleep_ms(2);
	}
	if (fz)
		write_str(fz, "freezer.state", "THAWED");
}

uint64_t gp_cgroup_oom_kills(gp_cgroup_t *cg)
{
	if (!cg)
		return 0;
	if (!cg->mem)
		return 0;
	char buf[2048];
	uint64_t total = 0;
	const char *dir = cg->ver == CG_V2 ? cg->dir[0] : cg->dir[V1_MEMORY];
	const char *file = cg->ver == CG_V2 ? "memory.events" : "memory.oom_control";
	if (read_str(dir, file, buf, sizeof(buf)) == 0) {
		char *p = strstr(buf, "oom_kill ");
		if (p) {
			total = strtoull(p + 9, NULL, 10);
		} else if (cg->ver == CG_V1 &&
			   read_str(dir, "memory.failcnt", buf, sizeof(buf)) == 0) {
			/* old kernels do not count kills: hitting the limit is the best hint */
			total = strtoull(buf, NULL, 10) ? 1 : 0;
		}
	}
	uint64_t d = total > cg->oom_seen ? total - cg->oom_seen : 0;
	if (total > cg->oom_seen)
		cg->oom_seen = total;
	return d;
}

void gp_cgroup_destroy(gp_cgroup_t **p)
{
	if (!p || !*p)
		return;
	gp_cgroup_t *cg = *p;
	if (cg->nprocs) {
		for (int i = 0; i < 100 && !gp_cgroup_empty(cg); i++) {
			gp_cgroup_kill(cg);
			sleep_ms(10);
		}
	}
	for (size_t c = 0; c < NV1; c++) {
		if (!cg->dir[c])
			continue;
		for (int i = 0; i < 50 && rmdir(cg->dir[c]) < 0 && errno == EBUSY; i++)
			sleep_ms(10);
		free(cg->dir[c]);
	}
	free(cg);
	*p = NULL;
}

size_t gp_cgroup_card_rules(const uint32_t *given, size_t ngiven, const int *vendor,
			    const bool *fake, size_t ncards, char (*buf)[32], const char **rules,
			    size_t max)
{
	size_t n = 0;
	int nv = 0, amd = 0;
	for (size_t i = 0; i < ncards; i++) {
		int ord = vendor[i] == 1 ? nv++ : vendor[i] == 2 ? amd++ : -1;
		bool mine = false;
		for (size_t k = 0; k < ngiven; k++)
			mine |= given[k] == i;
		if (mine || fake[i] || ord < 0 || n == max)
			continue;
		snprintf(buf[n], 32, vendor[i] == 1 ? "c 195:%d rwm" : "c 226:%d rwm",
			 vendor[i] == 1 ? ord : 128 + ord);
		rules[n] = buf[n];
		n++;
	}
	return n;
}
