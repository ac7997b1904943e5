/* ctrmounts.c: a container task's mounts (ctrmounts.h). */
#include "worker/stepd/ctrmounts.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

json_t *gp_ctr_mount(const char *dst, const char *type, const char *src, const char *opts)
{
	json_t *m = json_pack("{s:s, s:s, s:s}", "destination", dst, "type", type, "source", src);
	json_t *o = json_array();
	if (!m || !o) {
		json_decref(m);
		json_decref(o);
		return NULL;
	}
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", opts);
	for (char *sp, *t = strtok_r(buf, ",", &sp); t; t = strtok_r(NULL, ",", &sp))
		json_array_append_new(o, json_string(t));
	json_object_set_new(m, "options", o);
	return m;
}

/* append m to a; false (a's own failure, m freed) when either is missing */
static bool add(json_t *a, json_t *m)
{
	return m && json_array_append_new(a, m) == 0;
}

json_t *gp_ctr_mounts(const struct gp_ctr_mounts_in *in)
{
	json_t *a = json_array();
	bool ok = a != NULL;
	/* a user namespace may not mount a proc of the host's pid namespace, nor a sysfs of its
	 * network namespace: both are the host's own, bound (rbind: their locked submounts come
	 * along), as a rootless podman --pid=host --net=host binds them */
	ok = ok && add(a, gp_ctr_mount("/proc", "bind", "/proc", "rbind,nosuid,noexec,nodev"));
	ok = ok && add(a, gp_ctr_mount("/dev", "tmpfs", "tmpfs",
				       "nosuid,strictatime,mode=755,size=65536k"));
	ok = ok && add(a, gp_ctr_mount("/dev/pts", "devpts", "devpts",
				       "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"));
	/* a slice of a shared card is a client of the card's MPS server, which runs on the host
	 * as the job's user (one user a card): the client reaches it through the pipe directory
	 * and shares memory with it in /dev/shm and the IPC namespace, so all three are the
	 * host's for such a task (as NVIDIA asks of containers: --ipc=host and the pipe
	 * directory); any other task has a /dev/shm and an IPC namespace of its own */
	if (in->mps_pipe)
		ok = ok && add(a, gp_ctr_mount("/dev/shm", "bind", "/dev/shm",
					       "rbind,nosuid,nodev,noexec"));
	else
		ok = ok && add(a, gp_ctr_mount("/dev/shm", "tmpfs", "shm",
					       "nosuid,noexec,nodev,mode=1777,size=65536k"));
	/* rro: read-only all the way down (ro alone is the top mount's, not its submounts') */
	ok = ok && add(a, gp_ctr_mount("/sys", "bind", "/sys", "rbind,rro,nosuid,noexec,nodev"));
	ok = ok && add(a, gp_ctr_mount("/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777"));
	/* from here on, binds of the host's paths: after the tmpfs mounts above, which would
	 * hide any under them (a scratch_dir under /tmp) */
	/* names resolve as on the host: MASTER_ADDR and the peers are host names */
	for (size_t i = 0; i < in->netc; i++)
		ok = ok && add(a, gp_ctr_mount(in->etc[i], "bind", in->etc[i], "rbind,ro,nosuid"));
	ok = ok && add(a, gp_ctr_mount(in->workdir, "bind", in->workdir, "rbind,rw,nosuid"));
	/* --mpi=pmix: the node's PMIx server's rendezvous and shared-memory files (the job's
	 * owner's, under the host's /tmp) at the same path over the container's /tmp; the client
	 * finds them through the PMIX_* variables the task was given */
	if (in->pmixdir && *in->pmixdir)
		ok = ok && add(a, gp_ctr_mount(in->pmixdir, "bind", in->pmixdir,
					       "rbind,rw,nosuid,nodev"));
	/* the card's MPS pipe directory, after the container's /tmp: bound before it, a
	 * scratch_dir under /tmp was hidden by it, the client found no server and ran without MPS,
	 * its budget not enforced (an H100, 2026-12-06: 3000 MiB allocated in a 2 GiB slice) */
	if (in->mps_pipe)
		ok = ok && add(a, gp_ctr_mount(in->mps_pipe, "bind", in->mps_pipe,
					       "rbind,rw,nosuid,nodev"));
	for (size_t i = 0; i < in->ndriver; i++)
		ok = ok && add(a, gp_ctr_mount(in->driver[i].ctr, "bind", in->driver[i].host,
					       "rbind,ro,nosuid,nodev"));
	if (!ok) {
		json_decref(a);
		return NULL;
	}
	return a;
}

/* is path p at or under directory d? */
static bool under(const char *p, const char *d)
{
	size_t n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		n--;
	return !strncmp(p, d, n) && (p[n] == '\0' || p[n] == '/' || (n == 1 && d[0] == '/'));
}

int gp_ctr_mounts_check(const json_t *mounts, char *why, size_t len)
{
	size_t n = json_array_size(mounts);
	for (size_t i = 0; i < n; i++) {
		const char *d =
		    json_string_value(json_object_get(json_array_get(mounts, i), "destination"));
		for (size_t k = i + 1; d && k < n; k++) {
			const json_t *m = json_array_get(mounts, k);
			const char *t = json_string_value(json_object_get(m, "type"));
			const char *dk = json_string_value(json_object_get(m, "destination"));
			if (t && dk && under(d, dk)) {
				snprintf(why, len, "mount %zu (%s) is hidden by the %s at %s", i, d,
					 t, dk);
				return -1;
			}
		}
	}
	return 0;
}
