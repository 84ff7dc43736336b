/* tests/unit/test_text.c - target/iscsi/text.c: key=value lists, value
 * encodings, iSCSI names. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"
#include "tests/lib/ckmain.h"

static int parse_str(const char *s, size_t len, struct iscsi_kvlist *l)
{
	return iscsi_kv_parse((const uint8_t *)s, len, l);
}

START_TEST(t01_parse_pairs)
{
	static const char seg[] = "InitiatorName=iqn.2007-10.com.x:a\0SessionType=Normal\0Empty=\0";
	struct iscsi_kvlist l;

	ck_assert_int_eq(parse_str(seg, sizeof(seg) - 1, &l), 0);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_str_eq(iscsi_kv_get(&l, "InitiatorName"), "iqn.2007-10.com.x:a");
	ck_assert_str_eq(iscsi_kv_get(&l, "SessionType"), "Normal");
	ck_assert_str_eq(iscsi_kv_get(&l, "Empty"), "");
	ck_assert_ptr_null(iscsi_kv_get(&l, "sessiontype"));   /* case matters */
	ck_assert_ptr_null(iscsi_kv_get(&l, "Missing"));
	iscsi_kv_free(&l);

	/* value with '=' inside, trailing padding, missing final NUL */
	ck_assert_int_eq(parse_str("A=b=c\0\0\0\0", 9, &l), 0);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(iscsi_kv_get(&l, "A"), "b=c");
	iscsi_kv_free(&l);
	ck_assert_int_eq(parse_str("A=1\0B=2", 7, &l), 0);
	ck_assert_str_eq(iscsi_kv_get(&l, "B"), "2");
	iscsi_kv_free(&l);

	ck_assert_int_eq(parse_str("", 0, &l), 0);
	ck_assert_uint_eq(l.n, 0);
	iscsi_kv_free(&l);
}
END_TEST

START_TEST(t02_parse_errors)
{
	struct iscsi_kvlist l;
	char key[70], *big;
	size_t n;

	ck_assert_int_eq(parse_str("NoEquals\0", 9, &l), -EINVAL);
	ck_assert_int_eq(parse_str("=v\0", 3, &l), -EINVAL);
	ck_assert_int_eq(parse_str("A=1\0A=2\0", 8, &l), -EINVAL);
	ck_assert_int_eq(parse_str("Bad Key=1\0", 10, &l), -EINVAL);
	ck_assert_int_eq(parse_str("Bad/Key=1\0", 10, &l), -EINVAL);
	ck_assert_ptr_null(l.kv);

	/* 63-byte keys are fine, 64 is too long */
	memset(key, 'K', 63);
	strcpy(key + 63, "=1");
	ck_assert_int_eq(parse_str(key, strlen(key) + 1, &l), 0);
	iscsi_kv_free(&l);
	memset(key, 'K', 64);
	strcpy(key + 64, "=1");
	ck_assert_int_eq(parse_str(key, strlen(key) + 1, &l), -EINVAL);

	/* value limit 8192 */
	n = 2 + 8193 + 1;
	big = malloc(n);
	ck_assert_ptr_nonnull(big);
	big[0] = 'V';
	big[1] = '=';
	memset(big + 2, 'x', 8193);
	big[n - 1] = '\0';
	ck_assert_int_eq(parse_str(big, n, &l), -EINVAL);
	big[n - 2] = '\0';  /* 8192 now */
	ck_assert_int_eq(parse_str(big, n - 1, &l), 0);
	iscsi_kv_free(&l);
	free(big);
}
END_TEST

