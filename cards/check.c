/* check.c: gcheck's measuring core (see check.h). */
#include "cards/check.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpool/kernels.h>

#include "cards/cards_backends.h"
#include "common/jsonw.h"
#include "common/parse.h"
#include "common/table.h"

#define MEMTEST_SEED 0x67636865636bull /* fixed: a failing word reproduces */

#define O(c) ((struct gp_check_opts *)(c))

/* ---- options ---- */

static int parse_double(const char *a, double lo, double hi, const char *what, double *out,
			gp_error_t *err)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(a, &end);
	if (errno || end == a || *end || !(v >= lo && v <= hi)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid %s '%s'", what, a);
	}
	*out = v;
	return 0;
}

static int set_backend(void *c, const char *a, gp_error_t *err)
{
	static const char *const names[] = {"auto", "cpu", "cuda", "hip"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return O(c)->backend = names[i], 0;
	errno = EINVAL;
	return gp_errprintf(err, "invalid backend '%s' (auto, cpu, cuda, hip)", a);
}

static int set_card(void *c, const char *a, gp_error_t *err)
{
	if (gp_parse_long(a, 0, GP_CHECK_MAX_CARDS - 1, &O(c)->card) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid card '%s'", a);
	}
	return 0;
}

static int set_duration(void *c, const char *a, gp_error_t *err)
{
	return parse_double(a, 0.1, 86400, "duration", &O(c)->duration, err);
}

static int set_mem_fraction(void *c, const char *a, gp_error_t *err)
{
	return parse_double(a, 0.01, 0.95, "memory fraction", &O(c)->mem_fraction, err);
}

static int set_size(void *c, const char *a, gp_error_t *err)
{
	uint64_t b;
	if (gp_parse_size(a, 1ull << 20, &b) < 0 || b < (1u << 20)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid size '%s' (at least 1M)", a);
	}
	O(c)->cpu_bytes = b;
	return 0;
}

static int set_spec(void *c, const char *a, gp_error_t *err)
{
	return gp_grade_set(&O(c)->th, "spec_gbps", a, err);
}

static int set_fluct_warn(void *c, const char *a, gp_error_t *err)
{
	return gp_grade_set(&O(c)->th, "fluct_warn_pct", a, err);
}

static int set_fluct_fail(void *c, const char *a, gp_error_t *err)
{
	return gp_grade_set(&O(c)->th, "fluct_fail_pct", a, err);
}

static int set_grade_key(void *c, const char *a, gp_error_t *err)
{
	return gp_grade_set_line(&O(c)->th, a, err);
}

static int set_grade_file(void *c, const char *a, gp_error_t *err)
{
	FILE *f = fopen(a, "r");
	if (!f)
		return gp_errprintf(err, "cannot read '%s': %s", a, strerror(errno));
	char line[256];
	int n = 0, rc = 0;
	gp_error_t e;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (gp_grade_set_line(&O(c)->th, line, &e) < 0) {
			rc = gp_errprintf(err, "%s:%d: %s", a, n, e.text);
			errno = EINVAL;
			break;
		}
	}
	fclose(f);
	return rc;
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	return O(c)->json = true, 0;
}

static int set_profile(void *c, const char *a, gp_error_t *err)
{
	struct gp_card_measure m;
	if (gp_grade_profile(a, &m, err) < 0)
		return -1;
	return O(c)->profile = a, 0;
}

static int set_inject(void *c, const char *a, gp_error_t *err)
{
	return O(c)->inject_fault = true, 0;
}

