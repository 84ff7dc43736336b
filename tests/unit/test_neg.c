/* tests/unit/test_neg.c - target/iscsi/neg.c: RFC 7143 section 13 key
 * negotiation from the target's (acceptor's) side. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"
#include "tests/lib/ckmain.h"

static const struct iscsi_limits lim_default = {
	.max_recv_dsl = 262144,
	.max_burst = 1048576,
	.first_burst = 262144,
	.max_outstanding_r2t = 4,
	.allow_digests = true,
};

/* Negotiates one key in a fresh buffer and returns the single answer value
 * (static storage), "" when nothing was answered, or "ERR" on -EINVAL. */
static const char *answer(struct iscsi_neg *n, const char *key, const char *value, bool ffp)
{
	static char out[300];
	struct iscsi_textbuf b = { 0 };
	struct iscsi_kvlist l;
	const char *v;
	int r;

	r = iscsi_neg_key(n, key, value, ffp, &b);
	ck_assert_int_eq(b.error, 0);
	ck_assert_int_eq(iscsi_neg_check(n), 0);
	if (r == -EINVAL) {
		iscsi_text_free(&b);
		return "ERR";
	}
	ck_assert_int_eq(r, 0);
	out[0] = '\0';
	if (b.len) {
		ck_assert_int_eq(iscsi_kv_parse(b.data, b.len, &l), 0);
		v = iscsi_kv_get(&l, key);
		ck_assert_ptr_nonnull(v);
		strcpy(out, v);
		iscsi_kv_free(&l);
	}
	iscsi_text_free(&b);
	return out;
}

static void fresh(struct iscsi_neg *n)
{
	iscsi_neg_init(n, &lim_default, true);
	n->type = ISCSI_SESSION_NORMAL;
}

START_TEST(t01_defaults)
{
	struct iscsi_params p;
	struct iscsi_neg n;

	iscsi_params_default(&p);
	ck_assert(!p.header_digest && !p.data_digest);
	ck_assert_uint_eq(p.max_connections, 1);
	ck_assert(p.initial_r2t && p.immediate_data);
	ck_assert_uint_eq(p.max_recv_dsl, 8192);
	ck_assert_uint_eq(p.max_xmit_dsl, 8192);
	ck_assert_uint_eq(p.max_burst, 262144);
	ck_assert_uint_eq(p.first_burst, 65536);
	ck_assert_uint_eq(p.default_time2wait, 2);
	ck_assert_uint_eq(p.default_time2retain, 20);
	ck_assert_uint_eq(p.max_outstanding_r2t, 1);
	ck_assert(p.data_pdu_in_order && p.data_seq_in_order);
	ck_assert_uint_eq(p.error_recovery_level, 0);

	/* zero limits mean RFC defaults, absurd ones are clamped */
	{
		struct iscsi_limits z = { .max_recv_dsl = 100, .max_burst = 1u << 30 };

		iscsi_neg_init(&n, &z, true);
		ck_assert_uint_eq(n.lim.max_recv_dsl, 512);
		ck_assert_uint_eq(n.lim.max_burst, 16777215);
		ck_assert_uint_eq(n.lim.first_burst, 65536);
		ck_assert_uint_eq(n.lim.max_outstanding_r2t, 1);
		ck_assert_uint_eq(n.lim.max_connections, 1);
		ck_assert_int_eq(iscsi_neg_check(&n), 0);
	}
}
END_TEST

