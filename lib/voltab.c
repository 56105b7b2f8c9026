/*
 * The volume table's format and its reads and writes (voltab_int.h).
 * Integers are little-endian.  Every block starts with
 *
 *	0  magic "BFTVOLTB"   8  version   12  block index   16  next id
 *	20 blocks in use      24 entries   28  zero to 64
 *
 * (next id and blocks in use mean something in block 0 only), then its
 * entries of 128 bytes:
 *
 *	0  state   1  flags (1: encrypted)   2  1: a clone   4  id
 *	8  size   16 generation   24 created   32 key id (16)
 *	48 name (64, zero-padded)   112 parent id   116 parent boundary
 *	124 zero
 *
 * The parent (a clone's, or a snapshot of a clone's) is the volume id
 * and boundary of the snapshot its never-written blocks read from.  A
 * table without clones is byte for byte what the first table format
 * was, whose readers refuse byte 2 and bytes 112 on unless zero: so a
 * clone is only made once the cluster is finalized (docs/upgrades.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_int.h"
#include "error_int.h"
#include "voltab_int.h"

#define VT_MAGIC	"BFTVOLTB"
#define VT_VERSION	1u

static bool
all_zero(const uint8_t *p, size_t len)
{
	while (len-- > 0)
		if (*p++ != 0)
			return false;
	return true;
}

void
bftblk__vt_init(struct voltab *vt)
{
	memset(vt, 0, sizeof *vt);
	vt->next_id = VT_FIRST_ID;
	vt->nblocks = 1;
}

bool
bftblk__vt_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > BFTBLK_VOLUME_NAME_MAX || name[0] == '.' ||
	    name[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-'))
			return false;
	}
	return true;
}

void
bftblk__vt_encode(const struct voltab *vt, unsigned bi, uint8_t *blk)
{
	memset(blk, 0, BFT_BLOCK_SIZE);
	memcpy(blk, VT_MAGIC, 8);
	le_put32(blk + 8, VT_VERSION);
	le_put32(blk + 12, bi);
	if (bi == 0) {
		le_put32(blk + 16, vt->next_id);
		le_put32(blk + 20, vt->nblocks);
	}
	le_put32(blk + 24, vt->count[bi]);
	for (unsigned i = 0; i < vt->count[bi]; i++) {
		const struct vt_entry *e = &vt->e[bi][i];
		uint8_t *p = blk + VT_HDR + (size_t)i * VT_ENTRY;

		p[0] = e->state;
		p[1] = e->encrypted ? 1 : 0;
		le_put32(p + 4, e->id);
		le_put64(p + 8, e->size);
		le_put64(p + 16, e->generation);
		le_put64(p + 24, e->created);
		memcpy(p + 32, e->key_id, sizeof e->key_id);
		memcpy(p + 48, e->name, strlen(e->name));
		if (e->clone) {
			p[2] = 1;
			le_put32(p + 112, e->parent_id);
			le_put64(p + 116, e->parent_gen);
		}
	}
}

/* One entry, checked: every field within what a writer could write. */
static int
decode_entry(const uint8_t *p, struct vt_entry *e, uint32_t next_id,
    char *why, size_t whylen)
{
	memset(e, 0, sizeof *e);
	e->state = p[0];
	e->encrypted = p[1] & 1;
	e->id = le_get32(p + 4);
	e->size = le_get64(p + 8);
	e->generation = le_get64(p + 16);
	e->created = le_get64(p + 24);
	memcpy(e->key_id, p + 32, sizeof e->key_id);
	memcpy(e->name, p + 48, BFTBLK_VOLUME_NAME_MAX);
	e->clone = p[2] == 1;
	e->parent_id = le_get32(p + 112);
	e->parent_gen = le_get64(p + 116);
	if (e->state < VT_LIVE || e->state > VT_SNAP_DELETING || p[1] > 1 ||
	    p[2] > 1 || p[3] != 0 || !all_zero(p + 124, VT_ENTRY - 124) ||
	    (!e->clone && !all_zero(p + 112, 12))) {
		snprintf(why, whylen, "an entry with state %u, flags %u/%u",
		    p[0], p[1], p[2]);
		return -1;
	}
	/* A parent is older than its clone: ids only grow. */
	if (e->clone && ((e->parent_id != 0 && (e->parent_id < VT_FIRST_ID ||
	    e->parent_id >= next_id)) || e->parent_id == e->id)) {
		snprintf(why, whylen, "an entry whose parent is volume %u",
		    e->parent_id);
		return -1;
	}
	if (!bftblk__vt_name_ok(e->name) || !all_zero(p + 48 + strlen(e->name),
	    BFTBLK_VOLUME_NAME_MAX - strlen(e->name))) {
		snprintf(why, whylen, "an entry whose name is not a volume "
		    "name");
		return -1;
	}
	/* Volume 0, the cluster's disk, may be snapshotted too. */
	if (((e->id < VT_FIRST_ID || e->id >= next_id) &&
	    !(bftblk__vt_is_snap(e) && e->id == 0)) || e->id > VT_LAST_ID ||
	    e->size == 0 || e->size % BFT_BLOCK_SIZE != 0 ||
	    e->size / BFT_BLOCK_SIZE > BFT_VOL_MAX_BLOCKS) {
		snprintf(why, whylen, "volume '%s' has id %u and size %llu",
		    e->name, e->id, (unsigned long long)e->size);
		return -1;
	}
	return 0;
}

