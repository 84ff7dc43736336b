/*
 * tests/net/test_net_hostile_limits.c - what an unauthenticated or revoked
 * peer can hold or learn, against a real rtgtd (a daemon per case):
 * idle discovery sessions against max_sessions and their idle timeout,
 * logins that were half done when a reload revoked them, SendTargets per
 * portal, and NOP-Out payloads parked out of CmdSN order against the
 * memory budget. Raw PDUs built by hand; libiscsi for the normal logins
 * that must keep working.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
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
#include "tests/lib/raw_login.h"
#include "tests/lib/rtgtctl_json.h"

#define T2 "iqn.2026-11.org.rtgt:second"
#define T3 "iqn.2026-11.org.rtgt:third"
#define INI_A "iqn.2026-11.org.example:a"
#define WAIT_MS 5000

#define OP_NOP_OUT 0x00
#define OP_TEXT_REQ 0x04
#define OP_NOP_IN 0x20
#define OP_TEXT_RSP 0x24

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* The whole file: @daemon_extra in the daemon group, pool p (raid1),
 * portal lo on 127.0.0.1:D.port plus @portals_extra, and @targets. */
static void write_conf(const char *daemon_extra, const char *portals_extra, const char *targets)
{
	int rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; state_dir = \"state\";\n"
		"           log_level = \"info\"; %s };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" );\n"
		"            create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; }%s );\n"
		"targets = ( %s );\n",
		daemon_extra ? daemon_extra : "", D.port, portals_extra ? portals_extra : "",
		targets);

	ck_assert_int_eq(rc, 0);
}

static void reload(void)
{
	char out[4096];
	int rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);

	if (rc)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(rc == 0, "rtgtctl reload exited %d: %s", rc, out);
}

static int tcp_connect_to(const char *ip, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
	ck_assert_int_eq(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s:%u: %s",
		      ip, port, strerror(errno));
	return fd;
}

static void normal_login_works(uint32_t isid, const char *after)
{
	struct harness_login o = { .isid_rnd = isid };
	struct iscsi_context *c;
	struct scsi_task *t;
	char err[512];

	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	if (!c)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(c != NULL, "after %s: normal login refused: %s", after, err);
	t = iscsi_testunitready_sync(c, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "after %s: TEST UNIT READY failed: %s",
		      after, iscsi_get_error(c));
	scsi_free_scsi_task(t);
	harness_iscsi_logout(c);
}

/* ---- hand-made login: tests/lib/raw_login.h ---- */

/* SendTargets=All on a logged-in discovery connection: the answer's text
 * (NUL separated pairs) into @out, its length returned. */
static size_t raw_sendtargets(struct rl_conn *r, char *out, size_t cap)
{
	static const char q[] = "SendTargets=All";
	uint8_t bhs[HARNESS_BHS_LEN];
	ssize_t n;

	rl_send_ffp(r, OP_TEXT_REQ, 0x100 + r->cmdsn, r->cmdsn, q, sizeof(q));
	r->cmdsn++;
	n = harness_recv_pdu(r->fd, bhs, (uint8_t *)out, cap - 1, WAIT_MS);
	ck_assert_msg(n >= 0, "no Text Response: %s", strerror((int)-n));
	ck_assert_msg((bhs[0] & 0x3f) == OP_TEXT_RSP, "opcode 0x%02x instead of Text Response",
		      bhs[0]);
	ck_assert_msg(bhs[1] & 0x80, "Text Response not final (answer too long for the test)");
	r->expstatsn = harness_get_be32(bhs + 24) + 1;
	if ((size_t)n > cap - 1)
		n = (ssize_t)cap - 1;
	out[n] = '\0';
	return (size_t)n;
}

static bool text_has(const char *text, size_t len, const char *pair)
{
	for (size_t off = 0; off < len; off += strlen(text + off) + 1)
		if (!strcmp(text + off, pair))
			return true;
	return false;
}

