/*
 * raid/io_mirror.c - the mirror path of the data path: a request on raid0,
 * raid1 or raid10 becomes segments (struct seg: one chunk's worth of the
 * request, with the copies geom.c maps it to), each read from one copy or
 * written to all of them. The request around them is io.c's (its state
 * machine at the top of io.c; shared declarations in io_int.h).
 *
 * Layer: rows, the segments of raid0/1/10 (raid/README.md "Layers"). May call:
 * io_hold.c, bitmap.c, lock.c, member.c, mstate.c, ioctx.c, geom.c,
 * parity.c, conf/; a segment's end goes back to the request through
 * raid_io_sub_done (io_int.h: the request's main_done), not into io.c.
 *
 * Segment states (struct seg; one chunk or less of the request, mapped to
 * its copies by geom.c):
 *   read:  READ (one copy, picked by rs_pick below; seg_read_done) -> DONE,
 *          or a failed copy -> READ of the next untried copy, or no copy
 *          left -> DONE with -EIO; a good copy after failed ones (bad set)
 *          -> REPAIR (exclusive lock of the range, the good copy read again
 *          and written over the failed ones: seg_repair*) -> DONE.
 *   write: LOCKING (exclusive lock of its range, unless the request holds
 *          one) -> BITMAP (write-intent bits made durable: seg_write_issue)
 *          -> WRITE (every writable copy; seg_write_go) -> DONE, with -EIO
 *          only when no copy took it.
 *   DONE hands the segment back to the request (raid_io_sub_done) once.
 * Invariant (seg_check): the copy being read was tried, every failed copy
 * was tried, and no more copies succeeded than exist.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/util.h"
#include "raid/io_int.h"
#include "raid/member.h"

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

/* ---------------- raid0/1/10 segments ---------------- */

static bool seg_check(const struct seg *s)
{
	return s->cur < s->loc.ncopies && (!s->tried || (s->tried & (1ull << s->cur))) &&
	       (s->bad & ~s->tried) == 0 && s->ok <= s->loc.ncopies;
}

static bool seg_issue_read(struct seg *s);
static void seg_write_end(struct seg *s);
static void seg_write_issue(struct seg *s);
static void seg_write_granted(void *arg);

static void seg_end(struct seg *s)
{
	struct req *rq = s->rq;

	RTGT_CHECK(seg_check(s));
	if (s->own_lock)
		raid_slock_release(&rq->p->lock, &s->lk);
	free(s->tmp);
	free(s);
	raid_io_sub_done(rq);
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
	RTGT_CHECK(seg_check(s));
	if (res >= 0 && mio->mapped)
		res = raid_io_map_piece(s->rq, s->buf, s->len, mio->m, mio->mapped);
	if (res < 0) {
		if (raid_member_read_error(mio->m, res, mio->off))
			s->bad |= 1ull << s->cur;
		else if (s->rq->g->npar)
			raid_member_fail(mio->m, res, "read failed");
		if (seg_issue_read(s))
			return;
		if (!s->rq->result)
			s->rq->result = -EIO;
	} else if (s->bad) {
		seg_repair(s);    /* s->cur is a good copy */
		return;
	}
	raid_io_sub_done(s->rq);
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
	uint64_t moff = loc->moff[0], now = conf_mono_ns();
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
		/* a thick volume's read may be answered from the member's
		 * memory (io.c, "mapped reads"); the repair's re-read below
		 * never is: it writes what it read */
		mio->op = RAID_MIO_READ;
		if (s->rq->map && s->rq->map_issued < RAID_HOLD_PIECES) {
			/* past the hold's room a piece would be copied with a
			 * pread on this thread: read it the usual way instead */
			s->rq->map_issued++;
			mio->op = RAID_MIO_READ_MAP;
		}
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

	RTGT_CHECK(seg_check(s));
	raid_bm_end(rq->p, s->loc.moff[0], s->len);
	if (!s->ok && !rq->result)
		rq->result = -EIO;
	/* a copy's chunks written in full are good again where a rebuild had
	 * lost them (whole chunks: readability is judged per chunk) */
	for (unsigned c = 0; atomic_load(&rq->p->n_bad) && c < s->loc.ncopies; c++) {
		uint64_t ch = rq->g->chunk;
		uint64_t a = (s->loc.moff[c] + ch - 1) / ch * ch, b = (s->loc.moff[c] + s->len) / ch * ch;

		if (a < b && s->mio[c].m && s->mio[c].m == rq->p->m[s->loc.dev[c]] &&
		    raid_member_writable(s->mio[c].m) &&
		    raid_pool_bad_clear(rq->p, 1ull << s->loc.dev[c], a, b) && !rq->result)
			rq->result = -EIO;
	}
	if (s->own_lock)
		raid_slock_release(&rq->p->lock, &s->lk);
	free(s);
	raid_io_sub_done(rq);
}

static void seg_start(struct req *rq, uint64_t loff, uint8_t *buf, uint64_t len)
{
	struct raid_pool *p = rq->p;
	struct raid_loc loc;
	struct seg *s;

	raid_geom_map(rq->g, loff, &loc);
	s = calloc(1, sizeof(*s) + loc.ncopies * sizeof(struct raid_mio));
	rq->pending++;
	if (!s) {
		rq->result = -ENOMEM;
		raid_io_sub_done(rq);
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
			raid_io_sub_done(rq);
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

void raid_io_mirror_dispatch(struct req *rq)
{
	const struct raid_geom *g = rq->g;
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
