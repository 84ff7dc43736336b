/*
 * target/scsi/xcopy.c - SPC-4 third-party copy: EXTENDED COPY (LID1) with
 * identification CSCD descriptors (E4h) and block-to-block segment
 * descriptors (02h), and RECEIVE COPY RESULTS (COPY STATUS, OPERATING
 * PARAMETERS, FAILED SEGMENT DETAILS). The limits are the SCSI_XCOPY_*
 * macros of scsi_int.h, which the Third-party Copy VPD page (spc.c) reports.
 *
 * Access: a CSCD descriptor names an LU by the NAA designator VPD 0x83
 * reports, and is looked up only among the LUs of the requesting I_T
 * nexus's own LUN view (nexus->vlu, under the target lock): an LU of
 * another target, or one masked from the nexus, is not reachable (COPY
 * ABORTED, COPY TARGET DEVICE NOT REACHABLE) exactly as if it did not
 * exist. A destination mapped read-only in that view, or with SWP set, is
 * DATA PROTECT, WRITE PROTECTED; the reservations of source and destination
 * are checked with pr_conflict() as a READ (source) or WRITE (destination)
 * from the nexus would be, before the first piece and again before every
 * piece (a reservation taken meanwhile stops the copy).
 *
 * Every check on the parameter list and on every segment (ranges, access)
 * runs before the first byte moves, so a refused list changes nothing.
 *
 * Copy state machine (one struct xc_ctx per command, one raid_io at a time):
 *
 *   CHECKED --xc_step()--> READ --read_done()--> WRITE --write_done()--> xc_step()
 *        \                   \________________\______________________\-> FINISH
 *
 * Each piece (at most XC_PIECE bytes) is read from the source into the
 * ctx's buffer and then written to the destination; the next piece starts
 * only when that write completed. An abort (ABORT TASK, ABORT TASK SET,
 * LUN or target reset of the LU the command was sent to: cmd->aborted) or
 * a reset of a source or destination LU (lu->resets moved) is looked at
 * between pieces: a piece is never cut, the pieces before it are on the
 * destination, the ones after it untouched; the command then ends TASK
 * ABORTED (its own LU) or CHECK CONDITION, COPY ABORTED (another's reset),
 * never GOOD. An overlapping copy inside one LU to a higher LBA runs from
 * the end down, so it reads no block it already wrote.
 *
 * Results (RECEIVE COPY RESULTS): a copy with LIST ID USAGE 00b (hold) is
 * recorded in its nexus (nexus->xres, target lock), at most
 * SCSI_XCOPY_HELD per nexus (the oldest finished one makes room); only that
 * nexus can read it. 10b (discard) and 11b (no list identifier) are not held.
 *
 * Layer: handlers (target/scsi/README.md "Layers"). May call: spc.c (the
 * NAA designator), pr.c (pr_conflict), sense.c, task.c, raid/raid.h, conf/.
 * Reached from lu.c only through the opcode table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

#define XC_PIECE (1u << 20)     /* bytes per read and write of a copy */
#define XC_HDR_LEN 16u
#define XC_CSCD_LEN 32u
#define XC_SEG_LEN 28u
#define XC_CSCD_IDENT 0xe4
#define XC_SEG_B2B 0x02
/* Segment descriptor fields a COPY ABORTED can point at */
#define XC_SEG_SRC_IDX 4u
#define XC_SEG_DST_IDX 6u
#define XC_SEG_SRC_LBA 12u
#define XC_SEG_DST_LBA 20u

_Static_assert(SCSI_XCOPY_MAX_SEG_BYTES <= 0xffffu * SCSI_BS, "NUMBER OF BLOCKS is 16 bits");
_Static_assert(SCSI_XCOPY_MAX_SEG <= 0xffffu && SCSI_XCOPY_MAX_CSCD <= 0xffffu,
	       "counts are 16-bit fields");

enum { LIST_HOLD = 0, LIST_DISCARD = 2, LIST_NONE = 3 };

/* ---- parameter list accessors (SPC-4 6.4.3, 6.4.5, 6.4.6.5) ---- */

