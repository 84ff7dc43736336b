/*
 * target/iscsi/cmd.c - SCSI command flow over iSCSI: task creation from the
 * command PDU, immediate and unsolicited data, R2T and Data-Out, execution
 * through target/scsi, Data-In and SCSI Response with residuals.
 *
 * Task state machine (struct iscsi_task.state):
 *
 *   TASK_NEW --iscsi_session_submit queues it (CmdSN gap)--> TASK_QUEUED
 *   TASK_NEW / TASK_QUEUED --iscsi_cmd_dispatch, write still missing data--> TASK_DATA_OUT
 *   TASK_NEW / TASK_QUEUED / TASK_DATA_OUT --task_exec (all data here)--> TASK_EXEC
 *   TASK_EXEC --cmd_done: task_respond--> TASK_RESPONDING
 *   TASK_NEW / TASK_QUEUED --iscsi_cmd_dispatch with early_status--> TASK_RESPONDING
 *   TASK_RESPONDING --last queued PDU written (refs reach 0)--> freed
 *   any --iscsi_task_abort (TMF, conn close, dropped request)--> dead: unlinked
 *        at once unless inside scsi, where cmd_done unlinks it; no response
 *
 * References (refs): one for membership of conn->tasks, one while inside
 * scsi, one per queued Data-In/Response PDU pointing at the task's buffer.
 * A READ's data may come back partly lent by the volume (cmd.data_hold,
 * pieces in the members' memory): queue_datain cuts Data-In at piece
 * edges and points those PDUs at the pieces (mapped_tx counts them); the
 * hold ends when the last of them is written or fetched into the buffer
 * (conn.c conn_unmap, in the same wake-up), or with the task.
 *
 * Data-Out acceptance (ERL 0, DataPDUInOrder/DataSequenceInOrder honoured
 * as Yes): the unsolicited sequence (TTT 0xffffffff) covers
 * [imm_len, unsol_end) and each R2T sequence its own range; within a
 * sequence DataSN counts from 0 and offsets are contiguous. A violation
 * (wrong DataSN, offset, TTT, length) fails that command with CHECK
 * CONDITION / ABORTED COMMAND / DATA PHASE ERROR and discards the rest of
 * its data; the framing is intact, so the connection and the other
 * commands carry on (libiscsi's iSCSIDataSnInvalid test depends on the
 * session surviving: a drop makes its reconnect renegotiate ImmediateData
 * and hides the next case). Only a Data-Out for a non-write command or a
 * data digest error drops the connection. Windows sends Data-Out with a
 * wrong LUN: tasks are found by ITT only.
 *
 * Invariants (task_check): received <= buf_len; unsol_next <= unsol_end;
 * at most MaxOutstandingR2T active R2T slots; a dead task is never
 * executed; in_scsi iff state == TASK_EXEC. A write executes only once
 * received == EDTL (task_exec refuses it otherwise): accepted Data-Out never
 * overlap (offsets are checked against the sequence they belong to), so
 * every byte of its buffer then came from the initiator. Data-In is sent
 * only for GOOD / CONDITION MET and only the data_in_len bytes scsi wrote;
 * other buffers than a write's and a READ's (scsi_cdb_fills_data_in) are
 * zeroed at allocation.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"

/* SPC sense used for commands refused before they reach scsi */
#define SENSE_ILLEGAL_REQUEST 0x05
#define ASC_INVALID_FIELD_IN_CDB 0x24
#define SENSE_ABORTED_COMMAND 0x0b
#define ASC_DATA_PHASE_ERROR 0x4b

static void cmd_done(struct scsi_cmd *cmd);

static bool task_check(const struct iscsi_task *t)
{
	unsigned act = 0;

	for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++)
		if (t->r2t[i].active)
			act++;
	if (t->received > t->cmd.buf_len && t->cmd.buf_len)
		return false;
	if (t->unsol_next > t->unsol_end && t->unsol_open)
		return false;
	return act <= ISCSI_TGT_MAX_R2T && t->in_scsi == (t->state == TASK_EXEC);
}

/* ---------------- pure helpers ---------------- */

void iscsi_residual(uint32_t edtl, uint32_t xfer_len, uint8_t *flags, uint32_t *count)
{
	*flags = 0;
	*count = 0;
	if (xfer_len < edtl) {
		*flags = ISCSI_FLAG_UNDERFLOW;
		*count = edtl - xfer_len;
	} else if (xfer_len > edtl) {
		*flags = ISCSI_FLAG_OVERFLOW;
		*count = xfer_len - edtl;
	}
}

