/*
 * target/scsi/lu.c - logical units, targets and I_T nexuses; the command
 * dispatcher with its opcode table; task management.
 *
 * Layer: the dispatcher, the top of target/scsi (target/scsi/README.md
 * "Layers"). May call: every other file of target/scsi (sbc.c, spc.c,
 * pr_out.c, pr.c, pr_state.c, sense.c, task.c), raid/raid.h, conf/. Nothing
 * in target/scsi calls it: its handlers are reached only through the
 * opcode table.
 *
 * Command life cycle (one scsi_cmd, single owner thread):
 *
 *   NEW --scsi_cmd_exec()--> CHECKED --op->fn()--> RUNNING --scsi_cmd_complete()--> DONE
 *     \                           \________________________________________________/^
 *      `-- refused by the dispatcher (bad LUN/opcode/CDB, data-out without W or ------'
 *          short of EDTL (xfer_check), UA, conflict)
 *
 *   NEW:     fields set by the transport; not on any list.
 *   CHECKED: shared checks passed; linked on lu->inflight (under lu->lock).
 *   RUNNING: volume I/O may be outstanding; cmd->aborted may be set by
 *            scsi_tmf() from any thread (scsi_cmd_abort()).
 *   DONE:    unlinked from lu->inflight; its LU reference dropped; cmd->done
 *            called exactly once.
 *
 * LU lifetime: the LUN lookup takes a reference (lu->refs) under the target
 * lock, held from NEW to DONE, refusals included, and by every scsi_tmf()
 * and counter read for as long as it touches the LU. A reload that unmaps
 * the LU frees it only when scsi_lu_inflight() (the references) is 0, and
 * scsi_lu_destroy() waits for 0: a command is never left holding a freed LU
 * between its lookup and its count on lu->inflight.
 *
 * Invariants (scsi_lu_check()): lu->n_inflight equals the length of
 * lu->inflight and is at most lu->refs; every UA queue holds at most
 * SCSI_UA_MAX entries.
 *
 * LUN views (per-initiator masking and mapping): every nexus holds its
 * resolved view (nexus->vlu/vtl/vro), built from the target's LUN map and
 * access table at nexus creation and rebuilt, under the target lock, by
 * every change of either (view_refresh_all). Commands, task management and
 * REPORT LUNS only ever look LUNs up through it. A rebuild that changes
 * what a nexus sees queues REPORTED LUNS DATA HAS CHANGED on the LUs of
 * its new view that hold UA state for it.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

/* ---- opcode table ---- */

/* ASYMMETRIC ACCESS STATE CHANGED */
#define ASC_ALUA_STATE_CHANGED 0x2a06

#define RW_READ (OPF_PR_READ | OPF_RCTD)
#define RW_WRITE (OPF_PR_WRITE | OPF_MEDIUM_WRITE | OPF_RCTD)
#define RW_WRITE_DATA (RW_WRITE | OPF_OUT_TRUNC)   /* WRITE, WRITE AND VERIFY */

/* Bytes a CDB moves (struct scsi_op.xfer), from its length fields: an
 * allocation or parameter list length in bytes, or a transfer length in
 * logical blocks. */
static uint64_t xf_byte4(const uint8_t *cdb)
{
	return cdb[4];
}

static uint64_t xf_be16_3(const uint8_t *cdb)
{
	return conf_get_be16(&cdb[3]);
}

static uint64_t xf_be16_7(const uint8_t *cdb)
{
	return conf_get_be16(&cdb[7]);
}

static uint64_t xf_be32_5(const uint8_t *cdb)
{
	return conf_get_be32(&cdb[5]);
}

static uint64_t xf_be32_6(const uint8_t *cdb)
{
	return conf_get_be32(&cdb[6]);
}

static uint64_t xf_be32_10(const uint8_t *cdb)
{
	return conf_get_be32(&cdb[10]);
}

static uint64_t xf_capacity10(const uint8_t *cdb)
{
	(void)cdb;
	return 8;
}

static uint64_t xf_blocks6(const uint8_t *cdb)
{
	return (uint64_t)(cdb[4] ? cdb[4] : 256) * SCSI_BS;  /* 0 means 256 (SBC-3) */
}

static uint64_t xf_blocks10(const uint8_t *cdb)
{
	return (uint64_t)conf_get_be16(&cdb[7]) * SCSI_BS;
}

static uint64_t xf_blocks12(const uint8_t *cdb)
{
	return (uint64_t)conf_get_be32(&cdb[6]) * SCSI_BS;
}

static uint64_t xf_blocks16(const uint8_t *cdb)
{
	return (uint64_t)conf_get_be32(&cdb[10]) * SCSI_BS;
}

/* VERIFY: data-out only with BYTCHK 1 (the blocks) or 3 (one block); 2 is
 * reserved and refused by sbc_verify() before it looks at any data. */
static uint64_t xf_verify(const uint8_t *cdb)
{
	uint8_t bytchk = (cdb[1] >> 1) & 3;
	uint64_t bytes = cdb[0] == OP_VERIFY_10 ? xf_blocks10(cdb)
			 : cdb[0] == OP_VERIFY_12 ? xf_blocks12(cdb) : xf_blocks16(cdb);

	if (bytchk == 1)
		return bytes;
	return bytchk == 3 && bytes ? SCSI_BS : 0;
}

/* WRITE SAME: one block of data-out, none with NDOB (WRITE SAME(16)). */
static uint64_t xf_write_same(const uint8_t *cdb)
{
	return cdb[0] == OP_WRITE_SAME_16 && (cdb[1] & 0x01) ? 0 : SCSI_BS;
}

/* COMPARE AND WRITE: the verify data and the write data, NUMBER OF LOGICAL
 * BLOCKS each. */
static uint64_t xf_compare_write(const uint8_t *cdb)
{
	return 2ull * cdb[13] * SCSI_BS;
}

static void report_opcodes(struct scsi_cmd *cmd);

#define DIR_IN(f) .dir = XFER_IN, .xfer = (f)
#define DIR_OUT(f) .dir = XFER_OUT, .xfer = (f)

static const struct scsi_op sai16_ops[32] = {
	[SAI_READ_CAPACITY_16] = { .fn = sbc_read_capacity16, .cdb_len = 16, DIR_IN(xf_be32_10),
		.flags = OPF_RCTD, .name = "READ CAPACITY(16)",
		.usage = { 0x9e, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0x01, 0x07 } },
	[SAI_GET_LBA_STATUS] = { .fn = sbc_get_lba_status, .cdb_len = 16, DIR_IN(xf_be32_10),
		.flags = OPF_PR_READ | OPF_RCTD, .name = "GET LBA STATUS",
		.usage = { 0x9e, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0xff, 0x00, 0x07 } },
};

static const struct scsi_op maint_in_ops[32] = {
	[MI_REPORT_TPGS] = { .fn = spc_report_tpgs, .cdb_len = 12, DIR_IN(xf_be32_6),
		.flags = OPF_RES2_OK | OPF_RCTD, .name = "REPORT TARGET PORT GROUPS",
		.usage = { 0xa3, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x07 } },
	[MI_REPORT_OPCODES] = { .fn = report_opcodes, .cdb_len = 12, DIR_IN(xf_be32_6),
		.flags = OPF_RES2_OK | OPF_RCTD, .name = "REPORT SUPPORTED OPERATION CODES",
		.usage = { 0xa3, 0x1f, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x07 } },
	[MI_REPORT_TMFS] = { .fn = spc_report_tmfs, .cdb_len = 12, DIR_IN(xf_be32_6),
		.flags = OPF_RES2_OK | OPF_RCTD, .name = "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS",
		.usage = { 0xa3, 0x1f, 0x80, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x07 } },
};

