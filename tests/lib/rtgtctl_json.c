/*
 * tests/lib/rtgtctl_json.c - see rtgtctl_json.h.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct json_object *rj_status_pool(const struct harness_daemon *d, const char *pool,
				   struct json_object **root)
{
	/* static: 64 KiB is much for a forked test's stack */
	static char out[65536];
	struct json_object *pools;
	int rc = rj_ctl(d, out, sizeof(out), "status", "--json", (char *)NULL);

	ck_assert_msg(rc == 0, "rtgtctl status --json exited %d: %s", rc, out);
	*root = json_tokener_parse(out);
	ck_assert_msg(*root != NULL, "status --json is not JSON: %s", out);
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
