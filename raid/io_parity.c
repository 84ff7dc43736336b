/*
 * raid/io_parity.c - the parity path of the data path: a request on raid5 or
 * raid6 becomes rows (struct row: one full stripe's band of the request,
 * under that row's stripe lock), each planned, read, computed and written
 * here, with the stripe cache (scache.c) gathering partial rows. The
 * request around them is io.c's (its state machine at the top of io.c;
 * shared declarations in io_int.h).
 *
 * Layer: rows, the rows of raid5/6 (raid/README.md "Layers"). May call:
 * scache.c, bitmap.c, lock.c, member.c, mstate.c, ioctx.c, geom.c,
 * parity.c, conf/; a row's end goes back to the request through
 * raid_io_sub_done (io_int.h: the request's main_done), not into io.c.
 *
 * Row states (parity levels, struct row.stage): PLAN -> READ (member reads
 * issued, maybe none) -> WRITE (parity computed; the write-intent bits made
 * durable by the bitmap writer thread when they were not, then member
 * writes issued: row_writes -> row_writes_go) -> DONE; a read error marks the member faulty and sends the row back to PLAN
 * (at most MAX_TRIES times), where it is planned again without that member.
 * Write errors mark members faulty; the row still succeeds while no more
 * members are unusable than the level tolerates, because every surviving
 * member then holds the new stripe and the lost one is implied by parity.
 *
 * Write plans: FULL (every data chunk covered: parity from the new data, no
 * reads), RMW (read old data + old parity of the touched band), RCW (read
 * the untouched data of the band), DEGRADED (read every readable member of
 * the band, recover the missing ones, overlay, recompute parity). RMW is used
 * when it reads no more than RCW.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/io_int.h"
#include "raid/member.h"

#define MAX_TRIES 4

enum { MODE_DIRECT, MODE_FULL, MODE_RMW, MODE_RCW, MODE_DEGRADED, MODE_FILL };
enum { ST_PLAN, ST_READ, ST_WRITE, ST_REPAIR, ST_DONE };

struct row {
	struct req *rq;
	uint64_t row;
	uint64_t lo, hi;          /* band inside the chunk */
	uint64_t cs[RAID_MAX_SLOTS], ce[RAID_MAX_SLOTS]; /* coverage per data index */
	uint8_t *src[RAID_MAX_SLOTS]; /* caller bytes at cs, per data index */
	uint8_t *band[RAID_MAX_SLOTS];/* per device, owned */
	bool missing[RAID_MAX_SLOTS];
	bool bad[RAID_MAX_SLOTS];     /* read error: rebuilt and rewritten */
	int pdev, qdev;
	int mode, stage, tries;
	unsigned pending;
	bool err;
	struct raid_sc_ent *ent;  /* writing out a stripe-cache entry, owned */
	struct raid_sc_ent *sup;  /* taken entry this full-stripe write supersedes */
	struct raid_lk lk;        /* this row's stripe lock (unless rq holds one) */
	bool locked;
	struct raid_mio mio[RAID_MAX_SLOTS];
};

static void row_plan(struct row *r);

/* ---------------- raid5/6 rows ---------------- */

static void row_free(struct row *r)
{
	for (unsigned i = 0; i < RAID_MAX_SLOTS; i++)
		free(r->band[i]);
	free(r);
}

/* End the write-out of the cache entry @r took (still under its row's
 * exclusive lock). A failed one keeps its acknowledged data in the cache,
 * readable and written out again later, and every FLUSH fails until it is
 * on the members: never silently dropped. */
