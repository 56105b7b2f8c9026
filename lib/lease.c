/*
 * One writer per volume: a lease register for each volume id, block
 * <id> of the reserved volume BFT_LEASE_VOL, written and read through
 * the protocol like any block, so that no single server decides who
 * holds a volume and t liars cannot forge or hide a claim.
 *
 * A holder rewrites its claim every period/3 with its counter + 1.  An
 * opener that finds another's claim reads it again after a period: a
 * claim that changed is a live holder (refused, naming it); one that
 * did not is a holder gone (crashed or cut off), taken over.  A holder
 * that has not renewed for a period stops writing (EIO), so that once
 * an opener took over, the old holder no longer writes: both rely on
 * their monotonic clocks running at about the same rate, as any lease
 * does.  A clean close writes the claim released, so the next opener
 * waits for nothing.  Read-only handles and shared=on take no lease.
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
#include "chunk_int.h"
#include "crypto.h"
#include "error_int.h"
#include "lease_int.h"

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
		eng_log(l->eng, level, "the volume table's admin lock: %s",
		    msg);
	else
		eng_log(l->eng, level, "volume %" PRIu32 " lease: %s", l->vol,
		    msg);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Layout: magic 8, version 4, period 4, counter 8, released 1, nonce 16, holder. */
#define OFF_HOLDER	41

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
	return true;
}

/* Reads the claim; *ts is its write's timestamp.  0 or -1 (lib_fail). */
static int
claim_read(struct bft_lease *l, struct bft_lease_claim *c, bool *valid,
    struct bft_ts *ts)
{
	struct op *op = bft_op_new(l->eng, OP_READ);
	int r = -1;

	if (op == NULL)
		return lib_fail(ENOMEM, NULL);
	op->block = l->addr;
	op->data = l->buf;
	if (chunk_run(l->eng, &op, 1) != 0 && op->wrong_size) {
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
		if (bft_op_finish_read(op) != 0) {
			lib_fail(EIO, "the lease of volume %" PRIu32 ": %s",
			    l->vol, op->why);
		} else {
			bft_op_read_ts(op, ts);
			*valid = decode(l->buf, c);
			r = 0;
		}
	}
	bft_op_free(op);
	return r;
}

static int
claim_write(struct bft_lease *l, const struct bft_lease_claim *c)
{
	struct op *op = bft_op_new(l->eng, OP_WRITE);
	int r = -1;

	if (op == NULL)
		return lib_fail(ENOMEM, NULL);
	encode(c, l->wbuf);
	op->block = l->addr;
	op->data = l->wbuf;
	if (bft_op_prepare_write(op) != 0)
		lib_fail(EIO, "erasure coding the lease failed");
	else if (chunk_run(l->eng, &op, 1) == 0)
		r = 0;
	bft_op_free(op);
	return r;
}

static bool
ours(const struct bft_lease *l, const struct bft_lease_claim *c)
{
	return memcmp(c->nonce, l->mine.nonce, sizeof c->nonce) == 0;
}