static uint8_t hdr_list_id(const uint8_t *h) { return h[0]; }
static uint8_t hdr_usage(const uint8_t *h) { return (h[1] >> 3) & 3; }
static uint16_t hdr_cscd_len(const uint8_t *h) { return conf_get_be16(&h[2]); }
static uint32_t hdr_seg_len(const uint8_t *h) { return conf_get_be32(&h[8]); }
static uint32_t hdr_inline_len(const uint8_t *h) { return conf_get_be32(&h[12]); }

static uint8_t cscd_type(const uint8_t *d) { return d[0]; }
static bool cscd_nul(const uint8_t *d) { return d[1] & 0x20; }
static uint8_t cscd_pdt(const uint8_t *d) { return d[1] & 0x1f; }
/* the designation descriptor: bytes 4..27 */
static const uint8_t *cscd_desig(const uint8_t *d) { return &d[4]; }
static uint32_t cscd_block_len(const uint8_t *d) { return conf_get_be24(&d[29]); }

static uint8_t seg_type(const uint8_t *d) { return d[0]; }
static uint32_t seg_desc_len(const uint8_t *d) { return conf_get_be16(&d[2]) + 4u; }
static uint16_t seg_src(const uint8_t *d) { return conf_get_be16(&d[4]); }
static uint16_t seg_dst(const uint8_t *d) { return conf_get_be16(&d[6]); }
static uint16_t seg_blocks(const uint8_t *d) { return conf_get_be16(&d[10]); }
static uint64_t seg_src_lba(const uint8_t *d) { return conf_get_be64(&d[12]); }
static uint64_t seg_dst_lba(const uint8_t *d) { return conf_get_be64(&d[20]); }

/* ---- the copy ---- */

struct xc_cscd {
	const uint8_t *desc;            /* borrowed from cmd->buf */
	struct scsi_lu *lu;             /* a reference (refs), owned; NULL until resolved */
	bool ro;                        /* no writable mapping of it in the view */
	uint64_t resets;                /* lu->resets when resolved */
};

struct xc_seg {
	uint16_t src, dst;              /* CSCD indexes */
	uint64_t src_off, dst_off, len; /* bytes */
	bool backward;                  /* overlapping, to higher offsets: from the end */
};

struct xc_ctx {
	struct raid_io io;
	struct scsi_cmd *cmd;           /* borrowed: completes with us */
	struct xc_cscd cscd[SCSI_XCOPY_MAX_CSCD];
	unsigned n_cscd;
	struct xc_seg seg[SCSI_XCOPY_MAX_SEG];
	unsigned n_seg, seg_i;
	uint64_t seg_done;              /* bytes of seg[seg_i] on the destination */
	uint64_t bytes_done;            /* bytes of every segment on destinations */
	uint64_t piece_src, piece_dst;  /* the piece in flight */
	uint32_t piece_len;
	uint8_t *buf;                   /* owned, XC_PIECE bytes; NULL before the copy */
	int held;                       /* index in cmd->nexus->xres; -1: not held */
};

static bool ctx_check(const struct xc_ctx *c)
{
	return c->seg_i <= c->n_seg && (c->seg_i == c->n_seg || c->seg_done <= c->seg[c->seg_i].len);
}

/* The held record's progress, under the target lock. */
static void held_progress(struct xc_ctx *c, bool seg_finished)
{
	struct scsi_nexus *n = c->cmd->nexus;
	struct scsi_xcopy_res *r;

	if (c->held < 0)
		return;
	pthread_mutex_lock(&n->t->lock);
	r = &n->xres[c->held];
	if (seg_finished)
		r->segs_done++;
	r->bytes_done = (uint32_t)c->bytes_done;
	pthread_mutex_unlock(&n->t->lock);
}

