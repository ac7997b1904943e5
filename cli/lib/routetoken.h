/* routetoken.h: the owner's token of a service route (gsub --route-token FILE): made here,
 * kept in FILE (mode 0600, the owner's only), sent to gschedd as its SHA-256 only, so that
 * neither gschedd nor the gateway ever holds it (routetoken.c; docs/interactive.md). */
#ifndef GPOOL_CLI_ROUTETOKEN_H
#define GPOOL_CLI_ROUTETOKEN_H

#include "common/error.h"

/* The token in path (64 hex digits and a newline), made there first when path does not exist
 * (O_EXCL, 0600, 32 random bytes): its SHA-256 as 64 lowercase hex digits into hash. A file
 * that is not a regular file of the caller's, that others may read, or that holds anything
 * else is refused. 0 / -1 (err says why). */
int gp_route_token(const char *path, char hash[65], gp_error_t *err);

#endif
