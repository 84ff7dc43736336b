/*
 * target/scsi/sbc.c - SBC-3 block commands on a raid volume: READ, WRITE,
 * WRITE AND VERIFY, VERIFY, WRITE SAME, COMPARE AND WRITE, SYNCHRONIZE
 * CACHE, PRE-FETCH, READ CAPACITY, GET LBA STATUS, UNMAP.
 *
 * Each command that touches the volume owns one struct sbc_ctx (one
 * raid_io) and walks this state machine:
 *
 *   START --sbc_submit()--> IO --io_done()--> IO (next piece: write same,
 *                                              verify-in-pieces)
 *                                   \-------> FINISH (ctx_finish(): sense
 *                                              from the result, free ctx,
 *                                              scsi_cmd_complete)
 *   START --submit refused--> FINISH
 *
 * Invariant (ctx_check()): ctx->pos <= ctx->end and at most one raid_io of a
 * ctx is outstanding at any time. Data path: READ lands directly in cmd->buf
 * and WRITE leaves from it; a bounce buffer exists only for a read whose
 * EDTL is not a whole number of blocks, for VERIFY's medium copy and for
 * the WRITE SAME pattern. WRITE SAME on a volume with its own write-same
 * (raid_vol_write_same_max() > 0: RBD images) sends the one block as
 * RAID_OP_WRITE_SAME pieces of at most that size (K_WSAME_VOL); elsewhere
 * the pattern is expanded into 1 MiB writes (K_WSAME). The SCSI checks are
 * the same for both.
 *
 * Thin LUs (raid_vol_provisioning(): lu->prov.thin; SBC-3 4.7): UNMAP and
 * WRITE SAME with UNMAP of zeroes are RAID_OP_DISCARD pieces (K_UNMAP: the
 * ctx walks the UNMAP's descriptors, each cut at granule boundaries into
 * discards of at most prov.discard_max; every descriptor is checked before
 * the first discard, so a bad one changes nothing). GET LBA STATUS asks the
 * volume with one RAID_OP_MAP_STATUS (K_MAPSTAT) and answers one descriptor.
 * A write the volume has no space for (-ENOSPC) gets DATA PROTECT, SPACE
 * ALLOCATION FAILED WRITE PROTECT (SBC-3 4.7.3.5) instead of a medium error.
 * After each write-type command on a thin LU, a grown
 * raid_vol_thin_threshold_events() raises THIN PROVISIONING SOFT THRESHOLD
 * REACHED (06/38/07) for every nexus (thin_threshold_check).
 *
 * cmd->data_in_len of a READ is set only when its volume read succeeded: a
 * failed or aborted read reports no data-in, so the transport never sends
 * the part of cmd->buf the read did not fill. The dispatcher (lu.c) has
 * already checked that a data-out command came with all its data-out.
 *
 * Layer: handlers (target/scsi/README.md "Layers"). May call: sense.c,
 * task.c, raid/raid.h, conf/. Reached from lu.c only through the opcode
 * table; it completes through scsi_cmd_complete() (task.c), never lu.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

#define WS_PIECE (1u << 20) /* bytes per WRITE SAME volume write */
#define MAX_CAW_BLOCKS 64

enum sbc_kind { K_READ, K_WRITE, K_VERIFY, K_WSAME, K_WSAME_VOL, K_CAW, K_FLUSH, K_UNMAP,
		K_MAPSTAT };

_Static_assert(RAID_SAME_BLOCK == SCSI_BS, "RAID_OP_WRITE_SAME repeats one logical block");

struct sbc_ctx {
	struct raid_io io;
	struct scsi_cmd *cmd;           /* borrowed: completes with us */
	enum sbc_kind kind;
	unsigned flags;                 /* RAID_IO_* */
	uint64_t pos, end;              /* byte range still to do */
	uint8_t *bounce;                /* owned, may be NULL */
	uint32_t bounce_len;
	uint32_t copy_len;              /* K_READ through bounce: bytes to copy */
	uint32_t data_in;               /* K_READ: data_in_len once the read succeeded */
	uint8_t bytchk;                 /* K_VERIFY */
	/* K_UNMAP: the UNMAP block descriptors still to do (borrowed from
	 * cmd->buf, 16 bytes each, checked by sbc_unmap); NULL for WRITE
	 * SAME, whose one range is pos..end */
	const uint8_t *desc;
	uint32_t n_desc, desc_i;
};