static void ctx_finish(struct xc_ctx *c)
{
	struct scsi_cmd *cmd = c->cmd;
	unsigned i;

	if (c->held >= 0) {
		struct scsi_nexus *n = cmd->nexus;
		struct scsi_xcopy_res *r;
		bool ok = cmd->status == SCSI_GOOD && !scsi_cmd_aborted(cmd);

		pthread_mutex_lock(&n->t->lock);
		r = &n->xres[c->held];
		r->state = ok ? XRES_DONE_OK : XRES_DONE_ERR;
		r->bytes_done = (uint32_t)c->bytes_done;
		r->status = scsi_cmd_aborted(cmd) ? SCSI_TASK_ABORTED : cmd->status;
		r->sense_len = scsi_cmd_aborted(cmd) ? 0 : cmd->sense_len;
		memcpy(r->sense, cmd->sense, r->sense_len);
		pthread_mutex_unlock(&n->t->lock);
	}
	if (cmd->status != SCSI_GOOD || scsi_cmd_aborted(cmd))
		LOG_WARN("scsi", "%s: EXTENDED COPY ended after %llu bytes of segment %u of %u: status 0x%02x%s",
			 cmd->nexus ? cmd->nexus->iport : "?", (unsigned long long)c->bytes_done,
			 c->seg_i, c->n_seg, cmd->status,
			 scsi_cmd_aborted(cmd) ? " (aborted)" : "");
	for (i = 0; i < c->n_cscd; i++)
		scsi_lu_put(c->cscd[i].lu);
	free(c->buf);
	free(c);
	scsi_cmd_complete(cmd);
}

/* A failed or refused volume I/O of the copy: COPY ABORTED (SPC-4 6.4.3.x:
 * an error on a CSCD while segments are processed). */
static void io_fail(struct xc_ctx *c, int result, bool reading)
{
	struct scsi_cmd *cmd = c->cmd;
	uint16_t code;

	if (result == -ENOLINK || result == -EBUSY)
		code = ASC_COPY_TARGET_NOT_REACHABLE;
	else if (result == -ENOSPC)
		code = ASC_SPACE_ALLOC_FAILED;
	else if (result == -EIO)
		code = reading ? ASC_READ_ERROR : ASC_WRITE_ERROR;
	else if (result == -ERANGE)
		code = ASC_LBA_OUT_OF_RANGE;   /* the LU shrank under the copy */
	else
		code = ASC_INTERNAL_TARGET_FAILURE;
	LOG_WARN("scsi", "%s: EXTENDED COPY %s failed: %s",
		 c->cscd[reading ? c->seg[c->seg_i].src : c->seg[c->seg_i].dst].lu->name,
		 reading ? "read" : "write", strerror(-result));
	scsi_sense(cmd, SK_COPY_ABORTED, code);
	ctx_finish(c);
}

static const struct scsi_op xc_read_op = { .flags = OPF_PR_READ, .name = "EXTENDED COPY source" };
static const struct scsi_op xc_write_op = { .flags = OPF_PR_WRITE | OPF_MEDIUM_WRITE,
					    .name = "EXTENDED COPY destination" };
static const uint8_t xc_read_cdb[16] = { OP_READ_16 };
static const uint8_t xc_write_cdb[16] = { OP_WRITE_16 };

/* Whether @lu's reservations let @n read (@write false) or write it. */
static bool access_conflict(struct scsi_lu *lu, const struct scsi_nexus *n, bool write)
{
	bool bad;

	pthread_mutex_lock(&lu->lock);
	bad = pr_conflict(lu, n, write ? &xc_write_op : &xc_read_op,
			  write ? xc_write_cdb : xc_read_cdb);
	pthread_mutex_unlock(&lu->lock);
	return bad;
}

static bool write_protected(const struct xc_cscd *d)
{
	bool wp;

	if (d->ro)
		return true;
	pthread_mutex_lock(&d->lu->lock);
	wp = d->lu->mode.swp;
	pthread_mutex_unlock(&d->lu->lock);
	return wp;
}

static void read_done(struct raid_io *io);
static void write_done(struct raid_io *io);

/* The current piece's read from, or write to, @vol at @off (c->buf). */
static void piece_submit(struct xc_ctx *c, struct raid_vol *vol, enum raid_op op, uint64_t off,
			 void (*cb)(struct raid_io *))
{
	int rc;

	memset(&c->io, 0, sizeof(c->io));
	c->io.op = op;
	c->io.off = off;
	c->io.len = c->piece_len;
	c->io.buf = c->buf;
	c->io.cb = cb;
	c->io.arg = c;
	rc = raid_vol_submit(vol, c->cmd->ioctx, &c->io);
	if (rc < 0)
		io_fail(c, rc, op == RAID_OP_READ);
}

