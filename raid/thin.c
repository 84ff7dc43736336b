/*
 * raid/thin.c - thin volumes of RAID pools: space taken in extents as it is
 * written, given back by discards, recorded in a crash-safe extent map.
 *
 * Layer: volumes (raid/README.md "Layers"). May call: the stripe I/O
 * (io.c), bitmap.c, scache.c, member.c, mstate.c (events), ioctx.c, lock.c,
 * parity.c, geom.c, conf/.
 *
 * Space. The pool's logical space is cut into extents of tp->ext bytes (a
 * whole number of full stripes, at least 1 MiB): pool extent k is pool
 * bytes [k * ext, (k + 1) * ext). Each is X_REGION (it overlaps a volume
 * table region: a thick volume, or a thin volume's map), X_DATA (a thin
 * volume's map names it) or X_FREE. Thick volumes are still created
 * first-fit, around thin data (vol.c asks raid_thin_overlap) and their
 * regions are reserved in the same hold of the allocator's lock as the
 * check (raid_thin_reserve), so the two never overlap.
 *
 * The extent map of a thin volume of V bytes: an entry per ext bytes of the
 * volume (0: unallocated, k + 1: pool extent k), MAP_EPB of them to a 4 KiB
 * block; each block twice (copy c of block b at map + (2b + c) * 4096), each
 * copy with magic, the volume's UUID, its index, a sequence number and a
 * CRC32C. A block is rewritten, with FUA, into the copy that does not hold
 * its newest state, so a torn or failed write leaves the older copy whole;
 * loading takes the valid copy with the higher sequence. A new volume's map
 * is written (copy 0, sequence 1, nothing allocated) before the volume
 * table names it; a block with no valid copy refuses the volume.
 *
 * Order of writes (what makes a crash at any point safe):
 *   allocation: the whole extent (the request's data, zeroes around it)
 *     with FUA -> the map block naming it, FUA -> the write is acknowledged
 *     and the entry serves reads. A crash before the map write leaves the
 *     extent free (its bytes never read); after it, the extent holds only
 *     what was written or zeroes, never a previous owner's bytes.
 *   free (a discard covering a whole extent): requests to the extent held,
 *     those in flight drained -> the map block without it, FUA -> only
 *     then is the pool extent free in memory: no extent is reused while a
 *     durable map or a request in flight still points at it.
 *   A discard of part of an extent writes zeroes there (reads of discarded
 *   blocks return zeroes: LBPRZ).
 *
 * States of a volume extent vx (t->mu):
 *   UNMAPPED (map[vx] == 0, !busy) --a write--> BUSY, alloc_start()
 *     --map durable (alloc_mapped)--> MAPPED; --failure--> UNMAPPED
 *   MAPPED (!busy): reads and writes go straight to the pool extent,
 *     counted in inflight[vx] --a whole-extent discard--> BUSY, after the
 *     inflight ones drained free_start() --map durable (free_mapped)-->
 *     UNMAPPED; --failure--> MAPPED
 *   A COMPARE_WRITE that is not within one mapped extent also makes its
 *   extents BUSY (caw_*) for its read, compare and writes.
 *   A request that finds its extent BUSY is parked and rerun on its own
 *   thread when the owner lets the extent go (release).
 *   A write or partial discard that finds its MAPPED extent shared makes
 *   it BUSY too (cow_start) until the copy is mapped (cow_mapped).
 * Invariants (thin_check): inflight[vx] > 0 only for a mapped extent; a
 * non-zero entry names an X_DATA extent that no other entry of the same
 * map names; staged differs from map only for BUSY extents; while frozen
 * with active == 0, no extent is BUSY. raid_thin_check_pool() re-counts
 * refs from the maps on disk (rtgtctl check).
 *
 * Sharing (snapshots, clones). A snapshot "VOL@SNAP" is one more map
 * naming the same pool extents as VOL's at the moment it was taken; a
 * clone is a writable map that starts as a copy of a snapshot's. Which
 * table entries may share is their family (raid_sb_vol.family: a volume,
 * its snapshots, their clones). tp->refs[k] counts the map entries naming
 * pool extent k, every map's, durable or staged, plus one while an
 * allocation holds it unmapped. It is never stored: loading counts the
 * maps (map_read, map_count), so no crash can leave it wrong, and a map
 * that names an extent twice, or one of another family, refuses the pool.
 *   Taking one (raid_thin_snapshot): the volume is frozen at the request
 *   level (new requests wait in t->held, those admitted, t->active, run to
 *   their end, every busy extent with them), its map is copied and each
 *   entry counted once more, the volume thaws; then the new map is written
 *   and the caller names it in the volume table. Every write acknowledged
 *   before the freeze is in it, none admitted after.
 *   Copy on write: a WRITE, a partial DISCARD or a COMPARE_WRITE that
 *   meets a mapped extent with refs > 1 owns it (as an allocation does),
 *   takes a new extent, reads the old one into it unless the write covers
 *   it all, writes it whole with FUA, makes its entry name it (map_set) and
 *   only then drops its reference to the old one: thin's order of writes,
 *   so a crash leaves the old entry or the new one, each whole, and the
 *   snapshot the old bytes. A whole-extent DISCARD of a shared extent only
 *   drops the entry. refs only rise above 1 while the volume that names the
 *   extent is frozen (or for a snapshot's extents, which no one writes), so
 *   a request reading refs without tp->mu can only see "shared" too late,
 *   costing a copy that was not needed, never a write into a shared extent.
 *   A rollback writes a new map for the volume holding the snapshot's
 *   entries (raid_thin_rollback_prepare, the volume frozen until _finish)
 *   and the caller switches the table entry to it in one superblock write.
 *   Deleting removes the table entry first, then drops the references
 *   (raid_thin_forget): an extent is free only once no durable map names
 *   it. Inflate copies a clone's shared extents one by one as a copy on
 *   write does (rerunnable after a crash).
 *
 * Threads: requests come from any reactor; each piece of a request runs on
 * its submitting ctx (continuations from other threads arrive through
 * raid_defer), so a struct tio is touched by one thread only. A map block
 * write is submitted on the ctx of the piece that started it and wakes the
 * waiters of other ctxs through raid_defer.
 */
#include <errno.h>
#include <isa-l.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/fault.h"
#include "raid/ioctx.h"
#include "raid/parity.h"

#define MAP_BLK      4096u
#define MAP_HDR      40u
#define MAP_EPB      1000u                 /* entries per block */
#define MAP_MAGIC    "RTGTTMAP"
#define EXT_MIN      (1u << 20)
#define CRC_OFF      (MAP_BLK - 4u)
_Static_assert(MAP_HDR + MAP_EPB * 4u <= CRC_OFF, "map block layout");

enum { X_FREE, X_REGION, X_DATA };

struct raid_thin_pool {
	pthread_mutex_t open_mu;   /* volume opens and resizes, outside meta_mu */
	pthread_mutex_t mu;        /* used[], counts, hint */
	struct raid_pool *p;
	uint64_t ext, n_ext;
	uint8_t *used;             /* owned, n_ext */
	/* owned, n_ext: how many map entries (of every volume and snapshot,
	 * durable or staged) name each X_DATA extent, plus one while an
	 * allocation holds it before its map names it. Never stored: loading
	 * counts the maps, so a crash can never leave a count wrong. Changed
	 * under mu; read without it (refs_of) where a stale answer only
	 * costs a copy that was not needed (see "Sharing" above). */
	uint32_t *refs;
	uint64_t n_data, n_region;
	uint64_t hint;             /* next extent to try */
	uint64_t pend_a, pend_b;   /* a region being created (pool bytes) */
	bool over;                 /* at or over the threshold */
	bool full_logged;
	_Atomic uint64_t thr_events;
	bool loaded;
	struct raid_vol bv;        /* the whole pool: thin I/O goes through it */
	/* thin volumes of the table, loaded but not yet opened; owned */
	struct raid_thin *loaded_t[RAID_MAX_VOLS];
};

struct mwait {
	struct mwait *next;
	unsigned blk;
	uint64_t gen;
	uint64_t vx;
	uint32_t old;              /* staged[vx] before, restored on failure */
	int result;
	struct piece *pc;
};

struct mblk {
	uint64_t seq;              /* of the newest durable copy */
	uint8_t copy;              /* which copy holds it */
	bool writing;
	uint64_t gen;              /* changes staged so far */
};

struct raid_thin {
	struct raid_thin_pool *tp;
	struct raid_vol *v;        /* set at open; NULL while only loaded */
	char name[64];
	uint8_t uuid[16];
	uint64_t map_off;          /* pool bytes */
	uint64_t n_vext, n_blk;
	pthread_mutex_t mu;
	uint32_t *map;             /* durable entries */
	uint32_t *staged;          /* what the next write of a block holds */
	uint32_t *inflight;
	uint8_t *busy;
	struct mblk *blk;
	struct mwait *mw;          /* waiting for their block to be durable */
	struct piece *parked;      /* waiting for a busy extent */
	struct piece *drainers;    /* owners waiting for inflight[vx] == 0 */
	_Atomic uint64_t n_mapped; /* entries of map[] that are not 0 */
	bool snap;                 /* a snapshot: read-only, never grows */
	/* Freezing (raid_thin_snapshot): while frozen, new requests wait in
	 * held (owned by their submitters, restarted on their threads at the
	 * thaw); active counts the requests admitted and not yet delivered,
	 * idle is signalled when it falls to 0 while frozen. t->mu. */
	bool frozen;
	unsigned active;
	struct tio *held;
	pthread_cond_t idle;
};

struct tio;
typedef void (*piece_fn)(struct piece *pc, int rc);

struct piece {
	struct tio *tio;
	struct piece *next;        /* parked / drainers */
	uint64_t vx;
	uint64_t in;               /* bytes into the extent */
	uint64_t len;
	uint8_t *buf;              /* into io->buf; NULL: zeroes */
	uint32_t pext;             /* allocation: the pool extent taken */
	uint32_t cow_old;          /* copy on write: the shared entry left */
	const uint8_t *cdata;      /* copy on write: what it writes; NULL: zeroes */
	uint8_t *xbuf;             /* owned: an extent image, zeroes */
	bool mapped;               /* caw: what the read found */
	bool owner;                /* holds busy[vx] */
	piece_fn k;                /* continuation of an owner's step */
	piece_fn mk;               /* after its map entry is durable (map_set) */
	piece_fn dfn;              /* what defer_run runs, with drc */
	int drc;
	struct raid_io bio;
	struct mwait mw;
};

struct tio {
	struct raid_io *io;
	struct raid_ioctx *ctx;
	struct raid_thin *t;
	unsigned pending;
	int result;
	bool in_submit;
	uint8_t *cmp;              /* caw: what the range holds; owned */
	struct tio *hnext;         /* raid_thin.held */
	unsigned n;
	struct piece pc[];
};

struct mwrite {
	struct raid_io bio;
	struct raid_thin *t;
	struct raid_ioctx *ctx;    /* the one it was submitted on */
	unsigned b;
	uint64_t gen, seq;
	uint8_t copy;
	uint8_t *buf;              /* owned */
};

