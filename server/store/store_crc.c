/*
 * CRC32C (Castagnoli), the checksum of the store's records and index
 * checkpoint (store_log.h): a table-driven version for any CPU and one
 * with SSE4.2's crc32 instruction, picked at the first call.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define HAVE_SSE42_CRC 1
#endif

#include "store_log.h"

#define CRC32C_POLY	0x82f63b78u	/* reflected Castagnoli polynomial */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_tab_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
			    crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

/* Slicing-by-8: eight table lookups per eight bytes. */
uint32_t
bft_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_tab_init);
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
		    (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
		    (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#ifdef HAVE_SSE42_CRC
bool
bft_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

/*
 * The crc32 instruction takes 3 cycles but can start one per cycle, so
 * one dependent chain runs at a third of the CPU's speed: it was 13% of
 * a server's CPU (docs/performance.md).  Three chains over adjacent
 * thirds run in parallel and are joined by shifting a CRC over the
 * bytes that follow it, a linear map done with four table lookups (the
 * method of Mark Adler's crc32c.c).  SHIFT_LONG and SHIFT_SHORT bytes:
 * long strides for records, short ones for what is left.
 */
#define SHIFT_LONG	8192
#define SHIFT_SHORT	256

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* mat (32 columns) times vec over GF(2). */
static uint32_t
gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;

	for (; vec != 0; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

static void
gf2_square(uint32_t *sq, const uint32_t *mat)
{
	for (int n = 0; n < 32; n++)
		sq[n] = gf2_times(mat, mat[n]);
}

/* Tables for the map that appends len zero bytes (a power of 2) to a CRC. */
static void
shift_tables(uint32_t tab[4][256], size_t len)
{
	uint32_t odd[32], even[32], *op = even;

	odd[0] = CRC32C_POLY;		/* one zero bit */
	for (int n = 1; n < 32; n++)
		odd[n] = 1u << (n - 1);
	gf2_square(even, odd);		/* two */
	gf2_square(odd, even);		/* four */
	for (;;) {
		gf2_square(even, odd);	/* a byte, then 4, 16...: even */
		op = even;
		if ((len >>= 1) == 0)
			break;
		gf2_square(odd, even);	/* 2, 8, 32... bytes */
		op = odd;
		if ((len >>= 1) == 0)
			break;
	}
	for (uint32_t b = 0; b < 256; b++)
		for (int i = 0; i < 4; i++)
			tab[i][b] = gf2_times(op, b << (8 * i));
}

static void
shift_init(void)
{
	shift_tables(shift_long, SHIFT_LONG);
	shift_tables(shift_short, SHIFT_SHORT);
}

static uint32_t
shift(uint32_t tab[4][256], uint32_t crc)
{
	return tab[0][crc & 0xff] ^ tab[1][(crc >> 8) & 0xff] ^
	    tab[2][(crc >> 16) & 0xff] ^ tab[3][crc >> 24];
}

#ifdef __x86_64__
/* Three chains over stride bytes each at p; returns the joined CRC. */
__attribute__((target("sse4.2"))) static uint64_t
three_way(uint64_t c0, const uint8_t *p, size_t stride,
    uint32_t tab[4][256])
{
	uint64_t c1 = 0, c2 = 0, v0, v1, v2;

	for (const uint8_t *end = p + stride; p < end; p += 8) {
		memcpy(&v0, p, 8);
		memcpy(&v1, p + stride, 8);
		memcpy(&v2, p + 2 * stride, 8);
		c0 = _mm_crc32_u64(c0, v0);
		c1 = _mm_crc32_u64(c1, v1);
		c2 = _mm_crc32_u64(c2, v2);
	}
	c0 = shift(tab, (uint32_t)c0) ^ c1;
	return shift(tab, (uint32_t)c0) ^ c2;
}
#endif

/*
 * Only this function is compiled for SSE4.2, so the binary still runs
 * on CPUs without it as long as the dispatch below is honoured.
 */
__attribute__((target("sse4.2"))) uint32_t
bft_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
#ifdef __x86_64__
	uint64_t c = crc;

	pthread_once(&shift_once, shift_init);
	for (; len >= 3 * SHIFT_LONG; len -= 3 * SHIFT_LONG,
	    p += 3 * SHIFT_LONG)
		c = three_way(c, p, SHIFT_LONG, shift_long);
	for (; len >= 3 * SHIFT_SHORT; len -= 3 * SHIFT_SHORT,
	    p += 3 * SHIFT_SHORT)
		c = three_way(c, p, SHIFT_SHORT, shift_short);
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
#endif
	while (len-- > 0)
		crc = _mm_crc32_u8(crc, *p++);
	return ~crc;
}
#else
bool
bft_crc32c_hw_available(void)
{
	return false;
}

uint32_t
bft_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return bft_crc32c_sw(crc, buf, len);
}
#endif

static bool crc_hw;
static pthread_once_t crc_hw_once = PTHREAD_ONCE_INIT;

static void
crc_hw_init(void)
{
	crc_hw = bft_crc32c_hw_available();
}

uint32_t
bft_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_hw_once, crc_hw_init);
	return crc_hw ? bft_crc32c_hw(crc, buf, len) :
	    bft_crc32c_sw(crc, buf, len);
}
