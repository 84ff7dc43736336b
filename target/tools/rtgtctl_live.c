/*
 * target/tools/rtgtctl_live.c - rtgtctl top, stats --watch and paths.
 *
 * Layer: live views (target/tools/README.md "Layers"), called by rtgtctl.c.
 * May call: ctlclient.c, conf/util, json-c, libc.
 *
 * All three ask the daemon for "live" snapshots (cumulative counters,
 * histograms, TCP_INFO; target/daemon/live.h) and work on the difference
 * of two of them:
 *
 *   snapshot A --interval--> snapshot B --> interval object (rates) --> print
 *        ^____________________________|  (B becomes the next A)
 *
 * The interval object ("rates") is what stats --watch --json prints, one
 * per line: MB/s (10^6 bytes) read and written, IOPS, p50/p99 latency of
 * the commands completed in the interval (microseconds, from the
 * histograms' difference), and the mean number of commands in service
 * (queue depth: the growth of the latency sum over the interval), in total,
 * per portal, per session, per LUN; per pool its state and rebuild
 * progress; per member busy share, MB/s, IOPS and I/O latency.
 *
 * paths takes two snapshots, groups the sessions by initiator and prints
 * their connections and warnings in plain words (see path_warnings()).
 *
 * top and stats --watch loop until --count intervals, SIGINT/SIGTERM or q
 * (top, on a terminal). Exit: 0, 1 the daemon refused, 3 unreachable.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "target/tools/rtgtctl.h"

#define HIST_MAX 512u
#define ONE_MIB (1024u * 1024u)

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---- JSON access ---- */

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

static double jnum(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v ? json_object_get_double(v) : 0.0;
}

