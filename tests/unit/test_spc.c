/* tests/unit/test_spc.c - target/scsi/spc.c: INQUIRY and VPD contents, mode
 * pages, sense formats, write protect, REPORT LUNS, RSOC, REQUEST SENSE and
 * the NOT READY sense with its progress indication. */
#include "tests/unit/scsi_fixture.h"

static void setup(void)
{
	fx_setup();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
}

static struct scsi_cmd inquiry(struct scsi_nexus *n, bool evpd, uint8_t page, uint16_t alloc)
{
	uint8_t cdb[6] = { OP_INQUIRY, evpd ? 1 : 0, page, 0, 0, 0 };

	conf_put_be16(&cdb[3], alloc);
	return fx_run(n, 0, cdb, 6, alloc, false);
}

START_TEST(t01_standard_inquiry)
{
	struct scsi_cmd c = inquiry(fx.a, false, 0, 255);

	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[0], 0x00);
	ck_assert_int_eq(fx.buf[2], 0x06);
	ck_assert_int_eq(fx.buf[3] & 0x0f, 2);
	ck_assert_uint_eq(c.xfer_len, fx.buf[4] + 5u);
	ck_assert_int_eq(memcmp(&fx.buf[8], "RTGT    ", 8), 0);
	ck_assert_int_eq(conf_get_be16(&fx.buf[58 + 6]), 0x04c0); /* SBC-3 */
	/* allocation length truncates */
	c = inquiry(fx.a, false, 0, 5);
	ck_assert_uint_eq(c.xfer_len, 5);
	/* page code without EVPD */
	c = inquiry(fx.a, false, 0x80, 64);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t02_vpd_pages)
{
	struct scsi_cmd c;
	uint8_t list[16];
	unsigned i, n;

	c = inquiry(fx.a, true, 0x00, 255);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	n = fx.buf[3];
	ck_assert_uint_ge(n, 6);
	memcpy(list, &fx.buf[4], n);
	for (i = 0; i < n; i++) {
		c = inquiry(fx.a, true, list[i], 255);
		ck_assert_int_eq(c.status, SCSI_GOOD);
		ck_assert_int_eq(fx.buf[1], list[i]);
	}
	c = inquiry(fx.a, true, 0xb2, 255);
	ck_assert_int_eq(fx.buf[5] & 0xe0, 0); /* no LBPU/LBPWS */
	c = inquiry(fx.a, true, 0xb1, 255);
	ck_assert_int_eq(conf_get_be16(&fx.buf[4]), 1); /* non-rotating */
	c = inquiry(fx.a, true, 0xb0, 255);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[8]), SCSI_MAX_XFER / SCSI_BS);
	c = inquiry(fx.a, true, 0x42, 255);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

/* Finds designator (assoc, type) in a page 0x83 reply; returns its offset. */
static int find_desig(const uint8_t *d, unsigned assoc, unsigned type)
{
	unsigned p = 4, end = 4 + conf_get_be16(&d[2]);

	while (p + 4 <= end) {
		if (((d[p + 1] >> 4) & 3) == assoc && (d[p + 1] & 0x0f) == type)
			return (int)p;
		p += 4 + d[p + 3];
	}
	return -1;
}

