/*
 * tests/net/test_net_events.c - events, alert hooks, member health and the
 * Prometheus endpoint of a real bin/rtgtd (target/daemon/events.c,
 * health.c, metrics.c), driven with libiscsi, bin/rtgtctl and curl.
 *
 * 01 daemon.event_exec: failing a member of a raid5 with a spare, its
 *    rebuild, and a scrub over a mismatch injected into a member file each
 *    run the hook exactly once per event, in order, with the JSON the test
 *    expects (kind, member, slot, pool state, mismatches); `rtgtctl events
 *    --json` lists the same events.
 * 02 a hook that hangs (and has started a child) is killed with its child
 *    after daemon.event_exec_timeout, once per event; 4 KiB write+read p99
 *    latency measured while hooks hang stays near the p99 measured just
 *    before (both printed).
 * 03 `rtgtctl events --follow --json` prints an event (a refused login,
 *    with its reason) within a second of it happening; `rtgtctl events`
 *    text lists it.
 * 04 daemon.metrics scraped with curl: every family has # HELP and # TYPE
 *    before its samples, histograms are cumulative with +Inf = _count,
 *    LUN and member byte counters grow by what the test wrote, pool state
 *    and rebuild progress are there; any other path is 404, a request over
 *    8 KiB is 431 (tests/net/test_net_metrics.c has the rest of the HTTP
 *    side).
 * 05 members on loop devices (skipped, with the reason, where losetup
 *    cannot attach): the real smartctl says "unavailable" in status, not an
 *    error; with the smartctl stand-in (tests/data/smartctl) and
 *    health_fail = "spare" a member whose SMART says FAILED is reported
 *    (member_health) and replaced by the spare, which gets a copy of it
 *    while it still serves (replace_started, health_replace, replace_done:
 *    the pool is never degraded, no member_faulty); status shows the other
 *    member's temperature and sectors.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/raw_login.h"
#include "tests/lib/rtgtctl_json.h"

#define DATA_OFF (1u << 20)   /* raid/README.md: member data starts at 1 MiB */
#define CHUNK    65536u
#define WAIT_MS  60000

static struct harness_daemon D;
static char loops[3][256];     /* loop devices attached by 05 */
/* A failed check _exit()s the forked case without its teardown: every
 * attached loop device is also listed here, and main() detaches them. */
static char loop_list[64];

static void setup(void)
{
	nf_setup(&D);
	memset(loops, 0, sizeof(loops));
}

static void teardown(void)
{
	harness_fini(&D);
	for (unsigned i = 0; i < 3; i++)
		if (loops[i][0]) {
			char *argv[] = { "/usr/sbin/losetup", "-d", loops[i], NULL };
			char err[256];

			harness_run(argv, err, sizeof(err), 10000);
		}
}

static void ctl_ok(const char *a1, const char *a2, const char *a3)
{
	static char out[8192];
	int rc = rj_ctl(&D, out, sizeof(out), a1, a2, a3, (char *)NULL);

	if (rc)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(rc == 0, "rtgtctl %s %s %s exited %d: %s", a1, a2 ? a2 : "", a3 ? a3 : "",
		      rc, out);
}

