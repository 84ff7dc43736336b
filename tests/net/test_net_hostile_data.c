/*
 * tests/net/test_net_hostile_data.c - a hostile initiator after login, with
 * hand-made SCSI Command PDUs, trying to get at data that is not its own
 * through the data direction and length of its commands.
 *
 * One rtgtd (one worker thread, so that every session shares one heap)
 * serves two targets: HARNESS_TARGET on a RAID1 pool "p", where an owner
 * session (libiscsi, its own initiator name) keeps a known pattern on LBAs
 * 0..127 and writes a marker at LBA 10000 again before every hostile
 * command, so that the buffers it frees hold the marker; and FAIL_TARGET on
 * a RAID1 pool "q" whose members are failed to make reads fail.
 *
 * The hostile session (another initiator name, raw PDUs) sends every
 * data-out opcode of the opcode table with R instead of W, with neither bit,
 * and with W but an EDTL short of what the CDB transfers: each must end in
 * CHECK CONDITION, ILLEGAL REQUEST, INVALID FIELD IN COMMAND INFORMATION UNIT
 * (or a Reject where RFC 7143 makes it a protocol error) with no R2T and no
 * Data-In, and the pattern must read back unchanged, never the marker. A
 * read that fails must answer CHECK CONDITION without a Data-In PDU before
 * it. A peer that resets the connection while its R2Ts are being queued must
 * not bring the daemon down (under SAN=1 the old use after free aborted it).
 *
 * main() starts the daemon, runs the cases (each forked, in order: later
 * ones rely on the medium the earlier ones left), then checks in its own
 * process that rtgtd is alive and exits 0 on SIGTERM.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
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
#include "tests/lib/rtgtctl_json.h"

#define OWNER_INITIATOR "iqn.2026-11.org.example:owner"
#define HOSTILE_INITIATOR "iqn.2026-11.org.example:hostile"
#define FAIL_TARGET "iqn.2026-11.org.rtgt:fail"
#define BS 512u
#define PATTERN_BLOCKS 128u
#define PATTERN_SEED 0x5eed
#define MARKER_LBA 10000u
#define MARKER_BYTES (64u << 10)
#define WAIT_MS 5000

/* PDU opcodes (target to initiator: 0x20 and up) */
#define OP_SCSI_CMD 0x01
#define OP_DATA_OUT 0x05
#define OP_SCSI_RSP 0x21
#define OP_DATA_IN 0x25
#define OP_R2T 0x31
#define OP_REJECT 0x3f

/* SCSI Command flags (byte 1) */
#define F_FINAL 0x80
#define F_READ 0x40
#define F_WRITE 0x20
#define F_SIMPLE 0x01

static struct harness_daemon D;

/* ---- the owner's session: libiscsi ---- */

static struct iscsi_context *owner_login(void)
{
	struct harness_login o = { .initiator = OWNER_INITIATOR };
	struct iscsi_context *c;
	char err[512];

	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	if (!c)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(c != NULL, "owner login failed: %s", err);
	return c;
}

static void owner_write(struct iscsi_context *c, uint32_t lba, const uint8_t *buf, uint32_t len)
{
	struct scsi_task *t = iscsi_write10_sync(c, 0, lba, (unsigned char *)buf, len, BS, 0, 0,
						 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "owner WRITE(10) at LBA %u failed: %s",
		      lba, iscsi_get_error(c));
	scsi_free_scsi_task(t);
}

static void owner_read(struct iscsi_context *c, uint32_t lba, uint8_t *buf, uint32_t len)
{
	struct scsi_task *t = iscsi_read10_sync(c, 0, lba, len, BS, 0, 0, 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size == (int)len,
		      "owner READ(10) at LBA %u failed: %s", lba, iscsi_get_error(c));
	memcpy(buf, t->datain.data, len);
	scsi_free_scsi_task(t);
}

static void pattern(uint8_t *buf)
{
	harness_fill_random(buf, PATTERN_BLOCKS * BS, PATTERN_SEED);
}

/* The marker: recognisable in any 16-byte window. */
static void marker(uint8_t *buf, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = "OWNER-A-SECRET!\n"[i % 16];
}

static bool holds_marker(const uint8_t *buf, uint32_t len)
{
	return len >= 16 && memmem(buf, len, "OWNER-A-SECRET!\n", 16) != NULL;
}

/* The owner writes the marker again: the buffers its commands free hold it,
 * which is what an unzeroed buffer of the next command would carry. */
