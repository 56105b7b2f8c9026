/*
 * bftblk keys reauth: every version the servers store, given the MACs
 * of the newest epoch (docs/key-epochs.md, step 3), so that the old
 * epoch can be retired without making anything unreadable.
 *
 * A server cannot re-MAC what readers check (it holds no writer key,
 * and its peers' copies must keep one vector), so a writer does it
 * through the protocol: it reads each block as any reader does, which
 * accepts either epoch and writes back what it must, and sends every
 * server REAUTH with the same timestamp and nonce hash under the new
 * keys.  A server applies it only to a version it holds (else EGONE),
 * so the pass never makes a server hold a value it did not, and needs
 * no lease: a write that lands meanwhile is under the new keys already,
 * and the version read is then older than the server's, which refuses.
 *
 * What to walk is what the servers hold, as t+1 of them say it
 * (keys_reauth_servers.c): each volume they hold blocks of, the volume
 * table's and the lease registers' included, its ranges that hold a
 * written block (SUMMARY), and in those the written blocks (LCLIST).
 *
 * Then each snapshot's view: the blocks written since it was taken
 * (bftblk_snap_diff, which every server answers) are the ones whose
 * view the servers keep in retained records apart from the head, and
 * are read and sent REAUTH at that boundary; the others' view is the
 * head, done already.  A snapshot shares a retained record with an
 * older one where a block did not change between them: the server
 * appends nothing the second time.
 *
 * The pass keeps where it is in DIR/keys-reauth.state (reauth_state.h:
 * epoch, volume, block, and its progress for bftblk status) at most
 * once a second, and starts from there when run again for the same
 * epoch; --restart walks everything again.  The snapshots
 * are walked whole after the volumes, whenever the pass resumed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bftblk.h"
#include "crypto.h"
#include "keys_reauth.h"
#include "log.h"
#include "peer.h"
#include "progress.h"
#include "reauth_state.h"

#define BATCH		BFTBLK__PEER_BATCH

/* Where a pass for this epoch stopped, if one did. */
static void
load_state(struct reauth *ra, uint32_t *vol, uint64_t *block)
{
	struct reauth_state st;

	*vol = 0;
	*block = 0;
	if (ra->a->restart || reauth_state_read(ra->state, &st) != 0 ||
	    st.epoch != ra->epoch || st.vol > BFT_ADDR_MAX_VOL)
		return;
	*vol = st.vol;
	*block = st.block;
	printf("resuming epoch %u's pass at volume %u block %" PRIu64
	    " (%s; --restart to walk everything)\n", ra->epoch, *vol,
	    *block, ra->state);
}

/*
 * Where the pass is and how fast it goes: at most once a second, and
 * whenever it reached another volume (a crash then resumes there).
 */
static void
save_state(struct reauth *ra)
{
	struct reauth_state st = { .epoch = ra->epoch, .vol = ra->at_vol,
	    .block = ra->at_block, .progress = true };
	double now = admin_now_s();

	if (now - ra->saved < 1.0 && ra->at_vol == ra->saved_vol)
		return;
	ra->saved = now;
	ra->saved_vol = ra->at_vol;
	st.done = ra->read + ra->failed;
	st.total = ra->held > st.done ? ra->held : st.done;
	st.rate = now > ra->started ? (uint64_t)((double)st.done *
	    BFT_BLOCK_SIZE / (now - ra->started)) : 0;
	st.at = (int64_t)time(NULL);
	st.pid = (long)getpid();
	if (gethostname(st.host, sizeof st.host - 1) != 0)
		st.host[0] = '\0';
	(void)reauth_state_write(ra->state, &st);
}

/* REAUTH for block's version p, under the newest epoch's keys, into m. */
static void
make_reauth(const struct reauth *ra, uint64_t block,
    const struct bftblk__proof *p, struct bft_msg *m)
{
	memset(m, 0, sizeof *m);
	m->type = BFT_REAUTH;
	m->block = block;
	m->gen = ra->gen;
	m->ts = p->cand.ts;
	bft_ts_sign(&m->ts, block, ra->kw);
	bft_hash(p->cand.nonce, BFT_NONCE_LEN, m->nh);
	for (unsigned i = 0; i < ra->cfg.n; i++)
		bft_vec_mac(&m->ts, block, m->nh, ra->k[i], m->vec[i]);
}

/*
 * reqs[0..nq) to server i, all at once; 0, or -1 when they could not
 * be sent (counted as missed).
 */