START_TEST(t03_device_id_stable_and_port_specific)
{
	uint8_t naa_a[16], uuid[16];
	struct scsi_cmd c;
	int p;

	c = inquiry(fx.a, true, 0x83, 255);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	p = find_desig(fx.buf, 0, 3);
	ck_assert_int_ge(p, 0);
	ck_assert_int_eq(fx.buf[p + 3], 16);
	ck_assert_int_eq(fx.buf[p + 4] >> 4, 6); /* NAA IEEE Registered Extended */
	memcpy(naa_a, &fx.buf[p + 4], 16);
	raid_vol_uuid(fx.vol, uuid);
	ck_assert_int_eq(memcmp(&naa_a[4], &uuid[1], 12), 0);
	p = find_desig(fx.buf, 1, 4);
	ck_assert_int_ge(p, 0);
	ck_assert_int_eq(conf_get_be16(&fx.buf[p + 6]), 1);
	p = find_desig(fx.buf, 1, 8);
	ck_assert_int_ge(p, 0);
	ck_assert_str_eq((char *)&fx.buf[p + 4], "iqn.2026-11.org.rtgt:test,t,0x0001");
	ck_assert_int_ge(find_desig(fx.buf, 2, 8), 0);
	ck_assert_int_ge(find_desig(fx.buf, 1, 5), 0);
	/* other port: same LU name, its own relative port */
	c = inquiry(fx.b, true, 0x83, 255);
	p = find_desig(fx.buf, 0, 3);
	ck_assert_int_eq(memcmp(naa_a, &fx.buf[p + 4], 16), 0);
	p = find_desig(fx.buf, 1, 4);
	ck_assert_int_eq(conf_get_be16(&fx.buf[p + 6]), 2);
	/* and the same after the LU is rebuilt on the same volume */
	fx_lu_down();
	fx_lu_up();
	c = inquiry(fx.a, true, 0x83, 255);
	p = find_desig(fx.buf, 0, 3);
	ck_assert_int_eq(memcmp(naa_a, &fx.buf[p + 4], 16), 0);
}
END_TEST

static struct scsi_cmd mode_sense6(struct scsi_nexus *n, uint8_t pc, uint8_t page, uint8_t alloc)
{
	uint8_t cdb[6] = { OP_MODE_SENSE_6, 0, (uint8_t)(pc << 6 | page), 0, alloc, 0 };

	return fx_run(n, 0, cdb, 6, alloc, false);
}

/* Sends the control page with D_SENSE / SWP set as asked. */
static struct scsi_cmd set_control(bool d_sense, bool swp)
{
	uint8_t cdb[6] = { OP_MODE_SELECT_6, 0x10, 0, 0, 0, 0 };
	uint8_t page[12];
	struct scsi_cmd c = mode_sense6(fx.a, 0, 0x0a, 255);

	ck_assert_int_eq(c.status, SCSI_GOOD);
	memcpy(page, &fx.buf[4 + fx.buf[3]], 12);
	page[2] = (uint8_t)((page[2] & ~0x04) | (d_sense ? 0x04 : 0));
	page[4] = (uint8_t)((page[4] & ~0x08) | (swp ? 0x08 : 0));
	memset(fx.buf, 0, 4);
	memcpy(&fx.buf[4], page, 12);
	cdb[4] = 16;
	return fx_run(fx.a, 0, cdb, 6, 16, true);
}

START_TEST(t04_mode_sense_pages)
{
	struct scsi_cmd c = mode_sense6(fx.a, 0, 0x3f, 255);
	unsigned p, seen = 0;

	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.xfer_len, fx.buf[0] + 1u);
	ck_assert_int_eq(fx.buf[2] & 0x10, 0x10); /* DPOFUA */
	ck_assert_int_eq(fx.buf[3], 8);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), FX_VOL_BYTES / SCSI_BS);
	for (p = 4 + 8; p < c.xfer_len; p += 2 + fx.buf[p + 1])
		seen |= 1u << (fx.buf[p] & 0x1f);
	ck_assert_uint_eq(seen, 1u << 1 | 1u << 8 | 1u << 0x0a | 1u << 0x1c);
	c = mode_sense6(fx.a, 3, 0x3f, 255);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_SAVING_NOT_SUPPORTED);
	c = mode_sense6(fx.a, 1, 0x0a, 255);
	ck_assert_int_eq(fx.buf[4 + 8 + 2], 0x04);
	ck_assert_int_eq(fx.buf[4 + 8 + 4], 0x08);
	/* truncation keeps the full length in the header */
	c = mode_sense6(fx.a, 0, 0x3f, 4);
	ck_assert_uint_eq(c.xfer_len, 4);
	ck_assert_uint_gt(fx.buf[0], 3);
	ck_assert(spc_mode_check(fx.lu));
}
END_TEST

START_TEST(t05_d_sense_switches_format)
{
	uint8_t cdb[10] = { OP_READ_10, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0 };
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c;

	c = set_control(true, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, false);
	ck_assert_int_eq(c.sense[0], 0x72);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	/* the other nexus learns about it */
	c = fx_run(fx.b, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_MODE_PARAMS_CHANGED);
	c = set_control(false, false);
	c = fx_run(fx.a, 0, cdb, 10, SCSI_BS, false);
	ck_assert_int_eq(c.sense[0], 0x70);
	ck_assert(spc_mode_check(fx.lu));
}
END_TEST

