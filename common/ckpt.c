/* ckpt.c: checkpoints through the chunk store. */
#include "common/ckpt.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/xfer.h"

#define ENTRY "data"

int gp_ckpt_put_job(gp_client_t *c, uint64_t job_id, const char *name, const char *path,
		    gp_error_t *err)
{
	struct gp_manifest m = {0};
	struct gp_xfer_stats st = {0};
	int rc = -1;
	if (gp_manifest_add(&m, path, ENTRY, err) < 0)
		goto out;
	if (m.n != 1 || m.e[0]->dir) {
		errno = EINVAL;
		gp_errprintf(err, "checkpoint '%s' is not a regular file", path);
		goto out;
	}
	if (gp_xfer_upload_manifest(c, &m, &st, err) < 0 ||
	    gp_xfer_set_put(c, job_id, "ckpt", name, m.e, m.n, err) < 0)
		goto out;
	rc = 0;
out:
	gp_manifest_release(&m);
	return rc;
}

int gp_ckpt_get_job(gp_client_t *c, uint64_t job_id, const char *name, const char *path,
		    gp_error_t *err)
{
	Gpool__FileSetGetReply *r = gp_xfer_set_get(c, job_id, "ckpt", name, err);
	if (!r)
		return -1;
	if (r->n_sets != 1 || r->sets[0]->n_entries != 1 || r->sets[0]->entries[0]->dir) {
		errno = ENOENT;
		return gp_errprintf(err, "job %llu has no checkpoint '%s'",
				    (unsigned long long)job_id, name);
	}
	/* keep the entry: the reply goes away with the client's next call */
	Gpool__StageEntry *e = r->sets[0]->entries[0];
	size_t len = gpool__stage_entry__get_packed_size(e);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return gp_errprintf(err, "out of memory");
	gpool__stage_entry__pack(e, buf);
	Gpool__StageEntry *mine = gpool__stage_entry__unpack(NULL, len, buf);
	free(buf);
	char *d = strdup(path), *b = strdup(path), tmp[256];
	int rc = -1;
	if (!mine || !d || !b) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".%.200s.%d.part", basename(b), (int)getpid());
	free(mine->path);
	mine->path = strdup(tmp);
	if (!mine->path) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	const char *dir = dirname(d);
	struct gp_xfer_stats st = {0};
	if (gp_xfer_download(c, job_id, "ckpt", name, &mine, 1, dir, &st, err) < 0)
		goto out;
	char full[4200];
	snprintf(full, sizeof(full), "%s/%s", dir, tmp);
	if (rename(full, path) < 0) {
		gp_errprintf(err, "cannot write '%s': %s", path, strerror(errno));
		unlink(full);
		goto out;
	}
	rc = 0;
out:
	if (mine)
		gpool__stage_entry__free_unpacked(mine, NULL);
	free(d);
	free(b);
	return rc;
}

/* The job of this task and a connection as a command makes one. */
static gp_client_t *task_client(uint64_t *job, gp_error_t *err)
{
	const char *j = getenv("GPOOL_JOB_ID");
	char *end;
	*job = j ? strtoull(j, &end, 10) : 0;
	if (!j || !*j || *end || !*job) {
		errno = EINVAL;
		gp_errprintf(err, "no job: GPOOL_JOB_ID is not set (run it inside a job)");
		return NULL;
	}
	gp_config_t *cfg = gp_config_create(GP_CLI);
	if (!cfg) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	gp_client_t *c = NULL;
	if (gp_config_load_file(cfg, NULL, err) == 0)
		c = gp_client_create(cfg, err);
	gp_config_destroy(&cfg);
	return c;
}

int gp_ckpt_put(const char *name, const char *path, gp_error_t *err)
{
	uint64_t job;
	gp_client_t *c = task_client(&job, err);
	if (!c)
		return -1;
	int rc = gp_ckpt_put_job(c, job, name, path, err);
	gp_client_destroy(&c);
	return rc;
}

int gp_ckpt_get(const char *name, const char *path, gp_error_t *err)
{
	uint64_t job;
	gp_client_t *c = task_client(&job, err);
	if (!c)
		return -1;
	int e = 0, rc = gp_ckpt_get_job(c, job, name, path, err);
	if (rc < 0)
		e = errno;
	gp_client_destroy(&c);
	if (rc < 0)
		errno = e;
	return rc;
}