static int
send_batch(struct reauth *ra, unsigned i, struct bft_msg *reqs, unsigned nq)
{
	struct reauth_srv *s = &ra->srv[i];
	struct bft_buf out = { 0 };
	int rc = -1;

	if (!reauth_srv_up(ra, i))
		goto out_missed;
	for (unsigned q = 0; q < nq; q++) {
		if (bft_session_seal(&s->s, &reqs[q], &out) < 0) {
			reauth_srv_fail(s, "cannot encode REAUTH");
			goto out_missed;
		}
	}
	if (bft_session_send_raw(&s->s, out.data, out.len) != 0) {
		reauth_srv_fail(s, "send failed");
		goto out_missed;
	}
	rc = 0;
out_missed:
	if (rc != 0)
		s->missed += nq;
	bft_buf_free(&out);
	return rc;
}

/* Server i's nq replies to what send_batch sent it. */
static void
recv_batch(struct reauth *ra, unsigned i, unsigned nq, struct bft_msg *rep)
{
	struct reauth_srv *s = &ra->srv[i];
	const char *why = "";
	unsigned got = 0;

	for (; got < nq; got++) {
		if (bft_session_recv(&s->s, rep, NULL, NULL, &why) != 0) {
			reauth_srv_fail(s, why);
			break;
		}
		if (rep->type != (BFT_REAUTH | BFT_ACK)) {
			reauth_srv_fail(s, "a reply that is not REAUTH's");
			break;
		}
		if (rep->status == BFT_OK) {
			s->ok++;
		} else if (rep->status == BFT_EGONE) {
			s->not_held++;
		} else {
			s->refused++;
			s->last_refusal = rep->status;
		}
	}
	s->missed += nq - got;
}

/*
 * Reads blocks[0..nb) of one kind (sealed or not) and queues a REAUTH
 * for each version read; blocks of the other kind go to other[*nother].
 */
static void
read_batch(struct reauth *ra, int kind, const uint64_t *blocks, unsigned nb,
    struct bft_msg *reqs, unsigned *nq, uint64_t *other, unsigned *nother)
{
	static uint8_t values[BATCH * BFTBLK__PEER_VALUE_MAX];
	struct bftblk__proof proofs[BATCH];
	int errs[BATCH];

	if (ra->h[kind] == NULL && (ra->h[kind] = admin_open_cluster_as(
	    ra->a->dir, ra->a->keys, ra->a->timeout_s, kind)) == NULL) {
		ra->failed += nb;
		return;
	}
	if (bftblk__peer_read(ra->h[kind], ra->gen, blocks, nb, values,
	    proofs, errs) != 0) {
		bft_log("%s", bftblk_errmsg(ra->h[kind]));
		ra->failed += nb;
		return;
	}
	for (unsigned j = 0; j < nb; j++) {
		if (errs[j] == -EMEDIUMTYPE && other != NULL) {
			other[(*nother)++] = blocks[j];
			continue;
		}
		if (errs[j] != 0) {
			bft_log("block %u:%" PRIu64 ": %s",
			    bft_addr_vol(blocks[j]), bft_addr_block(blocks[j]),
			    strerror(-errs[j]));
			ra->failed++;
			continue;
		}
		ra->read++;
		if (proofs[j].zero) {
			ra->zero++;
			continue;
		}
		/*
		 * Under the newest epoch already, as the servers that
		 * answered the read hold it, is no sign that every server
		 * does: one that was down when a pass sent it would keep the
		 * old MACs for good.  It is sent too; a server that has them
		 * appends nothing.
		 */
		if (bft_ts_verify(&proofs[j].cand.ts, blocks[j], ra->kw))
			ra->current++;
		make_reauth(ra, blocks[j], &proofs[j], &reqs[(*nq)++]);
	}
}

/* The blocks (addresses) blocks[0..nb), nb <= BATCH. */
static void
do_batch(struct reauth *ra, const uint64_t *blocks, unsigned nb)
{
	static struct bft_msg reqs[BATCH];
	uint64_t sealed[BATCH];
	bool sent[BFT_MAX_N];
	unsigned nq = 0, ns = 0;

	read_batch(ra, 0, blocks, nb, reqs, &nq, sealed, &ns);
	if (ns > 0)
		read_batch(ra, 1, sealed, ns, reqs, &nq, NULL, NULL);
	if (nq == 0)
		return;
	ra->sent += nq;
	/* Every server works on its batch while the others get theirs. */
	for (unsigned i = 0; i < ra->cfg.n; i++)
		sent[i] = send_batch(ra, i, reqs, nq) == 0;
	for (unsigned i = 0; i < ra->cfg.n; i++)
		if (sent[i])
			recv_batch(ra, i, nq, ra->rep);
}

