/* nodes.c - the agents gschedd knows: registration, each node's cards, CPUs, drain and
 * membership; nodes are never removed, so an index stays valid (nodes.h) */
#include "scheduler/core/clock.h"
#include "scheduler/core/nodes.h"

#include <stdlib.h>
#include <string.h>

#include "scheduler/core/card_state.h"
#include "common/util.h"

/* A card's owned state from the store, waiting for its node's first registration. */
struct saved_card {
	char *node;
	Gpool__Card *card;
};

/* A node the store knows, from before this process, and its drain. */
struct expected {
	char *name;
	bool drain;
	char *reason;
	bool member; /* not DOWN when that gschedd last wrote it: it counts for the majority */
};

struct nodes {
	struct node **v;
	int n, cap;
	struct saved_card *saved;
	size_t nsaved;
	struct expected *expected;
	size_t nexpected;
	const struct sched_clock *clock; /* the time a node is heard at (nodes_use_clock) */
};

struct nodes *nodes_create(void)
{
	return calloc(1, sizeof(struct nodes));
}

void nodes_use_clock(struct nodes *ns, const struct sched_clock *c)
{
	ns->clock = c;
}

static void free_cards(struct node *n)
{
	for (size_t i = 0; i < n->n_cards; i++)
		gpool__card__free_unpacked(n->cards[i], NULL);
	free(n->cards);
	n->cards = NULL;
	n->n_cards = 0;
}

void nodes_destroy(struct nodes **p)
{
	if (!p || !*p)
		return;
	for (int i = 0; i < (*p)->n; i++) {
		struct node *n = (*p)->v[i];
		free(n->name);
		free(n->addr);
		free(n->peer_ep);
		free(n->version);
		free(n->reason);
		free(n->drain_reason);
		free(n->cpu_busy);
		free(n->free_ports);
		free(n->accounts);
		free_cards(n);
		free(n);
	}
	for (size_t i = 0; i < (*p)->nsaved; i++) {
		free((*p)->saved[i].node);
		gpool__card__free_unpacked((*p)->saved[i].card, NULL);
	}
	free((*p)->saved);
	for (size_t i = 0; i < (*p)->nexpected; i++) {
		free((*p)->expected[i].name);
		free((*p)->expected[i].reason);
	}
	free((*p)->expected);
	free((*p)->v);
	free(*p);
	*p = NULL;
}

int nodes_count(const struct nodes *ns)
{
	return ns->n;
}

struct node *nodes_get(struct nodes *ns, int idx)
{
	return idx >= 0 && idx < ns->n ? ns->v[idx] : NULL;
}

const char *nodes_name(struct nodes *ns, int idx)
{
	struct node *n = nodes_get(ns, idx);
	return n ? n->name : "?";
}

int nodes_find(const struct nodes *ns, const char *name)
{
	for (int i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i]->name, name) == 0)
			return i;
	return -1;
}

int nodes_find_rid(const struct nodes *ns, const uint8_t *rid, size_t len)
{
	for (int i = 0; i < ns->n; i++)
		if (ns->v[i]->rid_len == len && memcmp(ns->v[i]->rid, rid, len) == 0)
			return i;
	return -1;
}

/* A drain's reason as shown: the one given, else "drained". */
static const char *drain_text(const char *reason)
{
	return reason && *reason ? reason : "drained";
}

int nodes_expect(struct nodes *ns, const char *name, bool drain, const char *reason, bool member)
{
	struct expected *v = realloc(ns->expected, (ns->nexpected + 1) * sizeof(*v));
	if (!v)
		return -1;
	ns->expected = v;
	struct expected *e = &v[ns->nexpected];
	e->drain = drain;
	e->member = member;
	e->name = strdup(name);
	e->reason = drain ? strdup(drain_text(reason)) : NULL;
	if (!e->name || (drain && !e->reason)) {
		free(e->name);
		free(e->reason);
		return -1;
	}
	ns->nexpected++;
	return 0;
}

