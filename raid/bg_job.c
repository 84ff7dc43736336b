/*
 * raid/bg_job.c - what the background thread's jobs share: whether they
 * are asked to stop, their pacing to rebuild_mbps, and writing out the
 * stripe cache while waiting on the thread's own I/O context. Below
 * rebuild.c (the thread and its rebuild, resync, scrub and replace) and
 * reshape.c (which that thread runs), so that neither calls the other
 * for them.
 *
 * Layer: background-base, the bottom of the background work
 * (raid/README.md "Layers"). May call:
 * io.c (raid_pool_cache_flush), ioctx.c, conf/ (the clock).
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/ioctx.h"
#include "raid/raid_int.h"

bool raid_bg_stop_requested(struct raid_pool *p)
{
	bool s;

	pthread_mutex_lock(&p->bg_mu);
	s = p->bg_stop;
	pthread_mutex_unlock(&p->bg_mu);
	return s;
}

static void flush_cb(struct raid_io *io)
{
	*(bool *)io->arg = true;
}

int raid_bg_cache_flush(struct raid_pool *p, struct raid_ioctx *ctx, uint64_t min_age_ms)
{
	struct raid_io io;
	bool done = false;
	int rc;

	memset(&io, 0, sizeof(io));
	io.op = RAID_OP_FLUSH;
	io.cb = flush_cb;
	io.arg = &done;
	rc = raid_pool_cache_flush(p, ctx, &io, min_age_ms);
	if (rc)
		return rc;
	while (!done)
		raid_ioctx_wait(ctx, 100);
	if (io.result)
		LOG_ERR(RAID_MOD, "pool %s: writing out cached stripes failed: %s", p->name,
			strerror(-io.result));
	return io.result;
}

void raid_bg_pace(struct raid_pool *p, double t0, uint64_t bytes)
{
	unsigned mbps = p->rebuild_mbps;   /* once: a reload may change it */

	if (!mbps)
		return;
	for (;;) {
		double want = (double)bytes / ((double)mbps * 1e6);
		double el = (conf_mono_ns() / 1e9) - t0;

		if (el >= want || raid_bg_stop_requested(p))
			break;
		usleep((useconds_t)((want - el > 0.05 ? 0.05 : want - el) * 1e6) + 1);
	}
}
