/*
 * raid/backend.c - raid.h's pools and volumes, whatever stores them: every
 * public entry point below picks the pool's backend (backend.h) and calls
 * its op, or answers for a backend that has none. The only file that knows
 * which backends exist; it holds no state of its own.
 *
 * Layer: backends, the top of raid/ (raid/README.md "Layers"). May call:
 * vol.c (raid_md_backend), rbd.c (raid_rbd_backend), and every backend
 * through its ops table; no file of raid/ calls it.
 */
#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "conf/util.h"
#include "raid/backend.h"

static const struct raid_vol_backend_ops *const backends[] = {
	&raid_md_backend,
	&raid_rbd_backend,
};

static const struct raid_vol_backend_ops *ops_of(const struct raid_vol *vol)
{
	return vol->pool->ops;
}

/*
 * The RAID data path allocates and frees 4 KiB..1 MiB stripe buffers at a
 * high rate, and the target layer its data buffers for every backend. With
 * glibc's defaults the larger ones are mmap()ed or the heap top is trimmed
 * after each burst, and every reuse page-faults the buffer in again
 * (measured: a third of the CPU time of 1 MiB raid6 writes). Keep them in
 * the heap instead; process-wide, once, whichever pool opens first.
 */
static void malloc_tuning(void)
{
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

/* ---- pools ---- */

int raid_pool_open(const struct conf_pool *cp, struct raid_pool **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, malloc_tuning);
	for (unsigned i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		const struct raid_vol_backend_ops *b = backends[i];
		int rc;

		if (!b->serves(cp))
			continue;
		rc = b->pool_open(cp, out);
		if (rc == 0)
			(*out)->ops = b;
		return rc;
	}
	LOG_ERR(RAID_MOD, "pool %s: no backend serves level %d", cp->name, (int)cp->level);
	return -EINVAL;
}

void raid_pool_close(struct raid_pool *pool)
{
	if (!pool)
		return;
	/* the caller waited for raid_pool_holds() to reach 0 */
	RTGT_CHECK(atomic_load(&pool->holds) == 0);
	pool->ops->pool_close(pool);
}

unsigned raid_pool_holds(const struct raid_pool *pool)
{
	return atomic_load(&((struct raid_pool *)pool)->holds);
}

int raid_pool_info(struct raid_pool *pool, struct raid_pool_info *out)
{
	return pool->ops->pool_info(pool, out);
}

int raid_pool_fail(struct raid_pool *pool, const char *member)
{
	/* no members: none of that name */
	return pool->ops->pool_fail ? pool->ops->pool_fail(pool, member) : -ENOENT;
}

int raid_pool_add_spare(struct raid_pool *pool, const char *path)
{
	return pool->ops->pool_add_spare ? pool->ops->pool_add_spare(pool, path) : -ENOTSUP;
}

int raid_pool_snapshot(struct raid_pool *pool, const char *vol, const char *snap, char *why,
		       size_t whylen)
{
	if (!pool->ops->pool_snapshot) {
		snprintf(why, whylen, "pool %s: snapshots are not available on %s pools yet",
			 pool->name, pool->ops->name);
		return -EOPNOTSUPP;
	}
	return pool->ops->pool_snapshot(pool, vol, snap, why, whylen);
}

int raid_pool_vol_delete(struct raid_pool *pool, const char *name, char *why, size_t whylen)
{
	if (!pool->ops->pool_vol_delete) {
		snprintf(why, whylen, "pool %s: deleting volumes is not available on %s pools yet",
			 pool->name, pool->ops->name);
		return -EOPNOTSUPP;
	}
	return pool->ops->pool_vol_delete(pool, name, why, whylen);
}

static int not_here(struct raid_pool *pool, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "pool %s: %s is not available on %s pools yet", pool->name, what,
		 pool->ops->name);
	return -EOPNOTSUPP;
}

int raid_pool_clone(struct raid_pool *pool, const char *snap, const char *name, char *why,
		    size_t whylen)
{
	if (!pool->ops->pool_clone)
		return not_here(pool, "clone", why, whylen);
	return pool->ops->pool_clone(pool, snap, name, why, whylen);
}

