/*
 * target/iscsi/neg.c - operational key negotiation, RFC 7143 sections 6.2
 * (text mode negotiation) and 13 (the keys).
 *
 * The target is always the acceptor here: the initiator proposes, we answer
 * each key once with the negotiated value, "Irrelevant", "NotUnderstood" or
 * "Reject". The only thing the target says unasked is its own
 * MaxRecvDataSegmentLength declaration.
 *
 * State machine (per login, in struct iscsi_neg):
 *
 *   per key in keys[]:   UNSEEN --iscsi_neg_key()--> ANSWERED (bit in n->seen)
 *                        ANSWERED --iscsi_neg_key()--> error -EINVAL
 *                        (RFC 7143 6.3: renegotiating a key within one login
 *                        is an initiator error; in full feature phase the
 *                        mask is neither checked nor updated, each Text
 *                        negotiation being a new one)
 *   MRDSL declaration:   UNDECLARED --iscsi_neg_key(MaxRecvDataSegmentLength)
 *                        or iscsi_neg_finish()--> DECLARED (n->declared_mrdsl)
 *
 * Invariants (iscsi_neg_check): every value in n->p lies in its RFC range;
 * n->seen only has bits of known keys; DECLARED implies
 * p.max_recv_dsl == lim.max_recv_dsl.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"), its key rules. May call: text.c, conf/.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"

#define MAX_DSL_LIMIT  16777215u   /* 2^24 - 1, RFC 7143 13.12-13.14 */
#define MIN_DSL_LIMIT  512u
#define MAX_VALUE_LEN  255         /* RFC 7143 6.1, unless a key says otherwise */

/* What the target prefers where the limits have no say. */
#define OUR_TIME2WAIT      2
#define OUR_TIME2RETAIN    20
#define OUR_PROTOCOL_LEVEL 1       /* RFC 7144: 1 = RFC 7143 */

enum key_kind {
	K_DIGEST,       /* list: None, CRC32C */
	K_MIN,          /* numerical, result Minimum */
	K_MAX,          /* numerical, result Maximum */
	K_OR,           /* boolean, result OR */
	K_AND,          /* boolean, result AND */
	K_MRDSL,        /* declarative MaxRecvDataSegmentLength */
	K_MARKER,       /* IFMarker/OFMarker: boolean AND, we never use markers */
	K_MARKINT,      /* IFMarkInt/OFMarkInt: irrelevant without markers */
	K_TASKREP,      /* TaskReporting list: only RFC3720 */
	K_NO,           /* boolean AND where we always say No (RDMAExtensions) */
};

enum key_use {
	USE_IO,         /* login only, any connection */
	USE_LO,         /* login only, leading connection */
	USE_ALL,        /* login and full feature phase */
};

enum our_value {
	OUR_NONE,
	OUR_CONST,
	OUR_MAX_CONN,
	OUR_MAX_BURST,
	OUR_FIRST_BURST,
	OUR_MAX_R2T,
};

struct keydef {
	const char *name;
	enum key_kind kind;
	enum key_use use;
	bool irrelevant_discovery;
	uint64_t min, max;          /* numerical range */
	enum our_value our;
	uint64_t our_const;         /* OUR_CONST, or the boolean for K_OR/K_AND */
	size_t off;                 /* field in struct iscsi_params, or SIZE_MAX */
};

#define P(f) offsetof(struct iscsi_params, f)
#define NOFIELD SIZE_MAX

