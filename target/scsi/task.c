/*
 * target/scsi/task.c - one command's plumbing, shared by the dispatcher and
 * every handler: the LU it reached, its reply data, its completion (the
 * LU's counters, the in-flight list, the LU reference, cmd->done), the
 * volume memory a read holds for the transport, the LUN field, the LUNs a
 * nexus's view holds.
 *
 * Layer: command, the bottom of the command path (target/scsi/README.md
 * "Layers"; only iscsi_name.c is lower). May call: raid/raid.h, conf/.
 * Knows nothing of opcodes, sense data or reservations.
 */
#include <stdatomic.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

struct scsi_lu *scsi_cmd_lu(const struct scsi_cmd *cmd)
{
	return cmd->spriv[0];
}

void scsi_reply(struct scsi_cmd *cmd, const void *data, uint32_t len, uint32_t alloc_len)
{
	uint32_t n = len < alloc_len ? len : alloc_len;

	cmd->xfer_len = n;
	if (n > cmd->buf_len)
		n = cmd->buf_len;
	if (n)
		memcpy(cmd->buf, data, n);
	cmd->data_in_len = n;
}

/* ---- LUN field ---- */

uint64_t scsi_lun_decode(const uint8_t lun[8])
{
	switch (lun[0] >> 6) {
	case 0: /* peripheral device addressing: bus 0 only */
		if (lun[0] & 0x3f)
			return UINT64_MAX;
		return lun[1];
	case 1: /* flat space addressing */
		return (uint64_t)(lun[0] & 0x3f) << 8 | lun[1];
	default:
		return UINT64_MAX;
	}
}

void scsi_lun_encode(uint64_t lun, uint8_t out[8])
{
	memset(out, 0, 8);
	if (lun < 256) {
		out[1] = (uint8_t)lun;
	} else {
		out[0] = (uint8_t)(0x40 | ((lun >> 8) & 0x3f));
		out[1] = (uint8_t)lun;
	}
}

unsigned scsi_view_luns(struct scsi_target *t, struct scsi_nexus *n, uint16_t *out)
{
	unsigned cnt = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++)
		if (n ? n->vlu[i] != NULL : t->luns[i] != NULL)
			out[cnt++] = (uint16_t)i;
	pthread_mutex_unlock(&t->lock);
	return cnt;
}

void scsi_lu_put(struct scsi_lu *lu)
{
	if (lu)
		atomic_fetch_sub_explicit(&lu->refs, 1, memory_order_release);
}

void scsi_cmd_release_lu(struct scsi_cmd *cmd)
{
	scsi_lu_put(cmd->spriv[0]);
	cmd->spriv[0] = NULL;
}

bool scsi_cmd_view_ro(const struct scsi_cmd *cmd)
{
	return cmd->spriv_u[SPRIV_VIEW_RO] != 0;
}

static void lu_count(struct scsi_lu *lu, const struct scsi_cmd *cmd)
{
	uint64_t start = cmd->spriv_u[SPRIV_START_US], now = conf_mono_us();

	if (cmd->dir_read) {
		atomic_fetch_add(&lu->st_read_ops, 1);
		atomic_fetch_add(&lu->st_read_bytes, cmd->data_in_len);
	} else if (cmd->dir_write) {
		atomic_fetch_add(&lu->st_write_ops, 1);
		if (cmd->status == SCSI_GOOD)
			atomic_fetch_add(&lu->st_write_bytes, cmd->xfer_len);
	} else {
		atomic_fetch_add(&lu->st_other_ops, 1);
	}
	conf_hist_record(&lu->st_lat, (now > start ? now - start : 0) * 1000u);
}

void scsi_cmd_complete(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);

	if (lu && cmd->spriv[1]) {
		lu_count(lu, cmd);
		pthread_mutex_lock(&lu->lock);
		if (cmd->sprev)
			cmd->sprev->snext = cmd->snext;
		else
			lu->inflight = cmd->snext;
		if (cmd->snext)
			cmd->snext->sprev = cmd->sprev;
		cmd->snext = cmd->sprev = NULL;
		lu->n_inflight--;
		pthread_mutex_unlock(&lu->lock);
		cmd->spriv[1] = NULL;
	}
	if (scsi_cmd_aborted(cmd)) {
		cmd->status = SCSI_TASK_ABORTED;
		cmd->sense_len = 0;
		cmd->data_in_len = 0;
	}
	if (cmd->data_hold && (cmd->status != SCSI_GOOD || !cmd->data_in_len))
		scsi_cmd_data_release(cmd);    /* nothing of it is sent */
	scsi_cmd_release_lu(cmd);
	cmd->done(cmd);
}

bool scsi_cmd_data_piece(const struct scsi_cmd *cmd, unsigned i, uint32_t *off, uint32_t *len,
			 const uint8_t **addr)
{
	const struct raid_io_piece *pc;
	unsigned n = raid_io_hold_pieces(cmd->data_hold, &pc);

	if (i >= n)
		return false;
	/* pieces lie inside the read, which is at most SCSI_MAX_XFER */
	*off = (uint32_t)pc[i].off;
	*len = (uint32_t)pc[i].len;
	*addr = pc[i].addr;
	return true;
}

int scsi_cmd_data_fetch(const struct scsi_cmd *cmd, unsigned i, uint32_t from, uint32_t len,
			uint8_t *dst)
{
	return raid_io_hold_copy(cmd->data_hold, i, from, len, dst);
}

void scsi_cmd_data_release(struct scsi_cmd *cmd)
{
	raid_io_hold_release(cmd->data_hold);
	cmd->data_hold = NULL;
}