/* What each server took; 0 when every one took every version. */
static int
report(const struct reauth *ra)
{
	int rc = ra->failed ? 1 : 0;

	printf("%" PRIu64 " blocks read: %" PRIu64 " re-authenticated, %"
	    PRIu64 " under epoch %u already, %" PRIu64 " never written, %"
	    PRIu64 " failed\n", ra->read + ra->failed, ra->sent - ra->current,
	    ra->current, ra->epoch, ra->zero, ra->failed);
	for (unsigned i = 0; i < ra->cfg.n; i++) {
		const struct reauth_srv *s = &ra->srv[i];

		printf("server %u: %" PRIu64 " taken, %" PRIu64 " not held",
		    i, s->ok, s->not_held);
		if (s->refused)
			printf(", %" PRIu64 " refused (%s)", s->refused,
			    bft_status_str(s->last_refusal));
		if (s->missed)
			printf(", %" PRIu64 " not sent (%s)", s->missed,
			    s->why);
		printf("\n");
		if (s->refused || s->missed)
			rc = 1;
	}
	if (rc)
		printf("Run it again once every server is up and accepts "
		    "epoch %u (bftblk status).\n", ra->epoch);
	return rc;
}

/*
 * Gives way to foreground I/O: a batch that took longer than the
 * fastest one so far by more than an idle cluster's spread waited on
 * busy servers (or a busy host), and the pass then sleeps twice the
 * excess: under load it takes about a third of what it could, on an
 * idle cluster nothing.
 */
static void
yield(struct reauth *ra, double took)
{
	struct timespec ts;
	double excess;

	if (ra->best == 0 || took < ra->best)
		ra->best = took;
	/* Within a quarter of the best is an idle cluster's spread. */
	excess = 2 * (took - 1.25 * ra->best);
	if (excess <= 0)
		return;
	if (excess > 1.0)
		excess = 1.0;
	ts.tv_sec = (time_t)excess;
	ts.tv_nsec = (long)((excess - (double)ts.tv_sec) * 1e9);
	(void)nanosleep(&ts, NULL);
}

/* blocks[0..nb) of one view, batch by batch, giving way as the walk does. */
static void
walk_blocks(struct reauth *ra, const uint64_t *blocks, size_t nb,
    struct admin_progress *prog)
{
	for (size_t k = 0; k < nb; k += BATCH) {
		double t0 = admin_now_s();

		do_batch(ra, blocks + k, nb - k < BATCH ? (unsigned)(nb - k) :
		    BATCH);
		yield(ra, admin_now_s() - t0);
		admin_progress(prog, (ra->read + ra->failed) * BFT_BLOCK_SIZE,
		    ra->held * BFT_BLOCK_SIZE, false);
		save_state(ra);
	}
}

/*
 * Volume v's written blocks from block on, range by range: a run that
 * resumes walks again the range this one was in.
 */
static void
walk_volume(struct reauth *ra, const struct reauth_vol *v, uint64_t block,
    struct admin_progress *prog)
{
	static bool nonempty[BFT_SUMMARY_MAX];
	static uint64_t listed[REAUTH_RANGE];

	while (block < v->end) {
		unsigned nr = reauth_ranges(ra, v->vol, block, v->end,
		    nonempty);

		for (unsigned r = 0; r < nr; r++, block += REAUTH_RANGE) {
			uint64_t count = v->end - block < REAUTH_RANGE ?
			    v->end - block : REAUTH_RANGE;
			unsigned nl;

			ra->at_vol = v->vol;
			ra->at_block = block;
			nl = nonempty[r] ? reauth_list(ra, v->vol, block,
			    count, listed) : 0;
			walk_blocks(ra, listed, nl, prog);
			ra->at_block = block + count;
			save_state(ra);
		}
	}
}

/*
 * Every snapshot's view of the blocks written since it was taken.
 * 0, or -1 when a snapshot could not be listed (counted as failed).
 */
static int
walk_snapshots(struct reauth *ra, struct admin_progress *prog)
{
	struct bftblk_snap *snaps = NULL;
	uint64_t *blocks = NULL;
	size_t ns = 0, nb;
	int rc = 0;

	if (ra->h[0] == NULL && (ra->h[0] = admin_open_cluster_as(ra->a->dir,
	    ra->a->keys, ra->a->timeout_s, 0)) == NULL)
		return -1;
	if (bftblk_snap_list(ra->h[0], NULL, &snaps, &ns) != 0) {
		bft_log("snapshots: %s", bftblk_errmsg(ra->h[0]));
		return -1;
	}
	for (size_t i = 0; i < ns; i++) {
		const struct bftblk_snap *sn = &snaps[i];

		if (sn->deleting)
			continue;
		if (bftblk_snap_diff(ra->h[0], sn->volume, sn->name, NULL,
		    &blocks, &nb) != 0) {
			bft_log("snapshot %s@%s: %s", sn->volume, sn->name,
			    bftblk_errmsg(ra->h[0]));
			rc = -1;
			continue;
		}
		printf("snapshot %s@%s: %zu blocks written since\n",
		    sn->volume, sn->name, nb);
		fflush(stdout);
		for (size_t k = 0; k < nb; k++)
			blocks[k] = bft_addr(sn->volume_id, blocks[k]);
		ra->held += nb;
		ra->gen = sn->boundary;
		walk_blocks(ra, blocks, nb, prog);
		free(blocks);
		blocks = NULL;
	}
	ra->gen = BFT_GEN_MAX;
	free(snaps);
	return rc;
}

