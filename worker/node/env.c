/* env.c: building a task's environment. */
#include "worker/node/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cards/screen.h"
#include "worker/node/mps.h"

struct envv {
	char **v;
	size_t n, cap;
};

static int valid_name(const char *s)
{
	if (!s || !*s || strchr(s, '='))
		return 0;
	return 1;
}

/* Set name=value, replacing an existing entry. */
static int env_set(struct envv *e, const char *name, const char *value)
{
	size_t nl = strlen(name);
	char *kv;
	if (asprintf(&kv, "%s=%s", name, value ? value : "") < 0)
		return -1;
	for (size_t i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], name, nl) && e->v[i][nl] == '=') {
			free(e->v[i]);
			e->v[i] = kv;
			return 0;
		}
	}
	if (e->n + 2 > e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 64;
		char **nv = realloc(e->v, nc * sizeof(*nv));
		if (!nv) {
			free(kv);
			return -1;
		}
		e->v = nv;
		e->cap = nc;
	}
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
	return 0;
}

static void env_unset(struct envv *e, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], name, nl) && e->v[i][nl] == '=') {
			free(e->v[i]);
			e->v[i] = e->v[--e->n];
			e->v[e->n] = NULL;
			return;
		}
	}
}

static int env_setu(struct envv *e, const char *name, unsigned long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%llu", v);
	return env_set(e, name, b);
}

void gp_env_free(char **env)
{
	if (!env)
		return;
	for (char **p = env; *p; p++)
		free(*p);
	free(env);
}

const char *gp_env_get(char *const *env, const char *name)
{
	size_t nl = strlen(name);
	for (; env && *env; env++)
		if (!strncmp(*env, name, nl) && (*env)[nl] == '=')
			return *env + nl + 1;
	return NULL;
}

/* The task's cards: CUDA_VISIBLE_DEVICES by UUID for NVIDIA cards; HIP_VISIBLE_DEVICES,
 * ROCR_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL by ordinal among the node's AMD cards; GPOOL_GPUS
 * describing each ("node-index:vendor:name:vram"). A task given no card sees none: the
 * variables are set empty whenever the launch lists the node's cards. */
static int bind_cards(struct envv *e, const Gpool__Launch *l, const Gpool__TaskPlacement *t)
{
	if (!l->n_cards)
		return 0;
	char cuda[1024] = "", hip[256] = "", gpus[2048] = "";
	size_t nc = 0, nh = 0, ng = 0;
	for (size_t k = 0; k < t->n_cards; k++) {
		const Gpool__Card *c = NULL;
		int amd_ordinal = 0;
		for (size_t i = 0; i < l->n_cards; i++) {
			if (l->cards[i]->index == t->cards[k]) {
				c = l->cards[i];
				break;
			}
			if (l->cards[i]->vendor == GPOOL__VENDOR__VENDOR_AMD)
				amd_ordinal++;
		}
		if (!c)
			continue;
		if (c->vendor == GPOOL__VENDOR__VENDOR_NVIDIA)
			nc += (size_t)snprintf(cuda + nc, nc < sizeof(cuda) ? sizeof(cuda) - nc : 0,
					       "%s%s", nc ? "," : "", c->uuid);
		else if (c->vendor == GPOOL__VENDOR__VENDOR_AMD)
			nh += (size_t)snprintf(hip + nh, nh < sizeof(hip) ? sizeof(hip) - nh : 0,
					       "%s%d", nh ? "," : "", amd_ordinal);
		ng += (size_t)snprintf(gpus + ng, ng < sizeof(gpus) ? sizeof(gpus) - ng : 0,
				       "%s%u:%s:%s:%lluMiB", ng ? "," : "", c->index,
				       c->vendor == GPOOL__VENDOR__VENDOR_NVIDIA ? "nvidia" : "amd",
				       c->name, (unsigned long long)(c->vram_total >> 20));
	}
	if (nc >= sizeof(cuda) || nh >= sizeof(hip) || ng >= sizeof(gpus))
		return -1;
	int rc = env_set(e, "CUDA_VISIBLE_DEVICES", cuda);
	rc |= env_set(e, "HIP_VISIBLE_DEVICES", hip);
	rc |= env_set(e, "ROCR_VISIBLE_DEVICES", hip);
	rc |= env_set(e, "GPU_DEVICE_ORDINAL", hip);
	rc |= env_set(e, "GPOOL_GPUS", gpus);
	return rc;
}

/* A task of a --gpu-share job (docs/gpu-share.md): its slice of its one card. GPOOL_GPU_BUDGET
 * is the budget in bytes; on an NVIDIA card the task is a client of the card's MPS server
 * (mps.h), held to its budget (pinned device memory) and to its share of the card's SMs. */
