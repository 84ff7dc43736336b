/*
 * tests/net/test_net_login.c - end to end: login, unknown targets, ACLs, CHAP,
 * mutual CHAP and SendTargets discovery against a real bin/rtgtd.
 * Each test starts its own daemon on a free loopback port and a temp dir.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define ALLOWED "iqn.2026-11.org.example:allowed"
#define OTHER   "iqn.2026-11.org.rtgt:other"

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* Writes the config with @targets and starts; fails the test with the log. */
static void start(const char *targets)
{
	ck_assert_int_eq(harness_conf_std(&D, "raid1", targets), 0);
	nf_start(&D);
}

/* Login must succeed; returns the context. */
static struct iscsi_context *login_ok(const struct harness_login *o)
{
	return nf_login(&D, 0, o);
}

static void login_fails(const struct harness_login *o, const char *why)
{
	struct iscsi_context *c;
	char err[512];

	c = harness_iscsi_login(D.port, o, err, sizeof(err));
	if (c) {
		harness_iscsi_logout(c);
		ck_abort_msg("login succeeded but must fail: %s", why);
	}
	ck_assert_msg(harness_alive(&D), "rtgtd died after a refused login (%s)", why);
}

static void tur_good(struct iscsi_context *c)
{
	struct scsi_task *t = iscsi_testunitready_sync(c, 0);

	ck_assert_msg(t != NULL, "TEST UNIT READY: %s", iscsi_get_error(c));
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	scsi_free_scsi_task(t);
}

