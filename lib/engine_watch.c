/*
 * What the engine watches between rounds, from its tick: the servers'
 * misdeeds, reported by name, and bftblk.conf, for replaced servers.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "conn_int.h"
#include "error_int.h"

#define CONFIG_CHECK_MS	2000	/* between looks at bftblk.conf */
#define KEEPALIVE_MS	5000	/* idle links are asked for STATUS */

/* The stats file, with one line in the log the first time it fails. */
static void
write_stats_file(struct engine_loop *lp, struct bft_engine *cl, bool closing)
{
	if (bftblk__eng_stats_file_write(cl, (const uint64_t (*)[EV_KINDS])
	    lp->ev_recent, closing) == 0) {
		lp->stats_file_failed = false;
		return;
	}
	if (!lp->stats_file_failed)
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "stats-file %s: cannot "
		    "write it: %s", cl->p.stats_path, bftblk__errmsg());
	lp->stats_file_failed = true;
}

void
bftblk__engine_watch_stop(struct engine_loop *lp)
{
	struct bft_engine *cl = lp->conns[0].cl;

	if (cl->p.stats_path != NULL)
		write_stats_file(lp, cl, true);
}

/*
 * What each server did that a correct server does not, reported every
 * EVIDENCE_MS when it grew, naming the server: a liar shows up in the
 * log by name without -v, and in the stats file when there is one.
 */
static void
report_evidence(struct engine_loop *lp, struct bft_engine *cl)
{
	static const char *what[EV_KINDS] = { "bad fragments",
	    "forged timestamps", "replies to requests never made",
	    "error replies", "rounds it left unanswered" };

	for (unsigned i = 0; i < cl->n; i++) {
		const struct engine_server_stats *s = &cl->stats.server[i];
		uint64_t now[EV_KINDS] = { s->bad_fragments, s->forged_ts,
		    s->mismatched, s->error_replies, s->timeouts };
		char line[400];
		size_t off = 0;

		for (int k = 0; k < EV_KINDS; k++) {
			uint64_t d = now[k] - lp->ev_last[i][k];
			int w;

			lp->ev_recent[i][k] = d;
			if (d == 0)
				continue;
			w = snprintf(line + off, sizeof line - off, "%s%llu %s",
			    off ? ", " : "", (unsigned long long)d, what[k]);
			if (w > 0 && (size_t)w < sizeof line - off)
				off += (size_t)w;
			lp->ev_last[i][k] = now[k];
		}
		if (off > 0)
			bftblk__eng_log(cl, BFTBLK_LOG_WARN, "server %u: %s in "
			    "the last %u s", i, line, EVIDENCE_MS / 1000);
	}
	if (cl->p.stats_path != NULL)
		write_stats_file(lp, cl, false);
}

/* Whether server i's key or next key differ between a and b. */
static bool
keys_changed(const struct bft_config *a, const struct bft_config *b,
    unsigned i)
{
	const uint8_t *na = bft_config_pk_next(a, i);
	const uint8_t *nb = bft_config_pk_next(b, i);

	if (memcmp(a->server_pk[i], b->server_pk[i], 32) != 0 ||
	    (na == NULL) != (nb == NULL))
		return true;
	return na != NULL && memcmp(na, nb, 32) != 0;
}

/*
 * Whether c's server proved a key cfg still lists for it.  A rotation
 * (`bftblk server rotate`) changes the keys twice, and a connection
 * under the key that stays must not be dropped for it: no reconnect
 * and no round waiting on one.  A handshake under way is checked
 * against the old keys, so it is made anew.
 */
static bool
still_keyed(const struct conn *c, const struct bft_config *cfg)
{
	const uint8_t *nx = bft_config_pk_next(cfg, c->idx);

	if (c->state != C_HELLO && c->state != C_READY)
		return false;
	return memcmp(c->chan.peer_pk, cfg->server_pk[c->idx], 32) == 0 ||
	    (nx != NULL && memcmp(c->chan.peer_pk, nx, 32) == 0);
}

/*
 * A server replaced (`bftblk server replace`) has another address or
 * key in bftblk.conf: the connection goes to the new one, and the old
 * key is trusted no more.  A server being rotated has a next key: it is
 * accepted beside the old one, so a server restarted under it is
 * reached.  Checked every CONFIG_CHECK_MS by the file's
 * modification time; nothing else in the file may change.
 */
