/*
 * tests/net/test_net_xcopy.c - EXTENDED COPY (LID1) and RECEIVE COPY
 * RESULTS on a real bin/rtgtd (target/scsi/xcopy.c), driven with libiscsi.
 * A daemon per case: pool p (raid1) and pool q (raid0); target T1 with
 * LUN 0 v0 and LUN 1 v1 (32M each, pool p), LUN 2 w0 (pool q), LUN 3 ro
 * (read-only), LUN 4 hid (seen by group gb = initiator B only, as its
 * LUN 5); target T2 with LUN 0 t2v. Initiator A is the harness's default.
 * Every case ends with rtgtd stopping cleanly (exit 0): a copy that kept
 * an LU reference would hold its shutdown.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"

#define INI_B "iqn.2026-11.org.example:host-b"
#define T2 "iqn.2026-11.org.rtgt:other"
#define BS 512u
#define MIB (1u << 20)
#define ST_GOOD 0x00
#define ST_CHECK 0x02
#define ST_CONFLICT 0x18
#define ST_ABORTED 0x40

static struct harness_daemon D;

static void setup(void)
{
	int rc;

	nf_setup(&D);
	rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"96M\"; },\n"
		"          { name = \"q\"; level = \"raid0\"; chunk = \"64K\";\n"
		"            members = ( \"e0.img\", \"e1.img\" ); create_size = \"16M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"initiator_groups = ( { name = \"gb\"; members = ( \"" INI_B "\" ); } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"32M\"; },\n"
		"           { lun = 1; pool = \"p\"; volume = \"v1\"; size = \"32M\"; },\n"
		"           { lun = 2; pool = \"q\"; volume = \"w0\"; size = \"8M\"; },\n"
		"           { lun = 3; pool = \"p\"; volume = \"ro\"; size = \"4M\"; read_only = true; },\n"
		"           { lun = 4; pool = \"p\"; volume = \"hid\"; size = \"4M\";\n"
		"             groups = ( { group = \"gb\"; lun = 5; } ); } );\n"
		"  allow = ( \"ALL\" ); },\n"
		"  { iqn = \"" T2 "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"t2v\"; size = \"4M\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n", D.port);
	ck_assert_int_eq(rc, 0);
	nf_start(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* ---- helpers ---- */

static struct iscsi_context *login_as(const char *ini, const char *target, uint32_t isid)
{
	struct harness_login o = { .initiator = ini, .target = target, .lun = 0,
				   .isid_rnd = isid };

	return nf_login(&D, 0, &o);
}

static int task_status(struct scsi_task *t, struct scsi_sense *sense)
{
	int st;

	ck_assert_msg(t != NULL, "transport failure");
	st = t->status;
	if (sense)
		*sense = t->sense;
	scsi_free_scsi_task(t);
	return st;
}

/* TEST UNIT READY until the unit attentions of a new session (or a reset)
 * are gone. */
static void clear_ua(struct iscsi_context *c, int lun)
{
	struct scsi_sense s;

	for (int i = 0; i < 8; i++) {
		int st = task_status(iscsi_testunitready_sync(c, lun), &s);

		if (st == ST_GOOD)
			return;
		ck_assert_msg(st == ST_CHECK && s.key == SCSI_SENSE_UNIT_ATTENTION,
			      "TUR lun %d: status %d sense %x/%04x", lun, st, s.key, s.ascq);
	}
	ck_abort_msg("unit attentions on lun %d do not clear", lun);
}

static void wr(struct iscsi_context *c, int lun, uint64_t lba, const uint8_t *buf, uint64_t bytes)
{
	for (uint64_t off = 0; off < bytes; off += MIB) {
		uint32_t n = bytes - off < MIB ? (uint32_t)(bytes - off) : MIB;
		struct scsi_sense s;
		int st = task_status(iscsi_write16_sync(c, lun, lba + off / BS, (uint8_t *)buf + off,
							 n, BS, 0, 0, 0, 0, 0), &s);

		ck_assert_msg(st == ST_GOOD, "WRITE(16) lun %d lba %llu: status %d %x/%04x", lun,
			      (unsigned long long)(lba + off / BS), st, s.key, s.ascq);
	}
}

static void rd(struct iscsi_context *c, int lun, uint64_t lba, uint8_t *buf, uint64_t bytes)
{
	for (uint64_t off = 0; off < bytes; off += MIB) {
		uint32_t n = bytes - off < MIB ? (uint32_t)(bytes - off) : MIB;
		struct scsi_task *t = iscsi_read16_sync(c, lun, lba + off / BS, n, BS, 0, 0, 0, 0, 0);

		ck_assert_ptr_nonnull(t);
		ck_assert_msg(t->status == ST_GOOD, "READ(16) lun %d: status %d %x/%04x", lun,
			      t->status, t->sense.key, t->sense.ascq);
		ck_assert_int_eq(t->datain.size, (int)n);
		memcpy(buf + off, t->datain.data, n);
		scsi_free_scsi_task(t);
	}
}

