/*
 * raid/rbd_int.h - the rbd backend (raid_rbd_backend, backend.h), private
 * to its files; no other file of raid/ includes it:
 *   rbd.c        the ops table, pools (cluster connection), images, the
 *                request path
 *   rbd_prov.c   thick write-out of an image (volume preparation)
 *   rbd_pr.c     shared state of a volume (RADOS objects, watch/notify)
 *   rbd_fence.c  fencing of the nodes serving a pool
 *   rbd_meta.c   image metadata (the getter rbd.c and rbd_prov.c share,
 *                the volume UUID's text form)
 *   rbd_snap.c   snapshots, clones, rollback, flatten, volume create and
 *                delete (raid.h "snapshots"), the pool's image listing
 *
 * A pool of level CONF_RBD is a struct rbd_pool whose volumes (struct
 * rbd_vol) are Ceph RBD images. What raid.h leaves to the backend is, for
 * rbd volumes (raid/README.md, "RBD pools"):
 *   raid_vol_ready      -EINPROGRESS while the image is being written out in
 *                       full (thick: rbd_prov.c); -ENOLINK while this node is
 *                       fenced: its lease lapsed with a peer node serving the
 *                       pool, or the cluster blocklisted it (rbd_fence.c);
 *   raid_vol_write_same_max  64 MiB (one rbd_aio_writesame per request);
 *   shared state        blob @tag of an image is the RADOS object
 *                       "rtgt_<tag>.<image id>" in the image's pool;
 *   raid_pool_info      state "fenced" while raid_vol_ready is -ENOLINK,
 *                       "provisioning" while an image is written out;
 *   fail, add-spare, remove, scrub  refused: Ceph keeps its own redundancy.
 * Built without librbd (no <rbd/librbd.h> at compile time, or RTGT_NO_RBD)
 * only rbd.c has code: a backend whose pool_open refuses with -ENOTSUP and
 * a log line.
 */
#ifndef RTGT_RAID_RBD_INT_H
#define RTGT_RAID_RBD_INT_H

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/ioctx.h"

#if __has_include(<rbd/librbd.h>) && !defined(RTGT_NO_RBD)   /* RTGT_NO_RBD: build the stub */
#define RTGT_HAVE_RBD 1
#include <rados/librados.h>
#include <rbd/librbd.h>
#endif

#ifdef RTGT_HAVE_RBD

/* image metadata: rtgt.thick ("done" or the offset reached, rbd_prov.c) */
#define META_THICK "rtgt.thick"
/* image metadata: rtgt.grow, the size before a grow of a thick image whose
 * new part is not yet written out (rbd.c, grow) */
#define META_GROW "rtgt.grow"

enum { PROV_READY = 0, PROV_RUNNING, PROV_FAILED };   /* rbd_vol.prov_state */

struct rbd_vol {
	struct raid_vol v;        /* first: raid_vol pointers are rbd_vol pointers */
	rbd_image_t img;          /* open for the pool's lifetime */
	uint64_t obj_bytes;
	char prefix[32];          /* RADOS object name prefix of the data objects */
	_Atomic uint64_t rd_bytes, wr_bytes, rd_ops, wr_ops;
	/* thick provisioning (rbd_prov.c, state machine at its top) */
	_Atomic int prov_state;   /* PROV_* */
	_Atomic int prov_err;     /* FAILED: negative errno */
	_Atomic uint64_t prov_done; /* bytes from 0 known written out */
	_Atomic uint64_t prov_base; /* prov_done when this run started writing */
	_Atomic uint64_t prov_t0_ms; /* when it started writing; 0: not yet */
	_Atomic bool prov_stop;   /* pool closing: checkpoint and end */
	uint64_t lease_ms;        /* prov thread: conf_mono_ms() before the request
	                           * of the last successful take / renewal */
	pthread_t prov_thr;
	bool prov_thread_live;    /* prov_thr must be joined */
	/* opened with RAID_VOL_THIN: never written out, RAID_OP_DISCARD and
	 * RAID_OP_MAP_STATUS served (rbd.c); constant while open */
	bool thin;
	/* what names the volume's shared-state objects "rtgt_<tag>.<obj_id>"
	 * (rbd_pr.c): the image id, or "<image id>@<snap id>" for a snapshot
	 * (v.snapshot: opened read-only at it) so that its LUN's state is
	 * apart from the image's */
	char obj_id[48];
};

/* One entry of a pool's image listing (rbd_snap.c): an image, or one of
 * its snapshots "IMAGE@SNAP". */
struct rbd_list_ent {
	char name[64];
	char origin[64];          /* a snapshot's image; a clone's "PARENT@SNAP"
	                           * ("POOL/PARENT@SNAP" from another pool); "" */
	uint64_t bytes;
	uint64_t allocated;       /* see rbd_snap.c, "Listing" */
	uint64_t shared;
	bool thin, snapshot;
};

#define RBD_LIST_MAX 64u      /* raid_pool_info's volumes[] */

struct rbd_pool {
	struct raid_pool p;       /* first, see rbd_vol */
	rados_t cluster;
	rados_ioctx_t ioctx;
	char rbd_pool[128];
	bool thick;
	unsigned prov_mbps;       /* thick write-out cap, 10^6 bytes/s; 0: none */
	struct rbd_fence *fence;  /* this node's lease on the pool (rbd_fence.c) */
	/* the image listing (rbd_snap.c, "Listing"): list[] under list_mu,
	 * replaced whole by a refresh; refresh_mu serializes refreshes and
	 * the volume commands (never held by the request path) */
	pthread_mutex_t list_mu, refresh_mu;
	pthread_cond_t list_cv;   /* wakes the listing thread (stop) */
	struct rbd_list_ent *list; /* owned; NULL before the first refresh */
	unsigned n_list;
	bool list_stop, list_kicked; /* under list_mu */
	bool list_inited;         /* the three above exist (rbd_adm_list_start) */
	pthread_t list_thr;
	bool list_thread_live;
};