#define PRIN_SA(n) [n] = { .fn = pr_in, .cdb_len = 10, .flags = OPF_RCTD, DIR_IN(xf_be16_7), \
	.name = "PERSISTENT RESERVE IN",                                                     \
	.usage = { 0x5e, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x07 } }
#define PROUT_SA(n) [n] = { .fn = pr_out, .cdb_len = 10, .flags = OPF_RCTD, DIR_OUT(xf_be32_5), \
	.name = "PERSISTENT RESERVE OUT",                                                    \
	.usage = { 0x5f, 0x1f, 0xff, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x07 } }

static const struct scsi_op prin_ops[32] = { PRIN_SA(0), PRIN_SA(1), PRIN_SA(2), PRIN_SA(3) };
static const struct scsi_op prout_ops[32] = { PROUT_SA(0), PROUT_SA(1), PROUT_SA(2), PROUT_SA(3),
					      PROUT_SA(4), PROUT_SA(5), PROUT_SA(6), PROUT_SA(7) };

/* EXTENDED COPY: service action 00h is LID1 (SPC-4 6.4); the copy's own
 * reservation checks are those of its source and destination LUs
 * (xcopy.c), so the entry carries no OPF_PR_* flag */
static const struct scsi_op xcopy_ops[32] = {
	[0x00] = { .fn = xcopy_extended_copy, .cdb_len = 16, DIR_OUT(xf_be32_10),
		.flags = OPF_RCTD, .name = "EXTENDED COPY(LID1)",
		.usage = { 0x83, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff,
			   0xff, 0xff, 0xff, 0x00, 0x07 } },
};

/* RECEIVE COPY RESULTS: RECEIVE DATA (01h) is not supported (no inline or
 * held data: the dispatcher answers INVALID FIELD IN CDB) */
#define RCR_SA(n) [n] = { .fn = xcopy_receive_results, .cdb_len = 16, DIR_IN(xf_be32_10), \
	.flags = OPF_RCTD, .name = "RECEIVE COPY RESULTS",                                   \
	.usage = { 0x84, 0x1f, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,     \
		   0xff, 0xff, 0x00, 0x07 } }
static const struct scsi_op rcr_ops[32] = { RCR_SA(RCR_COPY_STATUS), RCR_SA(RCR_OPERATING_PARAMS),
					    RCR_SA(RCR_FAILED_SEGMENT) };

