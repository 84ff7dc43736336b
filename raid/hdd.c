/*
 * raid/hdd.c - HDD timing model (pool option hdd = { mbps; avg_seek_ms; rpm;
 * write_cache; }).
 *
 * Layer: context (raid/README.md "Layers"). May call: ioctx.c, conf/;
 * the member layer below it only through mlayer.h.
 *
 * Every member behaves like one spinning disk with one head, a small write
 * cache, read-ahead segments and a stream-aware elevator. The real I/O is
 * issued at once (the layer below, ioctx.c); only its completion is held back until the
 * modelled disk would have finished it. The model never reorders real I/O,
 * so it cannot change data ordering: overlapping writes are ordered by the
 * stripe locks above it, FLUSH/FUA semantics are the real fsyncs'.
 *
 * Positioning cost of a job [a, b) with the head at h after a job that
 * started at last_a (pos_ns):
 *   a == h                      0 (sequential)
 *   a > h (forward gap)         min(gap / mbps, seek(gap) + rot/2): a short
 *                               gap is passed by rotation, like a real disk
 *   last_a <= a < h             the sectors just went by: wait until they come
 *                               round again, (1 - (h-a)/track) rotations (a
 *                               re-write of the sector just read costs a full
 *                               rotation)
 *   otherwise                   seek(|a-h|) + rot/2
 * seek(d) = avg_seek_ms * sqrt(d / (stroke / 3)); track = mbps * 60 / rpm
 * bytes; transfer = len / mbps. A write that seeks adds HDD_WRITE_SETTLE.
 * A write-through write (below) that reaches its sector by rotation (the
 * first three cases) after the head idled for some time since its last job
 * waits for the sector to come round from where the platter has turned to
 * (rot_wait): a disk without write cache at qd 1 writes about one request
 * per rotation.
 *
 * Disk cache: writes are acknowledged when they fit in the write cache
 * (HDD_WCACHE bytes, HDD_MAX_EXT extents), drained by the head later; a write
 * that does not fit waits until drains make room. FSYNC completes when the
 * cache is empty. With write_cache = false (conf_hdd.write_through) there is
 * no write cache: a write stays queued until the head has written it (a
 * JOB_WRITE, positioning + transfer like a read), FSYNC completes at once
 * (nothing is volatile) and nothing is ever dirty. Reads of a detected
 * sequential stream make the head read
 * ahead (up to HDD_RA_MAX beyond the stream's last request); reads inside a
 * stream's cached segment complete without head time.
 *
 * Elevator (pick): the head stays on its current stream (reads continuing
 * it, dirty data right ahead of the head, read-ahead) until it has served
 * HDD_BATCH bytes there while other work waits; then it switches: the oldest
 * waiting read, or the dirty extent nearest the head when writes/FSYNC wait
 * for the cache or it is over half full (and when nothing else is left).
 * So two sequential streams on one member are served in batches of up to
 * HDD_BATCH instead of one seek per request, and round-robin between them
 * keeps them fair. Write-through (pick_switch_wt): queued writes right ahead
 * of the head continue its stream like dirty data does; on a switch the
 * head takes the queued read or write it reaches soonest (shortest
 * positioning time first, as an NCQ drive), the oldest once it waited
 * HDD_READ_AGE or when it continues a sequential stream. Read-ahead runs while other requests wait only for an
 * established stream (HDD_RA_BUSY_RUN reads in a row continued it): two
 * random reads that happen to be adjacent start no prefetch that holds the
 * head. Dirty data goes out in jobs of at most HDD_DRAIN_MAX.
 *
 * Accounting: every HDD_LOG_NS of activity win_log() writes one LOG_INFO
 * line per member (head busy and positioning share, seeks, MB read, read
 * ahead and destaged, dirty bytes): an idle head during a streaming write
 * means the host did not keep the cache filled.
 *
 * This is a layer of the member I/O stack (raid/mlayer.h): hdd_submit passes
 * the mio down, then queues it on the model; hdd_complete is the real I/O's
 * completion. Per-request state (struct hdd_mio) lives in the mio's
 * layer-private area, per-disk state in struct raid_hdd (hdd.h).
 *
 * States of a modelled mio (bits in hm->state, under the disk's mu):
 *   QUEUED (on d->q_*, no MODEL bit) -> MODEL (job done / admitted / hit /
 *   cache drained for FSYNC, or at once on a write-through disk; a
 *   write-through write only by its JOB_WRITE ending; hdd_submit or
 *   advance) ; independently
 *   REAL (hdd_complete). With MODEL|REAL the mio goes up once: from
 *   hdd_complete, from a deferred deliver() on the mio's ctx, or from
 *   hdd_timer when the mio is the HOLDer.
 * The model advances lazily (advance) whenever a mio is submitted or the
 * holder's timeout fires. Invariant (hdd_check): whenever the queue is not
 * empty exactly one mio holds the timer (d->holder, HOLD bit), the queue
 * holds no MODEL mio, dirty == sum of the extents and <= HDD_WCACHE + one
 * request, and a write-through disk has no extents. Head jobs: NONE ->
 * READ/DRAIN/RA/WRITE (job_start, from pick_continue or pick_switch[_wt])
 * -> NONE (job_end at busy_until, which records end_ns).
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "conf/util.h"
#include "raid/hdd.h"

#ifndef RAID_MOD
#define RAID_MOD "raid"
#endif

#define HDD_WCACHE (64ull << 20)
#define HDD_RA_MAX (16ull << 20)
#define HDD_RA_UNIT (512ull << 10)
#define HDD_SEQ_GAP (256ull << 10)
#define HDD_SEQ_RUN 1u
/* reads in a row that continued a stream before its read-ahead may keep the
 * head while other requests wait */
