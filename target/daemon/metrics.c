/*
 * target/daemon/metrics.c - the Prometheus text endpoint (see metrics.h).
 *
 * libmicrohttpd reads and parses every request, one thread per connection
 * (so no connection waits for another's request or answer), within its
 * per-connection memory and idle timeout. What is ours, per connection:
 *
 *   accept   -- metrics_max_connections open, or metrics_max_per_address
 *               from its address ----------------------------> CLOSED (refused)
 *   OPEN     -- request line and headers read:
 *               over metrics_max_request --------------------> 431, CLOSED (refused)
 *               GET|HEAD /metrics: snapshot, format ---------> 200 (503 when the
 *                                                              snapshot failed)
 *               GET|HEAD /healthz: every reactor answers -----> 200 (else 503)
 *               a method holding a NUL byte -----------------> 400
 *               any other method or path --------------------> 404
 *            -- silent for metrics_idle_timeout, unanswered --> CLOSED (refused)
 *   (libmicrohttpd: a request too large for the connection's memory 431 or
 *   414, counted as too_large; a malformed one 400.)
 *   Every answer is HTTP/1.0 with "Connection: close"; a query string is
 *   ignored. Refusals are counted per reason in rtgt_metrics_refused_total.

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
 * net/, conf/, json-c, libmicrohttpd, libc. Gets the snapshot and the
 * reactors' health only through the struct metrics_ops given to
 * metrics_start() (status.c's), never by a call up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
/* a connection thread's stack: formatting needs a few KiB; 1024 threads
 * stay within 512 MiB of address space */
#define METRICS_STACK (512u << 10)

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

