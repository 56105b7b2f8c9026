/*
 * The test client's connections: one blocking session per server
 * (common/session.h), which does the handshake, HELLO, sealing and
 * opening.  What is left here is what the test client adds:
 * its one request and reply buffers, printing, and giving up loudly.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "testclient.h"

#define IO_TIMEOUT_MS	10000

struct bft_config cfg;
struct bft_client_key key;
struct bft_session sess[BFT_MAX_N];	/* fd -1: down or never reached */
unsigned n, t;
struct bft_msg req, rep;		/* big: kept off the stack */

uint32_t
tc_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

size_t
tc_seal_req(unsigned i, struct bft_buf *out)
{
	long off = bft_session_seal(&sess[i], &req, out);

	if (off < 0)
		errx(1, "cannot encode or seal a %s",
		    bft_msg_type_str(req.type));
	return (size_t)off;
}

int
tc_recv_reply(unsigned i, uint8_t *raw, size_t *rawlen, const char **why)
{
	return bft_session_recv(&sess[i], &rep, raw, rawlen, why);
}

int
tc_xfer(unsigned i)
{
	const char *why;
	int st;

	if (sess[i].fd < 0)
		return -1;
	if ((st = bft_session_call(&sess[i], &req, &rep, &why)) < 0)
		printf("server %u: disconnected: %s\n", i, why);
	return st;
}

const char *
tc_status_name(int st)
{
	return st < 0 ? "no reply" : st == BFT_OK ? "ok" : bft_status_str(st);
}

void
tc_new_req(unsigned type)
{
	memset(&req, 0, sizeof req);
	req.type = (uint8_t)type;
	req.block = opt.block;
}

void
tc_connect_servers(uint32_t mask)
{
	struct bft_session_fail f;
	int r;

	for (unsigned i = 0; i < n; i++)
		sess[i].fd = -1;
	FOR_EACH(i, mask) {
		if ((r = bft_session_open(&sess[i], &cfg, &key, i,
		    IO_TIMEOUT_MS, true, &f)) == 0)
			continue;
		if (f.step == BFT_SESS_CONNECT)
			printf("server %u: cannot connect: %s\n", i,
			    strerror(-r));
		else if (f.step == BFT_SESS_CHANNEL && f.status != 0)
			printf("server %u: channel refused (status %d): %s\n",
			    i, f.status, f.why);
		else if (f.step == BFT_SESS_HELLO && f.status != 0)
			printf("server %u: HELLO: %s\n", i,
			    tc_status_name(f.status));
		printf("server %u: disconnected: %s\n", i, f.why);
	}
}

void
tc_send_raw(unsigned i, const uint8_t *p, size_t len)
{
	int r;

	if ((r = bft_session_send_raw(&sess[i], p, len)) != 0)
		printf("(send of %zu bytes failed: %s)\n", len, strerror(-r));
}

void
tc_print_ts(const char *what, const struct bft_ts *ts)
{
	printf("%s ts %" PRIu64 "/%016" PRIx64 "\n", what, ts->num, ts->wid);
}