static uint64_t fnv(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* The NAA designator (type 3, association 0) VPD 0x83 reports for @lun. */
static void naa_of(struct iscsi_context *c, int lun, uint8_t naa[16])
{
	struct scsi_task *t = iscsi_inquiry_sync(c, lun, 1, 0x83, 255);
	unsigned len, p;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, ST_GOOD);
	len = 4u + ((unsigned)t->datain.data[2] << 8 | t->datain.data[3]);
	for (p = 4; p + 4 <= len && p + 4 <= (unsigned)t->datain.size;
	     p += 4u + t->datain.data[p + 3]) {
		const uint8_t *d = &t->datain.data[p];

		if ((d[1] & 0x3f) == 0x03 && d[3] == 16) {
			memcpy(naa, &d[4], 16);
			scsi_free_scsi_task(t);
			return;
		}
	}
	scsi_free_scsi_task(t);
	ck_abort_msg("lun %d reports no NAA designator", lun);
}

struct seg {
	uint16_t src, dst;
	uint16_t blocks;
	uint64_t src_lba, dst_lba;
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

/* An identification CSCD descriptor naming @naa, 512-byte blocks. */
static void put_cscd(uint8_t *d, const uint8_t naa[16])
{
	memset(d, 0, 32);
	d[0] = 0xe4;
	d[4] = 0x01;            /* binary */
	d[5] = 0x03;            /* association 0, NAA */
	d[7] = 16;
	memcpy(&d[8], naa, 16);
	d[31] = 0x00;
	d[30] = 0x02;           /* block length 512 */
}

static void put_seg(uint8_t *d, const struct seg *s)
{
	memset(d, 0, 28);
	d[0] = 0x02;
	put16(&d[2], 24);
	put16(&d[4], s->src);
	put16(&d[6], s->dst);
	put16(&d[10], s->blocks);
	put64(&d[12], s->src_lba);
	put64(&d[20], s->dst_lba);
}

/* A parameter list: header (list id, usage), CSCDs, segments. Returns its
 * length. */
static uint32_t build(uint8_t *buf, uint8_t list_id, uint8_t usage, const uint8_t (*naa)[16],
		      unsigned n_cscd, const struct seg *segs, unsigned n_seg)
{
	uint32_t p = 16;

	memset(buf, 0, 16);
	buf[0] = list_id;
	buf[1] = (uint8_t)(usage << 3);
	for (unsigned i = 0; i < n_cscd; i++, p += 32)
		put_cscd(&buf[p], naa[i]);
	for (unsigned i = 0; i < n_seg; i++, p += 28)
		put_seg(&buf[p], &segs[i]);
	put16(&buf[2], (uint16_t)(n_cscd * 32));
	put32(&buf[8], n_seg * 28);
	return p;
}

static int xcopy(struct iscsi_context *c, int lun, uint8_t *buf, uint32_t len,
		 struct scsi_sense *s)
{
	struct iscsi_data d = { .size = len, .data = buf };

	return task_status(iscsi_extended_copy_sync(c, lun, &d), s);
}

#define ck_sense(st, s, k, code)                                                         \
	do {                                                                             \
		ck_assert_msg((st) == ST_CHECK, "%s:%d status %d, want CHECK CONDITION %x/%04x", \
			      __FILE__, __LINE__, (st), (k), (code));                    \
		ck_assert_msg((s).key == (k) && (s).ascq == (code),                      \
			      "%s:%d sense %x/%04x, want %x/%04x", __FILE__, __LINE__,     \
			      (s).key, (s).ascq, (k), (code));                           \
	} while (0)

#define ck_good(st, s)                                                                   \
	ck_assert_msg((st) == ST_GOOD, "%s:%d status %d sense %x/%04x, want GOOD",       \
		      __FILE__, __LINE__, (st), (s).key, (s).ascq)

/* RECEIVE COPY RESULTS: status; data into @out (up to @cap), its length
 * into *@len. */
static int rcr(struct iscsi_context *c, int sa, int list_id, uint8_t *out, unsigned cap,
	       unsigned *len, struct scsi_sense *s)
{
	struct scsi_task *t = iscsi_receive_copy_results_sync(c, 0, sa, list_id, (int)cap);
	int st;

	ck_assert_ptr_nonnull(t);
	st = t->status;
	*s = t->sense;
	*len = t->datain.size > 0 ? (unsigned)t->datain.size : 0;
	if (*len > cap)
		*len = cap;
	if (*len)
		memcpy(out, t->datain.data, *len);
	scsi_free_scsi_task(t);
	return st;
}

static uint8_t *rnd(size_t n, uint64_t seed)
{
	uint8_t *b = malloc(n);

	ck_assert_ptr_nonnull(b);
	harness_fill_random(b, n, seed);
	return b;
}

/* ---- cases ---- */

/* 01: within one LU, 6151 blocks (7 pieces of 1 MiB, the last short) to
 * a far LBA; an overlapping copy 1000 blocks up (done from the end). */
START_TEST(t01_within_lu)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	uint8_t naa[1][16], list[256];
	const uint32_t n = 6151, nb = n * BS;
	uint8_t *src = rnd(nb, 1), *got = malloc(nb + 1000 * BS), *want;
	struct seg s = { 0, 0, (uint16_t)n, 0, 20000 };
	struct scsi_sense sn;
	uint32_t len;
	int st;