static void row_ent_done(struct row *r, int res)
{
	struct raid_pool *p = r->rq->p;

	if (r->ent) {
		/* one line per row, not per retry */
		if (res && !r->ent->err)
			LOG_ERR(RAID_MOD, "pool %s: writing out cached row %llu failed: %s; kept in the cache, SYNCHRONIZE CACHE fails until it is written, initiators get a deferred error",
				p->name, (unsigned long long)r->row, strerror(-res));
		raid_sc_done(&p->sc, r->ent, res, true);
		r->ent = NULL;
	}
	if (r->sup) {
		/* superseded by this full-stripe write: if that failed, the
		 * acknowledged older data may not be on the members either */
		if (res)
			LOG_ERR(RAID_MOD, "pool %s: full-stripe write over cached row %llu failed: %s",
				p->name, (unsigned long long)r->row, strerror(-res));
		raid_sc_done(&p->sc, r->sup, res, false);
		r->sup = NULL;
	}
}

static void row_finish(struct row *r, int res)
{
	struct req *rq = r->rq;

	row_ent_done(r, res);

	if (!res && !rq->write) {
		/* cached rows are newer than the members */
		const struct raid_geom *g = rq->g;

		for (unsigned d = 0; d < g->ndata; d++)
			if (r->ce[d] > r->cs[d])
				raid_sc_overlay(&rq->p->sc, r->row, d * g->chunk + r->cs[d],
						r->ce[d] - r->cs[d], r->src[d]);
	}

	if (res && !rq->result)
		rq->result = res;
	if (r->locked)
		raid_slock_release(&rq->p->lock, &r->lk);
	row_free(r);
	raid_io_sub_done(rq);
}

static uint8_t *row_band(struct row *r, unsigned dev)
{
	/* every band is filled by a read, a recovery, the new data or the
	 * parity computation before use: no need to zero it */
	if (!r->band[dev])
		r->band[dev] = raid_alloc_nz(r->hi - r->lo);
	return r->band[dev];
}

static void row_io_done(struct raid_mio *mio, int res);

static int row_submit(struct row *r, unsigned dev, int op, uint8_t *buf, uint64_t coff,
		      uint64_t len)
{
	struct raid_mio *mio = &r->mio[dev];
	int rc;

	mio->m = r->rq->p->m[dev];
	mio->op = op;
	mio->buf = buf;
	mio->off = r->row * r->rq->g->chunk + coff;
	mio->len = len;
	mio->cb = row_io_done;
	mio->arg = r;
	rc = raid_mio_submit(r->rq->ctx, mio);
	if (rc == 0) {
		r->pending++;
		if (op == RAID_MIO_WRITE)
			r->rq->touched |= 1ull << dev;
	}
	return rc;
}

static unsigned row_count_missing(const struct row *r, unsigned n)
{
	unsigned i, c = 0;

	for (i = 0; i < n; i++)
		c += r->missing[i];
	return c;
}

static void row_writes(struct row *r);
static void row_after_read(struct row *r);

static void row_stage_done(struct row *r)
{
	const struct raid_geom *g = r->rq->g;

	if (r->stage == ST_REPAIR) {
		row_finish(r, 0);
		return;
	}
	if (r->stage == ST_READ) {
		if (r->err) {
			if (++r->tries >= MAX_TRIES) {
				row_finish(r, -EIO);
				return;
			}
			row_plan(r);
			return;
		}
		row_after_read(r);
		return;
	}
	/* ST_WRITE: fine while the surviving members hold the new stripe. */
	if (r->mode == MODE_FULL && atomic_load(&r->rq->p->n_bad)) {
		struct raid_pool *p = r->rq->p;
		uint64_t mask = 0;

		/* every member written got its chunk of the row: bad ranges there
		 * are gone (not on one swapped into the slot since the write) */
		for (unsigned i = 0; i < g->n; i++) {
			struct raid_member *m = p->m[i];

			if (m && r->mio[i].m == m && r->mio[i].op == RAID_MIO_WRITE &&
			    raid_member_writable(m))
				mask |= 1ull << i;
		}
		if (raid_pool_bad_clear(p, mask, r->row * g->chunk, (r->row + 1) * g->chunk)) {
			raid_bm_end(p, r->row * g->chunk + r->lo, r->hi - r->lo);
			r->stage = ST_DONE;
			row_finish(r, -EIO);   /* not durable: the range stays bad */
			return;
		}
	}
	raid_bm_end(r->rq->p, r->row * g->chunk + r->lo, r->hi - r->lo);
	r->stage = ST_DONE;
	row_finish(r, raid_pool_unusable(r->rq->p) > g->npar && r->err ? -EIO : 0);
}

