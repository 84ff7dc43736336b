/* tests/unit/test_sock.c - net/sock.c: address parsing and formatting. */
#include <check.h>
#include <errno.h>

#include "net/net.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_parse_and_format_addresses)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[64];

	ck_assert_int_eq(sock_parse_addr("127.0.0.2:3260", &ss, &len), 0);
	sock_addr_str(&ss, buf, sizeof(buf), true);
	ck_assert_str_eq(buf, "127.0.0.2:3260");
	ck_assert_int_eq(sock_parse_addr("[::1]:860", &ss, &len), 0);
	sock_addr_str(&ss, buf, sizeof(buf), true);
	ck_assert_str_eq(buf, "[::1]:860");
	ck_assert_int_eq(sock_parse_addr("127.0.0.1", &ss, &len), -EINVAL);
	ck_assert_int_eq(sock_parse_addr("127.0.0.1:0", &ss, &len), -EINVAL);
	ck_assert_int_eq(sock_parse_addr("127.0.0.1:65536", &ss, &len), -EINVAL);
	ck_assert_int_eq(sock_parse_addr("::1:3260", &ss, &len), -EINVAL);
	ck_assert_int_eq(sock_parse_addr("[::1]3260", &ss, &len), -EINVAL);
	ck_assert_int_eq(sock_parse_addr("host:3260", &ss, &len), -EINVAL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("sock", t01_parse_and_format_addresses),
	};

	return ck_main(&(struct ck_suite_def){ "sock", CK_CASES(cases) });
}
