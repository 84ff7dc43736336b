/*
 * target/scsi/spc.c - SPC-4 primary commands: INQUIRY and VPD pages, MODE
 * SENSE/SELECT, REPORT LUNS, REQUEST SENSE, REPORT SUPPORTED TASK
 * MANAGEMENT FUNCTIONS, REPORT TARGET PORT GROUPS and the no-op medium
 * commands of a non-removable disk. REPORT SUPPORTED OPERATION CODES
 * reports the opcode table, so it lives beside it in lu.c.
 *
 * Mode parameters state machine (per LU, under lu->lock):
 *   DEFAULT --MODE SELECT that changes a changeable bit (spc_mode_select)--> MODIFIED
 *   MODIFIED --MODE SELECT (spc_mode_select)--> MODIFIED
 *   MODIFIED --target reset (scsi_tmf in lu.c)--> DEFAULT
 * Every transition into MODIFIED raises MODE PARAMETERS CHANGED for the
 * other nexuses. Invariant (mode_check()): only bits listed as changeable in
 * mode_page(PC=1) ever differ from the defaults.
 *
 * ALUA (REPORT TARGET PORT GROUPS, VPD 0x83 group designator): no state
 * machine here. A group's asymmetric access state is fixed by where it is:
 * a local port's group is active/optimized, a peer node's group
 * active/non-optimized; only a configuration reload changes the peer list
 * (scsi_target_set_peer_groups in lu.c, which raises the unit attention).
 *
 * All handlers complete synchronously; none touches the volume (TEST UNIT
 * READY and REQUEST SENSE only ask whether it is ready and how far its
 * preparation got, raid_vol_ready_progress, scsi_not_ready_sense).
 *
 * Layer: handlers (target/scsi/README.md "Layers"). May call: sense.c,
 * task.c, raid/raid.h, conf/. Reached from lu.c only through the opcode
 * table; it completes through scsi_cmd_complete() (task.c), never lu.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

#define VENDOR "RTGT    "
#define PRODUCT "RAID VOLUME     "
#define REVISION "0001"
/* IEEE company id used in the NAA designator. */
#define RTGT_OUI 0x0a4c52u

_Static_assert(sizeof(VENDOR) - 1 == 8, "T10 vendor id is 8 bytes");
_Static_assert(sizeof(PRODUCT) - 1 == 16, "product id is 16 bytes");
_Static_assert(sizeof(REVISION) - 1 == 4, "revision is 4 bytes");

#define INQ_STD_LEN 74
#define MAX_CAW_BLOCKS 64

static void done_good(struct scsi_cmd *cmd)
{
	scsi_cmd_complete(cmd);
}

/* ---- simple commands ---- */

void spc_test_unit_ready(struct scsi_cmd *cmd)
{
	/* NOT READY while the volume is being written out (rbd thick) */
	if (!scsi_medium_ready(cmd))
		return;
	done_good(cmd);
}

void spc_start_stop(struct scsi_cmd *cmd)
{
	uint8_t pc = cmd->cdb[4] >> 4;

	/* Power conditions 0 (START/LOEJ valid), 1 active, 2 idle, 3 standby,
	 * 7 LU control, 0xa/0xb force timers: accepted as no-ops since a
	 * volume never spins down. Others are reserved. */
	if (!(pc <= 3 || pc == 7 || pc == 0xa || pc == 0xb)) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 4, 7);
		return done_good(cmd);
	}
	done_good(cmd);
}

void spc_prevent_allow(struct scsi_cmd *cmd)
{
	/* not removable (RMB=0): nothing to lock */
	done_good(cmd);
}

/*
 * SPC-4 REQUEST SENSE: a pending unit attention first; then, on a volume
 * still being prepared (or whose preparation failed), the NOT READY sense a
 * media-access command would get, with GOOD status and the progress
 * indication, so an initiator can poll how far the LU is from ready.
 */
