/*
 * Fuzzes every message decoder in common/wire_decode.c.  The first
 * input byte picks n and one of the 28 message types (14 requests, 14
 * replies), and the body is made to claim that type, so each type's
 * field decoder gets inputs of its own rather than waiting for the
 * fuzzer to guess a type byte.  Decoded messages must survive an
 * encoder round trip.
 *
 * Input: [sel] [array header byte] [rest of the body after the type];
 * the type element (fixint for requests, uint8 for replies, as the
 * encoder writes it) goes between the header and the rest.
 *   sel % 32:      type index ti (taken modulo 28):
 *                    0..7   HELLO..FLUSH       8..15  their ACKs
 *                    16..18 SUMMARY..STATUS    19..21 their ACKs
 *                    22     SCRUB              23     its ACK
 *                    24     VOLUMES            25     its ACK
 *                    26     DROP               27     its ACK
 *                    28     SNAP               29     its ACK
 *                    30     VCOLLECT           31     VFILTER
 *                  (each type keeps its index as types are added, so
 *                  older seeds below 28 keep their types; VREPAIR is
 *                  REPAIR's decoder and a boundary, which VFILTER's
 *                  already exercises)
 *   sel / 32 % 5:  t - 1, i.e. n = 4, 7, 10, 13 or 16
 */
#include <string.h>

#include "util.h"

static struct bft_msg m, m2;
/* The kept zone of bft_wire_decode_with(), which must decode alike. */
static struct bft_wire_scratch scratch;

/* The type of selector index ti (see above). */
static uint8_t
sel_type(unsigned ti)
{
	if (ti < 8)
		return (uint8_t)(ti + 1);
	if (ti < 16)
		return (uint8_t)((ti - 7) | BFT_ACK);
	if (ti < 19)
		return (uint8_t)(ti - 16 + BFT_SUMMARY);
	if (ti < 22)
		return (uint8_t)((ti - 19 + BFT_SUMMARY) | BFT_ACK);
	if (ti < 24)
		return ti == 22 ? BFT_SCRUB : BFT_SCRUB | BFT_ACK;
	if (ti < 26)
		return ti == 24 ? BFT_VOLUMES : BFT_VOLUMES | BFT_ACK;
	if (ti < 28)
		return ti == 26 ? BFT_DROP : BFT_DROP | BFT_ACK;
	if (ti < 30)
		return ti == 28 ? BFT_SNAP : BFT_SNAP | BFT_ACK;
	return ti == 30 ? BFT_VCOLLECT : BFT_VFILTER;
}

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
	unsigned ti, n;
	uint8_t type, *body;
	const char *why = NULL, *why2 = NULL;
	size_t len, hl;
	int rc;

	if (size < 2)
		return 0;
	ti = data[0] % 32u % BFT_MSG_NTYPES;
	type = sel_type(ti);
	n = fuzz_n((uint8_t)(data[0] / 32u));
	hl = type & BFT_ACK ? 2 : 1;
	len = 1 + hl + (size - 2);
	body = malloc(len);
	FUZZ_CHECK(body != NULL, "out of memory");
	body[0] = data[1];
	if (hl == 2) {
		body[1] = 0xcc;		/* msgpack uint 8 */
		body[2] = type;
	} else {
		body[1] = type;		/* positive fixint */
	}
	memcpy(body + 1 + hl, data + 2, size - 2);
	rc = bft_wire_decode(body, len, n, &m, &why);
	FUZZ_CHECK(bft_wire_decode_with(&scratch, body, len, n, &m2, &why2) ==
	    rc && why2 == why && memcmp(&m, &m2, sizeof m) == 0,
	    "a kept zone decodes otherwise");
	if (rc == 0) {
		FUZZ_CHECK(m.type == type, "decoded type 0x%x, body says 0x%x",
		    m.type, type);
		fuzz_roundtrip(&m, n, true);
	} else {
		FUZZ_CHECK(why != NULL, "refused without a reason");
	}
	free(body);
	return 0;
}
