/* test_env.c: a task's environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "worker/node/env.h"

static Gpool__Launch launch;
static Gpool__JobSpec spec;
static Gpool__TaskPlacement tp;
static uint32_t cpus[2] = {4, 5};
static struct gp_account acct = {1000, 1000, "alice", "/home/alice", "/bin/bash"};

static void setup_launch(void)
{
	gpool__launch__init(&launch);
	gpool__job_spec__init(&spec);
	gpool__task_placement__init(&tp);
	launch.job_id = 42;
	launch.attempt = 3;
	launch.spec = &spec;
	launch.size = 8;
	launch.local_size = 2;
	launch.nodelist = "h1,h2,h3,h4";
	launch.master_addr = "198.18.0.11";
	launch.master_port = 29500;
	tp.rank = 5;
	tp.local_rank = 1;
	tp.cpus = cpus;
	tp.n_cpus = 2;
}

/* Each of the n NAME, VALUE pairs of want is set so in e. */
static void expect_vars(char **e, const char *const want[][2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *v = gp_env_get(e, want[i][0]);
		if (!v)
			fail_msg("%s missing", want[i][0]);
		assert_string_equal(v, want[i][1]);
	}
}

/* The environment ctx describes, which must build. */
static char **build(const struct gp_task_env_ctx *c)
{
	gp_error_t err;
	char **e = gp_env_build(c, &err);
	assert_non_null(e);
	return e;
}

static void all_variables(void **state)
{
	setup_launch();
	struct gp_task_env_ctx c = {&launch, &tp,  &acct, "h3", "/var/tmp/gpool/job42",
				    NULL,    NULL, NULL};
	char **e = build(&c);
	static const char *const want[][2] = {
	    {"GPOOL_JOB_ID", "42"},
	    {"GPOOL_ATTEMPT", "3"},
	    {"GPOOL_RANK", "5"},
	    {"GPOOL_SIZE", "8"},
	    {"GPOOL_LOCAL_RANK", "1"},
	    {"GPOOL_LOCAL_SIZE", "2"},
	    {"GPOOL_NODELIST", "h1,h2,h3,h4"},
	    {"GPOOL_NODENAME", "h3"},
	    {"GPOOL_CPUS_PER_TASK", "2"},
	    {"GPOOL_SCRATCH", "/var/tmp/gpool/job42"},
	    {"RANK", "5"},
	    {"WORLD_SIZE", "8"},
	    {"LOCAL_RANK", "1"},
	    {"LOCAL_WORLD_SIZE", "2"},
	    {"MASTER_ADDR", "198.18.0.11"},
	    {"MASTER_PORT", "29500"},
	    /* no submitter environment: a minimal one */
	    {"PATH", "/usr/local/bin:/usr/bin:/bin"},
	    {"HOME", "/home/alice"},
	    {"USER", "alice"},
	    {"SHELL", "/bin/bash"},
	};
	expect_vars(e, want, sizeof(want) / sizeof(want[0]));
	gp_env_free(e);
}

static void submitter_env(void **state)
{
	setup_launch();
	Gpool__EnvVar v[4];
	Gpool__EnvVar *vp[4];
	const char *kv[][2] = {{"PATH", "/opt/x/bin:/usr/bin"},
			       {"RANK", "999"}, /* gpool's value wins */
			       {"FOO", "a=b"},
			       {"BAD=NAME", "x"}};
	for (int i = 0; i < 4; i++) {
		gpool__env_var__init(&v[i]);
		v[i].name = (char *)kv[i][0];
		v[i].value = (char *)kv[i][1];
		vp[i] = &v[i];
	}
	spec.env = vp;
	spec.n_env = 4;
	tp.n_cpus = 0;
	spec.cpus_per_task = 3;
	struct gp_task_env_ctx c = {&launch, &tp, &acct, "h3", "/s", NULL, NULL, NULL};
	char **e = build(&c);
	assert_string_equal(gp_env_get(e, "PATH"), "/opt/x/bin:/usr/bin");
	assert_string_equal(gp_env_get(e, "RANK"), "5");
	assert_string_equal(gp_env_get(e, "FOO"), "a=b");
	assert_string_equal(gp_env_get(e, "GPOOL_CPUS_PER_TASK"), "3");
	assert_null(gp_env_get(e, "HOME")); /* not invented when the submitter exported an env */
	size_t n = 0, ranks = 0;
	for (char **p = e; *p; p++, n++) {
		assert_null(strstr(*p, "BAD=NAME"));
		if (!strncmp(*p, "RANK=", 5))
			ranks++;
	}
	assert_int_equal(ranks, 1);
	gp_env_free(e);
}

