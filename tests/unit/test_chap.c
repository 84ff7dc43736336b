/* tests/unit/test_chap.c - target/iscsi/chap.c: CHAP-MD5 as RFC 1994 and
 * RFC 7143 12.1.3 describe it, one-way and mutual. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "target/iscsi/iscsi_text.h"
#include "tests/lib/ckmain.h"

static const struct iscsi_chap_creds creds = {
	.user = "alice",
	.secret = "secretsecret",
	.mutual_user = "iqn.2026-11.org.rtgt:target",
	.mutual_secret = "mutualsecret1",
};

/* Runs one step with the request given as "k=v\0k=v\0" text; the response
 * pairs are parsed into @resp (freed by the caller with iscsi_kv_free). */
static int step(struct iscsi_chap *c, const struct iscsi_chap_creds *cr, const char *req,
		size_t len, struct iscsi_kvlist *resp)
{
	struct iscsi_kvlist rq;
	struct iscsi_textbuf b = { 0 };
	int r;

	ck_assert_int_eq(iscsi_kv_parse((const uint8_t *)req, len, &rq), 0);
	r = iscsi_chap_step(c, cr, &rq, &b);
	ck_assert_int_eq(b.error, 0);
	ck_assert_int_eq(iscsi_chap_check(c), 0);
	ck_assert_int_eq(iscsi_kv_parse(b.data, b.len, resp), 0);
	iscsi_text_free(&b);
	iscsi_kv_free(&rq);
	return r;
}

#define STEP(c, cr, lit, resp) step(c, cr, lit, sizeof(lit) - 1, resp)

static void md5_of(uint8_t id, const char *secret, const uint8_t *chal, size_t n,
		   uint8_t out[16])
{
	uint8_t buf[1 + 64 + 1024];
	size_t sl = strlen(secret);
	unsigned int ol = 0;

	buf[0] = id;
	memcpy(buf + 1, secret, sl);
	memcpy(buf + 1 + sl, chal, n);
	ck_assert_int_eq(EVP_Digest(buf, 1 + sl + n, out, &ol, EVP_md5(), NULL), 1);
	ck_assert_uint_eq(ol, 16);
}

static void hex_of(const uint8_t *in, size_t n, char *out)
{
	size_t i;

	out += sprintf(out, "0x");
	for (i = 0; i < n; i++)
		out += sprintf(out, "%02x", in[i]);
}

/* Gets @c to the CHALLENGED state, then pins id and challenge so that the
 * expected response is known. */
static void challenged(struct iscsi_chap *c, uint8_t id, const uint8_t chal[16])
{
	struct iscsi_kvlist r;

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(STEP(c, &creds, "CHAP_A=5\0", &r), 1);
	iscsi_kv_free(&r);
	c->id = id;
	memcpy(c->challenge, chal, 16);
}

