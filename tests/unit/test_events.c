/*
 * tests/unit/test_events.c - target/daemon/events.c: the ring (seq order,
 * reading from a seq, drop-oldest with a counter, a reader that followed an
 * earlier daemon), the hook (the event's JSON on stdin and its kind as
 * argv[1], exactly once per event, in order; a failing or missing hook
 * counted; a hanging hook and what it started killed at the timeout while
 * posting stays fast), a reload's new hook, raid's events as JSON, and
 * refused logins (bounded per window).
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "raid/raid.h"
#include "target/daemon/events.h"
#include "target/iscsi/iscsi.h"
#include "tests/lib/ckmain.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/rtgt-events-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A hook script @name in dir with @body; returns its path (static). */
static const char *script(const char *name, const char *body)
{
	static char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0755), 0);
	return path;
}

static struct json_object *read_events(struct events *e, uint64_t since, unsigned max)
{
	struct json_object *r = json_object_new_object();

	ck_assert_int_eq(events_json(e, since, max, r), 0);
	return r;
}

static int64_t geti(struct json_object *o, const char *k)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s in %s", k,
		      json_object_to_json_string(o));
	return json_object_get_int64(v);
}

static const char *gets(struct json_object *o, const char *k)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s in %s", k,
		      json_object_to_json_string(o));
	return json_object_get_string(v);
}

static void wait_stat(struct events *e, uint64_t *field_of(struct events_stats *), uint64_t want,
		      double max_s)
{
	struct events_stats st;
	double t0 = now_s();

	do {
		events_get_stats(e, &st);
		if (*field_of(&st) >= want)
			return;
		usleep(10000);
	} while (now_s() - t0 < max_s);
	ck_abort_msg("counter stayed at %llu, wanted %llu", (unsigned long long)*field_of(&st),
		     (unsigned long long)want);
}

static uint64_t *f_runs(struct events_stats *s) { return &s->hook_runs; }
static uint64_t *f_timeouts(struct events_stats *s) { return &s->hook_timeouts; }
static uint64_t *f_failures(struct events_stats *s) { return &s->hook_failures; }

/* Lines in @path (0 when it does not exist). */
static unsigned count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

START_TEST(t01_ring_order_and_since)
{
	struct events *e;
	struct json_object *r, *arr, *ev, *fields = json_object_new_object();

	ck_assert_int_eq(events_create(NULL, 1000, &e), 0);
	json_object_object_add(fields, "pool", json_object_new_string("tank"));
	events_post(e, "member_faulty", "error", fields, "pool %s: member %d faulty", "tank", 1);
	events_post(e, "rebuild_started", "info", NULL, "two");
	events_post(e, "rebuild_done", "info", NULL, "three");
	r = read_events(e, 0, 100);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 3);
	ev = json_object_array_get_idx(arr, 0);
	ck_assert_int_eq(geti(ev, "seq"), 1);
	ck_assert_str_eq(gets(ev, "kind"), "member_faulty");
	ck_assert_str_eq(gets(ev, "severity"), "error");
	ck_assert_str_eq(gets(ev, "pool"), "tank");
	ck_assert_str_eq(gets(ev, "message"), "pool tank: member 1 faulty");
	ck_assert_uint_eq(strlen(gets(ev, "time")), strlen("2026-12-02T06:35:24.124Z"));
	ck_assert_str_eq(gets(json_object_array_get_idx(arr, 2), "kind"), "rebuild_done");
	ck_assert_int_eq(geti(r, "next"), 4);
	ck_assert_int_eq(geti(r, "dropped"), 0);
	json_object_put(r);
	/* from a seq, and at most max */
	r = read_events(e, 1, 1);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 1);
	ck_assert_int_eq(geti(json_object_array_get_idx(arr, 0), "seq"), 2);
	ck_assert_int_eq(geti(r, "next"), 3);
	json_object_put(r);
	/* nothing new */
	r = read_events(e, 3, 100);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 0);
	ck_assert_int_eq(geti(r, "next"), 4);
	json_object_put(r);
	/* a seq beyond the last: the reader followed an earlier daemon */
	r = read_events(e, 1000, 100);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 3);
	json_object_put(r);
	events_destroy(e);
}
END_TEST

/* More than EVENTS_KEEP: the oldest go, counted; posting never waits. */
START_TEST(t02_drop_oldest)
{
	struct events *e;
	struct json_object *r, *arr;
	double worst = 0;

	ck_assert_int_eq(events_create(NULL, 1000, &e), 0);
	for (unsigned i = 0; i < EVENTS_KEEP + 5; i++) {
		double t0 = now_s();

		events_post(e, "scrub_done", "info", NULL, "event %u", i);
		if (now_s() - t0 > worst)
			worst = now_s() - t0;
	}
	ck_assert_msg(worst < 0.05, "one post took %.3f s", worst);
	r = read_events(e, 0, 2 * EVENTS_KEEP);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), EVENTS_KEEP);
	ck_assert_int_eq(geti(json_object_array_get_idx(arr, 0), "seq"), 6);
	ck_assert_str_eq(gets(json_object_array_get_idx(arr, 0), "message"), "event 5");
	ck_assert_int_eq(geti(r, "dropped"), 5);
	ck_assert_int_eq(geti(r, "posted"), EVENTS_KEEP + 5);
	ck_assert_int_eq(geti(r, "next"), EVENTS_KEEP + 6);
	json_object_put(r);
	/* a reader behind the ring starts at the oldest kept */
	r = read_events(e, 2, 1);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_int_eq(geti(json_object_array_get_idx(arr, 0), "seq"), 6);
	json_object_put(r);
	events_destroy(e);
}
END_TEST

