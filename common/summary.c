/* Range digests and entries of SUMMARY, LCLIST and VOLUMES; see summary.h. */
#include <string.h>

#include "summary.h"

static void
put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void
bft_volentry_put(uint8_t out[BFT_VOLENTRY_LEN], uint64_t vol, uint64_t end,
    uint64_t live)
{
	put_be64(out, vol);
	put_be64(out + 8, end);
	put_be64(out + 16, live);
}

void
bft_volentry_get(const uint8_t in[BFT_VOLENTRY_LEN], uint64_t *vol,
    uint64_t *end, uint64_t *live)
{
	*vol = get_be64(in);
	*end = get_be64(in + 8);
	*live = get_be64(in + 16);
}

void
bft_vlentry_put(uint8_t out[BFT_VLENTRY_LEN], uint64_t block)
{
	put_be64(out, block);
}

uint64_t
bft_vlentry_get(const uint8_t in[BFT_VLENTRY_LEN])
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v = v << 8 | in[i];
	return v;
}

void
bft_lcentry_put(uint8_t out[BFT_LCENTRY_LEN], uint64_t block,
    const struct bft_ts *ts)
{
	put_be64(out, block);
	put_be64(out + 8, ts->num);
	put_be64(out + 16, ts->wid);
}

void
bft_lcentry_get(const uint8_t in[BFT_LCENTRY_LEN], uint64_t *block,
    struct bft_ts *ts)
{
	memset(ts, 0, sizeof *ts);
	*block = get_be64(in);
	ts->num = get_be64(in + 8);
	ts->wid = get_be64(in + 16);
}

void
bft_summary_init(struct bft_summary *s)
{
	bft_hasher_init(&s->hs);
	s->nblocks = 0;
}

void
bft_summary_add(struct bft_summary *s, uint64_t block,
    const struct bft_ts *ts)
{
	uint8_t e[BFT_LCENTRY_LEN];

	if (bft_ts_is_zero(ts))
		return;
	bft_lcentry_put(e, block, ts);
	bft_hasher_update(&s->hs, e, sizeof e);
	s->nblocks++;
}

void
bft_summary_final(const struct bft_summary *s,
    uint8_t out[BFT_SUMMARY_DIGEST_LEN])
{
	if (s->nblocks == 0) {
		memset(out, 0, BFT_SUMMARY_DIGEST_LEN);
		return;
	}
	bft_hasher_final(&s->hs, out);
}

bool
bft_summary_is_empty(const uint8_t digest[BFT_SUMMARY_DIGEST_LEN])
{
	static const uint8_t zero[BFT_SUMMARY_DIGEST_LEN];

	return memcmp(digest, zero, sizeof zero) == 0;
}