/* Renews every period/3 until stopped; gives up writes after a period. */
static void *
renewer(void *arg)
{
	struct bft_lease *l = arg;
	struct bft_lease_claim c;
	struct bft_ts ts;
	bool valid;

	pthread_mutex_lock(&l->mu);
	while (!l->stopping) {
		struct timespec until;
		uint64_t ns = l->period_ms / 3 * 1000000;

		/* cv waits on the monotonic clock (bft_lease_acquire). */
		clock_gettime(CLOCK_MONOTONIC, &until);
		ns += (uint64_t)until.tv_nsec;
		until.tv_sec += (time_t)(ns / 1000000000);
		until.tv_nsec = (long)(ns % 1000000000);
		while (!l->stopping && pthread_cond_timedwait(&l->cv, &l->mu,
		    &until) != ETIMEDOUT)
			;
		if (l->stopping)
			break;
		pthread_mutex_unlock(&l->mu);
		if (claim_read(l, &c, &valid, &ts) == 0 &&
		    (!valid || !ours(l, &c))) {
			note(l, BFTBLK_LOG_WARN, "lost: %s holds it now", valid ?
			    c.holder : "nobody");
			__atomic_store_n(&l->lost, true, __ATOMIC_RELEASE);
			pthread_mutex_lock(&l->mu);
			break;
		}
		l->mine.counter++;
		if (claim_write(l, &l->mine) == 0)
			__atomic_store_n(&l->renewed_ms, now_ms(),
			    __ATOMIC_RELEASE);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int
bft_lease_acquire(struct bft_lease *l, struct bft_engine *eng, uint32_t vol,
    unsigned period_s, unsigned guard_ms, const char *name)
{
	struct bft_lease_claim c, again;
	struct bft_ts ts, ts2;
	pthread_condattr_t ca;
	char host[64] = "?";
	bool valid;

	memset(l, 0, sizeof *l);
	l->eng = eng;
	l->vol = vol;
	l->addr = bft_addr(BFT_LEASE_VOL, vol);
	l->period_ms = period_s * 1000;
	if ((l->buf = malloc(BFT_BLOCK_SIZE)) == NULL ||
	    (l->wbuf = malloc(BFT_BLOCK_SIZE)) == NULL)
		return lib_fail(ENOMEM, NULL);
	gethostname(host, sizeof host - 1);
	snprintf(l->mine.holder, sizeof l->mine.holder, "%s, pid %ld, %s",
	    host, (long)getpid(), name);
	bft_random(l->mine.nonce, sizeof l->mine.nonce);
	l->mine.period_ms = l->period_ms;
	if (claim_read(l, &c, &valid, &ts) != 0)
		return -1;
	if (valid && !c.released) {
		/* Wait out the holder's own period: a live one renews in it. */
		uint64_t wait = c.period_ms > l->period_ms ? c.period_ms :
		    l->period_ms;

		/* An admin waiting its turn says so: it may be a while. */
		note(l, vol == BFT_VOL_TABLE ? BFTBLK_LOG_WARN : BFTBLK_LOG_INFO,
		    "held by %s; checking it is alive for %.1f s", c.holder,
		    (double)wait / 1000);
		usleep((useconds_t)(wait * 1000));
		if (claim_read(l, &again, &valid, &ts2) != 0)
			return -1;
		if (valid && !again.released && bft_ts_cmp(&ts, &ts2) != 0)
			return lib_fail(EBUSY, "volume %" PRIu32 " is in use "
			    "by %s, which renews its lease (every %.1f s); "
			    "stop it first, open read-only, or use "
			    "shared=on if the volume's users coordinate "
			    "writes themselves", vol, again.holder,
			    (double)again.period_ms / 3000);
		if (valid && !again.released)
			note(l, BFTBLK_LOG_WARN, "%s did not renew in %.1f s: taking "
			    "the volume over", again.holder,
			    (double)wait / 1000);
		c = again;
	}
	l->mine.counter = c.counter + 1;
	if (claim_write(l, &l->mine) != 0 ||
	    claim_read(l, &again, &valid, &ts2) != 0)
		return -1;
	if (!valid || !ours(l, &again))
		return lib_fail(EBUSY, "volume %" PRIu32 " was just taken by "
		    "%s", vol, valid ? again.holder : "another opener");
	/*
	 * A register is not compare-and-swap: a rival's claim write that
	 * began before our read-back may complete after it and win.  Every
	 * such write ends within the I/O timeout, so a claim still ours
	 * after that long is ours alone.
	 */
	if (guard_ms > 0) {
		usleep((useconds_t)guard_ms * 1000);
		if (claim_read(l, &again, &valid, &ts2) != 0)
			return -1;
		if (!valid || !ours(l, &again))
			return lib_fail(EBUSY, "volume %" PRIu32 " was just "
			    "taken by %s", vol, valid ? again.holder :
			    "another opener");
	}
	l->renewed_ms = now_ms();
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&l->thread, NULL, renewer, l) != 0) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		return lib_fail(EAGAIN, "cannot start the lease's thread");
	}
	l->held = true;
	note(l, BFTBLK_LOG_INFO, "acquired (renewed every %.1f s)",
	    (double)l->period_ms / 3000);
	return 0;
}

bool
bft_lease_may_write(const struct bft_lease *l)
{
	if (!l->held)
		return true;
	return !__atomic_load_n(&l->lost, __ATOMIC_ACQUIRE) &&
	    now_ms() - __atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE) <
	    l->period_ms;
}

void
bft_lease_release(struct bft_lease *l)
{
	if (l->held) {
		pthread_mutex_lock(&l->mu);
		l->stopping = true;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		/* A lost lease is someone else's now: leave their claim. */
		if (!l->lost) {
			l->mine.released = true;
			l->mine.counter++;
			if (claim_write(l, &l->mine) == 0)
				note(l, BFTBLK_LOG_INFO, "released");
		}
		l->held = false;
	}
	free(l->buf);
	free(l->wbuf);
	l->buf = l->wbuf = NULL;
}

int
bft_lease_probe(struct bft_engine *eng, uint32_t vol, char *holder,
    size_t len)
{
	struct bft_lease l = { .eng = eng, .vol = vol,
	    .addr = bft_addr(BFT_LEASE_VOL, vol) };
	struct bft_lease_claim c, again;
	struct bft_ts ts, ts2;
	bool valid;
	int r = -1;

	if ((l.buf = malloc(BFT_BLOCK_SIZE)) == NULL) {
		lib_fail(ENOMEM, NULL);
		return -1;
	}
	if (claim_read(&l, &c, &valid, &ts) != 0)
		goto out;
	r = 0;
	if (!valid || c.released)
		goto out;
	/* A live holder renews every period/3: wait a little longer. */
	usleep((useconds_t)(c.period_ms / 3 + 1000) * 1000);
	if (claim_read(&l, &again, &valid, &ts2) != 0) {
		r = -1;
		goto out;
	}
	if (valid && !again.released && bft_ts_cmp(&ts, &ts2) != 0) {
		snprintf(holder, len, "%s", again.holder);
		r = 1;
	}
out:
	free(l.buf);
	return r;
}