static int bind_share(struct envv *e, const struct gp_task_env_ctx *c)
{
	const Gpool__Launch *l = c->launch;
	const Gpool__JobSpec *spec = l->spec;
	static const char *const mps_vars[] = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
					       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
					       "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"};
	if (!spec || !spec->gpu_share || c->task->n_cards != 1) {
		env_unset(e, "GPOOL_GPU_BUDGET");
		return 0;
	}
	for (size_t i = 0; i < sizeof(mps_vars) / sizeof(mps_vars[0]); i++)
		env_unset(e, mps_vars[i]); /* the submitter's own MPS settings: not this card's */
	int rc = env_setu(e, "GPOOL_GPU_BUDGET", spec->gpu_mem_min);
	const Gpool__Card *card = NULL;
	for (size_t i = 0; i < l->n_cards; i++)
		if (l->cards[i]->index == c->task->cards[0])
			card = l->cards[i];
	if (!card || card->vendor != GPOOL__VENDOR__VENDOR_NVIDIA || !c->mps_root)
		return rc;
	char dir[4200], path[4300], v[64];
	if (gp_mps_dir(c->mps_root, card->index, dir, sizeof(dir)) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/pipe", dir);
	rc |= env_set(e, "CUDA_MPS_PIPE_DIRECTORY", path);
	snprintf(path, sizeof(path), "%s/log", dir);
	rc |= env_set(e, "CUDA_MPS_LOG_DIRECTORY", path);
	gp_mps_mem_limit(spec->gpu_mem_min, v, sizeof(v));
	rc |= env_set(e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", v);
	rc |= env_setu(e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
		       gp_mps_thread_pct(spec->gpu_mem_min, card->vram_total));
	return rc;
}

/* An array task's place in its array, under gpool's names and Slurm's (scripts written for
 * sbatch read SLURM_ARRAY_TASK_ID); outside an array none of them is set. */
static int set_array(struct envv *e, const Gpool__Launch *l)
{
	static const char *const prefix[] = {"GPOOL_ARRAY_", "SLURM_ARRAY_"};
	int rc = 0;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
		const struct {
			const char *name;
			uint64_t value;
		} vars[] = {
		    {"JOB_ID", l->array_job_id},	 {"TASK_ID", l->array_task_id},
		    {"TASK_COUNT", l->array_task_count}, {"TASK_MIN", l->array_task_min},
		    {"TASK_MAX", l->array_task_max},
		};
		for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
			char name[64];
			snprintf(name, sizeof(name), "%s%s", prefix[i], vars[k].name);
			if (l->array_job_id)
				rc |= env_setu(e, name, vars[k].value);
			else
				env_unset(e, name);
		}
	}
	return rc;
}

/* What frameworks need to find each other over the network that joins the nodes, rather than
 * over the address the host name resolves to (Debian maps it to 127.0.1.1: gloo then binds
 * loopback and every cross-host connect is refused). Each is set unless the submitter's
 * environment has it, or has the variable in `unless` (Open MPI refuses if_include together
 * with if_exclude). Open MPI gets the subnet, which it accepts as well as a name and which,
 * unlike a name, means the same on every PC (mpirun forwards OMPI_MCA_* to its daemons). */
enum net_value { NET_IFACE, NET_SUBNET };
static const struct {
	const char *name;
	enum net_value value;
	const char *unless;
} net_vars[] = {
    {"GLOO_SOCKET_IFNAME", NET_IFACE, NULL},
    {"NCCL_SOCKET_IFNAME", NET_IFACE, NULL},
    {"TP_SOCKET_IFNAME", NET_IFACE, NULL},
    {"OMPI_MCA_btl_tcp_if_include", NET_SUBNET, "OMPI_MCA_btl_tcp_if_exclude"},
    {"OMPI_MCA_oob_tcp_if_include", NET_SUBNET, "OMPI_MCA_oob_tcp_if_exclude"},
};

static int bind_network(struct envv *e, const char *iface, const char *subnet)
{
	int rc = 0;
	if (iface && *iface)
		rc |= env_set(e, "GPOOL_NET_IFACE", iface);
	else
		env_unset(e, "GPOOL_NET_IFACE");
	for (size_t i = 0; i < sizeof(net_vars) / sizeof(net_vars[0]); i++) {
		const char *v =
		    net_vars[i].value == NET_SUBNET && subnet && *subnet ? subnet : iface;
		if (!v || !*v || gp_env_get(e->v, net_vars[i].name) ||
		    (net_vars[i].unless && gp_env_get(e->v, net_vars[i].unless)))
			continue;
		rc |= env_set(e, net_vars[i].name, v);
	}
	return rc;
}

