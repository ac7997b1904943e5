/* imageref.h: a container image's name in a registry (gsub --container HOST[:PORT]/PATH[:TAG]
 * or HOST[:PORT]/PATH@sha256:HEX, docs/containers.md), parsed and checked: it comes from the
 * user and ends up on skopeo's command line on every node, so only the characters the
 * distribution spec allows get through (tests/fuzz/fuzz_imageref.c).
 */
#ifndef GPOOL_COMMON_IMAGEREF_H
#define GPOOL_COMMON_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define GP_IMAGEREF_HOST   262 /* a DNS name (253) and ":65535" */
#define GP_IMAGEREF_PATH   256
#define GP_IMAGEREF_TAG	   129
#define GP_IMAGEREF_DIGEST 72 /* "sha256:" + 64 hex + NUL, rounded */

struct gp_imageref {
	char host[GP_IMAGEREF_HOST];	 /* "registry:5000" (the port kept) */
	char path[GP_IMAGEREF_PATH];	 /* "team/pytorch" */
	char tag[GP_IMAGEREF_TAG];	 /* "" with a digest; "latest" when neither was given */
	char digest[GP_IMAGEREF_DIGEST]; /* "sha256:..." or "" */
};

/* s names an image in a registry: its first component is a host (it has a '.' or a ':port',
 * or is "localhost") and a '/' follows. A file name such as "img.tar" or "./x/img.tar" is not
 * one. */
bool gp_imageref_like(const char *s);

/* Parse s into r. 0 / -1 with errno EINVAL and err saying what is wrong. */
int gp_imageref_parse(const char *s, struct gp_imageref *r, gp_error_t *err);

/* "docker://HOST/PATH:TAG", or "docker://HOST/PATH@DIGEST" when digest (or r's own digest) is
 * given: skopeo's transport name. 0 / -1 (ENAMETOOLONG). */
int gp_imageref_transport(const struct gp_imageref *r, const char *digest, char *buf, size_t len);

/* HOST ("host:port") is in list (comma or space separated entries "host:port", or "host" for
 * every port of it): the registries the admin allows over plain HTTP. */
bool gp_imageref_host_listed(const char *host, const char *list);

#endif