/* A hook script @name in the daemon's dir with @body. */
static void write_hook(const char *name, const char *body)
{
	char path[256];

	/* the daemon's working directory is not D.dir: files land next to the hook */
	ck_assert_int_eq(harness_write_file(&D, name, "#!/bin/sh\ncd \"$(dirname \"$0\")\"\n%s\n",
					    body), 0);
	snprintf(path, sizeof(path), "%s/%s", D.dir, name);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

/* raid5 "p" of 4 members (32 MiB) and @nspares spares, @daemon_extra in the
 * daemon group. */
static void write_conf(const char *daemon_extra, unsigned nspares)
{
	char members[256], spares[128];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", 4), 0);
	ck_assert_int_eq(harness_img_list(spares, sizeof(spares), "s", nspares), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; state_dir = \"state\";\n"
		"           log_level = \"info\"; %s };\n"
		"pools = ( { name = \"p\"; level = \"raid5\"; chunk = \"64K\";\n"
		"            members = ( %s ); %s%s%s\n"
		"            create_size = \"32M\"; rebuild_mbps = 0; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		daemon_extra ? daemon_extra : "", members, nspares ? "spares = ( " : "", spares,
		nspares ? " );" : "", D.port, HARNESS_TARGET_DEFAULT), 0);
}

struct pool_want {
	const char *state;
	bool scrub_done;
};

static bool pool_is(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	const struct pool_want *w = arg;

	snprintf(last, lastlen, "state %s, scrub %s", rj_str(p, "state"), rj_str(p, "scrub_state"));
	return !strcmp(rj_str(p, "state"), w->state) &&
	       (!w->scrub_done || !strcmp(rj_str(p, "scrub_state"), "done"));
}

static void wait_pool(const char *state, bool scrub_done)
{
	struct pool_want w = { state, scrub_done };
	char last[256];

	if (!rj_wait_pool(&D, "p", WAIT_MS, pool_is, &w, last, sizeof(last))) {
		harness_dump_log(&D, stderr, 30);
		ck_abort_msg("pool not %s%s: %s", state, scrub_done ? " with scrub done" : "", last);
	}
}

/* The lines of @name in the daemon's dir (each "KIND {json}"), waiting up to
 * @wait_ms until there are at least @want. Returns the count; the lines
 * (NUL-separated) in @buf. */
static unsigned hook_lines(const char *name, unsigned want, int wait_ms, char *buf, size_t len)
{
	char path[256];
	uint64_t t0 = harness_now_ms();
	unsigned n;

	snprintf(path, sizeof(path), "%s/%s", D.dir, name);
	for (;;) {
		FILE *f = fopen(path, "r");
		size_t got = f ? fread(buf, 1, len - 1, f) : 0;

		if (f)
			fclose(f);
		buf[got] = '\0';
		n = 0;
		for (size_t i = 0; i < got; i++)
			n += buf[i] == '\n';
		if (n >= want || harness_now_ms() - t0 > (uint64_t)wait_ms)
			break;
		usleep(20000);
	}
	for (size_t i = 0; buf[i]; i++)
		if (buf[i] == '\n')
			buf[i] = '\0';
	return n;
}

/* Line @i (0-based) of what hook_lines() left in @buf. */
static const char *line_at(const char *buf, unsigned i)
{
	while (i--)
		buf += strlen(buf) + 1;
	return buf;
}

/* "KIND {json}": checks KIND and returns the parsed object. */
static struct json_object *hook_event(const char *line, const char *kind)
{
	struct json_object *o;
	size_t kl = strlen(kind);

	ck_assert_msg(!strncmp(line, kind, kl) && line[kl] == ' ', "expected %s, got: %s", kind, line);
	o = json_tokener_parse(line + kl + 1);
	ck_assert_msg(o != NULL, "not JSON: %s", line + kl + 1);
	ck_assert_str_eq(rj_str(o, "kind"), kind);
	return o;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static int member_write(const char *name, const void *buf, size_t len, uint64_t off)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", D.dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)off);
	fdatasync(fd);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* ---- 01 ---- */

START_TEST(t01_hook_fail_rebuild_scrub)
{
	static char buf[65536], out[65536];
	struct json_object *o, *r, *arr;
	uint8_t junk[512];

	write_hook("hook.sh", "{ printf '%s ' \"$1\"; cat; } >> hook.log");
	write_conf("event_exec = \"hook.sh\"; event_exec_timeout = 10;", 1);
	nf_start(&D);
	ck_assert_uint_eq(hook_lines("hook.log", 1, 300, buf, sizeof(buf)), 0);

	ctl_ok("fail", "p", "1");
	wait_pool("optimal", false);
	ck_assert_uint_eq(hook_lines("hook.log", 3, 10000, buf, sizeof(buf)), 3);
	o = hook_event(line_at(buf, 0), "member_faulty");
	ck_assert_int_eq(rj_int(o, "seq"), 1);
	ck_assert(ends_with(rj_str(o, "member"), "d1.img"));
	ck_assert_int_eq(rj_int(o, "slot"), 1);
	ck_assert_str_eq(rj_str(o, "pool"), "p");
	ck_assert_str_eq(rj_str(o, "pool_state"), "degraded");
	ck_assert_str_eq(rj_str(o, "reason"), "failed by operator");
	ck_assert_str_eq(rj_str(o, "severity"), "error");
	json_object_put(o);
	o = hook_event(line_at(buf, 1), "rebuild_started");
	ck_assert(ends_with(rj_str(o, "member"), "s0.img"));
	ck_assert(ends_with(rj_str(o, "replaces"), "d1.img"));
	ck_assert_int_eq(rj_int(o, "slot"), 1);
	json_object_put(o);
	o = hook_event(line_at(buf, 2), "rebuild_done");
	ck_assert(ends_with(rj_str(o, "member"), "s0.img"));
	ck_assert_str_eq(rj_str(o, "pool_state"), "optimal");
	json_object_put(o);

	/* a mismatch in row 3 of member 0 (never written: zeros) */
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(member_write("d0.img", junk, sizeof(junk), DATA_OFF + 3 * CHUNK + 4096), 0);
	ctl_ok("scrub", "p", NULL);
	wait_pool("optimal", true);
	ck_assert_uint_eq(hook_lines("hook.log", 4, 10000, buf, sizeof(buf)), 4);
	o = hook_event(line_at(buf, 3), "scrub_done");
	ck_assert_int_eq(rj_int(o, "mismatches"), 1);
	ck_assert_str_eq(rj_str(o, "severity"), "warning");
	ck_assert_str_eq(rj_str(o, "complete"), "true");
	ck_assert_str_eq(rj_str(o, "repaired"), "false");
	json_object_put(o);
	/* nothing else ran the hook */
	usleep(500000);
	ck_assert_uint_eq(hook_lines("hook.log", 5, 0, buf, sizeof(buf)), 4);

	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "events", "--json", (char *)NULL), 0);
	{
		/* one object a line */
		unsigned n = 0;
		const char *kinds[] = { "member_faulty", "rebuild_started", "rebuild_done",
					"scrub_done" };

		for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save), n++) {
			r = json_tokener_parse(l);
			ck_assert_msg(r != NULL, "not JSON: %s", l);
			ck_assert_uint_lt(n, 4);
			ck_assert_str_eq(rj_str(r, "kind"), kinds[n]);
			ck_assert_int_eq(rj_int(r, "seq"), n + 1);
			json_object_put(r);
		}
		ck_assert_uint_eq(n, 4);
	}
	/* the counters */
	ck_assert_int_eq(rj_query(&D, "events", out, sizeof(out)), 0);
	r = json_tokener_parse(out);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rj_int(r, "hook_runs"), 4);
	ck_assert_int_eq(rj_int(r, "hook_failures"), 0);
	ck_assert_int_eq(rj_int(r, "next"), 5);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 4);
	json_object_put(r);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 02 ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 4 KiB write then read at random offsets for @ms; p99 of each pair's
 * time (us). */
