/*
 * raid/rbd_int.h - RBD pools (raid/rbd.c), private to raid/.
 *
 * A pool of level CONF_RBD is a struct raid_pool whose volumes are Ceph RBD
 * images. The public raid_* entry points of pool.c, vol.c and io.c hand such
 * a pool (p->level == CONF_RBD) to the functions below, so the target layer
 * keeps seeing only raid.h. Built without librbd (no <rbd/librbd.h> at
 * compile time) every one of them refuses with -ENOTSUP and a log line.
 */
#ifndef RTGT_RAID_RBD_INT_H
#define RTGT_RAID_RBD_INT_H

#include "raid/raid_int.h"

/* Connect to the cluster of @cp (ceph_conf, ceph_id, keyring) and open its
 * rbd_pool. Blocking; meant for start-up. */
int raid_rbd_pool_open(const struct conf_pool *cp, struct raid_pool **out);
/* Flush and close every image, disconnect, free @p. */
void raid_rbd_pool_close(struct raid_pool *p);
/* Open image @name, creating it at @size (absolute only) and writing it out
 * in full (thick) on first use; later opens check the size. */
int raid_rbd_vol_open(struct raid_pool *p, const char *name, const struct conf_size *size,
		      struct raid_vol **out);
/* raid_vol_submit() for a volume of an rbd pool (same contract). */
int raid_rbd_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx, struct raid_io *io);
int raid_rbd_pool_info(struct raid_pool *p, struct raid_pool_info *out);

/* For rbd_pr.c: the pool's librados I/O context (a rados_ioctx_t) in
 * *@ioctx and the RBD image id of @v in @id. 0, or -EOPNOTSUPP (not an rbd
 * volume, or built without librbd). */
int raid_rbd_vol_rados(struct raid_vol *v, void **ioctx, char *id, size_t idlen);

#endif