static void put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
static void put64(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }
static uint32_t get32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }
static uint64_t get64(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return v; }

static uint64_t ext_of(const struct raid_pool *p)
{
	uint64_t s = p->g.stripe_bytes;

	return (EXT_MIN + s - 1) / s * s;
}

static uint64_t nblk_of(uint64_t ext, uint64_t bytes)
{
	return ((bytes + ext - 1) / ext + MAP_EPB - 1) / MAP_EPB;
}

/* Room for the map of a volume grown to 4 times its size, or to 64 GiB,
 * whichever is more: a thin volume grows within its map region. */
#define MAP_ROOM_MIN (64ull << 30)

uint64_t raid_thin_map_bytes(const struct raid_pool *p, uint64_t bytes)
{
	uint64_t room = bytes > UINT64_MAX / 4 ? UINT64_MAX / 2 : bytes * 4;

	if (room < MAP_ROOM_MIN)
		room = MAP_ROOM_MIN;
	return nblk_of(p->thin->ext, room) * 2 * MAP_BLK;
}

uint64_t raid_thin_snap_map_bytes(const struct raid_pool *p, uint64_t bytes)
{
	return nblk_of(p->thin->ext, bytes) * 2 * MAP_BLK;
}

uint64_t raid_thin_max_bytes(const struct raid_pool *p, uint64_t region)
{
	return region / (2 * MAP_BLK) * MAP_EPB * p->thin->ext;
}

uint64_t raid_thin_ext(const struct raid_pool *p)
{
	return p->thin->ext;
}

/* Arrays sized for @bytes, zero beyond what @t has; t->mu held (or @t not
 * yet shared). */
static int arrays_grow(struct raid_thin *t, uint64_t bytes)
{
	uint64_t nv = (bytes + t->tp->ext - 1) / t->tp->ext, nb = nblk_of(t->tp->ext, bytes);
	uint32_t *map = calloc(nv, 4), *staged = calloc(nv, 4), *inflight = calloc(nv, 4);
	uint8_t *busy = calloc(nv, 1);
	struct mblk *blk = calloc(nb, sizeof(*blk));

	if (!map || !staged || !inflight || !busy || !blk) {
		free(map);
		free(staged);
		free(inflight);
		free(busy);
		free(blk);
		return -ENOMEM;
	}
	memcpy(map, t->map, t->n_vext * 4);
	memcpy(staged, t->staged, t->n_vext * 4);
	memcpy(inflight, t->inflight, t->n_vext * 4);
	memcpy(busy, t->busy, t->n_vext);
	memcpy(blk, t->blk, t->n_blk * sizeof(*blk));
	for (uint64_t b = t->n_blk; b < nb; b++)
		blk[b].seq = 1;       /* as raid_thin_grow wrote them */
	free(t->map);
	free(t->staged);
	free(t->inflight);
	free(t->busy);
	free(t->blk);
	t->map = map;
	t->staged = staged;
	t->inflight = inflight;
	t->busy = busy;
	t->blk = blk;
	t->n_vext = nv;
	t->n_blk = nb;
	return 0;
}

/* ---------------- map blocks ---------------- */

static void blk_encode(const struct raid_thin *t, unsigned b, uint64_t seq, const uint32_t *ent,
		       uint8_t *buf)
{
	uint64_t first = (uint64_t)b * MAP_EPB;

	memset(buf, 0, MAP_BLK);
	memcpy(buf, MAP_MAGIC, 8);
	put32(buf + 8, b);
	put64(buf + 16, seq);
	memcpy(buf + 24, t->uuid, 16);
	for (uint64_t i = first; i < first + MAP_EPB && i < t->n_vext; i++)
		put32(buf + MAP_HDR + (i - first) * 4, ent[i]);
	put32(buf + CRC_OFF, crc32_iscsi(buf, (int)CRC_OFF, 0xffffffffu));
}

static bool blk_valid(const struct raid_thin *t, unsigned b, const uint8_t *buf)
{
	return !memcmp(buf, MAP_MAGIC, 8) && get32(buf + 8) == b &&
	       !memcmp(buf + 24, t->uuid, 16) &&
	       get32(buf + CRC_OFF) == crc32_iscsi((unsigned char *)buf, (int)CRC_OFF, 0xffffffffu);
}

/* ---------------- synchronous I/O (opens only, never a reactor) ---------------- */

static void sync_cb(struct raid_io *io)
{
	*(bool *)io->arg = true;
}

static int sync_io(struct raid_thin_pool *tp, struct raid_ioctx *ctx, enum raid_op op,
		   uint64_t off, uint64_t len, uint8_t *buf)
{
	bool done = false;
	struct raid_io io = { .op = op, .flags = op == RAID_OP_WRITE ? RAID_IO_FUA : 0,
			      .off = off, .len = len, .buf = buf, .cb = sync_cb, .arg = &done };
	int rc = raid_md_vol_submit(&tp->bv, ctx, &io);

	if (rc)
		return rc;
	while (!done)
		raid_ioctx_wait(ctx, 1000);
	return io.result;
}

/* ---------------- the pool's extents ---------------- */

static void mark_range(struct raid_thin_pool *tp, uint64_t a, uint64_t b)
{
	for (uint64_t k = a / tp->ext; k < tp->n_ext && k * tp->ext < b; k++)
		if (tp->used[k] == X_FREE) {
			tp->used[k] = X_REGION;
			tp->n_region++;
		}
}

/* X_REGION marks from the volume table (and the region being created);
 * tp->mu held, meta_mu held by the caller. A region only ever covers free
 * extents or its own (raid_thin_reserve checked first). */
static void regions_locked(struct raid_thin_pool *tp)
{
	struct raid_pool *p = tp->p;

	for (uint64_t k = 0; k < tp->n_ext; k++)
		if (tp->used[k] == X_REGION)
			tp->used[k] = X_FREE;
	tp->n_region = 0;
	for (unsigned i = 0; i < p->sb.n_vols; i++)
		mark_range(tp, p->sb.vols[i].start, p->sb.vols[i].start + p->sb.vols[i].extent);
	if (tp->pend_b)
		mark_range(tp, tp->pend_a, tp->pend_b);
}

bool raid_thin_reserve(const struct raid_pool *p, uint64_t a, uint64_t b, uint64_t *next)
{
	struct raid_thin_pool *tp = p->thin;
	bool hit = false;

	if (!tp)
		return false;
	/* the check and the reservation under one hold of the allocator's
	 * lock: a thin write allocating meanwhile cannot land in [a, b) */
	pthread_mutex_lock(&tp->mu);
	for (uint64_t k = a / tp->ext; k < tp->n_ext && k * tp->ext < b; k++)
		if (tp->used[k] == X_DATA) {
			*next = (k + 1) * tp->ext;
			hit = true;
			break;
		}
	if (!hit) {
		tp->pend_a = a;
		tp->pend_b = b;
		regions_locked(tp);
	}
	pthread_mutex_unlock(&tp->mu);
	return hit;
}

void raid_thin_pending(struct raid_pool *p, uint64_t a, uint64_t b)
{
	struct raid_thin_pool *tp = p->thin;

	if (!tp)
		return;
	pthread_mutex_lock(&tp->mu);
	tp->pend_a = a;
	tp->pend_b = b;
	regions_locked(tp);
	pthread_mutex_unlock(&tp->mu);
}

static unsigned threshold_of(const struct raid_pool *p)
{
	return p->thin_threshold ? p->thin_threshold : 80;
}

/* tp->mu held: after n_data changed */
static void threshold_locked(struct raid_thin_pool *tp)
{
	uint64_t cap = tp->n_ext - tp->n_region;
	unsigned thr = threshold_of(tp->p);
	bool over = cap && tp->n_data * 100 >= cap * thr;

	if (over && !tp->over) {
		char detail[96];
		struct raid_event ev = { .kind = RAID_EV_THIN_THRESHOLD, .slot = -1,
					 .count = tp->n_data * tp->ext, .detail = detail };

		atomic_fetch_add(&tp->thr_events, 1);
		snprintf(detail, sizeof(detail), "%llu%% of %llu MiB, threshold %u%%",
			 (unsigned long long)(tp->n_data * 100 / cap),
			 (unsigned long long)(cap * tp->ext >> 20), thr);
		LOG_WARN(RAID_MOD, "pool %s: thin volumes take %llu MiB, %s: at or over the soft threshold",
			 tp->p->name, (unsigned long long)(tp->n_data * tp->ext >> 20), detail);
		raid_event_emit(tp->p, &ev);
	}
	tp->over = over;
}

static int ext_take(struct raid_thin_pool *tp, uint32_t *out)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&tp->mu);
	for (uint64_t i = 0; i < tp->n_ext; i++) {
		uint64_t k = (tp->hint + i) % tp->n_ext;

		if (tp->used[k] == X_FREE) {
			tp->used[k] = X_DATA;
			__atomic_store_n(&tp->refs[k], 1, __ATOMIC_RELAXED);
			tp->n_data++;
			tp->hint = k + 1;
			*out = (uint32_t)k;
			tp->full_logged = false;
			threshold_locked(tp);
			rc = 0;
			break;
		}
	}
	if (rc && !tp->full_logged) {
		struct raid_event ev = { .kind = RAID_EV_THIN_FULL, .slot = -1,
					 .count = tp->n_data * tp->ext };

		tp->full_logged = true;
		LOG_ERR(RAID_MOD, "pool %s: no free space for thin volumes (%llu MiB all taken): writes that need new space fail with SPACE ALLOCATION FAILED",
			tp->p->name, (unsigned long long)(tp->n_data * tp->ext >> 20));
		raid_event_emit(tp->p, &ev);
	}
	pthread_mutex_unlock(&tp->mu);
	return rc;
}

/* tp->mu held: one reference to X_DATA extent @k less; free at the last. */
static void ext_put_locked(struct raid_thin_pool *tp, uint32_t k)
{
	uint32_t r;

	if (tp->used[k] != X_DATA)
		return;
	r = __atomic_load_n(&tp->refs[k], __ATOMIC_RELAXED);
	if (r > 1) {
		__atomic_store_n(&tp->refs[k], r - 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&tp->refs[k], 0, __ATOMIC_RELAXED);
	tp->used[k] = X_FREE;
	tp->n_data--;
	threshold_locked(tp);
}

static void ext_give(struct raid_thin_pool *tp, uint32_t k)
{
	pthread_mutex_lock(&tp->mu);
	ext_put_locked(tp, k);
	pthread_mutex_unlock(&tp->mu);
}

/* Whether pool extent @k has another owner than the map entry asking. A
 * count read without tp->mu: it rises above 1 only while the volume that
 * asks is frozen with nothing in flight (raid_thin_snapshot), so a stale
 * answer can only be "shared" for an extent that just stopped being, and
 * costs a copy that was not needed, never a write into a shared one. */
static bool ext_shared(const struct raid_thin_pool *tp, uint32_t k)
{
	return __atomic_load_n(&tp->refs[k], __ATOMIC_RELAXED) > 1;
}

/* ---------------- loading ---------------- */

static void thin_free(struct raid_thin *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->idle);
	free(t->map);
	free(t->staged);
	free(t->inflight);
	free(t->busy);
	free(t->blk);
	free(t);
}