static const struct keydef keys[] = {
	{ "HeaderDigest", K_DIGEST, USE_IO, false, 0, 0, OUR_NONE, 0, P(header_digest) },
	{ "DataDigest", K_DIGEST, USE_IO, false, 0, 0, OUR_NONE, 0, P(data_digest) },
	{ "MaxConnections", K_MIN, USE_LO, true, 1, 65535, OUR_MAX_CONN, 0, P(max_connections) },
	{ "InitialR2T", K_OR, USE_LO, true, 0, 0, OUR_CONST, 0, P(initial_r2t) },
	{ "ImmediateData", K_AND, USE_LO, true, 0, 0, OUR_CONST, 1, P(immediate_data) },
	{ "MaxRecvDataSegmentLength", K_MRDSL, USE_ALL, false, MIN_DSL_LIMIT, MAX_DSL_LIMIT,
	  OUR_NONE, 0, P(max_xmit_dsl) },
	{ "MaxBurstLength", K_MIN, USE_LO, true, MIN_DSL_LIMIT, MAX_DSL_LIMIT, OUR_MAX_BURST, 0,
	  P(max_burst) },
	{ "FirstBurstLength", K_MIN, USE_LO, true, MIN_DSL_LIMIT, MAX_DSL_LIMIT, OUR_FIRST_BURST,
	  0, P(first_burst) },
	{ "DefaultTime2Wait", K_MAX, USE_LO, false, 0, 3600, OUR_CONST, OUR_TIME2WAIT,
	  P(default_time2wait) },
	{ "DefaultTime2Retain", K_MIN, USE_LO, false, 0, 3600, OUR_CONST, OUR_TIME2RETAIN,
	  P(default_time2retain) },
	{ "MaxOutstandingR2T", K_MIN, USE_LO, true, 1, 65535, OUR_MAX_R2T, 0,
	  P(max_outstanding_r2t) },
	{ "DataPDUInOrder", K_OR, USE_LO, true, 0, 0, OUR_CONST, 1, P(data_pdu_in_order) },
	{ "DataSequenceInOrder", K_OR, USE_LO, true, 0, 0, OUR_CONST, 1, P(data_seq_in_order) },
	{ "ErrorRecoveryLevel", K_MIN, USE_LO, false, 0, 2, OUR_CONST, 0,
	  P(error_recovery_level) },
	{ "IFMarker", K_MARKER, USE_IO, false, 0, 0, OUR_NONE, 0, NOFIELD },
	{ "OFMarker", K_MARKER, USE_IO, false, 0, 0, OUR_NONE, 0, NOFIELD },
	{ "IFMarkInt", K_MARKINT, USE_IO, false, 0, 0, OUR_NONE, 0, NOFIELD },
	{ "OFMarkInt", K_MARKINT, USE_IO, false, 0, 0, OUR_NONE, 0, NOFIELD },
	{ "TaskReporting", K_TASKREP, USE_LO, true, 0, 0, OUR_NONE, 0, NOFIELD },
	{ "iSCSIProtocolLevel", K_MIN, USE_LO, false, 0, 31, OUR_CONST, OUR_PROTOCOL_LEVEL,
	  NOFIELD },
	{ "RDMAExtensions", K_NO, USE_LO, false, 0, 0, OUR_NONE, 0, NOFIELD },
};
_Static_assert(sizeof(keys) / sizeof(keys[0]) <= 64, "n->seen is a 64-bit mask");

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* Keys the login/text code deals with itself (security stage, names, the
 * session type). Passing one here is harmless: it is ignored. */
static const char *const caller_keys[] = {
	"AuthMethod", "CHAP_A", "CHAP_I", "CHAP_C", "CHAP_N", "CHAP_R",
	"InitiatorName", "TargetName", "SessionType", "InitiatorAlias",
};

/* Keys only a target may send. */
static const char *const target_only_keys[] = {
	"TargetAlias", "TargetAddress", "TargetPortalGroupTag",
};

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi, uint32_t dflt)
{
	if (v == 0)
		return dflt;
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return v;
}

void iscsi_params_default(struct iscsi_params *p)
{
	memset(p, 0, sizeof(*p));
	p->header_digest = false;
	p->data_digest = false;
	p->max_connections = 1;
	p->initial_r2t = true;
	p->immediate_data = true;
	p->max_recv_dsl = 8192;
	p->max_xmit_dsl = 8192;
	p->max_burst = 262144;
	p->first_burst = 65536;
	p->default_time2wait = 2;
	p->default_time2retain = 20;
	p->max_outstanding_r2t = 1;
	p->data_pdu_in_order = true;
	p->data_seq_in_order = true;
	p->error_recovery_level = 0;
}

void iscsi_neg_init(struct iscsi_neg *n, const struct iscsi_limits *lim, bool leading)
{
	memset(n, 0, sizeof(*n));
	iscsi_params_default(&n->p);
	if (lim)
		n->lim = *lim;
	/* Zero means "use the RFC default"; everything is clamped to what the
	 * RFC allows so that what we declare is always legal. */
	n->lim.max_recv_dsl = clamp_u32(n->lim.max_recv_dsl, MIN_DSL_LIMIT, MAX_DSL_LIMIT, 8192);
	n->lim.max_burst = clamp_u32(n->lim.max_burst, MIN_DSL_LIMIT, MAX_DSL_LIMIT, 262144);
	n->lim.first_burst = clamp_u32(n->lim.first_burst, MIN_DSL_LIMIT, MAX_DSL_LIMIT, 65536);
	n->lim.max_outstanding_r2t = clamp_u32(n->lim.max_outstanding_r2t, 1, 65535, 1);
	n->lim.max_connections = clamp_u32(n->lim.max_connections, 1, 65535, 1);
	n->type = ISCSI_SESSION_NONE;
	n->leading = leading;
}

static void set_field(struct iscsi_neg *n, const struct keydef *k, uint64_t v)
{
	char *base = (char *)&n->p;

	if (k->off == NOFIELD)
		return;
	if (k->kind == K_DIGEST || k->kind == K_OR || k->kind == K_AND)
		*(bool *)(base + k->off) = v != 0;
	else
		*(uint32_t *)(base + k->off) = (uint32_t)v;
}

