/*
 * target/tools/ctlclient.c - talking to rtgtd's control socket: connect,
 * send a request, read one reply line (protocol: target/daemon/ctl.h).
 *
 * Layer: client library (target/tools/README.md "Layers"), under the three
 * rtgtctl front ends. May call: conf/ (conf_mono_ms), libc. Calls no
 * front end.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/util.h"
#include "target/tools/rtgtctl.h"

#define REPLY_TIMEOUT_MS 60000
#define REPLY_MAX (16u << 20)

int rtgtctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int rtgtctl_send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to the first newline. Returns a malloc'd NUL-terminated line,
 * or NULL with errno set (ETIMEDOUT, ECONNRESET for EOF first, ...). */
char *rtgtctl_recv_line(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	uint64_t start;

	if (!buf)
		return NULL;
	start = conf_mono_ms();
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long waited;
		ssize_t n;
		char *nl;

		waited = (long)(conf_mono_ms() - start);
		if (waited >= REPLY_TIMEOUT_MS) {
			errno = ETIMEDOUT;
			goto fail;
		}
		n = poll(&pfd, 1, (int)(REPLY_TIMEOUT_MS - waited));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			continue; /* the deadline check above ends it */
		if (len + 1 >= cap) {
			char *nb;

			if (cap >= REPLY_MAX) {
				errno = EMSGSIZE;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0) {
			errno = ECONNRESET;
			goto fail;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			return buf;
		}
	}
fail:
	{
		int e = errno;

		free(buf);
		errno = e;
	}
	return NULL;
}
