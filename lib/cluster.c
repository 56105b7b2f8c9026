/* bftblk__cluster_finalized (cluster_int.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "engine_int.h"
#include "featureset.h"
#include "handle_int.h"
#include "session.h"

/*
 * Server i's finalized level into *fin (0 for a release 0.2.0 server,
 * which cannot say), or a negative errno with why in msg.
 */
static int
ask_one(struct bftblk *h, unsigned i, struct bft_msg *req,
    struct bft_msg *rep, unsigned *fin, char *msg, size_t len)
{
	struct bft_session_fail f;
	struct bft_session s;
	const char *why = "";
	int st, r;

	r = bft_session_open(&s, &h->cfg, &h->key, i, h->timeout_s * 1000,
	    true, &f);
	if (r != 0) {
		bft_session_fail_str(&f, msg, len);
		return r;
	}
	*fin = 0;
	if (s.chan.peer_level > 0) {
		memset(req, 0, sizeof *req);
		req->type = BFT_STATUS;
		st = bft_session_call(&s, req, rep, &why);
		if (st != BFT_OK) {
			snprintf(msg, len, "STATUS: %s", st < 0 ? why :
			    bft_status_str(st));
			r = st < 0 ? st : -EIO;
		} else {
			*fin = (unsigned)rep->info.finalized;
		}
	}
	bft_session_close(&s);
	return r;
}

int
bftblk__cluster_finalized(struct bftblk *h, unsigned feature)
{
	struct bft_msg *req, *rep;
	char msg[192] = "", first[224] = "";
	unsigned fin = 0;
	int err = 0, r = 1, e;

	if (bft_feature_level(feature) < 0)
		return bftblk__handle_fail(h, EINVAL, "unknown feature %u",
		    feature);
	req = calloc(1, sizeof *req);
	rep = calloc(1, sizeof *rep);
	if (req == NULL || rep == NULL) {
		r = bftblk__handle_fail(h, ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < h->cfg.n && r == 1; i++) {
		e = ask_one(h, i, req, rep, &fin, msg, sizeof msg);
		if (e < 0) {
			if (err == 0) {
				err = e;
				snprintf(first, sizeof first, "server %u: %s",
				    i, msg);
			}
			continue;
		}
		if (!bft_feature_usable(feature, fin))
			r = 0;
	}
	if (r == 1 && err != 0)
		r = bftblk__handle_fail(h, -err, "cannot tell whether the "
		    "cluster is finalized: %s", first);
out:
	free(req);
	free(rep);
	return r;
}
