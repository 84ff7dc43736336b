/*
 * tests/lib/rtgtctl_json.h - bin/rtgtctl as the network tests drive it: run
 * it against a harness daemon's control socket, and read its `--json`
 * answers (json-c).
 *
 * rj_ctl() only reports; rj_int() and rj_status_pool() fail the running
 * Check test (ck_assert) when the answer is not what every caller needs.
 */
#ifndef RTGT_TESTS_RTGTCTL_JSON_H
#define RTGT_TESTS_RTGTCTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tests/lib/harness.h"

/* The rtgtctl binary: $RTGTCTL or bin/rtgtctl (relative to the repo root). */
const char *rj_rtgtctl_path(void);
/*
 * Runs rtgtctl -s D->dir/rtgtd.sock ARGS... (up to 12, NULL-terminated) with
 * stdout and stderr into @out (NUL-terminated, truncated). Returns the exit
 * code (128+signal when killed), -ETIMEDOUT after 30 s, or -errno.
 */
int rj_ctl(const struct harness_daemon *d, char *out, size_t outlen, ...)
	__attribute__((sentinel));
/* The string value of @key in @o, "" when missing. */
const char *rj_str(struct json_object *o, const char *key);
/* The integer value of @key in @o, which must be there. */
int64_t rj_int(struct json_object *o, const char *key);
/* `rtgtctl status --json` must succeed and list pool @pool: returns it; the
 * caller json_object_put()s *@root. */
/*
 * One request @cmd (no arguments) straight on the daemon's control socket,
 * the reply line (the JSON object with its "ok" member, as rtgtctl receives
 * it) into @out. No process is started: status polls stay cheap in the
 * sanitizer builds, where every rtgtctl start costs about a second. 0 or a
 * negative errno.
 */
int rj_query(const struct harness_daemon *d, const char *cmd, char *out, size_t outlen);

struct json_object *rj_status_pool(const struct harness_daemon *d, const char *pool,
				   struct json_object **root);
/* The entry of @pool's "members" whose path is @path or ends with "/@path",
 * NULL when none. */
struct json_object *rj_member(struct json_object *pool, const char *path);

/*
 * Polls `status --json` every 50 ms, for at most @wait_ms, until @done
 * says pool @pool is as wanted. @done also describes the pool into @last
 * (for the caller's failure message). Returns true when done, false on
 * timeout.
 */
bool rj_wait_pool(const struct harness_daemon *d, const char *pool, int wait_ms,
		  bool (*done)(struct json_object *pool, void *arg, char *last, size_t lastlen),
		  void *arg, char *last, size_t lastlen);

#endif
