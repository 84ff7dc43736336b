/*
 * tests/net/test_net_access.c - access per LUN on a real bin/rtgtd: two
 * initiators (two IQNs) in two initiator groups share one target, each
 * seeing only its LUNs under its own numbering (REPORT LUNS, INQUIRY and
 * TEST UNIT READY on a foreign LUN), a read-only LUN (WRITE(16) 07/27/00,
 * reads work, MODE SENSE WP), address rules with source addresses
 * 127.0.0.1 and 127.0.0.2 (libiscsi cannot pick its source address, so the
 * 127.0.0.2 logins are made by hand over a socket bound to it), discovery
 * CHAP, and a live reload that changes a mapping (06/3F/0E for the
 * initiator whose view changed only, then the new view).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/raw_login.h"
#include "tests/lib/rtgtctl_json.h"

#define INI_A "iqn.2026-11.org.example:host-a"
#define INI_B "iqn.2026-11.org.example:host-b"
#define INI_C "iqn.2026-11.org.example:host-c"
#define WAIT_MS 5000

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* Groups ga = { A }, gb = { B }; C is in none. Volumes: v0 (read-only for
 * everyone, LUN 0), va (ga's LUN 1), vb (gb's LUN 1). @luns_extra replaces
 * the LUN list when not NULL; @top goes before the targets (discovery). */
#define LUNS_STD                                                                        \
	"{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"4M\"; read_only = true; },\n" \
	"{ lun = 1; pool = \"p\"; volume = \"va\"; size = \"4M\";\n"                       \
	"  groups = ( { group = \"ga\"; lun = 1; } ); },\n"                                 \
	"{ lun = 2; pool = \"p\"; volume = \"vb\"; size = \"4M\";\n"                       \
	"  groups = ( { group = \"gb\"; lun = 1; } ); }"

static void write_conf(const char *top, const char *luns, const char *allow)
{
	int rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; },\n"
		"            { name = \"lo2\"; listen = \"127.0.0.2:%u\"; } );\n"
		"initiator_groups = ( { name = \"ga\"; members = ( \"" INI_A "\" ); },\n"
		"                     { name = \"gb\"; members = ( \"" INI_B "\" ); } );\n"
		"%s\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\", \"lo2\" );\n"
		"  luns = ( %s );\n"
		"  allow = ( %s ); } );\n",
		D.port, D.port, top ? top : "", luns ? luns : LUNS_STD, allow ? allow : "\"ALL\"");

	ck_assert_int_eq(rc, 0);
}

static struct iscsi_context *login(const char *initiator, int lun)
{
	struct harness_login o = { .initiator = initiator, .lun = lun };

	return nf_login(&D, 0, &o);
}

/* Status of a command, its sense into @sense; -1 on a transport failure. */
static int task_status(struct scsi_task *t, struct scsi_sense *sense)
{
	int st;

	if (!t)
		return -1;
	st = t->status;
	if (sense)
		*sense = t->sense;
	scsi_free_scsi_task(t);
	return st;
}

static int tur(struct iscsi_context *c, int lun, struct scsi_sense *sense)
{
	return task_status(iscsi_testunitready_sync(c, lun), sense);
}

/* TUR until the unit attentions a new session gets are gone. */
static void clear_ua(struct iscsi_context *c, int lun)
{
	struct scsi_sense s;

	for (int i = 0; i < 8; i++) {
		int st = tur(c, lun, &s);

		if (st == SCSI_STATUS_GOOD)
			return;
		ck_assert_msg(st == SCSI_STATUS_CHECK_CONDITION && s.key == SCSI_SENSE_UNIT_ATTENTION,
			      "TUR lun %d: status %d sense %x/%04x", lun, st, s.key, s.ascq);
	}
	ck_abort_msg("unit attentions on lun %d do not clear", lun);
}

#define ck_check_condition(st, sense, k, code)                                          \
	do {                                                                            \
		ck_assert_msg((st) == SCSI_STATUS_CHECK_CONDITION, "status %d, want CHECK " \
			      "CONDITION %x/%04x", (st), (k), (code));                    \
		ck_assert_msg((sense).key == (k) && (sense).ascq == (code),               \
			      "sense %x/%04x, want %x/%04x", (sense).key, (sense).ascq, (k), \
			      (code));                                                    \
	} while (0)