static void text_print(const char *text, size_t len, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t off = 0; off < len && o + 2 < cap; off += strlen(text + off) + 1)
		o += (size_t)snprintf(buf + o, cap - o, "%s ", text + off);
}

/* ---- 01/02: discovery sessions ---- */

START_TEST(t01_discovery_cannot_lock_out)
{
	enum { N = 16 };               /* the default max_discovery_sessions */
	struct rl_conn d[N + 1];
	int rc;

	/* only keys older than the discovery cap: the same file shows the
	 * lock-out on a daemon without it */
	write_conf("max_sessions = 2; max_connections = 2;", NULL, HARNESS_TARGET_DEFAULT);
	nf_start(&D);
	/* eight times max_sessions (and max_connections) idle discovery
	 * sessions */
	for (int i = 0; i < N; i++) {
		rl_open(&d[i], harness_tcp_connect(D.port), (uint8_t)(i + 1));
		ck_assert(d[i].fd >= 0);
		rc = rl_login(&d[i], INI_A, NULL);
		ck_assert_msg(rc == RL_OK, "discovery login %d: %d", i, rc);
	}
	/* one more than max_discovery_sessions: refused, out of resources */
	rl_open(&d[N], harness_tcp_connect(D.port), N + 1);
	ck_assert(d[N].fd >= 0);
	rc = rl_login(&d[N], INI_A, NULL);
	ck_assert_msg(rc == 0x0302, "discovery login over max_discovery_sessions: %d (want 0x0302)",
		      rc);
	close(d[N].fd);
	/* both normal sessions max_sessions allows still log in */
	{
		struct harness_login o1 = { .isid_rnd = 11 }, o2 = { .isid_rnd = 12 };
		struct iscsi_context *c1 = nf_login(&D, 0, &o1), *c2 = nf_login(&D, 0, &o2);

		harness_iscsi_logout(c1);
		harness_iscsi_logout(c2);
	}
	normal_login_works(13, "16 idle discovery sessions");
	for (int i = 0; i < N; i++)
		close(d[i].fd);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t02_idle_discovery_closed)
{
	struct rl_conn idle, nopper, busy;
	char text[4096];
	uint64_t t0;
	int rc;

	write_conf("discovery_idle_timeout = 2;", NULL, HARNESS_TARGET_DEFAULT);
	nf_start(&D);
	rl_open(&idle, harness_tcp_connect(D.port), 1);
	rl_open(&nopper, harness_tcp_connect(D.port), 2);
	rl_open(&busy, harness_tcp_connect(D.port), 3);
	ck_assert_int_eq(rl_login(&idle, INI_A, NULL), RL_OK);
	ck_assert_int_eq(rl_login(&nopper, INI_A, NULL), RL_OK);
	ck_assert_int_eq(rl_login(&busy, INI_A, NULL), RL_OK);
	t0 = harness_now_ms();
	/* nopper pings (immediate NOP-Out, no answer asked) every 500 ms:
	 * that is not use; busy asks SendTargets every 500 ms */
	while (harness_now_ms() - t0 < 3500) {
		uint8_t bhs[HARNESS_BHS_LEN] = { 0 };

		bhs[0] = 0x40 | OP_NOP_OUT;
		bhs[1] = 0x80;
		harness_put_be32(bhs + 16, 0xffffffff);
		harness_put_be32(bhs + 20, 0xffffffff);
		harness_put_be32(bhs + 24, nopper.cmdsn);
		harness_put_be32(bhs + 28, nopper.expstatsn);
		harness_tcp_send(nopper.fd, bhs, sizeof(bhs));
		raw_sendtargets(&busy, text, sizeof(text));
		usleep(500 * 1000);
	}
	rc = harness_tcp_wait_closed(idle.fd, 2500);
	ck_assert_msg(rc == 1, "idle discovery session still open %llu ms after login (rc %d)",
		      (unsigned long long)(harness_now_ms() - t0), rc);
	rc = harness_tcp_wait_closed(nopper.fd, 100);
	ck_assert_msg(rc == 1, "a discovery session sending only NOP-Outs was kept (rc %d)", rc);
	/* the one in use still answers */
	raw_sendtargets(&busy, text, sizeof(text));
	ck_assert_msg(strstr(text, "TargetName=" HARNESS_TARGET), "SendTargets: %s", text);
	close(idle.fd);
	close(nopper.fd);
	close(busy.fd);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 03: a reload revokes logins half done ---- */

#define TGT(iqn, allow, extra)                                                       \
	"{ iqn = \"" iqn "\"; portals = ( \"lo\" );\n"                                \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%\"; } );\n" \
	"  allow = ( " allow " ); " extra " }"

static void revoked_midlogin(const char *after_targets, const char *what)
{
	struct rl_conn r, fresh;
	int rc;

	write_conf(NULL, NULL, TGT(HARNESS_TARGET, "\"" INI_A "\"", ""));
	nf_start(&D);
	/* one connection through the security stage, one only connected */
	rl_open(&r, harness_tcp_connect(D.port), 1);
	rl_open(&fresh, harness_tcp_connect(D.port), 2);
	ck_assert(r.fd >= 0 && fresh.fd >= 0);
	rc = rl_security(&r, INI_A, HARNESS_TARGET);
	ck_assert_msg(rc == RL_OK, "%s: security stage before the reload: %d", what, rc);
	write_conf(NULL, NULL, after_targets);
	reload();
	rc = rl_operational(&r);
	ck_assert_msg(rc != RL_OK && rc != -EAGAIN,
		      "%s: a login begun before the reload completed after it", what);
	ck_assert_msg(rc == RL_CLOSED || (rc >> 8) == 2, "%s: status 0x%04x", what, rc);
	rc = rl_login(&fresh, INI_A, HARNESS_TARGET);
	ck_assert_msg(rc != RL_OK, "%s: a connection opened before the reload logged in", what);
	ck_assert_msg(rc == RL_CLOSED || (rc >> 8) == 2, "%s: status 0x%04x", what, rc);
	close(r.fd);
	close(fresh.fd);
	nf_stop_expect_0(&D, what);
}

START_TEST(t03_reload_revokes_midlogin)
{
	switch (_i) {
	case 0:
		revoked_midlogin(TGT(HARNESS_TARGET, "\"iqn.2026-11.org.example:other\"", ""),
				 "initiator removed from allow");
		break;
	case 1:
		revoked_midlogin(TGT(HARNESS_TARGET, "\"" INI_A "\"",
				     "chap = { user = \"u\"; secret = \"secret-of-12+\"; };"),
				 "CHAP added");
		break;
	default:
		revoked_midlogin(TGT(T2, "\"" INI_A "\"", ""), "target removed");
		break;
	}
}
END_TEST

/* A session on a target a reload removes ends. */
START_TEST(t04_session_of_removed_target_ends)
{
	struct rl_conn r;
	int rc;

	write_conf(NULL, NULL, TGT(HARNESS_TARGET, "\"ALL\"", "") ", " TGT(T2, "\"ALL\"", ""));
	nf_start(&D);
	rl_open(&r, harness_tcp_connect(D.port), 1);
	ck_assert_int_eq(rl_login(&r, INI_A, HARNESS_TARGET), RL_OK);
	write_conf(NULL, NULL, TGT(T2, "\"ALL\"", ""));
	reload();
	rc = harness_tcp_wait_closed(r.fd, WAIT_MS);
	ck_assert_msg(rc == 1, "session of a removed target still open (rc %d)", rc);
	close(r.fd);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 05/06: SendTargets per portal and after a reload ---- */

START_TEST(t05_sendtargets_per_portal)
{
	uint16_t p2;
	char portals[160], targets[1024], text[4096], shown[4096], a1[64], a2[64];
	struct rl_conn a, b;
	size_t n;

	ck_assert_int_eq(harness_free_port(&p2), 0);
	snprintf(portals, sizeof(portals), ", { name = \"lo2\"; listen = \"127.0.0.2:%u\"; }", p2);
	/* HARNESS_TARGET on both portals, T2 only on lo2, T3 only on lo */
	snprintf(targets, sizeof(targets),
		 "{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\", \"lo2\" ); allow = ( \"ALL\" );\n"
		 "  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"30%%\"; } ); },\n"
		 "{ iqn = \"" T2 "\"; portals = ( \"lo2\" ); allow = ( \"ALL\" );\n"
		 "  luns = ( { lun = 0; pool = \"p\"; volume = \"v1\"; size = \"30%%\"; } ); },\n"
		 "{ iqn = \"" T3 "\"; portals = ( \"lo\" ); allow = ( \"ALL\" );\n"
		 "  luns = ( { lun = 0; pool = \"p\"; volume = \"v2\"; size = \"30%%\"; } ); }");
	write_conf(NULL, portals, targets);
	nf_start(&D);
	snprintf(a1, sizeof(a1), "TargetAddress=127.0.0.1:%u,1", D.port);
	snprintf(a2, sizeof(a2), "TargetAddress=127.0.0.2:%u,2", p2);

	rl_open(&a, harness_tcp_connect(D.port), 1);
	ck_assert_int_eq(rl_login(&a, INI_A, NULL), RL_OK);
	n = raw_sendtargets(&a, text, sizeof(text));
	text_print(text, n, shown, sizeof(shown));
	ck_assert_msg(!strstr(shown, T2), "portal lo lists %s, only on lo2: %s", T2, shown);
	ck_assert_msg(text_has(text, n, "TargetName=" HARNESS_TARGET) && text_has(text, n, a1) &&
		      text_has(text, n, a2),
		      "portal lo: the target on both portals without both addresses: %s", shown);
	ck_assert_msg(text_has(text, n, "TargetName=" T3), "portal lo: %s missing: %s", T3, shown);
	close(a.fd);

	rl_open(&b, tcp_connect_to("127.0.0.2", p2), 2);
	ck_assert_int_eq(rl_login(&b, INI_A, NULL), RL_OK);
	n = raw_sendtargets(&b, text, sizeof(text));
	text_print(text, n, shown, sizeof(shown));
	ck_assert_msg(!strstr(shown, T3), "portal lo2 lists %s, only on lo: %s", T3, shown);
	ck_assert_msg(text_has(text, n, "TargetName=" T2) &&
		      text_has(text, n, "TargetName=" HARNESS_TARGET) && text_has(text, n, a1) &&
		      text_has(text, n, a2), "portal lo2: %s", shown);
	close(b.fd);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* A discovery session open across a reload sees the new configuration. */
START_TEST(t06_sendtargets_after_reload)
{
	char text[4096], shown[4096];
	struct rl_conn a;
	size_t n;

	write_conf(NULL, NULL, TGT(HARNESS_TARGET, "\"ALL\"", ""));
	nf_start(&D);
	rl_open(&a, harness_tcp_connect(D.port), 1);
	ck_assert_int_eq(rl_login(&a, INI_A, NULL), RL_OK);
	n = raw_sendtargets(&a, text, sizeof(text));
	ck_assert_msg(text_has(text, n, "TargetName=" HARNESS_TARGET), "before the reload");
	/* the target goes, T2 comes, T3 comes but not for this initiator */
	write_conf(NULL, NULL, TGT(T2, "\"ALL\"", "") ", "
			       TGT(T3, "\"iqn.2026-11.org.example:other\"", ""));
	reload();
	n = raw_sendtargets(&a, text, sizeof(text));
	text_print(text, n, shown, sizeof(shown));
	ck_assert_msg(!strstr(shown, HARNESS_TARGET), "a removed target still listed: %s", shown);
	ck_assert_msg(!strstr(shown, T3), "a target this initiator may not use listed: %s", shown);
	ck_assert_msg(text_has(text, n, "TargetName=" T2), "an added target missing: %s", shown);
	close(a.fd);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 07: payloads parked out of CmdSN order ---- */

START_TEST(t07_queued_nops_bounded)
{
	enum { N = 127, LEN = 256 * 1024 };
	const long limit_kb = 16 * 1024;
	uint8_t *payload = malloc(LEN), bhs[HARNESS_BHS_LEN], data[512];
	unsigned nopin = 0, rejects = 0;
	long before, after;
	struct rl_conn r;

	ck_assert_ptr_nonnull(payload);
	write_conf(NULL, NULL, HARNESS_TARGET_DEFAULT);
	nf_start(&D);
	normal_login_works(1, "start");
	rl_open(&r, harness_tcp_connect(D.port), 1);
	ck_assert_int_eq(rl_login(&r, INI_A, NULL), RL_OK);
	before = harness_rss_kb(D.pid);
	ck_assert(before > 0);
	memset(payload, 0x5a, LEN);
	/* CmdSN 2..128: all inside the window, all waiting for CmdSN 1 */
	for (uint32_t i = 0; i < N; i++)
		rl_send_ffp(&r, OP_NOP_OUT, 0x1000 + i, 2 + i, payload, LEN);
	usleep(300 * 1000);
	after = harness_rss_kb(D.pid);
	ck_assert_msg(after > 0, "rtgtd gone");
	ck_assert_msg(after - before < limit_kb,
		      "%u NOP-Outs of %u KiB queued out of order grew rtgtd by %ld KiB "
		      "(limit %ld)", N, LEN / 1024, after - before, limit_kb);
	/* the gap filled: each waiting one is answered (NOP-In) or refused
	 * (Reject), none silently lost */
	rl_send_ffp(&r, OP_NOP_OUT, 0x999, 1, NULL, 0);
	while (nopin + rejects < N + 1) {
		ssize_t n = harness_recv_pdu(r.fd, bhs, data, sizeof(data), WAIT_MS);

		if (n < 0)
			break;
		if ((bhs[0] & 0x3f) == OP_NOP_IN)
			nopin++;
		else if ((bhs[0] & 0x3f) == HARNESS_OP_REJECT)
			rejects++;
	}
	ck_assert_msg(nopin + rejects == N + 1 || harness_tcp_wait_closed(r.fd, 100) == 1,
		      "got %u NOP-In and %u Reject for %u NOP-Outs, connection still open",
		      nopin, rejects, N + 1);
	ck_assert_msg(rejects > 0 || nopin + rejects < N + 1,
		      "every queued 256 KiB payload was kept (no Reject, no close)");
	close(r.fd);
	normal_login_works(2, "queued NOP-Outs");
	free(payload);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 08: CHAP guesses slowed per address and name ---- */

#define CHAP_USER "u"
#define CHAP_SECRET "secret-of-12+"

/* One CHAP login with a wrong response as @initiator. Returns how long
 * the target took to answer the CHAP response (ms); the answer must be
 * 02/01. */
static uint64_t chap_guess(const char *initiator, uint8_t isid_low)
{
	struct rl_conn r;
	char kv[512];
	size_t n;
	uint64_t t0;
	int rc;

	rl_open(&r, harness_tcp_connect(D.port), isid_low);
	ck_assert(r.fd >= 0);
	n = harness_kv_add(kv, sizeof(kv), 0, "InitiatorName", initiator);
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", "Normal");
	n = harness_kv_add(kv, sizeof(kv), n, "TargetName", HARNESS_TARGET);
	n = harness_kv_add(kv, sizeof(kv), n, "AuthMethod", "CHAP,None");
	ck_assert(n > 0);
	rc = rl_step(&r, true, 0, 1, kv, n);
	ck_assert_msg(rc == RL_OK, "AuthMethod step: %d", rc);
	n = harness_kv_add(kv, sizeof(kv), 0, "CHAP_A", "5");
	rc = rl_step(&r, true, 0, 1, kv, n);
	ck_assert_msg(rc == RL_OK, "CHAP_A step: %d", rc);
	n = harness_kv_add(kv, sizeof(kv), 0, "CHAP_N", CHAP_USER);
	n = harness_kv_add(kv, sizeof(kv), n, "CHAP_R", "0x00112233445566778899aabbccddeeff");
	ck_assert(n > 0);
	t0 = harness_now_ms();
	rc = rl_step(&r, true, 0, 1, kv, n);
	t0 = harness_now_ms() - t0;
	ck_assert_msg(rc == 0x0201, "a wrong CHAP response got %d, not 02/01", rc);
	close(r.fd);
	return t0;
}

static unsigned log_count(const char *needle)
{
	return harness_log_count(&D, needle);
}

START_TEST(t08_chap_failures_slowed)
{
	uint64_t dt[6], t0;
	struct harness_login ok = { .initiator = INI_A, .user = CHAP_USER, .secret = CHAP_SECRET };
	struct iscsi_context *c;

	write_conf(NULL, NULL, TGT(HARNESS_TARGET, "\"ALL\"",
				   "chap = { user = \"" CHAP_USER "\"; secret = \"" CHAP_SECRET "\"; };"));
	nf_start(&D);
	/* five wrong guesses in a row: each waits twice as long as the last
	 * (0, 250, 500, 1000, 2000 ms) */
	for (int i = 0; i < 5; i++)
		dt[i] = chap_guess(INI_A, (uint8_t)(i + 1));
	/* generous bounds where no wait is due: the machine may be loaded */
	ck_assert_msg(dt[0] < 1000, "first wrong CHAP answer took %llu ms",
		      (unsigned long long)dt[0]);
	ck_assert_msg(dt[4] >= 1500, "fifth wrong guess in a row answered after %llu ms: "
		      "not slowed (%llu %llu %llu %llu)", (unsigned long long)dt[4],
		      (unsigned long long)dt[0], (unsigned long long)dt[1],
		      (unsigned long long)dt[2], (unsigned long long)dt[3]);
	/* another initiator name from the same address waits as well */
	dt[5] = chap_guess("iqn.2026-11.org.example:b", 9);
	ck_assert_msg(dt[5] >= 1500, "a guess under another name from the same address "
		      "answered after %llu ms", (unsigned long long)dt[5]);
	/* one log line per failure, saying what it costs */
	ck_assert_uint_eq(log_count("CHAP authentication failed ("), 6);
	ck_assert_msg(log_count("next CHAP response waits") == 6, "log lines without the delay");
	/* the right secret still gets in (after its turn), and wipes the slate */
	t0 = harness_now_ms();
	c = nf_login(&D, 0, &ok);
	t0 = harness_now_ms() - t0;
	harness_iscsi_logout(c);
	ck_assert_msg(t0 >= 1000, "the login right after failures was not delayed (%llu ms)",
		      (unsigned long long)t0);
	dt[0] = chap_guess(INI_A, 10);
	ck_assert_msg(dt[0] < 1000, "after a success a wrong answer still waited %llu ms",
		      (unsigned long long)dt[0]);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 09: command buffers bounded over the whole daemon ---- */

/* A WRITE(10) of @blocks at LBA 0, W set, EDTL @edtl, no data sent. */
static void raw_write10(struct rl_conn *r, uint32_t itt, uint32_t edtl, uint16_t blocks)
{
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 };

	bhs[0] = 0x01;                    /* SCSI Command */
	bhs[1] = 0x80 | 0x20 | 0x01;      /* F, W, SIMPLE */
	harness_put_be32(bhs + 16, itt);
	harness_put_be32(bhs + 20, edtl);
	harness_put_be32(bhs + 24, r->cmdsn++);
	harness_put_be32(bhs + 28, r->expstatsn);
	bhs[32] = 0x2a;
	bhs[39] = (uint8_t)(blocks >> 8);
	bhs[40] = (uint8_t)blocks;
	ck_assert_int_eq(harness_tcp_send(r->fd, bhs, sizeof(bhs)), 0);
}

/* The answer to one command: 0x31 (R2T) or the SCSI status of a SCSI
 * Response (its opcode 0x21), -1 when nothing came. */
static int raw_cmd_answer(struct rl_conn *r)
{
	uint8_t bhs[HARNESS_BHS_LEN], data[512];
	ssize_t n = harness_recv_pdu(r->fd, bhs, data, sizeof(data), WAIT_MS);

	if (n < 0)
		return -1;
	if ((bhs[0] & 0x3f) == 0x31)
		return 0x31;
	ck_assert_msg((bhs[0] & 0x3f) == 0x21, "opcode 0x%02x instead of R2T or a response",
		      bhs[0]);
	return bhs[3];
}

/*
 * 16 connections each hold 64 MiB of write buffers (four 16 MiB WRITEs
 * whose data never comes: each waits for its Data-Out), which is the whole
 * daemon's budget (ISCSI_SRV_BUF_BUDGET, 1 GiB). A 17th connection still
 * gets one command through (it holds nothing), its second is answered
 * TASK SET FULL: the sum over connections is bounded, not only each one.
 */
START_TEST(t09_command_buffers_bounded)
{
	enum { CONNS = 16, PER = 4, EDTL = 16u << 20 };
	struct rl_conn r[CONNS + 1];
	int a;

	write_conf(NULL, NULL, HARNESS_TARGET_DEFAULT);
	nf_start(&D);
	for (unsigned i = 0; i <= CONNS; i++) {
		rl_open(&r[i], harness_tcp_connect(D.port), (uint8_t)(0x40 + i));
		ck_assert_int_eq(rl_login(&r[i], INI_A, HARNESS_TARGET), RL_OK);
	}
	for (unsigned i = 0; i < CONNS; i++)
		for (unsigned k = 0; k < PER; k++) {
			raw_write10(&r[i], 0x100 + k, EDTL, (uint16_t)(EDTL / 512));
			a = raw_cmd_answer(&r[i]);
			ck_assert_msg(a == 0x31, "connection %u, write %u: answer 0x%x, not an R2T", i,
				      k, a);
		}
	raw_write10(&r[CONNS], 0x100, EDTL, (uint16_t)(EDTL / 512));
	a = raw_cmd_answer(&r[CONNS]);
	ck_assert_msg(a == 0x31, "the first write of a connection holding nothing: answer 0x%x", a);
	raw_write10(&r[CONNS], 0x101, EDTL, (uint16_t)(EDTL / 512));
	a = raw_cmd_answer(&r[CONNS]);
	ck_assert_msg(a == 0x28, "a write past the daemon's 1 GiB of buffers: answer 0x%x, "
		      "expected TASK SET FULL (0x28)", a);
	for (unsigned i = 0; i <= CONNS; i++)
		close(r[i].fd);
	normal_login_works(3, "1 GiB of write buffers held");
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_discovery_cannot_lock_out", t01_discovery_cannot_lock_out),
		CK_CASE("02_idle_discovery_closed", t02_idle_discovery_closed),
		CK_CASE("03_reload_revokes_midlogin", t03_reload_revokes_midlogin, .loop_start = 0,
			.loop_end = 3),
		CK_CASE("04_session_of_removed_target_ends", t04_session_of_removed_target_ends),
		CK_CASE("05_sendtargets_per_portal", t05_sendtargets_per_portal),
		CK_CASE("06_sendtargets_after_reload", t06_sendtargets_after_reload),
		CK_CASE("07_queued_nops_bounded", t07_queued_nops_bounded),
		CK_CASE("08_chap_failures_slowed", t08_chap_failures_slowed),
		CK_CASE("09_command_buffers_bounded", t09_command_buffers_bounded),
	};

	return ck_main(&(struct ck_suite_def){ "net_hostile_limits", CK_CASES(cases),
					       .setup = setup, .teardown = teardown,
					       .timeout = 90 });
}