#define HDD_RA_BUSY_RUN 4u
#define HDD_READ_AGE (250ull * 1000000ull)
/* Writes need the head settled more precisely than reads: drive data sheets
 * give the average write seek about 1 ms above the read seek (e.g. 8.5 ms
 * read / 9.5 ms write on 7200 rpm NAS drives). */
#define HDD_WRITE_SETTLE (1000000ull)
#define HDD_DRAIN_MAX (4ull << 20)
#define HDD_BATCH (32ull << 20)
#define HDD_LOG_NS (5000ull * 1000000ull)

enum { JOB_NONE, JOB_READ, JOB_DRAIN, JOB_RA, JOB_WRITE };

enum { HDD_REAL = 1u, HDD_MODEL = 2u, HDD_HOLD = 4u };

/* Per-request state, in the mio's layer-private area. */
struct hdd_mio {
	struct raid_iotimer t;     /* the HOLDer's timeout; first: hdd_timer's cast */
	struct raid_mio *mio;
	struct raid_hdd *d;
	struct raid_ioctx *ctx;    /* submitting ctx: callbacks run there */
	struct raid_mio *next;     /* disk's modelled queue */
	uint64_t arr_ns;           /* when it reached the modelled disk */
	unsigned state;            /* HDD_REAL | HDD_MODEL | HDD_HOLD */
	int res;                   /* the real I/O's result */
};

static struct hdd_mio *hm(const struct raid_hdd *d, const struct raid_mio *mio)
{
	return raid_mlayer_priv(&d->l, (struct raid_mio *)mio);
}

static bool hdd_check(const struct raid_hdd *d)
{
	const struct raid_hdd *h = d;
	uint64_t sum = 0;

	for (unsigned i = 0; i < h->n_ext; i++) {
		if (h->ext[i].b <= h->ext[i].a)
			return false;
		sum += h->ext[i].b - h->ext[i].a;
	}
	if (sum != h->dirty || h->n_ext > RAID_HDD_MAX_EXT)
		return false;
	/* write-through disks hold no dirty data */
	if (d->cfg->write_through && (h->n_ext || h->dirty))
		return false;
	for (const struct raid_mio *q = h->q_head; q; q = hm(d, q)->next)
		if (hm(d, q)->state & HDD_MODEL)
			return false;
	return !h->q_head || h->holder;
}

/* ---- costs ---- */

static double bps(const struct conf_hdd *c)
{
	return c->mbps * 1e6;
}

static double rot_ns(const struct conf_hdd *c)
{
	return 60000.0 / c->rpm * 1e6;
}

static double seek_ns(const struct raid_hdd *d, uint64_t dist)
{
	uint64_t stroke = (*d->stroke) ? (*d->stroke) : 1;

	return d->cfg->avg_seek_ms * 1e6 * sqrt((double)dist * 3.0 / (double)stroke);
}

/* The rotational wait for a sector @ahead_ns of rotation past the head
 * (negative: just passed) when the head has idled @idle_ns since its last
 * job ended: the platter kept turning meanwhile. */
static double rot_wait(const struct conf_hdd *c, double ahead_ns, double idle_ns)
{
	double w = fmod(ahead_ns - idle_ns, rot_ns(c));

	return w < 0 ? w + rot_ns(c) : w;
}

/* @write: a write that seeks settles longer (HDD_WRITE_SETTLE). @idle_ns:
 * how long the head has idled since its last job; only a write-through write
 * pays for it (the sector at the head has turned away: a write-through disk
 * must wait for it to come round, up to a rotation); everything else keeps
 * the model's rule that the head is where its last job ended (reads are
 * covered by read-ahead, cached writes by the cache). */
