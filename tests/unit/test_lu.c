/* tests/unit/test_lu.c - target/scsi/lu.c: dispatcher checks, unit
 * attentions, LUN field coding, task management, deferred errors after a
 * failed write-out of the stripe cache. */
#include <stdatomic.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/unit/scsi_fixture.h"

START_TEST(t01_power_on_ua_once_per_nexus)
{
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c;

	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	ck_assert_int_eq(c.sense[0], 0x70);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* the other nexus has its own */
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	ck_assert(scsi_lu_check(fx.lu));
}
END_TEST

START_TEST(t02_inquiry_does_not_report_ua)
{
	uint8_t inq[6] = { OP_INQUIRY, 0, 0, 0, 96, 0 };
	struct scsi_cmd c = fx_run(fx.a, 0, inq, 6, 96, false);

	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* still pending for TUR */
	uint8_t tur[6] = { 0 };
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
}
END_TEST

START_TEST(t03_bad_lun)
{
	uint8_t tur[6] = { 0 };
	uint8_t inq[6] = { OP_INQUIRY, 0, 0, 0, 36, 0 };
	uint8_t rl[12] = { OP_REPORT_LUNS, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0 };
	struct scsi_cmd c;

	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	c = fx_run(fx.a, 5, inq, 6, 36, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 0x7f);
	c = fx_run(fx.a, 5, rl, 12, 256, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(conf_get_be32(&fx.buf[0]), 8);
	ck_assert_int_eq(c.xfer_len, 16);
}
END_TEST

START_TEST(t04_invalid_opcode_and_sa)
{
	uint8_t bad[6] = { 0x02, 0, 0, 0, 0, 0 };
	uint8_t sai[16] = { OP_SAI_16, 0x1b };
	struct scsi_cmd c;

	fx_clear_ua(fx.a);
	c = fx_run(fx.a, 0, bad, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
	c = fx_run(fx.a, 0, sai, 16, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	/* field pointer: SKSV, C/D, byte 1 */
	ck_assert_int_eq(c.sense[15] & 0xc0, 0xc0);
	ck_assert_int_eq(conf_get_be16(&c.sense[16]), 1);
}
END_TEST

START_TEST(t05_naca_refused)
{
	uint8_t tur[6] = { 0, 0, 0, 0, 0, 0x04 };
	struct scsi_cmd c;

	fx_clear_ua(fx.a);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t06_lun_codec)
{
	uint8_t l[8];

	scsi_lun_encode(3, l);
	ck_assert_int_eq(l[0], 0);
	ck_assert_int_eq(l[1], 3);
	ck_assert_uint_eq(scsi_lun_decode(l), 3);
	scsi_lun_encode(300, l);
	ck_assert_int_eq(l[0] >> 6, 1);
	ck_assert_uint_eq(scsi_lun_decode(l), 300);
	l[0] = 0xc0;
	ck_assert_uint_eq(scsi_lun_decode(l), UINT64_MAX);
}
END_TEST

START_TEST(t07_lun_reset_ua_for_all)
{
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c;

	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.a, 0, SCSI_TMF_LUN_RESET), 0);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.a, 9, SCSI_TMF_LUN_RESET), -ENOENT);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_BUS_DEVICE_RESET);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_BUS_DEVICE_RESET);
	ck_assert_uint_eq(scsi_inflight(fx.t, UINT64_MAX), 0);
}
END_TEST

START_TEST(t08_request_sense_takes_ua)
{
	uint8_t rs[6] = { OP_REQUEST_SENSE, 0x01, 0, 0, 64, 0 };
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c;

	c = fx_run(fx.a, 0, rs, 6, 64, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 0x72); /* DESC=1 */
	ck_assert_int_eq(fx.buf[1], SK_UNIT_ATTENTION);
	ck_assert_int_eq(fx.buf[2], 0x29);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 0, rs, 6, 64, false);
	ck_assert_int_eq(fx.buf[1], SK_NO_SENSE);
}
END_TEST