uint32_t iscsi_datain_count(uint32_t len, uint32_t max_dsl)
{
	if (max_dsl == 0)
		max_dsl = 8192;
	return (len + max_dsl - 1) / max_dsl;
}

bool iscsi_datain_final(uint32_t off, uint32_t seg, uint32_t len, uint32_t max_burst)
{
	uint32_t end = off + seg;

	/* RFC 7143 11.7.1: F ends each Data-In sequence, which may not exceed
	 * MaxBurstLength; bursts start at multiples of it because each PDU
	 * is cut so as not to cross a burst boundary. */
	if (end >= len)
		return true;
	return max_burst && end % max_burst == 0;
}

/* ---------------- task lifetime ---------------- */

struct iscsi_task *iscsi_task_find(struct iscsi_conn *c, uint32_t itt)
{
	for (struct iscsi_task *t = c->tasks; t; t = t->next)
		if (t->itt == itt)
			return t;
	return NULL;
}

/* ---------------- command buffers ---------------- */

/* Buffers up to 64 KiB come from a per-worker cache of power-of-two
 * blocks (malloc of 4 KiB and more leaves glibc's thread cache: a
 * measurable share of a small command's CPU). A reused block holds an
 * earlier command's bytes: cmd_buf_get() zeroes the @len bytes a command
 * may see unless the initiator writes every one of them (@zero false:
 * a write's buffer, filled to EDTL before it runs, see task_exec). */
static int bufc_class(uint32_t len)
{
	for (int i = 0; i < ISCSI_BUFC_CLASSES; i++)
		if (len <= (4096u << i))
			return i;
	return -1;
}

static uint8_t *cmd_buf_get(struct iscsi_wstate *w, uint32_t len, bool zero)
{
	int k = bufc_class(len);
	uint8_t *b;

	if (k < 0)
		return zero ? calloc(1, len) : malloc(len);
	b = w->bufc[k];
	if (b) {
		memcpy(&w->bufc[k], b, sizeof(void *));
		w->bufc_n[k]--;
	} else {
		b = malloc(4096u << k);
		if (!b)
			return NULL;
	}
	if (zero)
		memset(b, 0, len);
	return b;
}

static void cmd_buf_put(struct iscsi_wstate *w, uint8_t *b, uint32_t len)
{
	int k = bufc_class(len);

	if (!b)
		return;
	if (k < 0 || w->bufc_n[k] >= ISCSI_BUFC_MAX) {
		free(b);
		return;
	}
	memcpy(b, &w->bufc[k], sizeof(void *));
	w->bufc[k] = b;
	w->bufc_n[k]++;
}

void iscsi_bufc_drop(struct iscsi_wstate *w)
{
	for (int k = 0; k < ISCSI_BUFC_CLASSES; k++) {
		while (w->bufc[k]) {
			void *b = w->bufc[k];

			memcpy(&w->bufc[k], b, sizeof(void *));
			free(b);
		}
		w->bufc_n[k] = 0;
	}
}

static void task_free(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	if (t->immediate && c->n_imm)
		c->n_imm--;
	c->buf_bytes -= t->cmd.buf_len;
	atomic_fetch_sub(&c->srv->buf_bytes, t->cmd.buf_len);
	cmd_buf_put(c->w, t->cmd.buf, t->cmd.buf_len);
	scsi_cmd_data_release(&t->cmd);
	free(t);
	iscsi_conn_task_released(c);
}

void iscsi_task_put(struct iscsi_task *t)
{
	if (--t->refs == 0)
		task_free(t);
}

void iscsi_task_tx_unmapped(struct iscsi_tx *tx)
{
	struct iscsi_task *t = tx->task;

	if (!tx->mapped)
		return;
	tx->mapped = false;
	t->conn->n_mapped--;
	if (--t->mapped_tx == 0)
		scsi_cmd_data_release(&t->cmd);
}

int iscsi_task_tx_fetch(struct iscsi_tx *tx)
{
	struct iscsi_task *t = tx->task;
	uint32_t off = conf_get_be32(tx->hdr + ISCSI_OFF_BUFOFF), poff, plen;
	const uint8_t *addr;
	int rc;

	if (!scsi_cmd_data_piece(&t->cmd, tx->map_piece, &poff, &plen, &addr))
		return -EINVAL;
	rc = scsi_cmd_data_fetch(&t->cmd, tx->map_piece, off - poff, tx->dlen, t->cmd.buf + off);
	if (rc)
		return rc;
	tx->data = t->cmd.buf + off;
	iscsi_task_tx_unmapped(tx);
	return 0;
}

