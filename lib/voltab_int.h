/*
 * The volume table (voltab.c): the cluster's named volumes, kept in
 * registers of the reserved volume BFT_VOL_TABLE and read and written
 * through the protocol like any block, so that what a client believes
 * of a volume (that it exists, its size, its id) is as hard for t
 * Byzantine servers to fake as the volume's data (docs/volumes.md).
 *
 * Block 0 starts with the table's header (the next volume id, how many
 * of the table's blocks are in use); every block holds up to
 * VT_PER_BLOCK entries.  An entry changes by one register write of its
 * block, so a reader never sees half an entry.
 */
#ifndef BFTBLK_VOLTAB_INT_H
#define BFTBLK_VOLTAB_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bftblk.h"
#include "engine_int.h"

#define VT_BLOCKS	16u		/* registers the table may use */
#define VT_HDR		64u
#define VT_ENTRY	128u
#define VT_PER_BLOCK	((BFT_BLOCK_SIZE - VT_HDR) / VT_ENTRY)
#define VT_MAX		(VT_BLOCKS * VT_PER_BLOCK)
/*
 * Ids the table hands out: from VT_FIRST_ID on, never twice.  Below it
 * are volume 0 (the disk bftblk.conf sizes) and the ids volume-id=
 * names directly, which the table never gives.
 */
#define VT_FIRST_ID	(1u << 16)
#define VT_LAST_ID	(BFT_VOL_TABLE - 1)

/*
 * A snapshot is an entry too (docs/snapshots.md): its volume's id, the
 * volume's size and encryption when it was taken, its own name, and in
 * generation the boundary its view is at.  Its name is unique among
 * its volume's snapshots, and no volume is looked up by it.
 */
enum vt_state {
	VT_FREE = 0, VT_LIVE = 1, VT_DELETING = 2,
	VT_SNAP = 3, VT_SNAP_DELETING = 4,
};

struct vt_entry {
	uint8_t state;			/* enum vt_state */
	bool encrypted;
	uint32_t id;
	uint64_t size;			/* bytes, whole blocks */
	uint64_t generation;		/* bumped by every resize */
	uint64_t created;		/* Unix seconds */
	uint8_t key_id[16];		/* the volume key's, when encrypted */
	char name[BFTBLK_VOLUME_NAME_MAX + 1];
	/*
	 * A clone (docs/snapshots.md): its never-written blocks read as
	 * snapshot parent_gen of volume parent_id does.  A snapshot of a
	 * clone keeps the parent the clone had when it was taken.
	 */
	bool clone;
	uint32_t parent_id;
	uint64_t parent_gen;
};

static inline bool
bftblk__vt_is_snap(const struct vt_entry *e)
{
	return e->state == VT_SNAP || e->state == VT_SNAP_DELETING;
}

/*
 * The snapshots a clone's reads fall back to, nearest first: its parent,
 * that snapshot's own parent when it is of a clone, and so on, at most
 * VT_DEPTH deep.
 */
#define VT_DEPTH	16u
struct vt_parent {
	uint32_t id;
	uint64_t gen;
};

struct voltab {
	uint32_t next_id;
	unsigned nblocks;		/* blocks in use: 1..VT_BLOCKS */
	unsigned count[VT_BLOCKS];
	struct vt_entry e[VT_BLOCKS][VT_PER_BLOCK];
};

/* A table with no volume, as a never-written block 0 reads. */
void bftblk__vt_init(struct voltab *vt);
/* Whether name is 1-64 of [A-Za-z0-9._-], not starting with . or -. */
bool bftblk__vt_name_ok(const char *name);
/*
 * Block bi of vt into blk (BFT_BLOCK_SIZE bytes).  Decoding replaces
 * block bi's entries (and with bi 0, the header); a block of zeros is
 * an empty one.  decode returns 0, or -1 with why filled when the block
 * is not a well-formed table block (only a writer could have written
 * it: the table is then damaged, not guessed at).
 */
void bftblk__vt_encode(const struct voltab *vt, unsigned bi, uint8_t *blk);
int bftblk__vt_decode(struct voltab *vt, unsigned bi, const uint8_t *blk,
    char *why, size_t whylen);
