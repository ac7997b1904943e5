/* gpu-probe: print, as JSON, the cards that gworkerd's discovery sees on this machine.
 *
 * It compiles the worker's own backend sources (one implementation, no copy), and needs
 * libc and dlopen only: no protobuf-c, no gpool library. Build:
 *   cc -O2 -o gpu-probe gpu-probe.c -ldl
 *   cmake -S tools/gpu-probe -B b && cmake --build b
 * Usage: gpu-probe [-v] [--sysfs ROOT] [--nvml LIB] [--rocm-smi LIB]
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../worker/cards_nvml.c"
#include "../../worker/cards_rocm.c"
#include "../../worker/cards_sysfs.c"

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
	printf("\"own_kernels_ok\": %s}", c->own_kernels_ok ? "true" : "false");
}

int main(int argc, char **argv)
{
	const char *sysfs = NULL, *nvml = NULL, *rsmi = NULL;
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
		else {
			fprintf(stderr, "usage: gpu-probe [-v] [--sysfs ROOT] [--nvml LIB] "
					"[--rocm-smi LIB]\n");
			return 2;
		}
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
	printf("]}\n");
	gp_card_list_release(&l);
	return 0;
}
