/*
 * One writer per volume: a lease register for each volume id, block
 * <id> of the reserved volume BFT_LEASE_VOL, written and read through
 * the protocol like any block, so that no single server decides who
 * holds a volume and t liars cannot forge or hide a claim.
 *
 * A holder renews every period/3: it reads the register, and only when
 * its own claim is there does it write it again with its counter + 1.
 * An opener that finds another's claim reads it again after a period:
 * a claim that changed is a live holder (refused, naming it); one that
 * did not is a holder gone (crashed or cut off), taken over.  A clean
 * close writes the claim released, so the next opener waits for
 * nothing.  Read-only handles and shared=on take no lease.
 *
 * Timing decides only who gets the volume; it does not keep two
 * holders apart.  That is the servers' part: every acquisition starts a
 * new generation (proto.h), every write of the holder carries it, and a
 * correct server refuses a STORE or COMPLETE under a generation below
 * that of the newest claim it holds.  The new holder's claim reached
 * n-t servers before it writes anything, so an old holder's write that
 * arrives later, however late, finds a correct server among any n-t it
 * could complete at that refuses it (README, "One writer per volume").
 * The clocks only make the old holder stop on its own: a holder that has
 * not confirmed its claim for a period is fenced and fails writes until
 * it takes the lease again the way an opener does, which it can only
 * while nobody else took it; a holder whose claim another replaced has
 * lost it for good, and its handle never writes again.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes_int.h"
#include "crypto.h"
#include "error_int.h"
#include "lease_int.h"
#include "write_int.h"

/* How often a claim someone else holds is read while waiting it out. */
#define POLL_MS		1000u
#define LEASE_MAGIC	"BFTLEASE"
#define LEASE_VERSION	1u

/* A line in the front end's log about this volume's lease. */
static void __attribute__((format(printf, 3, 4)))
note(const struct bft_lease *l, enum bftblk_log_level level,
    const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (l->vol == BFT_VOL_TABLE)
		bftblk__eng_log(l->eng, level, "the volume table's admin lock: "
		    "%s", msg);
	else
		bftblk__eng_log(l->eng, level, "volume %" PRIu32 " lease: %s",
		    l->vol, msg);
}

/* clock's time in ms: CLOCK_MONOTONIC for periods, REALTIME for status. */
static uint64_t
clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t
now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/*
 * Layout: magic 8, version 4, period 4, counter 8, released 1, nonce 16,
 * holder 160, then the holder's wall clock at its last renewal (ms
 * since the epoch, 8; zero in claims of older versions), for status.
 */
#define OFF_HOLDER	41
#define OFF_WALL	(OFF_HOLDER + LEASE_HOLDER_LEN)

static void
encode(const struct bft_lease_claim *c, uint8_t *blk)
{
	memset(blk, 0, BFT_BLOCK_SIZE);
	memcpy(blk, LEASE_MAGIC, 8);
	le_put64(blk + 8, LEASE_VERSION | (uint64_t)c->period_ms << 32);
	le_put64(blk + 16, c->counter);
	blk[24] = c->released;
	memcpy(blk + 25, c->nonce, sizeof c->nonce);
	memcpy(blk + OFF_HOLDER, c->holder, sizeof c->holder);
	le_put64(blk + OFF_WALL, c->wall_ms);
}

/* False for a block never written, or not a claim. */
static bool
decode(const uint8_t *blk, struct bft_lease_claim *c)
{
	uint64_t vp = le_get64(blk + 8);

	memset(c, 0, sizeof *c);
	if (memcmp(blk, LEASE_MAGIC, 8) != 0 || (uint32_t)vp != LEASE_VERSION)
		return false;
	c->period_ms = (uint32_t)(vp >> 32);
	c->counter = le_get64(blk + 16);
	c->released = blk[24] != 0;
	memcpy(c->nonce, blk + 25, sizeof c->nonce);
	memcpy(c->holder, blk + OFF_HOLDER, sizeof c->holder);
	c->holder[sizeof c->holder - 1] = '\0';
	c->wall_ms = le_get64(blk + OFF_WALL);
	return true;
}

