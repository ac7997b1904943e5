/* token.c: `gpool join-token`, root on the scheduler's PC: a new single-use token, the pool's
 * MUNGE key and a worker's gpool.conf sealed under it in STATE_DIR/join/ID.bundle (owned by
 * gschedd's account, the state directory's owner), and the command to run on the new PC. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/join/join.h"
#include "common/config.h"
#include "common/joinseal.h"
#include "common/jointoken.h"
#include "common/util.h"

/* What every worker of the pool must agree with the scheduler on; per-PC keys (node name,
 * address, CPUs, scratch) stay the new PC's own. */
static const char *const pool_keys[] = {
    "sched_uid",   "agent_uid",		 "uid_min",   "uid_max", "deny_users",
    "max_message", "heartbeat_interval", "kill_grace"};

static bool loopback(const char *ep)
{
	return strstr(ep, "://127.") || strstr(ep, "://localhost") || strstr(ep, "://[::1]") ||
	       strstr(ep, "://*");
}

static int conf_text(const gp_config_t *cfg, const char *address, gp_buf_t *out)
{
	char line[600];
	time_t now = time(NULL);
	struct tm tm;
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
	snprintf(line, sizeof(line),
		 "# written by gpool join, from the scheduler's gpool.conf of %s\n"
		 "scheduler = %s\n",
		 when, address);
	if (gp_buf_append(out, line, strlen(line)) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(pool_keys) / sizeof(pool_keys[0]); i++) {
		const char *v = gp_config_str(cfg, pool_keys[i]);
		snprintf(line, sizeof(line), "%s = %s\n", pool_keys[i], v ? v : "");
		if (v && *v && gp_buf_append(out, line, strlen(line)) < 0)
			return -1;
	}
	return gp_buf_append(out, "", 1); /* NUL-terminated */
}

/* STATE_DIR/join: made owned by the state directory's owner (gschedd's account), 0700;
 * refused when it is anything else. */
static int join_dir(const char *state_dir, char *dir, size_t len, uid_t *uid, gid_t *gid,
		    gp_error_t *err)
{
	struct stat st;
	if (stat(state_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return gp_errprintf(err,
				    "no state directory '%s': run this on the scheduler's PC "
				    "(or give --state-dir)",
				    state_dir);
	*uid = st.st_uid;
	*gid = st.st_gid;
	snprintf(dir, len, "%s/join", state_dir);
	if (mkdir(dir, 0700) == 0 && chown(dir, *uid, *gid) < 0)
		return gp_errprintf(err, "cannot give '%s' to uid %u: %s", dir, (unsigned)*uid,
				    strerror(errno));
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != *uid || (st.st_mode & 022))
		return gp_errprintf(err,
				    "'%s' is not a directory of uid %u that only it may write: "
				    "refused",
				    dir, (unsigned)*uid);
	return 0;
}

static int count_waiting(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".bundle"))
			n++;
	if (d)
		closedir(d);
	return n;
}

int gpj_token(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpj *g = ctx;
	(void)args;
	if (nargs) {
		gp_errprintf(err, "join-token takes no arguments");
		return 2;
	}
	if (g->given & (GPJ_OPT_TIMEOUT | GPJ_OPT_NODE | GPJ_OPT_SCHEDULER)) {
		gp_errprintf(err, "join-token takes --ttl, --address, --state-dir, --munge-key and "
				  "--config only");
		return 2;
	}
	if (geteuid() != 0) {
		gp_errprintf(err, "only root may make a join token: it hands out the pool's munge "
				  "key, which is root on every pc");
		return 1;
	}
	uint32_t ttl = g->given & GPJ_OPT_TTL ? g->ttl : GPJ_TTL_DEFAULT;
	gp_config_t *cfg = gp_config_create((enum gp_prog)(GP_SCHED | GP_WORKER | GP_CLI));
	const char *path = g->common.config ? g->common.config : getenv("GPOOL_CONF");
	if (!path && access(GPJ_DEFAULT_CONF, F_OK) == 0)
		path = GPJ_DEFAULT_CONF;
	if (!cfg || (path && gp_config_load_file(cfg, path, err) < 0)) {
		gp_config_destroy(&cfg);
		return 1;
	}
	int rc = 1;
	uint8_t *key = NULL, *payload = NULL, *bundle = NULL;
	size_t keylen = 0, plen = 0, blen = 0;
	gp_buf_t conf = {0};
	const char *address = g->address ? g->address : gp_config_str(cfg, "scheduler");
	const char *state_dir = g->state_dir ? g->state_dir : gp_config_str(cfg, "state_dir");
	const char *keypath = g->munge_key ? g->munge_key : GPJ_DEFAULT_KEY;
	char dir[4096], file[4200], text[GP_JOIN_TOKEN_LEN + 1], hex[2 * GP_JOIN_ID_LEN + 1];
	uid_t uid = 0;
	gid_t gid = 0;
	struct gp_join_token t;
	if (strncmp(address, "tcp://", 6) != 0 || loopback(address)) {
		gp_errprintf(err,
			     "'%s' is not an address other pcs reach gschedd at: give --address "
			     "tcp://ADDR:PORT",
			     address);
		goto out;
	}
	if (gp_read_file(keypath, GP_JOIN_KEY_MAX, &key, &keylen) < 0) {
		gp_errprintf(err, "cannot read the munge key '%s': %s", keypath, strerror(errno));
		goto out;
	}
	if (join_dir(state_dir, dir, sizeof(dir), &uid, &gid, err) < 0)
		goto out;
	if (count_waiting(dir) >= GPJ_MAX_TOKENS) {
		gp_errprintf(err,
			     "%d join tokens are waiting in '%s': let them expire (or remove "
			     "their .bundle files) first",
			     GPJ_MAX_TOKENS, dir);
		goto out;
	}
	time_t expiry = time(NULL) + ttl;
	if (conf_text(cfg, address, &conf) < 0 || gp_join_token_new(&t, err) < 0 ||
	    gp_join_payload_pack(key, keylen, (const char *)conf.data, &payload, &plen, err) < 0 ||
	    gp_join_seal(&t, (uint64_t)expiry, payload, plen, &bundle, &blen, err) < 0) {
		if (!err->text[0])
			gp_errprintf(err, "out of memory");
		goto out;
	}
	gp_join_id_hex(t.id, hex);
	snprintf(file, sizeof(file), "%s/%s.bundle", dir, hex);
	if (gpj_install_file(file, bundle, blen, uid, gid, 0600, err) < 0)
		goto out;
	gp_join_token_format(&t, text);
	struct tm tm;
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&expiry, &tm));
	printf("a join token for one pc, valid until %s (%u s), used once:\n\n"
	       "  gpool join %s %s\n\n"
	       "run that as root on the new pc. whoever has the token can join a pc to the pool "
	       "until then: keep it as secret as the munge key.\n",
	       when, (unsigned)ttl, address, text);
	rc = 0;
out:
	memset(&t, 0, sizeof(t));
	if (key)
		memset(key, 0, keylen);
	if (payload)
		memset(payload, 0, plen);
	free(key);
	free(payload);
	free(bundle);
	gp_buf_release(&conf);
	gp_config_destroy(&cfg);
	return rc;
}
