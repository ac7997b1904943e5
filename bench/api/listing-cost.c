/* listing-cost: the CPU one REST job listing costs each side of gschedd, without a cluster.
 * N pending jobs in a real store and job table; then K times: the loop's part (the JobQuery
 * handler filling N JobInfo and packing the reply, net.c handing it over the inproc pair) and
 * the HTTP thread's part (unpacking the reply, then the JSON: the jansson tree and json_dumps,
 * as before, or api_jobs_text, as now), each timed with CLOCK_THREAD_CPUTIME_ID.
 * usage: listing-cost [N] [K] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "scheduler/http/api_json.h"
#include "scheduler/shell/client.h"
#include "scheduler/core/core.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/http/http.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/store/store.h"
#include "common/u64map.h"
#include "common/util.h"

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000, k = argc > 2 ? atoi(argv[2]) : 20;
	if (n <= 0 || k <= 0) {
		fprintf(stderr, "usage: listing-cost [N] [K]\n");
		return 2;
	}
	char dir[] = "/tmp/gp-listing-cost-XXXXXX";
	gp_error_t err;
	struct gsched s;
	memset(&s, 0, sizeof(s));
	if (!mkdtemp(dir) || !(s.cfg = gp_config_create(GP_SCHED)) ||
	    !(s.store = store_create(dir, "off", 0, &err)) ||
	    !(s.output = output_create(dir, 1 << 20, &err)) || sched_core_init(&s, 1) < 0 ||
	    !(s.net = net_create("inproc://listing-cost", NULL, 1 << 30, 0, &err))) {
		fprintf(stderr, "listing-cost: cannot set up\n");
		return 1;
	}
	void *pa = zmq_socket(net_context(s.net), ZMQ_PAIR);
	void *pb = zmq_socket(net_context(s.net), ZMQ_PAIR);
	if (zmq_bind(pa, "inproc://listing-cost-pair") < 0 ||
	    zmq_connect(pb, "inproc://listing-cost-pair") < 0)
		return 1;
	net_set_local(s.net, pa, HTTP_RID_PREFIX, HTTP_RID_PREFIX_LEN);
	for (int i = 0; i < n; i++) { /* what gp-submit-many makes: /bin/true, one task */
		struct job *j = calloc(1, sizeof(*j));
		j->id = jobs_next_id(s.jobs);
		j->user = strdup("gpool-user");
		j->name = strdup("true");
		j->out_pattern = strdup("");
		j->err_pattern = strdup("");
		j->state = GPOOL__JOB_STATE__PENDING;
		j->submit_time = gp_now();
		j->ntasks = j->cpus_per_task = 1;
		j->durable = true;
		if (jobs_add(s.jobs, j) < 0 || jobs_queue_insert(s.jobs, j) < 0)
			return 1;
	}
	double *loop = calloc((size_t)k, sizeof(double)), *thr = calloc((size_t)k, sizeof(double));
	double *thr2 = calloc((size_t)k, sizeof(double));
	size_t json2_bytes = 0;
	size_t bytes = 0, json_bytes = 0;
	for (int it = 0; it < k; it++) {
		uint8_t rid[HTTP_RID_LEN] = HTTP_RID_PREFIX;
		Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.id = (uint64_t)it + 1;
		m.m_case = GPOOL__MSG__M_JOB_QUERY;
		m.job_query = &q;
		struct req r = {.s = &s, .rid = rid, .rid_len = sizeof(rid), .msg = &m, .node = -1};
		double t0 = cpu_ms();
		client_job_query(&r);
		net_flush(s.net, true);
		loop[it] = cpu_ms() - t0;
		zmq_msg_t f1, f2;
		zmq_msg_init(&f1);
		zmq_msg_init(&f2);
		if (zmq_msg_recv(&f1, pb, 0) < 0 || zmq_msg_recv(&f2, pb, 0) < 0)
			return 1;
		t0 = cpu_ms();
		Gpool__Batch *b = gpool__batch__unpack(NULL, zmq_msg_size(&f2), zmq_msg_data(&f2));
		if (!b || !b->n_msgs || b->msgs[0]->m_case != GPOOL__MSG__M_JOB_QUERY_REPLY)
			return 1;
		const Gpool__JobQueryReply *jr = b->msgs[0]->job_query_reply;
		json_t *a = json_array();
		for (size_t i = 0; i < jr->n_jobs; i++)
			json_array_append_new(a, api_job_json(jr->jobs[i]));
		json_t *doc = json_pack("{s:o}", "jobs", a);
		char *text = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		thr[it] = cpu_ms() - t0;
		t0 = cpu_ms();
		Gpool__Batch *b2 = gpool__batch__unpack(NULL, zmq_msg_size(&f2), zmq_msg_data(&f2));
		gp_buf_t out = {0};
		if (!b2 || api_jobs_text(b2->msgs[0]->job_query_reply, &out) < 0)
			return 1;
		json2_bytes = out.len;
		gp_buf_release(&out);
		gpool__batch__free_unpacked(b2, NULL);
		thr2[it] = cpu_ms() - t0;
		bytes = zmq_msg_size(&f2);
		json_bytes = text ? strlen(text) : 0;
		free(text);
		gpool__batch__free_unpacked(b, NULL);
		zmq_msg_close(&f1);
		zmq_msg_close(&f2);
	}
	qsort(loop, (size_t)k, sizeof(double), cmp);
	qsort(thr, (size_t)k, sizeof(double), cmp);
	qsort(thr2, (size_t)k, sizeof(double), cmp);
	printf("listing of %d pending jobs, %d times: reply %zu bytes protobuf, %zu bytes JSON\n",
	       n, k, bytes, json_bytes);
	printf(
	    "loop (JobQuery handler + pack + hand-over): median %.2f ms cpu, min %.2f, max %.2f\n",
	    loop[k / 2], loop[0], loop[k - 1]);
	printf(
	    "http thread (unpack + jansson + dumps):     median %.2f ms cpu, min %.2f, max %.2f\n",
	    thr[k / 2], thr[0], thr[k - 1]);
	printf("http thread (unpack + api_jobs_text):      median %.2f ms cpu, min %.2f, max %.2f "
	       "(%zu bytes, %s)\n",
	       thr2[k / 2], thr2[0], thr2[k - 1], json2_bytes,
	       json2_bytes == json_bytes ? "same length" : "LENGTH DIFFERS");
	gp_rm_rf(dir);
	return 0;
}
