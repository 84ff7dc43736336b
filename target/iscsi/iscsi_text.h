/*
 * target/iscsi/iscsi_text.h - login and text negotiation without I/O
 * (private to target/iscsi): key=value parsing and building, the negotiation
 * rules of RFC 7143 section 13 for every operational key, CHAP (RFC 1994 with
 * the iSCSI encodings of RFC 7143 section 12.1.3) and SendTargets answers.
 *
 * The connection code (conn.c, login.c) owns PDUs and state; it hands the
 * text of a whole login/text request (continuations already joined) to these
 * functions and sends what they build.
 */
#ifndef RTGT_ISCSI_TEXT_H
#define RTGT_ISCSI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target/scsi/iscsi_name.h"

/* ---- key=value lists ("k=v\0k=v\0...") ---- */

struct iscsi_kv {
	char *key;                 /* points into the list's own copy */
	char *value;
};

struct iscsi_kvlist {
	struct iscsi_kv *kv;       /* owned */
	unsigned n;
	char *text;                /* owned copy of the data segment */
};

/* Parses a data segment. Returns 0, or -EINVAL when it is malformed (a pair
 * without '=', an empty or over-long key (> 63 bytes), a value over 8192
 * bytes, a key given twice); -ENOMEM. */
int iscsi_kv_parse(const uint8_t *data, size_t len, struct iscsi_kvlist *out);
void iscsi_kv_free(struct iscsi_kvlist *l);
const char *iscsi_kv_get(const struct iscsi_kvlist *l, const char *key);

/* A growable output buffer of "k=v\0" pairs. */
struct iscsi_textbuf {
	uint8_t *data;             /* owned, NULL when empty */
	size_t len, cap;
	int error;                 /* sticky -ENOMEM */
};

void iscsi_text_add(struct iscsi_textbuf *b, const char *key, const char *value);
void iscsi_text_addf(struct iscsi_textbuf *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void iscsi_text_free(struct iscsi_textbuf *b);

/* ---- operational parameters ---- */

enum iscsi_session_type {
	ISCSI_SESSION_NONE,        /* not declared yet */
	ISCSI_SESSION_NORMAL,
	ISCSI_SESSION_DISCOVERY,
};

/* Session-wide and connection-wide values after negotiation. */
struct iscsi_params {
	bool header_digest;         /* CRC32C */
	bool data_digest;
	uint32_t max_connections;
	bool initial_r2t;
	bool immediate_data;
	uint32_t max_recv_dsl;      /* what the target accepts (we declare it) */
	uint32_t max_xmit_dsl;      /* what the initiator accepts (it declared) */
	uint32_t max_burst;
	uint32_t first_burst;
	uint32_t default_time2wait;
	uint32_t default_time2retain;
	uint32_t max_outstanding_r2t;
	bool data_pdu_in_order;
	bool data_seq_in_order;
	uint32_t error_recovery_level;
};

/* The target's offers/limits (from configuration). */
struct iscsi_limits {
	uint32_t max_recv_dsl;      /* declared to the initiator, e.g. 256 KiB */
	uint32_t max_burst;         /* upper bound we accept, e.g. 16 MiB */
	uint32_t first_burst;       /* upper bound we accept, e.g. 256 KiB */
	uint32_t max_outstanding_r2t;
	bool allow_digests;         /* whether CRC32C may be chosen */
	/* Added by neg.c's author: upper bound for MaxConnections; 0 means 1
	 * (no multiple connections per session). */
	uint32_t max_connections;
};

/* RFC 7143 defaults. */
void iscsi_params_default(struct iscsi_params *p);

struct iscsi_neg {
	struct iscsi_params p;
	struct iscsi_limits lim;
	enum iscsi_session_type type;
	bool leading;               /* first connection of the session */
	/* keys already answered in this login (to refuse renegotiation) */
	uint64_t seen;
	/* the target declared MaxRecvDataSegmentLength already */
	bool declared_mrdsl;
};

void iscsi_neg_init(struct iscsi_neg *n, const struct iscsi_limits *lim, bool leading);

/*
 * Negotiate one operational key received in the login phase (or a Text
 * request in full feature phase when @ffp). Appends the answer to @resp (the
 * negotiated value, "Irrelevant", "NotUnderstood" or "Reject") and updates
 * n->p. Returns 0, or -EINVAL when the key or value is so bad the login must
 * fail with "initiator error" (e.g. a non-negotiable key with an out-of-range
 * value, or a key given twice in one login).
 * Security keys (AuthMethod, CHAP_*), InitiatorName, TargetName, SessionType,
 * InitiatorAlias and X- / X# keys are the caller's to handle beforehand.
 */
int iscsi_neg_key(struct iscsi_neg *n, const char *key, const char *value, bool ffp,
		  struct iscsi_textbuf *resp);

/* After the last operational login request: add the keys the target must
 * declare even if not asked (MaxRecvDataSegmentLength), and fix up derived
 * values (FirstBurstLength <= MaxBurstLength). */
void iscsi_neg_finish(struct iscsi_neg *n, struct iscsi_textbuf *resp);

/* ---- CHAP ---- */

struct iscsi_chap {
	int state;                  /* private */
	uint8_t id;
	uint8_t challenge[16];
	bool mutual_done;
};

struct iscsi_chap_creds {
	const char *user, *secret;                /* the initiator must prove these */
	const char *mutual_user, *mutual_secret;  /* NULL: no mutual CHAP */
};

/*
 * One step of CHAP in the security stage. @req: keys of the request.
 *   returns 1  more steps needed (challenge sent in @resp)
 *           0  authenticated (mutual response, if asked, in @resp)
 *          -EACCES authentication failed (login status 0x0201)
 *          -EINVAL protocol error (0x0200)
 */
int iscsi_chap_step(struct iscsi_chap *c, const struct iscsi_chap_creds *cr,
		    const struct iscsi_kvlist *req, struct iscsi_textbuf *resp);

/* Checks the invariants of a negotiation (values within their RFC ranges,
 * the declared MaxRecvDataSegmentLength equal to the limit). Returns 0 or
 * -EINVAL; meant for assert(). */
int iscsi_neg_check(const struct iscsi_neg *n);

/* Whether the CHAP exchange state is consistent; 0 or -EINVAL. A zeroed
 * struct iscsi_chap is a valid start state. */
int iscsi_chap_check(const struct iscsi_chap *c);

/* ---- helpers ---- */

/* RFC 7143 6.1 numerical-value: a decimal-constant (no leading zeros) or a
 * 0x/0X hex-constant below 2^64. Returns 0 or -EINVAL. */
int iscsi_text_parse_number(const char *s, uint64_t *out);

/* RFC 7143 6.1 binary-value: "0x" hex (an odd digit count gives a leading
 * half byte) or "0b" base64 (RFC 4648, padded). Writes at most @max bytes.
 * Returns 0, or -EINVAL when malformed or longer than @max. */
int iscsi_text_decode_binary(const char *s, uint8_t *out, size_t max, size_t *len);

/* "0x" followed by 2*n lower-case hex digits; @outsz >= 2*n + 3, else
 * -ENOSPC. */
int iscsi_text_encode_hex(const uint8_t *in, size_t n, char *out, size_t outsz);

/* iSCSI names (ISCSI_NAME_MAX, iscsi_name_valid(), iscsi_name_ok()) live in
 * target/scsi/iscsi_name.h: the TransportIDs of a reservation carry them too. */

#endif