START_TEST(t06_swp_write_protects)
{
	uint8_t wr[10] = { OP_WRITE_10, 0, 0, 0, 0, 1, 0, 0, 1, 0 };
	uint8_t rd[10] = { OP_READ_10, 0, 0, 0, 0, 1, 0, 0, 1, 0 };
	struct scsi_cmd c;

	c = set_control(false, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = mode_sense6(fx.a, 0, 0x3f, 255);
	ck_assert_int_eq(fx.buf[2] & 0x80, 0x80);
	c = fx_run(fx.a, 0, wr, 10, SCSI_BS, true);
	ck_sense(c, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
	c = fx_run(fx.a, 0, rd, 10, SCSI_BS, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = set_control(false, false);
	c = fx_run(fx.a, 0, wr, 10, SCSI_BS, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
}
END_TEST

START_TEST(t07_mode_select_validation)
{
	uint8_t cdb[6] = { OP_MODE_SELECT_6, 0x10, 0, 0, 16, 0 };
	struct scsi_cmd c = mode_sense6(fx.a, 0, 0x0a, 255);
	uint8_t page[12];

	memcpy(page, &fx.buf[12], 12);
	memset(fx.buf, 0, 4);
	memcpy(&fx.buf[4], page, 12);
	fx.buf[4 + 3] ^= 0x80; /* QAM is not changeable */
	c = fx_run(fx.a, 0, cdb, 6, 16, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	ck_assert_int_eq(conf_get_be16(&c.sense[16]), 4 + 3);
	fx.buf[4 + 3] ^= 0x80;
	fx.buf[4 + 1] = 9; /* wrong page length */
	c = fx_run(fx.a, 0, cdb, 6, 16, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	cdb[1] = 0x11; /* SP */
	c = fx_run(fx.a, 0, cdb, 6, 16, true);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t08_report_luns)
{
	uint8_t cdb[12] = { OP_REPORT_LUNS, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0 };
	struct scsi_cmd c = fx_run(fx.a, 0, cdb, 12, 64, false);

	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 8);
	ck_assert_uint_eq(c.xfer_len, 16);
	cdb[9] = 8;
	c = fx_run(fx.a, 0, cdb, 12, 8, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	cdb[9] = 64;
	cdb[2] = 0x40;
	c = fx_run(fx.a, 0, cdb, 12, 64, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
}
END_TEST

START_TEST(t09_report_supported_opcodes)
{
	uint8_t cdb[12] = { OP_MAINT_IN, MI_REPORT_OPCODES, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
	struct scsi_cmd c;
	unsigned p, len, found_read16 = 0, found_rc16 = 0;

	c = fx_run(fx.a, 0, cdb, 12, 65535, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	len = conf_get_be32(&fx.buf[0]);
	for (p = 4; p < 4 + len; p += 8) {
		if (fx.buf[p] == OP_READ_16)
			found_read16 = 1;
		if (fx.buf[p] == OP_SAI_16 && conf_get_be16(&fx.buf[p + 2]) == SAI_READ_CAPACITY_16 &&
		    (fx.buf[p + 5] & 1))
			found_rc16 = 1;
	}
	ck_assert(found_read16 && found_rc16);
	/* with timeouts descriptors: 20 bytes each */
	cdb[2] = 0x80;
	c = fx_run(fx.a, 0, cdb, 12, 65535, false);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]) % 20, 0);
	/* one command: usage data starts with the opcode */
	cdb[2] = 0x01;
	cdb[3] = OP_WRITE_10;
	c = fx_run(fx.a, 0, cdb, 12, 65535, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[1] & 0x07, 3);
	ck_assert_int_eq(conf_get_be16(&fx.buf[2]), 10);
	ck_assert_int_eq(fx.buf[4], OP_WRITE_10);
	/* reporting option 1 on a command with service actions */
	cdb[3] = OP_SAI_16;
	c = fx_run(fx.a, 0, cdb, 12, 65535, false);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	/* unsupported opcode: SUPPORT = 1 */
	cdb[3] = 0x02;
	c = fx_run(fx.a, 0, cdb, 12, 65535, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[1] & 0x07, 1);
}
END_TEST

static struct scsi_cmd rtpg(struct scsi_nexus *n, bool ext, uint32_t alloc)
{
	uint8_t cdb[12] = { OP_MAINT_IN, 0x0a, 0 };

	if (ext)
		cdb[1] |= 1 << 5;
	conf_put_be32(&cdb[6], alloc);
	return fx_run(n, 0, cdb, 12, alloc, false);
}

/* Checks the group descriptor at @p: id, state, PREF, one port @id. */
static unsigned check_group(unsigned p, uint16_t id, bool optimized)
{
	ck_assert_uint_eq(conf_get_be16(&fx.buf[p + 2]), id);
	ck_assert_uint_eq(fx.buf[p] & 0x0f, optimized ? 0 : 1);
	ck_assert_uint_eq(fx.buf[p] & 0x80, optimized ? 0x80 : 0);
	ck_assert_uint_eq(fx.buf[p + 1] & 0x03, 0x03);   /* AO_SUP, AN_SUP */
	ck_assert_uint_eq(fx.buf[p + 7], 1);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[p + 8 + 2]), id);
	return p + 12;
}

START_TEST(t10_report_tpgs_peer_groups)
{
	struct scsi_target *own = fx.t, *t;
	struct scsi_nexus *n;
	uint16_t ids[3] = { 2, 0, 0 };
	struct scsi_cmd c;
	unsigned p;
	int pos;

	/* a node with local port 1 and the peer node's group 2 */
	ck_assert_int_eq(scsi_target_create("iqn.2026-11.org.rtgt:test", &t), 0);
	ck_assert_int_eq(scsi_target_add_port(t, 1, 1), 0);
	ck_assert_int_eq(scsi_target_set_peer_groups(t, ids, 1), 0);
	ck_assert_int_eq(scsi_target_add_port(t, 2, 2), -EEXIST);
	ck_assert_int_eq(scsi_target_add_lu(t, 0, fx.lu), 0);
	ck_assert_int_eq(scsi_nexus_create(t, "iqn.1994-05.com.c,i,0x400000000003", 1, &n), 0);
	fx.t = t;
	fx_clear_ua(n);
	c = rtpg(n, false, 4096);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 2 * 12);
	ck_assert_uint_eq(c.xfer_len, 4 + 2 * 12);
	p = check_group(4, 1, true);
	check_group(p, 2, false);
	/* extended header: same groups after 8 bytes */
	c = rtpg(n, true, 4096);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(fx.buf[4] & 0x70, 0x10);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 4 + 2 * 12);
	p = check_group(8, 1, true);
	check_group(p, 2, false);
	/* allocation length truncates, the length field still says it all */
	c = rtpg(n, false, 10);
	ck_assert_uint_eq(c.xfer_len, 10);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 2 * 12);
	/* VPD 0x83: relative port 1 in group 1 */
	c = inquiry(n, true, 0x83, 255);
	pos = find_desig(fx.buf, 1, 4);
	ck_assert_int_ge(pos, 0);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[pos + 6]), 1);
	pos = find_desig(fx.buf, 1, 5);
	ck_assert_int_ge(pos, 0);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[pos + 6]), 1);
	/* INQUIRY: TPGS = 01b, implicit ALUA only; one local port plus the
	 * peer's reach the LU: MULTIP */
	c = inquiry(n, false, 0, 255);
	ck_assert_uint_eq(fx.buf[5] & 0x30, 0x10);
	ck_assert_uint_eq(fx.buf[6] & 0x10, 0x10);
	ck_assert_int_eq(scsi_target_set_peer_groups(t, NULL, 0), 0);
	fx_clear_ua(n);
	c = inquiry(n, false, 0, 255);
	ck_assert_uint_eq(fx.buf[6] & 0x10, 0);
	scsi_nexus_destroy(n);
	fx.t = own;
	scsi_target_destroy(t);

	/* the fixture's two-port target: each port is a group of its own */
	ids[0] = 2;
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 1), -EINVAL);  /* local */
	ids[0] = 0;
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 1), -EINVAL);
	ids[0] = 3;
	ids[1] = 3;
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 2), -EINVAL);
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 65), -E2BIG);
	c = rtpg(fx.a, false, 4096);
	ck_assert_int_eq(c.status, SCSI_GOOD);   /* refused lists changed nothing */
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 2 * 12);
	ck_assert_uint_eq(fx.buf[4 + 1], 0x01);  /* no peers: AO only */
	/* adding a peer group is announced, once, to every nexus */
	ids[1] = 4;
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 2), 0);
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, ids, 2), 0);
	c = rtpg(fx.a, false, 4096);
	ck_sense(c, SK_UNIT_ATTENTION, 0x2a06);   /* multipath re-reads on this */
	c = rtpg(fx.a, false, 4096);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 4 * 12);
	p = check_group(4, 1, true);
	p = check_group(p, 2, true);
	p = check_group(p, 3, false);
	check_group(p, 4, false);
	{
		uint8_t tur[6] = { 0 };

		c = fx_run(fx.b, 0, tur, 6, 0, false);
		ck_sense(c, SK_UNIT_ATTENTION, 0x2a06);
		c = fx_run(fx.b, 0, tur, 6, 0, false);
		ck_assert_int_eq(c.status, SCSI_GOOD);
	}
	/* VPD 0x83 through port 2 names group 2 */
	c = inquiry(fx.b, true, 0x83, 255);
	pos = find_desig(fx.buf, 1, 5);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[pos + 6]), 2);
	/* and removing the peers again */
	ck_assert_int_eq(scsi_target_set_peer_groups(fx.t, NULL, 0), 0);
	c = rtpg(fx.b, false, 4096);
	ck_sense(c, SK_UNIT_ATTENTION, 0x2a06);
	c = rtpg(fx.b, false, 4096);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 2 * 12);
}
END_TEST