START_TEST(t02_digest_lists)
{
	struct iscsi_neg n;
	struct iscsi_limits nodig = lim_default;

	fresh(&n);
	ck_assert_str_eq(answer(&n, "HeaderDigest", "CRC32C,None", false), "CRC32C");
	ck_assert(n.p.header_digest);
	ck_assert_str_eq(answer(&n, "DataDigest", "None,CRC32C", false), "None");
	ck_assert(!n.p.data_digest);

	/* unknown values in a list are skipped */
	fresh(&n);
	ck_assert_str_eq(answer(&n, "HeaderDigest", "MD5,CRC32C", false), "CRC32C");
	ck_assert_str_eq(answer(&n, "DataDigest", "Foo", false), "Reject");
	ck_assert(!n.p.data_digest);

	/* digests not allowed: CRC32C is not something we support */
	nodig.allow_digests = false;
	iscsi_neg_init(&n, &nodig, true);
	ck_assert_str_eq(answer(&n, "HeaderDigest", "CRC32C,None", false), "None");
	ck_assert(!n.p.header_digest);
	ck_assert_str_eq(answer(&n, "DataDigest", "CRC32C", false), "Reject");
	ck_assert(!n.p.data_digest);
}
END_TEST

START_TEST(t03_numeric_min_max)
{
	struct iscsi_neg n;

	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "16776192", false), "1048576");
	ck_assert_uint_eq(n.p.max_burst, 1048576);
	ck_assert_str_eq(answer(&n, "FirstBurstLength", "65536", false), "65536");
	ck_assert_uint_eq(n.p.first_burst, 65536);
	ck_assert_str_eq(answer(&n, "MaxOutstandingR2T", "16", false), "4");
	ck_assert_str_eq(answer(&n, "MaxConnections", "8", false), "1");
	ck_assert_str_eq(answer(&n, "ErrorRecoveryLevel", "2", false), "0");
	/* Maximum: DefaultTime2Wait; Minimum: DefaultTime2Retain */
	ck_assert_str_eq(answer(&n, "DefaultTime2Wait", "0", false), "2");
	ck_assert_str_eq(answer(&n, "DefaultTime2Retain", "0", false), "0");
	ck_assert_uint_eq(n.p.default_time2wait, 2);
	ck_assert_uint_eq(n.p.default_time2retain, 0);

	fresh(&n);
	ck_assert_str_eq(answer(&n, "DefaultTime2Wait", "10", false), "10");
	ck_assert_str_eq(answer(&n, "DefaultTime2Retain", "3600", false), "20");
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "0x1000", false), "4096");
	ck_assert_str_eq(answer(&n, "iSCSIProtocolLevel", "2", false), "1");
}
END_TEST

START_TEST(t04_numeric_bad_values_rejected)
{
	struct iscsi_neg n;

	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "511", false), "Reject");
	ck_assert_str_eq(answer(&n, "FirstBurstLength", "16777216", false), "Reject");
	ck_assert_str_eq(answer(&n, "MaxOutstandingR2T", "0", false), "Reject");
	ck_assert_str_eq(answer(&n, "MaxConnections", "65536", false), "Reject");
	ck_assert_str_eq(answer(&n, "DefaultTime2Wait", "3601", false), "Reject");
	ck_assert_str_eq(answer(&n, "ErrorRecoveryLevel", "3", false), "Reject");
	/* rejected keys keep their defaults */
	ck_assert_uint_eq(n.p.max_burst, 262144);
	ck_assert_uint_eq(n.p.first_burst, 65536);
	ck_assert_uint_eq(n.p.max_outstanding_r2t, 1);

	fresh(&n);
	ck_assert_str_eq(answer(&n, "FirstBurstLength", "4294967808", false), "Reject");
	ck_assert_uint_eq(n.p.first_burst, 65536);
}
END_TEST

START_TEST(t11_numeric_syntax_fails_login)
{
	/* not a numerical-value at all: the login fails (initiator error) */
	static const char *const bad[][2] = {
		{ "DefaultTime2Retain", "abc" },
		{ "MaxBurstLength", "abc" },
		{ "MaxBurstLength", "99999999999999999999999" },
		{ "MaxOutstandingR2T", "1x" },
		{ "MaxConnections", "" },
		{ "DefaultTime2Wait", "02" },
		{ "FirstBurstLength", "-1" },
	};
	struct iscsi_neg n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fresh(&n);
		ck_assert_msg(strcmp(answer(&n, bad[i][0], bad[i][1], false), "ERR") == 0,
			      "%s=%s accepted", bad[i][0], bad[i][1]);
		ck_assert_uint_eq(n.p.max_burst, 262144);
	}
}
END_TEST