static struct raid_thin *thin_new(struct raid_thin_pool *tp, const struct raid_sb_vol *sv)
{
	struct raid_thin *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tp = tp;
	snprintf(t->name, sizeof(t->name), "%s", sv->name);
	memcpy(t->uuid, sv->uuid, 16);
	t->map_off = sv->start;
	t->n_vext = (sv->size + tp->ext - 1) / tp->ext;
	t->n_blk = nblk_of(tp->ext, sv->size);
	t->snap = !!(sv->flags & RAID_SBV_SNAP);
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->idle, NULL);
	t->map = calloc(t->n_vext, 4);
	t->staged = calloc(t->n_vext, 4);
	t->inflight = calloc(t->n_vext, 4);
	t->busy = calloc(t->n_vext, 1);
	t->blk = calloc(t->n_blk, sizeof(*t->blk));
	if (!t->map || !t->staged || !t->inflight || !t->busy || !t->blk) {
		thin_free(t);
		return NULL;
	}
	return t;
}

/* Whether table entries @a and @b are of one family (a volume, its
 * snapshots, their clones), the only ones that may share extents. */
static bool same_family(const struct raid_sb_vol *a, const struct raid_sb_vol *b)
{
	return a->family && a->family == b->family;
}

/* Reads @t's map from the members into t->map (and staged, blk): the valid
 * copy with the higher sequence of every block. -EUCLEAN (logged) for a
 * block with no valid copy or an entry past the volume's end. */
static int map_read(struct raid_thin_pool *tp, struct raid_ioctx *ctx, struct raid_thin *t)
{
	const char *pn = tp->p->name;
	uint64_t bytes = t->n_blk * 2 * MAP_BLK, done = 0;
	uint8_t *buf = raid_alloc_nz(bytes < (4u << 20) ? bytes : (4u << 20));
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (done < bytes) {
		uint64_t len = bytes - done < (4u << 20) ? bytes - done : (4u << 20);

		rc = sync_io(tp, ctx, RAID_OP_READ, t->map_off + done, len, buf);
		if (rc) {
			LOG_ERR(RAID_MOD, "pool %s: thin volume %s: its extent map could not be read (%s)",
				pn, t->name, strerror(-rc));
			goto out_free;
		}
		for (uint64_t o = 0; o < len; o += 2 * MAP_BLK) {
			unsigned b = (unsigned)((done + o) / (2 * MAP_BLK));
			const uint8_t *c[2] = { buf + o, buf + o + MAP_BLK };
			int pick = -1;

			for (int i = 0; i < 2; i++)
				if (blk_valid(t, b, c[i]) &&
				    (pick < 0 || get64(c[i] + 16) > get64(c[pick] + 16)))
					pick = i;
			if (pick < 0) {
				LOG_ERR(RAID_MOD, "pool %s: thin volume %s: extent map block %u has no valid copy: the volume is not served",
					pn, t->name, b);
				rc = -EUCLEAN;
				goto out_free;
			}
			t->blk[b].seq = get64(c[pick] + 16);
			t->blk[b].copy = (uint8_t)pick;
			for (unsigned i = 0; i < MAP_EPB; i++) {
				uint64_t vx = (uint64_t)b * MAP_EPB + i;
				uint32_t e = get32(c[pick] + MAP_HDR + i * 4);

				if (vx >= t->n_vext) {
					if (e) {
						LOG_ERR(RAID_MOD, "pool %s: thin volume %s: extent map block %u names an extent past the volume's end",
							pn, t->name, b);
						rc = -EUCLEAN;
						goto out_free;
					}
					continue;
				}
				t->map[vx] = t->staged[vx] = e;
			}
		}
		done += len;
	}
out_free:
	free(buf);
	return rc;
}

/* What a pool's maps say of its extents, counted the way loading counts
 * them: refs[k] map entries name pool extent k, last[k] is 1 + the entry
 * that named it last (0: none yet). */
struct count {
	uint32_t *refs;
	uint8_t *last;
	uint8_t *used;           /* X_REGION marks; X_DATA set as counted */
	uint64_t n_data;
};

/* Counts @t's entries (table entry @me of @vols) into @c; a contradiction
 * (an extent past the pool, in a table region, named twice by @t, or by
 * another family) is -EUCLEAN, logged, with a line in @why when not NULL. */
static int map_count(struct raid_thin_pool *tp, struct count *c, const struct raid_thin *t,
		     unsigned me, const struct raid_sb_vol *vols, char *why, size_t wl)
{
	for (uint64_t vx = 0; vx < t->n_vext; vx++) {
		uint32_t e = t->map[vx];

		if (!e)
			continue;
		if (e - 1 >= tp->n_ext || c->used[e - 1] == X_REGION || c->last[e - 1] == me + 1 ||
		    (c->last[e - 1] && !same_family(&vols[c->last[e - 1] - 1], &vols[me]))) {
			char line[320];

			snprintf(line, sizeof(line), "%s: extent map entry %llu names pool extent %u, which is %s%s",
				 t->name, (unsigned long long)vx, e - 1,
				 e - 1 >= tp->n_ext ? "past the pool's end" :
				 c->used[e - 1] == X_REGION ? "a volume table region" :
				 c->last[e - 1] == me + 1 ? "named twice by this volume" :
				 "named by a volume of another family (not its snapshot or clone): ",
				 e - 1 < tp->n_ext && c->used[e - 1] != X_REGION && c->last[e - 1] &&
				 c->last[e - 1] != me + 1 ? vols[c->last[e - 1] - 1].name : "");
			LOG_ERR(RAID_MOD, "pool %s: thin volume %s", tp->p->name, line);
			if (why)
				snprintf(why, wl, "%s", line);
			return -EUCLEAN;
		}
		if (c->used[e - 1] == X_FREE) {
			c->used[e - 1] = X_DATA;
			c->n_data++;
		}
		c->last[e - 1] = (uint8_t)(me + 1);
		__atomic_fetch_add(&c->refs[e - 1], 1, __ATOMIC_RELAXED);
	}
	return 0;
}

int raid_thin_pool_load(struct raid_pool *p)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_sb_vol vols[RAID_MAX_VOLS];
	struct raid_ioctx *ctx = NULL;
	struct count cnt;
	uint8_t *last;
	unsigned n;
	int rc = 0;

	if (!tp) {
		tp = calloc(1, sizeof(*tp));
		if (!tp)
			return -ENOMEM;
		pthread_mutex_init(&tp->open_mu, NULL);
		pthread_mutex_init(&tp->mu, NULL);
		tp->p = p;
		/* the extent size is the pool's for good once a thin volume
		 * recorded it (a later geometry may have other stripes) */
		{
			uint64_t rec = 0;
			const char *odd = NULL;

			pthread_mutex_lock(&p->meta_mu);
			for (unsigned i = 0; i < p->sb.n_vols; i++) {
				const struct raid_sb_vol *sv = &p->sb.vols[i];

				if (!(sv->flags & RAID_SBV_THIN))
					continue;
				if (rec && sv->thin_ext != rec)
					odd = sv->name;
				if (!rec)
					rec = sv->thin_ext;
			}
			pthread_mutex_unlock(&p->meta_mu);
			if (odd) {
				LOG_ERR(RAID_MOD, "pool %s: thin volume %s records another extent size than the pool's other thin volumes (%llu bytes): not served",
					p->name, odd, (unsigned long long)rec);
				free(tp);
				return -EUCLEAN;
			}
			tp->ext = rec ? rec : ext_of(p);
		}
		tp->n_ext = p->g.usable / tp->ext;
		tp->used = calloc(tp->n_ext ? tp->n_ext : 1, 1);
		tp->refs = calloc(tp->n_ext ? tp->n_ext : 1, sizeof(*tp->refs));
		if (!tp->used || !tp->refs) {
			free(tp->used);
			free(tp->refs);
			free(tp);
			return -ENOMEM;
		}
		tp->bv.pool = p;
		snprintf(tp->bv.name, sizeof(tp->bv.name), "%s", "(thin space)");
		tp->bv.start = 0;
		atomic_init(&tp->bv.size, tp->n_ext * tp->ext);
		tp->bv.extent = tp->n_ext * tp->ext;
		p->thin = tp;
	}
	if (tp->loaded)
		return 0;
	pthread_mutex_lock(&p->meta_mu);
	n = p->sb.n_vols;
	memcpy(vols, p->sb.vols, sizeof(vols[0]) * n);
	pthread_mutex_lock(&tp->mu);
	regions_locked(tp);
	pthread_mutex_unlock(&tp->mu);
	pthread_mutex_unlock(&p->meta_mu);
	last = calloc(tp->n_ext ? tp->n_ext : 1, 1);
	if (!last)
		return -ENOMEM;
	cnt.refs = tp->refs;
	cnt.last = last;
	cnt.used = tp->used;
	cnt.n_data = 0;
	for (unsigned i = 0; i < n; i++) {
		struct raid_thin *t;

		if (!(vols[i].flags & RAID_SBV_THIN))
			continue;
		if (!ctx && (rc = raid_ioctx_create(&ctx)))
			goto out_fail;
		t = thin_new(tp, &vols[i]);
		if (!t) {
			rc = -ENOMEM;
			goto out_fail;
		}
		rc = map_read(tp, ctx, t);
		if (!rc)
			rc = map_count(tp, &cnt, t, i, vols, NULL, 0);
		if (!rc)
			for (uint64_t vx = 0; vx < t->n_vext; vx++)
				if (t->map[vx])
					t->n_mapped++;
		if (rc) {
			thin_free(t);
			goto out_fail;
		}
		tp->loaded_t[i] = t;
	}
	pthread_mutex_lock(&tp->mu);
	tp->n_data += cnt.n_data;
	threshold_locked(tp);
	pthread_mutex_unlock(&tp->mu);
	tp->loaded = true;
	free(last);
	if (ctx)
		raid_ioctx_destroy(ctx);
	return 0;
out_fail:
	/* a later open tries again from scratch */
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++) {
		thin_free(tp->loaded_t[i]);
		tp->loaded_t[i] = NULL;
	}
	memset(tp->used, 0, tp->n_ext);
	memset(tp->refs, 0, tp->n_ext * sizeof(*tp->refs));
	tp->n_data = 0;
	free(last);
	if (ctx)
		raid_ioctx_destroy(ctx);
	return rc;
}

void raid_thin_lock(struct raid_pool *p)
{
	pthread_mutex_lock(&p->thin->open_mu);
}

void raid_thin_unlock(struct raid_pool *p)
{
	pthread_mutex_unlock(&p->thin->open_mu);
}