static uint64_t our_value(const struct iscsi_neg *n, const struct keydef *k)
{
	switch (k->our) {
	case OUR_MAX_CONN:
		return n->lim.max_connections;
	case OUR_MAX_BURST:
		return n->lim.max_burst;
	case OUR_FIRST_BURST:
		return n->lim.first_burst;
	case OUR_MAX_R2T:
		return n->lim.max_outstanding_r2t;
	case OUR_CONST:
	case OUR_NONE:
		break;
	}
	return k->our_const;
}

/* "Yes" -> 1, "No" -> 0, anything else (case matters, RFC 7143 6.1) -> -1 */
static int parse_bool(const char *v)
{
	if (strcmp(v, "Yes") == 0)
		return 1;
	if (strcmp(v, "No") == 0)
		return 0;
	return -1;
}

/* The first value of the comma-separated @list that is one of @accept
 * (returned as the @accept string), or NULL. Values we do not know are
 * skipped, as RFC 7143 6.2.1 asks. */
static const char *list_first(const char *list, const char *const *accept, unsigned naccept)
{
	const char *p = list;

	for (;;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		unsigned i;

		for (i = 0; i < naccept; i++)
			if (l == strlen(accept[i]) && strncmp(p, accept[i], l) == 0)
				return accept[i];
		if (!e)
			return NULL;
		p = e + 1;
	}
}

static int neg_digest(struct iscsi_neg *n, const struct keydef *k, const char *value,
		      struct iscsi_textbuf *resp)
{
	static const char *const with_crc[] = { "None", "CRC32C" };
	const char *hit = list_first(value, with_crc, n->lim.allow_digests ? 2 : 1);

	/* The first value of the initiator's list that we support wins. */
	if (!hit) {
		iscsi_text_add(resp, k->name, "Reject");
		return 0;
	}
	set_field(n, k, strcmp(hit, "CRC32C") == 0);
	iscsi_text_add(resp, k->name, hit);
	return 0;
}

static int neg_numeric(struct iscsi_neg *n, const struct keydef *k, const char *value,
		       struct iscsi_textbuf *resp)
{
	uint64_t v, ours, res;

	/* Syntax is not negotiable: a value that is not a numerical-value
	 * at all (RFC 7143 6.1) shows a broken initiator and fails the login
	 * (initiator error). A well-formed value outside the key's range is
	 * only not acceptable to us: answered Reject (6.2), the default stays. */
	if (iscsi_text_parse_number(value, &v) < 0)
		return -EINVAL;
	if (v < k->min || v > k->max) {
		iscsi_text_add(resp, k->name, "Reject");
		return 0;
	}
	ours = our_value(n, k);
	if (k->kind == K_MIN)
		res = v < ours ? v : ours;
	else
		res = v > ours ? v : ours;
	set_field(n, k, res);
	iscsi_text_addf(resp, k->name, "%llu", (unsigned long long)res);
	return 0;
}

static int neg_bool(struct iscsi_neg *n, const struct keydef *k, const char *value,
		    struct iscsi_textbuf *resp)
{
	int v = parse_bool(value);
	bool res;

	/* Only "Yes" and "No" are boolean-values (RFC 7143 6.1): anything
	 * else is a syntax error, which fails the login like a bad number. */
	if (v < 0)
		return -EINVAL;
	switch (k->kind) {
	case K_OR:
		res = v || k->our_const;
		break;
	case K_AND:
		res = v && k->our_const;
		break;
	default:        /* K_MARKER, K_NO: AND with our "No" */
		res = false;
		break;
	}
	set_field(n, k, res);
	iscsi_text_add(resp, k->name, res ? "Yes" : "No");
	return 0;
}

static void declare_mrdsl(struct iscsi_neg *n, struct iscsi_textbuf *resp)
{
	if (n->declared_mrdsl)
		return;
	n->p.max_recv_dsl = n->lim.max_recv_dsl;
	n->declared_mrdsl = true;
	iscsi_text_addf(resp, "MaxRecvDataSegmentLength", "%u", n->lim.max_recv_dsl);
}

static int neg_mrdsl(struct iscsi_neg *n, const struct keydef *k, const char *value,
		     struct iscsi_textbuf *resp)
{
	uint64_t v;

	/* A declaration cannot be answered with Reject (RFC 7143 6.2); a
	 * value outside 512..2^24-1 (13.12) means the initiator is broken, and
	 * the login fails with an initiator error. */
	if (iscsi_text_parse_number(value, &v) < 0 || v < MIN_DSL_LIMIT || v > MAX_DSL_LIMIT)
		return -EINVAL;
	set_field(n, k, v);
	declare_mrdsl(n, resp);
	return 0;
}

