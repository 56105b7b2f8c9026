/*
 * The volume table's format (lib/voltab.c): what encode writes, decode
 * reads back, and every block that is not one a writer could have made
 * is refused rather than guessed at, so that a damaged table can never
 * show a client a volume with another's id or a size it was not given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "voltab_int.h"

static struct voltab vt, back;
static uint8_t blk[BFT_BLOCK_SIZE];

static struct vt_entry
entry(const char *name, uint32_t id, uint64_t size)
{
	struct vt_entry e;

	memset(&e, 0, sizeof e);
	e.state = VT_LIVE;
	e.id = id;
	e.size = size;
	e.created = 1790000000;
	strcpy(e.name, name);
	return e;
}

static void
assert_same(const struct vt_entry *a, const struct vt_entry *b)
{
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->encrypted, b->encrypted);
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->created, b->created);
	assert_memory_equal(a->key_id, b->key_id, sizeof a->key_id);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->clone, b->clone);
	assert_int_equal(a->parent_id, b->parent_id);
	assert_int_equal(a->parent_gen, b->parent_gen);
}

static void
test_names(void **state)
{
	char longest[BFTBLK_VOLUME_NAME_MAX + 2];

	(void)state;
	assert_true(bftblk__vt_name_ok("vm1"));
	assert_true(bftblk__vt_name_ok("db-01.data_2"));
	assert_false(bftblk__vt_name_ok(""));
	assert_false(bftblk__vt_name_ok(".hidden"));
	assert_false(bftblk__vt_name_ok("-opt"));
	assert_false(bftblk__vt_name_ok("a/b"));
	assert_false(bftblk__vt_name_ok("a b"));
	assert_false(bftblk__vt_name_ok("caf\xc3\xa9"));
	memset(longest, 'a', sizeof longest);
	longest[BFTBLK_VOLUME_NAME_MAX] = '\0';
	assert_true(bftblk__vt_name_ok(longest));
	longest[BFTBLK_VOLUME_NAME_MAX] = 'a';
	longest[BFTBLK_VOLUME_NAME_MAX + 1] = '\0';
	assert_false(bftblk__vt_name_ok(longest));
}

/* A block never written is an empty table whose ids start at the top. */
static void
test_empty(void **state)
{
	char why[160];

	(void)state;
	memset(blk, 0, sizeof blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), 0);
	assert_int_equal(back.next_id, VT_FIRST_ID);
	assert_int_equal(back.nblocks, 1);
	assert_int_equal(back.count[0], 0);
}

static void
test_round_trip(void **state)
{
	struct vt_entry e = entry("vm1", VT_FIRST_ID, 10 * BFT_BLOCK_SIZE);
	struct vt_entry f = entry("db", VT_FIRST_ID + 1, 1ull << 40);
	char why[160];

	(void)state;
	bftblk__vt_init(&vt);
	f.encrypted = true;
	f.generation = 3;
	memset(f.key_id, 0xab, sizeof f.key_id);
	vt.next_id = VT_FIRST_ID + 2;
	bftblk__vt_add(&vt, 0, &e);
	bftblk__vt_add(&vt, 0, &f);
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), 0);
	assert_int_equal(back.next_id, VT_FIRST_ID + 2);
	assert_int_equal(back.count[0], 2);
	assert_same(&back.e[0][0], &e);
	assert_same(&back.e[0][1], &f);
	assert_ptr_equal(bftblk__vt_find(&back, "db", NULL), &back.e[0][1]);
	assert_null(bftblk__vt_find(&back, "d", NULL));
}

/* Each corruption of a good block, applied alone, is refused. */
static void
test_refuses_damage(void **state)
{
	struct vt_entry e = entry("vm1", VT_FIRST_ID, 4 * BFT_BLOCK_SIZE);
	uint8_t good[BFT_BLOCK_SIZE];
	const size_t E = VT_HDR;	/* the first entry */
	static const struct { size_t off; uint8_t val; } bad[] = {
		{ 0, 'X' },			/* magic */
		{ 8, 2 },			/* version */
		{ 12, 1 },			/* says it is block 1 */
		{ 24, 200 },			/* more entries than it holds */
		{ 30, 1 },			/* header padding */
		{ E + 0, 7 },			/* state */
		{ E + 1, 2 },			/* flags */
		{ E + 7, 0xff },		/* id past next id */
		{ E + 9, 0x01 },		/* size not whole blocks */
		{ E + 48, '/' },		/* name */
		{ E + 48 + 10, 'x' },		/* bytes after the name's end */
		{ E + 2, 2 },			/* clone flag */
		{ E + 3, 1 },			/* flags padding */
		{ E + 113, 1 },			/* a parent, not a clone */
		{ E + 120, 1 },			/* a parent's boundary, too */
		{ E + 125, 1 },			/* entry padding */
		{ E + VT_ENTRY + 5, 1 },	/* past the entries */
	};
	char why[160];

	(void)state;
	bftblk__vt_init(&vt);
	vt.next_id = VT_FIRST_ID + 1;
	bftblk__vt_add(&vt, 0, &e);
	bftblk__vt_encode(&vt, 0, good);
	assert_int_equal(bftblk__vt_decode(&back, 0, good, why, sizeof why), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(blk, good, sizeof blk);
		blk[bad[i].off] = bad[i].val;
		assert_int_equal(bftblk__vt_decode(&back, 0, blk, why,
		    sizeof why), -1);
	}
	/* An id below the table's range is volume-id='s, never the table's. */
	e.id = 5;
	vt.e[0][0] = e;
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), -1);
	/* Block 0's value read as block 1: its header names block 0. */
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 1, blk, why, sizeof why), -1);
}

