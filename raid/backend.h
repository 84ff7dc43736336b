/*
 * raid/backend.h - volume backends behind raid.h, private to raid/.
 *
 * raid.h knows pools and volumes only; what stores a volume's bytes is the
 * pool's backend, one struct raid_vol_backend_ops each (in the manner of
 * SPDK's bdev function tables). backend.c holds the public entry points of
 * raid.h for pools and volumes: each finds the backend through p->ops and
 * calls its op, so no backend file calls another backend's code and none
 * needs to know which others exist. Two backends:
 *
 *   raid_md_backend   RAID0/1/5/6/10 over member files or block devices:
 *                     pool.c (assembly), pool_admin.c (info,
 *                     management), vol.c (thick
 *                     extents, the table), io.c (requests), rebuild.c (scrub)
 *   raid_rbd_backend  volumes that are RBD images: rbd.c (the table, pools,
 *                     images, requests), rbd_prov.c (thick write-out),
 *                     rbd_pr.c (shared state), rbd_fence.c, rbd_meta.c
 *                     (image metadata); see rbd_int.h
 *
 * A backend's pool is a struct raid_pool and its volumes struct raid_vol
 * (a backend's own structs may embed them first); backend.c sets p->ops
 * once the backend's pool_open succeeded and never changes it. An op left
 * NULL means the backend has no such thing; the entry point then answers
 * as written next to the op.
 */
#ifndef RTGT_RAID_BACKEND_H
#define RTGT_RAID_BACKEND_H

#include "raid/raid_int.h"

struct raid_vol_backend_ops {
	const char *name;
	/* Whether pools like @cp are this backend's (its levels). Required. */
	bool (*serves)(const struct conf_pool *cp);

	/* ---- pools (raid.h "pools", "management") ---- */
	int (*pool_open)(const struct conf_pool *cp, struct raid_pool **out);  /* required */
	void (*pool_close)(struct raid_pool *p);                              /* required */
	int (*pool_info)(struct raid_pool *p, struct raid_pool_info *out);    /* required */
	int (*pool_fail)(struct raid_pool *p, const char *member);            /* NULL: -ENOENT */
	int (*pool_add_spare)(struct raid_pool *p, const char *path);        /* NULL: -ENOTSUP */
	int (*pool_remove)(struct raid_pool *p, const char *member);          /* NULL: -EOPNOTSUPP */
	int (*pool_grow)(struct raid_pool *p, const char *const *paths, unsigned npaths, int lvl, char *err,
			 size_t errlen);                                      /* NULL: -EOPNOTSUPP */
	int (*pool_scrub)(struct raid_pool *p, bool repair);                  /* NULL: -ENOTSUP */
	int (*pool_replace)(struct raid_pool *p, const char *member);         /* NULL: -EOPNOTSUPP */

	/* ---- volumes (raid.h "volume I/O") ---- */
	/* raid_vol_open_ex(); @flags RAID_VOL_*, a backend refuses (and logs)
	 * those it does not have */
	int (*vol_open)(struct raid_pool *p, const char *name, const struct conf_size *size,
			unsigned flags, struct raid_vol **out);               /* required */
	/* raid_vol_submit()'s whole contract, argument checks included */
	int (*vol_submit)(struct raid_vol *v, struct raid_ioctx *ctx, struct raid_io *io); /* required */
	/* raid_vol_close()'s last close (v->opens is 0 again). NULL: the
	 * volume stays open until pool_close */
	void (*vol_close)(struct raid_vol *v);
	/* raid_vol_opt_gran() and raid_vol_opt_len() */
	void (*vol_opt)(const struct raid_vol *v, uint32_t *gran, uint32_t *len);   /* required */
	/* raid_vol_ready(), with *@frac as raid_vol_ready_progress() wants it
	 * (@frac never NULL). NULL: always ready (0, *frac 0). */
	int (*vol_ready)(const struct raid_vol *v, uint16_t *frac);
	uint64_t (*vol_write_same_max)(const struct raid_vol *v);            /* NULL: 0 */
	/* raid_vol_phys_bytes(); NULL: 512 */
	uint32_t (*vol_phys)(const struct raid_vol *v);
	/* raid_vol_provisioning(); NULL: thick (all 0) */
	void (*vol_prov)(const struct raid_vol *v, struct raid_vol_prov *out);
	/* raid_vol_thin_threshold_events(); NULL: 0 */
	uint64_t (*vol_threshold_events)(const struct raid_vol *v);
	/* raid_vol_resize(): the volume grows to @size (raid.h has the
	 * contract). NULL: -EOPNOTSUPP. */
	int (*vol_resize)(struct raid_vol *v, const struct conf_size *size);
	/* raid_vol_refresh(). NULL: 0 */
	int (*vol_refresh)(struct raid_vol *v);
	/* raid_pool_snapshot(), raid_pool_vol_delete(): raid.h has the
	 * contract; *@why (@wl bytes) the reason of a refusal. NULL:
	 * -EOPNOTSUPP. */
	int (*pool_snapshot)(struct raid_pool *p, const char *vol, const char *snap, char *why,
			     size_t wl);
	int (*pool_vol_delete)(struct raid_pool *p, const char *name, char *why, size_t wl);
	/* raid_pool_clone(), raid_pool_rollback(), raid_pool_vol_inflate(),
	 * raid_pool_vol_create(): the same. NULL: -EOPNOTSUPP. */
	int (*pool_clone)(struct raid_pool *p, const char *snap, const char *name, char *why,
			  size_t wl);
	int (*pool_rollback)(struct raid_pool *p, const char *snap, bool force, char *why,
			     size_t wl);
	int (*pool_inflate)(struct raid_pool *p, const char *name, char *why, size_t wl);
	int (*pool_vol_create)(struct raid_pool *p, const char *name, const struct conf_size *size,
			       bool thin, char *why, size_t wl);
	/* raid_pool_check_maps(). NULL: -EOPNOTSUPP. */
	int (*pool_check)(struct raid_pool *p, struct raid_maps_check *out, char *why, size_t wl);

