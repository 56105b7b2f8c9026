/*
 * For tests only: never compiled into bftblk-server (the Makefile adds
 * server/testing/store_discard.c to the test programs that use it).
 */
#ifndef BFTBLK_STORE_DISCARD_H
#define BFTBLK_STORE_DISCARD_H

struct bft_store;

/*
 * Closes st as a crash would leave it: what was appended stays in the
 * files as written, but nothing is synced and no index checkpoint is
 * written, which bft_store_close() does at a cost that grows with the
 * index.  For a test that removes the directory next, or that checks
 * the replay of the whole log.  Background syncs and checkpoints that
 * are running are waited for, since their threads use the store.
 */
void bft_store_discard(struct bft_store *st);

#endif
