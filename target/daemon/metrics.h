/*
 * target/daemon/metrics.h - the Prometheus text endpoint (daemon.metrics).
 *
 * Served by libmicrohttpd, one thread per connection, each connection
 * closed after its answer (HTTP/1.0): GET or HEAD of "/metrics" (the text
 * exposition) and "/healthz" (200 while the reactors answer, else 503);
 * any other method or path 404, a malformed request 400, request line and
 * headers over the limit 431 (414). Connections beyond the limits
 * (struct metrics_limits) are closed at once, silent ones after the idle
 * timeout; each such refusal is counted (rtgt_metrics_refused_total).
 * The counters come from ops->snapshot, called on the connection's thread
 * per scrape (the daemon's takes the "live" snapshot on the control
 * reactor and waits for it); the text is made here, off the reactors.
 */
#ifndef RTGT_DAEMON_METRICS_H
#define RTGT_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct json_object;
struct metrics;

/* conf_daemon's metrics_* keys (conf/README.md). */
struct metrics_limits {
	unsigned max_connections;   /* open at once, >= 1 */
	unsigned max_per_address;   /* open at once from one address, >= 1 */
	unsigned max_request;       /* bytes of request line + headers, >= 1024 */
	unsigned idle_timeout_s;    /* >= 1 */
};

/* Fills @snap (an empty object) with the live snapshot (target/daemon/live.h)
 * plus per member "health" and "slow", and "events" (events_json's
 * counters). Returns 0 or a negative errno (the scrape gets 503). */
typedef int (*metrics_snapshot_fn)(void *arg, struct json_object *snap);

/* 0 when every reactor answered in time; else a negative errno and the
 * reason (NUL-terminated, at most @len bytes) in @why: /healthz's 503. */
typedef int (*metrics_health_fn)(void *arg, char *why, size_t len);

struct metrics_ops {
	metrics_snapshot_fn snapshot;   /* never NULL */
	metrics_health_fn health;       /* never NULL */
	void *arg;                      /* both's */
};

enum metrics_refused {
	METRICS_REFUSED_CONNECTIONS,    /* max_connections open */
	METRICS_REFUSED_PER_ADDRESS,    /* max_per_address open from its address */
	METRICS_REFUSED_TOO_LARGE,      /* request line + headers too large */
	METRICS_REFUSED_TIMEOUT,        /* closed silent and unanswered */
	METRICS_REFUSED_N
};

/* Listens on @listen ("ip:port" or "[ipv6]:port"). Returns 0 or a
 * negative errno (-EADDRINUSE, -EINVAL for a bad address or limit, ...). */
int metrics_start(const char *listen, const struct metrics_limits *lim,
		  const struct metrics_ops *ops, struct metrics **out);
/* Waits for every connection's thread (a snapshot in progress included). */
void metrics_stop(struct metrics *m);
uint16_t metrics_port(const struct metrics *m);
/* Refusals so far for @why. */
uint64_t metrics_refused(struct metrics *m, enum metrics_refused why);

/* The exposition text of @snap (malloc'd, NUL-terminated, *@len bytes);
 * the refusal counters from its optional "metrics_refused" object. */
int metrics_format(struct json_object *snap, char **text, size_t *len);

enum metrics_route {
	METRICS_ROUTE_METRICS,          /* GET|HEAD /metrics */
	METRICS_ROUTE_HEALTHZ,          /* GET|HEAD /healthz */
	METRICS_ROUTE_NOT_FOUND,        /* anything else (404) */
};

/* What a request of @method on @url (the path, without its query) gets. */
enum metrics_route metrics_route(const char *method, const char *url);

#endif
