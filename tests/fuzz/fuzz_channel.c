/*
 * Fuzzes what a peer can send before and around the frame decoder: the
 * client hello a server parses and answers (server/handshake.c), the
 * server hello a client checks (lib/conn.c), and sealed frames
 * opened on an established channel.  The first byte picks the target:
 *
 *   sel % 3 == 0:  the rest is a client hello for a server that knows
 *                  one client key; parse, then accept when it parses
 *   sel % 3 == 1:  the rest is a server hello answering a real client
 *                  hello; a tag that verifies would be a forgery
 *   sel % 3 == 2:  the rest is a stream of frames (4-byte prefix and
 *                  body) opened in turn on a channel in AEAD mode, or
 *                  plain mode when sel & 0x80; anything that opens in
 *                  AEAD mode would be a forgery
 *
 * Keys are fixed so every input replays the same way.
 */
#include <string.h>

#include "channel.h"
#include "util.h"

static struct bft_chan_keypair server_id, client_id;
static const uint8_t cluster[BFT_CLUSTER_ID_LEN] = { 0xb, 0xf, 0x7 };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	FUZZ_CHECK(sodium_init() >= 0, "sodium_init");
	memset(server_id.sk, 0x11, sizeof server_id.sk);
	memset(client_id.sk, 0x22, sizeof client_id.sk);
	FUZZ_CHECK(bft_chan_keypair_from_sk(&server_id) == 0 &&
	    bft_chan_keypair_from_sk(&client_id) == 0, "keys");
	return 0;
}

static void
client_hello(const uint8_t *p, size_t len)
{
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	struct bft_chan_hello h;
	struct bft_chan chan;

	if (len < sizeof ch)
		return;
	memcpy(ch, p, sizeof ch);
	if (bft_chan_parse_hello(ch, &h) != 0)
		return;
	FUZZ_CHECK(h.mode == BFT_CHAN_AEAD || h.mode == BFT_CHAN_PLAIN,
	    "parsed mode %u", h.mode);
	if (bft_chan_server_accept(&server_id, ch, &h, bft_chan_ciphers(),
	    &chan, sh) == 0) {
		FUZZ_CHECK(memcmp(sh, "BFTS", 4) == 0, "server hello magic");
		/* The finish that follows is fuzz input too. */
		if (len >= sizeof ch + BFT_CHAN_FINISH_LEN)
			FUZZ_CHECK(bft_chan_server_verify(&chan, p + sizeof ch)
			    != 0, "a forged client finish verified");
		bft_chan_clear(&chan);
	}
}

static void
server_hello(const uint8_t *p, size_t len)
{
	struct bft_chan_client hs;
	struct bft_chan chan;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why = NULL;
	int r;

	if (len < sizeof sh)
		return;
	memcpy(sh, p, sizeof sh);
	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 0,
	    BFT_CHAN_AEAD, ch);
	r = bft_chan_client_finish(&hs, sh, &chan, fin, &why);
	/* Without the server's secret no tag can verify. */
	FUZZ_CHECK(r != 0, "a forged server hello was accepted");
	FUZZ_CHECK(why != NULL, "refused without a reason");
}

/* Both ends of a channel, keys from a real handshake. */
static void
pair(enum bft_chan_mode mode, struct bft_chan *cli, struct bft_chan *srv)
{
	struct bft_chan_client hs;
	struct bft_chan_hello h;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;

	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 0, mode,
	    ch);
	FUZZ_CHECK(bft_chan_parse_hello(ch, &h) == 0, "own hello");
	FUZZ_CHECK(bft_chan_server_accept(&server_id, ch, &h,
	    bft_chan_ciphers(), srv, sh) == 0, "accept");
	FUZZ_CHECK(bft_chan_client_finish(&hs, sh, cli, fin, &why) == 0,
	    "finish: %s", why);
}

static void
frames(const uint8_t *p, size_t len, enum bft_chan_mode mode)
{
	struct bft_chan cli, srv;
	uint8_t *copy;
	uint32_t blen;
	int r;

	pair(mode, &cli, &srv);
	while (len >= 4) {
		r = bft_wire_frame(p, len, &blen);
		if (r != 0)
			break;
		/* An exact-size copy, so ASan sees any read past the end. */
		copy = fuzz_dup(p, 4 + (size_t)blen);
		r = bft_chan_open(&srv, copy, copy + 4, &blen);
		FUZZ_CHECK(mode == BFT_CHAN_PLAIN || r != 0,
		    "a frame nobody sealed opened");
		free(copy);
		if (r != 0)
			break;
		p += 4 + (size_t)blen;
		len -= 4 + (size_t)blen;
	}
	bft_chan_clear(&cli);
	bft_chan_clear(&srv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		client_hello(data + 1, size - 1);
		break;
	case 1:
		server_hello(data + 1, size - 1);
		break;
	default:
		frames(data + 1, size - 1, data[0] & 0x80 ? BFT_CHAN_PLAIN :
		    BFT_CHAN_AEAD);
		break;
	}
	return 0;
}
