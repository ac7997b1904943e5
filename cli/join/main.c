/* gpool-join: `gpool join-token`, `gpool join` and `gpool leave` (gpool hands these three to
 * it). Options are one table; each subcommand refuses the ones it does not use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/join/join.h"
#include "cli/lib/join_usage.h"
#include "cli/lib/subcommand.h"
#include "common/opt.h"
#include "common/parse.h"

#define G(c) ((struct gpj *)(c))

static int set_config(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_CONFIG;
	return gp_cli_set_config(c, a, err);
}

static int set_scheduler(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_SCHEDULER;
	return gp_cli_set_scheduler(c, a, err);
}

/* above 0: a token or a wait that ends at once is a mistake */
static int duration(const char *a, uint32_t *out, const char *what, gp_error_t *err)
{
	return gp_opt_duration(out, a, 1, UINT32_MAX, what, err);
}

static int set_ttl(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_TTL;
	if (duration(a, &G(c)->ttl, "--ttl", err) < 0)
		return -1;
	if (G(c)->ttl > GPJ_TTL_MAX)
		return gp_errprintf(err, "--ttl '%s' is over 24 hours", a);
	return 0;
}

static int set_timeout(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_TIMEOUT;
	return duration(a, &G(c)->timeout, "--timeout", err);
}

static int set_address(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_ADDRESS;
	G(c)->address = a;
	return 0;
}

static int set_state_dir(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_STATE_DIR;
	G(c)->state_dir = a;
	return 0;
}

static int set_munge_key(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_MUNGE_KEY;
	G(c)->munge_key = a;
	return 0;
}

static int set_node(void *c, const char *a, gp_error_t *err)
{
	G(c)->given |= GPJ_OPT_NODE;
	G(c)->node = a;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"config", 0, required_argument, "PATH",
     "gpool.conf: read (join-token, leave), written (join; default /etc/gpool/gpool.conf), "
     "removed (leave)",
     set_config, 0},
    {"scheduler", 0, required_argument, "ENDPOINT", "leave: talk to this gschedd", set_scheduler,
     0},
    {"ttl", 0, required_argument, "DURATION",
     "join-token: how long the token is good for (default 15m, at most 24h)", set_ttl, 0},
    {"address", 0, required_argument, "tcp://ADDR:PORT",
     "join-token: where the new pc reaches gschedd (default the scheduler key)", set_address, 0},
    {"state-dir", 0, required_argument, "DIR",
     "join-token: gschedd's state directory; leave: gworkerd's (default state_dir)", set_state_dir,
     0},
    {"munge-key", 0, required_argument, "PATH",
     "the munge key read (join-token), installed (join), removed (leave); default "
     "/etc/munge/munge.key",
     set_munge_key, 0},
    {"timeout", 0, required_argument, "DURATION",
     "join: wait this long for the scheduler (default 10s); leave: for running jobs "
     "(default 10m)",
     set_timeout, 0},
    {"node", 0, required_argument, "NAME", "leave: this node (default node_name, the host name)",
     set_node, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static const struct gp_subcommand subcommands[] = {
    {"join-token", gpj_token, GPJ_USAGE_TOKEN},
    {"join", gpj_join, GPJ_USAGE_JOIN},
    {"leave", gpj_leave, GPJ_USAGE_LEAVE},
};

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: gpool SUBCOMMAND [options] [ARGS]\n\nsubcommands:\n");
	gp_subcommand_usage(subcommands, NSUB, NULL, f);
	fprintf(f, "\noptions:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

int main(int argc, char **argv)
{
	static const struct gp_subcommand_cmd cmd = {
	    "gpool", "gpool-join --help", opts, GP_NOPTS(opts), subcommands, NSUB, usage, NULL,
	};
	struct gpj g = {0};
	return gp_subcommand_main(&cmd, &g, &g.help, argc, argv);
}