static bool ctx_check(const struct sbc_ctx *c)
{
	return c->pos <= c->end && c->desc_i <= c->n_desc && (c->desc || !c->n_desc);
}

/* ---- CDB decoding ---- */

static void decode_lba(const uint8_t *cdb, uint64_t *lba, uint32_t *n)
{
	switch (cdb[0] >> 5) {
	case 0: /* 6-byte */
		*lba = conf_get_be24(&cdb[1]) & 0x1fffff;
		*n = cdb[4] ? cdb[4] : 256;
		break;
	case 1: /* 10-byte */
	case 2:
		*lba = conf_get_be32(&cdb[2]);
		*n = conf_get_be16(&cdb[7]);
		break;
	case 5: /* 12-byte */
		*lba = conf_get_be32(&cdb[2]);
		*n = conf_get_be32(&cdb[6]);
		break;
	default: /* 16-byte */
		*lba = conf_get_be64(&cdb[2]);
		*n = conf_get_be32(&cdb[10]);
		break;
	}
}

static bool out_of_range(struct scsi_lu *lu, uint64_t lba, uint64_t n)
{
	uint64_t nb = atomic_load_explicit(&lu->nblocks, memory_order_acquire);

	return lba > nb || n > nb - lba;
}

/* Software write protect (control mode page SWP) or a read-only mapping
 * of the nexus's view (read_only in the configuration). */
static bool write_protected(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	bool wp;

	if (scsi_cmd_view_ro(cmd))
		return true;
	pthread_mutex_lock(&lu->lock);
	wp = lu->mode.swp;
	pthread_mutex_unlock(&lu->lock);
	return wp;
}

/* WCE=0 in the caching page: every write must be durable when it
 * completes, as if FUA were set. */
static bool write_through(struct scsi_lu *lu)
{
	bool wt;

	pthread_mutex_lock(&lu->lock);
	wt = !lu->mode.wce;
	pthread_mutex_unlock(&lu->lock);
	return wt;
}

/* ---- completion ---- */

/* The kinds that write the medium: take space on a thin volume or give it back */
static bool kind_writes(enum sbc_kind kind)
{
	return kind == K_WRITE || kind == K_WSAME || kind == K_WSAME_VOL || kind == K_CAW ||
	       kind == K_UNMAP;
}

/*
 * Thin provisioning soft threshold (SBC-3 4.7.3.7): when the volume's pool
 * crossed it since the LU last looked, every I_T nexus of the LU gets THIN
 * PROVISIONING SOFT THRESHOLD REACHED (06/38/07) on its next command, so
 * the initiator (Linux logs it and raises a uevent) learns that space is
 * running short before writes start failing with 07/27/07. Looked at after
 * the write-type commands, which are what make the pool cross it (UNMAP
 * too: the count is the pool's, and another LU's writes may have crossed
 * it); thick LUs cost one test, thin ones an atomic load in the volume.
 * The compare-exchange moves lu->thin_events_seen forward only: of the
 * commands completing at once on several reactors, the one that moves it
 * raises the UA (a second one that moves it further queues the same code,
 * which scsi_ua_add drops while it is pending).
 */
static void thin_threshold_check(struct sbc_ctx *c)
{
	struct scsi_lu *lu = scsi_cmd_lu(c->cmd);
	uint64_t now, seen;

	if (!lu->prov.thin || !kind_writes(c->kind))
		return;
	now = raid_vol_thin_threshold_events(lu->vol);
	seen = atomic_load_explicit(&lu->thin_events_seen, memory_order_relaxed);
	while (seen < now) {
		if (!atomic_compare_exchange_weak(&lu->thin_events_seen, &seen, now))
			continue;   /* @seen is the value now; retried if still behind */
		pthread_mutex_lock(&lu->lock);
		scsi_ua_add_all(lu, NULL, ASC_THIN_SOFT_THRESHOLD);
		pthread_mutex_unlock(&lu->lock);
		LOG_INFO("scsi", "%s: thin provisioning soft threshold reached: unit attention "
			 "38/07 to every initiator of the LU", lu->name);
		return;
	}
}

static void ctx_finish(struct sbc_ctx *c)
{
	struct scsi_cmd *cmd = c->cmd;

	/* before the completion: the command's LU reference ends there */
	thin_threshold_check(c);
	free(c->bounce);
	free(c);
	scsi_cmd_complete(cmd);
}

