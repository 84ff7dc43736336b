/*
 * raid/member.h - the member layer (member.c): the top of a member's I/O
 * stack (raid/mlayer.h: member -> fault -> [hdd] -> io_uring) and
 * everything a member counts about its I/O: bytes and operations, busy
 * time, latency histograms.
 */
#ifndef RTGT_RAID_MEMBER_H
#define RTGT_RAID_MEMBER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/util.h"
#include "raid/fault.h"
#include "raid/hdd.h"
#include "raid/ioctx.h"
#include "raid/mlayer.h"
#include "raid/raid.h"

struct raid_pool;

/*
 * A memory-backed member's file mapped read-only and shared (member.c,
 * member_map, on the first RAID_MIO_READ_MAP read): such reads answer
 * with addresses in it, and a request's hold (io.c, struct raid_io_hold)
 * keeps a reference for every piece it lends out, so the mapping outlives
 * the member if need be.
 * It holds a descriptor of its own for raid_mmap_copy: a read of the file,
 * which reports a file cut short as an error where touching the mapping
 * would raise SIGBUS.
 */
struct raid_mmap {
	_Atomic unsigned refs;
	const uint8_t *addr;
	uint64_t len;             /* the file's size when it was mapped */
	int fd;                   /* owned (dup of the member's buffered fd) */
	/* the file turned out shorter than len (raid_mmap_copy met its end):
	 * nothing is lent from it any more, reads go to the file and meet
	 * the short file as a read error, which redundancy can repair */
	_Atomic bool stale;
};

void raid_mmap_get(struct raid_mmap *mm);
void raid_mmap_put(struct raid_mmap *mm);
/* Copies @len bytes at @addr (inside @mm) to @dst by reading the file:
 * 0, or -EIO / -errno when it could not give them all. */
int raid_mmap_copy(const struct raid_mmap *mm, const uint8_t *addr, uint64_t len, uint8_t *dst);

#define RAID_LAT_BUCKETS RAID_MEMBER_LAT_BUCKETS      /* up to 2^31 us (~36 min): the last one is open-ended */
struct raid_member {
	struct raid_pool *pool;
	char path[256];           /* as configured */
	char *rpath;              /* resolved path, owned; NULL when unknown */
	int fd;                   /* -1 when missing/closed; O_DIRECT with direct_io */
	int fd_buf;               /* buffered fd for unaligned I/O (== fd without direct_io) */
	_Atomic unsigned slot;    /* changes on a swap: see the slot table rule in pool.c */
	_Atomic int state;        /* enum raid_mstate */
	uint8_t uuid[16];
	uint64_t file_bytes;
	/* on tmpfs/ramfs: I/O never waits for a device, and io_uring would
	 * hand every request to a worker thread (no non-blocking attempt on
	 * such files); small I/O is then done inline (ioctx.c) */
	bool mem;
	/* mem members: the file's mapping, made by the first RAID_MIO_READ_MAP
	 * read (member.c), one reference held by the member until
	 * raid_member_io_fini; NULL before, and always on other members */
	struct raid_mmap *_Atomic map;
	_Atomic bool map_failed;  /* said once; such a member is read as before */
	_Atomic uint64_t rd_bytes, wr_bytes, rd_ops, wr_ops;
	_Atomic uint64_t rebuild_pos; /* REBUILDING, REPLACING: data bytes below are valid */
	_Atomic uint64_t rebuild_cp;  /* the part of rebuild_pos made durable
	                               * (fdatasync): what superblocks record */
	struct raid_member *retired_next; /* on pool->retired once replaced */
	/* Proactive replacement (rebuild.c replace()): on the raid disk being
	 * replaced, the REPLACING spare that every write to it is copied to
	 * (raid_mio_submit), set under meta_mu, NULL when none; it may still
	 * point at a member that stopped replacing (the state says so), never
	 * at a freed one. On the replacement, while REPLACING: the slot it
	 * replaces. */
	struct raid_member *_Atomic repl;
	_Atomic int repl_for;
	_Atomic unsigned rd_errors;   /* read errors repaired so far */
	/* its I/O stack (member.c): the member layer on top, then fault
	 * injection (tests: raid/fault.h), then the HDD model when the pool
	 * has it (statistics in hdd for tests), then io_uring (ioctx.c) */
	struct raid_mlayer io;
	struct raid_fault fault;
	struct raid_hdd hdd;
	/* mirror read balancing (io.c): reads issued and not done yet, and
	 * where the last one ended (the head, as far as the pool knows) */
	_Atomic unsigned rd_pending;
	_Atomic uint64_t rd_head;
	/* latency (member.c, raid_member_lat): [0] reads, [1] writes; plain
	 * log2 histograms (conf/util.h, sub_bits 0: bucket b counts I/Os of
	 * [2^(b-1), 2^b) microseconds, RAID_LAT_BUCKETS of them) with their
	 * sum and maximum. Lock-free: several reactor threads complete I/O on
	 * one member. Shaped by raid_member_attach. */
	struct conf_hist lat[2];
	/* busy time (member.c): I/Os from
	 * submission to their callback, the start of the current period with
	 * at least one of them, and the nanoseconds of the periods that ended
	 * (iostat's %util over an interval: its growth / the interval) */
	_Atomic unsigned busy_inflight;
	_Atomic uint64_t busy_start_ns, busy_ns;
};


/* A new member's I/O stack (fault -> io_uring) and counters; undone by
 * raid_member_io_fini(). */
void raid_member_io_init(struct raid_member *m);
void raid_member_io_fini(struct raid_member *m);
/* @m belongs to @p from now on: sets m->pool and stacks the HDD model when
 * the pool has it. Before any I/O on @m. */
void raid_member_attach(struct raid_member *m, struct raid_pool *p);

/* Submit one member I/O on @ctx: 0, or -errno (no callback then). The
 * callback runs inside raid_ioctx_run()/poll() of @ctx. */
int raid_mio_submit(struct raid_ioctx *ctx, struct raid_mio *mio);

/* One member I/O's latency (conf_mono_ns() interval) into its histogram
 * (thread-safe). */
void raid_member_lat(struct raid_member *m, bool write, uint64_t ns);
void raid_io_account(struct raid_member *m, bool write, uint64_t len);
/* Busy nanoseconds of @m since it was opened, the running period included. */
uint64_t raid_member_busy_ns(struct raid_member *m);
/* Percentile @pct (0..100) of a histogram, in microseconds (the upper
 * bound of its bucket); 0 for an empty histogram. */
uint64_t raid_lat_pct_us(const struct conf_hist *h, unsigned pct);

#endif
