/*
 * target/iscsi/pdu.c - header checks done before a PDU's payload is read,
 * and the CRC32C digest helpers.
 *
 * No state machine lives here: iscsi_bhs_check() is a pure function of the
 * 48 bytes, the connection phase and the negotiated receive limit.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"), its wire rules. May call: conf/, isa-l; no other file here.
 */
#include <isa-l/crc.h>

#include "target/iscsi/pdu.h"

uint32_t iscsi_crc_update(uint32_t crc, const void *buf, size_t len)
{
	/* isa-l's crc32_iscsi() takes an int length and neither inverts the
	 * seed nor the result: feeding the running value back in chains. */
	const unsigned char *p = buf;

	while (len > 0) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return crc;
}

void iscsi_digest_put(uint8_t out[ISCSI_DIGEST_LEN], uint32_t crc_final)
{
	out[0] = (uint8_t)crc_final;
	out[1] = (uint8_t)(crc_final >> 8);
	out[2] = (uint8_t)(crc_final >> 16);
	out[3] = (uint8_t)(crc_final >> 24);
}

uint32_t iscsi_digest_get(const uint8_t in[ISCSI_DIGEST_LEN])
{
	return (uint32_t)in[0] | ((uint32_t)in[1] << 8) | ((uint32_t)in[2] << 16) |
	       ((uint32_t)in[3] << 24);
}

static enum iscsi_bhs_verdict reject(uint8_t *reason, const char **why, uint8_t r,
				     const char *msg)
{
	*reason = r;
	*why = msg;
	return ISCSI_BHS_REJECT;
}

static enum iscsi_bhs_verdict drop(const char **why, const char *msg)
{
	*why = msg;
	return ISCSI_BHS_DROP;
}

enum iscsi_bhs_verdict iscsi_bhs_check(const uint8_t *bhs, enum iscsi_phase phase,
				       uint32_t max_dsl, uint8_t *reason, const char **why)
{
	uint8_t op = iscsi_bhs_opcode(bhs);
	uint8_t flags = iscsi_bhs_flags(bhs);
	uint32_t ahs = iscsi_bhs_ahs_len(bhs);
	uint32_t dsl = iscsi_bhs_dsl(bhs);

	*reason = 0;
	*why = "";
	if (ahs > ISCSI_AHS_MAX)
		return drop(why, "TotalAHSLength too large");

	if (phase == ISCSI_PHASE_LOGIN) {
		/* RFC 7143 6.1: only Login Requests until the login is done;
		 * anything else is a protocol error that ends the connection. */
		if (op != ISCSI_OP_LOGIN_REQ)
			return drop(why, "non-login PDU during login");
		if (ahs != 0)
			return drop(why, "AHS on a login PDU");
		if (dsl > ISCSI_LOGIN_DSL)
			return drop(why, "login PDU over 8192 bytes");
		if ((flags & ISCSI_LOGIN_TRANSIT) && (flags & ISCSI_LOGIN_CONTINUE))
			return drop(why, "login PDU with both T and C set");
		return ISCSI_BHS_OK;
	}

	/* Over our MaxRecvDataSegmentLength, whatever the opcode: a broken
	 * (or hostile) sender, or garbage that lost the framing. Reading up to
	 * 16 MiB just to discard it would leave the connection waiting on a
	 * peer that may never send it; a Data-Out we cannot take leaves its
	 * command in an unknown state anyway (ERL 0). */
	if (dsl > max_dsl) {
		*reason = ISCSI_REJECT_PROTOCOL;
		*why = "DataSegmentLength over MaxRecvDataSegmentLength";
		return ISCSI_BHS_REJECT_CLOSE;
	}

	switch (op) {
	case ISCSI_OP_DATA_OUT:
		if (ahs != 0)
			return drop(why, "AHS on a Data-Out");
		return ISCSI_BHS_OK;
	case ISCSI_OP_SCSI_CMD:
		if (!(flags & ISCSI_FLAG_FINAL) && !(flags & ISCSI_CMD_WRITE))
			return reject(reason, why, ISCSI_REJECT_INVALID_FIELD,
				      "SCSI command without F and W");
		if (dsl > 0 && !(flags & ISCSI_CMD_WRITE))
			return reject(reason, why, ISCSI_REJECT_PROTOCOL,
				      "immediate data on a command without W");
		return ISCSI_BHS_OK;
	case ISCSI_OP_NOP_OUT:
		if (!(flags & ISCSI_FLAG_FINAL))
			return reject(reason, why, ISCSI_REJECT_INVALID_FIELD, "NOP-Out without F");
		if (iscsi_bhs_itt(bhs) == ISCSI_RSVD_TAG && !iscsi_bhs_immediate(bhs))
			return reject(reason, why, ISCSI_REJECT_INVALID_FIELD,
				      "NOP-Out with reserved ITT but no I bit");
		return ISCSI_BHS_OK;
	case ISCSI_OP_TMF_REQ:
	case ISCSI_OP_LOGOUT_REQ:
		if (!(flags & ISCSI_FLAG_FINAL))
			return reject(reason, why, ISCSI_REJECT_INVALID_FIELD,
				      "TMF/Logout without F");
		return ISCSI_BHS_OK;
	case ISCSI_OP_TEXT_REQ:
		if ((flags & ISCSI_FLAG_FINAL) && (flags & ISCSI_TEXT_CONTINUE))
			return reject(reason, why, ISCSI_REJECT_INVALID_FIELD,
				      "Text request with both F and C");
		return ISCSI_BHS_OK;
	case ISCSI_OP_LOGIN_REQ:
		return reject(reason, why, ISCSI_REJECT_PROTOCOL, "Login request in full feature phase");
	case ISCSI_OP_SNACK:
		/* ErrorRecoveryLevel 0: no SNACK support. */
		return reject(reason, why, ISCSI_REJECT_CMD_NOT_SUPPORTED, "SNACK with ERL 0");
	default:
		return reject(reason, why, ISCSI_REJECT_CMD_NOT_SUPPORTED, "unknown opcode");
	}
}