int
bftblk__vt_decode(struct voltab *vt, unsigned bi, const uint8_t *blk, char *why,
    size_t whylen)
{
	uint32_t count;

	vt->count[bi] = 0;
	if (all_zero(blk, BFT_BLOCK_SIZE)) {
		if (bi == 0)
			bftblk__vt_init(vt);
		return 0;
	}
	count = le_get32(blk + 24);
	if (memcmp(blk, VT_MAGIC, 8) != 0 || le_get32(blk + 8) != VT_VERSION ||
	    le_get32(blk + 12) != bi || count > VT_PER_BLOCK ||
	    !all_zero(blk + 28, VT_HDR - 28)) {
		snprintf(why, whylen, "block %u is not a table block of "
		    "version %u", bi, VT_VERSION);
		return -1;
	}
	if (bi == 0) {
		vt->next_id = le_get32(blk + 16);
		vt->nblocks = le_get32(blk + 20);
		if (vt->next_id < VT_FIRST_ID || vt->next_id > VT_LAST_ID + 1 ||
		    vt->nblocks < 1 || vt->nblocks > VT_BLOCKS) {
			snprintf(why, whylen, "its header says next id %u, %u "
			    "blocks", vt->next_id, vt->nblocks);
			return -1;
		}
	} else if (!all_zero(blk + 16, 8)) {
		snprintf(why, whylen, "block %u has a header of block 0", bi);
		return -1;
	}
	for (uint32_t i = 0; i < count; i++)
		if (decode_entry(blk + VT_HDR + (size_t)i * VT_ENTRY,
		    &vt->e[bi][i], vt->next_id, why, whylen) != 0)
			return -1;
	if (!all_zero(blk + VT_HDR + (size_t)count * VT_ENTRY,
	    BFT_BLOCK_SIZE - VT_HDR - (size_t)count * VT_ENTRY)) {
		snprintf(why, whylen, "block %u has bytes past its entries",
		    bi);
		return -1;
	}
	vt->count[bi] = count;
	return 0;
}

struct vt_entry *
bftblk__vt_find(struct voltab *vt, const char *name, unsigned *bi)
{
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++)
			if (!bftblk__vt_is_snap(&vt->e[b][i]) &&
			    strcmp(vt->e[b][i].name, name) == 0) {
				if (bi != NULL)
					*bi = b;
				return &vt->e[b][i];
			}
	return NULL;
}

