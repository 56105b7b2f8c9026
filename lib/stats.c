/* What a handle tells about itself: its geometry and its counters. */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "handle_int.h"

int
bftblk_get_info(struct bftblk *h, struct bftblk_info *out, size_t size)
{
	struct bftblk_info info;

	if (!h->loaded)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "loaded yet");
	if (bftblk__check_size(h, "bftblk_info", size, sizeof info) != 0)
		return -EINVAL;
	info = (struct bftblk_info){
		.size = h->export_size, .block_size = BFT_BLOCK_SIZE,
		.t = h->cfg.t, .n = h->cfg.n,
		.readonly = h->key.role != BFT_ROLE_RW || h->view,
		.client_name = h->key.name,
		.ec_backend = bft_ec_backend(h->ec),
		.encryption = h->encrypt ? bft_aead_name(h->vc.aead) : "off",
	};
	memcpy(out, &info, size);
	return 0;
}

int
bftblk_get_stats(struct bftblk *h, struct bftblk_stats *out, size_t size)
{
	const struct bft_engine_stats *e;
	struct bftblk_stats all, *s = &all;

	if (h->eng == NULL)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "connected");
	if (bftblk__check_size(h, "bftblk_stats", size, sizeof all) != 0)
		return -EINVAL;
	e = bftblk__engine_stats(h->eng);
	memset(s, 0, sizeof *s);
	s->reads = e->reads;
	s->writes = e->writes;
	s->flushes = e->flushes;
	s->fast_reads = e->fast_reads;
	s->fast_read_fallbacks = e->fast_read_fallbacks;
	s->read_restarts = e->read_restarts;
	s->repairs = e->repairs;
	s->fast_writes = e->fast_writes;
	s->fast_write_fallbacks = e->fast_fallbacks;
	s->timeouts = e->timeouts;
	s->reconnects = e->reconnects;
	s->forged_ts = e->forged_ts;
	s->cache_hits = e->cache_hits;
	s->cache_misses = e->cache_misses;
	s->cache_stale = e->cache_stale;
	s->coalesced = e->coalesced;
	s->cached_blocks = bftblk__bc_count(h->cache);
	s->cache_capacity = bftblk__bc_capacity(h->cache);
	s->nservers = h->cfg.n;
	for (unsigned i = 0; i < h->cfg.n; i++) {
		const struct engine_server_stats *es = &e->server[i];
		struct bftblk_server_stats *ss = &s->server[i];

		ss->connected = es->connected;
		ss->connects = es->connects;
		ss->disconnects = es->disconnects;
		ss->replies = es->replies;
		ss->error_replies = es->error_replies;
		ss->timeouts = es->timeouts;
		ss->mismatched = es->mismatched;
		ss->forged_ts = es->forged_ts;
		ss->bad_fragments = es->bad_fragments;
	}
	memcpy(out, &all, size);
	return 0;
}
