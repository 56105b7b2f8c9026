/*
 * For tests only: never compiled into bftblk-server (the Makefile adds
 * server/testing/store_reset.c to the test programs that use it).
 */
#ifndef BFTBLK_STORE_RESET_H
#define BFTBLK_STORE_RESET_H

struct bft_store;

/*
 * Empties st in place: afterwards it holds what an open of its
 * directory, emptied but for the identity file, would give, down to
 * the bytes the next appends write (the same segment numbers and
 * sequence numbers), and its directory holds the identity and an empty
 * segment 1, as after that open.  What it keeps is what an open would
 * allocate or make anew: the record buffers, the metadata cache's slots
 * (so the cache's bytes figure says what stays allocated), the side
 * table when it has its first size, the directory's descriptor and lock
 * and segment 1's file.  Nothing is synced: like bft_store_discard(), it
 * is for a test that throws the contents away.  Background syncs and
 * checkpoints that are running are waited for first.
 *
 * 0, or a negative errno (a file could not be removed or cut, or no
 * memory for the index's first page table); st is then fit only for
 * bft_store_discard() or bft_store_close().
 */
int bft_store_reset(struct bft_store *st);

#endif
