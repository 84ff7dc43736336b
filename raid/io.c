/*
 * raid/io.c - the data path: a struct raid_io becomes a request (struct req)
 * that takes the stripe lock, is split into rows (raid5/6) or segments
 * (raid0/1/10), and completes on the submitting thread's raid_ioctx.
 *
 * Request states (struct req.phase), and who moves it:
 *   LOCKING  --lock granted (raid_vol_submit or lock_granted)--> MAIN
 *   MAIN     --all rows/segments done (sub_done)--> main_done():
 *              COMPARE_WRITE read: compare -> CAW_WRITE (equal) or DONE
 *              write with RAID_IO_FUA -> FUA
 *              otherwise -> DONE
 *   CAW_WRITE --sub_done--> FUA or DONE
 *   FUA      --every fsync done (fsync_done)--> DONE
 *   DONE     finish(): stripe lock released, io->cb called (deferred through
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

#include "raid/backend.h"
#include "raid/member.h"

#define MAX_TRIES 4

enum { PH_LOCKING, PH_CACHE, PH_MAIN, PH_CAW_WRITE, PH_FUA, PH_DONE };
enum { MODE_DIRECT, MODE_FULL, MODE_RMW, MODE_RCW, MODE_DEGRADED, MODE_FILL };
enum { ST_PLAN, ST_READ, ST_WRITE, ST_REPAIR, ST_DONE };

struct req {
	struct raid_io *io;
	struct raid_vol *vol;
	struct raid_pool *p;
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
};

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

struct seg {
	struct req *rq;
	uint8_t *buf;
	uint64_t loff, len;
	struct raid_loc loc;
	uint64_t tried;           /* copies already tried (reads) */
	uint64_t bad;             /* copies whose read failed: to rewrite */
	unsigned cur;             /* copy being read */
	unsigned pending, ok;
	struct raid_lk lk;        /* repair: exclusive lock of the range */
	bool own_lock;
	uint8_t *tmp;             /* repair: good copy re-read under the lock */
	struct raid_mio mio[];    /* loc.ncopies */
};

static void sub_done(struct req *rq);
static void row_plan(struct row *r);
static void cache_sub_done(struct req *rq);

static bool req_check(const struct req *rq)
{
	if (rq->phase == PH_MAIN || rq->phase == PH_CAW_WRITE)
		return rq->pending > 0 || rq->result;
	return true;
}

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

static void finish(struct req *rq, int result)
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
		cache_sub_done(parent);
		return;
	}
	rq->io->result = result;
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
		finish(rq, -EIO);
	else
		finish(rq, rq->result);
}