const struct gp_opt gp_check_optv[] = {
    {"backend", 'b', required_argument, "NAME",
     "auto (cuda, then hip, then cpu), cpu, cuda or hip (default auto)", set_backend, 0},
    {"card", 'c', required_argument, "N",
     "this card of the node (gnodes -G numbering); default: the job's cards, else all", set_card,
     0},
    {"duration", 'd', required_argument, "SECONDS",
     "sample the copy bandwidth for this long (default 10)", set_duration, 0},
    {"mem-fraction", 0, required_argument, "F",
     "memory test over this fraction of free VRAM (default 0.8)", set_mem_fraction, 0},
    {"size", 0, required_argument, "SIZE", "memory test size on the cpu backend (default 256M)",
     set_size, 0},
    {"spec-gbps", 0, required_argument, "GBPS",
     "warn below this copy bandwidth (grade key spec_gbps)", set_spec, 0},
    {"fluct-warn", 0, required_argument, "PCT",
     "warn over this bandwidth fluctuation (fluct_warn_pct, default 5)", set_fluct_warn, 0},
    {"fluct-fail", 0, required_argument, "PCT",
     "fail over this bandwidth fluctuation (fluct_fail_pct, default 10)", set_fluct_fail, 0},
    {"grade", 0, required_argument, "KEY=VALUE", "set one grade key", set_grade_key, 0},
    {"grade-file", 0, required_argument, "PATH", "read grade keys (KEY = VALUE lines)",
     set_grade_file, 0},
    {"json", 0, no_argument, NULL, "the results as JSON", set_json, 0},
    {"profile", 0, required_argument, "NAME",
     "use a fixed measurement profile instead of measuring: stable, fluctuating, erroring "
     "(tests)",
     set_profile, 0},
    {"inject-fault", 0, no_argument, NULL,
     "flip one bit during the memory test (test only): the card must fail", set_inject, 0},
};
const int gp_check_noptv = GP_NOPTS(gp_check_optv);

void gp_check_defaults(struct gp_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = "auto";
	o->card = -1;
	o->duration = 10;
	o->mem_fraction = 0.8;
	o->cpu_bytes = 256ull << 20;
	gp_grade_defaults(&o->th);
}

