/*
 * Sender threads: seal the frames the loop gathered for each ready
 * connection and write them.
 *
 * On the loop thread alone, a 64 KiB write spent more than half of its
 * client CPU sealing n fragments and in the kernel's send path (the
 * profile in docs/performance.md), one core however many the host has.
 * With senders=on each connection has a thread that does that part,
 * beside the loop, which keeps only the rounds, and beside the other
 * connections' threads.  One thread per connection, not a pool: a
 * server that stops reading blocks its own sender on a full socket and
 * no other server's frames (until the loop closes its link).  Order is
 * kept: a connection's batches go out one at a time in the order the
 * loop handed them over, and its channel's frame counter is advanced by
 * its sender alone while the connection is ready.
 *
 * The loop still reads, opens replies and writes everything before
 * C_READY (the handshake and HELLO) through libuv; a connection reaches
 * C_READY only once its HELLO was answered, so nothing the loop wrote
 * can still be queued behind what the sender writes.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_int.h"

/* How long a full socket is waited on before the abort flag is looked at. */
#define TX_POLL_MS	100

/* Writes all of p.  0, or a negative errno (-ECANCELED when aborted). */
static int
tx_send(struct conn_tx *tx, int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			bool abort;

			pthread_mutex_lock(&tx->lock);
			abort = tx->abort || tx->stop;
			tx->unsent = len;
			pthread_mutex_unlock(&tx->lock);
			if (abort)
				return -ECANCELED;
			/* The server reads slowly: wait, but not blind. */
			(void)poll(&pfd, 1, TX_POLL_MS);
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

/*
 * Seals the plaintext frames in tx->plain into tx->sealed and sends
 * them.  0, or a negative errno.
 */
static int
tx_seal_send(struct conn *c, int fd)
{
	struct conn_tx *tx = &c->tx;
	const uint8_t *p = tx->plain.data;
	size_t left = tx->plain.len;
	int r;

	if (c->chan.mode == BFT_CHAN_PLAIN)
		return tx_send(tx, fd, p, left);
	tx->sealed.len = 0;
	while (left > 0) {
		size_t off = tx->sealed.len;
		uint32_t blen;
		uint8_t *prefix;

		/* The loop framed these itself: a bad one is a bug here. */
		if (bft_wire_frame(p, left, &blen) != 0)
			return -EPROTO;
		if ((prefix = bft_buf_extend(&tx->sealed, 4)) == NULL)
			return -ENOMEM;
		memcpy(prefix, p, 4);
		/* The body goes from plain straight into the sealed frame. */
		if ((r = bft_chan_seal_tail(&c->chan, &tx->sealed, off, p + 4,
		    blen)) != 0)
			return r;
		p += 4 + (size_t)blen;
		left -= 4 + (size_t)blen;
	}
	return tx_send(tx, fd, tx->sealed.data, tx->sealed.len);
}

static void *
tx_main(void *arg)
{
	struct conn *c = arg;
	struct conn_tx *tx = &c->tx;

	pthread_mutex_lock(&tx->lock);
	for (;;) {
		bool failed;
		int fd, r;

		while (!tx->stop && tx->pend.len == 0) {
			tx->waiting = true;
			pthread_cond_wait(&tx->work, &tx->lock);
			tx->waiting = false;
		}
		if (tx->stop)
			break;
		bft_buf_swap(&tx->pend, &tx->plain);
		tx->busy = true;
		fd = tx->fd;
		failed = tx->err != 0;
		pthread_mutex_unlock(&tx->lock);

		/* After a failure the connection is going: drop the rest. */
		r = failed ? 0 : tx_seal_send(c, fd);
		tx->plain.len = 0;

		pthread_mutex_lock(&tx->lock);
		/*
		 * A failed send ends the connection: shutting the socket
		 * down makes the loop's read see it and close it there.
		 */
		if (r < 0 && !tx->abort && tx->err == 0) {
			tx->err = -r;
			(void)shutdown(fd, SHUT_RDWR);
		}
		tx->busy = false;
		tx->unsent = 0;
		pthread_cond_broadcast(&tx->idle);
	}
	pthread_mutex_unlock(&tx->lock);
	return NULL;
}

static void
sender_end(struct conn_tx *tx)
{
	pthread_mutex_lock(&tx->lock);
	tx->stop = true;
	/* Wakes a sender blocked on a full socket at once. */
	if (tx->busy)
		(void)shutdown(tx->fd, SHUT_RDWR);
	pthread_cond_signal(&tx->work);
	pthread_mutex_unlock(&tx->lock);
	pthread_join(tx->thread, NULL);
	pthread_cond_destroy(&tx->idle);
	pthread_cond_destroy(&tx->work);
	pthread_mutex_destroy(&tx->lock);
	tx->on = tx->stop = false;
}

int
bftblk__conn_tx_start(struct engine_loop *lp, unsigned n)
{
	char name[16];

	for (unsigned i = 0; i < n; i++) {
		struct conn_tx *tx = &lp->conns[i].tx;

		pthread_mutex_init(&tx->lock, NULL);
		pthread_cond_init(&tx->work, NULL);
		pthread_cond_init(&tx->idle, NULL);
		if (pthread_create(&tx->thread, NULL, tx_main,
		    &lp->conns[i]) != 0) {
			pthread_cond_destroy(&tx->idle);
			pthread_cond_destroy(&tx->work);
			pthread_mutex_destroy(&tx->lock);
			bftblk__conn_tx_stop(lp, n);
			return -1;
		}
		tx->on = true;
		/* i < BFT_MAX_N; the cast tells the compiler it fits. */
		snprintf(name, sizeof name, "bftblk-tx%u", (unsigned)(uint8_t)i);
		(void)pthread_setname_np(tx->thread, name);
	}
	return 0;
}

int
bftblk__conn_tx_hand(struct conn *c, int fd)
{
	struct conn_tx *tx = &c->tx;
	int r = 0;

	pthread_mutex_lock(&tx->lock);
	tx->fd = fd;
	if (tx->pend.len == 0)
		bft_buf_swap(&tx->pend, &c->out);
	else if (bft_buf_append(&tx->pend, c->out.data, c->out.len) != 0)
		r = -1;
	c->out.len = 0;
	if (r == 0 && tx->waiting)
		pthread_cond_signal(&tx->work);
	pthread_mutex_unlock(&tx->lock);
	return r;
}

int
bftblk__conn_tx_quiesce(struct conn *c, size_t *unsent)
{
	struct conn_tx *tx = &c->tx;
	int err;

	*unsent = 0;
	if (!tx->on)
		return 0;
	pthread_mutex_lock(&tx->lock);
	*unsent = tx->pend.len + tx->unsent;
	tx->pend.len = 0;
	tx->abort = true;
	/* Wakes a sender blocked on a full socket at once. */
	if (tx->busy)
		(void)shutdown(tx->fd, SHUT_RDWR);
	while (tx->busy)
		pthread_cond_wait(&tx->idle, &tx->lock);
	tx->abort = false;
	err = tx->err;
	tx->err = 0;
	pthread_mutex_unlock(&tx->lock);
	return err;
}

void
bftblk__conn_tx_stop(struct engine_loop *lp, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct conn_tx *tx = &lp->conns[i].tx;

		if (tx->on)
			sender_end(tx);
		bft_buf_free(&tx->pend);
		bft_buf_free(&tx->plain);
		bft_buf_free(&tx->sealed);
	}
}
