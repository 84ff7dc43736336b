/*
 * raid/raid.h - the storage engine seen from the target layer.
 *
 * A pool holds volumes. What stores them is the pool's backend, chosen by
 * the pool's level and invisible here (raid/backend.h): RAID0/1/5/6/10 over
 * member files or block devices, or images of a shared network block store.
 * The target layer only sees volumes: it submits struct raid_io requests and
 * gets completions back on the thread that submitted them, through that
 * thread's struct raid_ioctx.
 *
 * Threading: pools and volumes may be used from any number of reactor
 * threads at once; each thread owns exactly one raid_ioctx and passes it on
 * every submit. Completion callbacks run inside raid_ioctx_run() on the owning
 * thread, never inside raid_vol_submit().
 */
#ifndef RTGT_RAID_H
#define RTGT_RAID_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"

struct raid_pool;
struct raid_vol;
struct raid_ioctx;

/* ---- per-thread I/O context (one io_uring ring) ---- */

int raid_ioctx_create(struct raid_ioctx **out);
void raid_ioctx_destroy(struct raid_ioctx *ctx);
/* An fd that becomes readable when completions are ready. */
int raid_ioctx_fd(const struct raid_ioctx *ctx);
/* Reap completions and run callbacks. Never blocks. */
void raid_ioctx_run(struct raid_ioctx *ctx);
/* Number of raid_io submitted through @ctx whose callback has not run yet. */
unsigned raid_ioctx_inflight(const struct raid_ioctx *ctx);
/* Polled mode, for an owner that calls raid_ioctx_poll() every time before
 * it sleeps (a reactor's prepare hook): submissions are then gathered until
 * that call (one io_uring_submit per reactor wake-up instead of one per
 * request), and I/O completed without the kernel's ring (small I/O on
 * memory-backed members) does not signal the fd. Owner thread only. */
void raid_ioctx_set_polled(struct raid_ioctx *ctx, bool polled);
/* Submits what was gathered and runs every callback that is ready, like
 * raid_ioctx_run() but without draining the fd. Returns true when it did
 * anything (the caller polls again before sleeping). Never blocks. */
bool raid_ioctx_poll(struct raid_ioctx *ctx);

/* ---- volume I/O ---- */

enum raid_op {
	RAID_OP_READ,
	RAID_OP_WRITE,
	RAID_OP_FLUSH,          /* off/len ignored: every member, metadata included */
	RAID_OP_COMPARE_WRITE,  /* atomic against every other write to the range */
	RAID_OP_WRITE_SAME,     /* buf: one RAID_SAME_BLOCK-byte block, written
	                         * repeatedly over [off, off + len); only on a
	                         * volume whose raid_vol_write_same_max() is not 0,
	                         * len at most that (else -EINVAL) */
	RAID_OP_DISCARD,        /* thin volumes only (struct raid_vol_prov; else
	                         * -EINVAL): [off, off + len) holds no data any
	                         * more; once it completed every read of it
	                         * returns zeroes. len at most prov.discard_max;
	                         * buf unused (may be NULL) */
	RAID_OP_MAP_STATUS,     /* thin volumes only: is [off, ...) allocated?
	                         * Completes with io->unmapped and io->map_len:
	                         * the bytes from off (at most len, at least 512)
	                         * that all have that status. "Mapped" may be
	                         * said of space that is not (never the other
	                         * way round). buf unused (may be NULL) */
};

#define RAID_SAME_BLOCK 512u  /* RAID_OP_WRITE_SAME pattern size */

#define RAID_IO_FUA 0x1u    /* durable on every member before completion */
/* READ only, a hint: pieces of the result may be left where they are, in
 * the memory of members on tmpfs/ramfs, instead of being copied into buf
 * (io->hold, below). Taken on thick volumes of raid0/1/10 pools whose
 * members are memory-backed (no HDD model, no O_DIRECT); ignored
 * elsewhere, and the whole result is then in buf as without it. */
#define RAID_IO_MAP 0x2u