static double pos_ns(const struct raid_hdd *d, uint64_t a, bool write, double idle_ns)
{
	const struct conf_hdd *c = d->cfg;
	const struct raid_hdd *h = d;
	double track = bps(c) * 60.0 / c->rpm;
	double settle = write ? (double)HDD_WRITE_SETTLE : 0;

	if (a == h->head)
		return idle_ns > 0 ? rot_wait(c, 0, idle_ns) : 0;
	if (a > h->head) {
		double pass = (double)(a - h->head) / bps(c) * 1e9;
		double sk = seek_ns(d, a - h->head) + rot_ns(c) / 2 + settle;

		if (pass < sk && idle_ns > 0)
			pass = rot_wait(c, pass, idle_ns);
		return pass < sk ? pass : sk;
	}
	if (a >= h->last_a && (double)(h->head - a) < track) {
		double back = (double)(h->head - a) / bps(c) * 1e9;

		if (idle_ns > 0)
			return rot_wait(c, -back, idle_ns);
		return (1.0 - (double)(h->head - a) / track) * rot_ns(c);
	}
	return seek_ns(d, h->head - a) + rot_ns(c) / 2 + settle;
}

/* Positioning for a job of @op at @a starting at @t. */
static double job_pos_ns(const struct raid_hdd *d, uint64_t a, int kind, uint64_t t)
{
	const struct raid_hdd *h = d;
	double idle = 0;

	if (kind == JOB_WRITE && t > h->end_ns && h->end_ns)
		idle = (double)(t - h->end_ns);
	return pos_ns(d, a, kind == JOB_DRAIN || kind == JOB_WRITE, idle);
}

/* ---- streams ---- */

/* The stream @a continues: at or after its last request, no further than a
 * track past what the head has read for it. -1: none. */
static int stream_of(const struct raid_hdd *d, uint64_t a)
{
	const struct raid_hdd *h = d;
	const struct conf_hdd *c = d->cfg;
	uint64_t track = (uint64_t)(bps(c) * 60.0 / c->rpm);

	for (unsigned i = 0; i < RAID_HDD_NSTREAM; i++) {
		const struct raid_hdd_stream *s = &h->st[i];
		uint64_t end = s->ra_end > s->next ? s->ra_end : s->next;

		if (s->used && a >= s->lo && a <= end + track)
			return (int)i;
	}
	return -1;
}

static int stream_new(struct raid_hdd *h, uint64_t a, uint64_t now)
{
	unsigned i, v = 0;

	for (i = 0; i < RAID_HDD_NSTREAM; i++) {
		if (!h->st[i].used) {
			v = i;
			break;
		}
		if (h->st[i].last_ns < h->st[v].last_ns)
			v = i;
	}
	memset(&h->st[v], 0, sizeof(h->st[v]));
	h->st[v].used = true;
	h->st[v].lo = h->st[v].next = h->st[v].ra_end = a;
	h->st[v].last_ns = now;
	return (int)v;
}

/* A read served or hit: the stream moves on. Read-ahead starts only after
 * HDD_SEQ_RUN read(s) in a row began at most HDD_SEQ_GAP past the end of
 * the previous one (a parity chunk skipped is fine; a random read that
 * happens to land a little after another one is not a stream). */
static void stream_read(struct raid_hdd *h, int si, uint64_t a, uint64_t b, uint64_t now)
{
	struct raid_hdd_stream *s = &h->st[si];

	if (a >= s->next && a > s->lo) {
		if (a - s->next <= HDD_SEQ_GAP)
			s->run++;
		else
			s->run = 0;   /* a jump (a strided reader): no read-ahead across it */
		s->seq = s->run >= HDD_SEQ_RUN;
	}
	if (b > s->next)
		s->next = b;
	if (s->ra_end < s->next)
		s->ra_end = s->next;
	/* the segment keeps what was read ahead and a little behind */
	if (s->next > s->lo + HDD_RA_MAX)
		s->lo = s->next - HDD_RA_MAX;
	s->last_ns = now;
}

static bool read_hit(const struct raid_hdd *h, uint64_t a, uint64_t b)
{
	for (unsigned i = 0; i < RAID_HDD_NSTREAM; i++) {
		const struct raid_hdd_stream *s = &h->st[i];

		if (s->used && s->seq && a >= s->lo && b <= s->ra_end)
			return true;
	}
	return false;
}

/* ---- write cache ---- */

static bool cache_fits(const struct raid_hdd *h, uint64_t len)
{
	return h->dirty == 0 || (h->dirty + len <= HDD_WCACHE && h->n_ext < RAID_HDD_MAX_EXT);
}

static void cache_put(struct raid_hdd *h, uint64_t a, uint64_t b)
{
	unsigned i = 0;

	/* merge everything overlapping or touching [a, b) */
	while (i < h->n_ext) {
		struct raid_hdd_ext *e = &h->ext[i];

		if (e->b >= a && e->a <= b) {
			if (e->a < a)
				a = e->a;
			if (e->b > b)
				b = e->b;
			h->dirty -= e->b - e->a;
			*e = h->ext[--h->n_ext];
			continue;
		}
		i++;
	}
	assert(h->n_ext < RAID_HDD_MAX_EXT);
	h->ext[h->n_ext].a = a;
	h->ext[h->n_ext].b = b;
	h->n_ext++;
	h->dirty += b - a;
}