static void owner_prime(struct iscsi_context *c)
{
	static uint8_t m[MARKER_BYTES];

	marker(m, sizeof(m));
	for (uint32_t len = 512; len <= sizeof(m); len *= 2)
		owner_write(c, MARKER_LBA, m, len);
}

/* LBAs 0..127 must still hold the pattern. */
static void expect_pattern(struct iscsi_context *c, const char *after)
{
	static uint8_t want[PATTERN_BLOCKS * BS], got[PATTERN_BLOCKS * BS];

	pattern(want);
	owner_read(c, 0, got, sizeof(got));
	ck_assert_msg(!holds_marker(got, sizeof(got)),
		      "after %s: the owner's marker (LBA %u) is now on LBAs 0..%u", after,
		      MARKER_LBA, PATTERN_BLOCKS - 1);
	for (uint32_t i = 0; i < sizeof(got); i++)
		ck_assert_msg(got[i] == want[i], "after %s: LBAs 0..%u changed (first at byte %u)",
			      after, PATTERN_BLOCKS - 1, i);
}

/* ---- the hostile session: raw PDUs ---- */

struct raw {
	int fd;
	uint32_t cmdsn, expstatsn, itt;
};

static int login_pdu(struct raw *r, bool transit, unsigned csg, unsigned nsg, const char *kv,
		     size_t kvlen, uint8_t rsp[HARNESS_BHS_LEN])
{
	struct harness_login_hdr h = { .transit = transit, .csg = csg, .nsg = nsg,
				       .isid = { 0x80, 0x0d, 0xa7, 0xa0, 0x00, 0x01 },
				       .itt = r->itt++, .cmdsn = r->cmdsn,
				       .expstatsn = r->expstatsn };
	uint8_t pdu[HARNESS_BHS_LEN + 1024], data[8192];
	size_t n = harness_build_login(pdu, sizeof(pdu), &h, kv, kvlen);
	ssize_t got;

	ck_assert(n > 0);
	ck_assert_int_eq(harness_tcp_send(r->fd, pdu, n), 0);
	got = harness_recv_pdu(r->fd, rsp, data, sizeof(data), WAIT_MS);
	ck_assert_msg(got >= 0, "no login response: %s", strerror((int)-got));
	ck_assert_msg((rsp[0] & 0x3f) == 0x23, "login: opcode 0x%02x", rsp[0] & 0x3f);
	r->expstatsn = harness_get_be32(rsp + 24) + 1;
	r->cmdsn = harness_get_be32(rsp + 28);
	return rsp[36] << 8 | rsp[37];
}

/* Logs in as HOSTILE_INITIATOR to @target with @ops (k=v\0 pairs) added to
 * the operational stage. */
static struct raw raw_login(const char *target, const char *const *ops)
{
	struct raw r = { .fd = harness_tcp_connect(D.port), .cmdsn = 1, .itt = 1 };
	uint8_t rsp[HARNESS_BHS_LEN];
	char kv[1024];
	size_t n = 0;
	int st;

	ck_assert_msg(r.fd >= 0, "connect: %s", strerror(-r.fd));
	n = harness_kv_add(kv, sizeof(kv), n, "InitiatorName", HOSTILE_INITIATOR);
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", "Normal");
	n = harness_kv_add(kv, sizeof(kv), n, "TargetName", target);
	n = harness_kv_add(kv, sizeof(kv), n, "AuthMethod", "None");
	ck_assert(n > 0);
	st = login_pdu(&r, true, 0, 1, kv, n, rsp);
	ck_assert_msg(st == 0, "security stage refused: status 0x%04x", st);
	n = 0;
	n = harness_kv_add(kv, sizeof(kv), n, "HeaderDigest", "None");
	n = harness_kv_add(kv, sizeof(kv), n, "DataDigest", "None");
	for (unsigned i = 0; ops && ops[i]; i += 2)
		n = harness_kv_add(kv, sizeof(kv), n, ops[i], ops[i + 1]);
	ck_assert(n > 0);
	st = login_pdu(&r, true, 1, 3, kv, n, rsp);
	ck_assert_msg(st == 0, "operational stage refused: status 0x%04x", st);
	ck_assert_msg((rsp[1] & 0x80) && (rsp[1] & 3) == 3, "login did not reach full feature");
	return r;
}

