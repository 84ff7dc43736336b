/*
 * tests/net/test_net_daemon.c - bin/rtgtd as a program: --check on bad and good
 * configurations (exit codes, FILE:LINE messages, nothing created on disk),
 * start-up failures (port in use, a member of another pool, a missing
 * member: exit 1 at once with a line naming it, nothing written or created;
 * rtgtd --start-degraded POOL starts without the missing one, the
 * deprecated start_degraded key still parses with a warning), SIGTERM in the
 * middle of I/O (exit 0, acknowledged writes survive a restart) and the
 * directories of members to create and of the control socket made on start.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"

/* start-up failures are quick; a daemon that serves instead is cut off */
#define RUN_TIMEOUT_MS 15000

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* Runs rtgtd -c d->conf [--check], stderr into @err. */
static int run_rtgtd(bool check, char *err, size_t errlen)
{
	char *argv[] = { (char *)harness_rtgtd_path(), "-c", D.conf, check ? "--check" : NULL,
			 NULL };

	ck_assert_msg(access(argv[0], X_OK) == 0, "%s is missing: build it first", argv[0]);
	return harness_run(argv, err, errlen, RUN_TIMEOUT_MS);
}

static void assert_dir_has_only(const char *dir, int want, const char *when)
{
	char names[1024];
	int n = harness_dir_entries(dir, names, sizeof(names));

	ck_assert_msg(n == want, "%s: %d entries in %s (%s), expected %d: something was created",
		      when, n, dir, names, want);
}

/*
 * The template, one setting per line so that the tests know the line of
 * each one. A pool, a portal and a target each sit on a single line, so any
 * line rtgtd could blame for them (the entry's or the setting's) is the same.
 */
enum { L_WORKERS = 2, L_CONTROL = 3, L_LOG_LEVEL = 4, L_POOL = 7, L_PORTAL = 10, L_TARGET = 13 };

struct variant {
	const char *workers, *control, *log_level, *pool, *portal, *target;
};

static void write_conf(const struct variant *v)
{
	char portal[160];

	snprintf(portal, sizeof(portal), "{ name = \"lo\"; listen = \"127.0.0.1:%u\"; }", D.port);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = {\n"
		"  %s\n"
		"  %s\n"
		"  %s\n"
		"};\n"
		"pools = (\n"
		"  %s\n"
		");\n"
		"portals = (\n"
		"  %s\n"
		");\n"
		"targets = (\n"
		"  %s\n"
		");\n",
		v->workers ? v->workers : "workers = 1;",
		v->control ? v->control : "control = \"rtgtd.sock\";",
		v->log_level ? v->log_level : "log_level = \"info\";",
		v->pool ? v->pool : "{ name = \"p\"; level = \"raid1\"; chunk = \"64K\"; "
				    "members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; }",
		v->portal ? v->portal : portal,
		v->target ? v->target : "{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" ); "
					"luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; "
					"size = \"80%\"; } ); allow = ( \"ALL\" ); }"), 0);
}