/* Entries fill block 0, then the next; ids and blocks in use follow. */
static void
test_room(void **state)
{
	char why[160], name[16];

	(void)state;
	bftblk__vt_init(&vt);
	for (unsigned i = 0; i < VT_PER_BLOCK + 3; i++) {
		int bi = bftblk__vt_room(&vt);
		struct vt_entry e;

		assert_int_equal(bi, i < VT_PER_BLOCK ? 0 : 1);
		snprintf(name, sizeof name, "v%u", i);
		e = entry(name, vt.next_id++, BFT_BLOCK_SIZE);
		bftblk__vt_add(&vt, (unsigned)bi, &e);
	}
	assert_int_equal(vt.nblocks, 2);
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), 0);
	bftblk__vt_encode(&vt, 1, blk);
	assert_int_equal(bftblk__vt_decode(&back, 1, blk, why, sizeof why), 0);
	assert_int_equal(back.count[0], VT_PER_BLOCK);
	assert_int_equal(back.count[1], 3);
	assert_string_equal(back.e[1][2].name, "v513");
	bftblk__vt_remove(&back, 1, &back.e[1][0]);
	assert_int_equal(back.count[1], 2);
	assert_string_equal(back.e[1][0].name, "v512");
	assert_null(bftblk__vt_find(&back, "v511", NULL));
}

/*
 * Snapshots are entries of their volume's id: found by (id, name), never
 * as a volume, so a snapshot named like a volume hides nothing.  Volume
 * 0's snapshots have id 0, which no volume entry may have.
 */
static void
test_snapshots(void **state)
{
	struct vt_entry v = entry("vm1", VT_FIRST_ID, 4 * BFT_BLOCK_SIZE);
	struct vt_entry s = v, z = v, other;
	char why[160];
	unsigned bi;

	(void)state;
	bftblk__vt_init(&vt);
	vt.next_id = VT_FIRST_ID + 2;
	s.state = VT_SNAP;
	s.generation = 9;
	strcpy(s.name, "vm2");		/* a snapshot named like a volume */
	z.state = VT_SNAP_DELETING;
	z.id = 0;
	strcpy(z.name, "daily");
	other = entry("vm2", VT_FIRST_ID + 1, BFT_BLOCK_SIZE);
	bftblk__vt_add(&vt, 0, &v);
	bftblk__vt_add(&vt, 0, &s);
	bftblk__vt_add(&vt, 0, &z);
	bftblk__vt_add(&vt, 0, &other);
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), 0);
	assert_int_equal(back.count[0], 4);
	assert_same(&back.e[0][1], &s);
	assert_same(&back.e[0][2], &z);
	/* The volume vm2 is the volume, not vm1's snapshot vm2. */
	assert_int_equal(bftblk__vt_find(&back, "vm2", NULL)->id,
	    VT_FIRST_ID + 1);
	assert_true(bftblk__vt_find_snap(&back, VT_FIRST_ID, "vm2", &bi) ==
	    &back.e[0][1]);
	assert_int_equal(bi, 0);
	assert_null(bftblk__vt_find_snap(&back, VT_FIRST_ID + 1, "vm2", NULL));
	assert_null(bftblk__vt_find(&back, "daily", NULL));
	assert_non_null(bftblk__vt_find_snap(&back, 0, "daily", NULL));
	assert_true(bftblk__vt_is_snap(&back.e[0][2]));
	assert_false(bftblk__vt_is_snap(&back.e[0][0]));
	/* Id 0 is a snapshot's of volume 0, never a volume's. */
	vt.e[0][0].id = 0;
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), -1);
}

/*
 * Clones: the parent round-trips; a table without clones has byte 2 and
 * bytes 112 on zero, as the first format's readers require; a parent id
 * a writer could not have given (not yet handed out, the clone's own)
 * is refused.
 */