static void io_error(struct scsi_cmd *cmd, enum sbc_kind kind, int result)
{
	if (result == -ENOLINK) {
		/* this node is fenced from the shared storage (raid/rbd_fence.c
		 * logs it once): the initiator's multipath retries through
		 * the peer node's path */
		scsi_sense(cmd, SK_NOT_READY, ASC_PORT_UNAVAILABLE);
		return;
	}
	if (result == -ENOSPC) {
		/* the volume's store is full: not a bad medium */
		scsi_sense(cmd, SK_DATA_PROTECT, ASC_SPACE_ALLOC_FAILED);
		LOG_WARN("scsi", "%s: write refused: the thin volume's storage is full (space allocation failed)",
			 scsi_cmd_lu(cmd)->name);
		return;
	}
	if (result == -EIO)
		scsi_sense(cmd, SK_MEDIUM_ERROR,
			   kind == K_READ || kind == K_VERIFY ? ASC_READ_ERROR : ASC_WRITE_ERROR);
	else if (result == -ERANGE)
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
	else
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
	LOG_WARN("scsi", "%s: volume I/O failed: %s", scsi_cmd_lu(cmd)->name, strerror(-result));
}

static void io_done(struct raid_io *io);

/* Submits the next piece of @c, or finishes it. */
static void ctx_step(struct sbc_ctx *c)
{
	struct scsi_cmd *cmd = c->cmd;
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint64_t len = c->end - c->pos;
	int rc;

	RTGT_CHECK(ctx_check(c));
	while (c->kind == K_UNMAP && len == 0 && c->desc_i < c->n_desc) {
		const uint8_t *d = c->desc + 16 * c->desc_i++;

		c->pos = conf_get_be64(&d[0]) << SCSI_BS_SHIFT;
		c->end = c->pos + ((uint64_t)conf_get_be32(&d[8]) << SCSI_BS_SHIFT);
		len = c->end - c->pos;
	}
	if (scsi_cmd_aborted(cmd) || len == 0)
		return ctx_finish(c);
	memset(&c->io, 0, sizeof(c->io));
	c->io.cb = io_done;
	c->io.arg = c;
	c->io.flags = c->flags;
	c->io.off = c->pos;
	switch (c->kind) {
	case K_READ:
		c->io.op = RAID_OP_READ;
		c->io.len = len;
		c->io.buf = c->bounce ? c->bounce : cmd->buf;
		/* the transport may send straight from the volume's memory
		 * (raid.h RAID_IO_MAP); a bounce copy is a copy anyway */
		if (cmd->data_in_map && !c->bounce)
			c->io.flags |= RAID_IO_MAP;
		break;
	case K_WRITE:
		c->io.op = RAID_OP_WRITE;
		c->io.len = len;
		c->io.buf = cmd->buf;
		break;
	case K_VERIFY:
		c->io.op = RAID_OP_READ;
		c->io.len = len < c->bounce_len ? len : c->bounce_len;
		c->io.buf = c->bounce;
		break;
	case K_WSAME:
		c->io.op = RAID_OP_WRITE;
		c->io.len = len < c->bounce_len ? len : c->bounce_len;
		c->io.buf = c->bounce;
		break;
	case K_WSAME_VOL: {
		uint64_t max = raid_vol_write_same_max(lu->vol) / SCSI_BS * SCSI_BS;

		c->io.op = RAID_OP_WRITE_SAME;
		c->io.len = len < max ? len : max;
		c->io.buf = c->bounce;
		break;
	}
	case K_CAW:
		c->io.op = RAID_OP_COMPARE_WRITE;
		c->io.len = len;
		c->io.buf = cmd->buf;
		break;
	case K_FLUSH:
		c->io.op = RAID_OP_FLUSH;
		c->io.off = 0;
		c->io.len = 0;
		break;
	case K_UNMAP: {
		uint64_t max = lu->prov.discard_max / SCSI_BS * SCSI_BS;
		uint64_t g = lu->prov.gran ? lu->prov.gran : SCSI_BS, cut;

		c->io.op = RAID_OP_DISCARD;
		c->io.len = len < max ? len : max;
		/* a piece that ends inside a granule would leave it zeroed
		 * rather than freed; end it on the last boundary it passes */
		cut = (c->pos + c->io.len) / g * g;
		if (c->io.len < len && cut > c->pos)
			c->io.len = cut - c->pos;
		c->io.flags = 0;
		break;
	}
	case K_MAPSTAT:
		c->io.op = RAID_OP_MAP_STATUS;
		c->io.len = len;
		c->io.flags = 0;
		break;
	}
	rc = raid_vol_submit(lu->vol, cmd->ioctx, &c->io);
	if (rc < 0) {
		io_error(cmd, c->kind, rc);
		ctx_finish(c);
	}
}