static void row_io_done(struct raid_mio *mio, int res)
{
	struct row *r = mio->arg;

	if (res < 0) {
		if (mio->op == RAID_MIO_READ && raid_member_read_error(mio->m, res, mio->off))
			r->bad[mio - r->mio] = true;  /* the dev it was issued for */
		else if (mio->op == RAID_MIO_READ && r->rq->g->npar == 0)
			r->tries = MAX_TRIES;     /* raid0: nothing to rebuild from */
		else
			raid_member_fail(mio->m, res,
					 mio->op == RAID_MIO_READ ? "read failed" : "write failed");
		r->err = true;
	}
	if (--r->pending == 0)
		row_stage_done(r);
}

static void row_reads_issued(struct row *r)
{
	if (r->pending == 0)
		row_stage_done(r);
}

/* Decide what to read and issue it. */
static void row_plan(struct row *r)
{
	struct req *rq = r->rq;
	struct raid_pool *p = rq->p;
	const struct raid_geom *g = rq->g;
	uint64_t bl = r->hi - r->lo, rowend = r->row * g->chunk + r->hi;
	unsigned d, i, touched = 0, partial = 0, nmiss;
	bool full = r->lo == 0 && r->hi == g->chunk;

	r->stage = ST_READ;
	r->err = false;
	r->pending = 1;          /* guard */
	for (i = 0; i < g->n; i++)
		r->missing[i] = !p->m[i] || !raid_member_readable(p->m[i], rowend) || r->bad[i];
	nmiss = row_count_missing(r, g->n);
	raid_geom_parity(g, r->row, &r->pdev, &r->qdev);
	for (d = 0; d < g->ndata; d++) {
		bool t = r->ce[d] > r->cs[d];

		touched += t;
		if (r->cs[d] != r->lo || r->ce[d] != r->hi)
			partial++;
		if (r->cs[d] != 0 || r->ce[d] != g->chunk)
			full = false;
	}
	if (nmiss > g->npar) {
		r->pending = 0;
		row_finish(r, -EIO);
		return;
	}
	if (nmiss && raid_bm_unsynced(p, r->row * g->chunk, g->chunk)) {
		/* a full-row write reads nothing: it makes the row right again */
		bool fullw = rq->write && full && !r->ent, need = rq->write && !fullw;

		for (d = 0; d < g->ndata && !fullw; d++)
			if (r->ce[d] > r->cs[d] && r->missing[raid_geom_data_dev(g, r->row, d)])
				need = true;
		if (need) {
			/* parity here may belong to a write cut by the crash */
			LOG_ERR(RAID_MOD, "pool %s: row %llu not resynced since the crash: cannot reconstruct",
				p->name, (unsigned long long)r->row);
			r->pending = 0;
			row_finish(r, -EIO);
			return;
		}
	}
	if (!rq->write) {
		bool direct = true;

		for (d = 0; d < g->ndata; d++)
			if (r->ce[d] > r->cs[d] && r->missing[raid_geom_data_dev(g, r->row, d)])
				direct = false;
		r->mode = direct ? MODE_DIRECT : MODE_DEGRADED;
	} else if (r->ent && !raid_sc_ent_full(&p->sc, r->ent)) {
		r->mode = nmiss ? MODE_DEGRADED : MODE_FILL;
	} else if (full) {
		r->mode = MODE_FULL;
	} else if (nmiss) {
		r->mode = MODE_DEGRADED;
	} else {
		r->mode = touched + g->npar <= partial ? MODE_RMW : MODE_RCW;
	}
	for (d = 0; d < g->ndata; d++) {
		unsigned dev = raid_geom_data_dev(g, r->row, d);
		bool t = r->ce[d] > r->cs[d];
		int rc = 0;

		if (r->mode == MODE_DIRECT && t)
			rc = row_submit(r, dev, RAID_MIO_READ, r->src[d], r->cs[d], r->ce[d] - r->cs[d]);
		else if ((r->mode == MODE_DEGRADED && !r->missing[dev]) || r->mode == MODE_FILL ||
			 (r->mode == MODE_RMW && t) ||
			 (r->mode == MODE_RCW && (r->cs[d] != r->lo || r->ce[d] != r->hi)))
			rc = row_band(r, dev) ? row_submit(r, dev, RAID_MIO_READ, r->band[dev], r->lo, bl)
					      : -ENOMEM;
		if (rc)
			r->err = true;
	}
	for (i = 0; i < 2; i++) {
		int dev = i ? r->qdev : r->pdev;
		int rc = 0;

		if (dev < 0)
			continue;
		if ((r->mode == MODE_DEGRADED && !r->missing[dev]) || r->mode == MODE_RMW)
			rc = row_band(r, (unsigned)dev)
				     ? row_submit(r, (unsigned)dev, RAID_MIO_READ, r->band[dev], r->lo, bl)
				     : -ENOMEM;
		if (rc)
			r->err = true;
	}
	if (--r->pending == 0)
		row_reads_issued(r);
}

