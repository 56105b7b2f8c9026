/*
 * What bftblk keys reauth walks (keys_reauth.h): what the servers
 * hold, as t+1 of them say it.  A block a write completed at is held by
 * n-t servers, at least t+1 of them correct, so it is listed; a liar
 * alone can add nothing to the walk, and a liar's silence takes nothing
 * from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keys_reauth.h"
#include "log.h"
#include "progress.h"
#include "summary.h"

#define RECONNECT_S	5.0

static int
vol_cmp(const void *x, const void *y)
{
	const struct reauth_vol *a = x, *b = y;

	return a->vol < b->vol ? -1 : a->vol > b->vol;
}

static int
u64_desc(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a > b ? -1 : a < b;
}

/*
 * The (t+1)-th highest of v[0..n), which it sorts: what at least t+1
 * servers claim, so that t liars can raise it no higher than a correct
 * server's claim.
 */
static uint64_t
claimed_by_t1(uint64_t *v, unsigned n, unsigned t)
{
	qsort(v, n, sizeof v[0], u64_desc);
	return v[t];
}

/* vol's entry in ra->vols, added when new; NULL when there is no room. */
static struct reauth_vol *
vol_entry(struct reauth *ra, uint32_t vol)
{
	struct reauth_vol *v;

	for (size_t k = 0; k < ra->nvols; k++)
		if (ra->vols[k].vol == vol)
			return &ra->vols[k];
	if (ra->nvols == REAUTH_MAX_VOLS * 2)
		return NULL;
	v = &ra->vols[ra->nvols++];
	memset(v, 0, sizeof *v);
	v->vol = vol;
	return v;
}

/* Server i's volumes and ends into ra->vols; -1 when it did not say. */
static int
ask_volumes(struct reauth *ra, unsigned i)
{
	struct bft_msg *req = ra->req, *rep = ra->rep;
	struct reauth_srv *s = &ra->srv[i];
	uint64_t from = 0, listed = 0;
	const char *why = "";
	int st;

	do {
		memset(req, 0, sizeof *req);
		req->type = BFT_VOLUMES;
		req->block = from;
		if ((st = bft_session_call(&s->s, req, rep, &why)) != BFT_OK) {
			snprintf(s->why, sizeof s->why, "VOLUMES: %s",
			    st < 0 ? why : bft_status_str(st));
			return -1;
		}
		for (uint32_t e = 0; e < rep->nentries; e++) {
			struct reauth_vol *v;
			uint64_t id, end, live;

			bft_volentry_get(rep->entries +
			    (size_t)e * BFT_VOLENTRY_LEN, &id, &end, &live);
			if (id > BFT_ADDR_MAX_VOL || id < from ||
			    ++listed > REAUTH_MAX_VOLS ||
			    (v = vol_entry(ra, (uint32_t)id)) == NULL)
				return 0;
			v->ends[i] = end;
			from = id + 1;
		}
	} while (rep->nentries == BFT_VOLLIST_MAX);
	return 0;
}

/* Server i's count of blocks held, into held[i]; 0 when it did not say. */
static void
ask_held(struct reauth *ra, unsigned i, uint64_t *held)
{
	const char *why;

	memset(ra->req, 0, sizeof *ra->req);
	ra->req->type = BFT_STATUS;
	if (bft_session_call(&ra->srv[i].s, ra->req, ra->rep, &why) == BFT_OK)
		held[i] = ra->rep->info.blocks_held;
}

int
reauth_gather(struct reauth *ra)
{
	uint64_t held[BFT_MAX_N] = { 0 };
	unsigned answered = 0;

	ra->vols = calloc(REAUTH_MAX_VOLS * 2, sizeof *ra->vols);
	if (ra->vols == NULL) {
		bft_log("out of memory");
		return -1;
	}
	for (unsigned i = 0; i < ra->cfg.n; i++) {
		struct reauth_srv *s = &ra->srv[i];
		struct bft_session_fail f;

		if (bft_session_open(&s->s, &ra->cfg, &ra->ck, i,
		    ra->a->timeout_s * 1000, true, &f) != 0) {
			bft_session_fail_str(&f, s->why, sizeof s->why);
			s->down_at = admin_now_s();
			bft_log("server %u: %s", i, s->why);
			continue;
		}
		if (ask_volumes(ra, i) != 0) {
			bft_log("server %u: %s", i, s->why);
			continue;
		}
		ask_held(ra, i, held);
		answered++;
	}
	if (answered < ra->cfg.n - ra->cfg.t) {
		bft_log("%u of %u servers said what they hold; at least %u "
		    "must", answered, ra->cfg.n, ra->cfg.n - ra->cfg.t);
		return -1;
	}
	ra->held = claimed_by_t1(held, ra->cfg.n, ra->cfg.t);
	for (size_t k = 0; k < ra->nvols; k++) {
		struct reauth_vol *v = &ra->vols[k];
		uint64_t e[BFT_MAX_N], end, lim = bft_vol_limit(v->vol,
		    ra->cfg.nblocks);

		memcpy(e, v->ends, sizeof e);
		end = claimed_by_t1(e, ra->cfg.n, ra->cfg.t);
		v->end = end < lim ? end : lim;
	}
	qsort(ra->vols, ra->nvols, sizeof ra->vols[0], vol_cmp);
	return 0;
}