/* First differing byte of @a and @b, or @len if equal. */
static uint64_t first_diff(const uint8_t *a, const uint8_t *b, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			break;
	return i;
}

/* GET LBA STATUS: one LBA status descriptor, the run the volume reported
 * from the starting LBA. */
static void mapstat_reply(struct sbc_ctx *c, const struct raid_io *io)
{
	struct scsi_cmd *cmd = c->cmd;
	uint64_t blocks = io->map_len >> SCSI_BS_SHIFT;
	uint8_t d[24];

	if (blocks == 0 || io->map_len > c->end - c->pos) {
		/* raid.h promises 512 bytes at least, within the range */
		LOG_ERR("scsi", "%s: allocation lookup at byte %llu returned %llu bytes",
			scsi_cmd_lu(cmd)->name, (unsigned long long)c->pos,
			(unsigned long long)io->map_len);
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return ctx_finish(c);
	}
	memset(d, 0, sizeof(d));
	conf_put_be32(&d[0], 20);
	conf_put_be64(&d[8], c->pos >> SCSI_BS_SHIFT);
	conf_put_be32(&d[16], blocks > 0xffffffffull ? 0xffffffffu : (uint32_t)blocks);
	d[20] = io->unmapped ? 0x01 : 0x00;   /* deallocated : mapped */
	scsi_reply(cmd, d, 24, conf_get_be32(&cmd->cdb[10]));
	ctx_finish(c);
}

static void io_done(struct raid_io *io)
{
	struct sbc_ctx *c = io->arg;
	struct scsi_cmd *cmd = c->cmd;

	if (io->result == -EILSEQ && c->kind == K_CAW) {
		scsi_sense_info(cmd, SK_MISCOMPARE, ASC_MISCOMPARE_VERIFY, io->miscompare_off);
		return ctx_finish(c);
	}
	if (io->result < 0) {
		io_error(cmd, c->kind, io->result);
		return ctx_finish(c);
	}
	if (c->kind == K_READ && c->bounce)
		memcpy(cmd->buf, c->bounce, c->copy_len); /* EDTL not block multiple */
	/* only now does the buffer hold what the transport may send: a read
	 * that fails or is aborted leaves data_in_len at 0 */
	if (c->kind == K_READ) {
		cmd->data_in_len = c->data_in;
		cmd->data_hold = io->hold;    /* scsi_cmd_complete drops it unless GOOD */
		io->hold = NULL;
	}
	if (c->kind == K_VERIFY && c->bytchk) {
		/* offset of this piece within the data-out buffer */
		uint64_t done_bytes = io->off - (c->end - cmd->spriv_u[0]);
		uint64_t d;

		if (c->bytchk == 1) {
			d = first_diff(c->bounce, cmd->buf + done_bytes, io->len);
		} else { /* BYTCHK=3: one block compared against every block */
			uint64_t b;

			d = io->len;
			for (b = 0; b < io->len; b += SCSI_BS) {
				uint64_t x = first_diff(c->bounce + b, cmd->buf, SCSI_BS);

				if (x < SCSI_BS) {
					d = b + x;
					break;
				}
			}
		}
		if (d < io->len) {
			scsi_sense_info(cmd, SK_MISCOMPARE, ASC_MISCOMPARE_VERIFY, done_bytes + d);
			return ctx_finish(c);
		}
	}
	if (c->kind == K_MAPSTAT)
		return mapstat_reply(c, io);
	c->pos += io->len;
	if (c->kind == K_FLUSH)
		c->pos = c->end;
	ctx_step(c);
}

static struct sbc_ctx *ctx_new(struct scsi_cmd *cmd, enum sbc_kind kind, uint64_t off,
			       uint64_t len)
{
	struct sbc_ctx *c = calloc(1, sizeof(*c));

	if (!c) {
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		scsi_cmd_complete(cmd);
		return NULL;
	}
	c->cmd = cmd;
	c->kind = kind;
	c->pos = off;
	c->end = off + len;
	cmd->spriv_u[0] = len;
	return c;
}

