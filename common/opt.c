/* opt.c - command-line options from one table: getopt_long's tables, the --help text, the
 * scan that applies each option's setter, and the typed setters every program shares (opt.h) */
#include "common/opt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

/* Keys getopt_long returns for options without a short form. */
#define LONG_ONLY_BASE 0x1000

static int build(const struct gp_opt *tab, int n, struct option *lo, char *so, size_t solen,
		 char mode)
{
	size_t k = 0;
	so[k++] = mode; /* '+': stop at the first operand; '-': return operands as key 1 */
	so[k++] = ':';	/* report a missing value as ':' */
	for (int i = 0; i < n; i++) {
		lo[i].name = tab[i].name;
		lo[i].has_arg = tab[i].has_arg;
		lo[i].flag = NULL;
		lo[i].val = tab[i].key ? tab[i].key : LONG_ONLY_BASE + i;
		if (tab[i].key) {
			if (k + 3 >= solen)
				return -1;
			so[k++] = (char)tab[i].key;
			if (tab[i].has_arg == required_argument)
				so[k++] = ':';
		}
	}
	so[k] = '\0';
	memset(&lo[n], 0, sizeof(lo[n]));
	return 0;
}

static const struct gp_opt *find(const struct gp_opt *tab, int n, int val)
{
	for (int i = 0; i < n; i++)
		if ((tab[i].key && tab[i].key == val) || (!tab[i].key && val == LONG_ONLY_BASE + i))
			return &tab[i];
	return NULL;
}

/* The option as the user wrote it, for messages: "--time", "-t". */
static void spelled(char *buf, size_t len, const char *word, int optopt_c)
{
	if (optopt_c && optopt_c < LONG_ONLY_BASE)
		snprintf(buf, len, "-%c", optopt_c);
	else if (word) {
		size_t w = strcspn(word, "=");
		snprintf(buf, len, "%.*s", (int)w, word);
	} else
		snprintf(buf, len, "?");
}

