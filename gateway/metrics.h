/* metrics.h: ggated's counters and latency histograms, served as Prometheus text at /metrics
 * (metrics.c). */
#ifndef GPOOL_GATEWAY_METRICS_H
#define GPOOL_GATEWAY_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define GW_BUCKETS 14 /* latency histogram buckets */

struct gw_stats {
	uint64_t requests, errors, retries, count;
	uint64_t bucket[GW_BUCKETS]; /* cumulative counts are computed when printed */
	double sum_sec;
};

struct gw_ctx;
void gw_stats_observe(struct gw_stats *s, double sec);
/* The metrics as Prometheus text (NULL: out of memory); the caller frees it. */
char *gw_metrics_text(struct gw_ctx *c, size_t *len);

#endif
