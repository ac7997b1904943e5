/* gp-rdv-rank: libgcomm's gpool rendezvous (comm/src/rdv_gpool.c) from inside and outside
 * a job, for tests/rdv/rdv-live.sh.
 *
 *   gp-rdv-rank                   in a job: put addr.<rank>, fence, get every rank's, print
 *                                 "rank R: addr.K = VALUE" for each; exit 0 when all came
 *   gp-rdv-rank hold SECONDS      in a job: put secret.<rank>, fence, print "ready", sleep
 *   gp-rdv-rank peek SPEC KEY     anywhere: get KEY of job SPEC ("JOB:ATTEMPT") and print it
 *   gp-rdv-rank poke SPEC KEY VAL anywhere: put KEY = VAL as rank 0
 *
 * Exit status: 0 done, 1 failed, 3 refused (EACCES: not the job's owner), 4 the attempt is
 * not running (ESTALE), 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpool/gcomm_rdv.h"

#define TIMEOUT_MS 30000

static int status_of(int e)
{
	return e == EACCES ? 3 : e == ESTALE ? 4 : 1;
}

static int env_int(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : -1;
}

static gc_rdv_t *join(const char *spec, int rank, int size, int timeout_ms)
{
	gc_error_t err = {{0}};
	gc_rdv_t *r = gc_rdv_gpool.open(spec, rank, size, NULL, timeout_ms, &err);
	if (!r)
		fprintf(stderr, "gp-rdv-rank: %s\n", err.text);
	return r;
}

/* Every rank's addr.<rank>, after a fence. */
static int allgather(void)
{
	int rank = env_int("GPOOL_RANK"), size = env_int("GPOOL_SIZE");
	gc_rdv_t *r = join(NULL, rank, size, TIMEOUT_MS);
	if (!r)
		return 1;
	char mine[128], key[64];
	snprintf(mine, sizeof(mine), "%s|rank%d|pid%d", gc_rdv_gpool.local_addr(r), rank,
		 (int)getpid());
	snprintf(key, sizeof(key), "addr.%d", rank);
	int rc = 0;
	if (gc_rdv_gpool.put(r, key, mine, strlen(mine)) < 0 || gc_rdv_gpool.fence(r) < 0) {
		fprintf(stderr, "gp-rdv-rank: rank %d: %s\n", rank, gc_rdv_gpool.error(r));
		rc = 1;
	}
	for (int k = 0; k < size && rc == 0; k++) {
		void *v = NULL;
		size_t len = 0;
		snprintf(key, sizeof(key), "addr.%d", k);
		if (gc_rdv_gpool.get(r, key, &v, &len) < 0) {
			fprintf(stderr, "gp-rdv-rank: rank %d: %s\n", rank, gc_rdv_gpool.error(r));
			rc = 1;
			break;
		}
		printf("rank %d: %s = %.*s\n", rank, key, (int)len, (char *)v);
		free(v);
	}
	/* a second fence: nobody leaves (and ends the job) before all have read */
	if (rc == 0 && gc_rdv_gpool.fence(r) < 0) {
		fprintf(stderr, "gp-rdv-rank: rank %d: %s\n", rank, gc_rdv_gpool.error(r));
		rc = 1;
	}
	fflush(stdout);
	gc_rdv_gpool.close(r);
	return rc;
}

static int hold(int seconds)
{
	int rank = env_int("GPOOL_RANK"), size = env_int("GPOOL_SIZE");
	gc_rdv_t *r = join(NULL, rank, size, TIMEOUT_MS);
	if (!r)
		return 1;
	char key[64], val[64];
	snprintf(key, sizeof(key), "secret.%d", rank);
	snprintf(val, sizeof(val), "s3cret-%s-%d", getenv("GPOOL_JOB_ID"), rank);
	if (gc_rdv_gpool.put(r, key, val, strlen(val)) < 0 || gc_rdv_gpool.fence(r) < 0) {
		fprintf(stderr, "gp-rdv-rank: rank %d: %s\n", rank, gc_rdv_gpool.error(r));
		gc_rdv_gpool.close(r);
		return 1;
	}
	printf("rank %d: ready\n", rank);
	fflush(stdout);
	sleep((unsigned)seconds);
	gc_rdv_gpool.close(r);
	return 0;
}

static int peek(const char *spec, const char *key)
{
	gc_rdv_t *r = join(spec, 0, 1, 3000);
	if (!r)
		return 1;
	void *v = NULL;
	size_t len = 0;
	int rc = 0;
	if (gc_rdv_gpool.get(r, key, &v, &len) < 0) {
		rc = status_of(errno);
		fprintf(stderr, "gp-rdv-rank: %s\n", gc_rdv_gpool.error(r));
	} else {
		printf("%.*s\n", (int)len, (char *)v);
	}
	free(v);
	gc_rdv_gpool.close(r);
	return rc;
}

static int poke(const char *spec, const char *key, const char *val)
{
	gc_rdv_t *r = join(spec, 0, 1, 3000);
	if (!r)
		return 1;
	int rc = 0;
	if (gc_rdv_gpool.put(r, key, val, strlen(val)) < 0) {
		rc = status_of(errno);
		fprintf(stderr, "gp-rdv-rank: %s\n", gc_rdv_gpool.error(r));
	}
	gc_rdv_gpool.close(r);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return allgather();
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "peek"))
		return peek(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "poke"))
		return poke(argv[2], argv[3], argv[4]);
	fprintf(stderr,
		"usage: gp-rdv-rank [hold SECONDS | peek JOB:ATTEMPT KEY | poke JOB:ATTEMPT "
		"KEY VALUE]\n");
	return 2;
}
