/* grade.h: the grade gcheck gives a card from its measurements, as pure functions.
 *
 * A card is "fail" when the memory test found any error or its copy bandwidth fluctuates by
 * more than fluct_fail_pct; "warn" when the fluctuation is over fluct_warn_pct or the mean
 * bandwidth is below spec_gbps (0: no spec); else "good". The fluctuation is the half range
 * of the samples over their mean, (max - min) / 2 / mean, in percent: "±3.2 %" means every
 * sample lay within about 3.2 % of the mean.
 *
 * The thresholds are a table of keys (gp_grade_keys) that gcheck sets from its options or
 * from its own key = value file. Measurement profiles (stable, fluctuating, erroring) stand
 * in for a run, so tests of grading do not depend on how busy the machine is.
 */
#ifndef GP_CARDS_GRADE_H
#define GP_CARDS_GRADE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum gp_grade { GP_GRADE_GOOD = 0, GP_GRADE_WARN = 1, GP_GRADE_FAIL = 2 };

struct gp_grade_thresholds {
	double fluct_warn_pct; /* default 5 */
	double fluct_fail_pct; /* default 10 */
	double spec_gbps;      /* default 0: no spec */
};

/* What gcheck measured on one card. A value not measured is negative (temperature, power). */
struct gp_card_measure {
	double bw_mean_gbps; /* copy kernel, bytes read + written per second */
	double bw_fluct_pct; /* (max - min) / 2 / mean * 100 */
	double bw_min_gbps, bw_max_gbps;
	int bw_samples;
	uint64_t mem_errors; /* mismatching words over all four patterns */
	uint64_t mem_tested_bytes;
	double f32_gflops, f16_gflops;
	double temperature_c; /* < 0: not reported */
	double power_w;	      /* < 0: not reported */
};

/* One settable threshold. */
struct gp_grade_key {
	const char *name; /* "fluct_warn_pct" */
	const char *help;
	size_t offset; /* of a double in struct gp_grade_thresholds */
	double def;
};
extern const struct gp_grade_key gp_grade_keys[];
extern const int gp_grade_nkeys;

/* The defaults: 5 %, 10 %, no spec. */
void gp_grade_defaults(struct gp_grade_thresholds *th);
/* Set key NAME from VALUE (a number >= 0). 0 / -1 (errno EINVAL, err filled:
 * "unknown grade key 'x'", "invalid value 'x' for 'fluct_warn_pct'"). */
int gp_grade_set(struct gp_grade_thresholds *th, const char *name, const char *value,
		 gp_error_t *err);
/* Set from one "key = value" line; blank lines and lines starting with '#' are accepted and
 * ignored. 0 / -1 as gp_grade_set. */
int gp_grade_set_line(struct gp_grade_thresholds *th, const char *line, gp_error_t *err);
/* The thresholds are consistent (warn <= fail). 0 / -1 (EINVAL, err filled). */
int gp_grade_check(const struct gp_grade_thresholds *th, gp_error_t *err);

/* Mean and fluctuation ((max - min) / 2 / mean, percent) of n >= 1 samples into m. 0 / -1
 * (EINVAL: n < 1 or a mean <= 0). */
int gp_grade_bw_stats(const double *samples, int n, struct gp_card_measure *m);

/* The grade of m under th; reason (may be NULL) receives why for warn and fail ("" for
 * good), every cause joined by "; ". */
enum gp_grade gp_grade_card(const struct gp_grade_thresholds *th, const struct gp_card_measure *m,
			    char *reason, size_t len);
/* "good", "warn", "fail". */
const char *gp_grade_name(enum gp_grade g);

/* Fill m with the fixed profile NAME ("stable": ±3.2 %, no errors; "fluctuating": ±11.7 %,
 * no errors; "erroring": ±3.2 %, 3 memory errors). 0 / -1 (EINVAL, err filled). */
int gp_grade_profile(const char *name, struct gp_card_measure *m, gp_error_t *err);

#endif