int node_set_drain(struct node *n, bool drain, const char *reason)
{
	char *why = drain ? strdup(drain_text(reason)) : NULL;
	char *shown = drain ? strdup(why ? why : "") : NULL;
	if (drain && (!why || !shown)) {
		free(why);
		free(shown);
		return -1;
	}
	n->drain = drain;
	free(n->drain_reason);
	n->drain_reason = why;
	free(n->reason);
	n->reason = shown;
	if (n->state != GPOOL__NODE_STATE__NODE_DOWN &&
	    n->state != GPOOL__NODE_STATE__NODE_STATE_UNKNOWN)
		n->state = drain ? GPOOL__NODE_STATE__NODE_DRAINED : GPOOL__NODE_STATE__NODE_UP;
	return 0;
}

size_t nodes_expected_count(const struct nodes *ns)
{
	return ns->nexpected;
}

const char *nodes_expected_member(const struct nodes *ns, size_t i)
{
	if (i >= ns->nexpected || !ns->expected[i].member ||
	    nodes_find(ns, ns->expected[i].name) >= 0)
		return NULL;
	return ns->expected[i].name;
}

bool nodes_capacity_known(const struct nodes *ns)
{
	if (ns->n == 0)
		return false;
	for (int i = 0; i < ns->n; i++)
		if (!ns->v[i]->registered)
			return false;
	for (size_t i = 0; i < ns->nexpected; i++)
		if (nodes_find(ns, ns->expected[i].name) < 0)
			return false; /* placeholders and registered nodes were checked above */
	return true;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int nodes_restore_card(struct nodes *ns, const char *name, Gpool__Card *card)
{
	struct saved_card *v = realloc(ns->saved, (ns->nsaved + 1) * sizeof(*v));
	char *node = strdup(name);
	if (v)
		ns->saved = v;
	if (!v || !node) {
		free(node);
		gpool__card__free_unpacked(card, NULL);
		return -1;
	}
	ns->saved[ns->nsaved].node = node;
	ns->saved[ns->nsaved++].card = card;
	return 0;
}

/* The cards a registration of n is matched against: its last report, or before its first one
 * in this process the store's. The array is the caller's to free, not the cards. */
static Gpool__Card **known_cards(const struct nodes *ns, const struct node *n, size_t *count)
{
	Gpool__Card **known = calloc(ns->nsaved + n->n_cards + 1, sizeof(*known));
	*count = 0;
	if (!known)
		return NULL;
	if (n->cards_reported) {
		memcpy(known, n->cards, n->n_cards * sizeof(*known));
		*count = n->n_cards;
		return known;
	}
	for (size_t i = 0; i < ns->nsaved; i++)
		if (strcmp(ns->saved[i].node, n->name) == 0)
			known[(*count)++] = ns->saved[i].card;
	return known;
}

/* The store's cards of a node are used up by its first registration. */
static void forget_saved(struct nodes *ns, const char *name)
{
	size_t k = 0;
	for (size_t i = 0; i < ns->nsaved; i++) {
		if (strcmp(ns->saved[i].node, name) == 0) {
			free(ns->saved[i].node);
			gpool__card__free_unpacked(ns->saved[i].card, NULL);
		} else {
			ns->saved[k++] = ns->saved[i];
		}
	}
	ns->nsaved = k;
}

/* Cards are copied by packing and unpacking: the node owns its copies. Each copy keeps the
 * owned state of the known card it matches. 0 / -1 (nothing changed). */
static int take_cards(struct nodes *ns, struct node *n, const Gpool__NodeRegister *reg)
{
	size_t nknown = 0;
	Gpool__Card **known = NULL;
	Gpool__Card **cards = calloc(reg->n_cards ? reg->n_cards : 1, sizeof(*cards));
	if (!cards)
		return -1;
	for (size_t i = 0; i < reg->n_cards; i++) {
		size_t len = gpool__card__get_packed_size(reg->cards[i]);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf)
			goto fail;
		gpool__card__pack(reg->cards[i], buf);
		cards[i] = gpool__card__unpack(NULL, len, buf);
		free(buf);
		if (!cards[i])
			goto fail;
	}
	if (!(known = known_cards(ns, n, &nknown)) ||
	    cards_keep_state(n->name, cards, reg->n_cards, known, nknown) < 0)
		goto fail;
	free(known);
	if (n->cards_reported)
		free_cards(n);
	else
		forget_saved(ns, n->name);
	n->cards = cards;
	n->n_cards = reg->n_cards;
	n->cards_reported = true;
	return 0;
fail:
	free(known);
	for (size_t i = 0; i < reg->n_cards; i++)
		if (cards[i])
			gpool__card__free_unpacked(cards[i], NULL);
	free(cards);
	return -1;
}