static Gpool__Card *card(uint32_t index, Gpool__Vendor v, const char *name, const char *uuid)
{
	static Gpool__Card c[8];
	static int n;
	Gpool__Card *x = &c[n++ % 8];
	gpool__card__init(x);
	x->index = index;
	x->vendor = v;
	x->name = (char *)name;
	x->uuid = (char *)uuid;
	x->vram_total = 6ULL << 30;
	return x;
}

static void card_binding(void **state)
{
	setup_launch();
	Gpool__Card *cards[] = {
	    card(0, GPOOL__VENDOR__VENDOR_NVIDIA, "GTX 1660", "GPU-aaaa"),
	    card(1, GPOOL__VENDOR__VENDOR_AMD, "RX 6700 XT", ""),
	    card(2, GPOOL__VENDOR__VENDOR_NVIDIA, "RTX 3060", "GPU-bbbb"),
	    card(3, GPOOL__VENDOR__VENDOR_AMD, "RX 6600", ""),
	};
	launch.cards = cards;
	launch.n_cards = 4;
	uint32_t mine[] = {2, 3};
	tp.cards = mine;
	tp.n_cards = 2;
	struct gp_task_env_ctx c = {&launch, &tp, &acct, "h3", "/tmp", NULL, NULL, NULL};
	char **env = build(&c);
	assert_string_equal(gp_env_get(env, "CUDA_VISIBLE_DEVICES"), "GPU-bbbb");
	/* the RX 6600 is the node's second AMD card: ordinal 1 */
	assert_string_equal(gp_env_get(env, "HIP_VISIBLE_DEVICES"), "1");
	assert_string_equal(gp_env_get(env, "ROCR_VISIBLE_DEVICES"), "1");
	assert_string_equal(gp_env_get(env, "GPU_DEVICE_ORDINAL"), "1");
	assert_string_equal(gp_env_get(env, "GPOOL_GPUS"),
			    "2:nvidia:RTX 3060:6144MiB,3:amd:RX 6600:6144MiB");
	gp_env_free(env);
	/* no card asked: none visible */
	tp.n_cards = 0;
	env = build(&c);
	assert_string_equal(gp_env_get(env, "CUDA_VISIBLE_DEVICES"), "");
	assert_string_equal(gp_env_get(env, "HIP_VISIBLE_DEVICES"), "");
	gp_env_free(env);
	/* a node without cards sets none of them */
	launch.n_cards = 0;
	env = build(&c);
	assert_null(gp_env_get(env, "CUDA_VISIBLE_DEVICES"));
	gp_env_free(env);
	launch.cards = NULL;
	tp.cards = NULL;
}

