/*
 * target/daemon/events.c - the event ring, its log lines and the hook
 * runner (see events.h).
 *
 * The ring holds the JSON text of the newest EVENTS_KEEP events: slot
 * seq % EVENTS_KEEP holds event seq, for seq in [first, last]. Posting
 * formats the event, takes mu, frees the slot's old text when the ring is
 * full (dropped++), stores the new one and signals the thread: no reader can
 * hold it up.
 *
 * The events thread delivers events to the hook in seq order, one at a
 * time (hook_next: the seq it runs next). Per event:
 *
 *   WAITING  -- an event with seq >= hook_next, a hook set ---> SPAWNING
 *            -- an event with no hook set: skipped, not run --> WAITING
 *   SPAWNING -- posix_spawn failed (hook_failures++) ---------> WAITING
 *            -- spawned (hook_runs++) ---------------------> RUNNING
 *   RUNNING  -- the JSON line written (or the pipe refused it), stdin
 *               closed; the child exits: status != 0 is
 *               hook_failures++ ----------------------------> WAITING
 *            -- the deadline passes or events_destroy() asks:
 *               SIGKILL to its process group, reaped
 *               (hook_timeouts++ on the deadline) ----------> WAITING
 *
 * The child is reaped by pid with waitpid() polled every few milliseconds
 * (the daemon starts no other children, and the thread has nothing else to
 * do meanwhile). Events pushed out of the ring before the hook got to them
 * are counted in hook_skipped and the hook goes on with the oldest kept.
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * worker.c (its thread's start and stop), conf/, raid/ and target/iscsi/
 * (event types), json-c, libc. Calls no other file of the folder but
 * worker.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/events.h"
#include "target/daemon/worker.h"
#include "target/iscsi/iscsi.h"

#define MOD "events"

extern char **environ;

struct events {
	struct worker w;              /* the hook thread; w.mu guards the rest */
	char *ring[EVENTS_KEEP];      /* owned JSON texts; slot seq % EVENTS_KEEP */
	uint64_t first, last;         /* kept seqs [first, last]; first > last: none */
	uint64_t hook_next;           /* the seq the hook gets next */
	char *exec;                   /* owned, NULL: no hook */
	unsigned timeout_ms;
	struct events_stats st;
	uint64_t login_window_ms;     /* start of the login_failed window */
	unsigned login_in_window;
	uint64_t login_suppressed;    /* left out since the last one posted */
};

static void iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)(ts.tv_nsec / 1000000) % 1000);
}

/* ---- the hook ---- */

