/*
 * A complete libbftblk program: write one block, read it back.
 *
 *   cc -Ilib docs/example.c -Lbuild -lbftblk -Wl,-rpath,$PWD/build \
 *       -o example
 *   ./example cluster/bftblk.conf cluster/client.key
 */
#include <stdio.h>
#include <string.h>

#include "bftblk.h"

int
main(int argc, char **argv)
{
	static char out[BFTBLK_BLOCK_SIZE], in[BFTBLK_BLOCK_SIZE];
	struct bftblk *h;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: %s CONFIG KEYS\n", argv[0]);
		return 2;
	}
	/* Options are the plugin's parameters; the cache is not needed. */
	if ((r = bftblk_open(argv[1], argv[2], "cache=0 timeout=5", &h)) < 0) {
		fprintf(stderr, "open: %s\n", bftblk_errmsg(NULL));
		return 1;
	}
	snprintf(out, sizeof out, "hello from libbftblk");
	/* FUA: acknowledged once n-t servers have it on disk. */
	if ((r = bftblk_pwrite(h, out, sizeof out, 0, BFTBLK_FUA)) < 0 ||
	    (r = bftblk_pread(h, in, sizeof in, 0)) < 0) {
		fprintf(stderr, "I/O: %s\n", bftblk_errmsg(h));
		bftblk_close(h);
		return 1;
	}
	printf("%s\n", memcmp(in, out, sizeof in) == 0 ? in : "MISMATCH");
	bftblk_close(h);
	return memcmp(in, out, sizeof in) == 0 ? 0 : 1;
}
