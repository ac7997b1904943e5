/* metrics.h: what gschedd exposes at /metrics, in Prometheus' text format: nodes by state,
 * cards by state and grade, each card's utilization, temperature and power (from the agents'
 * heartbeats), jobs by state, the queue's length, a histogram of scheduling latency (submit to
 * start of a job's first attempt), messages in and out, energy and its cost per user and per
 * job. The loop owns it: the HTTP thread asks with OpsMetricsQuery. */
#ifndef GPOOL_SCHED_METRICS_H
#define GPOOL_SCHED_METRICS_H

#include <stddef.h>

struct gsched;
struct job;
struct req;

struct metrics *metrics_create(void);
void metrics_destroy(struct metrics **m);

/* A job started (latency of its first attempt) or reached a final state (its energy). */
/* Watch the core's job events (events.h): started and ended jobs. 0 / -1. */
int metrics_subscribe(struct gsched *s);
void metrics_job_started(struct gsched *s, const struct job *j);
void metrics_job_ended(struct gsched *s, const struct job *j);
/* The rendered text (malloc'd), NULL when out of memory. */
char *metrics_render(struct gsched *s);
/* The OpsMetricsQuery handler. */
void metrics_query(struct req *r);
/* Take a history sample when one is due (called from the loop's tick). */
void metrics_tick(struct gsched *s);
/* The OpsHistoryQuery handler: the last hour, a sample every 10 s. */
void metrics_history(struct req *r);

#endif
