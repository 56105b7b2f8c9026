/*
 * SUMMARY, LCLIST, VOLUMES and STATUS (wire.h): what a server tells a
 * peer that compares its state, and an operator who asks how it is.  None of them
 * changes anything, so they are answered from memory: lc of every block
 * is there, and the log's figures are the store's counters.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bftblk.h"
#include "handler.h"
#include "keys_census.h"
#include "summary.h"

#define INFO_BUF_LEN	(BFT_LCLIST_MAX * BFT_LCENTRY_LEN)
_Static_assert(INFO_BUF_LEN >= BFT_SUMMARY_MAX * BFT_SUMMARY_DIGEST_LEN,
    "infobuf holds the longest SUMMARY_ACK too");
_Static_assert(INFO_BUF_LEN >= BFT_VOLLIST_MAX * BFT_VOLENTRY_LEN,
    "infobuf holds the longest VOLUMES_ACK too");

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
bft_handler_info_init(struct bft_handler *h)
{
	h->started_ms = now_ms();
	h->infobuf = malloc(INFO_BUF_LEN);
	return h->infobuf ? 0 : -1;
}

/* The bounds wire.h gives count and span. */
static bool
shape_ok(const struct bft_msg *req)
{
	uint32_t nr;

	if (req->type == BFT_LCLIST)
		return req->count >= 1 && req->count <= BFT_LCLIST_MAX;
	nr = bft_summary_nranges(req->count, req->span);
	return nr >= 1 && nr <= BFT_SUMMARY_MAX;
}

/*
 * [block, block + count) within block's volume; bft_handle checked
 * block.  Written so that block + count cannot overflow.
 */
static bool
in_disk(const struct bft_handler *h, const struct bft_msg *req)
{
	return req->count <= bft_vol_limit(bft_addr_vol(req->block),
	    h->cfg->nblocks) - bft_addr_block(req->block);
}

/*
 * A walk over the blocks an index page holds, carried across a
 * request's ranges: the store is asked for the next page only when the
 * walk leaves one, so a request costs a step per block it visits in a
 * page and a few per page, never per empty range or empty page slot.
 */
struct walk {
	uint64_t b;			/* the next block to visit */
	uint64_t page_end;		/* the end of b's page, if b is in one */
};

/* The next block in a page at or after w->b, or UINT64_MAX. */
static uint64_t
walk_next(struct bft_handler *h, struct walk *w)
{
	if (w->b < w->page_end || w->b == UINT64_MAX)
		return w->b;
	if ((w->b = bft_store_next_page(h->st, w->b)) != UINT64_MAX)
		w->page_end = (w->b | (BFT_STORE_PAGE - 1)) + 1;
	return w->b;
}

/*
 * The timestamp a block counts under in SUMMARY and LCLIST: lc's, when
 * this server holds the fragment that backs it, else zero (not
 * counted).  A write-back sets lc without a fragment; comparing lc
 * alone would make a server that holds nothing of a block look in step
 * with its peers, and it would never rebuild that block.
 */
static struct bft_ts
held_ts(struct bft_handler *h, uint64_t b)
{
	static const struct bft_ts none;

	return bft_store_lc_held(h->st, b) ? bft_store_lc_ts(h->st, b) : none;
}

/* One digest per span blocks; the decoder bounded their number. */
static void
handle_summary(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	uint32_t nr = bft_summary_nranges(req->count, req->span);
	uint64_t end = req->block + req->count, b;
	struct walk w = { .b = req->block, .page_end = 0 };
	struct bft_summary s;
	struct bft_ts ts;

	for (uint32_t r = 0; r < nr; r++) {
		uint64_t start = req->block + (uint64_t)r * req->span;
		uint64_t stop = end - start > req->span ? start + req->span :
		    end;

		bft_summary_init(&s);
		/* Blocks outside every index page were never written. */
		while ((b = walk_next(h, &w)) < stop) {
			ts = held_ts(h, b);
			bft_summary_add(&s, b, &ts);
			w.b = b + 1;
		}
		bft_summary_final(&s, h->infobuf +
		    (size_t)r * BFT_SUMMARY_DIGEST_LEN);
	}
	rep->digests = h->infobuf;
	rep->ndigests = nr;
}