char **gp_env_build(const struct gp_task_env_ctx *c, gp_error_t *err)
{
	const Gpool__Launch *l = c->launch;
	const Gpool__TaskPlacement *t = c->task;
	const Gpool__JobSpec *spec = l->spec;
	struct envv e = {0};
	int rc = 0;
	if (spec && spec->n_env) {
		for (size_t i = 0; i < spec->n_env && rc == 0; i++)
			if (valid_name(spec->env[i]->name))
				rc = env_set(&e, spec->env[i]->name, spec->env[i]->value);
	} else {
		rc |= env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin");
		rc |= env_set(&e, "HOME", c->account->home);
		rc |= env_set(&e, "USER", c->account->name);
		rc |= env_set(&e, "LOGNAME", c->account->name);
		rc |= env_set(&e, "SHELL", c->account->shell);
	}
	/* before gpool's own names: only what the submitter set counts as theirs */
	rc |= bind_network(&e, c->iface, c->subnet);
	uint32_t cpt = t->n_cpus ? (uint32_t)t->n_cpus
				 : (spec && spec->cpus_per_task ? spec->cpus_per_task : 1);
	char port[16];
	snprintf(port, sizeof(port), "%u", l->master_port);
	rc |= env_setu(&e, "GPOOL_JOB_ID", l->job_id);
	rc |= env_setu(&e, "GPOOL_ATTEMPT", l->attempt);
	rc |= env_setu(&e, "GPOOL_RANK", t->rank);
	rc |= env_setu(&e, "GPOOL_SIZE", l->size);
	rc |= env_setu(&e, "GPOOL_LOCAL_RANK", t->local_rank);
	rc |= env_setu(&e, "GPOOL_LOCAL_SIZE", l->local_size);
	rc |= env_set(&e, "GPOOL_NODELIST", l->nodelist);
	rc |= env_set(&e, "GPOOL_NODENAME", c->node);
	rc |= env_setu(&e, "GPOOL_CPUS_PER_TASK", cpt);
	rc |= env_set(&e, "GPOOL_SCRATCH", c->scratch);
	rc |= env_setu(&e, "RANK", t->rank);
	rc |= env_setu(&e, "WORLD_SIZE", l->size);
	rc |= env_setu(&e, "LOCAL_RANK", t->local_rank);
	rc |= env_setu(&e, "LOCAL_WORLD_SIZE", l->local_size);
	rc |= env_set(&e, "MASTER_ADDR", l->master_addr);
	rc |= env_set(&e, "MASTER_PORT", port);
	if (spec && spec->service && spec->service_port)
		rc |= env_setu(&e, "GPOOL_PORT", spec->service_port);
	else
		env_unset(&e, "GPOOL_PORT");
	/* where ggated serves the service: a server that builds its own links (Jupyter's
	 * base_url) is told it; only a --route-prefix keep service is reached there whole */
	char prefix[300];
	if (spec && spec->service && spec->name && *spec->name && strlen(spec->name) <= 256) {
		/* a replica's job is named SERVICE.INDEX by gschedd: the route is the service's */
		int len = (int)strlen(spec->name);
		const char *dot = strrchr(spec->name, '.');
		if (spec->service_of && dot && dot > spec->name && dot[1] &&
		    strspn(dot + 1, "0123456789") == strlen(dot + 1))
			len = (int)(dot - spec->name);
		snprintf(prefix, sizeof(prefix), "/svc/%.*s/", len, spec->name);
		rc |= env_set(&e, "GPOOL_ROUTE_PREFIX", prefix);
	} else {
		env_unset(&e, "GPOOL_ROUTE_PREFIX");
	}
	/* a socket handed over (task.c fills in LISTEN_PID in the task itself); never one the
	 * submitter's environment names */
	if (spec && spec->service && spec->service_port && spec->service_listen_fd) {
		rc |= env_set(&e, "LISTEN_FDS", "1");
		rc |= env_set(&e, "LISTEN_FDNAMES", "gpool");
		rc |= env_set(&e, "LISTEN_PID", "          ");
	} else {
		env_unset(&e, "LISTEN_FDS");
		env_unset(&e, "LISTEN_FDNAMES");
		env_unset(&e, "LISTEN_PID");
	}
	rc |= bind_cards(&e, l, t);
	rc |= bind_share(&e, c);
	rc |= set_array(&e, l);
	/* a screening job's gcheck writes its result where the agent will read it; in any other
	 * job the name is gpool's, not the submitter's, so the agent never reads what it names */
	char result[4200];
	if (spec && spec->screen && !(spec->chdir && *spec->chdir) && c->scratch &&
	    gp_screen_path(c->scratch, l->attempt, t->rank, result, sizeof(result)) == 0)
		rc |= env_set(&e, "GPOOL_SCREEN_RESULT", result);
	else
		env_unset(&e, "GPOOL_SCREEN_RESULT");
	if (rc || !e.v) {
		char **v = e.v;
		if (v) {
			v[e.n] = NULL;
			gp_env_free(v);
		}
		errno = ENOMEM;
		gp_errprintf(err, "out of memory building the environment");
		return NULL;
	}
	return e.v;
}