static bool ctx_bounce(struct sbc_ctx *c, uint32_t len)
{
	c->bounce = malloc(len);
	c->bounce_len = len;
	if (!c->bounce) {
		scsi_sense(c->cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		ctx_finish(c);
		return false;
	}
	return true;
}

/* Common checks: protection field, transfer size, range. Returns false
 * (command completed) on error. */
static bool rw_checks(struct scsi_cmd *cmd, uint64_t lba, uint32_t n, bool has_prot)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);

	if (has_prot && (cmd->cdb[1] >> 5)) {
		/* no protection information on this LU */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 7);
		scsi_cmd_complete(cmd);
		return false;
	}
	if (out_of_range(lu, lba, n)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		scsi_cmd_complete(cmd);
		return false;
	}
	if ((uint64_t)n * SCSI_BS > SCSI_MAX_XFER) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true,
				 cmd->cdb[0] == OP_READ_6 || cmd->cdb[0] == OP_WRITE_6 ? 4 : 7, -1);
		scsi_cmd_complete(cmd);
		return false;
	}
	return true;
}

/* ---- READ ---- */

bool scsi_cdb_fills_data_in(const uint8_t *cdb)
{
	/* sbc_read: data_in_len is set in io_done, after the read of the
	 * whole range into cmd->buf (or the bounce copy) succeeded */
	switch (cdb[0]) {
	case OP_READ_6:
	case OP_READ_10:
	case OP_READ_12:
	case OP_READ_16:
		return true;
	default:
		return false;
	}
}

void sbc_read(struct scsi_cmd *cmd)
{
	uint64_t lba;
	uint32_t n, len;
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	decode_lba(cmd->cdb, &lba, &n);
	if (!rw_checks(cmd, lba, n, cmd->cdb[0] != OP_READ_6))
		return;
	cmd->xfer_len = n * SCSI_BS;
	len = cmd->xfer_len < cmd->buf_len ? cmd->xfer_len : cmd->buf_len;
	if (len == 0)
		return scsi_cmd_complete(cmd);
	c = ctx_new(cmd, K_READ, lba << SCSI_BS_SHIFT, (len + SCSI_BS - 1) & ~(SCSI_BS - 1));
	if (!c)
		return;
	c->data_in = len;
	if (len % SCSI_BS) {
		if (!ctx_bounce(c, (uint32_t)(c->end - c->pos)))
			return;
		c->copy_len = len;
	}
	ctx_step(c);
}

/* ---- WRITE, WRITE AND VERIFY ---- */

void sbc_write(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint8_t op = cmd->cdb[0];
	bool verify = op == OP_WRITE_VERIFY_10 || op == OP_WRITE_VERIFY_12 ||
		      op == OP_WRITE_VERIFY_16;
	uint64_t lba;
	uint32_t n, len;
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	decode_lba(cmd->cdb, &lba, &n);
	if (!rw_checks(cmd, lba, n, op != OP_WRITE_6))
		return;
	if (verify && (cmd->cdb[1] & 0x04)) { /* BYTCHK 2 bits in SBC-4; 2 is reserved */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 2);
		return scsi_cmd_complete(cmd);
	}
	cmd->xfer_len = n * SCSI_BS;
	if (write_protected(cmd)) {
		scsi_sense(cmd, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
		return scsi_cmd_complete(cmd);
	}
	/* EDTL shorter than the CDB asks: write the whole blocks the
	 * initiator sent (the transport reports the overflow); the dispatcher
	 * has refused a cut inside a block and a missing W bit (xfer_check) */
	len = cmd->xfer_len < cmd->buf_len ? cmd->xfer_len : cmd->buf_len;
	if (len == 0)
		return scsi_cmd_complete(cmd);
	c = ctx_new(cmd, K_WRITE, lba << SCSI_BS_SHIFT, len);
	if (!c)
		return;
	/* FUA, and WRITE AND VERIFY: the data must be on the medium to verify */
	if (verify || (op != OP_WRITE_6 && (cmd->cdb[1] & 0x08)) || write_through(lu))
		c->flags |= RAID_IO_FUA;
	ctx_step(c);
}

/* ---- VERIFY ---- */