static const uint8_t chal16[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

START_TEST(t01_challenge_sent)
{
	struct iscsi_chap c = { 0 }, c2 = { 0 };
	struct iscsi_kvlist r;
	uint8_t dec[32];
	size_t n;
	char expect[8];

	ck_assert_int_eq(STEP(&c, &creds, "CHAP_A=7,0x5,5\0", &r), 1);
	ck_assert_str_eq(iscsi_kv_get(&r, "CHAP_A"), "5");
	snprintf(expect, sizeof(expect), "%u", c.id);
	ck_assert_str_eq(iscsi_kv_get(&r, "CHAP_I"), expect);
	ck_assert_uint_eq(strlen(iscsi_kv_get(&r, "CHAP_C")), 2 + 32);
	ck_assert_int_eq(strncmp(iscsi_kv_get(&r, "CHAP_C"), "0x", 2), 0);
	ck_assert_int_eq(iscsi_text_decode_binary(iscsi_kv_get(&r, "CHAP_C"), dec, 32, &n), 0);
	ck_assert_uint_eq(n, 16);
	ck_assert_int_eq(memcmp(dec, c.challenge, 16), 0);
	iscsi_kv_free(&r);

	/* challenges are random */
	ck_assert_int_eq(STEP(&c2, &creds, "CHAP_A=5\0", &r), 1);
	iscsi_kv_free(&r);
	ck_assert_int_ne(memcmp(c.challenge, c2.challenge, 16), 0);
}
END_TEST

START_TEST(t02_algorithm_errors)
{
	struct iscsi_chap c = { 0 };
	struct iscsi_kvlist r;

	/* AuthMethod just agreed, no CHAP key yet: wait */
	ck_assert_int_eq(STEP(&c, &creds, "AuthMethod=CHAP\0", &r), 1);
	ck_assert_uint_eq(r.n, 0);
	iscsi_kv_free(&r);

	ck_assert_int_eq(STEP(&c, &creds, "CHAP_A=6,7\0", &r), -EACCES);
	ck_assert_str_eq(iscsi_kv_get(&r, "CHAP_A"), "Reject");
	iscsi_kv_free(&r);
	/* failure is sticky */
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_A=5\0", &r), -EINVAL);
	iscsi_kv_free(&r);

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_A=5,,7\0", &r), -EINVAL);
	iscsi_kv_free(&r);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_N=alice\0CHAP_R=0x00\0", &r), -EINVAL);
	iscsi_kv_free(&r);
}
END_TEST

START_TEST(t03_known_vector)
{
	/* MD5(0x2a || "secretsecret" || 00 01 .. 0f), computed independently */
	static const char vec[] = "0x54d49338a27b0c1dd5e935c21ab005a3";
	uint8_t want[16], bin[16];
	char hex[40], req[200], b64[40];
	struct iscsi_chap c;
	struct iscsi_kvlist r;
	int n;

	md5_of(0x2a, creds.secret, chal16, 16, want);
	hex_of(want, 16, hex);
	ck_assert_str_eq(hex, vec);

	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%c", 0, vec, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), 0);
	ck_assert_uint_eq(r.n, 0);   /* no mutual answer asked for */
	ck_assert(!c.mutual_done);
	iscsi_kv_free(&r);

	/* upper-case hex and base64 encode the same response */
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=0X54D49338A27B0C1DD5E935C21AB005A3%c",
		     0, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), 0);
	iscsi_kv_free(&r);

	ck_assert_int_eq(EVP_EncodeBlock((unsigned char *)b64, want, 16), 24);
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=0b%s%c", 0, b64, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), 0);
	iscsi_kv_free(&r);
	ck_assert_int_eq(iscsi_text_decode_binary(hex, bin, 16, &(size_t){ 0 }), 0);
}
END_TEST

START_TEST(t04_bad_responses)
{
	static const char good[] = "0x54d49338a27b0c1dd5e935c21ab005a3";
	struct iscsi_chap c;
	struct iscsi_kvlist r;
	char req[200];
	int n;

	/* wrong user with the right digest */
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=bob%cCHAP_R=%s%c", 0, good, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EACCES);
	iscsi_kv_free(&r);
	/* sticky after failure */
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EINVAL);
	iscsi_kv_free(&r);

	/* one bit off */
	challenged(&c, 0x2a, chal16);
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_N=alice\0CHAP_R=0x54d49338a27b0c1dd5e935c21ab005a2\0",
			      &r), -EACCES);
	iscsi_kv_free(&r);
	/* a different identifier changes the digest */
	challenged(&c, 0x2b, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%c", 0, good, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EACCES);
	iscsi_kv_free(&r);
	/* wrong length */
	challenged(&c, 0x2a, chal16);
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_N=alice\0CHAP_R=0x54d49338a27b0c1dd5e935c21ab005\0",
			      &r), -EACCES);
	iscsi_kv_free(&r);
	/* protocol errors: missing key, undecodable value */
	challenged(&c, 0x2a, chal16);
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_N=alice\0", &r), -EINVAL);
	iscsi_kv_free(&r);
	challenged(&c, 0x2a, chal16);
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_N=alice\0CHAP_R=54d4\0", &r), -EINVAL);
	iscsi_kv_free(&r);
	/* target without one-way credentials cannot accept anyone */
	{
		struct iscsi_chap_creds none = { 0 };

		challenged(&c, 0x2a, chal16);
		n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%c", 0, good, 0);
		ck_assert_int_eq(step(&c, &none, req, (size_t)n, &r), -EACCES);
		iscsi_kv_free(&r);
	}
}
END_TEST