/* Write every block of @t's map (its staged entries) as copy 0, sequence
 * 1, copy 1 left no map block: what a new map (of a new volume or a
 * snapshot) starts from. Synchronous; never on a reactor. */
static int map_write_new(struct raid_thin_pool *tp, struct raid_thin *t)
{
	struct raid_ioctx *ctx;
	uint8_t *buf = raid_alloc_nz(t->n_blk * 2 * MAP_BLK);
	int rc;

	if (!buf)
		return -ENOMEM;
	for (unsigned b = 0; b < t->n_blk; b++) {
		uint8_t *c0 = buf + (uint64_t)b * 2 * MAP_BLK;

		/* copy 1 stays no map block (whatever the members held
		 * there cannot have this volume's new UUID) */
		blk_encode(t, b, 1, t->staged, c0);
		memset(c0 + MAP_BLK, 0, MAP_BLK);
		t->blk[b].seq = 1;
		t->blk[b].copy = 0;
	}
	rc = raid_ioctx_create(&ctx);
	if (!rc) {
		rc = sync_io(tp, ctx, RAID_OP_WRITE, t->map_off, t->n_blk * 2 * MAP_BLK, buf);
		raid_ioctx_destroy(ctx);
	}
	free(buf);
	return rc;
}

/* Keep not-yet-open @t by its UUID until raid_thin_attach. */
static int keep_loaded(struct raid_thin_pool *tp, struct raid_thin *t)
{
	int rc = -ENOSPC;

	/* tp->mu: raid_thin_space looks here without open_mu */
	pthread_mutex_lock(&tp->mu);
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++)
		if (!tp->loaded_t[i]) {
			tp->loaded_t[i] = t;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&tp->mu);
	return rc;
}

int raid_thin_map_init(struct raid_pool *p, const struct raid_sb_vol *sv)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_thin *t = thin_new(tp, sv);
	int rc;

	if (!t)
		return -ENOMEM;
	rc = map_write_new(tp, t);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: thin volume %s: its extent map could not be written (%s)",
			p->name, sv->name, strerror(-rc));
		thin_free(t);
		return rc;
	}
	rc = keep_loaded(tp, t);
	if (rc)
		thin_free(t);
	return rc;
}

/* The thin volume whose UUID is @uuid, open or only loaded; open_mu held. */
static struct raid_thin *thin_find(struct raid_pool *p, const uint8_t uuid[16])
{
	struct raid_thin_pool *tp = p->thin;

	for (unsigned i = 0; i < RAID_MAX_VOLS; i++) {
		if (tp->loaded_t[i] && !memcmp(tp->loaded_t[i]->uuid, uuid, 16))
			return tp->loaded_t[i];
		if (p->vols[i] && p->vols[i]->thin && !memcmp(p->vols[i]->thin->uuid, uuid, 16))
			return p->vols[i]->thin;
	}
	return NULL;
}

/* Every entry of @t's map one reference less (its extents free at the last). */
static void refs_drop(struct raid_thin_pool *tp, const struct raid_thin *t)
{
	pthread_mutex_lock(&tp->mu);
	for (uint64_t vx = 0; vx < t->n_vext; vx++)
		if (t->map[vx])
			ext_put_locked(tp, t->map[vx] - 1);
	pthread_mutex_unlock(&tp->mu);
}

static void held_go(void *arg);

/* Let frozen @t's requests go again: those held restart on their threads. */
static void thaw(struct raid_thin *t)
{
	struct tio *list, *rev = NULL;

	pthread_mutex_lock(&t->mu);
	t->frozen = false;
	list = t->held;
	t->held = NULL;
	pthread_mutex_unlock(&t->mu);
	while (list) {
		/* held newest first: restart them in the order they came */
		struct tio *ti = list;

		list = ti->hnext;
		ti->hnext = rev;
		rev = ti;
	}
	while (rev) {
		struct tio *ti = rev;

		rev = ti->hnext;
		if (raid_defer(ti->ctx, held_go, ti)) {
			LOG_ERR(RAID_MOD, "out of memory restarting a thin-volume request");
			held_go(ti);
		}
	}
}

#define FREEZE_WAIT_MS 10000

int raid_thin_snapshot(struct raid_pool *p, const uint8_t origin[16], const struct raid_sb_vol *nv,
		       uint64_t *frozen_us)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_thin *o = thin_find(p, origin), *s;
	struct timespec t0, t1, dl;
	int rc = 0;

	if (!o)
		return -ENOENT;
	s = thin_new(tp, nv);
	if (!s)
		return -ENOMEM;
	if (s->n_vext > o->n_vext) {
		thin_free(s);
		return -EINVAL;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += FREEZE_WAIT_MS / 1000;
	/* Freeze: no request is admitted, those admitted finish. Then the
	 * map holds every write acknowledged before, and no owner is in the
	 * middle of changing it (busy extents belong to admitted requests). */
	pthread_mutex_lock(&o->mu);
	o->frozen = true;
	while (o->active && rc == 0)
		rc = -pthread_cond_timedwait(&o->idle, &o->mu, &dl);
	if (rc == 0) {
		memcpy(s->map, o->map, s->n_vext * 4);
		memcpy(s->staged, o->map, s->n_vext * 4);
		for (uint64_t vx = 0; vx < s->n_vext; vx++)
			if (s->map[vx])
				s->n_mapped++;
	}
	pthread_mutex_unlock(&o->mu);
	if (rc == 0) {
		/* while still frozen: the origin's writes see them shared
		 * from the first admitted after the thaw */
		pthread_mutex_lock(&tp->mu);
		for (uint64_t vx = 0; vx < s->n_vext; vx++)
			if (s->map[vx])
				__atomic_fetch_add(&tp->refs[s->map[vx] - 1], 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&tp->mu);
	}
	thaw(o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (frozen_us)
		*frozen_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
			     (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: requests in flight did not finish within %d ms: no snapshot taken",
			p->name, o->name, FREEZE_WAIT_MS);
		thin_free(s);
		return -EBUSY;
	}
	/* The references are counted; the snapshot exists once the table
	 * names it (the caller). Writes to the origin meanwhile copy. */
	raid_crash_point("map-copied");
	rc = map_write_new(tp, s);
	if (!rc)
		raid_crash_point("map-written");
	if (!rc)
		rc = keep_loaded(tp, s);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: snapshot %s: its extent map could not be written (%s)",
			p->name, nv->name, strerror(-rc));
		refs_drop(tp, s);
		thin_free(s);
		return rc;
	}
	return 0;
}

/* Freeze @t: no request admitted from now, those admitted finished. 0, or
 * -EBUSY (thawed again) when they did not finish in time. */
static int freeze(struct raid_thin *t)
{
	struct timespec dl;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += FREEZE_WAIT_MS / 1000;
	pthread_mutex_lock(&t->mu);
	t->frozen = true;
	while (t->active && rc == 0)
		rc = -pthread_cond_timedwait(&t->idle, &t->mu, &dl);
	pthread_mutex_unlock(&t->mu);
	if (rc) {
		thaw(t);
		return -EBUSY;
	}
	return 0;
}

int raid_thin_rollback_prepare(struct raid_pool *p, const uint8_t vol[16], const uint8_t snap[16],
			       const struct raid_sb_vol *nv, struct raid_thin **out)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_thin *t = thin_find(p, vol), *s = thin_find(p, snap), *r;
	int rc;

	if (!t || !s)
		return -ENOENT;
	r = thin_new(tp, nv);
	if (!r)
		return -ENOMEM;
	if (r->n_vext != t->n_vext || s->n_vext > r->n_vext) {
		thin_free(r);
		return -EINVAL;
	}
	/* the volume stays frozen until raid_thin_rollback_finish: no write
	 * may land in the map about to be dropped */
	if (t->v && (rc = freeze(t))) {
		thin_free(r);
		return rc;
	}
	/* a snapshot's map never changes: no freeze needed to read it */
	pthread_mutex_lock(&s->mu);
	memcpy(r->map, s->map, s->n_vext * 4);
	pthread_mutex_unlock(&s->mu);
	memcpy(r->staged, r->map, r->n_vext * 4);
	pthread_mutex_lock(&tp->mu);
	for (uint64_t vx = 0; vx < r->n_vext; vx++)
		if (r->map[vx]) {
			r->n_mapped++;
			__atomic_fetch_add(&tp->refs[r->map[vx] - 1], 1, __ATOMIC_RELAXED);
		}
	pthread_mutex_unlock(&tp->mu);
	rc = map_write_new(tp, r);
	if (!rc)
		raid_crash_point("rollback-map");
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: rollback of %s: the new extent map could not be written (%s)",
			p->name, t->name, strerror(-rc));
		refs_drop(tp, r);
		thin_free(r);
		if (t->v)
			thaw(t);
		return rc;
	}
	*out = r;
	return 0;
}

void raid_thin_rollback_finish(struct raid_pool *p, const uint8_t vol[16], struct raid_thin *r,
			       bool commit)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_thin *t = thin_find(p, vol);

	if (!commit) {
		refs_drop(tp, r);
		thin_free(r);
		if (t && t->v)
			thaw(t);
		return;
	}
	/* the table names r's map now: t takes r's arrays, its own go with
	 * their references (t stays the struct the open volume points at) */
	pthread_mutex_lock(&t->mu);
	{
		uint32_t *m = t->map, *st = t->staged;
		struct mblk *b = t->blk;
		uint64_t off = t->map_off, nb = t->n_blk;

		t->map = r->map;
		t->staged = r->staged;
		t->blk = r->blk;
		t->map_off = r->map_off;
		t->n_blk = r->n_blk;
		atomic_store(&t->n_mapped, atomic_load(&r->n_mapped));
		r->map = m;
		r->staged = st;
		r->blk = b;
		r->map_off = off;
		r->n_blk = nb;
	}
	pthread_mutex_unlock(&t->mu);
	refs_drop(tp, r);
	thin_free(r);
	if (t->v)
		thaw(t);
}

/* Write block @b of not-open @t's map (its staged entries) into the copy
 * that does not hold its newest state, synchronously. */
static int blk_write_sync(struct raid_thin_pool *tp, struct raid_ioctx *ctx, struct raid_thin *t,
			  unsigned b, uint8_t *buf)
{
	uint64_t seq = t->blk[b].seq + 1;
	uint8_t copy = t->blk[b].copy ^ 1;
	int rc;

	blk_encode(t, b, seq, t->staged, buf);
	rc = sync_io(tp, ctx, RAID_OP_WRITE, t->map_off + ((uint64_t)b * 2 + copy) * MAP_BLK,
		     MAP_BLK, buf);
	if (!rc) {
		t->blk[b].seq = seq;
		t->blk[b].copy = copy;
	}
	return rc;
}