	ck_assert_ptr_nonnull(got);
	clear_ua(a, 0);
	naa_of(a, 0, naa[0]);
	wr(a, 0, 0, src, nb);
	len = build(list, 0, 2, naa, 1, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_good(st, sn);
	rd(a, 0, 20000, got, nb);
	ck_assert_msg(fnv(got, nb) == fnv(src, nb), "copy differs: fnv %016llx vs %016llx",
		      (unsigned long long)fnv(got, nb), (unsigned long long)fnv(src, nb));
	ck_assert_int_eq(memcmp(got, src, nb), 0);
	/* overlapping: [0, 4096) to [1000, 5096) must equal a memmove */
	s = (struct seg){ 0, 0, 4096, 0, 1000 };
	len = build(list, 0, 2, naa, 1, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_good(st, sn);
	want = malloc(5096 * BS);
	ck_assert_ptr_nonnull(want);
	memcpy(want, src, 5096 * BS);
	memmove(want + 1000 * BS, src, 4096 * BS);
	rd(a, 0, 0, got, 5096 * BS);
	ck_assert_int_eq(memcmp(got, want, 5096 * BS), 0);
	free(want);
	free(src);
	free(got);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* 02: one command, two segments: v0 -> v1 (same pool) and v0 -> w0 (pool
 * q), sent to LUN 2 (the copy manager need not be the source). */
START_TEST(t02_between_lus_and_pools)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	uint8_t naa[3][16], list[256];
	const uint32_t nb = 6151 * BS;
	uint8_t *src = rnd(nb, 2), *got = malloc(nb);
	struct seg s[2] = { { 0, 1, 2048, 0, 100 }, { 0, 2, 4103, 2048, 7 } };
	struct scsi_sense sn;
	uint32_t len;
	int st;

	ck_assert_ptr_nonnull(got);
	for (int l = 0; l < 3; l++) {
		clear_ua(a, l);
		naa_of(a, l, naa[l]);
	}
	ck_assert_int_ne(memcmp(naa[0], naa[1], 16), 0);
	wr(a, 0, 0, src, nb);
	len = build(list, 0, 2, naa, 3, s, 2);
	st = xcopy(a, 2, list, len, &sn);
	ck_good(st, sn);
	rd(a, 1, 100, got, 2048 * BS);
	ck_assert_msg(fnv(got, 2048 * BS) == fnv(src, 2048 * BS), "v0 -> v1 differs");
	rd(a, 2, 7, got, 4103 * BS);
	ck_assert_msg(fnv(got, 4103 * BS) == fnv(src + 2048 * BS, 4103 * BS),
		      "v0 -> w0 (pool q) differs");
	free(src);
	free(got);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* 03: INQUIRY 3PC, VPD 0x00 lists 0x8F, VPD 0x8F's Parameter Data and
 * OPERATING PARAMETERS agree on the limits, RECEIVE DATA is refused. */
START_TEST(t03_limits_reported)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	struct scsi_task *t;
	struct scsi_sense sn;
	uint8_t op[64];
	unsigned len, p, found = 0, i;
	int st;

	clear_ua(a, 0);
	t = iscsi_inquiry_sync(a, 0, 0, 0, 96);
	ck_assert_ptr_nonnull(t);
	ck_assert_msg(t->datain.data[5] & 0x08, "3PC not set");
	scsi_free_scsi_task(t);
	t = iscsi_inquiry_sync(a, 0, 1, 0x00, 255);
	ck_assert_ptr_nonnull(t);
	for (i = 4; i < (unsigned)t->datain.size; i++)
		found += t->datain.data[i] == 0x8f;
	ck_assert_uint_eq(found, 1);
	scsi_free_scsi_task(t);

	st = rcr(a, 3, 0, op, sizeof(op), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq(len, 46);
	ck_assert_uint_eq((op[8] << 8) | op[9], 16);                   /* CSCDs */
	ck_assert_uint_eq((op[10] << 8) | op[11], 64);                 /* segments */
	ck_assert_uint_eq((uint32_t)op[12] << 24 | op[13] << 16 | op[14] << 8 | op[15], 2304);
	ck_assert_uint_eq((uint32_t)op[16] << 24 | op[17] << 16 | op[18] << 8 | op[19],
			  65535u * 512u);                               /* segment length */
	ck_assert_uint_eq(op[20] | op[21] | op[22] | op[23], 0);       /* inline data */

	t = iscsi_inquiry_sync(a, 0, 1, 0x8f, 1024);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, ST_GOOD);
	len = 4u + ((unsigned)t->datain.data[2] << 8 | t->datain.data[3]);
	found = 0;
	for (p = 4; p + 4 <= len; p += 4u + ((unsigned)t->datain.data[p + 2] << 8 |
					      t->datain.data[p + 3])) {
		const uint8_t *d = &t->datain.data[p];

		if (d[0] == 0 && d[1] == 0x08) {
			found++;
			ck_assert_int_eq(memcmp(&d[8], &op[8], 8), 0);     /* same numbers */
			ck_assert_uint_eq(d[16] | d[17] | d[18] | d[19], 0);
		}
		if (d[0] == 0 && d[1] == 0x01)
			found += 2;
	}
	ck_assert_uint_eq(found, 3);
	scsi_free_scsi_task(t);

	/* RECEIVE DATA (01h): no held data, not supported */
	st = rcr(a, 1, 0, op, sizeof(op), &len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2400);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* 04: malformed lists and lists beyond the limits, each with its sense;
 * v1, the destination of all of them, is unchanged afterwards. */
START_TEST(t04_bad_lists)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	uint8_t naa[66][16], list[4096], before[64 * BS], after[64 * BS];
	struct seg s[66];
	struct scsi_sense sn;
	uint8_t *pat = rnd(64 * BS, 4);
	uint32_t len;
	int st;

	clear_ua(a, 0);
	clear_ua(a, 1);
	naa_of(a, 0, naa[0]);
	naa_of(a, 1, naa[1]);
	for (int i = 2; i < 66; i++)
		memcpy(naa[i], naa[1], 16);
	for (int i = 0; i < 66; i++)
		s[i] = (struct seg){ 0, 1, 64, 0, 0 };
	wr(a, 1, 0, pat, sizeof(before));
	rd(a, 1, 0, before, sizeof(before));

	/* parameter list length 0: nothing to do, GOOD */
	len = build(list, 0, 2, naa, 2, s, 1);
	st = xcopy(a, 0, list, 0, &sn);
	ck_good(st, sn);
	/* shorter than the header */
	st = xcopy(a, 0, list, 15, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x1a00);
	/* the lists cut by the parameter list length */
	st = xcopy(a, 0, list, len - 1, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x1a00);
	st = xcopy(a, 0, list, 16 + 63, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x1a00);
	/* 17 CSCDs, 65 segments, both (over the descriptor list length) */
	len = build(list, 0, 2, naa, 17, s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2606);
	len = build(list, 0, 2, naa, 2, s, 65);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2608);
	len = build(list, 0, 2, naa, 17, s, 65);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x1a00);
	/* 16 CSCDs and 64 segments are allowed (the limit itself) */
	len = build(list, 0, 2, naa, 16, s, 64);
	st = xcopy(a, 0, list, len, &sn);
	ck_good(st, sn);
	wr(a, 1, 0, before, sizeof(before));
	/* unsupported CSCD type (FC N_Port_Name), segment type (stream) */
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 32] = 0xe0;
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2607);
	ck_assert_msg(sn.sense_specific && !sn.ill_param_in_cdb && sn.field_pointer == 48,
		      "field pointer %u", sn.field_pointer);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 64] = 0x03;
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2609);
	/* inline data, a 4096-byte block length, a tape CSCD, usage 01b,
	 * a segment descriptor 4 bytes long for its type, a CSCD list
	 * length not a multiple of 32, reserved header bytes */
	len = build(list, 0, 2, naa, 2, s, 1);
	put32(&list[12], 512);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 32 + 30] = 0x10;
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 1] = 0x01;
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 1, naa, 2, s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 2, naa, 2, s, 1);
	put16(&list[16 + 64 + 2], 20);
	put32(&list[8], 24);
	st = xcopy(a, 0, list, len - 4, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 2, naa, 2, s, 1);
	put16(&list[2], 63);
	put32(&list[8], 29);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[5] = 1;
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	/* a segment length running past the list */
	len = build(list, 0, 2, naa, 2, s, 1);
	put16(&list[16 + 64 + 2], 0xffff);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x1a00);

	/* segment processing errors: COPY ABORTED */
	s[0] = (struct seg){ 0, 2, 64, 0, 0 };       /* CSCD index beyond the list */
	len = build(list, 0, 2, naa, 2, s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	s[0] = (struct seg){ 0, 1, 64, 0, 0 };
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 32 + 1] = 0x20;                    /* NUL */
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 32 + 20] ^= 0x5a;                  /* a designator no LU has */
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	len = build(list, 0, 2, naa, 2, s, 1);
	list[16 + 32 + 5] = 0x08;                    /* SCSI name designator type */
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	/* ranges past the end (v1: 32 MiB = 65536 blocks), and one that
	 * would wrap */
	s[0] = (struct seg){ 0, 1, 64, 0, 65536 - 63 };
	len = build(list, 0, 2, naa, 2, s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0000);
	s[0] = (struct seg){ 0, 1, 64, UINT64_MAX - 10, 0 };
	len = build(list, 0, 2, naa, 2, s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0000);
	/* the first segment fine, the second out of range: nothing copied */
	s[0] = (struct seg){ 0, 1, 64, 0, 0 };
	s[1] = (struct seg){ 0, 1, 64, 0, 65536 };
	len = build(list, 0, 2, naa, 2, s, 2);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0000);

	rd(a, 1, 0, after, sizeof(after));
	ck_assert_msg(memcmp(before, after, sizeof(before)) == 0,
		      "a refused EXTENDED COPY changed its destination");
	free(pat);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* 05: hostile CSCDs. A names by designator an LU of another target (T2)
 * and one masked from it (B's LUN 5), as source and as destination:
 * COPY ABORTED, COPY TARGET DEVICE NOT REACHABLE, nothing written; the
 * nexuses that do see them copy with the same designators (so the
 * designators were right). A read-only LUN as destination: DATA PROTECT,
 * WRITE PROTECTED, unchanged; as source it works. */
START_TEST(t05_hostile_access)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	struct iscsi_context *b = login_as(INI_B, NULL, 0);
	struct iscsi_context *a2 = login_as(NULL, T2, 0);
	uint8_t naa[2][16], mine[4][16], other[16], hid[16], list[256];
	uint8_t *p0 = rnd(64 * BS, 50), *p1 = rnd(64 * BS, 51), *p2 = rnd(64 * BS, 52);
	uint8_t got[64 * BS];
	struct seg s = { 0, 1, 64, 0, 0 };
	struct scsi_sense sn;
	uint32_t len;
	int st;

	for (int l = 0; l < 4; l++) {
		clear_ua(a, l);
		naa_of(a, l, mine[l]);
	}
	clear_ua(b, 5);
	naa_of(b, 5, hid);
	clear_ua(a2, 0);
	naa_of(a2, 0, other);
	wr(a, 0, 0, p0, sizeof(got));
	wr(b, 5, 0, p1, sizeof(got));
	wr(a2, 0, 0, p2, sizeof(got));

	/* T2's LU into A's LUN 0, and A's LUN 0 into T2's LU */
	memcpy(naa[0], other, 16);
	memcpy(naa[1], mine[0], 16);
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	memcpy(naa[0], mine[0], 16);
	memcpy(naa[1], other, 16);
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	/* the masked LU, both ways */
	memcpy(naa[0], hid, 16);
	memcpy(naa[1], mine[0], 16);
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	memcpy(naa[0], mine[0], 16);
	memcpy(naa[1], hid, 16);
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0d02);
	/* nothing moved */
	rd(a, 0, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p0, sizeof(got)), 0);
	rd(b, 5, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	rd(a2, 0, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p2, sizeof(got)), 0);

	/* the same designators work for the nexuses that see them */
	memcpy(naa[0], hid, 16);
	memcpy(naa[1], hid, 16);
	s = (struct seg){ 0, 1, 64, 0, 1000 };
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(b, 5, list, len, &sn);
	ck_good(st, sn);
	rd(b, 5, 1000, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	memcpy(naa[0], other, 16);
	memcpy(naa[1], other, 16);
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a2, 0, list, len, &sn);
	ck_good(st, sn);
	rd(a2, 0, 1000, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p2, sizeof(got)), 0);

	/* read-only LUN 3 */
	rd(a, 3, 0, p2, sizeof(got));
	memcpy(naa[0], mine[0], 16);
	memcpy(naa[1], mine[3], 16);
	s = (struct seg){ 0, 1, 64, 0, 0 };
	len = build(list, 0, 2, naa, 2, &s, 1);
	st = xcopy(a, 0, list, len, &sn);
	ck_sense(st, sn, SCSI_SENSE_DATA_PROTECTION, 0x2700);
	rd(a, 3, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p2, sizeof(got)), 0);
	s = (struct seg){ 1, 0, 64, 0, 0 };
	st = xcopy(a, 3, list, build(list, 0, 2, naa, 2, &s, 1), &sn);
	ck_good(st, sn);
	rd(a, 0, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p2, sizeof(got)), 0);
	free(p0);
	free(p1);
	free(p2);
	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	harness_iscsi_logout(a2);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