/* Each event runs the hook once, in order, with its JSON line on stdin and
 * its kind as the argument. */
START_TEST(t03_hook_gets_json)
{
	struct events *e;
	char out[160], body[512], line[EVENTS_MAX_JSON + 2];
	struct json_object *o, *fields = json_object_new_object();
	FILE *f;

	snprintf(out, sizeof(out), "%s/got", dir);
	snprintf(body, sizeof(body), "printf '%%s ' \"$1\" >> %s; cat >> %s", out, out);
	ck_assert_int_eq(events_create(script("hook", body), 5000, &e), 0);
	json_object_object_add(fields, "pool", json_object_new_string("tank"));
	json_object_object_add(fields, "member", json_object_new_string("/dev/sdb"));
	events_post(e, "member_faulty", "error", fields, "first");
	events_post(e, "pool_failed", "critical", NULL, "second \"quoted\"");
	wait_stat(e, f_runs, 2, 10);
	for (double t0 = now_s(); count_lines(out) < 2 && now_s() - t0 < 10;)
		usleep(10000);
	events_destroy(e);   /* waits for a running hook */
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(strncmp(line, "member_faulty {", 15), 0);
	o = json_tokener_parse(line + 14);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(geti(o, "seq"), 1);
	ck_assert_str_eq(gets(o, "member"), "/dev/sdb");
	ck_assert_str_eq(gets(o, "severity"), "error");
	json_object_put(o);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(strncmp(line, "pool_failed {", 13), 0);
	o = json_tokener_parse(line + 12);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(geti(o, "seq"), 2);
	ck_assert_str_eq(gets(o, "message"), "second \"quoted\"");
	json_object_put(o);
	ck_assert_ptr_null(fgets(line, sizeof(line), f));
	fclose(f);
}
END_TEST

/* A hook that exits non-zero, one killed by a signal, one that does not
 * exist: counted as failures, the next event still runs. */
START_TEST(t04_hook_failures)
{
	struct events *e;
	struct events_stats st;
	char missing[160];

	ck_assert_int_eq(events_create(script("fail", "exit 3"), 5000, &e), 0);
	events_post(e, "a", "info", NULL, "x");
	wait_stat(e, f_failures, 1, 10);
	ck_assert_int_eq(events_set_exec(e, script("sig", "kill -9 $$"), 5000), 0);
	events_post(e, "b", "info", NULL, "x");
	wait_stat(e, f_failures, 2, 10);
	snprintf(missing, sizeof(missing), "%s/nope", dir);
	ck_assert_int_eq(events_set_exec(e, missing, 5000), 0);
	events_post(e, "c", "info", NULL, "x");
	wait_stat(e, f_failures, 3, 10);
	ck_assert_int_eq(events_set_exec(e, script("ok", "cat > /dev/null"), 5000), 0);
	events_post(e, "d", "info", NULL, "x");
	wait_stat(e, f_runs, 4, 10);
	usleep(300000);
	events_get_stats(e, &st);
	ck_assert_uint_eq(st.hook_failures, 3);
	ck_assert_uint_eq(st.hook_timeouts, 0);
	events_destroy(e);
}
END_TEST

/* A hook that hangs (and has started a child of its own) is killed with
 * its process group after the timeout; posting meanwhile stays fast; the
 * next event runs the hook again. */