/* Starts the next piece, or finishes. */
static void xc_step(struct xc_ctx *c)
{
	struct scsi_cmd *cmd = c->cmd;
	struct xc_seg *s;
	uint64_t left;
	unsigned i;

	RTGT_CHECK(ctx_check(c));
	while (c->seg_i < c->n_seg && c->seg_done == c->seg[c->seg_i].len) {
		c->seg_i++;
		c->seg_done = 0;
		held_progress(c, true);
	}
	if (scsi_cmd_aborted(cmd) || c->seg_i == c->n_seg)
		return ctx_finish(c);
	for (i = 0; i < c->n_cscd; i++) {
		struct xc_cscd *d = &c->cscd[i];

		if (d->lu && atomic_load_explicit(&d->lu->resets, memory_order_acquire) != d->resets) {
			/* a reset of a source or destination stops the copy
			 * as it stops the commands addressed to that LU */
			scsi_sense(cmd, SK_COPY_ABORTED, ASC_BUS_DEVICE_RESET);
			return ctx_finish(c);
		}
	}
	s = &c->seg[c->seg_i];
	if (access_conflict(c->cscd[s->src].lu, cmd->nexus, false) ||
	    access_conflict(c->cscd[s->dst].lu, cmd->nexus, true)) {
		cmd->status = SCSI_RESERVATION_CONFLICT;
		return ctx_finish(c);
	}
	left = s->len - c->seg_done;
	c->piece_len = left < XC_PIECE ? (uint32_t)left : XC_PIECE;
	if (s->backward) {
		c->piece_src = s->src_off + left - c->piece_len;
		c->piece_dst = s->dst_off + left - c->piece_len;
	} else {
		c->piece_src = s->src_off + c->seg_done;
		c->piece_dst = s->dst_off + c->seg_done;
	}
	piece_submit(c, c->cscd[s->src].lu->vol, RAID_OP_READ, c->piece_src, read_done);
}

static void read_done(struct raid_io *io)
{
	struct xc_ctx *c = io->arg;
	struct xc_seg *s = &c->seg[c->seg_i];

	if (io->result < 0)
		return io_fail(c, io->result, true);
	/* nothing written yet for this piece: an abort stops here */
	if (scsi_cmd_aborted(c->cmd))
		return ctx_finish(c);
	piece_submit(c, c->cscd[s->dst].lu->vol, RAID_OP_WRITE, c->piece_dst, write_done);
}

static void write_done(struct raid_io *io)
{
	struct xc_ctx *c = io->arg;

	if (io->result < 0)
		return io_fail(c, io->result, false);
	c->seg_done += c->piece_len;
	c->bytes_done += c->piece_len;
	held_progress(c, false);
	xc_step(c);
}

/* ---- checks before the copy ---- */

static void refuse_field(struct scsi_cmd *cmd, uint16_t code, uint32_t byte, int bit)
{
	scsi_sense_field(cmd, code, false, (uint16_t)(byte > 0xffff ? 0xffff : byte), bit);
}

/*
 * The LU of the nexus's view whose NAA designator is @desig (a designation
 * descriptor, 24 bytes), with a reference; NULL when none (or the
 * designator is not one rtgt reports). *@ro: every mapping of it in the
 * view is read-only. Without a nexus (a caller with no view) the
 * target's map.
 */
static struct scsi_lu *find_lu(struct scsi_cmd *cmd, const uint8_t *desig, bool *ro)
{
	struct scsi_target *t = cmd->target;
	struct scsi_nexus *n = cmd->nexus;
	struct scsi_lu *found = NULL;
	uint8_t naa[16];
	unsigned i;

	*ro = true;
	/* binary code set, association 0 (the LU), type 3 (NAA), 16 bytes */
	if ((desig[0] & 0x0f) != 1 || (desig[1] & 0x3f) != 0x03 || desig[3] != 16)
		return NULL;
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lu *lu = n ? n->vlu[i] : t->luns[i];

