/*
 * raid/raid_int.h - the RAID backend's core structures (pool, volume) and
 * the parts that live inside them (stripe lock, stripe cache, bitmap),
 * shared by the files of raid/ only. Nothing outside raid/ includes this
 * but tests. The leaves have headers of their own: layout.h, geom.h,
 * parity.h, sb.h (no I/O context), and the member I/O stack: ioctx.h,
 * mlayer.h, member.h, fault.h, hdd.h, defer.h.
 */
#ifndef RTGT_RAID_INT_H
#define RTGT_RAID_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/time_types.h>

#include "conf/conf.h"
#include "raid/defer.h"
#include "raid/geom.h"
#include "raid/layout.h"
#include "raid/parity.h"
#include "raid/raid.h"
#include "raid/sb.h"

#define RAID_MOD "raid"

/* ---- per-thread context (ioctx.h); members and their I/O stack
 * (member.h, mlayer.h, fault.h, hdd.h) ---- */
struct raid_member;

/* ---- stripe lock (lock.c) ----
 * Range locks over the pool's logical address space. Shared (readers) or
 * exclusive (writers). Grants are FIFO: a request waits behind every earlier
 * conflicting request, held or waiting, so writers are not starved. */
struct raid_lk {
	uint64_t a, b;            /* [a, b) logical bytes */
	bool excl;
	bool granted;
	struct raid_ioctx *ctx;   /* where the grant callback runs */
	raid_defer_fn fn;
	void *arg;
	struct raid_lk *next;
};

struct raid_slock {
	pthread_mutex_t mu;
	struct raid_lk *held;     /* unordered */
	struct raid_lk *wait_head, *wait_tail;
};

void raid_slock_init(struct raid_slock *sl);
void raid_slock_destroy(struct raid_slock *sl);
/* Returns true when granted now (fn is not called); false when queued: fn
 * runs on lk->ctx once granted. */
bool raid_slock_acquire(struct raid_slock *sl, struct raid_lk *lk);
void raid_slock_release(struct raid_slock *sl, struct raid_lk *lk);
/* Whether the lock structure is sane (assert-able). */
bool raid_slock_check(struct raid_slock *sl);

/* ---- stripe cache (scache.c) ---- */
struct raid_sc_ent {
	uint64_t row;
	uint8_t *data;            /* stripe_bytes of the row's logical data, owned */
	uint8_t *valid;           /* one bit per 512-byte sector, owned */
	uint64_t nvalid;
	uint64_t t_ms;            /* when it was created */
	struct raid_sc_ent *next;
	uint64_t seq;             /* TAKEN: its write-out's number (raid_scache.seq) */
	int err;                  /* its last write-out failed (-errno): kept, retried */
	uint64_t retry_ms;        /* after a failure: the age-based write-out waits until */
	/* Deferred errors: the volume the row belongs to, and whether it
	 * holds data acknowledged from the cache (a write that ended in it)
	 * since its last failed write-out. A failed write-out of such an
	 * entry bumps vol->write_failures once and clears it; a failure
	 * again over the same data does not count again. Both set by the
	 * caller of raid_sc_merge() under the row's exclusive lock. */
	struct raid_vol *vol;
	bool unreported;
};

/* A FLUSH waiting for the write-outs that began before it (raid_sc_wait). */
struct raid_sc_waiter {
	uint64_t seq;             /* waits for every taken entry with seq <= this */
	int err;                  /* the first failure among them (or of a kept entry) */
	struct raid_ioctx *ctx;   /* where fn runs */
	raid_defer_fn fn;
	void *arg;
	struct raid_sc_waiter *next;
};

struct raid_scache {
	pthread_mutex_t mu;
	struct raid_sc_ent *head;
	_Atomic unsigned n;       /* entries on the list (head) */
	unsigned max;
	uint64_t stripe;
	/* Write-outs in flight, any reactor (under mu): entries handed out by
	 * raid_sc_take() until raid_sc_done(); seq numbers every take. */
	struct raid_sc_ent *out;
	unsigned n_out;
	uint64_t seq;
	struct raid_sc_waiter *waiters;
	_Atomic uint64_t n_failed;   /* write-outs that failed, ever */
};