static void xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] ^= src[i];
}

/* Reads are in: compute, then write (or copy out for reads). */
static void row_after_read(struct row *r)
{
	struct req *rq = r->rq;
	struct raid_pool *p = rq->p;
	const struct raid_geom *g = rq->g;
	uint64_t bl = r->hi - r->lo;
	uint8_t *bufs[RAID_MAX_SLOTS];
	unsigned d, i;
	int rc = 0;

	if (r->mode == MODE_DIRECT) {
		row_finish(r, 0);
		return;
	}
	if (r->mode == MODE_FULL) {
		/* Parity straight from the caller's (or the cache entry's)
		 * buffer when isa-l can use it: no copy of the data. */
		bool aligned = true;

		for (d = 0; d < g->ndata; d++)
			if ((uintptr_t)r->src[d] % 32)
				aligned = false;
		if (aligned) {
			for (d = 0; d < g->ndata; d++)
				bufs[raid_geom_data_dev(g, r->row, d)] = r->src[d];
			for (i = 0; i < 2; i++) {
				int dev = i ? r->qdev : r->pdev;

				if (dev < 0)
					continue;
				if (!row_band(r, (unsigned)dev)) {
					row_finish(r, -ENOMEM);
					return;
				}
				bufs[dev] = r->band[dev];
			}
			rc = raid_par_gen(g, r->row, bufs, bl);
			if (rc) {
				row_finish(r, rc);
				return;
			}
			row_writes(r);
			return;
		}
	}
	for (i = 0; i < g->n; i++)
		if (!row_band(r, i)) {
			row_finish(r, -ENOMEM);
			return;
		}
	if (r->mode == MODE_DEGRADED) {
		for (i = 0; i < g->n; i++)
			bufs[i] = r->band[i];
		rc = raid_par_recover(g, r->row, bufs, r->missing, bl);
		if (rc) {
			row_finish(r, rc);
			return;
		}
		if (!rq->write) {
			for (d = 0; d < g->ndata; d++)
				if (r->ce[d] > r->cs[d])
					memcpy(r->src[d], r->band[raid_geom_data_dev(g, r->row, d)] +
					       (r->cs[d] - r->lo), r->ce[d] - r->cs[d]);
			/* put the rebuilt bytes back where reading failed (a
			 * shared lock is held: no writer can interleave) */
			r->stage = ST_REPAIR;
			r->err = false;
			r->pending = 1;
			for (i = 0; i < g->n; i++)
				if (r->bad[i] && raid_member_writable(p->m[i]) &&
				    row_submit(r, i, RAID_MIO_WRITE, r->band[i], r->lo, bl))
					r->err = true;
			if (--r->pending == 0)
				row_stage_done(r);
			return;
		}
	}
	if (r->mode == MODE_RMW) {
		/* Turn each touched data band into old^new (0 where untouched),
		 * compute the parity of the deltas, add it to the old parity. */
		uint8_t *zero = raid_alloc(bl), *dp = raid_alloc_nz(bl), *dq = raid_alloc_nz(bl);

		if (!zero || !dp || !dq) {
			free(zero);
			free(dp);
			free(dq);
			row_finish(r, -ENOMEM);
			return;
		}
		for (d = 0; d < g->ndata; d++) {
			unsigned dev = raid_geom_data_dev(g, r->row, d);

			if (r->ce[d] > r->cs[d]) {
				uint8_t *b = r->band[dev];

				memset(b, 0, r->cs[d] - r->lo);
				memset(b + (r->ce[d] - r->lo), 0, r->hi - r->ce[d]);
				xor_into(b + (r->cs[d] - r->lo), r->src[d], r->ce[d] - r->cs[d]);
				bufs[dev] = b;
			} else {
				bufs[dev] = zero;
			}
		}
		bufs[r->pdev] = dp;
		if (r->qdev >= 0)
			bufs[r->qdev] = dq;
		rc = raid_par_gen(g, r->row, bufs, bl);
		xor_into(r->band[r->pdev], dp, bl);
		if (r->qdev >= 0)
			xor_into(r->band[r->qdev], dq, bl);
		free(zero);
		free(dp);
		free(dq);
	} else {
		/* FULL, RCW, DEGRADED, FILL: whole data band present, overlay
		 * new data and compute parity from scratch. */
		for (d = 0; d < g->ndata; d++) {
			unsigned dev = raid_geom_data_dev(g, r->row, d);

			if (r->ent && r->mode != MODE_FULL) {
				/* only the cached sectors are new */
				for (uint64_t o = 0; o < g->chunk; o += 512)
					if (raid_sc_ent_valid(r->ent, (d * g->chunk + o) / 512))
						memcpy(r->band[dev] + o, r->src[d] + o, 512);
			} else if (r->ce[d] > r->cs[d]) {
				memcpy(r->band[dev] + (r->cs[d] - r->lo), r->src[d], r->ce[d] - r->cs[d]);
			}
		}
		for (i = 0; i < g->n; i++)
			bufs[i] = r->band[i];
		rc = raid_par_gen(g, r->row, bufs, bl);
	}
	if (rc) {
		row_finish(r, rc);
		return;
	}
	row_writes(r);
}

