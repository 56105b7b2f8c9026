/*
 * The server's network side on a libuv loop: TCP and unix-socket
 * listeners, one connection state per client, frame splitting and
 * decoding, a write queue with backpressure.  Every decoded request is
 * handed to the protocol handler and its reply is queued at once, so a
 * client may keep many requests in flight on one connection.
 */
#ifndef BFTBLK_NET_H
#define BFTBLK_NET_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "handler.h"

#define BFT_DEFAULT_MAX_CONNS		256
#define BFT_DEFAULT_MAX_INFLIGHT	4096
#define BFT_DEFAULT_HANDSHAKE_MS	5000

struct bft_net;

/*
 * What one client may hold of a server.  Memory per connection is at
 * most a read buffer of one frame (BFT_MAX_FRAME) plus its queued
 * replies (8 MiB, or max_inflight replies); so the server's is bounded
 * by max_conns of those plus each client's pending-STORE list.  Before
 * it has proven a key a connection holds at most one client hello and
 * one finish, and counts in a pool of its own (preauth.h) instead of
 * max_conns.  Zero picks the default.
 */
struct bft_net_limits {
	unsigned max_conns;		/* authenticated connections */
	unsigned max_preauth;		/* unauthenticated ones in all */
	unsigned max_preauth_per_addr;	/* those per source address */
	unsigned max_client_conns;	/* connections per client identity */
	unsigned max_inflight;		/* unanswered requests per connection */
	unsigned max_client_stores;	/* STOREs above lc per client */
	uint64_t store_window_ms;	/* after which those stop counting */
	uint64_t handshake_ms;		/* to finish handshake and HELLO */
};

/*
 * Allocates the network state for loop; NULL when out of memory.  The
 * handler's configuration lists the clients let in; key holds this
 * server's channel key.
 */
struct bft_net *bft_net_new(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_server_key *key, const struct bft_net_limits *lim);

/*
 * The client list of the handler's configuration changed (SIGHUP):
 * connections of clients no longer listed are closed, roles refreshed.
 */
void bft_net_reload(struct bft_net *net);

/*
 * Listens on TCP host:port (port 0 picks a free one) or on the unix
 * socket path.  A stale socket file nobody listens on is replaced.
 * Returns 0, or -1 with a reason in err.
 */
int bft_net_listen_tcp(struct bft_net *net, const char *host, uint16_t port,
    char *err, size_t errlen);
int bft_net_listen_unix(struct bft_net *net, const char *path,
    char *err, size_t errlen);

/* Where the listeners are, e.g. "127.0.0.1:7000 and unix:/run/s0". */
const char *bft_net_where(const struct bft_net *net);

/*
 * Stops accepting and closes every connection; uv_run returns once the
 * handles are closed.  Safe to call more than once.
 */
void bft_net_shutdown(struct bft_net *net);

/* Frees net; only after shutdown and after the loop has run dry. */
void bft_net_free(struct bft_net *net);

#endif