static void task_unlink(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	if (!t->listed)
		return;
	if (t->prev)
		t->prev->next = t->next;
	else
		c->tasks = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
	t->listed = false;
	t->counted = false;
	c->n_tasks--;
	iscsi_task_put(t);
}

void iscsi_task_abort(struct iscsi_task *t, uint32_t tmf_id)
{
	if (t->req) {
		/* its request still waits for its CmdSN turn: that slot is
		 * consumed without running anything */
		t->req->task = NULL;
		t->req = NULL;
	}
	t->dead = true;
	scsi_cmd_abort(&t->cmd);
	if (tmf_id > t->tmf_id)
		t->tmf_id = tmf_id;
	/* Inside scsi it stays listed so that a TMF can wait for it; cmd_done
	 * unlinks it. */
	if (!t->in_scsi)
		task_unlink(t);
}

void iscsi_tasks_abort_all(struct iscsi_conn *c)
{
	while (c->tasks) {
		struct iscsi_task *t = c->tasks;

		if (t->req) {
			t->req->task = NULL;
			t->req = NULL;
		}
		t->dead = true;
		scsi_cmd_abort(&t->cmd);
		task_unlink(t);
	}
}

static struct iscsi_task *task_new(struct iscsi_conn *c)
{
	struct iscsi_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->conn = c;
	t->cmd.tpriv = t;
	t->cmd.done = cmd_done;
	t->cmd.ioctx = c->w->ioctx;
	t->refs = 1;
	t->listed = true;
	t->next = c->tasks;
	if (t->next)
		t->next->prev = t;
	c->tasks = t;
	c->n_tasks++;
	return t;
}

/* ---------------- command header ---------------- */

/* Extended CDB and bidirectional-length AHS (RFC 7143 11.2.1.2). Returns 0,
 * or a Reject reason. */
static int parse_ahs(const uint8_t *ahs, uint32_t len, struct scsi_cmd *cmd, bool *bidi)
{
	uint32_t pos = 0;

	while (pos < len) {
		uint32_t alen, total;
		uint8_t type;

		if (len - pos < 4)
			return ISCSI_REJECT_PROTOCOL;
		alen = conf_get_be16(ahs + pos);
		type = ahs[pos + 2];
		total = 3 + alen;
		total += iscsi_pad4(total);
		if (total > len - pos || alen == 0)
			return ISCSI_REJECT_PROTOCOL;
		if (type == ISCSI_AHS_EXT_CDB) {
			uint32_t extra = alen - 1;

			if (ISCSI_CDB_BHS_LEN + extra > SCSI_CDB_MAX)
				return ISCSI_REJECT_INVALID_FIELD;
			memcpy(cmd->cdb + ISCSI_CDB_BHS_LEN, ahs + pos + 4, extra);
			cmd->cdb_len = (uint8_t)(ISCSI_CDB_BHS_LEN + extra);
		} else if (type == ISCSI_AHS_BIDI_LEN) {
			*bidi = true;
		} else {
			return ISCSI_REJECT_INVALID_FIELD;
		}
		pos += total;
	}
	return 0;
}