static void prout(struct iscsi_context *c, int lun, int sa, int type, uint64_t key)
{
	struct scsi_persistent_reserve_out_basic p = { .reservation_key = key };
	struct scsi_sense sn;
	int st;

	if (sa == SCSI_PERSISTENT_RESERVE_REGISTER) {
		p.reservation_key = 0;
		p.service_action_reservation_key = key;
	}
	st = task_status(iscsi_persistent_reserve_out_sync(c, lun, sa, 0, type, &p), &sn);
	ck_good(st, sn);
}

/* 06: reservations of B on source and destination, as a READ or WRITE
 * from A would meet them: persistent Exclusive Access (both ways
 * conflict), Write Exclusive (A may read, not write), SPC-2 RESERVE(6);
 * nothing written through a conflict; the holder itself copies. */
START_TEST(t06_reservations)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	struct iscsi_context *b = login_as(INI_B, NULL, 0);
	uint8_t naa[3][16], list[256], got[64 * BS];
	uint8_t *p0 = rnd(64 * BS, 60), *p1 = rnd(64 * BS, 61);
	struct seg to1 = { 0, 1, 64, 0, 0 }, from1 = { 1, 0, 64, 0, 0 };
	struct seg to2 = { 0, 2, 64, 0, 0 }, from2 = { 2, 0, 64, 0, 0 };
	struct scsi_sense sn;
	int st;

	for (int l = 0; l < 3; l++) {
		clear_ua(a, l);
		clear_ua(b, l);
		naa_of(a, l, naa[l]);
	}
	wr(a, 0, 0, p0, sizeof(got));
	wr(a, 1, 0, p1, sizeof(got));
	wr(a, 2, 0, p1, sizeof(got));

	prout(b, 1, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0xb0b);
	prout(b, 1, SCSI_PERSISTENT_RESERVE_RESERVE, SCSI_PERSISTENT_RESERVE_TYPE_EXCLUSIVE_ACCESS,
	      0xb0b);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &to1, 1), &sn);
	ck_assert_int_eq(st, ST_CONFLICT);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &from1, 1), &sn);
	ck_assert_int_eq(st, ST_CONFLICT);
	rd(b, 1, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	/* the holder may */
	st = xcopy(b, 0, list, build(list, 0, 2, naa, 3, &to1, 1), &sn);
	ck_good(st, sn);
	rd(b, 1, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p0, sizeof(got)), 0);
	wr(b, 1, 0, p1, sizeof(got));
	/* Write Exclusive: A reads through it, does not write */
	prout(b, 1, SCSI_PERSISTENT_RESERVE_RELEASE, SCSI_PERSISTENT_RESERVE_TYPE_EXCLUSIVE_ACCESS,
	      0xb0b);
	prout(b, 1, SCSI_PERSISTENT_RESERVE_RESERVE, SCSI_PERSISTENT_RESERVE_TYPE_WRITE_EXCLUSIVE,
	      0xb0b);
	clear_ua(a, 1);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &to1, 1), &sn);
	ck_assert_int_eq(st, ST_CONFLICT);
	rd(a, 1, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &from1, 1), &sn);
	ck_good(st, sn);
	rd(a, 0, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	wr(a, 0, 0, p0, sizeof(got));

	/* SPC-2 RESERVE(6) of LUN 2 by B */
	st = task_status(iscsi_reserve6_sync(b, 2), &sn);
	ck_good(st, sn);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &to2, 1), &sn);
	ck_assert_int_eq(st, ST_CONFLICT);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &from2, 1), &sn);
	ck_assert_int_eq(st, ST_CONFLICT);
	rd(b, 2, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p1, sizeof(got)), 0);
	st = task_status(iscsi_release6_sync(b, 2), &sn);
	ck_good(st, sn);
	st = xcopy(a, 0, list, build(list, 0, 2, naa, 3, &to2, 1), &sn);
	ck_good(st, sn);
	rd(a, 2, 0, got, sizeof(got));
	ck_assert_int_eq(memcmp(got, p0, sizeof(got)), 0);
	free(p0);
	free(p1);
	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* 07: RECEIVE COPY RESULTS per I_T nexus: a held copy's COPY STATUS and
 * FAILED SEGMENT DETAILS, a failed one's, discarded and disabled list
 * identifiers, another nexus (another initiator, or A with another ISID)
 * cannot read A's results. */