START_TEST(t05_booleans)
{
	struct iscsi_neg n;

	fresh(&n);
	/* OR with our No: the initiator's value */
	ck_assert_str_eq(answer(&n, "InitialR2T", "No", false), "No");
	ck_assert(!n.p.initial_r2t);
	/* AND with our Yes: the initiator's value */
	ck_assert_str_eq(answer(&n, "ImmediateData", "No", false), "No");
	ck_assert(!n.p.immediate_data);
	/* OR with our Yes: always Yes */
	ck_assert_str_eq(answer(&n, "DataPDUInOrder", "No", false), "Yes");
	ck_assert_str_eq(answer(&n, "DataSequenceInOrder", "No", false), "Yes");
	ck_assert(n.p.data_pdu_in_order && n.p.data_seq_in_order);
	ck_assert_str_eq(answer(&n, "IFMarker", "Yes", false), "No");
	ck_assert_str_eq(answer(&n, "OFMarker", "No", false), "No");
	ck_assert_str_eq(answer(&n, "IFMarkInt", "2048~8192", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "OFMarkInt", "2048", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "RDMAExtensions", "Yes", false), "No");

	fresh(&n);
	ck_assert_str_eq(answer(&n, "InitialR2T", "Yes", false), "Yes");
	ck_assert(n.p.initial_r2t);
	ck_assert_str_eq(answer(&n, "ImmediateData", "Yes", false), "Yes");
	ck_assert(n.p.immediate_data);
	/* only "Yes" and "No" are booleans: anything else fails the login */
	ck_assert_str_eq(answer(&n, "DataPDUInOrder", "yes", false), "ERR");
	ck_assert_str_eq(answer(&n, "DataSequenceInOrder", "1", false), "ERR");
	ck_assert_str_eq(answer(&n, "IFMarker", "Maybe", false), "ERR");
}
END_TEST

START_TEST(t06_mrdsl_declaration)
{
	struct iscsi_neg n;
	struct iscsi_textbuf b = { 0 };
	struct iscsi_kvlist l;

	fresh(&n);
	/* the initiator's declaration is what we may send; we declare ours */
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "65536", false), "262144");
	ck_assert_uint_eq(n.p.max_xmit_dsl, 65536);
	ck_assert_uint_eq(n.p.max_recv_dsl, 262144);
	ck_assert(n.declared_mrdsl);
	/* finish does not declare twice */
	iscsi_neg_finish(&n, &b);
	ck_assert_uint_eq(b.len, 0);
	iscsi_text_free(&b);

	/* not asked: finish declares */
	fresh(&n);
	iscsi_neg_finish(&n, &b);
	ck_assert_int_eq(iscsi_kv_parse(b.data, b.len, &l), 0);
	ck_assert_str_eq(iscsi_kv_get(&l, "MaxRecvDataSegmentLength"), "262144");
	iscsi_kv_free(&l);
	iscsi_text_free(&b);
	ck_assert_uint_eq(n.p.max_xmit_dsl, 8192);

	/* outside 512..2^24-1 or garbage fails the login (RFC 7143 13.12) */
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "16777215", false), "262144");
	ck_assert_uint_eq(n.p.max_xmit_dsl, 16777215);
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "16777216", false), "ERR");
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "99999999999", false), "ERR");
	ck_assert_uint_eq(n.p.max_xmit_dsl, 8192);
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "511", false), "ERR");
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "lots", false), "ERR");

	/* allowed in full feature phase: no new declaration needed */
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "8192", false), "262144");
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "131072", true), "");
	ck_assert_uint_eq(n.p.max_xmit_dsl, 131072);
	/* each Text negotiation is new: the same key again later is fine */
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", "65536", true), "");
	ck_assert_uint_eq(n.p.max_xmit_dsl, 65536);
}
END_TEST

