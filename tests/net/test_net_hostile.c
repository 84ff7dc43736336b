/*
 * tests/net/test_net_hostile.c - hostile input over raw TCP against one rtgtd
 * shared by every test: random bytes, oversized and truncated PDUs, SCSI
 * commands before login, absurd login keys, hundreds of idle connections.
 * After each of them the daemon must still serve a normal libiscsi login and
 * keep its RSS under 256 MiB; at the end SIGTERM must make it exit 0.
 *
 * main() starts the daemon, runs the hostile tests (each in its own forked
 * process, as Check does by default), then runs the final checks in the main
 * process itself, since only rtgtd's parent can collect its exit status.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"

#define RSS_LIMIT_KB (256L * 1024)
#define CLOSE_WITHIN_MS 5000
#define LOGIN_WITHIN_MS 5000

static struct harness_daemon D;

static void rss_ok(const char *after)
{
	long kb = harness_rss_kb(D.pid);

	/* a dead rtgtd is a zombie of main(): no VmRSS any more */
	ck_assert_msg(kb > 0, "rtgtd (pid %d) is gone after %s", (int)D.pid, after);
	ck_assert_msg(kb < RSS_LIMIT_KB, "rtgtd RSS %ld KiB after %s (limit %ld)", kb, after,
		      RSS_LIMIT_KB);
}

/* The daemon still works: a libiscsi login + TEST UNIT READY within a bound. */
static void still_serving(const char *after)
{
	struct harness_login o = { 0 };
	struct iscsi_context *c;
	struct scsi_task *t;
	uint64_t t0 = harness_now_ms(), dt;
	char err[512];

	rss_ok(after);
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	dt = harness_now_ms() - t0;
	if (!c)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(c != NULL, "after %s: login failed: %s", after, err);
	ck_assert_msg(dt <= LOGIN_WITHIN_MS, "after %s: login took %llu ms", after,
		      (unsigned long long)dt);
	t = iscsi_testunitready_sync(c, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "after %s: TEST UNIT READY failed: %s",
		      after, iscsi_get_error(c));
	scsi_free_scsi_task(t);
	harness_iscsi_logout(c);
	rss_ok(after);
}

static int connect_or_fail(void)
{
	int fd = harness_tcp_connect(D.port);

	ck_assert_msg(fd >= 0, "connect to 127.0.0.1:%u: %s", D.port, strerror(-fd));
	return fd;
}

static void expect_closed(int fd, const char *what)
{
	int rc = harness_tcp_wait_closed(fd, CLOSE_WITHIN_MS);

	ck_assert_msg(rc == 1, "%s: connection still open after %d ms (rc %d)", what,
		      CLOSE_WITHIN_MS, rc);
}

/* ---- hand-made logins ---- */

struct raw_login {
	uint8_t isid[6];
	uint32_t itt;
	uint32_t expstatsn;
	uint8_t bhs[HARNESS_BHS_LEN];   /* last response */
};

#define RAW_ACCEPTED     0
#define RAW_CLOSED       (-EPIPE)
#define RAW_NO_PROGRESS  (-EAGAIN)  /* status 0 but no transit */

/* Sends one login PDU and reads the response. Returns RAW_*, a positive
 * (class << 8 | detail) for a failure response, or -errno. */
static int login_step(int fd, struct raw_login *l, const struct harness_login_hdr *h0,
		      const void *kv, size_t kvlen)
{
	struct harness_login_hdr h = *h0;
	size_t cap = HARNESS_BHS_LEN + kvlen + 4;
	uint8_t *pdu = malloc(cap), data[8192];
	size_t n;
	ssize_t r;
	int rc;

	ck_assert_ptr_nonnull(pdu);
	memcpy(h.isid, l->isid, 6);
	h.itt = l->itt;
	h.cmdsn = 1;
	h.expstatsn = l->expstatsn;
	n = harness_build_login(pdu, cap, &h, kv, kvlen);
	ck_assert_msg(n > 0, "cannot build a login PDU");
	rc = harness_tcp_send(fd, pdu, n);
	free(pdu);
	if (rc == -EPIPE || rc == -ECONNRESET)
		return RAW_CLOSED;
	ck_assert_msg(rc == 0, "send: %s", strerror(-rc));
	r = harness_recv_pdu(fd, l->bhs, data, sizeof(data), CLOSE_WITHIN_MS);
	if (r == -EPIPE)
		return RAW_CLOSED;
	ck_assert_msg(r >= 0, "no login response within %d ms: %s", CLOSE_WITHIN_MS,
		      strerror((int)-r));
	ck_assert_msg((l->bhs[0] & 0x3f) == HARNESS_OP_LOGIN_RSP,
		      "expected a Login Response, got opcode 0x%02x", l->bhs[0] & 0x3f);
	l->expstatsn = harness_get_be32(l->bhs + 24) + 1;
	if (l->bhs[36] != 0)
		return l->bhs[36] << 8 | l->bhs[37];
	return 1;
}

