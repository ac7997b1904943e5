/* session.h: one command's conversation with gschedd. Loads gpool.conf (--config, else
 * $GPOOL_CONF, else /etc/gpool/gpool.conf), picks the endpoint or list of them (--scheduler,
 * else $GPOOL_SCHEDULER, else the `scheduler` key; common/schedlist.h), connects lazily on the
 * first call, finds the leader among several schedulers (docs/protocol.md, "A list of
 * schedulers"), and turns the ways a call can fail (no answer, an Error reply, a reply of the
 * wrong kind) into one lowercase message.
 */
#ifndef GP_CLI_SESSION_H
#define GP_CLI_SESSION_H

#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* How long a command waits for an answer. */
#define GP_CLI_TIMEOUT_MS 10000
/* How long a command keeps asking again while the scheduler does not answer (gschedd being
 * restarted), as sbatch does: --retry-for, else $GPOOL_RETRY_FOR, else this. */
#define GP_CLI_RETRY_MS 60000

/* The flags every command shares (also in each command's option table). */
struct gp_cli_common {
	const char *config;    /* --config PATH */
	const char *scheduler; /* --scheduler ENDPOINT */
};

/* Option setters for --config and --scheduler, shared by every command: the command's
 * context must begin with its struct gp_cli_common. */
int gp_cli_set_config(void *ctx, const char *arg, gp_error_t *err);
int gp_cli_set_scheduler(void *ctx, const char *arg, gp_error_t *err);
/* Their entries in a command's option table (struct gp_opt, common/opt.h). */
#define GP_CLI_COMMON_OPTS                                                                         \
	{"config", 0, required_argument, "PATH", "read this gpool.conf", gp_cli_set_config, 0},    \
	{                                                                                          \
		"scheduler", 0, required_argument, "ENDPOINT",                                     \
		    "talk to this gschedd (default $GPOOL_SCHEDULER)", gp_cli_set_scheduler, 0     \
	}

typedef struct gp_session gp_session_t;

/* NULL with err filled when the config file cannot be read or is invalid. */
gp_session_t *gp_session_create(const struct gp_cli_common *common, gp_error_t *err);
void gp_session_destroy(gp_session_t **s);

/* How long calls keep asking again while no answer comes (ms; 0: ask once). A session
 * starts with $GPOOL_RETRY_FOR (a duration), else GP_CLI_RETRY_MS. */
void gp_session_set_retry(gp_session_t *s, int64_t ms);

/* The configuration the session loaded. */
const struct gp_config *gp_session_config(const gp_session_t *s);
/* The endpoint the session talks to. */
const char *gp_session_endpoint(const gp_session_t *s);
/* The connection (made on first use), for pipelined transfers (xfer.h). NULL with err. */
struct gp_client *gp_session_client(gp_session_t *s, gp_error_t *err);
/* The user name requests carry (connects if needed; "" on failure). */
const char *gp_session_user(gp_session_t *s);

/* Send req and wait for a reply of kind `expect`. The reply lives until the next call.
 * While no answer comes (errno ETIMEDOUT), the request is sent again, each time waiting
 * timeout_ms, until the session's retry time has passed since the first try; the first retry
 * is said on stderr ("gsub: no answer from the scheduler at '...' yet; trying again for up to
 * 60 s"). With several schedulers, a standby's ERROR_NOT_LEADER sends it to the leader it
 * names (else the next), and one where it cannot be delivered within a second, or that does
 * not answer within timeout_ms, to the next. A request that is sent again may arrive twice: a
 * mutating one carries a request id (gp_client_stamp, the same on every try) and a submission
 * a token, which make the second one harmless.
 * NULL with err filled: "no answer from the scheduler at 'tcp://...' (is gschedd running?)"
 * (errno ETIMEDOUT), the Error reply's text (errno EPROTO, *code set when code != NULL), or
 * an unexpected reply. */
Gpool__Msg *gp_session_call(gp_session_t *s, Gpool__Msg *req, Gpool__Msg__MCase expect,
			    int timeout_ms, Gpool__ErrorCode *code, gp_error_t *err);

/* The two queries most commands make, as gp_session_call with GP_CLI_TIMEOUT_MS: the reply
 * (living until the next call), or NULL with err filled. */
Gpool__JobQueryReply *gp_session_job_query(gp_session_t *s, Gpool__JobQuery *q, gp_error_t *err);
Gpool__NodeQueryReply *gp_session_node_query(gp_session_t *s, Gpool__NodeQuery *q, gp_error_t *err);

#endif