/* The head wrote [a, b) (a is an extent's start). */
static void cache_drained(struct raid_hdd *h, uint64_t a, uint64_t b)
{
	for (unsigned i = 0; i < h->n_ext; i++) {
		struct raid_hdd_ext *e = &h->ext[i];

		if (e->a == a) {
			h->dirty -= b - a;
			if (b >= e->b)
				*e = h->ext[--h->n_ext];
			else
				e->a = b;
			return;
		}
	}
}

/* ---- queue ---- */

static void q_remove(struct raid_hdd *h, struct raid_mio *mio)
{
	struct raid_mio **pp = &h->q_head, *prev = NULL;

	while (*pp && *pp != mio) {
		prev = *pp;
		pp = &hm(h, *pp)->next;
	}
	if (!*pp)
		return;
	*pp = hm(h, mio)->next;
	if (h->q_tail == mio)
		h->q_tail = prev;
	hm(h, mio)->next = NULL;
}

static void deliver(void *arg)
{
	struct raid_mio *mio = arg;
	struct hdd_mio *h = raid_mlayer_priv(mio->path[mio->depth - 1], mio);

	raid_mlayer_up(mio, h->res);
}

/* The modelled disk is done with @mio (queued or not): hand it back when
 * its real I/O is done too, unless its own timeout will. */
static void model_done(struct raid_hdd *d, struct raid_mio *mio)
{
	q_remove(d, mio);
	hm(d, mio)->state |= HDD_MODEL;
	if ((hm(d, mio)->state & HDD_REAL) && !(hm(d, mio)->state & HDD_HOLD)) {
		if (raid_defer(hm(d, mio)->ctx, deliver, mio) < 0)
			LOG_ERR(RAID_MOD, "hdd model: cannot defer a completion (out of memory)");
	}
}

/* Writes waiting for room, FSYNCs waiting for an empty cache, reads that the
 * read-ahead now covers: settle them at time @t. */
static void settle(struct raid_hdd *d, uint64_t t)
{
	struct raid_hdd *h = d;
	struct raid_mio *q = h->q_head, *n;
	bool blocked = false;   /* a write ahead still waits: keep FIFO order */
	bool wt = d->cfg->write_through;

	for (; q; q = n) {
		n = hm(d, q)->next;
		if (hm(d, q)->arr_ns > t)
			continue;
		if (q->op == RAID_MIO_WRITE) {
			if (wt)
				continue;   /* done when the head has written it */
			if (!blocked && cache_fits(h, q->len)) {
				cache_put(h, q->off, q->off + q->len);
				model_done(d, q);
			} else {
				blocked = true;
			}
		} else if (q->op == RAID_MIO_FSYNC) {
			/* write-through: nothing is volatile, nothing to wait for */
			if (wt || (!blocked && !h->dirty))
				model_done(d, q);
			else
				blocked = true;
		} else if (q != h->job_mio && read_hit(h, q->off, q->off + q->len)) {
			int si = stream_of(d, q->off);

			if (si >= 0)
				stream_read(h, si, q->off, q->off + q->len, t);
			h->n_hit++;
			model_done(d, q);
		}
	}
}

/* ---- elevator ---- */

struct job {
	int kind;
	struct raid_mio *mio;
	uint64_t a, b;
	int stream;
};

/* Does a write or FSYNC wait for the cache, or is it pressing? */
static bool cache_pressing(const struct raid_hdd *h, uint64_t t)
{
	if (h->dirty > HDD_WCACHE / 2 || h->n_ext > RAID_HDD_MAX_EXT / 2)
		return true;
	for (const struct raid_mio *q = h->q_head; q; q = hm(h, q)->next)
		if (hm(h, q)->arr_ns <= t && q->op != RAID_MIO_READ)
			return true;
	return false;
}

/* Does a write or FSYNC wait for room / an empty cache? */
static bool cache_blocked(const struct raid_hdd *h, uint64_t t)
{
	for (const struct raid_mio *q = h->q_head; q; q = hm(h, q)->next)
		if (hm(h, q)->arr_ns <= t && q->op != RAID_MIO_READ)
			return true;
	return false;
}