int gp_check_finish(const struct gp_check_opts *o, gp_error_t *err)
{
	if (gp_grade_check(&o->th, err) < 0)
		return -1;
	if (o->profile && o->inject_fault) {
		errno = EINVAL;
		return gp_errprintf(err, "--inject-fault measures: it does not go with --profile");
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the cards' sensors (NVML, ROCm SMI) ---- */

static void no_debug(const char *msg, void *arg)
{
}

/* The sensor entry of this card, found by UUID where the job's CUDA_VISIBLE_DEVICES names
 * it, else by the card's index among the cards of the backend's vendor. 0 / -1 (none). */
static int sensor_read(const char *backend, const struct gp_check_target *t, gp_card_info_t *out)
{
	gp_card_list_t l = {.debug = no_debug};
	int rc = -1;
	if (!strcmp(backend, "cuda")) {
		if (gp_cards_nvml_discover(NULL, &l) < 0)
			return -1;
	} else if (!strcmp(backend, "hip")) {
		if (gp_cards_amd_discover(NULL, NULL, &l) < 0)
			return -1;
	} else {
		return -1;
	}
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	char uuid[96] = "";
	if (!strcmp(backend, "cuda") && vis && !strncmp(vis, "GPU-", 4)) {
		const char *p = vis;
		for (int k = 0; k < t->device && p; k++)
			p = (p = strchr(p, ',')) ? p + 1 : NULL;
		if (p)
			snprintf(uuid, sizeof(uuid), "%.*s", (int)strcspn(p, ","), p);
	}
	for (size_t i = 0; i < l.n; i++) {
		if (*uuid ? !strcmp(l.v[i].uuid, uuid) : (int)i == t->device) {
			*out = l.v[i];
			rc = 0;
			break;
		}
	}
	gp_card_list_release(&l);
	return rc;
}

/* ---- measuring ---- */

/* Copy bandwidth (bytes read + written) sampled for `duration` seconds. */
static int measure_bandwidth(gk_backend_t *b, size_t bytes, double duration,
			     struct gp_card_measure *m, gp_error_t *err)
{
	void *src = NULL, *dst = NULL;
	double *samples = NULL;
	int n = 0, cap = 0, rc = -1;
	if (gk_dev_alloc(b, bytes, &src) < 0 || gk_dev_alloc(b, bytes, &dst) < 0) {
		gp_errprintf(err, "cannot allocate 2 x %zu MiB for the bandwidth test: %s",
			     bytes >> 20, gk_backend_error(b));
		goto out;
	}
	if (gk_memset(b, src, 0x5a, bytes, NULL) < 0 || gk_bw_copy(b, dst, src, bytes, NULL) < 0 ||
	    gk_stream_sync(b, NULL) < 0) {
		gp_errprintf(err, "bandwidth warm-up: %s", gk_backend_error(b));
		goto out;
	}
	/* one sample lasts about a tenth of a second (shorter for short runs) */
	double t0 = now_s();
	if (gk_bw_copy(b, dst, src, bytes, NULL) < 0 || gk_stream_sync(b, NULL) < 0)
		goto kernel_failed;
	double one = now_s() - t0, target = fmin(0.1, duration / 10);
	int reps = one > 0 ? (int)fmax(1, fmin(1e6, target / one)) : 1;
	double end = now_s() + duration;
	do {
		double s0 = now_s();
		for (int r = 0; r < reps; r++)
			if (gk_bw_copy(b, dst, src, bytes, NULL) < 0)
				goto kernel_failed;
		if (gk_stream_sync(b, NULL) < 0)
			goto kernel_failed;
		double dt = now_s() - s0;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			double *nv = realloc(samples, (size_t)cap * sizeof(*nv));
			if (!nv) {
				gp_errprintf(err, "out of memory");
				goto out;
			}
			samples = nv;
		}
		samples[n++] = 2.0 * (double)bytes * reps / (dt > 0 ? dt : 1e-9) / 1e9;
	} while (now_s() < end || n < 3);
	if (gp_grade_bw_stats(samples, n, m) < 0) {
		gp_errprintf(err, "no bandwidth measured");
		goto out;
	}
	rc = 0;
	goto out;
kernel_failed:
	gp_errprintf(err, "copy kernel: %s", gk_backend_error(b));
out:
	free(samples);
	gk_dev_free(b, src);
	gk_dev_free(b, dst);
	return rc;
}

/* The four patterns over `bytes` (less where the allocation fails: down to a tenth). */
static int measure_memtest(gk_backend_t *b, size_t bytes, bool inject, struct gp_card_measure *m,
			   gp_error_t *err)
{
	void *buf = NULL;
	size_t floor = bytes / 10;
	bytes &= ~(size_t)4095;
	while (gk_dev_alloc(b, bytes, &buf) < 0) {
		bytes = (bytes - bytes / 10) & ~(size_t)4095;
		if (bytes < floor || bytes < 4096)
			return gp_errprintf(err, "cannot allocate memory for the memory test: %s",
					    gk_backend_error(b));
	}
	static const gk_memtest_t pats[] = {GK_MT_WALKING_ONES, GK_MT_MOVING_INV, GK_MT_ADDRESS,
					    GK_MT_RANDOM};
	uint64_t errors = 0;
	int rc = 0;
	if (inject && gk_memtest_inject_fault(b, bytes / 4 / 2, 1u << 7) < 0) {
		rc = gp_errprintf(err, "fault injection: %s", gk_backend_error(b));
		goto out;
	}
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		if (gk_memtest(b, pats[i], buf, bytes, MEMTEST_SEED, &errors) < 0) {
			rc = gp_errprintf(err, "memory test: %s", gk_backend_error(b));
			goto out;
		}
	}
	m->mem_errors = errors;
	m->mem_tested_bytes = bytes;
out:
	gk_dev_free(b, buf);
	return rc;
}

/* FMA rate of type t: iterations doubled until one call lasts `target` seconds. */
static double measure_fma(gk_backend_t *b, gk_dtype_t t, void *scratch, double target)
{
	for (int iters = 1024; iters > 0 && iters <= (1 << 30); iters *= 2) {
		double flops = 0, t0 = now_s();
		if (gk_fma(b, t, scratch, iters, &flops, NULL) < 0 || gk_stream_sync(b, NULL) < 0)
			return -1;
		double dt = now_s() - t0;
		if (dt >= target || iters == (1 << 30))
			return flops / dt / 1e9;
	}
	return -1;
}