int raid_thin_inflate(struct raid_pool *p, const uint8_t uuid[16], uint64_t *copied)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_thin *t = thin_find(p, uuid);
	struct raid_ioctx *ctx = NULL;
	uint8_t *xbuf = NULL, *mbuf = NULL;
	int rc;

	*copied = 0;
	if (!t)
		return -ENOENT;
	if (t->v)
		return -EBUSY;
	xbuf = raid_alloc_nz(tp->ext);
	mbuf = raid_alloc_nz(MAP_BLK);
	rc = xbuf && mbuf ? raid_ioctx_create(&ctx) : -ENOMEM;
	/* Each shared extent as a copy on write does it: the copy durable,
	 * then the map block naming it, then the old reference dropped. A
	 * crash between two leaves a volume partly inflated, every entry
	 * whole: running it again finishes. Not open: nothing else writes. */
	for (uint64_t vx = 0; !rc && vx < t->n_vext; vx++) {
		uint32_t e = t->map[vx], k;

		if (!e || !ext_shared(tp, e - 1))
			continue;
		rc = ext_take(tp, &k);
		if (rc)
			break;
		rc = sync_io(tp, ctx, RAID_OP_READ, (uint64_t)(e - 1) * tp->ext, tp->ext, xbuf);
		if (!rc)
			rc = sync_io(tp, ctx, RAID_OP_WRITE, (uint64_t)k * tp->ext, tp->ext, xbuf);
		if (rc) {
			ext_give(tp, k);
			break;
		}
		pthread_mutex_lock(&t->mu);
		t->staged[vx] = k + 1;
		pthread_mutex_unlock(&t->mu);
		rc = blk_write_sync(tp, ctx, t, (unsigned)(vx / MAP_EPB), mbuf);
		pthread_mutex_lock(&t->mu);
		if (rc)
			t->staged[vx] = e;
		else
			t->map[vx] = k + 1;
		pthread_mutex_unlock(&t->mu);
		if (rc) {
			/* a copy of the block may name it: taken until a restart */
			break;
		}
		ext_give(tp, e - 1);
		(*copied)++;
		raid_crash_point("inflate-copy");
	}
	if (ctx)
		raid_ioctx_destroy(ctx);
	free(xbuf);
	free(mbuf);
	return rc;
}

static void problem(struct raid_maps_check *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct raid_maps_check *out, const char *fmt, ...)
{
	va_list ap;

	if (out->n_problems < sizeof(out->problems) / sizeof(out->problems[0])) {
		va_start(ap, fmt);
		vsnprintf(out->problems[out->n_problems], sizeof(out->problems[0]), fmt, ap);
		va_end(ap);
	}
	out->n_problems++;
}

int raid_thin_check_pool(struct raid_pool *p, struct raid_maps_check *out)
{
	struct raid_thin_pool *tp = p->thin;
	struct raid_sb_vol *vols = calloc(RAID_MAX_VOLS, sizeof(*vols));
	struct count c = { 0 };
	struct raid_ioctx *ctx = NULL;
	uint64_t leaked = 0, first_leak = 0;
	unsigned n;
	int rc;

	c.refs = calloc(tp->n_ext ? tp->n_ext : 1, sizeof(*c.refs));
	c.last = calloc(tp->n_ext ? tp->n_ext : 1, 1);
	c.used = calloc(tp->n_ext ? tp->n_ext : 1, 1);
	rc = vols && c.refs && c.last && c.used ? raid_ioctx_create(&ctx) : -ENOMEM;
	if (rc)
		goto out_free;
	pthread_mutex_lock(&p->meta_mu);
	n = p->sb.n_vols;
	memcpy(vols, p->sb.vols, sizeof(vols[0]) * n);
	pthread_mutex_unlock(&p->meta_mu);
	for (unsigned i = 0; i < n; i++)
		for (uint64_t k = vols[i].start / tp->ext;
		     k < tp->n_ext && k * tp->ext < vols[i].start + vols[i].extent; k++)
			c.used[k] = X_REGION;
	for (unsigned i = 0; i < n; i++) {
		struct raid_thin *t, *live;
		char line[320];

		if (!(vols[i].flags & RAID_SBV_THIN))
			continue;
		t = thin_new(tp, &vols[i]);
		if (!t) {
			rc = -ENOMEM;
			goto out_free;
		}
		out->maps++;
		if (map_read(tp, ctx, t)) {
			problem(out, "%s: its extent map cannot be read whole (the log says which block)",
				vols[i].name);
			thin_free(t);
			continue;
		}
		if (map_count(tp, &c, t, i, vols, line, sizeof(line)))
			problem(out, "%s", line);
		/* what the daemon serves must be what is on disk */
		pthread_mutex_lock(&tp->mu);
		live = thin_find(p, vols[i].uuid);
		if (live) {
			pthread_mutex_lock(&live->mu);
			for (uint64_t vx = 0; vx < t->n_vext && vx < live->n_vext; vx++)
				if (live->map[vx] != t->map[vx]) {
					problem(out, "%s: entry %llu names pool extent %lld in memory, %lld on disk",
						vols[i].name, (unsigned long long)vx,
						(long long)live->map[vx] - 1, (long long)t->map[vx] - 1);
					break;
				}
			pthread_mutex_unlock(&live->mu);
		}
		pthread_mutex_unlock(&tp->mu);
		thin_free(t);
	}
	pthread_mutex_lock(&tp->mu);
	for (uint64_t k = 0; k < tp->n_ext; k++) {
		uint32_t live = __atomic_load_n(&tp->refs[k], __ATOMIC_RELAXED);

		if (c.refs[k]) {
			out->extents_used++;
			if (c.refs[k] > 1)
				out->extents_shared++;
		}
		if (tp->used[k] == X_DATA && !c.refs[k]) {
			if (!leaked++)
				first_leak = k;
		} else if (c.refs[k] && tp->used[k] != X_DATA) {
			problem(out, "pool extent %llu: named by %u map entries on disk, free in memory",
				(unsigned long long)k, c.refs[k]);
		} else if (c.refs[k] != live) {
			problem(out, "pool extent %llu: named by %u map entries on disk, %u counted in memory",
				(unsigned long long)k, c.refs[k], live);
		}
	}
	pthread_mutex_unlock(&tp->mu);
	if (leaked)
		problem(out, "%llu pool extents in use that no map names (leaked), the first %llu",
			(unsigned long long)leaked, (unsigned long long)first_leak);
	rc = 0;
out_free:
	if (ctx)
		raid_ioctx_destroy(ctx);
	free(vols);
	free(c.refs);
	free(c.last);
	free(c.used);
	return rc;
}

int raid_thin_forget(struct raid_pool *p, const uint8_t uuid[16])
{
	struct raid_thin_pool *tp = p->thin;

	for (unsigned i = 0; i < RAID_MAX_VOLS; i++) {
		struct raid_thin *t = tp->loaded_t[i];

		if (t && !memcmp(t->uuid, uuid, 16)) {
			pthread_mutex_lock(&tp->mu);
			tp->loaded_t[i] = NULL;
			pthread_mutex_unlock(&tp->mu);
			refs_drop(tp, t);
			thin_free(t);
			return 0;
		}
	}
	return -ENOENT;
}

void raid_thin_space(struct raid_pool *p, const uint8_t uuid[16], uint64_t *alloc,
		     uint64_t *shared)
{
	struct raid_thin *t;
	uint64_t a = 0, sh = 0;

	*alloc = *shared = 0;
	if (!p->thin)
		return;
	/* tp->mu keeps a loaded-only @t from being forgotten meanwhile; the
	 * caller holds open_mu or meta_mu, either keeps p->vols[] still */
	pthread_mutex_lock(&p->thin->mu);
	t = thin_find(p, uuid);
	if (t) {
		pthread_mutex_lock(&t->mu);
		for (uint64_t vx = 0; vx < t->n_vext; vx++)
			if (t->map[vx]) {
				a++;
				if (ext_shared(t->tp, t->map[vx] - 1))
					sh++;
			}
		pthread_mutex_unlock(&t->mu);
		a *= t->tp->ext;
		sh *= t->tp->ext;
	}
	pthread_mutex_unlock(&p->thin->mu);
	*alloc = a;
	*shared = sh;
}

int raid_thin_attach(struct raid_pool *p, unsigned slot, struct raid_vol *v)
{
	struct raid_thin_pool *tp = p->thin;

	(void)slot;
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++) {
		struct raid_thin *t = tp->loaded_t[i];

		if (t && !memcmp(t->uuid, v->uuid, 16)) {
			pthread_mutex_lock(&tp->mu);
			tp->loaded_t[i] = NULL;
			pthread_mutex_unlock(&tp->mu);
			t->v = v;
			v->thin = t;
			return 0;
		}
	}
	return -ENOENT;
}

int raid_thin_detach(struct raid_pool *p, struct raid_vol *v)
{
	struct raid_thin *t = v->thin;
	int rc;

	RTGT_CHECK(raid_thin_check(v));
	RTGT_CHECK(!t->active && !t->held && !t->parked && !t->mw);
	t->v = NULL;
	rc = keep_loaded(p->thin, t);
	if (rc) {
		t->v = v;
		return rc;
	}
	v->thin = NULL;
	return 0;
}

void raid_thin_vol_free(struct raid_vol *v)
{
	if (v->thin)
		RTGT_CHECK(raid_thin_check(v));
	thin_free(v->thin);
	v->thin = NULL;
}

void raid_thin_pool_free(struct raid_pool *p)
{
	struct raid_thin_pool *tp = p->thin;

	if (!tp)
		return;
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++)
		thin_free(tp->loaded_t[i]);
	free(tp->used);
	free(tp->refs);
	pthread_mutex_destroy(&tp->mu);
	pthread_mutex_destroy(&tp->open_mu);
	free(tp);
	p->thin = NULL;
}

/* ---------------- requests ---------------- */

static void deliver(void *arg)
{
	struct tio *ti = arg;
	struct raid_io *io = ti->io;
	struct raid_ioctx *ctx = ti->ctx;
	struct raid_thin *t = ti->t;

	pthread_mutex_lock(&t->mu);
	if (--t->active == 0 && t->frozen)
		pthread_cond_broadcast(&t->idle);
	pthread_mutex_unlock(&t->mu);
	io->result = ti->result;
	for (unsigned i = 0; i < ti->n; i++)
		free(ti->pc[i].xbuf);
	free(ti->cmp);
	free(ti);
	raid_ioctx_io_done(ctx);
	io->cb(io);
}

static void tio_finish(struct tio *ti)
{
	if (ti->in_submit) {
		/* callbacks never run inside raid_vol_submit() */
		if (raid_defer(ti->ctx, deliver, ti) == 0)
			return;
		LOG_ERR(RAID_MOD, "out of memory deferring a completion");
	}
	deliver(ti);
}

static void piece_done(struct piece *pc, int rc)
{
	struct tio *ti = pc->tio;

	if (rc && !ti->result)
		ti->result = rc;
	if (--ti->pending == 0)
		tio_finish(ti);
}

static void run_dfn(void *arg)
{
	struct piece *pc = arg;
	struct raid_ioctx *ctx = pc->tio->ctx;   /* the tio may be gone after */

	pc->dfn(pc, pc->drc);
	raid_ioctx_kick(ctx);
}