void sbc_verify(struct scsi_cmd *cmd)
{
	uint64_t lba;
	uint32_t n;
	uint8_t bytchk = (cmd->cdb[1] >> 1) & 3;
	struct sbc_ctx *c;
	uint64_t need;

	if (!scsi_medium_ready(cmd))
		return;
	decode_lba(cmd->cdb, &lba, &n);
	if (!rw_checks(cmd, lba, n, true))
		return;
	if (bytchk == 2) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 2);
		return scsi_cmd_complete(cmd);
	}
	need = bytchk == 0 ? 0 : bytchk == 1 ? (uint64_t)n * SCSI_BS : (n ? SCSI_BS : 0);
	cmd->xfer_len = (uint32_t)need;
	if (n == 0)
		return scsi_cmd_complete(cmd);
	if (cmd->buf_len < need) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
		return scsi_cmd_complete(cmd);
	}
	/* BYTCHK=0 still reads the range: a medium verify */
	c = ctx_new(cmd, K_VERIFY, lba << SCSI_BS_SHIFT, (uint64_t)n * SCSI_BS);
	if (!c)
		return;
	c->bytchk = bytchk;
	if (!ctx_bounce(c, (uint32_t)((c->end - c->pos) < WS_PIECE ? (c->end - c->pos) : WS_PIECE)))
		return;
	ctx_step(c);
}

/* ---- WRITE SAME ---- */

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

void sbc_write_same(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	bool ws16 = cmd->cdb[0] == OP_WRITE_SAME_16;
	bool ndob = ws16 && (cmd->cdb[1] & 0x01);
	uint64_t lba;
	uint32_t n, piece, i;
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	lba = ws16 ? conf_get_be64(&cmd->cdb[2]) : conf_get_be32(&cmd->cdb[2]);
	n = ws16 ? conf_get_be32(&cmd->cdb[10]) : conf_get_be16(&cmd->cdb[7]);
	if (cmd->cdb[1] >> 5) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 7);
		return scsi_cmd_complete(cmd);
	}
	/* ANCHOR: ANC_SUP=0 in the provisioning VPD page. UNMAP needs a
	 * thin LU (LBPWS, LBPWS10 are 0 elsewhere). */
	if ((cmd->cdb[1] & 0x10) || ((cmd->cdb[1] & 0x08) && !lu->prov.thin)) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1,
				 cmd->cdb[1] & 0x10 ? 4 : 3);
		return scsi_cmd_complete(cmd);
	}
	if (n == 0) { /* WSNZ=1 in the Block Limits page */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, ws16 ? 10 : 7, -1);
		return scsi_cmd_complete(cmd);
	}
	if (lu->prov.thin && n > SCSI_WS_MAX_BLOCKS) {   /* Block Limits page */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, ws16 ? 10 : 7, -1);
		return scsi_cmd_complete(cmd);
	}
	if (out_of_range(lu, lba, n)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return scsi_cmd_complete(cmd);
	}
	cmd->xfer_len = ndob ? 0 : SCSI_BS;
	if (write_protected(cmd)) {
		scsi_sense(cmd, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
		return scsi_cmd_complete(cmd);
	}
	/* exactly one block of data-out: more is not a pattern this CDB
	 * describes (SBC-3 5.42), less is no block at all */
	if (!ndob && (cmd->buf_len < SCSI_BS || cmd->edtl > SCSI_BS)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
		return scsi_cmd_complete(cmd);
	}
	if ((cmd->cdb[1] & 0x08) && (ndob || all_zero(cmd->buf, SCSI_BS))) {
		/* UNMAP of zeroes: the blocks are freed and read back as
		 * zeros (LBPRZ). Other data is written as it is: SBC-3 lets
		 * the device server choose. */
		c = ctx_new(cmd, K_UNMAP, lba << SCSI_BS_SHIFT, (uint64_t)n * SCSI_BS);
		if (!c)
			return;
		return ctx_step(c);
	}
	if (raid_vol_write_same_max(lu->vol) >= SCSI_BS) {
		/* the volume repeats the block itself (librbd write-same) */
		c = ctx_new(cmd, K_WSAME_VOL, lba << SCSI_BS_SHIFT, (uint64_t)n * SCSI_BS);
		if (!c)
			return;
		if (write_through(lu))
			c->flags |= RAID_IO_FUA;
		if (!ctx_bounce(c, SCSI_BS))
			return;
		if (ndob)
			memset(c->bounce, 0, SCSI_BS);
		else
			memcpy(c->bounce, cmd->buf, SCSI_BS);
		return ctx_step(c);
	}
	c = ctx_new(cmd, K_WSAME, lba << SCSI_BS_SHIFT, (uint64_t)n * SCSI_BS);
	if (!c)
		return;
	if (write_through(lu))
		c->flags |= RAID_IO_FUA;
	piece = (uint64_t)n * SCSI_BS < WS_PIECE ? n * SCSI_BS : WS_PIECE;
	if (!ctx_bounce(c, piece))
		return;
	if (ndob)
		memset(c->bounce, 0, piece);
	else
		for (i = 0; i < piece; i += SCSI_BS)
			memcpy(c->bounce + i, cmd->buf, SCSI_BS);
	ctx_step(c);
}

