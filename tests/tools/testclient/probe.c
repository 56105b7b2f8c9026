/*
 * probe, tamper, peek and pipeline: what a role may do, and what the
 * channel does with frames that were tampered with, read off the wire
 * or pipelined.
 *
 * probe sends CLOCK, STORE (made-up fragment and MACs), COMPLETE,
 * COLLECT, FLUSH, SUMMARY and LCLIST (of the block alone) and STATUS to
 * each server and prints "server I: TYPE status N (name)" for each:
 * what a role may do.
 *
 * tamper, to the first server of L, after HELLO (M: what the frames
 * that follow suffer):
 *   flip      one ciphertext bit of a COLLECT flipped
 *   replay    a COLLECT answered, then the same bytes sent again
 *   reorder   two COLLECTs sealed in order and sent swapped
 *   drop      two COLLECTs sealed, only the second sent
 *   truncate  a COLLECT cut by 8 bytes, its length prefix adjusted
 *   cut       half a COLLECT, then EOF
 *   none      a COLLECT as sealed (the control: must exit 1)
 * and exits 0 when the server closed the connection without answering
 * the tampered frame.
 *
 * peek COLLECTs the block's lc and FILTERs it back to get a fragment,
 * keeping the reply's bytes as they came off the wire: exits 0 when
 * those do not decode and hold no 32-byte run of the opened plaintext,
 * 3 when the plaintext is visible (channel = plain).
 *
 * pipeline sends --count FILTERs of the block's lc (each answered with a
 * fragment) to the first server of L without reading a reply, until the
 * server stops reading (no progress for 2 s) or all are sent; prints
 * "holding", sleeps --hold seconds, then reads every reply while sending
 * the rest: exits 0 when all came back, in order and ok.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto.h"
#include "testclient.h"

/* The first server of --servers: the one the channel tests talk to. */
static unsigned
first_server(void)
{
	uint32_t mask = tc_parse_list(opt.servers);

	for (unsigned i = 0; i < n; i++)
		if (mask & (1u << i))
			return i;
	errx(1, "no server given");
}

/* Connects to server i alone; exits when that fails. */
static void
connect_one(unsigned i)
{
	tc_connect_servers(1u << i);
	if (sess[i].fd < 0)
		errx(1, "server %u: no channel (see above)", i);
}

/*
 * What each request type gets from every server under this key's role:
 * CLOCK, a STORE and a COMPLETE with made-up MACs, COLLECT, FLUSH,
 * SUMMARY, LCLIST and STATUS.
 */
int
tc_cmd_probe(void)
{
	static const uint8_t types[] = {
		BFT_CLOCK, BFT_STORE, BFT_COMPLETE, BFT_COLLECT, BFT_FLUSH,
		BFT_SUMMARY, BFT_LCLIST, BFT_STATUS,
	};
	static uint8_t frag[4096];
	uint32_t mask;
	int st;

	tc_load(false);
	mask = tc_parse_list(opt.servers);
	tc_connect_servers(mask);
	bft_random(frag, sizeof frag);
	printf("probe: %s client '%s'\n", bft_role_str(key.role), key.name);
	FOR_EACH(i, mask) {
		for (size_t k = 0; k < sizeof types; k++) {
			tc_new_req(types[k]);
			req.ts.num = 1ull << 40;
			req.ts.wid = 0x5eed1;
			bft_random(req.ts.mac, sizeof req.ts.mac);
			bft_random(req.nonce, sizeof req.nonce);
			bft_random(req.nh, sizeof req.nh);
			bft_random(req.vec, sizeof req.vec);
			bft_random(req.cc, sizeof req.cc);
			if (types[k] == BFT_STORE) {
				req.frag = frag;
				req.frag_len = sizeof frag;
			}
			req.count = req.span = 1;
			if (types[k] == BFT_STATUS)
				req.block = 0;
			st = tc_xfer(i);
			printf("server %u: %s status %d (%s)\n", i,
			    bft_msg_type_str(types[k]), st, tc_status_name(st));
		}
	}
	return 0;
}

/*
 * After a tampered frame: the server must close the connection (EOF or
 * reset) without sending anything.  0 if it did, 1 otherwise.
 */
static int
expect_closed(unsigned i)
{
	uint8_t buf[4096];
	ssize_t r;

	for (;;) {
		r = recv(sess[i].fd, buf, sizeof buf, 0);
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE))) {
		printf("server %u closed the connection (%s)\n", i,
		    r == 0 ? "EOF" : strerror(errno));
		return 0;
	}
	if (r > 0) {
		printf("FAILED: server %u sent %zd bytes after the tampered "
		    "frame\n", i, r);
		return 1;
	}
	printf("FAILED: server %u kept the connection open (%s)\n", i,
	    strerror(errno));
	return 1;
}

