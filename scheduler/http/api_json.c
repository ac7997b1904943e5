/* api_json.c: the REST API's routes and JSON (see api_json.h). */
#include "scheduler/http/api_json.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"

#define MAX_ARGV 4096
#define MAX_LIST 1024

/* ---- routes ---- */

struct route {
	const char *method;
	const char *pattern; /* {id}: a job id, {node}: a node name */
	enum api_op op;
};

static const struct route routes[] = {
    {"GET", "/api/v1/nodes", API_NODES},
    {"GET", "/api/v1/cards", API_CARDS},
    {"GET", "/api/v1/jobs", API_JOBS},
    {"POST", "/api/v1/jobs", API_SUBMIT},
    {"GET", "/api/v1/jobs/{id}", API_JOB},
    {"DELETE", "/api/v1/jobs/{id}", API_CANCEL},
    {"GET", "/api/v1/jobs/{id}/output", API_OUTPUT},
    {"POST", "/api/v1/jobs/{id}/cancel", API_CANCEL},
    {"POST", "/api/v1/jobs/{id}/hold", API_HOLD},
    {"POST", "/api/v1/jobs/{id}/release", API_RELEASE},
    {"POST", "/api/v1/nodes/{node}/drain", API_DRAIN},
    {"POST", "/api/v1/nodes/{node}/resume", API_RESUME},
    {"POST", "/api/v1/token", API_TOKEN},
    {"GET", "/api/v1/whoami", API_WHOAMI},
    {"GET", "/api/v1/history", API_HISTORY},
    {"GET", "/metrics", API_METRICS},
};

static int errp(char *why, size_t len, int status, const char *fmt, const char *arg)
{
	snprintf(why, len, fmt, arg);
	return status;
}