/* @fn(pc, rc) on pc's own thread, whichever thread calls this. */
static void defer_run(struct piece *pc, piece_fn fn, int rc)
{
	pc->dfn = fn;
	pc->drc = rc;
	if (raid_defer(pc->tio->ctx, run_dfn, pc)) {
		/* no memory for the hand-over: run it here; what it touches
		 * is the tio (whose thread is not inside it: it waits for
		 * this) and the volume's state under t->mu */
		LOG_ERR(RAID_MOD, "out of memory deferring a thin-volume step");
		fn(pc, rc);
	}
}

static void piece_start(struct piece *pc);
static void caw_start(struct tio *ti);

static void rerun(void *arg)
{
	struct piece *pc = arg;
	struct raid_ioctx *ctx = pc->tio->ctx;   /* the tio may be gone after */

	if (pc->tio->io->op == RAID_OP_COMPARE_WRITE)
		caw_start(pc->tio);
	else
		piece_start(pc);
	raid_ioctx_kick(ctx);
}

/* Let extent @vx go: everything parked is tried again on its thread (what
 * still finds its extent busy parks again). */
static void release(struct raid_thin *t, struct piece *owner)
{
	struct piece *list;

	pthread_mutex_lock(&t->mu);
	t->busy[owner->vx] = 0;
	owner->owner = false;
	list = t->parked;
	t->parked = NULL;
	pthread_mutex_unlock(&t->mu);
	while (list) {
		struct piece *pc = list;

		list = pc->next;
		if (raid_defer(pc->tio->ctx, rerun, pc)) {
			LOG_ERR(RAID_MOD, "out of memory rerunning a thin-volume request");
			rerun(pc);
		}
	}
}

/* t->mu held, busy[vx] clear: @pc owns its extent; @k runs (through
 * defer_run, or by the caller when *@now) once nothing is in flight on it. */
static void own_locked(struct raid_thin *t, struct piece *pc, piece_fn k, bool *now)
{
	t->busy[pc->vx] = 1;
	pc->owner = true;
	pc->k = k;
	*now = t->inflight[pc->vx] == 0;
	if (!*now) {
		pc->next = t->drainers;
		t->drainers = pc;
	}
}

static void fast_done(struct raid_io *bio)
{
	struct piece *pc = bio->arg;
	struct raid_thin *t = pc->tio->t;
	struct piece *drained = NULL;

	pthread_mutex_lock(&t->mu);
	if (--t->inflight[pc->vx] == 0) {
		for (struct piece **pp = &t->drainers; *pp; pp = &(*pp)->next)
			if ((*pp)->vx == pc->vx) {
				drained = *pp;
				*pp = drained->next;
				break;
			}
	}
	pthread_mutex_unlock(&t->mu);
	if (drained)
		defer_run(drained, drained->k, 0);
	piece_done(pc, bio->result);
}

static void sub_submit(struct piece *pc, enum raid_op op, unsigned flags, uint64_t off,
		       uint64_t len, uint8_t *buf, void (*cb)(struct raid_io *))
{
	struct raid_io *b = &pc->bio;
	int rc;

	memset(b, 0, sizeof(*b));
	b->op = op;
	b->flags = flags;
	b->off = off;
	b->len = len;
	b->buf = buf;
	b->cb = cb;
	b->arg = pc;
	rc = raid_md_vol_submit(&pc->tio->t->tp->bv, pc->tio->ctx, b);
	if (rc) {
		/* not for a range inside the pool; never seen */
		LOG_ERR(RAID_MOD, "thin volume: pool request refused (%s)", strerror(-rc));
		b->result = rc;
		cb(b);
	}
}

static uint64_t pool_off(const struct raid_thin *t, uint32_t e, uint64_t in)
{
	return (uint64_t)(e - 1) * t->tp->ext + in;
}

/* ---- map block writes ---- */

static void mwrite_submit(struct mwrite *w);

/* t->mu held, !blk[b].writing: the next write of block @b, with every
 * change staged so far; NULL without memory */
static struct mwrite *mwrite_prep_locked(struct raid_thin *t, unsigned b, struct raid_ioctx *ctx)
{
	struct mwrite *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->buf = raid_alloc_nz(MAP_BLK);
	if (!w->buf) {
		free(w);
		return NULL;
	}
	w->t = t;
	w->ctx = ctx;
	w->b = b;
	w->gen = t->blk[b].gen;
	w->seq = t->blk[b].seq + 1;
	w->copy = t->blk[b].copy ^ 1;
	blk_encode(t, b, w->seq, t->staged, w->buf);
	t->blk[b].writing = true;
	return w;
}

/* t->mu held: the waiters of block @b up to @gen, off the list; on
 * failure their entries go back to what they were */
static struct mwait *mw_take_locked(struct raid_thin *t, unsigned b, uint64_t gen, int rc)
{
	struct mwait *fire = NULL, **pp;

	for (pp = &t->mw; *pp;) {
		struct mwait *m = *pp;

		if (m->blk == b && m->gen <= gen) {
			*pp = m->next;
			m->result = rc;
			if (rc)
				t->staged[m->vx] = m->old;
			m->next = fire;
			fire = m;
		} else {
			pp = &m->next;
		}
	}
	return fire;
}

static void mw_fire(struct mwait *fire)
{
	while (fire) {
		struct mwait *m = fire;

		fire = m->next;
		defer_run(m->pc, m->pc->mk, m->result);
	}
}

static void mwrite_done(struct raid_io *bio)
{
	struct mwrite *w = bio->arg;
	struct raid_thin *t = w->t;
	struct mblk *mb;
	struct mwait *fire;
	struct mwrite *next = NULL;
	int rc = bio->result ? -EIO : 0;

	if (bio->result)
		LOG_ERR(RAID_MOD, "pool %s: thin volume %s: extent map block %u could not be written (%s)",
			t->tp->p->name, t->name, w->b, strerror(-bio->result));
	pthread_mutex_lock(&t->mu);
	/* under the lock: a grow replaces the arrays (arrays_grow) */
	mb = &t->blk[w->b];
	if (!rc) {
		mb->seq = w->seq;
		mb->copy = w->copy;
	}
	fire = mw_take_locked(t, w->b, w->gen, rc);
	mb->writing = false;
	if (mb->gen > w->gen) {
		next = mwrite_prep_locked(t, w->b, w->ctx);
		if (!next) {
			/* the changes staged since: failed, after the others */
			struct mwait *more = mw_take_locked(t, w->b, mb->gen, -ENOMEM), **tail = &fire;

			while (*tail)
				tail = &(*tail)->next;
			*tail = more;
		}
	}
	pthread_mutex_unlock(&t->mu);
	free(w->buf);
	free(w);
	if (next)
		mwrite_submit(next);
	mw_fire(fire);
}

static void mwrite_submit(struct mwrite *w)
{
	struct raid_io *b = &w->bio;
	struct raid_thin *t = w->t;
	int rc;

	b->op = RAID_OP_WRITE;
	b->flags = RAID_IO_FUA;
	b->off = t->map_off + ((uint64_t)w->b * 2 + w->copy) * MAP_BLK;
	b->len = MAP_BLK;
	b->buf = w->buf;
	b->cb = mwrite_done;
	b->arg = w;
	rc = raid_md_vol_submit(&t->tp->bv, w->ctx, b);
	if (rc) {
		b->result = rc;
		mwrite_done(b);
	}
}

/* Entry pc->vx (owned by @pc) becomes @val durably; then @mk(pc, 0 or a
 * negative errno, the entry unchanged) on pc's thread. */
static void map_set(struct piece *pc, uint32_t val, piece_fn mk)
{
	struct raid_thin *t = pc->tio->t;
	unsigned b = (unsigned)(pc->vx / MAP_EPB);
	struct mwait *m = &pc->mw, *fire = NULL;
	struct mwrite *w = NULL;

	pc->mk = mk;
	pthread_mutex_lock(&t->mu);
	m->pc = pc;
	m->vx = pc->vx;
	m->blk = b;
	m->old = t->staged[pc->vx];
	t->staged[pc->vx] = val;
	m->gen = ++t->blk[b].gen;
	m->next = t->mw;
	t->mw = m;
	if (!t->blk[b].writing) {
		w = mwrite_prep_locked(t, b, pc->tio->ctx);
		if (!w)
			fire = mw_take_locked(t, b, m->gen, -ENOMEM);
	}
	pthread_mutex_unlock(&t->mu);
	if (w)
		mwrite_submit(w);
	mw_fire(fire);
}

/* ---- allocation and freeing (owner steps) ---- */

static void alloc_mapped(struct piece *pc, int rc)
{
	struct raid_thin *t = pc->tio->t;

	if (!rc) {
		pthread_mutex_lock(&t->mu);
		t->map[pc->vx] = pc->pext + 1;
		t->n_mapped++;
		pthread_mutex_unlock(&t->mu);
	}
	/* on failure the extent stays taken: a copy of the block that
	 * failed to be written may name it (the pool is beyond its
	 * redundancy then); it is free again at the next start */
	free(pc->xbuf);
	pc->xbuf = NULL;
	pc->k(pc, rc);
}

static void alloc_written(struct raid_io *bio)
{
	struct piece *pc = bio->arg;

	if (bio->result) {
		/* no map names it: free again */
		ext_give(pc->tio->t->tp, pc->pext);
		free(pc->xbuf);
		pc->xbuf = NULL;
		pc->k(pc, bio->result);
		return;
	}
	map_set(pc, pc->pext + 1, alloc_mapped);
}

/* Owner of unmapped pc->vx: take a pool extent, write @data (NULL: zeroes)
 * at pc->in with zeroes around it, map it; @k(pc, rc) after. */
static void alloc_start(struct piece *pc, piece_fn k, const uint8_t *data)
{
	struct raid_thin *t = pc->tio->t;
	uint64_t ext = t->tp->ext;
	int rc;

	pc->k = k;
	rc = ext_take(t->tp, &pc->pext);
	if (rc) {
		k(pc, rc);
		return;
	}
	free(pc->xbuf);
	pc->xbuf = raid_alloc(ext);
	if (!pc->xbuf) {
		ext_give(t->tp, pc->pext);
		k(pc, -ENOMEM);
		return;
	}
	if (data)
		memcpy(pc->xbuf + pc->in, data, pc->len);
	sub_submit(pc, RAID_OP_WRITE, RAID_IO_FUA, (uint64_t)pc->pext * ext, ext, pc->xbuf,
		   alloc_written);
}

static void owner_done(struct piece *pc, int rc)
{
	release(pc->tio->t, pc);
	piece_done(pc, rc);
}

static uint64_t vext_len(const struct raid_thin *t, uint64_t vx);

/* ---- copy on write (an extent a snapshot shares) ----
 * The owner of mapped, shared pc->vx takes a new extent, reads the shared
 * one into it where the write does not cover it (nothing when it covers
 * the whole extent), writes it whole with FUA, makes its entry name it
 * (map_set), and only then lets the shared one go: the snapshot keeps the
 * old bytes, a crash before the map block leaves the old entry (the new
 * extent free again at the next start), after it the new. */