/*
 * Reads the claim into buf (a block); *ts is its write's timestamp.  0
 * or -1 (bftblk__fail).
 */
int
bftblk__lease_claim_read(struct bft_lease *l, uint8_t *buf,
    struct bft_lease_claim *c, bool *valid, struct bft_ts *ts)
{
	struct op *op = bftblk__op_new(l->eng, OP_READ);
	int r = -1;

	if (op == NULL)
		return bftblk__fail(ENOMEM, NULL);
	op->block = l->addr;
	op->data = buf;
	if (bftblk__engine_run(l->eng, &op, 1) != 0 && op->wrong_size) {
		/*
		 * A claim sealed by an encrypted handle of an older version:
		 * nobody can read it, so it holds nothing.  Overwritten by
		 * the next plain claim.
		 */
		memset(ts, 0, sizeof *ts);
		memset(c, 0, sizeof *c);
		*valid = false;
		r = 0;
	} else if (op->err == 0) {
		if (bftblk__op_finish_read(op) != 0) {
			bftblk__fail(EIO, "the lease of volume %" PRIu32 ": %s",
			    l->vol, op->why);
		} else {
			bftblk__op_read_ts(op, ts);
			*valid = decode(buf, c);
			r = 0;
		}
	}
	bftblk__op_free(op);
	return r;
}

/* The renewer's read, into the lease's own buffer. */
static int
claim_read(struct bft_lease *l, struct bft_lease_claim *c, bool *valid,
    struct bft_ts *ts)
{
	return bftblk__lease_claim_read(l, l->buf, c, valid, ts);
}

static int
claim_write(struct bft_lease *l, const struct bft_lease_claim *c)
{
	struct op *op = bftblk__op_new(l->eng, OP_WRITE);
	struct bft_lease_claim stamped = *c;
	int r = -1;

	if (op == NULL)
		return bftblk__fail(ENOMEM, NULL);
	stamped.wall_ms = clock_ms(CLOCK_REALTIME);
	encode(&stamped, l->wbuf);
	op->block = l->addr;
	op->data = l->wbuf;
	if (bftblk__op_prepare_write(op) != 0)
		bftblk__fail(EIO, "erasure coding the lease failed");
	else if (bftblk__engine_run(l->eng, &op, 1) == 0)
		r = 0;
	bftblk__op_free(op);
	return r;
}

bool
bftblk__lease_ours(const struct bft_lease *l, const struct bft_lease_claim *c)
{
	return memcmp(c->nonce, l->mine.nonce, sizeof c->nonce) == 0;
}

/* The generation every write of this holder carries from now on. */
static void
set_gen(struct bft_lease *l, uint64_t gen)
{
	bftblk__engine_set_gen(l->eng, gen);
	if (l->data_eng != NULL && l->data_eng != l->eng)
		bftblk__engine_set_gen(l->data_eng, gen);
}

void
bftblk__lease_adopt(struct bft_lease *l, uint64_t gen)
{
	set_gen(l, gen);
	note(l, BFTBLK_LOG_INFO, "generation %" PRIu64 ": a snapshot "
	    "re-asserted this holder's claim", gen);
}

/* EBUSY naming who holds the claim read instead of ours ("was %staken"). */
static int
taken_by(const struct bft_lease *l, const char *when, bool valid,
    const struct bft_lease_claim *c)
{
	return bftblk__fail(EBUSY, "volume %" PRIu32 " was %staken by %s",
	    l->vol, when, valid ? c->holder : "another opener");
}

/*
 * Waits ms, or less once the lease is being released (then false).  The
 * renewer's waits, so that closing a handle never waits out a period.
 */
