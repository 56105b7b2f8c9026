/*
 * fuzz_handler's structural mutator, included by it (and so by
 * fuzz_handler_replay): whole frames decoded, one field changed as a
 * client might get it wrong, and encoded again, so that mutated inputs
 * stay well-formed msgpack and reach the handler rather than the
 * decoder's refusals.  It uses the harness's cluster size N and its
 * decoder zone.
 */
/*
 * Structural mutations.  libFuzzer's own LLVMFuzzerMutate does the other
 * half; it is weak so that the gcc build of this file (the standalone
 * unit test, which never mutates) links without libFuzzer.
 */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
    __attribute__((weak));
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
    unsigned seed);

#define MUT_FRAMES	64

static int
buf_put(struct bft_buf *b, const uint8_t *p, size_t len)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *nd;

	if (b->len + len > b->cap) {
		while (cap < b->len + len)
			cap *= 2;
		if ((nd = realloc(b->data, cap)) == NULL)
			return -1;
		b->data = nd;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, len);
	b->len += len;
	return 0;
}

static uint32_t
mut_rand(uint32_t *x)
{
	/* xorshift32: the mutation must depend on seed alone. */
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* The fields of m's type that say which write it belongs to. */
static struct bft_ts *
mut_ts(struct bft_msg *m, uint32_t r)
{
	switch (m->type) {
	case BFT_STORE:
	case BFT_COMPLETE:
		return &m->ts;
	case BFT_FILTER:
	case BFT_VFILTER:
		return &m->cands[r % m->ncands].ts;
	case BFT_REPAIR:
	case BFT_VREPAIR:
		return &m->cands[0].ts;
	default:
		return NULL;
	}
}

/* Changes one field of m; other is another frame of the input. */
static void
mut_msg(struct bft_msg *m, struct bft_msg *other, uint32_t *x)
{
	uint32_t r = mut_rand(x);
	struct bft_ts *ts = mut_ts(m, r >> 8);
	const struct bft_ts *ots = mut_ts(other, r >> 16);

	switch (r % 8) {
	case 0:
		if (ts)
			ts->num = r & 0x100 ? ts->num + 1 - (r >> 9) % 3 :
			    (r >> 9) % 4;
		break;
	case 1:
		if (ts)
			ts->wid = (r >> 8) % 3;
		break;
	case 2:
		if (ts && ots)
			*ts = *ots;
		break;
	case 3:
		if (m->type == BFT_STORE && m->frag_len)
			m->frag_len = (r >> 8) % (m->frag_len < 64 ?
			    m->frag_len + 1 : 64);
		break;
	case 4:
		/* SUMMARY and LCLIST: a run that may pass the disk's end. */
		if (m->type == BFT_SUMMARY || m->type == BFT_LCLIST) {
			m->block = (r >> 8) % NBLOCKS;
			m->count = 1 + (r >> 14) % (NBLOCKS + 2);
			m->span = 1 + (r >> 22) % 9;
		} else {
			m->block = (r >> 8) % 4;
		}
		break;
	case 5:
		/* A candidate more or less: up to BFT_MAX_N, beyond n. */
		if (m->type == BFT_FILTER && (r & 0x100) && m->ncands > 1)
			m->ncands--;
		else if (m->type == BFT_FILTER && m->ncands < BFT_MAX_N) {
			m->cands[m->ncands] = m->cands[(r >> 9) % m->ncands];
			m->ncands++;
		}
		break;
	case 6:
		if (other->type == BFT_COMPLETE && m->type == BFT_FILTER)
			memcpy(m->cands[(r >> 8) % m->ncands].nonce,
			    other->nonce, BFT_NONCE_LEN);
		else if (other->type == BFT_COMPLETE && m->type == BFT_STORE)
			bft_hash(other->nonce, BFT_NONCE_LEN, m->nh);
		break;
	default:
		m->type = (uint8_t)(BFT_CLOCK + (r >> 8) % 10);
		/*
		 * A COLLECT now and then of a slice of lc's fragment, maybe
		 * past its end (hashtree.h).
		 */
		m->slice = m->type == BFT_COLLECT && (r >> 20) % 2;
		if (m->slice) {
			m->want_frag = true;
			m->slice_first = (r >> 21) % 40;
			m->slice_count = 1 + (r >> 27) %
			    (BFT_TREE_MAX_CHUNKS - m->slice_first);
		}
		/* Now and then a snapshot's request over the same fields. */
		if ((r >> 24) % 4 == 0)
			m->type = (uint8_t)(BFT_SNAP + (r >> 26) % 5);
		/* ... or the space one holds, walked from anywhere. */
		if ((r >> 24) % 16 == 1)
			m->type = BFT_SNAPSPACE;
		/* ... or new MACs for a version, maybe one it holds. */
		if ((r >> 24) % 16 == 2) {
			m->type = BFT_REAUTH;
			if (other != NULL)
				bft_hash(other->nonce, BFT_NONCE_LEN, m->nh);
		}
		if (m->type == BFT_SNAP) {
			m->block = bft_addr(bft_addr_vol(m->block), 0);
			m->snap_op &= 1;
		}
		if (m->type == BFT_VLIST && m->count == 0)
			m->count = 1;
		/* Few boundaries, so that views and SNAPs meet. */
		if (m->type >= BFT_SNAP) {
			m->gen &= 3;
			m->gen_to = (r >> 29) & 1 ? BFT_GEN_MAX : m->gen + 1;
		}
		/* REAUTH: of the head or of a view, as the pass sends it. */
		if (m->type == BFT_REAUTH && (r >> 30) & 1)
			m->gen = BFT_GEN_MAX;
		if ((m->type == BFT_FILTER || m->type == BFT_VFILTER) &&
		    m->ncands == 0)
			m->ncands = 1;
		if (m->count == 0 || m->span == 0)
			m->count = m->span = 1;
		break;
	}
}

/*
 * The new input is put together in out, a frame at a time, and the
 * frame changed encoded in enc: both are kept from call to call, as
 * growing them per frame was half of this function's time.
 */
size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
    unsigned seed)
{
	static struct bft_msg m, other;
	static struct bft_buf enc, out;
	size_t off[MUT_FRAMES + 1], len[MUT_FRAMES], pos, nf = 0, i, j, k;
	uint32_t x = seed | 1, blen, r;

	enc.len = out.len = 0;
	if (size < 1 || mut_rand(&x) % 2 == 0)
		goto out_default;
	for (pos = 1; nf < MUT_FRAMES &&
	    bft_wire_frame(data + pos, size - pos, &blen) == 0;
	    pos += 4 + (size_t)blen) {
		off[nf] = pos;
		len[nf++] = 4 + (size_t)blen;
	}
	if (nf == 0)
		goto out_default;
	r = mut_rand(&x);
	i = r % nf;
	j = (r >> 8) % nf;
	if (bft_wire_decode_with(&scratch, data + off[i] + 4, len[i] - 4, N,
	    &m, NULL) < 0 || bft_wire_decode_with(&scratch, data + off[j] + 4,
	    len[j] - 4, N, &other, NULL) < 0)
		goto out_default;
	mut_msg(&m, &other, &x);
	if (bft_wire_encode(&m, N, &enc) < 0)
		goto out_default;
	/* Frame i is replaced, repeated after itself, or dropped. */
	k = (r >> 16) % 8;
	if (buf_put(&out, data, 1) < 0)
		goto out_default;
	for (size_t f = 0; f < nf; f++) {
		const uint8_t *p = data + off[f];
		size_t l = len[f];

		if (f == i && k == 7)
			continue;
		if (f == i && k != 6) {
			p = enc.data;
			l = enc.len;
		}
		if (buf_put(&out, p, l) < 0 ||
		    (f == i && k == 6 && buf_put(&out, enc.data, enc.len) < 0))
			goto out_default;
	}
	if (out.len > max_size)
		goto out_default;
	memcpy(data, out.data, out.len);
	return out.len;
out_default:
	return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) :
	    size;
}
