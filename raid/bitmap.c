/*
 * raid/bitmap.c - the write-intent bitmap: one bit per region of member
 * space (bitmap_chunk bytes, the same rows on every member), stored at
 * RAID_BITMAP_OFF on every member.
 *
 * Layer: bitmap and stripe cache (raid/README.md "Layers"). May call:
 * member.c, mstate.c, sb.c, ioctx.c, lock.c, parity.c, geom.c, conf/.
 *
 * A bit is set on disk (pwrite + fdatasync on every member) before the first
 * member write into its region, and cleared by the background thread once the
 * region has had no write in flight for a while and the members were
 * fdatasync'ed. After an unclean shutdown the union of the members' bitmaps
 * names the only regions whose parity or mirrors may disagree with their data
 * ("unsynced"); the background thread resynchronises just those while the
 * pool serves I/O. Until a region is resynced, raid5/6 will not reconstruct
 * lost data in it from parity (the request fails with -EIO) because that
 * parity may belong to a half-finished write.
 *
 * Region states: CLEAN (bit 0) -> DIRTY (raid_bm_start[_async], bit 1 durable
 * before the write is issued; cnt counts writes in flight) -> CLEAN
 * (raid_bm_clear_idle: cnt 0 and gen unchanged across an fdatasync of every
 * member). A bit found set at assembly after an unclean shutdown makes the
 * region UNSYNCED until raid_bm_synced(); so does every region of a new
 * pool the initial sync has not reached yet (regions from sb.sync_pos on,
 * marked at raid_bm_init: in memory only, sync_pos is their on-disk record).
 * raid_bm_unsynced() also answers true over a bad range (mstate.c): rows no
 * valid data can be reconstructed from. Invariant (raid_bm_check): cnt > 0
 * implies the bit is set.
 *
 * Who writes the bits: one writer thread per pool (bm_writer), never a
 * reactor. A newly set bit goes into `pending` and bumps seq_set; the writer
 * takes a pass: snapshot of `disk` (pending moves to `inflight`,
 * seq_inflight = seq_set), pwrite + fdatasync on every writable member, then
 * seq_durable = seq_inflight and the waiters whose bits were in it run (on
 * their own ctx, raid_defer). Bits set while a pass is being written go into
 * the next one, so concurrent first writes share one pass (group commit).
 * A region is durable when its bit is set and neither pending nor inflight;
 * a write into it waits for seq_set (pending) or seq_inflight (inflight).
 * Writer states: IDLE (seq_durable == seq_set, waits on wr_cv) -> WRITING
 * (a pass) -> IDLE; any -> EXIT on wr_stop (raid_bm_free). Clearing bits
 * (raid_bm_clear_idle) also goes through a pass. Without the thread (it
 * could not be created) the bits are written synchronously as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/member.h"
#include "raid/raid_int.h"

#define BM_MIN_REGION (1u << 20)

/* A raid_bm_start_async() caller waiting for seq_durable >= need. */
struct raid_bm_waiter {
	uint64_t need;
	struct raid_ioctx *ctx;
	raid_defer_fn fn;
	void *arg;
	struct raid_bm_waiter *next;
};

static void *bm_writer(void *arg);
static void write_disk(struct raid_pool *p, const uint8_t *bits, uint64_t *failed);
int raid_bm_write_member(struct raid_pool *p, struct raid_member *m)
{
	struct raid_bitmap *bm = &p->bm;
	int rc = 0;

	if (!bm->region)
		return 0;   /* raid0: none */
	pthread_mutex_lock(&bm->mu);
	if (pwrite(m->fd, bm->disk, bm->bytes, RAID_BITMAP_OFF) != (ssize_t)bm->bytes ||
	    fdatasync(m->fd))
		rc = errno ? -errno : -EIO;
	pthread_mutex_unlock(&bm->mu);
	if (rc)
		LOG_ERR(RAID_MOD, "pool %s: member %s: cannot write the bitmap: %s", p->name, m->path,
			strerror(-rc));
	return rc;
}

static void fail_members(struct raid_pool *p, uint64_t failed);

static bool bit(const uint8_t *b, uint64_t i)
{
	return b[i / 8] & (1u << (i % 8));
}

