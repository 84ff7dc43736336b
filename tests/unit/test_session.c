/* tests/unit/test_session.c - target/iscsi/session.c: CmdSN window
 * classification and MaxCmdSN advertisement (RFC 7143 4.2.2.1, RFC 1982). */
#include <check.h>

#include "target/iscsi/iscsi_int.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_classify)
{
	/* window [10, 17] */
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 10), ISCSI_CMDSN_NOW);
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 11), ISCSI_CMDSN_QUEUE);
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 17), ISCSI_CMDSN_QUEUE);
	/* MaxCmdSN + 1: libiscsi's iSCSICmdSnTooHigh */
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 18), ISCSI_CMDSN_DROP);
	/* ExpCmdSN - 1: iSCSICmdSnTooLow (a duplicate) */
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 9), ISCSI_CMDSN_DROP);
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 17, 0x8000000a), ISCSI_CMDSN_DROP);
	/* closed window: MaxCmdSN == ExpCmdSN - 1 accepts nothing */
	ck_assert_int_eq(iscsi_cmdsn_classify(10, 9, 10), ISCSI_CMDSN_DROP);
}
END_TEST

START_TEST(t02_classify_wrap)
{
	/* window wrapping through 0: [0xfffffffe, 5] */
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 0xfffffffeu), ISCSI_CMDSN_NOW);
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 0xffffffffu), ISCSI_CMDSN_QUEUE);
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 0), ISCSI_CMDSN_QUEUE);
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 5), ISCSI_CMDSN_QUEUE);
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 6), ISCSI_CMDSN_DROP);
	ck_assert_int_eq(iscsi_cmdsn_classify(0xfffffffeu, 5, 0xfffffffdu), ISCSI_CMDSN_DROP);
}
END_TEST

START_TEST(t03_max_cmdsn)
{
	/* idle session: ExpCmdSN + depth - 1 */
	ck_assert_uint_eq(iscsi_cmdsn_max(100, 99, 128, 0), 227);
	/* commands active shrink the offer ... */
	ck_assert_uint_eq(iscsi_cmdsn_max(100, 99, 128, 28), 199);
	/* ... but never below what was already advertised */
	ck_assert_uint_eq(iscsi_cmdsn_max(100, 227, 128, 28), 227);
	/* full: window closes at ExpCmdSN - 1 */
	ck_assert_uint_eq(iscsi_cmdsn_max(100, 50, 128, 128), 99);
	ck_assert_uint_eq(iscsi_cmdsn_max(100, 50, 128, 500), 99);
	/* wraps */
	ck_assert_uint_eq(iscsi_cmdsn_max(0xfffffff0u, 0xffffffefu, 32, 0), 0x0000000fu);
	ck_assert_uint_eq(iscsi_cmdsn_max(0xfffffff0u, 0x10, 32, 0), 0x10);
	/* depth 0 behaves as 1 */
	ck_assert_uint_eq(iscsi_cmdsn_max(7, 6, 0, 0), 7);
}
END_TEST

START_TEST(t04_session_check)
{
	struct iscsi_session s = { 0 };
	struct iscsi_req a = { 0 }, b = { 0 };

	s.exp_cmdsn = 10;
	s.max_cmdsn = 20;
	ck_assert(iscsi_session_check(&s));
	a.cmdsn = 12;
	b.cmdsn = 15;
	a.next = &b;
	s.pending = &a;
	s.n_pending = 2;
	ck_assert(iscsi_session_check(&s));
	b.cmdsn = 11;    /* out of order */
	ck_assert(!iscsi_session_check(&s));
	b.cmdsn = 21;    /* beyond MaxCmdSN */
	ck_assert(!iscsi_session_check(&s));
	b.cmdsn = 15;
	s.n_pending = 1; /* miscounted */
	ck_assert(!iscsi_session_check(&s));
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_classify", t01_classify),
		CK_CASE("02_classify_wrap", t02_classify_wrap),
		CK_CASE("03_max_cmdsn", t03_max_cmdsn),
		CK_CASE("04_session_check", t04_session_check),
	};

	return ck_main(&(struct ck_suite_def){ "session", CK_CASES(cases) });
}