/*
 * Security stage (AuthMethod=None), then an operational stage carrying the
 * standard keys plus @extra (@extralen bytes of k=v\0 pairs). With @split
 * the operational text goes in continuation PDUs of at most 8192 bytes.
 */
static int raw_login(int fd, const char *extra, size_t extralen, bool split)
{
	struct raw_login l = { .isid = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x01 }, .itt = 1 };
	struct harness_login_hdr h = { 0 };
	char sec[512];
	char *op;
	size_t n = 0, oplen, off;
	int rc;

	n = harness_kv_add(sec, sizeof(sec), n, "InitiatorName", HARNESS_INITIATOR);
	n = harness_kv_add(sec, sizeof(sec), n, "SessionType", "Normal");
	n = harness_kv_add(sec, sizeof(sec), n, "TargetName", HARNESS_TARGET);
	n = harness_kv_add(sec, sizeof(sec), n, "AuthMethod", "None");
	ck_assert(n > 0);
	h.transit = true;
	h.csg = 0;
	h.nsg = 1;
	rc = login_step(fd, &l, &h, sec, n);
	if (rc != 1)
		return rc;
	ck_assert_msg((l.bhs[1] & 0x80) && (l.bhs[1] & 3) == 1,
		      "security stage answer without T / NSG=1 (flags 0x%02x)", l.bhs[1]);

	oplen = 64 + extralen;
	op = malloc(oplen);
	ck_assert_ptr_nonnull(op);
	n = harness_kv_add(op, oplen, 0, "HeaderDigest", "None");
	n = harness_kv_add(op, oplen, n, "DataDigest", "None");
	ck_assert(n > 0);
	memcpy(op + n, extra, extralen);
	oplen = n + extralen;
	h.csg = 1;
	h.nsg = 3;
	off = 0;
	if (split) {
		while (oplen - off > 8192) {
			struct harness_login_hdr c = h;

			c.transit = false;
			c.cont = true;
			rc = login_step(fd, &l, &c, op + off, 8192);
			off += 8192;
			if (rc != 1)
				goto out;
		}
	}
	rc = login_step(fd, &l, &h, op + off, oplen - off);
	if (rc == 1)
		rc = (l.bhs[1] & 0x80) && (l.bhs[1] & 3) == 3 ? RAW_ACCEPTED : RAW_NO_PROGRESS;
out:
	free(op);
	return rc;
}

/* A bad login must end in a failure status (then a close) or a close. */
static void expect_login_refused(const char *extra, size_t extralen, bool split,
				 const char *what)
{
	int fd = connect_or_fail(), rc;

	rc = raw_login(fd, extra, extralen, split);
	ck_assert_msg(rc != RAW_ACCEPTED, "%s: login accepted", what);
	ck_assert_msg(rc != RAW_NO_PROGRESS, "%s: target neither refused nor accepted", what);
	ck_assert_msg(rc == RAW_CLOSED || rc > 0, "%s: unexpected result %d", what, rc);
	if (rc > 0) {
		ck_assert_msg((rc >> 8) != 0, "%s: status class 0", what);
		expect_closed(fd, what);   /* RFC 7143 11.13.5: the target MUST close */
	}
	close(fd);
	still_serving(what);
}

START_TEST(t01_valid_raw_login)
{
	int fd = connect_or_fail(), rc;

	/* proves the hand-made PDUs are right, so refusals below mean something */
	rc = raw_login(fd, "", 0, false);
	ck_assert_msg(rc == RAW_ACCEPTED, "a correct hand-made login was not accepted (%d, "
		      "status 0x%04x)", rc, rc > 0 ? rc : 0);
	close(fd);
	still_serving("a hand-made login");
}
END_TEST

