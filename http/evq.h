/* evq.h - the libevent chores both ends of a connection share (server.c, client_conn.c): a timer
 * armed or disarmed, and the write event wanted or not. */
#ifndef GPOOL_HTTP_EVQ_H
#define GPOOL_HTTP_EVQ_H

#include <stdbool.h>

#include <event2/event.h>

/* TIMER fires in MS milliseconds (replacing any earlier arming); MS <= 0: disarmed. */
void gh_evq_arm(struct event *timer, int ms);
/* Add (ON) or delete EV, unless *WANTED already says so; *WANTED follows. */
void gh_evq_want(struct event *ev, bool *wanted, bool on);
/* Free *EV if there is one and leave it NULL (a connection's teardown, whole or half made). */
void gh_evq_free(struct event **ev);

#endif
