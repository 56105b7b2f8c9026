/*
 * The plugin's event loop internals shared by the connection layer
 * (conn.c) and the round machinery (engine.c); loop thread only.
 */
#ifndef BFTBLK_CONN_INT_H
#define BFTBLK_CONN_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <uv.h>

#include "channel.h"
#include "promtext.h"
#include "rounds_int.h"
#include "wire.h"

#define MAX_OPS		1024	/* operations in their rounds at once */
#define TICK_MS		50
#define RBUF_INITIAL	(256u * 1024)

/*
 * C_HANDSHAKE: our client hello is out, the server's is awaited.
 * C_HELLO: the channel is up, our HELLO (geometry check) is out.
 */
#define LAT_RING	64

enum conn_state {
	C_IDLE, C_CONNECTING, C_HANDSHAKE, C_HELLO, C_READY, C_CLOSING
};

/*
 * Sender threads (conn_tx.c), one per connection with senders=on, seal
 * the frames the loop gathered for a ready connection and write them,
 * so that the AEAD and the kernel's send path, most of a write's cost
 * in the client, run beside the loop instead of on it.  A sender takes
 * its connection's batches in the order the loop handed them over;
 * while the connection is ready its channel's sending half is that
 * thread's, until the loop takes it back to close it
 * (bftblk__conn_tx_quiesce).  With senders=off the loop does it all.
 */
struct conn_tx {
	bool on;			/* a thread; else the loop writes */
	pthread_t thread;
	pthread_mutex_t lock;		/* all below */
	pthread_cond_t work;		/* pend filled, or stop */
	pthread_cond_t idle;		/* busy cleared */
	bool waiting;			/* the thread sleeps on work */
	bool stop;
	bool busy;			/* the thread holds a batch */
	bool abort;			/* drop what is held: closing */
	int fd;
	int err;			/* a send or seal failed: errno */
	size_t unsent;			/* of the batch, when the socket filled */
	struct bft_buf pend;		/* plaintext frames handed over */
	struct bft_buf plain, sealed;	/* the thread's own */
};

struct conn {
	struct bft_engine *cl;
	unsigned idx;
	enum conn_state state;
	uv_tcp_t tcp;
	uv_connect_t connect;
	uv_timer_t retry;
	unsigned backoff_ms;
	bool warned;			/* logged this outage already */
	bool refused;			/* HELLO refused: retry slowly */
	struct sockaddr_storage addr;
	uint8_t *rbuf;
	size_t rlen, rcap;
	struct bft_buf out;		/* frames gathered this iteration */
	struct bft_buf wbuf;		/* frames being written (uv_write) */
	struct conn_tx tx;
	uv_write_t wreq;
	bool writing;
	struct bft_chan_client hs;
	struct bft_chan chan;
	/*
	 * Liveness (engine_watch.c): when the state began, frames sent and
	 * received on this connection, and since when the oldest request
	 * has waited for anything to come back.
	 */
	uint64_t state_ms;
	uint64_t nsent, nrcvd;
	uint64_t wait_ms, last_tx_ms;
	/*
	 * When each of the last LAT_RING requests went out (uv_hrtime):
	 * a server answers a connection's requests in order, so reply
	 * nrcvd is to request nrcvd.
	 */
	uint64_t sent_ns[LAT_RING];
};

struct engine_loop {
	uv_loop_t loop;
	uv_async_t wake;
	uv_timer_t tick;
	pthread_t thread;
	struct conn conns[BFT_MAX_N];

	pthread_mutex_t qlock;
	struct op *qhead, *qtail;	/* submitted, not yet taken */
	bool stopping;

	struct op *slots[MAX_OPS];
	uint32_t nactive;
	struct op *waithead, *waittail;	/* taken, waiting for a slot */
	bool admitting;			/* in admit_waiting() */
	uv_check_t flush;
	uint32_t dirty;			/* connections with frames in out */
	uint64_t next_gen;
	/* bftblk.conf as last seen, for replaced servers (engine.c). */
	uint64_t cfg_next_ms;
	struct timespec cfg_mtime;
	/*
	 * The key file as last seen, and the MAC epochs each server said
	 * it accepts in its STATUS (engine_keys.c).
	 */
	uint64_t key_next_ms;
	struct timespec key_mtime;
	uint32_t srv_epoch[BFT_MAX_N], srv_next[BFT_MAX_N];
	uint32_t epochs_known;
	/* Per-server evidence as last reported (engine.c). */
	uint64_t ev_next_ms;
	uint64_t ev_last[BFT_MAX_N][EV_KINDS];
	uint64_t ev_recent[BFT_MAX_N][EV_KINDS];	/* in the last period */
	bool stats_file_failed;		/* said once */
	struct eng_metrics *metrics;	/* NULL without metrics= */
};

