/* tests/unit/test_sbc.c - target/scsi/sbc.c against a real raid1 volume. */
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
	};

	return ck_main(&(struct ck_suite_def){ "scsi_sbc", CK_CASES(cases),
		.setup = setup, .teardown = fx_teardown, .timeout = 60 });
}