void spc_request_sense(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint8_t data[SCSI_SENSE_MAX];
	bool desc = cmd->cdb[1] & 0x01;
	uint16_t code, frac;
	unsigned len;
	int ready;

	if (!lu)
		len = scsi_sense_build(data, desc, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED, false,
				       0, false, NULL);
	else if (scsi_ua_take(lu, cmd->nexus, &code))
		len = scsi_sense_build(data, desc, SK_UNIT_ATTENTION, code, false, 0, false, NULL);
	else if (scsi_deferred_take(lu, cmd->nexus))
		len = scsi_deferred_sense(data, desc);   /* lu.c, "Deferred errors" */
	else if ((ready = raid_vol_ready_progress(lu->vol, &frac)) != 0)
		len = scsi_not_ready_sense(data, desc, ready, frac);
	else
		len = scsi_sense_build(data, desc, SK_NO_SENSE, ASC_NONE, false, 0, false, NULL);
	scsi_reply(cmd, data, len, cmd->cdb[4]);
	done_good(cmd);
}

/* ---- INQUIRY ---- */

static unsigned inq_standard(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_target *t = cmd->target;
	static const uint16_t versions[] = {
		0x00a0, /* SAM-5 */
		0x0960, /* iSCSI */
		0x0460, /* SPC-4 */
		0x04c0, /* SBC-3 */
	};
	unsigned i, nports;

	memset(d, 0, INQ_STD_LEN);
	d[0] = scsi_cmd_lu(cmd) ? 0x00 : 0x7f;
	d[2] = 0x06;            /* SPC-4 */
	d[3] = 0x12;            /* HISUP, response data format 2 */
	d[4] = INQ_STD_LEN - 5;
	d[5] = 0x10 | 0x08;     /* TPGS=01: implicit ALUA; 3PC: EXTENDED COPY (xcopy.c) */
	pthread_mutex_lock(&t->lock);
	/* a peer node's port reaches the same LU: it counts */
	nports = t->n_ports + t->n_peer_tpgs;
	pthread_mutex_unlock(&t->lock);
	if (nports > 1)
		d[6] = 0x10;    /* MULTIP */
	d[7] = 0x02;            /* CMDQUE */
	memcpy(&d[8], VENDOR, 8);
	memcpy(&d[16], PRODUCT, 16);
	memcpy(&d[32], REVISION, 4);
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		conf_put_be16(&d[58 + 2 * i], versions[i]);
	return INQ_STD_LEN;
}

static const uint8_t vpd_list[] = { 0x00, 0x80, 0x83, 0x8f, 0xb0, 0xb1, 0xb2 };

/* Appends a designator; returns its length. @s padded with NULs to a
 * multiple of 4 when @str. */
static unsigned put_desig(uint8_t *d, uint8_t codeset, uint8_t assoc, uint8_t type, bool piv,
			  const void *val, unsigned len, bool str)
{
	unsigned plen = str ? (len + 1 + 3) & ~3u : len;

	d[0] = (uint8_t)((piv ? 0x50 : 0x00) | codeset); /* protocol 5 = iSCSI */
	d[1] = (uint8_t)((piv ? 0x80 : 0) | assoc << 4 | type);
	d[2] = 0;
	d[3] = (uint8_t)plen;
	memset(&d[4], 0, plen);
	memcpy(&d[4], val, len);
	return 4 + plen;
}

void spc_lu_naa(const struct scsi_lu *lu, uint8_t naa[16])
{
	/* NAA 6: 4-bit NAA, 24-bit OUI, then 100 bits from the volume uuid */
	naa[0] = (uint8_t)(0x60 | (RTGT_OUI >> 20));
	naa[1] = (uint8_t)(RTGT_OUI >> 12);
	naa[2] = (uint8_t)(RTGT_OUI >> 4);
	naa[3] = (uint8_t)((RTGT_OUI & 0xf) << 4 | (lu->uuid[0] & 0x0f));
	memcpy(&naa[4], &lu->uuid[1], 12);
}