static int scan(const struct gp_opt *tab, int n, int argc, char **argv, char mode,
		struct gp_opt_hit **hits, int *nhits, char ***ops, int *nops, int *optind_out,
		bool *dashdash, gp_error_t *err)
{
	struct option *lo = calloc(n + 1, sizeof(*lo));
	/* one word can hold several bundled short options ("-HW"): the hits grow as needed */
	int caph = argc > 0 ? argc : 1;
	struct gp_opt_hit *h = calloc(caph, sizeof(*h));
	char so[256];
	int nh = 0, c, idx;
	char **o = NULL;
	int no = 0;
	if (mode == '-' && !(o = calloc(argc > 0 ? argc : 1, sizeof(*o)))) {
		free(lo);
		free(h);
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	if (!lo || !h || build(tab, n, lo, so, sizeof(so), mode) < 0) {
		free(o);
		free(lo);
		free(h);
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	opterr = 0;
	optind = 0; /* GNU: full reinitialisation, so the scanner can run more than once */
	while ((c = getopt_long(argc, argv, so, lo, &idx)) != -1) {
		char word[128];
		if (c == 1) {
			o[no++] = optarg;
			continue;
		}
		if (c == '?' || c == ':') {
			/* for an unknown short option getopt sets optopt; for a long one, 0 */
			const char *w = argv[optind - 1];
			if (c == '?' && optopt == 0)
				spelled(word, sizeof(word), w, 0);
			else if (optopt && optopt < LONG_ONLY_BASE && w[0] == '-' && w[1] != '-')
				spelled(word, sizeof(word), NULL, optopt);
			else
				spelled(word, sizeof(word), w, 0);
			free(lo);
			free(h);
			free(o);
			errno = EINVAL;
			if (c == ':')
				return gp_errprintf(err, "option '%s' needs a value", word);
			return gp_errprintf(err, "unknown option '%s'", word);
		}
		const struct gp_opt *opt = find(tab, n, c);
		if (!opt) {
			free(lo);
			free(h);
			free(o);
			errno = EINVAL;
			return gp_errprintf(err, "unknown option '%s'", argv[optind - 1]);
		}
		if (nh == caph) {
			struct gp_opt_hit *nhp = realloc(h, 2 * caph * sizeof(*h));
			if (!nhp) {
				free(lo);
				free(h);
				free(o);
				errno = ENOMEM;
				return gp_errprintf(err, "out of memory");
			}
			h = nhp;
			caph *= 2;
		}
		h[nh].opt = opt;
		h[nh].arg = opt->has_arg == no_argument ? NULL : optarg;
		nh++;
	}
	/* "--" was consumed when the word before the first operand is "--" and is not the
	 * value of the option before it */
	bool dd = false;
	if (optind > 1 && strcmp(argv[optind - 1], "--") == 0)
		dd = !(nh > 0 && h[nh - 1].arg == argv[optind - 1]);
	free(lo);
	*hits = h;
	*nhits = nh;
	*optind_out = optind;
	if (dashdash)
		*dashdash = dd;
	if (mode == '-') {
		/* after "--", the rest are operands too */
		for (int i = optind; i < argc; i++)
			o[no++] = argv[i];
		*ops = o;
		*nops = no;
	}
	return 0;
}

int gp_opt_scan(const struct gp_opt *tab, int n, int argc, char **argv, struct gp_opt_hit **hits,
		int *nhits, int *optind_out, bool *dashdash, gp_error_t *err)
{
	return scan(tab, n, argc, argv, '+', hits, nhits, NULL, NULL, optind_out, dashdash, err);
}

int gp_opt_parse_mixed(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx,
		       char ***operands, int *noperands, gp_error_t *err)
{
	struct gp_opt_hit *hits;
	int nhits, first;
	if (scan(tab, n, argc, argv, '-', &hits, &nhits, operands, noperands, &first, NULL, err) <
	    0)
		return -1;
	int rc = gp_opt_apply(hits, nhits, ctx, err);
	free(hits);
	if (rc < 0) {
		free(*operands);
		*operands = NULL;
	}
	return rc;
}

int gp_opt_apply(const struct gp_opt_hit *hits, int nhits, void *ctx, gp_error_t *err)
{
	for (int i = 0; i < nhits; i++)
		if (hits[i].opt->set && hits[i].opt->set(ctx, hits[i].arg, err) < 0)
			return -1;
	return 0;
}

int gp_opt_parse(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx, int *optind_out,
		 gp_error_t *err)
{
	struct gp_opt_hit *hits;
	int nhits;
	if (gp_opt_scan(tab, n, argc, argv, &hits, &nhits, optind_out, NULL, err) < 0)
		return -1;
	int rc = gp_opt_apply(hits, nhits, ctx, err);
	free(hits);
	return rc;
}

void gp_opt_usage(const struct gp_opt *tab, int n, FILE *f)
{
	for (int i = 0; i < n; i++) {
		const struct gp_opt *o = &tab[i];
		char left[64];
		if (o->flags & GP_OPT_HIDDEN)
			continue;
		int k = 0;
		if (o->key)
			k = snprintf(left, sizeof(left), "-%c, ", o->key);
		else
			k = snprintf(left, sizeof(left), "    ");
		if (o->has_arg == required_argument)
			snprintf(left + k, sizeof(left) - k, "--%s=%s", o->name,
				 o->arg ? o->arg : "X");
		else
			snprintf(left + k, sizeof(left) - k, "--%s", o->name);
		if (strlen(left) > 26)
			fprintf(f, "  %s\n  %-26s %s\n", left, "", o->help);
		else
			fprintf(f, "  %-26s %s\n", left, o->help);
	}
}

int gp_opt_usage_status(void (*usage)(FILE *f), bool help, int bad)
{
	usage(help ? stdout : stderr);
	return help ? 0 : bad;
}

/* ---- typed setters ---- */

static int nomem(gp_error_t *err)
{
	errno = ENOMEM;
	return gp_errprintf(err, "out of memory");
}

static int invalid(gp_error_t *err, const char *what, const char *arg, const char *hint)
{
	errno = EINVAL;
	return gp_errprintf(err, "invalid %s '%s'%s", what, arg, hint);
}

int gp_opt_string(char **field, const char *arg, const char *what, gp_error_t *err)
{
	if (what && !*arg)
		return invalid(err, what, arg, "");
	char *s = strdup(arg);
	if (!s)
		return nomem(err);
	free(*field);
	*field = s;
	return 0;
}

int gp_opt_onoff(int *out, const char *arg, const char *what, gp_error_t *err)
{
	static const struct {
		const char *name;
		int v;
	} tab[] = {{"auto", -1}, {"on", 1}, {"off", 0}};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(arg, tab[i].name)) {
			*out = tab[i].v;
			return 0;
		}
	return invalid(err, what, arg, " (auto, on, off)");
}

int gp_opt_count(uint32_t *out, const char *arg, uint32_t min, uint32_t max, const char *what,
		 gp_error_t *err)
{
	long v;
	if (gp_parse_long(arg, min, max, &v) < 0)
		return invalid(err, what, arg, "");
	*out = (uint32_t)v;
	return 0;
}

int gp_opt_size(uint64_t *out, const char *arg, uint64_t unit, const char *what, gp_error_t *err)
{
	uint64_t b;
	if (gp_parse_size(arg, unit, &b) < 0)
		return invalid(err, what, arg, "");
	*out = b;
	return 0;
}

int gp_opt_duration(uint32_t *out, const char *arg, uint32_t min, uint32_t max, const char *what,
		    gp_error_t *err)
{
	uint32_t s;
	if (gp_parse_duration(arg, &s) < 0 || s < min || s > max)
		return invalid(err, what, arg, "");
	*out = s;
	return 0;
}

int gp_opt_list(char ***v, size_t *n, const char *arg, gp_error_t *err)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return nomem(err);
	*v = nv;
	if (!(nv[*n] = strdup(arg)))
		return nomem(err);
	(*n)++;
	return 0;
}

void gp_opt_list_clear(char ***v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}