	/* ---- shared state (raid.h "shared state of a volume") ----
	 * All set or all NULL; NULL: volumes never shared (raid_vol_shared()
	 * false, the calls -EOPNOTSUPP). A watch the backend makes starts with
	 * a struct raid_shared_watch (below). */
	int (*shared_read)(struct raid_vol *v, const char *tag, uint8_t **out, size_t *out_len);
	int (*shared_update)(struct raid_vol *v, const char *tag, struct raid_ioctx *ctx,
			     raid_shared_fn fn, raid_shared_done_fn done, void *arg);
	int (*shared_notify)(struct raid_vol *v, const char *tag, const void *msg, size_t len,
			     unsigned timeout_ms);
	int (*shared_notify_async)(struct raid_vol *v, const char *tag, const void *msg,
				   size_t len, unsigned timeout_ms,
				   raid_shared_notify_done_fn done, void *arg);
	int (*shared_watch)(struct raid_vol *v, const char *tag, raid_shared_watch_fn cb,
			    void *arg, struct raid_shared_watch **out);
	void (*shared_unwatch)(struct raid_shared_watch *w);
};

/* The first member of every backend's watch: raid_vol_shared_unwatch()
 * gets nothing else to find the backend by. */
struct raid_shared_watch {
	const struct raid_vol_backend_ops *ops;
};

/* raid_vol_shared() (raid.h), here so that a backend's own shared-state
 * ops can check it without calling up into backend.c. */
static inline bool raid_backend_vol_shared(const struct raid_vol *vol)
{
	return vol && vol->pool && vol->pool->ops && vol->pool->ops->shared_update;
}

extern const struct raid_vol_backend_ops raid_md_backend;   /* vol.c */
extern const struct raid_vol_backend_ops raid_rbd_backend;  /* rbd.c */

/* ---- the RAID backend's entry points, spread over its files ---- */
/* pool.c */
int raid_md_pool_open(const struct conf_pool *cp, struct raid_pool **out);
void raid_md_pool_close(struct raid_pool *p);
/* pool_admin.c */
int raid_md_pool_info(struct raid_pool *p, struct raid_pool_info *out);
int raid_md_pool_fail(struct raid_pool *p, const char *member);
int raid_md_pool_add_spare(struct raid_pool *p, const char *path);
int raid_md_pool_remove(struct raid_pool *p, const char *member);
int raid_md_pool_grow(struct raid_pool *p, const char *const *paths, unsigned npaths, int level,
		      char *err, size_t errlen);
int raid_md_pool_replace(struct raid_pool *p, const char *member);
/* rebuild.c */
int raid_md_pool_scrub(struct raid_pool *p, bool repair);
/* io.c */
int raid_md_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io);
/* The same for a thick volume's own requests: RAID_IO_MAP honoured (io.c,
 * "mapped reads"); raid_md_vol_submit never lends member memory, so what
 * thin.c reads through it is always copied. */
int raid_md_vol_submit_thick(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io);
/* thin.c: thin volumes (see there). The pool's thin state is made by
 * raid_thin_pool_load (the first volume open or resize, without meta_mu;
 * then raid_thin_lock serializes opens and resizes, meta_mu inside it). */
int raid_thin_pool_load(struct raid_pool *p);
void raid_thin_pool_free(struct raid_pool *p);
void raid_thin_lock(struct raid_pool *p);
void raid_thin_unlock(struct raid_pool *p);
/* The pool's thin extent size in bytes (what new thin entries record). */
uint64_t raid_thin_ext(const struct raid_pool *p);
/* Bytes a thin volume of @bytes needs for its extent map. */
uint64_t raid_thin_map_bytes(const struct raid_pool *p, uint64_t bytes);
/* meta_mu held: true when [a, b) of the pool holds thin data (*@next: the
 * end of its first extent of it); else [a, b) is reserved at once, in the
 * same hold of the allocator's lock, as the region about to enter the
 * table, until raid_thin_pending(p, 0, 0). */
