/* api_json.h: the REST API's JSON, both ways, and its routes. Pure functions (no state, no
 * I/O), so the HTTP thread can call them and the fuzz harnesses can drive them:
 *   api_route_parse  method + request target -> which operation, its path arguments, query
 *   api_spec_parse   a submitted job (JSON) -> a JobSpec, checked for types and ranges
 *   api_*_json       scheduler replies -> JSON documents (docs/api.yaml describes them)
 */
#ifndef GPOOL_SCHED_API_JSON_H
#define GPOOL_SCHED_API_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"
#include "common/util.h"

enum api_op {
	API_NONE = 0,
	API_NODES,   /* GET  /api/v1/nodes */
	API_CARDS,   /* GET  /api/v1/cards */
	API_JOBS,    /* GET  /api/v1/jobs */
	API_JOB,     /* GET  /api/v1/jobs/{id} */
	API_OUTPUT,  /* GET  /api/v1/jobs/{id}/output */
	API_SUBMIT,  /* POST /api/v1/jobs */
	API_CANCEL,  /* POST /api/v1/jobs/{id}/cancel (DELETE /api/v1/jobs/{id} too) */
	API_HOLD,    /* POST /api/v1/jobs/{id}/hold */
	API_RELEASE, /* POST /api/v1/jobs/{id}/release */
	API_DRAIN,   /* POST /api/v1/nodes/{name}/drain */
	API_RESUME,  /* POST /api/v1/nodes/{name}/resume */
	API_TOKEN,   /* POST /api/v1/token */
	API_WHOAMI,  /* GET  /api/v1/whoami */
	API_HISTORY, /* GET  /api/v1/history: the dashboard's charts */
	API_METRICS, /* GET  /metrics (no authentication) */
	API_STATIC,  /* GET  / and /web/... (no authentication) */
};

struct api_route {
	enum api_op op;
	uint64_t id;	/* API_JOB..API_RELEASE */
	char node[64];	/* API_DRAIN, API_RESUME */
	char file[128]; /* API_STATIC: a file name in web_dir ("index.html") */
	/* query parameters, where the operation reads them */
	bool all, wait;
	char user[33];
	Gpool__JobState state; /* 0: any */
	uint32_t limit;
	uint64_t offset, offset_err;
	uint32_t max_bytes;
};

/* Route one request. method: "GET", "POST", "DELETE"; target: "/api/v1/jobs?all=1".
 * Returns 0 with *r filled, or the HTTP status to answer (404 no such path, 405 wrong method,
 * 400 a bad path argument or query value) with why filled. */
int api_route_parse(const char *method, const char *target, struct api_route *r, char *why,
		    size_t len);

/* A submission: {"argv": ["hostname"], "ntasks": 2, ...} (docs/api.yaml: JobSpec). Returns a
 * JobSpec to free with api_spec_free, or NULL with why filled. */
Gpool__JobSpec *api_spec_parse(const char *body, size_t len, char *why, size_t why_len);
void api_spec_free(Gpool__JobSpec *sp);

/* {"reason": "...", "card": 0} of a drain (both optional). 0 / -1 with why filled. */
int api_drain_parse(const char *body, size_t len, char *reason, size_t reason_len, int *card,
		    char *why, size_t why_len);

json_t *api_job_json(const Gpool__JobInfo *j);
/* {"jobs": [...]} of a listing, each job as api_job_json gives it (the same keys, values and
 * omissions), written straight into out without a jansson tree: several times cheaper for a
 * listing of thousands (api_jobs_text.c). 0 / -1 (out of memory). */
int api_jobs_text(const Gpool__JobQueryReply *r, gp_buf_t *out);
json_t *api_node_json(const Gpool__NodeInfo *n);
json_t *api_card_json(const char *node, const Gpool__Card *c);
json_t *api_output_json(const Gpool__LogQueryReply *r);
json_t *api_results_json(const Gpool__JobControlReply *r);
json_t *api_history_json(const Gpool__OpsHistoryReply *r);
/* "ERROR_PERMISSION": the wire name of a scheduler error code. */
const char *api_error_code(Gpool__ErrorCode code);
/* {"error": {"code": "ERROR_PERMISSION", "message": text}} */
json_t *api_error_json(const char *code, const char *text);
/* The HTTP status of a scheduler error code. */
int api_status_of(Gpool__ErrorCode code);

#endif