/* Kills @pid's process group and reaps @pid. */
static void hook_kill(pid_t pid)
{
	int status;

	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* Runs @exec with @json on stdin; unlocked. Returns 0, -ETIMEDOUT (killed),
 * -ECANCELED (killed because we stop), -ECHILD (exited non-zero) or the
 * errno of a spawn that failed. */
static int hook_run(struct events *e, const char *exec, const char *kind, const char *json,
		    unsigned timeout_ms, int *status_out)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dflt;
	int pfd[2], rc, status = 0;
	char *argv[3] = { (char *)exec, (char *)kind, NULL };
	size_t len = strlen(json), off = 0;
	uint64_t deadline = conf_mono_ms() + timeout_ms;
	pid_t pid;

	*status_out = 0;
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);   /* ignored here; the hook gets it back */
	sigaddset(&dflt, SIGTERM);
	sigaddset(&dflt, SIGINT);
	sigaddset(&dflt, SIGHUP);
	posix_spawn_file_actions_adddup2(&fa, pfd[0], 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(&pid, exec, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pfd[0]);
	if (rc) {
		close(pfd[1]);
		return -rc;
	}
	/* the line, then EOF; a hook that does not read gets it in the pipe's
	 * buffer (an event is far below 64 KiB) or loses it at the deadline */
	fcntl(pfd[1], F_SETFL, O_NONBLOCK);
	while (off < len + 1) {
		const char *p = off < len ? json + off : "\n";
		size_t n = off < len ? len - off : 1;
		ssize_t w = write(pfd[1], p, n);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EAGAIN && conf_mono_ms() < deadline) {
			struct pollfd pf = { .fd = pfd[1], .events = POLLOUT };

			poll(&pf, 1, 10);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		break;   /* EPIPE: the hook closed its stdin; or the deadline */
	}
	close(pfd[1]);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		bool stop;

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			status = 0;
			break;
		}
		pthread_mutex_lock(&e->w.mu);
		stop = e->w.stop;
		pthread_mutex_unlock(&e->w.mu);
		if (stop || conf_mono_ms() >= deadline) {
			hook_kill(pid);
			return stop ? -ECANCELED : -ETIMEDOUT;
		}
		usleep(5000);
	}
	*status_out = status;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static void *events_main(void *arg)
{
	struct events *e = arg;

	pthread_mutex_lock(&e->w.mu);
	while (!e->w.stop) {
		char *json, *exec, kind[64] = "";
		unsigned timeout;
		struct json_object *o, *k;
		int rc, status;

		if (e->hook_next < e->first) {
			e->st.hook_skipped += e->first - e->hook_next;
			e->hook_next = e->first;
		}
		if (e->hook_next > e->last || e->first > e->last) {
			pthread_cond_wait(&e->w.cv, &e->w.mu);
			continue;
		}
		if (!e->exec) {
			e->hook_next = e->last + 1;   /* no hook: nothing to deliver */
			continue;
		}
		json = strdup(e->ring[e->hook_next % EVENTS_KEEP]);
		exec = strdup(e->exec);
		timeout = e->timeout_ms;
		e->hook_next++;
		if (!json || !exec) {
			free(json);
			free(exec);
			e->st.hook_failures++;
			continue;
		}
		e->st.hook_runs++;
		pthread_mutex_unlock(&e->w.mu);
		o = json_tokener_parse(json);
		if (o && json_object_object_get_ex(o, "kind", &k))
			snprintf(kind, sizeof(kind), "%s", json_object_get_string(k));
		json_object_put(o);
		rc = hook_run(e, exec, kind, json, timeout, &status);
		if (rc == -ETIMEDOUT)
			LOG_WARN(MOD, "event hook %s (%s): killed after %u ms", exec, kind, timeout);
		else if (rc == -ECHILD && WIFEXITED(status))
			LOG_WARN(MOD, "event hook %s (%s): exited with status %d", exec, kind,
				 WEXITSTATUS(status));
		else if (rc == -ECHILD)
			LOG_WARN(MOD, "event hook %s (%s): killed by signal %d", exec, kind,
				 WTERMSIG(status));
		else if (rc && rc != -ECANCELED)
			LOG_WARN(MOD, "event hook %s (%s): cannot run it: %s", exec, kind, strerror(-rc));
		free(json);
		free(exec);
		pthread_mutex_lock(&e->w.mu);
		if (rc == -ETIMEDOUT)
			e->st.hook_timeouts++;
		else if (rc && rc != -ECANCELED)
			e->st.hook_failures++;
	}
	pthread_mutex_unlock(&e->w.mu);
	return NULL;
}

/* ---- life ---- */

int events_create(const char *exec, unsigned timeout_ms, struct events **out)
{
	struct events *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	worker_init(&e->w);
	e->first = 1;
	e->last = 0;
	e->hook_next = 1;
	e->timeout_ms = timeout_ms;
	if (exec && !(e->exec = strdup(exec))) {
		events_destroy(e);
		return -ENOMEM;
	}
	rc = worker_start(&e->w, events_main, e);
	if (rc) {
		events_destroy(e);
		return rc;
	}
	*out = e;
	return 0;
}

void events_destroy(struct events *e)
{
	if (!e)
		return;
	worker_stop(&e->w);
	for (unsigned i = 0; i < EVENTS_KEEP; i++)
		free(e->ring[i]);
	free(e->exec);
	worker_fini(&e->w);
	free(e);
}

int events_set_exec(struct events *e, const char *exec, unsigned timeout_ms)
{
	char *x = NULL;

	if (exec && !(x = strdup(exec)))
		return -ENOMEM;
	pthread_mutex_lock(&e->w.mu);
	free(e->exec);
	e->exec = x;
	e->timeout_ms = timeout_ms;
	pthread_mutex_unlock(&e->w.mu);
	return 0;
}

/* ---- posting ---- */

static enum conf_log_level severity_level(const char *sev)
{
	if (!strcmp(sev, "error") || !strcmp(sev, "critical"))
		return CONF_LOG_ERROR;
	if (!strcmp(sev, "warning"))
		return CONF_LOG_WARN;
	return CONF_LOG_INFO;
}

/* @echo: also write the event's JSON line to the log; false where the
 * source logs the occurrence itself (a refused login has its own line in
 * login.c, with the reason: a second line would repeat it, and tests and
 * operators count those lines). */