static void
handle_lclist(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct walk w = { .b = req->block, .page_end = 0 };
	struct bft_ts ts;
	uint32_t ne = 0;
	uint64_t b;

	for (; (b = walk_next(h, &w)) < req->block + req->count; w.b = b + 1) {
		ts = held_ts(h, b);
		if (bft_ts_is_zero(&ts))
			continue;
		bft_lcentry_put(h->infobuf + (size_t)ne * BFT_LCENTRY_LEN, b,
		    &ts);
		ne++;
	}
	rep->entries = h->infobuf;
	rep->nentries = ne;
}

/* The volumes held, from the request's on; a full reply is continued. */
static void
handle_volumes(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_store_vol v[64];
	uint32_t ne = 0, first = bft_addr_vol(req->block);
	size_t k;

	while (ne < BFT_VOLLIST_MAX &&
	    (k = bft_store_volumes(h->st, first, v, sizeof v / sizeof v[0]))
	    > 0) {
		for (size_t i = 0; i < k && ne < BFT_VOLLIST_MAX; i++, ne++) {
			bft_volentry_put(h->infobuf + (size_t)ne *
			    BFT_VOLENTRY_LEN, v[i].vol, v[i].end, v[i].live);
		}
		if (v[k - 1].vol == BFT_ADDR_MAX_VOL)
			break;
		first = v[k - 1].vol + 1;
	}
	rep->entries = h->infobuf;
	rep->nentries = ne;
}

static void
handle_status(struct bft_handler *h, struct bft_msg *rep)
{
	static const struct bft_heal_progress none;
	static const struct bft_census_progress no_census;
	const struct bft_heal_progress *hp = h->heal ? h->heal : &none;
	const struct bft_census_progress *cp = h->census ? h->census :
	    &no_census;
	struct bft_status_info *in = &rep->info;
	struct bft_store_replay rp;
	struct bft_store_stats ss;

	bft_store_stats(h->st, &ss);
	bft_store_replay_info(h->st, &rp);
	in->version = bft_store_format(h->st);
	in->server_index = h->key->index;
	in->uptime_s = (now_ms() - h->started_ms) / 1000;
	in->blocks_held = ss.blocks_held;
	in->bytes_total = ss.bytes_total;
	in->bytes_live = ss.bytes_live;
	in->damaged_records = rp.torn_records + rp.corrupt_records +
	    hp->damaged_records_later;
	in->repaired_records = hp->repaired_records;
	in->rebuild_state = hp->rebuild_state;
	in->rebuild_done = hp->rebuild_done;
	in->rebuild_total = hp->rebuild_total;
	in->rebuild_bytes = hp->rebuild_bytes;
	in->rebuild_rate = hp->rebuild_rate;
	in->scrub_done = hp->scrub_done;
	in->scrub_total = hp->scrub_total;
	in->release = bft_release_code(BFTBLK_VERSION_MAJOR,
	    BFTBLK_VERSION_MINOR, BFTBLK_VERSION_PATCH);
	in->level = BFT_LEVEL;
	in->finalized = bft_store_finalized(h->st);
	bft_store_snap_gc_progress(h->st, &in->snap_gc_done,
	    &in->snap_gc_total);
	in->recovering = hp->recovering;
	in->recoveries = hp->recoveries;
	in->mac_epoch = h->key->epoch;
	in->mac_next_epoch = h->key->has_alt ? h->key->alt_epoch : 0;
	in->mac_old_versions = cp->old_current;
	in->mac_old_pending = cp->old_pending;
	in->mac_census_done = cp->done;
	in->mac_census_total = cp->total;
	in->mac_census_passes = cp->passes;
	in->mac_retiring = h->key->has_alt && h->key->retiring;
	in->mac_old_retained = cp->old_retained;
}

void
bft_handle_info(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	switch (req->type) {
	case BFT_VOLUMES:
		handle_volumes(h, req, rep);
		return;
	case BFT_SUMMARY:
	case BFT_LCLIST:
		/*
		 * The decoder checked count and span; a caller other than
		 * the network (a test) is held to the same bounds here.
		 */
		if (!shape_ok(req)) {
			rep->status = BFT_EPROTO;
			return;
		}
		if (!in_disk(h, req)) {
			rep->status = BFT_ERANGE;
			return;
		}
		if (req->type == BFT_SUMMARY)
			handle_summary(h, req, rep);
		else
			handle_lclist(h, req, rep);
		return;
	case BFT_STATUS:
		handle_status(h, rep);
		return;
	}
}
