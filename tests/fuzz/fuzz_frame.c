/*
 * Fuzzes what the server's read loop (server/net.c, process()) does with
 * the bytes of a connection: split frames with bft_wire_frame and decode
 * each body with bft_wire_decode, stopping where the server would close
 * the connection.  Every decoded message must survive a round trip
 * through the encoder unchanged.
 *
 * Input: [sel] [stream...]; sel picks n (fuzz_n), the stream is what a
 * client would send: length-prefixed frames, one after the other.
 */
#include <errno.h>
#include <string.h>

#include "util.h"

static struct bft_msg m;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct bft_msg zero;
	const uint8_t *p;
	size_t left;
	const char *why;
	uint32_t blen, want;
	uint8_t *body;
	int r, rc;

	if (size < 1)
		return 0;
	p = data + 1;
	left = size - 1;
	for (;;) {
		blen = 0;
		r = bft_wire_frame(p, left, &blen);
		/* The splitter's contract, checked against the prefix. */
		want = left < 4 ? 0 : (uint32_t)p[0] << 24 |
		    (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
		if (left < 4)
			FUZZ_CHECK(r == 1, "%zu bytes split as %d", left, r);
		else if (want > BFT_MAX_FRAME)
			FUZZ_CHECK(r == -EMSGSIZE, "prefix %u split as %d", want,
			    r);
		else
			FUZZ_CHECK(r == (left - 4 < want ? 1 : 0) &&
			    (r != 0 || blen == want), "prefix %u with %zu "
			    "bytes split as %d (%u)", want, left, r, blen);
		if (r != 0)
			break;
		/* A copy of exactly the body: reading past it is a finding. */
		body = fuzz_dup(p + 4, blen);
		why = NULL;
		rc = bft_wire_decode(body, blen, fuzz_n(data[0]), &m, &why);
		if (rc < 0) {
			FUZZ_CHECK(why != NULL && memcmp(&m, &zero,
			    sizeof m) == 0, "refused without a reason or "
			    "with fields left set");
			free(body);
			break;		/* net.c closes the connection */
		}
		FUZZ_CHECK(rc == 0, "decode returned %d", rc);
		fuzz_roundtrip(&m, fuzz_n(data[0]), true);
		free(body);
		p += 4 + (size_t)blen;
		left -= 4 + (size_t)blen;
	}
	return 0;
}