void raid_sc_init(struct raid_scache *sc, uint64_t stripe_bytes, unsigned max);
void raid_sc_destroy(struct raid_scache *sc);
/* Merge new data into row @row's entry (creating it when @create and there
 * is room). NULL when the row is not cached. Caller holds the row's
 * exclusive stripe lock. */
struct raid_sc_ent *raid_sc_merge(struct raid_scache *sc, uint64_t row, uint64_t off, uint64_t len,
				  const uint8_t *src, bool create);
/* Remove row @row's entry and hand it to the caller (NULL: none) for a
 * write-out; the caller must end it with raid_sc_done() while it still holds
 * the row's exclusive lock. */
struct raid_sc_ent *raid_sc_take(struct raid_scache *sc, uint64_t row);
/* The write-out of taken entry @e ended with @err (0 or -errno). A failure is
 * counted and passed to the FLUSHes waiting for it, and when @e held
 * unreported acknowledged data (e->unreported) it bumps
 * e->vol->write_failures (deferred errors); with @keep the entry goes
 * back on the list (its data stays readable and is written out again),
 * otherwise it is freed. Wakes the FLUSHes that wait for nothing else. */
void raid_sc_done(struct raid_scache *sc, struct raid_sc_ent *e, int err, bool keep);
/* A FLUSH: wait for every write-out taken so far. True when none is in
 * flight (w->err set now); false when w->fn(w->arg) runs on w->ctx once they
 * ended (w->err set then). w->err is also set when an entry on the list
 * failed its last write-out (acknowledged data not on the members). */
bool raid_sc_wait(struct raid_scache *sc, struct raid_sc_waiter *w);
/* Copy the cached sectors of [off, off+len) of @row over @dst. */
void raid_sc_overlay(struct raid_scache *sc, uint64_t row, uint64_t off, uint64_t len, uint8_t *dst);
/* Rows cached for at least @min_age_ms, up to @max. */
unsigned raid_sc_rows(struct raid_scache *sc, uint64_t min_age_ms, uint64_t *rows, unsigned max);
void raid_sc_ent_put(struct raid_sc_ent *e, uint64_t off, uint64_t len, const uint8_t *src);
bool raid_sc_ent_full(const struct raid_scache *sc, const struct raid_sc_ent *e);
bool raid_sc_ent_valid(const struct raid_sc_ent *e, uint64_t sector);
void raid_sc_ent_free(struct raid_sc_ent *e);
bool raid_sc_check(struct raid_scache *sc);

/* ---- write-intent bitmap (bitmap.c) ---- */
struct raid_bitmap {
	pthread_mutex_t mu;
	uint64_t region;          /* member bytes per bit; 0: no bitmap */
	uint64_t nbits;
	size_t bytes;             /* on-disk size, multiple of RAID_ALIGN */
	uint8_t *disk;            /* the bits as written on the members */
	uint8_t *unsynced;        /* regions to resync after a crash */
	uint32_t *cnt;            /* member writes in flight per region */
	uint32_t *gen;            /* bumped at every write start */
	uint64_t *seen;           /* idle at the previous clearing pass */
	_Atomic uint64_t n_unsynced;
	/* The bitmap writer thread (bitmap.c) is the only one writing the bits
	 * to the members, so reactors never wait for a pwrite + fdatasync:
	 * bits set in memory bump seq_set; each pass writes a snapshot and
	 * then seq_durable = the seq_set it saw. All under mu. */
	pthread_t wr;
	bool wr_started, wr_stop;
	pthread_cond_t wr_cv;     /* wakes the writer */
	pthread_cond_t done_cv;   /* a pass ended (seq_durable moved) */
	uint64_t seq_set, seq_durable, seq_inflight;
	uint8_t *pending;         /* set in memory, not in any pass yet; owned */
	uint8_t *inflight;        /* set by the pass being written; owned */
	uint8_t *snap;            /* the pass's copy of disk; owned */
	struct raid_bm_waiter *waiters; /* raid_bm_start_async callers; owned */
};

uint64_t raid_bm_region_for(uint64_t member_bytes, uint64_t chunk);
/* @load: read the members' bitmaps (after an unclean shutdown). Regions
 * from member byte @sync_from on were never synced (initial sync pending:
 * unsynced as well; g.member_bytes for none). @fresh: a new pool whose
 * bitmap area holds whatever the device held: written as all clear. */