START_TEST(t11_not_ready_sense)
{
	uint8_t d[SCSI_SENSE_MAX];
	unsigned len;

	/* becoming ready, fixed format: SKSV + progress in bytes 15..17 */
	len = scsi_not_ready_sense(d, false, -EINPROGRESS, 0x8000);
	ck_assert_uint_eq(len, 18);
	ck_assert_uint_eq(d[0], 0x70);
	ck_assert_uint_eq(d[2] & 0x0f, SK_NOT_READY);
	ck_assert_uint_eq(d[7], 10);
	ck_assert_uint_eq(conf_get_be16(&d[12]), ASC_BECOMING_READY);
	ck_assert_uint_eq(d[15], 0x80);
	ck_assert_uint_eq(conf_get_be16(&d[16]), 0x8000);
	/* descriptor format: a sense key specific descriptor (02h, 6 bytes) */
	len = scsi_not_ready_sense(d, true, -EINPROGRESS, 0x1234);
	ck_assert_uint_eq(len, 16);
	ck_assert_uint_eq(d[0], 0x72);
	ck_assert_uint_eq(d[1] & 0x0f, SK_NOT_READY);
	ck_assert_uint_eq(conf_get_be16(&d[2]), ASC_BECOMING_READY);
	ck_assert_uint_eq(d[7], 8);
	ck_assert_uint_eq(d[8], 0x02);
	ck_assert_uint_eq(d[9], 0x06);
	ck_assert_uint_eq(d[12], 0x80);
	ck_assert_uint_eq(conf_get_be16(&d[13]), 0x1234);
	/* a failed preparation: manual intervention, no progress */
	len = scsi_not_ready_sense(d, false, -EIO, 0x1234);
	ck_assert_uint_eq(len, 18);
	ck_assert_uint_eq(d[2] & 0x0f, SK_NOT_READY);
	ck_assert_uint_eq(conf_get_be16(&d[12]), ASC_NOT_READY_MANUAL);
	ck_assert_uint_eq(d[15], 0);
	ck_assert_uint_eq(conf_get_be16(&d[16]), 0);
	len = scsi_not_ready_sense(d, true, -EIO, 0);
	ck_assert_uint_eq(len, 8);
	ck_assert_uint_eq(conf_get_be16(&d[2]), ASC_NOT_READY_MANUAL);
	ck_assert_uint_eq(d[7], 0);
}
END_TEST