/* The volume named name (live or deleting), or NULL; *bi its block. */
struct vt_entry *bftblk__vt_find(struct voltab *vt, const char *name,
    unsigned *bi);
/* Volume id's snapshot named name (any state), or NULL; *bi its block. */
struct vt_entry *bftblk__vt_find_snap(struct voltab *vt, uint32_t id,
    const char *name, unsigned *bi);
/*
 * e's chain of parents into out (VT_DEPTH), *n of them.  0, or -1 with
 * why filled: a parent snapshot missing or a chain too deep, which only
 * a damaged table has (deletes keep parents while clones depend).
 */
int bftblk__vt_parents(struct voltab *vt, const struct vt_entry *e,
    struct vt_parent *out, unsigned *n, char *why, size_t whylen);
/* Volume id's snapshot at boundary gen (live or deleting), or NULL. */
struct vt_entry *bftblk__vt_find_gen(struct voltab *vt, uint32_t id,
    uint64_t gen);
/* The name of the volume (not snapshot) with id, or "" (volume 0). */
const char *bftblk__vt_name_of(const struct voltab *vt, uint32_t id);
/*
 * How many entries (clones, and snapshots of clones) have snapshot gen
 * of volume id as their parent; their names ("C", "C@S") in buf.
 */
unsigned bftblk__vt_dependants(const struct voltab *vt, uint32_t id,
    uint64_t gen, char *buf, size_t len);
/*
 * Appends "name" (or "vol@name") to the list in buf, ", " between,
 * truncated to len; *off is where it ends (start at 0 with buf "").
 */
void bftblk__vt_list_add(char *buf, size_t len, size_t *off,
    const char *vol, const char *name);
/* A block with room for one more entry, or -1 when the table is full. */
int bftblk__vt_room(const struct voltab *vt);
/* Adds e in block bi (bftblk__vt_room's); removes entry i of block bi. */
void bftblk__vt_add(struct voltab *vt, unsigned bi, const struct vt_entry *e);
void bftblk__vt_remove(struct voltab *vt, unsigned bi,
    const struct vt_entry *e);
/*
 * A change of the table, as volume.c makes them: begin takes the admin
 * lock, reads the table and finishes deletes left pending (0, or a
 * negative errno failed on h); put writes block bi after checking the
 * lock is still held (0 or -1 recorded); end releases both.  failed
 * ends a call whose failure was recorded, on h; check refuses a handle
 * that is not connected, sealed, or (write) not a writer's.
 */
struct bft_lease;
int bftblk__vt_begin(struct bftblk *h, struct bft_lease *lock,
    struct voltab **vtp);
int bftblk__vt_put(struct bftblk *h, const struct bft_lease *lock,
    const struct voltab *vt, unsigned bi);
void bftblk__vt_end(struct bft_lease *lock, struct voltab *vt);
int bftblk__vt_failed(const struct bftblk *h);
/*
 * Sends DROP or SNAP(remove) for every entry being deleted and removes
 * those all servers acked; *pending: servers yet to ack id's.
 */
int bftblk__vt_finish(struct bftblk *h, const struct bft_lease *lock,
    struct voltab *vt, uint32_t id, unsigned *pending);
int bftblk__vt_check(struct bftblk *h, bool write);
/*
 * For a call that only reads the table: the check, then the table read
 * into memory of its own (free() it).  NULL with the error failed on h;
 * *r the negative errno.
 */
struct voltab *bftblk__vt_load(struct bftblk *h, int *r);
/*
 * Where a new volume named name goes in vt: the block with room, once
 * the name is free, the table not full and an id left.  Or a negative
 * errno failed on h (EEXIST, ENOSPC).
 */
int bftblk__vt_slot(struct bftblk *h, const struct voltab *vt,
    const char *name);

/* The public view of an entry. */
void bftblk__vt_public(const struct vt_entry *e, struct bftblk_volume *out);

/*
 * Reads the whole table through eng (which must not seal: table blocks
 * are plain for every client).  0, or -1 with the error recorded.
 */
int bftblk__vt_read(struct bft_engine *eng, struct voltab *vt);
/* Writes block bi of vt.  0, or -1 with the error recorded. */
int bftblk__vt_write(struct bft_engine *eng, const struct voltab *vt,
    unsigned bi);

#endif
