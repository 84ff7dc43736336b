/*
 * target/daemon/metrics.h - the Prometheus text endpoint (daemon.metrics).
 *
 * Its own thread serves "GET /metrics" over HTTP/1.0 (1.1 requests are
 * answered as 1.0), one connection at a time, closed after the reply:
 * anything else is 404, a request line or header block over
 * METRICS_REQ_MAX bytes or not ended within METRICS_IO_MS is 400 / closed.
 * The counters come from @snapshot, called on that thread per scrape (the
 * daemon's takes the "live" snapshot on the control reactor and waits for
 * it); the text is made here, off the reactors.
 */
#ifndef RTGT_DAEMON_METRICS_H
#define RTGT_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct json_object;
struct metrics;

#define METRICS_REQ_MAX 4096u
#define METRICS_IO_MS 2000u

/* Fills @snap (an empty object) with the live snapshot (target/daemon/live.h)
 * plus per member "health" and "slow", and "events" (events_json's
 * counters). Returns 0 or a negative errno (the scrape gets 503). */
typedef int (*metrics_snapshot_fn)(void *arg, struct json_object *snap);

/* Listens on @listen ("ip:port" or "[ipv6]:port"). Returns 0 or a
 * negative errno (-EADDRINUSE, -EINVAL for a bad address, ...). */
int metrics_start(const char *listen, metrics_snapshot_fn snapshot, void *arg,
		  struct metrics **out);
void metrics_stop(struct metrics *m);
uint16_t metrics_port(const struct metrics *m);

/* The exposition text of @snap (malloc'd, NUL-terminated, *@len bytes). */
int metrics_format(struct json_object *snap, char **text, size_t *len);

#endif
