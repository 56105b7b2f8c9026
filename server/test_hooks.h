/*
 * Where the test server hooks into bftblk-server.  The test server,
 * build/tests/bftblk-server-test, is the server's sources plus
 * server/testing/ (lying replies for tests/faults/, frame recording for
 * the fuzzers' seeds), all compiled with BFTBLK_TEST_SERVER.  The
 * production server is compiled without it: every hook below is then an
 * empty inline function and the options do not exist, so no unit file
 * can turn a production server into a liar, and its binary holds none
 * of that code.
 *
 * main.c and net.c reach server/testing/ through this header only.
 */
#ifndef BFTBLK_TEST_HOOKS_H
#define BFTBLK_TEST_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct bft_handler;
struct conn;

/*
 * Sends a reply the test layer held back, an encoded frame, on the
 * connection ctx: the connection seals it in its turn, so the channel's
 * frame counter stays in step.
 */
typedef void bft_test_send_fn(void *ctx, const uint8_t *frame, size_t len);

#ifdef BFTBLK_TEST_SERVER

/*
 * The test options, for main.c's getopt_long table and usage.  Their
 * letters must stay clear of main.c's own.
 */
#define BFT_TEST_LONGOPTS						\
	{ "byzantine", required_argument, NULL, 'B' },			\
	{ "byzantine-seed", required_argument, NULL, 'S' },		\
	{ "record-frames", required_argument, NULL, 'F' },
#define BFT_TEST_USAGE							\
	"                     [--byzantine MODE[,MODE...] "		\
	"[--byzantine-seed N]]  (tests only)\n"				\
	"                     [--record-frames DIR]  (tests only)\n"

/*
 * Takes getopt_long's ch and optarg: 1 when it was a test option, 0 when
 * it is none, -1 (logged) when it is refused, as every one is unless the
 * environment has BFTBLK_TEST_BYZANTINE=1.
 */
int bft_test_option(int ch, const char *arg);

/* Starts what the options asked for, over h; 0, or -1 logged. */
int bft_test_start(uv_loop_t *loop, struct bft_handler *h);

/* After the loop has run dry: logs what was injected and frees it. */
void bft_test_stop(void);

/* A connection was accepted; 0, or -1 when out of memory. */
int bft_test_conn_open(struct conn *c, bft_test_send_fn *send);

/* Before c's stream is closed: replies it still holds are discarded. */
void bft_test_conn_close(struct conn *c);

/*
 * The honest reply to c->net->req is in c->net->rep, maybe rewritten
 * here.  True when the test layer dropped it or holds it back, so that
 * the caller must not send it.
 */
bool bft_test_reply_taken(struct conn *c);

/* A frame body was received; it has not been decoded yet. */
void bft_test_frame(const uint8_t *body, size_t len);

#else /* !BFTBLK_TEST_SERVER */

#define BFT_TEST_LONGOPTS
#define BFT_TEST_USAGE	""

static inline int
bft_test_option(int ch, const char *arg)
{
	(void)ch;
	(void)arg;
	return 0;
}

static inline int
bft_test_start(uv_loop_t *loop, struct bft_handler *h)
{
	(void)loop;
	(void)h;
	return 0;
}

static inline void
bft_test_stop(void)
{
}

static inline int
bft_test_conn_open(struct conn *c, bft_test_send_fn *send)
{
	(void)c;
	(void)send;
	return 0;
}

static inline void
bft_test_conn_close(struct conn *c)
{
	(void)c;
}

static inline bool
bft_test_reply_taken(struct conn *c)
{
	(void)c;
	return false;
}

static inline void
bft_test_frame(const uint8_t *body, size_t len)
{
	(void)body;
	(void)len;
}

#endif /* BFTBLK_TEST_SERVER */

#endif