static bool valid_name(const char *s, size_t n)
{
	if (!n || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	if (!n || n > 19)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Does path (n bytes) match pattern? Fills the {id} / {node} argument. */
static bool match(const char *pattern, const char *path, size_t n, struct api_route *r, int *bad)
{
	const char *p = pattern, *q = path, *end = path + n;
	while (*p) {
		if (*p == '{') {
			const char *close = strchr(p, '}');
			size_t seg =
			    (size_t)(memchr(q, '/', (size_t)(end - q))
					 ? (const char *)memchr(q, '/', (size_t)(end - q)) - q
					 : end - q);
			if (!strncmp(p, "{id}", 4)) {
				if (parse_u64(q, seg, &r->id) < 0 || r->id == 0)
					*bad = 1;
			} else {
				if (!valid_name(q, seg))
					*bad = 1;
				else
					memcpy(r->node, q, seg), r->node[seg] = '\0';
			}
			p = close + 1;
			q += seg;
			continue;
		}
		if (q == end || *p != *q)
			return false;
		p++, q++;
	}
	return q == end;
}

static int hexval(int c)
{
	return isdigit(c)		? c - '0'
	       : (c >= 'a' && c <= 'f') ? c - 'a' + 10
	       : (c >= 'A' && c <= 'F') ? c - 'A' + 10
					: -1;
}

/* Percent-decode n bytes of s into out (NUL-terminated). -1: bad escape or too long. */
static int unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			int h = hexval((unsigned char)s[i + 1]),
			    l = hexval((unsigned char)s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			c = h * 16 + l;
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

static int query_param(struct api_route *r, const char *k, const char *v, char *why, size_t len)
{
	uint64_t n;
	size_t vl = strlen(v);
	if (!strcmp(k, "all") || !strcmp(k, "wait")) {
		bool b;
		if (!strcmp(v, "1") || !strcmp(v, "true") || !*v)
			b = true;
		else if (!strcmp(v, "0") || !strcmp(v, "false"))
			b = false;
		else
			return errp(why, len, 400, "invalid boolean '%.64s'", v);
		*(k[0] == 'a' ? &r->all : &r->wait) = b;
	} else if (!strcmp(k, "user")) {
		if (!valid_name(v, vl) || vl > 32)
			return errp(why, len, 400, "invalid user '%.64s'", v);
		memcpy(r->user, v, vl + 1);
	} else if (!strcmp(k, "state")) {
		int st = gp_job_state_parse(v);
		if (st < 0)
			return errp(why, len, 400, "invalid job state '%.64s'", v);
		r->state = (Gpool__JobState)st;
	} else if (!strcmp(k, "limit") || !strcmp(k, "max_bytes")) {
		if (parse_u64(v, vl, &n) < 0 || n > 1000000000)
			return errp(why, len, 400, "invalid number '%.64s'", v);
		*(k[0] == 'l' ? &r->limit : &r->max_bytes) = (uint32_t)n;
	} else if (!strcmp(k, "offset") || !strcmp(k, "offset_err")) {
		if (parse_u64(v, vl, &n) < 0)
			return errp(why, len, 400, "invalid offset '%.64s'", v);
		*(strcmp(k, "offset") ? &r->offset_err : &r->offset) = n;
	} else if (!strcmp(k, "token")) {
		/* the dashboard's token in the URL: read by the HTTP layer */
	} else {
		return errp(why, len, 400, "unknown query parameter '%.64s'", k);
	}
	return 0;
}

static int parse_query(struct api_route *r, const char *q, char *why, size_t len)
{
	while (*q) {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		char k[32], v[256];
		size_t kl = eq ? (size_t)(eq - q) : n;
		if (unescape(q, kl, k, sizeof(k)) < 0 ||
		    unescape(eq ? eq + 1 : q + n, eq ? n - kl - 1 : 0, v, sizeof(v)) < 0)
			return errp(why, len, 400, "%s", "invalid query string");
		if (*k) {
			int st = query_param(r, k, v, why, len);
			if (st)
				return st;
		}
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

int api_route_parse(const char *method, const char *target, struct api_route *r, char *why,
		    size_t len)
{
	memset(r, 0, sizeof(*r));
	size_t n = strcspn(target, "?#");
	const char *q = target[n] == '?' ? target + n + 1 : "";
	if (n == 0 || target[0] != '/')
		return errp(why, len, 400, "%s", "invalid request target");
	/* the dashboard: / is index.html, /web/NAME a file of web_dir */
	if (!strcmp(method, "GET") && (n == 1 || (n > 5 && !strncmp(target, "/web/", 5)))) {
		const char *f = n == 1 ? "index.html" : target + 5;
		size_t fl = n == 1 ? strlen(f) : n - 5;
		if (fl >= sizeof(r->file))
			return errp(why, len, 404, "%s", "no such file");
		for (size_t i = 0; i < fl; i++)
			if (!isalnum((unsigned char)f[i]) && !strchr("-_.", f[i]))
				return errp(why, len, 404, "%s", "no such file");
		if (f[0] == '.')
			return errp(why, len, 404, "%s", "no such file");
		memcpy(r->file, f, fl);
		r->file[fl] = '\0';
		r->op = API_STATIC;
		return 0;
	}
	bool path_found = false;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int bad = 0;
		struct api_route t = {0};
		if (!match(routes[i].pattern, target, n, &t, &bad))
			continue;
		path_found = true;
		if (strcmp(routes[i].method, method) != 0)
			continue;
		if (bad)
			return errp(why, len, 400, "%s", "invalid job id or node name in the path");
		*r = t;
		r->op = routes[i].op;
		return parse_query(r, q, why, len);
	}
	if (path_found)
		return errp(why, len, 405, "method %s not allowed here", method);
	return errp(why, len, 404, "%s", "no such path");
}

/* ---- a submitted job ---- */

enum ftype { F_STR, F_U32, F_I32, F_U64, F_BOOL, F_LIST };

struct field {
	const char *name;
	enum ftype type;
	size_t off, count_off; /* count_off: F_LIST's n_ field */
	int64_t min, max;      /* numbers; strings: max length */
};

#define O(f) offsetof(Gpool__JobSpec, f)
static const struct field spec_fields[] = {
    {"name", F_STR, O(name), 0, 0, 256},
    {"argv", F_LIST, O(argv), O(n_argv), 1, MAX_ARGV},
    {"ntasks", F_U32, O(ntasks), 0, 1, 1000000},
    {"nodes_min", F_U32, O(nodes_min), 0, 0, 1000000},
    {"nodes_max", F_U32, O(nodes_max), 0, 0, 1000000},
    {"cpus_per_task", F_U32, O(cpus_per_task), 0, 1, 4096},
    {"mem_per_node_mb", F_U64, O(mem_per_node_mb), 0, 0, (int64_t)1 << 40},
    {"time_limit_sec", F_U32, O(time_limit_sec), 0, 0, 2000000000},
    {"priority", F_I32, O(priority), 0, -10000, 10000},
    {"hold", F_BOOL, O(hold), 0, 0, 1},
    {"nodelist", F_LIST, O(nodelist), O(n_nodelist), 0, MAX_LIST},
    {"exclude", F_LIST, O(exclude), O(n_exclude), 0, MAX_LIST},
    {"output", F_STR, O(output), 0, 0, 256},
    {"error", F_STR, O(error), 0, 0, 256},
    {"chdir", F_STR, O(chdir), 0, 0, 4096},
    {"no_requeue", F_BOOL, O(no_requeue), 0, 0, 1},
    {"gpus_per_task", F_U32, O(gpus_per_task), 0, 0, 64},
    {"gpus_total", F_U32, O(gpus_total), 0, 0, 100000},
    {"gpus_per_node", F_U32, O(gpus_per_node), 0, 0, 64},
    {"gpu_mem_min", F_U64, O(gpu_mem_min), 0, 0, (int64_t)1 << 50},
    {"gpu_model", F_STR, O(gpu_model), 0, 0, 256},
    {"gpu_cc_min", F_STR, O(gpu_cc_min), 0, 0, 16},
    {"gpu_mixed", F_BOOL, O(gpu_mixed), 0, 0, 1},
};
#undef O
#define NFIELDS (sizeof(spec_fields) / sizeof(spec_fields[0]))

void api_spec_free(Gpool__JobSpec *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct field *f = &spec_fields[i];
		char *base = (char *)sp;
		if (f->type == F_STR) {
			char *s = *(char **)(base + f->off);
			if (s != protobuf_c_empty_string)
				free(s);
		} else if (f->type == F_LIST) {
			char **v = *(char ***)(base + f->off);
			size_t n = *(size_t *)(base + f->count_off);
			for (size_t k = 0; k < n; k++)
				free(v[k]);
			free(v);
		}
	}
	for (size_t k = 0; k < sp->n_env; k++) {
		free(sp->env[k]->name);
		free(sp->env[k]->value);
		free(sp->env[k]);
	}
	free(sp->env);
	free(sp);
}

static int set_field(Gpool__JobSpec *sp, const struct field *f, json_t *v, char *why, size_t len)
{
	char *base = (char *)sp;
	switch (f->type) {
	case F_STR: {
		if (!json_is_string(v) || json_string_length(v) > (size_t)f->max ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return errp(why, len, -1, "'%s' must be a string (without NUL)", f->name);
		char *s = strdup(json_string_value(v));
		if (!s)
			return errp(why, len, -1, "%s", "out of memory");
		*(char **)(base + f->off) = s;
		return 0;
	}
	case F_BOOL:
		if (!json_is_boolean(v))
			return errp(why, len, -1, "'%s' must be true or false", f->name);
		*(protobuf_c_boolean *)(base + f->off) = json_is_true(v);
		return 0;
	case F_U32:
	case F_I32:
	case F_U64: {
		if (!json_is_integer(v) || json_integer_value(v) < f->min ||
		    json_integer_value(v) > f->max)
			return errp(why, len, -1, "'%s' must be an integer in range", f->name);
		json_int_t n = json_integer_value(v);
		if (f->type == F_U32)
			*(uint32_t *)(base + f->off) = (uint32_t)n;
		else if (f->type == F_I32)
			*(int32_t *)(base + f->off) = (int32_t)n;
		else
			*(uint64_t *)(base + f->off) = (uint64_t)n;
		return 0;
	}
	case F_LIST: {
		size_t n = json_is_array(v) ? json_array_size(v) : 0;
		if (!json_is_array(v) || (int64_t)n < f->min || (int64_t)n > f->max)
			return errp(why, len, -1, "'%s' must be an array of strings", f->name);
		char **list = calloc(n ? n : 1, sizeof(*list));
		if (!list)
			return errp(why, len, -1, "%s", "out of memory");
		*(char ***)(base + f->off) = list;
		for (size_t k = 0; k < n; k++) {
			json_t *e = json_array_get(v, k);
			if (!json_is_string(e) || json_string_length(e) > 65536 ||
			    strlen(json_string_value(e)) != json_string_length(e))
				return errp(why, len, -1, "'%s' must be an array of strings",
					    f->name);
			if (!(list[k] = strdup(json_string_value(e))))
				return errp(why, len, -1, "%s", "out of memory");
			*(size_t *)(base + f->count_off) = k + 1;
		}
		return 0;
	}
	}
	return -1;
}

static int set_env(Gpool__JobSpec *sp, json_t *v, char *why, size_t len)
{
	if (!json_is_object(v) || json_object_size(v) > 4096)
		return errp(why, len, -1, "%s", "'env' must be an object of strings");
	size_t n = json_object_size(v);
	if (!(sp->env = calloc(n ? n : 1, sizeof(*sp->env))))
		return errp(why, len, -1, "%s", "out of memory");
	const char *k;
	json_t *e;
	json_object_foreach(v, k, e)
	{
		if (!json_is_string(e) || !*k || strchr(k, '=') ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return errp(why, len, -1, "%s", "'env' must be an object of strings");
		Gpool__EnvVar *ev = calloc(1, sizeof(*ev));
		if (!ev)
			return errp(why, len, -1, "%s", "out of memory");
		gpool__env_var__init(ev);
		sp->env[sp->n_env++] = ev;
		if (!(ev->name = strdup(k)) || !(ev->value = strdup(json_string_value(e))))
			return errp(why, len, -1, "%s", "out of memory");
	}
	return 0;
}

Gpool__JobSpec *api_spec_parse(const char *body, size_t len, char *why, size_t why_len)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(why, why_len, "invalid JSON: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	Gpool__JobSpec *sp = NULL;
	if (!json_is_object(root)) {
		snprintf(why, why_len, "a job must be a JSON object");
		goto out;
	}
	if (!(sp = calloc(1, sizeof(*sp)))) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	gpool__job_spec__init(sp);
	/* strings start empty but freeable by api_spec_free's rule */
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v)
	{
		const struct field *f = NULL;
		for (size_t i = 0; i < NFIELDS; i++)
			if (!strcmp(spec_fields[i].name, k))
				f = &spec_fields[i];
		int rc;
		if (f) {
			rc = set_field(sp, f, v, why, why_len);
		} else if (!strcmp(k, "env")) {
			rc = set_env(sp, v, why, why_len);
		} else if (!strcmp(k, "gpu_vendor")) {
			int vd = json_is_string(v) ? gp_vendor_parse(json_string_value(v)) : -1;
			rc = vd < 0 ? errp(why, why_len, -1, "%s", "invalid 'gpu_vendor'") : 0;
			if (vd >= 0)
				sp->gpu_vendor = (Gpool__Vendor)vd;
		} else {
			rc = errp(why, why_len, -1, "unknown field '%.64s'", k);
		}
		if (rc < 0) {
			api_spec_free(sp);
			sp = NULL;
			goto out;
		}
	}
	if (!sp->n_argv) {
		snprintf(why, why_len, "'argv' is required");
		api_spec_free(sp);
		sp = NULL;
	}
out:
	json_decref(root);
	return sp;
}

int api_drain_parse(const char *body, size_t len, char *reason, size_t reason_len, int *card,
		    char *why, size_t why_len)
{
	*card = -1;
	reason[0] = '\0';
	if (len == 0)
		return 0;
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return errp(why, why_len, -1, "%s", "the body must be a JSON object");
	}
	int rc = 0;
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v)
	{
		if (!strcmp(k, "reason") && json_is_string(v) &&
		    json_string_length(v) < reason_len &&
		    strlen(json_string_value(v)) == json_string_length(v)) {
			memcpy(reason, json_string_value(v), json_string_length(v) + 1);
		} else if (!strcmp(k, "card") && json_is_integer(v) && json_integer_value(v) >= 0 &&
			   json_integer_value(v) < 64) {
			*card = (int)json_integer_value(v);
		} else {
			rc = errp(why, why_len, -1, "invalid field '%.64s'", k);
			break;
		}
	}
	json_decref(root);
	return rc;
}

/* ---- replies as JSON ---- */

static json_t *strlist(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *api_job_json(const Gpool__JobInfo *j)
{
	const Gpool__JobSpec *sp = j->spec;
	json_t *o = json_pack(
	    "{s:I, s:s, s:s, s:I, s:s, s:I, s:s, s:f, s:i, s:s, s:f, s:f, s:f}", "id",
	    (json_int_t)j->id, "name", sp && sp->name ? sp->name : "", "user",
	    j->user ? j->user : "", "uid", (json_int_t)j->uid, "state", gp_job_state_name(j->state),
	    "attempt", (json_int_t)j->attempt, "reason", j->reason ? j->reason : "", "submit_time",
	    j->submit_time, "exit_code", j->exit_code, "nodelist", j->nodelist ? j->nodelist : "",
	    "start_time", j->start_time, "end_time", j->end_time, "energy_j", j->energy_j);
	if (!o)
		return NULL;
	if (sp) {
		json_object_set_new(o, "argv", strlist(sp->argv, sp->n_argv));
		json_object_set_new(o, "ntasks", json_integer(sp->ntasks));
		json_object_set_new(o, "cpus_per_task", json_integer(sp->cpus_per_task));
		json_object_set_new(o, "gpus_per_task", json_integer(sp->gpus_per_task));
		json_object_set_new(o, "time_limit_sec", json_integer(sp->time_limit_sec));
		json_object_set_new(o, "priority", json_integer(sp->priority));
	}
	json_object_set_new(o, "cpu_sec", json_real(j->cpu_sec));
	json_object_set_new(o, "max_rss_kb", json_integer((json_int_t)j->max_rss_kb));
	json_t *tasks = json_array();
	for (size_t i = 0; i < j->n_tasks; i++) {
		const Gpool__TaskPlacement *t = j->tasks[i];
		json_t *cards = json_array();
		for (size_t c = 0; c < t->n_cards; c++)
			json_array_append_new(cards, json_integer(t->cards[c]));
		json_array_append_new(tasks,
				      json_pack("{s:i, s:s, s:o}", "rank", (int)t->rank, "node",
						t->node ? t->node : "", "cards", cards));
	}
	json_object_set_new(o, "tasks", tasks);
	return o;
}

json_t *api_card_json(const char *node, const Gpool__Card *c)
{
	return json_pack("{s:s, s:i, s:s, s:s, s:I, s:I, s:s, s:s, s:i, s:i, s:i, s:s, s:s, s:s, "
			 "s:f, s:b, s:f}",
			 "node", node, "index", (int)c->index, "vendor", gp_vendor_name(c->vendor),
			 "name", c->name ? c->name : "", "vram_total", (json_int_t)c->vram_total,
			 "vram_free", (json_int_t)c->vram_free, "arch", c->arch ? c->arch : "",
			 "api_version", c->api_version ? c->api_version : "", "power_limit_w",
			 (int)c->power_limit_w, "temperature_c", (int)c->temperature_c,
			 "utilization_pct", (int)c->utilization_pct, "state",
			 gp_card_state_name(c->state), "state_reason",
			 c->state_reason ? c->state_reason : "", "grade", c->grade ? c->grade : "",
			 "throughput", c->throughput, "fake", (int)c->fake, "power_w", c->power_w);
}

json_t *api_node_json(const Gpool__NodeInfo *n)
{
	json_t *jobs = json_array(), *cards = json_array();
	for (size_t i = 0; i < n->n_jobs; i++)
		json_array_append_new(jobs, json_integer((json_int_t)n->jobs[i]));
	for (size_t i = 0; i < n->n_cards; i++)
		json_array_append_new(cards, api_card_json(n->name, n->cards[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:i, s:f, s:s, s:o, s:o}",
			 "name", n->name ? n->name : "", "addr", n->addr ? n->addr : "", "state",
			 gp_node_state_name(n->state), "reason", n->reason ? n->reason : "", "cpus",
			 (int)n->cpus, "cpus_used", (int)n->cpus_used, "mem_mb",
			 (json_int_t)n->mem_mb, "mem_used_mb", (json_int_t)n->mem_used_mb,
			 "psu_watts", (int)n->psu_watts, "last_heard", n->last_heard, "version",
			 n->version ? n->version : "", "jobs", jobs, "cards", cards);
}

json_t *api_output_json(const Gpool__LogQueryReply *r)
{
	return json_pack("{s:s%, s:s%, s:I, s:I, s:b, s:s, s:i}", "out",
			 r->out.data ? (const char *)r->out.data : "", r->out.len, "err",
			 r->err.data ? (const char *)r->err.data : "", r->err.len, "next_offset",
			 (json_int_t)r->next_offset, "next_offset_err",
			 (json_int_t)r->next_offset_err, "done", (int)r->done, "state",
			 gp_job_state_name(r->state), "exit_code", r->exit_code);
}

json_t *api_results_json(const Gpool__JobControlReply *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < r->n_results; i++) {
		const Gpool__JobResult *x = r->results[i];
		json_array_append_new(a, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)x->id,
						   "code", api_error_code(x->code), "text",
						   x->text ? x->text : ""));
	}
	return json_pack("{s:o}", "results", a);
}

json_t *api_history_json(const Gpool__OpsHistoryReply *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < r->n_samples; i++) {
		const Gpool__OpsSample *x = r->samples[i];
		json_array_append_new(
		    a, json_pack("{s:f, s:f, s:f, s:i, s:i, s:i, s:i}", "time", x->time,
				 "utilization", x->utilization, "watts", x->watts, "cards_busy",
				 (int)x->cards_busy, "cards", (int)x->cards, "jobs_running",
				 (int)x->jobs_running, "jobs_pending", (int)x->jobs_pending));
	}
	return json_pack("{s:o}", "samples", a);
}

