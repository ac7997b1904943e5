/* grade.c: gcheck's grading rules (see grade.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cards/grade.h"

const struct gp_grade_key gp_grade_keys[] = {
    {"fluct_warn_pct", "bandwidth fluctuation (percent) over which a card is 'warn'",
     offsetof(struct gp_grade_thresholds, fluct_warn_pct), 5.0},
    {"fluct_fail_pct", "bandwidth fluctuation (percent) over which a card is 'fail'",
     offsetof(struct gp_grade_thresholds, fluct_fail_pct), 10.0},
    {"spec_gbps", "copy bandwidth (GB/s) below which a card is 'warn'; 0: no spec",
     offsetof(struct gp_grade_thresholds, spec_gbps), 0.0},
};
const int gp_grade_nkeys = (int)(sizeof(gp_grade_keys) / sizeof(gp_grade_keys[0]));

static double *key_field(struct gp_grade_thresholds *th, const struct gp_grade_key *k)
{
	return (double *)((char *)th + k->offset);
}

void gp_grade_defaults(struct gp_grade_thresholds *th)
{
	for (int i = 0; i < gp_grade_nkeys; i++)
		*key_field(th, &gp_grade_keys[i]) = gp_grade_keys[i].def;
}

int gp_grade_set(struct gp_grade_thresholds *th, const char *name, const char *value,
		 gp_error_t *err)
{
	for (int i = 0; i < gp_grade_nkeys; i++) {
		if (strcmp(name, gp_grade_keys[i].name) != 0)
			continue;
		char *end = NULL;
		errno = 0;
		double v = value && *value ? strtod(value, &end) : NAN;
		if (errno || !end || *end || !isfinite(v) || v < 0) {
			errno = EINVAL;
			return gp_errprintf(err, "invalid value '%s' for '%s'", value ? value : "",
					    name);
		}
		*key_field(th, &gp_grade_keys[i]) = v;
		return 0;
	}
	errno = EINVAL;
	return gp_errprintf(err, "unknown grade key '%s'", name);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

int gp_grade_set_line(struct gp_grade_thresholds *th, const char *line, gp_error_t *err)
{
	char buf[256];
	if (strlen(line) >= sizeof(buf)) {
		errno = EINVAL;
		return gp_errprintf(err, "line too long");
	}
	strcpy(buf, line);
	char *s = trim(buf);
	if (!*s || *s == '#')
		return 0;
	char *eq = strchr(s, '=');
	if (!eq) {
		errno = EINVAL;
		return gp_errprintf(err, "expected 'key = value', got '%s'", s);
	}
	*eq = '\0';
	return gp_grade_set(th, trim(s), trim(eq + 1), err);
}

int gp_grade_check(const struct gp_grade_thresholds *th, gp_error_t *err)
{
	if (th->fluct_warn_pct > th->fluct_fail_pct) {
		errno = EINVAL;
		return gp_errprintf(err, "fluct_warn_pct (%g) is above fluct_fail_pct (%g)",
				    th->fluct_warn_pct, th->fluct_fail_pct);
	}
	return 0;
}

int gp_grade_bw_stats(const double *samples, int n, struct gp_card_measure *m)
{
	if (n < 1)
		return errno = EINVAL, -1;
	double sum = 0, lo = samples[0], hi = samples[0];
	for (int i = 0; i < n; i++) {
		sum += samples[i];
		lo = samples[i] < lo ? samples[i] : lo;
		hi = samples[i] > hi ? samples[i] : hi;
	}
	double mean = sum / n;
	if (!(mean > 0))
		return errno = EINVAL, -1;
	m->bw_mean_gbps = mean;
	m->bw_min_gbps = lo;
	m->bw_max_gbps = hi;
	m->bw_fluct_pct = (hi - lo) / 2 / mean * 100;
	m->bw_samples = n;
	return 0;
}

/* Append one cause to reason, "; " between causes. */
static void because(char *reason, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void because(char *reason, size_t len, const char *fmt, ...)
{
	if (!reason || !len)
		return;
	size_t n = strlen(reason);
	if (n && n + 2 < len) {
		strcpy(reason + n, "; ");
		n += 2;
	}
	if (n + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason + n, len - n, fmt, ap);
	va_end(ap);
}

enum gp_grade gp_grade_card(const struct gp_grade_thresholds *th, const struct gp_card_measure *m,
			    char *reason, size_t len)
{
	enum gp_grade g = GP_GRADE_GOOD;
	if (reason && len)
		reason[0] = '\0';
	if (m->mem_errors) {
		g = GP_GRADE_FAIL;
		because(reason, len, "%llu memory errors", (unsigned long long)m->mem_errors);
	}
	if (m->bw_fluct_pct > th->fluct_fail_pct) {
		g = GP_GRADE_FAIL;
		because(reason, len, "bandwidth fluctuates by ±%.1f %% (over %g %%)",
			m->bw_fluct_pct, th->fluct_fail_pct);
	} else if (m->bw_fluct_pct > th->fluct_warn_pct) {
		g = g > GP_GRADE_WARN ? g : GP_GRADE_WARN;
		because(reason, len, "bandwidth fluctuates by ±%.1f %% (over %g %%)",
			m->bw_fluct_pct, th->fluct_warn_pct);
	}
	if (th->spec_gbps > 0 && m->bw_mean_gbps < th->spec_gbps) {
		g = g > GP_GRADE_WARN ? g : GP_GRADE_WARN;
		because(reason, len, "bandwidth %.1f GB/s is below the spec %g GB/s",
			m->bw_mean_gbps, th->spec_gbps);
	}
	return g;
}

const char *gp_grade_name(enum gp_grade g)
{
	switch (g) {
	case GP_GRADE_GOOD:
		return "good";
	case GP_GRADE_WARN:
		return "warn";
	case GP_GRADE_FAIL:
		return "fail";
	}
	return "?";
}

int gp_grade_profile(const char *name, struct gp_card_measure *m, gp_error_t *err)
{
	/* twenty samples of a 400 GB/s card: min and max set the half range */
	static const struct {
		const char *name;
		double fluct_pct;
		uint64_t errors;
	} profiles[] = {
	    {"stable", 3.2, 0},
	    {"fluctuating", 11.7, 0},
	    {"erroring", 3.2, 3},
	};
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		if (strcmp(name, profiles[i].name) != 0)
			continue;
		memset(m, 0, sizeof(*m));
		m->bw_mean_gbps = 400.0;
		m->bw_fluct_pct = profiles[i].fluct_pct;
		m->bw_min_gbps = 400.0 * (1 - profiles[i].fluct_pct / 100);
		m->bw_max_gbps = 400.0 * (1 + profiles[i].fluct_pct / 100);
		m->bw_samples = 20;
		m->mem_errors = profiles[i].errors;
		m->mem_tested_bytes = 256ull << 20;
		m->f32_gflops = 1000.0;
		m->f16_gflops = 2000.0;
		m->temperature_c = -1;
		m->power_w = -1;
		return 0;
	}
	errno = EINVAL;
	return gp_errprintf(err, "invalid profile '%s' (stable, fluctuating, erroring)", name);
}
