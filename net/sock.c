/*
 * net/sock.c - TCP socket helpers for portals and connections.
 *
 * Layer: net, reactor and sockets (net/README.md "Layers"). May call:
 * libc and socket system calls only; not ev.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net_int.h"

int sock_parse_addr(const char *hp, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *colon, *h = hp, *hend;
	char *end;
	unsigned long port;

	if (!hp || !*hp)
		return -EINVAL;
	if (*hp == '[') {
		hend = strchr(hp, ']');
		if (!hend || hend[1] != ':')
			return -EINVAL;
		h = hp + 1;
		colon = hend + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return -EINVAL;
		hend = colon;
	}
	if ((size_t)(hend - h) >= sizeof(host) || hend == h)
		return -EINVAL;
	memcpy(host, h, (size_t)(hend - h));
	host[hend - h] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (*hp != '[') {
		struct sockaddr_in *in4 = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			return -EINVAL;
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	}
	return 0;
}

int sock_listen(const struct sockaddr_storage *ss, socklen_t len, int backlog)
{
	int fd, one = 1, rc;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (ss->ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		goto fail;
	if (listen(fd, backlog) < 0)
		goto fail;
	return fd;
fail:
	rc = -errno;
	close(fd);
	return rc;
}

int sock_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len)
{
	int fd, one = 1;

	*len = sizeof(*peer);
	fd = accept4(lfd, (struct sockaddr *)peer, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* iSCSI answers are small PDUs that must not wait for Nagle */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

void sock_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len, bool with_port)
{
	char host[INET6_ADDRSTRLEN];
	uint16_t port;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		if (with_port)
			snprintf(buf, len, "[%s]:%u", host, port);
		else
			snprintf(buf, len, "[%s]", host);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
		port = ntohs(in4->sin_port);
		if (with_port)
			snprintf(buf, len, "%s:%u", host, port);
		else
			snprintf(buf, len, "%s", host);
	} else {
		snprintf(buf, len, "?");
	}
}

int sock_local_addr(int fd, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	if (getsockname(fd, (struct sockaddr *)ss, len) < 0)
		return -errno;
	return 0;
}