static bool in_list(const char *const *list, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], key) == 0)
			return true;
	return false;
}

int iscsi_neg_key(struct iscsi_neg *n, const char *key, const char *value, bool ffp,
		  struct iscsi_textbuf *resp)
{
	const struct keydef *k = NULL;
	unsigned i;

	if (!key || !value || !*key)
		return -EINVAL;
	if (in_list(caller_keys, sizeof(caller_keys) / sizeof(caller_keys[0]), key))
		return 0;
	if (strcmp(key, "SendTargets") == 0)
		return ffp ? 0 : -EINVAL;   /* only a Text request may ask */
	if (in_list(target_only_keys, sizeof(target_only_keys) / sizeof(target_only_keys[0]),
		    key))
		return -EINVAL;
	for (i = 0; i < NKEYS; i++) {
		if (strcmp(keys[i].name, key) == 0) {
			k = &keys[i];
			break;
		}
	}
	if (!k) {
		/* Unknown keys, X- and X# extensions, iSER keys... */
		iscsi_text_add(resp, key, "NotUnderstood");
		return 0;
	}
	/* Within a login a key is negotiated once. In full feature phase
	 * every Text negotiation starts afresh (a repeat inside one request
	 * is already refused by iscsi_kv_parse), so the mask is not used. */
	if (!ffp) {
		if (n->seen & (1ull << i))
			return -EINVAL;
		n->seen |= 1ull << i;
	}

	if (ffp && k->use != USE_ALL) {
		/* IO/LO keys are fixed once the login is over. */
		iscsi_text_add(resp, key, "Reject");
		return 0;
	}
	if (k->use == USE_LO && !n->leading) {
		/* The session's values were set on its leading connection;
		 * this connection's offer has no effect. */
		iscsi_text_add(resp, key, "Irrelevant");
		return 0;
	}
	if (k->irrelevant_discovery && n->type == ISCSI_SESSION_DISCOVERY) {
		iscsi_text_add(resp, key, "Irrelevant");
		return 0;
	}
	if (strlen(value) > MAX_VALUE_LEN) {
		if (k->kind == K_MRDSL)
			return -EINVAL;
		iscsi_text_add(resp, key, "Reject");
		return 0;
	}

	switch (k->kind) {
	case K_DIGEST:
		return neg_digest(n, k, value, resp);
	case K_MIN:
	case K_MAX:
		return neg_numeric(n, k, value, resp);
	case K_OR:
	case K_AND:
	case K_MARKER:
	case K_NO:
		return neg_bool(n, k, value, resp);
	case K_MRDSL:
		return neg_mrdsl(n, k, value, resp);
	case K_MARKINT:
		iscsi_text_add(resp, key, "Irrelevant");
		return 0;
	case K_TASKREP: {
		static const char *const ours[] = { "RFC3720" };
		const char *hit = list_first(value, ours, 1);

		iscsi_text_add(resp, key, hit ? hit : "Reject");
		return 0;
	}
	}
	return -EINVAL;
}

void iscsi_neg_finish(struct iscsi_neg *n, struct iscsi_textbuf *resp)
{
	declare_mrdsl(n, resp);
	/* RFC 7143 13.14: FirstBurstLength MUST NOT exceed MaxBurstLength;
	 * an initiator that offered them in that order only gets the smaller. */
	if (n->p.first_burst > n->p.max_burst)
		n->p.first_burst = n->p.max_burst;
}

int iscsi_neg_check(const struct iscsi_neg *n)
{
	const struct iscsi_params *p = &n->p;

	if (NKEYS < 64 && (n->seen >> NKEYS) != 0)
		return -EINVAL;
	if (p->max_recv_dsl < MIN_DSL_LIMIT || p->max_recv_dsl > MAX_DSL_LIMIT ||
	    p->max_xmit_dsl < MIN_DSL_LIMIT || p->max_xmit_dsl > MAX_DSL_LIMIT ||
	    p->max_burst < MIN_DSL_LIMIT || p->max_burst > MAX_DSL_LIMIT ||
	    p->first_burst < MIN_DSL_LIMIT || p->first_burst > MAX_DSL_LIMIT)
		return -EINVAL;
	if (p->max_connections < 1 || p->max_connections > 65535 ||
	    p->max_outstanding_r2t < 1 || p->max_outstanding_r2t > 65535 ||
	    p->default_time2wait > 3600 || p->default_time2retain > 3600 ||
	    p->error_recovery_level > 2)
		return -EINVAL;
	if (n->declared_mrdsl && p->max_recv_dsl != n->lim.max_recv_dsl)
		return -EINVAL;
	if (p->data_digest && !n->lim.allow_digests)
		return -EINVAL;
	if (p->header_digest && !n->lim.allow_digests)
		return -EINVAL;
	return 0;
}