START_TEST(t09_public_set_sense_fixed)
{
	struct scsi_cmd c;

	memset(&c, 0, sizeof(c));
	scsi_set_sense(&c, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	ck_assert_int_eq(c.status, SCSI_CHECK_CONDITION);
	ck_assert_int_eq(c.sense_len, 18);
	ck_assert_int_eq(c.sense[0], 0x70);
	ck_assert_int_eq(c.sense[7], 10);
	ck_assert_int_eq(c.sense[12], 0x24);
}
END_TEST

START_TEST(t10_nexus_requires_known_port)
{
	struct scsi_nexus *n = NULL;

	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.x,i,0x000000000001", 7, &n), -ENOENT);
	ck_assert_int_eq(scsi_target_add_port(fx.t, 1, 5), -EEXIST);
	ck_assert_int_eq(scsi_target_add_lu(fx.t, 0, fx.lu), -EEXIST);
}
END_TEST

START_TEST(t11_latency_histogram)
{
	static struct conf_hist h;
	uint64_t prev = 0;

	/* the LU's shape of conf_hist: buckets are monotonic and each value
	 * lies below its bucket's bound and at or above the previous bucket's,
	 * within 12.5% above 16 us */
	ck_assert_int_eq(conf_hist_init(&h, SCSI_LAT_SUB_BITS, SCSI_LAT_MAX_EXP), 0);
	for (uint64_t us = 0; us < (1u << 20); us += 1 + us / 7) {
		unsigned b = conf_hist_bucket(&h, us);

		ck_assert_uint_lt(b, conf_hist_buckets(&h));
		ck_assert_uint_ge(b, prev);
		prev = b;
		ck_assert_uint_gt(conf_hist_bucket_high(&h, b), us);
		if (b > 0)
			ck_assert_uint_le(conf_hist_bucket_high(&h, b - 1), us);
		if (us >= 16)
			ck_assert_uint_le(conf_hist_bucket_high(&h, b) - us, us / 8 + 1);
	}
	ck_assert_uint_eq(conf_hist_buckets(&h), 240);
	ck_assert_uint_eq(conf_hist_bucket(&h, UINT64_MAX), conf_hist_buckets(&h) - 1);
	ck_assert_uint_eq(conf_hist_percentile(&h, 50), 0);
	/* 90 fast (5 us), 10 slow (1000 us): p50 fast, p99 slow */
	for (int i = 0; i < 90; i++)
		conf_hist_record(&h, 5000);
	for (int i = 0; i < 10; i++)
		conf_hist_record(&h, 1000000);
	ck_assert_uint_eq(conf_hist_percentile(&h, 50), 6);
	ck_assert_uint_eq(conf_hist_percentile(&h, 90), 6);
	ck_assert_uint_ge(conf_hist_percentile(&h, 99), 1000);
	ck_assert_uint_le(conf_hist_percentile(&h, 99), 1000 + 1000 / 8);
	ck_assert_uint_eq(conf_hist_count(&h), 100);
}
END_TEST

START_TEST(t12_lu_stats_and_remove)
{
	uint8_t tur[6] = { 0 };
	uint8_t rd[16] = { 0x88, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0 };
	struct scsi_lu_stats st;
	struct scsi_lu *lu2;
	struct scsi_lu_params p = { .vol = fx.vol, .name = "test/v0bis" };
	struct scsi_cmd c;

	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	c = fx_run(fx.a, 0, rd, 16, 4096, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	scsi_lu_get_stats(fx.lu, &st);
	ck_assert_uint_eq(st.read_ops, 1);
	ck_assert_uint_eq(st.read_bytes, 4096);
	ck_assert_uint_ge(st.other_ops, 1);
	ck_assert_uint_eq(st.lat_count, st.read_ops + st.write_ops + st.other_ops);
	ck_assert_uint_gt(st.lat_p99_us, 0);
	ck_assert_str_eq(scsi_lu_name(fx.lu), "test/v0");

	/* a second LU mapped at 1, then removed: both changes raise
	 * REPORTED LUNS DATA HAS CHANGED on LUN 0 */
	ck_assert_int_eq(scsi_lu_create(&p, &lu2), 0);
	ck_assert_int_eq(scsi_target_add_lu(fx.t, 1, lu2), 0);
	ck_assert_ptr_eq(scsi_target_lu(fx.t, 1), lu2);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_LUNS_CHANGED);
	c = fx_run(fx.a, 1, tur, 6, 0, false);    /* LU 1's own power-on UA */
	ck_assert_int_eq(scsi_target_remove_lu(fx.t, 1), 0);
	ck_assert_int_eq(scsi_target_remove_lu(fx.t, 1), -ENOENT);
	ck_assert_ptr_null(scsi_target_lu(fx.t, 1));
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_LUNS_CHANGED);
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_LUNS_CHANGED);
	c = fx_run(fx.a, 1, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	ck_assert_uint_eq(scsi_lu_inflight(lu2), 0);
	scsi_lu_destroy(lu2);
}
END_TEST

