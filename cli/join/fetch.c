/* fetch.c: `gpool join tcp://ADDR:PORT TOKEN`, root on the new PC: ask gschedd for the bundle
 * the token's id names (an envelope with no credential: this PC has no key yet), open it with
 * the token's secret (AES-256-GCM: a wrong secret or altered bytes are refused), install the
 * MUNGE key (0400, the munge account's) and gpool.conf, and start munged and gworkerd under
 * systemd, or say how. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/join/join.h"
#include "common/joinseal.h"
#include "common/jointoken.h"
#include "common/util.h"
#include "common/zmtp.h"
#include "proto/gpool.pb-c.h"

/* The bundle gschedd holds for this token's id, in *bundle (malloc'd). */
static int fetch(const char *ep, const struct gp_join_token *t, int timeout_ms, uint8_t **bundle,
		 size_t *blen, gp_error_t *err)
{
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	Gpool__JoinFetch jf = GPOOL__JOIN_FETCH__INIT;
	env.version = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	env.join_fetch = &jf;
	jf.token_id.data = (uint8_t *)t->id;
	jf.token_id.len = GP_JOIN_ID_LEN;
	uint8_t req[64];
	size_t n = gpool__envelope__pack(&env, req);
	gp_zmtp_t *z = gp_zmtp_create(ep, GP_JOIN_MAX_BUNDLE + 4096, err);
	if (!z)
		return -1;
	const void *frames[1] = {req};
	size_t lens[1] = {n}, nf = 0;
	const void *rf[1];
	size_t rl[1];
	int rc = -1;
	if (gp_zmtp_send(z, frames, lens, 1, timeout_ms, err) < 0 ||
	    gp_zmtp_recv(z, rf, rl, 1, &nf, timeout_ms, err) < 0) {
		if (errno == ETIMEDOUT)
			gp_errprintf(err,
				     "no answer from the scheduler at '%s' (is gschedd running "
				     "there, and is its port open to this pc?)",
				     ep);
		goto out;
	}
	Gpool__Envelope *r = gpool__envelope__unpack(NULL, rl[0], rf[0]);
	if (!r || !r->join_bundle) {
		gp_errprintf(err, "the answer from '%s' is not a join bundle", ep);
	} else if (r->join_bundle->code != GPOOL__ERROR_CODE__ERROR_NONE) {
		gp_errprintf(err, "the scheduler refused: %.400s", r->join_bundle->text);
	} else if (!(*bundle = malloc(r->join_bundle->bundle.len + 1))) {
		gp_errprintf(err, "out of memory");
	} else {
		memcpy(*bundle, r->join_bundle->bundle.data, r->join_bundle->bundle.len);
		*blen = r->join_bundle->bundle.len;
		rc = 0;
	}
	if (r)
		gpool__envelope__free_unpacked(r, NULL);
out:
	gp_zmtp_destroy(&z);
	return rc;
}

/* An existing file at path that differs from data is kept as path.old. */
static int keep_old(const char *path, const void *data, size_t len, char *said, size_t saidlen)
{
	uint8_t *old = NULL;
	size_t olen = 0;
	said[0] = '\0';
	if (gp_read_file(path, 1 << 20, &old, &olen) < 0)
		return errno == ENOENT ? 0 : -1;
	bool same = olen == len && !memcmp(old, data, len);
	free(old);
	if (same)
		return 0;
	char dst[4200];
	snprintf(dst, sizeof(dst), "%s.old", path);
	if (rename(path, dst) < 0)
		return -1;
	snprintf(said, saidlen, " (the one there before is now %s)", dst);
	return 0;
}