static void
test_clone_entries(void **state)
{
	struct vt_entry v = entry("base", VT_FIRST_ID, 8 * BFT_BLOCK_SIZE);
	struct vt_entry s = v, c = entry("c", VT_FIRST_ID + 1, v.size);
	struct vt_entry cs, z = entry("z", VT_FIRST_ID + 2, v.size);
	const uint8_t *p = blk + VT_HDR;
	char why[160];

	(void)state;
	bftblk__vt_init(&vt);
	vt.next_id = VT_FIRST_ID + 3;
	s.state = VT_SNAP;
	s.generation = 9;
	strcpy(s.name, "gold");
	c.clone = true;
	c.parent_id = v.id;
	c.parent_gen = 9;
	cs = c;
	cs.state = VT_SNAP;
	cs.generation = 4;
	strcpy(cs.name, "cs");
	/* A clone of volume 0's snapshot: parent id 0. */
	z.clone = true;
	z.parent_gen = 2;
	bftblk__vt_add(&vt, 0, &v);
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(p[2], 0);
	for (size_t i = 112; i < VT_ENTRY; i++)
		assert_int_equal(p[i], 0);
	bftblk__vt_add(&vt, 0, &s);
	bftblk__vt_add(&vt, 0, &c);
	bftblk__vt_add(&vt, 0, &cs);
	bftblk__vt_add(&vt, 0, &z);
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), 0);
	assert_same(&back.e[0][2], &c);
	assert_same(&back.e[0][3], &cs);
	assert_same(&back.e[0][4], &z);
	/* A parent not yet handed out. */
	vt.e[0][2].parent_id = VT_FIRST_ID + 3;
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), -1);
	/* Its own parent. */
	vt.e[0][2].parent_id = VT_FIRST_ID + 1;
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), -1);
	/* Below the table's ids and not volume 0. */
	vt.e[0][2].parent_id = 7;
	bftblk__vt_encode(&vt, 0, blk);
	assert_int_equal(bftblk__vt_decode(&back, 0, blk, why, sizeof why), -1);
}

/*
 * The chain a clone reads through, and who depends on a snapshot: a
 * clone of a clone's snapshot reads its parent, then that snapshot's
 * parent; a missing parent and a chain past VT_DEPTH are refused, and a
 * snapshot's dependants are named (a snapshot of a clone as V@S), those
 * being deleted not among them.
 */
static void
test_clone_chains(void **state)
{
	struct vt_entry w = entry("w", VT_FIRST_ID, BFT_BLOCK_SIZE);
	struct vt_entry ws = w, c = entry("c", VT_FIRST_ID + 1, w.size), cs;
	struct vt_entry d = entry("d", VT_FIRST_ID + 2, w.size);
	struct vt_parent chain[VT_DEPTH];
	char why[160], names[128];
	unsigned n;

	(void)state;
	bftblk__vt_init(&vt);
	vt.next_id = VT_FIRST_ID + 3;
	ws.state = VT_SNAP;
	ws.generation = 4;
	c.clone = true;
	c.parent_id = w.id;
	c.parent_gen = 4;
	cs = c;
	cs.state = VT_SNAP;
	cs.generation = 11;
	strcpy(cs.name, "cs");
	d.clone = true;
	d.parent_id = c.id;
	d.parent_gen = 11;
	bftblk__vt_add(&vt, 0, &w);
	bftblk__vt_add(&vt, 0, &ws);
	bftblk__vt_add(&vt, 0, &c);
	bftblk__vt_add(&vt, 0, &cs);
	bftblk__vt_add(&vt, 0, &d);
	assert_int_equal(bftblk__vt_parents(&vt, &d, chain, &n, why,
	    sizeof why), 0);
	assert_int_equal(n, 2);
	assert_int_equal(chain[0].id, c.id);
	assert_int_equal(chain[0].gen, 11);
	assert_int_equal(chain[1].id, w.id);
	assert_int_equal(chain[1].gen, 4);
	assert_int_equal(bftblk__vt_parents(&vt, &w, chain, &n, why,
	    sizeof why), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bftblk__vt_dependants(&vt, w.id, 4, names,
	    sizeof names), 2);
	assert_string_equal(names, "c, c@cs");
	assert_int_equal(bftblk__vt_dependants(&vt, c.id, 11, names,
	    sizeof names), 1);
	assert_string_equal(names, "d");
	assert_int_equal(bftblk__vt_dependants(&vt, w.id, 5, names,
	    sizeof names), 0);
	/* A clone, or a clone's snapshot, being deleted holds nothing. */
	vt.e[0][4].state = VT_DELETING;
	assert_int_equal(bftblk__vt_dependants(&vt, c.id, 11, names,
	    sizeof names), 0);
	vt.e[0][3].state = VT_SNAP_DELETING;
	assert_int_equal(bftblk__vt_dependants(&vt, w.id, 4, names,
	    sizeof names), 1);
	assert_string_equal(names, "c");
	vt.e[0][4].state = VT_LIVE;
	vt.e[0][3].state = VT_SNAP;
	/* The snapshot w@4 gone: c's chain is broken, and said so. */
	bftblk__vt_remove(&vt, 0, &vt.e[0][1]);
	assert_int_equal(bftblk__vt_parents(&vt, &d, chain, &n, why,
	    sizeof why), -1);
	/* A snapshot that is its own parent: a cycle stops at VT_DEPTH. */
	bftblk__vt_init(&vt);
	vt.next_id = VT_FIRST_ID + 3;
	cs.parent_id = cs.id;
	cs.parent_gen = cs.generation;
	bftblk__vt_add(&vt, 0, &cs);
	assert_int_equal(bftblk__vt_parents(&vt, &cs, chain, &n, why,
	    sizeof why), -1);
	assert_non_null(strstr(why, "deep"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refuses_damage),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_snapshots),
		cmocka_unit_test(test_clone_entries),
		cmocka_unit_test(test_clone_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