static const struct scsi_op ops[256] = {
	[OP_TEST_UNIT_READY] = { .fn = spc_test_unit_ready, .cdb_len = 6, .flags = OPF_RCTD,
		.name = "TEST UNIT READY", .usage = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x07 } },
	[OP_REQUEST_SENSE] = { .fn = spc_request_sense, .cdb_len = 6, DIR_IN(xf_byte4),
		.flags = OPF_ANY_LUN | OPF_NO_UA | OPF_RES2_OK | OPF_RCTD, .name = "REQUEST SENSE",
		.usage = { 0x03, 0x01, 0x00, 0x00, 0xff, 0x07 } },
	[OP_READ_6] = { .fn = sbc_read, .cdb_len = 6, DIR_IN(xf_blocks6),
		.flags = RW_READ, .name = "READ(6)",
		.usage = { 0x08, 0x1f, 0xff, 0xff, 0xff, 0x07 } },
	[OP_WRITE_6] = { .fn = sbc_write, .cdb_len = 6, DIR_OUT(xf_blocks6),
		.flags = RW_WRITE_DATA, .name = "WRITE(6)",
		.usage = { 0x0a, 0x1f, 0xff, 0xff, 0xff, 0x07 } },
	[OP_INQUIRY] = { .fn = spc_inquiry, .cdb_len = 6, DIR_IN(xf_be16_3),
		.flags = OPF_ANY_LUN | OPF_NO_UA | OPF_RES2_OK | OPF_RCTD, .name = "INQUIRY",
		.usage = { 0x12, 0x01, 0xff, 0xff, 0xff, 0x07 } },
	[OP_MODE_SELECT_6] = { .fn = spc_mode_select, .cdb_len = 6, DIR_OUT(xf_byte4),
		.flags = OPF_PR_WRITE | OPF_RCTD, .name = "MODE SELECT(6)",
		.usage = { 0x15, 0x11, 0x00, 0x00, 0xff, 0x07 } },
	[OP_RESERVE_6] = { .fn = pr_reserve6, .cdb_len = 6, .flags = OPF_RCTD,
		.name = "RESERVE(6)", .usage = { 0x16, 0x00, 0x00, 0x00, 0x00, 0x07 } },
	[OP_RELEASE_6] = { .fn = pr_release6, .cdb_len = 6, .flags = OPF_RES2_OK | OPF_RCTD,
		.name = "RELEASE(6)", .usage = { 0x17, 0x00, 0x00, 0x00, 0x00, 0x07 } },
	[OP_MODE_SENSE_6] = { .fn = spc_mode_sense, .cdb_len = 6, DIR_IN(xf_byte4),
		.flags = OPF_PR_READ | OPF_RCTD, .name = "MODE SENSE(6)",
		.usage = { 0x1a, 0x08, 0xff, 0xff, 0xff, 0x07 } },
	[OP_START_STOP_UNIT] = { .fn = spc_start_stop, .cdb_len = 6,
		.flags = OPF_PR_READ | OPF_RCTD, .name = "START STOP UNIT",
		.usage = { 0x1b, 0x01, 0x00, 0x0f, 0xf7, 0x07 } },
	[OP_PREVENT_ALLOW] = { .fn = spc_prevent_allow, .cdb_len = 6,
		.flags = OPF_PR_READ | OPF_RCTD, .name = "PREVENT ALLOW MEDIUM REMOVAL",
		.usage = { 0x1e, 0x00, 0x00, 0x00, 0x03, 0x07 } },
	[OP_READ_CAPACITY_10] = { .fn = sbc_read_capacity10, .cdb_len = 10, DIR_IN(xf_capacity10),
		.flags = OPF_RCTD, .name = "READ CAPACITY(10)",
		.usage = { 0x25, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x01, 0x07 } },
	[OP_READ_10] = { .fn = sbc_read, .cdb_len = 10, DIR_IN(xf_blocks10),
		.flags = RW_READ, .name = "READ(10)",
		.usage = { 0x28, 0xfa, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_WRITE_10] = { .fn = sbc_write, .cdb_len = 10, DIR_OUT(xf_blocks10),
		.flags = RW_WRITE_DATA, .name = "WRITE(10)",
		.usage = { 0x2a, 0xfa, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_WRITE_VERIFY_10] = { .fn = sbc_write, .cdb_len = 10, DIR_OUT(xf_blocks10),
		.flags = RW_WRITE_DATA,
		.name = "WRITE AND VERIFY(10)",
		.usage = { 0x2e, 0xf2, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_VERIFY_10] = { .fn = sbc_verify, .cdb_len = 10, DIR_OUT(xf_verify),
		.flags = RW_READ, .name = "VERIFY(10)",
		.usage = { 0x2f, 0xf6, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_PRE_FETCH_10] = { .fn = sbc_prefetch, .cdb_len = 10, .flags = RW_READ,
		.name = "PRE-FETCH(10)",
		.usage = { 0x34, 0x02, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_SYNC_CACHE_10] = { .fn = sbc_sync_cache, .cdb_len = 10,
		.flags = OPF_PR_WRITE | OPF_RCTD, .name = "SYNCHRONIZE CACHE(10)",
		.usage = { 0x35, 0x02, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_WRITE_SAME_10] = { .fn = sbc_write_same, .cdb_len = 10, DIR_OUT(xf_write_same),
		.flags = RW_WRITE,
		.name = "WRITE SAME(10)",
		.usage = { 0x41, 0xea, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xff, 0xff, 0x07 } },
	/* ANCHOR (byte 1 bit 0) is refused: ANC_SUP=0 */
	[OP_UNMAP] = { .fn = sbc_unmap, .cdb_len = 10, DIR_OUT(xf_be16_7),
		.flags = RW_WRITE | OPF_THIN, .name = "UNMAP",
		.usage = { 0x42, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0xff, 0xff, 0x07 } },
	[OP_MODE_SELECT_10] = { .fn = spc_mode_select, .cdb_len = 10, DIR_OUT(xf_be16_7),
		.flags = OPF_PR_WRITE | OPF_RCTD, .name = "MODE SELECT(10)",
		.usage = { 0x55, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x07 } },
	[OP_RESERVE_10] = { .fn = pr_reserve6, .cdb_len = 10, .flags = OPF_RCTD,
		.name = "RESERVE(10)",
		.usage = { 0x56, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07 } },
	[OP_RELEASE_10] = { .fn = pr_release6, .cdb_len = 10, .flags = OPF_RES2_OK | OPF_RCTD,
		.name = "RELEASE(10)",
		.usage = { 0x57, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07 } },
	[OP_MODE_SENSE_10] = { .fn = spc_mode_sense, .cdb_len = 10, DIR_IN(xf_be16_7),
		.flags = OPF_PR_READ | OPF_RCTD, .name = "MODE SENSE(10)",
		.usage = { 0x5a, 0x18, 0xff, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0x07 } },
	[OP_PR_IN] = { .fn = pr_in, .cdb_len = 10, .flags = OPF_RCTD,
		.name = "PERSISTENT RESERVE IN", .sa = prin_ops, .n_sa = 32 },
	[OP_PR_OUT] = { .fn = pr_out, .cdb_len = 10, .flags = OPF_RCTD,
		.name = "PERSISTENT RESERVE OUT", .sa = prout_ops, .n_sa = 32 },
	[OP_EXTENDED_COPY] = { .fn = NULL, .cdb_len = 16, .name = "EXTENDED COPY",
		.sa = xcopy_ops, .n_sa = 32 },
	[OP_RECEIVE_COPY_RESULTS] = { .fn = NULL, .cdb_len = 16, .name = "RECEIVE COPY RESULTS",
		.sa = rcr_ops, .n_sa = 32 },
	[OP_READ_16] = { .fn = sbc_read, .cdb_len = 16, DIR_IN(xf_blocks16),
		.flags = RW_READ, .name = "READ(16)",
		.usage = { 0x88, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_COMPARE_AND_WRITE] = { .fn = sbc_compare_write, .cdb_len = 16, DIR_OUT(xf_compare_write),
		.flags = RW_WRITE,
		.name = "COMPARE AND WRITE",
		.usage = { 0x89, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00,
			   0x00, 0xff, 0x3f, 0x07 } },
	[OP_WRITE_16] = { .fn = sbc_write, .cdb_len = 16, DIR_OUT(xf_blocks16),
		.flags = RW_WRITE_DATA, .name = "WRITE(16)",
		.usage = { 0x8a, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_WRITE_VERIFY_16] = { .fn = sbc_write, .cdb_len = 16, DIR_OUT(xf_blocks16),
		.flags = RW_WRITE_DATA,
		.name = "WRITE AND VERIFY(16)",
		.usage = { 0x8e, 0xf2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_VERIFY_16] = { .fn = sbc_verify, .cdb_len = 16, DIR_OUT(xf_verify),
		.flags = RW_READ, .name = "VERIFY(16)",
		.usage = { 0x8f, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_PRE_FETCH_16] = { .fn = sbc_prefetch, .cdb_len = 16, .flags = RW_READ,
		.name = "PRE-FETCH(16)",
		.usage = { 0x90, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_SYNC_CACHE_16] = { .fn = sbc_sync_cache, .cdb_len = 16,
		.flags = OPF_PR_WRITE | OPF_RCTD, .name = "SYNCHRONIZE CACHE(16)",
		.usage = { 0x91, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_WRITE_SAME_16] = { .fn = sbc_write_same, .cdb_len = 16, DIR_OUT(xf_write_same),
		.flags = RW_WRITE,
		.name = "WRITE SAME(16)",
		.usage = { 0x93, 0xeb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, 0x3f, 0x07 } },
	[OP_SAI_16] = { .fn = NULL, .cdb_len = 16, .name = "SERVICE ACTION IN(16)",
		.sa = sai16_ops, .n_sa = 32 },
	[OP_REPORT_LUNS] = { .fn = spc_report_luns, .cdb_len = 12, DIR_IN(xf_be32_6),
		.flags = OPF_ANY_LUN | OPF_NO_UA | OPF_RES2_OK | OPF_RCTD, .name = "REPORT LUNS",
		.usage = { 0xa0, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x07 } },
	[OP_MAINT_IN] = { .fn = NULL, .cdb_len = 12, .name = "MAINTENANCE IN",
		.sa = maint_in_ops, .n_sa = 32 },
	[OP_READ_12] = { .fn = sbc_read, .cdb_len = 12, DIR_IN(xf_blocks12),
		.flags = RW_READ, .name = "READ(12)",
		.usage = { 0xa8, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f,
			   0x07 } },
	[OP_WRITE_12] = { .fn = sbc_write, .cdb_len = 12, DIR_OUT(xf_blocks12),
		.flags = RW_WRITE_DATA, .name = "WRITE(12)",
		.usage = { 0xaa, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f,
			   0x07 } },
	[OP_WRITE_VERIFY_12] = { .fn = sbc_write, .cdb_len = 12, DIR_OUT(xf_blocks12),
		.flags = RW_WRITE_DATA,
		.name = "WRITE AND VERIFY(12)",
		.usage = { 0xae, 0xf2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f,
			   0x07 } },
	[OP_VERIFY_12] = { .fn = sbc_verify, .cdb_len = 12, DIR_OUT(xf_verify),
		.flags = RW_READ, .name = "VERIFY(12)",
		.usage = { 0xaf, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f,
			   0x07 } },
};

static const struct scsi_op *op_lookup(uint8_t opcode)
{
	const struct scsi_op *op = &ops[opcode];

	return op->fn || op->sa ? op : NULL;
}

/* ---- REPORT SUPPORTED OPERATION CODES ---- */

/* The handler of the table itself: it reads the table, so it is here, not
 * among the handlers of spc.c that the table points to. */

static unsigned put_timeouts(uint8_t *d)
{
	memset(d, 0, 12);
	conf_put_be16(&d[0], 0x0a);
	conf_put_be32(&d[4], 1);     /* nominal: 1 s */
	conf_put_be32(&d[8], 30);    /* recommended: 30 s */
	return 12;
}

static unsigned put_cmd_desc(uint8_t *d, uint8_t opcode, const struct scsi_op *o, bool sa,
			     uint8_t sav, bool rctd)
{
	memset(d, 0, 8);
	d[0] = opcode;
	conf_put_be16(&d[2], sa ? sav : 0);
	d[5] = (uint8_t)((rctd ? 0x02 : 0) | (sa ? 0x01 : 0));
	conf_put_be16(&d[6], o->cdb_len);
	if (rctd)
		return 8 + put_timeouts(&d[8]);
	return 8;
}

/* Whether @o exists on the command's LU (the dispatcher's OPF_THIN rule). */
static bool op_here(struct scsi_cmd *cmd, const struct scsi_op *o)
{
	const struct scsi_lu *lu = scsi_cmd_lu(cmd);

	return !(o->flags & OPF_THIN) || (lu && lu->prov.thin);
}

static void report_opcodes(struct scsi_cmd *cmd)
{
	uint8_t opt = cmd->cdb[2] & 0x07, req_op = cmd->cdb[3];
	bool rctd = cmd->cdb[2] & 0x80;
	uint16_t req_sa = conf_get_be16(&cmd->cdb[4]);
	uint32_t alloc = conf_get_be32(&cmd->cdb[6]);
	uint8_t one[64];
	const struct scsi_op *o, *s;
	unsigned p = 4, i, j;

	if (opt == 0) {
		uint8_t *buf = malloc(4 + 20 * 512);

		if (!buf) {
			scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
			return scsi_cmd_complete(cmd);
		}
		for (i = 0; i < 256; i++) {
			o = op_lookup((uint8_t)i);
			if (!o || !op_here(cmd, o))
				continue;
			if (!o->sa) {
				p += put_cmd_desc(&buf[p], (uint8_t)i, o, false, 0, rctd);
				continue;
			}
			for (j = 0; j < o->n_sa; j++) {
				s = &o->sa[j];
				if (s->fn)
					p += put_cmd_desc(&buf[p], (uint8_t)i, s, true, (uint8_t)j,
							  rctd);
			}
		}
		conf_put_be32(&buf[0], p - 4);
		scsi_reply(cmd, buf, p, alloc);
		free(buf);
		return scsi_cmd_complete(cmd);
	}
	if (opt > 3) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 2);
		return scsi_cmd_complete(cmd);
	}
	o = op_lookup(req_op);
	if (o && !op_here(cmd, o))
		o = NULL;
	if (o && o->sa) {
		if (opt == 1) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 2);
			return scsi_cmd_complete(cmd);
		}
		s = req_sa < o->n_sa && o->sa[req_sa].fn ? &o->sa[req_sa] : NULL;
	} else {
		if (o && opt == 2) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 2);
			return scsi_cmd_complete(cmd);
		}
		s = o;
	}
	memset(one, 0, sizeof(one));
	if (!s) {
		one[1] = 0x01;  /* not supported */
		p = 4;
	} else {
		one[1] = (uint8_t)((rctd ? 0x80 : 0) | 0x03);
		conf_put_be16(&one[2], s->cdb_len);
		memcpy(&one[4], s->usage, s->cdb_len);
		if (o->sa)
			one[5] = (uint8_t)((s->usage[1] & 0xe0) | req_sa);
		p = 4 + s->cdb_len;
		if (rctd)
			p += put_timeouts(&one[p]);
	}
	scsi_reply(cmd, one, p, alloc);
	scsi_cmd_complete(cmd);
}

bool scsi_lu_check(struct scsi_lu *lu)
{
	const struct scsi_cmd *c;
	const struct scsi_ua *ua;
	unsigned n = 0;
	bool ok = true;

	pthread_mutex_lock(&lu->lock);
	for (c = lu->inflight; c; c = c->snext)
		n++;
	if (n != lu->n_inflight || n > atomic_load(&lu->refs))
		ok = false;
	for (ua = lu->uas; ua; ua = ua->next)
		if (ua->n > SCSI_UA_MAX)
			ok = false;
	pthread_mutex_unlock(&lu->lock);
	return ok;
}

/* ---- logical units ---- */

int scsi_lu_create(const struct scsi_lu_params *p, struct scsi_lu **out)
{
	struct scsi_lu *lu;
	unsigned i;
	int rc;

	if (!p || !p->vol || !out)
		return -EINVAL;
	lu = calloc(1, sizeof(*lu));
	if (!lu)
		return -ENOMEM;
	conf_hist_init(&lu->st_lat, SCSI_LAT_SUB_BITS, SCSI_LAT_MAX_EXP);
	lu->vol = p->vol;
	lu->name = strdup(p->name ? p->name : raid_vol_name(p->vol));
	if (!lu->name) {
		rc = -ENOMEM;
		goto free_lu;
	}
	if (p->pr_path) {
		lu->pr_path = strdup(p->pr_path);
		if (!lu->pr_path) {
			rc = -ENOMEM;
			goto free_name;
		}
	}
	atomic_init(&lu->nblocks, raid_vol_bytes(p->vol) >> SCSI_BS_SHIFT);
	raid_vol_uuid(p->vol, lu->uuid);
	for (i = 0; i < 16; i++)
		snprintf(&lu->serial[2 * i], 3, "%02x", lu->uuid[i]);
	lu->hdd_rpm = p->hdd_rpm;
	raid_vol_provisioning(p->vol, &lu->prov);
	/* crossings before this LU existed (an earlier run) were reported
	 * then: only new ones are */
	atomic_init(&lu->thin_events_seen, raid_vol_thin_threshold_events(p->vol));
	lu->mode.wce = true;
	rc = pthread_mutex_init(&lu->lock, NULL);
	if (rc) {
		rc = -rc;
		goto free_path;
	}
	rc = pr_load(lu);
	if (rc < 0) {
		LOG_ERR("scsi", "%s: cannot load reservations from %s: %s", lu->name, lu->pr_path,
			strerror(-rc));
		goto destroy_lock;
	}
	*out = lu;
	return 0;

destroy_lock:
	pthread_mutex_destroy(&lu->lock);
free_path:
	free(lu->pr_path);
free_name:
	free(lu->name);
free_lu:
	free(lu);
	return rc;
}

void scsi_lu_destroy(struct scsi_lu *lu)
{
	struct scsi_ua *ua, *next;

	if (!lu)
		return;
	/* Unmapped from every target by now (the caller's duty), so no new
	 * reference can appear: wait for the holders still inside, which
	 * scsi_lu_inflight() told the caller about. */
	while (atomic_load_explicit(&lu->refs, memory_order_acquire) != 0)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	assert(lu->n_inflight == 0);
	for (ua = lu->uas; ua; ua = next) {
		next = ua->next;
		free(ua);
	}
	while (lu->dfr_gone) {
		struct scsi_dfr_gone *g = lu->dfr_gone;

		lu->dfr_gone = g->next;
		free(g->iport);
		free(g);
	}
	pr_free(lu);
	pthread_mutex_destroy(&lu->lock);
	free(lu->pr_path);
	free(lu->name);
	free(lu);
}

/* ---- LUN views ---- */

static void access_view_free(struct scsi_access_view *v)
{
	for (unsigned i = 0; i < v->n_ini; i++)
		free(v->ini[i]);
	free(v->ini);
	free(v->map);
}

static void access_free(struct scsi_access *a)
{
	if (!a)
		return;
	for (unsigned i = 0; i < a->n_views; i++)
		access_view_free(&a->views[i]);
	free(a->views);
	access_view_free(&a->dflt);
	free(a);
}

/* Copies @src into @dst; -EINVAL for a bad or repeated number. */
static int access_view_copy(struct scsi_access_view *dst, const struct scsi_view *src,
			    bool names)
{
	bool seen[SCSI_MAX_LUNS] = { false };

	memset(dst, 0, sizeof(*dst));
	if (!src)
		return 0;
	if ((src->n_map && !src->map) || (names && src->n_initiators && !src->initiators))
		return -EINVAL;
	for (unsigned i = 0; i < src->n_map; i++) {
		const struct scsi_lun_map *m = &src->map[i];

		if (m->lun >= SCSI_MAX_LUNS || m->target_lun >= SCSI_MAX_LUNS || seen[m->lun])
			return -EINVAL;
		seen[m->lun] = true;
	}
	if (src->n_map) {
		dst->map = calloc(src->n_map, sizeof(*dst->map));
		if (!dst->map)
			return -ENOMEM;
		memcpy(dst->map, src->map, src->n_map * sizeof(*dst->map));
		dst->n_map = src->n_map;
	}
	if (names && src->n_initiators) {
		dst->ini = calloc(src->n_initiators, sizeof(*dst->ini));
		if (!dst->ini)
			return -ENOMEM;
		for (unsigned i = 0; i < src->n_initiators; i++) {
			if (!src->initiators[i])
				return -EINVAL;
			dst->ini[i] = strdup(src->initiators[i]);
			if (!dst->ini[i])
				return -ENOMEM;
			dst->n_ini++;
		}
	}
	return 0;
}

/* The view of @n's initiator in @a: the first listing its name (the part
 * of the initiator port name before ",i,"), else the default one. */
static const struct scsi_access_view *view_of(const struct scsi_access *a,
					      const struct scsi_nexus *n)
{
	const char *end = strstr(n->iport, ",i,");
	size_t len = end ? (size_t)(end - n->iport) : strlen(n->iport);

	for (unsigned i = 0; i < a->n_views; i++)
		for (unsigned k = 0; k < a->views[i].n_ini; k++)
			if (strlen(a->views[i].ini[k]) == len &&
			    strncasecmp(a->views[i].ini[k], n->iport, len) == 0)
				return &a->views[i];
	return &a->dflt;
}

/*
 * Rebuilds @n's resolved view from t->luns and t->access; caller holds
 * t->lock. With @announce, a change queues REPORTED LUNS DATA HAS CHANGED
 * on each LU of the new view that already holds UA state for @n (a nexus
 * that never addressed an LU gets POWER ON, RESET OCCURRED there first,
 * which tells an initiator to rescan as well).
 */
static void view_refresh(struct scsi_target *t, struct scsi_nexus *n, bool announce)
{
	struct scsi_lu *lu[SCSI_MAX_LUNS] = { NULL };
	uint16_t tl[SCSI_MAX_LUNS];
	bool ro[SCSI_MAX_LUNS] = { false };
	bool changed = false;
	unsigned i;

	for (i = 0; i < SCSI_MAX_LUNS; i++)
		tl[i] = SCSI_MAX_LUNS;
	if (!t->access) {
		for (i = 0; i < SCSI_MAX_LUNS; i++)
			if (t->luns[i]) {
				lu[i] = t->luns[i];
				tl[i] = (uint16_t)i;
			}
	} else {
		const struct scsi_access_view *v = view_of(t->access, n);

		for (i = 0; i < v->n_map; i++) {
			const struct scsi_lun_map *m = &v->map[i];

			if (!t->luns[m->target_lun])
				continue;
			lu[m->lun] = t->luns[m->target_lun];
			tl[m->lun] = m->target_lun;
			ro[m->lun] = m->read_only;
		}
	}
	for (i = 0; i < SCSI_MAX_LUNS && !changed; i++)
		changed = lu[i] != n->vlu[i] || ro[i] != n->vro[i];
	memcpy(n->vlu, lu, sizeof(lu));
	memcpy(n->vtl, tl, sizeof(tl));
	memcpy(n->vro, ro, sizeof(ro));
	if (!changed || !announce)
		return;
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_ua *ua;

		if (!lu[i])
			continue;
		pthread_mutex_lock(&lu[i]->lock);
		ua = scsi_ua_get(lu[i], n, false);
		if (ua)
			scsi_ua_add(ua, ASC_LUNS_CHANGED);
		pthread_mutex_unlock(&lu[i]->lock);
	}
}

/* Every nexus of @t; caller holds t->lock. */
static void view_refresh_all(struct scsi_target *t)
{
	for (struct scsi_nexus *n = t->nexuses; n; n = n->next)
		view_refresh(t, n, true);
}

int scsi_target_set_access(struct scsi_target *t, const struct scsi_view *views,
			   unsigned n_views, const struct scsi_view *dflt)
{
	struct scsi_access *a = NULL, *old;
	int rc = 0;

	if (!t || (n_views && !views))
		return -EINVAL;
	if (n_views || dflt) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return -ENOMEM;
		if (n_views) {
			a->views = calloc(n_views, sizeof(*a->views));
			if (!a->views) {
				rc = -ENOMEM;
				goto fail;
			}
		}
		for (unsigned i = 0; i < n_views && !rc; i++) {
			rc = access_view_copy(&a->views[i], &views[i], true);
			a->n_views = i + 1; /* freed on failure, partly filled or not */
		}
		if (!rc)
			rc = access_view_copy(&a->dflt, dflt, false);
		if (rc)
			goto fail;
	}
	pthread_mutex_lock(&t->lock);
	old = t->access;
	t->access = a;
	view_refresh_all(t);
	pthread_mutex_unlock(&t->lock);
	access_free(old);
	return 0;

fail:
	access_free(a);
	return rc;
}

uint64_t scsi_nexus_target_lun(struct scsi_nexus *n, uint64_t lun)
{
	uint64_t tl;

	if (lun == UINT64_MAX || !n)
		return lun;
	if (lun >= SCSI_MAX_LUNS)
		return SCSI_NO_LUN;
	pthread_mutex_lock(&n->t->lock);
	tl = n->vtl[lun] < SCSI_MAX_LUNS ? n->vtl[lun] : SCSI_NO_LUN;
	pthread_mutex_unlock(&n->t->lock);
	return tl;
}

/* ---- targets ---- */

int scsi_target_create(const char *iqn, struct scsi_target **out)
{
	struct scsi_target *t;
	int rc;

	if (!iqn || !*iqn || !out)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->iqn = strdup(iqn);
	if (!t->iqn) {
		rc = -ENOMEM;
		goto free_t;
	}
	rc = pthread_mutex_init(&t->lock, NULL);
	if (rc) {
		rc = -rc;
		goto free_iqn;
	}
	*out = t;
	return 0;

free_iqn:
	free(t->iqn);
free_t:
	free(t);
	return rc;
}

void scsi_target_destroy(struct scsi_target *t)
{
	if (!t)
		return;
	/* nexuses belong to the transport; it must have destroyed them */
	assert(t->nexuses == NULL);
	access_free(t->access);
	pthread_mutex_destroy(&t->lock);
	free(t->iqn);
	free(t);
}

int scsi_target_add_lu(struct scsi_target *t, uint64_t lun, struct scsi_lu *lu)
{
	if (!t || !lu || lun >= SCSI_MAX_LUNS)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (t->luns[lun]) {
		pthread_mutex_unlock(&t->lock);
		return -EEXIST;
	}
	t->luns[lun] = lu;
	/* sessions already logged in whose view now holds it see REPORTED
	 * LUNS DATA HAS CHANGED on their other LUs */
	view_refresh_all(t);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int scsi_target_add_port(struct scsi_target *t, uint16_t rel_port, uint16_t tpgt)
{
	unsigned i;
	int rc = 0;

	if (!t || rel_port == 0)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->n_ports; i++)
		if (t->ports[i].rel_port == rel_port) {
			rc = -EEXIST;
			goto out;
		}
	if (t->n_ports == SCSI_MAX_PORTS) {
		rc = -ENOSPC;
		goto out;
	}
	/* a group reported as another node's cannot also be ours */
	for (i = 0; i < t->n_peer_tpgs; i++)
		if (t->peer_tpgs[i] == tpgt || t->peer_tpgs[i] == rel_port) {
			rc = -EEXIST;
			goto out;
		}
	t->ports[t->n_ports].rel_port = rel_port;
	t->ports[t->n_ports].tpgt = tpgt;
	t->n_ports++;
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int scsi_target_remove_port(struct scsi_target *t, uint16_t rel_port)
{
	unsigned i;
	int rc = -ENOENT;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->n_ports; i++)
		if (t->ports[i].rel_port == rel_port) {
			t->ports[i] = t->ports[--t->n_ports];
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

unsigned scsi_target_ports(struct scsi_target *t, uint16_t *rel_ports, unsigned max)
{
	unsigned i, n;

	pthread_mutex_lock(&t->lock);
	n = t->n_ports;
	for (i = 0; i < n && i < max; i++)
		rel_ports[i] = t->ports[i].rel_port;
	pthread_mutex_unlock(&t->lock);
	return n;
}

int scsi_target_set_peer_groups(struct scsi_target *t, const uint16_t *ids, unsigned n)
{
	bool changed;
	unsigned i, j;
	int rc = 0;

	if (!t || (n && !ids))
		return -EINVAL;
	if (n > SCSI_MAX_PORTS)
		return -E2BIG;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < n && !rc; i++) {
		if (ids[i] == 0)
			rc = -EINVAL;
		for (j = 0; j < i && !rc; j++)
			if (ids[j] == ids[i])
				rc = -EINVAL;
		for (j = 0; j < t->n_ports && !rc; j++)
			if (t->ports[j].tpgt == ids[i] || t->ports[j].rel_port == ids[i])
				rc = -EINVAL;
	}
	if (rc)
		goto out;
	changed = n != t->n_peer_tpgs ||
		  (n && memcmp(t->peer_tpgs, ids, n * sizeof(*ids)) != 0);
	if (!changed)
		goto out;
	if (n)
		memcpy(t->peer_tpgs, ids, n * sizeof(*ids));
	t->n_peer_tpgs = n;
	/* SPC-4 5.16.2.3: an implicit change of the reported states is
	 * announced to every I_T nexus so multipath re-reads them */
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lu *lu = t->luns[i];
		struct scsi_nexus *nx;

		if (!lu)
			continue;
		pthread_mutex_lock(&lu->lock);
		for (nx = t->nexuses; nx; nx = nx->next) {
			struct scsi_ua *ua = scsi_ua_get(lu, nx, false);

			if (ua)
				scsi_ua_add(ua, ASC_ALUA_STATE_CHANGED);
		}
		pthread_mutex_unlock(&lu->lock);
	}
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* ---- nexus ---- */

int scsi_nexus_create(struct scsi_target *t, const char *initiator_port, uint16_t rel_port,
		      struct scsi_nexus **out)
{
	struct scsi_nexus *n;
	unsigned i;
	int rc = -ENOENT;

	if (!t || !initiator_port || !*initiator_port || !out)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->iport = strdup(initiator_port);
	if (!n->iport) {
		rc = -ENOMEM;
		goto free_n;
	}
	n->t = t;
	n->rel_port = rel_port;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->n_ports; i++)
		if (t->ports[i].rel_port == rel_port) {
			n->tpgt = t->ports[i].tpgt;
			rc = 0;
		}
	if (rc == 0) {
		n->next = t->nexuses;
		t->nexuses = n;
		view_refresh(t, n, false);
	}
	pthread_mutex_unlock(&t->lock);
	if (rc)
		goto free_iport;
	*out = n;
	return 0;

free_iport:
	free(n->iport);
free_n:
	free(n);
	return rc;
}

void scsi_nexus_release(struct scsi_nexus *n)
{
	struct scsi_target *t;

	if (!n)
		return;
	t = n->t;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lu *lu = t->luns[i];

		if (!lu)
			continue;
		pthread_mutex_lock(&lu->lock);
		pr_nexus_gone(lu, n);
		pthread_mutex_unlock(&lu->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

void scsi_nexus_destroy(struct scsi_nexus *n)
{
	struct scsi_target *t;
	struct scsi_nexus **pp;
	unsigned i;

	if (!n)
		return;
	t = n->t;
	pthread_mutex_lock(&t->lock);
	for (pp = &t->nexuses; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lu *lu = t->luns[i];

		if (!lu)
			continue;
		pthread_mutex_lock(&lu->lock);
		pr_nexus_gone(lu, n);
		scsi_ua_drop(lu, n);
		pthread_mutex_unlock(&lu->lock);
	}
	pthread_mutex_unlock(&t->lock);
	free(n->iport);
	free(n);
}

/* ---- dispatch ---- */

static struct scsi_lu *target_lu(struct scsi_target *t, uint64_t lun)
{
	struct scsi_lu *lu = NULL;

	if (lun >= SCSI_MAX_LUNS)
		return NULL;
	pthread_mutex_lock(&t->lock);
	lu = t->luns[lun];
	pthread_mutex_unlock(&t->lock);
	return lu;
}

/*
 * The LU mapped at @lun of @t with a reference (lu->refs), NULL when none.
 * The reference is taken under the target lock that guards the map: a
 * reload unmaps the LU under that lock and frees it only once no reference
 * is left (scsi_lu_inflight(), scsi_lu_destroy()), so a holder can never see
 * the LU freed under it, whatever it does between lookup and scsi_lu_put().
 */
static struct scsi_lu *lu_get(struct scsi_target *t, uint64_t lun)
{
	struct scsi_lu *lu;

	if (lun >= SCSI_MAX_LUNS)
		return NULL;
	pthread_mutex_lock(&t->lock);
	lu = t->luns[lun];
	if (lu)
		atomic_fetch_add_explicit(&lu->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&t->lock);
	return lu;
}

/* The same through @n's view (@lun as @n numbers it; the target's own
 * numbering without a nexus); *@ro: reached through a read-only mapping. */
static struct scsi_lu *lu_get_view(struct scsi_target *t, struct scsi_nexus *n, uint64_t lun,
				   bool *ro)
{
	struct scsi_lu *lu;

	*ro = false;
	if (!n)
		return lu_get(t, lun);
	if (lun >= SCSI_MAX_LUNS)
		return NULL;
	pthread_mutex_lock(&t->lock);
	lu = n->vlu[lun];
	if (lu) {
		atomic_fetch_add_explicit(&lu->refs, 1, memory_order_relaxed);
		*ro = n->vro[lun];
	}
	pthread_mutex_unlock(&t->lock);
	return lu;
}

static void finish_early(struct scsi_cmd *cmd)
{
	scsi_cmd_release_lu(cmd);
	cmd->done(cmd);
}

/*
 * The transport's view of the data transfer (R/W bits, EDTL) against the
 * CDB's (op->dir, op->xfer), once for every command before it runs. Returns
 * false after setting the sense of a refusal.
 *
 * RFC 7143 11.4.1: R and W mean something only when EDTL is not 0 (either
 * may be set with EDTL 0). With EDTL 0 there is no buffer and nothing moves,
 * whatever the CDB asks: the transport reports the overflow, as it does when
 * a read asks for more than EDTL. Otherwise, for a CDB that moves data-out:
 *  - W must be set. Without it the transport runs the command at once,
 *    without soliciting Data-Out, and its buffer holds no byte the initiator
 *    sent: the command would store, compare or parse what the heap held
 *    before (another session's data).
 *  - EDTL must cover the data-out the CDB asks for. FCP-4 9.4.2 (the model
 *    SAM-5 leaves to the transports) lets the device server either process
 *    the command without the missing part (a) or transfer nothing and
 *    answer INVALID FIELD IN COMMAND INFORMATION UNIT (b). (a) means
 *    something only for WRITE and WRITE AND VERIFY cut at a block boundary
 *    (OPF_OUT_TRUNC: the blocks sent are written, as initiators and
 *    libiscsi's residual tests expect); half a WRITE SAME block, part of a
 *    COMPARE AND WRITE, of a VERIFY or of a parameter list is not a smaller
 *    command, so everything else gets (b).
 * The sense is ILLEGAL REQUEST, INVALID FIELD IN COMMAND INFORMATION UNIT
 * (0e/03), not INVALID FIELD IN CDB: the CDB is valid, what disagrees with it
 * is a field of the command IU around it (the iSCSI W bit or EDTL), the case
 * FCP-4 gives this code for.
 * A data-in CDB flagged W instead of R is not refused: the transport takes
 * the data-out and sends no data-in, nothing leaves the target (libiscsi's
 * READ10 with the W bit expects GOOD). A CDB that moves nothing, or less
 * than EDTL, is an underflow in either direction: it runs and the transport
 * reports the residual.
 */
static bool xfer_check(struct scsi_cmd *cmd, const struct scsi_op *op)
{
	uint64_t want = op->xfer ? op->xfer(cmd->cdb) : 0;
	const char *why = NULL;

	if (cmd->edtl == 0 || want == 0 || op->dir != XFER_OUT)
		return true;
	if (!cmd->dir_write)
		why = "data-out command without the W bit";
	else if (want > cmd->edtl &&
		 !((op->flags & OPF_OUT_TRUNC) && cmd->edtl % SCSI_BS == 0))
		why = "EDTL shorter than the data-out of the CDB";
	if (!why)
		return true;
	LOG_WARN("scsi", "%s: %s refused: %s (EDTL %u, CDB %llu bytes)",
		 cmd->nexus ? cmd->nexus->iport : "?", op->name, why, cmd->edtl,
		 (unsigned long long)want);
	scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
	cmd->xfer_len = want > UINT32_MAX ? UINT32_MAX : (uint32_t)want;
	return false;
}

void scsi_cmd_exec(struct scsi_cmd *cmd)
{
	const struct scsi_op *op;
	struct scsi_lu *lu;
	struct scsi_ua *ua;
	unsigned len;
	uint16_t code;
	bool ro;

	cmd->status = SCSI_GOOD;
	cmd->sense_len = 0;
	cmd->data_in_len = 0;
	cmd->xfer_len = 0;
	memset(cmd->spriv, 0, sizeof(cmd->spriv));
	memset(cmd->spriv_u, 0, sizeof(cmd->spriv_u));
	cmd->snext = cmd->sprev = NULL;

	/* held until done: counted below under the LU lock, but found here
	 * under the target lock, and a reload may unmap it in between */
	lu = lu_get_view(cmd->target, cmd->nexus, cmd->lun, &ro);
	cmd->spriv[0] = lu;
	cmd->spriv_u[SPRIV_VIEW_RO] = ro;
	op = op_lookup(cmd->cdb[0]);
	if (!lu && !(op && (op->flags & OPF_ANY_LUN))) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LUN_NOT_SUPPORTED);
		goto early;
	}
	if (!op) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
		goto early;
	}
	if (op->sa) {
		const struct scsi_op *sa = &op->sa[cmd->cdb[1] & 0x1f];

		if (!sa->fn) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 4);
			goto early;
		}
		op = sa;
	}
	if ((op->flags & OPF_THIN) && !(lu && lu->prov.thin)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
		goto early;
	}
	len = op->cdb_len;
	if (cmd->cdb_len < len) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
		goto early;
	}
	/* NACA=1 asks for ACA, which we do not support (NormACA=0) */
	if (cmd->cdb[len - 1] & 0x04) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, (uint16_t)(len - 1), 2);
		goto early;
	}
	if (!xfer_check(cmd, op))
		goto early;
	if (!lu) {
		op->fn(cmd);
		return;
	}

	if (lu->pr_bad && !(op->flags & OPF_NO_UA)) {
		scsi_sense(cmd, SK_NOT_READY, ASC_NOT_READY_MANUAL);
		goto early;
	}
	pthread_mutex_lock(&lu->lock);
	ua = scsi_ua_get(lu, cmd->nexus, true);
	if (ua && ua->n && !(op->flags & OPF_NO_UA)) {
		scsi_ua_pop(ua, &code);
		pthread_mutex_unlock(&lu->lock);
		scsi_sense(cmd, SK_UNIT_ATTENTION, code);
		goto early;
	}
	if (ua && !(op->flags & OPF_NO_UA) && scsi_deferred_pending(lu, ua)) {
		/* a write-out of data acknowledged earlier failed: told once,
		 * this command is not executed (SPC-4 4.5.5) */
		bool desc = lu->mode.d_sense;

		pthread_mutex_unlock(&lu->lock);
		LOG_WARN("scsi", "%s: %s: deferred error (a write-out of acknowledged data failed) reported on %s",
			 lu->name, cmd->nexus ? cmd->nexus->iport : "?", op->name);
		cmd->status = SCSI_CHECK_CONDITION;
		cmd->sense_len = (uint8_t)scsi_deferred_sense(cmd->sense, desc);
		goto early;
	}
	if (pr_conflict(lu, cmd->nexus, op, cmd->cdb)) {
		pthread_mutex_unlock(&lu->lock);
		cmd->status = SCSI_RESERVATION_CONFLICT;
		goto early;
	}
	cmd->spriv[1] = (void *)op;
	cmd->spriv_u[SPRIV_START_US] = conf_mono_us();
	cmd->snext = lu->inflight;
	if (lu->inflight)
		lu->inflight->sprev = cmd;
	lu->inflight = cmd;
	lu->n_inflight++;
	pthread_mutex_unlock(&lu->lock);
	LOG_DBG("scsi", "%s: %s lun %llu", lu->name, op->name, (unsigned long long)cmd->lun);
	op->fn(cmd);
	return;

