/*
 * tests/net/test_net_nop.c - NOP-In keepalive and dead-peer detection
 * (daemon.nop_interval / nop_timeout), max_connections eviction, and
 * back-pressure on a peer that does not read, and a SIGTERM with commands
 * in flight, over raw TCP against a real rtgtd.
 *
 * Each test starts its own rtgtd (nop_interval = 1, nop_timeout = 2), logs
 * in by hand (one Login Request: operational stage straight to full feature
 * phase, no digests) and then behaves like a silent, a live or a busy
 * initiator.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"

#define OP_NOP_OUT 0x00
#define OP_NOP_IN  0x20
#define RSVD_TAG   0xffffffffu

static struct harness_daemon D;

static void start_daemon(const char *daemon_extra)
{
	int rc = harness_init(&D);

	ck_assert_msg(rc == 0, "harness_init: %s", strerror(-rc));
	harness_fini_at_exit(&D);
	rc = harness_conf_std_ex(&D, daemon_extra, "raid1", NULL);
	ck_assert_msg(rc == 0, "config: %s", strerror(-rc));
	rc = harness_start(&D);
	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0, "rtgtd did not start: %s (exit %d)", strerror(-rc), D.last_status);
}

static void stop_daemon(void)
{
	int rc = harness_stop(&D);

	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0, "rtgtd exited %d on SIGTERM", rc);
	harness_fini(&D);
}

/* A logged-in raw connection and the sequence numbers it needs. */
struct raw {
	int fd;
	uint32_t cmdsn;      /* next CmdSN to use */
	uint32_t expstatsn;  /* next StatSN expected */
};

static void raw_login(struct raw *r, uint8_t isid_last)
{
	struct harness_login_hdr h = { .transit = true, .csg = 1, .nsg = 3, .itt = 1,
				       .cmdsn = 1, .isid = { 0x80, 0, 0, 0x4e, 0x4f, isid_last } };
	uint8_t pdu[HARNESS_BHS_LEN + 512], bhs[HARNESS_BHS_LEN], data[1024];
	char kv[400];
	size_t n = 0, len;
	ssize_t got;

	n = harness_kv_add(kv, sizeof(kv), n, "InitiatorName", HARNESS_INITIATOR);
	n = harness_kv_add(kv, sizeof(kv), n, "TargetName", HARNESS_TARGET);
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", "Normal");
	n = harness_kv_add(kv, sizeof(kv), n, "HeaderDigest", "None");
	n = harness_kv_add(kv, sizeof(kv), n, "DataDigest", "None");
	n = harness_kv_add(kv, sizeof(kv), n, "MaxRecvDataSegmentLength", "262144");
	ck_assert(n > 0);
	len = harness_build_login(pdu, sizeof(pdu), &h, kv, n);
	ck_assert(len > 0);
	r->fd = harness_tcp_connect(D.port);
	ck_assert_msg(r->fd >= 0, "connect: %s", strerror(-r->fd));
	ck_assert_int_eq(harness_tcp_send(r->fd, pdu, len), 0);
	got = harness_recv_pdu(r->fd, bhs, data, sizeof(data), 5000);
	ck_assert_msg(got >= 0, "no login response: %s", strerror((int)-got));
	ck_assert_msg((bhs[0] & 0x3f) == HARNESS_OP_LOGIN_RSP, "opcode 0x%02x", bhs[0]);
	ck_assert_msg(bhs[36] == 0, "login refused: status 0x%02x%02x", bhs[36], bhs[37]);
	ck_assert_msg((bhs[1] & 0x80) && (bhs[1] & 3) == 3, "login did not reach FFP (0x%02x)",
		      bhs[1]);
	r->expstatsn = harness_get_be32(bhs + 24) + 1;
	r->cmdsn = harness_get_be32(bhs + 28);
}