static bool
nap(struct bft_lease *l, uint64_t ms)
{
	struct timespec until;
	uint64_t ns = ms * 1000000;
	bool go_on;

	if (!l->running) {
		usleep((useconds_t)(ms * 1000));
		return true;
	}
	/* cv waits on the monotonic clock (lease_start). */
	clock_gettime(CLOCK_MONOTONIC, &until);
	ns += (uint64_t)until.tv_nsec;
	until.tv_sec += (time_t)(ns / 1000000000);
	until.tv_nsec = (long)(ns % 1000000000);
	pthread_mutex_lock(&l->mu);
	while (!l->stopping && pthread_cond_timedwait(&l->cv, &l->mu,
	    &until) != ETIMEDOUT)
		;
	go_on = !l->stopping;
	pthread_mutex_unlock(&l->mu);
	return go_on;
}

/*
 * The opener's path, for a first acquisition and for a fenced holder
 * taking its lease again: a claim of another (or our own stale one)
 * that is not released must stay unchanged for a period before it is
 * taken over, and the claim is written under a new generation, then
 * read back.  0, or -1 with the error recorded: EBUSY naming a live
 * holder or the one that took it, EINTR when released meanwhile.
 */
static int
take(struct bft_lease *l, unsigned guard_ms)
{
	struct bft_lease_claim c, again;
	struct bft_ts ts, ts2;
	uint64_t gen;
	bool valid;

	if (claim_read(l, &c, &valid, &ts) != 0)
		return -1;
	if (l->running && (!valid || !bftblk__lease_ours(l, &c)))
		return taken_by(l, "", valid, &c);
	if (valid && !c.released) {
		/* Wait out the holder's own period: a live one renews in it. */
		uint64_t wait = c.period_ms > l->period_ms ? c.period_ms :
		    l->period_ms;
		struct bft_lease_watch w;
		bool alive = false;

		/* An admin waiting its turn says so: it may be a while. */
		if (!l->running)
			note(l, l->vol == BFT_VOL_TABLE ? BFTBLK_LOG_WARN :
			    BFTBLK_LOG_INFO, "held by %s; checking it is "
			    "alive for %.1f s", c.holder, (double)wait / 1000);
		/*
		 * Looked at again every POLL_MS: a holder that releases (an
		 * admin done with the table) hands over at once, and one that
		 * renews is known alive at its next renewal, not a period on.
		 * What counts as a renewal is lease_watch.c's to say: not a
		 * split register's claims returned in turn.
		 */
		bftblk__lease_watch_start(&w, &ts, &c, valid);
		for (uint64_t waited = 0;;) {
			uint64_t step = wait - waited < POLL_MS ?
			    wait - waited : POLL_MS;

			if (!nap(l, step))
				return bftblk__fail(EINTR, "the handle is "
				    "closing");
			waited += step;
			if (claim_read(l, &again, &valid, &ts2) != 0)
				return -1;
			if (!valid || again.released)
				break;
			if ((alive = bftblk__lease_watch_alive(&w, &ts2,
			    &again, valid)) || waited >= wait)
				break;
		}
		if (alive)
			return bftblk__fail(EBUSY, "volume %" PRIu32 " is in "
			    "use by %s, which renews its lease (every %.1f s); "
			    "stop it first, open read-only, or use shared=on "
			    "if the volume's users coordinate writes "
			    "themselves", l->vol, again.holder,
			    (double)again.period_ms / 3000);
		if (l->running && (!valid || !bftblk__lease_ours(l, &again)))
			return taken_by(l, "", valid, &again);
		if (valid && !again.released && !l->running)
			note(l, BFTBLK_LOG_WARN, "%s did not renew in %.1f s: "
			    "taking the volume over", again.holder,
			    (double)wait / 1000);
		c = again;
		/*
		 * Above the newest generation read, not the last: claiming
		 * one a rival's reading holds would be refused (ESTALE).
		 */
		ts = bft_ts_cmp(&ts2, &w.newest) > 0 ? ts2 : w.newest;
	}
	if ((gen = bft_next_gen(&ts)) == 0)
		return bftblk__fail(EOVERFLOW, "volume %" PRIu32 "'s lease has "
		    "used up its generations", l->vol);
	/* Before the claim: once it is out, servers refuse older writes. */
	set_gen(l, gen);
	l->mine.counter = c.counter + 1;
	l->mine.released = false;
	/*
	 * Flushed, so that the n-t servers that fence older holders from
	 * now on still do after a power failure.
	 */
	if (claim_write(l, &l->mine) != 0 || bftblk__io_flush(l->eng) != 0 ||
	    claim_read(l, &again, &valid, &ts2) != 0)
		return -1;
	if (!valid || !bftblk__lease_ours(l, &again))
		return taken_by(l, "just ", valid, &again);
	/*
	 * A register is not compare-and-swap: a rival's claim write that
	 * began before our read-back may complete after it and win.  Every
	 * such write ends within the I/O timeout, so a claim still ours
	 * after that long is ours alone.
	 */
	if (guard_ms > 0) {
		if (!nap(l, guard_ms))
			return bftblk__fail(EINTR, "the handle is closing");
		if (claim_read(l, &again, &valid, &ts2) != 0)
			return -1;
		if (!valid || !bftblk__lease_ours(l, &again))
			return taken_by(l, "just ", valid, &again);
	}
	return 0;
}

