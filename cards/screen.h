/* screen.h: what a screening job (gcheck --cluster, JobSpec.screen) measured, as its agent
 * reads it to report each card's grade to gschedd with the agent's own credential.
 *
 * gstepd tells each task of a screening job where to write: GPOOL_SCREEN_RESULT, a file in
 * the job's scratch directory named by gp_screen_path. gcheck writes its --json document
 * there. The task's account writes that file, so the agent distrusts it: it opens it without
 * following links, takes only a regular file of that account with one link and at most
 * GP_SCREEN_MAX bytes, and parses it strictly (jansson: no duplicate keys, no NUL), with every
 * number range-checked and every string bounded and made printable. Bad input is an error
 * with a reason, never a crash. gcheck --cluster reads the jobs' outputs with the same parser.
 */
#ifndef GPOOL_CARDS_SCREEN_H
#define GPOOL_CARDS_SCREEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define GP_SCREEN_MAX	    (64u << 10) /* bytes of a result file */
#define GP_SCREEN_MAX_CARDS 64

/* One card's result. A number not reported is negative. */
struct gp_screen_card {
	uint32_t card; /* the node's card index (gnodes -G numbering) */
	char grade[8]; /* "good", "warn" or "fail" */
	char reason[256];
	char backend[16];
	char device[96];
	double bw_mean_gbps; /* copy bandwidth, the throughput reported */
	double bw_fluct_pct;
	uint64_t mem_errors;
	uint64_t mem_tested_bytes;
	double f32_gflops, f16_gflops;
	double temperature_c, power_w;
};

struct gp_screen_result {
	char node[64]; /* as the task named it (the agent reports its own name) */
	size_t n;
	struct gp_screen_card cards[GP_SCREEN_MAX_CARDS];
};

/* "<workdir>/.gpool-screen.<attempt>.<rank>.json": per attempt, so an earlier attempt's file
 * left in a reused directory is never read for this one. 0 / -1 (ENAMETOOLONG). */
int gp_screen_path(const char *workdir, uint32_t attempt, uint32_t rank, char *buf, size_t len);

/* Parse len bytes of gcheck's JSON document into out. 0 / -1 with errno (EFBIG over
 * GP_SCREEN_MAX, EINVAL otherwise) and err saying what is wrong. */
int gp_screen_parse(const char *buf, size_t len, struct gp_screen_result *out, gp_error_t *err);

/* Read and parse the result file at path, which must be a regular file owned by uid `owner`
 * with one link (a symbolic link, a FIFO or a hard link to someone's file is refused).
 * 0 / -1 with errno (ENOENT: the task wrote none) and err filled. */
int gp_screen_read(const char *path, uid_t owner, struct gp_screen_result *out, gp_error_t *err);

/* The result for card, or NULL. */
const struct gp_screen_card *gp_screen_find(const struct gp_screen_result *r, uint32_t card);

#endif