static struct node *node_new(struct nodes *ns, const char *name, int *idx)
{
	if (ns->n == ns->cap) {
		int nc = ns->cap ? ns->cap * 2 : 16;
		struct node **nv = realloc(ns->v, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		ns->v = nv;
		ns->cap = nc;
	}
	struct node *n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	/* drained before a scheduler restart: still drained */
	for (size_t i = 0; i < ns->nexpected; i++)
		if (ns->expected[i].drain && strcmp(ns->expected[i].name, name) == 0 &&
		    !(n->drain_reason = strdup(ns->expected[i].reason))) {
			free(n->name);
			free(n);
			return NULL;
		}
	n->drain = n->drain_reason != NULL;
	*idx = ns->n;
	ns->v[ns->n++] = n;
	return n;
}

int nodes_placeholder(struct nodes *ns, const char *name)
{
	int idx = nodes_find(ns, name);
	if (idx >= 0)
		return idx;
	struct node *n = node_new(ns, name, &idx);
	if (!n)
		return -1;
	n->state = GPOOL__NODE_STATE__NODE_STATE_UNKNOWN;
	n->reason = strdup("waiting for its agent after a scheduler restart");
	n->addr = strdup("");
	n->peer_ep = strdup("");
	n->version = strdup("");
	n->last_heard_ms = sched_clock_mono_ms(ns->clock);
	n->last_heard = sched_clock_now(ns->clock);
	return idx;
}

void node_cpus_mark(struct node *n, uint32_t first, uint32_t count)
{
	for (uint32_t i = first; i < first + count && i < n->cpus; i++) {
		if (!n->cpu_busy[i]) {
			n->cpu_busy[i] = 1;
			n->cpus_used++;
		}
	}
}

void node_set_free_ports(struct node *n, const uint32_t *ports, size_t n_ports)
{
	if (n_ports > 4096)
		n_ports = 4096;
	uint32_t *v = n_ports ? malloc(n_ports * sizeof(*v)) : NULL;
	size_t k = 0;
	for (size_t i = 0; v && i < n_ports; i++)
		if (ports[i] && ports[i] <= 65535)
			v[k++] = ports[i];
	free(n->free_ports);
	n->free_ports = v;
	n->n_free_ports = k;
}

static int by_uid(const void *a, const void *b)
{
	uid_t x = ((const struct node_account *)a)->uid, y = ((const struct node_account *)b)->uid;
	return x < y ? -1 : x > y;
}

void node_set_accounts(struct node *n, const Gpool__NodeRegister *reg)
{
	Gpool__Account *const *v = reg->accounts;
	size_t count = reg->n_accounts;
	bool truncated = reg->accounts_truncated;
	if (count > 4096) {
		count = 4096;
		truncated = true;
	}
	struct node_account *a = count ? calloc(count, sizeof(*a)) : NULL;
	size_t k = 0;
	for (size_t i = 0; a && i < count; i++) {
		if (!v[i]->name || !*v[i]->name || strlen(v[i]->name) >= sizeof(a[k].name))
			continue;
		a[k].uid = v[i]->uid;
		memcpy(a[k].name, v[i]->name, strlen(v[i]->name) + 1);
		k++;
	}
	if (k)
		qsort(a, k, sizeof(*a), by_uid);
	free(n->accounts);
	n->accounts = a;
	n->n_accounts = k;
	n->accounts_known = reg->accounts_listed;
	n->accounts_truncated = truncated || (count && !a);
}

const char *node_account_name(const struct node *n, uid_t uid)
{
	struct node_account key = {.uid = uid};
	const struct node_account *a =
	    n->n_accounts ? bsearch(&key, n->accounts, n->n_accounts, sizeof(key), by_uid) : NULL;
	return a ? a->name : NULL;
}

int nodes_register(struct nodes *ns, const Gpool__NodeRegister *reg, const uint8_t *rid,
		   size_t rid_len)
{
	if (rid_len > sizeof(((struct node *)0)->rid))
		return -1;
	int idx = nodes_find(ns, reg->name);
	struct node *n = idx < 0 ? node_new(ns, reg->name, &idx) : ns->v[idx];
	if (!n || take_cards(ns, n, reg) < 0)
		return -1;
	/* the offered CPU count may change only while nothing runs there */
	if (!n->cpu_busy || (n->cpus_used == 0 && n->cpus != reg->cpus)) {
		uint8_t *busy = calloc(reg->cpus ? reg->cpus : 1, 1);
		if (!busy)
			return -1;
		free(n->cpu_busy);
		n->cpu_busy = busy;
		n->cpus = reg->cpus;
	}
	n->mem_mb = reg->mem_mb;
	free(n->addr);
	n->addr = dup_or_empty(reg->addr);
	free(n->peer_ep);
	n->peer_ep = dup_or_empty(reg->peer_endpoint);
	free(n->version);
	n->version = dup_or_empty(reg->version);
	n->psu_watts = reg->psu_watts;
	node_set_free_ports(n, reg->free_ports, reg->n_free_ports);
	node_set_accounts(n, reg);
	n->card_busy &= n->n_cards >= 64 ? ~0ULL : (1ULL << n->n_cards) - 1;
	memcpy(n->rid, rid, rid_len);
	n->rid_len = rid_len;
	n->state = n->drain ? GPOOL__NODE_STATE__NODE_DRAINED : GPOOL__NODE_STATE__NODE_UP;
	n->last_heard_ms = sched_clock_mono_ms(ns->clock);
	n->last_heard = sched_clock_now(ns->clock);
	return idx;
}

int node_cpus_alloc(struct node *n, uint32_t count)
{
	if (count == 0 || n->cpus_used + count > n->cpus)
		return -1;
	uint32_t run = 0;
	for (uint32_t i = 0; i < n->cpus; i++) {
		run = n->cpu_busy[i] ? 0 : run + 1;
		if (run == count) {
			uint32_t first = i + 1 - count;
			memset(n->cpu_busy + first, 1, count);
			n->cpus_used += count;
			return (int)first;
		}
	}
	return -1;
}

void node_cpus_free(struct node *n, uint32_t first, uint32_t count)
{
	if (first + count > n->cpus)
		return;
	for (uint32_t i = first; i < first + count; i++) {
		if (n->cpu_busy[i]) {
			n->cpu_busy[i] = 0;
			n->cpus_used--;
		}
	}
}

bool node_usable(const struct node *n)
{
	/* a PC whose owner is active takes no new job (owner.h) */
	return n->state == GPOOL__NODE_STATE__NODE_UP && !n->drain && !n->owner.active;
}

void nodeinfo_fill(Gpool__NodeInfo *ni, const struct node *n)
{
	gpool__node_info__init(ni);
	ni->name = n->name;
	ni->addr = n->addr;
	ni->state = n->state;
	ni->reason = n->reason ? n->reason : "";
	ni->cpus = n->cpus;
	ni->mem_mb = n->mem_mb;
	ni->cpus_used = n->cpus_used;
	ni->mem_used_mb = n->mem_used_mb;
	ni->cards = n->cards;
	ni->n_cards = n->n_cards;
	/* who shares which card: placement's own view (docs/gpu-share.md) */
	for (size_t k = 0; k < n->n_cards && k < MAX_CARDS_PER_NODE; k++) {
		Gpool__Card *c = n->cards[k];
		bool shared = n->share.tasks[k] > 0;
		c->shared_slices = n->share.tasks[k];
		c->shared_budget = shared ? n->share.used[k] : 0;
		c->shared_uid = shared ? n->share.uid[k] : 0;
	}
	ni->last_heard = n->last_heard;
	ni->psu_watts = n->psu_watts;
	ni->version = n->version;
	ni->owner = n->owner.known ? (Gpool__OwnerState *)&n->owner.msg : NULL;
}
