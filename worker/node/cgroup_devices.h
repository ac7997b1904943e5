/* cgroup_devices.h: deny device files to a cgroup v2 group with a BPF device program.
 *
 * cgroup v2 has no devices.deny file: on every open and mknod of a device file the kernel
 * runs the BPF_PROG_TYPE_CGROUP_DEVICE programs attached to the caller's cgroup and its
 * ancestors, and any of them returning 0 denies it (EPERM). gpool builds such a program from
 * the rules that v1 writes to devices.deny ("c 195:1 rwm"): it allows everything except the
 * listed devices. It is written as raw eBPF instructions (no libbpf, no BPF compiler),
 * loaded with bpf(BPF_PROG_LOAD) and attached with bpf(BPF_PROG_ATTACH, BPF_CGROUP_DEVICE,
 * BPF_F_ALLOW_MULTI): with ALLOW_MULTI the programs that systemd or a container runtime put
 * on the ancestors stay in force, and a device is opened only when all of them allow it.
 *
 * Loading and attaching need CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN); the attached
 * program lives as long as the cgroup, so the caller keeps no descriptor.
 */
#ifndef GPOOL_WORKER_CGROUP_DEVICES_H
#define GPOOL_WORKER_CGROUP_DEVICES_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Access bits, as the kernel passes them (BPF_DEVCG_ACC_*) */
enum { GP_CGDEV_MKNOD = 1, GP_CGDEV_READ = 2, GP_CGDEV_WRITE = 4, GP_CGDEV_ALL = 7 };

/* One rule: type 'c' (char), 'b' (block) or 'a' (every device); major/minor -1: any. */
typedef struct gp_cgdev_rule {
	char type;
	int32_t major, minor;
	uint8_t access; /* GP_CGDEV_* bits */
} gp_cgdev_rule_t;

/* The most rules a program holds (stepd passes at most 64). */
#define GP_CGDEV_MAX_RULES 256
/* Instructions a program of n rules needs at most. */
#define GP_CGDEV_INSNS(n) (6 + 8 * (n) + 2)

/* Parse a devices.deny rule: "c 195:1 rwm", "b 8:* r", "a". 0 / -1 with errno = EINVAL. */
int gp_cgdev_rule_parse(const char *s, gp_cgdev_rule_t *r);

/* Write the program denying rules[0..n) into out (room for max instructions). Returns the
 * instruction count, or -1 with errno = E2BIG (too many rules for max) or EINVAL (a bad
 * rule). */
int gp_cgdev_build(const gp_cgdev_rule_t *rules, size_t n, struct bpf_insn *out, size_t max);

/* Build and load the program: its descriptor, or -1 with errno and err filled (with the
 * verifier's first complaint when it refused the program). */
int gp_cgdev_load(const gp_cgdev_rule_t *rules, size_t n, gp_error_t *err);

/* Attach a loaded program to the cgroup v2 directory dir (BPF_F_ALLOW_MULTI).
 * 0 / -1 with errno and err filled. */
int gp_cgdev_attach(int prog_fd, const char *dir, gp_error_t *err);

/* Parse the devices.deny rules, load their program and attach it to dir. No rules: nothing
 * to do. 0 / -1 with errno and err filled; on failure nothing is attached. */
int gp_cgdev_deny(const char *dir, const char *const *rules, size_t n, gp_error_t *err);

#endif