static const char *const refused_names[METRICS_REFUSED_N] = {
	[METRICS_REFUSED_CONNECTIONS] = "connections",
	[METRICS_REFUSED_PER_ADDRESS] = "per_address",
	[METRICS_REFUSED_TOO_LARGE] = "too_large",
	[METRICS_REFUSED_TIMEOUT] = "timeout",
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
	family(&b, "rtgt_metrics_refused_total", "counter",
	       "Connections to this endpoint refused or closed unanswered, per reason.");
	for (unsigned i = 0; i < METRICS_REFUSED_N; i++) {
		const char *lv[] = { "reason", refused_names[i], NULL };

		sample_u64(&b, "rtgt_metrics_refused_total", lv,
			   ju(jget(snap, "metrics_refused"), refused_names[i]));
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

/* ---- the server (libmicrohttpd) ---- */


/* Connections open from one client address. */
struct addr_count {
	struct sockaddr_storage addr;   /* port zeroed */
	unsigned n;                     /* 0: a free entry */
};

/* One open connection (libmicrohttpd's socket context). */
struct conn {
	uint64_t start_ms;
	bool answered;                  /* a response was queued for it */
};

struct metrics {
	struct MHD_Daemon *mhd;         /* owned; owns the listening socket */
	uint16_t port;
	struct metrics_limits lim;
	struct metrics_ops ops;
	pthread_mutex_t mu;             /* open, addrs */
	unsigned open;
	struct addr_count *addrs;       /* owned, lim.max_connections + 1 entries */
	uint64_t refused[METRICS_REFUSED_N];   /* atomic adds */
};

static void refuse(struct metrics *m, enum metrics_refused why)
{
	__atomic_add_fetch(&m->refused[why], 1, __ATOMIC_RELAXED);
}

uint64_t metrics_refused(struct metrics *m, enum metrics_refused why)
{
	return __atomic_load_n(&m->refused[why], __ATOMIC_RELAXED);
}

/* The address of @sa without its port (the key of the per-address count). */
static void addr_key(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *key)
{
	memset(key, 0, sizeof(*key));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *k = (struct sockaddr_in *)key;

		k->sin_family = AF_INET;
		k->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *k = (struct sockaddr_in6 *)key;

		k->sin6_family = AF_INET6;
		k->sin6_addr = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else {
		key->ss_family = sa->sa_family;   /* all others share one count */
	}
}

/* The entry of @key; with @add a free one for it (NULL when none). Under mu. */
static struct addr_count *addr_find(struct metrics *m, const struct sockaddr_storage *key,
				    bool add)
{
	struct addr_count *free_ent = NULL;

	for (unsigned i = 0; i <= m->lim.max_connections; i++) {
		struct addr_count *a = &m->addrs[i];

		if (a->n && !memcmp(&a->addr, key, sizeof(*key)))
			return a;
		if (!a->n && !free_ent)
			free_ent = a;
	}
	if (add && free_ent) {
		free_ent->addr = *key;
		return free_ent;
	}
	return NULL;
}

/* Accept policy (the listening thread, before a connection is set up):
 * our limits, counted when they refuse. libmicrohttpd's own limits are set
 * one above these as a backstop and never refuse first. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct metrics *m = cls;
	struct sockaddr_storage key;
	struct addr_count *a;
	enum MHD_Result ok = MHD_YES;

	addr_key(sa, len, &key);
	pthread_mutex_lock(&m->mu);
	a = addr_find(m, &key, false);
	if (m->open >= m->lim.max_connections) {
		refuse(m, METRICS_REFUSED_CONNECTIONS);
		ok = MHD_NO;
	} else if (a && a->n >= m->lim.max_per_address) {
		refuse(m, METRICS_REFUSED_PER_ADDRESS);
		ok = MHD_NO;
	}
	pthread_mutex_unlock(&m->mu);
	return ok;
}

/* Milliseconds since the last data came in on @fd (the kernel's count: at
 * least what libmicrohttpd measured its idle time from); 0 when unknown. */
static uint64_t quiet_ms(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return 0;
	return ti.tcpi_last_data_recv;
}

/* Connection set up and torn down (both on the listening thread). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics *m = cls;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct sockaddr_storage key;
	struct addr_count *a;

	if (!ci || !ci->client_addr)
		return;
	addr_key(ci->client_addr, sizeof(struct sockaddr_storage), &key);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn *cn = calloc(1, sizeof(*cn));

		if (cn)
			cn->start_ms = conf_mono_ms();
		*socket_ctx = cn;   /* NULL: not classified at its end, still counted */
		pthread_mutex_lock(&m->mu);
		m->open++;
		a = addr_find(m, &key, true);
		if (a)
			a->n++;
		pthread_mutex_unlock(&m->mu);
		return;
	}
	{
		struct conn *cn = *socket_ctx;
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c,
						     MHD_CONNECTION_INFO_CONNECTION_FD);

		/* never answered, and nothing received for the idle timeout (a
		 * tick of slack): closed by the timeout. A client that closed
		 * it, or an error answer (sent as soon as the bad request is
		 * read), ends sooner after its last byte. */
		if (cn && !cn->answered && fi &&
		    conf_mono_ms() - cn->start_ms >= m->lim.idle_timeout_s * 1000ull &&
		    quiet_ms(fi->connect_fd) + 20 >= m->lim.idle_timeout_s * 1000ull)
			refuse(m, METRICS_REFUSED_TIMEOUT);
		free(cn);
		*socket_ctx = NULL;
		pthread_mutex_lock(&m->mu);
		m->open--;
		a = addr_find(m, &key, false);
		if (a && a->n)
			a->n--;
		pthread_mutex_unlock(&m->mu);
	}
}