int iscsi_cmd_prepare(struct iscsi_conn *c, struct iscsi_req *req)
{
	const uint8_t *bhs = req->bhs;
	uint8_t flags = iscsi_bhs_flags(bhs);
	uint32_t itt = iscsi_bhs_itt(bhs);
	uint32_t edtl = conf_get_be32(bhs + ISCSI_OFF_EDTL);
	uint32_t dsl = iscsi_bhs_dsl(bhs);
	bool bidi = false, final = flags & ISCSI_FLAG_FINAL;
	struct iscsi_session *sess = c->sess;
	struct iscsi_task *t;
	int r;

	LOG_DBG(MOD, "%s: SCSI command ITT 0x%x CmdSN %u flags 0x%02x edtl %u immediate data %u",
		c->peer_str, itt, req->cmdsn, flags, edtl, dsl);
	if (sess->type != ISCSI_SESSION_NORMAL)
		return ISCSI_REJECT_PROTOCOL;
	if (itt == ISCSI_RSVD_TAG || iscsi_task_find(c, itt))
		return ISCSI_REJECT_TASK_IN_PROGRESS;
	if (req->immediate && c->n_imm >= ISCSI_MAX_IMMEDIATE_TASKS)
		return ISCSI_REJECT_IMM_CMD;
	if (dsl > 0 && !c->params.immediate_data)
		return ISCSI_REJECT_PROTOCOL;
	if (dsl > edtl || dsl > c->params.first_burst)
		return ISCSI_REJECT_PROTOCOL;
	if (!final && c->params.initial_r2t)
		return ISCSI_REJECT_PROTOCOL;
	if (edtl > 0 && !(flags & (ISCSI_CMD_READ | ISCSI_CMD_WRITE)))
		return ISCSI_REJECT_INVALID_FIELD;

	t = task_new(c);
	if (!t)
		return -ENOMEM;
	req->task = t;
	t->req = req;
	t->itt = itt;
	t->cmdsn = req->cmdsn;
	t->immediate = req->immediate;
	t->counted = !req->immediate;
	if (req->immediate)
		c->n_imm++;
	memcpy(t->lun_raw, bhs + ISCSI_OFF_LUN, 8);
	t->state = TASK_NEW;

	t->cmd.target = sess->st;
	t->cmd.nexus = sess->nexus;
	t->cmd.lun = scsi_lun_decode(t->lun_raw);
	memcpy(t->cmd.cdb, bhs + ISCSI_OFF_CDB, ISCSI_CDB_BHS_LEN);
	t->cmd.cdb_len = ISCSI_CDB_BHS_LEN;
	r = parse_ahs(bhs + ISCSI_BHS_LEN, req->ahs_len, &t->cmd, &bidi);
	if (r)
		return r;
	t->cmd.task_attr = flags & ISCSI_CMD_ATTR_MASK;
	t->cmd.dir_read = flags & ISCSI_CMD_READ;
	t->cmd.dir_write = flags & ISCSI_CMD_WRITE;
	t->cmd.edtl = edtl;
	t->imm_len = dsl;

	if (bidi || (t->cmd.dir_read && t->cmd.dir_write) || edtl > SCSI_MAX_XFER) {
		/* Refused before scsi: still take (and drop) the data the
		 * initiator sends for it. */
		t->early_status = true;
		t->cmd.xfer_len = edtl;
		scsi_set_sense(&t->cmd, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
		t->unsol_open = false;
		return 0;
	}
	if (edtl && c->buf_bytes &&
	    (c->buf_bytes + edtl > ISCSI_CONN_BUF_BUDGET ||
	     atomic_load(&c->srv->buf_bytes) + edtl > ISCSI_SRV_BUF_BUDGET)) {
		/* Not an error of the command: the initiator retries it once
		 * earlier commands have finished (SAM-5 5.3.3). */
		LOG_DBG(MOD, "%s: ITT 0x%x: TASK SET FULL (%llu bytes of buffers held, %llu in all)",
			c->peer_str, itt, (unsigned long long)c->buf_bytes,
			(unsigned long long)atomic_load(&c->srv->buf_bytes));
		t->early_status = true;
		t->cmd.status = SCSI_TASK_SET_FULL;
		t->cmd.xfer_len = edtl;
		t->unsol_open = false;
		return 0;
	}
	if (edtl) {
		/* A write's buffer is filled by the initiator before the command
		 * runs (task_exec insists on every byte), and the dispatcher
		 * refuses a data-out CDB that came without W; a READ's data-in
		 * is reported only once the medium's blocks filled all of it
		 * (scsi_cdb_fills_data_in; memset was 9% of a 1 MiB read's
		 * CPU). Every other buffer is zeroed: whatever scsi leaves
		 * unwritten below data_in_len is a zero, never an earlier
		 * command's data. */
		t->cmd.buf = cmd_buf_get(c->w, edtl,
					 !t->cmd.dir_write && !scsi_cdb_fills_data_in(t->cmd.cdb));
		/* data-in may leave from the volume's memory (queue_datain);
		 * not under a data digest, which is computed when queued and
		 * must cover exactly the bytes that are sent later */
		t->cmd.data_in_map = !c->ddigest;
		if (!t->cmd.buf)
			return -ENOMEM;
		t->cmd.buf_len = edtl;
		c->buf_bytes += edtl;
		atomic_fetch_add(&c->srv->buf_bytes, edtl);
	}
	if (t->cmd.dir_write) {
		t->received = dsl;
		t->unsol_next = dsl;
		t->unsol_end = final ? dsl : (edtl < c->params.first_burst ? edtl : c->params.first_burst);
		if (t->unsol_end < dsl)
			t->unsol_end = dsl;
		t->unsol_open = !final && t->unsol_end > dsl;
		t->r2t_next = t->unsol_end;
	}
	return 0;
}

/* ---------------- execution ---------------- */

static void task_respond(struct iscsi_task *t);

static void task_exec(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	if (t->cmd.dir_write && t->received < t->cmd.edtl) {
		/* never reached by the Data-Out rules above; if it were, scsi
		 * would store buffer bytes nobody sent */
		LOG_ERR(MOD, "%s: ITT 0x%x: write would run with %u of %u bytes received",
			c->peer_str, t->itt, t->received, t->cmd.edtl);
		t->early_status = true;
		t->cmd.xfer_len = t->cmd.edtl;
		scsi_set_sense(&t->cmd, SENSE_ABORTED_COMMAND, ASC_DATA_PHASE_ERROR, 0);
		task_respond(t);
		return;
	}
	t->exec_us = conf_mono_us();
	t->state = TASK_EXEC;
	t->in_scsi = true;
	t->refs++;
	c->n_scsi++;
	LOG_DBG(MOD, "%s: exec ITT 0x%x CDB 0x%02x edtl %u", c->peer_str, t->itt, t->cmd.cdb[0],
		t->cmd.edtl);
	scsi_cmd_exec(&t->cmd);
}

/* The R2Ts are written at once (iscsi_conn_flush) instead of at the end
 * of the wake-up: the initiator sends the burst only once it has the R2T,
 * and at MaxOutstandingR2T 1 every burst of a large write waits on one.
 * That write may close the connection (write error), as may running out
 * of memory, which aborts and unlinks every task: @t is held by a
 * reference of its own until the loop is done with it, and the loop stops
 * once the task is dead. The connection itself is freed only from a later
 * event-loop callback. */
static void send_r2ts(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;
	uint32_t edtl = t->cmd.edtl;
	uint32_t max_r2t = c->params.max_outstanding_r2t;
	unsigned active = 0;
	bool queued = false;

	if (max_r2t == 0 || max_r2t > ISCSI_TGT_MAX_R2T)
		max_r2t = ISCSI_TGT_MAX_R2T;
	for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++)
		if (t->r2t[i].active)
			active++;
	t->refs++;
	while (active < max_r2t && !t->dead && t->r2t_next < edtl && c->state == CONN_FFP) {
		struct iscsi_r2t *slot = NULL;
		struct iscsi_tx *tx;
		uint32_t len = edtl - t->r2t_next;

		for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T && !slot; i++)
			if (!t->r2t[i].active)
				slot = &t->r2t[i];
		if (!slot)
			break;
		if (len > c->params.max_burst)
			len = c->params.max_burst;
		tx = iscsi_tx_new();
		if (!tx) {
			iscsi_conn_close(c, "out of memory");
			break;
		}
		if (++c->next_ttt == ISCSI_RSVD_TAG)
			c->next_ttt = 1;
		slot->ttt = c->next_ttt;
		slot->off = slot->next_off = t->r2t_next;
		slot->len = len;
		slot->datasn = 0;
		slot->active = true;
		t->r2t_next += len;
		active++;

		tx->hdr[0] = ISCSI_OP_R2T;
		tx->hdr[1] = ISCSI_FLAG_FINAL;
		memcpy(tx->hdr + ISCSI_OFF_LUN, t->lun_raw, 8);
		conf_put_be32(tx->hdr + ISCSI_OFF_ITT, t->itt);
		conf_put_be32(tx->hdr + ISCSI_OFF_TTT, slot->ttt);
		iscsi_conn_fill_sn(c, tx->hdr, false);
		conf_put_be32(tx->hdr + ISCSI_OFF_R2TSN, t->r2tsn++);
		conf_put_be32(tx->hdr + ISCSI_OFF_BUFOFF, slot->off);
		conf_put_be32(tx->hdr + ISCSI_OFF_DDTL, len);
		iscsi_conn_queue(c, tx);
		queued = true;
	}
	if (queued)
		iscsi_conn_flush(c);
	iscsi_task_put(t);
}