bool raid_thin_reserve(const struct raid_pool *p, uint64_t a, uint64_t b, uint64_t *next);
/* meta_mu held: [a, b) is the region about to be added to the table
 * (a == b: none; the table's own regions are re-marked either way). */
void raid_thin_pending(struct raid_pool *p, uint64_t a, uint64_t b);
/* The largest thin volume a map region of @region bytes holds. */
uint64_t raid_thin_max_bytes(const struct raid_pool *p, uint64_t region);
/* Bytes of a map for a volume of @bytes that never grows (a snapshot's). */
uint64_t raid_thin_snap_map_bytes(const struct raid_pool *p, uint64_t bytes);
/* Growing open thin volume @v to @bytes (within its region): the map
 * blocks it gains written empty (meta_mu not held), then, once the table
 * holds the size, its in-memory state and size. */
int raid_thin_grow_map(struct raid_vol *v, uint64_t bytes);
int raid_thin_grow_mem(struct raid_vol *v, uint64_t bytes);
/* Write the empty map of the new thin volume @sv (not in the table yet);
 * meta_mu not held. */
int raid_thin_map_init(struct raid_pool *p, const struct raid_sb_vol *sv);
/* Give the opened volume @v its loaded thin state. */
/* Snapshot of the thin volume whose UUID is @origin, described by table
 * entry @nv (its map region reserved, RAID_SBV_SNAP, the origin's size):
 * the origin frozen (requests admitted drained, new ones held) while its
 * map is copied and its extents counted once more, then the new map
 * written. The snapshot exists once the caller's table names it; until
 * then raid_thin_forget() undoes it. *@frozen_us: how long requests were
 * held. open_mu held, meta_mu not. -EBUSY: in-flight requests did not
 * finish in time. */
int raid_thin_snapshot(struct raid_pool *p, const uint8_t origin[16], const struct raid_sb_vol *nv,
		       uint64_t *frozen_us);
/* Drop not-open thin volume @uuid from memory, its extents' references
 * with it (a volume or snapshot the table no longer names). open_mu held. */
int raid_thin_forget(struct raid_pool *p, const uint8_t uuid[16]);
/* Rollback of thin volume @vol to its snapshot @snap (both UUIDs): a new
 * map for the volume, described by @nv (its new region, the volume's UUID
 * and size), holding the snapshot's entries (counted once more) and
 * written; an open volume stays frozen until _finish. Then the caller
 * switches the table to @nv and calls _finish with @commit (the table
 * written: the volume serves the new map, the old one's references go)
 * or without (nothing changed). open_mu held, meta_mu not. */
struct raid_thin;
int raid_thin_rollback_prepare(struct raid_pool *p, const uint8_t vol[16], const uint8_t snap[16],
			       const struct raid_sb_vol *nv, struct raid_thin **out);
void raid_thin_rollback_finish(struct raid_pool *p, const uint8_t vol[16], struct raid_thin *r,
			       bool commit);
/* Give not-open thin volume @uuid its own copy of every extent it shares;
 * *@copied counts them. -EBUSY when open. open_mu held, meta_mu not. */
int raid_thin_inflate(struct raid_pool *p, const uint8_t uuid[16], uint64_t *copied);
/* raid_pool_check_maps() of the thin maps: open_mu held, meta_mu not. */
int raid_thin_check_pool(struct raid_pool *p, struct raid_maps_check *out);
/* Bytes of thin volume @uuid's extents, and of those another map shares. */
void raid_thin_space(struct raid_pool *p, const uint8_t uuid[16], uint64_t *alloc,
		     uint64_t *shared);
int raid_thin_attach(struct raid_pool *p, unsigned slot, struct raid_vol *v);
/* Undoes raid_thin_attach at the volume's last close: its map kept as
 * loaded, not open (no request of it in flight). open_mu and meta_mu held. */
int raid_thin_detach(struct raid_pool *p, struct raid_vol *v);
void raid_thin_vol_free(struct raid_vol *v);
int raid_thin_submit(struct raid_vol *v, struct raid_ioctx *ctx, struct raid_io *io);
void raid_thin_prov(const struct raid_vol *v, struct raid_vol_prov *out);
uint64_t raid_thin_threshold_events(const struct raid_vol *v);
/* Thin data bytes taken and the bytes thin volumes may take in all. */
void raid_thin_usage(struct raid_pool *p, uint64_t *data, uint64_t *cap);
/* Bytes of the pool thin volume @v takes (0 for thick ones). */
uint64_t raid_thin_allocated(const struct raid_vol *v);
/* The invariants at the top of thin.c (tests). */
bool raid_thin_check(struct raid_vol *v);

#endif
