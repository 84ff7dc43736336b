/* tests/unit/test_login.c - target/iscsi/login.c: status codes for the
 * server limits (RFC 7143 11.13.5). */
#include <check.h>

#include "target/iscsi/iscsi_int.h"
#include "tests/lib/ckmain.h"

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
	const struct ck_case cases[] = {
		CK_CASE("01_limits", t01_limits),
		CK_CASE("02_status_values", t02_status_values),
	};

	return ck_main(&(struct ck_suite_def){ "login", CK_CASES(cases) });
}
