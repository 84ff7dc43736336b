/* tests/unit/test_pdu.c - target/iscsi/pdu.c: BHS checks before the payload
 * is read, CRC32C digests against RFC 7143 appendix B.4, serial numbers. */
#include <check.h>
#include <string.h>

#include "target/iscsi/pdu.h"
#include "tests/lib/ckmain.h"

static void bhs_init(uint8_t *b, uint8_t op, uint8_t flags, uint32_t dsl)
{
	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = op;
	b[1] = flags;
	iscsi_bhs_set_dsl(b, dsl);
}

START_TEST(t01_accessors)
{
	uint8_t b[8] = { 0 };

	conf_put_be32(b, 0x01020304);
	ck_assert_uint_eq(b[0], 1);
	ck_assert_uint_eq(b[3], 4);
	ck_assert_uint_eq(conf_get_be32(b), 0x01020304);
	conf_put_be24(b + 4, 0xabcdef);
	ck_assert_uint_eq(conf_get_be24(b + 4), 0xabcdef);
	conf_put_be16(b, 0xbeef);
	ck_assert_uint_eq(conf_get_be16(b), 0xbeef);
	ck_assert_uint_eq(iscsi_pad4(0), 0);
	ck_assert_uint_eq(iscsi_pad4(1), 3);
	ck_assert_uint_eq(iscsi_pad4(4), 0);
	ck_assert_uint_eq(iscsi_pad4(7), 1);
}
END_TEST

START_TEST(t02_crc_vectors)
{
	uint8_t buf[48], d[4];
	uint32_t crc;

	/* RFC 7143 B.4: 32 bytes of zeros -> aa 36 91 8a on the wire */
	memset(buf, 0, 32);
	crc = iscsi_crc_final(iscsi_crc_update(ISCSI_CRC_INIT, buf, 32));
	iscsi_digest_put(d, crc);
	ck_assert_uint_eq(d[0], 0xaa);
	ck_assert_uint_eq(d[1], 0x36);
	ck_assert_uint_eq(d[2], 0x91);
	ck_assert_uint_eq(d[3], 0x8a);
	ck_assert_uint_eq(iscsi_digest_get(d), crc);
	/* 32 bytes of 0xff -> 43 ab a8 62 */
	memset(buf, 0xff, 32);
	crc = iscsi_crc_final(iscsi_crc_update(ISCSI_CRC_INIT, buf, 32));
	iscsi_digest_put(d, crc);
	ck_assert_uint_eq(d[0], 0x43);
	ck_assert_uint_eq(d[1], 0xab);
	ck_assert_uint_eq(d[2], 0xa8);
	ck_assert_uint_eq(d[3], 0x62);
	/* incrementing 0..31 -> 4e 79 dd 46 */
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	crc = iscsi_crc_final(iscsi_crc_update(ISCSI_CRC_INIT, buf, 32));
	iscsi_digest_put(d, crc);
	ck_assert_uint_eq(d[0], 0x4e);
	ck_assert_uint_eq(d[1], 0x79);
	ck_assert_uint_eq(d[2], 0xdd);
	ck_assert_uint_eq(d[3], 0x46);
	/* chaining pieces gives the same CRC as one pass */
	ck_assert_uint_eq(iscsi_crc_final(iscsi_crc_update(iscsi_crc_update(ISCSI_CRC_INIT, buf, 5),
							   buf + 5, 27)),
			  crc);
	/* the standard check value of CRC-32C */
	ck_assert_uint_eq(iscsi_crc_final(iscsi_crc_update(ISCSI_CRC_INIT, "123456789", 9)),
			  0xe3069283u);
}
END_TEST

START_TEST(t03_serial_numbers)
{
	ck_assert(iscsi_sn_lt(1, 2));
	ck_assert(!iscsi_sn_lt(2, 2));
	ck_assert(iscsi_sn_lt(0xfffffff0u, 5));    /* wraps */
	ck_assert(iscsi_sn_gt(5, 0xfffffff0u));
	ck_assert(iscsi_sn_le(7, 7));
	ck_assert(iscsi_sn_gt(0, 0xffffffffu));
}
END_TEST