START_TEST(t05_hook_timeout)
{
	struct events *e;
	struct events_stats st;
	char pidfile[160], body[640], stat_path[64], buf[256];
	double t0, worst = 0;
	long child = 0;
	FILE *f;

	/* The pid goes to a temporary file renamed into place, so the file is
	 * absent or complete, never empty: killed between the shell's open and
	 * its write (a loaded machine), it used to be read empty. A timeout of
	 * 1.5 s leaves the shell time to get that far even then. */
	snprintf(pidfile, sizeof(pidfile), "%s/child.pid", dir);
	snprintf(body, sizeof(body), "sleep 60 & echo $! > %s.tmp && mv %s.tmp %s; wait", pidfile,
		 pidfile, pidfile);
	ck_assert_int_eq(events_create(script("hang", body), 1500, &e), 0);
	t0 = now_s();
	events_post(e, "hang", "info", NULL, "x");
	for (unsigned i = 0; i < 200; i++) {
		double p0 = now_s();

		events_post(e, "more", "info", NULL, "post %u while the hook hangs", i);
		if (now_s() - p0 > worst)
			worst = now_s() - p0;
		usleep(1000);
	}
	ck_assert_msg(worst < 0.05, "one post took %.3f s while the hook hung", worst);
	wait_stat(e, f_timeouts, 1, 10);
	ck_assert_msg(now_s() - t0 >= 1.49, "killed after %.3f s, before the timeout", now_s() - t0);
	/* its child went with it (killed: gone, or a zombie of whoever adopted it) */
	f = fopen(pidfile, "r");
	ck_assert_msg(f != NULL, "the hook did not publish its child's pid within its 1.5 s");
	ck_assert_int_eq(fscanf(f, "%ld", &child), 1);
	fclose(f);
	snprintf(stat_path, sizeof(stat_path), "/proc/%ld/stat", child);
	for (t0 = now_s(); now_s() - t0 < 5; usleep(10000)) {
		f = fopen(stat_path, "r");
		if (!f)
			break;
		buf[0] = '\0';
		ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
		fclose(f);
		if (strstr(buf, ") Z "))
			break;
	}
	ck_assert_msg(now_s() - t0 < 5, "the hook's child %ld still runs: %s", child, buf);
	events_destroy(e);   /* the other hook runs are killed at once, too */
	(void)st;
}
END_TEST

/* raid's events become JSON with their fields. */
START_TEST(t06_raid_events)
{
	struct events *e;
	struct json_object *r, *arr, *ev;

	ck_assert_int_eq(events_create(NULL, 1000, &e), 0);
	events_raid_fn(e, &(struct raid_event){ .kind = RAID_EV_MEMBER_FAULTY, .pool = "tank",
						.member = "var/d1.img", .slot = 1, .err = -EIO,
						.detail = "write error", .pool_state = "degraded" });
	events_raid_fn(e, &(struct raid_event){ .kind = RAID_EV_SCRUB_DONE, .pool = "tank",
						.slot = -1, .count = 2, .complete = true,
						.pool_state = "optimal" });
	r = read_events(e, 0, 10);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ev = json_object_array_get_idx(arr, 0);
	ck_assert_str_eq(gets(ev, "kind"), "member_faulty");
	ck_assert_str_eq(gets(ev, "severity"), "error");
	ck_assert_str_eq(gets(ev, "member"), "var/d1.img");
	ck_assert_int_eq(geti(ev, "slot"), 1);
	ck_assert_str_eq(gets(ev, "reason"), "write error");
	ck_assert_str_eq(gets(ev, "error"), strerror(EIO));
	ck_assert_str_eq(gets(ev, "pool_state"), "degraded");
	ck_assert_str_eq(gets(ev, "message"),
			 "pool tank: member var/d1.img faulty: write error: Input/output error");
	ev = json_object_array_get_idx(arr, 1);
	ck_assert_str_eq(gets(ev, "kind"), "scrub_done");
	ck_assert_str_eq(gets(ev, "severity"), "warning");
	ck_assert_int_eq(geti(ev, "mismatches"), 2);
	ck_assert(!json_object_object_get_ex(ev, "slot", NULL));
	json_object_put(r);
	events_destroy(e);
}
END_TEST

/* Refused logins become login_failed events, at most EVENTS_LOGIN_BURST a
 * window; the next one after the window says how many were left out. */
START_TEST(t07_login_failed_bounded)
{
	struct events *e;
	struct json_object *r, *arr, *ev;
	const struct iscsi_login_event le = { .initiator = "iqn.2026-11.org.x:init", .target = "?",
					      .portal = "nic1", .peer = "127.0.0.1:5000",
					      .reason = "target not found", .status = 0x0203 };

	ck_assert_int_eq(events_create(NULL, 1000, &e), 0);
	for (unsigned i = 0; i < EVENTS_LOGIN_BURST + 30; i++)
		events_login_fn(e, &le);
	r = read_events(e, 0, 1000);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), EVENTS_LOGIN_BURST);
	ev = json_object_array_get_idx(arr, 0);
	ck_assert_str_eq(gets(ev, "kind"), "login_failed");
	ck_assert_str_eq(gets(ev, "reason"), "target not found");
	ck_assert_str_eq(gets(ev, "initiator"), "iqn.2026-11.org.x:init");
	ck_assert_str_eq(gets(ev, "peer"), "127.0.0.1:5000");
	ck_assert_int_eq(geti(ev, "status"), 0x0203);
	json_object_put(r);
	events_destroy(e);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_ring_order_and_since", t01_ring_order_and_since),
		CK_CASE("02_drop_oldest", t02_drop_oldest),
		CK_CASE("03_hook_gets_json", t03_hook_gets_json),
		CK_CASE("04_hook_failures", t04_hook_failures),
		CK_CASE("05_hook_timeout", t05_hook_timeout),
		CK_CASE("06_raid_events", t06_raid_events),
		CK_CASE("07_login_failed_bounded", t07_login_failed_bounded),
	};

	signal(SIGPIPE, SIG_IGN);
	return ck_main(&(struct ck_suite_def){ "events", CK_CASES(cases), .setup = setup,
					       .teardown = teardown, .timeout = 60 });
}