static int
run(struct reauth *ra)
{
	struct admin_progress prog;
	uint64_t sblock;
	uint32_t svol;

	for (size_t k = 0; k < ra->nvols; k++)
		printf("%s %u: up to block %" PRIu64 "\n",
		    ra->vols[k].vol == BFT_VOL_TABLE ? "volume table" :
		    ra->vols[k].vol == BFT_VOL_LEASES ? "lease registers" :
		    "volume", ra->vols[k].vol, ra->vols[k].end);
	printf("about %" PRIu64 " blocks held\n", ra->held);
	fflush(stdout);
	load_state(ra, &svol, &sblock);
	ra->at_vol = svol;
	ra->at_block = sblock;
	ra->started = admin_now_s();
	admin_progress_start(&prog, "reauth", "MiB", 1u << 20);
	for (size_t k = 0; k < ra->nvols; k++) {
		const struct reauth_vol *v = &ra->vols[k];

		if (v->vol >= svol)
			walk_volume(ra, v, v->vol == svol ?
			    sblock / REAUTH_RANGE * REAUTH_RANGE : 0, &prog);
	}
	if (walk_snapshots(ra, &prog) != 0)
		ra->failed++;
	if (ra->held < ra->read + ra->failed)
		ra->held = ra->read + ra->failed;
	admin_progress(&prog, (ra->read + ra->failed) * BFT_BLOCK_SIZE,
	    ra->held * BFT_BLOCK_SIZE, true);
	/* Done, or failed somewhere: a next run walks everything. */
	(void)unlink(ra->state);
	return report(ra);
}

int
keys_reauth(struct keys_args *a)
{
	static struct reauth ra;
	char err[1024], conf[ADMIN_PATH_MAX];
	int rc = 1;

	memset(&ra, 0, sizeof ra);
	ra.a = a;
	ra.gen = BFT_GEN_MAX;
	for (unsigned i = 0; i < BFT_MAX_N; i++)
		ra.srv[i].s.fd = -1;
	if (admin_load_cluster(a->dir, a->keys, &ra.cfg, &ra.ck, err,
	    sizeof err) != 0) {
		bft_log("%s", err);
		goto out_wipe;
	}
	(void)admin_cluster_paths(a->dir, a->keys, conf, a->keypath);
	if (ra.ck.role != BFT_ROLE_RW || !ra.ck.has_alt) {
		bft_log("%s holds %s: there is nothing to re-authenticate "
		    "(bftblk keys rotate first)", a->keypath,
		    ra.ck.role != BFT_ROLE_RW ? "no MAC keys" :
		    "one MAC key epoch");
		goto out_wipe;
	}
	if (bft_client_key_next_pending(&ra.ck)) {
		ra.kw = ra.ck.kw_alt;
		ra.k = (const uint8_t (*)[BFT_KEY_LEN])ra.ck.k_alt;
		ra.epoch = ra.ck.alt_epoch;
	} else {
		ra.kw = ra.ck.kw;
		ra.k = (const uint8_t (*)[BFT_KEY_LEN])ra.ck.k;
		ra.epoch = ra.ck.epoch;
	}
	ra.req = calloc(1, sizeof *ra.req);
	ra.rep = calloc(1, sizeof *ra.rep);
	if (ra.req == NULL || ra.rep == NULL) {
		bft_log("out of memory");
		goto out_close;
	}
	if (admin_path_in(ra.state, sizeof ra.state, a->dir,
	    REAUTH_STATE_FILE) != 0 || reauth_gather(&ra) != 0)
		goto out_close;
	rc = run(&ra);
out_close:
	for (unsigned i = 0; i < ra.cfg.n; i++)
		bft_session_close(&ra.srv[i].s);
	bftblk_close(ra.h[0]);
	bftblk_close(ra.h[1]);
	free(ra.vols);
	free(ra.req);
	free(ra.rep);
out_wipe:
	bft_wipe(&ra.ck, sizeof ra.ck);
	return rc;
}
