/* gpu-probe: print, as JSON, the cards that gworkerd's discovery sees on this machine.
 *
 * It links cards/'s sensing layer, the discovery gworkerd uses (one implementation, no
 * copy), and needs libc and dlopen only: no protobuf-c, no other gpool library. Build:
 *   cmake -S tools/gpu-probe -B b && cmake --build b
 * Usage: gpu-probe [-v] [--sysfs ROOT] [--nvml LIB] [--rocm-smi LIB]
 *                  [--sample SECONDS [--interval MS]]
 * --sample reads each card's power every interval (default 1000 ms) for SECONDS through the
 * worker's meters and integrates it as gworkerd does for cards without an energy counter;
 * where the card has a counter too, both are printed, so the sampled path can be checked
 * against the counter on a card that has one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "cards/cards_backends.h"
#include "cards/energy.h"

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void say(const char *msg, void *arg)
{
	fprintf(stderr, "gpu-probe: %s\n", msg);
}

static void print_card(size_t i, const gp_card_info_t *c)
{
	printf("    {\"index\": %zu, \"vendor\": \"%s\", \"source\": \"%s\",\n", i,
	       c->vendor == GP_CARD_NVIDIA ? "nvidia" : "amd", c->source);
	printf("     \"name\": ");
	json_str(c->name);
	printf(", \"uuid\": ");
	json_str(c->uuid);
	printf(", \"pci_bus_id\": ");
	json_str(c->pci_bus_id);
	printf(",\n     \"vram_total\": %llu, \"vram_total_mib\": %llu, \"vram_free\": %llu,\n",
	       (unsigned long long)c->vram_total, (unsigned long long)(c->vram_total >> 20),
	       (unsigned long long)c->vram_free);
	printf("     \"arch\": ");
	json_str(c->arch);
	printf(", \"sm_count\": %u, \"cores\": %u, \"driver_version\": ", c->sm_count, c->cores);
	json_str(c->driver_version);
	printf(", \"api_version\": ");
	json_str(c->api_version);
	printf(",\n     \"power_limit_w\": %u, \"temperature_c\": %u, \"utilization_pct\": %u,\n",
	       c->power_limit_w, c->temperature_c, c->utilization_pct);
	if (c->has_energy)
		printf("     \"energy_mj\": %llu, ", (unsigned long long)c->energy_mj);
	else
		printf("     \"energy_mj\": null, ");
	if (c->has_power)
		printf("\"power_mw\": %u, ", c->power_mw);
	else
		printf("\"power_mw\": null, ");
	printf("\"own_kernels_ok\": %s}", c->own_kernels_ok ? "true" : "false");
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sample every card's power for secs seconds; print the "sampling" member. */
static int sample(const gp_card_list_t *l, const struct gp_card_meter_opts *o, double secs,
		  long interval_ms)
{
	gp_card_meters_t *m = gp_card_meters_create(o);
	int *id = calloc(l->n + 1, sizeof(int));
	gp_energy_integ_t *e = calloc(l->n + 1, sizeof(*e));
	gp_card_reading_t *first = calloc(l->n + 1, sizeof(*first));
	gp_card_reading_t *last = calloc(l->n + 1, sizeof(*last));
	unsigned *samples = calloc(l->n + 1, sizeof(unsigned));
	if (!m || !id || !e || !first || !last || !samples) {
		perror("gpu-probe");
		return -1;
	}
	for (size_t i = 0; i < l->n; i++) {
		id[i] = gp_card_meters_find(m, l->v[i].vendor, l->v[i].uuid, l->v[i].pci_bus_id);
		gp_energy_init(&e[i], 5 * interval_ms);
	}
	int64_t t0 = mono_ms(), end = t0 + (int64_t)(secs * 1000), next = t0;
	for (;;) {
		int64_t now = mono_ms();
		for (size_t i = 0; i < l->n; i++) {
			gp_card_reading_t r;
			if (id[i] < 0 || gp_card_meters_read(m, id[i], &r) < 0)
				continue;
			if (!samples[i])
				first[i] = r;
			last[i] = r;
			if (r.has_power) {
				gp_energy_sample(&e[i], now, r.power_mw);
				samples[i]++;
			}
		}
		if (now >= end)
			break;
		next += interval_ms;
		int64_t wait = next - mono_ms();
		if (wait > 0) {
			struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	double took = (double)(mono_ms() - t0) / 1000.0;
	printf(",\n \"sampling\": {\"seconds\": %.3f, \"interval_ms\": %ld, \"cards\": [\n", took,
	       interval_ms);
	for (size_t i = 0; i < l->n; i++) {
		double sj = (double)e[i].half_uj / 2e6;
		printf(
		    "    {\"index\": %zu, \"meter\": \"%s\", \"samples\": %u, \"sampled_j\": %.3f",
		    i, gp_card_meters_source(m, id[i]), samples[i], sj);
		if (first[i].has_energy && last[i].has_energy)
			printf(", \"counter_j\": %.3f",
			       (double)(last[i].energy_mj - first[i].energy_mj) / 1000.0);
		else
			printf(", \"counter_j\": null");
		printf(", \"mean_w\": %.3f}%s\n", took > 0 ? sj / took : 0.0,
		       i + 1 < l->n ? "," : "");
	}
	printf(" ]}");
	gp_card_meters_destroy(&m);
	free(id);
	free(e);
	free(first);
	free(last);
	free(samples);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sysfs = NULL, *nvml = NULL, *rsmi = NULL;
	double secs = 0;
	long interval_ms = 1000;
	gp_card_list_t l;
	memset(&l, 0, sizeof(l));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			l.debug = say;
		else if (!strcmp(argv[i], "--sysfs") && i + 1 < argc)
			sysfs = argv[++i];
		else if (!strcmp(argv[i], "--nvml") && i + 1 < argc)
			nvml = argv[++i];
		else if (!strcmp(argv[i], "--rocm-smi") && i + 1 < argc)
			rsmi = argv[++i];
		else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
			interval_ms = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: gpu-probe [-v] [--sysfs ROOT] [--nvml LIB] "
					"[--rocm-smi LIB] [--sample SECONDS [--interval MS]]\n");
			return 2;
		}
	}
	if (secs < 0 || interval_ms < 1) {
		fprintf(stderr, "gpu-probe: invalid --sample or --interval\n");
		return 2;
	}
	/* the worker's order: NVML, then ROCm SMI / sysfs (fake cards are the worker's own) */
	if (gp_cards_nvml_discover(nvml, &l) < 0 || gp_cards_amd_discover(rsmi, sysfs, &l) < 0) {
		perror("gpu-probe");
		return 1;
	}
	printf("{\"count\": %zu, \"cards\": [\n", l.n);
	for (size_t i = 0; i < l.n; i++) {
		print_card(i, &l.v[i]);
		printf(i + 1 < l.n ? ",\n" : "\n");
	}
	printf("]");
	struct gp_card_meter_opts o = {
	    .nvml_lib = nvml, .rsmi_lib = rsmi, .sysfs_root = sysfs, .debug = l.debug};
	int rc = secs > 0 && sample(&l, &o, secs, interval_ms) < 0 ? 1 : 0;
	printf("}\n");
	gp_card_list_release(&l);
	return rc;
}