static inline struct rbd_pool *rp_of(struct raid_pool *p)
{
	return (struct rbd_pool *)p;
}

static inline struct rbd_vol *rv_of(struct raid_vol *v)
{
	return (struct rbd_vol *)v;
}

/* rbd_meta.c: image metadata @key into @val (NUL-terminated, @cap bytes): 0 or
 * librbd's negative errno (-ENOENT: not set). */
int rbd_meta_get(rbd_image_t img, const char *key, char *val, size_t cap);
/* image metadata rtgt.uuid (the volume UUID: 32 hex digits) */
#define META_UUID "rtgt.uuid"
/* The UUID's text form and back: 0, or -EINVAL when @s is not 32 hex digits. */
int rbd_meta_uuid_parse(const char *s, uint8_t u[16]);
void rbd_meta_uuid_fmt(const uint8_t u[16], char s[33]);

/*
 * rbd_snap.c: the volume commands of raid.h "snapshots" (same contracts;
 * raid/README.md "RBD pools", snapshots), ops of raid_rbd_backend, and
 * what rbd.c needs of snapshots and of the listing.
 */
int rbd_adm_snapshot(struct raid_pool *p, const char *vol, const char *snap, char *why, size_t wl);
int rbd_adm_vol_delete(struct raid_pool *p, const char *name, char *why, size_t wl);
int rbd_adm_clone(struct raid_pool *p, const char *snap, const char *name, char *why, size_t wl);
int rbd_adm_rollback(struct raid_pool *p, const char *snap, bool force, char *why, size_t wl);
int rbd_adm_inflate(struct raid_pool *p, const char *name, char *why, size_t wl);
int rbd_adm_vol_create(struct raid_pool *p, const char *name, const struct conf_size *size,
			bool thin, char *why, size_t wl);
/* "IMAGE@SNAP" into its parts: 0, or -EINVAL unless both are 1..
 * RAID_SNAP_PART_MAX characters of A-Z a-z 0-9 . _ - */
int rbd_adm_split(const char *name, char img[RAID_SNAP_PART_MAX + 1],
		   char snap[RAID_SNAP_PART_MAX + 1]);
/* The UUID of snapshot @snap_id of the image whose UUID is @img_uuid: the
 * same on every node, apart from the image's and every other snapshot's. */
void rbd_adm_uuid(const uint8_t img_uuid[16], uint64_t snap_id, uint8_t out[16]);
/* The listing thread: started once the pool's cluster is connected,
 * stopped before its images are closed. */
int rbd_adm_list_start(struct rbd_pool *rp);
void rbd_adm_list_stop(struct rbd_pool *rp);
/* Refresh soon (a volume was opened: perhaps created). Any thread. */
void rbd_adm_list_kick(struct rbd_pool *rp);
/* Adds the listing to @out (raid_pool_info): entries already there (the
 * open volumes, open = true) get its fields, the others are appended. */
void rbd_adm_list_fill(struct rbd_pool *rp, struct raid_pool_info *out);

/*
 * Thick write-out (rbd_prov.c; state machine at its top). rbd.c opens the
 * image, reads the checkpoint (rbd_prov_checkpoint) and, if the image is
 * not written out yet, starts the volume's provisioning thread
 * (rbd_prov_start) and waits for it a moment (rbd_prov_grace); the pool's
 * close stops it (rbd_prov_stop) before closing the image.
 */
/* The checkpoint in META_THICK: *@done, or the object-aligned offset from
 * which the write-out resumes in *@from. -ENOENT: a thin image. */
int rbd_prov_checkpoint(struct rbd_vol *rv, bool *done, uint64_t *from);
/* Not ready from now on: the write-out runs on its own thread from @from.
 * 0, or the negative errno why the thread could not start (logged). */
int rbd_prov_start(struct rbd_vol *rv, uint64_t from);
/* Waits up to PROV_GRACE_MS for a started write-out to end (a small image
 * is ready when the daemon starts serving). No meta_mu held. */
void rbd_prov_grace(struct rbd_vol *rv);
/* Pool closing: the write-out checkpoints and its thread ends (joined). */
void rbd_prov_stop(struct rbd_vol *rv);

/* rbd_pr.c: the shared-state ops of raid_rbd_backend (raid.h "shared state
 * of a volume": same contracts) */
int rbd_shared_read(struct raid_vol *vol, const char *tag, uint8_t **out, size_t *out_len);
int rbd_shared_update(struct raid_vol *vol, const char *tag, struct raid_ioctx *ctx,
		      raid_shared_fn fn, raid_shared_done_fn done, void *arg);
int rbd_shared_notify(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
		      unsigned timeout_ms);
int rbd_shared_notify_async(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
			    unsigned timeout_ms, raid_shared_notify_done_fn done, void *arg);
int rbd_shared_watch(struct raid_vol *vol, const char *tag, raid_shared_watch_fn cb, void *arg,
		     struct raid_shared_watch **out);
void rbd_shared_unwatch(struct raid_shared_watch *w);

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

#endif /* RTGT_HAVE_RBD */

#endif
