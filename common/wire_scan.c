/*
 * The raw pre-scan of a frame body (see wire_scan.h): bounds every count
 * and length before msgpack-c allocates anything for it.
 */
#include "wire.h"
#include "wire_scan.h"

/*
 * No message nests deeper than body -> candidates -> candidate -> ts, and
 * no array has more elements than a FILTER's candidate list or a HELLO.
 * Holding every body to both keeps what msgpack-c allocates for one body
 * under (16 + 16^2 + 16^3 + 16^4) objects of 32 bytes, whatever it says.
 */
#define WIRE_MAX_DEPTH	4
#define WIRE_MAX_ARRAY	BFT_MAX_N
_Static_assert(BFT_MAX_N >= 9, "HELLO has 9 elements");
/*
 * STATUS_ACK's fields are one flat array; more of them than this bound
 * needs the bound raised here (with its effect on the worst case above).
 */
_Static_assert(BFT_STATUS_NFIELDS_0 + 1 <= WIRE_MAX_ARRAY &&
    BFT_STATUS_NFIELDS - BFT_STATUS_NFIELDS_0 <= WIRE_MAX_ARRAY,
    "STATUS_ACK's field array fits the pre-scan's bound");

/* Reads a big-endian integer of w bytes at *pos, if that many are left. */
static int
scan_be(const uint8_t *b, size_t len, size_t *pos, unsigned w, uint64_t *v)
{
	unsigned i;

	if (len - *pos < w)
		return -1;
	*v = 0;
	for (i = 0; i < w; i++)
		*v = *v << 8 | b[(*pos)++];
	return 0;
}

/* Payload sizes of float 32/64, uint 8..64 and int 8..64 (0xca..0xd3). */
static const uint8_t fixed_len[10] = { 4, 8, 1, 2, 4, 8, 1, 2, 4, 8 };

/*
 * left[d] counts the objects still due at nesting level d; level 0 is the
 * body itself, which must be exactly one object.
 */
const char *
bft_wire_scan(const uint8_t *b, size_t len, size_t *nelem)
{
	uint64_t left[WIRE_MAX_DEPTH + 1], skip, count;
	unsigned depth = 0, c, w;
	size_t pos = 0, n = 0;

	left[0] = 1;
	for (;;) {
		while (depth > 0 && left[depth] == 0)
			depth--;
		if (left[depth] == 0)
			break;
		if (pos == len)
			return "truncated body";
		left[depth]--;
		c = b[pos++];
		skip = count = 0;
		/*
		 * In order: fixmap, fixarray, fixstr, bin 8/16/32, ext 8/16/32
		 * (which add a type byte), numbers, fixext, str 8/16/32, array
		 * and map 16/32.  Fixints, nil and booleans are one byte.
		 */
		if (c >= 0x80 && c <= 0x8f) {
			count = 2 * (c & 0x0f);
		} else if (c >= 0x90 && c <= 0x9f) {
			count = c & 0x0f;
		} else if (c >= 0xa0 && c <= 0xbf) {
			skip = c & 0x1f;
		} else if (c == 0xc1) {
			return "invalid msgpack byte";
		} else if (c >= 0xc4 && c <= 0xc9) {
			w = 1u << ((c - 0xc4) % 3);
			if (scan_be(b, len, &pos, w, &skip))
				return "truncated body";
			skip += c >= 0xc7;
		} else if (c >= 0xca && c <= 0xd3) {
			skip = fixed_len[c - 0xca];
		} else if (c >= 0xd4 && c <= 0xd8) {
			skip = 1 + (1u << (c - 0xd4));
		} else if (c >= 0xd9 && c <= 0xdb) {
			if (scan_be(b, len, &pos, 1u << (c - 0xd9), &skip))
				return "truncated body";
		} else if (c >= 0xdc && c <= 0xdf) {
			if (scan_be(b, len, &pos, (c & 1) ? 4 : 2, &count))
				return "truncated body";
			count *= c >= 0xde ? 2 : 1;
		}
		if (skip > len - pos)
			return "truncated body";
		pos += skip;
		if (count > WIRE_MAX_ARRAY)
			return "array or map longer than any message needs";
		if (count == 0)
			continue;
		if (depth == WIRE_MAX_DEPTH)
			return "nesting deeper than any message needs";
		n += count;
		left[++depth] = count;
	}
	if (pos != len)
		return "trailing bytes after message";
	*nelem = n;
	return NULL;
}