static unsigned vpd_devid(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	struct scsi_target *t = cmd->target;
	uint8_t naa[16], v4[4];
	char name[300];
	unsigned p = 4;
	int n;

	/* xcopy.c finds the LU an EXTENDED COPY names by this designator */
	spc_lu_naa(lu, naa);
	p += put_desig(&d[p], 1, 0, 3, false, naa, 16, false);

	/* relative target port */
	memset(v4, 0, 4);
	conf_put_be16(&v4[2], cmd->nexus->rel_port);
	p += put_desig(&d[p], 1, 1, 4, true, v4, 4, false);
	/* target port group: each port is its own group, numbered by its
	 * TPGT (spc_report_tpgs) */
	memset(v4, 0, 4);
	conf_put_be16(&v4[2], cmd->nexus->tpgt);
	p += put_desig(&d[p], 1, 1, 5, true, v4, 4, false);
	/* target port name */
	n = snprintf(name, sizeof(name), "%s,t,0x%04x", t->iqn, cmd->nexus->tpgt);
	if (n > 0 && n < 252)
		p += put_desig(&d[p], 3, 1, 8, true, name, (unsigned)n, true);
	/* target device name */
	n = snprintf(name, sizeof(name), "%s", t->iqn);
	if (n > 0 && n < 252)
		p += put_desig(&d[p], 3, 2, 8, true, name, (unsigned)n, true);
	d[1] = 0x83;
	conf_put_be16(&d[2], (uint16_t)(p - 4));
	return p;
}

/*
 * Third-party Copy VPD page (SPC-4 7.8.17): what EXTENDED COPY (LID1) and
 * RECEIVE COPY RESULTS support (xcopy.c) and its limits, the same numbers
 * OPERATING PARAMETERS reports. Three descriptors, each padded to a
 * multiple of 4 bytes: Supported Commands (0001h), Parameter Data (0008h),
 * Supported Descriptors (0009h).
 */
/* A third-party copy descriptor of @type holding a count and @n bytes of
 * list, padded to a multiple of 4; returns its whole length. */
static unsigned put_3pc_list(uint8_t *d, uint16_t type, const uint8_t *list, uint8_t n)
{
	unsigned len = (1u + n + 3u) & ~3u;

	conf_put_be16(&d[0], type);
	conf_put_be16(&d[2], (uint16_t)len);
	d[4] = n;
	memcpy(&d[5], list, n);
	return 4 + len;
}

static unsigned vpd_3pc(uint8_t *d)
{
	static const uint8_t cmds[] = {
		OP_EXTENDED_COPY, 1, 0x00,
		OP_RECEIVE_COPY_RESULTS, 3, RCR_COPY_STATUS, RCR_OPERATING_PARAMS,
		RCR_FAILED_SEGMENT,
	};
	static const uint8_t descs[] = { 0x02, 0xe4 };
	unsigned p = 4;

	/* Supported Commands */
	p += put_3pc_list(&d[p], 0x0001, cmds, sizeof(cmds));
	/* Parameter Data */
	conf_put_be16(&d[p], 0x0008);
	conf_put_be16(&d[p + 2], 0x001c);
	conf_put_be16(&d[p + 8], SCSI_XCOPY_MAX_CSCD);
	conf_put_be16(&d[p + 10], SCSI_XCOPY_MAX_SEG);
	conf_put_be32(&d[p + 12], SCSI_XCOPY_MAX_DESC_LEN);
	conf_put_be32(&d[p + 16], 0);           /* maximum inline data length */
	p += 4 + 0x1c;
	/* Supported Descriptors: block-to-block segments, identification CSCDs */
	p += put_3pc_list(&d[p], 0x0009, descs, sizeof(descs));
	conf_put_be16(&d[2], (uint16_t)(p - 4));
	return p;
}

