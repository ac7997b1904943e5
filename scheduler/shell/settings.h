/* settings.h: gschedd's settings taken from the configuration, at start-up and again on
 * SIGHUP (the keys whose `reload` mask names gschedd; the others wait for a restart and the
 * log says so). The log file is reopened on every SIGHUP, so logrotate's move-then-HUP works.
 */
#ifndef GPOOL_SCHED_SETTINGS_H
#define GPOOL_SCHED_SETTINGS_H

#include "common/error.h"

struct gsched;

/* Copy the configuration's values into the context (and its modules). */
void settings_apply(struct gsched *s);
/* Read the configuration again (s->argc/argv), apply what may change live, reopen the log.
 * A configuration that does not parse is refused as a whole: the old settings stay. 0 / -1. */
int settings_reload(struct gsched *s);
/* The shares and limits into s->fairshare: 0 / -1 with err filled (a value that does not
 * parse: nothing changes). */
int settings_fairshare(struct gsched *s, gp_error_t *err);

#endif