START_TEST(t07_unknown_and_irrelevant)
{
	struct iscsi_neg n;

	fresh(&n);
	ck_assert_str_eq(answer(&n, "X-com.example.Foo", "1", false), "NotUnderstood");
	ck_assert_str_eq(answer(&n, "X#Bar", "1", false), "NotUnderstood");
	ck_assert_str_eq(answer(&n, "iSERHCAs", "x", false), "NotUnderstood");
	ck_assert_str_eq(answer(&n, "MadeUpKey", "1", false), "NotUnderstood");
	ck_assert_str_eq(answer(&n, "TaskReporting", "FastAbort,RFC3720", false), "RFC3720");

	/* discovery sessions: the data transfer keys do not apply */
	fresh(&n);
	n.type = ISCSI_SESSION_DISCOVERY;
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "InitialR2T", "No", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "ImmediateData", "No", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "MaxConnections", "1", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "TaskReporting", "RFC3720", false), "Irrelevant");
	ck_assert(n.p.initial_r2t);
	ck_assert_uint_eq(n.p.max_burst, 262144);
	ck_assert_str_eq(answer(&n, "HeaderDigest", "None", false), "None");
	ck_assert_str_eq(answer(&n, "DefaultTime2Wait", "5", false), "5");

	/* leading-only keys on a second connection */
	iscsi_neg_init(&n, &lim_default, false);
	n.type = ISCSI_SESSION_NORMAL;
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", false), "Irrelevant");
	ck_assert_str_eq(answer(&n, "HeaderDigest", "CRC32C", false), "CRC32C");

	/* caller-owned keys are ignored, target-only keys are an error */
	fresh(&n);
	ck_assert_str_eq(answer(&n, "InitiatorName", "iqn.2000-01.x:y", false), "");
	ck_assert_str_eq(answer(&n, "CHAP_A", "5", false), "");
	ck_assert_str_eq(answer(&n, "TargetPortalGroupTag", "1", false), "ERR");
	ck_assert_str_eq(answer(&n, "TargetAddress", "1.2.3.4", false), "ERR");
	ck_assert_str_eq(answer(&n, "SendTargets", "All", false), "ERR");
	ck_assert_str_eq(answer(&n, "SendTargets", "All", true), "");
}
END_TEST

START_TEST(t08_twice_and_ffp)
{
	struct iscsi_neg n;
	char longv[300];

	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", false), "65536");
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", false), "ERR");
	/* a rejected key still counts as negotiated */
	ck_assert_str_eq(answer(&n, "MaxOutstandingR2T", "0", false), "Reject");
	ck_assert_str_eq(answer(&n, "MaxOutstandingR2T", "1", false), "ERR");

	/* login-only keys cannot be renegotiated in full feature phase */
	fresh(&n);
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", true), "Reject");
	ck_assert_str_eq(answer(&n, "HeaderDigest", "None", true), "Reject");
	ck_assert_uint_eq(n.p.max_burst, 262144);

	/* over-long values */
	fresh(&n);
	memset(longv, '1', 256);
	longv[256] = '\0';
	ck_assert_str_eq(answer(&n, "MaxBurstLength", longv, false), "Reject");
	ck_assert_str_eq(answer(&n, "MaxRecvDataSegmentLength", longv, false), "ERR");
}
END_TEST