static uint64_t io_p99(struct iscsi_context *c, uint64_t blocks, uint32_t bs, unsigned ms,
		       unsigned *nout)
{
	static uint64_t lat[200000];
	uint8_t buf[4096];
	uint64_t t0 = harness_now_ms(), seed = 42;
	unsigned n = 0;

	memset(buf, 0x5a, sizeof(buf));
	while (harness_now_ms() - t0 < ms && n < sizeof(lat) / sizeof(lat[0])) {
		struct timespec a, b;
		uint64_t lba;
		struct scsi_task *t;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		lba = (seed % (blocks - 8)) & ~7ull;
		clock_gettime(CLOCK_MONOTONIC, &a);
		t = iscsi_write16_sync(c, 0, lba, buf, sizeof(buf), bs, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "write failed: %s", iscsi_get_error(c));
		scsi_free_scsi_task(t);
		t = iscsi_read16_sync(c, 0, lba, sizeof(buf), bs, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "read failed: %s", iscsi_get_error(c));
		scsi_free_scsi_task(t);
		clock_gettime(CLOCK_MONOTONIC, &b);
		lat[n++] = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000);
	}
	qsort(lat, n, sizeof(lat[0]), cmp_u64);
	*nout = n;
	return n ? lat[(n * 99) / 100] : 0;
}