static bool has_line_prefix(const char *err, const char *prefix)
{
	const char *p = err;

	while (p && *p) {
		if (!strncmp(p, prefix, strlen(prefix)))
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

/* A bad config: --check and a plain start both exit 2, blame each expected
 * line, and leave nothing behind. */
static void expect_bad(const struct variant *v, const int *lines, unsigned n_lines,
		       const char *what)
{
	static char err[16384];
	int rc;

	write_conf(v);
	rc = run_rtgtd(true, err, sizeof(err));
	ck_assert_msg(rc == 2, "%s: --check exited %d, expected 2; stderr:\n%s", what, rc, err);
	for (unsigned i = 0; i < n_lines; i++) {
		char prefix[256];

		snprintf(prefix, sizeof(prefix), "%s:%d: ", D.conf, lines[i]);
		ck_assert_msg(has_line_prefix(err, prefix),
			      "%s: no line starting with '%s'; stderr:\n%s", what, prefix, err);
	}
	assert_dir_has_only(D.dir, 1, what);

	rc = run_rtgtd(false, err, sizeof(err));
	ck_assert_msg(rc == 2, "%s: a start exited %d, expected 2; stderr:\n%s", what, rc, err);
	assert_dir_has_only(D.dir, 1, what);
}

START_TEST(t01_check_unknown_key)
{
	struct variant v = { .control = "contrl = \"rtgtd.sock\";" };
	const int lines[] = { L_CONTROL };

	expect_bad(&v, lines, 1, "unknown key");
}
END_TEST

START_TEST(t02_check_bad_log_level)
{
	struct variant v = { .log_level = "log_level = \"loud\";" };
	const int lines[] = { L_LOG_LEVEL };

	expect_bad(&v, lines, 1, "bad log level");
}
END_TEST

START_TEST(t03_check_raid5_two_members)
{
	struct variant v = {
		.pool = "{ name = \"p\"; level = \"raid5\"; chunk = \"64K\"; "
			"members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; }",
	};
	const int lines[] = { L_POOL };

	expect_bad(&v, lines, 1, "raid5 with 2 members");
}
END_TEST

START_TEST(t04_check_lun_missing_pool)
{
	struct variant v = {
		.target = "{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" ); "
			  "luns = ( { lun = 0; pool = \"nope\"; volume = \"v0\"; size = \"80%\"; } ); "
			  "allow = ( \"ALL\" ); }",
	};
	const int lines[] = { L_TARGET };

	expect_bad(&v, lines, 1, "LUN on a missing pool");
}
END_TEST

START_TEST(t05_check_bad_listen)
{
	const char *bad[] = {
		"{ name = \"lo\"; listen = \"127.0.0.1:99999\"; }",
		"{ name = \"lo\"; listen = \"300.1.2.3:4000\"; }",
		"{ name = \"lo\"; listen = \"127.0.0.1\"; }",
		"{ name = \"lo\"; listen = \"localhost:4000x\"; }",
	};
	const int lines[] = { L_PORTAL };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct variant v = { .portal = bad[i] };

		expect_bad(&v, lines, 1, bad[i]);
	}
}
END_TEST

START_TEST(t06_check_reports_every_problem)
{
	struct variant v = {
		.control = "contrl = \"rtgtd.sock\";",
		.log_level = "log_level = \"loud\";",
		.portal = "{ name = \"lo\"; listen = \"127.0.0.1:99999\"; }",
	};
	const int lines[] = { L_CONTROL, L_LOG_LEVEL, L_PORTAL };

	expect_bad(&v, lines, 3, "three problems in one file");
}
END_TEST

START_TEST(t07_check_good_creates_nothing)
{
	struct variant v = { 0 };
	static char err[16384];
	char prefix[256];
	int rc;

	write_conf(&v);
	rc = run_rtgtd(true, err, sizeof(err));
	ck_assert_msg(rc == 0, "--check on a good config exited %d; stderr:\n%s", rc, err);
	snprintf(prefix, sizeof(prefix), "%s:", D.conf);
	ck_assert_msg(!strstr(err, prefix), "--check on a good config complained:\n%s", err);
	assert_dir_has_only(D.dir, 1, "--check on a good config");
}
END_TEST

START_TEST(t08_port_in_use)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(D.port) };
	static char err[16384];
	char addr[64];
	int fd, rc, n = 0;
	const char *p;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4) == 0,
		      "cannot hold port %u: %s", D.port, strerror(errno));
	write_conf(&(struct variant){ 0 });
	rc = run_rtgtd(false, err, sizeof(err));
	close(fd);
	ck_assert_msg(rc == 1, "a start on a busy port exited %d, expected 1; stderr:\n%s", rc,
		      err);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", D.port);
	for (p = err; (p = strstr(p, addr)); p++) {
		const char *eol = strchr(p, '\n'), *in_use = strstr(p, "in use");

		if (in_use && (!eol || in_use < eol))
			n++;
	}
	ck_assert_msg(n == 1, "expected one line naming %s and 'in use', found %d; stderr:\n%s",
		      addr, n, err);
}
END_TEST