/* a --gpu-share task: its budget, and on an NVIDIA card the MPS client settings of its card */
static void shared_card(void **state)
{
	setup_launch();
	Gpool__Card *cards[] = {
	    card(0, GPOOL__VENDOR__VENDOR_NVIDIA, "GTX 1660", "GPU-aaaa"),
	    card(1, GPOOL__VENDOR__VENDOR_AMD, "RX 6700 XT", ""),
	};
	launch.cards = cards;
	launch.n_cards = 2;
	spec.gpu_share = 1;
	spec.gpu_mem_min = 3ULL << 29; /* 1.5 GiB of the 6 GiB card */
	uint32_t mine[] = {0};
	tp.cards = mine;
	tp.n_cards = 1;
	struct gp_task_env_ctx c = {&launch, &tp,  &acct, "h3",
				    "/tmp",  NULL, NULL,  "/var/lib/gp/mps"};
	char **env = build(&c);
	const char *const want[][2] = {
	    {"GPOOL_GPU_BUDGET", "1610612736"},
	    {"CUDA_VISIBLE_DEVICES", "GPU-aaaa"},
	    {"CUDA_MPS_PIPE_DIRECTORY", "/var/lib/gp/mps/card0/pipe"},
	    {"CUDA_MPS_LOG_DIRECTORY", "/var/lib/gp/mps/card0/log"},
	    {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=1536M"},
	    {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"},
	};
	expect_vars(env, want, sizeof(want) / sizeof(want[0]));
	gp_env_free(env);
	/* an AMD card: the budget, no MPS */
	mine[0] = 1;
	env = build(&c);
	assert_string_equal(gp_env_get(env, "GPOOL_GPU_BUDGET"), "1610612736");
	assert_null(gp_env_get(env, "CUDA_MPS_PIPE_DIRECTORY"));
	assert_null(gp_env_get(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
	gp_env_free(env);
	/* an exclusive job: none of it */
	spec.gpu_share = 0;
	mine[0] = 0;
	env = build(&c);
	assert_null(gp_env_get(env, "GPOOL_GPU_BUDGET"));
	assert_null(gp_env_get(env, "CUDA_MPS_PIPE_DIRECTORY"));
	gp_env_free(env);
	spec.gpu_mem_min = 0;
	launch.cards = NULL;
	tp.cards = NULL;
}

static void set_spec_env(Gpool__EnvVar *v, Gpool__EnvVar **vp, const char *const (*kv)[2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		gpool__env_var__init(&v[i]);
		v[i].name = (char *)kv[i][0];
		v[i].value = (char *)kv[i][1];
		vp[i] = &v[i];
	}
	spec.env = vp;
	spec.n_env = n;
}

/* the interface that joins the nodes, named for every framework that would otherwise pick
 * one from the host name */
static void network_variables(void **state)
{
	setup_launch();
	struct gp_task_env_ctx c = {&launch, &tp, &acct, "h3", "/s", "eth0", "198.18.0.0/24", NULL};
	char **e = build(&c);
	static const char *const want[][2] = {
	    {"GPOOL_NET_IFACE", "eth0"},
	    {"GLOO_SOCKET_IFNAME", "eth0"},
	    {"NCCL_SOCKET_IFNAME", "eth0"},
	    {"TP_SOCKET_IFNAME", "eth0"},
	    {"OMPI_MCA_btl_tcp_if_include", "198.18.0.0/24"},
	    {"OMPI_MCA_oob_tcp_if_include", "198.18.0.0/24"},
	};
	expect_vars(e, want, sizeof(want) / sizeof(want[0]));
	gp_env_free(e);
	/* no subnet known: Open MPI gets the name */
	c.subnet = NULL;
	e = build(&c);
	assert_string_equal(gp_env_get(e, "OMPI_MCA_oob_tcp_if_include"), "eth0");
	gp_env_free(e);
	/* no interface known: none of them, nothing empty */
	c.iface = NULL;
	e = build(&c);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_null(gp_env_get(e, want[i][0]));
	gp_env_free(e);
}

/* what the submitter set wins; an if_exclude of theirs keeps gpool's if_include out */
static void network_submitter_wins(void **state)
{
	setup_launch();
	static const char *const kv[][2] = {
	    {"GLOO_SOCKET_IFNAME", "ib0"},
	    {"NCCL_SOCKET_IFNAME", "^docker,lo"},
	    {"OMPI_MCA_btl_tcp_if_exclude", "lo,docker0"},
	    {"GPOOL_NET_IFACE", "forged"},
	};
	Gpool__EnvVar v[4];
	Gpool__EnvVar *vp[4];
	set_spec_env(v, vp, kv, 4);
	struct gp_task_env_ctx c = {&launch, &tp, &acct, "h3", "/s", "eth0", "198.18.0.0/24", NULL};
	char **e = build(&c);
	assert_string_equal(gp_env_get(e, "GLOO_SOCKET_IFNAME"), "ib0");
	assert_string_equal(gp_env_get(e, "NCCL_SOCKET_IFNAME"), "^docker,lo");
	assert_string_equal(gp_env_get(e, "TP_SOCKET_IFNAME"), "eth0");
	assert_string_equal(gp_env_get(e, "OMPI_MCA_btl_tcp_if_exclude"), "lo,docker0");
	assert_null(gp_env_get(e, "OMPI_MCA_btl_tcp_if_include"));
	assert_string_equal(gp_env_get(e, "OMPI_MCA_oob_tcp_if_include"), "198.18.0.0/24");
	/* gpool's own name is gpool's */
	assert_string_equal(gp_env_get(e, "GPOOL_NET_IFACE"), "eth0");
	size_t gloo = 0;
	for (char **p = e; *p; p++)
		gloo += !strncmp(*p, "GLOO_SOCKET_IFNAME=", 19);
	assert_int_equal(gloo, 1);
	gp_env_free(e);
	spec.env = NULL;
	spec.n_env = 0;
}

/* only a screening job is told where its result goes; a submitter cannot name the file */
static void screening_result(void **state)
{
	setup_launch();
	Gpool__EnvVar v;
	Gpool__EnvVar *vp[1] = {&v};
	gpool__env_var__init(&v);
	v.name = "GPOOL_SCREEN_RESULT";
	v.value = "/etc/forged";
	spec.env = vp;
	spec.n_env = 1;
	struct gp_task_env_ctx c = {&launch, &tp,  &acct, "h3", "/var/tmp/gpool/job42",
				    NULL,    NULL, NULL};
	char **e = build(&c);
	assert_null(gp_env_get(e, "GPOOL_SCREEN_RESULT"));
	gp_env_free(e);
	spec.screen = 1;
	e = build(&c);
	assert_string_equal(gp_env_get(e, "GPOOL_SCREEN_RESULT"),
			    "/var/tmp/gpool/job42/.gpool-screen.3.5.json");
	gp_env_free(e);
	spec.chdir = "/home/alice"; /* not the scratch directory: no result */
	e = build(&c);
	assert_null(gp_env_get(e, "GPOOL_SCREEN_RESULT"));
	gp_env_free(e);
}

/* A service replica's port and route prefix: the service's name (gschedd names the replica's
 * job SERVICE.INDEX), dots in the service's own name kept; nothing of either elsewhere, a
 * submitter's own value included */
static void service_route_prefix(void **state)
{
	(void)state;
	setup_launch();
	Gpool__EnvVar v;
	Gpool__EnvVar *vp[1] = {&v};
	gpool__env_var__init(&v);
	v.name = "GPOOL_ROUTE_PREFIX";
	v.value = "/svc/forged/";
	spec.env = vp;
	spec.n_env = 1;
	struct gp_task_env_ctx c = {&launch, &tp,  &acct, "h3", "/var/tmp/gpool/job42",
				    NULL,    NULL, NULL};
	char **e = build(&c);
	assert_null(gp_env_get(e, "GPOOL_ROUTE_PREFIX"));
	assert_null(gp_env_get(e, "GPOOL_PORT"));
	gp_env_free(e);
	static const struct {
		const char *name, *want;
		uint64_t service_of;
	} cases[] = {{"nb.0", "/svc/nb/", 7},
		     {"web.v2.13", "/svc/web.v2/", 7},
		     {"nb", "/svc/nb/", 0}, /* the service's own job */
		     {"x.y", "/svc/x.y/", 7}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		spec.service = 1;
		spec.service_port = 8080;
		spec.name = (char *)cases[i].name;
		spec.service_of = cases[i].service_of;
		e = build(&c);
		assert_string_equal(gp_env_get(e, "GPOOL_ROUTE_PREFIX"), cases[i].want);
		assert_string_equal(gp_env_get(e, "GPOOL_PORT"), "8080");
		gp_env_free(e);
	}
	spec.service = 0, spec.service_port = 0, spec.name = NULL, spec.service_of = 0;
}

/* An array task's place, under gpool's and Slurm's names; a submitter's own value of one of
 * them does not survive outside an array. */
static void array_variables(void **state)
{
	setup_launch();
	launch.array_job_id = 40;
	launch.array_task_id = 7;
	launch.array_task_count = 20;
	launch.array_task_min = 0;
	launch.array_task_max = 95;
	struct gp_task_env_ctx c = {&launch, &tp,  &acct, "h3", "/var/tmp/gpool/job42",
				    NULL,    NULL, NULL};
	char **e = build(&c);
	static const char *const want[][2] = {
	    {"ARRAY_JOB_ID", "40"},  {"ARRAY_TASK_ID", "7"},   {"ARRAY_TASK_COUNT", "20"},
	    {"ARRAY_TASK_MIN", "0"}, {"ARRAY_TASK_MAX", "95"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "GPOOL_%s", want[i][0]);
		assert_string_equal(gp_env_get(e, name), want[i][1]);
		snprintf(name, sizeof(name), "SLURM_%s", want[i][0]);
		assert_string_equal(gp_env_get(e, name), want[i][1]);
	}
	gp_env_free(e);
	Gpool__EnvVar v;
	Gpool__EnvVar *vp[1] = {&v};
	gpool__env_var__init(&v);
	v.name = "SLURM_ARRAY_TASK_ID";
	v.value = "3";
	spec.env = vp;
	spec.n_env = 1;
	launch.array_job_id = 0;
	e = build(&c);
	assert_null(gp_env_get(e, "SLURM_ARRAY_TASK_ID"));
	assert_null(gp_env_get(e, "GPOOL_ARRAY_JOB_ID"));
	gp_env_free(e);
	spec.env = NULL;
	spec.n_env = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(all_variables),	      cmocka_unit_test(submitter_env),
	    cmocka_unit_test(card_binding),	      cmocka_unit_test(shared_card),
	    cmocka_unit_test(screening_result),	      cmocka_unit_test(network_variables),
	    cmocka_unit_test(network_submitter_wins), cmocka_unit_test(array_variables),
	    cmocka_unit_test(service_route_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
