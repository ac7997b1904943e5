/* cards.c: card discovery backends and the fake card parser. */
#include "worker/node/cards.h"
#include "cards/cards_backends.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/names.h"
#include "common/parse.h"

void gp_cards_release(gp_cards_t *c)
{
	for (size_t i = 0; i < c->n; i++)
		gpool__card__free_unpacked(c->v[i], NULL);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static Gpool__Card *card_new(void)
{
	Gpool__Card *c = calloc(1, sizeof(*c));
	if (c)
		gpool__card__init(c);
	/* free_unpacked frees every non-default string: give them all their own storage */
	return c;
}

static int card_set_str(char **dst, const char *s)
{
	char *d = strdup(s);
	if (!d)
		return -1;
	*dst = d;
	return 0;
}

static int parse_power(const char *s, uint32_t *w)
{
	char buf[32];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	if (buf[n - 1] == 'W' || buf[n - 1] == 'w')
		buf[n - 1] = '\0';
	long v;
	if (gp_parse_long(buf, 0, 100000, &v) < 0)
		return -1;
	*w = (uint32_t)v;
	return 0;
}

/* Optional key=value fields after the five positional ones. */
typedef int (*card_opt_f)(Gpool__Card *c, const char *value);

static int opt_state(Gpool__Card *c, const char *v)
{
	static const struct {
		const char *name;
		Gpool__CardState st;
	} states[] = {
	    {"up", GPOOL__CARD_STATE__CARD_UP},
	    {"drained", GPOOL__CARD_STATE__CARD_DRAINED},
	    {"failed", GPOOL__CARD_STATE__CARD_FAILED},
	};
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (!strcasecmp(v, states[i].name)) {
			c->state = states[i].st;
			return 0;
		}
	}
	return -1;
}

static int opt_grade(Gpool__Card *c, const char *v)
{
	static const char *const grades[] = {"", "good", "warn", "fail"};
	for (size_t i = 0; i < sizeof(grades) / sizeof(grades[0]); i++) {
		if (!strcmp(v, grades[i])) {
			if (c->grade != protobuf_c_empty_string)
				free(c->grade);
			return card_set_str(&c->grade, v);
		}
	}
	return -1;
}

static int opt_throughput(Gpool__Card *c, const char *v)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || d < 0 || d != d)
		return -1;
	c->throughput = d;
	return 0;
}

static int opt_draw(Gpool__Card *c, const char *v)
{
	return parse_power(v, &c->fake_draw_w);
}

static int opt_idle(Gpool__Card *c, const char *v)
{
	return parse_power(v, &c->fake_idle_w);
}

static const struct {
	const char *key;
	card_opt_f set;
} card_opts[] = {
    {"state", opt_state}, {"grade", opt_grade}, {"throughput", opt_throughput},
    {"draw", opt_draw},	  {"idle", opt_idle},
};