/* One piece of a RAID_IO_MAP read that was not copied into buf: the bytes
 * [off, off + len) of the request are at addr, in a member's memory. */
struct raid_io_piece {
	uint64_t off;
	uint64_t len;
	const uint8_t *addr;
};

/*
 * What a RAID_IO_MAP read left in members' memory, owned by the caller
 * from the callback on; NULL when every byte is in buf. Its pieces' bytes
 * are the volume's at the moment they are read (a write to the range
 * after the completion shows through, as it would in a later read), and
 * the hold keeps them that volume's: no reshape moves the range and no
 * member mapping goes away until raid_io_hold_release(). Hold it only
 * briefly (the target layer: until the reactor's next write to the
 * socket), since a reshape waits for it. Reading a piece's address may
 * fault when the member file was cut short behind the pool's back: the
 * kernel then refuses the copy (EFAULT from writev), and
 * raid_io_hold_copy() reports the error instead.
 */
struct raid_io_hold;
/* The pieces, in ascending off, none overlapping; returns their count. */
unsigned raid_io_hold_pieces(const struct raid_io_hold *h, const struct raid_io_piece **out);
/* Copies @len bytes of piece @i from @from (bytes into the piece) to @dst
 * with a read of the member: 0, or -EIO / -errno when the member could not
 * give them all. */
int raid_io_hold_copy(const struct raid_io_hold *h, unsigned i, uint64_t from, uint64_t len,
		      uint8_t *dst);
/* Ends the hold and frees it (NULL: nothing). Any thread. */
void raid_io_hold_release(struct raid_io_hold *h);

struct raid_io {
	/* filled by the caller */
	enum raid_op op;
	unsigned flags;
	uint64_t off;          /* bytes from the start of the volume, multiple of 512 */
	uint64_t len;          /* bytes, multiple of 512; 0 only for FLUSH */
	/* READ: destination; WRITE: source; COMPARE_WRITE: 2*len bytes, the
	 * data to compare followed by the data to write. Owned by the caller,
	 * must stay valid until cb runs. */
	uint8_t *buf;
	void (*cb)(struct raid_io *io);
	void *arg;             /* caller's */

	/* filled by raid before cb */
	int result;            /* 0; -EIO: unrecoverable (member failures beyond
	                        * redundancy); -EILSEQ: COMPARE_WRITE miscompare;
	                        * -ENOLINK: this node is fenced (raid_vol_ready);
	                        * -ENOSPC: the store behind the volume is full
	                        * (or over its quota): the write failed for
	                        * want of space;
	                        * other -errno for internal failures */
	uint64_t miscompare_off; /* with -EILSEQ: byte offset in the range of the
	                          * first differing byte */
	uint64_t map_len;        /* RAID_OP_MAP_STATUS, see there */
	bool unmapped;
	struct raid_io_hold *hold; /* RAID_IO_MAP reads, see there; else NULL */

	/* raid-private; do not touch */
	void *rpriv[8];
	uint64_t rpriv_u[4];
};

/* Returns 0 (cb will run later on @ctx's thread) or a negative errno when the
 * request is rejected outright (then cb never runs): -ERANGE beyond the end,
 * -EINVAL misaligned. */
int raid_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io);

uint64_t raid_vol_bytes(const struct raid_vol *vol);
const char *raid_vol_name(const struct raid_vol *vol);
/* 16 random bytes made when the volume was created and stored with it: the
 * base of the LUN's NAA identity, stable across restarts. */
void raid_vol_uuid(const struct raid_vol *vol, uint8_t out[16]);
/* The smallest write, in bytes (a power of two, >= 512), that the volume
 * stores without reading anything back first: what READ CAPACITY(16)
 * reports as the physical block. */
uint32_t raid_vol_phys_bytes(const struct raid_vol *vol);
/* Optimal transfer granularity and length in bytes (chunk, full stripe). */
uint32_t raid_vol_opt_gran(const struct raid_vol *vol);
uint32_t raid_vol_opt_len(const struct raid_vol *vol);
/* Logical block provisioning of a volume (SBC-3 4.7), constant while it is
 * open. Thick volumes: all false / 0. */
