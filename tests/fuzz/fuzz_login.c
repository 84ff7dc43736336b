/*
 * tests/fuzz/fuzz_login.c - login and text negotiation without a socket:
 * iscsi_kv_parse() of each request, iscsi_neg_key() for every operational
 * key (the way login.c and textreq.c call it), iscsi_chap_step() for CHAP
 * requests, iscsi_neg_finish() at the end.
 *
 * Input: byte 0 picks the situation (leading connection, discovery session,
 * full feature phase Text negotiation, digests allowed, mutual CHAP), bytes
 * 1..3 our MaxRecvDataSegmentLength limit; the rest is a sequence of
 * requests separated by 0xff bytes (0xff never occurs in a valid key list).
 *
 * Properties besides memory safety: iscsi_neg_check() holds after every
 * key, iscsi_chap_check() after every CHAP step, every response we build is
 * itself a well-formed key list with non-empty values that answers only
 * keys the initiator sent (plus our own declarations), and a value we
 * return for a numeric key stays within the limits we configured.
 */
#include <errno.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"
#include "target/iscsi/pdu.h"
#include "tests/fuzz/fuzz.h"

#define SEP 0xff

/* Keys the target says without being asked. */
static bool declared_by_us(const char *k)
{
	return !strcmp(k, "MaxRecvDataSegmentLength") || !strncmp(k, "CHAP_", 5);
}

static void check_response(const struct iscsi_textbuf *resp, const struct iscsi_kvlist *req,
			   const struct iscsi_neg *n)
{
	struct iscsi_kvlist out;
	unsigned i;

	FUZZ_CHECK(resp->error == 0);
	if (!resp->len)
		return;
	FUZZ_CHECK(resp->data[resp->len - 1] == '\0');
	FUZZ_CHECK(iscsi_kv_parse(resp->data, resp->len, &out) == 0);
	for (i = 0; i < out.n; i++) {
		const char *k = out.kv[i].key, *v = out.kv[i].value;
		uint64_t num;

		FUZZ_CHECK(v[0] != '\0');
		FUZZ_CHECK((req && iscsi_kv_get(req, k)) || declared_by_us(k));
		if (!strcmp(k, "MaxBurstLength") && !iscsi_text_parse_number(v, &num))
			FUZZ_CHECK(num <= n->lim.max_burst);
		if (!strcmp(k, "FirstBurstLength") && !iscsi_text_parse_number(v, &num))
			FUZZ_CHECK(num <= n->lim.first_burst);
		if (!strcmp(k, "MaxRecvDataSegmentLength"))
			FUZZ_CHECK(!iscsi_text_parse_number(v, &num) &&
				   num == n->lim.max_recv_dsl);
		if ((!strcmp(k, "HeaderDigest") || !strcmp(k, "DataDigest")) &&
		    !n->lim.allow_digests)
			FUZZ_CHECK(strcmp(v, "CRC32C") != 0);
	}
	iscsi_kv_free(&out);
}

static bool is_caller_key(const char *k)
{
	return !strcmp(k, "InitiatorName") || !strcmp(k, "InitiatorAlias") ||
	       !strcmp(k, "SessionType") || !strcmp(k, "TargetName") ||
	       !strcmp(k, "AuthMethod") || !strncmp(k, "CHAP_", 5) ||
	       !strncmp(k, "X-", 2) || !strncmp(k, "X#", 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iscsi_limits lim = {
		.max_burst = 16u << 20,
		.first_burst = 256u << 10,
		.max_outstanding_r2t = 1,
		.max_connections = 1,
	};
	struct iscsi_chap_creds cr = {
		.user = "user",
		.secret = "secret-of-16-bytes",
	};
	struct iscsi_chap chap;
	struct iscsi_neg n;
	bool ffp, chap_on, failed = false, finished = false;
	size_t off, end;

	if (size < 4)
		return 0;
	ffp = data[0] & 4;
	lim.allow_digests = data[0] & 8;
	if (data[0] & 16) {
		cr.mutual_user = "target";
		cr.mutual_secret = "other-secret-16b";
	}
	chap_on = data[0] & 32;
	lim.max_recv_dsl = conf_get_be24(data + 1);
	if (lim.max_recv_dsl < 512)
		lim.max_recv_dsl = 512;
	iscsi_neg_init(&n, &lim, data[0] & 1);
	n.type = (data[0] & 2) ? ISCSI_SESSION_DISCOVERY : ISCSI_SESSION_NORMAL;
	memset(&chap, 0, sizeof(chap));
	FUZZ_CHECK(iscsi_neg_check(&n) == 0);
	FUZZ_CHECK(iscsi_chap_check(&chap) == 0);

	for (off = 4; off <= size && !failed; off = end + 1) {
		struct iscsi_textbuf resp = { 0 };
		struct iscsi_kvlist req;
		bool has_chap = false;

		for (end = off; end < size && data[end] != SEP; end++)
			;
		if (iscsi_kv_parse(data + off, end - off, &req))
			continue;   /* login.c answers with an initiator error */
		for (unsigned i = 0; i < req.n && !failed; i++) {
			const char *k = req.kv[i].key, *v = req.kv[i].value;

			if (!strncmp(k, "CHAP_", 5))
				has_chap = true;
			if (is_caller_key(k))
				continue;
			if (iscsi_neg_key(&n, k, v, ffp, &resp) < 0)
				failed = true;
			FUZZ_CHECK(iscsi_neg_check(&n) == 0);
		}
		if (!failed && chap_on && has_chap) {
			int r = iscsi_chap_step(&chap, &cr, &req, &resp);

			FUZZ_CHECK(r == 0 || r == 1 || r == -EACCES || r == -EINVAL);
			FUZZ_CHECK(iscsi_chap_check(&chap) == 0);
			if (r < 0)
				failed = true;
		}
		if (!failed && !ffp && end >= size) {
			iscsi_neg_finish(&n, &resp);
			finished = true;
		}
		FUZZ_CHECK(iscsi_neg_check(&n) == 0);
		if (!failed)
			check_response(&resp, &req, &n);
		iscsi_text_free(&resp);
		iscsi_kv_free(&req);
	}
	if (finished)
		FUZZ_CHECK(n.p.first_burst <= n.p.max_burst);
	return 0;
}