START_TEST(t02_random_bytes)
{
	uint8_t buf[4096];

	for (uint64_t seed = 1; seed <= 6; seed++) {
		char what[64];
		int fd = connect_or_fail(), rc;

		snprintf(what, sizeof(what), "random bytes (seed %llu)", (unsigned long long)seed);
		harness_fill_random(buf, sizeof(buf), seed);
		rc = harness_tcp_send(fd, buf, sizeof(buf));
		ck_assert_msg(rc == 0 || rc == -EPIPE || rc == -ECONNRESET, "send: %s",
			      strerror(-rc));
		expect_closed(fd, what);
		close(fd);
		still_serving(what);
	}
}
END_TEST

START_TEST(t03_huge_data_segment)
{
	struct harness_login_hdr h = { .transit = true, .csg = 0, .nsg = 1, .itt = 1,
				       .cmdsn = 1, .dsl_override = 0xffffff };
	uint8_t pdu[HARNESS_BHS_LEN + 1024];
	char kv[256];
	size_t n = 0, len;
	int fd = connect_or_fail(), rc;

	n = harness_kv_add(kv, sizeof(kv), n, "InitiatorName", HARNESS_INITIATOR);
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", "Normal");
	len = harness_build_login(pdu, sizeof(pdu), &h, kv, n);
	ck_assert(len > 0);
	/* the header promises 16 MiB; send only the start and wait */
	rc = harness_tcp_send(fd, pdu, len);
	ck_assert_msg(rc == 0 || rc == -EPIPE || rc == -ECONNRESET, "send: %s", strerror(-rc));
	expect_closed(fd, "a login PDU with DataSegmentLength 16 MiB");
	close(fd);
	still_serving("a login PDU with DataSegmentLength 16 MiB");
}
END_TEST

START_TEST(t04_truncated_pdus)
{
	struct harness_login_hdr h = { .transit = true, .csg = 0, .nsg = 1, .itt = 1,
				       .cmdsn = 1, .dsl_override = 200 };
	uint8_t pdu[HARNESS_BHS_LEN + 256];
	char kv[256];
	size_t n = 0;
	int fd;

	n = harness_kv_add(kv, sizeof(kv), n, "InitiatorName", HARNESS_INITIATOR);
	ck_assert(harness_build_login(pdu, sizeof(pdu), &h, kv, n) > 0);

	/* half a BHS, then close */
	fd = connect_or_fail();
	ck_assert_int_eq(harness_tcp_send(fd, pdu, 20), 0);
	close(fd);
	still_serving("half a BHS then close");

	/* a BHS promising 200 bytes, 30 sent, then close */
	fd = connect_or_fail();
	ck_assert_int_eq(harness_tcp_send(fd, pdu, HARNESS_BHS_LEN + 30), 0);
	close(fd);
	still_serving("a truncated data segment then close");

	/* half a BHS then a half-close: the target must notice the EOF */
	fd = connect_or_fail();
	ck_assert_int_eq(harness_tcp_send(fd, pdu, 20), 0);
	shutdown(fd, SHUT_WR);
	expect_closed(fd, "half a BHS then EOF");
	close(fd);
	still_serving("half a BHS then EOF");
}
END_TEST

START_TEST(t05_scsi_command_before_login)
{
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 }, rsp[HARNESS_BHS_LEN], data[1024];
	int fd = connect_or_fail(), rc;
	ssize_t r;

	bhs[0] = 0x01;               /* SCSI Command, not immediate */
	bhs[1] = 0x80 | 0x01;        /* F, SIMPLE task attribute */
	harness_put_be32(bhs + 16, 0x1234);   /* ITT */
	harness_put_be32(bhs + 20, 0);        /* EDTL */
	harness_put_be32(bhs + 24, 1);        /* CmdSN */
	bhs[32] = 0x00;              /* CDB: TEST UNIT READY */
	rc = harness_tcp_send(fd, bhs, sizeof(bhs));
	ck_assert_msg(rc == 0 || rc == -EPIPE || rc == -ECONNRESET, "send: %s", strerror(-rc));
	r = harness_recv_pdu(fd, rsp, data, sizeof(data), CLOSE_WITHIN_MS);
	if (r != -EPIPE) {
		unsigned op = rsp[0] & 0x3f;

		ck_assert_msg(r >= 0, "neither an answer nor a close within %d ms: %s",
			      CLOSE_WITHIN_MS, strerror((int)-r));
		ck_assert_msg(op == HARNESS_OP_REJECT ||
			      (op == HARNESS_OP_LOGIN_RSP && rsp[36] != 0),
			      "a SCSI command before login was answered with opcode 0x%02x", op);
		/* after rejecting a non-login PDU in the login phase, the target
		 * must not keep a half-open, unauthenticated connection either */
		expect_closed(fd, "a SCSI command before login");
	}
	close(fd);
	still_serving("a SCSI command PDU before login");
}
END_TEST

