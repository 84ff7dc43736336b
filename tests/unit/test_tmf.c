/* tests/unit/test_tmf.c - target/iscsi/tmf.c: mapping of iSCSI TMF
 * functions to scsi_tmf() and the responses for unsupported ones. */
#include <check.h>

#include "target/iscsi/iscsi_int.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_function_map)
{
	int fn;

	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_ABORT_TASK, &fn), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, -1);    /* handled by the transport alone */
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_ABORT_TASK_SET, &fn), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, SCSI_TMF_ABORT_TASK_SET);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_CLEAR_TASK_SET, &fn), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, SCSI_TMF_CLEAR_TASK_SET);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_LUN_RESET, &fn), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, SCSI_TMF_LUN_RESET);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_TARGET_WARM_RESET, &fn),
			  ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, SCSI_TMF_TARGET_WARM_RESET);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_TARGET_COLD_RESET, &fn),
			  ISCSI_TMF_RSP_COMPLETE);
	ck_assert_int_eq(fn, SCSI_TMF_TARGET_COLD_RESET);
}
END_TEST

START_TEST(t02_unsupported)
{
	int fn;

	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_CLEAR_ACA, &fn), ISCSI_TMF_RSP_NOT_SUPPORTED);
	ck_assert_int_eq(fn, -1);
	/* ERL 0: no task reassignment */
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(ISCSI_TMF_TASK_REASSIGN, &fn), ISCSI_TMF_RSP_NO_REASSIGN);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(0, &fn), ISCSI_TMF_RSP_REJECTED);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(9, &fn), ISCSI_TMF_RSP_REJECTED);
	ck_assert_uint_eq(iscsi_tmf_scsi_fn(0x7f, &fn), ISCSI_TMF_RSP_REJECTED);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_function_map", t01_function_map),
		CK_CASE("02_unsupported", t02_unsupported),
	};

	return ck_main(&(struct ck_suite_def){ "tmf", CK_CASES(cases) });
}