static unsigned vpd_page(struct scsi_cmd *cmd, uint8_t page, uint8_t *d)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint32_t gran, olen, maxb = SCSI_MAX_XFER / SCSI_BS;

	memset(d, 0, 1024);
	d[0] = 0x00;    /* peripheral: direct access block device */
	d[1] = page;
	switch (page) {
	case 0x00:
		memcpy(&d[4], vpd_list, sizeof(vpd_list));
		d[3] = sizeof(vpd_list);
		return 4 + sizeof(vpd_list);
	case 0x80:
		d[3] = 32;
		memcpy(&d[4], lu->serial, 32);
		return 36;
	case 0x83:
		return vpd_devid(cmd, d);
	case 0x8f:
		return vpd_3pc(d);
	case 0xb0:
		d[3] = 0x3c;
		d[4] = 0x01;                    /* WSNZ */
		d[5] = MAX_CAW_BLOCKS;
		gran = raid_vol_opt_gran(lu->vol) / SCSI_BS;
		olen = raid_vol_opt_len(lu->vol) / SCSI_BS;
		if (gran > 0xffff)
			gran = 0;
		if (olen > maxb)
			olen = maxb;
		conf_put_be16(&d[6], (uint16_t)gran);
		conf_put_be32(&d[8], maxb);
		conf_put_be32(&d[12], olen);
		conf_put_be32(&d[16], maxb);         /* max pre-fetch length */
		if (lu->prov.thin) {
			conf_put_be32(&d[20], SCSI_UNMAP_MAX_BLOCKS);
			conf_put_be32(&d[24], SCSI_UNMAP_MAX_DESC);
			/* freed in whole granules; UGAVALID, alignment 0 */
			conf_put_be32(&d[28], lu->prov.gran / SCSI_BS);
			d[32] = 0x80;
			conf_put_be64(&d[36], SCSI_WS_MAX_BLOCKS);
		}
		return 0x40;
	case 0xb1:
		d[3] = 0x3c;
		conf_put_be16(&d[4], (uint16_t)(lu->hdd_rpm ? lu->hdd_rpm : 1));
		return 0x40;
	case 0xb2:
		d[3] = 0x04;
		if (lu->prov.thin) {
			/* LBPU, LBPWS, LBPWS10; LBPRZ 001b where discarded
			 * blocks read as zeros; provisioning type 010b (thin) */
			d[5] = 0x80 | 0x40 | 0x20 | (lu->prov.discard_zeroes ? 0x04 : 0x00);
			d[6] = 0x02;
		}
		/* thick: no unmap, provisioning type 0 (full) */
		return 8;
	}
	return 0;
}

void spc_inquiry(struct scsi_cmd *cmd)
{
	uint8_t d[1024];
	uint32_t alloc = conf_get_be16(&cmd->cdb[3]);
	unsigned len;

	if (!(cmd->cdb[1] & 0x01)) {
		if (cmd->cdb[2]) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, -1);
			return scsi_cmd_complete(cmd);
		}
		len = inq_standard(cmd, d);
	} else {
		if (!scsi_cmd_lu(cmd)) {
			scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
			return scsi_cmd_complete(cmd);
		}
		len = vpd_page(cmd, cmd->cdb[2], d);
		if (!len) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, -1);
			return scsi_cmd_complete(cmd);
		}
	}
	scsi_reply(cmd, d, len, alloc);
	scsi_cmd_complete(cmd);
}

/* ---- mode pages ---- */

enum { PC_CURRENT, PC_CHANGEABLE, PC_DEFAULT, PC_SAVED };

static const uint8_t mode_pages[] = { 0x01, 0x08, 0x0a, 0x1c };

/* Writes page @page as seen with page control @pc; returns its length, 0 if
 * unknown. Caller holds lu->lock (reads lu->mode). */
static unsigned mode_page(const struct scsi_mode *m, uint8_t page, int pc, uint8_t *d)
{
	struct scsi_mode def = { .wce = true };

	if (pc == PC_DEFAULT)
		m = &def;
	switch (page) {
	case 0x01: /* read-write error recovery */
		memset(d, 0, 12);
		d[0] = 0x01;
		d[1] = 0x0a;
		if (pc != PC_CHANGEABLE)
			d[2] = 0xc0;    /* AWRE, ARRE */
		return 12;
	case 0x08: /* caching */
		memset(d, 0, 20);
		d[0] = 0x08;
		d[1] = 0x12;
		if (pc == PC_CHANGEABLE)
			d[2] = 0x04;
		else
			d[2] = m->wce ? 0x04 : 0;
		return 20;
	case 0x0a: /* control */
		memset(d, 0, 12);
		d[0] = 0x0a;
		d[1] = 0x0a;
		if (pc == PC_CHANGEABLE) {
			d[2] = 0x04;    /* D_SENSE */
			d[4] = 0x08;    /* SWP */
			return 12;
		}
		d[2] = m->d_sense ? 0x04 : 0;
		d[3] = 0x10;            /* QAM=1: unrestricted reordering */
		d[4] = m->swp ? 0x08 : 0;
		conf_put_be16(&d[8], 0xffff); /* busy timeout: unlimited */
		return 12;
	case 0x1c: /* informational exceptions */
		memset(d, 0, 12);
		d[0] = 0x1c;
		d[1] = 0x0a;
		if (pc != PC_CHANGEABLE)
			d[2] = 0x08;    /* DEXCPT */
		return 12;
	}
	return 0;
}

