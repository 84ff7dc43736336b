/*
 * tests/net/test_net_hostile_names.c - names and TransportIDs a hostile
 * initiator picks, against a real rtgtd: malformed InitiatorName/TargetName
 * refused at login (status 02/00) with the log line escaped; names with
 * every punctuation the iqn syntax allows through an APTPL registration and
 * REGISTER AND MOVE, a restart with the control socket's directory wiped
 * (as systemd's RuntimeDirectory= is) and READ FULL STATUS / READ KEYS
 * returning exactly them; the wrapping TransportID length refused; a
 * damaged state file or a symlink in its place stopping that LU alone.
 *
 * Each case runs its own daemon: a temp dir with control = "run/rtgtd.sock"
 * and state_dir = "state", a raid1 pool with LUN 0 (volume v0) and LUN 1
 * (v1).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"

/* every character an iqn name may hold that a line or field format cares
 * about: '.', '-', ':' (',' is the initiator port's own separator) */
#define NAME_A "iqn.2026-11.org.ex-ample:a.b-c:d:e-.f"
#define NAME_B "iqn.2026-11.org.rtgt:x.y-z:0"
#define MOVED  "iqn.1994-05.com.b-c.d:e:f-g.h,i,0x23456789abcd"

static struct harness_daemon D;

static int mkdir_in(const char *name)
{
	char p[192];

	snprintf(p, sizeof(p), "%s/%s", D.dir, name);
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", D.dir, name);
}

static void setup(void)
{
	nf_setup(&D);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"run/rtgtd.sock\"; state_dir = \"state\";\n"
		"           log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"40%%\"; },\n"
		"           { lun = 1; pool = \"p\"; volume = \"v1\"; size = \"40%%\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n", D.port), 0);
	ck_assert_int_eq(mkdir_in("run"), 0);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* Stops rtgtd (exit 0), wipes the control socket's directory as systemd
 * does with RuntimeDirectory= at every stop, starts it again. */
static void restart_wiping_run(void)
{
	char p[192];

	nf_stop_expect_0(&D, "restart");
	path_in(p, sizeof(p), "run");
	ck_assert_int_eq(harness_rm_rf(p), 0);
	ck_assert_int_eq(mkdir_in("run"), 0);
	nf_start(&D);
}

static struct iscsi_context *login_as(const char *name, uint32_t isid)
{
	struct harness_login o = { .initiator = name, .isid_rnd = isid };

	return nf_login(&D, 0, &o);
}

/* ---- raw CDBs ---- */

struct res {
	int status;
	int key, ascq;          /* sense, when status is CHECK CONDITION */
	uint8_t data[4096];
	size_t len;
};

static struct res run(struct iscsi_context *c, int lun, uint8_t *cdb, int cdb_len,
		      const uint8_t *out, size_t out_len, size_t in_len)
{
	struct iscsi_data d = { .size = out_len, .data = (unsigned char *)out };
	struct scsi_task *t;
	struct res r;

	memset(&r, 0, sizeof(r));
	t = scsi_create_task(cdb_len, cdb, out_len ? SCSI_XFER_WRITE : in_len ? SCSI_XFER_READ
								    : SCSI_XFER_NONE,
			     (int)(out_len ? out_len : in_len));
	ck_assert_ptr_nonnull(t);
	t = iscsi_scsi_command_sync(c, lun, t, out_len ? &d : NULL);
	ck_assert_msg(t != NULL, "command 0x%02x: %s", cdb[0], iscsi_get_error(c));
	r.status = t->status;
	if (t->status == SCSI_STATUS_CHECK_CONDITION) {
		r.key = t->sense.key;
		r.ascq = t->sense.ascq;
	}
	if (t->datain.size > 0) {
		r.len = (size_t)t->datain.size < sizeof(r.data) ? (size_t)t->datain.size
								: sizeof(r.data);
		memcpy(r.data, t->datain.data, r.len);
	}
	scsi_free_scsi_task(t);
	return r;
}

