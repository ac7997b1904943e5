/* test_plan.c - the planner's arithmetic: equal ranks, a rank twice as fast, a rank too small
 * for its share, a cpu rank with room but little speed, and models that do not fit. */
#include <errno.h>
#include <string.h>

#include "gllm/plan.h"
#include "gllm/test/check.h"

#define MB ((size_t)1 << 20)
#define GB ((size_t)1 << 30)

static size_t layers[12];

static gl_plan_model_t model(void)
{
	for (int i = 0; i < 12; i++)
		layers[i] = 100 * MB;
	return (gl_plan_model_t){.name = "t",
				 .n_layers = 12,
				 .layer_bytes = layers,
				 .kv_bytes_token_layer = 1024,
				 .kv_tokens = 1024, /* 1 MiB a layer */
				 .workspace_bytes = 10 * MB};
}

static gl_plan_rank_t rank(const char *host, size_t mem, double gbs, int card)
{
	gl_plan_rank_t r = {.has_card = card, .mem_free = mem, .speed_gbs = gbs};
	snprintf(r.host, sizeof(r.host), "%s", host);
	snprintf(r.device, sizeof(r.device), "%s", card ? "cuda:0 test card" : "cpu");
	return r;
}

static int count(const gl_plan_t *p, int i)
{
	return p->slot[i].last - p->slot[i].first;
}

/* Ranges are contiguous, in rank order, and cover every layer once. */
static void check_cover(const gl_plan_t *p, int n_layers)
{
	int l = 0;
	for (int i = 0; i < p->nranks; i++) {
		CHECK(p->slot[i].first == l && p->slot[i].last >= l);
		l = p->slot[i].last;
	}
	CHECK(l == n_layers);
}

static void equal_ranks(void)
{
	gl_plan_model_t m = model();
	gl_plan_rank_t r[3] = {rank("a", 8 * GB, 100, 1), rank("b", 8 * GB, 100, 1),
			       rank("c", 8 * GB, 100, 1)};
	gl_plan_t p;
	gp_error_t err;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	check_cover(&p, 12);
	CHECK(count(&p, 0) == 4 && count(&p, 1) == 4 && count(&p, 2) == 4);
	/* 4 layers of 100 MiB + 4 MiB KV + 10 MiB workspace */
	CHECK(p.slot[1].used == 400 * MB + 4 * MB + 10 * MB);
	gl_plan_print(stdout, &m, r, &p);
}

static void one_twice_as_fast(void)
{
	gl_plan_model_t m = model();
	gl_plan_rank_t r[3] = {rank("a", 8 * GB, 200, 1), rank("b", 8 * GB, 100, 1),
			       rank("c", 8 * GB, 100, 1)};
	gl_plan_t p;
	gp_error_t err;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	check_cover(&p, 12);
	CHECK(count(&p, 0) == 6 && count(&p, 1) == 3 && count(&p, 2) == 3);
	/* the same time on each: 600 MiB at 200 GB/s, 300 MiB at 100 GB/s */
	CHECK(p.slot[0].ms > p.slot[1].ms * 0.999 && p.slot[0].ms < p.slot[1].ms * 1.001);
}

static void one_too_small(void)
{
	gl_plan_model_t m = model();
	/* b has room for 2 layers with their KV and the workspace only */
	gl_plan_rank_t r[3] = {rank("a", 8 * GB, 100, 1), rank("b", 230 * MB, 100, 1),
			       rank("c", 8 * GB, 100, 1)};
	gl_plan_t p;
	gp_error_t err;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	check_cover(&p, 12);
	CHECK(count(&p, 1) == 2 && count(&p, 0) == 5 && count(&p, 2) == 5);
	CHECK(p.slot[1].used <= r[1].mem_free);
	/* too small for even one layer: left out */
	r[1].mem_free = 50 * MB;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	check_cover(&p, 12);
	CHECK(count(&p, 1) == 0 && count(&p, 0) == 6 && count(&p, 2) == 6);
	CHECK(p.slot[1].used == 0);
}

static void cpu_rank(void)
{
	gl_plan_model_t m = model();
	/* two small cards (4 layers each) and a cpu with RAM for all, 10x slower */
	gl_plan_rank_t r[3] = {rank("a", 430 * MB, 300, 1), rank("b", 430 * MB, 300, 1),
			       rank("c", 32 * GB, 30, 0)};
	gl_plan_t p;
	gp_error_t err;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	check_cover(&p, 12);
	CHECK(count(&p, 0) == 4 && count(&p, 1) == 4 && count(&p, 2) == 4);
	CHECK(p.bottleneck_ms == p.slot[2].ms); /* the cpu is the slowest stage */
	/* with cards of room for all, the cpu is given nothing: any layer there is slower */
	r[0].mem_free = r[1].mem_free = 8 * GB;
	CHECK(gl_plan_make(&m, r, 3, &p, &err) == 0);
	CHECK(count(&p, 2) == 0 && count(&p, 0) == 6 && count(&p, 1) == 6);
	gl_plan_print(stdout, &m, r, &p);
}

static void does_not_fit(void)
{
	gl_plan_model_t m = model();
	gl_plan_rank_t r[2] = {rank("a", 500 * MB, 100, 1), rank("b", 500 * MB, 100, 1)};
	gl_plan_t p;
	gp_error_t err = {{0}};
	errno = 0;
	CHECK(gl_plan_make(&m, r, 2, &p, &err) == -1 && errno == ENOSPC);
	CHECK(strstr(err.text, "does not fit") && strstr(err.text, "free in all"));
	/* the head rank cannot hold the embedding */
	m.embed_bytes = 600 * MB;
	r[0].mem_free = 550 * MB, r[1].mem_free = 64 * GB;
	CHECK(gl_plan_make(&m, r, 2, &p, &err) == -1 && errno == ENOSPC);
	CHECK(strstr(err.text, "rank 0"));
	/* no speed measured */
	r[1].speed_gbs = 0;
	CHECK(gl_plan_make(&m, r, 2, &p, &err) == -1 && errno == EINVAL);
}

int main(void)
{
	equal_ranks();
	one_twice_as_fast();
	one_too_small();
	cpu_rank();
	does_not_fit();
	printf("ok: plan\n");
	return 0;
}