void iscsi_cmd_dispatch(struct iscsi_conn *c, struct iscsi_req *req)
{
	struct iscsi_task *t = req->task;

	req->task = NULL;
	iscsi_req_free(req);
	if (!t)
		return;
	t->req = NULL;
	if (t->dead) {
		task_unlink(t);
		return;
	}
	if (t->early_status) {
		task_respond(t);
		return;
	}
	if (!t->cmd.dir_write || t->received >= t->cmd.edtl) {
		task_exec(t);
		return;
	}
	t->state = TASK_DATA_OUT;
	send_r2ts(t);
}

/* ---------------- Data-Out ---------------- */

/* A Data-Out that breaks the sequence rules (DataSN, offset, TTT, length):
 * its payload is dropped and the command fails with CHECK CONDITION,
 * ABORTED COMMAND / DATA PHASE ERROR, while the connection (whose framing
 * is intact) stays up. Later Data-Out for the command are discarded. */
static void task_fail_data(struct iscsi_conn *c, struct iscsi_task *t, const char *why)
{
	LOG_WARN(MOD, "%s: ITT 0x%x failed: %s", c->peer_str, t->itt, why);
	t->early_status = true;
	t->unsol_open = false;
	for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++)
		t->r2t[i].active = false;
	t->cmd.xfer_len = t->cmd.edtl;
	scsi_set_sense(&t->cmd, SENSE_ABORTED_COMMAND, ASC_DATA_PHASE_ERROR, 0);
	/* a command still waiting for its CmdSN answers when its turn comes */
	if (t->state == TASK_DATA_OUT)
		task_respond(t);
}

