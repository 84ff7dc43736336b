/*
 * target/iscsi/iscsi.h - the iSCSI transport (RFC 7143) seen by the daemon.
 *
 * An iscsi_server owns the portals' listening sockets, every connection and
 * session, and hands SCSI commands to target/scsi. Connections are spread
 * over the workers' reactors; a connection stays on one reactor for life.
 */
#ifndef RTGT_ISCSI_H
#define RTGT_ISCSI_H

#include <stdbool.h>
#include <stdint.h>

struct conf;
struct ev_loop;
struct raid_ioctx;
struct scsi_target;
struct json_object;

struct iscsi_server;

struct iscsi_worker {
	struct ev_loop *loop;
	struct raid_ioctx *ioctx;   /* that loop's thread's raid I/O context */
};

/*
 * @c: validated configuration (borrowed; must outlive the server).
 * @targets: one scsi_target per c->targets[i], same order (borrowed).
 * @workers: n_workers reactors (copied); listeners live on workers[0].
 */
int iscsi_server_create(const struct conf *c, struct scsi_target **targets,
			const struct iscsi_worker *workers, unsigned n_workers,
			struct iscsi_server **out);

/* Bind every portal. Returns 0 or a negative errno after logging one line per
 * portal that could not be bound ("portal nic1 127.0.0.1:3260: Address
 * already in use"). Call before the reactors run. */
int iscsi_server_start(struct iscsi_server *s);

/*
 * Stop accepting, answer or fail every in-flight command, log out/close all
 * connections. @done(arg) is called (on workers[0]'s thread) once nothing is
 * left. Must be called on workers[0]'s thread.
 */
void iscsi_server_shutdown(struct iscsi_server *s, void (*done)(void *arg), void *arg);
void iscsi_server_destroy(struct iscsi_server *s);

/*
 * Appends to @targets (a JSON array) one object per configured target:
 * {"iqn":..., "sessions":N, "session_list":[{"initiator":..., "isid":...,
 *  "portal":..., "tsih":..., "params":{...}}], "stats":{counters...,
 *  "latency_count":N, "latency_p50_us":N, "latency_p99_us":N}}.
 * Thread-safe.
 */
int iscsi_server_status_json(struct iscsi_server *s, struct json_object *targets);

/*
 * The live view (target/iscsi/live.c): adds to @reply "portals" [{name,
 * listen}], "targets" [{iqn, portals:[names]}] and "sessions": per normal
 * session its target, initiator, isid, tsih, portal_name, portal, local and
 * peer address, params, cumulative read/write/other ops and bytes,
 * latency_count, latency_sum_us, latency_hist [[upper_us, count], ...] and
 * "tcp" (TCP_INFO: snd_mss, rcv_mss, advmss, pmtu, rtt_us, rttvar_us,
 * snd_cwnd, total_retrans, segs_out, segs_in; null once closed).
 * Thread-safe.
 */
int iscsi_server_live_json(struct iscsi_server *s, struct json_object *reply);
struct conf_hist;
/* A latency histogram as [[upper bound us, count], ...], empty buckets left out. */
struct json_object *iscsi_lat_hist_json(const struct conf_hist *h);

/* ---- live reload (added by the live-management work) ---- */

/*
 * Hands every configuration the server stops using to @release(c, arg)
 * once no connection refers to it any more (called on whichever thread
 * drops the last reference). The configuration current at destroy is not
 * released: its owner frees it. Without this call confs are never freed
 * by the server. Call before the reactors run.
 */
void iscsi_server_set_release(struct iscsi_server *s,
			      void (*release)(const struct conf *c, void *arg), void *arg);

/*
 * Live reload, on workers[0]'s thread while serving. @c (validated,
 * borrowed until released) becomes the configuration of new connections
 * and logins; @targets as for iscsi_server_create (one per c->targets[i];
 * a target that stays must keep its scsi_target). Portals: one whose
 * name, listen address and TPGT are unchanged keeps its socket; the others
 * are closed, new ones bound. Connections the new configuration no longer
 * serves (portal gone, target gone or no longer on that portal, initiator
 * no longer allowed, the CHAP credentials that apply to its initiator
 * changed: its own entry's, or the target's) are closed
 * on their own reactors; the others keep their session and the
 * configuration they logged in with. A login still in progress is judged
 * by @c when it completes (or closed now when @c refuses it).
 * Returns 0, or the first bind error after logging one line per portal
 * that could not be bound (also written to @err); the swap happened
 * either way. -ESHUTDOWN (nothing done) while shutting down.
 */
int iscsi_server_reload(struct iscsi_server *s, const struct conf *c,
			struct scsi_target **targets, char *err, size_t errlen);

/* ---- events (rtgtctl events, alert hooks) ----
 * A refused login, reported through one process-wide callback on the
 * connection's reactor (it must not block; the strings live during the
 * call only). @reason is one of the login code's fixed texts (never a
 * CHAP value); @initiator and @target may be "?" when the peer had not
 * sent them yet. */
struct iscsi_login_event {
	const char *initiator, *target, *portal, *peer, *reason;
	uint16_t status;       /* Status-Class << 8 | Status-Detail */
};
typedef void (*iscsi_login_event_fn)(void *arg, const struct iscsi_login_event *ev);
/* Before the reactors run; NULL: none. */
void iscsi_set_login_event_fn(iscsi_login_event_fn fn, void *arg);

/* A normal session that ended otherwise than by an accepted Logout
 * (@kind "session_lost": the connection dropped, a protocol error, a NOP-In
 * left unanswered, a reinstatement by a new login), or a Logout request the
 * target refused (@kind "logout_failed"). Not reported while the server
 * shuts down, nor for discovery sessions. Same rules as the login event:
 * the connection's reactor, must not block, strings live during the call;
 * @reason is one of the target's fixed texts. */
struct iscsi_session_event {
	const char *kind, *initiator, *target, *portal, *peer, *reason;
	uint16_t tsih;
};
typedef void (*iscsi_session_event_fn)(void *arg, const struct iscsi_session_event *ev);
/* Before the reactors run; NULL: none. */
void iscsi_set_session_event_fn(iscsi_session_event_fn fn, void *arg);

#endif
