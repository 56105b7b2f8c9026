/*
 * Per-client state of the server; see quota.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quota.h"

void
bft_quota_init(struct bft_quotas *cs, const struct bft_config *cfg,
    unsigned self, unsigned max_conns, unsigned max_stores,
    uint64_t window_ms)
{
	memset(cs, 0, sizeof *cs);
	cs->cfg = cfg;
	cs->self = self;
	cs->max_conns = max_conns ? max_conns : BFT_DEFAULT_CLIENT_CONNS;
	cs->max_stores = max_stores ? max_stores : BFT_DEFAULT_CLIENT_STORES;
	cs->window_ms = window_ms ? window_ms : BFT_DEFAULT_STORE_WINDOW_MS;
}

static void
client_free(struct bft_client_quota *cl)
{
	free(cl->pend);
	free(cl);
}

void
bft_quota_fini(struct bft_quotas *cs)
{
	struct bft_client_quota *cl;

	while ((cl = cs->head) != NULL) {
		cs->head = cl->next;
		client_free(cl);
	}
}

/*
 * Who pk is: a listed client, or another server (bftblk.conf never
 * gives a client a server's key).  Fills name and role; false when pk
 * is neither, this server's own key included.
 */
static bool
lookup(const struct bft_quotas *cs, const uint8_t *pk,
    char name[BFT_NAME_LEN + 1], enum bft_role *role)
{
	const struct bft_client_ident *ci = bft_config_find_client(cs->cfg, pk);
	int j;

	if (ci != NULL) {
		strcpy(name, ci->name);
		*role = ci->role;
		return true;
	}
	j = bft_config_find_server(cs->cfg, pk);
	if (j < 0 || (unsigned)j == cs->self)
		return false;
	snprintf(name, BFT_NAME_LEN + 1, "server-%d", j);
	*role = BFT_ROLE_PEER;
	return true;
}

struct bft_client_quota *
bft_quota_get(struct bft_quotas *cs, const uint8_t *pk, bool *oom)
{
	char name[BFT_NAME_LEN + 1];
	struct bft_client_quota *cl;
	enum bft_role role;

	*oom = false;
	if (!lookup(cs, pk, name, &role))
		return NULL;
	for (cl = cs->head; cl != NULL; cl = cl->next)
		if (memcmp(cl->pk, pk, 32) == 0)
			break;
	if (cl == NULL) {
		if ((cl = calloc(1, sizeof *cl)) == NULL) {
			*oom = true;
			return NULL;
		}
		memcpy(cl->pk, pk, 32);
		cl->next = cs->head;
		cs->head = cl;
	}
	/* A reload may have renamed the key or changed its role. */
	strcpy(cl->name, name);
	cl->role = role;
	cl->listed = true;
	return cl;
}

static void
unlink_client(struct bft_quotas *cs, struct bft_client_quota *cl)
{
	struct bft_client_quota **pp;

	for (pp = &cs->head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			client_free(cl);
			return;
		}
}

void
bft_quota_reload(struct bft_quotas *cs)
{
	struct bft_client_quota *cl, *next;

	for (cl = cs->head; cl != NULL; cl = next) {
		next = cl->next;
		if (lookup(cs, cl->pk, cl->name, &cl->role))
			continue;
		cl->listed = false;
		cl->role = BFT_ROLE_NONE;
		if (cl->nconns == 0)
			unlink_client(cs, cl);
	}
}

void
bft_quota_put(struct bft_quotas *cs, struct bft_client_quota *cl)
{
	if (cl == NULL)
		return;
	if (cl->nconns > 0)
		cl->nconns--;
	if (cl->nconns == 0 && !cl->listed)
		unlink_client(cs, cl);
}

/* Drops the entries that no longer pin anything, keeping the order. */
static void
prune(struct bft_quotas *cs, struct bft_client_quota *cl,
    struct bft_store *st, uint64_t now_ms)
{
	unsigned j = 0;

	for (unsigned i = 0; i < cl->npend; i++) {
		struct bft_pending_store *p = &cl->pend[i];
		struct bft_ts ts = { .num = p->num, .wid = p->wid }, lcts;

		if (now_ms - p->at_ms >= cs->window_ms)
			continue;
		lcts = bft_store_lc_ts(st, p->block);
		if (bft_addr_ok(p->block, cs->cfg->nblocks) &&
		    bft_ts_cmp(&ts, &lcts) <= 0)
			continue;
		cl->pend[j++] = *p;
	}
	cl->npend = j;
}

bool
bft_quota_admit_store(struct bft_quotas *cs, struct bft_client_quota *cl,
    struct bft_store *st, uint64_t now_ms)
{
	if (cl->npend < cs->max_stores)
		return true;
	/* Pruning costs a pass over the list; only a full list pays it. */
	prune(cs, cl, st, now_ms);
	if (cl->npend < cs->max_stores)
		return true;
	cl->refused++;
	return false;
}

void
bft_quota_note_store(struct bft_quotas *cs, struct bft_client_quota *cl,
    uint64_t block, const struct bft_ts *ts, uint64_t now_ms)
{
	struct bft_pending_store *np;
	unsigned ncap;

	if (cl->npend == cl->cap) {
		ncap = cl->cap ? cl->cap * 2 : 64;
		if (ncap > cs->max_stores)
			ncap = cs->max_stores;
		if (ncap <= cl->cap)
			return;		/* full: admit refuses the next one */
		np = realloc(cl->pend, ncap * sizeof *np);
		if (np == NULL)
			return;		/* uncounted, never unsafe */
		cl->pend = np;
		cl->cap = ncap;
	}
	cl->pend[cl->npend++] = (struct bft_pending_store){
		.block = block, .num = ts->num, .wid = ts->wid, .at_ms = now_ms,
	};
}