START_TEST(t02_hanging_hook_killed)
{
	static char buf[65536], out[8192];
	struct iscsi_context *c;
	uint64_t blocks, p99_before, p99_during, t0;
	uint32_t bs;
	unsigned n_before, n_during;
	struct json_object *r;
	char err[256];

	/* each run records its child, then waits forever */
	write_hook("hang.sh", "sleep 300 & echo $! >> children; echo \"$1\" >> started; wait");
	write_conf("event_exec = \"hang.sh\"; event_exec_timeout = 1;", 0);
	nf_start(&D);
	c = nf_login(&D, 0, &(struct harness_login){ 0 });
	nf_capacity(c, &blocks, &bs);
	p99_before = io_p99(c, blocks, bs, 3000, &n_before);
	/* three refused logins: three events, each hook run hangs 1 s */
	t0 = harness_now_ms();
	for (unsigned i = 0; i < 3; i++) {
		struct harness_login lo = { .target = "iqn.2026-11.org.rtgt:nope" };
		struct iscsi_context *bad = harness_iscsi_login(D.port, &lo, err, sizeof(err));

		ck_assert_ptr_null(bad);
	}
	p99_during = io_p99(c, blocks, bs, 3000, &n_during);
	fprintf(stderr, "test_net_events 02: 4 KiB write+read p99 %llu us before (%u I/Os), "
			"%llu us while hooks hung (%u I/Os)\n",
		(unsigned long long)p99_before, n_before, (unsigned long long)p99_during, n_during);
	/* three runs, each killed after the timeout (not before) */
	for (;;) {
		ck_assert_int_eq(rj_query(&D, "events", out, sizeof(out)), 0);
		r = json_tokener_parse(out);
		ck_assert_ptr_nonnull(r);
		if (rj_int(r, "hook_timeouts") == 3 || harness_now_ms() - t0 > 15000)
			break;
		json_object_put(r);
		usleep(50000);
	}
	ck_assert_int_eq(rj_int(r, "hook_timeouts"), 3);
	ck_assert_int_eq(rj_int(r, "hook_runs"), 3);
	json_object_put(r);
	ck_assert_msg(harness_now_ms() - t0 >= 3000, "3 hook runs killed after %llu ms, "
		      "under 3 x the 1 s timeout", (unsigned long long)(harness_now_ms() - t0));
	ck_assert_uint_eq(hook_lines("started", 3, 1000, buf, sizeof(buf)), 3);
	ck_assert_str_eq(line_at(buf, 0), "login_failed");
	/* their children went with them */
	ck_assert_uint_eq(hook_lines("children", 3, 1000, buf, sizeof(buf)), 3);
	for (unsigned i = 0; i < 3; i++) {
		char stat[128], st[512] = "";
		FILE *f;
		uint64_t w0 = harness_now_ms();

		snprintf(stat, sizeof(stat), "/proc/%.20s/stat", line_at(buf, i));
		while ((f = fopen(stat, "r"))) {
			if (!fgets(st, sizeof(st), f))
				st[0] = '\0';
			fclose(f);
			if (strstr(st, ") Z ") || harness_now_ms() - w0 > 5000)
				break;
			usleep(20000);
		}
		ck_assert_msg(!f || strstr(st, ") Z "), "the hook's child %s still runs: %s",
			      line_at(buf, i), st);
	}
	/* unaffected: within 3x (and 10 ms) of the p99 just before */
	ck_assert_msg(n_during > 100 && n_before > 100, "too few I/Os: %u, %u", n_before, n_during);
	ck_assert_msg(p99_during <= 3 * p99_before + 10000,
		      "p99 %llu us while hooks hung, %llu us before",
		      (unsigned long long)p99_during, (unsigned long long)p99_before);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 03 ---- */

START_TEST(t03_events_follow)
{
	static char out[16384];
	char sock[256], line[8192], err[256];
	int pfd[2];
	pid_t pid;
	FILE *f;
	struct json_object *o;
	uint64_t t0;
	struct harness_login lo = { .target = "iqn.2026-11.org.rtgt:nope" };

	write_conf(NULL, 0);
	nf_start(&D);
	snprintf(sock, sizeof(sock), "%s/rtgtd.sock", D.dir);
	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execl(rj_rtgtctl_path(), "rtgtctl", "-s", sock, "events", "--follow", "--json",
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	usleep(300000);   /* following, nothing yet */
	t0 = harness_now_ms();
	ck_assert_ptr_null(harness_iscsi_login(D.port, &lo, err, sizeof(err)));
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fprintf(stderr, "test_net_events 03: followed event printed %llu ms after the login\n",
		(unsigned long long)(harness_now_ms() - t0));
	ck_assert_uint_lt(harness_now_ms() - t0, 2000);
	o = json_tokener_parse(line);
	ck_assert_msg(o != NULL, "not JSON: %s", line);
	ck_assert_str_eq(rj_str(o, "kind"), "login_failed");
	ck_assert_str_eq(rj_str(o, "target"), "iqn.2026-11.org.rtgt:nope");
	ck_assert_str_eq(rj_str(o, "initiator"), HARNESS_INITIATOR);
	ck_assert_str_eq(rj_str(o, "portal"), "lo");
	ck_assert(strlen(rj_str(o, "reason")) > 0);
	json_object_put(o);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	fclose(f);
	/* text form */
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "events", (char *)NULL), 0);
	ck_assert_msg(strstr(out, " warning  login_failed     login refused: initiator " HARNESS_INITIATOR),
		      "%s", out);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 04 ---- */

/* curl @path of the metrics port: the body into @out; returns the HTTP code. */
static int scrape(uint16_t port, const char *path, char *out, size_t len)
{
	char url[128], code[64];
	char *argv[] = { "/usr/bin/curl", "-s", "-o", "-", "-w", "\n%{http_code}", url, NULL };
	int rc;
	char *nl;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	rc = harness_run_out(argv, out, len, 20000);
	ck_assert_msg(rc == 0, "curl %s: exit %d: %.300s", url, rc, out);
	nl = strrchr(out, '\n');
	ck_assert_ptr_nonnull(nl);
	snprintf(code, sizeof(code), "%s", nl + 1);
	*nl = '\0';
	return atoi(code);
}

/* Checks the exposition text: every sample's family declared (HELP then
 * TYPE) before it, no family twice, histogram buckets cumulative with
 * +Inf = _count. Returns the number of samples. */
static unsigned check_exposition(char *text)
{
	static char fams[512][96], types[512][32];
	unsigned nf = 0, ns = 0;
	char cur[96] = "", last_bucket_series[512] = "";
	double last_bucket = -1;
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[96], series[512];
		const char *sp;
		double v;

		if (!strncmp(l, "# HELP ", 7)) {
			ck_assert_msg(sscanf(l + 7, "%95s", name) == 1, "%s", l);
			for (unsigned k = 0; k < nf; k++)
				ck_assert_msg(strcmp(fams[k], name), "family %s declared twice", name);
			ck_assert_uint_lt(nf, 512);
			snprintf(fams[nf], sizeof(fams[nf]), "%s", name);
			types[nf][0] = '\0';
			nf++;
			snprintf(cur, sizeof(cur), "%s", name);
			continue;
		}
		if (!strncmp(l, "# TYPE ", 7)) {
			char t[32];

			ck_assert_msg(sscanf(l + 7, "%95s %31s", name, t) == 2, "%s", l);
			ck_assert_msg(nf && !strcmp(fams[nf - 1], name), "TYPE %s without HELP first", name);
			ck_assert_msg(!strcmp(t, "counter") || !strcmp(t, "gauge") || !strcmp(t, "histogram"),
				      "type %s", t);
			snprintf(types[nf - 1], sizeof(types[nf - 1]), "%s", t);
			if (!strcmp(t, "counter"))
				ck_assert_msg(ends_with(name, "_total"), "counter %s not _total", name);
			continue;
		}
		ck_assert_msg(l[0] != '#', "stray comment: %s", l);
		sp = strrchr(l, ' ');
		ck_assert_msg(sp != NULL, "no value: %s", l);
		v = strtod(sp + 1, NULL);
		ck_assert_msg(v >= 0 && !isnan(v), "bad value: %s", l);
		snprintf(series, sizeof(series), "%.*s", (int)(sp - l), l);
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(l, "{ "), l);
		ck_assert_msg(!strncmp(name, "rtgt_", 5), "name %s", name);
		/* the sample belongs to the family declared last */
		if (strcmp(name, cur)) {
			ck_assert_msg(nf && !strcmp(types[nf - 1], "histogram") &&
				      strlen(name) > strlen(cur) && !strncmp(name, cur, strlen(cur)),
				      "sample %s outside its family (current %s)", name, cur);
			const char *suf = name + strlen(cur);

			ck_assert_msg(!strcmp(suf, "_bucket") || !strcmp(suf, "_sum") ||
				      !strcmp(suf, "_count"), "histogram sample %s", name);
			if (!strcmp(suf, "_bucket")) {
				/* the series without its le: buckets of one series in order */
				char *le = strstr(series, ",le=\"");
				char key[512];

				ck_assert_ptr_nonnull(le);
				snprintf(key, sizeof(key), "%.*s", (int)(le - series), series);
				if (strcmp(key, last_bucket_series))
					last_bucket = -1;
				ck_assert_msg(v >= last_bucket, "bucket %s below the one before", series);
				last_bucket = v;
				snprintf(last_bucket_series, sizeof(last_bucket_series), "%s", key);
			} else if (!strcmp(suf, "_count")) {
				ck_assert_msg(v == last_bucket, "%s = %g, its +Inf bucket %g", series, v,
					      last_bucket);
			}
		}
		ns++;
	}
	return ns;
}