		if (!lu || (found && lu != found))
			continue;
		spc_lu_naa(lu, naa);
		if (memcmp(naa, &desig[4], 16) != 0)
			continue;
		if (!found) {
			found = lu;
			atomic_fetch_add_explicit(&lu->refs, 1, memory_order_relaxed);
		}
		if (!n || !n->vro[i])
			*ro = false;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

/* Takes a held record for @list_id in the nexus; false after setting the
 * sense of a refusal. */
static bool held_take(struct xc_ctx *c, uint8_t list_id)
{
	struct scsi_cmd *cmd = c->cmd;
	struct scsi_nexus *n = cmd->nexus;
	struct scsi_xcopy_res *r;
	int pick = -1, oldest = -1;
	unsigned i;

	pthread_mutex_lock(&n->t->lock);
	for (i = 0; i < SCSI_XCOPY_HELD; i++) {
		r = &n->xres[i];
		if (r->state != XRES_FREE && r->list_id == list_id) {
			if (r->state == XRES_RUNNING) {
				pthread_mutex_unlock(&n->t->lock);
				/* SPC-4 6.4.3.2: a list identifier in use */
				scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_OPERATION_IN_PROGRESS);
				return false;
			}
			pick = (int)i;
		}
	}
	for (i = 0; i < SCSI_XCOPY_HELD && pick < 0; i++)
		if (n->xres[i].state == XRES_FREE)
			pick = (int)i;
	for (i = 0; i < SCSI_XCOPY_HELD && pick < 0; i++)
		if (n->xres[i].state != XRES_RUNNING &&
		    (oldest < 0 || n->xres[i].seq < n->xres[oldest].seq))
			oldest = (int)i;
	if (pick < 0)
		pick = oldest;
	if (pick < 0) {
		pthread_mutex_unlock(&n->t->lock);
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INSUFFICIENT_RESOURCES);
		return false;
	}
	r = &n->xres[pick];
	memset(r, 0, sizeof(*r));
	r->state = XRES_RUNNING;
	r->list_id = list_id;
	r->seq = ++n->xres_seq;
	pthread_mutex_unlock(&n->t->lock);
	c->held = pick;
	return true;
}

/*
 * The parameter list (@p, @len bytes, at least the header): header,
 * counts, descriptor types and fields (ILLEGAL REQUEST with a field
 * pointer). Fills c->cscd descs and c->seg indexes and ranges. Returns
 * false after setting the sense.
 */