/* Waits for the next PDU; returns its opcode, or -EPIPE / -ETIMEDOUT. */
static int next_pdu(struct raw *r, uint8_t bhs[HARNESS_BHS_LEN], int timeout_ms)
{
	uint8_t data[512];
	ssize_t got = harness_recv_pdu(r->fd, bhs, data, sizeof(data), timeout_ms);

	if (got < 0)
		return (int)got;
	return bhs[0] & 0x3f;
}

static bool is_ping(const uint8_t *bhs)
{
	return (bhs[0] & 0x3f) == OP_NOP_IN && harness_get_be32(bhs + 16) == RSVD_TAG &&
	       harness_get_be32(bhs + 20) != RSVD_TAG;
}

/* NOP-Out: an answer to ping @ttt (ITT reserved, immediate), or, with @ttt
 * reserved, a ping of our own with ITT @itt. */
static void send_nop_out(struct raw *r, uint32_t itt, uint32_t ttt)
{
	uint8_t b[HARNESS_BHS_LEN] = { 0 };

	b[0] = 0x40 | OP_NOP_OUT;
	b[1] = 0x80;
	harness_put_be32(b + 16, itt);
	harness_put_be32(b + 20, ttt);
	harness_put_be32(b + 24, r->cmdsn);
	harness_put_be32(b + 28, r->expstatsn);
	ck_assert_int_eq(harness_tcp_send(r->fd, b, sizeof(b)), 0);
}

START_TEST(t01_silent_peer_pinged_then_dropped)
{
	uint8_t bhs[HARNESS_BHS_LEN];
	struct raw r;
	uint64_t t0, t_ping, t_close;
	int op;

	start_daemon("nop_interval = 1; nop_timeout = 2;");
	raw_login(&r, 1);
	t0 = harness_now_ms();
	/* idle for nop_interval: a ping comes (1 s tick granularity) */
	op = next_pdu(&r, bhs, 4000);
	t_ping = harness_now_ms();
	ck_assert_msg(op >= 0, "no NOP-In within 4 s of going silent (%s)", strerror(-op));
	ck_assert_msg(is_ping(bhs), "expected a NOP-In ping, got opcode 0x%02x ITT 0x%x TTT 0x%x",
		      op, harness_get_be32(bhs + 16), harness_get_be32(bhs + 20));
	ck_assert_msg(t_ping - t0 >= 500, "pinged after %llu ms, before nop_interval",
		      (unsigned long long)(t_ping - t0));
	/* a ping takes no StatSN: it carries the next one, unconsumed */
	ck_assert_uint_eq(harness_get_be32(bhs + 24), r.expstatsn);
	/* no answer: dropped after nop_timeout */
	op = next_pdu(&r, bhs, 6000);
	t_close = harness_now_ms();
	ck_assert_msg(op == -EPIPE, "after an unanswered ping: expected a close, got %d (opcode "
		      "0x%02x)", op, op >= 0 ? op : 0);
	ck_assert_msg(t_close - t_ping >= 1500, "closed %llu ms after the ping, before nop_timeout",
		      (unsigned long long)(t_close - t_ping));
	close(r.fd);
	stop_daemon();
}
END_TEST

START_TEST(t02_answered_pings_keep_the_connection)
{
	uint8_t bhs[HARNESS_BHS_LEN];
	struct raw r;
	uint64_t end;
	unsigned pings = 0;

	start_daemon("nop_interval = 1; nop_timeout = 2;");
	raw_login(&r, 2);
	end = harness_now_ms() + 6000;   /* three nop_timeouts */
	while (harness_now_ms() < end) {
		int op = next_pdu(&r, bhs, (int)(end - harness_now_ms()) + 1);

		if (op == -ETIMEDOUT)
			break;
		ck_assert_msg(op >= 0, "connection lost while answering pings (%s, %u pings)",
			      strerror(-op), pings);
		ck_assert_msg(is_ping(bhs), "unexpected opcode 0x%02x", op);
		pings++;
		send_nop_out(&r, RSVD_TAG, harness_get_be32(bhs + 20));
	}
	ck_assert_msg(pings >= 2, "only %u pings in 6 s with nop_interval = 1", pings);
	/* still alive: a ping of our own gets its NOP-In answer */
	send_nop_out(&r, 0x1234, RSVD_TAG);
	for (;;) {
		int op = next_pdu(&r, bhs, 3000);

		ck_assert_msg(op >= 0, "no answer to our NOP-Out (%s)", strerror(-op));
		if (is_ping(bhs))
			continue;
		ck_assert_int_eq(op, OP_NOP_IN);
		ck_assert_uint_eq(harness_get_be32(bhs + 16), 0x1234);
		break;
	}
	close(r.fd);
	stop_daemon();
}
END_TEST

