/*
 * The space snapshots hold on the servers, for `bftblk snap list`: each
 * server is asked (SNAPSPACE, wire.h) what it keeps only for each
 * snapshot's boundary, a piece of the volume at a time, and the answers
 * are added up.  A server of release 0.2.0 cannot say, and one that does
 * not answer is left out; the count of servers that answered goes with
 * the figure, since up to t of them may also lie about it (the figure
 * informs, it decides nothing).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "proto.h"
#include "session.h"
#include "snap_space.h"
#include "wire.h"

/* Requests per snapshot and server at most: 2^32 blocks at 4096 each. */
#define SPACE_CALLS	(1u << 20)

/* Adds what server i keeps only for each of snaps into sp[]. */
static void
ask_one(const struct bft_config *cfg, const struct bft_client_key *key,
    unsigned i, unsigned timeout_ms, const struct bftblk_snap *snaps,
    size_t n, struct admin_snap_space *sp, struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_session_fail f;
	struct bft_session s;
	const char *why;

	if (bft_session_open(&s, cfg, key, i, timeout_ms, true, &f) != 0)
		return;
	/* Release 0.2.0 knows no SNAPSPACE: it is not asked. */
	if (s.chan.peer_level == 0)
		goto out;
	for (size_t k = 0; k < n; k++) {
		uint64_t next = bft_addr(snaps[k].volume_id, 0), excl = 0;
		unsigned calls = 0;
		int st = BFT_OK;

		while (next != UINT64_MAX && calls++ < SPACE_CALLS) {
			memset(req, 0, sizeof *req);
			req->type = BFT_SNAPSPACE;
			req->block = next;
			req->gen = snaps[k].boundary;
			if ((st = bft_session_call(&s, req, rep, &why)) !=
			    BFT_OK)
				break;
			/* A reply that goes back could walk forever. */
			if (rep->next != UINT64_MAX && rep->next <= next) {
				st = BFT_EPROTO;
				break;
			}
			excl += rep->space_excl;
			next = rep->next;
		}
		if (st == BFT_OK && next == UINT64_MAX) {
			sp[k].exclusive += excl;
			sp[k].answered++;
		}
		if (st < 0)
			break;		/* the session is gone */
	}
out:
	bft_session_close(&s);
}

int
admin_snap_space(const char *dir, const char *keys, unsigned timeout_s,
    const struct bftblk_snap *snaps, size_t n, struct admin_snap_space *sp)
{
	static struct bft_config cfg;
	static struct bft_client_key key;
	char err[512];
	struct bft_msg *req = calloc(1, sizeof *req);
	struct bft_msg *rep = calloc(1, sizeof *rep);
	int r = -ENOMEM;

	memset(sp, 0, n * sizeof *sp);
	if (req == NULL || rep == NULL)
		goto out;
	if ((r = admin_load_cluster(dir, keys, &cfg, &key, err,
	    sizeof err)) != 0)
		goto out;
	for (unsigned i = 0; i < cfg.n; i++)
		ask_one(&cfg, &key, i, timeout_s * 1000, snaps, n, sp, req,
		    rep);
	bft_wipe(&key, sizeof key);
	r = 0;
out:
	free(req);
	free(rep);
	return r;
}
