/*
 * raid/io.c - the request core of the data path: a struct raid_io becomes a
 * request (struct req) that takes the stripe lock, is split into rows
 * (raid5/6: io_parity.c) or segments (raid0/1/10: io_mirror.c), and
 * completes on the submitting thread's raid_ioctx. This file holds the
 * request's state machine, its completion, FUA/FLUSH and the stripe
 * cache's write-outs; what the data path's files share is raid/io_int.h.
 *
 * Layer: request, above the rows and segments (raid/README.md "Layers").
 * May call: io_mirror.c, io_parity.c (dispatch), io_hold.c,
 * reshape_gate.c, scache.c, lock.c, member.c, mstate.c, ioctx.c, geom.c,
 * parity.c, conf/. The rows and segments hand a request back through its
 * main_done pointer, which this file sets.
 *
 * Request states (struct req.phase), and who moves it:
 *   (gate)   every request from outside first passes the reshape gate
 *            (raid_reshape_admit, reshape.c), which picks its layout
 *            (rq->g) and counts it until raid_io_finish (a mapped read:
 *            until its hold is released, "mapped reads" below); while a reshape
 *            moves the range it touches it waits there (phase LOCKING,
 *            no lock held) and raid_io_gate_go re-runs it on its ctx
 *   LOCKING  --lock granted (raid_vol_submit or lock_granted)--> MAIN
 *   MAIN     --all rows/segments done (sub_done)--> main_done():
 *              COMPARE_WRITE read: compare -> CAW_WRITE (equal) or DONE
 *              write with RAID_IO_FUA -> FUA
 *              otherwise -> DONE
 *   CAW_WRITE --sub_done--> FUA or DONE
 *   FUA      --every fsync done (fsync_done)--> DONE
 *   DONE     raid_io_finish(): stripe lock released, io->cb called (deferred through
 *            raid_defer when still inside raid_vol_submit).
 * FLUSH requests take no lock. Without a stripe cache they go straight to
 * FUA (every member). With one (raid5/6): CACHE (a child request per row on
 * the cache list, each under that row's exclusive lock, writes it out) ->
 * WAIT (raid_sc_wait: until every cache entry any request took before this
 * point - a FUA or row-completing write, the age-based write-out, another
 * FLUSH, on any reactor - has been written out or has failed) -> FUA (every
 * member, also after an error) -> DONE with the first error of its own
 * write-outs, of the ones it waited for, or of an entry still cached after a
 * failed write-out.
 * Invariant (req_check): pending counts exactly the rows/segments/fsyncs
 * issued and not yet finished; the lock is held in MAIN/CAW_WRITE/FUA for
 * writes and parity-level reads.
 * Invariant (FLUSH, across reactors): a FLUSH completes 0 only when every
 * write acknowledged before it was submitted is on the members and fsync'd:
 * an acknowledged cached write is either on the cache list when the FLUSH's
 * children run (they write it out) or was taken before raid_sc_wait
 * numbered the write-outs (the FLUSH waits for it); a write-out that fails
 * keeps its entry on the list (reads still return its data, raid_sc_wait
 * reports it) instead of dropping acknowledged data, and when it holds data
 * acknowledged since its last failure, bumps the volume's write_failures
 * (raid_vol_write_failures: the target layer's deferred errors).
 * Write errors and member writes that cannot be submitted (no memory for a
 * bounce buffer) are the same thing: the member is failed and the write
 * succeeds only while the level's redundancy covers it. The cache never
 * takes a write into a row that the data path would refuse to write
 * (row_write_refused: beyond redundancy, or degraded and not resynced).
 * Mirror reads of a region not resynced since a crash always read the first
 * readable copy (the resync's source), never a balanced pick.
 * Slots map to members through p->m[], which the background thread changes
 * while requests run (a spare swapped into a failed slot): it is read
 * without a lock, entry by entry (atomic pointers; rule at the top of
 * pool.c), and a completion names the slot by the index it was issued to
 * (mio - r->mio), not by member->slot.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/util.h"
#include "raid/io_int.h"
#include "raid/member.h"


/* ---------------- completion ---------------- */

