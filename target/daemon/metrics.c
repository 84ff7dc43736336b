/*
 * target/daemon/metrics.c - the Prometheus text endpoint (see metrics.h).
 *
 * The server thread, per connection (one at a time):
 *
 *   ACCEPTED -- bytes up to the blank line ending the headers ----> ANSWER
 *            -- METRICS_REQ_MAX bytes without one, or no blank
 *               line within METRICS_IO_MS ------------------------> 400, CLOSED
 *            -- EOF or error before it ---------------------------> CLOSED
 *   ANSWER   -- "GET /metrics HTTP/1.x" (a query string is ignored):
 *               snapshot, format, 200 (503 when the snapshot failed)
 *            -- any other method or path: 404 -------------------> CLOSED
 *               (the reply is sent within METRICS_IO_MS or dropped)
 *
 * Format (text exposition 0.0.4): every family is written whole, "# HELP"
 * and "# TYPE" first, then its samples; names follow Prometheus' rules
 * (rtgt_ prefix, base units: bytes, seconds; counters end in _total).
 * Histograms use one fixed set of bounds, 2^k microseconds for k = 2..24
 * (4 us to 16.8 s) and +Inf, so series stay comparable between scrapes;
 * rtgt's own buckets (log-linear for LUNs and sessions, log2 for members)
 * all end on powers of two, so each lands whole in one bound (a value
 * exactly on a bound is counted one bound up).
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * net/, conf/, libc. Gets the snapshot only through the metrics_snapshot_fn
 * given to metrics_start() (status.c's), never by a call up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/daemon/metrics.h"

#define MOD "metrics"
#define HB_MIN 2u        /* first bound 2^2 us */
#define HB_MAX 24u       /* last finite bound 2^24 us */
#define HB_N (HB_MAX - HB_MIN + 1u)

struct metrics {
	int lfd;
	int wake[2];           /* a byte on wake[1] stops the thread */
	uint16_t port;
	pthread_t thread;
	metrics_snapshot_fn snapshot;
	void *arg;
};

/* ---- text building ---- */

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 65536;

		while (ncap < b->len + (size_t)n + 1)
			ncap *= 2;
		char *np = realloc(b->p, ncap);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

/* A label value, escaped (backslash, double quote, newline). */
static void besc(struct buf *b, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			bprintf(b, "\\\\");
		else if (*s == '"')
			bprintf(b, "\\\"");
		else if (*s == '\n')
			bprintf(b, "\\n");
		else
			bprintf(b, "%c", *s);
	}
}

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
	bprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v ? json_object_get_string(v) : "";
}