int iscsi_dataout_prepare(struct iscsi_conn *c, const char **why)
{
	const uint8_t *bhs = c->rx_hdr;
	uint32_t itt = iscsi_bhs_itt(bhs);
	uint32_t ttt = conf_get_be32(bhs + ISCSI_OFF_TTT);
	uint32_t datasn = conf_get_be32(bhs + ISCSI_OFF_DATASN);
	uint32_t off = conf_get_be32(bhs + ISCSI_OFF_BUFOFF);
	uint32_t dsl = c->rx_dsl;
	bool final = iscsi_bhs_flags(bhs) & ISCSI_FLAG_FINAL;
	struct iscsi_task *t = iscsi_task_find(c, itt);
	const char *bad = NULL;
	uint32_t end;

	c->rx_task = NULL;
	c->rx_data = NULL;
	LOG_DBG(MOD, "%s: Data-Out ITT 0x%x TTT 0x%x DataSN %u offset %u len %u%s", c->peer_str, itt,
		ttt, datasn, off, dsl, final ? " F" : "");
	if (!t || t->dead || t->early_status || t->state == TASK_EXEC ||
	    t->state == TASK_RESPONDING) {
		/* Data for a command that ended or was refused: drop it. */
		return 0;
	}
	if (!t->cmd.dir_write) {
		*why = "Data-Out for a command that is not a write";
		return -EPROTO;
	}
	end = off + dsl;
	if (off > t->cmd.buf_len || dsl > t->cmd.buf_len - off) {
		bad = "Data-Out beyond the expected data transfer length";
	} else if (ttt == ISCSI_RSVD_TAG) {
		if (!t->unsol_open)
			bad = "unexpected unsolicited Data-Out";
		else if (datasn != t->unsol_datasn)
			bad = "Data-Out with a wrong DataSN";
		else if (off != t->unsol_next || end > t->unsol_end)
			bad = "unsolicited Data-Out with a wrong offset";
		else if (final && end != t->unsol_end)
			bad = "unsolicited data shorter than FirstBurstLength";
	} else {
		struct iscsi_r2t *slot = NULL;

		for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++)
			if (t->r2t[i].active && t->r2t[i].ttt == ttt)
				slot = &t->r2t[i];
		if (!slot)
			bad = "Data-Out with an unknown Target Transfer Tag";
		else if (datasn != slot->datasn)
			bad = "Data-Out with a wrong DataSN";
		else if (off != slot->next_off || end > slot->off + slot->len)
			bad = "solicited Data-Out with a wrong offset";
		else if (final && end != slot->off + slot->len)
			bad = "R2T sequence ended early";
	}
	if (bad) {
		task_fail_data(c, t, bad);
		return 0;
	}
	c->rx_task = t;
	c->rx_data = t->cmd.buf ? t->cmd.buf + off : NULL;
	return 0;
}

void iscsi_dataout_done(struct iscsi_conn *c)
{
	struct iscsi_task *t = c->rx_task;
	const uint8_t *bhs = c->rx_hdr;
	uint32_t ttt = conf_get_be32(bhs + ISCSI_OFF_TTT);
	bool final = iscsi_bhs_flags(bhs) & ISCSI_FLAG_FINAL;
	uint32_t dsl = c->rx_dsl;
	bool seq_done = false;

	c->rx_task = NULL;
	if (!t)
		return;
	if (t->dead) {
		/* aborted while its payload was arriving */
		return;
	}
	t->received += dsl;
	if (ttt == ISCSI_RSVD_TAG) {
		t->unsol_next += dsl;
		t->unsol_datasn++;
		if (final)
			t->unsol_open = false;
	} else {
		for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++) {
			struct iscsi_r2t *slot = &t->r2t[i];

			if (!slot->active || slot->ttt != ttt)
				continue;
			slot->next_off += dsl;
			slot->datasn++;
			if (final) {
				slot->active = false;
				seq_done = true;
			}
		}
	}
	if (t->state != TASK_DATA_OUT)
		return;    /* still waiting for its CmdSN turn */
	if (t->received >= t->cmd.edtl && !t->unsol_open) {
		bool any = false;

		for (unsigned i = 0; i < ISCSI_TGT_MAX_R2T; i++)
			any |= t->r2t[i].active;
		if (!any) {
			task_exec(t);
			return;
		}
	}
	if (seq_done)
		send_r2ts(t);
}