static void deliver(void *arg)
{
	struct req *rq = arg;
	struct raid_io *io = rq->io;
	struct raid_ioctx *ctx = rq->ctx;

	free(rq->cmp);
	free(rq->fs);
	free(rq);
	raid_ioctx_io_done(ctx);
	io->cb(io);
}

void raid_io_finish(struct req *rq, int result)
{
	rq->phase = PH_DONE;
	if (rq->locked) {
		rq->locked = false;
		raid_slock_release(&rq->p->lock, &rq->lk);
	}
	if (rq->parent) {
		struct req *parent = rq->parent;

		if (result && !parent->result)
			parent->result = result;
		free(rq);
		raid_io_cache_sub_done(parent);
		return;
	}
	rq->io->result = result;
	if (rq->hold && result == 0)
		raid_io_hold_keep(rq);
	if (rq->hold) {
		/* failed: the caller sends nothing of it */
		raid_io_hold_free(rq->hold);
		rq->hold = NULL;
	}
	if (rq->rs_counted)
		raid_reshape_done(rq);
	if (rq->in_submit) {
		/* Callbacks never run inside raid_vol_submit(). */
		if (raid_defer(rq->ctx, deliver, rq) == 0)
			return;
		LOG_ERR(RAID_MOD, "out of memory deferring a completion");
	}
	deliver(rq);
}

/* ---------------- FUA / FLUSH ---------------- */

static void fsync_done(struct raid_mio *mio, int res)
{
	struct req *rq = mio->arg;

	if (res < 0)
		raid_member_fail(mio->m, res, "fsync failed");
	if (--rq->pending)
		return;
	if (raid_pool_beyond_redundancy(rq->p))
		raid_io_finish(rq, -EIO);
	else
		raid_io_finish(rq, rq->result);
}

/* fsync every writable member in @mask (all when mask == ~0). */
void raid_io_start_fsync(struct req *rq, uint64_t mask)
{
	struct raid_pool *p = rq->p;
	unsigned i, n = 0;
	int rc;

	rq->phase = PH_FUA;
	rq->fs = calloc(p->g.n, sizeof(*rq->fs));
	if (!rq->fs) {
		raid_io_finish(rq, -ENOMEM);
		return;
	}
	rq->pending = 1;
	for (i = 0; i < p->g.n; i++) {
		struct raid_member *m = p->m[i];
		struct raid_mio *mio = &rq->fs[n];

		if (!(mask & (1ull << i)) || !m || !raid_member_writable(m))
			continue;
		mio->m = m;
		mio->op = RAID_MIO_FSYNC;
		mio->cb = fsync_done;
		mio->arg = rq;
		mio->buf = NULL;
		mio->off = mio->len = 0;
		rc = raid_mio_submit(rq->ctx, mio);
		if (rc == 0) {
			rq->pending++;
			n++;
		} else {
			/* an fsync skipped is a member not known durable */
			raid_member_fail(m, rc, "fsync could not be submitted");
		}
	}
	/* drop the guard */
	if (--rq->pending == 0)
		raid_io_finish(rq, raid_pool_beyond_redundancy(p) ? -EIO : rq->result);
}
/* ---------------- request ---------------- */

static void main_done(struct req *rq);

static void dispatch(struct req *rq)
{
	rq->pending = 1;          /* guard until every row/segment is issued */
	if (raid_geom_is_parity_level(rq->g))
		raid_io_parity_dispatch(rq);
	else
		raid_io_mirror_dispatch(rq);
	raid_io_sub_done(rq);
}

static void main_done(struct req *rq)
{
	struct raid_io *io = rq->io;

	if (rq->parent) {
		raid_io_finish(rq, rq->result);
		return;
	}
	if (rq->result) {
		raid_io_finish(rq, rq->result);
		return;
	}
	if (rq->phase == PH_MAIN && io->op == RAID_OP_COMPARE_WRITE) {
		for (uint64_t i = 0; i < rq->len; i++) {
			if (rq->cmp[i] != io->buf[i]) {
				io->miscompare_off = i;
				raid_io_finish(rq, -EILSEQ);
				return;
			}
		}
		rq->phase = PH_CAW_WRITE;
		rq->write = true;
		rq->data = io->buf + rq->len;
		dispatch(rq);
		return;
	}
	if (rq->write && (io->flags & RAID_IO_FUA)) {
		raid_io_start_fsync(rq, rq->touched);
		return;
	}
	raid_io_finish(rq, 0);
}

