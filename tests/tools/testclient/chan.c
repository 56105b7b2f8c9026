/*
 * The test client's connections: one blocking socket per server, the
 * channel handshake, HELLO, and requests sealed and replies opened.
 */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testclient.h"

#define IO_TIMEOUT_S	10

struct bft_config cfg;
struct bft_client_key key;
int fds[BFT_MAX_N];		/* -1: down or never reached */
struct bft_chan chans[BFT_MAX_N];	/* of the connected ones */
static uint8_t *rbuf;			/* one frame body; rep points into it */
unsigned n, t;
uint64_t next_id = 1;
struct bft_msg req, rep;		/* big: kept off the stack */

static void
disconnect(unsigned i, const char *why)
{
	printf("server %u: disconnected: %s\n", i, why);
	close(fds[i]);
	fds[i] = -1;
	bft_chan_clear(&chans[i]);
}

/* send() or recv() of exactly len bytes; -1 on error, EOF or timeout. */
static int
io_all(int fd, uint8_t *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t r = out ? send(fd, p, len, MSG_NOSIGNAL) :
		    recv(fd, p, len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

uint32_t
tc_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Appends req to out as a frame sealed for server i, under a new id.
 * Returns the frame's offset in out.
 */
size_t
tc_seal_req(unsigned i, struct bft_buf *out)
{
	size_t off = out->len;

	req.id = next_id++;
	if (bft_wire_encode(&req, n, out) != 0)
		errx(1, "cannot encode a %s", bft_msg_type_str(req.type));
	if (bft_chan_seal(&chans[i], out, off) != 0)
		errx(1, "cannot seal a %s", bft_msg_type_str(req.type));
	return off;
}

/*
 * Reads one frame from server i into rbuf (body, *len bytes; the raw
 * frame as it came off the wire is copied to raw when not NULL), opens
 * and decodes it into rep.  Returns 0, or -1 with a reason in *why.
 */
int
tc_recv_reply(unsigned i, uint8_t *raw, size_t *rawlen, const char **why)
{
	uint8_t pre[4];
	uint32_t len;

	if (io_all(fds[i], pre, 4, false) != 0) {
		*why = "no reply (closed or timed out)";
		return -1;
	}
	len = tc_get_be32(pre);
	if (len > BFT_MAX_FRAME || io_all(fds[i], rbuf, len, false) != 0) {
		*why = "reply frame too long or cut short";
		return -1;
	}
	if (raw != NULL) {
		memcpy(raw, pre, 4);
		memcpy(raw + 4, rbuf, len);
		*rawlen = 4 + (size_t)len;
	}
	if (bft_chan_open(&chans[i], pre, rbuf, &len) != 0) {
		*why = "a reply failed authentication";
		return -1;
	}
	return bft_wire_decode(rbuf, len, n, &rep, why) == 0 ? 0 : -1;
}

/*
 * Sends req to server i and waits for the reply with the same id into
 * rep.  Returns rep.status, or -1 when the server is gone (it is then
 * marked down and skipped by later rounds).
 */
int
tc_xfer(unsigned i)
{
	struct bft_buf out = { 0 };
	const char *why = NULL;

	if (fds[i] < 0)
		return -1;
	tc_seal_req(i, &out);
	if (io_all(fds[i], out.data, out.len, true) != 0)
		why = "send failed";
	bft_buf_free(&out);
	while (why == NULL) {
		if (tc_recv_reply(i, NULL, NULL, &why) != 0)
			break;
		if (rep.id == req.id && rep.type == (req.type | BFT_ACK))
			return rep.status;
	}
	disconnect(i, why);
	return -1;
}

const char *
tc_status_name(int st)
{
	return st < 0 ? "no reply" : st == BFT_OK ? "ok" : bft_status_str(st);
}

/* A request of type for opt.block, to fill in before tc_xfer(). */
void
tc_new_req(unsigned type)
{
	memset(&req, 0, sizeof req);
	req.type = (uint8_t)type;
	req.block = opt.block;
}

/*
 * The channel handshake with server i under our identity.  Returns 0,
 * or -1 (server i then down) after printing why.
 */
static int
handshake(unsigned i)
{
	struct bft_chan_client hs;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;
	int r;

	bft_chan_client_hello(&hs, &key.chan, cfg.server_pk[i],
	    cfg.cluster_id, i, (enum bft_chan_mode)cfg.channel, ch);
	if (io_all(fds[i], ch, sizeof ch, true) != 0 ||
	    io_all(fds[i], sh, sizeof sh, false) != 0) {
		disconnect(i, "no server hello (closed or timed out)");
		return -1;
	}
	r = bft_chan_client_finish(&hs, sh, &chans[i], fin, &why);
	if (r != 0) {
		printf("server %u: channel refused (status %d): %s\n", i,
		    r, why);
		disconnect(i, "channel refused");
		return -1;
	}
	if (io_all(fds[i], fin, sizeof fin, true) != 0) {
		disconnect(i, "cannot send the client finish");
		return -1;
	}
	return 0;
}

/* Connects to the servers of mask, authenticates and says HELLO. */
void
tc_connect_servers(uint32_t mask)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int one = 1, st;

	if ((rbuf = malloc(BFT_MAX_FRAME)) == NULL)
		err(1, "malloc");
	for (unsigned i = 0; i < n; i++)
		fds[i] = -1;
	FOR_EACH(i, mask) {
		snprintf(port, sizeof port, "%u", cfg.servers[i].port);
		if (getaddrinfo(cfg.servers[i].host, port, &hints, &ai) != 0)
			errx(1, "cannot resolve %s", cfg.servers[i].host);
		fds[i] = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fds[i] < 0 || connect(fds[i], ai->ai_addr,
		    ai->ai_addrlen) != 0) {
			printf("server %u: cannot connect: %s\n", i,
			    strerror(errno));
			disconnect(i, "no connection");
		}
		freeaddrinfo(ai);
		if (fds[i] < 0)
			continue;
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		if (handshake(i) != 0)
			continue;
		tc_new_req(BFT_HELLO);
		req.block = 0;
		memcpy(req.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		req.hello_n = n;
		req.hello_t = t;
		req.block_size = cfg.block_size;
		req.nblocks = cfg.nblocks;
		req.server_index = i;
		if ((st = tc_xfer(i)) > 0) {
			printf("server %u: HELLO: %s\n", i, tc_status_name(st));
			disconnect(i, "HELLO refused");
		}
	}
}

/* Sends bytes as they are; a server that closed first is no error. */
void
tc_send_raw(unsigned i, const uint8_t *p, size_t len)
{
	if (io_all(fds[i], (uint8_t *)p, len, true) != 0)
		printf("(send of %zu bytes failed: %s)\n", len,
		    strerror(errno));
}

void
tc_print_ts(const char *what, const struct bft_ts *ts)
{
	printf("%s ts %" PRIu64 "/%016" PRIx64 "\n", what, ts->num, ts->wid);
}
