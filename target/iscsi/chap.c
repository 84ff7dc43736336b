/*
 * target/iscsi/chap.c - CHAP authentication in the login security stage
 * (RFC 1994, with the iSCSI key encodings of RFC 7143 section 12.1.3).
 * MD5 (CHAP_A=5) is the only algorithm; digests come from libcrypto.
 *
 * State machine (c->state; a zeroed struct is START):
 *
 *   START      --iscsi_chap_step(req without CHAP keys)--> START (returns 1,
 *                nothing sent: AuthMethod was just agreed, CHAP_A follows)
 *   START      --iscsi_chap_step(CHAP_A with 5)--> CHALLENGED (returns 1,
 *                sends CHAP_A=5, CHAP_I, CHAP_C)
 *   CHALLENGED --iscsi_chap_step(CHAP_N + good CHAP_R [+ CHAP_I/CHAP_C])-->
 *                DONE (returns 0; sends CHAP_N/CHAP_R when the initiator
 *                asked for mutual authentication)
 *   any        --iscsi_chap_step(anything wrong)--> FAILED (sticky; every
 *                later step fails as well)
 *   DONE       --iscsi_chap_step()--> FAILED (-EINVAL: CHAP is over)
 *
 * Invariants (iscsi_chap_check): state is one of the above; mutual_done
 * only in DONE.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"), its key rules. May call: text.c, conf/, libcrypto.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "target/iscsi/iscsi_text.h"

enum chap_state {
	CHAP_START = 0,
	CHAP_CHALLENGED,
	CHAP_DONE,
	CHAP_FAILED,
};

#define CHAP_MD5            5
#define MD5_LEN             16
/* A challenge shorter than the digest makes responses easy to precompute;
 * the upper bound is RFC 7143's limit for binary values in CHAP. */
#define MIN_PEER_CHALLENGE  16
#define MAX_PEER_CHALLENGE  1024

static int fill_random(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

/* RFC 1994: response = MD5(identifier || secret || challenge). */
static int chap_md5(uint8_t id, const char *secret, const uint8_t *chal, size_t chal_len,
		    uint8_t out[MD5_LEN])
{
	EVP_MD_CTX *ctx;
	unsigned int olen = 0;
	int ret = -EIO;

	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, &id, 1) != 1 ||
	    EVP_DigestUpdate(ctx, secret, strlen(secret)) != 1 ||
	    EVP_DigestUpdate(ctx, chal, chal_len) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &olen) != 1 || olen != MD5_LEN)
		goto free_ctx;
	ret = 0;
free_ctx:
	EVP_MD_CTX_free(ctx);
	return ret;
}

static bool has_chap_keys(const struct iscsi_kvlist *req)
{
	unsigned i;

	for (i = 0; i < req->n; i++)
		if (strncmp(req->kv[i].key, "CHAP_", 5) == 0)
			return true;
	return false;
}

/* Whether the comma-separated CHAP_A list offers MD5. */
static int offers_md5(const char *list)
{
	const char *p = list;
	int found = 0;

	/* The whole list is read so that a malformed one is refused even
	 * when MD5 comes first. */
	for (;;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		char one[24];
		uint64_t v;

		if (l == 0 || l >= sizeof(one))
			return -EINVAL;
		memcpy(one, p, l);
		one[l] = '\0';
		/* Unknown algorithm values are not errors: only none of them
		 * being MD5 is. */
		if (iscsi_text_parse_number(one, &v) == 0 && v == CHAP_MD5)
			found = 1;
		if (!e)
			return found;
		p = e + 1;
	}
}

static int step_start(struct iscsi_chap *c, const struct iscsi_kvlist *req,
		      struct iscsi_textbuf *resp)
{
	const char *a = iscsi_kv_get(req, "CHAP_A");
	char hex[2 * sizeof(c->challenge) + 3];
	uint8_t rnd[1 + sizeof(c->challenge)];
	int r;

	if (!a)
		return -EINVAL;
	if (iscsi_kv_get(req, "CHAP_N") || iscsi_kv_get(req, "CHAP_R"))
		return -EINVAL;
	r = offers_md5(a);
	if (r < 0)
		return r;
	if (r == 0) {
		/* RFC 7143 12.1.3: no acceptable algorithm -> Reject, and the
		 * login fails as an authentication failure. */
		iscsi_text_add(resp, "CHAP_A", "Reject");
		return -EACCES;
	}
	r = fill_random(rnd, sizeof(rnd));
	if (r < 0)
		return r;
	c->id = rnd[0];
	memcpy(c->challenge, rnd + 1, sizeof(c->challenge));
	iscsi_text_encode_hex(c->challenge, sizeof(c->challenge), hex, sizeof(hex));
	iscsi_text_addf(resp, "CHAP_A", "%d", CHAP_MD5);
	iscsi_text_addf(resp, "CHAP_I", "%u", c->id);
	iscsi_text_add(resp, "CHAP_C", hex);
	if (resp->error)
		return resp->error;
	c->state = CHAP_CHALLENGED;
	return 1;
}

