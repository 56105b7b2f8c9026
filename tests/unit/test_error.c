/*
 * libbftblk's internal error convention (lib/error_int.h): -1 with the
 * errno and its reason recorded per thread.  Wrapping the reason one was
 * handed, the common case at every layer, must give "outer: inner", not
 * the undefined result of formatting a buffer into itself (glibc
 * printed "outer: outer: ").
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/error_int.h"

static void
test_wrap(void **state)
{
	(void)state;
	assert_int_equal(bftblk__fail(EBUSY, "volume 7 is in use by %s", "vm"),
	    -1);
	assert_int_equal(bftblk__fail(bftblk__take_errno(), "the admin lock: "
	    "%s", bftblk__errmsg()), -1);
	assert_string_equal(bftblk__errmsg(),
	    "the admin lock: volume 7 is in use by vm");
	assert_int_equal(bftblk__take_errno(), EBUSY);
	/* Taken: the next take says EIO, not a stale errno. */
	assert_int_equal(bftblk__take_errno(), EIO);
	bftblk__fail(ENOMEM, NULL);
	assert_string_equal(bftblk__errmsg(), strerror(ENOMEM));
}

static void *
other(void *arg)
{
	(void)arg;
	bftblk__fail(EPERM, "another thread's reason");
	return NULL;
}

/* Per thread: another thread's failure leaves this one's alone. */
static void
test_threads(void **state)
{
	pthread_t th;

	(void)state;
	bftblk__fail(ENOSPC, "mine");
	assert_int_equal(pthread_create(&th, NULL, other, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_string_equal(bftblk__errmsg(), "mine");
	assert_int_equal(bftblk__take_errno(), ENOSPC);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