static void
watch_config(struct engine_loop *lp, struct bft_engine *cl)
{
	static struct bft_config next;
	struct bft_config *cfg = cl->p.cfg;
	char err[256];
	struct stat sb;

	if (cl->p.config_path == NULL || stat(cl->p.config_path, &sb) != 0 ||
	    (sb.st_mtim.tv_sec == lp->cfg_mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == lp->cfg_mtime.tv_nsec))
		return;
	if (lp->cfg_mtime.tv_sec == 0 && lp->cfg_mtime.tv_nsec == 0) {
		lp->cfg_mtime = sb.st_mtim;	/* as loaded at start */
		return;
	}
	lp->cfg_mtime = sb.st_mtim;
	if (bft_config_load(cl->p.config_path, &next, err, sizeof err) != 0) {
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "%s changed but does not "
		    "load (%s); keeping the servers as they were",
		    cl->p.config_path, err);
		return;
	}
	if (memcmp(next.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN) ||
	    next.n != cfg->n) {
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "%s now describes another "
		    "cluster; ignored", cl->p.config_path);
		return;
	}
	for (unsigned i = 0; i < cfg->n; i++) {
		struct conn *c = &lp->conns[i];
		const uint8_t *nx = bft_config_pk_next(&next, i);
		bool moved = memcmp(&next.servers[i], &cfg->servers[i],
		    sizeof cfg->servers[i]) != 0;

		if (!moved && !keys_changed(cfg, &next, i))
			continue;
		if (moved && bftblk__conn_resolve(cl, &next.servers[i],
		    &c->addr) != 0)
			continue;
		cfg->servers[i] = next.servers[i];
		memcpy(cfg->server_pk[i], next.server_pk[i], 32);
		cfg->has_pk_next &= ~(1u << i);
		if (nx != NULL) {
			memcpy(cfg->server_pk_next[i], nx, 32);
			cfg->has_pk_next |= 1u << i;
		}
		if (!moved && still_keyed(c, cfg)) {
			bftblk__eng_log(cl, BFTBLK_LOG_INFO, "server %u: keys "
			    "changed in %s; its connection is under one of "
			    "them and stays", i, cl->p.config_path);
			continue;
		}
		bftblk__eng_log(cl, BFTBLK_LOG_WARN, "server %u is now %s:%u "
		    "(%s); reconnecting", i, cfg->servers[i].host,
		    cfg->servers[i].port, cl->p.config_path);
		bftblk__conn_close(c, "replaced in the configuration");
	}
}

/*
 * A link that stops delivering without closing (a stalled stream, a
 * stopped process, a half-dead path) would keep its server out of every
 * round for good.  Within one round's timeout a connection must finish
 * its handshake, and a request must see some frame come back; else the
 * link is closed, said so by name and counted, and reconnected with
 * backoff.  An idle link is probed with STATUS every KEEPALIVE_MS so
 * that a dead one is found before it is needed.
 */
static void
watch_links(struct engine_loop *lp, struct bft_engine *cl, uint64_t now)
{
	/* Large, so static; per thread, as each engine has its own loop. */
	static _Thread_local struct bft_msg probe;
	uint64_t limit = cl->p.timeout_ms;

	for (unsigned i = 0; i < cl->n; i++) {
		struct conn *c = &lp->conns[i];

		switch (c->state) {
		case C_CONNECTING:
		case C_HANDSHAKE:
		case C_HELLO:
			if (now - c->state_ms <= limit)
				break;
			bftblk__eng_log(cl, BFTBLK_LOG_WARN, "server %u: not "
			    "ready %llu ms after connecting; reconnecting", i,
			    (unsigned long long)(now - c->state_ms));
			bftblk__conn_close(c, "handshake timed out");
			break;
		case C_READY:
			if (c->nsent > c->nrcvd && now - c->wait_ms > limit) {
				STAT_ADD(cl, server[i].timeouts, 1);
				bftblk__eng_log(cl, BFTBLK_LOG_WARN, "server "
				    "%u: nothing came back for %llu ms with "
				    "%llu requests waiting; closing the link",
				    i, (unsigned long long)(now - c->wait_ms),
				    (unsigned long long)(c->nsent - c->nrcvd));
				bftblk__conn_close(c, "no reply in time");
			} else if (c->nsent == c->nrcvd &&
			    now - c->last_tx_ms >= KEEPALIVE_MS) {
				/* Id 0 matches no round: the reply is dropped. */
				memset(&probe, 0, sizeof probe);
				probe.type = BFT_STATUS;
				bftblk__conn_send(c, &probe);
			}
			break;
		default:
			break;
		}
	}
}

void
bftblk__engine_watch(struct engine_loop *lp, uint64_t now)
{
	struct bft_engine *cl = lp->conns[0].cl;

	watch_links(lp, cl, now);
	if (now >= lp->ev_next_ms) {
		if (lp->ev_next_ms != 0)
			report_evidence(lp, cl);
		lp->ev_next_ms = now + EVIDENCE_MS;
	}
	if (now >= lp->cfg_next_ms) {
		watch_config(lp, cl);
		lp->cfg_next_ms = now + CONFIG_CHECK_MS;
	}
}