int
tc_cmd_tamper(void)
{
	struct bft_buf out = { 0 };
	const char *m = opt.mode ? opt.mode : "", *why = NULL;
	size_t a, b, blen;
	unsigned i;
	int rc;

	if (strcmp(m, "flip") && strcmp(m, "replay") && strcmp(m, "reorder") &&
	    strcmp(m, "drop") && strcmp(m, "truncate") && strcmp(m, "cut") &&
	    strcmp(m, "none"))
		errx(1, "--mode must be flip, replay, reorder, drop, truncate, "
		    "cut or none");
	tc_load(false);
	i = first_server();
	connect_one(i);
	if (cfg.channel != BFT_CHAN_AEAD)
		errx(1, "tamper needs channel = aead");
	tc_new_req(BFT_COLLECT);
	a = tc_seal_req(i, &out);
	blen = out.len - a - 4;
	if (strcmp(m, "flip") == 0) {
		out.data[a + 4 + blen / 3] ^= 0x10;
		printf("tamper: a COLLECT with bit 4 of ciphertext byte %zu "
		    "of %zu flipped\n", blen / 3, blen);
		tc_send_raw(i, out.data, out.len);
	} else if (strcmp(m, "replay") == 0) {
		tc_send_raw(i, out.data, out.len);
		if (tc_recv_reply(i, NULL, NULL, &why) != 0)
			errx(1, "the COLLECT was not answered: %s", why);
		if (rep.id != req.id || rep.status != BFT_OK)
			errx(1, "the COLLECT got %s", tc_status_name(rep.status));
		printf("tamper: COLLECT answered; the same %zu bytes again\n",
		    out.len);
		tc_send_raw(i, out.data, out.len);
	} else if (strcmp(m, "reorder") == 0) {
		b = tc_seal_req(i, &out);
		printf("tamper: COLLECTs %" PRIu64 " and %" PRIu64 " sent "
		    "swapped\n", req.id - 1, req.id);
		tc_send_raw(i, out.data + b, out.len - b);
		tc_send_raw(i, out.data + a, b - a);
	} else if (strcmp(m, "drop") == 0) {
		b = tc_seal_req(i, &out);
		printf("tamper: COLLECT %" PRIu64 " sealed and dropped, %"
		    PRIu64 " sent\n", req.id - 1, req.id);
		tc_send_raw(i, out.data + b, out.len - b);
	} else if (strcmp(m, "truncate") == 0) {
		bft_wire_put_len(out.data + a, (uint32_t)(blen - 8));
		printf("tamper: a COLLECT cut from %zu to %zu bytes, length "
		    "prefix to match\n", blen, blen - 8);
		tc_send_raw(i, out.data + a, 4 + blen - 8);
	} else if (strcmp(m, "none") == 0) {
		printf("tamper: a COLLECT as it was sealed\n");
		tc_send_raw(i, out.data, out.len);
	} else {
		printf("tamper: %zu of the %zu bytes of a COLLECT, then EOF\n",
		    4 + blen / 2, 4 + blen);
		tc_send_raw(i, out.data + a, 4 + blen / 2);
		shutdown(sess[i].fd, SHUT_WR);
	}
	rc = expect_closed(i);
	bft_buf_free(&out);
	return rc;
}

/* The block's lc at server i, which must be a completed write. */
static struct bft_cand
get_lc(unsigned i)
{
	tc_new_req(BFT_COLLECT);
	if (tc_xfer(i) != BFT_OK || rep.ncands != 1 ||
	    bft_ts_is_zero(&rep.cands[0].ts))
		errx(1, "server %u: no completed write on block %" PRIu64,
		    i, opt.block);
	return rep.cands[0];
}

/* Whether needle[0..len) occurs in hay[0..hlen). */
static bool
contains(const uint8_t *hay, size_t hlen, const uint8_t *needle, size_t len)
{
	return memmem(hay, hlen, needle, len) != NULL;
}

int
tc_cmd_peek(void)
{
	static uint8_t raw[4 + BFT_MAX_FRAME];
	static struct bft_msg dec;
	struct bft_buf out = { 0 };
	struct bft_cand lc;
	const char *why = NULL;
	size_t rawlen = 0;
	unsigned i, runs = 0, seen = 0;
	bool decodes;

	tc_load(false);
	i = first_server();
	connect_one(i);
	lc = get_lc(i);		/* before new_req: it sends a COLLECT */
	tc_new_req(BFT_FILTER);
	req.cands[0] = lc;
	req.ncands = 1;
	tc_seal_req(i, &out);
	tc_send_raw(i, out.data, out.len);
	bft_buf_free(&out);
	if (tc_recv_reply(i, raw, &rawlen, &why) != 0)
		errx(1, "server %u: FILTER: %s", i, why);
	if (rep.type != (BFT_FILTER | BFT_ACK) || rep.status != BFT_OK ||
	    rep.frag_len < 64)
		errx(1, "server %u: FILTER answered without a fragment (%s)",
		    i, tc_status_name(rep.status));
	decodes = bft_wire_decode(raw + 4, rawlen - 4, n, &dec, &why) == 0;
	for (uint32_t off = 0; off + 32 <= rep.frag_len; off += 32, runs++)
		if (contains(raw, rawlen, rep.frag + off, 32))
			seen++;
	printf("peek: FILTER_ACK of %zu bytes on the wire, %s; %u of the "
	    "%u 32-byte runs of its %u-byte fragment appear in them\n",
	    rawlen, decodes ? "decodes as it is" : "does not decode", seen,
	    runs, rep.frag_len);
	if (decodes || seen > 0) {
		printf("PLAINTEXT on the wire\n");
		return 3;
	}
	printf("ciphertext only\n");
	return 0;
}

