/*
 * raid/bitmap.c - the write-intent bitmap: one bit per region of member
 * space (bitmap_chunk bytes, the same rows on every member), stored at
 * RAID_BITMAP_OFF on every member.
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
 * Region states: CLEAN (bit 0) -> DIRTY (raid_bm_start, bit 1 durable before
 * the write is issued; cnt counts writes in flight) -> CLEAN (raid_bm_clear_idle:
 * cnt 0 and gen unchanged across an fdatasync of every member). A bit found
 * set at assembly after an unclean shutdown makes the region UNSYNCED until
 * raid_bm_synced(). Invariant (raid_bm_check): cnt > 0 implies the bit is set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/raid_int.h"

#define BM_MIN_REGION (1u << 20)

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

int raid_bm_init(struct raid_pool *p, uint64_t region, bool load)
{
	struct raid_bitmap *bm = &p->bm;
	uint8_t *tmp = NULL;
	unsigned i;

	memset(bm, 0, sizeof(*bm));
	pthread_mutex_init(&bm->mu, NULL);
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
	tmp = raid_alloc(bm->bytes);
	if (!bm->disk || !bm->unsynced || !bm->cnt || !bm->gen || !bm->seen || !tmp) {
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
	for (uint64_t r = 0; r < bm->nbits; r++)
		if (bit(bm->unsynced, r))
			bm->n_unsynced++;
	return 0;
}

void raid_bm_free(struct raid_pool *p)
{
	struct raid_bitmap *bm = &p->bm;

	if (!bm->region)
		return;    /* never set up (raid0) */
	free(bm->disk);
	free(bm->unsynced);
	free(bm->cnt);
	free(bm->gen);
	free(bm->seen);
	pthread_mutex_destroy(&bm->mu);
	memset(bm, 0, sizeof(*bm));
}

/* bm->mu held. Failed members are returned in @failed for the caller to
 * mark faulty once the mutex is dropped. */
static void write_disk(struct raid_pool *p, uint64_t *failed)
{
	struct raid_bitmap *bm = &p->bm;

	for (unsigned i = 0; i < p->n_slots; i++) {
		struct raid_member *m = p->m[i];

		if (!m || !raid_member_writable(m))
			continue;
		if (pwrite(m->fd, bm->disk, bm->bytes, RAID_BITMAP_OFF) != (ssize_t)bm->bytes ||
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

void raid_bm_start(struct raid_pool *p, uint64_t moff, uint64_t len)
{
	struct raid_bitmap *bm = &p->bm;
	uint64_t failed = 0, r;
	bool need = false;

	if (!bm->nbits || !len)
		return;
	pthread_mutex_lock(&bm->mu);
	for (r = moff / bm->region; r <= (moff + len - 1) / bm->region && r < bm->nbits; r++) {
		bm->cnt[r]++;
		bm->gen[r]++;
		if (!bit(bm->disk, r)) {
			setbit(bm->disk, r, true);
			need = true;
		}
	}
	/* Durable before the data write: a crash in between leaves the bit set
	 * and the region resynced, never a stale parity nobody knows about. */
	if (need)
		write_disk(p, &failed);
	pthread_mutex_unlock(&bm->mu);
	if (failed)
		fail_members(p, failed);
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
	if (changed && !failed)
		write_disk(p, &failed);
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
		if (bm->cnt[r] && !bit(bm->disk, r))
			ok = false;
	pthread_mutex_unlock(&bm->mu);
	return ok;
}