/* The value of the sample line starting with @series (full name and labels). */
static double value_of(const char *text, const char *series)
{
	const char *p = text;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += n;
	}
	ck_abort_msg("no sample %s", series);
	return 0;
}

/* Sum of every sample of @name (with any labels). */
static double sum_of(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);
	double s = 0;

	while ((p = strstr(p, name))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '{' || p[n] == ' ')) {
			const char *e = strchr(p, '\n'), *sp;

			for (sp = e ? e : p + strlen(p); sp > p && sp[-1] != ' '; sp--)
				;
			s += strtod(sp, NULL);
		}
		p += n;
	}
	return s;
}

START_TEST(t04_metrics_scrape)
{
	static char a[1 << 20], b[1 << 20], copy[1 << 20];
	uint16_t mport;
	char extra[128], series[256];
	struct iscsi_context *c;
	uint64_t blocks;
	uint32_t bs;
	uint8_t *buf = malloc(1 << 20);
	double w0, w1, mw0, mw1;
	unsigned ns;

	ck_assert_int_eq(access("/usr/bin/curl", X_OK), 0);
	ck_assert_int_eq(harness_free_port(&mport), 0);
	snprintf(extra, sizeof(extra), "metrics = \"127.0.0.1:%u\";", mport);
	write_conf(extra, 1);
	nf_start(&D);
	c = nf_login(&D, 0, &(struct harness_login){ 0 });
	nf_capacity(c, &blocks, &bs);
	ck_assert_int_eq(scrape(mport, "/metrics", a, sizeof(a)), 200);
	memcpy(copy, a, sizeof(a));
	ns = check_exposition(copy);
	ck_assert_uint_gt(ns, 100);
	snprintf(series, sizeof(series), "rtgt_lun_write_bytes_total{pool=\"p\",volume=\"v0\"}");
	w0 = value_of(a, series);
	mw0 = sum_of(a, "rtgt_member_write_bytes_total");
	ck_assert(value_of(a, "rtgt_pool_state{pool=\"p\",level=\"raid5\",state=\"optimal\"}") == 1);
	ck_assert(value_of(a, "rtgt_pool_state{pool=\"p\",level=\"raid5\",state=\"degraded\"}") == 0);
	ck_assert(value_of(a, "rtgt_rebuild_progress_ratio{pool=\"p\"}") == 0);
	ck_assert(value_of(a, "rtgt_sessions{target=\"" HARNESS_TARGET "\"}") == 1);
	ck_assert(value_of(a, "rtgt_events_total") == 0);
	/* 4 MiB written */
	memset(buf, 0x3c, 1 << 20);
	for (unsigned i = 0; i < 4; i++) {
		struct scsi_task *t = iscsi_write16_sync(c, 0, (uint64_t)i * ((1 << 20) / bs), buf,
							 1 << 20, bs, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "write: %s", iscsi_get_error(c));
		scsi_free_scsi_task(t);
	}
	ck_assert_int_eq(scrape(mport, "/metrics", b, sizeof(b)), 200);
	memcpy(copy, b, sizeof(b));
	check_exposition(copy);
	w1 = value_of(b, series);
	mw1 = sum_of(b, "rtgt_member_write_bytes_total");
	fprintf(stderr, "test_net_events 04: %u samples; LUN write bytes %.0f -> %.0f, members %.0f -> %.0f\n",
		ns, w0, w1, mw0, mw1);
	ck_assert(w1 - w0 == 4 << 20);
	ck_assert(mw1 - mw0 >= 4 << 20);   /* data plus parity */
	ck_assert(value_of(b, "rtgt_lun_latency_seconds_count{pool=\"p\",volume=\"v0\"}") >=
		  value_of(a, "rtgt_lun_latency_seconds_count{pool=\"p\",volume=\"v0\"}") + 4);
	ck_assert(sum_of(b, "rtgt_member_latency_seconds_count") >
		  sum_of(a, "rtgt_member_latency_seconds_count"));
	/* a failed member shows */
	ctl_ok("fail", "p", "2");
	wait_pool("optimal", false);
	ck_assert_int_eq(scrape(mport, "/metrics", b, sizeof(b)), 200);
	ck_assert(value_of(b, "rtgt_events_total") == 3);
	ck_assert(value_of(b, "rtgt_pool_state{pool=\"p\",level=\"raid5\",state=\"optimal\"}") == 1);
	ck_assert_ptr_nonnull(strstr(b, "d2.img\",state=\"faulty\"} 1\n"));
	/* anything else */
	ck_assert_int_eq(scrape(mport, "/", b, sizeof(b)), 404);
	ck_assert_int_eq(scrape(mport, "/metricsx", b, sizeof(b)), 404);
	{
		char *argv[] = { "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X",
				 "POST", extra, NULL };

		snprintf(extra, sizeof(extra), "http://127.0.0.1:%u/metrics", mport);
		ck_assert_int_eq(harness_run_out(argv, b, sizeof(b), 20000), 0);
		ck_assert_str_eq(b, "404");
	}
	{
		/* headers over daemon.metrics_max_request (8 KiB): 431, closed */
		int fd = harness_tcp_connect(mport);
		char *big = malloc(9000);
		ssize_t n;

		ck_assert_int_ge(fd, 0);
		memcpy(big, "GET /metrics HTTP/1.0\r\nX-Pad: ", 30);
		memset(big + 30, 'a', 9000 - 30);
		memcpy(big + 9000 - 4, "\r\n\r\n", 4);
		harness_tcp_send(fd, big, 9000);
		n = harness_tcp_recv(fd, b, 64, 5000);
		ck_assert_int_gt(n, 12);
		ck_assert_msg(memcmp(b, "HTTP/1.0 431", 12) == 0, "%.64s", b);
		close(fd);
		free(big);
	}
	ck_assert_int_eq(scrape(mport, "/metrics", b, sizeof(b)), 200);   /* still serving */
	harness_iscsi_logout(c);
	free(buf);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 05 ---- */

static bool loop_attach(unsigned i, char *why, size_t wlen)
{
	char img[192], out[256];
	char *argv[] = { "/usr/sbin/losetup", "-f", "--show", img, NULL };
	int fd, rc;

	snprintf(img, sizeof(img), "%s/loop%u.img", D.dir, i);
	fd = open(img, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 40 << 20), 0);
	close(fd);
	if (access(argv[0], X_OK)) {
		snprintf(why, wlen, "no %s", argv[0]);
		return false;
	}
	rc = harness_run_out(argv, out, sizeof(out), 10000);
	if (rc) {
		snprintf(why, wlen, "losetup -f failed (%d): %s", rc, out);
		return false;
	}
	out[strcspn(out, "\n")] = '\0';
	snprintf(loops[i], sizeof(loops[i]), "%s", out);
	{
		FILE *f = fopen(loop_list, "a");

		ck_assert_ptr_nonnull(f);
		fprintf(f, "%s\n", loops[i]);
		fclose(f);
	}
	return true;
}

