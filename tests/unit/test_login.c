/* tests/unit/test_login.c - target/iscsi/login.c: status codes for the
 * server limits (RFC 7143 11.13.5). */
#include <check.h>

#include "target/iscsi/iscsi_int.h"

START_TEST(t01_limits)
{
	ck_assert_uint_eq(iscsi_login_limit_status(0, 64, 1, 256), ISCSI_LOGIN_OK);
	ck_assert_uint_eq(iscsi_login_limit_status(63, 64, 256, 256), ISCSI_LOGIN_OK);
	/* too many connections: 0x0206 */
	ck_assert_uint_eq(iscsi_login_limit_status(0, 64, 257, 256), ISCSI_LOGIN_TOO_MANY_CONNS);
	ck_assert_uint_eq(ISCSI_LOGIN_TOO_MANY_CONNS, 0x0206);
	/* sessions exhausted: target out of resources 0x0302 */
	ck_assert_uint_eq(iscsi_login_limit_status(64, 64, 3, 256), ISCSI_LOGIN_OUT_OF_RESOURCES);
	ck_assert_uint_eq(ISCSI_LOGIN_OUT_OF_RESOURCES, 0x0302);
	/* max_connections 0 means no cap */
	ck_assert_uint_eq(iscsi_login_limit_status(0, 64, 5000, 0), ISCSI_LOGIN_OK);
}
END_TEST

START_TEST(t02_status_values)
{
	/* the wire values RFC 7143 11.13.5 assigns */
	ck_assert_uint_eq(ISCSI_LOGIN_AUTH_FAILED, 0x0201);
	ck_assert_uint_eq(ISCSI_LOGIN_FORBIDDEN, 0x0202);
	ck_assert_uint_eq(ISCSI_LOGIN_NOT_FOUND, 0x0203);
	ck_assert_uint_eq(ISCSI_LOGIN_UNSUPPORTED_VERSION, 0x0205);
	ck_assert_uint_eq(ISCSI_LOGIN_MISSING_PARAM, 0x0207);
	ck_assert_uint_eq(ISCSI_LOGIN_SESSION_TYPE_UNSUPPORTED, 0x0209);
	ck_assert_uint_eq(ISCSI_LOGIN_NO_SUCH_SESSION, 0x020a);
	ck_assert_uint_eq(ISCSI_LOGIN_INVALID_DURING_LOGIN, 0x020b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("login");
	SRunner *sr;
	int failed;
	struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "01_limits", t01_limits },
		{ "02_status_values", t02_status_values },
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