static void put32(uint8_t *p, uint32_t v)
{
	harness_put_be32(p, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	harness_put_be32(p, (uint32_t)(v >> 32));
	harness_put_be32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)harness_get_be32(p) << 32 | harness_get_be32(p + 4);
}

/* Clears the unit attentions of a fresh nexus. */
static void tur_until_good(struct iscsi_context *c, int lun)
{
	uint8_t cdb[6] = { 0 };

	for (int i = 0; i < 8; i++)
		if (run(c, lun, cdb, 6, NULL, 0, 0).status == SCSI_STATUS_GOOD)
			return;
	ck_abort_msg("LUN %d: TEST UNIT READY never GOOD", lun);
}

static struct res prout(struct iscsi_context *c, int lun, uint8_t sa, uint8_t type, uint64_t key,
			uint64_t sakey, uint8_t flags)
{
	uint8_t cdb[10] = { 0x5f, sa, type, 0, 0, 0, 0, 0, 24, 0 }, p[24] = { 0 };

	put64(&p[0], key);
	put64(&p[8], sakey);
	p[20] = flags;
	return run(c, lun, cdb, 10, p, sizeof(p), 0);
}

static struct res prin(struct iscsi_context *c, int lun, uint8_t sa)
{
	uint8_t cdb[10] = { 0x5e, sa, 0, 0, 0, 0, 0, 0x10, 0x00, 0 };

	return run(c, lun, cdb, 10, NULL, 0, 4096);
}

/* REGISTER AND MOVE (holder's key 0xa) to @name at relative port @rel,
 * TransportID length field @tlen_field, @tl bytes of TransportID sent. */
static struct res move(struct iscsi_context *c, const char *name, uint16_t rel,
		       uint32_t tlen_field, unsigned tl, uint8_t aptpl)
{
	uint8_t cdb[10] = { 0x5f, 7, 0x01, 0, 0, 0, 0, 0, 0, 0 }, p[24 + 256];

	ck_assert_uint_le(tl, 256);
	memset(p, 0, sizeof(p));
	put64(&p[0], 0xa);
	put64(&p[8], 0xb0b);
	p[17] = aptpl;
	p[18] = (uint8_t)(rel >> 8);
	p[19] = (uint8_t)rel;
	put32(&p[20], tlen_field);
	p[24] = 0x45;                           /* iSCSI, format 01 */
	p[26] = (uint8_t)((tl - 4) >> 8);
	p[27] = (uint8_t)(tl - 4);
	memcpy(&p[28], name, strlen(name));
	put32(&cdb[5], 24 + tl);
	return run(c, 0, cdb, 10, p, 24 + tl, 0);
}

/* READ FULL STATUS: the descriptor of registration @i (its key, whether it
 * holds the reservation, its relative port, its TransportID's name). */
struct fs_ent {
	uint64_t key;
	bool holder;
	uint8_t type;
	uint16_t rel;
	char name[300];
};

static unsigned full_status(struct iscsi_context *c, int lun, struct fs_ent *e, unsigned max)
{
	struct res r = prin(c, lun, 3);
	unsigned n = 0;
	size_t p = 8, end;

	ck_assert_int_eq(r.status, SCSI_STATUS_GOOD);
	end = 8 + harness_get_be32(&r.data[4]);
	ck_assert_uint_le(end, r.len);
	while (p + 24 <= end && n < max) {
		uint32_t tl = harness_get_be32(&r.data[p + 20]);

		ck_assert_uint_le(p + 24 + tl, end);
		ck_assert_int_eq(r.data[p + 24], 0x45);
		e[n].key = get64(&r.data[p]);
		e[n].holder = r.data[p + 12] & 1;
		e[n].type = r.data[p + 13];
		e[n].rel = (uint16_t)(r.data[p + 18] << 8 | r.data[p + 19]);
		snprintf(e[n].name, sizeof(e[n].name), "%.*s", (int)(tl - 4),
			 (const char *)&r.data[p + 28]);
		n++;
		p += 24 + tl;
	}
	return n;
}