struct raid_vol_prov {
	bool thin;             /* RAID_OP_DISCARD and RAID_OP_MAP_STATUS work */
	bool discard_zeroes;   /* blocks read after a discard, or never written,
	                        * return zeroes (always true where thin) */
	uint32_t gran;         /* bytes: a discard frees space only in whole,
	                        * aligned units of this size; other bytes of its
	                        * range are zeroed in place */
	uint64_t discard_max;  /* largest RAID_OP_DISCARD, bytes (>= gran) */
};
void raid_vol_provisioning(const struct raid_vol *vol, struct raid_vol_prov *out);
/* Thin-provisioning soft threshold (SBC-3 4.7.3.7, RAID pools'
 * thin_threshold): how many times the space the thin volumes of @vol's pool
 * take rose from below the pool's threshold (a percentage of the space
 * thin volumes may take) to it or over it, each time logged once. It never
 * falls; a caller that remembers the last value it saw tells its initiators
 * (a THIN PROVISIONING SOFT THRESHOLD REACHED unit attention) when it grew.
 * 0 on thick volumes and on backends without a threshold. Any thread,
 * cheap (an atomic load). */
uint64_t raid_vol_thin_threshold_events(const struct raid_vol *vol);
/* Largest RAID_OP_WRITE_SAME request in bytes the volume takes; 0 when it has
 * no write-same of its own (RAID pools: the caller writes the pattern). */
uint64_t raid_vol_write_same_max(const struct raid_vol *vol);
/* 0 when the volume serves I/O; -EINPROGRESS while its backend prepares it
 * in the background (writes it out in full); -ENOLINK while this node is
 * fenced from the volume's shared storage (another node may be taking it
 * over; when and why is the backend's, see raid/README.md): then every
 * request completes with -ENOLINK; otherwise the negative errno that
 * stopped the preparation (the volume stays unusable; a restart resumes
 * it). Until 0 (or -ENOLINK), raid_vol_submit() refuses everything but
 * FLUSH with -EBUSY. Any thread, cheap (atomics). Once 0 it stays 0 but for
 * -ENOLINK spells (RAID volumes: always 0). */
int raid_vol_ready(const struct raid_vol *vol);
/* raid_vol_ready(), and while it is -EINPROGRESS how far the preparation
 * got in *@frac: bytes done / size in 65536ths, 0..65535 (SPC-4's PROGRESS
 * INDICATION); *@frac is 0 otherwise. Any thread, cheap (atomics). */
int raid_vol_ready_progress(const struct raid_vol *vol, uint16_t *frac);
/* Grow the volume to @size (bytes, or a percentage of its pool as at
 * creation) while it is in use: requests already past the old end are
 * refused as before, requests after the return may use the new blocks.
 * The new size is durable (the volume table of every member) before the
 * return. 0 also when it already has that size; -EINVAL for a size smaller
 * than the volume (shrinking is refused) or not a multiple of 512; -ENOSPC
 * when the space after the volume is taken or the pool ends (a volume never
 * moves); -EOPNOTSUPP when its backend cannot grow volumes; other -errno
 * when the volume table could not be written (the size stays). The reason
 * is logged. Any thread but a reactor's (it waits for the members). */
int raid_vol_resize(struct raid_vol *vol, const struct conf_size *size);
/* A volume another node may have grown (raid_vol_shared(); after its
 * notice on the shared-state channel): re-reads the size from the store.
 * It only grows; 0 also when unchanged, or the store's -errno. Blocking:
 * any thread but a reactor's. Volumes never shared: 0, nothing to do. */
int raid_vol_refresh(struct raid_vol *vol);

/* Deferred write errors (SPC-4 deferred errors): how many times, since the
 * volume was opened, a write-out of data it had already acknowledged failed
 * (a raid5/6 stripe-cache row, see raid/README.md "Stripe cache"). One per
 * failure of data no earlier count covered: a row whose write-out fails
 * again and again over the same data counts once; a write acknowledged
 * into it after a failure makes its next failure count again. The data
 * stays in the cache (reads return it, FLUSH fails until it is written);
 * this only tells the caller that someone must be told. It never falls.
 * Always 0 on volumes without a write-back cache (raid0/1/10, and every
 * backend but RAID's raid5/6). Any
 * thread, cheap (an atomic load). */
