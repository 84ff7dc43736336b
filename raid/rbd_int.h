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

/*
 * Fencing of the nodes that serve one rbd pool (raid/rbd_fence.c: design and
 * state machine at its top). One struct rbd_fence per pool, made after the
 * pool's cluster connection (@cluster: its rados_t) and stopped after its
 * images are closed.
 */
struct rbd_fence;
int rbd_fence_start(void *cluster, const char *pool_name, const char *rbd_pool,
		    struct rbd_fence **out);
void rbd_fence_stop(struct rbd_fence *f);
/* Whether this node may serve the pool's volumes: false while its lease is
 * stale (a peer may be about to take over) or for good once blocklisted.
 * Any thread, cheap (atomics and a clock read). NULL: true. */
bool rbd_fence_ok(struct rbd_fence *f);
/* librbd or librados refused this node's client as blocklisted. */
void rbd_fence_gone(struct rbd_fence *f);
/* While a peer is overdue: queue the write @io (true) and later run
 * @resume(io) on @ctx's thread through raid_defer, with
 * io->rpriv_u[RBD_IO_VERDICT] = 0 (start it) or -ENOLINK (fail it). False:
 * not held, start it now. Uses the io->rpriv / rpriv_u slots below. */
bool rbd_fence_hold(struct rbd_fence *f, struct raid_io *io, struct raid_ioctx *ctx,
		    void (*resume)(void *io));
enum { RBD_IO_LINK = 3, RBD_IO_HCTX = 4, RBD_IO_HFN = 5 };   /* io->rpriv[] */
enum { RBD_IO_HELD = 2, RBD_IO_VERDICT = 3 };                /* io->rpriv_u[] */
/* Blocklist client address @addr (not our own) before taking over what it
 * held; 0 once the cluster has it (or it was blocklisted by us already). */
int rbd_fence_blocklist(struct rbd_fence *f, const char *addr);
/* This node's client address as the OSDs see it ("" for NULL). */
const char *rbd_fence_addr(const struct rbd_fence *f);

#endif
