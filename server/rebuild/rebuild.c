/*
 * The rebuild thread (rebuild.h): its life, its calls into this
 * server's own handler on the event loop, and one pass of catching up.
 * Finding what differs is rebuild_scan.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "peer.h"
#include "rebuild_int.h"

#define RETRY_S		5	/* between passes that could not finish */
#define WAIT_PEERS_S	0.2	/* a new server looking for its peers */
#define PROGRESS_S	5	/* between progress lines */
/*
 * How long clients' COMPLETEs wait at most for the first reading of the
 * volume table's snapshots (bounds_pending), and how often it is tried
 * meanwhile.  A cluster restarted as a whole reads it as soon as n-t
 * servers are up; past the wait, writes go on and a snapshot taken
 * while this server was away may stay unknown here (logged).
 */
#define BOUNDS_WAIT_S	30
#define BOUNDS_RETRY_S	0.5
#define BUSY_S		1	/* clients seen this recently: give way */

double
rb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
bft_rebuild_mark_new(const char *data_dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof path, "%s/%s", data_dir, BFT_REBUILD_MARKER);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out_err;
	if (fchmod(fd, 0600) < 0 || fsync(fd) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		goto out_err;
	}
	if (close(fd) < 0)
		goto out_err;
	return 0;
out_err:
	bft_error("%s: %s", path, strerror(errno));
	return -1;
}

/*
 * The marker of a new data directory: absent (not new, or caught up),
 * empty (new; whether peers hold data is not known yet) or "1" (peers
 * hold data this directory lacks, so it must not answer for blocks it
 * has not rebuilt).  Returns -1, 0 or 1.
 */
static int
marker_read(const char *data_dir)
{
	char path[4096], c = 0;
	int fd;

	snprintf(path, sizeof path, "%s/%s", data_dir, BFT_REBUILD_MARKER);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '1';
}

static int
marker_set_lacking(const char *data_dir)
{
	char path[4096];
	int fd, ok;

	snprintf(path, sizeof path, "%s/%s", data_dir, BFT_REBUILD_MARKER);
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
		return -1;
	ok = write(fd, "1", 1) == 1 && fsync(fd) == 0;
	return close(fd) == 0 && ok ? 0 : -1;
}

static void
clear_mark(const char *data_dir)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", data_dir, BFT_REBUILD_MARKER);
	if (unlink(path) < 0 && errno != ENOENT)
		bft_log("rebuild: %s: %s", path, strerror(errno));
}

/*
 * On the loop: runs the queued calls through the handler, each reply
 * encoded into its call's own buffer (the handler's buffers are reused
 * by the next request), and publishes the thread's progress.
 */
static void
on_calls(uv_async_t *a)
{
	struct bft_rebuild *rb = a->data;
	struct rb_call *list, *c;

	pthread_mutex_lock(&rb->lock);
	list = rb->calls;
	rb->calls = NULL;
	rb->h->heal_lacking = rb->lacking;
	rb->h->heal_fresh = rb->fresh;
	rb->h->bounds_pending = rb->bounds_pending;
	rb->pub->rebuild_state = rb->prog.rebuild_state;
	rb->pub->rebuild_done = rb->prog.rebuild_done;
	rb->pub->rebuild_total = rb->prog.rebuild_total;
	rb->pub->rebuild_bytes = rb->prog.rebuild_bytes;
	rb->pub->rebuild_rate = rb->prog.rebuild_rate;
	rb->pub->rebuild_caught_up = rb->prog.rebuild_caught_up;
	pthread_mutex_unlock(&rb->lock);
	for (c = list; c != NULL; c = c->next) {
		/* Values its peers hold completed: not a holder's write. */
		rb->h->adopting = true;
		bft_handle(rb->h, "rebuild", c->req, &rb->rep);
		rb->h->adopting = false;
		c->status = bft_wire_encode(&rb->rep, rb->cfg->n, &c->out);
	}
	pthread_mutex_lock(&rb->lock);
	for (c = list; c != NULL; c = c->next)
		c->done = true;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
}

int
rb_local(struct bft_rebuild *rb, const struct bft_msg *req,
    struct bft_msg *rep, struct bft_buf *out)
{
	struct rb_call c = { .req = req };
	const char *why;
	uint32_t len;
	int r = -1;