uint64_t raid_vol_write_failures(const struct raid_vol *vol);

/* ---- pools ---- */

/* Assemble (or, for missing members with create_size, create) the pool
 * described by @cp. Problems are logged one line each; returns 0 or a
 * negative errno. */
int raid_pool_open(const struct conf_pool *cp, struct raid_pool **out);
/* Flush and mark clean; waits for background work to stop. */
void raid_pool_close(struct raid_pool *pool);
/* Mapped reads of the pool's volumes whose hold (struct raid_io_hold) is
 * not released yet. raid_pool_close() needs 0: a caller that found no
 * command inside the pool's volumes and then 0 here may close it. */
unsigned raid_pool_holds(const struct raid_pool *pool);

/* Open the volume @name, creating it thick (reserved in full, recorded in the
 * pool metadata) if it does not exist. An existing volume must match @size
 * (a percentage is resolved against usable capacity as at creation). */
int raid_vol_open(struct raid_pool *pool, const char *name, const struct conf_size *size,
		  struct raid_vol **out);
/* raid_vol_open() with RAID_VOL_* @flags. RAID_VOL_THIN: the volume is thin
 * (space is taken by writes and given back by RAID_OP_DISCARD; a new one is
 * not written out); -EOPNOTSUPP (logged) when its backend has no thin
 * volumes. Without flags the same as raid_vol_open(). */
#define RAID_VOL_THIN 0x1u
int raid_vol_open_ex(struct raid_pool *pool, const char *name, const struct conf_size *size,
		     unsigned flags, struct raid_vol **out);

/* Undoes one raid_vol_open(): the last close of a volume frees what the
 * pool keeps in memory for it (its extent map, for a thin one), so that it
 * may be deleted, rolled back or inflated; the volume itself stays in the
 * pool. The caller guarantees that no request of it is in flight and that
 * no hold of the pool is left (raid_pool_holds() == 0). Opens and closes
 * come from one thread (the daemon's control thread). A backend without
 * closes keeps the volume open until raid_pool_close(). NULL: nothing. */
void raid_vol_close(struct raid_vol *vol);

uint64_t raid_pool_usable_bytes(const struct raid_pool *pool);

/* ---- management (rtgtctl) ---- */

#define RAID_MEMBER_LAT_BUCKETS 32u

struct raid_member_info {
	char path[256];        /* as configured */
	const char *state;     /* "active" | "faulty" | "spare" | "rebuilding" | "missing"
	                        * | "replacing" */
	char replaces[256];    /* "replacing": the path of the member it replaces */
	uint64_t read_bytes, write_bytes, read_ops, write_ops;
	/* member I/O latency, submission to completion of the real I/O, in
	 * microseconds: upper bound of the log2 bucket holding the percentile
	 * (0 when no I/O of that kind completed yet) */
	uint64_t read_lat_p50_us, read_lat_p99_us, write_lat_p50_us, write_lat_p99_us;
	/* the slowest I/O of each kind so far, exact, in microseconds */
	uint64_t read_lat_max_us, write_lat_max_us;
	/* sum of the latencies counted in lat_hist ([0] reads, [1] writes), us */
	uint64_t lat_sum_us[2];
	/* the histograms themselves, for quantiles over an interval
	 * (rtgtctl stats --watch): [0] reads, [1] writes; bucket b counts
	 * I/Os of [2^(b-1), 2^b) us (b = 0: under 1 us) */
	uint64_t lat_hist[2][RAID_MEMBER_LAT_BUCKETS];
	/* nanoseconds with at least one I/O of this member submitted and not
	 * handed back yet (under the HDD model: until the modelled disk is done) */
	uint64_t busy_ns;
};