/* "@name,i,0x" and an ISID of 12 hex digits */
static bool is_port_of(const char *port, const char *name)
{
	size_t n = strlen(name);

	return strncmp(port, name, n) == 0 && strncmp(port + n, ",i,0x", 5) == 0 &&
	       strlen(port) == n + 17 && strspn(port + n + 5, "0123456789abcdef") == 12;
}

/* ---- raw logins ---- */

/* A Login Request in the security stage naming @initiator / @target
 * (@ilen bytes of @initiator: it may hold any byte but NUL). Returns the
 * response's class << 8 | detail, or -EPIPE when the target closed. */
static int raw_login(const char *initiator, size_t ilen, const char *target)
{
	struct harness_login_hdr h = { .transit = true, .csg = 0, .nsg = 1, .itt = 1, .cmdsn = 1,
				       .isid = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x09 } };
	uint8_t pdu[HARNESS_BHS_LEN + 2048], bhs[HARNESS_BHS_LEN], data[1024];
	char kv[1536];
	size_t n;
	ssize_t r;
	int fd;

	ck_assert_uint_lt(ilen, 1024);
	memcpy(kv, "InitiatorName=", 14);
	memcpy(kv + 14, initiator, ilen);
	kv[14 + ilen] = 0;
	n = 15 + ilen;
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", "Normal");
	n = harness_kv_add(kv, sizeof(kv), n, "TargetName", target);
	n = harness_kv_add(kv, sizeof(kv), n, "AuthMethod", "None");
	ck_assert_uint_gt(n, 0);
	n = harness_build_login(pdu, sizeof(pdu), &h, kv, n);
	ck_assert_uint_gt(n, 0);
	fd = harness_tcp_connect(D.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(harness_tcp_send(fd, pdu, n), 0);
	r = harness_recv_pdu(fd, bhs, data, sizeof(data), 5000);
	if (r == -EPIPE) {
		close(fd);
		return -EPIPE;
	}
	ck_assert_msg(r >= 0, "no login response: %s", strerror((int)-r));
	ck_assert_int_eq(bhs[0] & 0x3f, HARNESS_OP_LOGIN_RSP);
	if (bhs[36])
		ck_assert_int_eq(harness_tcp_wait_closed(fd, 5000), 1);
	close(fd);
	return bhs[36] << 8 | bhs[37];
}