early:
	finish_early(cmd);
}

/* ---- task management ---- */

static void abort_matching(struct scsi_lu *lu, const struct scsi_nexus *only)
{
	struct scsi_cmd *c;

	for (c = lu->inflight; c; c = c->snext)
		if (!only || c->nexus == only)
			scsi_cmd_abort(c);
}

/* A reset of @lu: SPC-4 / SAM-5 side effects. */
static void lu_reset(struct scsi_lu *lu, uint16_t ua_code,
		     bool target_reset)
{
	pthread_mutex_lock(&lu->lock);
	abort_matching(lu, NULL);
	/* copies reading or writing it from another LU stop too (xcopy.c) */
	atomic_fetch_add_explicit(&lu->resets, 1, memory_order_release);
	lu->res2 = NULL;
	/* a target reset is a hard reset: mode parameters go back to their
	 * defaults (we save none); a LUN reset keeps them */
	if (target_reset) {
		lu->mode.d_sense = false;
		lu->mode.swp = false;
		lu->mode.wce = true;
	}
	/* SAM-5: every I_T nexus, the requesting one included, learns of it
	 * (multipath initiators count the UA on each path) */
	scsi_ua_add_all(lu, NULL, ua_code);
	pthread_mutex_unlock(&lu->lock);
	/* a shared LU: the other nodes' nexuses learn of it too */
	pr_lu_reset(lu, ua_code);
}

