/*
 * The plugin's sender threads (lib/conn_tx.c), on socketpairs: frames
 * handed over in batches arrive sealed, in order, and open under the
 * channel's other half; a sender blocked on a socket nobody reads lets
 * go when the loop takes the connection back (quiesce) or stops it, and
 * says what it dropped; a send that fails is reported once and the
 * socket shut down, so that the loop's read sees the connection end.
 * None of this times anything; every wait gives up after a minute, so
 * that a sender that never lets go fails the test instead of hanging it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../lib/conn_int.h"
#include "crypto.h"

static struct bft_chan_keypair server_id, client_id;
static const uint8_t cluster[BFT_CLUSTER_ID_LEN] = { 7 };

struct fixture {
	struct engine_loop *lp;
	struct bft_chan srv;		/* the server's half, to open with */
	int fd[2];			/* [0] the sender's, [1] the server's */
};

static int
group_setup(void **state)
{
	(void)state;
	if (bft_crypto_init() != 0)
		return -1;
	bft_chan_keypair_new(&server_id);
	bft_chan_keypair_new(&client_id);
	return 0;
}

/* A connection 0 with a channel in mode, its sender started. */
static struct fixture *
fixture_new(enum bft_chan_mode mode)
{
	struct fixture *f = calloc(1, sizeof *f);
	struct bft_chan_client hs;
	struct bft_chan_hello h;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;

	assert_non_null(f);
	assert_non_null(f->lp = calloc(1, sizeof *f->lp));
	f->lp->conns[0].idx = 0;
	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 0, mode,
	    ch);
	assert_int_equal(bft_chan_parse_hello(ch, &h), 0);
	assert_int_equal(bft_chan_server_accept(&server_id, ch, &h,
	    bft_chan_ciphers(), &f->srv, sh), 0);
	assert_int_equal(bft_chan_client_finish(&hs, sh, &f->lp->conns[0].chan,
	    fin, &why), 0);
	/* The sender's end non-blocking, as libuv leaves a TCP socket. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
	    f->fd), 0);
	assert_int_equal(fcntl(f->fd[1], F_SETFL, 0), 0);
	assert_int_equal(bftblk__conn_tx_start(f->lp, 1), 0);
	assert_true(f->lp->conns[0].tx.on);
	return f;
}

static void
fixture_free(struct fixture *f)
{
	bftblk__conn_tx_stop(f->lp, 1);
	assert_false(f->lp->conns[0].tx.on);
	bft_buf_free(&f->lp->conns[0].out);
	bft_chan_clear(&f->lp->conns[0].chan);
	bft_chan_clear(&f->srv);
	close(f->fd[0]);
	if (f->fd[1] >= 0)
		close(f->fd[1]);
	free(f->lp);
	free(f);
}

/* Appends a plaintext frame of len body bytes, each byte tag + i. */
static void
put_frame(struct conn *c, uint32_t len, uint8_t tag)
{
	uint8_t *p = bft_buf_extend(&c->out, 4 + (size_t)len);

	assert_non_null(p);
	bft_wire_put_len(p, len);
	for (uint32_t i = 0; i < len; i++)
		p[4 + i] = (uint8_t)(tag + i);
}

#define GIVE_UP_S	60

static time_t
deadline(void)
{
	return time(NULL) + GIVE_UP_S;
}

/*
 * Waits until fd can be read (data or its end): 0, or -1 after a minute
 * (not cmocka's fail: the reader thread calls it too).
 */
static int
wait_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, GIVE_UP_S * 1000) == 1 ? 0 : -1;
}

/* Reads exactly len bytes from fd; 0, or -1 at EOF or a minute first. */
static int
read_all(int fd, uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t r;

		if (wait_readable(fd) != 0)
			return -1;
		r = read(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static bool
drained(const struct conn_tx *tx)
{
	return tx->pend.len == 0 && !tx->busy;
}

static bool
blocked_on_full_socket(const struct conn_tx *tx)
{
	return tx->busy && tx->unsent > 0;
}

/* Waits until what (looked at under the sender's lock) holds, or fails. */
static void
wait_sender(struct conn *c, bool (*what)(const struct conn_tx *),
    const char *name)
{
	time_t end = deadline();
	bool done = false;

	while (!done) {
		pthread_mutex_lock(&c->tx.lock);
		done = what(&c->tx);
		pthread_mutex_unlock(&c->tx.lock);
		if (!done && time(NULL) > end)
			fail_msg("the sender not %s after %d s", name,
			    GIVE_UP_S);
		if (!done)
			(void)poll(NULL, 0, 1);
	}
}

#define NFRAMES	300

static uint32_t
frame_len(unsigned k)
{
	return 1 + (k * 7919u) % 65536;
}

struct reader {
	struct fixture *f;
	unsigned seen;			/* frames opened and checked */
	int bad;			/* which check failed, 0 none */
};

/* Reads, opens and checks frames until NFRAMES or the first wrong one. */
static void *
reader_main(void *arg)
{
	struct reader *rd = arg;
	static uint8_t buf[4 + 65536 + BFT_CHAN_TAG_LEN];

	while (rd->seen < NFRAMES) {
		uint32_t len;

		if (read_all(rd->f->fd[1], buf, 4) != 0)
			return rd->bad = 1, NULL;
		len = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
		    (uint32_t)buf[2] << 8 | buf[3];
		if (len > sizeof buf - 4 ||
		    read_all(rd->f->fd[1], buf + 4, len) != 0)
			return rd->bad = 2, NULL;
		if (bft_chan_open(&rd->f->srv, buf, buf + 4, &len) != 0)
			return rd->bad = 3, NULL;
		if (len != frame_len(rd->seen))
			return rd->bad = 4, NULL;
		for (uint32_t i = 0; i < len; i++)
			if (buf[4 + i] != (uint8_t)((uint8_t)rd->seen + i))
				return rd->bad = 5, NULL;
		rd->seen++;
	}
	return NULL;
}

static void
test_frames_in_order(void **state)
{
	struct fixture *f = fixture_new(BFT_CHAN_AEAD);
	struct conn *c = &f->lp->conns[0];
	struct reader rd = { .f = f };
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, reader_main, &rd), 0);
	/*
	 * NFRAMES frames of 1 to 65,536 bytes in batches of 1 to 7, handed
	 * over while the sender is busy with the last ones or not.
	 */
	for (unsigned k = 0, batch = 1; k < NFRAMES; batch = batch % 7 + 1) {
		for (unsigned j = 0; j < batch && k < NFRAMES; j++, k++)
			put_frame(c, frame_len(k), (uint8_t)k);
		assert_int_equal(bftblk__conn_tx_hand(c, f->fd[0]), 0);
		assert_int_equal(c->out.len, 0);
		if (batch == 3)
			wait_sender(c, drained, "drained");
	}
	pthread_join(th, NULL);
	assert_int_equal(rd.bad, 0);
	assert_int_equal(rd.seen, NFRAMES);
	fixture_free(f);
}