/* raid1 over loops[0], loops[1], spare loops[2]; @extra in the daemon group. */
static void write_loop_conf(const char *extra)
{
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; state_dir = \"state\"; %s };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"%s\", \"%s\" ); spares = ( \"%s\" ); rebuild_mbps = 0; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n", extra, loops[0], loops[1], loops[2], D.port,
		HARNESS_TARGET_DEFAULT), 0);
}

static bool health_is(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	const char *const *want = arg;   /* member path, health state */
	struct json_object *m = rj_member(p, want[0]), *h;

	if (!m || !json_object_object_get_ex(m, "health", &h)) {
		snprintf(last, lastlen, "%s: no health entry", want[0]);
		return false;
	}
	snprintf(last, lastlen, "%s: %s", want[0], json_object_to_json_string(h));
	return !strcmp(rj_str(h, "state"), want[1]);
}

static void wait_health(const char *path, const char *state)
{
	const char *want[2] = { path, state };
	char last[512];

	if (!rj_wait_pool(&D, "p", WAIT_MS, health_is, want, last, sizeof(last))) {
		harness_dump_log(&D, stderr, 30);
		ck_abort_msg("health of %s not %s: %s", path, state, last);
	}
}

START_TEST(t05_loop_devices)
{
	char why[512] = "", extra[512], cmd[1024], buf[4096];
	struct json_object *root, *p, *m, *h;

	for (unsigned i = 0; i < 3; i++)
		if (!loop_attach(i, why, sizeof(why))) {
			fprintf(stderr, "test_net_events 05: SKIPPED: %s\n", why);
			return;
		}
	/* the real smartctl: a loop device has no SMART */
	if (access("/usr/sbin/smartctl", X_OK)) {
		fprintf(stderr, "test_net_events 05: no /usr/sbin/smartctl (scripts/deps.sh installs "
				"smartmontools): real smartctl part SKIPPED\n");
	} else {
		write_loop_conf("smartctl = \"/usr/sbin/smartctl\";");
		nf_start(&D);
		wait_health(loops[0], "unavailable");
		wait_health(loops[1], "unavailable");
		p = rj_status_pool(&D, "p", &root);
		m = rj_member(p, loops[1]);
		ck_assert(json_object_object_get_ex(m, "health", &h));
		ck_assert_str_eq(rj_str(h, "state"), "unavailable");
		ck_assert_msg(strstr(rj_str(h, "reason"), "Unable to detect device type"), "%s",
			      rj_str(h, "reason"));
		json_object_put(root);
		ck_assert_int_eq(rj_ctl(&D, buf, sizeof(buf), "status", (char *)NULL), 0);
		ck_assert_msg(strstr(buf, "unavailable ("), "%s", buf);
		nf_stop_expect_0(&D, NULL);
	}
	/* the stand-in: loops[0] passes, then fails; loops[1] has pending sectors */
	snprintf(cmd, sizeof(cmd), "cp tests/data/smartctl/standin.sh %s/smartctl && "
		 "cp tests/data/smartctl/ata-passed.json %s/%s.json && "
		 "cp tests/data/smartctl/ata-pending.json %s/%s.json", D.dir, D.dir,
		 strrchr(loops[0], '/') + 1, D.dir, strrchr(loops[1], '/') + 1);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(extra, sizeof(extra), "smartctl = \"smartctl\"; health_interval = 1; "
		 "health_fail = \"spare\"; event_exec = \"hook.sh\";");
	write_hook("hook.sh", "{ printf '%s ' \"$1\"; cat; } >> hook.log");
	write_loop_conf(extra);
	nf_start(&D);
	wait_health(loops[0], "passed");
	wait_health(loops[1], "warning");
	p = rj_status_pool(&D, "p", &root);
	h = json_object_object_get(rj_member(p, loops[1]), "health");
	ck_assert_int_eq(rj_int(h, "pending_sectors"), 8);
	ck_assert_int_eq(rj_int(h, "reallocated_sectors"), 16);
	ck_assert_int_eq(rj_int(h, "temperature_c"), 36);
	json_object_put(root);
	snprintf(cmd, sizeof(cmd), "cp tests/data/smartctl/ata-failing.json %s/new.json && "
		 "mv %s/new.json %s/%s.json", D.dir, D.dir, D.dir, strrchr(loops[0], '/') + 1);
	ck_assert_int_eq(system(cmd), 0);
	/* reported, copied to the spare, which took its place */
	{
		static char lines[65536];
		unsigned n = hook_lines("hook.log", 5, 20000, lines, sizeof(lines));
		const char *want[] = { "member_health", "member_health", "replace_started",
				       "health_replace", "replace_done" };
		struct json_object *o;

		ck_assert_msg(n == 5, "%u hook runs", n);
		for (unsigned i = 0; i < 5; i++)
			json_object_put(hook_event(line_at(lines, i), want[i]));
		o = hook_event(line_at(lines, 0), "member_health");
		ck_assert_str_eq(rj_str(o, "member"), loops[1]);
		ck_assert_str_eq(rj_str(o, "health"), "warning");
		json_object_put(o);
		o = hook_event(line_at(lines, 1), "member_health");
		ck_assert_str_eq(rj_str(o, "member"), loops[0]);
		ck_assert_str_eq(rj_str(o, "health"), "failing");
		ck_assert_str_eq(rj_str(o, "was"), "passed");
		json_object_put(o);
		o = hook_event(line_at(lines, 2), "replace_started");
		ck_assert_str_eq(rj_str(o, "member"), loops[2]);
		ck_assert_str_eq(rj_str(o, "replaces"), loops[0]);
		ck_assert_str_eq(rj_str(o, "pool_state"), "optimal");
		json_object_put(o);
		o = hook_event(line_at(lines, 4), "replace_done");
		ck_assert_str_eq(rj_str(o, "member"), loops[2]);
		ck_assert_str_eq(rj_str(o, "replaced"), loops[0]);
		ck_assert_str_eq(rj_str(o, "pool_state"), "optimal");
		json_object_put(o);
	}
	wait_pool("optimal", false);
	p = rj_status_pool(&D, "p", &root);
	ck_assert_str_eq(rj_str(rj_member(p, loops[0]), "state"), "faulty");
	ck_assert_str_eq(rj_str(rj_member(p, loops[2]), "state"), "active");
	json_object_put(root);
	nf_stop_expect_0(&D, NULL);
}
END_TEST