static size_t jlen(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* label pairs: NULL-terminated list of name, value */
static void labels(struct buf *b, const char *const *lv)
{
	if (!lv[0])
		return;
	bprintf(b, "{");
	for (unsigned i = 0; lv[i]; i += 2) {
		bprintf(b, "%s%s=\"", i ? "," : "", lv[i]);
		besc(b, lv[i + 1]);
		bprintf(b, "\"");
	}
	bprintf(b, "}");
}

static void sample_u64(struct buf *b, const char *name, const char *const *lv, uint64_t v)
{
	bprintf(b, "%s", name);
	labels(b, lv);
	bprintf(b, " %llu\n", (unsigned long long)v);
}

static void sample_dbl(struct buf *b, const char *name, const char *const *lv, double v)
{
	bprintf(b, "%s", name);
	labels(b, lv);
	bprintf(b, " %.9g\n", v);
}

/* [[upper_us, count], ...] into a cumulative histogram with our bounds;
 * @sum_us: the sum. */
static void histogram(struct buf *b, const char *name, const char *const *lv,
		      struct json_object *hist, uint64_t sum_us)
{
	uint64_t cnt[HB_N + 1] = { 0 }, acc = 0;
	const char *l2[16];
	unsigned n = 0;
	char le[32];

	for (size_t i = 0; i < jlen(hist); i++) {
		struct json_object *pair = json_object_array_get_idx(hist, i);
		uint64_t up = (uint64_t)json_object_get_int64(json_object_array_get_idx(pair, 0));
		uint64_t c = (uint64_t)json_object_get_int64(json_object_array_get_idx(pair, 1));
		unsigned k = HB_MIN;

		while (k <= HB_MAX && (1ull << k) < up)
			k++;
		cnt[k - HB_MIN] += c;   /* k == HB_MAX + 1: +Inf */
	}
	while (lv[n] && n < 12) {
		l2[n] = lv[n];
		n++;
	}
	l2[n] = "le";
	l2[n + 1] = le;
	l2[n + 2] = NULL;
	for (unsigned k = 0; k <= HB_N; k++) {
		acc += cnt[k];
		if (k < HB_N)
			snprintf(le, sizeof(le), "%.9g", (double)(1ull << (k + HB_MIN)) / 1e6);
		else
			snprintf(le, sizeof(le), "+Inf");
		bprintf(b, "%s_bucket", name);
		labels(b, l2);
		bprintf(b, " %llu\n", (unsigned long long)acc);
	}
	bprintf(b, "%s_sum", name);
	labels(b, lv);
	bprintf(b, " %.9g\n", (double)sum_us / 1e6);
	bprintf(b, "%s_count", name);
	labels(b, lv);
	bprintf(b, " %llu\n", (unsigned long long)acc);
}

static uint64_t ju(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v ? (uint64_t)json_object_get_int64(v) : 0;
}

/* ---- families ---- */

struct counter_def {
	const char *name, *key, *help;
};

static const struct counter_def lun_counters[] = {
	{ "rtgt_lun_read_bytes_total", "read_bytes", "Bytes read from the LUN by initiators." },
	{ "rtgt_lun_write_bytes_total", "write_bytes", "Bytes written to the LUN by initiators." },
	{ "rtgt_lun_read_ops_total", "read_ops", "Read commands completed by the LUN." },
	{ "rtgt_lun_write_ops_total", "write_ops", "Write commands completed by the LUN." },
	{ "rtgt_lun_other_ops_total", "other_ops", "Other commands completed by the LUN." },
};

static const struct counter_def session_counters[] = {
	{ "rtgt_session_read_bytes_total", "read_bytes", "Bytes read through the session." },
	{ "rtgt_session_write_bytes_total", "write_bytes", "Bytes written through the session." },
	{ "rtgt_session_read_ops_total", "read_ops", "Read commands of the session." },
	{ "rtgt_session_write_ops_total", "write_ops", "Write commands of the session." },
	{ "rtgt_session_other_ops_total", "other_ops", "Other commands of the session." },
};

static const struct counter_def member_counters[] = {
	{ "rtgt_member_read_bytes_total", "read_bytes", "Bytes read from the member." },
	{ "rtgt_member_write_bytes_total", "write_bytes", "Bytes written to the member." },
	{ "rtgt_member_read_ops_total", "read_ops", "Reads submitted to the member." },
	{ "rtgt_member_write_ops_total", "write_ops", "Writes submitted to the member." },
};

static const char *const pool_states[] = { "optimal", "degraded", "rebuilding", "failed",
					   "provisioning", NULL };
static const char *const member_states[] = { "active", "faulty", "spare", "rebuilding",
					     "missing", "empty", "replacing", NULL };
static const char *const health_states[] = { "unknown", "passed", "warning", "failing",
					     "unavailable", "standby", NULL };

static void lun_families(struct buf *b, struct json_object *luns)
{
	for (unsigned c = 0; c < sizeof(lun_counters) / sizeof(lun_counters[0]); c++) {
		family(b, lun_counters[c].name, "counter", lun_counters[c].help);
		for (size_t i = 0; i < jlen(luns); i++) {
			struct json_object *l = json_object_array_get_idx(luns, i);
			const char *lv[] = { "pool", jstr(l, "pool"), "volume", jstr(l, "volume"), NULL };

			sample_u64(b, lun_counters[c].name, lv, ju(l, lun_counters[c].key));
		}
	}
	family(b, "rtgt_lun_latency_seconds", "histogram",
	       "Command service time in the SCSI layer, per LUN.");
	for (size_t i = 0; i < jlen(luns); i++) {
		struct json_object *l = json_object_array_get_idx(luns, i);
		const char *lv[] = { "pool", jstr(l, "pool"), "volume", jstr(l, "volume"), NULL };

		histogram(b, "rtgt_lun_latency_seconds", lv, jget(l, "latency_hist"),
			  ju(l, "latency_sum_us"));
	}
}

static void session_families(struct buf *b, struct json_object *sess)
{
	family(b, "rtgt_sessions", "gauge", "Normal iSCSI sessions logged in, per target.");
	{
		/* count per target, in first-seen order */
		const char *seen[256];
		uint64_t n[256];
		unsigned ns = 0;

		for (size_t i = 0; i < jlen(sess); i++) {
			const char *t = jstr(json_object_array_get_idx(sess, i), "target");
			unsigned k;

			for (k = 0; k < ns && strcmp(seen[k], t); k++)
				;
			if (k == ns && ns < 256) {
				seen[ns] = t;
				n[ns++] = 0;
			}
			if (k < ns)
				n[k]++;
		}
		for (unsigned k = 0; k < ns; k++) {
			const char *lv[] = { "target", seen[k], NULL };

			sample_u64(b, "rtgt_sessions", lv, n[k]);
		}
	}
	for (unsigned c = 0; c < sizeof(session_counters) / sizeof(session_counters[0]); c++) {
		family(b, session_counters[c].name, "counter", session_counters[c].help);
		for (size_t i = 0; i < jlen(sess); i++) {
			struct json_object *s = json_object_array_get_idx(sess, i);
			const char *lv[] = { "target", jstr(s, "target"), "initiator",
					     jstr(s, "initiator"), "isid", jstr(s, "isid"), "portal",
					     jstr(s, "portal_name"), NULL };

			sample_u64(b, session_counters[c].name, lv, ju(s, session_counters[c].key));
		}
	}
	family(b, "rtgt_session_latency_seconds", "histogram",
	       "Command service time seen by the iSCSI layer, per session.");
	for (size_t i = 0; i < jlen(sess); i++) {
		struct json_object *s = json_object_array_get_idx(sess, i);
		const char *lv[] = { "target", jstr(s, "target"), "initiator", jstr(s, "initiator"),
				     "isid", jstr(s, "isid"), "portal", jstr(s, "portal_name"), NULL };

		histogram(b, "rtgt_session_latency_seconds", lv, jget(s, "latency_hist"),
			  ju(s, "latency_sum_us"));
	}
}

/* Calls @fn for every member of every pool. */
typedef void (*member_fn)(struct buf *b, struct json_object *pool, struct json_object *m,
			  const char *const *lv, const void *arg);

static void each_member(struct buf *b, struct json_object *pools, member_fn fn, const void *arg)
{
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i), *ms = jget(p, "members");

		for (size_t k = 0; k < jlen(ms); k++) {
			struct json_object *m = json_object_array_get_idx(ms, k);
			const char *lv[] = { "pool", jstr(p, "name"), "member", jstr(m, "path"), NULL };

			fn(b, p, m, lv, arg);
		}
	}
}