static int measure_card(const struct gp_check_opts *g, const struct gp_check_target *t,
			struct gp_check_result *r, gp_error_t *err)
{
	gk_error_t gerr = {""};
	const char *name = g->backend;
	gk_backend_t *b = gk_backend_open_device(name, strcmp(name, "cpu") ? t->device : 0, &gerr);
	if (!b)
		return gp_errprintf(err, "backend '%s' on device %d: %s", name, t->device,
				    gerr.text);
	gk_device_info_t info;
	memset(&info, 0, sizeof(info));
	gk_device_info(b, &info);
	snprintf(r->backend, sizeof(r->backend), "%s", gk_backend_name(b));
	snprintf(r->device_name, sizeof(r->device_name), "%s", info.name);
	bool cpu = !strcmp(r->backend, "cpu");
	int rc = -1;
	struct gp_card_measure *m = &r->m;
	m->temperature_c = m->power_w = -1;

	gp_card_info_t before, after;
	bool sensors = sensor_read(r->backend, t, &before) == 0;
	double t_load = now_s();
	size_t bw_bytes = cpu ? 32ull << 20 : (size_t)fmin(512.0 * (1 << 20), info.total_mem / 8.0);
	bw_bytes &= ~(size_t)4095;
	if (measure_bandwidth(b, bw_bytes, g->duration, m, err) < 0)
		goto out;
	if (sensors && sensor_read(r->backend, t, &after) == 0) {
		m->temperature_c = after.temperature_c ? (double)after.temperature_c : -1.0;
		double dt = now_s() - t_load;
		if (before.has_energy && after.has_energy && after.energy_mj > before.energy_mj)
			m->power_w = (double)(after.energy_mj - before.energy_mj) / 1e3 / dt;
	}

	size_t test_bytes = g->cpu_bytes;
	if (!cpu) {
		uint64_t free_b = sensors && before.vram_free ? before.vram_free : info.total_mem;
		test_bytes = (size_t)(g->mem_fraction * (double)free_b);
	}
	if (measure_memtest(b, test_bytes, g->inject_fault, m, err) < 0)
		goto out;

	void *scratch = NULL;
	if (gk_dev_alloc(b, gk_fma_scratch_bytes(b), &scratch) < 0) {
		gp_errprintf(err, "fma scratch: %s", gk_backend_error(b));
		goto out;
	}
	double target = fmin(0.5, fmax(0.05, g->duration / 20));
	m->f32_gflops = measure_fma(b, GK_F32, scratch, target);
	m->f16_gflops = measure_fma(b, GK_F16, scratch, target);
	gk_dev_free(b, scratch);
	rc = 0;
out:
	gk_backend_close(&b);
	return rc;
}

/* ---- which cards ---- */

/* From --card, else the job's cards (GPOOL_GPUS: "index:vendor:name:vram,..."), else every
 * device the backend opens (the cpu backend: card 0). */
int gp_check_targets(const struct gp_check_opts *g, struct gp_check_target *v, gp_error_t *err)
{
	const char *gpus = getenv("GPOOL_GPUS");
	int n = 0;
	if (gpus && *gpus) {
		const char *p = gpus;
		for (int pos = 0; p && n < GP_CHECK_MAX_CARDS; pos++) {
			int idx = atoi(p);
			if (g->card < 0 || g->card == idx)
				v[n++] = (struct gp_check_target){.card = idx, .device = pos};
			p = strchr(p, ',');
			p = p ? p + 1 : NULL;
		}
		if (n)
			return n;
	}
	if (g->card >= 0) {
		v[0] = (struct gp_check_target){.card = (int)g->card, .device = (int)g->card};
		return 1;
	}
	if (g->profile || !strcmp(g->backend, "cpu")) {
		v[0] = (struct gp_check_target){0, 0};
		return 1;
	}
	gk_error_t gerr = {""};
	gk_backend_t *b = gk_backend_open_device(g->backend, 0, &gerr);
	if (!b)
		return gp_errprintf(err, "backend '%s': %s", g->backend, gerr.text);
	char name[8];
	snprintf(name, sizeof(name), "%s", gk_backend_name(b));
	gk_backend_close(&b);
	v[n++] = (struct gp_check_target){0, 0};
	if (!strcmp(name, "cpu"))
		return n;
	while (n < GP_CHECK_MAX_CARDS && (b = gk_backend_open_device(name, n, &gerr))) {
		gk_backend_close(&b);
		v[n] = (struct gp_check_target){n, n};
		n++;
	}
	return n;
}

