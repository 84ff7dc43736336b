/* tests/unit/test_cmd.c - target/iscsi/cmd.c: residual computation and the
 * Data-In split (MaxRecvDataSegmentLength, MaxBurstLength F bits). */
#include <check.h>

#include "target/iscsi/iscsi_int.h"

START_TEST(t01_residuals)
{
	uint8_t f;
	uint32_t n;

	iscsi_residual(4096, 4096, &f, &n);
	ck_assert_uint_eq(f, 0);
	ck_assert_uint_eq(n, 0);
	/* EDTL 10000 for one 512-byte block: underflow 9488 */
	iscsi_residual(10000, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_UNDERFLOW);
	ck_assert_uint_eq(n, 9488);
	/* EDTL 0 for one block: overflow 512 */
	iscsi_residual(0, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_OVERFLOW);
	ck_assert_uint_eq(n, 512);
	/* EDTL 200 for one block: overflow 312 */
	iscsi_residual(200, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_OVERFLOW);
	ck_assert_uint_eq(n, 312);
}
END_TEST

START_TEST(t02_datain_split)
{
	ck_assert_uint_eq(iscsi_datain_count(0, 8192), 0);
	ck_assert_uint_eq(iscsi_datain_count(1, 8192), 1);
	ck_assert_uint_eq(iscsi_datain_count(8192, 8192), 1);
	ck_assert_uint_eq(iscsi_datain_count(8193, 8192), 2);
	ck_assert_uint_eq(iscsi_datain_count(1 << 20, 262144), 4);
	/* default when the initiator declared nothing usable */
	ck_assert_uint_eq(iscsi_datain_count(16384, 0), 2);
}
END_TEST

START_TEST(t03_datain_final)
{
	/* last PDU always ends the sequence */
	ck_assert(iscsi_datain_final(0, 512, 512, 262144));
	ck_assert(iscsi_datain_final(8192, 8192, 16384, 262144));
	/* inside a burst: no F */
	ck_assert(!iscsi_datain_final(0, 8192, 16384, 262144));
	/* at a MaxBurstLength boundary: F */
	ck_assert(iscsi_datain_final(262144 - 8192, 8192, 1 << 20, 262144));
	ck_assert(!iscsi_datain_final(262144, 8192, 1 << 20, 262144));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cmd");
	SRunner *sr;
	int failed;
	struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "01_residuals", t01_residuals },
		{ "02_datain_split", t02_datain_split },
		{ "03_datain_final", t03_datain_final },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].t);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