static void restart(const char *key, const char *conf)
{
	if (!gpj_systemd()) {
		printf("systemd does not run here: start munged with that key (munged "
		       "--key-file=%s, or restart it if it runs), then gworkerd --config %s\n",
		       key, conf);
		return;
	}
	char *munge[] = {"systemctl", "restart", "munge.service", NULL};
	char *agent[] = {"systemctl", "enable", "--now", "gworkerd.service", NULL};
	char *again[] = {"systemctl", "restart", "gworkerd.service", NULL};
	printf(gpj_run(munge) == 0
		   ? "restarted munge.service\n"
		   : "could not restart munge.service: see systemctl status munge\n");
	if (gpj_run(agent) == 0 && gpj_run(again) == 0)
		printf("started gworkerd.service\n");
	else
		printf("could not start gworkerd.service (is gpool-worker installed?): see "
		       "systemctl status gworkerd\n");
}

int gpj_join(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpj *g = ctx;
	if (nargs != 2) {
		gp_errprintf(err, "join needs the scheduler's address and the token, as gpool "
				  "join-token printed them");
		return 2;
	}
	if (g->given & (GPJ_OPT_TTL | GPJ_OPT_ADDRESS | GPJ_OPT_STATE_DIR | GPJ_OPT_NODE |
			GPJ_OPT_SCHEDULER)) {
		gp_errprintf(err, "join takes --config, --munge-key and --timeout only");
		return 2;
	}
	struct gp_join_token t;
	if (strncmp(args[0], "tcp://", 6) != 0) {
		gp_errprintf(err, "'%s' is not the scheduler's address (tcp://ADDR:PORT)", args[0]);
		return 2;
	}
	if (gp_join_token_parse(args[1], &t, err) < 0)
		return 2;
	if (geteuid() != 0) {
		gp_errprintf(err, "only root may join this pc: it installs the pool's munge key");
		return 1;
	}
	struct passwd *mu = getpwnam("munge");
	if (!mu) {
		gp_errprintf(err,
			     "no 'munge' account here: install munge first (apt install munge)");
		return 1;
	}
	const char *keypath = g->munge_key ? g->munge_key : GPJ_DEFAULT_KEY;
	const char *confpath = g->common.config ? g->common.config : GPJ_DEFAULT_CONF;
	int timeout_ms = (int)(g->given & GPJ_OPT_TIMEOUT ? g->timeout : 10) * 1000;
	uint8_t *bundle = NULL, *plain = NULL;
	size_t blen = 0, plen = 0, keylen = 0;
	const uint8_t *key;
	char *conf = NULL, said_key[4300], said_conf[4300], dir[4096];
	struct gp_join_header h;
	int rc = 1;
	if (fetch(args[0], &t, timeout_ms, &bundle, &blen, err) < 0)
		goto out;
	if (gp_join_open(&t, bundle, blen, &h, &plain, &plen, err) < 0 ||
	    gp_join_payload_unpack(plain, plen, &key, &keylen, &conf, err) < 0)
		goto out;
	snprintf(dir, sizeof(dir), "%s", keypath);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) == 0 && chown(dir, mu->pw_uid, mu->pw_gid) < 0) {
			gp_errprintf(err, "cannot give '%s' to munge: %s", dir, strerror(errno));
			goto out;
		}
	}
	snprintf(dir, sizeof(dir), "%s", confpath);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		gp_mkdir_p(dir, 0755);
	}
	if (keep_old(keypath, key, keylen, said_key, sizeof(said_key)) < 0 ||
	    keep_old(confpath, conf, strlen(conf), said_conf, sizeof(said_conf)) < 0) {
		gp_errprintf(err, "cannot set the old key or gpool.conf aside: %s",
			     strerror(errno));
		goto out;
	}
	if (gpj_install_file(keypath, key, keylen, mu->pw_uid, mu->pw_gid, 0400, err) < 0 ||
	    gpj_install_file(confpath, conf, strlen(conf), 0, 0, 0644, err) < 0)
		goto out;
	printf("installed the pool's munge key in %s (munge's, mode 0400)%s\n", keypath, said_key);
	printf("wrote %s%s\n", confpath, said_conf);
	restart(keypath, confpath);
	rc = 0;
out:
	memset(&t, 0, sizeof(t));
	if (plain)
		memset(plain, 0, plen);
	free(plain);
	free(bundle);
	free(conf);
	return rc;
}
