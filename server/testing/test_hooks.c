/*
 * The test server's side of server/test_hooks.h: its options, and the
 * calls from net.c into the Byzantine layer (byzantine.h) and the frame
 * recorder (record.h).  The server's event loop is single-threaded and
 * main() runs one server, so one global state is enough, as in record.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "byzantine.h"
#include "crypto.h"
#include "log.h"
#include "net_int.h"
#include "record.h"
#include "test_hooks.h"

static struct {
	unsigned byz_modes;		/* --byzantine */
	uint64_t byz_seed;		/* --byzantine-seed, else random */
	bool byz_seeded;
	const char *record_dir;		/* --record-frames */
	struct bft_byz *byz;		/* started with byz_modes, or NULL */
} ts;

/*
 * A server that lies must never come from a stray option in a unit file
 * that names the test build: the test harness says so explicitly.
 */
static bool
allowed(void)
{
	const char *v = getenv(BFT_BYZ_ENV);

	if (v != NULL && strcmp(v, "1") == 0)
		return true;
	bft_log("--byzantine and --byzantine-seed make this server lie to its "
	    "clients, and --record-frames copies what they send to disk, for "
	    "tests only; refused unless the environment has %s=1",
	    BFT_BYZ_ENV);
	return false;
}

int
bft_test_option(int ch, const char *arg)
{
	char err[512], *end;

	if (ch != 'B' && ch != 'S' && ch != 'F')
		return 0;
	if (!allowed())
		return -1;
	switch (ch) {
	case 'B':
		if (bft_byz_parse(arg, &ts.byz_modes, err, sizeof err) < 0) {
			bft_log("--byzantine: %s", err);
			return -1;
		}
		break;
	case 'S':
		/*
		 * Decimal always: tests print the seed they drew and a
		 * leading zero must not turn it into another (octal) seed.
		 */
		errno = 0;
		ts.byz_seed = strtoull(arg, &end, 10);
		if (errno || end == arg || *end != '\0') {
			bft_log("--byzantine-seed: not a number: %s", arg);
			return -1;
		}
		ts.byz_seeded = true;
		break;
	case 'F':
		ts.record_dir = arg;
		break;
	}
	return 1;
}

int
bft_test_start(uv_loop_t *loop, struct bft_handler *h)
{
	char err[512];

	if (ts.record_dir != NULL) {
		if (bft_record_start(ts.record_dir, err, sizeof err) < 0) {
			bft_log("--record-frames: %s", err);
			return -1;
		}
		bft_log("*** TEST MODE: recording received frames into %s",
		    ts.record_dir);
	}
	if (ts.byz_modes == 0)
		return 0;
	if (!ts.byz_seeded)
		bft_random(&ts.byz_seed, sizeof ts.byz_seed);
	ts.byz = bft_byz_new(loop, h, ts.byz_modes, ts.byz_seed);
	if (ts.byz == NULL) {
		bft_log("out of memory");
		return -1;
	}
	return 0;
}

void
bft_test_stop(void)
{
	bft_byz_free(ts.byz);
	ts.byz = NULL;
	bft_record_stop();
}

int
bft_test_conn_open(struct conn *c, bft_test_send_fn *send)
{
	if (ts.byz == NULL)
		return 0;
	c->byz = bft_byz_conn_new(ts.byz, send, c);
	return c->byz != NULL ? 0 : -1;
}

void
bft_test_conn_close(struct conn *c)
{
	bft_byz_conn_close(c->byz);
	c->byz = NULL;
}

bool
bft_test_reply_taken(struct conn *c)
{
	return c->byz != NULL && bft_byz_reply(c->byz, &c->net->req,
	    &c->net->rep) != BFT_BYZ_SEND;
}

void
bft_test_frame(const uint8_t *body, size_t len)
{
	bft_record_frame(body, len);
}
