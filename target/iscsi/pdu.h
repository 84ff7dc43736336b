/*
 * target/iscsi/pdu.h - iSCSI wire format (RFC 7143 section 11): the 48-byte
 * Basic Header Segment as a byte array (read and written with the
 * big-endian accessors of conf/util.h), opcodes, flag bits, field offsets,
 * serial number arithmetic (RFC 1982) and CRC32C digests. Private to
 * target/iscsi.
 *
 * Never overlay structs with bitfields on wire data: every field is read and
 * written through conf_get_be32() and friends at the offsets named here.
 */
#ifndef RTGT_ISCSI_PDU_H
#define RTGT_ISCSI_PDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/util.h"

#define ISCSI_BHS_LEN 48
/* We accept at most this much AHS (an extended CDB needs 20 bytes, a
 * bidirectional read length 8); more is treated as garbage. */
#define ISCSI_AHS_MAX 256
#define ISCSI_DIGEST_LEN 4
/* RFC 7143 section 6.2: login PDUs carry at most 8192 bytes. */
#define ISCSI_LOGIN_DSL 8192u
#define ISCSI_RSVD_TAG 0xffffffffu

_Static_assert(ISCSI_AHS_MAX % 4 == 0, "AHS is counted in 4-byte words");

/* ---- opcodes (byte 0, low 6 bits) ---- */
enum {
	ISCSI_OP_NOP_OUT = 0x00,
	ISCSI_OP_SCSI_CMD = 0x01,
	ISCSI_OP_TMF_REQ = 0x02,
	ISCSI_OP_LOGIN_REQ = 0x03,
	ISCSI_OP_TEXT_REQ = 0x04,
	ISCSI_OP_DATA_OUT = 0x05,
	ISCSI_OP_LOGOUT_REQ = 0x06,
	ISCSI_OP_SNACK = 0x10,

	ISCSI_OP_NOP_IN = 0x20,
	ISCSI_OP_SCSI_RSP = 0x21,
	ISCSI_OP_TMF_RSP = 0x22,
	ISCSI_OP_LOGIN_RSP = 0x23,
	ISCSI_OP_TEXT_RSP = 0x24,
	ISCSI_OP_DATA_IN = 0x25,
	ISCSI_OP_LOGOUT_RSP = 0x26,
	ISCSI_OP_R2T = 0x31,
	ISCSI_OP_ASYNC = 0x32,
	ISCSI_OP_REJECT = 0x3f,
};

#define ISCSI_OP_MASK 0x3f
#define ISCSI_OP_IMMEDIATE 0x40

/* ---- byte 1 flags ---- */
#define ISCSI_FLAG_FINAL 0x80
/* SCSI Command */
#define ISCSI_CMD_READ 0x40
#define ISCSI_CMD_WRITE 0x20
#define ISCSI_CMD_ATTR_MASK 0x07
/* Login */
#define ISCSI_LOGIN_TRANSIT 0x80
#define ISCSI_LOGIN_CONTINUE 0x40
/* Text */
#define ISCSI_TEXT_CONTINUE 0x40
/* Data-In and SCSI Response */
#define ISCSI_DATAIN_ACK 0x40
#define ISCSI_FLAG_OVERFLOW 0x04
#define ISCSI_FLAG_UNDERFLOW 0x02
#define ISCSI_DATAIN_STATUS 0x01
/* TMF function is byte 1 without the F bit; Logout reason likewise. */
#define ISCSI_FUNC_MASK 0x7f

/* Login stages (CSG/NSG) */
enum {
	ISCSI_STAGE_SECURITY = 0,
	ISCSI_STAGE_OPERATIONAL = 1,
	ISCSI_STAGE_FFP = 3,
};