START_TEST(t04_login_phase_checks)
{
	uint8_t b[ISCSI_BHS_LEN], reason;
	const char *why;

	bhs_init(b, ISCSI_OP_LOGIN_REQ | ISCSI_OP_IMMEDIATE, ISCSI_LOGIN_TRANSIT | 0x01, 100);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_LOGIN, 8192, &reason, &why), ISCSI_BHS_OK);
	/* over 8192 during login */
	iscsi_bhs_set_dsl(b, 8193);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_LOGIN, 8192, &reason, &why), ISCSI_BHS_DROP);
	/* T and C together */
	bhs_init(b, ISCSI_OP_LOGIN_REQ, ISCSI_LOGIN_TRANSIT | ISCSI_LOGIN_CONTINUE, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_LOGIN, 8192, &reason, &why), ISCSI_BHS_DROP);
	/* a SCSI command before login completes */
	bhs_init(b, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_LOGIN, 8192, &reason, &why), ISCSI_BHS_DROP);
	ck_assert_str_eq(why, "non-login PDU during login");
	/* absurd AHS */
	bhs_init(b, ISCSI_OP_LOGIN_REQ, 0, 0);
	b[ISCSI_OFF_AHSLEN] = 255;
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_LOGIN, 8192, &reason, &why), ISCSI_BHS_DROP);
}
END_TEST

START_TEST(t05_ffp_checks)
{
	uint8_t b[ISCSI_BHS_LEN], reason;
	const char *why;

	/* a plain read command */
	bhs_init(b, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_READ, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_OK);
	/* F=0 without W */
	bhs_init(b, ISCSI_OP_SCSI_CMD, ISCSI_CMD_READ, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	ck_assert_uint_eq(reason, ISCSI_REJECT_INVALID_FIELD);
	/* immediate data over our MaxRecvDataSegmentLength: Reject, close */
	bhs_init(b, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 65537);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why),
			 ISCSI_BHS_REJECT_CLOSE);
	ck_assert_uint_eq(reason, ISCSI_REJECT_PROTOCOL);
	bhs_init(b, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 65536);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_OK);
	/* Data-Out over the limit: the same */
	bhs_init(b, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL, 65537);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why),
			 ISCSI_BHS_REJECT_CLOSE);
	bhs_init(b, ISCSI_OP_DATA_OUT, ISCSI_FLAG_FINAL, 65536);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_OK);
	/* unknown opcode, SNACK at ERL 0, login in FFP */
	bhs_init(b, 0x1c, ISCSI_FLAG_FINAL, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	ck_assert_uint_eq(reason, ISCSI_REJECT_CMD_NOT_SUPPORTED);
	bhs_init(b, ISCSI_OP_SNACK, ISCSI_FLAG_FINAL, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	bhs_init(b, ISCSI_OP_LOGIN_REQ, 0, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	ck_assert_uint_eq(reason, ISCSI_REJECT_PROTOCOL);
	/* NOP-Out with reserved ITT must be immediate */
	bhs_init(b, ISCSI_OP_NOP_OUT, ISCSI_FLAG_FINAL, 0);
	conf_put_be32(b + ISCSI_OFF_ITT, ISCSI_RSVD_TAG);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	b[0] |= ISCSI_OP_IMMEDIATE;
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_OK);
	/* Text with F and C */
	bhs_init(b, ISCSI_OP_TEXT_REQ, ISCSI_FLAG_FINAL | ISCSI_TEXT_CONTINUE, 0);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why), ISCSI_BHS_REJECT);
	/* oversized PDUs of every opcode, known or not, are not waited for:
	 * Reject, then close */
	{
		static const uint8_t ops[] = { ISCSI_OP_NOP_OUT | ISCSI_OP_IMMEDIATE,
					       ISCSI_OP_TEXT_REQ, ISCSI_OP_TMF_REQ,
					       ISCSI_OP_LOGOUT_REQ, ISCSI_OP_SNACK, 0x1c };

		for (size_t i = 0; i < sizeof(ops); i++) {
			bhs_init(b, ops[i], ISCSI_FLAG_FINAL, 0xffffff);
			ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 65536, &reason, &why),
					 ISCSI_BHS_REJECT_CLOSE);
			ck_assert_uint_eq(reason, ISCSI_REJECT_PROTOCOL);
		}
	}
	/* the limit is what we declared, not a constant */
	bhs_init(b, ISCSI_OP_NOP_OUT | ISCSI_OP_IMMEDIATE, ISCSI_FLAG_FINAL, 8193);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 8192, &reason, &why),
			 ISCSI_BHS_REJECT_CLOSE);
	ck_assert_int_eq(iscsi_bhs_check(b, ISCSI_PHASE_FFP, 8193, &reason, &why), ISCSI_BHS_OK);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_accessors", t01_accessors),
		CK_CASE("02_crc_vectors", t02_crc_vectors),
		CK_CASE("03_serial_numbers", t03_serial_numbers),
		CK_CASE("04_login_phase_checks", t04_login_phase_checks),
		CK_CASE("05_ffp_checks", t05_ffp_checks),
	};

	return ck_main(&(struct ck_suite_def){ "pdu", CK_CASES(cases) });
}