int raid_bm_init(struct raid_pool *p, uint64_t region, bool load, uint64_t sync_from, bool fresh);
void raid_bm_free(struct raid_pool *p);
/* Member write of [moff, moff+len) on every member about to start / ended. */
void raid_bm_start(struct raid_pool *p, uint64_t moff, uint64_t len);
/* raid_bm_start() without blocking: true when the member write may be
 * issued at once (its regions' bits are durable); false when @fn(@arg) will
 * run on @ctx once they are. The regions count the write as started either
 * way (raid_bm_end() when it ended). */
bool raid_bm_start_async(struct raid_pool *p, uint64_t moff, uint64_t len,
			 struct raid_ioctx *ctx, raid_defer_fn fn, void *arg);
void raid_bm_end(struct raid_pool *p, uint64_t moff, uint64_t len);
/* Whether [moff, moff+len) of member space may hold parity or mirrors that
 * disagree with the data: a region dirty at a crash and not resynced yet,
 * a region the initial sync has not reached yet, or a bad range of any
 * slot. Nothing may be reconstructed from such rows. */
bool raid_bm_unsynced(struct raid_pool *p, uint64_t moff, uint64_t len);
bool raid_bm_region_unsynced(struct raid_pool *p, uint64_t region);
void raid_bm_synced(struct raid_pool *p, uint64_t region);
void raid_bm_clear_idle(struct raid_pool *p, bool force);
/* Write the bitmap as it is on the members to @m (a member about to join
 * the raid disks) and fdatasync it. */
int raid_bm_write_member(struct raid_pool *p, struct raid_member *m);
bool raid_bm_check(struct raid_pool *p);

/* ---- pool, members, volumes (pool.c, pool_admin.c, mstate.c, vol.c) ---- */
struct raid_vol {
	struct raid_pool *pool;
	char name[64];
	uint8_t uuid[16];
	uint64_t start;           /* logical bytes in the pool */
	/* bytes; only grows (raid_vol_resize, under the pool's meta_mu),
	 * read without a lock by the request paths */
	_Atomic uint64_t size;
	uint64_t extent;          /* meta_mu */
	/* write-outs of acknowledged data that failed (raid_vol_write_failures;
	 * bumped by raid_sc_done) */
	_Atomic uint64_t write_failures;
	/* thin volumes (thin.c): their extent map and request state; owned,
	 * NULL for thick volumes */
	struct raid_thin *thin;
	bool snapshot;            /* read-only: a snapshot (set at open) */
	/* raid_vol_open()s not yet undone by raid_vol_close(); the last close
	 * frees it (backend's vol_close). Only the control thread changes it. */
	_Atomic unsigned opens;
};

/* A sequential read stream on one mirror set (io.c, read balancing). */
#define RAID_RSTREAMS 16u
struct raid_rstream {
	uint64_t next;            /* member offset where it continues */
	uint64_t last_ns;         /* last read: LRU and activity */
	unsigned set;             /* mirror set: device of its first copy */
	unsigned copy;            /* the copy it sticks to while it shares the set */
	unsigned hits;            /* reads that continued it (>= 2: a stream) */
	bool used;
	const void *owner;        /* the volume read (identity only, never
	                           * dereferenced): a reader that jumps (wraps)
	                           * stays the same stream */
};

struct raid_vol_backend_ops;
struct req;

/*
 * A reshape (reshape.c): the pool's data moves from layout go (fewer raid
 * disks, maybe another level) to gn, from logical byte 0 up, in windows.
 * Logical bytes below ckpt are in gn and durable; [ckpt, pos) are in gn
 * but may not be durable yet (a crash redoes them from the old layout,
 * which still holds them); from pos on they are in go. Requests pass a
 * gate (raid_reshape_admit): what overlaps [ckpt, gate_end) waits on the
 * list until the range moved on; the rest is served by gn (below ckpt)
 * or go (from gate_end on). Every request is counted in the epoch it
 * was admitted in, so the reshape thread can wait for all admitted
 * before a gate change (flip the epoch, wait for the old count to drain).
 */
