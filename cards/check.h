/* check.h: gcheck's measuring core: which cards to check, measuring each with the kernels
 * (copy bandwidth sampled over a duration, the four memory test patterns, f32/f16 FMA,
 * temperature and power under load), grading (grade.h) and the results as a table or JSON.
 *
 * gcheck (cli/gcheck.c) adds reporting to gschedd and the cluster mode on top. This core
 * needs only libc, the kernels (kernels/) and the card sensor readers
 * (cards/cards_backends.h): no ZeroMQ, protobuf-c, MUNGE or jansson, so tools/gcheck-local
 * builds it alone on a GPU machine that has none of gpool's Debian libraries.
 */
#ifndef GP_CARDS_CHECK_H
#define GP_CARDS_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "common/jsonw.h"
#include "cards/grade.h"
#include "common/opt.h"

#define GP_CHECK_MAX_CARDS 64

/* What to measure and how to grade it. */
struct gp_check_opts {
	const char *backend; /* "auto", "cpu", "cuda", "hip" */
	long card;	     /* the node's card index, -1: the job's cards, else all */
	double duration;     /* seconds of bandwidth sampling */
	double mem_fraction; /* of free VRAM for the memory test */
	uint64_t cpu_bytes;  /* memory test size on the cpu backend */
	bool json;
	bool inject_fault;   /* test only: flip a bit during the memory test */
	const char *profile; /* a fixed measurement profile instead of measuring (tests) */
	struct gp_grade_thresholds th;
};

/* The options that set a struct gp_check_opts, as a gp_opt table. Their setters take as
 * context a struct gp_check_opts, or a struct whose first member is one (a command's own
 * context adds its options after it). */
extern const struct gp_opt gp_check_optv[];
extern const int gp_check_noptv;

/* backend auto, every card, 10 s, 0.8 of free VRAM, 256 MiB on the cpu, default grades. */
void gp_check_defaults(struct gp_check_opts *o);
/* The checks that need every option seen. 0 / -1 (errno EINVAL, err filled). */
int gp_check_finish(const struct gp_check_opts *o, gp_error_t *err);

/* One card to check: its index in the node's list (gschedd's numbering) and the device the
 * backend opens for it (they differ inside a job, which sees only its own cards). */
struct gp_check_target {
	int card;
	int device;
};

struct gp_check_result {
	struct gp_check_target t;
	char backend[8]; /* "cpu", "cuda", "hip" or "profile"; "" when not measured */
	char device_name[256];
	struct gp_card_measure m;
	enum gp_grade grade;
	char reason[512];
	const char *reported; /* NULL: not asked; "yes"; or "no" with report_err */
	char report_err[512];
};

/* The cards to check, into v (GP_CHECK_MAX_CARDS of room): --card, else the job's cards
 * (GPOOL_GPUS), else every device the backend opens (the cpu backend and profiles: card 0).
 * The count / -1 with err filled. */
int gp_check_targets(const struct gp_check_opts *o, struct gp_check_target *v, gp_error_t *err);

/* Measure card t (or take the profile) and grade it into r (zeroed first). 0 / -1 with err
 * filled when it could not be measured (r->backend then stays ""). */
int gp_check_card(const struct gp_check_opts *o, const struct gp_check_target *t,
		  struct gp_check_result *r, gp_error_t *err);

/* The report's parts that gcheck and gcheck --cluster (cli/gcheck_cluster.c) print alike, so
 * both reports read the same: a measured figure as a table cell ("-" when not measured, that is
 * negative; else fmt of it), ... */
void gp_check_cell(char *buf, size_t len, double v, const char *fmt);
/* ... the JSON document's run keys: "duration_s", "profile", "thresholds" {...} ... */
void gp_check_json_run(gp_jw_t *w, const struct gp_check_opts *o);
/* ... and each card's figures: "f32_gflops", "f16_gflops", "temperature_c", "power_w" (null
 * when not measured). */
void gp_check_json_figures(gp_jw_t *w, double f32_gflops, double f16_gflops, double temperature_c,
			   double power_w);

/* The results as gcheck's table. 0 / -1 (out of memory, write error). */
int gp_check_print_table(const struct gp_check_result *rs, int n, FILE *f);
/* The results as gcheck's JSON document ({"node", "duration_s", "profile", "thresholds",
 * "cards": [...]}). 0 / -1 (write error). */
int gp_check_print_json(const struct gp_check_opts *o, const char *node,
			const struct gp_check_result *rs, int n, FILE *f);
/* The same document into path, whole or not at all: written beside it and renamed over it,
 * mode 0600. 0 / -1 with err filled. */
int gp_check_write_json(const struct gp_check_opts *o, const char *node,
			const struct gp_check_result *rs, int n, const char *path, gp_error_t *err);

#endif
