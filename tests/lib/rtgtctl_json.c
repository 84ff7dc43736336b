/*
 * tests/lib/rtgtctl_json.c - see rtgtctl_json.h.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/rtgtctl_json.h"

#define RJ_MAX_ARGS 12
#define RJ_TIMEOUT_MS 30000

const char *rj_rtgtctl_path(void)
{
	const char *p = getenv("RTGTCTL");

	return p && *p ? p : "bin/rtgtctl";
}

int rj_ctl(const struct harness_daemon *d, char *out, size_t outlen, ...)
{
	char sock[256], *argv[RJ_MAX_ARGS + 4];
	unsigned n = 0;
	va_list ap;

	snprintf(sock, sizeof(sock), "%s/rtgtd.sock", d->dir);
	argv[n++] = (char *)rj_rtgtctl_path();
	argv[n++] = "-s";
	argv[n++] = sock;
	va_start(ap, outlen);
	while (n < RJ_MAX_ARGS + 3 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return harness_run_out(argv, out, outlen, RJ_TIMEOUT_MS);
}

const char *rj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

int64_t rj_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "status: no \"%s\" in %s", key,
		      json_object_to_json_string(o));
	return json_object_get_int64(v);
}

int rj_query(const struct harness_daemon *d, const char *cmd, char *out, size_t outlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[128];
	size_t len = 0;
	long long deadline = (long long)harness_now_ms() + RJ_TIMEOUT_MS;
	int fd, rc = 0, n = snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"args\":[]}\n", cmd);

	if (outlen == 0 || n < 0 || (size_t)n >= sizeof(req))
		return -EINVAL;
	out[0] = '\0';
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/rtgtd.sock", d->dir) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		rc = -errno;
		goto close_fd;
	}
	/* one reply line */
	while (!memchr(out, '\n', len)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - (long long)harness_now_ms();
		ssize_t r;

		if (len + 1 >= outlen) {
			rc = -EMSGSIZE;
			goto close_fd;
		}
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			rc = -ETIMEDOUT;
			goto close_fd;
		}
		r = recv(fd, out + len, outlen - 1 - len, 0);
		if (r <= 0) {
			rc = r < 0 ? -errno : -ECONNRESET;
			goto close_fd;
		}
		len += (size_t)r;
		out[len] = '\0';
	}
close_fd:
	close(fd);
	return rc;
}

struct json_object *rj_status_pool(const struct harness_daemon *d, const char *pool,
				   struct json_object **root)
{
	/* static: 64 KiB is much for a forked test's stack */
	static char out[65536];
	struct json_object *pools, *ok;
	int rc = rj_query(d, "status", out, sizeof(out));

	ck_assert_msg(rc == 0, "status request on the control socket: %s: %s", strerror(-rc), out);
	*root = json_tokener_parse(out);
	ck_assert_msg(*root != NULL, "status is not JSON: %s", out);
	ck_assert_msg(json_object_object_get_ex(*root, "ok", &ok) && json_object_get_boolean(ok),
		      "status answered an error: %s", out);
	ck_assert_msg(json_object_object_get_ex(*root, "pools", &pools) &&
		      json_object_is_type(pools, json_type_array), "status has no pools: %s", out);
	for (size_t i = 0; i < json_object_array_length(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);

		if (!strcmp(rj_str(p, "name"), pool))
			return p;
	}
	ck_abort_msg("status has no pool %s: %s", pool, out);
	return NULL;
}

struct json_object *rj_member(struct json_object *pool, const char *path)
{
	struct json_object *ms;
	size_t b = strlen(path);

	if (!json_object_object_get_ex(pool, "members", &ms))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);
		const char *mp = rj_str(m, "path");
		size_t a = strlen(mp);

		if (a >= b && !strcmp(mp + a - b, path) && (a == b || mp[a - b - 1] == '/'))
			return m;
	}
	return NULL;
}

bool rj_wait_pool(const struct harness_daemon *d, const char *pool, int wait_ms,
		  bool (*done)(struct json_object *pool, void *arg, char *last, size_t lastlen),
		  void *arg, char *last, size_t lastlen)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)wait_ms;

	for (;;) {
		struct json_object *root, *p = rj_status_pool(d, pool, &root);
		bool ok = done(p, arg, last, lastlen);

		json_object_put(root);
		if (ok)
			return true;
		if (harness_now_ms() > deadline)
			return false;
		usleep(50000);
	}
}
