/*
 * Proactive recovery on the event loop (rejuv.h): the schedule, asking
 * the peers (on the loop's thread pool, since sessions block), the
 * marker, and the recovery that follows the restart.  The decision rule
 * and why it keeps recoveries apart are in rejuv_decide.c.
 *
 * Schedule: after a start without a marker, the first recovery is due
 * every * (index + 1) / n after it, so that servers of one cluster
 * started together are due a period / n apart; after a recovery's
 * restart, every after the moment it decided to restart (kept in the
 * marker).  A due server that must wait asks again after RETRY_MS plus
 * up to as much again at random, so that two waiting servers drift
 * apart instead of asking in step.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "rejuv.h"
#include "session.h"

#define RETRY_MS	2000	/* a due server that must wait */
#define HOLD_MS		300	/* claim held: a higher one yields */
#define MAX_HOLDS	20	/* then the claim is dropped: a liar's */
#define CHECK_MS	500	/* a recovery looking for its end */
#define PEER_TIMEOUT_MS	2000

struct bft_rejuv {
	struct bft_rejuv_opts o;
	struct bft_handler *h;
	const struct bft_server_key *key;
	unsigned n;
	struct bft_heal_progress *prog;
	void (*restart)(void *);
	void *ctx;
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_work_t work;
	bool working, stopping, closed;
	bool recovering;		/* since a marker's restart */
	unsigned holds;
	uint64_t started_ms;		/* this recovery's, on the loop */
	char why[128];			/* the last reason to wait */

	/* The pool's, while working. */
	struct bft_config *pcfg;
	struct bft_client_key ident;
	struct bft_rejuv_peer peers[BFT_MAX_N];
};

static void on_timer(uv_timer_t *t);

static void
marker_path(const struct bft_rejuv *r, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", r->o.data_dir, BFT_REJUV_MARKER);
}

bool
bft_rejuv_pending(const char *data_dir)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", data_dir, BFT_REJUV_MARKER);
	return access(path, F_OK) == 0;
}

/* The directory's entry must last too, or a crash could lose it. */
static int
sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/* The marker says when this recovery was decided and how many before. */
static int
marker_write(struct bft_rejuv *r)
{
	char path[4096], line[96];
	int fd, len, ok;

	marker_path(r, path, sizeof path);
	len = snprintf(line, sizeof line, "decided %lld\nrecoveries %" PRIu64
	    "\n", (long long)time(NULL), r->prog->recoveries);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out_err;
	ok = write(fd, line, (size_t)len) == len && fsync(fd) == 0;
	if (close(fd) < 0 || !ok || sync_dir(r->o.data_dir) < 0)
		goto out_err;
	return 0;
out_err:
	bft_error("recovery: %s: %s", path, strerror(errno));
	unlink(path);
	return -1;
}

/* What the marker says; a torn one is a recovery decided just now. */
static void
marker_read(struct bft_rejuv *r, long long *decided, uint64_t *count)
{
	char path[4096], buf[128];
	FILE *f;

	*decided = (long long)time(NULL);
	*count = 0;
	marker_path(r, path, sizeof path);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(buf, sizeof buf, f) != NULL) {
		if (sscanf(buf, "decided %lld", decided) == 1)
			continue;
		if (sscanf(buf, "recoveries %" SCNu64, count) == 1)
			continue;
	}
	fclose(f);
}

static void
arm(struct bft_rejuv *r, uint64_t ms)
{
	if (!r->stopping)
		uv_timer_start(&r->timer, on_timer, ms, 0);
}

static uint64_t
jitter(uint64_t base)
{
	return base + (uint64_t)random() % (base + 1);
}

/* Asks every peer for its STATUS: the pool's thread, blocking. */
static void
ask_peers(uv_work_t *w)
{
	struct bft_rejuv *r = w->data;
	struct bft_session_fail f;
	struct bft_session s;
	struct bft_msg *req, *rep;
	const char *why;
	char err[512];

	memset(r->peers, 0, sizeof r->peers);
	req = calloc(1, sizeof *req);
	rep = calloc(1, sizeof *rep);
	/* Peers' addresses and keys may have changed under SIGHUP. */
	if (req == NULL || rep == NULL ||
	    bft_config_load(r->o.config_path, r->pcfg, err, sizeof err) != 0)
		goto out_free;
	for (unsigned j = 0; j < r->n && j < r->pcfg->n; j++) {
		if (j == r->key->index)
			continue;
		if (bft_session_open(&s, r->pcfg, &r->ident, j,
		    PEER_TIMEOUT_MS, true, &f) != 0)
			continue;
		memset(req, 0, sizeof *req);
		req->type = BFT_STATUS;
		if (bft_session_call(&s, req, rep, &why) == BFT_OK) {
			r->peers[j].answered = true;
			r->peers[j].recovering = rep->info.recovering;
		}
		bft_session_close(&s);
	}
out_free:
	free(req);
	free(rep);
}

static void
free_if_done(struct bft_rejuv *r)
{
	if (r->closed && !r->working) {
		free(r->pcfg);
		free(r);
	}
}

/* Logs a reason to wait once, not at every retry. */
static void
waiting(struct bft_rejuv *r, enum bft_rejuv_verdict v, unsigned who)
{
	char why[128];

	snprintf(why, sizeof why, "server %u %s", who,
	    v == BFT_REJUV_WAIT_DOWN ? "unreachable" :
	    v == BFT_REJUV_WAIT_RECOVERING ? "recovering" :
	    v == BFT_REJUV_WAIT_LOWER ? "about to recover" :
	    "holds its claim");
	if (strcmp(why, r->why) != 0)
		bft_log("recovery due, waiting: %s", why);
	snprintf(r->why, sizeof r->why, "%s", why);
}