START_TEST(t09_finish_fixups)
{
	struct iscsi_neg n;
	struct iscsi_textbuf b = { 0 };

	fresh(&n);
	ck_assert_str_eq(answer(&n, "FirstBurstLength", "262144", false), "262144");
	ck_assert_str_eq(answer(&n, "MaxBurstLength", "65536", false), "65536");
	iscsi_neg_finish(&n, &b);
	ck_assert_uint_eq(n.p.first_burst, 65536);
	ck_assert_uint_eq(n.p.max_burst, 65536);
	ck_assert_int_eq(iscsi_neg_check(&n), 0);
	iscsi_text_free(&b);

	/* the invariant checker catches broken state */
	n.p.max_recv_dsl = 100;
	ck_assert_int_eq(iscsi_neg_check(&n), -EINVAL);
	fresh(&n);
	n.p.error_recovery_level = 3;
	ck_assert_int_eq(iscsi_neg_check(&n), -EINVAL);
	fresh(&n);
	n.seen = 1ull << 63;
	ck_assert_int_eq(iscsi_neg_check(&n), -EINVAL);
}
END_TEST

START_TEST(t10_libiscsi_login_set)
{
	/* the operational keys libiscsi sends, answered in one response */
	static const char req[] =
		"HeaderDigest=None,CRC32C\0DataDigest=None,CRC32C\0InitialR2T=Yes\0"
		"ImmediateData=Yes\0MaxBurstLength=262144\0FirstBurstLength=262144\0"
		"MaxRecvDataSegmentLength=262144\0DataPDUInOrder=Yes\0"
		"DataSequenceInOrder=Yes\0DefaultTime2Wait=2\0DefaultTime2Retain=0\0"
		"IFMarker=No\0OFMarker=No\0MaxConnections=1\0MaxOutstandingR2T=1\0"
		"ErrorRecoveryLevel=0\0";
	struct iscsi_kvlist l, a;
	struct iscsi_textbuf b = { 0 };
	struct iscsi_neg n;
	unsigned i;

	fresh(&n);
	ck_assert_int_eq(iscsi_kv_parse((const uint8_t *)req, sizeof(req) - 1, &l), 0);
	ck_assert_uint_eq(l.n, 16);
	for (i = 0; i < l.n; i++)
		ck_assert_int_eq(iscsi_neg_key(&n, l.kv[i].key, l.kv[i].value, false, &b), 0);
	iscsi_neg_finish(&n, &b);
	ck_assert_int_eq(b.error, 0);
	ck_assert_int_eq(iscsi_kv_parse(b.data, b.len, &a), 0);
	ck_assert_uint_eq(a.n, 16);   /* one answer each, MRDSL declared once */
	ck_assert_str_eq(iscsi_kv_get(&a, "HeaderDigest"), "None");
	ck_assert_str_eq(iscsi_kv_get(&a, "FirstBurstLength"), "262144");
	ck_assert_str_eq(iscsi_kv_get(&a, "MaxRecvDataSegmentLength"), "262144");
	ck_assert_str_eq(iscsi_kv_get(&a, "DefaultTime2Retain"), "0");
	ck_assert(n.p.immediate_data && n.p.initial_r2t);
	ck_assert_int_eq(iscsi_neg_check(&n), 0);
	iscsi_kv_free(&a);
	iscsi_kv_free(&l);
	iscsi_text_free(&b);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_defaults", t01_defaults),
		CK_CASE("02_digest_lists", t02_digest_lists),
		CK_CASE("03_numeric_min_max", t03_numeric_min_max),
		CK_CASE("04_numeric_bad_values_rejected", t04_numeric_bad_values_rejected),
		CK_CASE("05_booleans", t05_booleans),
		CK_CASE("06_mrdsl_declaration", t06_mrdsl_declaration),
		CK_CASE("07_unknown_and_irrelevant", t07_unknown_and_irrelevant),
		CK_CASE("08_twice_and_ffp", t08_twice_and_ffp),
		CK_CASE("09_finish_fixups", t09_finish_fixups),
		CK_CASE("10_libiscsi_login_set", t10_libiscsi_login_set),
		CK_CASE("11_numeric_syntax_fails_login", t11_numeric_syntax_fails_login),
	};

	return ck_main(&(struct ck_suite_def){ "neg", CK_CASES(cases) });
}
