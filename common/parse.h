/* parse.h: parsers for the values users type: sizes, durations, numbers, host lists.
 * All return 0 on success and -1 with errno = EINVAL (or ERANGE) on bad input; they never
 * accept trailing garbage.
 */
#ifndef GPOOL_PARSE_H
#define GPOOL_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* "4096", "512K", "4G", "1.5T", "6GiB" -> bytes. A bare number is in units of def_unit
 * bytes (Slurm's --mem takes megabytes). */
int gp_parse_size(const char *s, uint64_t def_unit, uint64_t *bytes);

/* Slurm time formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", and "30s", "5m",
 * "2h", "1d"; "0", "infinite" and "unlimited" mean no limit (0). -> seconds. */
int gp_parse_duration(const char *s, uint32_t *seconds);

/* Decimal integers in [min, max]. */
int gp_parse_long(const char *s, long min, long max, long *out);
/* A listen address "HOST:PORT" (the last colon splits): HOST into host (hostlen bytes with
 * its NUL), PORT 1..65535. 0 / -1 (EINVAL: nothing written). */
int gp_parse_listen(const char *s, char *host, size_t hostlen, long *port);

/* Expand "h1,h[2-4,7],x" into names; *names is a malloc'd array of malloc'd strings. */
int gp_hostlist_expand(const char *s, char ***names, int *count);
void gp_strv_free(char **v, int n);

/* Format seconds as Slurm does: "[D-]HH:MM:SS". */
void gp_format_duration(uint32_t seconds, char *buf, int len);
/* Format bytes as "1.5G". */
void gp_format_size(uint64_t bytes, char *buf, int len);

#endif