/* Invariant of the mode state machine: current differs from default only
 * in changeable bits. */
bool spc_mode_check(struct scsi_lu *lu)
{
	uint8_t cur[32], def[32], chg[32];
	unsigned i, j, len;
	bool ok = true;

	pthread_mutex_lock(&lu->lock);
	for (i = 0; i < sizeof(mode_pages); i++) {
		len = mode_page(&lu->mode, mode_pages[i], PC_CURRENT, cur);
		mode_page(&lu->mode, mode_pages[i], PC_DEFAULT, def);
		mode_page(&lu->mode, mode_pages[i], PC_CHANGEABLE, chg);
		for (j = 2; j < len; j++)
			if ((cur[j] ^ def[j]) & ~chg[j])
				ok = false;
	}
	pthread_mutex_unlock(&lu->lock);
	return ok;
}

void spc_mode_sense(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	bool ten = cmd->cdb[0] == OP_MODE_SENSE_10;
	bool dbd = cmd->cdb[1] & 0x08;
	bool llbaa = ten && (cmd->cdb[1] & 0x10);
	int pc = cmd->cdb[2] >> 6;
	uint8_t page = cmd->cdb[2] & 0x3f, sub = cmd->cdb[3];
	uint32_t alloc = ten ? conf_get_be16(&cmd->cdb[7]) : cmd->cdb[4];
	uint8_t d[512];
	unsigned hdr = ten ? 8 : 4, p, i, bdl;
	uint64_t nb = lu->nblocks;

	if (pc == PC_SAVED) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_SAVING_NOT_SUPPORTED);
		return scsi_cmd_complete(cmd);
	}
	if (sub != 0 && !(sub == 0xff && page == 0x3f)) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 3, -1);
		return scsi_cmd_complete(cmd);
	}
	memset(d, 0, sizeof(d));
	bdl = dbd ? 0 : llbaa ? 16 : 8;
	p = hdr;
	if (bdl == 8) {
		conf_put_be32(&d[p], nb > 0xffffffffull ? 0xffffffffu : (uint32_t)nb);
		conf_put_be32(&d[p + 4], SCSI_BS); /* byte 4 is reserved: density 0 */
	} else if (bdl == 16) {
		conf_put_be64(&d[p], nb);
		conf_put_be32(&d[p + 12], SCSI_BS);
	}
	p += bdl;
	pthread_mutex_lock(&lu->lock);
	if (page == 0x3f) {
		for (i = 0; i < sizeof(mode_pages); i++)
			p += mode_page(&lu->mode, mode_pages[i], pc, &d[p]);
	} else {
		unsigned n = mode_page(&lu->mode, page, pc, &d[p]);

		if (!n) {
			pthread_mutex_unlock(&lu->lock);
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 5);
			return scsi_cmd_complete(cmd);
		}
		p += n;
	}
	/* device-specific parameter: WP, DPOFUA */
	d[ten ? 3 : 2] = (uint8_t)((lu->mode.swp || scsi_cmd_view_ro(cmd) ? 0x80 : 0) | 0x10);
	pthread_mutex_unlock(&lu->lock);
	if (ten) {
		conf_put_be16(&d[0], (uint16_t)(p - 2));
		if (llbaa)
			d[4] = 0x01;
		conf_put_be16(&d[6], (uint16_t)bdl);
	} else {
		d[0] = (uint8_t)(p - 1);
		d[3] = (uint8_t)bdl;
	}
	scsi_reply(cmd, d, p, alloc);
	scsi_cmd_complete(cmd);
}