void scsi_lu_reset(struct scsi_lu *lu)
{
	lu_reset(lu, ASC_BUS_DEVICE_RESET, false);
}

int scsi_tmf(struct scsi_target *t, struct scsi_nexus *by, uint64_t lun, enum scsi_tmf fn)
{
	struct scsi_lu *lu;
	unsigned i;
	bool ro;

	if (!t)
		return -EINVAL;
	switch (fn) {
	case SCSI_TMF_ABORT_TASK_SET:
	case SCSI_TMF_CLEAR_TASK_SET:
		lu = lu_get_view(t, by, lun, &ro);
		if (!lu)
			return -ENOENT;
		pthread_mutex_lock(&lu->lock);
		/* TST=000: one task set per nexus, so both only touch ours */
		abort_matching(lu, by);
		pthread_mutex_unlock(&lu->lock);
		scsi_lu_put(lu);
		return 0;
	case SCSI_TMF_LUN_RESET:
		lu = lu_get_view(t, by, lun, &ro);
		if (!lu)
			return -ENOENT;
		lu_reset(lu, ASC_BUS_DEVICE_RESET, false);
		scsi_lu_put(lu);
		return 0;
	case SCSI_TMF_TARGET_WARM_RESET:
	case SCSI_TMF_TARGET_COLD_RESET:
		/* the LUs the requester sees: a masked initiator must not
		 * abort the commands of LUs hidden from it */
		for (i = 0; i < SCSI_MAX_LUNS; i++) {
			lu = lu_get_view(t, by, i, &ro);
			if (lu)
				lu_reset(lu, ASC_POWER_ON_RESET, true);
			scsi_lu_put(lu);
		}
		return 0;
	}
	return -EINVAL;
}