struct raid_pool_info {
	char name[64];
	const char *level;     /* "raid5", ... */
	const char *state;     /* "optimal" | "degraded" | "rebuilding" | "failed"
	                        * | "provisioning" (a volume being prepared in
	                        * the background, raid_vol_ready; rebuild_progress
	                        * and rebuild_eta_s then describe it) | "fenced"
	                        * (raid_vol_ready's -ENOLINK) */
	double rebuild_progress; /* 0.0 .. 1.0 */
	double rebuild_eta_s;    /* < 0 when unknown */
	uint64_t usable_bytes;
	uint64_t chunk;
	unsigned n_members;     /* members and spares both listed in members[] */
	struct raid_member_info members[64];
	unsigned n_volumes;
	struct {
		char name[64];
		uint64_t bytes;
		/* background preparation (raid_vol_ready); state NULL when
		 * the pool's volumes never have any (RAID pools) */
		const char *state;   /* "ready" | "provisioning" | "failed" */
		uint64_t prov_done, prov_total; /* bytes written out / to write */
		double prov_eta_s;   /* provisioning: < 0 when unknown */
		int prov_error;      /* failed: negative errno */
		bool thin;           /* RAID pools: space taken as written */
		uint64_t allocated;  /* thin: bytes of the pool it takes */
		/* thin: of those, bytes another map (a snapshot, or the
		 * volume a snapshot was taken of) names too */
		uint64_t shared;
		bool snapshot;       /* "VOLUME@SNAP", read-only */
		char origin[64];     /* a snapshot's volume, a clone's snapshot */
		bool open;           /* a LUN of this daemon opened it */
	} volumes[64];
	/* RAID pools with thin volumes: the space thin volumes take, what they
	 * may take in all (the pool less thick volumes and extent maps), and
	 * the soft threshold in percent; all 0 without thin volumes */
	uint64_t thin_used_bytes, thin_space_bytes;
	unsigned thin_threshold;
	uint64_t scrub_mismatches;
	const char *scrub_state; /* "idle" | "running" | "done" */
	/* initial sync of a new pool over members that held data */
	bool syncing;            /* not finished yet */
	double sync_progress;    /* 0.0 .. 1.0 (1.0 once synced) */
	double sync_eta_s;       /* < 0 when unknown or not running */
	uint64_t bad_bytes;      /* member bytes recorded bad (unreadable) */
	/* member bytes (per member) in regions a crash left to resync, or the
	 * initial sync has not reached: until then a lost member cannot be
	 * made up for there (reads there answer MEDIUM ERROR) */
	uint64_t unsynced_bytes;
	/* a proactive replacement (raid_pool_replace) running: the member in
	 * state "replacing" names the one it replaces (members[].replaces) */
	bool replacing;
	double replace_progress; /* 0.0 .. 1.0 */
	double replace_eta_s;    /* < 0 when unknown */
	/* a reshape (raid_pool_grow) running: level is the new one */
	bool reshaping;
	const char *reshape_from_level;
	unsigned reshape_from_members;
	uint64_t reshape_done_bytes, reshape_total_bytes; /* logical bytes moved / to move */
	double reshape_progress; /* 0.0 .. 1.0 */
	double reshape_eta_s;    /* < 0 when unknown */
	int reshape_error;       /* the last window failed (-errno, retried), 0 */
	bool reshape_restored;   /* this start found a window's copy and put it back */
};

int raid_pool_info(struct raid_pool *pool, struct raid_pool_info *out);
/* ---- events (rtgtctl events, alert hooks, metrics) ----
 * raid reports what an operator must hear about through one process-wide
 * callback. It runs on whichever thread saw the event (a reactor completing
 * member I/O, the pool's background thread, the control thread), possibly
 * with pool locks held: it must not block, must not call into raid, and
 * must copy what it keeps (the strings live only during the call). The
 * daemon's handler queues the event and returns. */