const char *api_error_code(Gpool__ErrorCode code)
{
	const ProtobufCEnumValue *v =
	    protobuf_c_enum_descriptor_get_value(&gpool__error_code__descriptor, (int)code);
	return v ? v->name : "ERROR_UNEXPECTED";
}

json_t *api_error_json(const char *code, const char *text)
{
	return json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", text);
}

static const struct {
	Gpool__ErrorCode code;
	int status;
} statuses[] = {
    {GPOOL__ERROR_CODE__ERROR_NONE, 200},      {GPOOL__ERROR_CODE__ERROR_AUTH, 401},
    {GPOOL__ERROR_CODE__ERROR_REPLAY, 401},    {GPOOL__ERROR_CODE__ERROR_EXPIRED, 401},
    {GPOOL__ERROR_CODE__ERROR_MALFORMED, 400}, {GPOOL__ERROR_CODE__ERROR_TOO_LARGE, 413},
    {GPOOL__ERROR_CODE__ERROR_RATE, 429},      {GPOOL__ERROR_CODE__ERROR_INVALID, 400},
    {GPOOL__ERROR_CODE__ERROR_NOT_FOUND, 404}, {GPOOL__ERROR_CODE__ERROR_PERMISSION, 403},
    {GPOOL__ERROR_CODE__ERROR_STATE, 409},     {GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, 503},
};

int api_status_of(Gpool__ErrorCode code)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].code == code)
			return statuses[i].status;
	return 500;
}