static void m_counter(struct buf *b, struct json_object *p, struct json_object *m,
		      const char *const *lv, const void *arg)
{
	const struct counter_def *d = arg;

	sample_u64(b, d->name, lv, ju(m, d->key));
}

static void m_busy(struct buf *b, struct json_object *p, struct json_object *m,
		   const char *const *lv, const void *arg)
{
	sample_dbl(b, "rtgt_member_busy_seconds_total", lv, (double)ju(m, "busy_ns") / 1e9);
}

static void m_latency(struct buf *b, struct json_object *p, struct json_object *m,
		      const char *const *lv, const void *arg)
{
	const char *lr[] = { lv[0], lv[1], lv[2], lv[3], "op", "read", NULL };
	const char *lw[] = { lv[0], lv[1], lv[2], lv[3], "op", "write", NULL };

	histogram(b, "rtgt_member_latency_seconds", lr, jget(m, "read_hist"),
		  ju(m, "read_lat_sum_us"));
	histogram(b, "rtgt_member_latency_seconds", lw, jget(m, "write_hist"),
		  ju(m, "write_lat_sum_us"));
}

static void m_max(struct buf *b, struct json_object *p, struct json_object *m,
		  const char *const *lv, const void *arg)
{
	const char *lr[] = { lv[0], lv[1], lv[2], lv[3], "op", "read", NULL };
	const char *lw[] = { lv[0], lv[1], lv[2], lv[3], "op", "write", NULL };

	sample_dbl(b, "rtgt_member_latency_max_seconds", lr, (double)ju(m, "read_lat_max_us") / 1e6);
	sample_dbl(b, "rtgt_member_latency_max_seconds", lw, (double)ju(m, "write_lat_max_us") / 1e6);
}