	pthread_mutex_lock(&rb->lock);
	if (rb->stopping) {
		pthread_mutex_unlock(&rb->lock);
		return -1;
	}
	c.next = rb->calls;
	rb->calls = &c;
	pthread_mutex_unlock(&rb->lock);
	uv_async_send(&rb->wake);
	pthread_mutex_lock(&rb->lock);
	while (!c.done)
		pthread_cond_wait(&rb->cond, &rb->lock);
	pthread_mutex_unlock(&rb->lock);
	*out = c.out;
	if (c.status != 0 || out->len < 4)
		return -1;
	len = (uint32_t)out->data[0] << 24 | (uint32_t)out->data[1] << 16 |
	    (uint32_t)out->data[2] << 8 | out->data[3];
	if (len == out->len - 4 &&
	    bft_wire_decode(out->data + 4, len, rb->cfg->n, rep, &why) == 0)
		r = rep->status;
	return r;
}

/*
 * Sleeps up to s seconds, less when kickable and a pass is asked for;
 * false when the thread must stop.
 */
static bool
pause_s(struct bft_rebuild *rb, double s, bool kickable)
{
	struct timespec until;
	bool go;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)s;
	until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&rb->lock);
	while (!rb->stopping && !(kickable && rb->kicked) &&
	    pthread_cond_timedwait(&rb->cond, &rb->lock, &until) == 0)
		;
	go = !rb->stopping;
	pthread_mutex_unlock(&rb->lock);
	return go;
}

static void
set_progress(struct bft_rebuild *rb, unsigned state, uint64_t done,
    uint64_t total)
{
	pthread_mutex_lock(&rb->lock);
	rb->prog.rebuild_state = state;
	rb->prog.rebuild_done = done;
	rb->prog.rebuild_total = total;
	rb->prog.rebuild_bytes = rb->bytes;
	pthread_mutex_unlock(&rb->lock);
	uv_async_send(&rb->wake);
}

/*
 * Whether clients read or wrote through this server within the last
 * BUSY_S: the rebuild then runs at --rebuild-busy-rate.
 */
static bool
clients_busy(struct bft_rebuild *rb)
{
	uint64_t seen = atomic_load_explicit(&rb->h->io_requests,
	    memory_order_relaxed);
	double now = rb_now_s();

	if (seen != rb->io_seen) {
		rb->io_seen = seen;
		rb->io_seen_at = now;
	}
	return rb->io_seen_at > 0 && now - rb->io_seen_at < BUSY_S;
}

/*
 * Paces one batch of bytes that began at batch_start: at the busy rate
 * (the lower of the two limits) while clients use this server, else at
 * --rebuild-rate.  A limit of 0 is none.
 */
static void
throttle(struct bft_rebuild *rb, double batch_start, uint64_t bytes)
{
	uint64_t rate = rb->o.rate;
	double ahead;

	if (clients_busy(rb) && rb->o.busy_rate != 0 &&
	    (rate == 0 || rb->o.busy_rate < rate))
		rate = rb->o.busy_rate;
	if (rate == 0)
		return;
	ahead = (double)bytes / (double)rate - (rb_now_s() - batch_start);
	if (ahead > 0)
		pause_s(rb, ahead, false);
}

static void
log_progress(struct bft_rebuild *rb, uint64_t done, uint64_t total,
    size_t failed, double start, uint64_t bytes, bool last)
{
	double el = rb_now_s() - start, rate = el > 0 ? bytes / el : 0;
	double eta = rate > 0 ? (double)(total - done) * BFT_BLOCK_SIZE / rate :
	    0;
	char fails[64] = "";

	/* Tried is not rebuilt: say how many are left for the next pass. */
	if (failed > 0)
		snprintf(fails, sizeof fails, ", %zu failed", failed);
	bft_log("rebuild: %s%" PRIu64 "/%" PRIu64 " blocks (%.0f%%)%s, %.1f "
	    "MB/s, %s %.0f s", last ? "done, " : "", done, total,
	    total ? 100.0 * (double)done / (double)total : 100.0, fails,
	    rate / 1e6, last ? "took" : "ETA", last ? el : eta);
	pthread_mutex_lock(&rb->lock);
	rb->prog.rebuild_rate = (uint64_t)rate;
	pthread_mutex_unlock(&rb->lock);
}