/* fsync every writable member in @mask (all when mask == ~0). */
static void start_fsync(struct req *rq, uint64_t mask)
{
	struct raid_pool *p = rq->p;
	unsigned i, n = 0;
	int rc;

	rq->phase = PH_FUA;
	rq->fs = calloc(p->g.n, sizeof(*rq->fs));
	if (!rq->fs) {
		finish(rq, -ENOMEM);
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
		finish(rq, raid_pool_beyond_redundancy(p) ? -EIO : rq->result);
}

/* ---------------- raid0/1/10 segments ---------------- */

static bool seg_issue_read(struct seg *s);
static void seg_write_end(struct seg *s);
static void seg_write_issue(struct seg *s);
static void seg_write_granted(void *arg);

static void seg_end(struct seg *s)
{
	struct req *rq = s->rq;

	if (s->own_lock)
		raid_slock_release(&rq->p->lock, &s->lk);
	free(s->tmp);
	free(s);
	sub_done(rq);
}

/*
 * Read-error repair on mirrors: under an exclusive lock of the range (mirror
 * reads take none, and a write racing with the rewrite would leave the copies
 * different), re-read a good copy and write it over the copies that failed.
 * A failing rewrite fails the member.
 */
static void seg_repair_written(struct raid_mio *mio, int res)
{
	struct seg *s = mio->arg;

	if (res < 0)
		raid_member_fail(mio->m, res, "rewrite after a read error failed");
	if (--s->pending == 0)
		seg_end(s);
}

static void seg_repair_read(struct raid_mio *mio, int res)
{
	struct seg *s = mio->arg;
	struct raid_pool *p = s->rq->p;

	s->pending = 1;
	if (res < 0) {
		raid_member_fail(mio->m, res, "read failed");
	} else {
		for (unsigned c = 0; c < s->loc.ncopies; c++) {
			struct raid_member *m = p->m[s->loc.dev[c]];
			struct raid_mio *w = &s->mio[c];

			if (!(s->bad & (1ull << c)) || !raid_member_writable(m))
				continue;
			w->m = m;
			w->op = RAID_MIO_WRITE;
			w->buf = s->tmp;
			w->off = s->loc.moff[c];
			w->len = s->len;
			w->cb = seg_repair_written;
			w->arg = s;
			if (raid_mio_submit(s->rq->ctx, w) == 0)
				s->pending++;
		}
	}
	if (--s->pending == 0)
		seg_end(s);
}

static void seg_repair_locked(void *arg)
{
	struct seg *s = arg;
	struct raid_pool *p = s->rq->p;
	struct raid_mio *mio = &s->mio[s->cur];
	struct raid_member *m = p->m[s->loc.dev[s->cur]];

	s->tmp = raid_alloc_nz(s->len);
	if (!s->tmp || !raid_member_readable(m, s->loc.moff[s->cur] + s->len)) {
		seg_end(s);
		return;
	}
	mio->m = m;
	mio->op = RAID_MIO_READ;
	mio->buf = s->tmp;
	mio->off = s->loc.moff[s->cur];
	mio->len = s->len;
	mio->cb = seg_repair_read;
	mio->arg = s;
	if (raid_mio_submit(s->rq->ctx, mio))
		seg_end(s);
	else
		raid_ioctx_kick(s->rq->ctx);
}

static void seg_repair(struct seg *s)
{
	struct req *rq = s->rq;

	if (rq->locked && rq->lk.excl) {
		seg_repair_locked(s);    /* COMPARE_WRITE already holds it */
		return;
	}
	s->lk.a = s->loff;
	s->lk.b = s->loff + s->len;
	s->lk.excl = true;
	s->lk.ctx = rq->ctx;
	s->lk.fn = seg_repair_locked;
	s->lk.arg = s;
	s->own_lock = true;
	if (raid_slock_acquire(&rq->p->lock, &s->lk))
		seg_repair_locked(s);
}

static void seg_read_done(struct raid_mio *mio, int res)
{
	struct seg *s = mio->arg;

	atomic_fetch_sub(&mio->m->rd_pending, 1);
	if (res < 0) {
		if (raid_member_read_error(mio->m, res, mio->off))
			s->bad |= 1ull << s->cur;
		else if (s->rq->p->g.npar)
			raid_member_fail(mio->m, res, "read failed");
		if (seg_issue_read(s))
			return;
		if (!s->rq->result)
			s->rq->result = -EIO;
	} else if (s->bad) {
		seg_repair(s);    /* s->cur is a good copy */
		return;
	}
	sub_done(s->rq);
	free(s);
}

/*
 * Mirror read balancing (raid1/raid10), in the spirit of md's read_balance:
 * on spinning disks what matters is where each head is and which stream it
 * serves, not an even count of requests.
 *  - Reads are grouped into streams per mirror set (pool->rs): a read that
 *    starts within RS_WINDOW of where a recent read on the same set ended
 *    continues that stream.
 *  - Several streams on one set: each sticks to its own copy (a new stream
 *    takes the copy with the fewest streams; a stream that finds another one
 *    on its copy moves to a free copy), so two sequential readers on one
 *    pool never make a head seek between them.
 *  - A stream alone on its set alternates copies in RS_BAND pieces of member
 *    space, so both disks of a mirror work on one stream (like a hardware
 *    RAID controller reading both halves of a mirror; md's raid10 "far"
 *    layout gets the same from its layout). Each disk skips the other's
 *    band with one short seek instead of reading it.
 *  - A read that starts no stream (random I/O) goes to the copy with the
 *    fewest reads pending, then the nearest head.
 * The pick is only a preference: a copy that is not readable is skipped and
 * a failed read tries the others (seg_read_done).
 */
#define RS_WINDOW (4ull << 20)
#define RS_BAND (4ull << 20)
/* A stream that read nothing for a second no longer holds its copy. Not
 * much shorter: a reader whose reads wait behind another stream for a while
 * must not look gone, or the other one would take its disk too (a reader
 * that wraps round is recognised by its volume, not by going quiet). */
#define RS_ACTIVE_NS 1000000000ull

static void rs_lock(struct raid_pool *p)
{
	bool f = false;

	while (!atomic_compare_exchange_weak(&p->rs_lock, &f, true))
		f = false;
}

static void rs_unlock(struct raid_pool *p)
{
	atomic_store(&p->rs_lock, false);
}

static uint64_t rs_dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* How much a record is worth keeping: 0 free, 1 quiet, 2 active one-off,
 * 3 active stream. */
static unsigned rs_keep(const struct raid_rstream *r, uint64_t now)
{
	if (!r->used)
		return 0;
	if (now - r->last_ns >= RS_ACTIVE_NS)
		return 1;
	return r->hits >= 2 ? 3 : 2;
}

static unsigned rs_pick(struct raid_pool *p, const struct raid_loc *loc, uint64_t len,
			const void *owner)
{
	unsigned nc = loc->ncopies, set = loc->dev[0], c, i, best = 0;
	uint64_t moff = loc->moff[0], now = raid_mono_ns();
	unsigned nstreams[RAID_MAX_SLOTS] = { 0 };
	struct raid_rstream *st = NULL, *victim = NULL, *jumped = NULL;
	bool shared = false;

	rs_lock(p);
	for (i = 0; i < RAID_RSTREAMS; i++) {
		struct raid_rstream *r = &p->rs[i];

		if (r->used && r->set == set && moff + RS_WINDOW >= r->next &&
		    moff <= r->next + RS_WINDOW &&
		    (!st || rs_dist(moff, r->next) < rs_dist(moff, st->next))) {
			st = r;   /* the nearest stream it continues */
		}
	}
	for (i = 0; i < RAID_RSTREAMS; i++) {
		struct raid_rstream *r = &p->rs[i];

		if (r == st)
			continue;
		if (r->used && r->set == set && r->hits >= 2 && now - r->last_ns < RS_ACTIVE_NS) {
			if (r->owner == owner && !jumped) {
				jumped = r;   /* maybe this read's own stream, moved on */
				continue;
			}
			nstreams[r->copy % nc]++;
			shared = true;
		}
		/* evict a free slot, else what went quiet, else one-off
		 * reads, else the least recently used: never a stream in
		 * its first reads while old records linger */
		if (!victim || rs_keep(r, now) < rs_keep(victim, now) ||
		    (rs_keep(r, now) == rs_keep(victim, now) && r->last_ns < victim->last_ns))
			victim = r;
	}
	if (!st && jumped) {
		/* a stream of the same volume was active a moment ago and this
		 * read continues nothing: the reader jumped (a benchmark
		 * wrapping round its span, the next file); it keeps its copy
		 * instead of becoming a second stream that takes the copy of
		 * another volume's reader */
		st = jumped;
		st->next = moff;
	} else if (st && jumped) {
		nstreams[jumped->copy % nc]++;
		shared = true;
	}
	if (st) {
		st->hits++;
		if (moff + len > st->next)
			st->next = moff + len;
		st->last_ns = now;
		if (st->hits >= 2 && shared && nstreams[st->copy % nc]) {
			/* two streams ended up on one copy (the second began
			 * before the first counted as a stream): move to a copy
			 * no stream uses, for good */
			for (c = 0; c < nc; c++)
				if (!nstreams[c] && p->m[loc->dev[c]]) {
					st->copy = c;
					break;
				}
		}
		if (st->hits < 2 || shared)
			c = st->copy;
		else
			c = (st->copy + (unsigned)(moff / RS_BAND)) % nc;
		rs_unlock(p);
		return c;
	}
	/* a new stream, or a random read */
	for (c = 1; c < nc; c++) {
		struct raid_member *mb = p->m[loc->dev[best]], *mc = p->m[loc->dev[c]];
		unsigned pb, pc;
		uint64_t db, dc;

		if (!mc)
			continue;
		if (!mb) {
			best = c;
			continue;
		}
		if (nstreams[c] != nstreams[best]) {
			if (nstreams[c] < nstreams[best])
				best = c;
			continue;
		}
		pb = atomic_load(&mb->rd_pending);
		pc = atomic_load(&mc->rd_pending);
		if (pc != pb) {
			if (pc < pb)
				best = c;
			continue;
		}
		db = atomic_load(&mb->rd_head);
		dc = atomic_load(&mc->rd_head);
		db = db > loc->moff[best] ? db - loc->moff[best] : loc->moff[best] - db;
		dc = dc > loc->moff[c] ? dc - loc->moff[c] : loc->moff[c] - dc;
		if (dc < db)
			best = c;
	}
	if (victim) {
		victim->used = true;
		victim->set = set;
		victim->next = moff + len;
		victim->last_ns = now;
		victim->copy = best;
		victim->hits = 0;
		victim->owner = owner;
	}
	rs_unlock(p);
	return best;
}

/* Pick an untried readable copy: the balanced choice first, then any. */
static bool seg_issue_read(struct seg *s)
{
	struct raid_pool *p = s->rq->p;
	unsigned nc = s->loc.ncopies, start = 0, k;

	/* Not resynced since a crash: the copies may differ, so every read
	 * takes the first readable copy in order, the one the resync copies
	 * to the others (rebuild.c: raid1 slot 0, raid10 the even slot of the
	 * pair, = copy 0 here); a block never reads new, then old. */
	if (!s->tried && nc > 1 && !raid_bm_unsynced(p, s->loc.moff[0], s->len))
		start = rs_pick(p, &s->loc, s->len, s->rq->vol);
	for (k = 0; k < nc; k++) {
		unsigned c = (start + k) % nc;
		struct raid_member *m = p->m[s->loc.dev[c]];
		struct raid_mio *mio = &s->mio[0];

		if (s->tried & (1ull << c))
			continue;
		s->tried |= 1ull << c;
		if (!m || !raid_member_readable(m, s->loc.moff[c] + s->len))
			continue;
		s->cur = c;
		atomic_fetch_add(&m->rd_pending, 1);
		atomic_store(&m->rd_head, s->loc.moff[c] + s->len);
		mio->m = m;
		mio->op = RAID_MIO_READ;
		mio->buf = s->buf;
		mio->off = s->loc.moff[c];
		mio->len = s->len;
		mio->cb = seg_read_done;
		mio->arg = s;
		if (raid_mio_submit(s->rq->ctx, mio) == 0)
			return true;
		atomic_fetch_sub(&m->rd_pending, 1);
	}
	return false;
}

static void seg_write_done(struct raid_mio *mio, int res)
{
	struct seg *s = mio->arg;

	if (res < 0)
		raid_member_fail(mio->m, res, "write failed");
	else
		s->ok++;
	if (--s->pending == 0)
		seg_write_end(s);
}

static void seg_write_end(struct seg *s)
{
	struct req *rq = s->rq;

	raid_bm_end(rq->p, s->loc.moff[0], s->len);
	if (!s->ok && !rq->result)
		rq->result = -EIO;
	/* a copy's chunks written in full are good again where a rebuild had
	 * lost them (whole chunks: readability is judged per chunk) */
	for (unsigned c = 0; atomic_load(&rq->p->n_bad) && c < s->loc.ncopies; c++) {
		uint64_t ch = rq->p->g.chunk;
		uint64_t a = (s->loc.moff[c] + ch - 1) / ch * ch, b = (s->loc.moff[c] + s->len) / ch * ch;

		if (a < b && s->mio[c].m && s->mio[c].m == rq->p->m[s->loc.dev[c]] &&
		    raid_member_writable(s->mio[c].m) &&
		    raid_pool_bad_clear(rq->p, 1ull << s->loc.dev[c], a, b) && !rq->result)
			rq->result = -EIO;
	}
	if (s->own_lock)
		raid_slock_release(&rq->p->lock, &s->lk);
	free(s);
	sub_done(rq);
}

static void seg_start(struct req *rq, uint64_t loff, uint8_t *buf, uint64_t len)
{
	struct raid_pool *p = rq->p;
	struct raid_loc loc;
	struct seg *s;

	raid_geom_map(&p->g, loff, &loc);
	s = calloc(1, sizeof(*s) + loc.ncopies * sizeof(struct raid_mio));
	rq->pending++;
	if (!s) {
		rq->result = -ENOMEM;
		sub_done(rq);
		return;
	}
	s->rq = rq;
	s->buf = buf;
	s->loff = loff;
	s->len = len;
	s->loc = loc;
	if (!rq->write) {
		if (!seg_issue_read(s)) {
			if (!rq->result)
				rq->result = -EIO;
			free(s);
			sub_done(rq);
		}
		return;
	}
	if (!rq->locked) {
		s->lk.a = loff;
		s->lk.b = loff + len;
		s->lk.excl = true;
		s->lk.ctx = rq->ctx;
		s->lk.fn = seg_write_granted;
		s->lk.arg = s;
		s->own_lock = true;
		if (!raid_slock_acquire(&p->lock, &s->lk))
			return;
	}
	seg_write_issue(s);
}

static void seg_write_go(void *arg);

/* The write-intent bits come first; when they are not durable yet the bitmap
 * writer thread makes them so and seg_write_go continues on our ctx, so a
 * reactor never sleeps in pwrite + fdatasync. */
static void seg_write_issue(struct seg *s)
{
	if (raid_bm_start_async(s->rq->p, s->loc.moff[0], s->len, s->rq->ctx, seg_write_go, s))
		seg_write_go(s);
}

static void seg_write_go(void *arg)
{
	struct seg *s = arg;
	struct req *rq = s->rq;
	struct raid_pool *p = rq->p;
	struct raid_loc loc = s->loc;
	uint64_t len = s->len;
	uint8_t *buf = s->buf;
	unsigned c;
	int rc;

	s->pending = 1;
	for (c = 0; c < loc.ncopies; c++) {
		struct raid_member *m = p->m[loc.dev[c]];
		struct raid_mio *mio = &s->mio[c];

		if (!m || !raid_member_writable(m))
			continue;
		mio->m = m;
		mio->op = RAID_MIO_WRITE;
		mio->buf = buf;
		mio->off = loc.moff[c];
		mio->len = len;
		mio->cb = seg_write_done;
		mio->arg = s;
		rc = raid_mio_submit(rq->ctx, mio);
		if (rc == 0) {
			s->pending++;
			rq->touched |= 1ull << loc.dev[c];
		} else {
			/* this copy keeps old data: like a failed write */
			raid_member_fail(m, rc, "write could not be submitted");
		}
	}
	/* drop the guard */
	if (--s->pending == 0)
		seg_write_end(s);
}

static void seg_write_granted(void *arg)
{
	struct seg *s = arg;
	struct raid_ioctx *ctx = s->rq->ctx;   /* s may be gone after the issue */

	seg_write_issue(s);
	raid_ioctx_kick(ctx);
}

static void mirror_dispatch(struct req *rq)
{
	const struct raid_geom *g = &rq->p->g;
	uint64_t pos = 0;

	while (pos < rq->len) {
		uint64_t loff = rq->loff + pos;
		uint64_t n = rq->len - pos;

		if (g->level != CONF_RAID1 && n > g->chunk - loff % g->chunk)
			n = g->chunk - loff % g->chunk;
		seg_start(rq, loff, rq->data + pos, n);
		pos += n;
	}
}

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
		const struct raid_geom *g = &rq->p->g;

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
	sub_done(rq);
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
	mio->off = r->row * r->rq->p->g.chunk + coff;
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
	const struct raid_geom *g = &r->rq->p->g;

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
		else if (mio->op == RAID_MIO_READ && r->rq->p->g.npar == 0)
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
	const struct raid_geom *g = &p->g;
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
	const struct raid_geom *g = &p->g;
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
	const struct raid_geom *g = &r->rq->p->g;

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
	const struct raid_geom *g = &p->g;
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
static void ent_row(struct req *rq, struct raid_sc_ent *e)
{
	const struct raid_geom *g = &rq->p->g;
	struct row *r = calloc(1, sizeof(*r));

	rq->pending++;
	if (!r) {
		raid_sc_done(&rq->p->sc, e, -ENOMEM, true);
		rq->result = -ENOMEM;
		sub_done(rq);
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
	const struct raid_geom *g = &r->rq->p->g;

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
static bool row_write_refused(struct raid_pool *p, uint64_t row)
{
	const struct raid_geom *g = &p->g;
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
	uint64_t stripe = p->g.stripe_bytes;
	struct raid_sc_ent *e;

	if (!p->sc.max)
		return false;
	if (row_write_refused(p, r->row))
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
	const struct raid_geom *g = &r->rq->p->g;

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
	r->lk.a = r->row * rq->p->g.stripe_bytes;
	r->lk.b = r->lk.a + rq->p->g.stripe_bytes;
	r->lk.excl = rq->write;
	r->lk.ctx = rq->ctx;
	r->lk.fn = row_granted;
	r->lk.arg = r;
	if (raid_slock_acquire(&rq->p->lock, &r->lk)) {
		r->locked = true;
		row_start(r);
	}
}

static void parity_dispatch(struct req *rq)
{
	const struct raid_geom *g = &rq->p->g;
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
			sub_done(rq);
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

/* ---------------- request ---------------- */

static void dispatch(struct req *rq)
{
	rq->pending = 1;          /* guard until every row/segment is issued */
	if (raid_geom_is_parity_level(&rq->p->g))
		parity_dispatch(rq);
	else
		mirror_dispatch(rq);
	sub_done(rq);
}

static void main_done(struct req *rq)
{
	struct raid_io *io = rq->io;

	if (rq->parent) {
		finish(rq, rq->result);
		return;
	}
	if (rq->result) {
		finish(rq, rq->result);
		return;
	}
	if (rq->phase == PH_MAIN && io->op == RAID_OP_COMPARE_WRITE) {
		for (uint64_t i = 0; i < rq->len; i++) {
			if (rq->cmp[i] != io->buf[i]) {
				io->miscompare_off = i;
				finish(rq, -EILSEQ);
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
		start_fsync(rq, rq->touched);
		return;
	}
	finish(rq, 0);
}

static void sub_done(struct req *rq)
{
	assert(req_check(rq));
	if (--rq->pending == 0)
		main_done(rq);
}

/* ---- writing out the stripe cache (FLUSH, age, close) ---- */

/* A FLUSH whose earlier write-outs have all ended: fsync, even after an
 * error (what did get written is made durable), which it then reports. */
static void flush_waited(struct req *rq)
{
	if (!rq->result)
		rq->result = rq->scw.err;
	start_fsync(rq, ~0ull);
}

static void flush_woken(void *arg)
{
	struct req *rq = arg;
	struct raid_ioctx *ctx = rq->ctx;   /* rq may be gone after the fsync */

	flush_waited(rq);
	raid_ioctx_kick(ctx);
}

static void cache_sub_done(struct req *rq)
{
	if (--rq->pending)
		return;
	if (rq->nofsync) {
		finish(rq, rq->result);
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
		ent_row(c, e);
	sub_done(c);
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
		c->p = p;
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
	cache_sub_done(rq);
}

int raid_pool_cache_flush(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_io *io,
			  uint64_t min_age_ms)
{
	struct req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return -ENOMEM;
	rq->io = io;
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
			finish(rq, -ENOMEM);
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

int raid_md_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io)
{
	struct raid_pool *p = vol->pool;
	const struct raid_geom *g = &p->g;
	struct req *rq;
	bool lock;

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
	rq->vol = vol;
	rq->p = p;
	rq->ctx = ctx;
	rq->loff = vol->start + io->off;
	rq->len = io->len;
	rq->in_submit = true;
	io->result = 0;
	io->miscompare_off = 0;
	io->rpriv[0] = rq;
	raid_ioctx_io_started(ctx);

	if (io->op == RAID_OP_FLUSH) {
		rq->write = true;
		if (p->sc.max)
			cache_flush_start(rq, 0);   /* then fsync */
		else
			start_fsync(rq, ~0ull);
		goto out;
	}
	/* COMPARE_WRITE locks its whole range for read + write; everything
	 * else locks per row (raid5/6) or per segment (writes on 0/1/10). */
	lock = io->op == RAID_OP_COMPARE_WRITE;
	if (lock) {
		uint64_t gran = raid_geom_is_parity_level(g) ? g->stripe_bytes : 512;

		rq->lk.a = rq->loff / gran * gran;
		rq->lk.b = (rq->loff + rq->len + gran - 1) / gran * gran;
		rq->lk.excl = io->op != RAID_OP_READ;
		rq->lk.ctx = ctx;
		rq->lk.fn = lock_granted;
		rq->lk.arg = rq;
		rq->phase = PH_LOCKING;
		if (!raid_slock_acquire(&p->lock, &rq->lk))
			goto out;   /* lock_granted() continues on ctx */
		rq->locked = true;
	}
	start_main(rq);
out:
	/* Still valid: a completion inside this call was deferred to ctx. */
	rq->in_submit = false;
	raid_ioctx_kick(ctx);
	return 0;
}