static void row_writes_go(void *arg);

/* As seg_write_issue: the bits first, without blocking the reactor. */
static void row_writes(struct row *r)
{
	const struct raid_geom *g = r->rq->g;

	r->stage = ST_WRITE;
	if (raid_bm_start_async(r->rq->p, r->row * g->chunk + r->lo, r->hi - r->lo, r->rq->ctx,
				row_writes_go, r))
		row_writes_go(r);
}

/* A member write that could not even be submitted leaves that member with
 * the old band while the others hold the new stripe: the same as a write
 * that failed (member faulty, the row fails only beyond redundancy). */
static void row_write_unsent(struct row *r, unsigned dev, int rc)
{
	raid_member_fail(r->rq->p->m[dev], rc, "write could not be submitted");
	r->err = true;
}

static void row_writes_go(void *arg)
{
	struct row *r = arg;
	struct req *rq = r->rq;
	struct raid_pool *p = rq->p;
	const struct raid_geom *g = rq->g;
	unsigned d, i;
	int rc;

	r->err = false;
	r->pending = 1;
	for (d = 0; d < g->ndata; d++) {
		unsigned dev = raid_geom_data_dev(g, r->row, d);

		if ((r->ce[d] <= r->cs[d] && !(r->bad[dev] && r->band[dev])) || !p->m[dev] ||
		    !raid_member_writable(p->m[dev]))
			continue;
		if ((r->ent && r->mode != MODE_FULL) || (r->bad[dev] && r->band[dev]))
			/* whole band: cache fill, or rewriting a read error */
			rc = row_submit(r, dev, RAID_MIO_WRITE, r->band[dev], r->lo, r->hi - r->lo);
		else
			rc = row_submit(r, dev, RAID_MIO_WRITE, r->src[d], r->cs[d], r->ce[d] - r->cs[d]);
		if (rc)
			row_write_unsent(r, dev, rc);
	}
	for (i = 0; i < 2; i++) {
		int dev = i ? r->qdev : r->pdev;

		if (dev < 0 || !p->m[dev] || !raid_member_writable(p->m[dev]))
			continue;
		rc = row_submit(r, (unsigned)dev, RAID_MIO_WRITE, r->band[dev], r->lo, r->hi - r->lo);
		if (rc)
			row_write_unsent(r, (unsigned)dev, rc);
	}
	if (--r->pending == 0)
		row_stage_done(r);
}