/* Whether one line of @text contains @a and (when not NULL) @b. */
static bool line_with(const char *text, const char *a, const char *b)
{
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n'), *x = strstr(p, a), *y = b ? strstr(p, b) : p;

		if (x && y && (!eol || (x < eol && y < eol)))
			return true;
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

/* Whether two files hold the same bytes. */
static bool file_same(const char *a, const char *b)
{
	static char ba[65536], bb[65536];
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool eq = fa && fb;

	while (eq) {
		size_t na = fread(ba, 1, sizeof(ba), fa), nb = fread(bb, 1, sizeof(bb), fb);

		if (na != nb || memcmp(ba, bb, na))
			eq = false;
		if (na < sizeof(ba))
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return eq;
}

START_TEST(t09_member_of_another_pool)
{
	static char err[16384];
	char from[256], to[256], keep[256];
	long long t0;
	int rc;

	snprintf(keep, sizeof(keep), "%s/b0.copy", D.dir);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 1; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = (\n"
		"  { name = \"a\"; level = \"raid1\"; members = ( \"a0.img\", \"a1.img\" ); create_size = \"32M\"; },\n"
		"  { name = \"b\"; level = \"raid1\"; members = ( \"b0.img\", \"b1.img\" ); create_size = \"32M\"; }\n"
		");\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"a\"; volume = \"va\"; size = \"50%%\"; },\n"
		"           { lun = 1; pool = \"b\"; volume = \"vb\"; size = \"50%%\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n", D.port), 0);
	nf_start(&D);
	nf_stop_expect_0(&D, "first start");
	snprintf(from, sizeof(from), "%s/a0.img", D.dir);
	snprintf(to, sizeof(to), "%s/b0.img", D.dir);
	ck_assert_int_eq(harness_copy_file(from, to), 0);
	ck_assert_int_eq(harness_copy_file(to, keep), 0);
	t0 = (long long)harness_now_ms();
	rc = run_rtgtd(false, err, sizeof(err));
	ck_assert_msg(rc == 1, "start with pool a's member in pool b's place exited %d, "
		      "expected 1; stderr:\n%s", rc, err);
	ck_assert_msg((long long)harness_now_ms() - t0 < 5000, "the refused start took %lld ms; stderr:\n%s",
		      (long long)harness_now_ms() - t0, err);
	ck_assert_msg(line_with(err, "b0.img (slot 0) belongs to pool a (uuid ", "not to this pool"),
		      "no line says b0.img belongs to pool a; stderr:\n%s", err);
	/* nothing was written to the foreign member */
	ck_assert_msg(file_same(to, keep), "b0.img was modified by the refused start");
}
END_TEST

/*
 * Starts rtgtd -c D.conf --start-degraded @pool, waits for its "started
 * degraded" line, stops it with SIGTERM: its exit status (or -1 when it
 * never said so, -2 when it exited first), its stderr in @log.
 */
static int run_start_degraded(const char *pool, char *log, size_t loglen)
{
	char lpath[300];
	int st = 0, fd, said = 0;
	ssize_t n = 0;
	pid_t pid;

	snprintf(lpath, sizeof(lpath), "%s/degraded.log", D.dir);
	fd = open(lpath, O_CREAT | O_TRUNC | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { (char *)harness_rtgtd_path(), "-c", D.conf, "--start-degraded",
				 (char *)pool, NULL };
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < RUN_TIMEOUT_MS / 50 && !said; i++) {
		n = pread(fd, log, loglen - 1, 0);
		log[n > 0 ? n : 0] = 0;
		said = strstr(log, "started degraded") != NULL;
		if (!said && waitpid(pid, &st, WNOHANG) == pid) {
			close(fd);
			return -2;
		}
		usleep(50000);
	}
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	n = pread(fd, log, loglen - 1, 0);
	log[n > 0 ? n : 0] = 0;
	close(fd);
	if (!said)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(t10_missing_member)
{
	static char err[16384];
	char path[256];
	long long t0;
	int rc;

	write_conf(&(struct variant){ 0 });
	nf_start(&D);
	nf_stop_expect_0(&D, "first start");
	/* create_size stays: it must not re-create a member of an existing pool */
	snprintf(path, sizeof(path), "%s/d1.img", D.dir);
	ck_assert_int_eq(unlink(path), 0);
	t0 = (long long)harness_now_ms();
	rc = run_rtgtd(false, err, sizeof(err));
	ck_assert_msg(rc == 1, "start with a missing member exited %d, expected 1; stderr:\n%s",
		      rc, err);
	ck_assert_msg((long long)harness_now_ms() - t0 < 5000, "the refused start took %lld ms; stderr:\n%s",
		      (long long)harness_now_ms() - t0, err);
	ck_assert_msg(line_with(err, "d1.img (slot 1) is missing", NULL),
		      "no line says d1.img (slot 1) is missing; stderr:\n%s", err);
	ck_assert_msg(access(path, F_OK) != 0 && errno == ENOENT,
		      "the missing member d1.img was created");

	/* the override names a pool of the configuration */
	{
		char *argv[] = { (char *)harness_rtgtd_path(), "-c", D.conf, "--start-degraded",
				 "nosuch", NULL };

		rc = harness_run(argv, err, sizeof(err), RUN_TIMEOUT_MS);
		ck_assert_msg(rc == 2, "--start-degraded nosuch exited %d, expected 2; stderr:\n%s",
			      rc, err);
		ck_assert_msg(line_with(err, "--start-degraded nosuch", "no pool"),
			      "no line names the unknown pool; stderr:\n%s", err);
	}

	/* the persistent key still parses, with a deprecation warning */
	write_conf(&(struct variant){
		.pool = "{ name = \"p\"; level = \"raid1\"; chunk = \"64K\"; "
			"members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; "
			"start_degraded = true; }" });
	rc = run_rtgtd(true, err, sizeof(err));
	ck_assert_msg(rc == 0, "--check with start_degraded exited %d; stderr:\n%s", rc, err);
	ck_assert_msg(line_with(err, "warning: ", "start_degraded is deprecated"),
		      "no deprecation warning; stderr:\n%s", err);

	/* --start-degraded p: serves degraded, one error line for d1.img */
	write_conf(&(struct variant){ 0 });
	rc = run_start_degraded("p", err, sizeof(err));
	ck_assert_msg(rc == 0, "--start-degraded p: exit %d; log:\n%s", rc, err);
	ck_assert_msg(line_with(err, "ERROR", "d1.img (slot 1) is missing"),
		      "no ERROR line for the missing d1.img; log:\n%s", err);
	ck_assert_msg(access(path, F_OK) != 0 && errno == ENOENT,
		      "the missing member d1.img was created");
	/* the degraded start recorded d1 failed: a plain start needs no override */
	nf_start(&D);
	nf_stop_expect_0(&D, "start after the degraded one");
}
END_TEST

/* ---- SIGTERM during I/O ---- */

#define IO_CHUNK (64 * 1024)

struct writer {
	pthread_t th;
	uint16_t port;
	uint32_t bs;
	atomic_uint acked;      /* writes that returned GOOD, in order from LBA 0 */
	atomic_int started;
	char err[256];
};

static void fill_pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 7;

	for (size_t i = 0; i < len; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct harness_login o = { 0 };
	struct iscsi_context *c;
	uint8_t *buf = malloc(IO_CHUNK);

	if (!buf)
		return NULL;
	c = harness_iscsi_login(w->port, &o, w->err, sizeof(w->err));
	if (!c) {
		free(buf);
		return NULL;
	}
	/* 32 MiB raid1 at 80%: keep within 16 MiB */
	for (unsigned i = 0; i < 256; i++) {
		uint64_t lba = (uint64_t)i * (IO_CHUNK / w->bs);
		struct scsi_task *t;

		fill_pattern(buf, IO_CHUNK, i + 1);
		atomic_store(&w->started, 1);
		t = iscsi_write16_sync(c, 0, lba, buf, IO_CHUNK, (int)w->bs, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD) {
			if (t)
				scsi_free_scsi_task(t);
			break;
		}
		scsi_free_scsi_task(t);
		atomic_store(&w->acked, i + 1);
	}
	iscsi_destroy_context(c);
	free(buf);
	return NULL;
}

START_TEST(t11_sigterm_during_io)
{
	struct harness_login o = { 0 };
	struct writer w = { .port = D.port };
	struct scsi_readcapacity16 *rc16;
	struct iscsi_context *c;
	struct scsi_task *t;
	uint8_t *buf;
	char err[512];
	unsigned acked;
	int rc;

	write_conf(&(struct variant){ 0 });
	nf_start(&D);
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c != NULL, "login: %s", err);
	t = iscsi_readcapacity16_sync(c, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ CAPACITY 16 failed");
	rc16 = scsi_datain_unmarshall(t);
	ck_assert_ptr_nonnull(rc16);
	w.bs = rc16->block_length;
	scsi_free_scsi_task(t);
	harness_iscsi_logout(c);

	ck_assert_int_eq(pthread_create(&w.th, NULL, writer_main, &w), 0);
	/* let some writes complete, then stop the daemon under load */
	for (int i = 0; i < 500 && atomic_load(&w.acked) < 20; i++)
		usleep(10000);
	ck_assert_msg(atomic_load(&w.acked) >= 1, "no write completed before SIGTERM (%s)",
		      w.err);
	rc = harness_stop(&D);
	pthread_join(w.th, NULL);
	if (rc)
		harness_dump_log(&D, stderr, 40);
	ck_assert_msg(rc == 0, "SIGTERM during I/O: rtgtd exited %d, expected 0", rc);
	acked = atomic_load(&w.acked);

	/* every acknowledged write must be there after a restart */
	nf_start(&D);
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c != NULL, "login after restart: %s", err);
	buf = malloc(IO_CHUNK);
	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; i < acked; i++) {
		uint64_t lba = (uint64_t)i * (IO_CHUNK / w.bs);

		fill_pattern(buf, IO_CHUNK, i + 1);
		t = iscsi_read16_sync(c, 0, lba, IO_CHUNK, (int)w.bs, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ 16 lba %llu failed: %s",
			      (unsigned long long)lba, iscsi_get_error(c));
		ck_assert_msg(t->datain.size == IO_CHUNK && !memcmp(t->datain.data, buf, IO_CHUNK),
			      "acknowledged write %u of %u (lba %llu) lost across SIGTERM",
			      i, acked, (unsigned long long)lba);
		scsi_free_scsi_task(t);
	}
	free(buf);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, "after the restart");
}
END_TEST