static bool pick_continue(struct raid_hdd *d, uint64_t t, struct job *j)
{
	struct raid_hdd *h = d;
	const struct conf_hdd *c = d->cfg;
	uint64_t track = (uint64_t)(bps(c) * 60.0 / c->rpm);
	struct raid_hdd_stream *s = h->cur >= 0 ? &h->st[h->cur] : NULL;
	struct raid_mio *q, *wr = NULL;
	bool others = false;
	int best = -1;

	if (!s)
		return false;
	/* reads continuing the stream, oldest first; a read a little further
	 * ahead (a strided reader, e.g. a mirror half that leaves every other
	 * band to the other disk) continues it too: the head seeks forward
	 * instead of reading through the gap (pos_ns takes the cheaper) */
	for (q = h->q_head; q; q = hm(d, q)->next) {
		if (hm(d, q)->arr_ns > t || q->op != RAID_MIO_READ)
			continue;
		if (stream_of(d, q->off) == h->cur ||
		    (q->off >= s->next && q->off <= s->next + HDD_RA_MAX)) {
			if (!j->mio) {
				j->mio = q;
			}
		} else {
			others = true;
		}
	}
	/* write-through: queued writes right ahead of the head continue it
	 * (a sequential write stream streams at mbps while the host keeps
	 * requests queued) */
	for (q = h->q_head; q && d->cfg->write_through; q = hm(d, q)->next) {
		if (hm(d, q)->arr_ns > t || q->op != RAID_MIO_WRITE)
			continue;
		if (q->off >= h->head && q->off <= h->head + track) {
			if (!wr || q->off < wr->off)
				wr = q;
		} else {
			others = true;
		}
	}
	/* dirty data right ahead of the head */
	for (unsigned i = 0; i < h->n_ext; i++) {
		if (h->ext[i].a >= h->head && h->ext[i].a <= h->head + track) {
			if (best < 0 || h->ext[i].a < h->ext[best].a)
				best = (int)i;
		} else {
			others = true;
		}
	}
	if (h->batch >= HDD_BATCH && others) {
		j->mio = NULL;
		return false;
	}
	if (j->mio) {
		uint64_t a = j->mio->off, b = a + j->mio->len;

		/* what the read-ahead already holds costs no head time */
		if (a >= s->lo && a < s->ra_end && s->ra_end < b)
			a = s->ra_end;
		j->kind = JOB_READ;
		j->a = a;
		j->b = b;
		j->stream = h->cur;
		return true;
	}
	if (wr) {
		j->kind = JOB_WRITE;
		j->mio = wr;
		j->a = wr->off;
		j->b = wr->off + wr->len;
		j->stream = h->cur;
		return true;
	}
	if (best >= 0) {
		j->kind = JOB_DRAIN;
		j->a = h->ext[best].a;
		j->b = h->ext[best].b - j->a > HDD_DRAIN_MAX ? j->a + HDD_DRAIN_MAX : h->ext[best].b;
		j->stream = h->cur;
		return true;
	}
	/* Read-ahead yields to waiting requests (a drive abandons its
	 * prefetch when a command arrives) unless the stream is established:
	 * then it is the batch that keeps two sequential streams from seeking
	 * per request. A read that happened to land just after another one
	 * (random I/O) is no established stream. */
	if (s->seq && s->ra_end < s->next + HDD_RA_MAX && h->head == s->ra_end &&
	    !(others && (cache_pressing(h, t) || s->run < HDD_RA_BUSY_RUN))) {
		j->kind = JOB_RA;
		j->a = s->ra_end;
		j->b = s->ra_end + HDD_RA_UNIT;
		if (j->b > (*d->stroke))
			return false;
		j->stream = h->cur;
		return true;
	}
	return false;
}

static bool in_seq_stream(const struct raid_hdd *d, uint64_t a)
{
	int si = stream_of(d, a);

	return si >= 0 && d->st[si].seq;
}

static bool pick_switch(struct raid_hdd *d, uint64_t t, struct job *j)
{
	struct raid_hdd *h = d;
	struct raid_mio *q, *oldest = NULL, *rd = NULL;
	double rd_ns = 0, near_ns = 0;
	int near = -1;

	/* Reads: the one the head reaches soonest (a drive with a command
	 * queue reorders like that), but never one of the stream just left
	 * (its batch is over); the oldest when it continues a sequential
	 * stream (round-robin between streams keeps them fair) or waited
	 * HDD_READ_AGE. */
	for (q = h->q_head; q; q = hm(d, q)->next) {
		double ns;

		if (hm(d, q)->arr_ns > t || q->op != RAID_MIO_READ || q == h->job_mio)
			continue;
		if (!oldest)
			oldest = q;
		if (h->cur >= 0 && stream_of(d, q->off) == h->cur)
			continue;
		ns = pos_ns(d, q->off, false, 0);
		if (!rd || ns < rd_ns) {
			rd = q;
			rd_ns = ns;
		}
	}
	if (!rd || (oldest && t - hm(d, oldest)->arr_ns > HDD_READ_AGE) ||
	    (oldest && in_seq_stream(d, oldest->off))) {
		rd = oldest;
		rd_ns = oldest ? pos_ns(d, oldest->off, false, 0) : 0;
	}
	oldest = rd;
	for (unsigned i = 0; i < h->n_ext; i++) {
		double ns = pos_ns(d, h->ext[i].a, true, 0);

		if (near < 0 || ns < near_ns) {
			near = (int)i;
			near_ns = ns;
		}
	}
	/* Dirty data goes out when nothing else waits, when writes wait for
	 * room, or (cache over half full) when it is nearer than the read. */
	if (near >= 0 && (!oldest || cache_blocked(h, t) ||
			  (cache_pressing(h, t) && near_ns <= rd_ns))) {
		j->kind = JOB_DRAIN;
		j->a = h->ext[near].a;
		j->b = h->ext[near].b - j->a > HDD_DRAIN_MAX ? j->a + HDD_DRAIN_MAX : h->ext[near].b;
		j->stream = -1;
		return true;
	}
	if (oldest) {
		j->kind = JOB_READ;
		j->mio = oldest;
		j->a = oldest->off;
		j->b = oldest->off + oldest->len;
		j->stream = stream_of(d, oldest->off);
		return true;
	}
	return false;
}

