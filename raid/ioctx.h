/*
 * raid/ioctx.h - the per-thread I/O context (ioctx.c): its io_uring ring,
 * deferred calls, timers, and the bottom layer of the member I/O stack
 * (raid/mlayer.h). Knows nothing of pools, members or requests.
 */
#ifndef RTGT_RAID_IOCTX_H
#define RTGT_RAID_IOCTX_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/time_types.h>

#include "raid/defer.h"
#include "raid/mlayer.h"

struct raid_ioctx;

/* The bottom layer: reads, writes and fsyncs of mio->fd through the
 * submitting ctx's ring (plugged, merged, done inline on memory-backed
 * members when mio->inl_ok). */
struct raid_mlayer *raid_ioctx_mlayer(void);

/* A one-shot timer in the ring of its ctx: fn runs inside that ctx's
 * raid_ioctx_run()/poll() once @when_ns (CLOCK_MONOTONIC) has passed. The
 * struct is the caller's (in a mio's lpriv, say) until fn ran. */
struct raid_iotimer {
	struct __kernel_timespec ts;
	void (*fn)(struct raid_ioctx *ctx, struct raid_iotimer *t);
};
void raid_ioctx_timer_arm(struct raid_ioctx *ctx, struct raid_iotimer *t, uint64_t when_ns);

/* How many mios so far went to the kernel as part of a merged group (plug
 * merging in ioctx.c; for tests and statistics). */
unsigned long raid_ioctx_merged(const struct raid_ioctx *ctx);
/* Member I/Os done inline on a memory-backed member (ioctx.c), ever. */
unsigned long raid_ioctx_inlined(const struct raid_ioctx *ctx);
/* Thread-safe: run fn(arg) inside the next raid_ioctx_run() of @ctx. */
int raid_defer(struct raid_ioctx *ctx, raid_defer_fn fn, void *arg);
void raid_ioctx_io_started(struct raid_ioctx *ctx);
void raid_ioctx_io_done(struct raid_ioctx *ctx);
/* Blocks until at least one completion or deferred call is ready (poll on
 * the eventfd), then runs them; for background threads and tests. */
int raid_ioctx_wait(struct raid_ioctx *ctx, int timeout_ms);
/* Submit prepared SQEs now. */
void raid_ioctx_kick(struct raid_ioctx *ctx);

#endif