START_TEST(t12_request_sense_ready_volume)
{
	uint8_t cdb[6] = { OP_REQUEST_SENSE, 0, 0, 0, 252, 0 };
	struct scsi_cmd c;
	uint16_t frac = 1;

	/* a RAID volume is always ready: nothing to report, GOOD */
	ck_assert_int_eq(raid_vol_ready_progress(fx.vol, &frac), 0);
	ck_assert_uint_eq(frac, 0);
	c = fx_run(fx.a, 0, cdb, 6, 252, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(c.data_in_len, 18);
	ck_assert_uint_eq(fx.buf[0], 0x70);
	ck_assert_uint_eq(fx.buf[2] & 0x0f, SK_NO_SENSE);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[12]), 0);
	ck_assert_uint_eq(fx.buf[15], 0);
	/* a pending unit attention comes first, with GOOD status */
	pthread_mutex_lock(&fx.lu->lock);
	scsi_ua_add_all(fx.lu, NULL, ASC_MODE_PARAMS_CHANGED);
	pthread_mutex_unlock(&fx.lu->lock);
	cdb[1] = 0x01;   /* DESC */
	c = fx_run(fx.b, 0, cdb, 6, 252, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(fx.buf[0], 0x72);
	ck_assert_uint_eq(fx.buf[1] & 0x0f, SK_UNIT_ATTENTION);
	ck_assert_uint_eq(conf_get_be16(&fx.buf[2]), ASC_MODE_PARAMS_CHANGED);
}
END_TEST