START_TEST(t03_busy_peer_not_pinged)
{
	uint8_t bhs[HARNESS_BHS_LEN];
	struct raw r;
	uint64_t end;
	uint32_t itt = 0x100;

	start_daemon("nop_interval = 1; nop_timeout = 2;");
	raw_login(&r, 3);
	/* traffic every 300 ms for 4 s: the target has no reason to ping */
	end = harness_now_ms() + 4000;
	while (harness_now_ms() < end) {
		int op;

		send_nop_out(&r, itt, RSVD_TAG);
		op = next_pdu(&r, bhs, 2000);
		ck_assert_msg(op >= 0, "no answer to NOP-Out ITT 0x%x (%s)", itt, strerror(-op));
		ck_assert_msg(!is_ping(bhs), "pinged although traffic flows");
		ck_assert_uint_eq(harness_get_be32(bhs + 16), itt);
		itt++;
		usleep(300 * 1000);
	}
	close(r.fd);
	stop_daemon();
}
END_TEST

START_TEST(t04_keepalive_off)
{
	uint8_t bhs[HARNESS_BHS_LEN];
	struct raw r;
	int op;

	start_daemon("nop_interval = 0; nop_timeout = 1;");
	raw_login(&r, 4);
	op = next_pdu(&r, bhs, 3500);
	ck_assert_msg(op == -ETIMEDOUT, "nop_interval = 0: expected silence, got %d", op);
	close(r.fd);
	stop_daemon();
}
END_TEST

/* max_connections: idle sockets never logging in must not lock out a real
 * initiator; the oldest of them make room. */
START_TEST(t05_max_connections_evicts_oldest_idle)
{
	enum { N = 12 };
	int fds[N];
	struct harness_login o = { 0 };
	struct iscsi_context *c;
	struct scsi_task *t;
	char err[512];
	int closed;

	start_daemon("max_sessions = 2; max_connections = 4; login_timeout = 30;");
	for (int i = 0; i < N; i++) {
		fds[i] = harness_tcp_connect(D.port);
		ck_assert_msg(fds[i] >= 0, "connect %d: %s", i, strerror(-fds[i]));
		usleep(20 * 1000);   /* accepted in this order */
	}
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	if (!c)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(c != NULL, "login with %d idle connections and max_connections = 4: %s",
		      N, err);
	t = iscsi_testunitready_sync(c, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "TEST UNIT READY: %s",
		      iscsi_get_error(c));
	scsi_free_scsi_task(t);
	/* the oldest idle sockets were closed, the newest ones are kept */
	closed = harness_tcp_wait_closed(fds[0], 2000);
	ck_assert_msg(closed == 1, "the oldest idle connection is still open (%d)", closed);
	closed = harness_tcp_wait_closed(fds[N - 1], 300);
	ck_assert_msg(closed == 0, "the newest idle connection was closed (%d)", closed);
	/* a logged-in session is never evicted by newcomers */
	for (int i = 0; i < N; i++) {
		close(fds[i]);
		fds[i] = harness_tcp_connect(D.port);
		ck_assert_msg(fds[i] >= 0, "reconnect %d: %s", i, strerror(-fds[i]));
	}
	t = iscsi_testunitready_sync(c, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD,
		      "the logged-in session died when idle connections came: %s",
		      iscsi_get_error(c));
	scsi_free_scsi_task(t);
	harness_iscsi_logout(c);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	stop_daemon();
}
END_TEST