/* A row writing out cache entry @e (taken), as part of @rq. */
void raid_io_ent_row(struct req *rq, struct raid_sc_ent *e)
{
	const struct raid_geom *g = rq->g;
	struct row *r = calloc(1, sizeof(*r));

	rq->pending++;
	if (!r) {
		raid_sc_done(&rq->p->sc, e, -ENOMEM, true);
		rq->result = -ENOMEM;
		raid_io_sub_done(rq);
		return;
	}
	r->rq = rq;
	r->row = e->row;
	r->lo = 0;
	r->hi = g->chunk;
	r->ent = e;
	for (unsigned d = 0; d < g->ndata; d++) {
		r->cs[d] = 0;
		r->ce[d] = g->chunk;
		r->src[d] = e->data + d * g->chunk;
	}
	row_plan(r);
}

/* Make @r write out cache entry @e instead of its own part. */
static void row_use_ent(struct row *r, struct raid_sc_ent *e)
{
	const struct raid_geom *g = r->rq->g;

	r->ent = e;
	r->lo = 0;
	r->hi = g->chunk;
	for (unsigned d = 0; d < g->ndata; d++) {
		r->cs[d] = 0;
		r->ce[d] = g->chunk;
		r->src[d] = e->data + d * g->chunk;
	}
}

/* Whether row_plan() would refuse any write into @row now: more members
 * missing than parity, or a member missing while the row may still hold a
 * write cut by a crash (not resynced). The cache must not acknowledge what
 * it could never write out. */
static bool row_write_refused(struct raid_pool *p, const struct raid_geom *g, uint64_t row)
{
	uint64_t rowend = (row + 1) * g->chunk;
	unsigned i, nmiss = 0;

	for (i = 0; i < g->n; i++)
		nmiss += !p->m[i] || !raid_member_readable(p->m[i], rowend);
	if (!nmiss)
		return false;
	return nmiss > g->npar || raid_bm_unsynced(p, row * g->chunk, g->chunk);
}

/* Stripe cache for a write's part [x0, x0+n) of row @r, whose lock is held.
 * Returns true when the part is cached (no I/O); the row may also have been
 * turned into the write-out of a now full (or FUA) entry. */
static bool cache_write(struct row *r, uint64_t x0, uint64_t n, const uint8_t *src)
{
	struct req *rq = r->rq;
	struct raid_pool *p = rq->p;
	uint64_t stripe = rq->g->stripe_bytes;
	struct raid_sc_ent *e;

	if (!p->sc.max || atomic_load(&p->sc_off))
		return false;   /* none, or a reshape runs (reshape.c) */
	if (row_write_refused(p, rq->g, r->row))
		return false;   /* row_plan() fails it: never acknowledged from the cache */
	if (x0 == 0 && n == stripe) {
		/* supersedes whatever is cached for the row; a write-out all
		 * the same for a FLUSH waiting for it (row_ent_done) */
		r->sup = raid_sc_take(&p->sc, r->row);
		return false;
	}
	if (rq->io->flags & RAID_IO_FUA) {
		e = raid_sc_take(&p->sc, r->row);
		if (e) {
			raid_sc_ent_put(e, x0, n, src);
			row_use_ent(r, e);
		}
		return false;
	}
	/* Only the tail of a streaming write opens an entry: the next
	 * sequential write will complete the row. */
	e = raid_sc_merge(&p->sc, r->row, x0, n, src,
			  rq->len >= stripe && x0 + n < stripe && src + n == rq->data + rq->len);
	if (!e)
		return false;
	e->vol = rq->vol;
	if (!raid_sc_ent_full(&p->sc, e)) {
		/* acknowledged from the cache: a failed write-out of it is a
		 * deferred error for the volume (raid_sc_done) */
		e->unreported = true;
		return true;
	}
	row_use_ent(r, raid_sc_take(&p->sc, r->row));
	return false;
}