/* conn.c */
void bftblk__conn_send(struct conn *c, const struct bft_msg *m);
void bftblk__conn_connect(struct conn *c);
void bftblk__conn_close(struct conn *c, const char *why);
/* Check handle: writes what each connection gathered this iteration. */
void bftblk__conn_flush_all(uv_check_t *h);
int bftblk__conn_resolve(struct bft_engine *cl, const struct bft_server_addr *a,
    struct sockaddr_storage *out);

/*
 * conn_tx.c.  Starts a sender thread for each of n connections: 0, or
 * -1 when a thread cannot start (those started are stopped again).
 */
int bftblk__conn_tx_start(struct engine_loop *lp, unsigned n);
/*
 * Hands c->out (plaintext frames of a ready connection) to its sender:
 * 0, or -1 when out of memory (the caller closes the connection).
 */
int bftblk__conn_tx_hand(struct conn *c, int fd);
/*
 * Takes the channel and the socket back: drops what was handed over and
 * not sent, and waits until the sender holds nothing of c.  Then the
 * send failure, if any (an errno, else 0), which it forgets; *unsent is
 * how many bytes were dropped (counted in the batch being sent only
 * when the socket had filled up).
 */
int bftblk__conn_tx_quiesce(struct conn *c, size_t *unsent);
/* Ends the senders, if any, and frees the connections' buffers. */
void bftblk__conn_tx_stop(struct engine_loop *lp, unsigned n);

/*
 * engine.c.  bftblk__engine_new and bftblk__engine_free make an engine
 * with its loop and no thread or connection, which bftblk__engine_start
 * adds: the unit tests drive such an engine by hand through a fake
 * connection layer (tests/unit/fake_conn.c), starting ops, feeding
 * replies to bftblk__engine_dispatch and moving time with
 * bftblk__engine_tick.
 */
struct bft_engine *bftblk__engine_new(const struct bft_engine_params *p);
void bftblk__engine_free(struct bft_engine *cl);
/* Starts a submitted op's first round, or queues it for a slot. */
void bftblk__engine_start_op(struct op *op);
/* Times out, or ends the short waits of, rounds whose deadline passed. */
void bftblk__engine_tick(struct engine_loop *lp, uint64_t now);
/* Sets c's state and notes when it began. */
void bftblk__conn_set_state(struct conn *c, enum conn_state st);

/* engine_watch.c: evidence reports and bftblk.conf, every tick. */
void bftblk__engine_watch(struct engine_loop *lp, uint64_t now);
/* The loop is stopping: the stats file's last version. */
void bftblk__engine_watch_stop(struct engine_loop *lp);
/*
 * engine_keys.c: the key file, every tick, and the servers' MAC epochs
 * from their STATUS, which a writer signs under the next epoch by.
 */
void bftblk__engine_keys_watch(struct engine_loop *lp, uint64_t now);
/* At once for a server just connected: a new engine switches soon. */
void bftblk__engine_keys_probe(struct conn *c);
void bftblk__engine_note_status(struct conn *c,
    const struct bft_status_info *s);
/* stats_file.c: writes stats-file=; 0, or -1 with the error recorded. */
int bftblk__eng_stats_file_write(struct bft_engine *cl,
    const uint64_t recent[][EV_KINDS], bool closing);

/* metrics.c: metrics=ADDR:PORT on the loop; NULL with a reason in err. */
struct eng_metrics *bftblk__eng_metrics_start(struct bft_engine *cl,
    const char *addr, char *err, size_t errlen);
const char *bftblk__eng_metrics_where(const struct eng_metrics *m);
/* Closes the endpoint; the loop frees it as it runs.  NULL: no-op. */
void bftblk__eng_metrics_stop(struct eng_metrics *m);

/* engine.c, for conn.c */
void bftblk__engine_dispatch(struct conn *c, const struct bft_msg *m);
/* A reply of server i came ns after its request: the moving average. */
void bftblk__engine_note_latency(struct bft_engine *cl, unsigned i,
    uint64_t ns);
/* A server answered HELLO: bring it into the rounds that lack it. */
void bftblk__engine_conn_ready(struct conn *c);
/* A connection dropped: its unanswered requests must go out again. */
void bftblk__engine_conn_lost(struct conn *c);

#endif
