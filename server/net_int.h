/*
 * What the server's network files share: the connection and listener
 * state.  net.c moves bytes and frames, listen.c opens the listeners,
 * handshake.c authenticates a new connection, preauth.c bounds the
 * connections that have not yet, quota.c keeps what is known of each
 * client identity.
 */
#ifndef BFTBLK_NET_INT_H
#define BFTBLK_NET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include <uv.h>

#include "channel.h"
#include "quota.h"
#include "handler.h"
#include "net.h"
#include "preauth.h"
#include "promtext.h"
#include "wire.h"

#define READ_CHUNK	(64u * 1024)
#define RBUF_MAX	(4u + BFT_MAX_FRAME + READ_CHUNK)
/* Stop reading from a client whose replies pile up beyond this. */
#define WQ_HIGH		(8u << 20)
#define WQ_LOW		(WQ_HIGH / 2)
/* Buffers bigger than this are given back once drained. */
#define BUF_KEEP	(1u << 20)

union bft_stream {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_tcp_t tcp;
	uv_pipe_t pipe;
};

struct conn {
	union bft_stream u;
	struct bft_net *net;
	struct conn *prev, *next;	/* net->conns: every connection */
	bool linked;		/* in net->conns */
	bool slot;		/* authenticated: counted in nconns */
	bool preauth;		/* in net->pa (preauth.h) */
	struct conn *pa_prev, *pa_next;
	char peer[80];
	char addr[BFT_PREAUTH_ADDR_LEN];	/* source address, or "unix" */
	uint8_t *rbuf;
	size_t rstart, rend, rcap;
	struct bft_buf out;	/* encoded replies not yet handed to libuv */
	struct bft_buf wbuf;	/* the replies of the write in flight */
	uv_write_t wreq;
#ifdef BFTBLK_TEST_SERVER
	struct bft_byz_conn *byz;	/* test_hooks.h: lies, or NULL */
#endif
	bool writing, reading, paused, hello_ok, closing, close_after_write;
	enum { HS_HELLO, HS_FINISH, HS_DONE } hs;
	struct bft_chan chan;
	struct bft_client_quota *client;	/* set once the finish verified */
	uint8_t client_pk[32];			/* what the hello claimed */
	uint64_t accepted_ms;
	unsigned nout, nw;	/* replies in out and in wbuf */
	/*
	 * A FLUSH waiting for the sync of generation flush_gen (net_flush.c):
	 * nothing after it is read or answered until its reply is sent.
	 */
	bool flush_wait;
	uint64_t flush_gen, flush_id, flush_block;
};

/* The FLUSH syncs, one at a time off the loop (net_flush.c). */
struct bft_net_flush {
	uv_work_t work;
	struct bft_store_flush *job;
	bool running;			/* generation gen is syncing */
	bool wanted;			/* FLUSHes wait for gen + 1 */
	uint64_t gen;
};

struct listener {
	union bft_stream u;
	bool open;
};

struct bft_net {
	uv_loop_t *loop;
	struct bft_handler *h;
	unsigned n, max_conns, nconns;	/* nconns: authenticated ones */
	struct listener tcp, unx;
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char where[BFT_HOST_LEN + sizeof(((struct sockaddr_un *)0)->sun_path)
	    + 32];
	struct conn *conns;
	uint64_t unix_seq;
	bool shut;
	const struct bft_server_key *key;
	struct bft_quotas quotas;
	struct bft_net_limits lim;
	struct bft_preauth pa;		/* not yet authenticated */
	uv_timer_t tick;		/* handshake deadlines */
	bool tick_open;
	uint64_t eperm, elimit;		/* requests refused by role, bound */
	uint64_t bytes_in, bytes_out;	/* on every connection, for /metrics */
	/* Time in bft_handle by request type (metrics.h). */
	struct bft_prom_hist handle_ns[BFT_MSG_TYPE_MAX + 1];
	/* One request and one reply at a time: the loop is single-threaded. */
	struct bft_msg req, rep;
	struct bft_net_flush fl;
};


/* net.c */
/* A connection listen.c accepted and named: its handshake starts. */
void bft_net_conn_open(struct conn *c, bool is_unix);
/* Logs why c is closed (sparingly before it authenticated) and closes. */
void bft_net_conn_fail(struct conn *c, const char *reason);
/* Closes c without a word. */
void bft_net_conn_close(struct conn *c);
/* Encodes and seals net->rep into c's output; false if c was closed. */
bool bft_net_send_reply(struct conn *c);
/* Handles c's buffered frames, sends what is due, reads on. */
void bft_net_process(struct conn *c);

/*
 * net_flush.c: the FLUSH in net->req, from c.  A writer's is answered
 * once a sync begun after it is durable, and c reads nothing more until
 * then; anyone else's at once.  False if c was closed.
 */
bool bft_net_flush(struct conn *c);

/* handshake.c: consumes handshake bytes from c's read buffer.  Returns
 * 1 when more bytes are needed, 0 when the channel is up, -1 when c was
 * closed. */
int bft_handshake_step(struct conn *c);

#endif