static void cow_mapped(struct piece *pc, int rc)
{
	struct raid_thin *t = pc->tio->t;

	if (!rc) {
		raid_crash_point("cow-map");
		pthread_mutex_lock(&t->mu);
		t->map[pc->vx] = pc->pext + 1;
		pthread_mutex_unlock(&t->mu);
		ext_give(t->tp, pc->cow_old - 1);
	}
	/* on failure the new extent stays taken, as in alloc_mapped */
	free(pc->xbuf);
	pc->xbuf = NULL;
	pc->k(pc, rc);
}

static void cow_written(struct raid_io *bio)
{
	struct piece *pc = bio->arg;

	if (bio->result) {
		ext_give(pc->tio->t->tp, pc->pext);
		free(pc->xbuf);
		pc->xbuf = NULL;
		pc->k(pc, bio->result);
		return;
	}
	raid_crash_point("cow-data");
	map_set(pc, pc->pext + 1, cow_mapped);
}

static void cow_write(struct piece *pc)
{
	struct raid_thin *t = pc->tio->t;

	if (pc->cdata)
		memcpy(pc->xbuf + pc->in, pc->cdata, pc->len);
	else
		memset(pc->xbuf + pc->in, 0, pc->len);
	sub_submit(pc, RAID_OP_WRITE, RAID_IO_FUA, (uint64_t)pc->pext * t->tp->ext, t->tp->ext,
		   pc->xbuf, cow_written);
}

static void cow_read_done(struct raid_io *bio)
{
	struct piece *pc = bio->arg;

	if (bio->result) {
		ext_give(pc->tio->t->tp, pc->pext);
		free(pc->xbuf);
		pc->xbuf = NULL;
		pc->k(pc, bio->result);
		return;
	}
	cow_write(pc);
}

/* Owner of mapped pc->vx (shared): write @data (NULL: zeroes) at pc->in
 * into a copy of it; @k(pc, rc) after. */
static void cow_start(struct piece *pc, piece_fn k, const uint8_t *data)
{
	struct raid_thin *t = pc->tio->t;
	uint64_t ext = t->tp->ext;
	int rc;

	pc->k = k;
	pc->cdata = data;
	pthread_mutex_lock(&t->mu);
	pc->cow_old = t->map[pc->vx];
	pthread_mutex_unlock(&t->mu);
	rc = ext_take(t->tp, &pc->pext);
	if (rc) {
		k(pc, rc);
		return;
	}
	free(pc->xbuf);
	pc->xbuf = raid_alloc_nz(ext);
	if (!pc->xbuf) {
		ext_give(t->tp, pc->pext);
		k(pc, -ENOMEM);
		return;
	}
	if (pc->in == 0 && pc->len >= vext_len(t, pc->vx)) {
		/* the whole extent is written: nothing of the old to keep
		 * (past the volume's end, zeroes as an allocation leaves) */
		memset(pc->xbuf + pc->len, 0, ext - pc->len);
		cow_write(pc);
		return;
	}
	sub_submit(pc, RAID_OP_READ, 0, pool_off(t, pc->cow_old, 0), ext, pc->xbuf, cow_read_done);
}

static void cow_go_write(struct piece *pc, int rc)
{
	(void)rc;
	cow_start(pc, owner_done, pc->buf);
}

static void cow_go_zero(struct piece *pc, int rc)
{
	(void)rc;
	cow_start(pc, owner_done, NULL);
}

static void free_mapped(struct piece *pc, int rc)
{
	struct raid_thin *t = pc->tio->t;
	uint32_t old;

	if (!rc) {
		pthread_mutex_lock(&t->mu);
		old = t->map[pc->vx];
		t->map[pc->vx] = 0;
		t->n_mapped--;
		pthread_mutex_unlock(&t->mu);
		ext_give(t->tp, old - 1);
	}
	owner_done(pc, rc);
}

static void free_go(struct piece *pc, int rc)
{
	(void)rc;
	map_set(pc, 0, free_mapped);
}

/* Bytes of volume extent @vx inside the volume (the last may be short). */
static uint64_t vext_len(const struct raid_thin *t, uint64_t vx)
{
	uint64_t size = atomic_load_explicit(&t->v->size, memory_order_acquire);
	uint64_t a = vx * t->tp->ext;

	return size - a < t->tp->ext ? size - a : t->tp->ext;
}

/* One extent's share of a READ, WRITE or DISCARD, on its tio's thread. */
static void piece_start(struct piece *pc)
{
	struct tio *ti = pc->tio;
	struct raid_thin *t = ti->t;
	struct raid_io *io = ti->io;
	uint32_t e;
	bool now;

	pthread_mutex_lock(&t->mu);
	if (t->busy[pc->vx]) {
		pc->next = t->parked;
		t->parked = pc;
		pthread_mutex_unlock(&t->mu);
		return;
	}
	e = t->map[pc->vx];
	switch (io->op) {
	case RAID_OP_READ:
		if (!e) {
			pthread_mutex_unlock(&t->mu);
			memset(pc->buf, 0, pc->len);
			piece_done(pc, 0);
			return;
		}
		t->inflight[pc->vx]++;
		pthread_mutex_unlock(&t->mu);
		sub_submit(pc, RAID_OP_READ, 0, pool_off(t, e, pc->in), pc->len, pc->buf, fast_done);
		return;
	case RAID_OP_WRITE:
		if (e && ext_shared(t->tp, e - 1)) {
			own_locked(t, pc, cow_go_write, &now);
			pthread_mutex_unlock(&t->mu);
			if (now)
				cow_go_write(pc, 0);
			return;
		}
		if (e) {
			t->inflight[pc->vx]++;
			pthread_mutex_unlock(&t->mu);
			sub_submit(pc, RAID_OP_WRITE, io->flags, pool_off(t, e, pc->in), pc->len,
				   pc->buf, fast_done);
			return;
		}
		own_locked(t, pc, owner_done, &now);   /* unmapped: nothing in flight */
		pthread_mutex_unlock(&t->mu);
		alloc_start(pc, owner_done, pc->buf);
		return;
	case RAID_OP_DISCARD:
		if (!e) {
			pthread_mutex_unlock(&t->mu);
			piece_done(pc, 0);
			return;
		}
		if ((pc->in || pc->len < vext_len(t, pc->vx)) && ext_shared(t->tp, e - 1)) {
			/* part of a shared extent: zeroes into a copy */
			own_locked(t, pc, cow_go_zero, &now);
			pthread_mutex_unlock(&t->mu);
			if (now)
				cow_go_zero(pc, 0);
			return;
		}
		if (pc->in || pc->len < vext_len(t, pc->vx)) {
			/* part of an extent: zeroes in place */
			t->inflight[pc->vx]++;
			pthread_mutex_unlock(&t->mu);
			free(pc->xbuf);
			pc->xbuf = raid_alloc(pc->len);
			if (!pc->xbuf) {
				pc->bio.result = -ENOMEM;
				pc->bio.arg = pc;
				fast_done(&pc->bio);
				return;
			}
			sub_submit(pc, RAID_OP_WRITE, io->flags, pool_off(t, e, pc->in), pc->len,
				   pc->xbuf, fast_done);
			return;
		}
		own_locked(t, pc, free_go, &now);
		pthread_mutex_unlock(&t->mu);
		if (now)
			free_go(pc, 0);
		return;
	default:
		pthread_mutex_unlock(&t->mu);
		piece_done(pc, -EINVAL);
		return;
	}
}

/* ---- COMPARE_WRITE ----
 * Within one mapped extent: the pool's own COMPARE_WRITE (atomic under its
 * stripe lock), counted in flight. Otherwise the extents are owned for the
 * whole operation: read (zeroes where unmapped), compare, write (allocating
 * where unmapped); nothing else touches them meanwhile. ti->pending counts
 * the pieces of the current phase. */

static void caw_end(struct tio *ti)
{
	for (unsigned i = 0; i < ti->n; i++)
		if (ti->pc[i].owner)
			release(ti->t, &ti->pc[i]);
	tio_finish(ti);
}

static void caw_step_done(struct piece *pc, int rc)
{
	struct tio *ti = pc->tio;

	if (rc && !ti->result)
		ti->result = rc;
	if (--ti->pending == 0)
		caw_end(ti);
}

static void caw_write_done(struct raid_io *bio)
{
	caw_step_done(bio->arg, bio->result);
}

static void caw_compare(struct tio *ti)
{
	struct raid_io *io = ti->io;

	if (ti->result) {
		caw_end(ti);
		return;
	}
	for (uint64_t i = 0; i < io->len; i++)
		if (io->buf[i] != ti->cmp[i]) {
			io->miscompare_off = i;
			ti->result = -EILSEQ;
			caw_end(ti);
			return;
		}
	ti->pending = ti->n + 1;
	for (unsigned i = 0; i < ti->n; i++) {
		struct piece *pc = &ti->pc[i];
		uint32_t e;

		pthread_mutex_lock(&ti->t->mu);
		e = ti->t->map[pc->vx];
		pthread_mutex_unlock(&ti->t->mu);
		if (e && ext_shared(ti->t->tp, e - 1))
			cow_start(pc, caw_step_done, pc->buf + io->len);
		else if (e)
			sub_submit(pc, RAID_OP_WRITE, io->flags, pool_off(ti->t, e, pc->in), pc->len,
				   pc->buf + io->len, caw_write_done);
		else
			alloc_start(pc, caw_step_done, pc->buf + io->len);
	}
	caw_step_done(&ti->pc[0], 0);
}

static void caw_read_step(struct tio *ti, int rc)
{
	if (rc && !ti->result)
		ti->result = rc;
	if (--ti->pending == 0)
		caw_compare(ti);
}

static void caw_read_done(struct raid_io *bio)
{
	struct piece *pc = bio->arg;

	caw_read_step(pc->tio, bio->result);
}

static void caw_read(struct tio *ti)
{
	struct raid_io *io = ti->io;

	ti->cmp = malloc(io->len);
	if (!ti->cmp) {
		ti->result = -ENOMEM;
		caw_end(ti);
		return;
	}
	ti->pending = ti->n + 1;
	for (unsigned i = 0; i < ti->n; i++) {
		struct piece *pc = &ti->pc[i];
		uint8_t *dst = ti->cmp + (pc->buf - io->buf);
		uint32_t e;

		pthread_mutex_lock(&ti->t->mu);
		e = ti->t->map[pc->vx];
		pthread_mutex_unlock(&ti->t->mu);
		if (e) {
			sub_submit(pc, RAID_OP_READ, 0, pool_off(ti->t, e, pc->in), pc->len, dst,
				   caw_read_done);
		} else {
			memset(dst, 0, pc->len);
			caw_read_step(ti, 0);
		}
	}
	caw_read_step(ti, 0);
}

static void caw_drained(struct piece *pc, int rc)
{
	struct tio *ti = pc->tio;

	(void)rc;
	if (--ti->pending == 0)
		caw_read(ti);
}

