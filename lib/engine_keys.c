/*
 * MAC key epochs as an engine lives through them (docs/key-epochs.md).
 *
 * The engine keeps its own copy of the handle's MAC keys, which only
 * the loop thread reads and changes: it signs under k[] and kw, and
 * checks MACs under those or, during a rotation, the other epoch's.
 * Its key file (keys= or server-key=) is looked at every
 * KEY_CHECK_MS: a rotation's files add the next epoch, which this
 * engine accepts from then on, and a retirement's drop the old one.
 *
 * A writer signs under the next epoch only once every server says, in
 * its STATUS, that it accepts that epoch.  Every server, not n-t: a
 * correct server that does not hold the key yet would refuse each such
 * write, and so count against the fault budget for as long as it
 * lasts.  Until then the engine asks each server's STATUS every
 * KEY_CHECK_MS.
 *
 * Each change of the keys is logged as a warning: which keys a writer
 * signs under is what an operator must see without -v.
 */
#include <string.h>
#include <sys/stat.h>

#include "conn_int.h"
#include "error_int.h"

#define KEY_CHECK_MS	2000

/* Whether server i said it accepts MAC epoch e. */
static bool
server_accepts(const struct engine_loop *lp, unsigned i, uint32_t e)
{
	if (!(lp->epochs_known & (1u << i)))
		return false;
	return lp->srv_epoch[i] == e ||
	    (lp->srv_next[i] != 0 && lp->srv_next[i] == e);
}

/* Whether the writer has a next epoch it does not sign under yet. */
static bool
switch_pending(const struct bft_engine *cl)
{
	const struct bft_client_key *k = cl->p.key;

	return k->role == BFT_ROLE_RW && bft_client_key_next_pending(k);
}

/* Signs under the next epoch once every server accepts it. */
static void
maybe_switch(struct engine_loop *lp, struct bft_engine *cl)
{
	if (!switch_pending(cl))
		return;
	for (unsigned i = 0; i < cl->n; i++)
		if (!server_accepts(lp, i, cl->key.alt_epoch))
			return;
	bft_client_key_swap(&cl->key);
	bftblk__eng_log(cl, BFTBLK_LOG_WARN, "MAC keys: every server accepts "
	    "epoch %u; writes are signed under it from now on (epoch %u "
	    "still accepted)", cl->key.epoch, cl->key.alt_epoch);
}

void
bftblk__engine_note_status(struct conn *c, const struct bft_status_info *s)
{
	struct engine_loop *lp = c->cl->lp;

	lp->srv_epoch[c->idx] = (uint32_t)s->mac_epoch;
	lp->srv_next[c->idx] = (uint32_t)s->mac_next_epoch;
	lp->epochs_known |= 1u << c->idx;
	maybe_switch(lp, c->cl);
}

/*
 * Takes the MAC keys of the file just loaded into k (a writer's or a
 * peer's identity, as bftblk.c made it).  A writer already signing
 * under the file's next epoch goes on doing so.  Anything but the MAC
 * keys must be as the engine started with: another identity is
 * another handle's business.
 */
static void
take_keys(struct bft_engine *cl, struct bft_client_key *k)
{
	struct bft_client_key *cur = &cl->key;
	uint32_t signing = cur->epoch;

	if (memcmp(k->cluster_id, cur->cluster_id, BFT_CLUSTER_ID_LEN) ||
	    k->role != cur->role || k->n != cur->n || k->self != cur->self ||
	    memcmp(k->chan.pk, cur->chan.pk, sizeof k->chan.pk)) {
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "%s changed to another "
		    "identity; keeping the keys it had", cl->p.key_path);
		return;
	}
	if (k->epoch == cur->epoch && k->has_alt == cur->has_alt &&
	    (!k->has_alt || k->alt_epoch == cur->alt_epoch))
		return;
	if (cur->has_alt && k->has_alt && k->epoch == cur->alt_epoch &&
	    k->alt_epoch == cur->epoch)
		return;		/* the same two epochs, already swapped */
	bft_client_key_take_macs(cur, k);
	cl->keys_gen++;
	if (cur->has_alt && cur->alt_epoch == signing)
		bft_client_key_swap(cur);
	if (cur->has_alt)
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "MAC keys: %s holds "
		    "epochs %u and %u; signing under %u", cl->p.key_path,
		    cur->epoch < cur->alt_epoch ? cur->epoch : cur->alt_epoch,
		    cur->epoch < cur->alt_epoch ? cur->alt_epoch : cur->epoch,
		    cur->epoch);
	else
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "MAC keys: %s holds "
		    "epoch %u alone; the others are refused from now on",
		    cl->p.key_path, cur->epoch);
	maybe_switch(cl->lp, cl);
}

/* The key file again, when it changed since last looked at. */
static void
watch_key_file(struct engine_loop *lp, struct bft_engine *cl)
{
	static _Thread_local struct bft_client_key k;
	struct bft_server_key sk;
	char err[512];
	struct stat sb;
	int r;

	/*
	 * The first look loads it too: an engine started long after its
	 * handle loaded the file (a lease's, a volume table's) starts with
	 * the keys of that moment.
	 */
	if (cl->p.key_path == NULL || stat(cl->p.key_path, &sb) != 0 ||
	    (sb.st_mtim.tv_sec == lp->key_mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == lp->key_mtime.tv_nsec))
		return;
	lp->key_mtime = sb.st_mtim;
	if (cl->key.role == BFT_ROLE_PEER) {
		r = bft_server_key_load(cl->p.key_path, &sk, err, sizeof err);
		if (r == 0)
			bft_peer_key(&sk, &k);
		bft_wipe(&sk, sizeof sk);
	} else {
		r = bft_client_key_load(cl->p.key_path, &k, err, sizeof err);
	}
	if (r != 0)
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "%s changed but does not "
		    "load (%s); keeping the keys it had", cl->p.key_path, err);
	else
		take_keys(cl, &k);
	bft_wipe(&k, sizeof k);
}

bool
bftblk__engine_keys_stale(struct op *op)
{
	struct bft_engine *cl = op->cl;

	watch_key_file(cl->lp, cl);
	if (cl->keys_gen != op->unsigned_gen)
		return false;
	bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "block %llu: %u servers answered "
	    "with what this client's MAC keys do not verify (epoch %u%s): "
	    "%s is out of date", (unsigned long long)op->block,
	    popcount32(op->unsigned_lc), cl->key.epoch,
	    cl->key.has_alt ? " and the next" : " only",
	    cl->p.key_path != NULL ? cl->p.key_path : "its key file");
	return true;
}

/* Asks c's server for its STATUS, when a switch waits on it. */
void
bftblk__engine_keys_probe(struct conn *c)
{
	/* Large, so static; per thread, as each engine has its own loop. */
	static _Thread_local struct bft_msg probe;

	if (c->state != C_READY || !switch_pending(c->cl))
		return;
	/* Id 0 matches no round: bftblk__engine_dispatch notes it. */
	memset(&probe, 0, sizeof probe);
	probe.type = BFT_STATUS;
	bftblk__conn_send(c, &probe);
}

void
bftblk__engine_keys_watch(struct engine_loop *lp, uint64_t now)
{
	struct bft_engine *cl = lp->conns[0].cl;

	if (now < lp->key_next_ms)
		return;
	lp->key_next_ms = now + KEY_CHECK_MS;
	watch_key_file(lp, cl);
	for (unsigned i = 0; i < cl->n; i++)
		bftblk__engine_keys_probe(&lp->conns[i]);
}
