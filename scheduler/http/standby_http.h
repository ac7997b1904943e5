/* standby_http.h: a standby scheduler's HTTP port (docs/standby.md, "A standby's HTTP"). With
 * http_listen set, a standby binds it too and answers every request at once, so that a REST
 * client, a dashboard or a Prometheus scraper pointed at it learns where the leader is instead
 * of finding nothing there: the REST API (/api/...) and /metrics get 503 with the leader's HTTP
 * address (JSON error ERROR_NOT_LEADER with "leader", and a Gpool-Leader header); any other GET
 * (the dashboard) is redirected there (307); with no leader known, 503 with "leader" empty.
 * Nothing is authenticated or taken in: the answer says only what every standby's
 * ERROR_NOT_LEADER already tells anyone. The leader's HTTP address is the host of its client
 * endpoint with the port of http_listen (the same on every scheduler), https with
 * http_tls_cert. Served from the standby's own loop (standby_http_poll), no thread; destroyed
 * before the scheduler, leading, binds http_listen for its real HTTP server. */
#ifndef GPOOL_SCHED_HTTP_STANDBY_HTTP_H
#define GPOOL_SCHED_HTTP_STANDBY_HTTP_H

#include <stdint.h>

#include "common/config.h"
#include "common/error.h"

struct standby_http;

/* Listen on cfg's http_listen. NULL with err filled when it cannot; NULL with err->text
 * empty when http_listen is not set. */
struct standby_http *standby_http_create(const gp_config_t *cfg, gp_error_t *err);
/* Tests and fuzzing: one answering as if http_listen's port were port, listening nowhere;
 * standby_http_adopt serves a connected non-blocking socket as if accepted (0 / -1, fd
 * closed); standby_http_answered counts the requests answered. */
struct standby_http *standby_http_create_on(const char *port);
int standby_http_adopt(struct standby_http *h, int fd);
uint64_t standby_http_answered(const struct standby_http *h);
/* The leader's client endpoint (tcp://HOST:PORT), "" while none is known. */
void standby_http_set_leader(struct standby_http *h, const char *leader);
/* Serve what is ready now; never blocks. */
void standby_http_poll(struct standby_http *h);
/* Close the port and every connection; takes NULL. */
void standby_http_destroy(struct standby_http **h);

#endif
