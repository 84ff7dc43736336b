/*
 * raid/fault.h - fault injection (fault.c), a layer of the member I/O stack
 * (raid/mlayer.h) right below the member's own: injected read and write
 * errors over a range, added latency, torn writes, failed submissions.
 * With nothing configured it passes every mio through untouched. For
 * tests, and for a debug control command: every setting is a function
 * call on a member's struct raid_fault, safe from any thread (settings are
 * atomics, read once per request).
 *
 * Ranges are member data-area bytes [off, off + len) (RAID_FAULT_ALL: to
 * the end); a request is affected when it overlaps the range.
 */
#ifndef RTGT_RAID_FAULT_H
#define RTGT_RAID_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/ioctx.h"
#include "raid/mlayer.h"

#define RAID_FAULT_ALL UINT64_MAX

struct raid_fault {
	struct raid_mlayer l;
	/* reads overlapping [rd_a, rd_b) fail with -EIO, until a write
	 * covers the whole range (the disk remapped it) */
	_Atomic uint64_t rd_a, rd_b;
	/* writes overlapping [wr_a, wr_b) are done, then fail with -EIO */
	_Atomic uint64_t wr_a, wr_b;
	/* the next sub_err write submissions fail with -ENOMEM */
	_Atomic unsigned sub_err;
	/* completions of reads / writes are held until this long after
	 * their submission */
	_Atomic uint64_t rd_lat_ns, wr_lat_ns;
	/* writes overlapping [torn_a, torn_b) write only their first
	 * torn_prefix bytes, then complete with torn_res */
	_Atomic uint64_t torn_a, torn_b, torn_prefix;
	_Atomic int torn_res;
};

/* Nothing injected. */
void raid_fault_init(struct raid_fault *f);
/* Stack it on @below. */
void raid_fault_stack(struct raid_fault *f, struct raid_mlayer *below);
/* Remove every injected fault. */
void raid_fault_clear(struct raid_fault *f);

/* Reads overlapping the range fail with -EIO until a write covers all of
 * it; len 0 stops it. */
void raid_fault_read_error(struct raid_fault *f, uint64_t off, uint64_t len);
/* Whether a read error range is still set (not rewritten yet). */
bool raid_fault_read_error_set(const struct raid_fault *f);
/* Writes overlapping the range reach the medium, then fail with -EIO;
 * len 0 stops it. */
void raid_fault_write_error(struct raid_fault *f, uint64_t off, uint64_t len);
/* The next @n write submissions fail with -ENOMEM (as if no bounce buffer
 * could be had); how many are left. */
void raid_fault_submit_error(struct raid_fault *f, unsigned n);
unsigned raid_fault_submit_errors_left(const struct raid_fault *f);
/* Reads / writes complete no earlier than @read_ns / @write_ns after their
 * submission (0: no added latency). */
void raid_fault_latency(struct raid_fault *f, uint64_t read_ns, uint64_t write_ns);
/* Writes overlapping the range write their first @prefix bytes only (the
 * rest of the medium keeps what it held) and complete with @res (0, or
 * -errno); len 0 stops it. */
void raid_fault_torn_write(struct raid_fault *f, uint64_t off, uint64_t len, uint64_t prefix,
			   int res);

/* Crash points, for the crash tests of multi-step changes (snapshots,
 * clones, deletes, rollbacks, copies on write; raid/README.md "Crash
 * points"): when the environment's RTGT_CRASH_POINT names @where, the
 * process SIGKILLs itself there, as a power cut would stop it. Without
 * the variable (every real run) this costs one load. */
void raid_crash_point(const char *where);

#endif