/* Sum of one unsigned counter of struct scsi_lu (at @field, read under the
 * LU lock) over LUN @lun or, with UINT64_MAX, every LUN of @t. */
static unsigned lu_counter_sum(struct scsi_target *t, uint64_t lun, size_t field)
{
	unsigned n = 0, i;

	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lu *lu;

		if (lun != UINT64_MAX && lun != i)
			continue;
		lu = lu_get(t, i);
		if (!lu)
			continue;
		pthread_mutex_lock(&lu->lock);
		n += *(const unsigned *)((const char *)lu + field);
		pthread_mutex_unlock(&lu->lock);
		scsi_lu_put(lu);
	}
	return n;
}

_Static_assert(_Generic(((struct scsi_lu *)0)->n_inflight, unsigned: 1, default: 0) &&
	       _Generic(((struct scsi_lu *)0)->pr_resets_pending, unsigned: 1, default: 0),
	       "lu_counter_sum reads unsigned counters");

unsigned scsi_inflight(struct scsi_target *t, uint64_t lun)
{
	return lu_counter_sum(t, lun, offsetof(struct scsi_lu, n_inflight));
}

unsigned scsi_resets_pending(struct scsi_target *t, uint64_t lun)
{
	return lu_counter_sum(t, lun, offsetof(struct scsi_lu, pr_resets_pending));
}

