/*
 * Measures the candidate fragment hashes side by side on this machine:
 * bft_hash (BLAKE3-256) against libsodium's BLAKE2b-256 (H before store
 * format 2), OpenSSL's EVP SHA-256 (SHA-NI where the CPU has it) and
 * libsodium's SHA-256; and the erasure-code backends.
 * Prints MB/s; it asserts nothing, it is a measurement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "crypto.h"
#include "ec.h"

#define ROUNDS 4000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(void)
{
	static uint8_t buf[32848], out[64], block[BFT_BLOCK_SIZE];
	uint8_t *frags[BFT_MAX_N], *fbuf;
	const char *names[] = { "isa_l_rs_cauchy", "isa_l_rs_vand",
	    "liberasurecode_rs_vand" };
	char err[256];
	double t0;

	EVP_MD *sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);

	if (bft_crypto_init() != 0 || sha256 == NULL)
		return 1;
	randombytes_buf(buf, sizeof buf);
	t0 = now();
	for (int i = 0; i < ROUNDS; i++) {
		unsigned int len = 32;

		EVP_Digest(buf, sizeof buf, out, &len, sha256, NULL);
	}
	printf("sha256 (OpenSSL EVP)     %7.0f MB/s\n",
	    ROUNDS * sizeof buf / (now() - t0) / 1e6);
	t0 = now();
	for (int i = 0; i < ROUNDS; i++)
		bft_hash(buf, sizeof buf, out);
	printf("blake3-256 (bft_hash)    %7.0f MB/s\n",
	    ROUNDS * sizeof buf / (now() - t0) / 1e6);
	t0 = now();
	for (int i = 0; i < ROUNDS; i++)
		crypto_generichash(out, 32, buf, sizeof buf, NULL, 0);
	printf("blake2b-256 (libsodium)  %7.0f MB/s\n",
	    ROUNDS * sizeof buf / (now() - t0) / 1e6);
	t0 = now();
	for (int i = 0; i < ROUNDS; i++)
		crypto_hash_sha256(out, buf, sizeof buf);
	printf("sha256 (libsodium)       %7.0f MB/s\n",
	    ROUNDS * sizeof buf / (now() - t0) / 1e6);

	fbuf = malloc((size_t)BFT_MAX_N * BFT_MAX_FRAG);
	if (fbuf == NULL)
		return 1;
	for (int i = 0; i < BFT_MAX_N; i++)
		frags[i] = fbuf + (size_t)i * BFT_MAX_FRAG;
	randombytes_buf(block, sizeof block);
	for (unsigned t = 1; t <= 2; t++)
		for (size_t b = 0; b < sizeof names / sizeof names[0]; b++) {
			struct bft_ec *ec;
			uint32_t parity = ((1u << (3 * t + 1)) - 1) &
			    ~((1u << (t + 1)) - 1);

			if (bft_ec_new(t, names[b], &ec, err,
			    sizeof err) != 0) {
				printf("%s: %s\n", names[b], err);
				continue;
			}
			t0 = now();
			for (int i = 0; i < ROUNDS / 4; i++)
				bft_ec_encode(ec, block, frags);
			printf("t=%u %-24s encode %6.1f us/block", t,
			    names[b], (now() - t0) / (ROUNDS / 4) * 1e6);
			t0 = now();
			for (int i = 0; i < ROUNDS / 4; i++)
				bft_ec_decode(ec, (const uint8_t *const *)frags,
				    parity, block);
			printf("  decode from parity %6.1f us/block\n",
			    (now() - t0) / (ROUNDS / 4) * 1e6);
			bft_ec_free(ec);
		}
	free(fbuf);
	return 0;
}