int raid_pool_rollback(struct raid_pool *pool, const char *snap, bool force, char *why,
		       size_t whylen)
{
	if (!pool->ops->pool_rollback)
		return not_here(pool, "rollback", why, whylen);
	return pool->ops->pool_rollback(pool, snap, force, why, whylen);
}

int raid_pool_vol_inflate(struct raid_pool *pool, const char *name, char *why, size_t whylen)
{
	if (!pool->ops->pool_inflate)
		return not_here(pool, "volume inflate", why, whylen);
	return pool->ops->pool_inflate(pool, name, why, whylen);
}

int raid_pool_vol_create(struct raid_pool *pool, const char *name, const struct conf_size *size,
			 bool thin, char *why, size_t whylen)
{
	if (!pool->ops->pool_vol_create)
		return not_here(pool, "volume create", why, whylen);
	return pool->ops->pool_vol_create(pool, name, size, thin, why, whylen);
}

int raid_pool_check_maps(struct raid_pool *pool, struct raid_maps_check *out, char *why,
		    size_t whylen)
{
	memset(out, 0, sizeof(*out));
	if (!pool->ops->pool_check)
		return not_here(pool, "check", why, whylen);
	return pool->ops->pool_check(pool, out, why, whylen);
}

bool raid_vol_is_snapshot(const struct raid_vol *vol)
{
	return vol->snapshot;
}

int raid_pool_grow(struct raid_pool *pool, const char *const *paths, unsigned npaths,
		   const char *level, char *err, size_t errlen)
{
	int lvl = -1;   /* the pool's own */

	if (level) {
		for (int l = CONF_RAID0; l <= CONF_RAID10; l++)
			if (!strcmp(level, conf_level_name((enum conf_level)l)))
				lvl = l;
		if (lvl < 0) {
			snprintf(err, errlen, "unknown level '%s' (raid0, raid1, raid5, raid6, raid10)",
				 level);
			return -EINVAL;
		}
	}
	if (!pool->ops->pool_grow) {
		snprintf(err, errlen, "not for this kind of pool (Ceph grows its own)");
		return -EOPNOTSUPP;
	}
	return pool->ops->pool_grow(pool, paths, npaths, lvl, err, errlen);
}

int raid_pool_remove(struct raid_pool *pool, const char *member)
{
	return pool->ops->pool_remove ? pool->ops->pool_remove(pool, member) : -EOPNOTSUPP;
}

int raid_pool_replace(struct raid_pool *pool, const char *member)
{
	return pool->ops->pool_replace ? pool->ops->pool_replace(pool, member) : -EOPNOTSUPP;
}

int raid_pool_scrub(struct raid_pool *pool, bool repair)
{
	return pool->ops->pool_scrub ? pool->ops->pool_scrub(pool, repair) : -ENOTSUP;
}

/* ---- volumes ---- */

int raid_vol_open(struct raid_pool *pool, const char *name, const struct conf_size *size,
		  struct raid_vol **out)
{
	return raid_vol_open_ex(pool, name, size, 0, out);
}

int raid_vol_open_ex(struct raid_pool *pool, const char *name, const struct conf_size *size,
		     unsigned flags, struct raid_vol **out)
{
	int rc = pool->ops->vol_open(pool, name, size, flags, out);

	/* a backend hands the same volume to every open of one name */
	if (!rc)
		atomic_fetch_add(&(*out)->opens, 1);
	return rc;
}

void raid_vol_close(struct raid_vol *vol)
{
	if (!vol)
		return;
	assert(atomic_load(&vol->opens) > 0);
	if (atomic_fetch_sub(&vol->opens, 1) == 1 && ops_of(vol)->vol_close)
		ops_of(vol)->vol_close(vol);
}

uint32_t raid_vol_phys_bytes(const struct raid_vol *vol)
{
	return ops_of(vol)->vol_phys ? ops_of(vol)->vol_phys(vol) : 512;
}

void raid_vol_provisioning(const struct raid_vol *vol, struct raid_vol_prov *out)
{
	memset(out, 0, sizeof(*out));
	if (ops_of(vol)->vol_prov)
		ops_of(vol)->vol_prov(vol, out);
}

uint64_t raid_vol_thin_threshold_events(const struct raid_vol *vol)
{
	return ops_of(vol)->vol_threshold_events ? ops_of(vol)->vol_threshold_events(vol) : 0;
}