/* ---- COMPARE AND WRITE ---- */

void sbc_compare_write(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint64_t lba = conf_get_be64(&cmd->cdb[2]);
	uint32_t n = cmd->cdb[13];
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	if (cmd->cdb[1] >> 5) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 7);
		return scsi_cmd_complete(cmd);
	}
	if (n > MAX_CAW_BLOCKS) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 13, -1);
		return scsi_cmd_complete(cmd);
	}
	if (out_of_range(lu, lba, n)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return scsi_cmd_complete(cmd);
	}
	cmd->xfer_len = 2 * n * SCSI_BS;
	if (write_protected(cmd)) {
		scsi_sense(cmd, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
		return scsi_cmd_complete(cmd);
	}
	if (n == 0 && cmd->edtl) {
		/* data-out for a zero-length compare cannot be right */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 13, -1);
		return scsi_cmd_complete(cmd);
	}
	if (n == 0)
		return scsi_cmd_complete(cmd);
	if (cmd->edtl != cmd->xfer_len || cmd->buf_len < cmd->xfer_len) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_IU);
		return scsi_cmd_complete(cmd);
	}
	c = ctx_new(cmd, K_CAW, lba << SCSI_BS_SHIFT, (uint64_t)n * SCSI_BS);
	if (!c)
		return;
	if ((cmd->cdb[1] & 0x08) || write_through(lu))
		c->flags |= RAID_IO_FUA;
	ctx_step(c);
}

/* ---- SYNCHRONIZE CACHE, PRE-FETCH ---- */

void sbc_sync_cache(struct scsi_cmd *cmd)
{
	uint64_t lba;
	uint32_t n;
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	decode_lba(cmd->cdb, &lba, &n);
	if (out_of_range(scsi_cmd_lu(cmd), lba, n)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return scsi_cmd_complete(cmd);
	}
	/* the whole volume is flushed: the range is a lower bound */
	c = ctx_new(cmd, K_FLUSH, 0, 1);
	if (c)
		ctx_step(c);
}

void sbc_prefetch(struct scsi_cmd *cmd)
{
	uint64_t lba;
	uint32_t n;

	if (!scsi_medium_ready(cmd))
		return;
	decode_lba(cmd->cdb, &lba, &n);
	if (out_of_range(scsi_cmd_lu(cmd), lba, n)) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return scsi_cmd_complete(cmd);
	}
	/* no target-side cache to fill: GOOD means "no room in the cache" */
	scsi_cmd_complete(cmd);
}

/* ---- READ CAPACITY, GET LBA STATUS ---- */

void sbc_read_capacity10(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint64_t last = lu->nblocks - 1;
	uint8_t d[8];

	if (!(cmd->cdb[8] & 0x01) && conf_get_be32(&cmd->cdb[2])) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, -1);
		return scsi_cmd_complete(cmd);
	}
	conf_put_be32(&d[0], last > 0xffffffffull ? 0xffffffffu : (uint32_t)last);
	conf_put_be32(&d[4], SCSI_BS);
	scsi_reply(cmd, d, 8, 8);
	scsi_cmd_complete(cmd);
}

static unsigned log2u(uint32_t v)
{
	unsigned r = 0;

	while (v > 1) {
		v >>= 1;
		r++;
	}
	return r;
}