static int step_mutual(struct iscsi_chap *c, const struct iscsi_chap_creds *cr,
		       const char *si, const char *sc, struct iscsi_textbuf *resp)
{
	uint8_t chal[MAX_PEER_CHALLENGE], digest[MD5_LEN];
	char hex[2 * MD5_LEN + 3];
	size_t clen;
	uint64_t id;
	int r;

	if (!si || !sc)
		return -EINVAL;       /* one without the other */
	if (iscsi_text_parse_number(si, &id) < 0 || id > 255)
		return -EINVAL;
	if (iscsi_text_decode_binary(sc, chal, sizeof(chal), &clen) < 0)
		return -EINVAL;
	if (!cr->mutual_user || !cr->mutual_secret)
		return -EACCES;       /* we have nothing to prove ourselves with */
	if (clen < MIN_PEER_CHALLENGE)
		return -EACCES;
	/* Reflection: an initiator handing our own challenge back would get
	 * from us the answer it needs for its own response. */
	if (clen == sizeof(c->challenge) && memcmp(chal, c->challenge, clen) == 0)
		return -EACCES;
	r = chap_md5((uint8_t)id, cr->mutual_secret, chal, clen, digest);
	if (r < 0)
		return r;
	iscsi_text_encode_hex(digest, sizeof(digest), hex, sizeof(hex));
	iscsi_text_add(resp, "CHAP_N", cr->mutual_user);
	iscsi_text_add(resp, "CHAP_R", hex);
	if (resp->error)
		return resp->error;
	c->mutual_done = true;
	return 0;
}

static int step_response(struct iscsi_chap *c, const struct iscsi_chap_creds *cr,
			 const struct iscsi_kvlist *req, struct iscsi_textbuf *resp)
{
	const char *n = iscsi_kv_get(req, "CHAP_N");
	const char *rv = iscsi_kv_get(req, "CHAP_R");
	const char *si = iscsi_kv_get(req, "CHAP_I");
	const char *sc = iscsi_kv_get(req, "CHAP_C");
	uint8_t got[64], want[MD5_LEN];
	size_t glen;
	int r, bad;

	if (!n || !rv || iscsi_kv_get(req, "CHAP_A"))
		return -EINVAL;
	if (iscsi_text_decode_binary(rv, got, sizeof(got), &glen) < 0)
		return -EINVAL;
	if (!cr->user || !cr->secret)
		return -EACCES;
	r = chap_md5(c->id, cr->secret, c->challenge, sizeof(c->challenge), want);
	if (r < 0)
		return r;
	/* Always compare the digest, so that a wrong user name and a wrong
	 * secret take the same time. */
	bad = glen != MD5_LEN;
	bad |= CRYPTO_memcmp(got, want, MD5_LEN) != 0;
	bad |= strcmp(n, cr->user) != 0;
	if (bad)
		return -EACCES;
	if (si || sc) {
		r = step_mutual(c, cr, si, sc, resp);
		if (r < 0)
			return r;
	}
	c->state = CHAP_DONE;
	return 0;
}

int iscsi_chap_step(struct iscsi_chap *c, const struct iscsi_chap_creds *cr,
		    const struct iscsi_kvlist *req, struct iscsi_textbuf *resp)
{
	int r;

	switch (c->state) {
	case CHAP_START:
		if (!has_chap_keys(req))
			return 1;
		r = step_start(c, req, resp);
		break;
	case CHAP_CHALLENGED:
		r = step_response(c, cr, req, resp);
		break;
	case CHAP_DONE:
	case CHAP_FAILED:
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0) {
		c->state = CHAP_FAILED;
		c->mutual_done = false;
		/* No secret-derived state should outlive a failure. */
		OPENSSL_cleanse(c->challenge, sizeof(c->challenge));
	}
	return r;
}

int iscsi_chap_check(const struct iscsi_chap *c)
{
	if (c->state < CHAP_START || c->state > CHAP_FAILED)
		return -EINVAL;
	if (c->mutual_done && c->state != CHAP_DONE)
		return -EINVAL;
	return 0;
}