void spc_mode_select(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	bool ten = cmd->cdb[0] == OP_MODE_SELECT_10;
	uint32_t plen = ten ? conf_get_be16(&cmd->cdb[7]) : cmd->cdb[4];
	unsigned hdr = ten ? 8 : 4, bdl, p;
	const uint8_t *d = cmd->buf;
	struct scsi_mode m;
	bool changed;

	cmd->xfer_len = plen;
	if (!(cmd->cdb[1] & 0x10)) { /* PF=0: vendor format, none defined */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 4);
		return scsi_cmd_complete(cmd);
	}
	if (cmd->cdb[1] & 0x01) { /* SP: we save nothing */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 0);
		return scsi_cmd_complete(cmd);
	}
	if (plen == 0)
		return scsi_cmd_complete(cmd);
	if (plen > cmd->buf_len || plen < hdr) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return scsi_cmd_complete(cmd);
	}
	bdl = ten ? conf_get_be16(&d[6]) : d[3];
	if ((bdl != 0 && bdl != 8 && !(ten && bdl == 16 && (d[4] & 1))) || hdr + bdl > plen) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, ten ? 6 : 3, -1);
		return scsi_cmd_complete(cmd);
	}
	if (bdl) {
		uint32_t bl = bdl == 16 ? conf_get_be32(&d[hdr + 12]) : conf_get_be24(&d[hdr + 5]);

		if (bl != SCSI_BS && bl != 0) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false,
					 (uint16_t)(hdr + (bdl == 16 ? 12 : 5)), -1);
			return scsi_cmd_complete(cmd);
		}
	}
	pthread_mutex_lock(&lu->lock);
	m = lu->mode;
	for (p = hdr + bdl; p < plen;) {
		uint8_t cur[32], chg[32];
		unsigned len, j;

		if (p + 2 > plen)
			goto len_err;
		if (d[p] & 0x40) { /* SPF: no subpages here */
			pthread_mutex_unlock(&lu->lock);
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, (uint16_t)p, 6);
			return scsi_cmd_complete(cmd);
		}
		len = mode_page(&lu->mode, d[p] & 0x3f, PC_CURRENT, cur);
		mode_page(&lu->mode, d[p] & 0x3f, PC_CHANGEABLE, chg);
		if (!len) {
			pthread_mutex_unlock(&lu->lock);
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, (uint16_t)p, 5);
			return scsi_cmd_complete(cmd);
		}
		if (d[p + 1] != len - 2) {
			pthread_mutex_unlock(&lu->lock);
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, (uint16_t)(p + 1),
					 -1);
			return scsi_cmd_complete(cmd);
		}
		if (p + len > plen)
			goto len_err;
		for (j = 2; j < len; j++)
			if ((d[p + j] ^ cur[j]) & ~chg[j]) {
				pthread_mutex_unlock(&lu->lock);
				scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false,
						 (uint16_t)(p + j), -1);
				return scsi_cmd_complete(cmd);
			}
		switch (d[p] & 0x3f) {
		case 0x08:
			m.wce = d[p + 2] & 0x04;
			break;
		case 0x0a:
			m.d_sense = d[p + 2] & 0x04;
			m.swp = d[p + 4] & 0x08;
			break;
		}
		p += len;
	}
	changed = memcmp(&m, &lu->mode, sizeof(m)) != 0;
	lu->mode = m;
	if (changed)
		scsi_ua_add_all(lu, cmd->nexus, ASC_MODE_PARAMS_CHANGED);
	pthread_mutex_unlock(&lu->lock);
	RTGT_CHECK(spc_mode_check(lu));   /* takes lu->lock itself */
	return scsi_cmd_complete(cmd);

len_err:
	pthread_mutex_unlock(&lu->lock);
	scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
	scsi_cmd_complete(cmd);
}

/* ---- REPORT LUNS ---- */

void spc_report_luns(struct scsi_cmd *cmd)
{
	struct scsi_target *t = cmd->target;
	uint32_t alloc = conf_get_be32(&cmd->cdb[6]);
	uint8_t d[8 + 8 * SCSI_MAX_LUNS];
	uint8_t sel = cmd->cdb[2];
	unsigned i, n = 0;

	if (sel != 0x00 && sel != 0x01 && sel != 0x02 && sel != 0x10 && sel != 0x11 &&
	    sel != 0x12) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, -1);
		return scsi_cmd_complete(cmd);
	}
	if (alloc < 16) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 6, -1);
		return scsi_cmd_complete(cmd);
	}
	memset(d, 0, 8);
	/* 0x01 lists well-known LUs only (we have none); 0x11 asks about
	 * administrative LUs below LUN 0 (none either) */
	if (sel == 0x00 || sel == 0x02 || (sel == 0x10 && cmd->lun == 0) || sel == 0x12) {
		uint16_t luns[SCSI_MAX_LUNS];
		unsigned cnt = scsi_view_luns(t, cmd->nexus, luns);

		for (i = 0; i < cnt; i++)
			scsi_lun_encode(luns[i], &d[8 + 8 * n++]);
		/* the nexus sees no LU at all (masked out of every LUN): LUN
		 * 0 is still reported, as LIO does after SPC-3: it is where
		 * INQUIRY (peripheral qualifier 011b) and REPORT LUNS answer */
		if (cnt == 0 && sel != 0x10)
			scsi_lun_encode(0, &d[8 + 8 * n++]);
	}
	conf_put_be32(&d[0], 8 * n);
	scsi_reply(cmd, d, 8 + 8 * n, alloc);
	scsi_cmd_complete(cmd);
}