static void post_v(struct events *e, bool echo, const char *kind, const char *severity,
		   struct json_object *fields, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
static void post_v(struct events *e, bool echo, const char *kind, const char *severity,
		   struct json_object *fields, const char *fmt, va_list ap)
{
	struct json_object *o = json_object_new_object(), *tmp;
	char msg[1024], ts[64];
	const char *text;
	char *copy = NULL;
	uint64_t seq;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!o) {
		json_object_put(fields);
		return;
	}
	iso_time(ts, sizeof(ts));
	pthread_mutex_lock(&e->w.mu);
	seq = e->last + 1;
	json_object_object_add(o, "seq", json_object_new_int64((int64_t)seq));
	json_object_object_add(o, "time", json_object_new_string(ts));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	json_object_object_add(o, "severity", json_object_new_string(severity));
	json_object_object_add(o, "message", json_object_new_string(msg));
	if (fields) {
		json_object_object_foreach(fields, key, val)
			if (!json_object_object_get_ex(o, key, &tmp))
				json_object_object_add(o, key, json_object_get(val));
	}
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text && strlen(text) < EVENTS_MAX_JSON)
		copy = strdup(text);
	if (copy) {
		if (e->last - e->first + 1 >= EVENTS_KEEP && e->first <= e->last) {
			free(e->ring[e->first % EVENTS_KEEP]);
			e->ring[e->first % EVENTS_KEEP] = NULL;
			e->first++;
			e->st.dropped++;
		}
		e->ring[seq % EVENTS_KEEP] = copy;
		e->last = seq;
		e->st.posted = seq;
		pthread_cond_signal(&e->w.cv);
	}
	pthread_mutex_unlock(&e->w.mu);
	if (copy && echo)
		conf_log(severity_level(severity), MOD, "%s", copy);
	else if (!copy)
		LOG_ERR(MOD, "event %s (%s) lost: no memory or too long", kind, msg);
	json_object_put(o);
	json_object_put(fields);
}

void events_post(struct events *e, const char *kind, const char *severity,
		 struct json_object *fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	post_v(e, true, kind, severity, fields, fmt, ap);
	va_end(ap);
}