static void m_state(struct buf *b, struct json_object *p, struct json_object *m,
		    const char *const *lv, const void *arg)
{
	const char *st = jstr(m, "state");

	for (unsigned s = 0; member_states[s]; s++) {
		const char *l3[] = { lv[0], lv[1], lv[2], lv[3], "state", member_states[s], NULL };

		sample_u64(b, "rtgt_member_state", l3, !strcmp(st, member_states[s]));
	}
}

static void m_slow(struct buf *b, struct json_object *p, struct json_object *m,
		   const char *const *lv, const void *arg)
{
	struct json_object *s = jget(m, "slow");

	sample_u64(b, "rtgt_member_slow", lv, s && json_object_get_boolean(s));
}

static void m_health(struct buf *b, struct json_object *p, struct json_object *m,
		     const char *const *lv, const void *arg)
{
	struct json_object *h = jget(m, "health");
	const char *st = jstr(h, "state");

	if (!h)
		return;
	for (unsigned s = 0; health_states[s]; s++) {
		const char *l3[] = { lv[0], lv[1], lv[2], lv[3], "state", health_states[s], NULL };

		sample_u64(b, "rtgt_member_health", l3, !strcmp(st, health_states[s]));
	}
}

static void m_hval(struct buf *b, struct json_object *p, struct json_object *m,
		   const char *const *lv, const void *arg)
{
	const struct counter_def *d = arg;
	struct json_object *h = jget(m, "health");

	if (h && jget(h, d->key))
		sample_u64(b, d->name, lv, ju(h, d->key));
}

static const struct counter_def health_gauges[] = {
	{ "rtgt_member_temperature_celsius", "temperature_c", "Member temperature (SMART)." },
	{ "rtgt_member_reallocated_sectors", "reallocated_sectors",
	  "Reallocated sectors (SMART attribute 5, SCSI grown defects)." },
	{ "rtgt_member_pending_sectors", "pending_sectors",
	  "Sectors waiting to be remapped (SMART attribute 197)." },
	{ "rtgt_member_media_errors", "media_errors", "NVMe media and data integrity errors." },
};

/* One gauge per pool that has the field @key (pools with thin volumes). */
static void thin_family(struct buf *b, struct json_object *pools, const char *name,
			const char *key, const char *help)
{
	family(b, name, "gauge", help);
	for (size_t k = 0; k < jlen(pools); k++) {
		struct json_object *p = json_object_array_get_idx(pools, k);
		const char *lv[] = { "pool", jstr(p, "name"), NULL };

		if (jget(p, key))
			sample_u64(b, name, lv, ju(p, key));
	}
}