/*
 * A fresh clone has no var/: members to create (create_size) and the
 * control socket may sit in directories that do not exist yet, which rtgtd
 * creates. A file standing where a directory must be is refused with a line
 * naming the member, and nothing is served.
 */
START_TEST(t12_creates_missing_directories)
{
	static char err[16384];
	char path[512];
	struct stat st;
	int rc;

	write_conf(&(struct variant){
		.control = "control = \"run/sub/rtgtd.sock\";",
		.pool = "{ name = \"p\"; level = \"raid1\"; chunk = \"64K\"; "
			"members = ( \"var/a/d0.img\", \"var/b/d1.img\" ); create_size = \"32M\"; }" });
	nf_start(&D);
	nf_stop_expect_0(&D, "start with missing directories");
	snprintf(path, sizeof(path), "%s/var/a/d0.img", D.dir);
	ck_assert_msg(stat(path, &st) == 0 && st.st_size == 32 << 20, "%s was not created", path);
	snprintf(path, sizeof(path), "%s/var/b/d1.img", D.dir);
	ck_assert_msg(stat(path, &st) == 0 && st.st_size == 32 << 20, "%s was not created", path);
	snprintf(path, sizeof(path), "%s/run/sub", D.dir);
	ck_assert_msg(stat(path, &st) == 0 && S_ISDIR(st.st_mode),
		      "the control socket's directory %s was not created", path);

	/* a plain file where the member's directory must be */
	ck_assert_int_eq(harness_write_file(&D, "blocker", "not a directory\n"), 0);
	write_conf(&(struct variant){
		.pool = "{ name = \"p\"; level = \"raid1\"; chunk = \"64K\"; "
			"members = ( \"blocker/d0.img\", \"blocker/d1.img\" ); create_size = \"32M\"; }" });
	rc = run_rtgtd(false, err, sizeof(err));
	ck_assert_msg(rc == 1, "start under a file exited %d, expected 1; stderr:\n%s", rc, err);
	ck_assert_msg(line_with(err, "blocker/d0.img", "Not a directory"),
		      "no line names blocker/d0.img and 'Not a directory'; stderr:\n%s", err);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_check_unknown_key", t01_check_unknown_key),
		CK_CASE("02_check_bad_log_level", t02_check_bad_log_level),
		CK_CASE("03_check_raid5_two_members", t03_check_raid5_two_members),
		CK_CASE("04_check_lun_missing_pool", t04_check_lun_missing_pool),
		CK_CASE("05_check_bad_listen", t05_check_bad_listen),
		CK_CASE("06_check_reports_every_problem", t06_check_reports_every_problem),
		CK_CASE("07_check_good_creates_nothing", t07_check_good_creates_nothing),
		CK_CASE("08_port_in_use", t08_port_in_use),
		CK_CASE("09_member_of_another_pool", t09_member_of_another_pool),
		CK_CASE("10_missing_member", t10_missing_member),
		CK_CASE("11_sigterm_during_io", t11_sigterm_during_io),
		CK_CASE("12_creates_missing_directories", t12_creates_missing_directories),
	};

	return ck_main(&(struct ck_suite_def){
		"net_daemon", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 120 });
}