/* events_post without the log line: for events whose source logged them. */
static void post_quiet(struct events *e, const char *kind, const char *severity,
		       struct json_object *fields, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void post_quiet(struct events *e, const char *kind, const char *severity,
		       struct json_object *fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	post_v(e, false, kind, severity, fields, fmt, ap);
	va_end(ap);
}

void events_raid_fn(void *arg, const struct raid_event *ev)
{
	struct events *e = arg;
	struct json_object *f = json_object_new_object();
	const char *kind = raid_event_kind_name(ev->kind), *sev = "info";
	char msg[768];

	if (!f)
		return;
	json_object_object_add(f, "pool", json_object_new_string(ev->pool));
	if (ev->member)
		json_object_object_add(f, "member", json_object_new_string(ev->member));
	if (ev->slot >= 0)
		json_object_object_add(f, "slot", json_object_new_int(ev->slot));
	if (ev->pool_state)
		json_object_object_add(f, "pool_state", json_object_new_string(ev->pool_state));
	if (ev->err)
		json_object_object_add(f, "error", json_object_new_string(strerror(-ev->err)));
	switch (ev->kind) {
	case RAID_EV_MEMBER_FAULTY:
		sev = "error";
		json_object_object_add(f, "reason", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: member %s faulty: %s%s%s", ev->pool,
			 ev->member ? ev->member : "?", ev->detail ? ev->detail : "",
			 ev->err ? ": " : "", ev->err ? strerror(-ev->err) : "");
		break;
	case RAID_EV_POOL_FAILED:
		sev = "critical";
		json_object_object_add(f, "reason", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s failed: %s", ev->pool, ev->detail ? ev->detail : "");
		break;
	case RAID_EV_POOL_DEGRADED:
		sev = "warning";
		json_object_object_add(f, "unusable", json_object_new_int64((int64_t)ev->count));
		snprintf(msg, sizeof(msg), "pool %s degraded: %llu member(s) unusable", ev->pool,
			 (unsigned long long)ev->count);
		break;
	case RAID_EV_REBUILD_STARTED:
		if (ev->detail)
			json_object_object_add(f, "replaces", json_object_new_string(ev->detail));
		snprintf(msg, sizeof(msg), "pool %s: rebuilding slot %d onto %s", ev->pool, ev->slot,
			 ev->member ? ev->member : "?");
		break;
	case RAID_EV_REBUILD_DONE:
		snprintf(msg, sizeof(msg), "pool %s: rebuild of slot %d onto %s done", ev->pool,
			 ev->slot, ev->member ? ev->member : "?");
		break;
	case RAID_EV_REBUILD_STOPPED:
		sev = "error";
		json_object_object_add(f, "reason", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: rebuild of slot %d stopped: %s", ev->pool,
			 ev->slot, ev->detail ? ev->detail : "");
		break;
	case RAID_EV_SCRUB_DONE:
		sev = ev->count ? "warning" : "info";
		json_object_object_add(f, "mismatches", json_object_new_int64((int64_t)ev->count));
		json_object_object_add(f, "repaired", json_object_new_boolean(ev->repaired));
		json_object_object_add(f, "complete", json_object_new_boolean(ev->complete));
		snprintf(msg, sizeof(msg), "pool %s: scrub %s: %llu mismatches%s", ev->pool,
			 ev->complete ? "done" : "stopped", (unsigned long long)ev->count,
			 ev->repaired && ev->count ? " (repaired)" : "");
		break;
	case RAID_EV_SPARE_ADDED:
		snprintf(msg, sizeof(msg), "pool %s: spare %s added", ev->pool,
			 ev->member ? ev->member : "?");
		break;
	case RAID_EV_REPLACE_STARTED:
		if (ev->detail)
			json_object_object_add(f, "replaces", json_object_new_string(ev->detail));
		snprintf(msg, sizeof(msg), "pool %s: replacing %s (slot %d) with %s, a copy while it still serves",
			 ev->pool, ev->detail ? ev->detail : "?", ev->slot, ev->member ? ev->member : "?");
		break;
	case RAID_EV_REPLACE_DONE:
		if (ev->detail)
			json_object_object_add(f, "replaced", json_object_new_string(ev->detail));
		snprintf(msg, sizeof(msg), "pool %s: %s replaced %s in slot %d", ev->pool,
			 ev->member ? ev->member : "?", ev->detail ? ev->detail : "?", ev->slot);
		break;
	case RAID_EV_REPLACE_STOPPED:
		sev = "error";
		json_object_object_add(f, "reason", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: replacement of slot %d by %s stopped: %s", ev->pool,
			 ev->slot, ev->member ? ev->member : "?", ev->detail ? ev->detail : "");
		break;
	case RAID_EV_THIN_THRESHOLD:
		sev = "warning";
		json_object_object_add(f, "thin_used_bytes", json_object_new_int64((int64_t)ev->count));
		json_object_object_add(f, "detail", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: thin volumes at the soft threshold: %s", ev->pool,
			 ev->detail ? ev->detail : "");
		break;
	case RAID_EV_THIN_FULL:
		sev = "error";
		json_object_object_add(f, "thin_used_bytes", json_object_new_int64((int64_t)ev->count));
		snprintf(msg, sizeof(msg), "pool %s: no space left for thin volumes (%llu MiB taken): writes that need new space fail",
			 ev->pool, (unsigned long long)(ev->count >> 20));
		break;
	case RAID_EV_RESHAPE_STARTED:
		json_object_object_add(f, "level", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: reshape to %s started: %s joins as slot %d", ev->pool,
			 ev->detail ? ev->detail : "?", ev->member ? ev->member : "?", ev->slot);
		break;
	case RAID_EV_RESHAPE_DONE:
		json_object_object_add(f, "level", json_object_new_string(ev->detail ? ev->detail : ""));
		json_object_object_add(f, "members", json_object_new_int64((int64_t)ev->count));
		snprintf(msg, sizeof(msg), "pool %s: reshape done: %s on %llu members", ev->pool,
			 ev->detail ? ev->detail : "?", (unsigned long long)ev->count);
		break;
	case RAID_EV_RESHAPE_FAILED:
		sev = "error";
		json_object_object_add(f, "reason", json_object_new_string(ev->detail ? ev->detail : ""));
		snprintf(msg, sizeof(msg), "pool %s: the reshape with %s did not start: %s; the pool is as it was",
			 ev->pool, ev->member ? ev->member : "?", ev->detail ? ev->detail : "");
		break;
	case RAID_EV_MEMBER_REMOVED:
		sev = "warning";
		snprintf(msg, sizeof(msg), "pool %s: member %s removed", ev->pool,
			 ev->member ? ev->member : "?");
		break;
	default:
		snprintf(msg, sizeof(msg), "pool %s: %s", ev->pool, kind);
	}
	events_post(e, kind, sev, f, "%s", msg);
}

/* Events a peer can cause at will (refused logins, sessions dropped)
 * share one budget of EVENTS_LOGIN_BURST per window. Returns false when
 * this one is left out; *suppressed: how many were left out before it. */
static bool peer_event_admit(struct events *e, uint64_t *suppressed)
{
	uint64_t now = conf_mono_ms();

	pthread_mutex_lock(&e->w.mu);
	if (now - e->login_window_ms >= EVENTS_LOGIN_WINDOW_S * 1000u) {
		e->login_window_ms = now;
		e->login_in_window = 0;
	}
	if (e->login_in_window >= EVENTS_LOGIN_BURST) {
		e->login_suppressed++;
		pthread_mutex_unlock(&e->w.mu);
		return false;
	}
	e->login_in_window++;
	*suppressed = e->login_suppressed;
	e->login_suppressed = 0;
	pthread_mutex_unlock(&e->w.mu);
	return true;
}

/* The fields every peer event has, or NULL when the budget leaves this
 * one out (or out of memory). */
static struct json_object *peer_fields(struct events *e, const char *initiator,
				       const char *target, const char *portal, const char *peer,
				       const char *reason)
{
	struct json_object *f;
	uint64_t suppressed;

	if (!peer_event_admit(e, &suppressed) || !(f = json_object_new_object()))
		return NULL;
	json_object_object_add(f, "initiator", json_object_new_string(initiator));
	json_object_object_add(f, "target", json_object_new_string(target));
	json_object_object_add(f, "portal", json_object_new_string(portal));
	json_object_object_add(f, "peer", json_object_new_string(peer));
	json_object_object_add(f, "reason", json_object_new_string(reason));
	if (suppressed)
		json_object_object_add(f, "suppressed", json_object_new_int64((int64_t)suppressed));
	return f;
}

void events_login_fn(void *arg, const struct iscsi_login_event *ev)
{
	struct events *e = arg;
	struct json_object *f = peer_fields(e, ev->initiator, ev->target, ev->portal, ev->peer,
					    ev->reason);

	if (!f)
		return;
	json_object_object_add(f, "status", json_object_new_int(ev->status));
	post_quiet(e, "login_failed", "warning", f, "login refused: initiator %s target %s from %s: %s",
		    ev->initiator, ev->target, ev->peer, ev->reason);
}

void events_session_fn(void *arg, const struct iscsi_session_event *ev)
{
	struct events *e = arg;
	struct json_object *f = peer_fields(e, ev->initiator, ev->target, ev->portal, ev->peer,
					    ev->reason);

	if (!f)
		return;
	json_object_object_add(f, "tsih", json_object_new_int(ev->tsih));
	/* the connection code logged the close already: ring and hook only */
	post_quiet(e, ev->kind, "warning", f, "%s: initiator %s target %s from %s: %s", ev->kind,
		    ev->initiator, ev->target, ev->peer, ev->reason);
}

/* ---- reading ---- */

int events_json(struct events *e, uint64_t since, unsigned max, struct json_object *reply)
{
	struct json_object *arr = json_object_new_array();
	uint64_t from, next;
	unsigned n = 0;

	if (!arr)
		return -ENOMEM;
	pthread_mutex_lock(&e->w.mu);
	/* since beyond the last event: the reader followed an earlier daemon */
	from = since > e->last ? e->first : since + 1 > e->first ? since + 1 : e->first;
	for (next = from; next <= e->last && n < max; next++, n++) {
		struct json_object *o = json_tokener_parse(e->ring[next % EVENTS_KEEP]);

		if (o)
			json_object_array_add(arr, o);
	}
	json_object_object_add(reply, "next", json_object_new_int64((int64_t)next));
	json_object_object_add(reply, "posted", json_object_new_int64((int64_t)e->st.posted));
	json_object_object_add(reply, "dropped", json_object_new_int64((int64_t)e->st.dropped));
	json_object_object_add(reply, "hook_runs", json_object_new_int64((int64_t)e->st.hook_runs));
	json_object_object_add(reply, "hook_failures",
			       json_object_new_int64((int64_t)e->st.hook_failures));
	json_object_object_add(reply, "hook_timeouts",
			       json_object_new_int64((int64_t)e->st.hook_timeouts));
	json_object_object_add(reply, "hook_skipped",
			       json_object_new_int64((int64_t)e->st.hook_skipped));
	pthread_mutex_unlock(&e->w.mu);
	json_object_object_add(reply, "events", arr);
	return 0;
}

void events_get_stats(struct events *e, struct events_stats *out)
{
	pthread_mutex_lock(&e->w.mu);
	*out = e->st;
	pthread_mutex_unlock(&e->w.mu);
}