/* ---------------- completion ---------------- */

static void count_one(struct iscsi_tgt_stats *st, struct iscsi_task *t, uint32_t data_len,
		      uint64_t lat_us);

static void count_stats(struct iscsi_task *t, uint32_t data_len)
{
	struct iscsi_tgt_stats *st = iscsi_cfg_stats(t->conn->cfg, t->conn->sess->target);
	uint64_t lat = 0;

	/* service time inside scsi; commands answered without it have none */
	if (t->exec_us) {
		uint64_t now = conf_mono_us();

		lat = now > t->exec_us ? now - t->exec_us : 0;
	}
	count_one(&t->conn->sess->stats, t, data_len, lat);
	if (st)
		count_one(st, t, data_len, lat);
}

static void count_one(struct iscsi_tgt_stats *st, struct iscsi_task *t, uint32_t data_len,
		      uint64_t lat_us)
{
	if (t->cmd.dir_read) {
		atomic_fetch_add(&st->read_ops, 1);
		atomic_fetch_add(&st->read_bytes, data_len);
	} else if (t->cmd.dir_write) {
		atomic_fetch_add(&st->write_ops, 1);
		atomic_fetch_add(&st->write_bytes, t->received);
	} else {
		atomic_fetch_add(&st->other_ops, 1);
	}
	if (t->exec_us)
		conf_hist_record(&st->lat, lat_us * 1000u);
}

static bool queue_datain(struct iscsi_task *t, uint32_t data_len, bool with_status,
			 uint8_t res_flags, uint32_t res_count)
{
	struct iscsi_conn *c = t->conn;
	uint32_t max = c->params.max_xmit_dsl ? c->params.max_xmit_dsl : 8192;
	uint32_t burst = c->params.max_burst;
	uint32_t off = 0, poff = 0, plen = 0;
	unsigned pi = 0;
	const uint8_t *paddr = NULL;
	bool have = scsi_cmd_data_piece(&t->cmd, 0, &poff, &plen, &paddr);

	while (off < data_len) {
		struct iscsi_tx *tx = iscsi_tx_new();
		uint32_t seg = data_len - off;
		bool last, in_piece;

		if (!tx) {
			iscsi_conn_close(c, "out of memory");
			return false;
		}
		if (seg > max)
			seg = max;
		/* never cross a MaxBurstLength boundary inside one PDU */
		if (burst && seg > burst - off % burst)
			seg = burst - off % burst;
		/* nor the edge of a piece left in the volume's memory
		 * (cmd.data_hold): a PDU's data is one piece or the buffer */
		while (have && poff + plen <= off)
			have = scsi_cmd_data_piece(&t->cmd, ++pi, &poff, &plen, &paddr);
		in_piece = have && poff <= off;
		if (in_piece && seg > poff + plen - off)
			seg = poff + plen - off;
		else if (!in_piece && have && seg > poff - off)
			seg = poff - off;
		last = off + seg >= data_len;
		tx->hdr[0] = ISCSI_OP_DATA_IN;
		tx->hdr[1] = iscsi_datain_final(off, seg, data_len, burst) ? ISCSI_FLAG_FINAL : 0;
		conf_put_be32(tx->hdr + ISCSI_OFF_ITT, t->itt);
		conf_put_be32(tx->hdr + ISCSI_OFF_TTT, ISCSI_RSVD_TAG);
		if (last && with_status) {
			tx->hdr[1] |= ISCSI_FLAG_FINAL | ISCSI_DATAIN_STATUS | res_flags;
			tx->hdr[3] = t->cmd.status;
			iscsi_conn_fill_sn(c, tx->hdr, true);
			conf_put_be32(tx->hdr + ISCSI_OFF_RESIDUAL, res_count);
		} else {
			iscsi_conn_fill_sn(c, tx->hdr, false);
			/* StatSN is reserved without the S bit */
			conf_put_be32(tx->hdr + ISCSI_OFF_STATSN, 0);
		}
		conf_put_be32(tx->hdr + ISCSI_OFF_DATASN, t->datain_pdus++);
		conf_put_be32(tx->hdr + ISCSI_OFF_BUFOFF, off);
		tx->data = t->cmd.buf + off;
		if (in_piece) {
			tx->data = paddr + (off - poff);
			tx->mapped = true;
			tx->map_piece = (uint16_t)pi;
			t->mapped_tx++;
			c->n_mapped++;
		}
		tx->dlen = seg;
		tx->task = t;
		t->refs++;
		iscsi_conn_queue(c, tx);
		if (c->state == CONN_CLEANUP)
			return false;
		off += seg;
	}
	return true;
}