enum raid_event_kind {
	RAID_EV_MEMBER_FAULTY,    /* member, slot, err, detail: why; pool_state after it */
	RAID_EV_POOL_FAILED,      /* beyond redundancy; detail: which members are lost */
	RAID_EV_POOL_DEGRADED,    /* started without some members; count: how many */
	RAID_EV_REBUILD_STARTED,  /* member: the spare, slot; detail: the member it replaces */
	RAID_EV_REBUILD_DONE,     /* member: the rebuilt member, slot */
	RAID_EV_REBUILD_STOPPED,  /* member, slot; detail: why (not at shutdown) */
	RAID_EV_SCRUB_DONE,       /* count: mismatches; repaired; complete (false: stopped) */
	RAID_EV_SPARE_ADDED,      /* member */
	RAID_EV_MEMBER_REMOVED,   /* member, slot */
	RAID_EV_REPLACE_STARTED,  /* member: the spare, slot: the one replaced; detail: its path */
	RAID_EV_REPLACE_DONE,     /* member: the new member, slot; detail: the old one's path */
	RAID_EV_REPLACE_STOPPED,  /* member: the spare, slot; detail: why (not at shutdown) */
	RAID_EV_THIN_THRESHOLD,   /* thin volumes' space rose to the soft threshold;
	                           * count: bytes taken; detail: "N% of M MiB, threshold T%" */
	RAID_EV_THIN_FULL,        /* no space left for thin volumes: writes needing
	                           * new space fail; count: bytes taken */
	RAID_EV_RESHAPE_STARTED,  /* member: the new raid disk, slot; detail: the new level */
	RAID_EV_RESHAPE_DONE,     /* detail: the level, count: raid disks now */
	RAID_EV_RESHAPE_FAILED,   /* did not start: member: the file, err, detail: why */
};

struct raid_event {
	enum raid_event_kind kind;
	const char *pool;         /* never NULL */
	const char *member;       /* path as configured, or NULL */
	int slot;                 /* -1 when none */
	int err;                  /* 0 or the negative errno behind it */
	uint64_t count;
	bool repaired, complete;
	const char *detail;       /* NULL or a short text */
	const char *pool_state;   /* the pool's state after the event (raid_pool_info's) */
};

typedef void (*raid_event_fn)(void *arg, const struct raid_event *ev);
/* Registers @fn (NULL: none). Call before pools are opened and unset only
 * once they are closed; not meant to change while events may fire. */
void raid_set_event_fn(raid_event_fn fn, void *arg);
const char *raid_event_kind_name(enum raid_event_kind kind);

const char *raid_pool_name(const struct raid_pool *pool);
/* @member: index in the members list or path. */
int raid_pool_fail(struct raid_pool *pool, const char *member);
int raid_pool_add_spare(struct raid_pool *pool, const char *path);
int raid_pool_scrub(struct raid_pool *pool, bool repair);
/* Proactive replacement of a raid disk that still works (@member as for
 * raid_pool_fail), onto a spare: the spare is filled with a copy of it
 * in the background (rate-capped like a rebuild; rows it cannot read are
 * rebuilt from redundancy) while it keeps serving, then takes its slot and
 * the old one is left faulty; the pool stays redundant throughout.
 * -ENOENT: no such member; -EINVAL: not an active raid disk; -ENOSPC: no
 * spare; -EBUSY: the pool is not optimal, or a replacement or rebuild runs;
 * -EOPNOTSUPP: a level without redundancy or a pool without members. */
int raid_pool_replace(struct raid_pool *pool, const char *member);
/* Detach a faulty (or missing) member or a spare, @member as for
 * raid_pool_fail: the superblocks of the others record its slot as empty
 * (a raid disk's slot waits for a spare, a spare's slot is freed) and its
 * file is closed but left as it is. -EBUSY: active or rebuilding (fail it
 * first); -ENOENT: no such member; -EALREADY: slot already empty;
 * -EOPNOTSUPP: a pool without members of its own. */
int raid_pool_remove(struct raid_pool *pool, const char *member);
/* rtgtctl grow / convert: @paths join as more raid disks (one; a pair for
 * raid10) and the pool is reshaped onto them in the background
 * (raid/reshape.c), to @level (NULL: the
 * pool's own; "raid5" converts a raid1 of two, "raid6" a raid5). 0 once
 * the background thread has it (raid_pool_info: reshaping, progress; a
 * start that fails on I/O posts RAID_EV_RESHAPE_FAILED); -errno with a
 * line in @err when refused. */