static bool parse_list(struct xc_ctx *c, const uint8_t *p, uint32_t len)
{
	struct scsi_cmd *cmd = c->cmd;
	uint32_t cscd_len = hdr_cscd_len(p), seg_len = hdr_seg_len(p), off, n_seg = 0;
	const uint8_t *segs;
	unsigned i;

	if ((uint64_t)cscd_len + seg_len > SCSI_XCOPY_MAX_DESC_LEN) {
		/* SPC-4 6.4.3.5 */
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return false;
	}
	if (XC_HDR_LEN + cscd_len + seg_len > len) {
		/* the lists do not fit in the parameter list sent */
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return false;
	}
	if (p[1] & 0xc0) {
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 1, 7);
		return false;
	}
	if (hdr_usage(p) == 1) {
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 1, 4);
		return false;
	}
	if (hdr_usage(p) == LIST_NONE && hdr_list_id(p) != 0) {
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 0, -1);
		return false;
	}
	if (conf_get_be32(&p[4]) != 0) {
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 4, -1);
		return false;
	}
	if (hdr_inline_len(p) != 0) {
		/* MAXIMUM INLINE DATA LENGTH is 0 */
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 12, -1);
		return false;
	}
	if (cscd_len % XC_CSCD_LEN) {
		refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, 2, -1);
		return false;
	}
	if (cscd_len / XC_CSCD_LEN > SCSI_XCOPY_MAX_CSCD) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_TOO_MANY_TARGET_DESC);
		return false;
	}
	c->n_cscd = cscd_len / XC_CSCD_LEN;
	segs = p + XC_HDR_LEN + cscd_len;
	/* count first: a hostile length never walks past the list */
	for (off = 0; off < seg_len; off += seg_desc_len(segs + off)) {
		if (seg_len - off < 4 || seg_desc_len(segs + off) > seg_len - off) {
			scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
			return false;
		}
		if (++n_seg > SCSI_XCOPY_MAX_SEG) {
			scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_TOO_MANY_SEGMENT_DESC);
			return false;
		}
	}
	for (i = 0; i < c->n_cscd; i++) {
		const uint8_t *d = p + XC_HDR_LEN + i * XC_CSCD_LEN;
		uint32_t at = XC_HDR_LEN + i * XC_CSCD_LEN;

		if (cscd_type(d) != XC_CSCD_IDENT) {
			scsi_sense_field(cmd, ASC_UNSUPP_TARGET_DESC, false, (uint16_t)at, -1);
			return false;
		}
		/* LU ID TYPE (bits 7-6 of byte 1): SPC-4 has no such field in an
		 * identification descriptor (SPC-3 had it), so it is ignored,
		 * as libiscsi's ValidTgtDescr expects of an SPC-4 device */
		if (cscd_pdt(d) != 0) {
			/* block devices only */
			refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, at + 1, 4);
			return false;
		}
		if (cscd_block_len(d) != SCSI_BS) {
			refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, at + 29, -1);
			return false;
		}
		c->cscd[i].desc = d;
	}
	for (off = 0, i = 0; off < seg_len; off += seg_desc_len(segs + off), i++) {
		const uint8_t *d = segs + off;
		uint32_t at = XC_HDR_LEN + cscd_len + off;
		struct xc_seg *s = &c->seg[i];

		if (seg_type(d) != XC_SEG_B2B) {
			scsi_sense_field(cmd, ASC_UNSUPP_SEGMENT_DESC, false, (uint16_t)at, -1);
			return false;
		}
		if (seg_desc_len(d) != XC_SEG_LEN) {
			refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, at + 2, -1);
			return false;
		}
		/* DC (bit 1) and CAT (bit 0) mean nothing with 512-byte
		 * blocks on both sides; the rest is reserved */
		if (d[1] & 0xfc) {
			refuse_field(cmd, ASC_INVALID_FIELD_IN_PARAM, at + 1, 7);
			return false;
		}
		s->src = seg_src(d);
		s->dst = seg_dst(d);
		s->len = (uint64_t)seg_blocks(d) * SCSI_BS;
		/* the ranges are checked once the CSCDs are resolved; the
		 * shifts cannot wrap a checked range (check_ranges) */
		s->src_off = seg_src_lba(d);
		s->dst_off = seg_dst_lba(d);
	}
	c->n_seg = n_seg;
	return true;
}

/*
 * COPY ABORTED for segment @i (SPC-4 6.4.3: errors found while processing
 * segment descriptors), with the segment pointer in the sense-key specific
 * field: SD set, FIELD POINTER = byte @field of that segment descriptor.
 * Fixed format: COMMAND-SPECIFIC INFORMATION holds the index of that
 * segment descriptor in the list (0 for the first).
 */
static bool seg_abort(struct xc_ctx *c, unsigned i, uint16_t code, uint16_t field,
		      const char *why)
{
	struct scsi_cmd *cmd = c->cmd;
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint8_t sks[3] = { 0x80 | 0x20, 0, 0 };
	bool desc;

	LOG_WARN("scsi", "%s: EXTENDED COPY segment %u refused: %s",
		 cmd->nexus ? cmd->nexus->iport : "?", i, why);
	conf_put_be16(&sks[1], field);
	pthread_mutex_lock(&lu->lock);
	desc = lu->mode.d_sense;
	pthread_mutex_unlock(&lu->lock);
	cmd->status = SCSI_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsi_sense_build(cmd->sense, desc, SK_COPY_ABORTED, code, false,
						   0, true, sks);
	if (!desc)
		conf_put_be32(&cmd->sense[8], i);
	return false;
}