static void queue_response(struct iscsi_task *t, uint8_t res_flags, uint32_t res_count)
{
	struct iscsi_conn *c = t->conn;
	struct iscsi_tx *tx = iscsi_tx_new();

	if (!tx) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	tx->hdr[0] = ISCSI_OP_SCSI_RSP;
	tx->hdr[1] = ISCSI_FLAG_FINAL | res_flags;
	tx->hdr[2] = 0;    /* command completed at target */
	tx->hdr[3] = t->cmd.status;
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, t->itt);
	iscsi_conn_fill_sn(c, tx->hdr, true);
	conf_put_be32(tx->hdr + ISCSI_OFF_EXPDATASN, t->datain_pdus + t->r2tsn);
	conf_put_be32(tx->hdr + ISCSI_OFF_RESIDUAL, res_count);
	if (t->cmd.sense_len) {
		uint32_t n = t->cmd.sense_len;

		if (n > SCSI_SENSE_MAX)
			n = SCSI_SENSE_MAX;
		tx->own = malloc(2 + n);
		if (!tx->own) {
			free(tx);
			iscsi_conn_close(c, "out of memory");
			return;
		}
		conf_put_be16(tx->own, (uint16_t)n);
		memcpy(tx->own + 2, t->cmd.sense, n);
		tx->data = tx->own;
		tx->dlen = 2 + n;
	}
	iscsi_conn_queue(c, tx);
}

static void task_respond(struct iscsi_task *t)
{
	uint32_t edtl = t->cmd.edtl;
	uint32_t data_len = 0;
	uint8_t res_flags;
	uint32_t res_count;
	bool piggyback;

	t->state = TASK_RESPONDING;
	iscsi_residual(edtl, t->cmd.xfer_len, &res_flags, &res_count);
	/* Data-In only for a command that succeeded: scsi reports no partial
	 * data with sense here, and a failed read's buffer holds nothing the
	 * initiator may see */
	if (t->cmd.dir_read && !t->early_status &&
	    (t->cmd.status == SCSI_GOOD || t->cmd.status == SCSI_CONDITION_MET)) {
		data_len = t->cmd.data_in_len;
		if (data_len > t->cmd.buf_len)
			data_len = t->cmd.buf_len;
	}
	count_stats(t, data_len);
	/* Status rides in the last Data-In unless there is sense data, which
	 * only a SCSI Response can carry (RFC 7143 11.7.4). */
	piggyback = data_len > 0 && t->cmd.sense_len == 0;
	/* the response PDUs hold their own references */
	t->refs++;
	task_unlink(t);
	if (data_len > 0 && !queue_datain(t, data_len, piggyback, res_flags, res_count))
		goto out;
	if (!t->mapped_tx)
		scsi_cmd_data_release(&t->cmd);    /* no piece inside data_len */
	if (!piggyback)
		queue_response(t, res_flags, res_count);
out:
	iscsi_task_put(t);
}

static void cmd_done(struct scsi_cmd *cmd)
{
	struct iscsi_task *t = cmd->tpriv;
	struct iscsi_conn *c = t->conn;

	RTGT_CHECK(task_check(t));
	t->in_scsi = false;
	c->n_scsi--;
	if (t->dead || scsi_cmd_aborted(cmd) || c->state != CONN_FFP) {
		/* aborted: RFC 7143 4.2.3.3, no response for it */
		t->dead = true;
		scsi_cmd_data_release(cmd);
		task_unlink(t);
		iscsi_task_put(t);
		if (c->state != CONN_CLEANUP) {
			iscsi_tmf_progress(c);
			iscsi_conn_drain_check(c);
		}
		return;
	}
	task_respond(t);
	iscsi_task_put(t);
	iscsi_tmf_progress(c);
	iscsi_conn_drain_check(c);
}
