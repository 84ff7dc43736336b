/*
 * tests/unit/test_sbc.c - target/scsi/sbc.c against a real raid1 volume.
 *
 * 01-10 the block commands on the thick volume.
 * 11 logical block provisioning seen from the initiator: on the thick LU no
 *    UNMAP (invalid opcode, not in RSOC), WRITE SAME with UNMAP refused,
 *    VPD B2 full provisioning, READ CAPACITY(16) LBPME 0; on a thin LU
 *    (the thin shim below) VPD B2 LBPU/LBPWS/LBPWS10/LBPRZ and type thin,
 *    B0 the UNMAP limits and granularity, READ CAPACITY(16) LBPME+LBPRZ,
 *    UNMAP in RSOC.
 * 12 UNMAP: two descriptors read back as zeros, the rest intact; GET LBA
 *    STATUS reports the runs; a 3 MiB range from an unaligned LBA goes down
 *    as discards of at most discard_max, cut at granule boundaries.
 * 13 hostile UNMAP parameter lists: length 0 (GOOD, nothing), shorter than
 *    the header, a bad descriptor after a good one (nothing discarded),
 *    more descriptors than the Block Limits page allows, a partial last
 *    descriptor (ignored), ANCHOR.
 * 14 WRITE SAME with UNMAP: zeroes (and NDOB) are discarded, other data is
 *    written; more than one block of data-out, more blocks than the Block
 *    Limits page allows and ANCHOR are refused.
 * 15 a thin volume out of space: the write gets DATA PROTECT, SPACE
 *    ALLOCATION FAILED WRITE PROTECT, and the blocks keep their data.
 * 16 thin provisioning soft threshold: a crossing the volume counts
 *    (raid_vol_thin_threshold_events) after a WRITE gives the next command
 *    of both nexuses UNIT ATTENTION 38/07 once; nothing while the count
 *    stays; WRITE SAME, COMPARE AND WRITE and UNMAP look too; two
 *    crossings between looks are one UA; a new LU does not report the
 *    count it starts with; a thick LU never reports it.
 */
#include "raid/backend.h"
#include "tests/unit/scsi_fixture.h"

static void cdb10(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t n)
{
	memset(cdb, 0, 10);
	cdb[0] = op;
	conf_put_be32(&cdb[2], lba);
	conf_put_be16(&cdb[7], n);
}

static void cdb16(uint8_t *cdb, uint8_t op, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	conf_put_be64(&cdb[2], lba);
	conf_put_be32(&cdb[10], n);
}

static void setup(void)
{
	fx_setup();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
}

START_TEST(t01_write_read_roundtrip)
{
	uint8_t cdb[16];
	struct scsi_cmd c;
	unsigned i;

	for (i = 0; i < 8 * SCSI_BS; i++)
		fx.buf[i] = (uint8_t)(i * 7 + 3);
	cdb10(cdb, OP_WRITE_10, 100, 8);
	cdb[1] = 0x08; /* FUA */
	c = fx_run(fx.a, 0, cdb, 10, 8 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, 8 * SCSI_BS);
	memset(fx.buf, 0, 8 * SCSI_BS);
	cdb16(cdb, OP_READ_16, 100, 8);
	c = fx_run(fx.a, 0, cdb, 16, 8 * SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.data_in_len, 8 * SCSI_BS);
	for (i = 0; i < 8 * SCSI_BS; i++)
		ck_assert_int_eq(fx.buf[i], (uint8_t)(i * 7 + 3));
	/* READ(6): 21-bit LBA */
	memset(fx.buf, 0, SCSI_BS);
	memset(cdb, 0, 6);
	cdb[0] = OP_READ_6;
	cdb[3] = 101;
	cdb[4] = 1;
	c = fx_run(fx.a, 0, cdb, 6, SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], (uint8_t)(SCSI_BS * 7 + 3));
}
END_TEST