/* Write-through disks (hdd write_cache = false): writes wait in the queue
 * with the reads, and the head takes the request it reaches soonest among
 * all of them (shortest positioning time first, as a drive with a command
 * queue does), the write settle included. So the write-back of a
 * read-modify-write competes like any request: cheap when the head is still
 * near the sectors it just read, a seek when it moved on. Nothing starves:
 * the oldest request goes first once it waited HDD_READ_AGE. Sequential
 * streams keep their batches (pick_continue); once a batch is over, the
 * stream's own requests wait for the next switch, and the oldest read of a
 * sequential stream goes first (round-robin between streams). */
static bool pick_switch_wt(struct raid_hdd *d, uint64_t t, struct job *j)
{
	struct raid_hdd *h = d;
	struct raid_mio *q, *oldest = NULL, *best = NULL;
	bool batch_over = h->batch >= HDD_BATCH;
	double best_ns = 0;

	for (q = h->q_head; q; q = hm(d, q)->next) {
		double ns;

		if (hm(d, q)->arr_ns > t || q == h->job_mio || q->op == RAID_MIO_FSYNC)
			continue;
		if (!oldest)
			oldest = q;
		if (batch_over && h->cur >= 0 && stream_of(d, q->off) == h->cur)
			continue;
		ns = job_pos_ns(d, q->off, q->op == RAID_MIO_WRITE ? JOB_WRITE : JOB_READ, t);
		if (!best || ns < best_ns) {
			best = q;
			best_ns = ns;
		}
	}
	if (!oldest)
		return false;
	if (!best || t - hm(d, oldest)->arr_ns > HDD_READ_AGE ||
	    (oldest->op == RAID_MIO_READ && in_seq_stream(d, oldest->off)))
		best = oldest;
	j->kind = best->op == RAID_MIO_WRITE ? JOB_WRITE : JOB_READ;
	j->mio = best;
	j->a = best->off;
	j->b = best->off + best->len;
	j->stream = best->op == RAID_MIO_READ ? stream_of(d, best->off) : -1;
	return true;
}

/* The model's own accounting, one line per member and HDD_LOG_NS of
 * activity: how busy the head was and how much of that was positioning.
 * An idle head during a sequential write means the host did not keep the
 * disk's cache filled; positioning means seeks or rotations. */
static void win_log(struct raid_hdd *d, uint64_t t)
{
	struct raid_hdd *h = d;
	double win = (double)(t - h->win_t0);

	if (h->win_t0 && t - h->win_t0 >= HDD_LOG_NS)
		LOG_INFO(RAID_MOD, "hdd model %s: %.1f s: head busy %.1f%% (positioning %.1f%%), "
			 "%llu seeks, %llu stream switches, read %.1f MB, read-ahead %.1f MB, "
			 "destaged %.1f MB, %.1f MB dirty",
			 d->name, win / 1e9, 100.0 * (double)(h->n_busy_ns - h->win_busy) / win,
			 100.0 * (double)(h->n_pos_ns - h->win_pos) / win,
			 (unsigned long long)(h->n_seek - h->win_seek),
			 (unsigned long long)(h->n_switch - h->win_switch),
			 (double)(h->n_rd_bytes - h->win_rd) / 1e6,
			 (double)(h->n_ra_bytes - h->win_ra) / 1e6,
			 (double)(h->n_wr_bytes - h->win_wr) / 1e6, (double)h->dirty / 1e6);
	else if (h->win_t0 && t - h->win_t0 < HDD_LOG_NS)
		return;
	h->win_t0 = t;
	h->win_busy = h->n_busy_ns;
	h->win_pos = h->n_pos_ns;
	h->win_seek = h->n_seek;
	h->win_switch = h->n_switch;
	h->win_rd = h->n_rd_bytes;
	h->win_wr = h->n_wr_bytes;
	h->win_ra = h->n_ra_bytes;
}