static void
go(struct bft_rejuv *r)
{
	if (marker_write(r) < 0) {
		r->prog->recovering = BFT_RECOVERING_NONE;
		arm(r, jitter(RETRY_MS));
		return;
	}
	bft_log("recovering: restarting from %s", r->o.exe);
	r->restart(r->ctx);
}

static void
peers_answered(uv_work_t *w, int status)
{
	struct bft_rejuv *r = w->data;
	bool claimed = r->prog->recovering == BFT_RECOVERING_CLAIMED;
	enum bft_rejuv_verdict v;
	unsigned who = 0;

	r->working = false;
	if (r->stopping || status != 0) {
		free_if_done(r);
		return;
	}
	v = bft_rejuv_decide(r->key->index, r->n, r->peers, claimed, &who);
	switch (v) {
	case BFT_REJUV_CLAIM:
		/* Visible to any STATUS from now, before we ask again. */
		r->prog->recovering = BFT_RECOVERING_CLAIMED;
		r->holds = 0;
		arm(r, 0);
		return;
	case BFT_REJUV_HOLD:
		if (++r->holds <= MAX_HOLDS) {
			arm(r, HOLD_MS);
			return;
		}
		break;
	case BFT_REJUV_GO:
		r->why[0] = '\0';
		go(r);
		return;
	default:
		break;
	}
	waiting(r, v, who);
	r->prog->recovering = BFT_RECOVERING_NONE;
	arm(r, jitter(RETRY_MS));
}

/* A recovery ends when a scrub pass and a catch-up pass have. */
static void
check_recovered(struct bft_rejuv *r)
{
	char path[4096];
	uint64_t now = uv_now(r->loop);

	if (r->prog->scrub_passes == 0 || r->prog->rebuild_caught_up == 0) {
		arm(r, CHECK_MS);
		return;
	}
	marker_path(r, path, sizeof path);
	if (unlink(path) < 0 && errno != ENOENT)
		bft_warn("recovery: %s: %s", path, strerror(errno));
	sync_dir(r->o.data_dir);
	r->recovering = false;
	r->prog->recovering = BFT_RECOVERING_NONE;
	r->prog->recoveries++;
	bft_log("recovery done in %.1f s (scrubbed %" PRIu64 " records, "
	    "rebuilt %" PRIu64 " blocks)", (double)(now - r->started_ms) /
	    1000, r->prog->scrub_checked, r->prog->rebuild_bytes /
	    BFT_BLOCK_SIZE);
	if (r->o.every_s == 0)
		return;
	arm(r, r->started_ms + (uint64_t)r->o.every_s * 1000 > now ?
	    r->started_ms + (uint64_t)r->o.every_s * 1000 - now : 0);
}

static void
on_timer(uv_timer_t *t)
{
	struct bft_rejuv *r = t->data;

	if (r->stopping || r->working)
		return;
	if (r->recovering) {
		check_recovered(r);
		return;
	}
	r->working = true;
	if (uv_queue_work(r->loop, &r->work, ask_peers, peers_answered) != 0) {
		r->working = false;
		arm(r, jitter(RETRY_MS));
	}
}

struct bft_rejuv *
bft_rejuv_start(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_server_key *key, unsigned n,
    const struct bft_rejuv_opts *o, struct bft_heal_progress *prog,
    void (*kick)(void *), void *kick_ctx, void (*restart)(void *),
    void *ctx)
{
	struct bft_rejuv *r = calloc(1, sizeof *r);
	long long decided;
	uint64_t count, due_ms, ago_ms;

	if (r == NULL || (r->pcfg = malloc(sizeof *r->pcfg)) == NULL) {
		free(r);
		return NULL;
	}
	r->o = *o;
	r->h = h;
	r->key = key;
	r->n = n;
	r->prog = prog;
	r->restart = restart;
	r->ctx = ctx;
	r->loop = loop;
	r->work.data = r;
	bft_peer_key(key, &r->ident);
	srandom((unsigned)(time(NULL) ^ getpid() ^ key->index << 16));
	uv_timer_init(loop, &r->timer);
	r->timer.data = r;
	r->started_ms = uv_now(loop);
	if (bft_rejuv_pending(o->data_dir)) {
		marker_read(r, &decided, &count);
		r->recovering = true;
		prog->recovering = BFT_RECOVERING_YES;
		prog->recoveries = count;
		/* The next one is due a period after this one was decided. */
		ago_ms = (uint64_t)(time(NULL) > decided ? time(NULL) -
		    decided : 0) * 1000;
		r->started_ms -= ago_ms < r->started_ms ? ago_ms : 0;
		bft_log("recovering: scrubbing the whole store and catching "
		    "up with the peers");
		h->scrub_requested = true;
		kick(kick_ctx);
		arm(r, CHECK_MS);
	} else if (o->every_s > 0) {
		due_ms = bft_rejuv_first_ms(o->every_s, key->index, n);
		bft_log("recovery every %u s; the first in %" PRIu64 " s",
		    o->every_s, due_ms / 1000);
		arm(r, due_ms);
	}
	return r;
}

static void
on_closed(uv_handle_t *handle)
{
	struct bft_rejuv *r = handle->data;

	r->closed = true;
	free_if_done(r);
}

void
bft_rejuv_stop(struct bft_rejuv *r)
{
	if (r == NULL)
		return;
	r->stopping = true;
	uv_close((uv_handle_t *)&r->timer, on_closed);
}

void
bft_rejuv_exec(const struct bft_rejuv_opts *o)
{
	execv(o->exe, o->argv);
	bft_error("recovery: cannot run %s: %s; the marker makes the next "
	    "start recover", o->exe, strerror(errno));
}
