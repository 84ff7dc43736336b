/*
 * target/tools/rtgtctl_events.c - "rtgtctl events [--follow] [--json]":
 * the daemon's kept events (target/daemon/events.h), oldest first, one a
 * line: "TIME SEVERITY KIND MESSAGE", or with --json each event's object.
 *
 * Layer: events view (target/tools/README.md "Layers"), called by
 * rtgtctl.c. May call: ctlclient.c, json-c, libc.
 *
 * --follow keeps the connection and asks {"cmd":"events","args":[NEXT]}
 * every EVENTS_POLL_MS, printing what is new, until interrupted or the
 * daemon goes away (exit 3). Events the daemon's ring pushed out between
 * two polls (more than it keeps) are reported as a gap on stderr.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target/tools/rtgtctl.h"

#define EVENTS_POLL_MS 250

static const char *jstr(struct json_object *o, const char *k, const char *dflt)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : dflt;
}

static long long jll(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? (long long)json_object_get_int64(v) : 0;
}

/* One request on @fd; the reply object or NULL (message printed). */
static struct json_object *ask(int fd, const char *sock, long long since)
{
	char req[96], *line;
	struct json_object *reply, *ok;

	snprintf(req, sizeof(req), "{\"cmd\":\"events\",\"args\":[\"%lld\"]}\n", since);
	if (rtgtctl_send_all(fd, req, strlen(req))) {
		fprintf(stderr, "rtgtctl: cannot send to %s: %s\n", sock, strerror(errno));
		return NULL;
	}
	line = rtgtctl_recv_line(fd);
	if (!line) {
		fprintf(stderr, "rtgtctl: no reply from %s: %s\n", sock,
			errno == ECONNRESET ? "connection closed" : strerror(errno));
		return NULL;
	}
	reply = json_tokener_parse(line);
	free(line);
	if (!reply || !json_object_object_get_ex(reply, "ok", &ok)) {
		fprintf(stderr, "rtgtctl: unreadable reply from %s\n", sock);
		json_object_put(reply);
		return NULL;
	}
	if (!json_object_get_boolean(ok)) {
		fprintf(stderr, "rtgtctl: %s\n", jstr(reply, "error", "the daemon reported an error"));
		json_object_put(reply);
		errno = EPROTO;
		return NULL;
	}
	return reply;
}

int rtgtctl_events(const char *sock, bool follow, bool json)
{
	long long next = 0;
	int fd = rtgtctl_connect(sock);

	if (fd < 0) {
		fprintf(stderr, "rtgtctl: cannot connect to %s: %s\n", sock, strerror(errno));
		return EXIT_UNREACHABLE;
	}
	for (;;) {
		struct json_object *reply = ask(fd, sock, next), *arr;
		size_t n;

		if (!reply) {
			close(fd);
			return errno == EPROTO ? EXIT_DAEMON_ERR : EXIT_UNREACHABLE;
		}
		if (!json_object_object_get_ex(reply, "events", &arr))
			arr = NULL;
		n = arr ? json_object_array_length(arr) : 0;
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(arr, i);

			if (next && i == 0 && jll(e, "seq") > next + 1)
				fprintf(stderr, "rtgtctl: %lld event(s) missed (the daemon keeps the newest only)\n",
					jll(e, "seq") - next - 1);
			if (json)
				printf("%s\n", json_object_to_json_string_ext(
					       e, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
			else
				printf("%s %-8s %-16s %s\n", jstr(e, "time", "?"), jstr(e, "severity", "?"),
				       jstr(e, "kind", "?"), jstr(e, "message", ""));
		}
		if (jll(reply, "next") > 0)
			next = jll(reply, "next") - 1;
		json_object_put(reply);
		if (fflush(stdout)) {
			close(fd);
			return EXIT_DAEMON_ERR;
		}
		if (!follow)
			break;
		usleep(EVENTS_POLL_MS * 1000);
	}
	close(fd);
	return 0;
}