/*
 * Reads, checks and adopts the blocks of rb->todo; failures are left in
 * it.  Values sealed by encrypt=on writers are a block and a tag long:
 * the servers say so, and those blocks are read again as sealed.
 */
static void
rebuild_todo(struct bft_rebuild *rb)
{
	uint64_t total = rb->ntodo, done = 0, bytes = 0;
	uint64_t batch[BFTBLK__PEER_BATCH], sealed[BFTBLK__PEER_BATCH];
	double start = rb_now_s(), last = start;
	size_t failed = 0;

	set_progress(rb, BFT_REBUILD_REBUILDING, 0, total);
	for (size_t k = 0; k < total && !rb->stopping;
	    k += BFTBLK__PEER_BATCH) {
		unsigned nb = total - k < BFTBLK__PEER_BATCH ?
		    (unsigned)(total - k) : BFTBLK__PEER_BATCH, ns = 0, nr = 0;
		double batch_start = rb_now_s();

		/* todo[failed..] is rewritten behind the read position. */
		memcpy(batch, rb->todo + k, nb * sizeof batch[0]);
		/* What only peers found lying since the scan listed stays. */
		for (unsigned j = 0; j < nb; j++)
			if (rb_claim_wanted(rb, batch[j]))
				batch[nr++] = batch[j];
		/* A new directory's views first: rebuild_views.c. */
		if (rb->fresh)
			rb_rebuild_views(rb, batch, &nr, rb->todo, &failed);
		if (nr > 0)
			rb_rebuild_batch(rb, 0, BFT_GEN_MAX, batch, nr, sealed,
			    &ns, rb->todo, &failed);
		if (ns > 0)
			rb_rebuild_batch(rb, 1, BFT_GEN_MAX, sealed, ns, NULL,
			    NULL, rb->todo, &failed);
		done += nb;
		bytes += (uint64_t)nr * BFT_BLOCK_SIZE;
		rb->bytes += (uint64_t)nr * BFT_BLOCK_SIZE;
		set_progress(rb, BFT_REBUILD_REBUILDING, done, total);
		if (rb_now_s() - last >= PROGRESS_S) {
			log_progress(rb, done, total, failed, start, bytes,
			    false);
			last = rb_now_s();
		}
		throttle(rb, batch_start, (uint64_t)nr * BFT_BLOCK_SIZE);
	}
	rb_close_libs(rb);
	if (total > 0)
		log_progress(rb, done, total, failed, start, bytes, true);
	rb->ntodo = rb->stopping ? rb->ntodo : failed;
}

#define STR_(x)	#x
#define STR(x)	STR_(x)

/* Clients' COMPLETEs are taken again; why, when it is not the table. */
static void
bounds_done(struct bft_rebuild *rb, const char *why)
{
	bool was;

	pthread_mutex_lock(&rb->lock);
	was = rb->bounds_pending;
	rb->bounds_pending = false;
	pthread_mutex_unlock(&rb->lock);
	if (!was)
		return;
	if (why != NULL)
		bft_warn("rebuild: %s", why);
	uv_async_send(&rb->wake);
}

/*
 * One pass: find the blocks peers hold newer, rebuild them.  0 when
 * caught up, -1 when it must be tried again soon.
 */
