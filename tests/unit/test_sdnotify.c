/*
 * common/sdnotify.c against a datagram socket of the test's own, bound
 * where NOTIFY_SOCKET says: a path, and a name in the abstract
 * namespace ("@..."); nothing sent without NOTIFY_SOCKET.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "sdnotify.h"

/* Binds a datagram socket at where (a path or "@name"). */
static int
bind_notify(const char *where)
{
	struct sockaddr_un sa;
	size_t len = strlen(where);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(len < sizeof sa.sun_path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, where, len);
	if (where[0] == '@')
		sa.sun_path[0] = '\0';
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)), 0);
	return fd;
}

static void
expect(int fd, const char *want)
{
	char buf[512];
	ssize_t got = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);

	assert_true(got >= 0);
	buf[got] = '\0';
	assert_string_equal(buf, want);
}

static void
test_path(void **state)
{
	char dir[] = "/tmp/bftblk-sdnotify.XXXXXX", path[64];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/notify", dir);
	fd = bind_notify(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(bft_sd_notify("READY=1"), 1);
	expect(fd, "READY=1");
	assert_int_equal(bft_sd_notifyf("RELOADING=1\nMONOTONIC_USEC=%d",
	    42), 1);
	expect(fd, "RELOADING=1\nMONOTONIC_USEC=42");
	assert_int_equal(bft_sd_notify("STOPPING=1"), 1);
	expect(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	rmdir(dir);
	/* Nobody listening any more: an error, not a crash. */
	assert_int_equal(bft_sd_notify("READY=1"), -ENOENT);
	unsetenv("NOTIFY_SOCKET");
}

static void
test_abstract(void **state)
{
	char name[64];
	int fd;

	(void)state;
	snprintf(name, sizeof name, "@bftblk-test-sdnotify-%ld",
	    (long)getpid());
	fd = bind_notify(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(bft_sd_notify("READY=1\nSTATUS=listening"), 1);
	expect(fd, "READY=1\nSTATUS=listening");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void
test_no_manager(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(bft_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(bft_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(bft_sd_notify("READY=1"), 0);
	unsetenv("NOTIFY_SOCKET");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_abstract),
		cmocka_unit_test(test_no_manager),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
