/*
 * target/daemon/notify.c - sd_notify(3) without libsystemd.
 *
 * The protocol: systemd passes the path of a unix datagram socket in
 * $NOTIFY_SOCKET; a path starting with '@' is in the abstract namespace
 * (the '@' stands for a leading NUL byte). The service sends newline-separated
 * VAR=value assignments, one datagram per update. We only ever send, so a
 * fresh SOCK_CLOEXEC | SOCK_NONBLOCK socket per message is enough: readiness
 * and stopping are announced once each.
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * conf/, libc. Calls no other file of the folder.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/conf.h"
#include "target/daemon/notify.h"

#define MOD "notify"

/* Fills @sa from $NOTIFY_SOCKET's value; returns the address length to
 * pass to sendto() or a negative errno. */
static int notify_addr(const char *path, struct sockaddr_un *sa)
{
	size_t len = strlen(path);

	/* Only absolute paths and abstract names: systemd never passes a
	 * relative one, and resolving it against our cwd could reach an
	 * unrelated socket. */
	if (len < 2 || (path[0] != '/' && path[0] != '@') || len >= sizeof(sa->sun_path))
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len);
	if (path[0] == '@')
		sa->sun_path[0] = '\0';
	return (int)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
}

int iscsi_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t len;
	ssize_t n;
	int fd, alen, ret;

	if (!path || !*path)
		return 0;
	if (!state || !*state)
		return -EINVAL;
	alen = notify_addr(path, &sa);
	if (alen < 0)
		return alen;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	len = strlen(state);
	n = sendto(fd, state, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, (socklen_t)alen);
	if (n < 0)
		ret = -errno;
	else
		ret = (size_t)n == len ? 1 : -EMSGSIZE;
	close(fd);
	return ret;
}

static void notify_logged(const char *state)
{
	int rc = iscsi_notify(state);

	if (rc < 0)
		LOG_WARN(MOD, "cannot notify the service manager (%s): %s", state, strerror(-rc));
}

void iscsi_notify_ready(void)
{
	notify_logged("READY=1\nSTATUS=serving");
}

void iscsi_notify_stopping(void)
{
	notify_logged("STOPPING=1\nSTATUS=draining");
}