struct vt_entry *
bftblk__vt_find_snap(struct voltab *vt, uint32_t id, const char *name,
    unsigned *bi)
{
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			struct vt_entry *e = &vt->e[b][i];

			if (bftblk__vt_is_snap(e) && e->id == id &&
			    strcmp(e->name, name) == 0) {
				if (bi != NULL)
					*bi = b;
				return e;
			}
		}
	return NULL;
}

struct vt_entry *
bftblk__vt_find_gen(struct voltab *vt, uint32_t id, uint64_t gen)
{
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			struct vt_entry *e = &vt->e[b][i];

			if (bftblk__vt_is_snap(e) && e->id == id &&
			    e->generation == gen)
				return e;
		}
	return NULL;
}

int
bftblk__vt_parents(struct voltab *vt, const struct vt_entry *e,
    struct vt_parent *out, unsigned *n, char *why, size_t whylen)
{
	const struct vt_entry *cur = e;

	*n = 0;
	while (cur->clone) {
		const struct vt_entry *p;

		if (*n == VT_DEPTH) {
			snprintf(why, whylen, "'%s' is a clone more than %u "
			    "deep", e->name, VT_DEPTH);
			return -1;
		}
		if ((p = bftblk__vt_find_gen(vt, cur->parent_id,
		    cur->parent_gen)) == NULL) {
			snprintf(why, whylen, "'%s''s parent, the snapshot of "
			    "volume %u at generation %llu, is not in the "
			    "table", cur->name, cur->parent_id,
			    (unsigned long long)cur->parent_gen);
			return -1;
		}
		out[*n].id = cur->parent_id;
		out[(*n)++].gen = cur->parent_gen;
		cur = p;
	}
	return 0;
}

const char *
bftblk__vt_name_of(const struct voltab *vt, uint32_t id)
{
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++)
			if (!bftblk__vt_is_snap(&vt->e[b][i]) &&
			    vt->e[b][i].id == id)
				return vt->e[b][i].name;
	return "";
}

unsigned
bftblk__vt_dependants(const struct voltab *vt, uint32_t id, uint64_t gen,
    char *buf, size_t len)
{
	unsigned count = 0;
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			const struct vt_entry *e = &vt->e[b][i];
			bool snap = bftblk__vt_is_snap(e);

			/*
			 * One being deleted reads nothing any more, though
			 * servers that have not dropped it keep its entry.
			 */
			if (!e->clone || e->parent_id != id ||
			    e->parent_gen != gen || e->state == VT_DELETING ||
			    e->state == VT_SNAP_DELETING)
				continue;
			count++;
			/* A snapshot of a clone is named as V@S. */
			bftblk__vt_list_add(buf, len, &off, snap ?
			    bftblk__vt_name_of(vt, e->id) : NULL, e->name);
		}
	return count;
}

void
bftblk__vt_list_add(char *buf, size_t len, size_t *off, const char *vol,
    const char *name)
{
	int w;

	if (*off + 1 >= len)
		return;
	w = snprintf(buf + *off, len - *off, "%s%s%s%s", *off ? ", " : "",
	    vol ? vol : "", vol ? "@" : "", name);
	*off = w > 0 && *off + (size_t)w < len ? *off + (size_t)w : len - 1;
}

int
bftblk__vt_room(const struct voltab *vt)
{
	for (unsigned b = 0; b < VT_BLOCKS; b++)
		if (vt->count[b] < VT_PER_BLOCK)
			return (int)b;
	return -1;
}

void
bftblk__vt_add(struct voltab *vt, unsigned bi, const struct vt_entry *e)
{
	vt->e[bi][vt->count[bi]++] = *e;
	if (bi >= vt->nblocks)
		vt->nblocks = bi + 1;
}