void sbc_read_capacity16(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint32_t alloc = conf_get_be32(&cmd->cdb[10]);
	uint8_t d[32];

	memset(d, 0, sizeof(d));
	conf_put_be64(&d[0], lu->nblocks - 1);
	conf_put_be32(&d[8], SCSI_BS);
	/* the volume's physical block (RAID: 4 KiB, parity read-modify-write
	 * below it; an RBD image writes any block as it is: 512) */
	d[13] = (uint8_t)log2u(raid_vol_phys_bytes(lu->vol) / SCSI_BS);
	if (lu->prov.thin)   /* LBPME, and LBPRZ where unmapped blocks read as zeros */
		d[14] = (uint8_t)(0x80 | (lu->prov.discard_zeroes ? 0x40 : 0x00));
	scsi_reply(cmd, d, 32, alloc);
	scsi_cmd_complete(cmd);
}

void sbc_get_lba_status(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint64_t lba = conf_get_be64(&cmd->cdb[2]);
	uint32_t alloc = conf_get_be32(&cmd->cdb[10]);
	uint64_t left, nb = atomic_load_explicit(&lu->nblocks, memory_order_acquire);
	uint8_t d[24];

	if (!scsi_medium_ready(cmd))
		return;
	if (lba >= nb) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return scsi_cmd_complete(cmd);
	}
	if (lu->prov.thin) {
		struct sbc_ctx *c;

		/* at most 1 GiB asked about: the volume may look at less */
		left = nb - lba < (1u << 21) ? nb - lba : (1u << 21);
		c = ctx_new(cmd, K_MAPSTAT, lba << SCSI_BS_SHIFT, left << SCSI_BS_SHIFT);
		if (c)
			ctx_step(c);
		return;
	}
	memset(d, 0, sizeof(d));
	conf_put_be32(&d[0], 20);
	conf_put_be64(&d[8], lba);
	left = nb - lba;
	conf_put_be32(&d[16], left > 0xffffffffull ? 0xffffffffu : (uint32_t)left);
	d[20] = 0x00; /* mapped */
	scsi_reply(cmd, d, 24, alloc);
	scsi_cmd_complete(cmd);
}

/* ---- UNMAP ---- */

/*
 * SBC-3 5.28. The dispatcher only lets it reach a thin LU (OPF_THIN) and
 * has checked the parameter list arrived in full (PARAMETER LIST LENGTH of
 * data-out). Every descriptor is checked before anything is discarded.
 */
void sbc_unmap(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint32_t plen = conf_get_be16(&cmd->cdb[7]), have, bddl, n_desc, i;
	uint64_t total = 0;
	struct sbc_ctx *c;

	if (!scsi_medium_ready(cmd))
		return;
	if (cmd->cdb[1] & 0x01) {  /* ANCHOR: ANC_SUP=0 */
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 0);
		return scsi_cmd_complete(cmd);
	}
	if (plen == 0)   /* not an error: nothing to unmap */
		return scsi_cmd_complete(cmd);
	cmd->xfer_len = plen;
	if (write_protected(cmd)) {
		scsi_sense(cmd, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
		return scsi_cmd_complete(cmd);
	}
	have = plen < cmd->buf_len ? plen : cmd->buf_len;
	if (plen < 8 || have < 8) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return scsi_cmd_complete(cmd);
	}
	/* descriptors the list holds in full; a partial last one is ignored
	 * (SBC-3: the BLOCK DESCRIPTOR DATA LENGTH should be a multiple of 16) */
	bddl = conf_get_be16(&cmd->buf[2]);
	if (bddl > have - 8)
		bddl = have - 8;
	n_desc = bddl / 16;
	if (n_desc > SCSI_UNMAP_MAX_DESC) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, 2, -1);
		return scsi_cmd_complete(cmd);
	}
	for (i = 0; i < n_desc; i++) {
		const uint8_t *d = cmd->buf + 8 + 16 * i;
		uint64_t lba = conf_get_be64(&d[0]);
		uint32_t nblk = conf_get_be32(&d[8]);

		if (out_of_range(lu, lba, nblk)) {
			scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
			return scsi_cmd_complete(cmd);
		}
		total += nblk;
		if (total > SCSI_UNMAP_MAX_BLOCKS) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false,
					 (uint16_t)(8 + 16 * i + 8), -1);
			return scsi_cmd_complete(cmd);
		}
	}
	if (total == 0)
		return scsi_cmd_complete(cmd);
	c = ctx_new(cmd, K_UNMAP, 0, 0);
	if (!c)
		return;
	c->desc = cmd->buf + 8;
	c->n_desc = n_desc;
	ctx_step(c);
}