static void absurd_one(const char *key, const char *value)
{
	char kv[256], what[300];
	size_t n = harness_kv_add(kv, sizeof(kv), 0, key, value);

	ck_assert(n > 0);
	snprintf(what, sizeof(what), "login with %s=%s", key, value);
	expect_login_refused(kv, n, false, what);
}

START_TEST(t06_mrdsl_zero)
{
	absurd_one("MaxRecvDataSegmentLength", "0");
}
END_TEST

START_TEST(t07_mrdsl_huge)
{
	/* RFC 7143 13.12: 512 to 2^24-1 */
	absurd_one("MaxRecvDataSegmentLength", "99999999999");
}
END_TEST

START_TEST(t08_maxburst_not_a_number)
{
	absurd_one("MaxBurstLength", "abc");
}
END_TEST

static char *many_keys(unsigned count, size_t *len)
{
	size_t cap = (size_t)count * 32, n = 0;
	char *buf = malloc(cap), key[32];

	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; i < count; i++) {
		snprintf(key, sizeof(key), "X-org.example.k%05u", i);
		n = harness_kv_add(buf, cap, n, key, "v");
		ck_assert(n > 0);
	}
	*len = n;
	return buf;
}

START_TEST(t09_ten_thousand_keys)
{
	size_t len;
	char *kv = many_keys(10000, &len);

	expect_login_refused(kv, len, false, "10000 keys in one login PDU");
	expect_login_refused(kv, len, true, "10000 keys in continuation PDUs");
	free(kv);
}
END_TEST

START_TEST(t10_huge_value)
{
	size_t vlen = 9000, cap = vlen + 64, n;
	char *kv = malloc(cap), *v = malloc(vlen + 1);

	ck_assert(kv && v);
	memset(v, 'a', vlen);
	v[vlen] = '\0';
	n = harness_kv_add(kv, cap, 0, "InitiatorAlias", v);
	ck_assert(n > 0);
	expect_login_refused(kv, n, false, "a 9000-byte value in one PDU");
	expect_login_refused(kv, n, true, "a 9000-byte value in continuation PDUs");
	free(kv);
	free(v);
}
END_TEST

START_TEST(t11_many_idle_connections)
{
	enum { N = 300 };
	int fds[N], opened = 0;

	for (int i = 0; i < N; i++) {
		fds[i] = harness_tcp_connect(D.port);
		ck_assert_msg(fds[i] >= 0, "connection %d of %d: %s", i, N, strerror(-fds[i]));
		opened++;
	}
	still_serving("300 idle TCP connections");
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	still_serving("closing 300 idle TCP connections");
}
END_TEST

/* A connection in full feature phase (hand-made login), for abuse after login. */
static int logged_in_connection(void)
{
	int fd = connect_or_fail(), rc = raw_login(fd, "", 0, false);

	ck_assert_msg(rc == RAW_ACCEPTED, "hand-made login failed (%d)", rc);
	return fd;
}

/*
 * After login RFC 7143 lets the target answer a bad PDU with a Reject and go
 * on (11.17), or drop the connection. Either is fine; silence is not: the
 * garbage must neither be swallowed unnoticed nor executed. Returns after a
 * Reject or a close within CLOSE_WITHIN_MS, skipping other PDUs.
 */
static void expect_reject_or_close(int fd, const char *what)
{
	uint8_t rsp[HARNESS_BHS_LEN], data[512];
	unsigned others = 0;

	for (;;) {
		ssize_t r = harness_recv_pdu(fd, rsp, data, sizeof(data), CLOSE_WITHIN_MS);

		if (r == -EPIPE)
			return;
		ck_assert_msg(r >= 0, "%s: neither a Reject nor a close within %d ms (%u other "
			      "PDUs): %s", what, CLOSE_WITHIN_MS, others, strerror((int)-r));
		if ((rsp[0] & 0x3f) == HARNESS_OP_REJECT)
			return;
		ck_assert_msg((rsp[0] & 0x3f) != 0x21 || rsp[3] != 0,
			      "%s: garbage was executed (SCSI Response with GOOD status)", what);
		others++;
	}
}

