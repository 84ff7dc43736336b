/*
 * raid/io_int.h - what the files of the data path share: the request
 * (struct req, its phases: state machine at the top of io.c), and the calls
 * between the request core (io.c), the mirror path (io_mirror.c: raid0, 1,
 * 10), the parity path (io_parity.c: raid5, 6) and mapped reads' holds
 * (io_hold.c). Private to those, and to the files that gate or drive
 * requests: reshape_gate.c, reshape.c.
 */
#ifndef RTGT_RAID_IO_INT_H
#define RTGT_RAID_IO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/ioctx.h"
#include "raid/mlayer.h"

enum { PH_LOCKING, PH_CACHE, PH_MAIN, PH_CAW_WRITE, PH_FUA, PH_DONE };

struct req {
	struct raid_io *io;
	struct raid_vol *vol;
	struct raid_pool *p;
	/* the layout this request is served by: &p->g, or during a reshape
	 * (reshape.c) the old or the new one, chosen when it passed the gate */
	const struct raid_geom *g;
	struct raid_ioctx *ctx;
	uint64_t loff, len;       /* pool logical range */
	bool write;               /* what MAIN/CAW_WRITE does now */
	uint8_t *data;            /* its buffer: caller's or cmp */
	uint8_t *cmp;             /* COMPARE_WRITE read buffer, owned */
	struct raid_lk lk;
	bool locked, in_submit;
	int phase;
	unsigned pending;
	int result;
	uint64_t touched;         /* devices written, for FUA */
	struct raid_mio *fs;      /* FUA/FLUSH mios, owned */
	struct req *parent;       /* cache-flush child: the FLUSH it works for */
	bool nofsync;             /* internal cache flush: no fsync after */
	struct raid_sc_waiter scw; /* FLUSH: waiting for earlier write-outs */
	/* the reshape gate (reshape.c): counted in epoch rs_epoch until it
	 * finishes; rs_next links it on the gate's list while it waits */
	bool rs_counted;
	unsigned rs_epoch;
	struct req *rs_next;
	/* RAID_IO_MAP honoured (a thick volume's READ from outside): segments
	 * may lend out member memory; hold collects it (owned, NULL until
	 * the first piece; handed to io->hold by raid_io_finish) */
	bool map;
	struct raid_io_hold *hold;
	unsigned map_issued;      /* segment reads issued as RAID_MIO_READ_MAP */
	/* what raid_io_sub_done runs when the last row or segment ended: set
	 * by io.c when it makes the request (never NULL once issued), so
	 * that io_mirror.c and io_parity.c, below io.c, never call up */
	void (*main_done)(struct req *rq);
};

/* At most this many pieces per mapped read: the segments issued beyond it
 * are read into the buffer as usual (io_mirror.c). */
#define RAID_HOLD_PIECES 64u

/* A row or segment of @rq ended (its result already in rq->result): the
 * last one hands the request back to its maker's main_done. Inline, so
 * that the row and segment paths need nothing of io.c. */
static inline bool raid_io_req_check(const struct req *rq)
{
	if (rq->phase == PH_MAIN || rq->phase == PH_CAW_WRITE)
		return rq->pending > 0 || rq->result;
	return true;
}

static inline void raid_io_sub_done(struct req *rq)
{
	RTGT_CHECK(raid_io_req_check(rq));
	if (--rq->pending == 0)
		rq->main_done(rq);
}

/* io_hold.c: mapped reads' holds, below the row and segment paths */
/* A mapped read of @len bytes into @dst (inside rq->data) came back as
 * @addr in member @m's mapping: the piece is lent out in rq->hold, or,
 * when it cannot be, copied into @dst. 0, or -errno when neither worked. */
int raid_io_map_piece(struct req *rq, uint8_t *dst, uint64_t len, struct raid_member *m,
		      const uint8_t *addr);
/* COLLECTING -> HELD (rq succeeded): the pieces sorted, the request's
 * gate count moved to the hold, the hold handed to rq->io->hold. */
void raid_io_hold_keep(struct req *rq);
/* Drop a hold that is not handed out (the read failed): its mappings'
 * references, then the hold. */
void raid_io_hold_free(struct raid_io_hold *h);

/* io.c: request core */
/* A row of a stripe-cache write-out (child of a FLUSH or of
 * raid_pool_cache_flush) ended. */
void raid_io_cache_sub_done(struct req *rq);
/* The request is done with @result: lock released, io->cb called. */
void raid_io_finish(struct req *rq, int result);
/* fsync every member in @mask the request may have written (FUA, FLUSH). */
void raid_io_start_fsync(struct req *rq, uint64_t mask);

/* io_mirror.c: issue @rq's segments (raid0/1/10) */
void raid_io_mirror_dispatch(struct req *rq);

/* io_parity.c: issue @rq's rows (raid5/6) */
void raid_io_parity_dispatch(struct req *rq);
/* Write out taken stripe-cache entry @e as a row of cache-flush child @rq. */
void raid_io_ent_row(struct req *rq, struct raid_sc_ent *e);

#endif