/* Marks the lease lost for good: another holder's claim replaced ours. */
static void
set_lost(struct bft_lease *l, const char *holder)
{
	note(l, BFTBLK_LOG_WARN, "lost: %s holds it now; this handle writes "
	    "no more", holder);
	__atomic_store_n(&l->lost, true, __ATOMIC_RELEASE);
}

/*
 * A renewal the servers refused as fenced: a snapshot's cut, which read
 * the register after our renewal did, fenced our generation and is
 * writing our claim back under the next one (lease_snap.c).  Renewals
 * come every period/3 and cuts as often as admins ask; a renewal that
 * simply failed here would count against the holder, and a few cuts in
 * a row, each meeting one, would fence it with no other holder about.
 * So the renewer looks again (bftblk__lease_follow_look), as a fenced
 * write does, but for up to period/3 and in naps a release cuts short.
 * 1: our claim is under a newer generation, now the engine's; 0: not
 * seen in time, or the lease is being released; -1: another's claim.
 */
static int
renew_follow(struct bft_lease *l, uint64_t sent)
{
	uint64_t until = now_ms() + l->period_ms / 3, wait_ms = 5;
	struct bft_lease_claim c;
	bool valid;

	if (bftblk__take_errno() != ESTALE)
		return 0;
	while (now_ms() < until) {
		switch (bftblk__lease_follow_look(l, l->buf, sent, &c,
		    &valid)) {
		case BFT_FOLLOW_TAKEN:
			return 1;
		case BFT_FOLLOW_OTHER:
			set_lost(l, valid ? c.holder : "nobody");
			return -1;
		case BFT_FOLLOW_FAILED:
			return 0;
		case BFT_FOLLOW_WAIT:
			break;
		}
		if (!nap(l, wait_ms))
			return 0;
		if (wait_ms < 640)
			wait_ms *= 2;
	}
	return 0;
}

/*
 * One renewal: the claim is read, and written again only when it is
 * still ours, so that a holder cut off for a while never overwrites a
 * claim it has not seen.  Whatever the outcome, a holder that has not
 * confirmed its claim for a period is fenced.  False once lost.
 */