/* The dispatcher's data direction and length check (xfer_check). */
START_TEST(t13_data_out_direction_and_length)
{
	uint8_t w1[10] = { OP_WRITE_10, 0, 0, 0, 0, 50, 0, 0, 1, 0 };
	uint8_t w2[10] = { OP_WRITE_10, 0, 0, 0, 0, 60, 0, 0, 2, 0 };
	uint8_t r1[10] = { OP_READ_10, 0, 0, 0, 0, 50, 0, 0, 1, 0 };
	uint8_t ws[10] = { OP_WRITE_SAME_10, 0, 0, 0, 0, 70, 0, 0, 4, 0 };
	uint8_t ms[6] = { OP_MODE_SELECT_6, 0x10, 0, 0, 24, 0 };
	uint8_t pro[10] = { OP_PR_OUT, 0x00, 0, 0, 0, 0, 0, 0, 24, 0 };
	struct scsi_cmd c;

	fx_clear_ua(fx.a);
	memset(fx.buf, 'a', SCSI_BS);
	c = fx_run(fx.a, 0, w1, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* data-out CDBs with R instead of W: refused, nothing written */
	memset(fx.buf, 'z', SCSI_BS);
	c = fx_run(fx.a, 0, w1, 10, SCSI_BS, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
	c = fx_run(fx.a, 0, ms, 6, 24, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	c = fx_run(fx.a, 0, pro, 10, 24, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	c = fx_run(fx.a, 0, r1, 10, SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 'a');
	ck_assert_int_eq(fx.buf[SCSI_BS - 1], 'a');
	/* EDTL 0: nothing moves, the write is an overflow of it all */
	c = fx_run(fx.a, 0, w1, 10, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, SCSI_BS);
	/* W, EDTL a block short: the block sent is written (FCP-4 a) */
	memset(fx.buf, 'b', SCSI_BS);
	c = fx_run(fx.a, 0, w2, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, 2 * SCSI_BS);
	/* W, cut inside a block, or half a WRITE SAME block: refused */
	c = fx_run(fx.a, 0, w2, 10, SCSI_BS + 100, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	c = fx_run(fx.a, 0, ws, 10, 256, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	c = fx_run(fx.a, 0, ms, 6, 12, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	/* a data-in CDB flagged W: runs (the transport sends no data-in) */
	c = fx_run(fx.a, 0, r1, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert(scsi_lu_check(fx.lu));
}
END_TEST

/* ---- 14: deferred errors ---- */

static struct scsi_cmd tur_on(struct scsi_nexus *n, uint64_t lun)
{
	uint8_t tur[6] = { 0 };

	return fx_run(n, lun, tur, 6, 0, false);
}

static void clear_ua_on(struct scsi_nexus *n, uint64_t lun)
{
	for (int i = 0; i < 10; i++)
		if (tur_on(n, lun).status == SCSI_GOOD)
			return;
	ck_abort_msg("unit attentions do not clear");
}

static void set_flag(void *arg)
{
	*(int *)arg = 1;
}

/*
 * A raid5 LU (LUN 1, three members, 64 KiB chunks: the stripe cache) whose
 * cached, acknowledged row then fails to be written out (every member's
 * writes fail): each I_T nexus that had used the LU gets, on its next
 * command to it, CHECK CONDITION with deferred sense (71h fixed, or 73h
 * descriptor with D_SENSE), MEDIUM ERROR, WRITE ERROR, exactly once, and
 * that command is not executed (a PERSISTENT RESERVE OUT REGISTER leaves
 * no key); REQUEST SENSE returns it as its data instead; the raid1 LU 0 of
 * the same nexuses is not concerned; a nexus made after the failure is not
 * told; a session that ended with the error pending hands it on to the
 * next session of the same I_T nexus; several failures in between are one
 * report.
 */
START_TEST(t14_deferred_write_error)
{
	static const uint8_t want_fixed[18] = { 0x71, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x0c, 0 };
	static const uint8_t want_desc[8] = { 0x73, 0x03, 0x0c, 0x00, 0, 0, 0, 0 };
	struct conf_size sz = { .bytes = FX_VOL_BYTES };
	struct scsi_lu_params lp = { .name = "test/r5" };
	struct scsi_nexus *d, *e, *c2;
	uint64_t chunk = 65536, stripe = 2 * chunk;
	char *mem[3], paths[3][128];
	struct conf_pool cp;
	struct raid_pool *p;
	struct raid_vol *v;
	struct scsi_lu *lu;
	struct scsi_cmd c;
	struct raid_lk lk;
	unsigned tries, k;
	int granted;

	for (k = 0; k < 3; k++) {
		snprintf(paths[k], sizeof(paths[k]), "%s/r5-%u.img", fx.dir, k);
		mem[k] = paths[k];
	}
	memset(&cp, 0, sizeof(cp));
	cp.name = "r5";
	cp.level = CONF_RAID5;
	cp.chunk = chunk;
	cp.members = mem;
	cp.member_paths = mem;
	cp.n_members = 3;
	cp.create_size = 32u << 20;
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v5", &sz, &v), 0);
	lp.vol = v;
	ck_assert_int_eq(scsi_lu_create(&lp, &lu), 0);
	ck_assert_int_eq(scsi_target_add_lu(fx.t, 1, lu), 0);
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.d,i,0x400000000004", 1, &d), 0);
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.e,i,0x400000000005", 2, &e), 0);
	clear_ua_on(fx.a, 0);
	clear_ua_on(fx.a, 1);
	clear_ua_on(fx.b, 1);
	clear_ua_on(d, 1);
	clear_ua_on(e, 1);

	/* 1.5 stripes from nexus a: the second row's first chunk stays in the
	 * cache, acknowledged. A shared lock of that row holds the
	 * background write-out (100 ms) off until every member's writes
	 * fail; when it was quicker (a busy machine), again two rows on. */
	for (tries = 0; tries < 5; tries++) {
		uint64_t row = 2 * tries + 1;
		uint8_t wr[10] = { OP_WRITE_10, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

		conf_put_be32(&wr[2], (uint32_t)((row - 1) * stripe / SCSI_BS));
		conf_put_be16(&wr[7], (uint16_t)(3 * chunk / SCSI_BS));
		memset(fx.buf, 0x40 + (int)tries, 3 * chunk);
		c = fx_run(fx.a, 1, wr, 10, (uint32_t)(3 * chunk), true);
		ck_assert_int_eq(c.status, SCSI_GOOD);
		memset(&lk, 0, sizeof(lk));
		lk.a = v->start + row * stripe;
		lk.b = lk.a + stripe;
		lk.ctx = fx.ctx;
		lk.fn = set_flag;
		lk.arg = &granted;
		granted = 0;
		if (!raid_slock_acquire(&p->lock, &lk)) {
			while (!granted)
				ck_assert_int_ge(raid_ioctx_wait(fx.ctx, 100), 0);
		} else if (atomic_load(&p->sc.n) == 1) {
			break;
		}
		raid_slock_release(&p->lock, &lk);
	}
	ck_assert_uint_lt(tries, 5);
	ck_assert_uint_eq(raid_vol_write_failures(v), 0);
	for (k = 0; k < 3; k++)
		raid_fault_write_error(&p->m[k]->fault, 0, RAID_FAULT_ALL);
	raid_slock_release(&p->lock, &lk);
	for (k = 0; k < 250 && !raid_vol_write_failures(v); k++)
		usleep(20 * 1000);
	ck_assert_uint_eq(raid_vol_write_failures(v), 1);

	/* a nexus made after the failure never had the data acknowledged */
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.c,i,0x400000000003", 1, &c2), 0);
	c = tur_on(c2, 1);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	c = tur_on(c2, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);

	/* nexus a: once, fixed format, byte for byte; LU 0 unconcerned */
	c = tur_on(fx.a, 0);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = tur_on(fx.a, 1);
	ck_assert_int_eq(c.status, SCSI_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense_len, 18);
	ck_assert(memcmp(c.sense, want_fixed, 18) == 0);
	c = tur_on(fx.a, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);

	/* nexus b: the command that gets it is not executed */
	{
		uint8_t reg[10] = { OP_PR_OUT, 0, 0, 0, 0, 0, 0, 0, 24, 0 };
		uint8_t rk[10] = { OP_PR_IN, 0, 0, 0, 0, 0, 0, 0, 64, 0 };

		memset(fx.buf, 0, 24);
		conf_put_be64(&fx.buf[8], 0xb0b);
		c = fx_run(fx.b, 1, reg, 10, 24, true);
		ck_sense(c, SK_MEDIUM_ERROR, ASC_WRITE_ERROR);
		ck_assert_int_eq(c.sense[0], 0x71);
		c = fx_run(fx.b, 1, rk, 10, 64, false);
		ck_assert_int_eq(c.status, SCSI_GOOD);
		ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 0);   /* no key registered */
		memset(fx.buf, 0, 24);
		conf_put_be64(&fx.buf[8], 0xb0b);
		c = fx_run(fx.b, 1, reg, 10, 24, true);
		ck_assert_int_eq(c.status, SCSI_GOOD);
		c = fx_run(fx.b, 1, rk, 10, 64, false);
		ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 8);
	}

	/* nexus e: REQUEST SENSE returns it as data, with GOOD, once */
	{
		uint8_t rs[6] = { OP_REQUEST_SENSE, 0, 0, 0, 64, 0 };

		c = fx_run(e, 1, rs, 6, 64, false);
		ck_assert_int_eq(c.status, SCSI_GOOD);
		ck_assert(memcmp(fx.buf, want_fixed, 18) == 0);
		c = fx_run(e, 1, rs, 6, 64, false);
		ck_assert_int_eq(fx.buf[0], 0x70);
		ck_assert_int_eq(fx.buf[2], SK_NO_SENSE);
		c = tur_on(e, 1);
		ck_assert_int_eq(c.status, SCSI_GOOD);
	}

	/* nexus d's session ends with it pending; the I_T nexus comes back
	 * (same initiator port, same target port) and is told there, in
	 * descriptor format now that D_SENSE is set */
	scsi_nexus_destroy(d);
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.d,i,0x400000000004", 1, &d), 0);
	pthread_mutex_lock(&lu->lock);
	lu->mode.d_sense = true;
	pthread_mutex_unlock(&lu->lock);
	c = tur_on(d, 1);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	c = tur_on(d, 1);
	ck_assert_int_eq(c.status, SCSI_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense_len, 8);
	ck_assert(memcmp(c.sense, want_desc, 8) == 0);
	c = tur_on(d, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);

	/* two more failures before nexus a's next command: one report */
	atomic_fetch_add(&v->write_failures, 2);
	c = tur_on(fx.a, 1);
	ck_assert_int_eq(c.status, SCSI_CHECK_CONDITION);
	ck_assert_int_eq(c.sense[0], 0x73);
	c = tur_on(fx.a, 1);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert(scsi_lu_check(lu));

	scsi_nexus_destroy(c2);
	scsi_nexus_destroy(d);
	scsi_nexus_destroy(e);
	ck_assert_int_eq(scsi_target_remove_lu(fx.t, 1), 0);
	scsi_lu_destroy(lu);
	raid_pool_close(p);
}
END_TEST

/* ---- 15: LUN views ---- */

/* Per-initiator views: masking, own numbering, UAs where a view changes,
 * an empty view, task management through the view. */
static uint32_t lu_report(struct scsi_nexus *n, uint64_t lun, uint16_t *luns)
{
	uint8_t rl[12] = { OP_REPORT_LUNS, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0 };
	struct scsi_cmd c = fx_run(n, lun, rl, 12, 256, false);
	uint32_t cnt;

	ck_assert_int_eq(c.status, SCSI_GOOD);
	cnt = conf_get_be32(&fx.buf[0]) / 8;
	for (uint32_t i = 0; i < cnt; i++)
		luns[i] = (uint16_t)(fx.buf[8 + 8 * i + 1] | (fx.buf[8 + 8 * i] & 0x3f) << 8);
	return cnt;
}

START_TEST(t15_views_mask_and_map)
{
	uint8_t tur[6] = { 0 };
	uint8_t inq[6] = { OP_INQUIRY, 0, 0, 0, 36, 0 };
	const char *const ini_a[] = { "IQN.1994-05.COM.A" };   /* case-insensitive */
	const struct scsi_lun_map map_a[] = { { 0, 0, false }, { 5, 1, true } };
	const struct scsi_lun_map map_b[] = { { 0, 1, false } };
	const struct scsi_lun_map map_a2[] = { { 0, 0, false } };
	const struct scsi_lun_map dup[] = { { 3, 0, false }, { 3, 1, false } };
	const struct scsi_lun_map big[] = { { 256, 0, false } };
	struct scsi_view va = { ini_a, 1, map_a, 2 }, vb = { NULL, 0, map_b, 1 };
	struct scsi_lu_params p = { .vol = fx.vol, .name = "test/v0bis" };
	struct scsi_lu *lu2;
	struct scsi_cmd c;
	uint16_t luns[SCSI_MAX_LUNS];

	ck_assert_int_eq(scsi_lu_create(&p, &lu2), 0);
	ck_assert_int_eq(scsi_target_add_lu(fx.t, 1, lu2), 0);
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &vb), 0);

	/* a: LUN 0 -> target LUN 0, LUN 5 -> target LUN 1; LUN 1 hidden */
	ck_assert_uint_eq(lu_report(fx.a, 0, luns), 2);
	ck_assert_uint_eq(luns[0], 0);
	ck_assert_uint_eq(luns[1], 5);
	ck_assert_uint_eq(scsi_nexus_target_lun(fx.a, 5), 1);
	ck_assert_uint_eq(scsi_nexus_target_lun(fx.a, 1), SCSI_NO_LUN);
	ck_assert_uint_eq(scsi_nexus_target_lun(fx.a, UINT64_MAX), UINT64_MAX);
	c = fx_run(fx.a, 1, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	c = fx_run(fx.a, 1, inq, 6, 36, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 0x7f);     /* not connected, no device */
	fx_clear_ua(fx.a);
	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* b (default view): only target LUN 1, as its LUN 0 */
	ck_assert_uint_eq(lu_report(fx.b, 0, luns), 1);
	ck_assert_uint_eq(luns[0], 0);
	ck_assert_uint_eq(scsi_nexus_target_lun(fx.b, 0), 1);
	c = fx_run(fx.b, 5, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	fx_clear_ua(fx.b);
	/* b's LUN 0 is a's LUN 5: a LUN reset through b reaches a there,
	 * not on a's LUN 0 */
	ck_assert_int_eq(scsi_tmf(fx.t, fx.b, 0, SCSI_TMF_LUN_RESET), 0);
	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_BUS_DEVICE_RESET);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.b, 5, SCSI_TMF_LUN_RESET), -ENOENT);
	/* a target reset through b resets b's LUs only */
	fx_clear_ua(fx.b);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.b, 0, SCSI_TMF_TARGET_WARM_RESET), 0);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_POWER_ON_RESET);
	fx_clear_ua(fx.b);

	/* a's view changes (LUN 5 goes): a hears of it, b (same view) does not */
	va.map = map_a2;
	va.n_map = 1;
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &vb), 0);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_LUNS_CHANGED);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 5, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);

	/* b sees nothing: REPORT LUNS still lists LUN 0, which answers
	 * INQUIRY with "no device" and everything else LUN NOT SUPPORTED */
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, NULL), 0);
	ck_assert_uint_eq(lu_report(fx.b, 0, luns), 1);
	ck_assert_uint_eq(luns[0], 0);
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
	c = fx_run(fx.b, 0, inq, 6, 36, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 0x7f);
	ck_assert_int_eq(scsi_tmf(fx.t, fx.b, 0, SCSI_TMF_LUN_RESET), -ENOENT);

	/* bad tables change nothing */
	vb.map = dup;
	vb.n_map = 2;
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &vb), -EINVAL);
	vb.map = big;
	vb.n_map = 1;
	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &vb), -EINVAL);
	ck_assert_int_eq(scsi_target_set_access(fx.t, NULL, 1, NULL), -EINVAL);
	ck_assert_uint_eq(lu_report(fx.a, 0, luns), 1);

	/* back to no table: everyone sees the map as it is */
	ck_assert_int_eq(scsi_target_set_access(fx.t, NULL, 0, NULL), 0);
	ck_assert_uint_eq(lu_report(fx.b, 0, luns), 2);
	ck_assert_uint_eq(luns[1], 1);
	ck_assert_uint_eq(lu_report(fx.a, 0, luns), 2);
	ck_assert(scsi_lu_check(fx.lu));
	ck_assert(scsi_lu_check(lu2));
	ck_assert_int_eq(scsi_target_remove_lu(fx.t, 1), 0);
	scsi_lu_destroy(lu2);
}
END_TEST