static void
test_plain_passes_through(void **state)
{
	struct fixture *f = fixture_new(BFT_CHAN_PLAIN);
	struct conn *c = &f->lp->conns[0];
	uint8_t want[3 * (4 + 1000)], got[sizeof want];

	(void)state;
	for (unsigned k = 0; k < 3; k++)
		put_frame(c, 1000, (uint8_t)(40 * k));
	memcpy(want, c->out.data, sizeof want);
	assert_int_equal(c->out.len, sizeof want);
	assert_int_equal(bftblk__conn_tx_hand(c, f->fd[0]), 0);
	assert_int_equal(read_all(f->fd[1], got, sizeof got), 0);
	assert_memory_equal(got, want, sizeof want);
	fixture_free(f);
}

/* Hands over 200 frames of 60,000 bytes that nobody reads. */
static void
fill_unread(struct fixture *f)
{
	struct conn *c = &f->lp->conns[0];

	for (unsigned k = 0; k < 200; k++)
		put_frame(c, 60000, (uint8_t)k);
	assert_int_equal(bftblk__conn_tx_hand(c, f->fd[0]), 0);
	/* The sender takes the batch and blocks on the full socket. */
	wait_sender(c, blocked_on_full_socket, "blocked on a full socket");
	/* More handed over meanwhile waits behind it. */
	put_frame(c, 1000, 1);
	assert_int_equal(bftblk__conn_tx_hand(c, f->fd[0]), 0);
}

static void
test_quiesce_wakes_blocked_sender(void **state)
{
	struct fixture *f = fixture_new(BFT_CHAN_AEAD);
	struct conn *c = &f->lp->conns[0];
	size_t unsent;
	uint8_t b[4096];
	ssize_t r;

	(void)state;
	fill_unread(f);
	assert_int_equal(bftblk__conn_tx_quiesce(c, &unsent), 0);
	/* At least the waiting batch and part of the blocked one. */
	assert_true(unsent > 4 + 1000);
	assert_true(unsent < 200 * (4 + 60000 + BFT_CHAN_TAG_LEN) + 4 + 1000);
	assert_false(c->tx.busy);
	assert_int_equal(c->tx.pend.len, 0);
	/* The socket was shut down: the reader sees data, then its end. */
	do {
		assert_int_equal(wait_readable(f->fd[1]), 0);
	} while ((r = read(f->fd[1], b, sizeof b)) > 0);
	assert_int_equal(r, 0);
	/* Nothing is left to report the next time. */
	assert_int_equal(bftblk__conn_tx_quiesce(c, &unsent), 0);
	assert_int_equal(unsent, 0);
	fixture_free(f);
}

static void
test_stop_wakes_blocked_sender(void **state)
{
	struct fixture *f = fixture_new(BFT_CHAN_AEAD);

	(void)state;
	fill_unread(f);
	/* fixture_free stops it; a sender that stayed blocked would hang. */
	fixture_free(f);
}

static void
test_send_failure_reported(void **state)
{
	struct fixture *f = fixture_new(BFT_CHAN_AEAD);
	struct conn *c = &f->lp->conns[0];
	size_t unsent;
	int err;

	(void)state;
	close(f->fd[1]);
	f->fd[1] = -1;
	put_frame(c, 1000, 9);
	assert_int_equal(bftblk__conn_tx_hand(c, f->fd[0]), 0);
	wait_sender(c, drained, "drained");
	err = bftblk__conn_tx_quiesce(c, &unsent);
	assert_true(err == EPIPE || err == ECONNRESET);
	/* Reported once: the connection made anew starts clean. */
	assert_int_equal(bftblk__conn_tx_quiesce(c, &unsent), 0);
	fixture_free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_in_order),
		cmocka_unit_test(test_plain_passes_through),
		cmocka_unit_test(test_quiesce_wakes_blocked_sender),
		cmocka_unit_test(test_stop_wakes_blocked_sender),
		cmocka_unit_test(test_send_failure_reported),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
