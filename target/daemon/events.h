/*
 * target/daemon/events.h - rtgtd's event stream: what an operator must hear
 * about (a member faulty, removed, slow or failing its health check, a
 * rebuild started or done, scrub mismatches, a pool degraded or failed, a
 * login refused), to the log, to `rtgtctl events [--follow]` and to the
 * configured hook (daemon.event_exec).
 *
 * Every event is one JSON object:
 *   {"seq":N, "time":"2026-12-02T06:35:24.124Z", "kind":"member_faulty",
 *    "severity":"info|warning|error|critical", "message":"...", ...fields}
 * seq counts from 1 over the daemon's life. The newest EVENTS_KEEP events
 * are kept in a ring; a newer event pushes out the oldest (counted in
 * "dropped"), so posting never waits for a reader.
 *
 * The hook runs on the events thread, never on a reactor: one child at a
 * time (posix_spawn of daemon.event_exec with the event's kind as its only
 * argument, the event as one JSON line on its stdin, its own process group,
 * the daemon's stdout/stderr), killed with its group (SIGKILL) when it
 * outlives daemon.event_exec_timeout, and reaped there. Events the hook has
 * not seen when the ring pushed them out are counted in "hook_skipped".
 */
#ifndef RTGT_DAEMON_EVENTS_H
#define RTGT_DAEMON_EVENTS_H

#include <stdint.h>

struct events;
struct json_object;
struct raid_event;

#define EVENTS_KEEP 1024u        /* events kept for rtgtctl events and the hook */
#define EVENTS_MAX_JSON 8192u    /* bytes of one event's JSON, longer fields cut */

struct events_stats {
	uint64_t posted;         /* events ever posted (= the last seq) */
	uint64_t dropped;        /* pushed out of the ring */
	uint64_t hook_runs;      /* hook processes started */
	uint64_t hook_failures;  /* could not start, or exited non-zero / by a signal */
	uint64_t hook_timeouts;  /* killed after the timeout */
	uint64_t hook_skipped;   /* pushed out before the hook saw them */
};

/* @exec: the hook's path or NULL; @timeout_ms: its time limit. Starts the
 * events thread. Returns 0 or a negative errno. */
int events_create(const char *exec, unsigned timeout_ms, struct events **out);
/* Stops the thread (a running hook is killed at once), frees. NULL: no-op. */
void events_destroy(struct events *e);
/* A reload's new hook and timeout, from the next event the hook sees on. */
int events_set_exec(struct events *e, const char *exec, unsigned timeout_ms);

/* Any thread, never blocks beyond a short mutex (no I/O but the log line).
 * @fields: an object with the event's own fields (pool, member, ...), taken
 * over (NULL: none); @fmt: the human message. */
void events_post(struct events *e, const char *kind, const char *severity,
		 struct json_object *fields, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* raid_set_event_fn's callback: @arg is the struct events. */
void events_raid_fn(void *arg, const struct raid_event *ev);
/* iscsi_set_login_event_fn's: "login_failed" events, at most
 * EVENTS_LOGIN_BURST per EVENTS_LOGIN_WINDOW_S (a peer hammering logins
 * cannot flood the ring or the hook); the next one after a pause says how
 * many were left out ("suppressed"). */
#define EVENTS_LOGIN_BURST 20u
#define EVENTS_LOGIN_WINDOW_S 10u
struct iscsi_login_event;
void events_login_fn(void *arg, const struct iscsi_login_event *ev);
/* iscsi_set_session_event_fn's: "session_lost" and "logout_failed" events,
 * within the same budget as "login_failed". */
struct iscsi_session_event;
void events_session_fn(void *arg, const struct iscsi_session_event *ev);

/* Adds "events" (the kept events with seq > @since, oldest first, at most
 * @max), "next" (the seq to ask for next time) and the counters. */
int events_json(struct events *e, uint64_t since, unsigned max, struct json_object *reply);
void events_get_stats(struct events *e, struct events_stats *out);

#endif