/* Every byte of the log is printable ASCII or a newline. */
static void log_printable(const char *buf)
{
	for (const char *p = buf; *p; p++)
		ck_assert_msg(*p == '\n' || (*p >= 0x20 && *p <= 0x7e),
			      "raw byte 0x%02x in the log at offset %zu", (uint8_t)*p,
			      (size_t)(p - buf));
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

START_TEST(t01_malformed_names_refused)
{
	static const struct {
		const char *name;
		size_t len;             /* 0: strlen */
		const char *logged;     /* as the log must show it */
	} bad[] = {
		{ "iqn.2026-11.org.evil:a\nreg 00000000deadbeef 1 0 iqn.forged,i,0x1", 0,
		  "iqn.2026-11.org.evil:a\\x0areg 00000000deadbeef 1 0 iqn.forged,i,0x1" },
		{ "iqn.2026-11.org.evil:\x1b[2J\x1b]0;pwned\x07\x01\x7f", 0,
		  "iqn.2026-11.org.evil:\\x1b[2J\\x1b]0;pwned\\x07\\x01\\x7f" },
		{ "iqn.2026-11.org.evil:a\\x41", 0, "iqn.2026-11.org.evil:a\\x5cx41" },
		{ "foo", 0, "initiator foo " },
		{ "iqn.", 0, "initiator iqn. " },
		{ "eui.123", 0, "initiator eui.123 " },
		{ "iqn.2026-11.org.evil:a b", 0, "iqn.2026-11.org.evil:a b" },
	};
	char longname[300], log[1 << 16];
	int st;

	nf_start(&D);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		st = raw_login(bad[i].name, bad[i].len ? bad[i].len : strlen(bad[i].name),
			       HARNESS_TARGET);
		ck_assert_msg(st == 0x0200, "name %u: status 0x%04x, want 0x0200", i, st);
	}
	/* 224 bytes: one more than RFC 7143 allows */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "iqn.2026-11.org.rtgt:", 21);
	st = raw_login(longname, 224, HARNESS_TARGET);
	ck_assert_int_eq(st, 0x0200);
	/* 223 are fine */
	st = raw_login(longname, 223, HARNESS_TARGET);
	ck_assert_int_eq(st, 0);
	/* a malformed TargetName: initiator error too, not "not found" */
	st = raw_login(HARNESS_INITIATOR, strlen(HARNESS_INITIATOR), "iqn.2026-11.org.rtgt:a\nb");
	ck_assert_int_eq(st, 0x0200);
	/* a valid one that is not here */
	st = raw_login(HARNESS_INITIATOR, strlen(HARNESS_INITIATOR), "iqn.2026-11.org.rtgt:none");
	ck_assert_int_eq(st, 0x0203);

	ck_assert_int_gt(harness_read_log(&D, log, sizeof(log)), 0);
	log_printable(log);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(count(log, bad[i].logged) == 1, "name %u: logged %u times as %s", i,
			      count(log, bad[i].logged), bad[i].logged);
	ck_assert_uint_eq(count(log, "malformed InitiatorName"), sizeof(bad) / sizeof(bad[0]) + 1);
	ck_assert_uint_eq(count(log, "malformed TargetName"), 1);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t02_aptpl_names_survive_restart)
{
	struct iscsi_context *a, *b;
	struct fs_ent e[4], e2[4];
	struct res r;
	char p[192];
	unsigned n;

	nf_start(&D);
	a = login_as(NAME_A, 0x1234);
	b = login_as(NAME_B, 0x5678);
	tur_until_good(a, 0);
	tur_until_good(b, 0);
	ck_assert_int_eq(prout(a, 0, 0, 0, 0, 0x1122334455667788ULL, 0x01).status, SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(b, 0, 0, 0, 0, 0xbbbb, 0x01).status, SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(a, 0, 1, 0x03, 0x1122334455667788ULL, 0, 0).status, SCSI_STATUS_GOOD);
	n = full_status(a, 0, e, 4);
	ck_assert_uint_eq(n, 2);
	ck_assert_msg(is_port_of(e[0].name, NAME_A), "%s", e[0].name);
	ck_assert_msg(is_port_of(e[1].name, NAME_B), "%s", e[1].name);
	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	/* the file lives in state_dir, not next to the control socket */
	path_in(p, sizeof(p), "state/p.v0.pr");
	ck_assert_int_eq(access(p, F_OK), 0);
	{
		struct stat st;

		path_in(p, sizeof(p), "state");
		ck_assert_int_eq(stat(p, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0700);     /* created at the first save */
	}

	restart_wiping_run();
	b = login_as(NAME_B, 0x5678);
	tur_until_good(b, 0);
	ck_assert_uint_eq(full_status(b, 0, e2, 4), 2);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_str_eq(e2[i].name, e[i].name);
		ck_assert_uint_eq(e2[i].key, e[i].key);
		ck_assert_int_eq(e2[i].holder, e[i].holder);
		ck_assert_uint_eq(e2[i].rel, e[i].rel);
	}
	ck_assert(e2[0].holder && e2[0].type == 0x03);
	r = prin(b, 0, 0);                      /* READ KEYS */
	ck_assert_uint_eq(harness_get_be32(&r.data[4]), 16);
	ck_assert_uint_eq(get64(&r.data[8]), 0x1122334455667788ULL);
	ck_assert_uint_eq(get64(&r.data[16]), 0xbbbb);
	/* the reservation is enforced: EXCLUSIVE ACCESS, held by A */
	{
		uint8_t rd[10] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 };

		ck_assert_int_eq(run(b, 0, rd, 10, NULL, 0, 512).status,
				 SCSI_STATUS_RESERVATION_CONFLICT);
	}
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t03_register_and_move_round_trip)
{
	struct iscsi_context *a;
	struct fs_ent e[4];
	struct res r;
	uint16_t rel;
	unsigned n;

	nf_start(&D);
	a = login_as(NAME_A, 0x1234);
	tur_until_good(a, 0);
	ck_assert_int_eq(prout(a, 0, 0, 0, 0, 0xa, 0x01).status, SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(a, 0, 1, 0x01, 0xa, 0, 0).status, SCSI_STATUS_GOOD);
	ck_assert_uint_eq(full_status(a, 0, e, 4), 1);
	rel = e[0].rel;
	/* hostile TransportIDs first: none may move anything */
	r = move(a, "iqn.2026-11.org.evil:a\nb,i,0x23456789abcd", rel, 52, 52, 1);
	ck_assert_int_eq(r.status, SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(r.key, SCSI_SENSE_ILLEGAL_REQUEST);
	ck_assert_int_eq(r.ascq, 0x2600);
	r = move(a, "iqn.2026-11.org.evil:a\x1b[2J,i,0x23456789abcd", rel, 56, 56, 1);
	ck_assert_int_eq(r.ascq, 0x2600);
	r = move(a, "iqn.2026-11.org.evil,i,0x1", rel, 32, 32, 1);
	ck_assert_int_eq(r.ascq, 0x2600);
	/* and the wrapping length: 24 + 0xfffffff0 is 8 in 32 bits */
	r = move(a, MOVED, rel, 0xfffffff0u, 52, 1);
	ck_assert_int_eq(r.status, SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(r.key, SCSI_SENSE_ILLEGAL_REQUEST);
	ck_assert_int_eq(r.ascq, 0x2600);
	r = move(a, MOVED, rel, 0xffffffe8u, 52, 1);
	ck_assert_int_eq(r.ascq, 0x2600);
	ck_assert_uint_eq(full_status(a, 0, e, 4), 1);

	r = move(a, MOVED, rel, 52, 52, 1);
	ck_assert_msg(r.status == SCSI_STATUS_GOOD, "move: status %d sense %x/%04x", r.status,
		      r.key, r.ascq);
	ck_assert_uint_eq(full_status(a, 0, e, 4), 2);
	harness_iscsi_logout(a);

	restart_wiping_run();
	a = login_as(NAME_A, 0x1234);
	tur_until_good(a, 0);
	n = full_status(a, 0, e, 4);
	ck_assert_uint_eq(n, 2);
	ck_assert_msg(is_port_of(e[0].name, NAME_A), "%s", e[0].name);
	ck_assert(!e[0].holder);
	ck_assert_str_eq(e[1].name, MOVED);
	ck_assert(e[1].holder && e[1].type == 0x01);
	ck_assert_uint_eq(e[1].key, 0xb0b);
	ck_assert_uint_eq(e[1].rel, rel);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* LUN 1 refused with NOT READY, MANUAL INTERVENTION REQUIRED; LUN 0
 * serves; INQUIRY of LUN 1 still answers. */
static void lun1_stopped_lun0_serves(void)
{
	struct iscsi_context *c = login_as(NAME_B, 0x42);
	uint8_t tur[6] = { 0 }, inq[6] = { 0x12, 0, 0, 0, 36, 0 };
	struct res r;

	tur_until_good(c, 0);
	ck_assert_int_eq(prin(c, 0, 0).status, SCSI_STATUS_GOOD);
	for (int i = 0; i < 3; i++) {
		r = run(c, 1, tur, 6, NULL, 0, 0);
		ck_assert_int_eq(r.status, SCSI_STATUS_CHECK_CONDITION);
		ck_assert_int_eq(r.key, SCSI_SENSE_NOT_READY);
		ck_assert_int_eq(r.ascq, 0x0403);
	}
	r = run(c, 1, inq, 6, NULL, 0, 36);
	ck_assert_int_eq(r.status, SCSI_STATUS_GOOD);
	harness_iscsi_logout(c);
}

START_TEST(t04_damaged_file_stops_its_lu_only)
{
	char p[192], log[1 << 16];
	FILE *f;

	ck_assert_int_eq(mkdir_in("state"), 0);
	path_in(p, sizeof(p), "state/p.v1.pr");
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{ \"format\": \"rtgt-pr-aptpl\", \"version\": 2,\n  \"generation\": x }\n", f);
	fclose(f);
	nf_start(&D);
	lun1_stopped_lun0_serves();
	ck_assert_int_gt(harness_read_log(&D, log, sizeof(log)), 0);
	ck_assert_uint_eq(count(log, "p.v1.pr:"), 1);
	ck_assert_ptr_nonnull(strstr(log, "state/p.v1.pr:2: the reservation state file of LU p/v1"));
	nf_stop_expect_0(&D, NULL);
	/* never written over */
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(log, sizeof(log), f));
	fclose(f);
	ck_assert_str_eq(log, "{ \"format\": \"rtgt-pr-aptpl\", \"version\": 2,\n");
}
END_TEST

START_TEST(t05_symlinks_not_followed)
{
	struct iscsi_context *c;
	char p[192], v0[192], tmp[192], victim[192], log[1 << 16];
	FILE *f;

	/* a real state for v0 first, then v1's file a symlink to it */
	nf_start(&D);
	c = login_as(NAME_A, 0x1234);
	tur_until_good(c, 0);
	ck_assert_int_eq(prout(c, 0, 0, 0, 0, 0xa, 0x01).status, SCSI_STATUS_GOOD);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
	path_in(v0, sizeof(v0), "state/p.v0.pr");
	path_in(p, sizeof(p), "state/p.v1.pr");
	ck_assert_int_eq(symlink(v0, p), 0);
	/* and the temp file of v0 a symlink to a file it must not touch */
	path_in(tmp, sizeof(tmp), "state/p.v0.pr.tmp");
	path_in(victim, sizeof(victim), "victim");
	f = fopen(victim, "w");
	fputs("victim\n", f);
	fclose(f);
	ck_assert_int_eq(symlink(victim, tmp), 0);

	nf_start(&D);
	lun1_stopped_lun0_serves();
	c = login_as(NAME_A, 0x1234);
	tur_until_good(c, 0);
	ck_assert_int_eq(prout(c, 0, 0, 0, 0xa, 0xab, 0x01).status, SCSI_STATUS_GOOD);
	harness_iscsi_logout(c);
	ck_assert_int_gt(harness_read_log(&D, log, sizeof(log)), 0);
	ck_assert_ptr_nonnull(strstr(log, "p.v1.pr: the reservation state file of LU p/v1 is a symbolic link"));
	nf_stop_expect_0(&D, NULL);
	f = fopen(victim, "r");
	ck_assert_ptr_nonnull(fgets(log, sizeof(log), f));
	fclose(f);
	ck_assert_str_eq(log, "victim\n");
	/* the symlink was replaced by the file, v0's state is the new key */
	ck_assert_int_ne(access(tmp, F_OK), 0);
	nf_start(&D);
	c = login_as(NAME_B, 0x42);
	tur_until_good(c, 0);
	{
		struct res r = prin(c, 0, 0);

		ck_assert_uint_eq(harness_get_be32(&r.data[4]), 8);
		ck_assert_uint_eq(get64(&r.data[8]), 0xab);
	}
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_malformed_names_refused", t01_malformed_names_refused, .timeout = 120),
		CK_CASE("02_aptpl_names_survive_restart", t02_aptpl_names_survive_restart,
			.timeout = 120),
		CK_CASE("03_register_and_move_round_trip", t03_register_and_move_round_trip,
			.timeout = 120),
		CK_CASE("04_damaged_file_stops_its_lu_only", t04_damaged_file_stops_its_lu_only,
			.timeout = 120),
		CK_CASE("05_symlinks_not_followed", t05_symlinks_not_followed, .timeout = 180),
	};

	return ck_main(&(struct ck_suite_def){ "net_hostile_names", CK_CASES(cases),
		.setup = setup, .teardown = teardown });
}
