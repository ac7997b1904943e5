/* identity.c: a job's owner from the credential's uid, and the nodes that share that account
 * (identity.h). */
#include "scheduler/core/identity.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The name the nodes' agents give uid, when they agree. 1 found, 0 none has it, -1 they differ
 * (why filled). */
static int name_from_nodes(struct nodes *ns, uid_t uid, char *name, size_t len, char *why,
			   size_t wlen)
{
	const char *found = NULL, *where = NULL;
	for (int i = 0; i < nodes_count(ns); i++) {
		const struct node *n = nodes_get(ns, i);
		const char *nm = node_account_name(n, uid);
		if (!nm)
			continue;
		if (found && strcmp(found, nm) != 0) {
			snprintf(
			    why, wlen,
			    "uid %u is '%s' on node %s but '%s' on node %s: the pool needs one "
			    "uid space",
			    (unsigned)uid, found, where, nm, n->name);
			return -1;
		}
		if (!found) {
			found = nm;
			where = n->name;
		}
	}
	if (!found || strlen(found) >= len)
		return 0;
	memcpy(name, found, strlen(found) + 1);
	return 1;
}

int identity_owner(const struct gp_uid_policy *p, struct nodes *ns, identity_lookup_f lookup,
		   uid_t uid, char *name, size_t len, char *why, size_t wlen)
{
	if (lookup(uid, name, len) < 0) {
		int rc = name_from_nodes(ns, uid, name, len, why, wlen);
		if (rc <= 0) {
			if (rc == 0)
				snprintf(why, wlen,
					 "uid %u has no account on the scheduler's PC nor on any "
					 "node",
					 (unsigned)uid);
			errno = ENOENT;
			return -1;
		}
	}
	return p ? gp_uid_policy_check(p, uid, name, why, wlen) : 0;
}

bool identity_node_fits(const struct node *n, uid_t uid, const char *name)
{
	if (!n->accounts_known || uid == 0)
		return true;
	const char *nm = node_account_name(n, uid);
	if (!nm)
		return n->accounts_truncated;
	return name && strcmp(nm, name) == 0;
}