static void job_start(struct raid_hdd *d, uint64_t t, struct job *j)
{
	struct raid_hdd *h = d;
	const struct conf_hdd *c = d->cfg;
	double ns = job_pos_ns(d, j->a, j->kind, t) + (double)(j->b - j->a) / bps(c) * 1e9;
	bool moved = j->a != h->head;

	if (j->stream < 0) {
		j->stream = j->kind == JOB_DRAIN || j->kind == JOB_WRITE ? -1 : stream_new(h, j->a, t);
		if (j->stream < 0) {
			/* writes form streams too: find or open one at the head */
			j->stream = stream_of(d, j->a);
			if (j->stream < 0)
				j->stream = stream_new(h, j->a, t);
		}
	}
	if (j->stream != h->cur) {
		h->cur = j->stream;
		h->batch = 0;
		h->n_switch++;
	}
	if (moved && ns > (double)(j->b - j->a) / bps(c) * 1e9 + 1e6)
		h->n_seek++;
	h->n_busy_ns += (uint64_t)ns;
	h->n_pos_ns += (uint64_t)(ns - (double)(j->b - j->a) / bps(c) * 1e9);
	win_log(d, t);
	if (j->kind == JOB_READ) {
		h->n_rd_jobs++;
		h->n_rd_bytes += j->b - j->a;
	} else if (j->kind == JOB_DRAIN || j->kind == JOB_WRITE) {
		h->n_drain_jobs++;
		h->n_wr_bytes += j->b - j->a;
	}
	h->batch += j->b - j->a;
	h->job = j->kind;
	h->job_a = j->a;
	h->job_b = j->b;
	h->job_mio = j->kind == JOB_READ || j->kind == JOB_WRITE ? j->mio : NULL;
	h->busy_until = t + (uint64_t)ns;
	h->last_a = j->a;
	h->head = j->b;
	if (j->kind == JOB_RA)
		h->n_ra_bytes += j->b - j->a;
}

static void job_end(struct raid_hdd *d, uint64_t t)
{
	struct raid_hdd *h = d;
	struct raid_hdd_stream *s = h->cur >= 0 ? &h->st[h->cur] : NULL;

	switch (h->job) {
	case JOB_READ:
		if (s)
			stream_read(h, h->cur, h->job_mio->off, h->job_b, t);
		model_done(d, h->job_mio);
		break;
	case JOB_RA:
		if (s && h->job_b > s->ra_end)
			s->ra_end = h->job_b;
		break;
	case JOB_WRITE:
	case JOB_DRAIN:
		if (h->job == JOB_WRITE)
			model_done(d, h->job_mio);
		else
			cache_drained(h, h->job_a, h->job_b);
		if (s) {
			s->next = h->job_b;
			s->ra_end = h->job_b;
			s->last_ns = t;
		}
		break;
	default:
		break;
	}
	h->job = JOB_NONE;
	h->job_mio = NULL;
	h->end_ns = t;
}

/* Run the modelled disk up to @now. Decisions at time t only see requests
 * that had arrived by t, so running late changes nothing. */
static void advance(struct raid_hdd *d, uint64_t now)
{
	struct raid_hdd *h = d;

	for (;;) {
		uint64_t t;
		struct job j;

		if (h->busy_until > now)
			break;
		t = h->busy_until;
		if (h->job != JOB_NONE)
			job_end(d, t);
		settle(d, t);
		memset(&j, 0, sizeof(j));
		j.stream = -1;
		if (pick_continue(d, t, &j) ||
		    (d->cfg->write_through ? pick_switch_wt(d, t, &j) : pick_switch(d, t, &j))) {
			job_start(d, t, &j);
			continue;
		}
		/* idle until the next arrival, if it is before now */
		{
			uint64_t next = UINT64_MAX;

			for (struct raid_mio *q = h->q_head; q; q = hm(d, q)->next)
				if (hm(d, q)->arr_ns > t && hm(d, q)->arr_ns < next)
					next = hm(d, q)->arr_ns;
			if (next == UINT64_MAX || next > now) {
				h->busy_until = now;
				break;
			}
			h->busy_until = next;
		}
	}
}

static void arm_deferred(void *arg);
static void hdd_timer(struct raid_ioctx *ctx, struct raid_iotimer *t);

static void arm(struct raid_hdd *d, struct raid_ioctx *ctx, struct raid_mio *mio, uint64_t when)
{
	hm(d, mio)->t.fn = hdd_timer;
	raid_ioctx_timer_arm(ctx, &hm(d, mio)->t, when);
}