/* What came back for one command. */
struct outcome {
	bool rejected;          /* a Reject instead of a response */
	bool answered;          /* a SCSI Response, or a Data-In with status */
	uint8_t status;
	uint8_t res_flags;      /* O (0x04) / U (0x02) of the response */
	uint32_t residual;
	uint8_t sense_key, asc, ascq;
	unsigned r2ts, datain_pdus;
	uint32_t datain_bytes;
};

/*
 * Sends a SCSI Command with @flags, @edtl and @cdb (16 bytes), answers its
 * R2Ts with @data (Data-Out PDUs of at most 4 KiB), collects Data-In into
 * @in (up to @inlen) until the status arrives.
 */
static struct outcome raw_cmd(struct raw *r, uint8_t flags, uint32_t edtl, const uint8_t *cdb,
			      const uint8_t *data, uint8_t *in, uint32_t inlen)
{
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 }, rsp[HARNESS_BHS_LEN];
	static uint8_t pdata[(64u << 10) + 4];
	struct outcome o = { 0 };
	uint32_t itt = r->itt++;

	bhs[0] = OP_SCSI_CMD;
	bhs[1] = flags;
	harness_put_be32(bhs + 16, itt);
	harness_put_be32(bhs + 20, edtl);
	harness_put_be32(bhs + 24, r->cmdsn++);
	harness_put_be32(bhs + 28, r->expstatsn);
	memcpy(bhs + 32, cdb, 16);
	ck_assert_int_eq(harness_tcp_send(r->fd, bhs, sizeof(bhs)), 0);
	while (!o.answered && !o.rejected) {
		ssize_t dsl = harness_recv_pdu(r->fd, rsp, pdata, sizeof(pdata), WAIT_MS);
		uint8_t op = rsp[0] & 0x3f;

		ck_assert_msg(dsl >= 0, "no answer to CDB 0x%02x within %d ms: %s", cdb[0],
			      WAIT_MS, strerror((int)-dsl));
		if (op == OP_REJECT) {
			o.rejected = true;
		} else if (op == OP_R2T) {
			uint32_t ttt = harness_get_be32(rsp + 20);
			uint32_t off = harness_get_be32(rsp + 40), len = harness_get_be32(rsp + 44);

			ck_assert_msg(data && off + len <= edtl, "R2T for %u bytes at %u of %u", len,
				      off, edtl);
			o.r2ts++;
			for (uint32_t done = 0, sn = 0; done < len; sn++) {
				uint8_t dh[HARNESS_BHS_LEN] = { 0 };
				uint32_t seg = len - done > 4096 ? 4096 : len - done;

				dh[0] = OP_DATA_OUT;
				dh[1] = done + seg == len ? F_FINAL : 0;
				harness_put_be24(dh + 5, seg);
				harness_put_be32(dh + 16, itt);
				harness_put_be32(dh + 20, ttt);
				harness_put_be32(dh + 28, r->expstatsn);
				harness_put_be32(dh + 36, sn);
				harness_put_be32(dh + 40, off + done);
				static const uint8_t pad[4];

				ck_assert_int_eq(harness_tcp_send(r->fd, dh, sizeof(dh)), 0);
				ck_assert_int_eq(harness_tcp_send(r->fd, data + off + done, seg), 0);
				ck_assert_int_eq(harness_tcp_send(r->fd, pad, (4 - seg % 4) % 4), 0);
				done += seg;
			}
		} else if (op == OP_DATA_IN) {
			uint32_t off = harness_get_be32(rsp + 40);

			o.datain_pdus++;
			o.datain_bytes += (uint32_t)dsl;
			if (in && off < inlen)
				memcpy(in + off, pdata,
				       (uint32_t)dsl < inlen - off ? (size_t)dsl : inlen - off);
			if (rsp[1] & 0x01) {    /* S: status in the last Data-In */
				o.answered = true;
				o.status = rsp[3];
				o.res_flags = rsp[1] & 0x06;
				o.residual = harness_get_be32(rsp + 44);
				r->expstatsn = harness_get_be32(rsp + 24) + 1;
			}
		} else if (op == OP_SCSI_RSP) {
			o.answered = true;
			o.status = rsp[3];
			o.res_flags = rsp[1] & 0x06;
			o.residual = harness_get_be32(rsp + 44);
			r->expstatsn = harness_get_be32(rsp + 24) + 1;
			if (dsl >= 2 + 14 && (pdata[2] & 0x7f) == 0x70) {   /* fixed format */
				o.sense_key = pdata[2 + 2] & 0x0f;
				o.asc = pdata[2 + 12];
				o.ascq = pdata[2 + 13];
			} else if (dsl >= 2 + 4 && (pdata[2] & 0x7f) == 0x72) {
				o.sense_key = pdata[2 + 1] & 0x0f;
				o.asc = pdata[2 + 2];
				o.ascq = pdata[2 + 3];
			}
		}
		/* NOP-In and asynchronous messages: not ours, skip */
	}
	return o;
}