START_TEST(t01_login_ok)
{
	struct harness_login o = { 0 };
	struct iscsi_context *c;

	start(NULL);
	c = login_ok(&o);
	tur_good(c);
	harness_iscsi_logout(c);
	/* a second login after a clean logout */
	c = login_ok(&o);
	tur_good(c);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* The way users and rtgt-bench name a LUN: an iscsi:// URL. */
START_TEST(t11_login_by_url)
{
	struct iscsi_context *c;
	struct iscsi_url *u;
	char url[256];

	start(NULL);
	ck_assert_int_eq(harness_url(url, sizeof(url), D.port, HARNESS_TARGET, 0), 0);
	c = iscsi_create_context(HARNESS_INITIATOR);
	ck_assert_ptr_nonnull(c);
	iscsi_set_noautoreconnect(c, 1);
	u = iscsi_parse_full_url(c, url);
	ck_assert_msg(u != NULL, "libiscsi cannot parse %s: %s", url, iscsi_get_error(c));
	ck_assert_str_eq(u->target, HARNESS_TARGET);
	ck_assert_int_eq(u->lun, 0);
	ck_assert_int_eq(iscsi_set_targetname(c, u->target), 0);
	iscsi_set_session_type(c, ISCSI_SESSION_NORMAL);
	ck_assert_msg(iscsi_full_connect_sync(c, u->portal, u->lun) == 0, "login to %s: %s", url,
		      iscsi_get_error(c));
	tur_good(c);
	iscsi_destroy_url(u);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t02_unknown_target)
{
	struct harness_login o = { .target = "iqn.2026-11.org.rtgt:does-not-exist" };
	struct harness_login good = { 0 };

	start(NULL);
	login_fails(&o, "target does not exist");
	harness_iscsi_logout(login_ok(&good));
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t03_acl)
{
	struct harness_login denied = { 0 };
	struct harness_login allowed = { .initiator = ALLOWED };
	struct iscsi_context *c;

	start("{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
	      "  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"50%\"; } );\n"
	      "  allow = ( \"" ALLOWED "\" ); }");
	login_fails(&denied, "initiator not in the target's allow list");
	c = login_ok(&allowed);
	tur_good(c);
	harness_iscsi_logout(c);
	/* refused once more after an allowed session exists */
	login_fails(&denied, "initiator not in the allow list (2nd try)");
	nf_stop_expect_0(&D, NULL);
}
END_TEST

#define CHAP_TARGET(extra)                                                     \
	"{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"              \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"50%\"; } );\n" \
	"  allow = ( \"ALL\" );\n"                                             \
	"  chap = { user = \"alice\"; secret = \"alice-secret-1\"; " extra " }; }"

START_TEST(t04_chap_required)
{
	struct harness_login none = { 0 };
	struct harness_login wrong = { .user = "alice", .secret = "alice-secret-2" };
	struct harness_login wrong_user = { .user = "bob", .secret = "alice-secret-1" };
	struct harness_login right = { .user = "alice", .secret = "alice-secret-1" };
	struct iscsi_context *c;

	start(CHAP_TARGET(""));
	login_fails(&none, "CHAP required, no credentials given");
	login_fails(&wrong, "CHAP with a wrong secret");
	login_fails(&wrong_user, "CHAP with a wrong user name");
	c = login_ok(&right);
	tur_good(c);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t05_mutual_chap)
{
	struct harness_login right = {
		.user = "alice", .secret = "alice-secret-1",
		.mutual_user = "tgt", .mutual_secret = "target-secret-9",
	};
	struct harness_login wrong_mutual = {
		.user = "alice", .secret = "alice-secret-1",
		.mutual_user = "tgt", .mutual_secret = "target-secret-X",
	};
	struct harness_login wrong_initiator = {
		.user = "alice", .secret = "alice-secret-0",
		.mutual_user = "tgt", .mutual_secret = "target-secret-9",
	};
	struct harness_login one_way = { .user = "alice", .secret = "alice-secret-1" };
	struct iscsi_context *c;

	start(CHAP_TARGET("mutual_user = \"tgt\"; mutual_secret = \"target-secret-9\";"));
	c = login_ok(&right);
	tur_good(c);
	harness_iscsi_logout(c);
	login_fails(&wrong_mutual, "the target's mutual CHAP answer must not verify "
				   "against a different secret");
	login_fails(&wrong_initiator, "wrong initiator secret with mutual CHAP");
	/* one-way CHAP towards a target that also offers mutual: allowed by
	 * RFC 7143 (the initiator decides whether to challenge the target) */
	c = login_ok(&one_way);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t06_discovery_lists_allowed_only)
{
	struct harness_login disc = { .discovery = true };
	struct iscsi_discovery_address *da, *a;
	struct iscsi_context *c;
	char want_addr[64];
	unsigned n = 0;

	start("{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
	      "  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"40%\"; } );\n"
	      "  allow = ( \"ALL\" ); },\n"
	      "{ iqn = \"" OTHER "\"; portals = ( \"lo\" );\n"
	      "  luns = ( { lun = 0; pool = \"p\"; volume = \"v1\"; size = \"40%\"; } );\n"
	      "  allow = ( \"iqn.2026-11.org.example:someone-else\" ); }");
	snprintf(want_addr, sizeof(want_addr), "127.0.0.1:%u,1", D.port);
	c = login_ok(&disc);
	da = iscsi_discovery_sync(c);
	ck_assert_msg(da != NULL, "SendTargets failed: %s", iscsi_get_error(c));
	for (a = da; a; a = a->next) {
		unsigned np = 0;

		n++;
		ck_assert_msg(a->target_name && !strcmp(a->target_name, HARNESS_TARGET),
			      "SendTargets listed %s, which this initiator may not use",
			      a->target_name ? a->target_name : "(null)");
		for (struct iscsi_target_portal *p = a->portals; p; p = p->next) {
			np++;
			ck_assert_msg(!strcmp(p->portal, want_addr),
				      "TargetAddress '%s', expected '%s'", p->portal, want_addr);
		}
		ck_assert_msg(np == 1, "%u TargetAddress entries, expected 1", np);
	}
	ck_assert_msg(n == 1, "SendTargets listed %u targets, expected 1", n);
	iscsi_free_discovery_data(c, da);
	harness_iscsi_logout(c);

	/* the excluded initiator's view: only the other target */
	disc.initiator = "iqn.2026-11.org.example:someone-else";
	c = login_ok(&disc);
	da = iscsi_discovery_sync(c);
	ck_assert_msg(da != NULL, "SendTargets failed: %s", iscsi_get_error(c));
	n = 0;
	for (a = da; a; a = a->next)
		n++;
	ck_assert_msg(n == 2, "the allowed initiator sees %u targets, expected 2", n);
	iscsi_free_discovery_data(c, da);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t07_header_digest)
{
	struct harness_login o = { .crc32c = true };
	struct iscsi_context *c;

	start(NULL);
	c = login_ok(&o);
	tur_good(c);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t08_login_timeout)
{
	struct harness_login o = { 0 };
	struct harness_login_hdr h = { .transit = true, .csg = 0, .nsg = 1, .itt = 1, .cmdsn = 1 };
	struct iscsi_context *c;
	uint8_t pdu[HARNESS_BHS_LEN + 128];
	uint64_t t0, dt;
	int fd, rc;

	ck_assert_int_eq(harness_conf_std_ex(&D, "login_timeout = 2;", "raid1", NULL), 0);
	nf_start(&D);
	/* a logged-in session is not subject to the login timeout */
	c = login_ok(&o);

	/* silent after connect */
	fd = harness_tcp_connect(D.port);
	ck_assert_int_ge(fd, 0);
	t0 = harness_now_ms();
	rc = harness_tcp_wait_closed(fd, 8000);
	dt = harness_now_ms() - t0;
	close(fd);
	ck_assert_msg(rc == 1, "a silent connection was not dropped within 8 s (login_timeout 2)");
	ck_assert_msg(dt >= 1500, "a silent connection was dropped after %llu ms, before the "
		      "2 s login timeout", (unsigned long long)dt);

	/* stuck in the middle of a login: half a BHS */
	ck_assert(harness_build_login(pdu, sizeof(pdu), &h, "", 0) > 0);
	fd = harness_tcp_connect(D.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(harness_tcp_send(fd, pdu, 30), 0);
	rc = harness_tcp_wait_closed(fd, 8000);
	close(fd);
	ck_assert_msg(rc == 1, "a connection stuck mid-PDU in login was not dropped within 8 s");

	tur_good(c);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t09_session_reinstatement)
{
	struct harness_login o = { .isid_rnd = 0x4242 };
	struct iscsi_context *old, *new;
	struct scsi_task *t;

	start(NULL);
	old = login_ok(&o);
	tur_good(old);
	/* same initiator name and ISID, TSIH 0: RFC 7143 6.3.5 reinstates */
	new = login_ok(&o);
	tur_good(new);
	t = iscsi_testunitready_sync(old, 0);
	ck_assert_msg(t == NULL || t->status != SCSI_STATUS_GOOD,
		      "the reinstated (old) session still executes commands");
	if (t)
		scsi_free_scsi_task(t);
	iscsi_destroy_context(old);
	tur_good(new);
	harness_iscsi_logout(new);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t10_max_sessions)
{
	struct harness_login a = { .isid_rnd = 0xa }, b = { .isid_rnd = 0xb }, c = { .isid_rnd = 0xc };
	struct iscsi_context *ca, *cb, *cc;

	ck_assert_int_eq(harness_conf_std_ex(&D, "max_sessions = 2;", "raid1", NULL), 0);
	nf_start(&D);
	ca = login_ok(&a);
	cb = login_ok(&b);
	login_fails(&c, "a third session with max_sessions = 2");
	harness_iscsi_logout(ca);
	cc = login_ok(&c);
	tur_good(cc);
	tur_good(cb);
	harness_iscsi_logout(cc);
	harness_iscsi_logout(cb);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- per-initiator CHAP (credentials in the allow entry) ---- */

#define INI_A "iqn.2026-11.org.example:host-a"
#define INI_B "iqn.2026-11.org.example:host-b"
#define INI_C "iqn.2026-11.org.example:host-c"
#define SECRET_A "secret-of-a-1"
#define SECRET_B "secret-of-b-1"

#define ACL(ini, user, secret, extra)                                          \
	"{ initiator = \"" ini "\"; chap = { user = \"" user "\"; secret = \""   \
	secret "\"; " extra " }; }"

#define ACL_TARGET(allow, extra)                                               \
	"{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"              \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"50%\"; } );\n" \
	"  allow = ( " allow " );\n" extra " }"

/* The login must be refused with status @st ("02/01" as 0x0201): libiscsi
 * reports it as "...(513)". */
static void login_refused(const struct harness_login *o, unsigned st, const char *why)
{
	struct iscsi_context *c;
	char err[512], code[16];

	c = harness_iscsi_login(D.port, o, err, sizeof(err));
	if (c) {
		harness_iscsi_logout(c);
		ck_abort_msg("login succeeded but must fail: %s", why);
	}
	snprintf(code, sizeof(code), "(%u)", st);
	ck_assert_msg(strstr(err, code), "%s: expected status %02x/%02x, libiscsi said: %s", why,
		      st >> 8, st & 0xff, err);
	ck_assert_msg(harness_alive(&D), "rtgtd died after a refused login (%s)", why);
}

START_TEST(t12_per_initiator_chap)
{
	struct harness_login a = { .initiator = INI_A, .user = "ua", .secret = SECRET_A };
	struct harness_login b = { .initiator = INI_B, .user = "ub", .secret = SECRET_B };
	struct harness_login b_as_a = { .initiator = INI_A, .user = "ub", .secret = SECRET_B };
	struct harness_login a_as_b = { .initiator = INI_B, .user = "ua", .secret = SECRET_A };
	/* A's secret, but B's user name: CHAP_N must be A's too */
	struct harness_login a_wrong_user = { .initiator = INI_A, .user = "ub", .secret = SECRET_A };
	struct harness_login a_none = { .initiator = INI_A };
	struct iscsi_context *ca, *cb;

	start(ACL_TARGET(ACL(INI_A, "ua", SECRET_A, "") ", " ACL(INI_B, "ub", SECRET_B, ""), ""));
	ca = login_ok(&a);
	tur_good(ca);
	login_refused(&b_as_a, 0x0201, "B's credentials under A's name");
	login_refused(&a_as_b, 0x0201, "A's credentials under B's name");
	login_refused(&a_wrong_user, 0x0201, "A's secret with B's user name");
	/* no AuthMethod=CHAP offered where CHAP is required */
	login_fails(&a_none, "A without credentials");
	/* A's session was not disturbed by any of that */
	tur_good(ca);
	cb = login_ok(&b);
	tur_good(cb);
	harness_iscsi_logout(cb);
	harness_iscsi_logout(ca);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t13_per_initiator_mutual_chap)
{
	struct harness_login a = {
		.initiator = INI_A, .user = "ua", .secret = SECRET_A,
		.mutual_user = "tgt-a", .mutual_secret = "mutual-of-a-1",
	};
	/* the initiator expects B's mutual secret from the target on A's
	 * login: the target answers with A's, which must not verify */
	struct harness_login a_expects_b = {
		.initiator = INI_A, .user = "ua", .secret = SECRET_A,
		.mutual_user = "tgt-a", .mutual_secret = "mutual-of-b-1",
	};
	struct harness_login b = {
		.initiator = INI_B, .user = "ub", .secret = SECRET_B,
		.mutual_user = "tgt-b", .mutual_secret = "mutual-of-b-1",
	};
	struct harness_login b_expects_a = {
		.initiator = INI_B, .user = "ub", .secret = SECRET_B,
		.mutual_user = "tgt-b", .mutual_secret = "mutual-of-a-1",
	};
	struct iscsi_context *c;

	start(ACL_TARGET(ACL(INI_A, "ua", SECRET_A,
			     "mutual_user = \"tgt-a\"; mutual_secret = \"mutual-of-a-1\";") ", "
			 ACL(INI_B, "ub", SECRET_B,
			     "mutual_user = \"tgt-b\"; mutual_secret = \"mutual-of-b-1\";"),
			 ""));
	c = login_ok(&a);
	tur_good(c);
	harness_iscsi_logout(c);
	c = login_ok(&b);
	tur_good(c);
	harness_iscsi_logout(c);
	login_fails(&a_expects_b, "the target proved A's mutual secret, not B's");
	login_fails(&b_expects_a, "the target proved B's mutual secret, not A's");
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* Initiators without their own entry keep the target-level chap; those
 * with one cannot use it. */
START_TEST(t14_target_chap_for_the_others)
{
	struct harness_login a = { .initiator = INI_A, .user = "ua", .secret = SECRET_A };
	struct harness_login a_shared = { .initiator = INI_A, .user = "shared",
					  .secret = "shared-secret-1" };
	struct harness_login c_shared = { .initiator = INI_C, .user = "shared",
					  .secret = "shared-secret-1" };
	struct harness_login c_own_a = { .initiator = INI_C, .user = "ua", .secret = SECRET_A };
	struct harness_login c_none = { .initiator = INI_C };
	struct iscsi_context *c;

	start(ACL_TARGET("\"ALL\", " ACL(INI_A, "ua", SECRET_A, ""),
			 "  chap = { user = \"shared\"; secret = \"shared-secret-1\"; };"));
	c = login_ok(&c_shared);
	tur_good(c);
	harness_iscsi_logout(c);
	c = login_ok(&a);
	tur_good(c);
	harness_iscsi_logout(c);
	login_refused(&a_shared, 0x0201, "the target-level secret under A's name");
	login_refused(&c_own_a, 0x0201, "A's credentials under another name");
	login_fails(&c_none, "target-level CHAP still required of the others");
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* A plain name beside per-initiator entries and no target-level chap:
 * that initiator needs no credentials, as before. */
START_TEST(t15_plain_name_beside_acl)
{
	struct harness_login b_plain = { .initiator = INI_B };
	struct harness_login a_plain = { .initiator = INI_A };
	struct harness_login c_plain = { .initiator = INI_C };
	struct iscsi_context *c;

	start(ACL_TARGET(ACL(INI_A, "ua", SECRET_A, "") ", \"" INI_B "\"", ""));
	c = login_ok(&b_plain);
	tur_good(c);
	harness_iscsi_logout(c);
	login_fails(&a_plain, "A has its own CHAP");
	login_refused(&c_plain, 0x0202, "C is not in the allow list");
	nf_stop_expect_0(&D, NULL);
}
END_TEST

static int tur_status(struct iscsi_context *c)
{
	struct scsi_task *t = iscsi_testunitready_sync(c, 0);
	int st;

	if (!t)
		return -1;
	st = t->status;
	scsi_free_scsi_task(t);
	return st;
}

START_TEST(t16_reload_rotates_initiator_secret)
{
	struct harness_login a = { .initiator = INI_A, .user = "ua", .secret = SECRET_A,
				   .isid_rnd = 1 };
	struct harness_login a_new = { .initiator = INI_A, .user = "ua",
				       .secret = "secret-of-a-2", .isid_rnd = 3 };
	struct harness_login b = { .initiator = INI_B, .user = "ub", .secret = SECRET_B,
				   .isid_rnd = 2 };
	struct iscsi_context *ca, *cb;
	char out[4096];
	uint64_t deadline;
	int rc, st = 0;

	start(ACL_TARGET(ACL(INI_A, "ua", SECRET_A, "") ", " ACL(INI_B, "ub", SECRET_B, ""),
			 "  chap = { user = \"shared\"; secret = \"shared-secret-1\"; };"));
	ca = login_ok(&a);
	cb = login_ok(&b);
	tur_good(ca);
	tur_good(cb);
	/* A's secret rotates, and the target-level one too: B has its own,
	 * so only A must log in again */
	ck_assert_int_eq(harness_conf_std(&D, "raid1",
		ACL_TARGET(ACL(INI_A, "ua", "secret-of-a-2", "") ", " ACL(INI_B, "ub", SECRET_B, ""),
			   "  chap = { user = \"shared\"; secret = \"shared-secret-2\"; };")), 0);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	deadline = harness_now_ms() + 5000;
	while (harness_now_ms() < deadline && (st = tur_status(ca)) == SCSI_STATUS_GOOD)
		usleep(100 * 1000);
	ck_assert_msg(st != SCSI_STATUS_GOOD, "A's session survived the rotation of its secret");
	tur_good(cb);
	login_refused(&a, 0x0201, "A's old secret after the reload");
	iscsi_destroy_context(ca);
	ca = login_ok(&a_new);
	tur_good(ca);
	tur_good(cb);
	harness_iscsi_logout(ca);
	harness_iscsi_logout(cb);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_login_ok", t01_login_ok),
		CK_CASE("02_unknown_target", t02_unknown_target),
		CK_CASE("03_acl", t03_acl),
		CK_CASE("04_chap_required", t04_chap_required),
		CK_CASE("05_mutual_chap", t05_mutual_chap),
		CK_CASE("06_discovery_lists_allowed_only", t06_discovery_lists_allowed_only),
		CK_CASE("07_header_digest", t07_header_digest),
		CK_CASE("08_login_timeout", t08_login_timeout),
		CK_CASE("09_session_reinstatement", t09_session_reinstatement),
		CK_CASE("10_max_sessions", t10_max_sessions),
		CK_CASE("11_login_by_url", t11_login_by_url),
		CK_CASE("12_per_initiator_chap", t12_per_initiator_chap),
		CK_CASE("13_per_initiator_mutual_chap", t13_per_initiator_mutual_chap),
		CK_CASE("14_target_chap_for_the_others", t14_target_chap_for_the_others),
		CK_CASE("15_plain_name_beside_acl", t15_plain_name_beside_acl),
		CK_CASE("16_reload_rotates_initiator_secret", t16_reload_rotates_initiator_secret),
	};

	return ck_main(&(struct ck_suite_def){
		"net_login", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 90 });
}