static int
pass(struct bft_rebuild *rb)
{
	unsigned alive, need = rb->cfg->n - rb->cfg->t;
	char err[512];
	bool rebuilt;

	set_progress(rb, BFT_REBUILD_SCANNING, rb->prog.rebuild_done,
	    rb->prog.rebuild_total);
	if (rb->bounds_pending && rb_now_s() - rb->started_s >= BOUNDS_WAIT_S)
		bounds_done(rb, "could not read the volume table's snapshots "
		    "within " STR(BOUNDS_WAIT_S) " s; taking writes: a "
		    "snapshot made while this server was away may stay "
		    "unknown here");
	if (bft_config_load(rb->o.config_path, &rb->pcfg, err,
	    sizeof err) != 0) {
		bft_log("rebuild: %s", err);
		return -1;
	}
	alive = rb_peers_connect(rb);
	/*
	 * A write that completed reached n-t servers; without ourselves,
	 * any n-t peers include a correct one holding it.  A new server
	 * must hear from that many before it can know what it lacks.
	 */
	if (rb->fresh && alive < need) {
		set_progress(rb, BFT_REBUILD_WAITING, 0, 0);
		if (!rb->warned_wait)
			bft_log("rebuild: new data directory; waiting for %u "
			    "peers to compare with (%u reachable)", need,
			    alive);
		rb->warned_wait = true;
		return -1;
	}
	if (alive == 0)
		return -1;
	/*
	 * A new directory takes its snapshots' boundaries before the scan,
	 * so that every block the scan lists has its views rebuilt.  A
	 * directory with data takes those of snapshots made while it was
	 * away, before the catch-up moves its blocks past them.
	 */
	if (rb->fresh && !rb->bounds_learned) {
		if (rb_learn_bounds(rb, true) != 0)
			return -1;
		rb->bounds_learned = true;
		bounds_done(rb, NULL);
	} else if (!rb->fresh) {
		if (rb_learn_bounds(rb, false) == 0)
			bounds_done(rb, NULL);
		else if (rb->bounds_pending)
			return -1;	/* no catch-up past an unread boundary */
	}
	rb->ntodo = 0;
	if (rb_scan(rb) != 0)
		return -1;
	/*
	 * Connected is not answered: a peer that took the handshake but
	 * then timed out or refused the comparison said nothing, and a new
	 * directory may only conclude from n-t peers that did answer.
	 */
	if (rb->fresh && (unsigned)__builtin_popcount(rb->answered) < need) {
		set_progress(rb, BFT_REBUILD_WAITING, 0, 0);
		if (!rb->warned_wait)
			bft_log("rebuild: only %d of the %u peers needed "
			    "answered the comparison; trying again",
			    __builtin_popcount(rb->answered), need);
		rb->warned_wait = true;
		return -1;
	}
	/*
	 * Peers hold what a new directory lacks: from now until it has
	 * caught up, claiming "never written" for a block would be a lie.
	 */
	if (rb->fresh && rb->ntodo > 0 && !rb->lacking) {
		if (marker_set_lacking(rb->o.data_dir) != 0)
			bft_log("rebuild: %s/%s: %s", rb->o.data_dir,
			    BFT_REBUILD_MARKER, strerror(errno));
		pthread_mutex_lock(&rb->lock);
		rb->lacking = true;
		pthread_mutex_unlock(&rb->lock);
		uv_async_send(&rb->wake);
		bft_log("rebuild: new data directory while peers hold data: "
		    "blocks not yet rebuilt answer EAGAIN");
	}
	if (rb->ntodo > 0) {
		bft_log("rebuild: %zu blocks are newer at %u peers%s", rb->ntodo,
		    alive, rb->fresh ? " (new data directory)" : "");
		rebuild_todo(rb);
	}
	rb_claims_judge(rb);
	if (rb->passes++ == 0 && rb->ntodo == 0 && !rb->fresh)
		bft_log("rebuild: in step with %u peers", alive);
	if (rb->ntodo > 0) {
		bft_warn("rebuild: %zu blocks could not be rebuilt yet; trying "
		    "again in %d s", rb->ntodo, RETRY_S);
		return -1;
	}
	if (rb->deferred > 0) {
		bft_log("rebuild: %" PRIu64 " blocks fewer than t+1 peers list "
		    "newer are left for the next pass, in %d s", rb->deferred,
		    RETRY_S);
		return -1;
	}
	if (rb->fresh) {
		clear_mark(rb->o.data_dir);
		pthread_mutex_lock(&rb->lock);
		rb->fresh = rb->lacking = false;
		pthread_mutex_unlock(&rb->lock);
		free(rb->bounds);
		rb->bounds = NULL;
		rb->nbounds = 0;
		bft_log("rebuild: the new data directory has caught up with "
		    "its peers; serving every block");
		uv_async_send(&rb->wake);
	}
	/* A pass that found nothing leaves the last rebuild's figures. */
	pthread_mutex_lock(&rb->lock);
	rebuilt = rb->prog.rebuild_total > 0;
	rb->prog.rebuild_caught_up++;
	pthread_mutex_unlock(&rb->lock);
	set_progress(rb, rebuilt ? BFT_REBUILD_DONE : BFT_REBUILD_IDLE,
	    rb->prog.rebuild_done, rb->prog.rebuild_total);
	return 0;
}

