/*
 * raid/raid.h - the storage engine seen from the target layer.
 *
 * A pool (RAID0/1/5/6/10 over member files or block devices) holds thick
 * volumes. The target layer only sees volumes: it submits struct raid_io
 * requests and gets completions back on the thread that submitted them,
 * through that thread's struct raid_ioctx.
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

/* ---- volume I/O ---- */

enum raid_op {
	RAID_OP_READ,
	RAID_OP_WRITE,
	RAID_OP_FLUSH,          /* off/len ignored: every member, metadata included */
	RAID_OP_COMPARE_WRITE,  /* atomic against every other write to the range */
};

#define RAID_IO_FUA 0x1u    /* durable on every member before completion */

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
	                        * other -errno for internal failures */
	uint64_t miscompare_off; /* with -EILSEQ: byte offset in the range of the
	                          * first differing byte */

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
/* Optimal transfer granularity and length in bytes (chunk, full stripe). */
uint32_t raid_vol_opt_gran(const struct raid_vol *vol);
uint32_t raid_vol_opt_len(const struct raid_vol *vol);

/* ---- pools ---- */

/* Assemble (or, for missing members with create_size, create) the pool
 * described by @cp. Problems are logged one line each; returns 0 or a
 * negative errno. */
int raid_pool_open(const struct conf_pool *cp, struct raid_pool **out);
/* Flush and mark clean; waits for background work to stop. */
void raid_pool_close(struct raid_pool *pool);

/* Open the volume @name, creating it thick (reserved in full, recorded in the
 * pool metadata) if it does not exist. An existing volume must match @size
 * (a percentage is resolved against usable capacity as at creation). */
int raid_vol_open(struct raid_pool *pool, const char *name, const struct conf_size *size,
		  struct raid_vol **out);

uint64_t raid_pool_usable_bytes(const struct raid_pool *pool);

/* ---- management (rtgtctl) ---- */

struct raid_member_info {
	char path[256];        /* as configured */
	const char *state;     /* "active" | "faulty" | "spare" | "rebuilding" | "missing" */
	uint64_t read_bytes, write_bytes, read_ops, write_ops;
	/* member I/O latency, submission to completion of the real I/O, in
	 * microseconds: upper bound of the log2 bucket holding the percentile
	 * (0 when no I/O of that kind completed yet) */
	uint64_t read_lat_p50_us, read_lat_p99_us, write_lat_p50_us, write_lat_p99_us;
};

struct raid_pool_info {
	char name[64];
	const char *level;     /* "raid5", ... */
	const char *state;     /* "optimal" | "degraded" | "rebuilding" | "failed" */
	double rebuild_progress; /* 0.0 .. 1.0 */
	double rebuild_eta_s;    /* < 0 when unknown */
	uint64_t usable_bytes;
	uint64_t chunk;
	unsigned n_members;     /* members and spares both listed in members[] */
	struct raid_member_info members[64];
	unsigned n_volumes;
	struct { char name[64]; uint64_t bytes; } volumes[64];
	uint64_t scrub_mismatches;
	const char *scrub_state; /* "idle" | "running" | "done" */
};

int raid_pool_info(struct raid_pool *pool, struct raid_pool_info *out);
const char *raid_pool_name(const struct raid_pool *pool);
/* @member: index in the members list or path. */
int raid_pool_fail(struct raid_pool *pool, const char *member);
int raid_pool_add_spare(struct raid_pool *pool, const char *path);
int raid_pool_scrub(struct raid_pool *pool, bool repair);
/* Detach a faulty (or missing) member or a spare, @member as for
 * raid_pool_fail: the superblocks of the others record its slot as empty
 * (a raid disk's slot waits for a spare, a spare's slot is freed) and its
 * file is closed but left as it is. -EBUSY: active or rebuilding (fail it
 * first); -ENOENT: no such member; -EALREADY: slot already empty;
 * -EOPNOTSUPP: rbd pool. */
int raid_pool_remove(struct raid_pool *pool, const char *member);

#endif