static void caw_fast_done(struct raid_io *bio)
{
	struct piece *pc = bio->arg;

	if (bio->result == -EILSEQ)
		pc->tio->io->miscompare_off = bio->miscompare_off;
	fast_done(bio);
}

static void caw_start(struct tio *ti)
{
	struct raid_thin *t = ti->t;
	struct piece *now_list[2];
	unsigned n_now = 0;

	pthread_mutex_lock(&t->mu);
	for (unsigned i = 0; i < ti->n; i++)
		if (t->busy[ti->pc[i].vx]) {
			ti->pc[0].next = t->parked;
			t->parked = &ti->pc[0];
			pthread_mutex_unlock(&t->mu);
			return;
		}
	if (ti->n == 1 && t->map[ti->pc[0].vx] && !ext_shared(t->tp, t->map[ti->pc[0].vx] - 1)) {
		struct piece *pc = &ti->pc[0];
		uint32_t e = t->map[pc->vx];

		t->inflight[pc->vx]++;
		pthread_mutex_unlock(&t->mu);
		ti->pending = 1;
		sub_submit(pc, RAID_OP_COMPARE_WRITE, ti->io->flags, pool_off(t, e, pc->in), pc->len,
			   ti->io->buf, caw_fast_done);
		return;
	}
	ti->pending = ti->n;
	for (unsigned i = 0; i < ti->n; i++) {
		bool now;

		own_locked(t, &ti->pc[i], caw_drained, &now);
		if (now)
			now_list[n_now++] = &ti->pc[i];
	}
	pthread_mutex_unlock(&t->mu);
	for (unsigned i = 0; i < n_now; i++)
		caw_drained(now_list[i], 0);
}

static void flush_done(struct raid_io *bio)
{
	piece_done(bio->arg, bio->result);
}

/* Start admitted request @ti (t->active counts it). */
static void tio_go(struct tio *ti)
{
	struct raid_io *io = ti->io;
	struct raid_thin *t = ti->t;
	uint64_t ext = t->tp->ext;
	unsigned n = ti->n;

	switch (io->op) {
	case RAID_OP_FLUSH:
		ti->pc[0].tio = ti;
		ti->pending = 1;
		sub_submit(&ti->pc[0], RAID_OP_FLUSH, 0, 0, 0, NULL, flush_done);
		break;
	case RAID_OP_MAP_STATUS: {
		uint64_t vx = io->off / ext, end = (vx + 1) * ext, lim = io->off + io->len;
		bool un;

		pthread_mutex_lock(&t->mu);
		un = !t->map[vx] && !t->busy[vx];
		while (end < lim) {
			uint64_t x = end / ext;

			if ((!t->map[x] && !t->busy[x]) != un)
				break;
			end += ext;
		}
		pthread_mutex_unlock(&t->mu);
		io->unmapped = un;
		io->map_len = (end < lim ? end : lim) - io->off;
		tio_finish(ti);
		break;
	}
	case RAID_OP_COMPARE_WRITE:
		caw_start(ti);
		break;
	default:
		ti->pending = n + 1;
		for (unsigned i = 0; i < n; i++)
			piece_start(&ti->pc[i]);
		piece_done(&ti->pc[0], 0);
		break;
	}
}

/* A request held while its volume was frozen, on its own thread. */
static void held_go(void *arg)
{
	struct tio *ti = arg;
	struct raid_thin *t = ti->t;
	struct raid_ioctx *ctx = ti->ctx;

	pthread_mutex_lock(&t->mu);
	if (t->frozen) {
		/* frozen again since the thaw that sent it */
		ti->hnext = t->held;
		t->held = ti;
		pthread_mutex_unlock(&t->mu);
		return;
	}
	t->active++;
	pthread_mutex_unlock(&t->mu);
	tio_go(ti);
	raid_ioctx_kick(ctx);
}

#define DISCARD_MAX (1ull << 30)

int raid_thin_submit(struct raid_vol *v, struct raid_ioctx *ctx, struct raid_io *io)
{
	struct raid_thin *t = v->thin;
	uint64_t ext = t->tp->ext, size = atomic_load_explicit(&v->size, memory_order_acquire);
	unsigned n = 0;
	struct tio *ti;

	if (!io || !io->cb || (unsigned)io->op > RAID_OP_MAP_STATUS || io->op == RAID_OP_WRITE_SAME)
		return -EINVAL;
	if (t->snap && (io->op == RAID_OP_WRITE || io->op == RAID_OP_DISCARD ||
			io->op == RAID_OP_COMPARE_WRITE))
		return -EROFS;
	if (io->op != RAID_OP_FLUSH) {
		if (io->off % 512 || io->len % 512 || io->len == 0)
			return -EINVAL;
		if (!io->buf && io->op != RAID_OP_DISCARD && io->op != RAID_OP_MAP_STATUS)
			return -EINVAL;
		if (io->off > size || io->len > size - io->off)
			return -ERANGE;
		if (io->op == RAID_OP_DISCARD && io->len > DISCARD_MAX)
			return -EINVAL;
		if (io->op != RAID_OP_MAP_STATUS)
			n = (unsigned)((io->off + io->len - 1) / ext - io->off / ext + 1);
	} else {
		n = 1;
	}
	ti = calloc(1, sizeof(*ti) + n * sizeof(struct piece));
	if (!ti)
		return -ENOMEM;
	ti->io = io;
	ti->ctx = ctx;
	ti->t = t;
	ti->n = n;
	ti->in_submit = true;
	io->result = 0;
	io->miscompare_off = 0;
	raid_ioctx_io_started(ctx);
	for (unsigned i = 0; i < n && io->op != RAID_OP_FLUSH; i++) {
		struct piece *pc = &ti->pc[i];
		uint64_t vx = io->off / ext + i;
		uint64_t a = io->off > vx * ext ? io->off : vx * ext;
		uint64_t b = io->off + io->len < (vx + 1) * ext ? io->off + io->len : (vx + 1) * ext;

		pc->tio = ti;
		pc->vx = vx;
		pc->in = a - vx * ext;
		pc->len = b - a;
		pc->buf = io->buf ? io->buf + (a - io->off) : NULL;
	}
	pthread_mutex_lock(&t->mu);
	if (t->frozen) {
		/* a snapshot is being taken: this request is after it */
		ti->hnext = t->held;
		t->held = ti;
		pthread_mutex_unlock(&t->mu);
	} else {
		t->active++;
		pthread_mutex_unlock(&t->mu);
		tio_go(ti);
	}
	/* still valid: a completion inside this call was deferred */
	ti->in_submit = false;
	raid_ioctx_kick(ctx);
	return 0;
}

void raid_thin_prov(const struct raid_vol *v, struct raid_vol_prov *out)
{
	uint64_t ext;

	if (!v->thin)
		return;
	ext = v->thin->tp->ext;
	out->thin = true;
	out->discard_zeroes = true;
	out->gran = (uint32_t)ext;
	out->discard_max = DISCARD_MAX / ext * ext;
}

uint64_t raid_thin_threshold_events(const struct raid_vol *v)
{
	return v->thin ? atomic_load_explicit(&v->thin->tp->thr_events, memory_order_relaxed) : 0;
}

void raid_thin_usage(struct raid_pool *p, uint64_t *data, uint64_t *cap)
{
	struct raid_thin_pool *tp = p->thin;

	*data = *cap = 0;
	if (!tp)
		return;
	pthread_mutex_lock(&tp->mu);
	*data = tp->n_data * tp->ext;
	*cap = (tp->n_ext - tp->n_region) * tp->ext;
	pthread_mutex_unlock(&tp->mu);
}

bool raid_thin_check(struct raid_vol *v)
{
	struct raid_thin *t = v->thin;
	bool ok = true;

	if (!t)
		return true;
	uint8_t *seen = calloc(t->tp->n_ext ? t->tp->n_ext : 1, 1);

	if (!seen)
		return true;   /* nothing to check with */
	pthread_mutex_lock(&t->tp->mu);
	pthread_mutex_lock(&t->mu);
	for (uint64_t vx = 0; vx < t->n_vext; vx++) {
		uint32_t e = t->map[vx];

		if (t->inflight[vx] && !e)
			ok = false;
		if (t->staged[vx] != e && !t->busy[vx])
			ok = false;
		if (!e)
			continue;
		if (e - 1 >= t->tp->n_ext || t->tp->used[e - 1] != X_DATA || seen[e - 1])
			ok = false;
		else
			seen[e - 1] = 1;
	}
	pthread_mutex_unlock(&t->mu);
	pthread_mutex_unlock(&t->tp->mu);
	free(seen);
	return ok;
}

uint64_t raid_thin_allocated(const struct raid_vol *v)
{
	return v->thin ? atomic_load_explicit(&v->thin->n_mapped, memory_order_relaxed) *
			 v->thin->tp->ext : 0;
}

static int sync_write_empty(struct raid_thin_pool *tp, struct raid_thin *t, uint64_t b0,
			    uint64_t b1)
{
	struct raid_ioctx *ctx;
	uint64_t n = b1 - b0;
	uint8_t *buf;
	int rc;

	if (!n)
		return 0;
	buf = raid_alloc_nz(n * 2 * MAP_BLK);
	if (!buf)
		return -ENOMEM;
	for (uint64_t b = b0; b < b1; b++) {
		uint8_t *c0 = buf + (b - b0) * 2 * MAP_BLK;

		/* copy 0 valid and empty (the entries of blocks past the
		 * volume's old end are all 0), copy 1 not a map block */
		blk_encode(t, (unsigned)b, 1, t->staged, c0);
		memset(c0 + MAP_HDR, 0, MAP_EPB * 4);
		put32(c0 + CRC_OFF, crc32_iscsi(c0, (int)CRC_OFF, 0xffffffffu));
		memset(c0 + MAP_BLK, 0, MAP_BLK);
	}
	rc = raid_ioctx_create(&ctx);
	if (!rc) {
		rc = sync_io(tp, ctx, RAID_OP_WRITE, t->map_off + b0 * 2 * MAP_BLK, n * 2 * MAP_BLK,
			     buf);
		raid_ioctx_destroy(ctx);
	}
	free(buf);
	return rc;
}

int raid_thin_grow_map(struct raid_vol *v, uint64_t bytes)
{
	struct raid_thin *t = v->thin;
	uint64_t nb = nblk_of(t->tp->ext, bytes);
	int rc = sync_write_empty(t->tp, t, t->n_blk, nb);

	if (rc)
		LOG_ERR(RAID_MOD, "pool %s: thin volume %s: its extent map could not be extended (%s)",
			t->tp->p->name, t->name, strerror(-rc));
	return rc;
}

int raid_thin_grow_mem(struct raid_vol *v, uint64_t bytes)
{
	struct raid_thin *t = v->thin;
	int rc;

	pthread_mutex_lock(&t->mu);
	rc = arrays_grow(t, bytes);
	if (!rc)
		atomic_store_explicit(&v->size, bytes, memory_order_release);
	pthread_mutex_unlock(&t->mu);
	return rc;
}