START_TEST(t03_textbuf)
{
	struct iscsi_textbuf b = { 0 };
	struct iscsi_kvlist l;
	int i;

	iscsi_text_add(&b, "HeaderDigest", "None");
	iscsi_text_addf(&b, "MaxRecvDataSegmentLength", "%u", 262144u);
	ck_assert_int_eq(b.error, 0);
	ck_assert_uint_eq(b.len, strlen("HeaderDigest=None") + 1 +
				 strlen("MaxRecvDataSegmentLength=262144") + 1);
	ck_assert_int_eq(memcmp(b.data, "HeaderDigest=None\0MaxRecv", 25), 0);
	/* growth past the first allocation keeps earlier content */
	for (i = 0; i < 200; i++)
		iscsi_text_addf(&b, "TargetAddress", "127.0.0.%d:3260,1", i);
	ck_assert_int_eq(b.error, 0);
	/* the first two pairs read back; the whole buffer repeats a key */
	ck_assert_int_eq(iscsi_kv_parse(b.data, 18 + 32, &l), 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(iscsi_kv_get(&l, "MaxRecvDataSegmentLength"), "262144");
	iscsi_kv_free(&l);
	ck_assert_int_eq(iscsi_kv_parse(b.data, b.len, &l), -EINVAL);
	ck_assert_int_eq(memcmp(b.data, "HeaderDigest=None", 17), 0);
	ck_assert_uint_eq(b.data[b.len - 1], 0);
	iscsi_text_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(t04_numbers)
{
	uint64_t v;

	ck_assert_int_eq(iscsi_text_parse_number("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(iscsi_text_parse_number("262144", &v), 0);
	ck_assert_uint_eq(v, 262144);
	ck_assert_int_eq(iscsi_text_parse_number("0x40000", &v), 0);
	ck_assert_uint_eq(v, 262144);
	ck_assert_int_eq(iscsi_text_parse_number("0XfFfF", &v), 0);
	ck_assert_uint_eq(v, 65535);
	ck_assert_int_eq(iscsi_text_parse_number("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(iscsi_text_parse_number("18446744073709551616", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("0x10000000000000000", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("0x", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("012", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("12a", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number(" 12", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("-1", &v), -EINVAL);
	ck_assert_int_eq(iscsi_text_parse_number("+1", &v), -EINVAL);
}
END_TEST

START_TEST(t05_binary)
{
	uint8_t out[32];
	char hex[40];
	size_t n;

	ck_assert_int_eq(iscsi_text_decode_binary("0x00ff10", out, sizeof(out), &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(out[0], 0x00);
	ck_assert_uint_eq(out[1], 0xff);
	ck_assert_uint_eq(out[2], 0x10);
	/* odd digit count: leading half byte */
	ck_assert_int_eq(iscsi_text_decode_binary("0XABC", out, sizeof(out), &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0], 0x0a);
	ck_assert_uint_eq(out[1], 0xbc);
	/* RFC 4648 test vectors: "foobar", "fo", "f" */
	ck_assert_int_eq(iscsi_text_decode_binary("0bZm9vYmFy", out, sizeof(out), &n), 0);
	ck_assert_uint_eq(n, 6);
	ck_assert_int_eq(memcmp(out, "foobar", 6), 0);
	ck_assert_int_eq(iscsi_text_decode_binary("0BZm8=", out, sizeof(out), &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(memcmp(out, "fo", 2), 0);
	ck_assert_int_eq(iscsi_text_decode_binary("0bZg==", out, sizeof(out), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(out[0], 'f');

	ck_assert_int_eq(iscsi_text_decode_binary("0bZg=", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0bZ=g=", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0bZ===", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0b", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0x", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0xzz", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("1234", out, sizeof(out), &n), -EINVAL);
	ck_assert_int_eq(iscsi_text_decode_binary("0x112233", out, 2, &n), -EINVAL);

	ck_assert_int_eq(iscsi_text_encode_hex((const uint8_t *)"\x01\xab", 2, hex, sizeof(hex)),
			 0);
	ck_assert_str_eq(hex, "0x01ab");
	ck_assert_int_eq(iscsi_text_encode_hex(out, 16, hex, 34), -ENOSPC);
	ck_assert_int_eq(iscsi_text_encode_hex(out, 16, hex, 35), 0);
	ck_assert_int_eq(iscsi_text_decode_binary(hex, out + 16, 16, &n), 0);
	ck_assert_uint_eq(n, 16);
	ck_assert_int_eq(memcmp(out, out + 16, 16), 0);
}
END_TEST

START_TEST(t06_names)
{
	char longname[300];

	ck_assert(iscsi_name_valid("iqn.2026-11.org.rtgt:quickstart"));
	ck_assert(iscsi_name_valid("iqn.2007-10.com.github:sahlberg:libiscsi:iscsi-test-2"));
	ck_assert(iscsi_name_valid("iqn.1991-05.com.microsoft:host-1.domain.local"));
	ck_assert(iscsi_name_valid("iqn.2001-04.com.example"));
	ck_assert(iscsi_name_valid("eui.02004567A425678D"));
	ck_assert(iscsi_name_valid("naa.52004567BA64678D"));
	ck_assert(iscsi_name_valid("naa.62004567BA64678D0123456789ABCDEF"));

	ck_assert(!iscsi_name_valid(NULL));
	ck_assert(!iscsi_name_valid(""));
	ck_assert(!iscsi_name_valid("iqn."));
	ck_assert(!iscsi_name_valid("iqn.2026-13.org.rtgt"));    /* month */
	ck_assert(!iscsi_name_valid("iqn.2026-00.org.rtgt"));
	ck_assert(!iscsi_name_valid("iqn.26-11.org.rtgt"));
	ck_assert(!iscsi_name_valid("iqn.2026-11org.rtgt"));
	ck_assert(!iscsi_name_valid("iqn.2026-11."));
	ck_assert(!iscsi_name_valid("iqn.2026-11.:x"));
	ck_assert(!iscsi_name_valid("iqn.2026-11.org..rtgt"));
	ck_assert(!iscsi_name_valid("iqn.2026-11.org.Rtgt"));    /* not stringprepped */
	ck_assert(!iscsi_name_valid("iqn.2026-11.org.rtgt:a b"));
	ck_assert(!iscsi_name_valid("iqn.2026-11.org.rtgt:a_b"));
	ck_assert(!iscsi_name_valid("IQN.2026-11.org.rtgt"));
	ck_assert(!iscsi_name_valid("eui.02004567A425678"));     /* 15 digits */
	ck_assert(!iscsi_name_valid("eui.02004567A425678DD"));
	ck_assert(!iscsi_name_valid("eui.02004567A425678G"));
	ck_assert(!iscsi_name_valid("naa.52004567BA64678D00"));  /* 18 digits */
	ck_assert(!iscsi_name_valid("foo.bar"));

	strcpy(longname, "iqn.2026-11.org.rtgt:");
	memset(longname + 21, 'a', 223 - 21);
	longname[223] = '\0';
	ck_assert(iscsi_name_valid(longname));
	longname[223] = 'a';
	longname[224] = '\0';
	ck_assert(!iscsi_name_valid(longname));

	/* what login accepts: the same after the case mapping */
	ck_assert(iscsi_name_ok("iqn.1991-05.com.microsoft:HOST-1"));
	ck_assert(iscsi_name_ok("IQN.2026-11.org.rtgt"));
	ck_assert(iscsi_name_ok("eui.02004567a425678d"));
	ck_assert(!iscsi_name_ok("EUI.02004567A425678D"));
	ck_assert(!iscsi_name_ok(longname));
	ck_assert(!iscsi_name_ok(NULL));
	ck_assert(!iscsi_name_ok("iqn.2026-11.org.rtgt:a\nb"));
	ck_assert(!iscsi_name_ok("iqn.2026-11.org.rtgt:a\x1b[2J"));
	ck_assert(!iscsi_name_ok("iqn.2026-11.org.rtgt:a,i,0x1"));
	ck_assert(!iscsi_name_ok("iqn.2026-11.org.rtgt:\xc3\xa9"));
	ck_assert(!iscsi_name_ok("foo"));
	ck_assert(!iscsi_name_ok("iqn."));
	ck_assert(!iscsi_name_ok("eui.123"));
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_parse_pairs", t01_parse_pairs),
		CK_CASE("02_parse_errors", t02_parse_errors),
		CK_CASE("03_textbuf", t03_textbuf),
		CK_CASE("04_numbers", t04_numbers),
		CK_CASE("05_binary", t05_binary),
		CK_CASE("06_names", t06_names),
	};

	return ck_main(&(struct ck_suite_def){ "text", CK_CASES(cases) });
}