/* ---- writing out the stripe cache (FLUSH, age, close) ---- */

/* A FLUSH whose earlier write-outs have all ended: fsync, even after an
 * error (what did get written is made durable), which it then reports. */
static void flush_waited(struct req *rq)
{
	if (!rq->result)
		rq->result = rq->scw.err;
	raid_io_start_fsync(rq, ~0ull);
}

static void flush_woken(void *arg)
{
	struct req *rq = arg;
	struct raid_ioctx *ctx = rq->ctx;   /* rq may be gone after the fsync */

	flush_waited(rq);
	raid_ioctx_kick(ctx);
}

void raid_io_cache_sub_done(struct req *rq)
{
	if (--rq->pending)
		return;
	if (rq->nofsync) {
		raid_io_finish(rq, rq->result);
		return;
	}
	/* Every row on the list is written now; entries other requests (a
	 * FUA or row-completing write, the age-based write-out, another
	 * FLUSH) took, on this reactor or another, may still be on their way:
	 * wait for every write-out numbered so far. */
	rq->scw.ctx = rq->ctx;
	rq->scw.fn = flush_woken;
	rq->scw.arg = rq;
	if (raid_sc_wait(&rq->p->sc, &rq->scw))
		flush_waited(rq);
}

static void child_run(struct req *c)
{
	struct raid_sc_ent *e = raid_sc_take(&c->p->sc, c->lk.a / c->p->g.stripe_bytes);

	c->phase = PH_MAIN;
	c->pending = 1;
	if (e)
		raid_io_ent_row(c, e);
	raid_io_sub_done(c);
}

static void child_granted(void *arg)
{
	struct req *c = arg;
	struct raid_ioctx *ctx = c->ctx;    /* c may be gone after child_run */

	c->locked = true;
	child_run(c);
	raid_ioctx_kick(ctx);
}

static void cache_flush_start(struct req *rq, uint64_t min_age_ms)
{
	struct raid_pool *p = rq->p;
	uint64_t rows[128];
	unsigned n = raid_sc_rows(&p->sc, min_age_ms, rows, 128);

	rq->phase = PH_CACHE;
	rq->pending = 1;
	for (unsigned i = 0; i < n; i++) {
		struct req *c = calloc(1, sizeof(*c));

		if (!c) {
			rq->result = -ENOMEM;
			break;
		}
		c->parent = rq;
		c->main_done = main_done;
		c->p = p;
		c->g = &p->g;
		c->ctx = rq->ctx;
		c->write = true;
		c->lk.a = rows[i] * p->g.stripe_bytes;
		c->lk.b = c->lk.a + p->g.stripe_bytes;
		c->lk.excl = true;
		c->lk.ctx = rq->ctx;
		c->lk.fn = child_granted;
		c->lk.arg = c;
		rq->pending++;
		if (raid_slock_acquire(&p->lock, &c->lk)) {
			c->locked = true;
			child_run(c);
		}
	}
	raid_io_cache_sub_done(rq);
}

int raid_pool_cache_flush(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_io *io,
			  uint64_t min_age_ms)
{
	struct req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return -ENOMEM;
	rq->io = io;
	rq->main_done = main_done;
	rq->p = p;
	rq->ctx = ctx;
	rq->nofsync = true;
	rq->in_submit = true;
	io->result = 0;
	raid_ioctx_io_started(ctx);
	cache_flush_start(rq, min_age_ms);
	rq->in_submit = false;
	raid_ioctx_kick(ctx);
	return 0;
}