void spc_report_tmfs(struct scsi_cmd *cmd)
{
	uint32_t alloc = conf_get_be32(&cmd->cdb[6]);
	uint8_t d[16];
	unsigned len = 4;

	memset(d, 0, sizeof(d));
	/* ABORT TASK, ABORT TASK SET, CLEAR TASK SET, LUN RESET, TARGET RESET */
	d[0] = 0x80 | 0x40 | 0x10 | 0x08 | 0x02;
	if (cmd->cdb[2] & 0x80) { /* REPD: extended format */
		d[3] = 0x0c;
		len = 16;
	}
	scsi_reply(cmd, d, len, alloc);
	scsi_cmd_complete(cmd);
}

/* ---- REPORT TARGET PORT GROUPS ---- */

/* Implicit ALUA (INQUIRY TPGS = 01b, no SET TARGET PORT GROUPS). Every local
 * target port is a group of its own whose id is its TPGT, reported
 * active/optimized and preferred: this node serves it. Every peer group (the
 * same target exported by another node, scsi_target_set_peer_groups) is
 * reported active/non-optimized, not preferred, with one port whose
 * relative port id is the group id, as that node numbers its own ports.
 * Both nodes thus describe the same set of groups, each from its side. */
#define RTPG_DESC_LEN 12        /* group descriptor with one port */
#define RTPG_AAS_AO 0x0
#define RTPG_AAS_ANO 0x1
#define RTPG_PREF 0x80
#define RTPG_SUP_AO 0x01
#define RTPG_SUP_AN 0x02

static unsigned rtpg_group(uint8_t *d, uint16_t id, bool local, bool peers)
{
	memset(d, 0, RTPG_DESC_LEN);
	d[0] = local ? (RTPG_PREF | RTPG_AAS_AO) : RTPG_AAS_ANO;
	/* a group this node reports optimized is non-optimized as seen from
	 * a peer node, so with peers both states are supported */
	d[1] = RTPG_SUP_AO | (peers ? RTPG_SUP_AN : 0);
	conf_put_be16(&d[2], id);
	/* d[5] status code 0: no transition happened here; states follow
	 * the configuration only */
	d[7] = 1;               /* target port count */
	conf_put_be16(&d[8 + 2], id);
	return RTPG_DESC_LEN;
}

void spc_report_tpgs(struct scsi_cmd *cmd)
{
	struct scsi_target *t = cmd->target;
	uint32_t alloc = conf_get_be32(&cmd->cdb[6]);
	uint8_t fmt = cmd->cdb[1] >> 5;
	uint8_t d[8 + 2 * SCSI_MAX_PORTS * RTPG_DESC_LEN];
	unsigned p, i;
	bool peers;

	if (fmt > 1) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 7);
		return scsi_cmd_complete(cmd);
	}
	memset(d, 0, sizeof(d));
	p = fmt ? 8 : 4;
	pthread_mutex_lock(&t->lock);
	peers = t->n_peer_tpgs > 0;
	for (i = 0; i < t->n_ports; i++)
		p += rtpg_group(&d[p], t->ports[i].tpgt, true, peers);
	for (i = 0; i < t->n_peer_tpgs; i++)
		p += rtpg_group(&d[p], t->peer_tpgs[i], false, peers);
	pthread_mutex_unlock(&t->lock);
	conf_put_be32(&d[0], p - 4);
	if (fmt) {
		d[4] = 0x10;    /* extended header format */
		d[5] = 0;       /* implicit transition time: immediate */
	}
	scsi_reply(cmd, d, p, alloc);
	scsi_cmd_complete(cmd);
}