/* ---- field offsets ---- */
#define ISCSI_OFF_OPCODE 0
#define ISCSI_OFF_FLAGS 1
#define ISCSI_OFF_AHSLEN 4
#define ISCSI_OFF_DSL 5
#define ISCSI_OFF_LUN 8
#define ISCSI_OFF_ISID 8
#define ISCSI_OFF_TSIH 14
#define ISCSI_OFF_ITT 16
#define ISCSI_OFF_TTT 20
#define ISCSI_OFF_EDTL 20
#define ISCSI_OFF_CID 20
#define ISCSI_OFF_RTT 20
#define ISCSI_OFF_CMDSN 24
#define ISCSI_OFF_STATSN 24
#define ISCSI_OFF_EXPSTATSN 28
#define ISCSI_OFF_EXPCMDSN 28
#define ISCSI_OFF_MAXCMDSN 32
#define ISCSI_OFF_CDB 32
#define ISCSI_OFF_REFCMDSN 32
#define ISCSI_OFF_DATASN 36
#define ISCSI_OFF_R2TSN 36
#define ISCSI_OFF_EXPDATASN 36
#define ISCSI_OFF_BUFOFF 40
#define ISCSI_OFF_DDTL 44
#define ISCSI_OFF_RESIDUAL 44
#define ISCSI_OFF_BIDI_RESIDUAL 40
#define ISCSI_OFF_TIME2WAIT 40
#define ISCSI_OFF_TIME2RETAIN 42
#define ISCSI_OFF_STATUS_CLASS 36
#define ISCSI_OFF_STATUS_DETAIL 37

#define ISCSI_CDB_BHS_LEN 16
/* AHS types */
#define ISCSI_AHS_EXT_CDB 1
#define ISCSI_AHS_BIDI_LEN 2

/* Reject reasons (RFC 7143 section 11.17.1) */
enum {
	ISCSI_REJECT_DATA_DIGEST = 0x02,
	ISCSI_REJECT_SNACK = 0x03,
	ISCSI_REJECT_PROTOCOL = 0x04,
	ISCSI_REJECT_CMD_NOT_SUPPORTED = 0x05,
	ISCSI_REJECT_IMM_CMD = 0x06,
	ISCSI_REJECT_TASK_IN_PROGRESS = 0x07,
	ISCSI_REJECT_INVALID_DATA_ACK = 0x08,
	ISCSI_REJECT_INVALID_FIELD = 0x09,
	ISCSI_REJECT_OUT_OF_RESOURCES = 0x0a,
	ISCSI_REJECT_WAITING_LOGOUT = 0x0c,
};

/* Login status (RFC 7143 section 11.13.5): class << 8 | detail */
enum {
	ISCSI_LOGIN_OK = 0x0000,
	ISCSI_LOGIN_INITIATOR_ERROR = 0x0200,
	ISCSI_LOGIN_AUTH_FAILED = 0x0201,
	ISCSI_LOGIN_FORBIDDEN = 0x0202,
	ISCSI_LOGIN_NOT_FOUND = 0x0203,
	ISCSI_LOGIN_TARGET_REMOVED = 0x0204,
	ISCSI_LOGIN_UNSUPPORTED_VERSION = 0x0205,
	ISCSI_LOGIN_TOO_MANY_CONNS = 0x0206,
	ISCSI_LOGIN_MISSING_PARAM = 0x0207,
	ISCSI_LOGIN_NO_SESSION_SPANNING = 0x0208,
	ISCSI_LOGIN_SESSION_TYPE_UNSUPPORTED = 0x0209,
	ISCSI_LOGIN_NO_SUCH_SESSION = 0x020a,
	ISCSI_LOGIN_INVALID_DURING_LOGIN = 0x020b,
	ISCSI_LOGIN_TARGET_ERROR = 0x0300,
	ISCSI_LOGIN_SERVICE_UNAVAILABLE = 0x0301,
	ISCSI_LOGIN_OUT_OF_RESOURCES = 0x0302,
};

/* TMF functions and responses (RFC 7143 sections 11.5.1, 11.6.1) */
enum {
	ISCSI_TMF_ABORT_TASK = 1,
	ISCSI_TMF_ABORT_TASK_SET = 2,
	ISCSI_TMF_CLEAR_ACA = 3,
	ISCSI_TMF_CLEAR_TASK_SET = 4,
	ISCSI_TMF_LUN_RESET = 5,
	ISCSI_TMF_TARGET_WARM_RESET = 6,
	ISCSI_TMF_TARGET_COLD_RESET = 7,
	ISCSI_TMF_TASK_REASSIGN = 8,
};
enum {
	ISCSI_TMF_RSP_COMPLETE = 0,
	ISCSI_TMF_RSP_NO_TASK = 1,
	ISCSI_TMF_RSP_NO_LUN = 2,
	ISCSI_TMF_RSP_STILL_ALLEGIANT = 3,
	ISCSI_TMF_RSP_NO_REASSIGN = 4,
	ISCSI_TMF_RSP_NOT_SUPPORTED = 5,
	ISCSI_TMF_RSP_AUTH_FAILED = 6,
	ISCSI_TMF_RSP_REJECTED = 255,
};