START_TEST(t02_range_checks)
{
	uint64_t nb = FX_VOL_BYTES / SCSI_BS;
	uint8_t cdb[16];
	struct scsi_cmd c;

	cdb16(cdb, OP_READ_16, nb - 1, 2);
	c = fx_run(fx.a, 0, cdb, 16, 2 * SCSI_BS, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	cdb16(cdb, OP_READ_16, nb + 1, 0);
	c = fx_run(fx.a, 0, cdb, 16, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	cdb16(cdb, OP_WRITE_16, UINT64_MAX, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	cdb16(cdb, OP_READ_16, nb - 1, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb10(cdb, OP_READ_10, 0, 0);
	c = fx_run(fx.a, 0, cdb, 10, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* RDPROTECT without protection information */
	cdb10(cdb, OP_READ_10, 0, 1);
	cdb[1] = 0x20;
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t03_residuals)
{
	uint8_t cdb[10];
	struct scsi_cmd c;

	/* read: EDTL 200 < one block: 200 bytes sent, xfer_len says 512 */
	cdb10(cdb, OP_READ_10, 0, 1);
	c = fx_run(fx.a, 0, cdb, 10, 200, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.data_in_len, 200);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
	/* read: EDTL larger than asked */
	c = fx_run(fx.a, 0, cdb, 10, 10000, false);
	ck_assert_uint_eq(c.data_in_len, SCSI_BS);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
	/* write: EDTL short by whole blocks: what was sent is written */
	memset(fx.buf, 'a', 2 * SCSI_BS);
	cdb10(cdb, OP_WRITE_10, 0, 2);
	c = fx_run(fx.a, 0, cdb, 10, 2 * SCSI_BS, true);
	memset(fx.buf, 'b', 2 * SCSI_BS);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, 2 * SCSI_BS);
	cdb10(cdb, OP_READ_10, 0, 2);
	c = fx_run(fx.a, 0, cdb, 10, 2 * SCSI_BS, false);
	ck_assert_int_eq(fx.buf[SCSI_BS - 1], 'b');
	ck_assert_int_eq(fx.buf[SCSI_BS], 'a');
	/* short by a partial block: nothing written, INVALID FIELD IN IU */
	cdb10(cdb, OP_WRITE_10, 0, 1);
	c = fx_run(fx.a, 0, cdb, 10, 200, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
	/* write: EDTL long: SPDTL written */
	cdb10(cdb, OP_WRITE_10, 0, 1);
	c = fx_run(fx.a, 0, cdb, 10, 10000, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
}
END_TEST

START_TEST(t04_compare_and_write_miscompare_offset)
{
	uint8_t cdb[16];
	struct scsi_cmd c;

	memset(fx.buf, 'A', 2 * SCSI_BS);
	cdb10(cdb, OP_WRITE_10, 50, 2);
	c = fx_run(fx.a, 0, cdb, 10, 2 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* compare 'A' x 2 blocks, write 'B' */
	memset(cdb, 0, 16);
	cdb[0] = OP_COMPARE_AND_WRITE;
	conf_put_be64(&cdb[2], 50);
	cdb[13] = 2;
	memset(fx.buf, 'A', 2 * SCSI_BS);
	memset(fx.buf + 2 * SCSI_BS, 'B', 2 * SCSI_BS);
	c = fx_run(fx.a, 0, cdb, 16, 4 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* now the medium holds 'B'; compare data differs at byte 700 */
	memset(fx.buf, 'B', 2 * SCSI_BS);
	fx.buf[700] = 'x';
	memset(fx.buf + 2 * SCSI_BS, 'C', 2 * SCSI_BS);
	c = fx_run(fx.a, 0, cdb, 16, 4 * SCSI_BS, true);
	ck_sense(c, SK_MISCOMPARE, ASC_MISCOMPARE_VERIFY);
	ck_assert_int_eq(c.sense[0], 0xf0); /* VALID + fixed */
	ck_assert_uint_eq(conf_get_be32(&c.sense[3]), 700);
	/* data-out size must be exactly 2 * blocks */
	c = fx_run(fx.a, 0, cdb, 16, 2 * SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	/* nothing was written by the miscompare */
	cdb10(cdb, OP_READ_10, 50, 2);
	c = fx_run(fx.a, 0, cdb, 10, 2 * SCSI_BS, false);
	ck_assert_int_eq(fx.buf[0], 'B');
	ck_assert_int_eq(fx.buf[2 * SCSI_BS - 1], 'B');
}
END_TEST

START_TEST(t05_verify_bytchk)
{
	uint8_t cdb[10];
	struct scsi_cmd c;

	memset(fx.buf, 0x5a, 4 * SCSI_BS);
	cdb10(cdb, OP_WRITE_10, 10, 4);
	c = fx_run(fx.a, 0, cdb, 10, 4 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb10(cdb, OP_VERIFY_10, 10, 4);
	cdb[1] = 0x02; /* BYTCHK=1 */
	c = fx_run(fx.a, 0, cdb, 10, 4 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	fx.buf[3 * SCSI_BS + 17] ^= 1;
	c = fx_run(fx.a, 0, cdb, 10, 4 * SCSI_BS, true);
	ck_sense(c, SK_MISCOMPARE, ASC_MISCOMPARE_VERIFY);
	ck_assert_uint_eq(conf_get_be32(&c.sense[3]), 3 * SCSI_BS + 17);
	/* BYTCHK=0: medium only */
	cdb[1] = 0;
	c = fx_run(fx.a, 0, cdb, 10, 0, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* BYTCHK=3: one block against all */
	cdb[1] = 0x06;
	memset(fx.buf, 0x5a, SCSI_BS);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb[1] = 0x04; /* BYTCHK=2 reserved */
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t06_write_same_pieces_and_ndob)
{
	uint8_t cdb[16];
	struct scsi_cmd c;
	uint32_t n = (3u << 20) / SCSI_BS; /* 3 MiB: several 1 MiB pieces */
	unsigned i;

	memset(fx.buf, 0, SCSI_BS);
	memcpy(fx.buf, "pattern!", 8);
	cdb16(cdb, OP_WRITE_SAME_16, 1000, n);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb16(cdb, OP_READ_16, 1000 + n - 4, 4);
	c = fx_run(fx.a, 0, cdb, 16, 4 * SCSI_BS, false);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(memcmp(fx.buf + i * SCSI_BS, "pattern!", 8), 0);
	/* NDOB writes zeros with no data-out */
	cdb16(cdb, OP_WRITE_SAME_16, 1000, 8);
	cdb[1] = 0x01;
	c = fx_run(fx.a, 0, cdb, 16, 0, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb16(cdb, OP_READ_16, 1000, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, false);
	ck_assert_int_eq(fx.buf[0], 0);
	/* UNMAP bit without thin provisioning */
	cdb16(cdb, OP_WRITE_SAME_16, 1000, 8);
	cdb[1] = 0x08;
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	/* zero blocks: WSNZ */
	cdb10(cdb, OP_WRITE_SAME_10, 0, 0);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	cdb10(cdb, OP_WRITE_SAME_10, FX_VOL_BYTES / SCSI_BS - 1, 2);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
}
END_TEST

START_TEST(t07_capacity_and_sync)
{
	uint8_t cdb[16];
	struct scsi_cmd c;

	cdb10(cdb, OP_READ_CAPACITY_10, 0, 0);
	c = fx_run(fx.a, 0, cdb, 10, 8, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), FX_VOL_BYTES / SCSI_BS - 1);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), SCSI_BS);
	memset(cdb, 0, 16);
	cdb[0] = OP_SAI_16;
	cdb[1] = SAI_READ_CAPACITY_16;
	conf_put_be32(&cdb[10], 12);
	c = fx_run(fx.a, 0, cdb, 16, 12, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, 12);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[0]), FX_VOL_BYTES / SCSI_BS - 1);
	cdb10(cdb, OP_SYNC_CACHE_10, 0, 0);
	c = fx_run(fx.a, 0, cdb, 10, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	cdb10(cdb, OP_SYNC_CACHE_10, FX_VOL_BYTES / SCSI_BS, 1);
	c = fx_run(fx.a, 0, cdb, 10, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	/* GET LBA STATUS: everything mapped, beyond end refused */
	memset(cdb, 0, 16);
	cdb[0] = OP_SAI_16;
	cdb[1] = SAI_GET_LBA_STATUS;
	conf_put_be64(&cdb[2], 10);
	conf_put_be32(&cdb[10], 24);
	c = fx_run(fx.a, 0, cdb, 16, 24, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 10);
	ck_assert_int_eq(fx.buf[20] & 0x0f, 0);
	conf_put_be64(&cdb[2], FX_VOL_BYTES / SCSI_BS);
	c = fx_run(fx.a, 0, cdb, 16, 24, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
}
END_TEST

START_TEST(t08_abort_flag_gives_task_aborted)
{
	uint8_t cdb[10];
	struct scsi_cmd c;
	int done = 0;

	cdb10(cdb, OP_READ_10, 0, 8);
	memset(&c, 0, sizeof(c));
	c.target = fx.t;
	c.nexus = fx.a;
	memcpy(c.cdb, cdb, 10);
	c.cdb_len = 16;
	c.edtl = c.buf_len = 8 * SCSI_BS;
	c.buf = fx.buf;
	c.ioctx = fx.ctx;
	c.done = fx_done;
	c.tpriv = &done;
	scsi_cmd_exec(&c);
	ck_assert_uint_eq(scsi_inflight(fx.t, 0), done ? 0 : 1);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.a, 0, SCSI_TMF_ABORT_TASK_SET), 0);
	while (!done) {
		struct pollfd pfd = { .fd = raid_ioctx_fd(fx.ctx), .events = POLLIN };

		poll(&pfd, 1, 10);
		raid_ioctx_run(fx.ctx);
	}
	ck_assert_int_eq(c.status, SCSI_TASK_ABORTED);
	ck_assert_uint_eq(scsi_inflight(fx.t, 0), 0);
}
END_TEST

/* A read-only mapping: every medium write is refused with DATA PROTECT,
 * WRITE PROTECTED and changes nothing; reads and SYNCHRONIZE CACHE work;
 * the same LU stays writable through another nexus's mapping. */
START_TEST(t09_read_only_mapping)
{
	const char *const ini_a[] = { "iqn.1994-05.com.a" };
	const struct scsi_lun_map ro[] = { { 0, 0, true } }, rw[] = { { 0, 0, false } };
	const struct scsi_view va = { ini_a, 1, ro, 1 }, dflt = { NULL, 0, rw, 1 };
	uint8_t cdb[16];
	struct scsi_cmd c;
	unsigned i;

	for (i = 0; i < 2 * SCSI_BS; i++)
		fx.buf[i] = 0x5a;
	cdb16(cdb, OP_WRITE_16, 40, 1);
	c = fx_run(fx.b, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &dflt), 0);
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);

	for (i = 0; i < 2 * SCSI_BS; i++)
		fx.buf[i] = 0xa5;
	cdb16(cdb, OP_WRITE_16, 40, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	cdb10(cdb, OP_WRITE_10, 40, 1);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	cdb10(cdb, OP_WRITE_VERIFY_10, 40, 1);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	memset(cdb, 0, 6);
	cdb[0] = OP_WRITE_6;
	cdb[3] = 40;
	cdb[4] = 1;
	c = fx_run(fx.a, 0, cdb, 6, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	cdb16(cdb, OP_WRITE_SAME_16, 40, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	cdb10(cdb, OP_WRITE_SAME_10, 40, 1);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	memset(cdb, 0, 16);
	cdb[0] = OP_COMPARE_AND_WRITE;
	conf_put_be64(&cdb[2], 40);
	cdb[13] = 1;
	memset(fx.buf, 0x5a, SCSI_BS);   /* compare data matches */
	c = fx_run(fx.a, 0, cdb, 16, 2 * SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	/* SYNCHRONIZE CACHE and reads are not medium writes */
	cdb10(cdb, OP_SYNC_CACHE_10, 0, 0);
	c = fx_run(fx.a, 0, cdb, 10, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	memset(fx.buf, 0, SCSI_BS);
	cdb16(cdb, OP_READ_16, 40, 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	for (i = 0; i < SCSI_BS; i++)
		ck_assert_int_eq(fx.buf[i], 0x5a);   /* nothing was written */
	/* the other nexus still writes the same LU */
	memset(fx.buf, 0x33, SCSI_BS);
	cdb16(cdb, OP_WRITE_16, 40, 1);
	c = fx_run(fx.b, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* read-write again after a table without the flag */
	ck_assert_int_eq(scsi_target_set_access(fx.t, NULL, 0, NULL), 0);
	fx_clear_ua(fx.a);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
}
END_TEST

/* t10: which CDBs fill their data-in themselves (the transport then does
 * not zero the buffer): the four READs, nothing else */
START_TEST(t10_cdb_fills_data_in)
{
	const uint8_t reads[] = { OP_READ_6, OP_READ_10, OP_READ_12, OP_READ_16 };
	const uint8_t others[] = { 0x12 /* INQUIRY */, 0x1a /* MODE SENSE 6 */,
				   OP_READ_CAPACITY_10, 0x9e /* READ CAPACITY 16 */,
				   0xa0 /* REPORT LUNS */, 0x03 /* REQUEST SENSE */,
				   0x2f /* VERIFY 10 */, 0x89 /* COMPARE AND WRITE */ };
	uint8_t cdb[16] = { 0 };

	for (unsigned i = 0; i < sizeof(reads); i++) {
		cdb[0] = reads[i];
		ck_assert_msg(scsi_cdb_fills_data_in(cdb), "0x%02x", reads[i]);
	}
	for (unsigned i = 0; i < sizeof(others); i++) {
		cdb[0] = others[i];
		ck_assert_msg(!scsi_cdb_fills_data_in(cdb), "0x%02x", others[i]);
	}
}
END_TEST

/* ---- the thin shim: the raid1 volume behind a backend that says it is
 * thin, keeps a block map, turns discards into zero writes and can run
 * out of space ---- */

#define TH_BLOCKS (FX_VOL_BYTES / SCSI_BS)
#define TH_GRAN (64u << 10)
#define TH_DISCARD_MAX (1u << 20)

static struct {
	struct raid_vol_backend_ops ops;
	bool mapped[TH_BLOCKS];
	bool full;                       /* writes fail with -ENOSPC */
	uint64_t events;                 /* raid_vol_thin_threshold_events() */
	unsigned n_disc;
	uint64_t disc_off[256], disc_len[256];
} th;

struct th_sub {
	struct raid_io sub;              /* first: the md request */
	struct raid_io *orig;
	uint8_t *scratch;                /* owned */
};

static void th_mark(uint64_t off, uint64_t len, bool mapped)
{
	for (uint64_t b = off / SCSI_BS; b < (off + len) / SCSI_BS; b++)
		th.mapped[b] = mapped;
}

static void th_done(struct raid_io *sub)
{
	struct th_sub *s = (struct th_sub *)sub;
	struct raid_io *o = s->orig;

	o->result = sub->result;
	if (o->op == RAID_OP_MAP_STATUS && !o->result) {
		uint64_t b = o->off / SCSI_BS, e = b;

		while (e < (o->off + o->len) / SCSI_BS && th.mapped[e] == th.mapped[b])
			e++;
		o->unmapped = !th.mapped[b];
		o->map_len = (e - b) * SCSI_BS;
	} else if (o->op == RAID_OP_DISCARD && !o->result) {
		th_mark(o->off, o->len, false);
	} else if (th.full && o->op == RAID_OP_WRITE) {
		o->result = -ENOSPC;
	} else if (o->op == RAID_OP_WRITE && !o->result) {
		th_mark(o->off, o->len, true);
	}
	free(s->scratch);
	free(s);
	o->cb(o);
}

static int th_submit(struct raid_vol *v, struct raid_ioctx *ctx, struct raid_io *io)
{
	struct th_sub *s;
	int rc;

	if (io->op != RAID_OP_DISCARD && io->op != RAID_OP_MAP_STATUS && io->op != RAID_OP_WRITE)
		return raid_md_vol_submit(v, ctx, io);
	if (io->op == RAID_OP_DISCARD) {
		ck_assert_uint_le(io->len, TH_DISCARD_MAX);
		ck_assert_uint_lt(th.n_disc, 256);
		th.disc_off[th.n_disc] = io->off;
		th.disc_len[th.n_disc++] = io->len;
	}
	s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->orig = io;
	s->sub.off = io->off;
	s->sub.len = io->len;
	s->sub.cb = th_done;
	if (io->op == RAID_OP_WRITE && !th.full) {
		s->sub.op = RAID_OP_WRITE;
		s->sub.buf = io->buf;
		s->sub.flags = io->flags;
	} else {
		/* a discard writes zeros; the lookup and the full store's
		 * refusal only need a completion (a read of the first block) */
		s->sub.op = io->op == RAID_OP_DISCARD ? RAID_OP_WRITE : RAID_OP_READ;
		if (s->sub.op == RAID_OP_READ)
			s->sub.len = SCSI_BS;
		s->scratch = calloc(1, s->sub.len);
		ck_assert_ptr_nonnull(s->scratch);
		s->sub.buf = s->scratch;
	}
	rc = raid_md_vol_submit(v, ctx, &s->sub);
	if (rc < 0) {
		free(s->scratch);
		free(s);
	}
	return rc;
}

static void th_prov(const struct raid_vol *v, struct raid_vol_prov *out)
{
	out->thin = true;
	out->discard_zeroes = true;
	out->gran = TH_GRAN;
	out->discard_max = TH_DISCARD_MAX;
}

static uint64_t th_events(const struct raid_vol *v)
{
	(void)v;
	return th.events;
}

/* The LU again, on the volume behind the thin shim (everything mapped). */
static void th_up(void)
{
	fx_lu_down();
	memset(&th, 0, sizeof(th));
	th.ops = *fx.pool->ops;
	th.ops.vol_submit = th_submit;
	th.ops.vol_prov = th_prov;
	th.ops.vol_threshold_events = th_events;
	for (unsigned b = 0; b < TH_BLOCKS; b++)
		th.mapped[b] = true;
	fx.pool->ops = &th.ops;
	fx_lu_up();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
}

static void vpd(uint8_t page, struct scsi_cmd *c)
{
	uint8_t cdb[6] = { OP_INQUIRY, 0x01, page, 0, 255, 0 };

	*c = fx_run(fx.a, 0, cdb, 6, 255, false);
	ck_assert_int_eq(c->status, SCSI_GOOD);
}

static struct scsi_cmd rc16(void)
{
	uint8_t cdb[16] = { 0 };
	struct scsi_cmd c;

	cdb[0] = OP_SAI_16;
	cdb[1] = SAI_READ_CAPACITY_16;
	conf_put_be32(&cdb[10], 32);
	c = fx_run(fx.a, 0, cdb, 16, 32, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	return c;
}

/* RSOC for one opcode: the SUPPORT field */
static uint8_t rsoc_support(uint8_t op)
{
	uint8_t cdb[12] = { 0 };
	struct scsi_cmd c;

	cdb[0] = OP_MAINT_IN;
	cdb[1] = MI_REPORT_OPCODES;
	cdb[2] = 0x01;
	cdb[3] = op;
	conf_put_be32(&cdb[6], 64);
	c = fx_run(fx.a, 0, cdb, 12, 64, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	return fx.buf[1] & 0x07;
}

/* UNMAP of the @n descriptors in @d (lba, blocks pairs) */
static struct scsi_cmd unmap(const uint64_t *d, unsigned n)
{
	uint8_t cdb[10] = { 0 };
	uint32_t plen = 8 + 16 * n;

	memset(fx.buf, 0, plen);
	conf_put_be16(&fx.buf[0], (uint16_t)(plen - 2));
	conf_put_be16(&fx.buf[2], (uint16_t)(16 * n));
	for (unsigned i = 0; i < n; i++) {
		conf_put_be64(&fx.buf[8 + 16 * i], d[2 * i]);
		conf_put_be32(&fx.buf[8 + 16 * i + 8], (uint32_t)d[2 * i + 1]);
	}
	cdb[0] = OP_UNMAP;
	conf_put_be16(&cdb[7], (uint16_t)plen);
	return fx_run(fx.a, 0, cdb, 10, plen, true);
}

static void fill(uint32_t lba, uint32_t n, uint8_t seed)
{
	uint8_t cdb[16];
	struct scsi_cmd c;

	for (uint32_t i = 0; i < n * SCSI_BS; i++)
		fx.buf[i] = (uint8_t)(seed + i % 251 + 1);
	cdb16(cdb, OP_WRITE_16, lba, n);
	c = fx_run(fx.a, 0, cdb, 16, n * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
}

/* Whether blocks [lba, lba + n) hold fill(.., seed)'s data (as written
 * from @from) or zeros (@seed 0) */
static void expect(uint32_t lba, uint32_t n, uint32_t from, uint8_t seed)
{
	uint8_t cdb[16];
	struct scsi_cmd c;

	cdb16(cdb, OP_READ_16, lba, n);
	c = fx_run(fx.a, 0, cdb, 16, n * SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	for (uint32_t i = 0; i < n * SCSI_BS; i++) {
		uint64_t at = (uint64_t)(lba - from) * SCSI_BS + i;
		uint8_t want = seed ? (uint8_t)(seed + at % 251 + 1) : 0;

		ck_assert_msg(fx.buf[i] == want, "block %u byte %u: %u, want %u", lba + i / SCSI_BS,
			      i % SCSI_BS, fx.buf[i], want);
	}
}

static void lba_status(uint64_t lba, uint64_t *got_lba, uint32_t *n, uint8_t *status)
{
	uint8_t cdb[16] = { 0 };
	struct scsi_cmd c;

	cdb[0] = OP_SAI_16;
	cdb[1] = SAI_GET_LBA_STATUS;
	conf_put_be64(&cdb[2], lba);
	conf_put_be32(&cdb[10], 24);
	c = fx_run(fx.a, 0, cdb, 16, 24, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 20);
	*got_lba = conf_get_be64(&fx.buf[8]);
	*n = conf_get_be32(&fx.buf[16]);
	*status = fx.buf[20] & 0x0f;
}

START_TEST(t11_provisioning_pages)
{
	uint8_t cdb[16];
	struct scsi_cmd c;
	uint64_t one[2] = { 0, 8 };

	/* thick */
	vpd(0xb2, &c);
	ck_assert_int_eq(fx.buf[5], 0);
	ck_assert_int_eq(fx.buf[6] & 0x07, 0);
	vpd(0xb0, &c);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[20]), 0);
	c = rc16();
	ck_assert_int_eq(fx.buf[14] & 0xc0, 0);
	c = unmap(one, 1);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
	ck_assert_int_eq(rsoc_support(OP_UNMAP), 0x01);   /* not supported */
	memset(fx.buf, 0, SCSI_BS);
	cdb16(cdb, OP_WRITE_SAME_16, 0, 8);
	cdb[1] = 0x08;
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);

	th_up();
	vpd(0xb2, &c);
	ck_assert_int_eq(fx.buf[3], 4);
	ck_assert_int_eq(fx.buf[5], 0x80 | 0x40 | 0x20 | 0x04);
	ck_assert_int_eq(fx.buf[6] & 0x07, 0x02);
	vpd(0xb0, &c);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[20]), SCSI_UNMAP_MAX_BLOCKS);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[24]), SCSI_UNMAP_MAX_DESC);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[28]), TH_GRAN / SCSI_BS);
	ck_assert_int_eq(fx.buf[32], 0x80);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[36]), SCSI_WS_MAX_BLOCKS);
	c = rc16();
	ck_assert_int_eq(fx.buf[14] & 0xc0, 0xc0);
	ck_assert_int_eq(rsoc_support(OP_UNMAP), 0x03);   /* supported as the standard says */
}
END_TEST

START_TEST(t12_unmap)
{
	uint64_t d[4] = { 100, 200, 1000, 48 }, lba;
	uint32_t n;
	uint8_t st;
	struct scsi_cmd c;

	th_up();
	fill(0, 2048, 7);
	c = unmap(d, 2);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(th.n_disc, 2);
	expect(0, 100, 0, 7);
	expect(100, 200, 0, 0);
	expect(300, 700, 0, 7);
	expect(1000, 48, 0, 0);
	expect(1048, 1000, 0, 7);
	lba_status(0, &lba, &n, &st);
	ck_assert_uint_eq(lba, 0);
	ck_assert_uint_eq(n, 100);
	ck_assert_int_eq(st, 0);
	lba_status(100, &lba, &n, &st);
	ck_assert_uint_eq(lba, 100);
	ck_assert_uint_eq(n, 200);
	ck_assert_int_eq(st, 1);
	lba_status(1040, &lba, &n, &st);
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(st, 1);
	/* 3 MiB from LBA 5: pieces of at most 1 MiB, each but the last
	 * ending on a 64 KiB boundary, together exactly the range */
	th.n_disc = 0;
	d[0] = 5;
	d[1] = 6144;
	c = unmap(d, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_ge(th.n_disc, 4);
	for (unsigned i = 0, at = 5 * SCSI_BS; i < th.n_disc; i++) {
		ck_assert_uint_eq(th.disc_off[i], at);
		ck_assert_uint_le(th.disc_len[i], TH_DISCARD_MAX);
		at += (unsigned)th.disc_len[i];
		if (i + 1 < th.n_disc)
			ck_assert_uint_eq(at % TH_GRAN, 0);
		else
			ck_assert_uint_eq(at, (5 + 6144) * SCSI_BS);
	}
	lba_status(5, &lba, &n, &st);
	ck_assert_uint_eq(n, 6144);
	ck_assert_int_eq(st, 1);
}
END_TEST

START_TEST(t13_unmap_hostile_lists)
{
	uint8_t cdb[10] = { 0 };
	uint64_t d[2 * (SCSI_UNMAP_MAX_DESC + 1)];
	struct scsi_cmd c;

	th_up();
	fill(0, 64, 3);
	/* parameter list length 0: GOOD, nothing */
	cdb[0] = OP_UNMAP;
	c = fx_run(fx.a, 0, cdb, 10, 0, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* shorter than the 8-byte header */
	memset(fx.buf, 0, 8);
	conf_put_be16(&cdb[7], 4);
	c = fx_run(fx.a, 0, cdb, 10, 4, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
	/* a good descriptor, then one past the end: nothing discarded */
	d[0] = 0;
	d[1] = 16;
	d[2] = TH_BLOCKS - 4;
	d[3] = 8;
	c = unmap(d, 2);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	ck_assert_uint_eq(th.n_disc, 0);
	/* an LBA that wraps with its count */
	d[2] = UINT64_MAX - 2;
	d[3] = 8;
	c = unmap(d, 2);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	expect(0, 64, 0, 3);
	/* more descriptors than the Block Limits page allows */
	for (unsigned i = 0; i <= SCSI_UNMAP_MAX_DESC; i++) {
		d[2 * i] = i;
		d[2 * i + 1] = 1;
	}
	c = unmap(d, SCSI_UNMAP_MAX_DESC + 1);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	ck_assert_uint_eq(th.n_disc, 0);
	/* a block descriptor data length of 24: the partial second one is
	 * ignored */
	d[0] = 8;
	d[1] = 8;
	d[2] = 32;
	d[3] = 8;
	memset(fx.buf, 0, 40);
	conf_put_be16(&fx.buf[0], 38);
	conf_put_be16(&fx.buf[2], 24);
	conf_put_be64(&fx.buf[8], 8);
	conf_put_be32(&fx.buf[16], 8);
	conf_put_be64(&fx.buf[24], 32);
	conf_put_be32(&fx.buf[32], 8);
	conf_put_be16(&cdb[7], 40);
	c = fx_run(fx.a, 0, cdb, 10, 40, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(th.n_disc, 1);
	expect(0, 8, 0, 3);
	expect(8, 8, 0, 0);
	expect(16, 48, 0, 3);
	/* ANCHOR: not supported */
	cdb[1] = 0x01;
	c = fx_run(fx.a, 0, cdb, 10, 40, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	ck_assert_uint_eq(th.n_disc, 1);
}
END_TEST

START_TEST(t14_write_same_unmap)
{
	uint8_t cdb[16];
	struct scsi_cmd c;
	uint64_t lba;
	uint32_t n;
	uint8_t st;

	th_up();
	fill(0, 256, 9);
	/* zeroes with UNMAP: discarded */
	memset(fx.buf, 0, SCSI_BS);
	cdb16(cdb, OP_WRITE_SAME_16, 16, 32);
	cdb[1] = 0x08;
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(th.n_disc, 1);
	expect(16, 32, 0, 0);
	lba_status(16, &lba, &n, &st);
	ck_assert_uint_eq(n, 32);
	ck_assert_int_eq(st, 1);
	/* NDOB with UNMAP: the same */
	cdb16(cdb, OP_WRITE_SAME_16, 64, 8);
	cdb[1] = 0x08 | 0x01;
	c = fx_run(fx.a, 0, cdb, 16, 0, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(th.n_disc, 2);
	expect(64, 8, 0, 0);
	/* WRITE SAME(10) with UNMAP of other data: written */
	for (unsigned i = 0; i < SCSI_BS; i++)
		fx.buf[i] = 0x5a;
	cdb10(cdb, OP_WRITE_SAME_10, 128, 4);
	cdb[1] = 0x08;
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(th.n_disc, 2);
	cdb16(cdb, OP_READ_16, 128, 4);
	c = fx_run(fx.a, 0, cdb, 16, 4 * SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	for (unsigned i = 0; i < 4 * SCSI_BS; i++)
		ck_assert_int_eq(fx.buf[i], 0x5a);
	expect(132, 124, 0, 9);
	/* two blocks of data-out for a one-block pattern: refused, unwritten */
	memset(fx.buf, 0, 2 * SCSI_BS);
	cdb16(cdb, OP_WRITE_SAME_16, 200, 8);
	cdb[1] = 0x08;
	c = fx_run(fx.a, 0, cdb, 16, 2 * SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	ck_assert_uint_eq(th.n_disc, 2);
	/* longer than the Block Limits page's MAXIMUM WRITE SAME LENGTH */
	cdb16(cdb, OP_WRITE_SAME_16, 0, SCSI_WS_MAX_BLOCKS + 1);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	/* ANCHOR */
	memset(fx.buf, 0, SCSI_BS);
	cdb16(cdb, OP_WRITE_SAME_16, 200, 8);
	cdb[1] = 0x08 | 0x10;
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	expect(200, 8, 0, 9);
}
END_TEST

START_TEST(t15_out_of_space)
{
	uint8_t cdb[16];
	struct scsi_cmd c;

	th_up();
	fill(0, 16, 4);
	th.full = true;
	for (unsigned i = 0; i < 8 * SCSI_BS; i++)
		fx.buf[i] = 0xee;
	cdb16(cdb, OP_WRITE_16, 0, 8);
	c = fx_run(fx.a, 0, cdb, 16, 8 * SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_SPACE_ALLOC_FAILED);
	th.full = false;
	expect(0, 16, 0, 4);
	/* and the LU goes on once there is space again */
	fill(0, 16, 5);
	expect(0, 16, 0, 5);
}
END_TEST

/* The next command of @n: UNIT ATTENTION, THIN PROVISIONING SOFT THRESHOLD
 * REACHED (@ua) or GOOD */
static void expect_tur(struct scsi_nexus *n, bool ua)
{
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c = fx_run(n, 0, tur, 6, 0, false);

	if (!ua) {
		ck_assert_int_eq(c.status, SCSI_GOOD);
		return;
	}
	ck_sense(c, SK_UNIT_ATTENTION, ASC_THIN_SOFT_THRESHOLD);
	ck_assert_int_eq(c.sense[0], 0x70);
	ck_assert_int_eq(c.sense[12], 0x38);   /* ASC */
	ck_assert_int_eq(c.sense[13], 0x07);   /* ASCQ */
}

START_TEST(t16_thin_threshold_ua)
{
	static struct raid_vol_backend_ops thick;
	uint64_t d[2] = { 256, 128 };
	uint8_t cdb[16];
	struct scsi_cmd c;

	/* a thick LU whose backend counts crossings anyway: never told */
	thick = *fx.pool->ops;
	thick.vol_threshold_events = th_events;
	fx_lu_down();
	fx.pool->ops = &thick;
	fx_lu_up();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	th.events = 1;
	fill(0, 8, 1);
	expect_tur(fx.a, false);
	expect_tur(fx.b, false);

	th_up();
	ck_assert_uint_eq(th.events, 0);
	memset(fx.buf, 'A', SCSI_BS);
	cdb10(cdb, OP_WRITE_10, 64, 1);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* the count grew: a WRITE on A tells A and B, each once */
	th.events = 1;
	fill(0, 8, 2);
	expect_tur(fx.a, true);
	expect_tur(fx.a, false);
	expect_tur(fx.b, true);
	expect_tur(fx.b, false);
	/* unchanged: further writes raise nothing */
	fill(8, 8, 3);
	cdb10(cdb, OP_WRITE_10, 16, 1);
	c = fx_run(fx.b, 0, cdb, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	expect_tur(fx.a, false);
	expect_tur(fx.b, false);

	/* the other write-type commands look too */
	th.events = 2;
	memset(fx.buf, 0x11, SCSI_BS);
	cdb16(cdb, OP_WRITE_SAME_16, 128, 16);
	c = fx_run(fx.a, 0, cdb, 16, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	expect_tur(fx.a, true);
	expect_tur(fx.b, true);
	th.events = 3;
	memset(cdb, 0, 16);
	cdb[0] = OP_COMPARE_AND_WRITE;
	conf_put_be64(&cdb[2], 64);
	cdb[13] = 1;
	memset(fx.buf, 'A', SCSI_BS);
	memset(fx.buf + SCSI_BS, 'B', SCSI_BS);
	c = fx_run(fx.b, 0, cdb, 16, 2 * SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	expect_tur(fx.a, true);
	expect_tur(fx.b, true);
	th.events = 4;
	c = unmap(d, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	expect_tur(fx.a, true);
	expect_tur(fx.b, true);
	/* two crossings before the LU looks again: one UA */
	th.events = 6;
	fill(0, 8, 4);
	expect_tur(fx.a, true);
	expect_tur(fx.a, false);
	expect_tur(fx.b, true);
	expect_tur(fx.b, false);

	/* a new LU on the volume (a restart) starts from the count: the
	 * crossings before it were told by the LU before */
	th.events = 9;
	fx_lu_down();
	fx_lu_up();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	fill(0, 8, 5);
	expect_tur(fx.a, false);
	expect_tur(fx.b, false);
	th.events = 10;
	fill(0, 8, 6);
	expect_tur(fx.a, true);
	expect_tur(fx.b, true);
}
END_TEST

int main(void)
{
	/* one tcase "sbc": each test after the first joins it */
	const struct ck_case cases[] = {
		CK_CASE("sbc", t01_write_read_roundtrip),
		CK_CASE(NULL, t02_range_checks),
		CK_CASE(NULL, t03_residuals),
		CK_CASE(NULL, t04_compare_and_write_miscompare_offset),
		CK_CASE(NULL, t05_verify_bytchk),
		CK_CASE(NULL, t06_write_same_pieces_and_ndob),
		CK_CASE(NULL, t07_capacity_and_sync),
		CK_CASE(NULL, t08_abort_flag_gives_task_aborted),
		CK_CASE(NULL, t09_read_only_mapping),
		CK_CASE(NULL, t10_cdb_fills_data_in),
		/* on the thin shim (each test is its own process) */
		CK_CASE("thin", t11_provisioning_pages),
		CK_CASE(NULL, t12_unmap),
		CK_CASE(NULL, t13_unmap_hostile_lists),
		CK_CASE(NULL, t14_write_same_unmap),
		CK_CASE(NULL, t15_out_of_space),
		CK_CASE(NULL, t16_thin_threshold_ua),
	};

	return ck_main(&(struct ck_suite_def){ "scsi_sbc", CK_CASES(cases),
		.setup = setup, .teardown = fx_teardown, .timeout = 60 });
}
