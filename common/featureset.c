/* Protocol levels and feature bits (featureset.h). */
#include <errno.h>
#include <stdio.h>

#include "featureset.h"

/* The level that brought each feature, by enum bft_feature. */
static const unsigned feature_levels[BFT_FEAT_COUNT] = {
	[BFT_FEAT_CLONE_ENTRIES] = 1,
	[BFT_FEAT_LOCK_CLAIMS] = 1,
	[BFT_FEAT_SERVER_KEY_ROTATION] = 1,
	[BFT_FEAT_MAC_EPOCHS] = 1,
	[BFT_FEAT_SEGMENT_REUSE] = 1,
};

int
bft_feature_level(unsigned f)
{
	if (f >= BFT_FEAT_COUNT)
		return -EINVAL;
	return (int)feature_levels[f];
}

bool
bft_feature_usable(unsigned f, unsigned finalized)
{
	int l = bft_feature_level(f);

	return l >= 0 && finalized >= (unsigned)l;
}

bool
bft_level_compatible(unsigned ours, unsigned theirs, unsigned finalized)
{
	if (theirs < finalized)
		return false;
	return theirs <= ours ? ours - theirs <= 1 : theirs - ours <= 1;
}

uint64_t
bft_release_code(unsigned major, unsigned minor, unsigned patch)
{
	return (uint64_t)major << 16 | (uint64_t)(minor & 0xff) << 8 |
	    (patch & 0xff);
}

char *
bft_release_str(uint64_t code, char *out, size_t len)
{
	if (code == 0)
		code = bft_release_code(0, 2, 0);
	snprintf(out, len, "%u.%u.%u", (unsigned)(code >> 16),
	    (unsigned)(code >> 8 & 0xff), (unsigned)(code & 0xff));
	return out;
}