/* The row's lock is held (its own or the request's): go. */
static void row_start(struct row *r)
{
	const struct raid_geom *g = r->rq->g;

	if (r->rq->write) {
		unsigned d0 = 0;
		uint64_t x0, n = 0;

		for (unsigned d = 0; d < g->ndata; d++)
			if (r->ce[d] > r->cs[d]) {
				if (!n)
					d0 = d;
				n += r->ce[d] - r->cs[d];
			}
		x0 = d0 * g->chunk + r->cs[d0];
		if (cache_write(r, x0, n, r->src[d0])) {
			row_finish(r, 0);
			return;
		}
	}
	row_plan(r);
}

static void row_granted(void *arg)
{
	struct row *r = arg;
	struct raid_ioctx *ctx = r->rq->ctx;   /* r may be gone after row_start */

	r->locked = true;
	row_start(r);
	raid_ioctx_kick(ctx);
}

/* Rows lock themselves, one stripe each, unless the request holds a lock
 * (COMPARE_WRITE, cache write-out). A row never waits for a lock while
 * holding one, so row locks cannot deadlock; sequential writes sharing a
 * boundary row only wait for that row. */
static void row_lock(struct row *r)
{
	struct req *rq = r->rq;

	if (rq->locked) {
		row_start(r);
		return;
	}
	r->lk.a = r->row * rq->g->stripe_bytes;
	r->lk.b = r->lk.a + rq->g->stripe_bytes;
	r->lk.excl = rq->write;
	r->lk.ctx = rq->ctx;
	r->lk.fn = row_granted;
	r->lk.arg = r;
	if (raid_slock_acquire(&rq->p->lock, &r->lk)) {
		r->locked = true;
		row_start(r);
	}
}

void raid_io_parity_dispatch(struct req *rq)
{
	const struct raid_geom *g = rq->g;
	uint64_t pos = 0;

	while (pos < rq->len) {
		uint64_t loff = rq->loff + pos;
		uint64_t rowno = loff / g->stripe_bytes;
		uint64_t rend = (rowno + 1) * g->stripe_bytes;
		uint64_t n = rq->len - pos < rend - loff ? rq->len - pos : rend - loff;
		struct row *r;
		uint64_t x;

		r = calloc(1, sizeof(*r));
		rq->pending++;
		if (!r) {
			rq->result = -ENOMEM;
			raid_io_sub_done(rq);
			pos += n;
			continue;
		}
		r->rq = rq;
		r->row = rowno;
		r->lo = g->chunk;
		r->hi = 0;
		/* coverage of each data chunk of the row */
		for (x = loff; x < loff + n;) {
			uint64_t in = (x - rowno * g->stripe_bytes);
			unsigned d = (unsigned)(in / g->chunk);
			uint64_t cs = in % g->chunk;
			uint64_t ce = g->chunk;

			if (ce - cs > loff + n - x)
				ce = cs + (loff + n - x);
			r->cs[d] = cs;
			r->ce[d] = ce;
			r->src[d] = rq->data + pos + (x - loff);
			if (cs < r->lo)
				r->lo = cs;
			if (ce > r->hi)
				r->hi = ce;
			x += ce - cs;
		}
		row_lock(r);
		pos += n;
	}
}