struct raid_reshape {
	_Atomic bool active;      /* a reshape runs: gate requests */
	_Atomic unsigned epoch;
	_Atomic unsigned inflight[2];  /* admitted, not finished, by epoch parity */
	pthread_mutex_t mu;       /* the fields below */
	struct raid_geom go, gn;  /* old and new layout (gn: member count and
	                           * level the superblocks now record) */
	uint64_t ckpt, pos, gate_end; /* logical bytes, ckpt <= pos <= gate_end */
	uint64_t ckpt_disk;       /* what the superblocks record (>= ckpt while
	                           * a checkpoint is being made) */
	uint64_t t_ckpt_ns;       /* the last checkpoint (background thread) */
	bool all;                 /* gate everything (start and end) */
	struct req *waiters;      /* held at the gate, in arrival order */
	struct req *waiters_tail;
	/* the tail window saved on the new member, recorded in the
	 * superblocks (backup_len 0: none) */
	uint64_t backup_pos;
	uint32_t backup_len, backup_crc;
	uint64_t t_start_ns, pos_start;   /* for the rate and ETA */
	_Atomic uint64_t rate;    /* logical bytes/s, measured */
	_Atomic int error;        /* stopped on an error (-errno), 0 */
	_Atomic bool restored;    /* a window was put back from its copy since the open */
	/* the superblocks record the reshape: from the switch to the new
	 * layout (start) to its end (finish); meta_mu */
	bool on_disk;
};

/*
 * What the member state (mstate.c) tells the layers above it, filled by
 * pool.c when it opens the pool, before any superblock write; never
 * changed after. NULL entries are skipped.
 */
struct raid_pool_hooks {
	/* a member failed: the background thread may have work (rebuild.c) */
	void (*kick)(struct raid_pool *p);
	/* a superblock is being filled: the reshape's fields (reshape.c) */
	void (*sb_fill)(struct raid_pool *p, struct raid_sb *sb);
};

struct raid_pool {
	/* what serves the pool (backend.h); set by raid_pool_open, never changes */
	const struct raid_vol_backend_ops *ops;
	char name[64];
	enum conf_level level;
	struct raid_geom g;
	bool direct_io;
	unsigned rebuild_mbps;
	struct conf_hdd hdd;                     /* lab timing model (hdd.enabled) */
	uint8_t uuid[16];
	/* mapped reads' holds not yet released (io.c, struct raid_io_hold):
	 * raised before the request's callback, so a caller that sees no
	 * command inside the pool's volumes and then no hold may close it */
	_Atomic unsigned holds;
	/* The slot table: written under meta_mu, read without it by the I/O
	 * path, the bitmap writer and the background thread, so every entry
	 * (and n_slots) is atomic; see the rule at the top of pool.c. */
	_Atomic unsigned n_slots;                /* members + spares */
	struct raid_member *_Atomic m[RAID_MAX_SLOTS]; /* by slot; owned */
	pthread_mutex_t meta_mu;                 /* superblock, volumes, states */
	uint64_t events;
	struct raid_sb sb;                       /* last written view (slot fields unused) */
	struct raid_vol *vols[RAID_MAX_VOLS];    /* owned; NULL until opened */
	struct raid_slock lock;
	struct raid_scache sc;                   /* raid5/6 only (sc.max == 0 otherwise) */
	struct raid_bitmap bm;                   /* levels with redundancy */
	_Atomic unsigned rr;                     /* mirror read spreading */
	/* mirror read balancing (io.c): recent read streams, under rs_lock
	 * (a spin flag: a few compares per read) */
	struct raid_rstream rs[RAID_RSTREAMS];
	_Atomic bool rs_lock;
	_Atomic bool failed;                     /* beyond redundancy */
	struct raid_member *retired;             /* replaced members, freed at close
	                                          * (in-flight I/O may still point at them) */