int
tc_cmd_pipeline(void)
{
	static uint8_t acc[2 * (4 + BFT_MAX_FRAME)];
	struct bft_buf out = { 0 };
	struct bft_cand lc;
	uint64_t first_id, got = 0, bad = 0, whole = 0;
	size_t sent = 0, alen = 0, *ends;
	const char *why;
	unsigned i;
	int fd;

	if (opt.count == 0)
		errx(1, "--count is required");
	tc_load(false);
	i = first_server();
	connect_one(i);
	fd = sess[i].fd;
	lc = get_lc(i);
	first_id = sess[i].next_id;
	if ((ends = malloc(opt.count * sizeof *ends)) == NULL)
		err(1, "malloc");
	for (uint64_t k = 0; k < opt.count; k++) {
		tc_new_req(BFT_FILTER);
		req.cands[0] = lc;
		req.ncands = 1;
		tc_seal_req(i, &out);
		ends[k] = out.len;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
		err(1, "fcntl");
	while (sent < out.len) {
		ssize_t r = send(fd, out.data + sent, out.len - sent,
		    MSG_NOSIGNAL);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int pr;

		if (r > 0) {
			sent += (size_t)r;
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			err(1, "send");
		pr = poll(&p, 1, 2000);
		if (pr < 0 && errno != EINTR)
			err(1, "poll");
		if (pr == 0)
			break;		/* no progress for 2 s */
	}
	while (whole < opt.count && ends[whole] <= sent)
		whole++;
	free(ends);
	printf("sent %zu of %zu bytes: %" PRIu64 " of %" PRIu64 " FILTERs "
	    "whole%s\n", sent, out.len, whole, opt.count, sent < out.len ?
	    ", then the server stopped reading" : "");
	printf("holding %" PRIu64 " s\n", opt.hold);
	fflush(stdout);
	sleep((unsigned)opt.hold);
	while (got < opt.count) {
		struct pollfd p = { .fd = fd, .events = POLLIN |
		    (sent < out.len ? POLLOUT : 0) };
		size_t off = 0;
		ssize_t r;
		int pr = poll(&p, 1, 10000);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			err(1, "poll");
		if (pr == 0)
			errx(1, "no progress for 10 s: %" PRIu64 " replies of %"
			    PRIu64 ", %zu of %zu bytes sent", got, opt.count,
			    sent, out.len);
		if ((p.revents & POLLOUT) && sent < out.len) {
			r = send(fd, out.data + sent, out.len - sent,
			    MSG_NOSIGNAL);
			if (r > 0)
				sent += (size_t)r;
			else if (r < 0 && errno != EAGAIN && errno != EINTR)
				err(1, "send");
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(fd, acc + alen, sizeof acc - alen, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			err(1, "recv after %" PRIu64 " replies", got);
		if (r == 0)
			errx(1, "server %u closed the connection after %"
			    PRIu64 " replies", i, got);
		alen += (size_t)r;
		while (alen - off >= 4) {
			uint32_t flen = tc_get_be32(acc + off), len = flen;

			if (flen > BFT_MAX_FRAME)
				errx(1, "reply frame of %u bytes", flen);
			if (alen - off - 4 < flen)
				break;
			if (bft_chan_open(&sess[i].chan, acc + off, acc + off + 4,
			    &len) != 0)
				errx(1, "reply %" PRIu64 " failed "
				    "authentication", got);
			if (bft_wire_decode(acc + off + 4, len, n, &rep,
			    &why) != 0)
				errx(1, "reply %" PRIu64 ": %s", got, why);
			if (rep.id != first_id + got || rep.status != BFT_OK ||
			    rep.type != (BFT_FILTER | BFT_ACK)) {
				if (bad++ < 10)
					printf("reply %" PRIu64 ": id %" PRIu64
					    " %s %s\n", got, rep.id,
					    bft_msg_type_str(rep.type),
					    tc_status_name(rep.status));
			}
			got++;
			off += 4 + (size_t)flen;
		}
		memmove(acc, acc + off, alen - off);
		alen -= off;
	}
	printf("got %" PRIu64 " replies of %" PRIu64 ", %" PRIu64 " out of "
	    "order or not ok\n", got, opt.count, bad);
	bft_buf_free(&out);
	return bad ? 1 : 0;
}
