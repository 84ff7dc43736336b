/*
 * tests/fuzz/fuzz_pdu.c - the receive path of target/iscsi without a socket.
 *
 * The input is a byte stream as a connection would read it. The first four
 * bytes choose the connection's situation (phase, digests, our declared
 * MaxRecvDataSegmentLength); the rest is cut into PDUs exactly as conn.c
 * does: 48-byte BHS -> iscsi_bhs_check() -> AHS, header digest, data
 * segment, padding, data digest. Login and Text data segments go through
 * iscsi_kv_parse() and every value through the text helpers login.c and
 * neg.c use (numbers, binary values, iSCSI names).
 *
 * Properties checked besides memory safety: a verdict agrees with what the
 * header says (an accepted PDU never has more data than allowed for the
 * phase), every refusal carries a reason, a parsed key list has no
 * duplicates and finds its own keys, CRC32C is the same computed in pieces
 * or at once, decoded binary values never exceed their buffer.
 */
#include <errno.h>
#include <string.h>

#include "target/iscsi/iscsi_text.h"
#include "target/iscsi/pdu.h"
#include "tests/fuzz/fuzz.h"

#define SITUATION_LEN 4u

static void check_crc(const uint8_t *p, size_t len)
{
	uint32_t whole, pieces;
	size_t cut = len / 3;

	whole = iscsi_crc_final(iscsi_crc_update(ISCSI_CRC_INIT, p, len));
	pieces = iscsi_crc_update(ISCSI_CRC_INIT, p, cut);
	pieces = iscsi_crc_final(iscsi_crc_update(pieces, p + cut, len - cut));
	FUZZ_CHECK(whole == pieces);
	{
		uint8_t d[ISCSI_DIGEST_LEN];

		iscsi_digest_put(d, whole);
		FUZZ_CHECK(iscsi_digest_get(d) == whole);
	}
}

static void check_value(const char *v)
{
	uint8_t bin[256];
	size_t blen = 0;
	uint64_t num;
	char hex[2 * sizeof(bin) + 3];

	(void)iscsi_text_parse_number(v, &num);
	(void)iscsi_name_valid(v);
	if (iscsi_text_decode_binary(v, bin, sizeof(bin), &blen) == 0) {
		FUZZ_CHECK(blen <= sizeof(bin));
		/* what we decode, we can encode again */
		FUZZ_CHECK(iscsi_text_encode_hex(bin, blen, hex, sizeof(hex)) == 0);
		FUZZ_CHECK(strlen(hex) == 2 + 2 * blen);
	}
}

static void parse_text(const uint8_t *seg, uint32_t len)
{
	struct iscsi_kvlist l;
	unsigned i, j;

	if (iscsi_kv_parse(seg, len, &l))
		return;
	for (i = 0; i < l.n; i++) {
		FUZZ_CHECK(l.kv[i].key && l.kv[i].value);
		FUZZ_CHECK(l.kv[i].key[0] != '\0' && strlen(l.kv[i].key) <= 63);
		FUZZ_CHECK(strchr(l.kv[i].key, '=') == NULL);
		FUZZ_CHECK(iscsi_kv_get(&l, l.kv[i].key) == l.kv[i].value);
		for (j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(l.kv[i].key, l.kv[j].key) != 0);
		check_value(l.kv[i].value);
	}
	iscsi_kv_free(&l);
	FUZZ_CHECK(l.kv == NULL && l.text == NULL && l.n == 0);
}

/* What the verdict promises about the header. */
static void check_verdict(const uint8_t *bhs, enum iscsi_phase phase, uint32_t max_dsl,
			  enum iscsi_bhs_verdict v, uint8_t reason, const char *why)
{
	uint8_t op = iscsi_bhs_opcode(bhs);

	FUZZ_CHECK(why != NULL);
	switch (v) {
	case ISCSI_BHS_OK:
		FUZZ_CHECK(iscsi_bhs_ahs_len(bhs) <= ISCSI_AHS_MAX);
		if (phase == ISCSI_PHASE_LOGIN) {
			FUZZ_CHECK(op == ISCSI_OP_LOGIN_REQ);
			FUZZ_CHECK(iscsi_bhs_dsl(bhs) <= ISCSI_LOGIN_DSL);
		} else {
			FUZZ_CHECK(op != ISCSI_OP_LOGIN_REQ);
			FUZZ_CHECK(iscsi_bhs_dsl(bhs) <= max_dsl);
		}
		break;
	case ISCSI_BHS_REJECT:
	case ISCSI_BHS_REJECT_CLOSE:
		FUZZ_CHECK(phase == ISCSI_PHASE_FFP);
		FUZZ_CHECK(reason != 0 && why[0] != '\0');
		break;
	case ISCSI_BHS_DROP:
		FUZZ_CHECK(why[0] != '\0');
		break;
	default:
		FUZZ_CHECK(!"verdict out of range");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum iscsi_phase phase;
	bool hdig, ddig;
	uint32_t max_dsl;
	size_t off;

	if (size < SITUATION_LEN)
		return 0;
	phase = (data[0] & 1) ? ISCSI_PHASE_FFP : ISCSI_PHASE_LOGIN;
	hdig = data[0] & 2;
	ddig = data[0] & 4;
	/* 512 .. 16 MiB - 1, the range neg.c lets MaxRecvDataSegmentLength take */
	max_dsl = conf_get_be24(data + 1);
	if (max_dsl < 512)
		max_dsl = 512;
	off = SITUATION_LEN;

	while (size - off >= ISCSI_BHS_LEN) {
		const uint8_t *bhs = data + off;
		enum iscsi_bhs_verdict v;
		uint8_t reason = 0xee;
		const char *why = NULL;
		uint32_t ahs, dsl, pad;
		size_t need, seg;

		v = iscsi_bhs_check(bhs, phase, max_dsl, &reason, &why);
		check_verdict(bhs, phase, max_dsl, v, reason, why);
		if (v == ISCSI_BHS_DROP || v == ISCSI_BHS_REJECT_CLOSE)
			return 0;
		ahs = iscsi_bhs_ahs_len(bhs);
		dsl = iscsi_bhs_dsl(bhs);
		pad = iscsi_pad4(dsl);
		FUZZ_CHECK((dsl + pad) % 4 == 0 && pad < 4);
		need = ISCSI_BHS_LEN + ahs + (hdig ? ISCSI_DIGEST_LEN : 0);
		if (size - off < need)
			return 0;
		if (hdig)
			check_crc(bhs, ISCSI_BHS_LEN + ahs);
		seg = off + need;
		need += dsl + pad + (ddig && dsl ? ISCSI_DIGEST_LEN : 0);
		if (size - off < need)
			return 0;
		if (ddig && dsl)
			check_crc(data + seg, dsl + pad);
		if (v == ISCSI_BHS_OK) {
			uint8_t op = iscsi_bhs_opcode(bhs);

			if (op == ISCSI_OP_LOGIN_REQ || op == ISCSI_OP_TEXT_REQ)
				parse_text(data + seg, dsl);
			/* Transit to NSG 3 ends the login: what follows is
			 * full feature phase traffic. */
			if (op == ISCSI_OP_LOGIN_REQ && (iscsi_bhs_flags(bhs) & ISCSI_LOGIN_TRANSIT) &&
			    (iscsi_bhs_flags(bhs) & 3) == ISCSI_STAGE_FFP)
				phase = ISCSI_PHASE_FFP;
		}
		off += need;
	}
	return 0;
}