int raid_pool_grow(struct raid_pool *pool, const char *const *paths, unsigned npaths,
		   const char *level, char *err, size_t errlen);

/* ---- snapshots (raid/README.md "Snapshots") ----
 * A snapshot "VOL@SNAP" of thin volume @vol: instant, crash-consistent
 * (every write acknowledged before the call is in it, none admitted after
 * it returns), sharing the volume's extents until either is written;
 * read-only, opened like a volume by its full name. Names: 1..
 * RAID_SNAP_PART_MAX characters of A-Z a-z 0-9 . _ - each. Every refusal
 * is -errno with one line in @why and changes nothing: -ENOENT no such
 * volume, -EEXIST the name is taken, -EINVAL a bad name or @vol is a
 * snapshot, -EOPNOTSUPP a thick volume or a backend without snapshots,
 * -ENOSPC the volume table is full or no room for the snapshot's map,
 * -EBUSY the volume's requests did not drain. */
#define RAID_SNAP_PART_MAX 31u
int raid_pool_snapshot(struct raid_pool *pool, const char *vol, const char *snap, char *why,
		       size_t whylen);
/* Delete snapshot "VOL@SNAP", or volume @name with no snapshots: the
 * table entry goes (durable on every member), then its extents not
 * shared with another are free. -EBUSY: a LUN of this daemon opened it
 * (or the volume still has snapshots), -ENOENT: none by that name. */
int raid_pool_vol_delete(struct raid_pool *pool, const char *name, char *why, size_t whylen);
/* Clone @snap ("VOL@SNAP") into new writable thin volume @name, sharing
 * the snapshot's extents (instant, no data copied); its origin is @snap,
 * which cannot be deleted while the clone depends on it. */
int raid_pool_clone(struct raid_pool *pool, const char *snap, const char *name, char *why,
		    size_t whylen);
/* Make volume VOL what its snapshot @snap ("VOL@SNAP") holds, atomically
 * (the volume table switches maps in one write). -EBUSY while a LUN of
 * this daemon has VOL open unless @force: then the volume's requests are
 * held meanwhile and the caller resets the LU (UNIT ATTENTION to every
 * nexus). */
int raid_pool_rollback(struct raid_pool *pool, const char *snap, bool force, char *why,
		       size_t whylen);
/* Give clone @name extents of its own for every one it shares with its
 * origin, so that it no longer depends on it (origin cleared). */
int raid_pool_vol_inflate(struct raid_pool *pool, const char *name, char *why, size_t whylen);
/* Create volume @name of @size (thin or thick) without opening it. */
int raid_pool_vol_create(struct raid_pool *pool, const char *name, const struct conf_size *size,
			 bool thin, char *why, size_t whylen);
/* What raid_pool_check_maps() found. */
struct raid_maps_check {
	unsigned maps;                 /* thin maps read (volumes, snapshots, clones) */
	uint64_t extents_used;         /* pool extents the maps on disk name */
	uint64_t extents_shared;       /* of those, named by more than one entry */
	unsigned n_problems;           /* 0: consistent */
	char problems[8][320];         /* the first ones, one line each */
};
/* Reads every extent map of the pool from its members again and checks it
 * against itself (no extent named twice by one map, or by two families,
 * or inside a table region) and against what the running daemon counts
 * (each extent's references; none in use that no map names: a leak). Run
 * it on an idle pool: a request in flight may be counted in memory and
 * not yet on disk. 0 (read, whatever it found), or -errno with @why. */
int raid_pool_check_maps(struct raid_pool *pool, struct raid_maps_check *out, char *why,
		    size_t whylen);
/* Whether @vol is a snapshot (its LUN is read-only). */
bool raid_vol_is_snapshot(const struct raid_vol *vol);