static void setbit(uint8_t *b, uint64_t i, bool v)
{
	if (v)
		b[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		b[i / 8] &= (uint8_t)~(1u << (i % 8));
}

uint64_t raid_bm_region_for(uint64_t member_bytes, uint64_t chunk)
{
	uint64_t region = BM_MIN_REGION > chunk ? BM_MIN_REGION : chunk;

	while (member_bytes / region + 1 > (uint64_t)RAID_BITMAP_BYTES * 8)
		region *= 2;
	return region;
}

int raid_bm_init(struct raid_pool *p, uint64_t region, bool load, uint64_t sync_from, bool fresh)
{
	struct raid_bitmap *bm = &p->bm;
	uint8_t *tmp = NULL;
	unsigned i;

	memset(bm, 0, sizeof(*bm));
	pthread_mutex_init(&bm->mu, NULL);
	pthread_cond_init(&bm->wr_cv, NULL);
	pthread_cond_init(&bm->done_cv, NULL);
	bm->region = region;
	bm->nbits = (p->g.member_bytes + region - 1) / region;
	bm->bytes = (bm->nbits / 8 + 1 + RAID_ALIGN - 1) / RAID_ALIGN * RAID_ALIGN;
	if (bm->bytes > RAID_BITMAP_BYTES)
		return -EINVAL;
	bm->disk = raid_alloc(bm->bytes);
	bm->unsynced = raid_alloc(bm->bytes);
	bm->cnt = calloc(bm->nbits, sizeof(*bm->cnt));
	bm->gen = calloc(bm->nbits, sizeof(*bm->gen));
	bm->seen = calloc(bm->nbits / 64 + 1, sizeof(*bm->seen));
	bm->pending = raid_alloc(bm->bytes);
	bm->inflight = raid_alloc(bm->bytes);
	bm->snap = raid_alloc(bm->bytes);
	tmp = raid_alloc(bm->bytes);
	if (!bm->disk || !bm->unsynced || !bm->cnt || !bm->gen || !bm->seen || !tmp ||
	    !bm->pending || !bm->inflight || !bm->snap) {
		free(tmp);
		return -ENOMEM;
	}
	for (i = 0; load && i < p->g.n; i++) {
		struct raid_member *m = p->m[i];

		if (!m || m->fd < 0 || atomic_load(&m->state) == RAID_M_FAULTY)
			continue;
		if (pread(m->fd, tmp, bm->bytes, RAID_BITMAP_OFF) != (ssize_t)bm->bytes) {
			LOG_WARN(RAID_MOD, "pool %s: member %s: cannot read the bitmap", p->name, m->path);
			continue;
		}
		for (size_t k = 0; k < bm->bytes; k++)
			bm->unsynced[k] |= tmp[k];
	}
	free(tmp);
	/* the unsynced regions stay marked on disk until resynced */
	memcpy(bm->disk, bm->unsynced, bm->bytes);
	/* Never synced (initial sync pending): unsynced in memory only; the
	 * superblock's sync_pos is what says so on disk. */
	for (uint64_t r = sync_from / region; r < bm->nbits; r++)
		setbit(bm->unsynced, r, true);
	if (fresh) {
		uint64_t failed = 0;

		/* a reused device's old bytes there would read as dirty bits */
		write_disk(p, bm->disk, &failed);
		if (failed)
			fail_members(p, failed);
	}
	for (uint64_t r = 0; r < bm->nbits; r++)
		if (bit(bm->unsynced, r))
			bm->n_unsynced++;
	if (pthread_create(&bm->wr, NULL, bm_writer, p) == 0)
		bm->wr_started = true;
	else
		LOG_WARN(RAID_MOD, "pool %s: no bitmap writer thread: bitmap writes will be synchronous",
			 p->name);
	return 0;
}

void raid_bm_free(struct raid_pool *p)
{
	struct raid_bitmap *bm = &p->bm;

	if (!bm->region)
		return;    /* never set up (raid0) */
	if (bm->wr_started) {
		pthread_mutex_lock(&bm->mu);
		bm->wr_stop = true;
		pthread_cond_signal(&bm->wr_cv);
		pthread_mutex_unlock(&bm->mu);
		pthread_join(bm->wr, NULL);
		bm->wr_started = false;
	}
	/* nobody can be waiting: every write ended before the pool closes */
	while (bm->waiters) {
		struct raid_bm_waiter *w = bm->waiters;

		bm->waiters = w->next;
		LOG_ERR(RAID_MOD, "pool %s: a write still waited for the bitmap at close", p->name);
		if (raid_defer(w->ctx, w->fn, w->arg))
			w->fn(w->arg);
		free(w);
	}
	free(bm->pending);
	free(bm->inflight);
	free(bm->snap);
	pthread_cond_destroy(&bm->wr_cv);
	pthread_cond_destroy(&bm->done_cv);
	free(bm->disk);
	free(bm->unsynced);
	free(bm->cnt);
	free(bm->gen);
	free(bm->seen);
	pthread_mutex_destroy(&bm->mu);
	memset(bm, 0, sizeof(*bm));
}

/* Write @bits to every writable member. Failed members are returned in
 * @failed for the caller to mark faulty once bm->mu is dropped. */
static void write_disk(struct raid_pool *p, const uint8_t *bits, uint64_t *failed)
{
	struct raid_bitmap *bm = &p->bm;

	for (unsigned i = 0; i < p->n_slots; i++) {
		struct raid_member *m = p->m[i];

		if (!m || !raid_member_writable(m))
			continue;
		if (pwrite(m->fd, bits, bm->bytes, RAID_BITMAP_OFF) != (ssize_t)bm->bytes ||
		    fdatasync(m->fd))
			*failed |= 1ull << i;
	}
}

static void fail_members(struct raid_pool *p, uint64_t failed)
{
	for (unsigned i = 0; i < p->n_slots; i++)
		if (failed & (1ull << i))
			raid_member_fail(p->m[i], -EIO, "bitmap write failed");
}

/*
 * One pass of the writer: snapshot, write outside the lock, publish. Called
 * with bm->mu held and seq_durable < seq_set; returns with it held. The
 * waiters it satisfied are handed back in @done for the caller to defer
 * once the lock is dropped.
 */
static void bm_pass(struct raid_pool *p, uint64_t *failed, struct raid_bm_waiter **done)
{
	struct raid_bitmap *bm = &p->bm;
	struct raid_bm_waiter **pp = &bm->waiters;
	uint64_t s = bm->seq_set;

	memcpy(bm->snap, bm->disk, bm->bytes);
	memcpy(bm->inflight, bm->pending, bm->bytes);
	memset(bm->pending, 0, bm->bytes);
	bm->seq_inflight = s;
	pthread_mutex_unlock(&bm->mu);
	write_disk(p, bm->snap, failed);
	pthread_mutex_lock(&bm->mu);
	memset(bm->inflight, 0, bm->bytes);
	bm->seq_durable = s;
	while (*pp) {
		struct raid_bm_waiter *w = *pp;

		if (w->need <= s) {
			*pp = w->next;
			w->next = *done;
			*done = w;
		} else {
			pp = &w->next;
		}
	}
	pthread_cond_broadcast(&bm->done_cv);
}

static void run_waiters(struct raid_bm_waiter *w)
{
	while (w) {
		struct raid_bm_waiter *next = w->next;

		/* the caller's ctx is alive: its request is in flight */
		if (raid_defer(w->ctx, w->fn, w->arg)) {
			LOG_ERR(RAID_MOD, "bitmap: cannot defer a write's continuation: running it here");
			w->fn(w->arg);
		}
		free(w);
		w = next;
	}
}

static void *bm_writer(void *arg)
{
	struct raid_pool *p = arg;
	struct raid_bitmap *bm = &p->bm;

	pthread_mutex_lock(&bm->mu);
	while (!bm->wr_stop || bm->seq_durable < bm->seq_set) {
		uint64_t failed = 0;
		struct raid_bm_waiter *done = NULL;

		if (bm->seq_durable >= bm->seq_set) {
			pthread_cond_wait(&bm->wr_cv, &bm->mu);
			continue;
		}
		bm_pass(p, &failed, &done);
		pthread_mutex_unlock(&bm->mu);
		/* faulty first: a write released now must not count on them */
		if (failed)
			fail_members(p, failed);
		run_waiters(done);
		pthread_mutex_lock(&bm->mu);
	}
	pthread_mutex_unlock(&bm->mu);
	return NULL;
}

/*
 * Take the regions of [moff, moff+len) for a write; returns the seq_durable
 * the write must wait for (0: none). bm->mu held.
 */
static uint64_t bm_take(struct raid_bitmap *bm, uint64_t moff, uint64_t len)
{
	uint64_t need = 0, r;
	bool newly = false;

	for (r = moff / bm->region; r <= (moff + len - 1) / bm->region && r < bm->nbits; r++) {
		bm->cnt[r]++;
		bm->gen[r]++;
		if (!bit(bm->disk, r)) {
			setbit(bm->disk, r, true);
			setbit(bm->pending, r, true);
			newly = true;
		} else if (bit(bm->pending, r)) {
			need = bm->seq_set > need ? bm->seq_set : need;
		} else if (bit(bm->inflight, r)) {
			need = bm->seq_inflight > need ? bm->seq_inflight : need;
		}
	}
	if (newly)
		need = ++bm->seq_set;
	return need > bm->seq_durable ? need : 0;
}

/* Without the writer thread: write the bits here. bm->mu held. */
static void bm_write_sync(struct raid_pool *p, uint64_t *failed)
{
	struct raid_bitmap *bm = &p->bm;

	write_disk(p, bm->disk, failed);
	memset(bm->pending, 0, bm->bytes);
	bm->seq_durable = bm->seq_set;
}

void raid_bm_start(struct raid_pool *p, uint64_t moff, uint64_t len)
{
	struct raid_bitmap *bm = &p->bm;
	uint64_t failed = 0, need;

	if (!bm->nbits || !len)
		return;
	pthread_mutex_lock(&bm->mu);
	/* Durable before the data write: a crash in between leaves the bit set
	 * and the region resynced, never a stale parity nobody knows about. */
	need = bm_take(bm, moff, len);
	if (need && !bm->wr_started) {
		bm_write_sync(p, &failed);
	} else if (need) {
		pthread_cond_signal(&bm->wr_cv);
		while (bm->seq_durable < need)
			pthread_cond_wait(&bm->done_cv, &bm->mu);
	}
	pthread_mutex_unlock(&bm->mu);
	if (failed)
		fail_members(p, failed);
}

bool raid_bm_start_async(struct raid_pool *p, uint64_t moff, uint64_t len,
			 struct raid_ioctx *ctx, raid_defer_fn fn, void *arg)
{
	struct raid_bitmap *bm = &p->bm;
	struct raid_bm_waiter *w = NULL;
	uint64_t need, failed = 0;

	if (!bm->nbits || !len)
		return true;
	pthread_mutex_lock(&bm->mu);
	need = bm_take(bm, moff, len);
	if (!need) {
		pthread_mutex_unlock(&bm->mu);
		return true;         /* the common case: the region is dirty already */
	}
	if (bm->wr_started)
		w = malloc(sizeof(*w));
	if (w) {
		w->need = need;
		w->ctx = ctx;
		w->fn = fn;
		w->arg = arg;
		w->next = bm->waiters;
		bm->waiters = w;
		pthread_cond_signal(&bm->wr_cv);
		pthread_mutex_unlock(&bm->mu);
		return false;
	}
	/* no writer thread, or no memory to wait with: as raid_bm_start() */
	if (!bm->wr_started) {
		bm_write_sync(p, &failed);
	} else {
		pthread_cond_signal(&bm->wr_cv);
		while (bm->seq_durable < need)
			pthread_cond_wait(&bm->done_cv, &bm->mu);
	}
	pthread_mutex_unlock(&bm->mu);
	if (failed)
		fail_members(p, failed);
	return true;
}

void raid_bm_end(struct raid_pool *p, uint64_t moff, uint64_t len)
{
	struct raid_bitmap *bm = &p->bm;

	if (!bm->nbits || !len)
		return;
	pthread_mutex_lock(&bm->mu);
	for (uint64_t r = moff / bm->region; r <= (moff + len - 1) / bm->region && r < bm->nbits; r++)
		if (bm->cnt[r])
			bm->cnt[r]--;
	pthread_mutex_unlock(&bm->mu);
}

bool raid_bm_unsynced(struct raid_pool *p, uint64_t moff, uint64_t len)
{
	struct raid_bitmap *bm = &p->bm;
	bool u = false;

	if (atomic_load(&p->n_bad) && raid_pool_bad(p, UINT32_MAX, moff, moff + len))
		return true;    /* nothing valid to reconstruct from there */
	if (!atomic_load(&bm->n_unsynced))
		return false;
	pthread_mutex_lock(&bm->mu);
	for (uint64_t r = moff / bm->region; r <= (moff + len - 1) / bm->region && r < bm->nbits; r++)
		if (bit(bm->unsynced, r))
			u = true;
	pthread_mutex_unlock(&bm->mu);
	return u;
}

bool raid_bm_region_unsynced(struct raid_pool *p, uint64_t region)
{
	struct raid_bitmap *bm = &p->bm;
	bool u;

	pthread_mutex_lock(&bm->mu);
	u = region < bm->nbits && bit(bm->unsynced, region);
	pthread_mutex_unlock(&bm->mu);
	return u;
}

void raid_bm_synced(struct raid_pool *p, uint64_t region)
{
	struct raid_bitmap *bm = &p->bm;

	pthread_mutex_lock(&bm->mu);
	if (region < bm->nbits && bit(bm->unsynced, region)) {
		setbit(bm->unsynced, region, false);
		atomic_fetch_sub(&bm->n_unsynced, 1);
	}
	pthread_mutex_unlock(&bm->mu);
}

/* Clear bits of regions idle since the last call (@force: all idle ones now,
 * used at close). Called from the background thread only. */
void raid_bm_clear_idle(struct raid_pool *p, bool force)
{
	struct raid_bitmap *bm = &p->bm;
	uint64_t failed = 0, r, ncand = 0;
	uint32_t *snap;
	bool changed = false;

	if (!bm->nbits)
		return;
	snap = malloc(bm->nbits * sizeof(*snap));
	if (!snap)
		return;
	pthread_mutex_lock(&bm->mu);
	for (r = 0; r < bm->nbits; r++) {
		snap[r] = bm->gen[r];
		if (bit(bm->disk, r) && !bm->cnt[r] && !bit(bm->unsynced, r) &&
		    (force || bm->seen[r / 64] & (1ull << (r % 64))))
			ncand++;
	}
	pthread_mutex_unlock(&bm->mu);
	if (ncand) {
		/* data of the finished writes must be durable before the bit goes */
		for (unsigned i = 0; i < p->n_slots; i++)
			if (p->m[i] && raid_member_writable(p->m[i]) && fdatasync(p->m[i]->fd))
				failed |= 1ull << i;
	}
	pthread_mutex_lock(&bm->mu);
	for (r = 0; r < bm->nbits; r++) {
		bool idle = bit(bm->disk, r) && !bm->cnt[r] && !bit(bm->unsynced, r) &&
			    snap[r] == bm->gen[r];

		if (idle && (force || bm->seen[r / 64] & (1ull << (r % 64)))) {
			setbit(bm->disk, r, false);
			changed = true;
		}
		/* remember what was idle now; cleared next time if still so */
		if (idle)
			bm->seen[r / 64] |= 1ull << (r % 64);
		else
			bm->seen[r / 64] &= ~(1ull << (r % 64));
	}
	if (changed && !failed) {
		/* a pass of the writer (or here without it), waited for */
		uint64_t target = ++bm->seq_set;

		if (!bm->wr_started) {
			bm_write_sync(p, &failed);
		} else {
			pthread_cond_signal(&bm->wr_cv);
			while (bm->seq_durable < target)
				pthread_cond_wait(&bm->done_cv, &bm->mu);
		}
	}
	pthread_mutex_unlock(&bm->mu);
	free(snap);
	if (failed)
		fail_members(p, failed);
}

bool raid_bm_check(struct raid_pool *p)
{
	struct raid_bitmap *bm = &p->bm;
	bool ok = true;

	pthread_mutex_lock(&bm->mu);
	for (uint64_t r = 0; r < bm->nbits; r++)
		if ((bm->cnt[r] && !bit(bm->disk, r)) ||
		    ((bit(bm->pending, r) || bit(bm->inflight, r)) && !bit(bm->disk, r)))
			ok = false;
	if (bm->seq_durable > bm->seq_set || (bm->waiters && bm->seq_durable >= bm->seq_set))
		ok = false;
	pthread_mutex_unlock(&bm->mu);
	return ok;
}
