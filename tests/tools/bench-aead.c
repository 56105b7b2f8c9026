/*
 * Measures libsodium's AEADs on one 64 KiB block, the unit the plugin
 * seals with encrypt=on, so the choice in common/volcrypt.h rests on
 * numbers from this machine: XChaCha20-Poly1305, ChaCha20-Poly1305
 * (IETF) and AES-256-GCM (only where crypto_aead_aes256gcm_is_available(),
 * i.e. AES-NI and PCLMUL), the latter also with its precomputed key
 * schedule (the _afternm calls), which is how a long-lived volume key
 * would use it.  Seal and open are timed separately; each figure is the
 * median of RUNS runs of OPS operations.  It asserts nothing but that
 * every open succeeds: it is a measurement.
 *
 *   build/tests/bench-aead [runs] [ops]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#define BLOCK 65536
#define TAG 16
#define MAX_RUNS 101

struct aead {
	const char *name;
	size_t npub;
	int (*seal)(unsigned char *c, unsigned long long *clen,
	    const unsigned char *m, unsigned long long mlen,
	    const unsigned char *ad, unsigned long long adlen,
	    const unsigned char *nsec, const unsigned char *npub,
	    const unsigned char *k);
	int (*open)(unsigned char *m, unsigned long long *mlen,
	    unsigned char *nsec, const unsigned char *c,
	    unsigned long long clen, const unsigned char *ad,
	    unsigned long long adlen, const unsigned char *npub,
	    const unsigned char *k);
};

static crypto_aead_aes256gcm_state gcm_state;

/* The precomputed-state variants, adapted to the common signature. */
static int
gcm_seal_nm(unsigned char *c, unsigned long long *clen,
    const unsigned char *m, unsigned long long mlen, const unsigned char *ad,
    unsigned long long adlen, const unsigned char *nsec,
    const unsigned char *npub, const unsigned char *k)
{
	(void)k;
	return crypto_aead_aes256gcm_encrypt_afternm(c, clen, m, mlen, ad,
	    adlen, nsec, npub, &gcm_state);
}

static int
gcm_open_nm(unsigned char *m, unsigned long long *mlen, unsigned char *nsec,
    const unsigned char *c, unsigned long long clen,
    const unsigned char *ad, unsigned long long adlen,
    const unsigned char *npub, const unsigned char *k)
{
	(void)k;
	return crypto_aead_aes256gcm_decrypt_afternm(m, mlen, nsec, c, clen,
	    ad, adlen, npub, &gcm_state);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* MB/s of seal and open, each the median of runs. */
static int
measure(const struct aead *a, int runs, int ops, double *seal_mbs,
    double *open_mbs)
{
	static unsigned char m[BLOCK], c[BLOCK + TAG], k[32], ad[24];
	unsigned char npub[32] = { 0 };
	double s[MAX_RUNS], o[MAX_RUNS];
	unsigned long long len;

	randombytes_buf(m, sizeof m);
	randombytes_buf(k, sizeof k);
	randombytes_buf(ad, sizeof ad);
	crypto_aead_aes256gcm_beforenm(&gcm_state, k);
	for (int r = 0; r < runs; r++) {
		double t0 = now();

		for (int i = 0; i < ops; i++) {
			npub[0] = (unsigned char)i;	/* as if per block */
			a->seal(c, &len, m, BLOCK, ad, sizeof ad, NULL, npub,
			    k);
		}
		s[r] = (double)ops * BLOCK / (now() - t0) / 1e6;
		t0 = now();
		for (int i = 0; i < ops; i++)
			if (a->open(m, &len, NULL, c, sizeof c, ad, sizeof ad,
			    npub, k) != 0) {
				fprintf(stderr, "%s: open failed\n", a->name);
				return -1;
			}
		o[r] = (double)ops * BLOCK / (now() - t0) / 1e6;
	}
	*seal_mbs = median(s, runs);
	*open_mbs = median(o, runs);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct aead all[] = {
		{ "xchacha20poly1305_ietf",
		    crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
		    crypto_aead_xchacha20poly1305_ietf_encrypt,
		    crypto_aead_xchacha20poly1305_ietf_decrypt },
		{ "chacha20poly1305_ietf",
		    crypto_aead_chacha20poly1305_ietf_NPUBBYTES,
		    crypto_aead_chacha20poly1305_ietf_encrypt,
		    crypto_aead_chacha20poly1305_ietf_decrypt },
		{ "aes256gcm",
		    crypto_aead_aes256gcm_NPUBBYTES,
		    crypto_aead_aes256gcm_encrypt,
		    crypto_aead_aes256gcm_decrypt },
		{ "aes256gcm (precomputed)",
		    crypto_aead_aes256gcm_NPUBBYTES, gcm_seal_nm, gcm_open_nm },
	};
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	int ops = argc > 2 ? atoi(argv[2]) : 2000;
	int aes = 0;

	if (sodium_init() < 0 || runs < 1 || runs > MAX_RUNS || ops < 1)
		return 1;
	aes = crypto_aead_aes256gcm_is_available();
	printf("libsodium %s; AES-256-GCM %savailable (AES-NI + PCLMUL)\n",
	    sodium_version_string(), aes ? "" : "NOT ");
	printf("64 KiB per op, median of %d runs x %d ops\n", runs, ops);
	printf("%-26s %10s %10s %12s\n", "aead", "seal MB/s", "open MB/s",
	    "us/block");
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		double s, o;

		if (all[i].seal == crypto_aead_aes256gcm_encrypt ||
		    all[i].seal == gcm_seal_nm) {
			if (!aes) {
				printf("%-26s %10s\n", all[i].name, "n/a");
				continue;
			}
		}
		if (measure(&all[i], runs, ops, &s, &o) != 0)
			return 1;
		printf("%-26s %10.0f %10.0f %12.1f\n", all[i].name, s, o,
		    BLOCK / s);
	}
	return 0;
}