static bool out_of_range(struct scsi_lu *lu, uint64_t lba, uint64_t blocks)
{
	uint64_t nb = atomic_load_explicit(&lu->nblocks, memory_order_acquire);

	return lba > nb || blocks > nb - lba;
}

/* Resolves the CSCDs the segments use and checks every segment (reach,
 * range, write protection, reservations). Returns false after setting
 * the sense or status. */
static bool check_segments(struct xc_ctx *c)
{
	struct scsi_cmd *cmd = c->cmd;
	unsigned i, k;

	for (i = 0; i < c->n_seg; i++) {
		struct xc_seg *s = &c->seg[i];
		uint16_t idx[2] = { s->src, s->dst };

		for (k = 0; k < 2; k++) {
			struct xc_cscd *d;
			uint16_t frac;

			uint16_t at = k ? XC_SEG_DST_IDX : XC_SEG_SRC_IDX;

			if (idx[k] >= c->n_cscd)
				return seg_abort(c, i, ASC_COPY_TARGET_NOT_REACHABLE, at,
						 "CSCD descriptor index beyond the list");
			d = &c->cscd[idx[k]];
			if (cscd_nul(d->desc))
				return seg_abort(c, i, ASC_COPY_TARGET_NOT_REACHABLE, at,
						 "CSCD descriptor with NUL set");
			if (!d->lu) {
				d->lu = find_lu(cmd, cscd_desig(d->desc), &d->ro);
				if (!d->lu)
					return seg_abort(c, i, ASC_COPY_TARGET_NOT_REACHABLE, at,
							 "no LU of the nexus's view has that designator");
				d->resets = atomic_load_explicit(&d->lu->resets, memory_order_acquire);
			}
			if (d->lu->pr_bad || raid_vol_ready_progress(d->lu->vol, &frac) != 0)
				return seg_abort(c, i, ASC_COPY_TARGET_NOT_REACHABLE, at,
						 "LU not ready");
		}
	}
	for (i = 0; i < c->n_seg; i++) {
		struct xc_seg *s = &c->seg[i];
		struct xc_cscd *src = &c->cscd[s->src], *dst = &c->cscd[s->dst];

		if (write_protected(dst)) {
			LOG_WARN("scsi", "%s: EXTENDED COPY into %s refused: write protected",
				 cmd->nexus ? cmd->nexus->iport : "?", dst->lu->name);
			scsi_sense(cmd, SK_DATA_PROTECT, ASC_WRITE_PROTECTED);
			return false;
		}
		if (access_conflict(src->lu, cmd->nexus, false) ||
		    access_conflict(dst->lu, cmd->nexus, true)) {
			cmd->status = SCSI_RESERVATION_CONFLICT;
			return false;
		}
		/* COPY ABORTED, NO ADDITIONAL SENSE, the segment pointer at
		 * the LBA: of the additional sense codes libiscsi's
		 * ValidSegDescr accepts for this case (00/00, 08/04, 0d/02),
		 * the only one that does not claim the LU is unreachable */
		if (out_of_range(src->lu, s->src_off, s->len / SCSI_BS))
			return seg_abort(c, i, ASC_NONE, XC_SEG_SRC_LBA,
					 "source range beyond the end of its LU");
		if (out_of_range(dst->lu, s->dst_off, s->len / SCSI_BS))
			return seg_abort(c, i, ASC_NONE, XC_SEG_DST_LBA,
					 "destination range beyond the end of its LU");
		s->src_off <<= SCSI_BS_SHIFT;
		s->dst_off <<= SCSI_BS_SHIFT;
		s->backward = src->lu == dst->lu && s->src_off < s->dst_off &&
			      s->dst_off < s->src_off + s->len;
	}
	return true;
}