/* libmicrohttpd's messages: at debug level; its own answers to a request
 * too large for the connection's memory (431, or 414 for the request line
 * alone) are counted here, the only place it reports them. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct metrics *m = cls;
	char msg[512];
	const char *p;
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	p = strstr(msg, "HTTP response code is ");
	if (p) {
		unsigned long code = strtoul(p + 22, NULL, 10);

		if (code == 431 || code == 414)
			refuse(m, METRICS_REFUSED_TOO_LARGE);
	}
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	LOG_DBG(MOD, "libmicrohttpd: %s", msg);
}

enum metrics_route metrics_route(const char *method, const char *url)
{
	bool get = method && (!strcmp(method, "GET") || !strcmp(method, "HEAD"));

	if (get && url && !strcmp(url, "/metrics"))
		return METRICS_ROUTE_METRICS;
	if (get && url && !strcmp(url, "/healthz"))
		return METRICS_ROUTE_HEALTHZ;
	return METRICS_ROUTE_NOT_FOUND;
}

/* Queues the answer (closed after it; HTTP/1.0 status line). @body is
 * freed here when @owned. HEAD gets the same headers without the body
 * (libmicrohttpd leaves it out). */
static enum MHD_Result answer(struct MHD_Connection *c, struct conn *cn, unsigned status,
			      const char *ctype, char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, owned ?
								 MHD_RESPMEM_MUST_FREE :
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;   /* libmicrohttpd closes the connection */
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) == MHD_NO ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_NO ||
	    MHD_set_response_options(r, MHD_RF_HTTP_1_0_SERVER, MHD_RO_END) == MHD_NO) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	if (cn && rc == MHD_YES)
		cn->answered = true;
	return rc;
}

#define TEXT "text/plain; charset=utf-8"

static enum MHD_Result answer_text(struct MHD_Connection *c, struct conn *cn, unsigned status,
				   const char *msg)
{
	return answer(c, cn, status, TEXT, (char *)msg, strlen(msg), false);
}

static enum MHD_Result serve_metrics(struct metrics *m, struct MHD_Connection *c,
				     struct conn *cn)
{
	struct json_object *snap = json_object_new_object(), *ref = json_object_new_object();
	char *text = NULL;
	size_t tlen = 0;
	int rc = snap && ref ? m->ops.snapshot(m->ops.arg, snap) : -ENOMEM;

	if (!rc) {
		for (unsigned i = 0; i < METRICS_REFUSED_N; i++)
			json_object_object_add(ref, refused_names[i],
					       json_object_new_int64((int64_t)metrics_refused(m, i)));
		json_object_object_add(snap, "metrics_refused", ref);
		ref = NULL;
		rc = metrics_format(snap, &text, &tlen);
	}
	json_object_put(ref);
	json_object_put(snap);
	if (rc) {
		LOG_WARN(MOD, "scrape: %s", strerror(-rc));
		return answer_text(c, cn, MHD_HTTP_SERVICE_UNAVAILABLE, "snapshot failed\n");
	}
	return answer(c, cn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, tlen,
		      true);
}

static enum MHD_Result serve_healthz(struct metrics *m, struct MHD_Connection *c,
				     struct conn *cn)
{
	char why[200], *body;
	int rc = m->ops.health(m->ops.arg, why, sizeof(why) - 1);

	if (!rc)
		return answer_text(c, cn, MHD_HTTP_OK, "ok\n");
	if (asprintf(&body, "unhealthy: %s\n", why) < 0)
		return answer_text(c, cn, MHD_HTTP_SERVICE_UNAVAILABLE, "unhealthy\n");
	return answer(c, cn, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, body, strlen(body), true);
}

/* Whether the request line's method token ended where its C string does.
 * libmicrohttpd recognises the method by the token's full length (up to the
 * first space) but hands it over as a C string, so "HEAD\0x /metrics" would
 * read as HEAD here while the library takes it for another method and sends
 * the body. It parses the line in place: the token's space became the NUL,
 * and @url starts after the spaces that follow it. A NUL inside the token
 * leaves bytes other than spaces between the string's end and @url. */
static bool method_whole(const char *method, const char *url)
{
	const char *p = method + strlen(method) + 1;

	if (url < p || url - method > 65536)
		return true;   /* not parsed in place (no URI): nothing to compare */
	for (; p < url; p++)
		if (*p != ' ')
			return false;
	return true;
}