/* MODE SENSE through a read-only mapping reports WP in the device-specific
 * parameter (6 and 10 byte headers); a writable mapping of the same LU does
 * not. */
START_TEST(t13_mode_sense_wp_read_only_mapping)
{
	const char *const ini_a[] = { "iqn.1994-05.com.a" };
	const struct scsi_lun_map ro[] = { { 0, 0, true } }, rw[] = { { 0, 0, false } };
	const struct scsi_view va = { ini_a, 1, ro, 1 }, dflt = { NULL, 0, rw, 1 };
	uint8_t ms10[10] = { OP_MODE_SENSE_10, 0, 0x3f, 0, 0, 0, 0, 0, 255, 0 };
	struct scsi_cmd c;

	ck_assert_int_eq(scsi_target_set_access(fx.t, &va, 1, &dflt), 0);
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	c = mode_sense6(fx.a, 0, 0x3f, 255);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[2] & 0x80, 0x80);
	c = fx_run(fx.a, 0, ms10, 10, 255, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[3] & 0x80, 0x80);
	c = mode_sense6(fx.b, 0, 0x3f, 255);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(fx.buf[2] & 0x80, 0);
	c = fx_run(fx.b, 0, ms10, 10, 255, false);
	ck_assert_int_eq(fx.buf[3] & 0x80, 0);
}
END_TEST

int main(void)
{
	/* one tcase "spc": each test after the first joins it */
	const struct ck_case cases[] = {
		CK_CASE("spc", t01_standard_inquiry),
		CK_CASE(NULL, t02_vpd_pages),
		CK_CASE(NULL, t03_device_id_stable_and_port_specific),
		CK_CASE(NULL, t04_mode_sense_pages),
		CK_CASE(NULL, t05_d_sense_switches_format),
		CK_CASE(NULL, t06_swp_write_protects),
		CK_CASE(NULL, t07_mode_select_validation),
		CK_CASE(NULL, t08_report_luns),
		CK_CASE(NULL, t09_report_supported_opcodes),
		CK_CASE(NULL, t10_report_tpgs_peer_groups),
		CK_CASE(NULL, t11_not_ready_sense),
		CK_CASE(NULL, t12_request_sense_ready_volume),
		CK_CASE(NULL, t13_mode_sense_wp_read_only_mapping),
	};

	return ck_main(&(struct ck_suite_def){ "scsi_spc", CK_CASES(cases),
		.setup = setup, .teardown = fx_teardown, .timeout = 30 });
}