static void pool_families(struct buf *b, struct json_object *pools)
{
	family(b, "rtgt_pool_state", "gauge", "1 for the pool's current state, 0 for the others.");
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);

		for (unsigned s = 0; pool_states[s]; s++) {
			const char *lv[] = { "pool", jstr(p, "name"), "level", jstr(p, "level"),
					     "state", pool_states[s], NULL };

			sample_u64(b, "rtgt_pool_state", lv, !strcmp(jstr(p, "state"), pool_states[s]));
		}
	}
	family(b, "rtgt_rebuild_progress_ratio", "gauge",
	       "Part of the member rebuilt so far (0 when no rebuild runs).");
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);
		const char *lv[] = { "pool", jstr(p, "name"), NULL };

		sample_dbl(b, "rtgt_rebuild_progress_ratio", lv,
			   jget(p, "rebuild_progress") ?
			   json_object_get_double(jget(p, "rebuild_progress")) : 0.0);
	}
	for (size_t i = 0; i < jlen(pools); i++)
		if (jget(json_object_array_get_idx(pools, i), "thin_space_bytes")) {
			/* pools with thin volumes only */
			thin_family(b, pools, "rtgt_pool_thin_used_bytes", "thin_used_bytes",
				    "Bytes of the pool its thin volumes take.");
			thin_family(b, pools, "rtgt_pool_thin_space_bytes", "thin_space_bytes",
				    "Bytes the pool's thin volumes may take in all (the pool less thick volumes and extent maps).");
			break;
		}
	family(b, "rtgt_sync_progress_ratio", "gauge",
	       "Part of a new pool's initial sync done (1 once synced).");
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);
		const char *lv[] = { "pool", jstr(p, "name"), NULL };

		sample_dbl(b, "rtgt_sync_progress_ratio", lv, jget(p, "sync_progress") ?
			   json_object_get_double(jget(p, "sync_progress")) : 1.0);
	}
	family(b, "rtgt_scrub_running", "gauge", "1 while a scrub or resync runs.");
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);
		const char *lv[] = { "pool", jstr(p, "name"), NULL };

		if (jget(p, "scrub_state"))
			sample_u64(b, "rtgt_scrub_running", lv, !strcmp(jstr(p, "scrub_state"), "running"));
	}
	family(b, "rtgt_scrub_mismatches", "gauge",
	       "Mismatches found by the last (or the running) scrub.");
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);
		const char *lv[] = { "pool", jstr(p, "name"), NULL };

		if (jget(p, "scrub_mismatches"))
			sample_u64(b, "rtgt_scrub_mismatches", lv, ju(p, "scrub_mismatches"));
	}
	for (unsigned c = 0; c < sizeof(member_counters) / sizeof(member_counters[0]); c++) {
		family(b, member_counters[c].name, "counter", member_counters[c].help);
		each_member(b, pools, m_counter, &member_counters[c]);
	}
	family(b, "rtgt_member_busy_seconds_total", "counter",
	       "Time the member had at least one I/O outstanding.");
	each_member(b, pools, m_busy, NULL);
	family(b, "rtgt_member_latency_seconds", "histogram",
	       "Member I/O time from submission to completion.");
	each_member(b, pools, m_latency, NULL);
	family(b, "rtgt_member_latency_max_seconds", "gauge", "The slowest member I/O so far.");
	each_member(b, pools, m_max, NULL);
	family(b, "rtgt_member_state", "gauge", "1 for the member's current state, 0 for the others.");
	each_member(b, pools, m_state, NULL);
	family(b, "rtgt_member_slow", "gauge",
	       "1 while the member's p99 latency stays far above its siblings'.");
	each_member(b, pools, m_slow, NULL);
	family(b, "rtgt_member_health", "gauge",
	       "1 for the member's SMART health verdict, 0 for the others (block devices).");
	each_member(b, pools, m_health, NULL);
	for (unsigned c = 0; c < sizeof(health_gauges) / sizeof(health_gauges[0]); c++) {
		family(b, health_gauges[c].name, "gauge", health_gauges[c].help);
		each_member(b, pools, m_hval, &health_gauges[c]);
	}
}

static const struct counter_def event_counters[] = {
	{ "rtgt_events_total", "posted", "Events posted (rtgtctl events)." },
	{ "rtgt_events_dropped_total", "dropped", "Events pushed out of the kept ring." },
	{ "rtgt_event_hook_runs_total", "hook_runs", "Event hook processes started." },
	{ "rtgt_event_hook_failures_total", "hook_failures",
	  "Event hook runs that could not start or exited non-zero." },
	{ "rtgt_event_hook_timeouts_total", "hook_timeouts", "Event hook runs killed at the timeout." },
};

int metrics_format(struct json_object *snap, char **text, size_t *len)
{
	struct buf b = { 0 };
	struct json_object *ev = jget(snap, "events");
	const char *none[] = { NULL };

	lun_families(&b, jget(snap, "luns"));
	session_families(&b, jget(snap, "sessions"));
	pool_families(&b, jget(snap, "pools"));
	for (unsigned c = 0; c < sizeof(event_counters) / sizeof(event_counters[0]); c++) {
		family(&b, event_counters[c].name, "counter", event_counters[c].help);
		sample_u64(&b, event_counters[c].name, none, ju(ev, event_counters[c].key));
	}
	family(&b, "rtgt_invariant_failures_total", "counter",
	       "State machine invariants found broken (logged, see conf/util.h).");
	sample_u64(&b, "rtgt_invariant_failures_total", none, ju(snap, "invariant_failures"));
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*text = b.p;
	*len = b.len;
	return 0;
}

/* ---- the server ---- */

