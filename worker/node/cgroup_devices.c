/* cgroup_devices.c: the cgroup v2 device program, built as raw eBPF instructions.
 *
 * The program, for rules r1..rn (registers: r1 the bpf_cgroup_dev_ctx, r2 the device type,
 * r3 major, r4 minor, r6 the access bits):
 *
 *	r2 = ctx->access_type; r6 = r2; r2 &= 0xffff; r6 >>= 16
 *	r3 = ctx->major; r4 = ctx->minor
 *	for each rule:
 *		if r2 != type goto next		(left out for type 'a')
 *		if r3 != major goto next	(left out for major '*')
 *		if r4 != minor goto next	(left out for minor '*')
 *		r5 = r6; r5 &= access; if r5 == 0 goto next	(left out for "rwm")
 *		r0 = 0; exit			(denied)
 *	next:
 *	r0 = 1; exit				(allowed)
 */
#include "worker/node/cgroup_devices.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i;
	memset(&i, 0, sizeof(i));
	i.code = code;
	i.dst_reg = dst & 0xf;
	i.src_reg = src & 0xf;
	i.off = off;
	i.imm = imm;
	return i;
}

#define LDX_W(dst, src, off) insn(BPF_LDX | BPF_W | BPF_MEM, dst, src, off, 0)
#define MOV_X(dst, src)	     insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0)
#define MOV_K(dst, imm)	     insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define AND_K(dst, imm)	     insn(BPF_ALU64 | BPF_AND | BPF_K, dst, 0, 0, imm)
#define RSH_K(dst, imm)	     insn(BPF_ALU64 | BPF_RSH | BPF_K, dst, 0, 0, imm)
#define JNE_K(dst, imm)	     insn(BPF_JMP | BPF_JNE | BPF_K, dst, 0, 0, imm) /* offset set later */
#define JEQ_K(dst, imm)	     insn(BPF_JMP | BPF_JEQ | BPF_K, dst, 0, 0, imm)
#define EXIT()		     insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The largest major or minor the kernel has (MINORBITS 20), with room to spare. */
#define DEV_NUM_MAX 0xfffffff