int gp_check_card(const struct gp_check_opts *o, const struct gp_check_target *t,
		  struct gp_check_result *r, gp_error_t *err)
{
	memset(r, 0, sizeof(*r));
	r->t = *t;
	if (o->profile) {
		if (gp_grade_profile(o->profile, &r->m, err) < 0)
			return -1;
		snprintf(r->backend, sizeof(r->backend), "profile");
		snprintf(r->device_name, sizeof(r->device_name), "%s", o->profile);
	} else if (measure_card(o, t, r, err) < 0) {
		r->backend[0] = '\0';
		return -1;
	}
	r->grade = gp_grade_card(&o->th, &r->m, r->reason, sizeof(r->reason));
	return 0;
}

/* ---- output ---- */

void gp_check_cell(char *buf, size_t len, double v, const char *fmt)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, fmt, v);
}

int gp_check_print_table(const struct gp_check_result *rs, int n, FILE *f)
{
	static const char *const hdr[] = {"CARD",	  "BACKEND", "DEVICE", "BW(GB/s)",
					  "FLUCT",	  "MEMTEST", "ERRORS", "F32(GFLOP/s)",
					  "F16(GFLOP/s)", "TEMP",    "POWER",  "GRADE",
					  "REPORTED",	  "REASON",  NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return -1;
	for (int c = 3; c <= 10; c++)
		gp_table_align_right(t, c);
	for (int i = 0; i < n; i++) {
		const struct gp_check_result *r = &rs[i];
		char card[16], bw[32], fl[32], mt[32], er[32], f32[32], f16[32], tc[32], pw[32];
		snprintf(card, sizeof(card), "%d", r->t.card);
		snprintf(bw, sizeof(bw), "%.1f", r->m.bw_mean_gbps);
		snprintf(fl, sizeof(fl), "±%.1f%%", r->m.bw_fluct_pct);
		gp_format_size(r->m.mem_tested_bytes, mt, sizeof(mt));
		snprintf(er, sizeof(er), "%" PRIu64, r->m.mem_errors);
		gp_check_cell(f32, sizeof(f32), r->m.f32_gflops, "%.1f");
		gp_check_cell(f16, sizeof(f16), r->m.f16_gflops, "%.1f");
		gp_check_cell(tc, sizeof(tc), r->m.temperature_c, "%.0fC");
		gp_check_cell(pw, sizeof(pw), r->m.power_w, "%.0fW");
		const char *cells[] = {card,
				       r->backend,
				       *r->device_name ? r->device_name : "-",
				       bw,
				       fl,
				       mt,
				       er,
				       f32,
				       f16,
				       tc,
				       pw,
				       gp_grade_name(r->grade),
				       r->reported ? r->reported : "-",
				       *r->reason ? r->reason : "-",
				       NULL};
		if (gp_table_add(t, cells) < 0) {
			gp_table_destroy(&t);
			return -1;
		}
	}
	int rc = gp_table_print(t, f);
	gp_table_destroy(&t);
	return rc;
}

void gp_check_json_run(gp_jw_t *w, const struct gp_check_opts *o)
{
	gp_jw_key(w, "duration_s");
	gp_jw_real(w, o->duration);
	gp_jw_key(w, "profile");
	gp_jw_string(w, o->profile);
	gp_jw_key(w, "thresholds");
	gp_jw_object(w);
	gp_jw_key(w, "fluct_warn_pct");
	gp_jw_real(w, o->th.fluct_warn_pct);
	gp_jw_key(w, "fluct_fail_pct");
	gp_jw_real(w, o->th.fluct_fail_pct);
	gp_jw_key(w, "spec_gbps");
	gp_jw_real(w, o->th.spec_gbps);
	gp_jw_end_object(w);
}

void gp_check_json_figures(gp_jw_t *w, double f32_gflops, double f16_gflops, double temperature_c,
			   double power_w)
{
	gp_jw_key_real_or_null(w, "f32_gflops", f32_gflops);
	gp_jw_key_real_or_null(w, "f16_gflops", f16_gflops);
	gp_jw_key_real_or_null(w, "temperature_c", temperature_c);
	gp_jw_key_real_or_null(w, "power_w", power_w);
}

static void json_card(gp_jw_t *w, const struct gp_check_result *r)
{
	static const char *const patterns[] = {"walking_ones", "moving_inversions", "address",
					       "random"};
	const struct gp_card_measure *m = &r->m;
	gp_jw_object(w);
	gp_jw_key(w, "card");
	gp_jw_int(w, r->t.card);
	gp_jw_key(w, "backend");
	gp_jw_string(w, r->backend);
	gp_jw_key(w, "device");
	gp_jw_string(w, r->device_name);
	gp_jw_key(w, "bandwidth");
	gp_jw_object(w);
	gp_jw_key(w, "mean_gbps");
	gp_jw_real(w, m->bw_mean_gbps);
	gp_jw_key(w, "fluct_pct");
	gp_jw_real(w, m->bw_fluct_pct);
	gp_jw_key(w, "min_gbps");
	gp_jw_real(w, m->bw_min_gbps);
	gp_jw_key(w, "max_gbps");
	gp_jw_real(w, m->bw_max_gbps);
	gp_jw_key(w, "samples");
	gp_jw_int(w, m->bw_samples);
	gp_jw_key(w, "fluct");
	gp_jw_string(w, "(max-min)/2/mean");
	gp_jw_end_object(w);
	gp_jw_key(w, "memtest");
	gp_jw_object(w);
	gp_jw_key(w, "bytes");
	gp_jw_uint(w, m->mem_tested_bytes);
	gp_jw_key(w, "errors");
	gp_jw_uint(w, m->mem_errors);
	gp_jw_key(w, "patterns");
	gp_jw_array(w);
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
		gp_jw_string(w, patterns[i]);
	gp_jw_end_array(w);
	gp_jw_end_object(w);
	gp_check_json_figures(w, m->f32_gflops, m->f16_gflops, m->temperature_c, m->power_w);
	gp_jw_key(w, "grade");
	gp_jw_string(w, gp_grade_name(r->grade));
	gp_jw_key(w, "reason");
	gp_jw_string(w, r->reason);
	gp_jw_key(w, "reported");
	gp_jw_bool(w, r->reported && !strcmp(r->reported, "yes"));
	if (r->reported && strcmp(r->reported, "yes")) {
		gp_jw_key(w, "report_error");
		gp_jw_string(w, r->report_err);
	}
	gp_jw_end_object(w);
}

int gp_check_print_json(const struct gp_check_opts *o, const char *node,
			const struct gp_check_result *rs, int n, FILE *f)
{
	gp_jw_t *w = gp_jw_create(f);
	if (!w)
		return -1;
	gp_jw_object(w);
	gp_jw_key(w, "node");
	gp_jw_string(w, node);
	gp_check_json_run(w, o);
	gp_jw_key(w, "cards");
	gp_jw_array(w);
	for (int i = 0; i < n; i++)
		json_card(w, &rs[i]);
	gp_jw_end_array(w);
	gp_jw_end_object(w);
	return gp_jw_finish(&w);
}

int gp_check_write_json(const struct gp_check_opts *o, const char *node,
			const struct gp_check_result *rs, int n, const char *path, gp_error_t *err)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return gp_errprintf(err, "result path '%s' is too long", path);
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gp_errprintf(err, "cannot write '%s': %s", tmp, strerror(errno));
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return gp_errprintf(err, "cannot write '%s': %s", tmp, strerror(e));
	}
	int rc = gp_check_print_json(o, node, rs, n, f);
	if (rc == 0 && fsync(fileno(f)) < 0)
		rc = -1;
	int e = errno;
	if (fclose(f) == EOF && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0) {
		unlink(tmp);
		errno = e;
		return gp_errprintf(err, "cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}
