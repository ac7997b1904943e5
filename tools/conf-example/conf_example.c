/* gpool-conf-example: print an example gpool.conf with every key of the one table
 * (common/config_keys.c) commented out at its default, with its documentation and the
 * programs that read it. The Debian packages ship its output as /etc/gpool/gpool.conf. */
#include <stdio.h>

#include "common/config.h"

int main(void)
{
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