static void start_main(struct req *rq)
{
	struct raid_io *io = rq->io;

	rq->phase = PH_MAIN;
	if (io->op == RAID_OP_COMPARE_WRITE) {
		rq->cmp = raid_alloc(rq->len);
		if (!rq->cmp) {
			raid_io_finish(rq, -ENOMEM);
			return;
		}
		rq->write = false;
		rq->data = rq->cmp;
	} else {
		rq->write = io->op == RAID_OP_WRITE;
		rq->data = io->buf;
	}
	dispatch(rq);
}

static void lock_granted(void *arg)
{
	struct req *rq = arg;
	struct raid_ioctx *ctx = rq->ctx;   /* rq may be gone after start_main */

	rq->locked = true;
	start_main(rq);
	raid_ioctx_kick(ctx);
}

/* After the gate: FLUSH, or the lock (COMPARE_WRITE) and the main phase. */
static void go_on(struct req *rq)
{
	struct raid_pool *p = rq->p;
	struct raid_io *io = rq->io;
	uint64_t gran;

	if (io->op == RAID_OP_FLUSH) {
		rq->write = true;
		if (p->sc.max)
			cache_flush_start(rq, 0);   /* then fsync */
		else
			raid_io_start_fsync(rq, ~0ull);
		return;
	}
	/* COMPARE_WRITE locks its whole range for read + write; everything
	 * else locks per row (raid5/6) or per segment (writes on 0/1/10). */
	if (io->op == RAID_OP_COMPARE_WRITE) {
		gran = raid_geom_is_parity_level(rq->g) ? rq->g->stripe_bytes : 512;
		rq->lk.a = rq->loff / gran * gran;
		rq->lk.b = (rq->loff + rq->len + gran - 1) / gran * gran;
		rq->lk.excl = true;
		rq->lk.ctx = rq->ctx;
		rq->lk.fn = lock_granted;
		rq->lk.arg = rq;
		rq->phase = PH_LOCKING;
		if (!raid_slock_acquire(&p->lock, &rq->lk))
			return;   /* lock_granted() continues on ctx */
		rq->locked = true;
	}
	start_main(rq);
}

void raid_io_gate_go(void *arg)
{
	struct req *rq = arg;
	struct raid_ioctx *ctx = rq->ctx;   /* rq may be gone after go_on */

	if (raid_reshape_admit(rq))
		go_on(rq);
	raid_ioctx_kick(ctx);
}

/* @g NULL: through the reshape gate (every request from outside); else
 * served by @g as it is (the reshape's own copying, reshape.c). */
static int submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io,
		  const struct raid_geom *g, bool map_ok)
{
	struct raid_pool *p = vol->pool;
	struct req *rq;

	if (!io || !io->cb || (unsigned)io->op > RAID_OP_COMPARE_WRITE)
		return -EINVAL;
	if (io->op != RAID_OP_FLUSH) {
		if (io->off % 512 || io->len % 512 || io->len == 0 || !io->buf)
			return -EINVAL;
		if (io->off > vol->size || io->len > vol->size - io->off)
			return -ERANGE;
	}
	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	rq->io = io;
	rq->main_done = main_done;
	rq->vol = vol;
	rq->p = p;
	rq->ctx = ctx;
	rq->loff = vol->start + io->off;
	rq->len = io->op == RAID_OP_FLUSH ? 0 : io->len;
	rq->in_submit = true;
	io->result = 0;
	io->miscompare_off = 0;
	io->hold = NULL;
	io->rpriv[0] = rq;
	rq->map = map_ok && !g && io->op == RAID_OP_READ && (io->flags & RAID_IO_MAP);
	raid_ioctx_io_started(ctx);
	rq->g = g ? g : &p->g;
	if (g || raid_reshape_admit(rq))
		go_on(rq);
	/* Still valid: a completion inside this call was deferred to ctx. */
	rq->in_submit = false;
	raid_ioctx_kick(ctx);
	return 0;
}

int raid_md_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io)
{
	return submit(vol, ctx, io, NULL, false);
}

int raid_md_vol_submit_thick(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io)
{
	return submit(vol, ctx, io, NULL, true);
}

int raid_md_vol_submit_geom(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io,
			    const struct raid_geom *g)
{
	return submit(vol, ctx, io, g, false);
}
