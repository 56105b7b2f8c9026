/*
 * `bftblk volume-key`: the key of an encrypted volume (the plugin's
 * encrypt=on).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"
#include "volcrypt.h"

/*
 * The AEAD is fixed for the volume's life, so it is chosen here: the
 * faster one this CPU runs, unless the volume must also open on CPUs
 * without AES-NI (--aead xchacha20poly1305).
 */
int
admin_volume_key(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "aead", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bft_volume_key vk = { .aead = bft_aead_default() };
	const char *out = NULL;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "o:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'a':
			if (bft_aead_parse(optarg, &vk.aead) != 0) {
				bft_log("--aead must be aes256gcm or "
				    "xchacha20poly1305");
				return 2;
			}
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (out == NULL || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	if (!bft_aead_available(vk.aead))
		bft_warn("this CPU cannot run %s; the volume will "
		    "only open on CPUs with AES-NI", bft_aead_name(vk.aead));
	bft_random(vk.key, sizeof vk.key);
	if ((r = bft_volume_key_write(out, &vk)) != 0) {
		bft_log("%s: %s%s", out, strerror(-r), r == -EEXIST ?
		    " (refusing to replace a volume key: its data would be "
		    "lost)" : "");
		goto out_wipe;
	}
	printf("volume key in %s: %s\n", out, bft_aead_name(vk.aead));
	rc = 0;
out_wipe:
	bft_wipe(vk.key, sizeof vk.key);
	return rc;
}
