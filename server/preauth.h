/*
 * Connections that have not yet proven a key.  Anyone who can reach the
 * port can open one, so they get a small pool of their own instead of
 * the --max-conns slots of authenticated clients and peers: at most
 * max_per_addr from one source address (every unix-socket connection
 * counts as the one address "unix") and at most max in all, each closed
 * when it has not finished the handshake within --handshake-timeout.
 * A connection leaves the pool when its finish verifies; only then does
 * it take one of the --max-conns slots.
 *
 * What happens to them is logged sparingly: the first refusal, failed
 * handshake, timeout or eviction after a quiet interval gets its own
 * line at once, the rest one summary line per BFT_PREAUTH_LOG_MS with
 * the counts and the busiest source.  Each one still gets a debug line
 * (-v).
 */
#ifndef BFTBLK_PREAUTH_H
#define BFTBLK_PREAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include <netinet/in.h>

#define BFT_DEFAULT_MAX_PREAUTH		64
#define BFT_DEFAULT_MAX_PREAUTH_PER_ADDR 8
#define BFT_PREAUTH_LOG_MS		10000
#define BFT_PREAUTH_ADDR_LEN		INET6_ADDRSTRLEN
#define BFT_PREAUTH_TOP			8

struct bft_net;
struct conn;

enum bft_preauth_event {
	BFT_PA_EVICTED,		/* closed to make room for a newer one */
	BFT_PA_REFUSED,		/* --max-conns, --max-client-conns, accept */
	BFT_PA_FAILED,		/* bad key, garbage, bad finish, reset */
	BFT_PA_TIMEOUT,		/* no handshake within the deadline */
	BFT_PA_NEVENTS
};

struct bft_preauth_src {
	char addr[BFT_PREAUTH_ADDR_LEN];
	uint64_t n;
};

struct bft_preauth {
	struct conn *head, *tail;	/* in the pool, oldest first */
	unsigned count, max, max_per_addr;
	/* The log: busy from the line said at once until a quiet interval. */
	bool busy;
	uint64_t since_ms, told;
	uint64_t n[BFT_PA_NEVENTS];	/* since since_ms */
	uint64_t total[BFT_PA_NEVENTS];	/* since start, for /metrics */
	struct bft_preauth_src top[BFT_PREAUTH_TOP];	/* busiest sources */
};

/* Zero picks the default. */
void bft_preauth_init(struct bft_preauth *pa, unsigned max,
    unsigned max_per_addr);

/*
 * The newly accepted c joins the pool; when the pool is full for its
 * address or in all, an older connection is closed to make room.
 */
void bft_preauth_add(struct bft_net *net, struct conn *c);

/* c leaves the pool (authenticated, or closing); no-op when not in it. */
void bft_preauth_remove(struct conn *c);

/*
 * Records an event of a connection from addr (NULL when unknown) and
 * logs the line fmt makes, at once or as a debug line (see above).
 */
void bft_preauth_note(struct bft_net *net, const char *addr,
    enum bft_preauth_event ev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Once a second: closes the connections past the handshake deadline
 * and writes the summary line when its interval has passed.
 */
void bft_preauth_tick(struct bft_net *net, uint64_t now_ms);

#endif