static int parse_num(const char **p, int32_t *v)
{
	if (**p == '*') {
		(*p)++;
		*v = -1;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long x = strtoul(*p, &end, 10);
	if (errno || end == *p || x > DEV_NUM_MAX || **p == '-' || **p == '+')
		return -1;
	*v = (int32_t)x;
	*p = end;
	return 0;
}

int gp_cgdev_rule_parse(const char *s, gp_cgdev_rule_t *r)
{
	gp_cgdev_rule_t x = {.major = -1, .minor = -1, .access = GP_CGDEV_ALL};
	if (!s || (s[0] != 'a' && s[0] != 'b' && s[0] != 'c'))
		goto bad;
	x.type = s[0];
	const char *p = s + 1;
	if (x.type == 'a' && !*p) { /* devices.deny's "a": every device */
		*r = x;
		return 0;
	}
	if (*p++ != ' ' || parse_num(&p, &x.major) < 0 || *p++ != ':' ||
	    parse_num(&p, &x.minor) < 0)
		goto bad;
	if (*p == ' ') {
		static const struct {
			char c;
			uint8_t bit;
		} acc[] = {{'m', GP_CGDEV_MKNOD}, {'r', GP_CGDEV_READ}, {'w', GP_CGDEV_WRITE}};
		x.access = 0;
		for (p++; *p; p++) {
			size_t k;
			for (k = 0; k < sizeof(acc) / sizeof(acc[0]) && acc[k].c != *p; k++)
				;
			if (k == sizeof(acc) / sizeof(acc[0]))
				goto bad;
			x.access |= acc[k].bit;
		}
	}
	if (*p || !x.access)
		goto bad;
	*r = x;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* The instructions of one rule into out (room checked by the caller); returns the count. */
static size_t build_rule(const gp_cgdev_rule_t *r, struct bpf_insn *out)
{
	size_t n = 0;
	if (r->type != 'a')
		out[n++] = JNE_K(2, r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK);
	if (r->type != 'a' && r->major >= 0)
		out[n++] = JNE_K(3, r->major);
	if (r->type != 'a' && r->minor >= 0)
		out[n++] = JNE_K(4, r->minor);
	if ((r->access & GP_CGDEV_ALL) != GP_CGDEV_ALL) {
		out[n++] = MOV_X(5, 6);
		out[n++] = AND_K(5, r->access);
		out[n++] = JEQ_K(5, 0);
	}
	out[n++] = MOV_K(0, 0);
	out[n++] = EXIT();
	/* every conditional jump goes to the next rule: the instruction after this block */
	for (size_t i = 0; i < n; i++)
		if (BPF_CLASS(out[i].code) == BPF_JMP && BPF_OP(out[i].code) != BPF_EXIT)
			out[i].off = (int16_t)(n - i - 1);
	return n;
}

int gp_cgdev_build(const gp_cgdev_rule_t *rules, size_t n, struct bpf_insn *out, size_t max)
{
	if (n > GP_CGDEV_MAX_RULES || max < GP_CGDEV_INSNS(n)) {
		errno = E2BIG;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const gp_cgdev_rule_t *r = &rules[i];
		if ((r->type != 'a' && r->type != 'b' && r->type != 'c') ||
		    !(r->access & GP_CGDEV_ALL) || r->major > DEV_NUM_MAX ||
		    r->minor > DEV_NUM_MAX) {
			errno = EINVAL;
			return -1;
		}
	}
	size_t k = 0;
	out[k++] = LDX_W(2, 1, (int16_t)offsetof(struct bpf_cgroup_dev_ctx, access_type));
	out[k++] = MOV_X(6, 2);
	out[k++] = AND_K(2, 0xffff);
	out[k++] = RSH_K(6, 16);
	out[k++] = LDX_W(3, 1, (int16_t)offsetof(struct bpf_cgroup_dev_ctx, major));
	out[k++] = LDX_W(4, 1, (int16_t)offsetof(struct bpf_cgroup_dev_ctx, minor));
	for (size_t i = 0; i < n; i++)
		k += build_rule(&rules[i], out + k);
	out[k++] = MOV_K(0, 1);
	out[k++] = EXIT();
	return (int)k;
}

#define LOG_SIZE 65536

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The verifier's first line that says what is wrong (its log ends with the complaint). */
static const char *log_reason(char *log)
{
	size_t n = strlen(log);
	while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
		log[--n] = '\0';
	char *last = strrchr(log, '\n');
	/* the log's last line is a statistics line ("processed N insns"): take the one before */
	if (last && !strncmp(last + 1, "processed ", 10)) {
		*last = '\0';
		char *prev = strrchr(log, '\n');
		return prev ? prev + 1 : log;
	}
	return last ? last + 1 : log;
}

int gp_cgdev_load(const gp_cgdev_rule_t *rules, size_t n, gp_error_t *err)
{
	size_t max = GP_CGDEV_INSNS(n);
	struct bpf_insn *prog = calloc(max, sizeof(*prog));
	if (!prog) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	int cnt = gp_cgdev_build(rules, n, prog, max);
	if (cnt < 0) {
		int e = errno;
		free(prog);
		errno = e;
		return gp_errprintf(err, "cannot build a device program of %zu rules: %s", n,
				    strerror(e));
	}
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = (uint32_t)cnt;
	/* the kernel reads the license only for GPL-only helpers: this program calls none */
	a.license = (uint64_t)(uintptr_t) "GPL";
	snprintf(a.prog_name, sizeof(a.prog_name), "gpool_devices");
	int fd = sys_bpf(BPF_PROG_LOAD, &a);
	int e = errno;
	char *log = NULL;
	/* refused: load again with the verifier's log to say why (not the first time: a log
	 * that does not fit fails the load by itself on newer kernels) */
	if (fd < 0 && e != EPERM && e != ENOSYS && (log = calloc(1, LOG_SIZE))) {
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = LOG_SIZE;
		a.log_level = 1;
		fd = sys_bpf(BPF_PROG_LOAD, &a);
	}
	free(prog);
	if (fd < 0) {
		if (log && *log)
			gp_errprintf(err, "the kernel refused the device program: %s: %s",
				     strerror(e), log_reason(log));
		else
			gp_errprintf(err, "cannot load a BPF device program: %s%s", strerror(e),
				     e == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN)" : "");
		free(log);
		errno = e;
		return -1;
	}
	free(log);
	return fd;
}

int gp_cgdev_attach(int prog_fd, const char *dir, gp_error_t *err)
{
	int cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0)
		return gp_errprintf(err, "cannot open cgroup '%s': %s", dir, strerror(errno));
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)cfd;
	a.attach_bpf_fd = (uint32_t)prog_fd;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	int rc = sys_bpf(BPF_PROG_ATTACH, &a);
	int e = errno;
	close(cfd);
	if (rc < 0) {
		errno = e;
		/* EPERM here: an ancestor holds a device program attached without ALLOW_MULTI,
		 * which forbids programs below it (or we lack CAP_NET_ADMIN) */
		return gp_errprintf(err, "cannot attach the device program to '%s': %s", dir,
				    strerror(e));
	}
	return 0;
}

int gp_cgdev_deny(const char *dir, const char *const *rules, size_t n, gp_error_t *err)
{
	if (!n)
		return 0;
	if (n > GP_CGDEV_MAX_RULES) {
		errno = E2BIG;
		return gp_errprintf(err, "%zu device rules (at most %d)", n, GP_CGDEV_MAX_RULES);
	}
	gp_cgdev_rule_t *r = calloc(n, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (gp_cgdev_rule_parse(rules[i], &r[i]) < 0) {
			free(r);
			return gp_errprintf(err, "invalid device rule '%s'", rules[i]);
		}
	}
	int fd = gp_cgdev_load(r, n, err);
	free(r);
	if (fd < 0)
		return -1;
	int rc = gp_cgdev_attach(fd, dir, err);
	int e = errno;
	close(fd); /* attached, the cgroup holds the program */
	errno = e;
	return rc;
}