/*
 * Seconds to the next pass after one that returned r.  A directory with
 * data that has not read the table yet looks again soon: clients'
 * writes of a new generation wait for it (bounds_pending).  A new
 * directory keeps its own pace, which its first pass's reading of the
 * table is part of.
 */
static double
next_pass_s(const struct bft_rebuild *rb, int r)
{
	if (!rb->fresh && rb->bounds_pending)
		return BOUNDS_RETRY_S;
	if (r == 0)
		return rb->o.interval_s;
	return rb->fresh && !rb->lacking ? WAIT_PEERS_S : RETRY_S;
}

static void *
rebuild_main(void *arg)
{
	struct bft_rebuild *rb = arg;

	while (!rb->stopping) {
		int r;

		pthread_mutex_lock(&rb->lock);
		rb->kicked = false;
		pthread_mutex_unlock(&rb->lock);
		r = pass(rb);

		rb_peers_close(rb);
		/* Connections to peers only during a pass, failed ones too. */
		rb_close_libs(rb);
		if (!pause_s(rb, next_pass_s(rb, r), true))
			break;
	}
	return NULL;
}

static void
rb_free(struct bft_rebuild *rb)
{
	rb_peers_close(rb);
	rb_close_libs(rb);
	for (int j = 0; j < 2; j++) {
		bft_ec_free(rb->kind[j].ec);
		free(rb->kind[j].fragbuf);
	}
	free(rb->todo);
	free(rb->bounds);
	free(rb->lone);
	pthread_cond_destroy(&rb->cond);
	pthread_mutex_destroy(&rb->lock);
	free(rb);
}

static void
on_closed(uv_handle_t *handle)
{
	rb_free(handle->data);
}

void
bft_rebuild_kick(struct bft_rebuild *rb)
{
	if (rb == NULL)
		return;
	pthread_mutex_lock(&rb->lock);
	rb->kicked = true;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
}

struct bft_rebuild *
bft_rebuild_start(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_config *cfg, const struct bft_server_key *key,
    const struct bft_rebuild_opts *o, struct bft_heal_progress *prog)
{
	struct bft_rebuild *rb = calloc(1, sizeof *rb);
	int m;

	if (rb == NULL)
		return NULL;
	rb->o = *o;
	rb->h = h;
	rb->cfg = cfg;
	rb->key = key;
	m = marker_read(o->data_dir);
	rb->fresh = m >= 0;
	rb->lacking = m == 1;
	rb->bounds_pending = true;
	rb->started_s = rb_now_s();
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->cond, NULL);
	rb->pub = prog;
	h->heal_lacking = rb->lacking;
	h->heal_fresh = rb->fresh;
	h->bounds_pending = true;
	if (rb_make_coders(rb) != 0)
		goto out_free;
	uv_async_init(loop, &rb->wake, on_calls);
	rb->wake.data = rb;
	if (pthread_create(&rb->thread, NULL, rebuild_main, rb) != 0) {
		uv_close((uv_handle_t *)&rb->wake, NULL);
		goto out_free;
	}
	if (rb->lacking)
		bft_log("rebuild: resuming the rebuild of a new data "
		    "directory: blocks not yet rebuilt answer EAGAIN");
	else if (rb->fresh)
		bft_log("rebuild: new data directory: comparing with peers");
	return rb;

out_free:
	h->heal_lacking = h->heal_fresh = h->bounds_pending = false;
	rb_free(rb);
	return NULL;
}

void
bft_rebuild_stop(struct bft_rebuild *rb)
{
	if (rb == NULL)
		return;
	pthread_mutex_lock(&rb->lock);
	rb->stopping = true;
	/* Queued calls will not run any more: release their waiters. */
	for (struct rb_call *c = rb->calls; c != NULL; c = c->next) {
		c->status = -ECANCELED;
		c->done = true;
	}
	rb->calls = NULL;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
	pthread_join(rb->thread, NULL);
	rb->h->heal_lacking = rb->h->heal_fresh = false;
	rb->h->bounds_pending = false;
	/* The handle lives in rb: free it once the loop has closed it. */
	uv_close((uv_handle_t *)&rb->wake, on_closed);
}
