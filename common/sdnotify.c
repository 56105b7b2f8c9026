/*
 * sd_notify(3) in a few lines: the protocol is one datagram per state
 * change to a unix socket, so a dependency on libsystemd buys nothing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sdnotify.h"

int
bft_sd_notify(const char *state)
{
	const char *where = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t len;
	socklen_t salen;
	ssize_t sent;
	int fd, e;

	if (where == NULL || where[0] == '\0')
		return 0;
	/* A path, or "@name" for the abstract namespace; vsock is not ours. */
	if (where[0] != '/' && where[0] != '@')
		return 0;
	len = strlen(where);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (len > sizeof sa.sun_path ||
	    (where[0] == '/' && len == sizeof sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, where, len);
	if (where[0] == '@')
		sa.sun_path[0] = '\0';
	/* An abstract name is exactly its bytes: no terminating NUL. */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
	    (where[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&sa, salen);
	e = errno;
	close(fd);
	return sent < 0 ? -e : 1;
}

int
bft_sd_notifyf(const char *fmt, ...)
{
	char state[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(state, sizeof state, fmt, ap);
	va_end(ap);
	return bft_sd_notify(state);
}