static size_t jlen(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct json_object *jidx(struct json_object *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

static void put_d(struct json_object *o, const char *k, double v)
{
	/* two decimals are plenty and keep the record small */
	json_object_object_add(o, k, json_object_new_double(round(v * 100.0) / 100.0));
}

static void put_i(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void put_s(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

/* A field copied as it is from a snapshot object into an output object: a
 * string, or (num) a number written as an integer. Tables end with NULL. */
struct col {
	const char *key;
	bool num;
};

static const struct col PORTAL_COLS[] = {
	{ "name", false }, { "listen", false }, { NULL, false }
};
static const struct col SESSION_COLS[] = {
	{ "target", false }, { "initiator", false }, { "isid", false }, { "tsih", true },
	{ "portal_name", false }, { "local", false }, { "peer", false }, { NULL, false }
};
static const struct col PATH_COLS[] = {
	{ "target", false }, { "isid", false }, { "tsih", true }, { "portal_name", false },
	{ "portal", false }, { "local", false }, { "peer", false }, { NULL, false }
};

static void put_cols(struct json_object *o, struct json_object *from, const struct col *c)
{
	for (; c->key; c++) {
		if (c->num)
			put_i(o, c->key, (int64_t)jnum(from, c->key));
		else
			put_s(o, c->key, jstr(from, c->key));
	}
}

/* ---- talking to the daemon ---- */

/* One "live" snapshot, or NULL with *rc set (messages on stderr). */
static struct json_object *snapshot(const char *sock, int *rc)
{
	static const char req[] = "{\"cmd\":\"live\",\"args\":[]}\n";
	struct json_object *reply = NULL, *ok;
	char *line;
	int fd = rtgtctl_connect(sock);

	*rc = EXIT_UNREACHABLE;
	if (fd < 0) {
		fprintf(stderr, "rtgtctl: cannot connect to %s: %s\n", sock, strerror(errno));
		return NULL;
	}
	if (rtgtctl_send_all(fd, req, sizeof(req) - 1)) {
		fprintf(stderr, "rtgtctl: cannot send to %s: %s\n", sock, strerror(errno));
		goto out;
	}
	line = rtgtctl_recv_line(fd);
	if (!line) {
		fprintf(stderr, "rtgtctl: no reply from %s: %s\n", sock,
			errno == ECONNRESET ? "connection closed" : strerror(errno));
		goto out;
	}
	reply = json_tokener_parse(line);
	free(line);
	if (!reply || !json_object_object_get_ex(reply, "ok", &ok)) {
		fprintf(stderr, "rtgtctl: unreadable reply from %s\n", sock);
		json_object_put(reply);
		reply = NULL;
	} else if (!json_object_get_boolean(ok)) {
		fprintf(stderr, "rtgtctl: %s\n", jstr(reply, "error"));
		*rc = EXIT_DAEMON_ERR;
		json_object_put(reply);
		reply = NULL;
	} else {
		*rc = 0;
	}
out:
	close(fd);
	return reply;
}

/* ---- histograms: [[upper bound us, count], ...] ---- */

struct hist {
	unsigned n;
	uint64_t up[HIST_MAX];
	int64_t cnt[HIST_MAX];
};

static void hist_add(struct hist *h, struct json_object *arr, int sign)
{
	for (size_t i = 0; i < jlen(arr); i++) {
		struct json_object *p = jidx(arr, i);
		uint64_t up;
		unsigned k;

		if (jlen(p) != 2)
			continue;
		up = (uint64_t)json_object_get_int64(jidx(p, 0));
		for (k = 0; k < h->n && h->up[k] != up; k++)
			;
		if (k == h->n) {
			if (h->n == HIST_MAX)
				continue;
			h->up[h->n] = up;
			h->cnt[h->n++] = 0;
		}
		h->cnt[k] += sign * json_object_get_int64(jidx(p, 1));
	}
}

/* Upper bound (us) of the bucket holding quantile @q; 0 when empty. */
static double hist_q(const struct hist *h, double q)
{
	int64_t total = 0, need, seen = 0;
	uint64_t last = 0;

	for (unsigned i = 0; i < h->n; i++)
		if (h->cnt[i] > 0)
			total += h->cnt[i];
	if (total == 0)
		return 0;
	need = (int64_t)ceil(q * (double)total);
	if (need < 1)
		need = 1;
	for (;;) {
		/* the smallest bound above `last` holding counts */
		uint64_t best = UINT64_MAX;
		int64_t c = 0;

		for (unsigned i = 0; i < h->n; i++)
			if (h->cnt[i] > 0 && h->up[i] > last && h->up[i] < best)
				best = h->up[i];
		if (best == UINT64_MAX)
			return (double)last;
		for (unsigned i = 0; i < h->n; i++)
			if (h->up[i] == best && h->cnt[i] > 0)
				c += h->cnt[i];
		seen += c;
		last = best;
		if (seen >= need)
			return (double)best;
	}
}

/* ---- differences ---- */

/* Counters of one thing over the interval. */
struct delta {
	double rbytes, wbytes, rops, wops, oops, lat_sum_us;
	struct hist h;
};

static void delta_of(struct delta *d, struct json_object *cur, struct json_object *prev)
{
	static const char *const k[] = { "read_bytes", "write_bytes", "read_ops", "write_ops",
					 "other_ops", "latency_sum_us" };
	double *f[] = { &d->rbytes, &d->wbytes, &d->rops, &d->wops, &d->oops, &d->lat_sum_us };

	for (unsigned i = 0; i < 6; i++) {
		double v = jnum(cur, k[i]) - (prev ? jnum(prev, k[i]) : 0);

		/* a counter going back is a new object under an old name */
		*f[i] += v > 0 ? v : 0;
	}
	hist_add(&d->h, jget(cur, "latency_hist"), 1);
	if (prev)
		hist_add(&d->h, jget(prev, "latency_hist"), -1);
}

static void delta_sum(struct delta *into, const struct delta *d)
{
	into->rbytes += d->rbytes;
	into->wbytes += d->wbytes;
	into->rops += d->rops;
	into->wops += d->wops;
	into->oops += d->oops;
	into->lat_sum_us += d->lat_sum_us;
	for (unsigned i = 0; i < d->h.n; i++) {
		unsigned k;

		for (k = 0; k < into->h.n && into->h.up[k] != d->h.up[i]; k++)
			;
		if (k == into->h.n) {
			if (into->h.n == HIST_MAX)
				continue;
			into->h.up[into->h.n] = d->h.up[i];
			into->h.cnt[into->h.n++] = 0;
		}
		into->h.cnt[k] += d->h.cnt[i];
	}
}

static double delta_bytes(const struct delta *d)
{
	return d->rbytes + d->wbytes;
}

static double delta_ops(const struct delta *d)
{
	return d->rops + d->wops + d->oops;
}

static void put_rates(struct json_object *o, const struct delta *d, double dt)
{
	put_d(o, "read_mbps", d->rbytes / dt / 1e6);
	put_d(o, "write_mbps", d->wbytes / dt / 1e6);
	put_d(o, "mbps", delta_bytes(d) / dt / 1e6);
	put_d(o, "iops", delta_ops(d) / dt);
	put_d(o, "p50_us", hist_q(&d->h, 0.50));
	put_d(o, "p99_us", hist_q(&d->h, 0.99));
	put_d(o, "qd", d->lat_sum_us / (dt * 1e6));
}

/* A portal's or a session's rates and its share of all session bytes
 * (@total_b; of all ops, @total_ops, when no bytes moved). */
static void put_rates_share(struct json_object *o, const struct delta *d, double dt,
			    double total_b, double total_ops)
{
	put_rates(o, d, dt);
	put_d(o, "share", total_b > 0 ? delta_bytes(d) / total_b :
			  total_ops > 0 ? delta_ops(d) / total_ops : 0);
}

static bool same(struct json_object *a, struct json_object *b, const char *const *keys)
{
	for (; *keys; keys++) {
		struct json_object *x = jget(a, *keys), *y = jget(b, *keys);

		if (!x || !y || strcmp(json_object_get_string(x), json_object_get_string(y)))
			return false;
	}
	return true;
}

static struct json_object *find(struct json_object *arr, struct json_object *like,
				const char *const *keys)
{
	for (size_t i = 0; i < jlen(arr); i++)
		if (same(jidx(arr, i), like, keys))
			return jidx(arr, i);
	return NULL;
}

static const char *const SESSION_KEY[] = { "target", "initiator", "isid", "tsih", NULL };
static const char *const LUN_KEY[] = { "pool", "volume", NULL };
static const char *const NAME_KEY[] = { "name", NULL };
static const char *const PATH_KEY[] = { "path", NULL };

/* Member: busy share, MB/s, IOPS, latency of reads and writes together. */
static struct json_object *member_rates(struct json_object *cur, struct json_object *prev,
					double dt)
{
	struct json_object *o = json_object_new_object();
	struct hist *h = calloc(1, sizeof(*h));
	double rb = jnum(cur, "read_bytes") - (prev ? jnum(prev, "read_bytes") : 0);
	double wb = jnum(cur, "write_bytes") - (prev ? jnum(prev, "write_bytes") : 0);
	double ops = jnum(cur, "read_ops") + jnum(cur, "write_ops") -
		     (prev ? jnum(prev, "read_ops") + jnum(prev, "write_ops") : 0);
	double busy = jnum(cur, "busy_ns") - (prev ? jnum(prev, "busy_ns") : 0);

	put_s(o, "path", jstr(cur, "path"));
	put_s(o, "state", jstr(cur, "state"));
	if (h) {
		hist_add(h, jget(cur, "read_hist"), 1);
		hist_add(h, jget(cur, "write_hist"), 1);
		if (prev) {
			hist_add(h, jget(prev, "read_hist"), -1);
			hist_add(h, jget(prev, "write_hist"), -1);
		}
	}
	busy = busy > 0 ? busy / (dt * 1e9) : 0;
	put_d(o, "busy", busy > 1 ? 1 : busy);
	put_d(o, "read_mbps", rb > 0 ? rb / dt / 1e6 : 0);
	put_d(o, "write_mbps", wb > 0 ? wb / dt / 1e6 : 0);
	put_d(o, "iops", ops > 0 ? ops / dt : 0);
	put_d(o, "p50_us", h ? hist_q(h, 0.50) : 0);
	put_d(o, "p99_us", h ? hist_q(h, 0.99) : 0);
	free(h);
	return o;
}

/*
 * The interval object from two snapshots (@prev may be NULL: everything
 * since start). See the file comment; sessions also carry their TCP path
 * (snd_mss, rtt_us, retransmits over the interval) and their share of all
 * session bytes (ops when no bytes moved).
 */
static struct json_object *rates(struct json_object *cur, struct json_object *prev)
{
	struct json_object *out = json_object_new_object();
	struct json_object *sess = jget(cur, "sessions"), *ports = jget(cur, "portals");
	struct json_object *sa = json_object_new_array(), *pa = json_object_new_array();
	struct json_object *la = json_object_new_array(), *poa = json_object_new_array();
	struct json_object *tot = json_object_new_object();
	size_t ns = jlen(sess), np = jlen(ports);
	struct delta *sd = calloc(ns + 1, sizeof(*sd)), *pd = calloc(np + 1, sizeof(*pd));
	struct delta *all = calloc(1, sizeof(*all)), *ld = calloc(1, sizeof(*ld));
	double dt = prev ? (jnum(cur, "time_ns") - jnum(prev, "time_ns")) / 1e9 : 0;
	double total_b = 0, total_ops = 0;

	if (!out || !sa || !pa || !la || !poa || !tot || !sd || !pd || !all || !ld) {
		json_object_put(out);
		out = NULL;
		json_object_put(sa);
		json_object_put(pa);
		json_object_put(la);
		json_object_put(poa);
		json_object_put(tot);
		goto out;
	}
	if (dt <= 0)
		dt = 1e-9;
	put_d(out, "wall", jnum(cur, "wall"));
	put_d(out, "interval_s", dt);
	for (size_t i = 0; i < ns; i++) {
		struct json_object *s = jidx(sess, i);

		delta_of(&sd[i], s, prev ? find(jget(prev, "sessions"), s, SESSION_KEY) : NULL);
		total_b += delta_bytes(&sd[i]);
		total_ops += delta_ops(&sd[i]);
		delta_sum(all, &sd[i]);
		for (size_t p = 0; p < np; p++)
			if (!strcmp(jstr(jidx(ports, p), "name"), jstr(s, "portal_name")))
				delta_sum(&pd[p], &sd[i]);
	}
	put_rates(tot, all, dt);
	put_i(tot, "sessions", (int64_t)ns);
	json_object_object_add(out, "total", tot);
	for (size_t p = 0; p < np; p++) {
		struct json_object *po = json_object_new_object(), *pj = jidx(ports, p);
		int64_t n = 0;

		for (size_t i = 0; i < ns; i++)
			n += !strcmp(jstr(jidx(sess, i), "portal_name"), jstr(pj, "name"));
		put_cols(po, pj, PORTAL_COLS);
		put_i(po, "sessions", n);
		put_rates_share(po, &pd[p], dt, total_b, total_ops);
		json_object_array_add(pa, po);
	}
	json_object_object_add(out, "portals", pa);
	for (size_t i = 0; i < ns; i++) {
		struct json_object *s = jidx(sess, i), *so = json_object_new_object();
		struct json_object *tcp = jget(s, "tcp"), *ptcp = NULL, *ps;

		ps = prev ? find(jget(prev, "sessions"), s, SESSION_KEY) : NULL;
		ptcp = ps ? jget(ps, "tcp") : NULL;
		put_cols(so, s, SESSION_COLS);
		put_rates_share(so, &sd[i], dt, total_b, total_ops);
		if (tcp) {
			double segs = jnum(tcp, "segs_out") - (ptcp ? jnum(ptcp, "segs_out") : 0);
			double rtx = jnum(tcp, "total_retrans") - (ptcp ? jnum(ptcp, "total_retrans") : 0);

			put_i(so, "snd_mss", (int64_t)jnum(tcp, "snd_mss"));
			put_d(so, "rtt_us", jnum(tcp, "rtt_us"));
			put_d(so, "retrans_pct", segs > 0 && rtx > 0 ? 100.0 * rtx / segs : 0);
		}
		json_object_array_add(sa, so);
	}
	json_object_object_add(out, "sessions", sa);
	for (size_t i = 0; i < jlen(jget(cur, "luns")); i++) {
		struct json_object *l = jidx(jget(cur, "luns"), i), *lo = json_object_new_object();
		struct json_object *ex = jget(l, "exported_as");

		memset(ld, 0, sizeof(*ld));
		delta_of(ld, l, prev ? find(jget(prev, "luns"), l, LUN_KEY) : NULL);
		put_s(lo, "pool", jstr(l, "pool"));
		put_s(lo, "volume", jstr(l, "volume"));
		json_object_object_add(lo, "exported_as", json_object_get(ex));
		put_rates(lo, ld, dt);
		json_object_array_add(la, lo);
	}
	json_object_object_add(out, "luns", la);
	for (size_t i = 0; i < jlen(jget(cur, "pools")); i++) {
		struct json_object *p = jidx(jget(cur, "pools"), i), *po = json_object_new_object();
		struct json_object *pp = prev ? find(jget(prev, "pools"), p, NAME_KEY) : NULL;
		struct json_object *ma = json_object_new_array(), *v;

		put_s(po, "name", jstr(p, "name"));
		put_s(po, "level", jstr(p, "level"));
		put_s(po, "state", jstr(p, "state"));
		put_d(po, "rebuild_progress", jnum(p, "rebuild_progress"));
		if ((v = jget(p, "rebuild_eta_s")))
			put_d(po, "rebuild_eta_s", json_object_get_double(v));
		if ((v = jget(p, "sync_progress")))
			put_d(po, "sync_progress", json_object_get_double(v));
		for (size_t m = 0; m < jlen(jget(p, "members")); m++) {
			struct json_object *mj = jidx(jget(p, "members"), m);

			json_object_array_add(ma, member_rates(mj, pp ? find(jget(pp, "members"),
								       mj, PATH_KEY) : NULL, dt));
		}
		json_object_object_add(po, "members", ma);
		json_object_array_add(poa, po);
	}
	json_object_object_add(out, "pools", poa);
out:
	free(sd);
	free(pd);
	free(all);
	free(ld);
	return out;
}

/* ---- human output ---- */

static const char *ms(double us, char *buf, size_t len)
{
	if (us <= 0)
		snprintf(buf, len, "-");
	else if (us < 1000)
		snprintf(buf, len, "%.0fus", us);
	else
		snprintf(buf, len, "%.1fms", us / 1000);
	return buf;
}

static void rate_cols(FILE *f, struct json_object *o)
{
	char a[32], b[32];

	fprintf(f, "%8.1f %8.1f %8.0f %8s %8s %6.1f", jnum(o, "read_mbps"), jnum(o, "write_mbps"),
		jnum(o, "iops"), ms(jnum(o, "p50_us"), a, sizeof(a)), ms(jnum(o, "p99_us"), b, sizeof(b)),
		jnum(o, "qd"));
}

/* One row of top: @lbl cut to the label column, @o's rate columns, and
 * its share when @share. */
static void top_row(FILE *f, const char *lbl, struct json_object *o, bool share)
{
	fprintf(f, "%-44.44s ", lbl);
	rate_cols(f, o);
	if (share)
		fprintf(f, " %5.0f%%", 100 * jnum(o, "share"));
	fprintf(f, "\n");
}

static void clock_str(double wall, char *buf, size_t len)
{
	time_t t = (time_t)wall;
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* stats --watch without --json, and the progress line: one line. */
static void watch_line(FILE *f, struct json_object *r)
{
	struct json_object *t = jget(r, "total"), *ports = jget(r, "portals");
	struct json_object *pools = jget(r, "pools");
	char when[16];

	clock_str(jnum(r, "wall"), when, sizeof(when));
	fprintf(f, "%s read %.1f write %.1f MB/s %.0f IOPS p50 %.0f p99 %.0f us qd %.1f", when,
		jnum(t, "read_mbps"), jnum(t, "write_mbps"), jnum(t, "iops"), jnum(t, "p50_us"),
		jnum(t, "p99_us"), jnum(t, "qd"));
	for (size_t i = 0; i < jlen(ports); i++) {
		struct json_object *p = jidx(ports, i);

		fprintf(f, " | %s %.1f MB/s %.0f%%", jstr(p, "name"), jnum(p, "mbps"),
			100 * jnum(p, "share"));
	}
	for (size_t i = 0; i < jlen(pools); i++) {
		struct json_object *p = jidx(pools, i);

		fprintf(f, " | %s %s", jstr(p, "name"), jstr(p, "state"));
		if (!strcmp(jstr(p, "state"), "rebuilding"))
			fprintf(f, " %.0f%%", 100 * jnum(p, "rebuild_progress"));
	}
}

static void top_screen(FILE *f, struct json_object *r, const char *sock)
{
	struct json_object *v;
	char when[16], a[32], b[32];

	clock_str(jnum(r, "wall"), when, sizeof(when));
	fprintf(f, "\033[H\033[2Jrtgtctl top  %s  every %.1f s  %s  (q quits)\n\n", when,
		jnum(r, "interval_s"), sock);
	fprintf(f, "%-44s %8s %8s %8s %8s %8s %6s %6s\n", "", "rd MB/s", "wr MB/s", "IOPS",
		"p50", "p99", "qd", "share");
	top_row(f, "total", jget(r, "total"), false);
	fprintf(f, "\n");
	v = jget(r, "portals");
	for (size_t i = 0; i < jlen(v); i++) {
		struct json_object *p = jidx(v, i);
		char lbl[128];

		snprintf(lbl, sizeof(lbl), "portal %s %s (%d sess)", jstr(p, "name"), jstr(p, "listen"),
			 (int)jnum(p, "sessions"));
		top_row(f, lbl, p, true);
	}
	v = jget(r, "sessions");
	if (jlen(v))
		fprintf(f, "\n");
	for (size_t i = 0; i < jlen(v); i++) {
		struct json_object *s = jidx(v, i);
		char lbl[256];

		snprintf(lbl, sizeof(lbl), "%s %s", jstr(s, "peer"), jstr(s, "portal_name"));
		top_row(f, lbl, s, true);
		fprintf(f, "    %s -> %s  tsih %d  mss %d rtt %s\n", jstr(s, "initiator"),
			jstr(s, "target"), (int)jnum(s, "tsih"), (int)jnum(s, "snd_mss"),
			ms(jnum(s, "rtt_us"), a, sizeof(a)));
	}
	v = jget(r, "luns");
	if (jlen(v))
		fprintf(f, "\n");
	for (size_t i = 0; i < jlen(v); i++) {
		struct json_object *l = jidx(v, i);
		char lbl[256];

		snprintf(lbl, sizeof(lbl), "lun %s/%s", jstr(l, "pool"), jstr(l, "volume"));
		top_row(f, lbl, l, false);
	}
	v = jget(r, "pools");
	for (size_t i = 0; i < jlen(v); i++) {
		struct json_object *p = jidx(v, i), *m = jget(p, "members");

		fprintf(f, "\npool %s %s %s", jstr(p, "name"), jstr(p, "level"), jstr(p, "state"));
		if (!strcmp(jstr(p, "state"), "rebuilding")) {
			fprintf(f, "  rebuild %.1f%%", 100 * jnum(p, "rebuild_progress"));
			if (jget(p, "rebuild_eta_s"))
				fprintf(f, " eta %.0f s", jnum(p, "rebuild_eta_s"));
		}
		if (jget(p, "sync_progress"))
			fprintf(f, "  initial sync %.1f%%", 100 * jnum(p, "sync_progress"));
		fprintf(f, "\n    %-36s %-10s %5s %8s %8s %8s %8s %8s\n", "member", "state", "busy",
			"rd MB/s", "wr MB/s", "IOPS", "p50", "p99");
		for (size_t k = 0; k < jlen(m); k++) {
			struct json_object *mo = jidx(m, k);

			fprintf(f, "    %-36.36s %-10s %4.0f%% %8.1f %8.1f %8.0f %8s %8s\n",
				jstr(mo, "path"), jstr(mo, "state"), 100 * jnum(mo, "busy"),
				jnum(mo, "read_mbps"), jnum(mo, "write_mbps"), jnum(mo, "iops"),
				ms(jnum(mo, "p50_us"), a, sizeof(a)), ms(jnum(mo, "p99_us"), b, sizeof(b)));
		}
	}
	fflush(f);
}

/* ---- paths ---- */

static void warn(struct json_object *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct json_object *arr, const char *fmt, ...)
{
	char buf[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(arr, json_object_new_string(buf));
}

static struct json_object *target_of(struct json_object *snap, const char *iqn)
{
	struct json_object *t = jget(snap, "targets");

	for (size_t i = 0; i < jlen(t); i++)
		if (!strcmp(jstr(jidx(t, i), "iqn"), iqn))
			return jidx(t, i);
	return NULL;
}

/*
 * The warnings for one initiator, from its sessions in @cur (with their
 * interval rates in @rs, same order) into @w. Each begins with the words
 * the README and the tests look for.
 */
static void path_warnings(struct json_object *cur, struct json_object *sess,
			  struct json_object *rs, const char *ini, struct json_object *w)
{
	size_t n = jlen(sess);
	int64_t mss0 = -1;
	bool mss_differs = false;

	for (size_t i = 0; i < n; i++) {
		struct json_object *s = jidx(sess, i), *r = jidx(rs, i), *tcp = jget(s, "tcp");
		struct json_object *par = jget(s, "params");
		const char *tgt = jstr(s, "target");
		unsigned same_portal = 0, to_target = 0;
		bool first_of_target = true, first_of_portal = true;

		for (size_t k = 0; k < n; k++) {
			struct json_object *o = jidx(sess, k);

			if (strcmp(jstr(o, "target"), tgt))
				continue;
			to_target++;
			if (k < i)
				first_of_target = false;
			if (!strcmp(jstr(o, "portal_name"), jstr(s, "portal_name"))) {
				same_portal++;
				if (k < i)
					first_of_portal = false;
			}
		}
		if (same_portal > 1 && first_of_portal)
			warn(w, "two sessions of one initiator through one portal: %u sessions to %s "
				"arrive on %s (%s); give each session its own portal (NIC)",
			     same_portal, tgt, jstr(s, "portal_name"), jstr(s, "portal"));
		if (first_of_target) {
			struct json_object *t = target_of(cur, tgt);
			size_t tp = jlen(jget(t, "portals"));
			double sum = 0, top = 0;
			const char *top_portal = "";

			if (to_target == 1 && tp > 1)
				warn(w, "one path only: the initiator reaches %s through %s alone, the "
					"target listens on %zu portals; log in through each",
				     tgt, jstr(s, "portal_name"), tp);
			for (size_t k = 0; k < n; k++) {
				struct json_object *o = jidx(sess, k), *ro = jidx(rs, k);
				double b = jnum(ro, "mbps");

				if (strcmp(jstr(o, "target"), tgt))
					continue;
				sum += b;
				if (b > top) {
					top = b;
					top_portal = jstr(o, "portal_name");
				}
			}
			/* at least 1 MB/s moved: an idle pair says nothing */
			if (to_target > 1 && sum >= 1.0 && top >= 0.95 * sum)
				warn(w, "all I/O on one path (failover-only MPIO policy?): %.0f%% of the "
					"I/O to %s went through %s over the last interval; use round robin",
				     100 * top / sum, tgt, top_portal);
		}
		if (tcp) {
			int64_t mss = (int64_t)jnum(tcp, "snd_mss");

			if (mss0 < 0)
				mss0 = mss;
			else if (mss != mss0)
				mss_differs = true;
		}
		if (jnum(r, "retrans_pct") > 1.0)
			warn(w, "retransmits above 1%% on a path: %.1f%% of the segments sent on %s -> %s "
				"were retransmitted over the last interval",
			     jnum(r, "retrans_pct"), jstr(s, "local"), jstr(s, "peer"));
		if (!strcmp(jstr(par, "DataDigest"), "CRC32C"))
			warn(w, "data digest on (CPU cost): session %s via %s checksums every data byte",
			     jstr(s, "isid"), jstr(s, "portal_name"));
		if (jnum(par, "MaxBurstLength") > 0 && jnum(par, "MaxBurstLength") < ONE_MIB)
			warn(w, "initiator's MaxBurstLength small for 1 MiB I/O: %.0f bytes on session "
				"%s via %s, a 1 MiB write takes %.0f R2T round trips",
			     jnum(par, "MaxBurstLength"), jstr(s, "isid"), jstr(s, "portal_name"),
			     ceil(ONE_MIB / jnum(par, "MaxBurstLength")));
	}
	if (mss_differs) {
		char list[512] = "";
		size_t off = 0;

		for (size_t i = 0; i < n && off < sizeof(list) - 64; i++) {
			struct json_object *s = jidx(sess, i);

			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s %d", i ? ", " : "",
						jstr(s, "portal_name"),
						(int)jnum(jget(s, "tcp"), "snd_mss"));
		}
		warn(w, "MSS differs between paths: %s (jumbo frames on one link only? check the MTU "
			"of every NIC and switch port on the way)", list);
	}
	(void)ini;
}

static int paths_run(const char *sock, const struct live_opts *o)
{
	struct json_object *a, *b, *r, *out, *inis;
	struct json_object *sess, *rsess;
	int rc;
	struct timespec ts;

	a = snapshot(sock, &rc);
	if (!a)
		return rc;
	ts.tv_sec = (time_t)o->interval_s;
	ts.tv_nsec = (long)((o->interval_s - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	b = snapshot(sock, &rc);
	if (!b) {
		json_object_put(a);
		return rc;
	}
	r = rates(b, a);
	out = json_object_new_object();
	inis = json_object_new_array();
	if (!r || !out || !inis) {
		fprintf(stderr, "rtgtctl: out of memory\n");
		rc = EXIT_UNREACHABLE;
		goto done;
	}
	put_d(out, "interval_s", jnum(r, "interval_s"));
	sess = jget(b, "sessions");
	rsess = jget(r, "sessions");
	for (size_t i = 0; i < jlen(sess); i++) {
		const char *ini = jstr(jidx(sess, i), "initiator");
		struct json_object *io, *ss, *rs, *w, *list;
		bool seen = false;

		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(jstr(jidx(sess, k), "initiator"), ini);
		if (seen)
			continue;
		io = json_object_new_object();
		ss = json_object_new_array();
		rs = json_object_new_array();
		w = json_object_new_array();
		list = json_object_new_array();
		for (size_t k = i; k < jlen(sess); k++) {
			struct json_object *s = jidx(sess, k), *rk = jidx(rsess, k), *e, *par;

			if (strcmp(jstr(s, "initiator"), ini))
				continue;
			json_object_array_add(ss, json_object_get(s));
			json_object_array_add(rs, json_object_get(rk));
			par = jget(s, "params");
			e = json_object_new_object();
			put_cols(e, s, PATH_COLS);
			json_object_object_add(e, "tcp", json_object_get(jget(s, "tcp")));
			put_d(e, "retrans_pct", jnum(rk, "retrans_pct"));
			put_s(e, "header_digest", jstr(par, "HeaderDigest"));
			put_s(e, "data_digest", jstr(par, "DataDigest"));
			put_i(e, "max_recv_dsl", (int64_t)jnum(par, "MaxRecvDataSegmentLength"));
			put_i(e, "max_xmit_dsl", (int64_t)jnum(par, "MaxXmitDataSegmentLength"));
			put_i(e, "max_burst", (int64_t)jnum(par, "MaxBurstLength"));
			put_i(e, "first_burst", (int64_t)jnum(par, "FirstBurstLength"));
			put_d(e, "mbps", jnum(rk, "mbps"));
			put_d(e, "iops", jnum(rk, "iops"));
			json_object_array_add(list, e);
		}
		path_warnings(b, ss, rs, ini, w);
		/* shares within the initiator */
		{
			double sum = 0, ops = 0;

			for (size_t k = 0; k < jlen(list); k++) {
				sum += jnum(jidx(list, k), "mbps");
				ops += jnum(jidx(list, k), "iops");
			}
			for (size_t k = 0; k < jlen(list); k++) {
				struct json_object *e = jidx(list, k);

				put_d(e, "share", sum > 0 ? jnum(e, "mbps") / sum
						   : ops > 0 ? jnum(e, "iops") / ops : 0);
			}
		}
		put_s(io, "initiator", ini);
		json_object_object_add(io, "sessions", list);
		json_object_object_add(io, "warnings", w);
		json_object_array_add(inis, io);
		json_object_put(ss);
		json_object_put(rs);
	}
	json_object_object_add(out, "initiators", inis);
	inis = NULL;
	if (o->json) {
		printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		struct json_object *l = jget(out, "initiators");

		if (!jlen(l))
			printf("no sessions\n");
		for (size_t i = 0; i < jlen(l); i++) {
			struct json_object *io = jidx(l, i), *ss = jget(io, "sessions");
			struct json_object *w = jget(io, "warnings");

			printf("%s%s  (%zu session%s, shares over %.1f s)\n", i ? "\n" : "",
			       jstr(io, "initiator"), jlen(ss), jlen(ss) == 1 ? "" : "s",
			       jnum(out, "interval_s"));
			for (size_t k = 0; k < jlen(ss); k++) {
				struct json_object *e = jidx(ss, k), *t = jget(e, "tcp");
				char a1[32];

				printf("  %-7s %s <- %s  %s tsih %d\n", jstr(e, "portal_name"),
				       jstr(e, "local"), jstr(e, "peer"), jstr(e, "target"),
				       (int)jnum(e, "tsih"));
				if (t)
					printf("          mss %d (pmtu %d)  rtt %s  retrans %d (%.2f%% last "
					       "interval)  cwnd %d\n",
					       (int)jnum(t, "snd_mss"), (int)jnum(t, "pmtu"),
					       ms(jnum(t, "rtt_us"), a1, sizeof(a1)),
					       (int)jnum(t, "total_retrans"), jnum(e, "retrans_pct"),
					       (int)jnum(t, "snd_cwnd"));
				printf("          digests header %s data %s  MaxRecvDSL %d/%d  burst "
				       "max %d first %d\n",
				       jstr(e, "header_digest"), jstr(e, "data_digest"),
				       (int)jnum(e, "max_recv_dsl"), (int)jnum(e, "max_xmit_dsl"),
				       (int)jnum(e, "max_burst"), (int)jnum(e, "first_burst"));
				printf("          %.1f MB/s %.0f IOPS  share %.0f%%\n", jnum(e, "mbps"),
				       jnum(e, "iops"), 100 * jnum(e, "share"));
			}
			for (size_t k = 0; k < jlen(w); k++)
				printf("  warning: %s\n", json_object_get_string(jidx(w, k)));
			if (!jlen(w))
				printf("  no warnings\n");
		}
	}
	rc = fflush(stdout) ? EXIT_DAEMON_ERR : 0;
done:
	json_object_put(inis);
	json_object_put(out);
	json_object_put(r);
	json_object_put(a);
	json_object_put(b);
	return rc;
}

/* ---- top and stats --watch ---- */

/* Sleeps @s seconds; true when q was typed (top on a terminal). */
static bool wait_or_key(double s, bool keys)
{
	uint64_t start = conf_mono_ns();

	for (;;) {
		double left;
		struct pollfd p = { .fd = 0, .events = POLLIN };
		int n;

		left = s - (double)(conf_mono_ns() - start) / 1e9;
		if (left <= 0 || stop_flag)
			return false;
		n = poll(&p, keys ? 1 : 0, (int)(left * 1000) + 1);
		if (n > 0 && keys) {
			char c;

			if (read(0, &c, 1) == 1 && (c == 'q' || c == 'Q'))
				return true;
		}
	}
}

static int watch_run(const char *sock, const char *cmd, const struct live_opts *o)
{
	bool top = !strcmp(cmd, "top");
	bool keys = top && isatty(0);
	bool progress = !top && o->json && !isatty(1);
	struct termios saved, raw;
	struct json_object *prev, *cur;
	long shown = 0;
	int rc;

	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	if (keys && tcgetattr(0, &saved) == 0) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		tcsetattr(0, TCSANOW, &raw);
	} else {
		keys = false;
	}
	prev = snapshot(sock, &rc);
	while (prev && !stop_flag) {
		struct json_object *r;

		if (wait_or_key(o->interval_s, keys))
			break;
		if (stop_flag)
			break;
		cur = snapshot(sock, &rc);
		if (!cur)
			break;
		r = rates(cur, prev);
		json_object_put(prev);
		prev = cur;
		if (!r) {
			rc = EXIT_UNREACHABLE;
			break;
		}
		if (top) {
			top_screen(stdout, r, sock);
		} else if (o->json) {
			printf("%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
		} else {
			watch_line(stdout, r);
			printf("\n");
		}
		if (fflush(stdout)) {
			json_object_put(r);
			rc = EXIT_DAEMON_ERR;
			break;
		}
		shown++;
		if (progress) {
			/* a recording run says it is alive on stderr */
			fprintf(stderr, "%s[%ld] ", isatty(2) ? "\r\033[K" : "", shown);
			watch_line(stderr, r);
			fprintf(stderr, isatty(2) ? "" : "\n");
			fflush(stderr);
		}
		json_object_put(r);
		if (o->count && shown >= o->count)
			break;
	}
	if (progress && isatty(2))
		fprintf(stderr, "\n");
	json_object_put(prev);
	if (keys)
		tcsetattr(0, TCSANOW, &saved);
	return rc;
}

int rtgtctl_live(const char *sock, const char *cmd, const struct live_opts *o)
{
	if (!strcmp(cmd, "paths"))
		return paths_run(sock, o);
	return watch_run(sock, cmd, o);
}