/* Some waiting mio must own the disk's timer. */
static void ensure_holder(struct raid_hdd *d, struct raid_ioctx *ctx)
{
	struct raid_hdd *h = d;
	struct raid_mio *w = h->q_head;

	if (h->holder || !w)
		return;
	hm(d, w)->state |= HDD_HOLD;
	h->holder = w;
	if (hm(d, w)->ctx == ctx)
		arm(d, ctx, w, h->busy_until);
	else if (raid_defer(hm(d, w)->ctx, arm_deferred, hm(d, w)) < 0)
		LOG_ERR(RAID_MOD, "hdd model: cannot defer a timer (out of memory)");
}

/* Drop @mio's HOLD; true when it is to be delivered now by the caller. */
static bool unhold(struct raid_hdd *d, struct raid_mio *mio, struct raid_ioctx *ctx)
{
	hm(d, mio)->state &= ~HDD_HOLD;
	if (d->holder == mio)
		d->holder = NULL;
	ensure_holder(d, ctx);
	return (hm(d, mio)->state & (HDD_MODEL | HDD_REAL)) == (HDD_MODEL | HDD_REAL);
}

/* The holder's timeout fired on @ctx (or, from arm_deferred, its turn to
 * arm one came): run the model; deliver it, or wait again. */
static void hold_check(struct raid_hdd *d, struct raid_ioctx *ctx, struct raid_mio *mio)
{
	bool now_cb = false;

	pthread_mutex_lock(&d->mu);
	advance(d, conf_mono_ns());
	if (hm(d, mio)->state & HDD_MODEL)
		now_cb = unhold(d, mio, ctx);
	else
		arm(d, ctx, mio, d->busy_until);   /* still its turn to come */
	RTGT_CHECK(hdd_check(d));
	pthread_mutex_unlock(&d->mu);
	if (now_cb)
		raid_mlayer_up(mio, hm(d, mio)->res);
}

static void arm_deferred(void *arg)
{
	struct hdd_mio *h = arg;

	hold_check(h->d, h->ctx, h->mio);
}

static void hdd_timer(struct raid_ioctx *ctx, struct raid_iotimer *t)
{
	struct hdd_mio *h = (struct hdd_mio *)(void *)t;

	hold_check(h->d, ctx, h->mio);
}

static int hdd_submit(struct raid_mlayer *l, struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_hdd *d = (struct raid_hdd *)(void *)l, *h = d;
	struct hdd_mio *x = hm(d, mio);
	uint64_t now;
	int rc;

	/* the real I/O runs now; the model decides when it completes */
	rc = raid_mlayer_submit(l->below, ctx, mio);
	if (rc)
		return rc;
	now = conf_mono_ns();
	pthread_mutex_lock(&d->mu);
	memset(x, 0, sizeof(*x));
	x->mio = mio;
	x->d = d;
	x->arr_ns = now;
	x->ctx = ctx;
	if (h->busy_until == 0) {
		h->cur = -1;
		h->busy_until = now;
	}
	advance(d, now);
	if (h->q_tail)
		hm(d, h->q_tail)->next = mio;
	else
		h->q_head = mio;
	h->q_tail = mio;
	/* writes into a cache with room, reads of read-ahead data, FSYNC of a
	 * clean cache: done now */
	settle(d, now);
	/* an idle head starts at once */
	advance(d, now);
	ensure_holder(d, ctx);
	RTGT_CHECK(hdd_check(d));
	pthread_mutex_unlock(&d->mu);
	return 0;
}

/* The real I/O is done. */
static void hdd_complete(struct raid_mlayer *l, struct raid_mio *mio, int res)
{
	struct raid_hdd *d = (struct raid_hdd *)(void *)l;
	bool now_cb;

	pthread_mutex_lock(&d->mu);
	hm(d, mio)->res = res;
	hm(d, mio)->state |= HDD_REAL;
	now_cb = (hm(d, mio)->state & HDD_MODEL) && !(hm(d, mio)->state & HDD_HOLD);
	pthread_mutex_unlock(&d->mu);
	if (now_cb)
		raid_mlayer_up(mio, res);
}

static const struct raid_mlayer_ops hdd_ops = {
	.name = "hdd",
	.priv_size = sizeof(struct hdd_mio),
	.submit = hdd_submit,
	.complete = hdd_complete,
};

void raid_hdd_init(struct raid_hdd *d)
{
	memset(d, 0, sizeof(*d));
	d->l.ops = &hdd_ops;
	pthread_mutex_init(&d->mu, NULL);
}

void raid_hdd_stack(struct raid_hdd *d, struct raid_mlayer *below, const struct conf_hdd *cfg,
		    const uint64_t *stroke, const char *name)
{
	d->l.below = below;
	d->cfg = cfg;
	d->stroke = stroke;
	d->name = name;
}

void raid_hdd_fini(struct raid_hdd *d)
{
	pthread_mutex_destroy(&d->mu);
}
