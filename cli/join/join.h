/* join.h: gpool-join, which carries out `gpool join-token`, `gpool join` and `gpool leave`
 * (docs/commands/gpool-join.md; the trust model: docs/security.md, "Adding a PC"). It is a
 * program of its own because it links OpenSSL's libcrypto, which gpool, started once per job,
 * does not load. One file per subcommand; files.c writes what they install.
 */
#ifndef GP_CLI_JOIN_H
#define GP_CLI_JOIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/lib/session.h"
#include "common/error.h"

#define GPJ_TTL_DEFAULT	 (15 * 60)
#define GPJ_TTL_MAX	 (24 * 3600)
#define GPJ_MAX_TOKENS	 64 /* bundles waiting in STATE_DIR/join at most */
#define GPJ_DEFAULT_CONF "/etc/gpool/gpool.conf"
#define GPJ_DEFAULT_KEY	 "/etc/munge/munge.key"

struct gpj {
	struct gp_cli_common common; /* --config, --scheduler */
	uint32_t ttl;		     /* join-token --ttl, seconds */
	uint32_t timeout;	     /* join: the scheduler's answer; leave: running jobs */
	const char *address;	     /* join-token --address */
	const char *state_dir;	     /* join-token --state-dir */
	const char *munge_key;	     /* --munge-key */
	const char *node;	     /* leave --node */
	unsigned given;		     /* GPJ_OPT_* seen on the command line */
	bool help;
};

/* Options, by the bit each sets in gpj.given: a subcommand refuses those it does not use. */
enum {
	GPJ_OPT_CONFIG = 1,
	GPJ_OPT_SCHEDULER = 2,
	GPJ_OPT_TTL = 4,
	GPJ_OPT_TIMEOUT = 8,
	GPJ_OPT_ADDRESS = 16,
	GPJ_OPT_STATE_DIR = 32,
	GPJ_OPT_MUNGE_KEY = 64,
	GPJ_OPT_NODE = 128,
};

/* gpool-join's subcommands (cli/lib/subcommand.h; ctx is a struct gpj): each returns the exit
 * status (0 done, 1 failed, 2 usage) with err filled on failure. */
int gpj_token(void *ctx, char **args, int nargs, gp_error_t *err);
int gpj_join(void *ctx, char **args, int nargs, gp_error_t *err);
int gpj_leave(void *ctx, char **args, int nargs, gp_error_t *err);

/* Write data to path atomically (a temporary file in its directory, fsync, rename), owned by
 * uid:gid with this mode, without following a link at path. 0 / -1 with err filled. */
int gpj_install_file(const char *path, const void *data, size_t len, uid_t uid, gid_t gid,
		     mode_t mode, gp_error_t *err);

/* Is systemd the init system here (/run/systemd/system)? */
bool gpj_systemd(void);
/* Run argv, its output through; its exit status, or -1 when it cannot start. */
int gpj_run(char *const argv[]);

#endif