static int parse_one(char *item, Gpool__Card *c, gp_error_t *err)
{
	char *f[16];
	int nf = 0;
	/* strtok would merge empty fields; split by hand */
	char *p = item;
	while (nf < 16) {
		f[nf++] = p;
		char *colon = strchr(p, ':');
		if (!colon)
			break;
		*colon = '\0';
		p = colon + 1;
	}
	if (nf < 5)
		return gp_errprintf(
		    err, "card '%s' has %d fields, want vendor:name:vram:arch:power", item, nf);
	int v = gp_vendor_parse(f[0]);
	if (v != GPOOL__VENDOR__VENDOR_NVIDIA && v != GPOOL__VENDOR__VENDOR_AMD)
		return gp_errprintf(err, "unknown card vendor '%s' (nvidia or amd)", f[0]);
	c->vendor = (Gpool__Vendor)v;
	if (!*f[1])
		return gp_errprintf(err, "card without a name");
	if (gp_parse_size(f[2], 1 << 20, &c->vram_total) < 0 || c->vram_total == 0)
		return gp_errprintf(err, "invalid card memory size '%s'", f[2]);
	c->vram_free = c->vram_total;
	if (!*f[3])
		return gp_errprintf(err, "card '%s' without an architecture", f[1]);
	if (parse_power(f[4], &c->power_limit_w) < 0)
		return gp_errprintf(err, "invalid card power '%s' (e.g. 125W)", f[4]);
	if (card_set_str(&c->name, f[1]) < 0 || card_set_str(&c->arch, f[3]) < 0)
		return gp_errprintf(err, "out of memory");
	for (int i = 5; i < nf; i++) {
		char *eq = strchr(f[i], '=');
		if (!eq)
			return gp_errprintf(err, "card field '%s' is not key=value", f[i]);
		*eq = '\0';
		size_t k;
		for (k = 0; k < sizeof(card_opts) / sizeof(card_opts[0]); k++)
			if (!strcmp(f[i], card_opts[k].key))
				break;
		if (k == sizeof(card_opts) / sizeof(card_opts[0]))
			return gp_errprintf(err, "unknown card field '%s'", f[i]);
		if (card_opts[k].set(c, eq + 1) < 0)
			return gp_errprintf(err, "invalid card %s '%s'", f[i], eq + 1);
	}
	c->fake = 1;
	if (c->state == GPOOL__CARD_STATE__CARD_STATE_UNKNOWN)
		c->state = GPOOL__CARD_STATE__CARD_UP;
	return 0;
}

int gp_cards_parse_fake(const char *spec, gp_cards_t *out, gp_error_t *err)
{
	gp_cards_t add = {0};
	char *copy = strdup(spec ? spec : "");
	if (!copy) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	char *item = copy;
	int rc = 0;
	while (item && *item) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = '\0';
		Gpool__Card *c = card_new();
		Gpool__Card **nv = realloc(add.v, (add.n + 1) * sizeof(*nv));
		if (!c || !nv) {
			free(c);
			if (nv)
				add.v = nv;
			rc = gp_errprintf(err, "out of memory");
			break;
		}
		add.v = nv;
		add.v[add.n++] = c;
		if (parse_one(item, c, err) < 0) {
			rc = -1;
			break;
		}
		item = comma ? comma + 1 : NULL;
		if (comma && !*item) {
			rc = gp_errprintf(err, "empty card entry after ','");
			break;
		}
	}
	free(copy);
	if (rc == 0) {
		Gpool__Card **nv = realloc(out->v, (out->n + add.n + 1) * sizeof(*nv));
		if (!nv) {
			rc = gp_errprintf(err, "out of memory");
		} else {
			out->v = nv;
			for (size_t i = 0; i < add.n; i++)
				out->v[out->n++] = add.v[i];
			free(add.v);
			return 0;
		}
	}
	gp_cards_release(&add);
	errno = EINVAL;
	return -1;
}

/* A discovery backend: appends what it finds; a backend whose library or driver is absent
 * finds nothing and succeeds. */
typedef int (*card_backend_f)(const char *fake_spec, gp_cards_t *out, gp_error_t *err);

static int backend_fake(const char *fake_spec, gp_cards_t *out, gp_error_t *err)
{
	if (!fake_spec || !*fake_spec)
		return 0;
	return gp_cards_parse_fake(fake_spec, out, err);
}

static void backend_debug(const char *msg, void *arg)
{
	gp_debug("cards: %s", msg);
}