/* REPORT LUNS: the LUN numbers, ascending as the target lists them. */
static unsigned report_luns(struct iscsi_context *c, unsigned *luns, unsigned max)
{
	struct scsi_task *t = iscsi_reportluns_sync(c, 0, 4096);
	struct scsi_reportluns_list *list;
	unsigned n;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	list = scsi_datain_unmarshall(t);
	ck_assert_ptr_nonnull(list);
	n = list->num < max ? list->num : max;
	for (unsigned i = 0; i < n; i++)
		luns[i] = list->luns[i];
	n = list->num;
	scsi_free_scsi_task(t);
	return n;
}

/* The unit serial number (VPD 0x80) of @lun: which volume it is. */
static void serial_of(struct iscsi_context *c, int lun, char *out, size_t len)
{
	struct scsi_task *t = iscsi_inquiry_sync(c, lun, 1, SCSI_INQUIRY_PAGECODE_UNIT_SERIAL_NUMBER,
						 255);
	struct scsi_inquiry_unit_serial_number *usn;

	ck_assert_ptr_nonnull(t);
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "VPD 0x80 of lun %d: %s", lun,
		      iscsi_get_error(c));
	usn = scsi_datain_unmarshall(t);
	ck_assert_ptr_nonnull(usn);
	snprintf(out, len, "%s", usn->usn);
	scsi_free_scsi_task(t);
}

/* Standard INQUIRY byte 0 (peripheral qualifier and device type). */
static int inquiry_byte0(struct iscsi_context *c, int lun)
{
	struct scsi_task *t = iscsi_inquiry_sync(c, lun, 0, 0, 36);
	int b;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	ck_assert_int_ge(t->datain.size, 1);
	b = t->datain.data[0];
	scsi_free_scsi_task(t);
	return b;
}

/* MODE SENSE(6) of every page: the WP bit of the device-specific parameter. */
static bool mode_sense_wp(struct iscsi_context *c, int lun)
{
	struct scsi_task *t = iscsi_modesense6_sync(c, lun, 0, SCSI_MODESENSE_PC_CURRENT,
						    SCSI_MODEPAGE_RETURN_ALL_PAGES, 0, 255);
	bool wp;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	ck_assert_int_ge(t->datain.size, 4);
	wp = t->datain.data[2] & 0x80;
	scsi_free_scsi_task(t);
	return wp;
}

static int write16(struct iscsi_context *c, int lun, uint64_t lba, uint8_t fill,
		   struct scsi_sense *sense)
{
	uint8_t buf[4096];

	memset(buf, fill, sizeof(buf));
	return task_status(iscsi_write16_sync(c, lun, lba, buf, sizeof(buf), 512, 0, 0, 0, 0, 0),
			   sense);
}

/* The first byte of block @lba of @lun (GOOD asserted). */
static int read16_byte(struct iscsi_context *c, int lun, uint64_t lba)
{
	struct scsi_task *t = iscsi_read16_sync(c, lun, lba, 512, 512, 0, 0, 0, 0, 0);
	int b;

	ck_assert_ptr_nonnull(t);
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "READ(16) lun %d: %s", lun,
		      iscsi_get_error(c));
	b = t->datain.data[0];
	scsi_free_scsi_task(t);
	return b;
}

/* ---- 01: each initiator sees its LUNs only, under its own numbers ---- */