void xcopy_extended_copy(struct scsi_cmd *cmd)
{
	uint32_t plen = conf_get_be32(&cmd->cdb[10]);
	uint32_t len = plen < cmd->buf_len ? plen : cmd->buf_len;
	struct xc_ctx *c;

	cmd->xfer_len = plen;
	/* SPC-4: a parameter list length of 0 is not an error, nothing is copied */
	if (plen == 0)
		return scsi_cmd_complete(cmd);
	if (len < XC_HDR_LEN) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return scsi_cmd_complete(cmd);
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return scsi_cmd_complete(cmd);
	}
	c->cmd = cmd;
	c->held = -1;
	if (hdr_usage(cmd->buf) == LIST_HOLD && cmd->nexus && !held_take(c, hdr_list_id(cmd->buf)))
		return ctx_finish(c);
	if (!parse_list(c, cmd->buf, len) || !check_segments(c))
		return ctx_finish(c);
	c->buf = malloc(XC_PIECE);
	if (!c->buf) {
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return ctx_finish(c);
	}
	xc_step(c);
}

/* ---- RECEIVE COPY RESULTS ---- */

static void op_params(struct scsi_cmd *cmd, uint32_t alloc)
{
	uint8_t d[46];

	memset(d, 0, sizeof(d));
	conf_put_be32(&d[0], sizeof(d) - 4);
	d[4] = 0x01;                                    /* SNLID: list id usage 11b */
	conf_put_be16(&d[8], SCSI_XCOPY_MAX_CSCD);
	conf_put_be16(&d[10], SCSI_XCOPY_MAX_SEG);
	conf_put_be32(&d[12], SCSI_XCOPY_MAX_DESC_LEN);
	conf_put_be32(&d[16], SCSI_XCOPY_MAX_SEG_BYTES);
	conf_put_be32(&d[20], 0);                       /* maximum inline data length */
	conf_put_be32(&d[24], 0);                       /* held data limit */
	conf_put_be16(&d[34], SCSI_XCOPY_HELD);         /* total concurrent copies */
	d[36] = SCSI_XCOPY_HELD;                        /* maximum concurrent copies */
	d[37] = SCSI_BS_SHIFT;                          /* data segment granularity */
	d[43] = 2;
	d[44] = XC_SEG_B2B;
	d[45] = XC_CSCD_IDENT;
	scsi_reply(cmd, d, sizeof(d), alloc);
}

void xcopy_receive_results(struct scsi_cmd *cmd)
{
	uint8_t sa = cmd->cdb[1] & 0x1f, list_id = cmd->cdb[2];
	uint32_t alloc = conf_get_be32(&cmd->cdb[10]);
	struct scsi_nexus *n = cmd->nexus;
	struct scsi_xcopy_res r;
	uint8_t d[60 + SCSI_SENSE_MAX];
	bool found = false;
	unsigned i, len;

	if (sa == RCR_OPERATING_PARAMS) {
		op_params(cmd, alloc);
		return scsi_cmd_complete(cmd);
	}
	/* only the nexus's own copies */
	if (n) {
		pthread_mutex_lock(&n->t->lock);
		for (i = 0; i < SCSI_XCOPY_HELD && !found; i++)
			if (n->xres[i].state != XRES_FREE && n->xres[i].list_id == list_id) {
				r = n->xres[i];
				found = true;
			}
		pthread_mutex_unlock(&n->t->lock);
	}
	if (!found) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, -1);
		return scsi_cmd_complete(cmd);
	}
	memset(d, 0, sizeof(d));
	if (sa == RCR_COPY_STATUS) {
		conf_put_be32(&d[0], 8);
		d[4] = r.state == XRES_RUNNING ? 0x00 : r.state == XRES_DONE_OK ? 0x01 : 0x02;
		conf_put_be16(&d[5], r.segs_done);
		d[7] = 0x00;                            /* transfer count in bytes */
		conf_put_be32(&d[8], r.bytes_done);
		len = 12;
	} else if (r.state == XRES_RUNNING) {
		/* FAILED SEGMENT DETAILS of a copy still running: none yet */
		len = 4;
	} else {
		len = 60u + r.sense_len;
		conf_put_be32(&d[0], len - 4);
		d[56] = r.status;
		conf_put_be16(&d[58], r.sense_len);
		memcpy(&d[60], r.sense, r.sense_len);
	}
	scsi_reply(cmd, d, len, alloc);
	scsi_cmd_complete(cmd);
}