/* ---- 06 ---- */

/* The events of @kind in the ring, in order, into @out (at most @max,
 * each a new reference); returns how many there are. */
static unsigned ring_events(const char *kind, struct json_object **out, unsigned max)
{
	static char buf[65536];
	struct json_object *r, *arr;
	unsigned n = 0;

	ck_assert_int_eq(rj_query(&D, "events", buf, sizeof(buf)), 0);
	r = json_tokener_parse(buf);
	ck_assert_ptr_nonnull(r);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		if (strcmp(rj_str(e, "kind"), kind))
			continue;
		if (n < max)
			out[n] = json_object_get(e);
		n++;
	}
	json_object_put(r);
	return n;
}

/* Waits up to 5 s until the ring holds @want events of @kind. */
static unsigned wait_ring_events(const char *kind, unsigned want, struct json_object **out,
				 unsigned max)
{
	uint64_t end = harness_now_ms() + 5000;
	unsigned n;

	for (;;) {
		n = ring_events(kind, out, max);
		if (n >= want || harness_now_ms() >= end)
			return n;
		for (unsigned i = 0; i < n && i < max; i++)
			json_object_put(out[i]);
		usleep(50000);
	}
}

/* A session that ends without a Logout, and a Logout the target refuses,
 * are events with their reason; an accepted Logout is none. */