int raid_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io)
{
	if (io)
		io->hold = NULL;    /* only the RAID backend's mapped reads set it */
	return ops_of(vol)->vol_submit(vol, ctx, io);
}

uint64_t raid_vol_bytes(const struct raid_vol *vol)
{
	return atomic_load_explicit(&vol->size, memory_order_acquire);
}

const char *raid_vol_name(const struct raid_vol *vol)
{
	return vol->name;
}

void raid_vol_uuid(const struct raid_vol *vol, uint8_t out[16])
{
	memcpy(out, vol->uuid, 16);
}

uint32_t raid_vol_opt_gran(const struct raid_vol *vol)
{
	uint32_t gran, len;

	ops_of(vol)->vol_opt(vol, &gran, &len);
	return gran;
}

uint32_t raid_vol_opt_len(const struct raid_vol *vol)
{
	uint32_t gran, len;

	ops_of(vol)->vol_opt(vol, &gran, &len);
	return len;
}

uint64_t raid_vol_write_same_max(const struct raid_vol *vol)
{
	return ops_of(vol)->vol_write_same_max ? ops_of(vol)->vol_write_same_max(vol) : 0;
}

int raid_vol_ready_progress(const struct raid_vol *vol, uint16_t *frac)
{
	*frac = 0;
	return ops_of(vol)->vol_ready ? ops_of(vol)->vol_ready(vol, frac) : 0;
}

int raid_vol_ready(const struct raid_vol *vol)
{
	uint16_t frac;

	return raid_vol_ready_progress(vol, &frac);
}

int raid_vol_resize(struct raid_vol *vol, const struct conf_size *size)
{
	if (!ops_of(vol)->vol_resize) {
		LOG_ERR(RAID_MOD, "volume %s: %s pools cannot grow volumes", vol->name,
			ops_of(vol)->name);
		return -EOPNOTSUPP;
	}
	return ops_of(vol)->vol_resize(vol, size);
}

int raid_vol_refresh(struct raid_vol *vol)
{
	return ops_of(vol)->vol_refresh ? ops_of(vol)->vol_refresh(vol) : 0;
}

uint64_t raid_vol_write_failures(const struct raid_vol *vol)
{
	return atomic_load_explicit(&vol->write_failures, memory_order_acquire);
}

/* ---- shared state ---- */

bool raid_vol_shared(const struct raid_vol *vol)
{
	return raid_backend_vol_shared(vol);
}

int raid_vol_shared_read(struct raid_vol *vol, const char *tag, uint8_t **out, size_t *out_len)
{
	if (!raid_vol_shared(vol))
		return -EOPNOTSUPP;
	return ops_of(vol)->shared_read(vol, tag, out, out_len);
}

int raid_vol_shared_update(struct raid_vol *vol, const char *tag, struct raid_ioctx *ctx,
			   raid_shared_fn fn, raid_shared_done_fn done, void *arg)
{
	if (!raid_vol_shared(vol))
		return -EOPNOTSUPP;
	return ops_of(vol)->shared_update(vol, tag, ctx, fn, done, arg);
}

int raid_vol_shared_notify(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
			   unsigned timeout_ms)
{
	if (!raid_vol_shared(vol))
		return -EOPNOTSUPP;
	return ops_of(vol)->shared_notify(vol, tag, msg, len, timeout_ms);
}

int raid_vol_shared_notify_async(struct raid_vol *vol, const char *tag, const void *msg,
				 size_t len, unsigned timeout_ms, raid_shared_notify_done_fn done,
				 void *arg)
{
	if (!raid_vol_shared(vol))
		return -EOPNOTSUPP;
	return ops_of(vol)->shared_notify_async(vol, tag, msg, len, timeout_ms, done, arg);
}

int raid_vol_shared_watch(struct raid_vol *vol, const char *tag, raid_shared_watch_fn cb,
			  void *arg, struct raid_shared_watch **out)
{
	if (!raid_vol_shared(vol))
		return -EOPNOTSUPP;
	return ops_of(vol)->shared_watch(vol, tag, cb, arg, out);
}

void raid_vol_shared_unwatch(struct raid_shared_watch *w)
{
	if (w)
		w->ops->shared_unwatch(w);
}