	/* background thread (rebuild.c): rebuild, resync, scrub */
	pthread_t bg;
	bool bg_started;
	pthread_mutex_t bg_mu;                   /* protects the bg_* requests */
	pthread_cond_t bg_cv;
	bool bg_stop, bg_kick, scrub_req, scrub_repair;
	bool resync_req;                         /* unclean shutdown: resync parity/mirrors */
	_Atomic int rebuild_slot;                /* slot being rebuilt, -1 none */
	/* the slot of the REPLACING spare, -1 none (at most one; meta_mu) */
	_Atomic int repl_slot;
	_Atomic uint64_t repl_rate;              /* bytes/s of the copy, measured */
	/* written first by the next superblock update (meta_mu): the member
	 * a swap just gave a raid disk slot (see raid_pool_write_sbs_locked) */
	struct raid_member *sb_first, *sb_first2;
	_Atomic uint64_t rebuild_rate;           /* bytes/s, measured */
	_Atomic uint64_t scrub_mismatch;
	_Atomic int scrub_state;                 /* 0 idle, 1 running, 2 done, 3 resync running */
	_Atomic uint64_t scrub_pos;
	/* initial sync of a new pool (rebuild.c scrub with resync): regions
	 * from sync_pos on were never made consistent; sync_cp is the part
	 * made durable (what superblocks record). syncing under bg_mu. */
	_Atomic bool syncing;
	_Atomic uint64_t sync_pos, sync_cp;
	/* rows nothing could reconstruct (mstate.c raid_pool_bad_*), under
	 * bad_mu; recorded in the superblocks */
	pthread_mutex_t bad_mu;
	_Atomic unsigned n_bad;
	struct raid_bad bad[RAID_MAX_BAD];

	/* thin volumes (thin.c): the pool's extent allocator, made by the
	 * first volume open (raid_thin_pool_load); owned, NULL before */
	struct raid_thin_pool *thin;
	unsigned thin_threshold;                 /* percent (conf), 0: 80 */

	/* a reshape (reshape.c); rsh.active false when none */
	struct raid_reshape rsh;
	/* reshape: the stripe cache takes nothing (its rows are of one
	 * layout); set while it is empty, under the whole-pool gate */
	_Atomic bool sc_off;
	/* raid_md_pool_grow hands its new member to the background thread,
	 * which starts the reshape (bg_mu); grow_pending from the hand-over
	 * to the end of the start */
	struct raid_member *grow_m[2];
	unsigned grow_k;                         /* 0: none handed over */
	enum conf_level grow_level;
	_Atomic bool grow_pending;
	struct raid_pool_hooks hooks;            /* set at open (pool.c) */
};

/* Mark a member faulty (superblocks updated, events bumped). Thread-safe. */
void raid_member_fail(struct raid_member *m, int err, const char *why);
/* Hands @ev to the registered event callback (raid_set_event_fn), filling
 * pool_state from @p when @p is given and the field is NULL. @p's meta_mu
 * may be held (pool_state is then read without taking it). */
void raid_event_emit(struct raid_pool *p, struct raid_event *ev);
/* A read error on @m: true when the data should be rebuilt from redundancy
 * and rewritten (the member stays in), false when the member was failed
 * (too many errors, or no redundancy to repair from). */
bool raid_member_read_error(struct raid_member *m, int err, uint64_t moff);
#define RAID_MAX_READ_ERRORS 20u
/* Bad ranges (mstate.c): record [a, b) of @slot as holding no valid data
 * (merged with an adjacent range; when the table is full the nearest range
 * of the slot grows to cover it, or two ranges of one slot merge to make
 * room: more is refused, never less; with no way to record it the member
 * is failed); the caller writes the superblocks. */
void raid_pool_bad_add(struct raid_pool *p, unsigned slot, uint64_t a, uint64_t b);
/* Member bytes [a, b) of every slot in the mask @slots were just rewritten
 * with data that needed no reconstruction (a full row, a mirror copy): cut
 * them out of the bad ranges, durably (members fdatasync'd, then the
 * superblocks written) before returning. Caller holds the rows' stripe
 * lock. 0, or -EIO when a member could not be synced (its range stays). */
int raid_pool_bad_clear(struct raid_pool *p, uint64_t slots, uint64_t a, uint64_t b);
/* Does [a, b) of @slot (any slot when @slot is UINT32_MAX) overlap a bad range? */
bool raid_pool_bad(struct raid_pool *p, unsigned slot, uint64_t a, uint64_t b);
/* Readable at member data offset @moff (readable below @moff_end: the
 * chunk ending there holds no bad range either). */