START_TEST(t01_masking_and_numbering)
{
	struct iscsi_context *a, *b, *c;
	char sa0[80], sa1[80], sb0[80], sb1[80];
	unsigned luns[16];
	struct scsi_sense s;

	write_conf(NULL, NULL, NULL);
	nf_start(&D);
	a = login(INI_A, 0);
	b = login(INI_B, 0);
	c = login(INI_C, 0);
	clear_ua(a, 0);
	clear_ua(a, 1);
	clear_ua(b, 0);
	clear_ua(b, 1);

	ck_assert_uint_eq(report_luns(a, luns, 16), 2);
	ck_assert_uint_eq(luns[0], 0);
	ck_assert_uint_eq(luns[1], 1);
	ck_assert_uint_eq(report_luns(b, luns, 16), 2);
	ck_assert_uint_eq(luns[1], 1);
	ck_assert_uint_eq(report_luns(c, luns, 16), 1);
	ck_assert_uint_eq(luns[0], 0);

	/* LUN 0 is one volume for both, LUN 1 two different ones */
	serial_of(a, 0, sa0, sizeof(sa0));
	serial_of(b, 0, sb0, sizeof(sb0));
	serial_of(a, 1, sa1, sizeof(sa1));
	serial_of(b, 1, sb1, sizeof(sb1));
	ck_assert_str_eq(sa0, sb0);
	ck_assert_str_ne(sa1, sb1);
	ck_assert_str_ne(sa1, sa0);
	/* and the data says so too */
	ck_assert_int_eq(write16(a, 1, 8, 0xa1, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write16(b, 1, 8, 0xb1, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(read16_byte(a, 1, 8), 0xa1);
	ck_assert_int_eq(read16_byte(b, 1, 8), 0xb1);

	/* the target's LUN 2 (gb's volume) is nobody's LUN 2 */
	ck_assert_int_eq(inquiry_byte0(a, 2), 0x7f);
	ck_check_condition(tur(a, 2, &s), s, SCSI_SENSE_ILLEGAL_REQUEST, 0x2500);
	ck_check_condition(task_status(iscsi_read16_sync(a, 2, 0, 512, 512, 0, 0, 0, 0, 0), &s), s,
			   SCSI_SENSE_ILLEGAL_REQUEST, 0x2500);
	ck_check_condition(write16(b, 2, 0, 0xee, &s), s, SCSI_SENSE_ILLEGAL_REQUEST, 0x2500);
	/* C, in no group: LUN 0 only */
	ck_assert_int_eq(inquiry_byte0(c, 1), 0x7f);
	ck_check_condition(tur(c, 1, &s), s, SCSI_SENSE_ILLEGAL_REQUEST, 0x2500);

	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 02: read-only LUN ---- */

START_TEST(t02_read_only)
{
	struct iscsi_context *a;
	struct scsi_sense s;
	int before;

	write_conf(NULL, NULL, NULL);
	nf_start(&D);
	a = login(INI_A, 0);
	clear_ua(a, 0);
	clear_ua(a, 1);
	before = read16_byte(a, 0, 16);
	ck_check_condition(write16(a, 0, 16, (uint8_t)(before ^ 0xff), &s), s,
			   SCSI_SENSE_DATA_PROTECTION, 0x2700);
	ck_assert_int_eq(read16_byte(a, 0, 16), before);
	ck_assert(mode_sense_wp(a, 0));
	/* its writable LUN next to it */
	ck_assert(!mode_sense_wp(a, 1));
	ck_assert_int_eq(write16(a, 1, 16, 0x42, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(read16_byte(a, 1, 16), 0x42);
	/* SYNCHRONIZE CACHE is no medium write */
	ck_assert_int_eq(task_status(iscsi_synchronizecache10_sync(a, 0, 0, 0, 0, 0), NULL),
			 SCSI_STATUS_GOOD);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 03: address rules ---- */

static int tcp_from(const char *src, uint16_t port)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
	ck_assert_int_eq(inet_pton(AF_INET, src, &me.sin_addr), 1);
	ck_assert_msg(bind(fd, (struct sockaddr *)&me, sizeof(me)) == 0, "bind %s: %s", src,
		      strerror(errno));
	to.sin_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &to.sin_addr), 1);
	ck_assert_msg(connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0, "connect: %s",
		      strerror(errno));
	return fd;
}

/* One security-stage Login Request (AuthMethod=None, T=1 to operational)
 * from @src: the status (class << 8 | detail) of the answer, -EPIPE when
 * the connection closed without one. @target NULL: discovery. */
static int raw_login_status(const char *src, const char *initiator, const char *target)
{
	struct rl_conn r;
	int fd = tcp_from(src, D.port), rc;

	rl_open(&r, fd, 7);
	rc = rl_security(&r, initiator, target);
	close(fd);
	return rc;
}

/* Whether a libiscsi discovery session as @initiator lists HARNESS_TARGET. */
static bool discovery_lists_target(const char *initiator)
{
	struct harness_login o = { .initiator = initiator, .discovery = true };
	struct iscsi_discovery_address *da, *p;
	struct iscsi_context *c;
	char err[256];
	bool found = false;

	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c != NULL, "discovery login as %s: %s", initiator, err);
	da = iscsi_discovery_sync(c);
	for (p = da; p; p = p->next)
		found |= strcmp(p->target_name, HARNESS_TARGET) == 0;
	if (da)
		iscsi_free_discovery_data(c, da);
	harness_iscsi_logout(c);
	return found;
}

START_TEST(t03_address_rules)
{
	struct harness_login ob = { .initiator = INI_B };
	struct iscsi_context *a, *b;
	char err[256];

	write_conf(NULL, NULL,
		   "{ initiator = \"" INI_A "\"; address = \"127.0.0.1\"; },\n"
		   "    { initiator = \"" INI_B "\"; address = \"127.0.0.2/32\"; }");
	nf_start(&D);
	/* A from 127.0.0.1 (libiscsi): in, and sees its LUNs */
	a = login(INI_A, 0);
	clear_ua(a, 1);
	ck_assert_int_eq(read16_byte(a, 1, 0) >= 0, 1);
	harness_iscsi_logout(a);
	/* B from 127.0.0.1: refused */
	b = harness_iscsi_login(D.port, &ob, err, sizeof(err));
	ck_assert_msg(b == NULL, "B logged in from 127.0.0.1");
	ck_assert_int_eq(raw_login_status("127.0.0.1", INI_B, HARNESS_TARGET), 0x0202);
	/* B from 127.0.0.2: its security stage is accepted */
	ck_assert_int_eq(raw_login_status("127.0.0.2", INI_B, HARNESS_TARGET), 0x0000);
	/* A from 127.0.0.2: refused, and C (named nowhere) from anywhere */
	ck_assert_int_eq(raw_login_status("127.0.0.2", INI_A, HARNESS_TARGET), 0x0202);
	ck_assert_int_eq(raw_login_status("127.0.0.1", INI_C, HARNESS_TARGET), 0x0202);
	/* SendTargets follows the same rules */
	ck_assert(discovery_lists_target(INI_A));
	ck_assert(!discovery_lists_target(INI_B));
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 04: discovery CHAP ---- */

START_TEST(t04_discovery_chap)
{
	struct harness_login o = { .initiator = INI_A, .discovery = true };
	struct iscsi_discovery_address *da;
	struct iscsi_context *c;
	char err[256];

	write_conf("discovery = { chap = { user = \"disc\"; secret = \"discovery-sec1\"; }; };",
		   NULL, NULL);
	nf_start(&D);
	/* without CHAP: an authentication failure login response */
	ck_assert_int_eq(raw_login_status("127.0.0.1", INI_A, NULL), 0x0201);
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c == NULL, "discovery without CHAP logged in");
	o.user = "disc";
	o.secret = "wrong-secret-1";
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c == NULL, "discovery with a wrong secret logged in");
	o.secret = "discovery-sec1";
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	ck_assert_msg(c != NULL, "discovery with the right CHAP refused: %s", err);
	da = iscsi_discovery_sync(c);
	ck_assert_ptr_nonnull(da);
	ck_assert_str_eq(da->target_name, HARNESS_TARGET);
	iscsi_free_discovery_data(c, da);
	harness_iscsi_logout(c);
	/* normal sessions are not asked for it (the target has no chap) */
	c = login(INI_A, 0);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 05: a live reload changes a mapping ---- */

START_TEST(t05_reload_changes_mapping)
{
	struct iscsi_context *a, *b;
	char sa1[80], s3[80], sb1[80], s1[80], out[4096];
	unsigned luns[16];
	struct scsi_sense s;
	int rc;

	write_conf(NULL, NULL, NULL);
	nf_start(&D);
	a = login(INI_A, 0);
	b = login(INI_B, 0);
	clear_ua(a, 0);
	clear_ua(a, 1);
	clear_ua(b, 0);
	clear_ua(b, 1);
	serial_of(a, 1, sa1, sizeof(sa1));
	serial_of(b, 1, sb1, sizeof(sb1));

	/* ga: va moves to LUN 3, and gets gb's vb as LUN 1, read-only */
	write_conf(NULL,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"4M\"; read_only = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"va\"; size = \"4M\";\n"
		   "  groups = ( { group = \"ga\"; lun = 3; } ); },\n"
		   "{ lun = 2; pool = \"p\"; volume = \"vb\"; size = \"4M\";\n"
		   "  groups = ( { group = \"gb\"; lun = 1; },\n"
		   "             { group = \"ga\"; lun = 1; read_only = true; } ); }",
		   NULL);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	ck_assert_msg(strstr(out, "access"), "reload does not say the access changed: %s", out);

	/* A: REPORTED LUNS DATA HAS CHANGED, then the new view */
	ck_check_condition(tur(a, 0, &s), s, SCSI_SENSE_UNIT_ATTENTION, 0x3f0e);
	ck_assert_int_eq(tur(a, 0, NULL), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(report_luns(a, luns, 16), 3);
	ck_assert_uint_eq(luns[0], 0);
	ck_assert_uint_eq(luns[1], 1);
	ck_assert_uint_eq(luns[2], 3);
	clear_ua(a, 3);
	serial_of(a, 3, s3, sizeof(s3));
	ck_assert_str_eq(s3, sa1);
	clear_ua(a, 1);
	serial_of(a, 1, s1, sizeof(s1));
	ck_assert_str_eq(s1, sb1);
	ck_check_condition(write16(a, 1, 0, 0x11, &s), s, SCSI_SENSE_DATA_PROTECTION, 0x2700);
	ck_assert(mode_sense_wp(a, 1));
	ck_assert_int_eq(write16(a, 3, 0, 0x33, NULL), SCSI_STATUS_GOOD);
	/* B's view did not change: no unit attention, still writable */
	ck_assert_int_eq(tur(b, 0, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(tur(b, 1, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write16(b, 1, 0, 0x22, NULL), SCSI_STATUS_GOOD);

	/* va hidden from ga again: LUN 3 goes away */
	write_conf(NULL,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"4M\"; read_only = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"va\"; size = \"4M\"; groups = ( ); },\n"
		   "{ lun = 2; pool = \"p\"; volume = \"vb\"; size = \"4M\";\n"
		   "  groups = ( \"gb\", { group = \"ga\"; lun = 1; read_only = true; } ); }",
		   NULL);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	ck_check_condition(tur(a, 0, &s), s, SCSI_SENSE_UNIT_ATTENTION, 0x3f0e);
	ck_check_condition(tur(a, 3, &s), s, SCSI_SENSE_ILLEGAL_REQUEST, 0x2500);
	ck_assert_uint_eq(report_luns(a, luns, 16), 2);
	/* B now sees vb as its LUN 2 (the mapping gives no number): moved */
	ck_check_condition(tur(b, 0, &s), s, SCSI_SENSE_UNIT_ATTENTION, 0x3f0e);
	ck_assert_uint_eq(report_luns(b, luns, 16), 2);
	ck_assert_uint_eq(luns[1], 2);

	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_masking_and_numbering", t01_masking_and_numbering),
		CK_CASE("02_read_only", t02_read_only),
		CK_CASE("03_address_rules", t03_address_rules),
		CK_CASE("04_discovery_chap", t04_discovery_chap),
		CK_CASE("05_reload_changes_mapping", t05_reload_changes_mapping),
	};

	return ck_main(&(struct ck_suite_def){ "net_access", CK_CASES(cases),
					       .setup = setup, .teardown = teardown,
					       .timeout = 120 });
}