bool
reauth_srv_up(struct reauth *ra, unsigned i)
{
	struct reauth_srv *s = &ra->srv[i];
	struct bft_session_fail f;

	if (s->s.fd >= 0)
		return true;
	if (admin_now_s() - s->down_at < RECONNECT_S)
		return false;
	if (bft_session_open(&s->s, &ra->cfg, &ra->ck, i,
	    ra->a->timeout_s * 1000, true, &f) == 0)
		return true;
	bft_session_fail_str(&f, s->why, sizeof s->why);
	s->down_at = admin_now_s();
	return false;
}

void
reauth_srv_fail(struct reauth_srv *s, const char *why)
{
	snprintf(s->why, sizeof s->why, "%s", why);
	bft_session_close(&s->s);
	s->down_at = admin_now_s();
}


/*
 * ra->req to server i, when its session is up; false when it is not or
 * the call failed (the session is then failed too, with why).
 */
static bool
call(struct reauth *ra, unsigned i)
{
	const char *why;
	int st;

	if (!reauth_srv_up(ra, i))
		return false;
	st = bft_session_call(&ra->srv[i].s, ra->req, ra->rep, &why);
	if (st == BFT_OK)
		return true;
	reauth_srv_fail(&ra->srv[i], st < 0 ? why : bft_status_str(st));
	return false;
}

/*
 * SUMMARY's digest of a range is all zero when the server holds no
 * written block there; t+1 servers saying otherwise include a correct
 * one.
 */
unsigned
reauth_ranges(struct reauth *ra, uint32_t vol, uint64_t block, uint64_t end,
    bool *nonempty)
{
	static const uint8_t zero[BFT_SUMMARY_DIGEST_LEN];
	uint8_t votes[BFT_SUMMARY_MAX] = { 0 };
	uint64_t count = end - block;
	unsigned nr;

	if (count > (uint64_t)BFT_SUMMARY_MAX * REAUTH_RANGE)
		count = (uint64_t)BFT_SUMMARY_MAX * REAUTH_RANGE;
	nr = bft_summary_nranges((uint32_t)count, REAUTH_RANGE);
	for (unsigned i = 0; i < ra->cfg.n; i++) {
		memset(ra->req, 0, sizeof *ra->req);
		ra->req->type = BFT_SUMMARY;
		ra->req->block = bft_addr(vol, block);
		ra->req->count = (uint32_t)count;
		ra->req->span = REAUTH_RANGE;
		if (!call(ra, i))
			continue;
		if (ra->rep->ndigests != nr) {
			reauth_srv_fail(&ra->srv[i], "SUMMARY of the wrong "
			    "length");
			continue;
		}
		for (unsigned r = 0; r < nr; r++)
			votes[r] += memcmp(ra->rep->digests + (size_t)r *
			    BFT_SUMMARY_DIGEST_LEN, zero, sizeof zero) != 0;
	}
	for (unsigned r = 0; r < nr; r++)
		nonempty[r] = votes[r] > ra->cfg.t;
	return nr;
}

unsigned
reauth_list(struct reauth *ra, uint32_t vol, uint64_t block, uint64_t count,
    uint64_t *out)
{
	uint8_t votes[REAUTH_RANGE] = { 0 };
	unsigned n = 0;

	for (unsigned i = 0; i < ra->cfg.n; i++) {
		memset(ra->req, 0, sizeof *ra->req);
		ra->req->type = BFT_LCLIST;
		ra->req->block = bft_addr(vol, block);
		ra->req->count = (uint32_t)count;
		if (!call(ra, i))
			continue;
		/* A liar's repeated or stray entries count once, or not. */
		for (uint32_t e = 0, next = 0; e < ra->rep->nentries; e++) {
			struct bft_ts ts;
			uint64_t b;

			bft_lcentry_get(ra->rep->entries +
			    (size_t)e * BFT_LCENTRY_LEN, &b, &ts);
			if (bft_addr_vol(b) != vol ||
			    bft_addr_block(b) < block + next ||
			    bft_addr_block(b) - block >= count)
				continue;
			next = (uint32_t)(bft_addr_block(b) - block);
			votes[next++]++;
		}
	}
	for (uint64_t b = 0; b < count; b++)
		if (votes[b] > ra->cfg.t)
			out[n++] = bft_addr(vol, block + b);
	return n;
}