bool raid_member_readable(const struct raid_member *m, uint64_t moff);
bool raid_member_writable(const struct raid_member *m);
/* Write every present member's superblock with the pool's current view. */
int raid_pool_write_sbs(struct raid_pool *p, bool clean);
/* Same with meta_mu already held. */
int raid_pool_write_sbs_locked(struct raid_pool *p, bool clean);
unsigned raid_pool_unusable(struct raid_pool *p);
/* The level's failure rule over the raid disks flagged in @lost (indexed by
 * slot < g->n): raid0 any, raid1 all, raid5 two, raid6 three, raid10 both
 * members of a mirror pair (2k, 2k+1; *pair = 2k when @pair is not NULL).
 * Use this, not "unusable > g->npar" (wrong for raid10). */
bool raid_lost_beyond(const struct raid_geom *g, const bool *lost, unsigned *pair);
/* raid_lost_beyond() over the pool's raid disks that are not ACTIVE. */
bool raid_pool_beyond_redundancy(struct raid_pool *p);

/* rebuild.c: the pool's background thread */
int raid_bg_start(struct raid_pool *p);
void raid_bg_stop(struct raid_pool *p);
/* Wake the background thread: something changed (failure, spare, scrub). */
void raid_bg_kick(struct raid_pool *p);

/* bg_job.c: what the background jobs share */
/* Whether the background thread is asked to stop (bg_stop, under bg_mu):
 * its long jobs (rebuild, scrub, reshape) look between steps. */
bool raid_bg_stop_requested(struct raid_pool *p);
/* Sleep until @bytes of member data per member written since @t0
 * (conf_mono_ns() in seconds) fit under rebuild_mbps (10^6 bytes/s; 0: no
 * cap), or until the thread is asked to stop: the pacing of every long
 * job (rebuild, resync, scrub, replace, reshape). */
void raid_bg_pace(struct raid_pool *p, double t0, uint64_t bytes);
/* Write out stripe-cache rows older than @min_age_ms, waiting on @ctx. */
int raid_bg_cache_flush(struct raid_pool *p, struct raid_ioctx *ctx, uint64_t min_age_ms);

/* reshape_gate.c */
/* Admission of a request (io.c): true when it may go on now (rq->g
 * chosen); false when it waits at the gate (raid_io_gate_go later runs
 * it on its ctx). Counts it either way until raid_reshape_done. */
bool raid_reshape_admit(struct req *rq);
void raid_reshape_done(struct req *rq);
/* The count of a request admitted in @epoch ends (raid_reshape_done for a
 * request whose hold outlived it: io_hold.c, struct raid_io_hold). */
void raid_reshape_leave(struct raid_pool *p, unsigned epoch);

/* reshape.c */
void raid_reshape_init(struct raid_pool *p);
void raid_reshape_destroy(struct raid_pool *p);
/* Assembly found RAID_SB_RESHAPE in @sb: set the reshape up to resume
 * (p->g is already the new layout, its usable clamped to the old one). */
int raid_reshape_resume(struct raid_pool *p, const struct raid_sb *sb);
/* The superblock's reshape fields. meta_mu held. */
void raid_reshape_sb_fill(struct raid_pool *p, struct raid_sb *sb);
/* The background thread's work while a reshape runs: until done, stopped
 * (bg_stop) or failed. */
void raid_reshape_run(struct raid_pool *p, struct raid_ioctx *ctx);
/* Start a reshape to @lvl with the @k (1, 2 for raid10) members @nm
 * (opened, attached, in no slot) as new raid disks: handed to the background thread, which starts it (or
 * posts reshape_failed); -EALREADY when one is asked for or running. */
int raid_reshape_request(struct raid_pool *p, struct raid_member *const *nm, unsigned k,
			 enum conf_level lvl);
/* Background thread: a request waiting? start it. */
void raid_reshape_take_request(struct raid_pool *p, struct raid_ioctx *ctx);
/* The reshape part of raid_pool_info. */
void raid_reshape_info(struct raid_pool *p, struct raid_pool_info *out);
/* io.c: @io served by layout @g as it is, not through the gate. */
int raid_md_vol_submit_geom(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io,
			    const struct raid_geom *g);
/* io.c: a request the gate held goes on (its ctx's thread). */
void raid_io_gate_go(void *arg);

/* io.c */
/* Write out cached rows older than @min_age_ms (all with 0); @io->cb runs on
 * @ctx when done (io->result 0 or -errno). */
int raid_pool_cache_flush(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_io *io,
			  uint64_t min_age_ms);

#endif