/* Logout reasons and responses (RFC 7143 sections 11.14, 11.15) */
enum {
	ISCSI_LOGOUT_CLOSE_SESSION = 0,
	ISCSI_LOGOUT_CLOSE_CONN = 1,
	ISCSI_LOGOUT_RECOVERY = 2,
};
enum {
	ISCSI_LOGOUT_RSP_OK = 0,
	ISCSI_LOGOUT_RSP_NO_CID = 1,
	ISCSI_LOGOUT_RSP_NO_RECOVERY = 2,
	ISCSI_LOGOUT_RSP_FAILED = 3,
};

/* ---- common BHS fields ---- */
static inline uint8_t iscsi_bhs_opcode(const uint8_t *bhs)
{
	return bhs[ISCSI_OFF_OPCODE] & ISCSI_OP_MASK;
}

static inline bool iscsi_bhs_immediate(const uint8_t *bhs)
{
	return (bhs[ISCSI_OFF_OPCODE] & ISCSI_OP_IMMEDIATE) != 0;
}

static inline uint8_t iscsi_bhs_flags(const uint8_t *bhs)
{
	return bhs[ISCSI_OFF_FLAGS];
}

static inline uint32_t iscsi_bhs_ahs_len(const uint8_t *bhs)
{
	return (uint32_t)bhs[ISCSI_OFF_AHSLEN] * 4u;
}

static inline uint32_t iscsi_bhs_dsl(const uint8_t *bhs)
{
	return conf_get_be24(bhs + ISCSI_OFF_DSL);
}

static inline void iscsi_bhs_set_dsl(uint8_t *bhs, uint32_t dsl)
{
	conf_put_be24(bhs + ISCSI_OFF_DSL, dsl);
}

static inline uint32_t iscsi_bhs_itt(const uint8_t *bhs)
{
	return conf_get_be32(bhs + ISCSI_OFF_ITT);
}

static inline uint32_t iscsi_pad4(uint32_t len)
{
	return (4u - (len & 3u)) & 3u;
}

/* ---- serial number arithmetic, RFC 1982 with SERIAL_BITS = 32 ---- */
static inline bool iscsi_sn_lt(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) < 0;
}

static inline bool iscsi_sn_gt(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

static inline bool iscsi_sn_le(uint32_t a, uint32_t b)
{
	return a == b || iscsi_sn_lt(a, b);
}

/* ---- validation of a received BHS, before its payload is read ---- */

enum iscsi_phase {
	ISCSI_PHASE_LOGIN,
	ISCSI_PHASE_FFP,
};

enum iscsi_bhs_verdict {
	ISCSI_BHS_OK = 0,
	ISCSI_BHS_REJECT = 1,      /* read and discard the payload, then Reject */
	ISCSI_BHS_DROP = 2,        /* framing lost or login violated: close */
	ISCSI_BHS_REJECT_CLOSE = 3, /* Reject (*reason), then close without
	                             * reading the payload: its length is over
	                             * what we declared, and waiting for up to
	                             * 16 MiB we would throw away lets one header
	                             * stall the connection */
};

/*
 * Checks what can be checked from the header alone: opcode allowed in
 * @phase, AHS and data segment lengths against @max_dsl (what we declared;
 * ISCSI_LOGIN_DSL during login), flag combinations that RFC 7143 forbids.
 * On ISCSI_BHS_REJECT(_CLOSE) *reason holds the Reject reason code; on any verdict
 * but OK, *why a static string for the log.
 */
enum iscsi_bhs_verdict iscsi_bhs_check(const uint8_t *bhs, enum iscsi_phase phase,
				       uint32_t max_dsl, uint8_t *reason, const char **why);

/* ---- CRC32C digests ---- */

/* Running CRC over consecutive pieces: start with ISCSI_CRC_INIT, feed
 * pieces in order, finish with iscsi_crc_final(). */
#define ISCSI_CRC_INIT 0xffffffffu
uint32_t iscsi_crc_update(uint32_t crc, const void *buf, size_t len);
static inline uint32_t iscsi_crc_final(uint32_t crc)
{
	return ~crc;
}

/* The digest of one buffer as it travels: 4 bytes, least significant first
 * (RFC 7143 appendix B.4 shows 32 zero bytes -> aa 36 91 8a). */
void iscsi_digest_put(uint8_t out[ISCSI_DIGEST_LEN], uint32_t crc_final);
uint32_t iscsi_digest_get(const uint8_t in[ISCSI_DIGEST_LEN]);

#endif