static void send_all(int fd, const char *p, size_t len, uint64_t deadline)
{
	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		uint64_t now = conf_mono_ms();
		ssize_t n;

		if (now >= deadline || poll(&pf, 1, (int)(deadline - now)) <= 0)
			return;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void reply(int fd, const char *status, const char *ctype, const char *body, size_t blen,
		  uint64_t deadline)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, ctype, blen);

	send_all(fd, head, (size_t)n, deadline);
	send_all(fd, body, blen, deadline);
}

static void serve(struct metrics *m, int fd)
{
	char req[METRICS_REQ_MAX + 1];
	size_t len = 0;
	uint64_t deadline = conf_mono_ms() + METRICS_IO_MS;
	bool done = false;

	while (!done) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = conf_mono_ms();
		ssize_t n;

		if (len == METRICS_REQ_MAX || now >= deadline) {
			static const char msg[] = "request too long or too slow\n";

			reply(fd, "400 Bad Request", "text/plain", msg, sizeof(msg) - 1,
			      conf_mono_ms() + METRICS_IO_MS);
			return;
		}
		if (poll(&pf, 1, (int)(deadline - now)) <= 0)
			continue;
		n = recv(fd, req + len, METRICS_REQ_MAX - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		len += (size_t)n;
		req[len] = '\0';
		done = strstr(req, "\r\n\r\n") || strstr(req, "\n\n");
	}
	if (strncmp(req, "GET /metrics", 12) || (req[12] != ' ' && req[12] != '?') ||
	    !strstr(req, " HTTP/1.")) {
		static const char msg[] = "not found: only GET /metrics\n";

		reply(fd, "404 Not Found", "text/plain", msg, sizeof(msg) - 1,
		      conf_mono_ms() + METRICS_IO_MS);
		return;
	}
	{
		struct json_object *snap = json_object_new_object();
		char *text = NULL;
		size_t tlen = 0;
		int rc = snap ? m->snapshot(m->arg, snap) : -ENOMEM;

		if (!rc)
			rc = metrics_format(snap, &text, &tlen);
		json_object_put(snap);
		if (rc) {
			static const char msg[] = "snapshot failed\n";

			LOG_WARN(MOD, "scrape: %s", strerror(-rc));
			reply(fd, "503 Service Unavailable", "text/plain", msg, sizeof(msg) - 1,
			      conf_mono_ms() + METRICS_IO_MS);
			return;
		}
		reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", text, tlen,
		      conf_mono_ms() + 5 * METRICS_IO_MS);
		free(text);
	}
}

static void *metrics_main(void *arg)
{
	struct metrics *m = arg;

	for (;;) {
		struct pollfd pf[2] = { { .fd = m->lfd, .events = POLLIN },
					{ .fd = m->wake[0], .events = POLLIN } };
		int fd;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!(pf[0].revents & POLLIN))
			continue;
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve(m, fd);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

int metrics_start(const char *listen, metrics_snapshot_fn snapshot, void *arg,
		  struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int rc;

	if (!m)
		return -ENOMEM;
	m->snapshot = snapshot;
	m->arg = arg;
	m->wake[0] = m->wake[1] = -1;
	rc = sock_parse_addr(listen, &ss, &sl);
	if (rc)
		goto fail;
	m->lfd = sock_listen(&ss, sl, 16);
	if (m->lfd < 0) {
		rc = m->lfd;
		goto fail;
	}
	sl = sizeof(ss);
	if (getsockname(m->lfd, (struct sockaddr *)&ss, &sl) == 0)
		m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	if (pipe2(m->wake, O_CLOEXEC)) {
		rc = -errno;
		goto fail_sock;
	}
	rc = -pthread_create(&m->thread, NULL, metrics_main, m);
	if (rc)
		goto fail_pipe;
	LOG_INFO(MOD, "Prometheus metrics on http://%s/metrics", listen);
	*out = m;
	return 0;

fail_pipe:
	close(m->wake[0]);
	close(m->wake[1]);
fail_sock:
	close(m->lfd);
fail:
	free(m);
	return rc;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	if (write(m->wake[1], "x", 1) != 1)
		LOG_ERR(MOD, "cannot wake the metrics thread: %s", strerror(errno));
	pthread_join(m->thread, NULL);
	close(m->wake[0]);
	close(m->wake[1]);
	close(m->lfd);
	free(m);
}

uint16_t metrics_port(const struct metrics *m)
{
	return m->port;
}