int main(void)
{
	/* one tcase "lu": each test after the first joins it */
	const struct ck_case cases[] = {
		CK_CASE("lu", t01_power_on_ua_once_per_nexus),
		CK_CASE(NULL, t02_inquiry_does_not_report_ua),
		CK_CASE(NULL, t03_bad_lun),
		CK_CASE(NULL, t04_invalid_opcode_and_sa),
		CK_CASE(NULL, t05_naca_refused),
		CK_CASE(NULL, t06_lun_codec),
		CK_CASE(NULL, t07_lun_reset_ua_for_all),
		CK_CASE(NULL, t08_request_sense_takes_ua),
		CK_CASE(NULL, t09_public_set_sense_fixed),
		CK_CASE(NULL, t10_nexus_requires_known_port),
		CK_CASE(NULL, t11_latency_histogram),
		CK_CASE(NULL, t12_lu_stats_and_remove),
		CK_CASE(NULL, t13_data_out_direction_and_length),
		CK_CASE(NULL, t14_deferred_write_error),
		CK_CASE(NULL, t15_views_mask_and_map),
	};

	return ck_main(&(struct ck_suite_def){ "scsi_lu", CK_CASES(cases),
		.setup = fx_setup, .teardown = fx_teardown, .timeout = 30 });
}