/* A peer that sends but never reads: NOP-Out echoes pile up on the target
 * until it stops reading; memory stays bounded and every echo arrives once
 * the peer reads again. */
START_TEST(t06_peer_not_reading_is_throttled)
{
	enum { DLEN = 64 * 1024, MAX_PDUS = 2000 };
	uint8_t *pdu = calloc(1, HARNESS_BHS_LEN + DLEN), bhs[HARNESS_BHS_LEN];
	struct timeval tv = { .tv_sec = 0, .tv_usec = 500 * 1000 };
	long rss0, rss1;
	unsigned sent = 0, got = 0;
	struct raw r;

	ck_assert_ptr_nonnull(pdu);
	start_daemon("nop_interval = 0;");
	raw_login(&r, 6);
	rss0 = harness_rss_kb(D.pid);
	ck_assert_int_gt(rss0, 0);
	ck_assert_int_eq(setsockopt(r.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	pdu[0] = 0x40 | OP_NOP_OUT;
	pdu[1] = 0x80;
	harness_put_be24(pdu + 5, DLEN);
	harness_put_be32(pdu + 20, RSVD_TAG);
	memset(pdu + HARNESS_BHS_LEN, 0x5a, DLEN);
	/* 125 MiB offered; the target must stop taking it long before */
	while (sent < MAX_PDUS) {
		int rc;

		harness_put_be32(pdu + 16, 0x1000 + sent);
		harness_put_be32(pdu + 24, r.cmdsn);
		harness_put_be32(pdu + 28, r.expstatsn);
		rc = harness_tcp_send(r.fd, pdu, HARNESS_BHS_LEN + DLEN);
		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			break;     /* possibly mid-PDU: stop sending for good */
		ck_assert_msg(rc == 0, "send %u: %s", sent, strerror(-rc));
		sent++;
	}
	ck_assert_msg(sent < MAX_PDUS, "the target took %u x 64 KiB without anyone reading",
		      sent);
	rss1 = harness_rss_kb(D.pid);
	ck_assert_msg(rss1 - rss0 < 32 * 1024, "rtgtd grew by %ld KiB for a peer that does not "
		      "read (%u PDUs sent)", rss1 - rss0, sent);
	/* reading again: every complete NOP-Out gets its echo, in order */
	while (got < sent) {
		int op = next_pdu(&r, bhs, 5000);

		ck_assert_msg(op >= 0, "echo %u of %u missing (%s)", got, sent, strerror(-op));
		ck_assert_int_eq(op, OP_NOP_IN);
		ck_assert_uint_eq(harness_get_be32(bhs + 16), 0x1000 + got);
		ck_assert_uint_eq(harness_get_be24(bhs + 5), DLEN);
		got++;
	}
	close(r.fd);
	free(pdu);
	stop_daemon();
}
END_TEST

/* SIGTERM with commands inside scsi: they are answered (GOOD, with their
 * data), then the connection closes and rtgtd exits 0. Slow members (the
 * lab HDD model at 1 MB/s) keep the reads in flight long enough. */
START_TEST(t07_sigterm_answers_commands_in_flight)
{
	enum { N = 24, LEN = 64 * 1024 };
	uint8_t *cmds = calloc(N, HARNESS_BHS_LEN), bhs[HARNESS_BHS_LEN];
	bool answered[N] = { false };
	unsigned n_answered = 0;
	struct raw r;
	int rc, op;

	ck_assert_ptr_nonnull(cmds);
	rc = harness_init(&D);
	ck_assert_int_eq(rc, 0);
	harness_fini_at_exit(&D);
	rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           nop_interval = 0; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\";\n"
		"            hdd = { mbps = 1; avg_seek_ms = 1.0; rpm = 7200; }; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n", D.port, HARNESS_TARGET_DEFAULT);
	ck_assert_int_eq(rc, 0);
	rc = harness_start(&D);
	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0, "rtgtd did not start: %s", strerror(-rc));
	raw_login(&r, 7);
	/* a TEST UNIT READY first takes the power-on UNIT ATTENTION */
	{
		uint8_t tur[HARNESS_BHS_LEN] = { 0 };

		tur[0] = 0x01;
		tur[1] = 0x80 | 0x01;
		harness_put_be32(tur + 16, 0x4ff);
		harness_put_be32(tur + 24, r.cmdsn++);
		harness_put_be32(tur + 28, r.expstatsn);
		ck_assert_int_eq(harness_tcp_send(r.fd, tur, sizeof(tur)), 0);
		op = next_pdu(&r, bhs, 5000);
		ck_assert_msg(op == 0x21, "TEST UNIT READY: opcode %d", op);
		r.expstatsn = harness_get_be32(bhs + 24) + 1;
	}
	/* N READ 10 of 64 KiB at different places, in one write */
	for (unsigned i = 0; i < N; i++) {
		uint8_t *b = cmds + i * HARNESS_BHS_LEN;

		b[0] = 0x01;
		b[1] = 0x80 | 0x40 | 0x01;                   /* F, R, SIMPLE */
		harness_put_be32(b + 16, 0x500 + i);          /* ITT */
		harness_put_be32(b + 20, LEN);                /* EDTL */
		harness_put_be32(b + 24, r.cmdsn + i);
		harness_put_be32(b + 28, r.expstatsn);
		b[32] = 0x28;                                 /* READ 10 */
		harness_put_be32(b + 34, i * 1024);           /* LBA, 512 KiB apart */
		b[39] = (LEN / 512) >> 8;
		b[40] = (LEN / 512) & 0xff;
	}
	ck_assert_int_eq(harness_tcp_send(r.fd, cmds, (size_t)N * HARNESS_BHS_LEN), 0);
	/* the first Data-In shows the commands are running; then SIGTERM */
	op = next_pdu(&r, bhs, 10000);
	ck_assert_msg(op == 0x25, "expected a Data-In, got %d", op);
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	for (;;) {
		uint32_t itt;

		if (bhs[0] == 0x25 && (bhs[1] & 0x01)) {        /* Data-In with S */
			itt = harness_get_be32(bhs + 16) - 0x500;
			ck_assert_msg(itt < N && !answered[itt], "bad or repeated ITT 0x%x",
				      itt + 0x500);
			ck_assert_msg(bhs[3] == 0, "ITT 0x%x: status 0x%02x", itt + 0x500, bhs[3]);
			answered[itt] = true;
			n_answered++;
		} else {
			ck_assert_msg(bhs[0] == 0x25, "unexpected opcode 0x%02x", bhs[0]);
		}
		op = next_pdu(&r, bhs, 15000);
		if (op == -EPIPE)
			break;
		ck_assert_msg(op >= 0, "neither PDUs nor a close after SIGTERM (%s)",
			      strerror(-op));
	}
	ck_assert_msg(n_answered == N, "only %u of %u commands in flight answered at SIGTERM",
		      n_answered, N);
	rc = harness_stop(&D);
	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0, "rtgtd exited %d", rc);
	close(r.fd);
	free(cmds);
	harness_fini(&D);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_silent_peer_pinged_then_dropped", t01_silent_peer_pinged_then_dropped),
		CK_CASE("02_answered_pings_keep_the_connection", t02_answered_pings_keep_the_connection),
		CK_CASE("03_busy_peer_not_pinged", t03_busy_peer_not_pinged),
		CK_CASE("04_keepalive_off", t04_keepalive_off),
		CK_CASE("05_max_connections_evicts_oldest_idle", t05_max_connections_evicts_oldest_idle),
		CK_CASE("06_peer_not_reading_is_throttled", t06_peer_not_reading_is_throttled),
		CK_CASE("07_sigterm_answers_commands_in_flight", t07_sigterm_answers_commands_in_flight),
	};

	return ck_main(&(struct ck_suite_def){ "net_nop", CK_CASES(cases), .timeout = 60 });
}