static bool
renew(struct bft_lease *l)
{
	struct bft_lease_claim c;
	uint64_t t0 = now_ms(), last, sent;
	struct bft_ts ts;
	bool valid;
	int followed = 0;

	if (claim_read(l, &c, &valid, &ts) == 0) {
		if (!valid || !bftblk__lease_ours(l, &c)) {
			set_lost(l, valid ? c.holder : "nobody");
			return false;
		}
		/*
		 * Our own claim under a newer generation: a snapshot
		 * re-asserted it (docs/snapshots.md).  Writes go on under
		 * that generation, and the renewal is written under it.
		 */
		if (bft_ts_gen(&ts) > bftblk__engine_gen(l->eng))
			bftblk__lease_adopt(l, bft_ts_gen(&ts));
		l->mine.counter = c.counter + 1;
		sent = bftblk__engine_gen(l->eng);
		if (claim_write(l, &l->mine) == 0 ||
		    ((followed = renew_follow(l, sent)) > 0 &&
		    claim_write(l, &l->mine) == 0))
			__atomic_store_n(&l->renewed_ms, t0, __ATOMIC_RELEASE);
		else if (followed < 0)
			return false;
		else
			note(l, BFTBLK_LOG_WARN, "renewal not written: %s",
			    bftblk__errmsg());
	} else {
		note(l, BFTBLK_LOG_WARN, "renewal not confirmed: %s",
		    bftblk__errmsg());
	}
	last = __atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE);
	if (now_ms() - last >= l->period_ms &&
	    !__atomic_load_n(&l->fenced, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&l->fenced, true, __ATOMIC_RELEASE);
		note(l, BFTBLK_LOG_WARN, "fenced: no renewal confirmed for "
		    "%.1f s: writes fail until the lease is taken again",
		    (double)(now_ms() - last) / 1000);
	}
	return true;
}

/*
 * A fenced holder takes its lease again as an opener would: only when
 * its own claim stayed unchanged for a period, under a new generation.
 * False once lost.
 */
static bool
regain(struct bft_lease *l)
{
	uint64_t t0 = now_ms();
	int err;

	if (take(l, 0) == 0) {
		__atomic_store_n(&l->renewed_ms, t0, __ATOMIC_RELEASE);
		__atomic_store_n(&l->fenced, false, __ATOMIC_RELEASE);
		note(l, BFTBLK_LOG_WARN, "taken again after fencing, "
		    "generation %" PRIu64, bftblk__engine_gen(l->eng));
		return true;
	}
	if ((err = bftblk__take_errno()) == EBUSY || err == EOVERFLOW) {
		set_lost(l, bftblk__errmsg());
		return false;
	}
	return true;	/* unreachable servers, or closing: try again */
}

static void *
renewer(void *arg)
{
	struct bft_lease *l = arg;

	while (nap(l, l->period_ms / 3)) {
		if (__atomic_load_n(&l->fenced, __ATOMIC_ACQUIRE) ?
		    !regain(l) : !renew(l))
			break;
	}
	return NULL;
}

int
bftblk__lease_acquire(struct bft_lease *l, struct bft_engine *eng,
    struct bft_engine *data_eng, uint32_t vol, unsigned period_s,
    unsigned guard_ms, const char *name)
{
	pthread_condattr_t ca;
	char host[64] = "?";

	memset(l, 0, sizeof *l);
	l->eng = eng;
	l->data_eng = data_eng;
	l->vol = vol;
	l->addr = bft_addr(BFT_LEASE_VOL, vol);
	l->period_ms = period_s * 1000;
	if ((l->buf = malloc(BFT_BLOCK_SIZE)) == NULL ||
	    (l->wbuf = malloc(BFT_BLOCK_SIZE)) == NULL)
		return bftblk__fail(ENOMEM, NULL);
	gethostname(host, sizeof host - 1);
	snprintf(l->mine.holder, sizeof l->mine.holder, "%s, pid %ld, %s",
	    host, (long)getpid(), name);
	bft_random(l->mine.nonce, sizeof l->mine.nonce);
	l->mine.period_ms = l->period_ms;
	if (take(l, guard_ms) != 0)
		return -1;
	l->renewed_ms = now_ms();
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->follow_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	l->running = true;
	if (pthread_create(&l->thread, NULL, renewer, l) != 0) {
		l->running = false;
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		pthread_mutex_destroy(&l->follow_mu);
		return bftblk__fail(EAGAIN, "cannot start the lease's thread");
	}
	l->held = true;
	if (l->data_eng != NULL)
		bftblk__engine_set_lease(l->data_eng, l);
	note(l, BFTBLK_LOG_INFO, "acquired, generation %" PRIu64 " (renewed "
	    "every %.1f s)", bftblk__engine_gen(l->eng),
	    (double)l->period_ms / 3000);
	return 0;
}

