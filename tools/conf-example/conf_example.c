/* gpool-conf-example: print an example gpool.conf with every key of the one table
 * (common/config_keys.c) commented out at its default, with its documentation and the
 * programs that read it. The Debian packages ship its output as /etc/gpool/gpool.conf.
 * With --markdown: the same table as docs/configuration.md holds it (tools/docgen.py puts it
 * there, tests/docs checks it is current). */
#include <stdio.h>
#include <string.h>

#include "common/config.h"

/* s with '|' escaped, as a cell of a markdown table */
static void cell(const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			putchar('\\');
		putchar(*s);
	}
}

static void progs(unsigned mask)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{GP_SCHED, "gschedd"},
		     {GP_WORKER, "gworkerd"},
		     {GP_STEPD, "gstepd"},
		     {GP_CLI, "commands"}};
	const char *sep = "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (mask & names[i].bit) {
			printf("%s%s", sep, names[i].name);
			sep = ", ";
		}
}

static void markdown(void)
{
	printf("| key | read by | default | applies on SIGHUP | meaning |\n"
	       "| --- | --- | --- | --- | --- |\n");
	for (int i = 0; i < gp_conf_nkeys; i++) {
		const struct gp_conf_key *k = &gp_conf_keys[i];
		printf("| `%s` | ", k->name);
		progs(k->progs);
		printf(" | ");
		if (*k->def) {
			printf("`");
			cell(k->def);
			printf("`");
		} else {
			printf("(none)");
		}
		printf(" | ");
		progs(k->reload);
		printf(" | ");
		cell(k->help);
		if (k->choices) {
			printf("; one of `");
			cell(k->choices);
			printf("`");
		}
		printf(" |\n");
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
		markdown();
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: gpool-conf-example [--markdown]\n");
		return 2;
	}
	printf(
	    "# /etc/gpool/gpool.conf: one file for every gpool program (gschedd, gworkerd, gstepd\n"
	    "# and the commands). Each key is also a --flag (gschedd --help). Lines are\n"
	    "# 'key = value'; '#' starts a comment. Every key is shown at its default.\n"
	    "# `gschedd --check-config` / `gworkerd --check-config` check this file; SIGHUP\n"
	    "# (systemctl reload) applies the keys marked 'reloads' without a restart.\n"
	    "# At least: scheduler = tcp://SCHEDULER-HOST:7820 on every PC.\n");
	for (int i = 0; i < gp_conf_nkeys; i++) {
		const struct gp_conf_key *k = &gp_conf_keys[i];
		printf("\n# %s\n# read by:%s%s%s%s", k->help, k->progs & GP_SCHED ? " gschedd" : "",
		       k->progs & GP_WORKER ? " gworkerd" : "",
		       k->progs & GP_STEPD ? " gstepd" : "", k->progs & GP_CLI ? " commands" : "");
		if (k->choices)
			printf("; one of %s", k->choices);
		if (k->reload)
			printf("; reloads on SIGHUP");
		printf("\n#%s = %s\n", k->name, k->def);
	}
	return 0;
}