void
bftblk__vt_remove(struct voltab *vt, unsigned bi, const struct vt_entry *e)
{
	size_t i = (size_t)(e - vt->e[bi]);

	memmove(&vt->e[bi][i], &vt->e[bi][i + 1],
	    (vt->count[bi] - i - 1) * sizeof *e);
	vt->count[bi]--;
}

void
bftblk__vt_public(const struct vt_entry *e, struct bftblk_volume *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", e->name);
	out->id = e->id;
	out->size = e->size;
	out->generation = e->generation;
	out->created = e->created;
	out->encrypted = e->encrypted;
	out->deleting = e->state == VT_DELETING;
	if (e->encrypted)
		for (unsigned i = 0; i < sizeof e->key_id; i++)
			snprintf(out->key_id + 2 * i, 3, "%02x", e->key_id[i]);
}

/* Reads table blocks [first, first + n) into bufs, as one batch. */
static int
read_blocks(struct bft_engine *eng, unsigned first, unsigned n,
    uint8_t *bufs)
{
	struct op *ops[VT_BLOCKS] = { 0 };
	int r = -1;

	for (unsigned i = 0; i < n; i++) {
		if ((ops[i] = bftblk__op_new(eng, OP_READ)) == NULL) {
			bftblk__fail(ENOMEM, NULL);
			goto out;
		}
		ops[i]->block = bft_addr(BFT_VOL_TABLE, first + i);
		ops[i]->data = bufs + (size_t)i * BFT_BLOCK_SIZE;
	}
	if (bftblk__engine_run(eng, ops, n) != 0)
		goto out;
	for (unsigned i = 0; i < n; i++)
		if (bftblk__op_finish_read(ops[i]) != 0) {
			bftblk__fail(EIO, "the volume table's block %u: %s",
			    first + i, ops[i]->why);
			goto out;
		}
	r = 0;
out:
	for (unsigned i = 0; i < n; i++)
		bftblk__op_free(ops[i]);
	return r;
}

int
bftblk__vt_read(struct bft_engine *eng, struct voltab *vt)
{
	uint8_t *bufs = malloc((size_t)VT_BLOCKS * BFT_BLOCK_SIZE);
	char why[160];
	int r = -1;

	if (bufs == NULL)
		return bftblk__fail(ENOMEM, NULL);
	bftblk__vt_init(vt);
	if (read_blocks(eng, 0, 1, bufs) != 0)
		goto out;
	if (bftblk__vt_decode(vt, 0, bufs, why, sizeof why) != 0) {
		bftblk__fail(EBADMSG, "the volume table is damaged: %s", why);
		goto out;
	}
	if (vt->nblocks > 1 && read_blocks(eng, 1, vt->nblocks - 1,
	    bufs + BFT_BLOCK_SIZE) != 0)
		goto out;
	for (unsigned b = 1; b < vt->nblocks; b++)
		if (bftblk__vt_decode(vt, b, bufs + (size_t)b * BFT_BLOCK_SIZE,
		    why, sizeof why) != 0) {
			bftblk__fail(EBADMSG, "the volume table is damaged: %s",
			    why);
			goto out;
		}
	r = 0;
out:
	free(bufs);
	return r;
}

int
bftblk__vt_write(struct bft_engine *eng, const struct voltab *vt, unsigned bi)
{
	struct op *op = bftblk__op_new(eng, OP_WRITE);
	uint8_t *blk = malloc(BFT_BLOCK_SIZE);
	int r = -1;

	if (op == NULL || blk == NULL) {
		bftblk__fail(ENOMEM, NULL);
		goto out;
	}
	bftblk__vt_encode(vt, bi, blk);
	op->block = bft_addr(BFT_VOL_TABLE, bi);
	op->data = blk;
	if (bftblk__op_prepare_write(op) != 0)
		bftblk__fail(EIO, "erasure coding the volume table failed");
	else if (bftblk__engine_run(eng, &op, 1) == 0)
		r = 0;
out:
	bftblk__op_free(op);
	free(blk);
	return r;
}