START_TEST(t06_session_events)
{
	struct json_object *ev[4];
	struct iscsi_context *c;
	struct rl_conn r;
	char err[256];
	unsigned n;
	int fd;

	write_conf(NULL, 0);
	nf_start(&D);
	/* a clean logout: nothing */
	c = harness_iscsi_login(D.port, &(struct harness_login){ 0 }, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	harness_iscsi_logout(c);
	/* the initiator just goes away */
	c = harness_iscsi_login(D.port, &(struct harness_login){ 0 }, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	iscsi_destroy_context(c);
	n = wait_ring_events("session_lost", 1, ev, 4);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(rj_str(ev[0], "initiator"), HARNESS_INITIATOR);
	ck_assert_str_eq(rj_str(ev[0], "target"), HARNESS_TARGET);
	ck_assert_str_eq(rj_str(ev[0], "portal"), "lo");
	ck_assert_str_eq(rj_str(ev[0], "severity"), "warning");
	ck_assert_str_eq(rj_str(ev[0], "reason"), "initiator closed the connection without a Logout");
	ck_assert_int_gt(rj_int(ev[0], "tsih"), 0);
	json_object_put(ev[0]);
	/* Logout for connection recovery: refused (ErrorRecoveryLevel 0),
	 * the session goes on; then a close-session Logout ends it quietly */
	fd = harness_tcp_connect(D.port);
	ck_assert_int_ge(fd, 0);
	rl_open(&r, fd, 0x61);
	ck_assert_int_eq(rl_login(&r, HARNESS_INITIATOR, HARNESS_TARGET), RL_OK);
	ck_assert_int_eq(rl_logout(&r, 2), 2);
	n = wait_ring_events("logout_failed", 1, ev, 4);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(rj_str(ev[0], "reason"),
			 "connection recovery is not supported (ErrorRecoveryLevel 0)");
	json_object_put(ev[0]);
	r.cmdsn++;
	ck_assert_int_eq(rl_logout(&r, 0), 0);
	ck_assert_int_eq(harness_tcp_wait_closed(fd, 5000), 1);
	close(fd);
	/* the accepted logouts left nothing: still the one lost session */
	usleep(300000);
	n = ring_events("session_lost", ev, 4);
	for (unsigned i = 0; i < n && i < 4; i++)
		json_object_put(ev[i]);
	ck_assert_uint_eq(n, 1);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_hook_fail_rebuild_scrub", t01_hook_fail_rebuild_scrub),
		CK_CASE("02_hanging_hook_killed", t02_hanging_hook_killed),
		CK_CASE("03_events_follow", t03_events_follow),
		CK_CASE("04_metrics_scrape", t04_metrics_scrape),
		CK_CASE("05_loop_devices", t05_loop_devices),
		CK_CASE("06_session_events", t06_session_events),
	};

	int rc, fd;
	FILE *f;
	char dev[256];

	signal(SIGPIPE, SIG_IGN);
	snprintf(loop_list, sizeof(loop_list), "/tmp/rtgt-net-events-loops.XXXXXX");
	fd = mkstemp(loop_list);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	rc = ck_main(&(struct ck_suite_def){ "net_events", CK_CASES(cases), .setup = setup,
					     .teardown = teardown, .timeout = 120 });
	/* detach what a failed case left attached (losetup -d of a device
	 * already detached just fails) */
	f = fopen(loop_list, "r");
	while (f && fgets(dev, sizeof(dev), f)) {
		char *argv[] = { "/usr/sbin/losetup", "-d", dev, NULL };
		char err[256];

		dev[strcspn(dev, "\n")] = '\0';
		harness_run(argv, err, sizeof(err), 10000);
	}
	if (f)
		fclose(f);
	unlink(loop_list);
	return rc;
}