/* Copy what a real backend (cards_backends.h) found into Gpool__Cards. */
static int append_real(gp_card_list_t *l, gp_cards_t *out, gp_error_t *err)
{
	for (size_t i = 0; i < l->n; i++) {
		const gp_card_info_t *r = &l->v[i];
		Gpool__Card *c = card_new();
		Gpool__Card **nv = c ? realloc(out->v, (out->n + 1) * sizeof(*nv)) : NULL;
		if (!nv) {
			free(c);
			gp_card_list_release(l);
			return gp_errprintf(err, "out of memory");
		}
		out->v = nv;
		out->v[out->n++] = c;
		c->vendor = r->vendor == GP_CARD_NVIDIA ? GPOOL__VENDOR__VENDOR_NVIDIA
							: GPOOL__VENDOR__VENDOR_AMD;
		const struct {
			char **dst;
			const char *src;
		} strs[] = {{&c->name, r->name},
			    {&c->uuid, r->uuid},
			    {&c->pci_bus_id, r->pci_bus_id},
			    {&c->arch, r->arch},
			    {&c->driver_version, r->driver_version},
			    {&c->api_version, r->api_version}};
		for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++) {
			if (strs[k].src[0] && card_set_str(strs[k].dst, strs[k].src) < 0) {
				gp_card_list_release(l);
				return gp_errprintf(err, "out of memory");
			}
		}
		c->vram_total = r->vram_total;
		c->vram_free = r->vram_free;
		c->sm_count = r->sm_count;
		c->cores = r->cores;
		c->power_limit_w = r->power_limit_w;
		c->temperature_c = r->temperature_c;
		c->utilization_pct = r->utilization_pct;
		c->own_kernels_ok = r->own_kernels_ok;
		c->dev_node = r->dev_node;
		c->energy_mj = r->has_energy ? r->energy_mj : 0;
		c->state = GPOOL__CARD_STATE__CARD_UP;
	}
	gp_card_list_release(l);
	return 0;
}

static int backend_nvml(const char *fake_spec, gp_cards_t *out, gp_error_t *err)
{
	gp_card_list_t l = {.debug = backend_debug};
	if (gp_cards_nvml_discover(NULL, &l) < 0) {
		gp_card_list_release(&l);
		return gp_errprintf(err, "out of memory");
	}
	return append_real(&l, out, err);
}

static int backend_amd(const char *fake_spec, gp_cards_t *out, gp_error_t *err)
{
	gp_card_list_t l = {.debug = backend_debug};
	if (gp_cards_amd_discover(NULL, NULL, &l) < 0) {
		gp_card_list_release(&l);
		return gp_errprintf(err, "out of memory");
	}
	return append_real(&l, out, err);
}

/* Real cards first, fake cards after: a real card's index does not depend on the fake list. */
static const struct {
	const char *name;
	card_backend_f discover;
} backends[] = {
    {"nvml", backend_nvml},
    {"rocm-smi/sysfs", backend_amd},
    {"fake", backend_fake},
};

int gp_cards_discover(const char *fake_spec, gp_cards_t *out, gp_error_t *err)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		size_t before = out->n;
		if (backends[i].discover(fake_spec, out, err) < 0)
			return -1;
		gp_debug("cards: %s backend found %zu", backends[i].name, out->n - before);
	}
	for (size_t i = 0; i < out->n; i++) {
		out->v[i]->index = (uint32_t)i;
		const Gpool__Card *c = out->v[i];
		if (!c->fake) {
			char node[48] = "unknown";
			if (c->dev_node)
				snprintf(node, sizeof(node), "%s%u",
					 c->vendor == GPOOL__VENDOR__VENDOR_NVIDIA
					     ? "/dev/nvidia"
					     : "/dev/dri/renderD",
					 c->dev_node - 1);
			gp_info("card %zu: %s %s, %s, device node %s", i,
				c->vendor == GPOOL__VENDOR__VENDOR_NVIDIA ? "nvidia" : "amd",
				c->name, c->pci_bus_id, node);
		}
		if (out->v[i]->fake && out->v[i]->uuid == protobuf_c_empty_string) {
			char u[32];
			snprintf(u, sizeof(u), "GPU-fake-%zu", i);
			if (card_set_str(&out->v[i]->uuid, u) < 0)
				return gp_errprintf(err, "out of memory");
		}
	}
	return 0;
}

int gp_card_dev_minor(int vendor, uint32_t dev_node, int ordinal)
{
	if (dev_node)
		return (int)(dev_node - 1);
	return vendor == 1 ? ordinal : 128 + ordinal;
}