/* A new nexus starts with a POWER ON unit attention: TEST UNIT READY until
 * it is reported. */
static void raw_clear_ua(struct raw *r)
{
	static const uint8_t tur[16] = { 0 };

	for (unsigned i = 0; i < 8; i++) {
		struct outcome o = raw_cmd(r, F_FINAL | F_SIMPLE, 0, tur, NULL, NULL, 0);

		if (o.answered && o.status == SCSI_STATUS_GOOD)
			return;
	}
	ck_abort_msg("TEST UNIT READY does not become GOOD");
}

/* ---- the table of data-out commands ---- */

struct row {
	const char *name;
	uint8_t cdb[16];
	uint32_t bytes;     /* what the CDB transfers */
};

/* Every data-out opcode of the opcode table (target/scsi/lu.c), at LBA 0,
 * with a valid CDB. */
static const struct row out_rows[] = {
	{ "WRITE(6)", { 0x0a, 0, 0, 0, 32, 0 }, 32 * BS },
	{ "WRITE(10)", { 0x2a, 0, 0, 0, 0, 0, 0, 0, 32, 0 }, 32 * BS },
	{ "WRITE(12)", { 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, 32 * BS },
	{ "WRITE(16)", { 0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, 32 * BS },
	{ "WRITE AND VERIFY(10)", { 0x2e, 0, 0, 0, 0, 0, 0, 0, 32, 0 }, 32 * BS },
	{ "WRITE AND VERIFY(12)", { 0xae, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, 32 * BS },
	{ "WRITE AND VERIFY(16)", { 0x8e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 },
	  32 * BS },
	{ "VERIFY(10) BYTCHK=1", { 0x2f, 0x02, 0, 0, 0, 0, 0, 0, 32, 0 }, 32 * BS },
	{ "VERIFY(12) BYTCHK=1", { 0xaf, 0x02, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, 32 * BS },
	{ "VERIFY(16) BYTCHK=1", { 0x8f, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 },
	  32 * BS },
	{ "WRITE SAME(10)", { 0x41, 0, 0, 0, 0, 0, 0, 0, 32, 0 }, BS },
	{ "WRITE SAME(16)", { 0x93, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, BS },
	{ "COMPARE AND WRITE", { 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0 }, 32 * BS },
	{ "MODE SELECT(6)", { 0x15, 0x10, 0, 0, 24, 0 }, 24 },
	{ "MODE SELECT(10)", { 0x55, 0x10, 0, 0, 0, 0, 0, 0, 24, 0 }, 24 },
	{ "PERSISTENT RESERVE OUT REGISTER", { 0x5f, 0x00, 0, 0, 0, 0, 0, 0, 24, 0 }, 24 },
	{ "PERSISTENT RESERVE OUT REGISTER AND IGNORE", { 0x5f, 0x06, 0, 0, 0, 0, 0, 0, 24, 0 },
	  24 },
};

static void expect_refused(const struct outcome *o, const char *what)
{
	ck_assert_msg(o->answered && !o->rejected, "%s: no SCSI status", what);
	ck_assert_msg(o->status == SCSI_STATUS_CHECK_CONDITION,
		      "%s: status 0x%02x, expected CHECK CONDITION", what, o->status);
	ck_assert_msg(o->sense_key == 0x05 && o->asc == 0x0e && o->ascq == 0x03,
		      "%s: sense %x/%02x/%02x, expected ILLEGAL REQUEST, INVALID FIELD IN "
		      "COMMAND INFORMATION UNIT (5/0e/03)", what, o->sense_key, o->asc, o->ascq);
	ck_assert_msg(o->datain_pdus == 0, "%s: %u Data-In PDUs", what, o->datain_pdus);
}

/* The owner's pattern on LBAs 0..127 (written once, by the first case). */
static struct iscsi_context *owner_ready(void)
{
	static uint8_t p[PATTERN_BLOCKS * BS];
	struct iscsi_context *c = owner_login();

	pattern(p);
	owner_write(c, 0, p, sizeof(p));
	return c;
}

START_TEST(t01_data_out_with_r_refused)
{
	struct iscsi_context *a = owner_ready();
	struct raw b = raw_login(HARNESS_TARGET, NULL);

	raw_clear_ua(&b);
	for (unsigned i = 0; i < sizeof(out_rows) / sizeof(out_rows[0]); i++) {
		const struct row *w = &out_rows[i];
		char what[128];
		struct outcome o;

		snprintf(what, sizeof(what), "%s with R instead of W, EDTL %u", w->name, w->bytes);
		owner_prime(a);
		o = raw_cmd(&b, F_FINAL | F_READ | F_SIMPLE, w->bytes, w->cdb, NULL, NULL, 0);
		/* the medium first: what an executed command did there */
		expect_pattern(a, what);
		expect_refused(&o, what);
		ck_assert_msg(o.r2ts == 0, "%s: %u R2Ts", what, o.r2ts);
	}
	close(b.fd);
	harness_iscsi_logout(a);
}
END_TEST

/* RFC 7143 11.4.1: R and W both 0 with EDTL != 0 is a protocol error (a
 * Reject); with EDTL 0 nothing is transferred, so nothing may be written. */
START_TEST(t02_data_out_without_bits)
{
	struct iscsi_context *a = owner_ready();
	struct raw b = raw_login(HARNESS_TARGET, NULL);

	raw_clear_ua(&b);
	for (unsigned i = 0; i < sizeof(out_rows) / sizeof(out_rows[0]); i++) {
		const struct row *w = &out_rows[i];
		char what[128];
		struct outcome o;

		snprintf(what, sizeof(what), "%s with neither R nor W, EDTL %u", w->name, w->bytes);
		owner_prime(a);
		o = raw_cmd(&b, F_FINAL | F_SIMPLE, w->bytes, w->cdb, NULL, NULL, 0);
		ck_assert_msg(o.rejected || (o.answered && o.status == SCSI_STATUS_CHECK_CONDITION),
			      "%s: status 0x%02x, expected a Reject or CHECK CONDITION", what,
			      o.status);
		ck_assert_msg(o.datain_pdus == 0 && o.r2ts == 0, "%s: %u Data-In, %u R2T", what,
			      o.datain_pdus, o.r2ts);
		expect_pattern(a, what);

		snprintf(what, sizeof(what), "%s with neither R nor W, EDTL 0", w->name);
		owner_prime(a);
		o = raw_cmd(&b, F_FINAL | F_SIMPLE, 0, w->cdb, NULL, NULL, 0);
		ck_assert_msg(o.answered, "%s: no SCSI status", what);
		ck_assert_msg(o.datain_pdus == 0 && o.r2ts == 0, "%s: %u Data-In, %u R2T", what,
			      o.datain_pdus, o.r2ts);
		/* whatever the status, nothing may move: an overflow of it all */
		ck_assert_msg(o.status != SCSI_STATUS_GOOD ||
			      (o.res_flags == 0x04 && o.residual == w->bytes),
			      "%s: GOOD without an overflow of %u (flags 0x%02x residual %u)", what,
			      w->bytes, o.res_flags, o.residual);
		expect_pattern(a, what);
	}
	close(b.fd);
	harness_iscsi_logout(a);
}
END_TEST

/* W with an EDTL short of the CDB's data-out where the command cannot be
 * cut to what was sent: refused, nothing written. */
START_TEST(t03_data_out_short_edtl_refused)
{
	static const struct {
		const char *name;
		uint8_t cdb[16];
		uint32_t edtl;
	} rows[] = {
		{ "WRITE(10) cut inside a block", { 0x2a, 0, 0, 0, 0, 0, 0, 0, 32, 0 },
		  32 * BS - 100 },
		{ "WRITE(16) cut inside a block",
		  { 0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0 }, 700 },
		{ "WRITE AND VERIFY(10) cut inside a block", { 0x2e, 0, 0, 0, 0, 0, 0, 0, 4, 0 },
		  3 * BS + 1 },
		{ "VERIFY(10) BYTCHK=1 short by a block", { 0x2f, 0x02, 0, 0, 0, 0, 0, 0, 4, 0 },
		  3 * BS },
		{ "WRITE SAME(10) with half a block", { 0x41, 0, 0, 0, 0, 0, 0, 0, 32, 0 }, 256 },
		{ "WRITE SAME(16) with half a block",
		  { 0x93, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 }, 256 },
		{ "COMPARE AND WRITE with the verify half only",
		  { 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0 }, 2 * BS },
		{ "MODE SELECT(6) with half its parameter list", { 0x15, 0x10, 0, 0, 24, 0 }, 12 },
		{ "MODE SELECT(10) with half its parameter list",
		  { 0x55, 0x10, 0, 0, 0, 0, 0, 0, 24, 0 }, 12 },
		{ "PERSISTENT RESERVE OUT REGISTER with 16 of 24 bytes",
		  { 0x5f, 0x00, 0, 0, 0, 0, 0, 0, 24, 0 }, 16 },
	};
	static uint8_t data[32 * BS];
	struct iscsi_context *a = owner_ready();
	struct raw b = raw_login(HARNESS_TARGET, NULL);

	/* what the hostile session sends: not the pattern, not the marker */
	memset(data, 0xee, sizeof(data));
	raw_clear_ua(&b);
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char what[128];
		struct outcome o;

		snprintf(what, sizeof(what), "%s (EDTL %u)", rows[i].name, rows[i].edtl);
		owner_prime(a);
		o = raw_cmd(&b, F_FINAL | F_WRITE | F_SIMPLE, rows[i].edtl, rows[i].cdb, data,
			    NULL, 0);
		expect_refused(&o, what);
		ck_assert_msg(o.res_flags == 0x04, "%s: no residual overflow (flags 0x%02x)", what,
			      o.res_flags);
		expect_pattern(a, what);
	}
	close(b.fd);
	harness_iscsi_logout(a);
}
END_TEST

/* After all of the above the hostile session reads LBAs 0..31 itself: the
 * pattern, never the marker. */
START_TEST(t04_hostile_reads_back_pattern)
{
	static const uint8_t cdb[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 32, 0 };
	static uint8_t got[32 * BS], want[PATTERN_BLOCKS * BS];
	struct raw b = raw_login(HARNESS_TARGET, NULL);
	struct outcome o;

	raw_clear_ua(&b);
	o = raw_cmd(&b, F_FINAL | F_READ | F_SIMPLE, sizeof(got), cdb, NULL, got, sizeof(got));
	ck_assert_msg(o.answered && o.status == SCSI_STATUS_GOOD, "READ(10): status 0x%02x",
		      o.status);
	ck_assert_uint_eq(o.datain_bytes, sizeof(got));
	ck_assert_msg(!holds_marker(got, sizeof(got)), "the hostile session read the marker");
	pattern(want);
	ck_assert_msg(!memcmp(got, want, sizeof(got)), "LBAs 0..31 do not hold the pattern");
	close(b.fd);
}
END_TEST

static void ctl_fail(const char *member)
{
	char out[4096];
	int rc = rj_ctl(&D, out, sizeof(out), "fail", "q", member, (char *)NULL);

	ck_assert_msg(rc == 0, "rtgtctl fail q %s exited %d: %s", member, rc, out);
}

/* A read that fails sends its CHECK CONDITION and no Data-In before it. */
START_TEST(t05_failed_read_sends_no_data_in)
{
	static const uint8_t cdb[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 32, 0 };
	static uint8_t got[32 * BS];
	struct raw b = raw_login(FAIL_TARGET, NULL);
	struct outcome o;

	/* the LUN works before */
	raw_clear_ua(&b);
	o = raw_cmd(&b, F_FINAL | F_READ | F_SIMPLE, sizeof(got), cdb, NULL, got, sizeof(got));
	ck_assert_msg(o.answered && o.status == SCSI_STATUS_GOOD,
		      "READ(10) before the failure: status 0x%02x", o.status);
	ctl_fail("e0.img");
	ctl_fail("e1.img");
	for (unsigned i = 0; i < 4; i++) {
		o = raw_cmd(&b, F_FINAL | F_READ | F_SIMPLE, sizeof(got), cdb, NULL, got,
			    sizeof(got));
		ck_assert_msg(o.answered, "READ(10) on a failed pool: no status");
		ck_assert_msg(o.status == SCSI_STATUS_CHECK_CONDITION,
			      "READ(10) on a failed pool: status 0x%02x, expected CHECK CONDITION",
			      o.status);
		ck_assert_msg(o.sense_key == 0x03 || o.sense_key == 0x04,
			      "READ(10) on a failed pool: sense key 0x%x, expected MEDIUM or "
			      "HARDWARE ERROR", o.sense_key);
		ck_assert_msg(o.datain_pdus == 0,
			      "READ(10) on a failed pool: %u Data-In PDUs (%u bytes) before the "
			      "CHECK CONDITION", o.datain_pdus, o.datain_bytes);
	}
	close(b.fd);
}
END_TEST

/* A peer that resets the connection right after a write command: the
 * target fails writing the R2Ts it queues for it. */
START_TEST(t06_reset_while_r2ts_queue)
{
	static const char *const ops[] = { "InitialR2T", "Yes", "ImmediateData", "No",
					   "MaxBurstLength", "4096", "FirstBurstLength", "4096",
					   "MaxOutstandingR2T", "4", NULL };
	static const uint8_t cdb[16] = { 0x2a, 0, 0, 0, 0x30, 0, 0, 0, 64, 0 };
	struct harness_login o = { 0 };
	struct iscsi_context *c;
	char err[512];

	for (unsigned i = 0; i < 20; i++) {
		struct raw b = raw_login(HARNESS_TARGET, ops);
		uint8_t bhs[HARNESS_BHS_LEN] = { 0 };
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		bhs[0] = OP_SCSI_CMD;
		bhs[1] = F_FINAL | F_WRITE | F_SIMPLE;
		harness_put_be32(bhs + 16, 0x100 + i);
		harness_put_be32(bhs + 20, 64 * BS);
		harness_put_be32(bhs + 24, b.cmdsn);
		harness_put_be32(bhs + 28, b.expstatsn);
		memcpy(bhs + 32, cdb, 16);
		ck_assert_int_eq(setsockopt(b.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
		ck_assert_int_eq(harness_tcp_send(b.fd, bhs, sizeof(bhs)), 0);
		close(b.fd);    /* RST: the R2Ts for it meet a reset socket */
	}
	ck_assert_msg(harness_alive(&D), "rtgtd died (exit %d)", D.last_status);
	c = harness_iscsi_login(D.port, &o, err, sizeof(err));
	if (!c)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(c != NULL, "login after the resets failed: %s", err);
	harness_iscsi_logout(c);
}
END_TEST

static Suite *data_suite(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_data_out_with_r_refused", t01_data_out_with_r_refused),
		CK_CASE("02_data_out_without_bits", t02_data_out_without_bits),
		CK_CASE("03_data_out_short_edtl_refused", t03_data_out_short_edtl_refused),
		CK_CASE("04_hostile_reads_back_pattern", t04_hostile_reads_back_pattern),
		CK_CASE("05_failed_read_sends_no_data_in", t05_failed_read_sends_no_data_in),
		CK_CASE("06_reset_while_r2ts_queue", t06_reset_while_r2ts_queue),
	};

	return ck_suite(&(struct ck_suite_def){ "net_hostile_data", CK_CASES(cases),
						 .timeout = 120 });
}

/* ---- run in main(), after all of the above ---- */

START_TEST(t98_alive_after_all)
{
	ck_assert_msg(harness_alive(&D), "rtgtd died (exit %d)", D.last_status);
}
END_TEST

START_TEST(t99_sigterm_exits_0)
{
	int rc = harness_stop(&D);

	if (rc)
		harness_dump_log(&D, stderr, 40);
	ck_assert_msg(rc == 0, "rtgtd exited %d on SIGTERM", rc);
}
END_TEST

static Suite *final_suite(void)
{
	const struct ck_case cases[] = {
		CK_CASE("98_alive_after_all", t98_alive_after_all),
		CK_CASE("99_sigterm_exits_0", t99_sigterm_exits_0),
	};

	return ck_suite(&(struct ck_suite_def){ "net_hostile_data_final", CK_CASES(cases) });
}

static int write_conf(struct harness_daemon *d)
{
	return harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 1; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; },\n"
		"          { name = \"q\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"e0.img\", \"e1.img\" ); create_size = \"16M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s,\n"
		"  { iqn = \"" FAIL_TARGET "\"; portals = ( \"lo\" );\n"
		"    luns = ( { lun = 0; pool = \"q\"; volume = \"w0\"; size = \"80%%\"; } );\n"
		"    allow = ( \"ALL\" ); } );\n",
		d->port, HARNESS_TARGET_DEFAULT);
}

int main(void)
{
	return nf_main_shared(&D, "test_net_hostile_data", write_conf, data_suite(), final_suite());
}