START_TEST(t07_receive_copy_results)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	struct iscsi_context *b = login_as(INI_B, NULL, 0);
	struct iscsi_context *a_other = login_as(NULL, NULL, 0x1234);
	uint8_t naa[2][16], list[256], d[256];
	struct seg s[2] = { { 0, 1, 100, 0, 0 }, { 0, 1, 28, 500, 900 } };
	struct scsi_sense sn;
	unsigned len;
	int st;

	clear_ua(a, 0);
	clear_ua(b, 0);
	clear_ua(a_other, 0);
	naa_of(a, 0, naa[0]);
	naa_of(a, 1, naa[1]);
	st = xcopy(a, 0, list, build(list, 7, 0, naa, 2, s, 2), &sn);
	ck_good(st, sn);
	st = rcr(a, 0, 7, d, sizeof(d), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq(len, 12);
	ck_assert_uint_eq(d[4], 0x01);                           /* completed, no errors */
	ck_assert_uint_eq((d[5] << 8) | d[6], 2);                /* segments */
	ck_assert_uint_eq(d[7], 0x00);                           /* bytes */
	ck_assert_uint_eq((uint32_t)d[8] << 24 | d[9] << 16 | d[10] << 8 | d[11], 128 * BS);
	st = rcr(a, 4, 7, d, sizeof(d), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq(len, 60);
	ck_assert_uint_eq(d[56], 0);
	ck_assert_uint_eq((d[58] << 8) | d[59], 0);
	/* other nexuses */
	st = rcr(b, 0, 7, d, sizeof(d), &len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2400);
	st = rcr(a_other, 0, 7, d, sizeof(d), &len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2400);
	st = rcr(b, 4, 7, d, sizeof(d), &len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2400);
	/* a failing copy (its second segment out of range) */
	s[1].dst_lba = 65536;
	st = xcopy(a, 0, list, build(list, 8, 0, naa, 2, s, 2), &sn);
	ck_sense(st, sn, SCSI_SENSE_COPY_ABORTED, 0x0000);
	st = rcr(a, 0, 8, d, sizeof(d), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq(d[4], 0x02);                           /* completed with errors */
	ck_assert_uint_eq((uint32_t)d[8] << 24 | d[9] << 16 | d[10] << 8 | d[11], 0);
	st = rcr(a, 4, 8, d, sizeof(d), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq(d[56], ST_CHECK);
	ck_assert_uint_ge((d[58] << 8) | d[59], 18);
	ck_assert_uint_eq(len, 60u + ((d[58] << 8) | d[59]));
	ck_assert_uint_eq(d[60 + 2] & 0x0f, SCSI_SENSE_COPY_ABORTED);
	/* 7 is still there, and may be used again */
	st = xcopy(a, 0, list, build(list, 7, 0, naa, 2, s, 1), &sn);
	ck_good(st, sn);
	st = rcr(a, 0, 7, d, sizeof(d), &len, &sn);
	ck_good(st, sn);
	ck_assert_uint_eq((d[5] << 8) | d[6], 1);
	/* discard (10b): not held; no list identifier (11b): list id 0 only */
	st = xcopy(a, 0, list, build(list, 9, 2, naa, 2, s, 1), &sn);
	ck_good(st, sn);
	st = rcr(a, 0, 9, d, sizeof(d), &len, &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2400);
	st = xcopy(a, 0, list, build(list, 3, 3, naa, 2, s, 1), &sn);
	ck_sense(st, sn, SCSI_SENSE_ILLEGAL_REQUEST, 0x2600);
	st = xcopy(a, 0, list, build(list, 0, 3, naa, 2, s, 1), &sn);
	ck_good(st, sn);
	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	harness_iscsi_logout(a_other);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

struct pending {
	bool done;
	int status;
};

static void cb_done(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct pending *p = priv;

	(void)c;
	(void)data;
	p->done = true;
	p->status = status;
}

static void cb_task(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct pending *p = priv;
	struct scsi_task *t = data;

	(void)c;
	p->done = true;
	p->status = t ? t->status : status;
	if (t)
		scsi_free_scsi_task(t);
}

static void service_until(struct iscsi_context *c, struct pending *x, struct pending *y)
{
	uint64_t end = harness_now_ms() + 30000;

	while (!(x->done && y->done)) {
		struct pollfd pfd = { .fd = iscsi_get_fd(c), .events = (short)iscsi_which_events(c) };

		ck_assert_msg(harness_now_ms() < end, "copy or reset did not complete");
		if (poll(&pfd, 1, 100) < 0)
			continue;
		ck_assert_int_eq(iscsi_service(c, pfd.revents), 0);
	}
}

/* 08: LUN RESET of the copy manager LU while a 32 MiB copy (two 16 MiB
 * segments, v0 -> v1) runs: the command does not end GOOD, and v1 holds
 * whole 1 MiB pieces of the copy followed by untouched (zero) ones. Tried
 * up to 10 times until the reset lands inside a copy. */
START_TEST(t08_reset_mid_copy)
{
	struct iscsi_context *a = login_as(NULL, NULL, 0);
	const uint32_t total = 32 * MIB;
	uint8_t naa[2][16], list[256];
	uint8_t *src = rnd(total, 8), *got = malloc(total), *zero = calloc(1, total);
	struct seg s[2] = { { 0, 1, 32768, 0, 0 }, { 0, 1, 32768, 32768, 32768 } };
	struct scsi_sense sn;
	unsigned tries, stopped = 0;

	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_nonnull(zero);
	clear_ua(a, 0);
	clear_ua(a, 1);
	naa_of(a, 0, naa[0]);
	naa_of(a, 1, naa[1]);
	wr(a, 0, 0, src, total);
	for (tries = 0; tries < 10 && !stopped; tries++) {
		struct iscsi_data dd;
		struct pending cp = { 0 }, rs = { 0 };
		uint32_t len = build(list, 0, 2, naa, 2, s, 2);
		unsigned piece, copied = 0;
		bool tail = false;

		wr(a, 1, 0, zero, total);
		dd.size = len;
		dd.data = list;
		ck_assert_ptr_nonnull(iscsi_extended_copy_task(a, 1, &dd, cb_task, &cp));
		/* let the copy get going before the reset goes out */
		for (int i = 0; i < 3 && !cp.done; i++) {
			struct pollfd pfd = { .fd = iscsi_get_fd(a),
					      .events = (short)iscsi_which_events(a) };

			if (poll(&pfd, 1, 5 * (int)tries) >= 0)
				ck_assert_int_eq(iscsi_service(a, pfd.revents), 0);
		}
		ck_assert_int_eq(iscsi_task_mgmt_lun_reset_async(a, 1, cb_done, &rs), 0);
		service_until(a, &cp, &rs);
		clear_ua(a, 1);
		rd(a, 1, 0, got, total);
		for (piece = 0; piece < total / MIB; piece++) {
			bool is_src = memcmp(got + piece * MIB, src + piece * MIB, MIB) == 0;
			bool is_zero = memcmp(got + piece * MIB, zero, MIB) == 0;

			ck_assert_msg(is_src || is_zero, "try %u: piece %u is neither copied nor "
				      "untouched", tries, piece);
			if (is_src) {
				ck_assert_msg(!tail, "try %u: piece %u copied after an untouched one",
					      tries, piece);
				copied++;
			} else {
				tail = true;
			}
		}
		if (cp.status == ST_GOOD) {
			ck_assert_msg(copied == total / MIB, "GOOD after %u of %u MiB", copied,
				      total / MIB);
			continue;
		}
		/* libiscsi cancels (SCSI_STATUS_CANCELLED) the tasks of a LUN
		 * it reset instead of waiting for their responses */
		ck_assert_msg(cp.status == ST_ABORTED || cp.status == ST_CHECK ||
			      cp.status == SCSI_STATUS_CANCELLED,
			      "status 0x%x after the reset", cp.status);
		ck_assert_msg(copied < total / MIB, "status %d but all copied", cp.status);
		printf("08_reset_mid_copy: try %u: reset stopped the copy after %u of %u MiB "
		       "(status 0x%02x)\n", tries, copied, total / MIB, cp.status);
		stopped = 1;
	}
	ck_assert_msg(stopped, "the reset never landed inside a copy in %u tries", tries);
	(void)sn;
	free(src);
	free(got);
	free(zero);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_within_lu", t01_within_lu),
		CK_CASE("02_between_lus_and_pools", t02_between_lus_and_pools),
		CK_CASE("03_limits_reported", t03_limits_reported),
		CK_CASE("04_bad_lists", t04_bad_lists),
		CK_CASE("05_hostile_access", t05_hostile_access),
		CK_CASE("06_reservations", t06_reservations),
		CK_CASE("07_receive_copy_results", t07_receive_copy_results),
		CK_CASE("08_reset_mid_copy", t08_reset_mid_copy, .timeout = 240),
	};

	return ck_main(&(struct ck_suite_def){ "net_xcopy", CK_CASES(cases), .setup = setup,
					       .teardown = teardown, .timeout = 120 });
}