START_TEST(t12_random_bytes_after_login)
{
	uint8_t buf[4096];

	for (uint64_t seed = 11; seed <= 13; seed++) {
		char what[64];
		int fd = logged_in_connection(), rc;

		snprintf(what, sizeof(what), "random bytes after login (seed %llu)",
			 (unsigned long long)seed);
		harness_fill_random(buf, sizeof(buf), seed);
		rc = harness_tcp_send(fd, buf, sizeof(buf));
		ck_assert_msg(rc == 0 || rc == -EPIPE || rc == -ECONNRESET, "send: %s",
			      strerror(-rc));
		expect_reject_or_close(fd, what);
		close(fd);
		still_serving(what);
	}
}
END_TEST

START_TEST(t13_oversized_command_after_login)
{
	const char *what = "a SCSI command with DataSegmentLength 16 MiB after login";
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 }, junk[4096] = { 0 };
	int fd = logged_in_connection(), rc;

	/* WRITE 10 of 1 block with immediate data, claiming 16 MiB - 1 of data:
	 * far over the MaxRecvDataSegmentLength the target declared */
	bhs[0] = 0x01;
	bhs[1] = 0x80 | 0x20 | 0x01;              /* F, W, SIMPLE */
	harness_put_be24(bhs + 5, 0xffffff);
	harness_put_be32(bhs + 16, 0x77);         /* ITT */
	harness_put_be32(bhs + 20, 512);          /* EDTL */
	harness_put_be32(bhs + 24, 1);            /* CmdSN */
	harness_put_be32(bhs + 28, 2);            /* ExpStatSN */
	bhs[32] = 0x2a;                           /* WRITE 10 */
	bhs[40] = 1;                              /* transfer length 1 (CDB bytes 7-8) */
	rc = harness_tcp_send(fd, bhs, sizeof(bhs));
	if (!rc)
		rc = harness_tcp_send(fd, junk, sizeof(junk));
	ck_assert_msg(rc == 0 || rc == -EPIPE || rc == -ECONNRESET, "send: %s", strerror(-rc));
	expect_reject_or_close(fd, what);
	close(fd);
	still_serving(what);
}
END_TEST

static Suite *hostile_suite(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_valid_raw_login", t01_valid_raw_login),
		CK_CASE("02_random_bytes", t02_random_bytes),
		CK_CASE("03_huge_data_segment", t03_huge_data_segment),
		CK_CASE("04_truncated_pdus", t04_truncated_pdus),
		CK_CASE("05_scsi_command_before_login", t05_scsi_command_before_login),
		CK_CASE("06_mrdsl_zero", t06_mrdsl_zero),
		CK_CASE("07_mrdsl_huge", t07_mrdsl_huge),
		CK_CASE("08_maxburst_not_a_number", t08_maxburst_not_a_number),
		CK_CASE("09_ten_thousand_keys", t09_ten_thousand_keys),
		CK_CASE("10_huge_value", t10_huge_value),
		CK_CASE("11_many_idle_connections", t11_many_idle_connections),
		CK_CASE("12_random_bytes_after_login", t12_random_bytes_after_login),
		CK_CASE("13_oversized_command_after_login", t13_oversized_command_after_login),
	};

	return ck_suite(&(struct ck_suite_def){
		"net_hostile", CK_CASES(cases), .timeout = 90 });
}

/* ---- run in main(), after all of the above ---- */

START_TEST(t98_rss_after_all)
{
	ck_assert_msg(harness_alive(&D), "rtgtd died (exit %d)", D.last_status);
	rss_ok("all hostile tests");
}
END_TEST

START_TEST(t99_sigterm_exits_0)
{
	int rc = harness_stop(&D);

	if (rc)
		harness_dump_log(&D, stderr, 40);
	ck_assert_msg(rc == 0, "rtgtd exited %d on SIGTERM after the hostile tests", rc);
}
END_TEST

static Suite *final_suite(void)
{
	const struct ck_case cases[] = {
		CK_CASE("98_rss_after_all", t98_rss_after_all),
		CK_CASE("99_sigterm_exits_0", t99_sigterm_exits_0),
	};

	return ck_suite(&(struct ck_suite_def){ "net_hostile_final", CK_CASES(cases) });
}

/* Repeats the failures (after the daemon's log), then one summary of both
 * runners in Check's format: the tail of the output is what
 * scripts/run-tests.sh shows. */
static int write_conf(struct harness_daemon *d)
{
	return harness_conf_std(d, "raid1", NULL);
}

int main(void)
{
	return nf_main_shared(&D, "test_net_hostile", write_conf, hostile_suite(), final_suite());
}
