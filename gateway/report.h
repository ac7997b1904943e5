/* report.h: the replicas' health and request counts, sent to gschedd with each poll
 * (report.c). */
#ifndef GPOOL_GATEWAY_REPORT_H
#define GPOOL_GATEWAY_REPORT_H

#include "proto/gpool.pb-c.h"

struct gw_ctx;
struct gw_report;
/* The loop's side: a report of every replica known, left for the next poll. */
void gw_report_publish(struct gw_ctx *c);
/* The discovery thread's side: the latest report (NULL: none new) put into q; free it with
 * gw_report_free after the call. */
struct gw_report *gw_report_take(struct gw_ctx *c, Gpool__ServiceQuery *q);
void gw_report_free(struct gw_report *rep);

#endif
