/* regauth.h: a job owner's registry login, for the pull of its image (docs/containers.md,
 * "Private registries").
 *
 * Where it comes from: the owner's own files on the node, read by a child process that has
 * taken the owner's uid, so root reads nothing the owner could not (a link to another user's
 * file included): ~/.config/containers/auth.json (what `skopeo login` and `podman login` write
 * with --authfile, and what they read), then ~/.docker/config.json (`docker login`). Only the
 * entry for the image's registry, the most specific one ("host:5000/team" before
 * "host:5000"), is written, alone, into a file of root's that skopeo is given with --authfile;
 * nothing else of the owner's files reaches skopeo. Credential helpers (credsStore) are not
 * run: only inline "auth" entries count.
 *
 * A login only opens the registry for the jobs of the user who has it: the tag is resolved for
 * every job with that job's owner's login (pull.c), before a node's cached archive is used.
 */
#ifndef GPOOL_WORKER_STEPD_REGAUTH_H
#define GPOOL_WORKER_STEPD_REGAUTH_H

#include <stddef.h>

#include "common/error.h"
#include "worker/node/account.h"

#define GP_REGAUTH_FILE_MAX (1u << 20) /* the largest auth file read */
#define GP_REGAUTH_MAX	    4096       /* the longest "auth" value kept */

/* The login for the registry host, repository path, in an auth file's JSON (json, len): its
 * "auth" value (base64 of "user:password") into out. Keys are "host", "host/path-prefix" (the
 * longest that matches wins) or, as docker writes them, "https://host" and "http://host/".
 * 1 found, 0 none, -1 when the document is not an auth file or the entry is malformed (err). */
int gp_regauth_pick(const char *json, size_t len, const char *host, const char *path, char *out,
		    size_t outlen, gp_error_t *err);

/* Read the account's auth files as the account (a child process; as is when this process runs
 * as the account already) and write the entry for host/path, alone, to a new file in dir
 * (root's, mode 0600), its path into out. 1 written, 0 the account has no login for it (no
 * file written), -1 with err when a file is unreadable for another reason than its absence or
 * is malformed. from (may be NULL) gets the file's name relative to the home. */
int gp_regauth_write(const struct gp_account *a, const char *host, const char *path,
		     const char *dir, char *out, size_t outlen, const char **from, gp_error_t *err);

#endif