/* A request whose line and headers libmicrohttpd has read (on the
 * connection's own thread): answered at the first call, whatever follows. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **req_ctx)
{
	struct metrics *m = cls;
	const union MHD_ConnectionInfo *si = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const union MHD_ConnectionInfo *hi = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	struct conn *cn = si ? si->socket_context : NULL;

	if (*req_ctx) {
		/* a body after our answer: dropped */
		*upload_len = 0;
		return MHD_YES;
	}
	*req_ctx = m;
	if (hi && hi->header_size > m->lim.max_request) {
		refuse(m, METRICS_REFUSED_TOO_LARGE);
		return answer_text(c, cn, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
				   "request line and headers too large\n");
	}
	if (method && url && !method_whole(method, url))
		return answer_text(c, cn, MHD_HTTP_BAD_REQUEST, "bad request: a NUL in the method\n");
	switch (metrics_route(method, url)) {
	case METRICS_ROUTE_METRICS:
		return serve_metrics(m, c, cn);
	case METRICS_ROUTE_HEALTHZ:
		return serve_healthz(m, c, cn);
	case METRICS_ROUTE_NOT_FOUND:
		break;
	}
	return answer_text(c, cn, MHD_HTTP_NOT_FOUND,
			   "not found: only GET or HEAD of /metrics and /healthz\n");
}

int metrics_start(const char *listen, const struct metrics_limits *lim,
		  const struct metrics_ops *ops, struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int lfd, rc;

	if (!m)
		return -ENOMEM;
	if (!lim->max_connections || !lim->max_per_address || !lim->idle_timeout_s ||
	    lim->max_request < 1024) {
		rc = -EINVAL;
		goto fail;
	}
	m->lim = *lim;
	m->ops = *ops;
	m->addrs = calloc(lim->max_connections + 1u, sizeof(*m->addrs));
	if (!m->addrs) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = -pthread_mutex_init(&m->mu, NULL);
	if (rc)
		goto fail_addrs;
	rc = sock_parse_addr(listen, &ss, &sl);
	if (rc)
		goto fail_mutex;
	lfd = sock_listen(&ss, sl, 128);
	if (lfd < 0) {
		rc = lfd;
		goto fail_mutex;
	}
	sl = sizeof(ss);
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl) == 0)
		m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	/* One thread per connection (poll(), not select(): rtgtd's descriptors
	 * may pass FD_SETSIZE): a snapshot that waits for a busy reactor, or a
	 * client that trickles its request, holds its own thread only. The
	 * memory pool holds the request (read buffer: half of it, at least
	 * max_request) and the answer's headers; the body is our buffer. */
	m->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				  MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC,
				  0, on_accept, m, on_request, m,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, m,
				  MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_CONNECTION_LIMIT, lim->max_connections + 1u,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, lim->max_per_address + 1u,
				  MHD_OPTION_CONNECTION_TIMEOUT, lim->idle_timeout_s,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				  (size_t)lim->max_request * 2 + 4096,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
				  MHD_OPTION_THREAD_STACK_SIZE, (size_t)METRICS_STACK,
				  MHD_OPTION_END);
	if (!m->mhd) {
		close(lfd);
		rc = -ENOMEM;
		goto fail_mutex;
	}
	LOG_INFO(MOD, "Prometheus metrics on http://%s/metrics (at most %u connections, %u per address)",
		 listen, lim->max_connections, lim->max_per_address);
	*out = m;
	return 0;

fail_mutex:
	pthread_mutex_destroy(&m->mu);
fail_addrs:
	free(m->addrs);
fail:
	free(m);
	return rc;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	/* joins every connection's thread and closes the listening socket */
	MHD_stop_daemon(m->mhd);
	pthread_mutex_destroy(&m->mu);
	free(m->addrs);
	free(m);
}

uint16_t metrics_port(const struct metrics *m)
{
	return m->port;
}
