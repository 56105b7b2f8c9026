/*
 * bft_store_discard(), for tests (store_discard.h).  It needs the
 * store's insides, like server/store/; nothing in bftblk-server
 * calls it.
 */
#include "../store/store_int.h"
#include "store_discard.h"

void
bft_store_discard(struct bft_store *st)
{
	if (st == NULL)
		return;
	/* Their threads hold descriptors and the index close frees. */
	(void)st_ckpt_wait(st);
	(void)st_bg_sync_wait(st);
	/* Close then skips the sync and the checkpoint. */
	st->opened = false;
	bft_store_close(st);
}
