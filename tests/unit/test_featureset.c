/*
 * Protocol levels and feature bits (common/featureset.c): a feature is
 * usable only at or above the level that brought it, peers talk within
 * one level of each other and never below the finalized level, and a
 * release that does not report itself reads as 0.2.0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "featureset.h"

static void
test_feature_levels(void **state)
{
	(void)state;
	assert_int_equal(bft_feature_level(BFT_FEAT_CLONE_ENTRIES), 1);
	assert_int_equal(bft_feature_level(BFT_FEAT_LOCK_CLAIMS), 1);
	assert_int_equal(bft_feature_level(BFT_FEAT_SERVER_KEY_ROTATION), 1);
	assert_int_equal(bft_feature_level(BFT_FEAT_MAC_EPOCHS), 1);
	assert_int_equal(bft_feature_level(BFT_FEAT_COUNT), -EINVAL);
	/* Every feature is one this build's level has. */
	for (unsigned f = 0; f < BFT_FEAT_COUNT; f++) {
		assert_true(bft_feature_level(f) >= 1);
		assert_true((unsigned)bft_feature_level(f) <= BFT_LEVEL);
	}
}

static void
test_feature_usable(void **state)
{
	(void)state;
	/* Not before finalize, whatever the servers run. */
	assert_false(bft_feature_usable(BFT_FEAT_CLONE_ENTRIES,
	    BFT_LEVEL_0_2_0));
	assert_true(bft_feature_usable(BFT_FEAT_CLONE_ENTRIES, 1));
	assert_true(bft_feature_usable(BFT_FEAT_CLONE_ENTRIES, 2));
	assert_false(bft_feature_usable(BFT_FEAT_COUNT, BFT_LEVEL_MAX));
	assert_false(bft_feature_usable(~0u, BFT_LEVEL_MAX));
}

static void
test_level_window(void **state)
{
	(void)state;
	/* 0.3.0 with 0.2.0, both ways, until finalized. */
	assert_true(bft_level_compatible(1, 0, 0));
	assert_true(bft_level_compatible(0, 1, 0));
	assert_true(bft_level_compatible(1, 1, 0));
	assert_false(bft_level_compatible(1, 0, 1));
	assert_true(bft_level_compatible(1, 1, 1));
	/* N with N+1 too: the window is one level either way. */
	assert_true(bft_level_compatible(1, 2, 1));
	assert_false(bft_level_compatible(1, 3, 0));
	assert_false(bft_level_compatible(3, 1, 0));
	assert_false(bft_level_compatible(BFT_LEVEL_MAX, 0, 0));
}

static void
test_release_str(void **state)
{
	char s[16];

	(void)state;
	assert_string_equal(bft_release_str(bft_release_code(0, 3, 0), s,
	    sizeof s), "0.3.0");
	assert_string_equal(bft_release_str(0, s, sizeof s), "0.2.0");
	assert_string_equal(bft_release_str(bft_release_code(1, 12, 255), s,
	    sizeof s), "1.12.255");
	assert_true(bft_release_code(0, 3, 0) > bft_release_code(0, 2, 9));
	assert_true(bft_release_code(1, 0, 0) > bft_release_code(0, 255, 255));
	/* Truncated, still a string. */
	assert_string_equal(bft_release_str(bft_release_code(0, 3, 0), s, 3),
	    "0.");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feature_levels),
		cmocka_unit_test(test_feature_usable),
		cmocka_unit_test(test_level_window),
		cmocka_unit_test(test_release_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