/* ---- statistics ---- */

void scsi_lu_get_stats(struct scsi_lu *lu, struct scsi_lu_stats *out)
{
	/* status and stats ask now and then: a cheap moment to walk the lists */
	RTGT_CHECK(scsi_lu_check(lu));
	memset(out, 0, sizeof(*out));
	out->read_ops = atomic_load(&lu->st_read_ops);
	out->write_ops = atomic_load(&lu->st_write_ops);
	out->other_ops = atomic_load(&lu->st_other_ops);
	out->read_bytes = atomic_load(&lu->st_read_bytes);
	out->write_bytes = atomic_load(&lu->st_write_bytes);
	out->lat_count = conf_hist_count(&lu->st_lat);
	out->lat_p50_us = conf_hist_percentile(&lu->st_lat, 50);
	out->lat_p99_us = conf_hist_percentile(&lu->st_lat, 99);
}

const char *scsi_lu_name(const struct scsi_lu *lu)
{
	return lu->name;
}

const struct conf_hist *scsi_lu_lat(const struct scsi_lu *lu)
{
	return &lu->st_lat;
}

unsigned scsi_lu_inflight(struct scsi_lu *lu)
{
	return atomic_load_explicit(&lu->refs, memory_order_acquire);
}

struct scsi_lu *scsi_target_lu(struct scsi_target *t, uint64_t lun)
{
	return target_lu(t, lun);
}

int scsi_target_remove_lu(struct scsi_target *t, uint64_t lun)
{
	struct scsi_lu *gone;

	if (!t || lun >= SCSI_MAX_LUNS)
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	gone = t->luns[lun];
	if (!gone) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	t->luns[lun] = NULL;
	/* Forget this target's nexuses in the LU: they may be freed while it
	 * is unmapped (scsi_nexus_destroy only visits mapped LUs), and a later
	 * nexus at the same address must not inherit their state. */
	pthread_mutex_lock(&gone->lock);
	for (struct scsi_nexus *n = t->nexuses; n; n = n->next) {
		pr_nexus_gone(gone, n);
		scsi_ua_drop(gone, n);
	}
	pthread_mutex_unlock(&gone->lock);
	/* the LUs still in each changed view tell the change */
	view_refresh_all(t);
	pthread_mutex_unlock(&t->lock);
	return 0;
}