enum bft_lease_state
bftblk__lease_state(const struct bft_lease *l)
{
	if (!l->held)
		return BFT_LEASE_NONE;
	if (__atomic_load_n(&l->lost, __ATOMIC_ACQUIRE))
		return BFT_LEASE_LOST;
	if (__atomic_load_n(&l->fenced, __ATOMIC_ACQUIRE) ||
	    now_ms() - __atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE) >=
	    l->period_ms)
		return BFT_LEASE_FENCED;
	return BFT_LEASE_HELD;
}

bool
bftblk__lease_may_write(const struct bft_lease *l)
{
	enum bft_lease_state s = bftblk__lease_state(l);

	return s == BFT_LEASE_NONE || s == BFT_LEASE_HELD;
}

uint64_t
bftblk__lease_renewed_age_ms(const struct bft_lease *l)
{
	return l->held ? now_ms() - __atomic_load_n(&l->renewed_ms,
	    __ATOMIC_ACQUIRE) : 0;
}

/* Writes the claim released if it is still ours.  0 or -1. */
static int
release_ours(struct bft_lease *l)
{
	struct bft_lease_claim c;
	struct bft_ts ts;
	bool valid;

	if (claim_read(l, &c, &valid, &ts) != 0 || !valid ||
	    !bftblk__lease_ours(l, &c))
		return -1;
	l->mine.released = true;
	l->mine.counter = c.counter + 1;
	return claim_write(l, &l->mine);
}

void
bftblk__lease_release(struct bft_lease *l)
{
	if (l->held) {
		if (l->data_eng != NULL)
			bftblk__engine_set_lease(l->data_eng, NULL);
		pthread_mutex_lock(&l->mu);
		l->stopping = true;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
		l->running = false;
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		pthread_mutex_destroy(&l->follow_mu);
		/*
		 * A lost lease is someone else's now: leave their claim.  A
		 * fenced one may be too: release only a claim read as ours.
		 */
		if (!l->lost && release_ours(l) == 0)
			note(l, BFTBLK_LOG_INFO, "released");
		l->held = false;
	}
	free(l->buf);
	free(l->wbuf);
	l->buf = l->wbuf = NULL;
}

int
bftblk__lease_read(struct bft_engine *eng, uint32_t vol,
    struct bft_lease_info *info)
{
	struct bft_lease l = { .eng = eng, .vol = vol,
	    .addr = bft_addr(BFT_LEASE_VOL, vol) };
	int r;

	memset(info, 0, sizeof *info);
	if ((l.buf = malloc(BFT_BLOCK_SIZE)) == NULL)
		return bftblk__fail(ENOMEM, NULL);
	r = claim_read(&l, &info->claim, &info->claimed, &info->ts);
	free(l.buf);
	return r;
}

int
bftblk__lease_probe(struct bft_engine *eng, uint32_t vol,
    struct bft_lease_info *info)
{
	struct bft_lease_watch w;

	if (bftblk__lease_read(eng, vol, info) != 0)
		return -1;
	if (!info->claimed || info->claim.released)
		return 0;
	/* A live holder renews every period/3: wait a little longer. */
	bftblk__lease_watch_start(&w, &info->ts, &info->claim, true);
	usleep((useconds_t)(info->claim.period_ms / 3 + 1000) * 1000);
	if (bftblk__lease_read(eng, vol, info) != 0)
		return -1;
	info->live = info->claimed && !info->claim.released &&
	    bftblk__lease_watch_alive(&w, &info->ts, &info->claim, true);
	return info->live ? 1 : 0;
}

int
bftblk__lease_read_gen(struct bft_engine *eng, uint32_t vol, uint64_t *gen)
{
	struct bft_lease_info info;

	if (bftblk__lease_read(eng, vol, &info) != 0)
		return -1;
	*gen = bft_ts_gen(&info.ts);
	return 0;
}