START_TEST(t05_mutual)
{
	/* MD5(7 || "mutualsecret1" || 100..131), computed independently */
	static const char vec[] = "0xe775a6c6755c93777e8c0b23dfe2f38b";
	uint8_t ichal[32], d[16];
	char req[400], ihex[80], mine[40];
	struct iscsi_chap c;
	struct iscsi_kvlist r;
	int i, n;

	for (i = 0; i < 32; i++)
		ichal[i] = (uint8_t)(100 + i);
	md5_of(7, creds.mutual_secret, ichal, 32, d);
	hex_of(d, 16, mine);
	ck_assert_str_eq(mine, vec);

	hex_of(ichal, 32, ihex);
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=0x54d49338a27b0c1dd5e935c21ab005a3%c"
		     "CHAP_I=7%cCHAP_C=%s%c", 0, 0, 0, ihex, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), 0);
	ck_assert(c.mutual_done);
	ck_assert_str_eq(iscsi_kv_get(&r, "CHAP_N"), creds.mutual_user);
	ck_assert_str_eq(iscsi_kv_get(&r, "CHAP_R"), vec);
	iscsi_kv_free(&r);

	/* CHAP is over: another step is a protocol error */
	ck_assert_int_eq(STEP(&c, &creds, "CHAP_A=5\0", &r), -EINVAL);
	iscsi_kv_free(&r);
	ck_assert(!c.mutual_done);
}
END_TEST

START_TEST(t06_mutual_refused)
{
	static const char resp[] = "0x54d49338a27b0c1dd5e935c21ab005a3";
	struct iscsi_chap_creds oneway = creds;
	struct iscsi_chap c;
	struct iscsi_kvlist r;
	char req[400], ours[40];
	int n;

	/* reflection: our own challenge handed back */
	hex_of(chal16, 16, ours);
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%cCHAP_I=42%cCHAP_C=%s%c", 0, resp,
		     0, 0, ours, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EACCES);
	ck_assert_uint_eq(r.n, 0);
	iscsi_kv_free(&r);

	/* too short a challenge */
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%cCHAP_I=1%cCHAP_C=0x0102030405060708%c",
		     0, resp, 0, 0, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EACCES);
	iscsi_kv_free(&r);

	/* mutual asked, none configured */
	oneway.mutual_user = oneway.mutual_secret = NULL;
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%cCHAP_I=1%cCHAP_C=0x%s%c", 0, resp,
		     0, 0, "00112233445566778899aabbccddeeff00", 0);
	ck_assert_int_eq(step(&c, &oneway, req, (size_t)n, &r), -EACCES);
	iscsi_kv_free(&r);

	/* CHAP_I without CHAP_C, and an identifier out of range */
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%cCHAP_I=1%c", 0, resp, 0, 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EINVAL);
	iscsi_kv_free(&r);
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=%s%cCHAP_I=256%cCHAP_C=0x%s%c", 0,
		     resp, 0, 0, "00112233445566778899aabbccddeeff00", 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EINVAL);
	iscsi_kv_free(&r);

	/* a wrong one-way response is refused before any mutual answer */
	challenged(&c, 0x2a, chal16);
	n = snprintf(req, sizeof(req), "CHAP_N=alice%cCHAP_R=0x%032x%cCHAP_I=1%cCHAP_C=0x%s%c", 0,
		     0, 0, 0, "00112233445566778899aabbccddeeff00", 0);
	ck_assert_int_eq(step(&c, &creds, req, (size_t)n, &r), -EACCES);
	ck_assert_uint_eq(r.n, 0);
	iscsi_kv_free(&r);
}
END_TEST

START_TEST(t07_invariants)
{
	struct iscsi_chap c = { 0 };

	ck_assert_int_eq(iscsi_chap_check(&c), 0);
	c.mutual_done = true;
	ck_assert_int_eq(iscsi_chap_check(&c), -EINVAL);
	c.mutual_done = false;
	c.state = 99;
	ck_assert_int_eq(iscsi_chap_check(&c), -EINVAL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_challenge_sent", t01_challenge_sent),
		CK_CASE("02_algorithm_errors", t02_algorithm_errors),
		CK_CASE("03_known_vector", t03_known_vector),
		CK_CASE("04_bad_responses", t04_bad_responses),
		CK_CASE("05_mutual", t05_mutual),
		CK_CASE("06_mutual_refused", t06_mutual_refused),
		CK_CASE("07_invariants", t07_invariants),
	};

	return ck_main(&(struct ck_suite_def){ "chap", CK_CASES(cases) });
}