/* ---- shared state of a volume ----
 * A volume served by several rtgt nodes at once (the same volume of a
 * shared store opened by two rtgtd) carries small blobs of state that every
 * node must agree on, e.g. persistent reservations. Each blob is named by a
 * short @tag ([a-z0-9_], at most 16 characters) and lives next to the
 * volume, where its backend keeps it (raid/README.md). Every update is an
 * atomic read-modify-write across nodes; every change is announced to all
 * nodes watching the blob, and the update returns only once each live
 * watcher has run its callback (or the timeout passed). RAID volumes are
 * never shared: every call below returns -EOPNOTSUPP for them (and
 * raid_vol_shared() false). */

struct raid_shared_watch;

bool raid_vol_shared(const struct raid_vol *vol);

/* Transforms the current blob (@old, @old_len; NULL/0 when none exists yet)
 * into the new one: sets *@out (malloc'd, taken over by raid) and
 * *@out_len, or leaves *@out NULL to write nothing. Returns 0 or a negative
 * errno (nothing written, the update returns it). May be called more than
 * once per update (another node wrote in between: it runs again on the
 * newer blob), on a helper thread. */
typedef int (*raid_shared_fn)(void *arg, const uint8_t *old, size_t old_len, uint8_t **out,
			      size_t *out_len);
/* Called on @ctx's thread when the update is over: @rc 0 (written and
 * every watcher acknowledged, or nothing to write), -ETIMEDOUT (written,
 * some watcher did not acknowledge within the timeout), or the negative
 * errno of @fn or of the cluster (nothing written). @blob/@len: what was
 * written (valid only during the call; NULL when nothing was). */
typedef void (*raid_shared_done_fn)(void *arg, int rc, const uint8_t *blob, size_t len);
/* Runs the read-modify-write of blob @tag on a helper thread and completes
 * through @done on @ctx's thread (inside raid_ioctx_run(), never inside this
 * call). Returns 0, or a negative errno when it could not start (then @done
 * never runs). */
int raid_vol_shared_update(struct raid_vol *vol, const char *tag, struct raid_ioctx *ctx,
			   raid_shared_fn fn, raid_shared_done_fn done, void *arg);
/* Reads blob @tag now (blocking; start-up): *@out malloc'd (NULL, 0 when it
 * does not exist). */
int raid_vol_shared_read(struct raid_vol *vol, const char *tag, uint8_t **out, size_t *out_len);
/* Sends @msg to every node watching blob @tag and waits (blocking, at most
 * @timeout_ms) for their callbacks; nothing is written. -ETIMEDOUT when
 * some watcher did not answer in time. */
int raid_vol_shared_notify(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
			   unsigned timeout_ms);
/* raid_vol_shared_notify() on a helper thread: returns at once, 0 or a
 * negative errno when it could not start (then @done never runs); @msg is
 * copied. @done(@arg, rc) runs on that helper thread once every watcher
 * answered or @timeout_ms passed, with what raid_vol_shared_notify would
 * have returned. @vol must stay open until @done ran. */
typedef void (*raid_shared_notify_done_fn)(void *arg, int rc);
int raid_vol_shared_notify_async(struct raid_vol *vol, const char *tag, const void *msg,
				 size_t len, unsigned timeout_ms, raid_shared_notify_done_fn done,
				 void *arg);
/* @cb(arg, msg, len, self) runs on a library thread for every update
 * (@msg: the blob written) and notify (@msg: what was sent) of blob @tag,
 * from any node, this one included (@self true); the writer waits until it
 * returns. When the watch breaks (changes may have been missed) it is
 * re-established and @cb runs with the current blob (@len 0 if none, @self
 * false), so the watcher catches up. */
typedef void (*raid_shared_watch_fn)(void *arg, const uint8_t *msg, size_t len, bool self);
int raid_vol_shared_watch(struct raid_vol *vol, const char *tag, raid_shared_watch_fn cb,
			  void *arg, struct raid_shared_watch **out);
/* Stops the watch; no callback runs after it returns. NULL is fine. */
void raid_vol_shared_unwatch(struct raid_shared_watch *w);

#endif
