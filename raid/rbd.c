/*
 * raid/rbd.c - the rbd backend (raid_rbd_backend; rbd_int.h): pools whose
 * volumes are Ceph RBD images (librbd), and their request path.
 *
 * A pool is one RADOS cluster handle and one I/O context on the configured
 * rbd_pool; a volume is one image, opened once per daemon and shared by every
 * reactor thread (librbd images are thread-safe). The image carries rtgt's
 * own state as image metadata, so every node that opens it agrees:
 *   rtgt.uuid   32 hex digits: the volume UUID (base of the LUN's NAA id)
 *   rtgt.grow   the size before the last grow of a thick image, while the
 *               new part is being written out (grow_write_out); a start
 *               that finds it finishes the write-out before serving
 *   rtgt.thick  "done" once the image was written out in full, else the
 *               byte offset reached so far (resumed at the next start);
 *               absent for a thin volume (pool key thick = false). The
 *               write-out itself, and the volume preparation state machine
 *               that gates the requests below, are rbd_prov.c's.
 *
 * Request state machine (one struct raid_io, state in io->rpriv_u[PHASE]):
 *
 *   MAIN ---(librbd done; FUA write that succeeded)---> FLUSH ---> DONE
 *     \--------------(anything else)----------------------------> DONE
 *   LOCK --(granted, one sector)--> CAW_SECTOR -----------------> DONE
 *     `---(granted, longer)--> CAW_READ --(equal)--> CAW_WRITE --> DONE
 *                                  \------(differs or error)-------> DONE
 *
 *   MAIN      raid_rbd_vol_submit() started the read / write / flush in
 *             librbd, or recorded why it could not;
 *   FLUSH     step() started rbd_aio_flush after a FUA write: the write is
 *             durable only once the flush completed;
 *   LOCK      every compare-and-write waits for this node's exclusive range
 *             lock (p->lock; caw_locked() moves on), so the compare-and-writes
 *             through one node exclude each other whichever way they go;
 *   CAW_SECTOR one 512-byte sector: librbd's rbd_aio_compare_and_write (cmpext
 *             + write in one OSD op: atomic against every writer on every
 *             node; librbd applies the snapshot context, copies a clone's
 *             parent data up and keeps object map and journal);
 *   CAW_READ  longer (librbd 16 takes only one sector): librbd reads the
 *             range (caw_read), step() compares;
 *   CAW_WRITE ... librbd writes it; atomic only against compare-and-writes
 *             through this node (raid/README.md, "RBD pools"). Every path
 *             goes through librbd: RADOS objects are never addressed here;
 *   DONE      finish() set io->result, released what the request held,
 *             dropped the ctx's in-flight count and ran io->cb.
 * Every transition runs on the submitting thread: librbd/librados call
 * on_complete()/on_rados_complete() on their own threads, which only record
 * the return value and hand the request to the ctx with raid_defer(); step()
 * then runs inside raid_ioctx_run(). Invariant (io_check): the phase is one
 * of the above while the request is owned by rbd.c, FLUSH only for FUA
 * writes (WRITE or WRITE_SAME), the LOCK..CAW_WRITE phases only for
 * compare-and-write with a struct caw, CAW_SECTOR only for one sector, and
 * the ctx and volume are set.
 * DISCARD (thin volumes) is one rbd_aio_discard, at most DISCARD_MAX bytes:
 * whole objects are removed, other parts zeroed (rbd_skip_partial_discard is
 * off, so every discarded byte reads back as zero; LBPRZ). MAP_STATUS is
 * one rbd_diff_iterate2 over at most MAP_WINDOW objects, run on a thread of
 * its own (map_thread: librbd has no asynchronous form of it) that hands
 * the request back with raid_defer like on_complete; its phase stays MAIN.
 * An extent it reports is mapped, a gap between extents never written or
 * discarded in full (no object there): unmapped.
 * WRITE_SAME is one rbd_aio_writesame (one 512-byte block repeated; at most
 * WS_MAX bytes per request, so librbd never sees a length near its size_t /
 * int return-value limits and one request spans at most 16 objects).
 *
 * Fencing of the data path (rbd_fence.c): raid_rbd_vol_submit fails every
 * request with -ENOLINK while this node is fenced, and holds writes while a
 * peer's lease is overdue (held_resume starts or fails them later); a
 * librbd result of EBLOCKLISTED (-ESHUTDOWN) marks the node fenced for good
 * and completes the request with -ENOLINK.
 *
 * Snapshots ("IMAGE@SNAP", rbd_snap.c has the commands): opened with
 * rbd_open_read_only at the snapshot, whatever size or provisioning the
 * LUN gives (conf.c makes its LUN read-only); v.snapshot set, thin (so
 * GET LBA STATUS tells its allocation), every write, write-same,
 * compare-and-write and discard refused with -EROFS, a FLUSH completes at
 * once (nothing is ever dirty). Its UUID is derived from the image's and
 * the snapshot id (rbd_adm_uuid), its shared-state objects are apart
 * from the image's (obj_id).
 *
 * The ops table at the end is all raid.h (backend.c) sees of this file.
 *
 * Layer: rbd volumes (raid/README.md "Layers"). May call: rbd_snap.c,
 * rbd_pr.c, rbd_prov.c, rbd_fence.c, rbd_meta.c, lock.c, ioctx.c,
 * librbd/librados.
 * Called by backend.c only, through raid_rbd_backend.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "conf/util.h"
#include "raid/rbd_int.h"

static bool raid_rbd_serves(const struct conf_pool *cp)
{
	return cp->level == CONF_RBD;
}

#ifdef RTGT_HAVE_RBD

/* librbd's default object size (order 22): the unit of thick provisioning,
 * and the optimal transfer granularity and length reported */
#define RBD_ORDER  22
#define WS_MAX     (64ull << 20)     /* bytes per WRITE_SAME request */
#define CAW_SECTOR 512u               /* what librbd 16 compares-and-writes */
#define DISCARD_MAX (256ull << 20)   /* bytes per DISCARD request: 64 objects */
#define MAP_WINDOW 64u                /* objects one MAP_STATUS looks at */

enum { PHASE = 0, RET = 1 };               /* io->rpriv_u[] slots */
enum { PH_MAIN = 1, PH_FLUSH, PH_LOCK, PH_CAW_SECTOR, PH_CAW_READ, PH_CAW_WRITE };
enum { CTX = 0, VOL = 1, CAW = 2 };         /* io->rpriv[] slots */

/* A compare-and-write in flight; owned by the request, freed by finish(). */
struct caw {
	struct raid_lk lk;        /* this node's exclusive range lock */
	bool locked;
	uint64_t mismatch;        /* CAW_SECTOR: librbd's mismatch offset */
	uint8_t *tmp;             /* CAW_READ: what the range holds */
};

/* ---- requests ---- */

static bool io_check(const struct raid_io *io)
{
	uint64_t ph = io->rpriv_u[PHASE];

	if (!io->rpriv[CTX] || !io->rpriv[VOL])
		return false;
	if (ph < PH_MAIN || ph > PH_CAW_WRITE)
		return false;
	if (ph == PH_FLUSH)
		return (io->op == RAID_OP_WRITE || io->op == RAID_OP_WRITE_SAME) &&
		       (io->flags & RAID_IO_FUA);
	if (ph == PH_CAW_SECTOR && io->len != CAW_SECTOR)
		return false;
	if (ph >= PH_LOCK)
		return io->op == RAID_OP_COMPARE_WRITE && io->rpriv[CAW];
	return true;
}

static void step(void *arg);

/* librbd thread: record, hand over, nothing else. */
static void on_complete(rbd_completion_t c, void *arg)
{
	struct raid_io *io = arg;
	struct timespec ms = { 0, 1000000 };

	io->rpriv_u[RET] = (uint64_t)(int64_t)rbd_aio_get_return_value(c);
	rbd_aio_release(c);
	/* raid_defer only fails without memory: the completion must not be
	 * lost, so wait for memory rather than drop it. */
	while (raid_defer(io->rpriv[CTX], step, io) < 0)
		nanosleep(&ms, NULL);
}

/* Owner thread: a request that could not even be started still completes
 * through the ctx (callbacks never run inside submit). */
static void fail_later(struct raid_io *io, int err)
{
	struct timespec ms = { 0, 1000000 };

	io->rpriv_u[RET] = (uint64_t)(int64_t)err;
	while (raid_defer(io->rpriv[CTX], step, io) < 0)
		nanosleep(&ms, NULL);
}

static int start_op(struct raid_io *io)
{
	struct rbd_vol *rv = io->rpriv[VOL];
	rbd_completion_t c;
	int rc;

	rc = rbd_aio_create_completion(io, on_complete, &c);
	if (rc < 0)
		return rc;
	if (io->rpriv_u[PHASE] == PH_FLUSH) {
		rc = rbd_aio_flush(rv->img, c);
	} else {
		switch (io->op) {
		case RAID_OP_READ:
			rc = rbd_aio_read(rv->img, io->off, io->len, (char *)io->buf, c);
			break;
		case RAID_OP_WRITE:
			rc = rbd_aio_write(rv->img, io->off, io->len, (const char *)io->buf, c);
			break;
		case RAID_OP_FLUSH:
			rc = rbd_aio_flush(rv->img, c);
			break;
		case RAID_OP_WRITE_SAME:
			rc = rbd_aio_writesame(rv->img, io->off, io->len, (const char *)io->buf,
					       RAID_SAME_BLOCK, c, 0);
			break;
		case RAID_OP_DISCARD:
			rc = rbd_aio_discard(rv->img, io->off, io->len, c);
			break;
		default:
			rc = -EINVAL;
		}
	}
	if (rc < 0)
		rbd_aio_release(c);
	return rc;
}

/* ---- MAP_STATUS ---- */

struct map_ext {
	uint64_t off, len;
};

struct map_scan {
	struct map_ext *v;        /* owned */
	size_t n, cap;
};

static int map_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct map_scan *m = arg;

	if (!exists || !len)
		return 0;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct map_ext *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = (struct map_ext){ off, len };
	return 0;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct map_ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * "Deallocated" is only said of blocks that read as zeros (LBPRZ), checked
 * here by reading up to MAP_VERIFY bytes of the run: an extent librbd did
 * not report (seen once under ASan: no extent at all right after 1 GiB was
 * written) must never make data look unmapped. Zeros from the start: the
 * run is cut to them; data in the first block, or a failed read: mapped
 * or unknown (SBC-3 status 0) for all of @len.
 */
#define MAP_VERIFY (4u << 20)
static void zero_check(struct rbd_vol *rv, uint64_t off, uint64_t len, bool *unmapped,
		       uint64_t *run)
{
	uint64_t chk = *run < MAP_VERIFY ? *run : MAP_VERIFY, z = 0;
	uint8_t *b = malloc(chk);
	ssize_t r = b ? rbd_read(rv->img, off, chk, (char *)b) : -ENOMEM;

	if (r == (ssize_t)chk)
		while (z < chk && !b[z])
			z++;
	free(b);
	z = z / 512 * 512;
	if (z == 0) {
		*unmapped = false;
		*run = len;
	} else {
		*run = z;
	}
}

/*
 * The status of [off, off + len): the extents librbd reports (in whatever
 * order its per-object lookups finish) are sorted, then the run from off
 * is what the first one says: a gap before it is unmapped, it and the
 * extents that touch or overlap it are mapped. 0 or librbd's -errno.
 */
static int map_status(struct rbd_vol *rv, uint64_t off, uint64_t len, bool *unmapped,
		      uint64_t *run)
{
	struct map_scan m = { 0 };
	uint64_t end = off + len, at;
	size_t i;
	int rc;

	rc = rbd_diff_iterate2(rv->img, NULL, off, len, 1, 0, map_cb, &m);
	if (rc < 0)
		goto free_scan;
	if (m.n)   /* m.v is NULL when nothing exists: qsort takes no NULL */
		qsort(m.v, m.n, sizeof(m.v[0]), ext_cmp);
	for (i = 0; i < m.n && m.v[i].off + m.v[i].len <= off; i++)
		;
	if (i == m.n || m.v[i].off >= end) {
		*unmapped = true;
		*run = len;
	} else if (m.v[i].off > off) {
		*unmapped = true;
		*run = m.v[i].off - off;
	} else {
		at = m.v[i].off + m.v[i].len;
		for (i++; i < m.n && m.v[i].off <= at; i++)
			if (m.v[i].off + m.v[i].len > at)
				at = m.v[i].off + m.v[i].len;
		*unmapped = false;
		*run = (at < end ? at : end) - off;
	}
	/* extents are byte ranges; the caller counts 512-byte blocks, and a
	 * block only partly written is mapped */
	if (*unmapped)
		*run = *run / 512 * 512;
	else
		*run = (*run + 511) / 512 * 512;
	if (*run == 0) {   /* an unmapped run shorter than a block: that block is mapped */
		*unmapped = false;
		*run = 512;
	}
	if (*run > len)
		*run = len;
	rc = 0;
	if (*unmapped)
		zero_check(rv, off, len, unmapped, run);
free_scan:
	free(m.v);
	return rc;
}

/* Its own thread: rbd_diff_iterate2 waits for the OSDs. */
static void *map_thread(void *arg)
{
	struct raid_io *io = arg;
	struct rbd_vol *rv = io->rpriv[VOL];
	struct timespec ms = { 0, 1000000 };
	bool unmapped = false;
	uint64_t run = 0;
	int rc;

	uint64_t win = (uint64_t)MAP_WINDOW * rv->obj_bytes;

	rc = map_status(rv, io->off, io->len < win ? io->len : win, &unmapped, &run);
	if (rc < 0) {
		/* SBC-3's status 0 is "mapped or unknown": not knowing is no
		 * error for GET LBA STATUS, and says nothing false */
		LOG_WARN(RAID_MOD, "rbd: %s/%s: allocation lookup at %" PRIu64 ": %s; reported as mapped",
			 rp_of(rv->v.pool)->rbd_pool, rv->v.name, io->off, strerror(-rc));
		unmapped = false;
		run = io->len < win ? io->len : win;
		rc = 0;
	}
	io->unmapped = unmapped;
	io->map_len = run;
	io->rpriv_u[RET] = (uint64_t)(int64_t)rc;
	while (raid_defer(io->rpriv[CTX], step, io) < 0)
		nanosleep(&ms, NULL);
	return NULL;
}

static int map_start(struct raid_io *io)
{
	pthread_attr_t a;
	pthread_t t;
	int rc;

	rc = pthread_attr_init(&a);
	if (rc)
		return -rc;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, map_thread, io);
	pthread_attr_destroy(&a);
	return -rc;
}

/* One sector: librbd compares and writes in one OSD op (its 16.x
 * compare-and-write refuses anything longer than a 512-byte sector). */
static int caw_sector(struct raid_io *io)
{
	struct rbd_vol *rv = io->rpriv[VOL];
	struct caw *cw = io->rpriv[CAW];
	rbd_completion_t c;
	ssize_t rc;

	io->rpriv_u[PHASE] = PH_CAW_SECTOR;
	cw->mismatch = UINT64_MAX;
	rc = rbd_aio_create_completion(io, on_complete, &c);
	if (rc < 0)
		return (int)rc;
	rc = rbd_aio_compare_and_write(rv->img, io->off, io->len, (const char *)io->buf,
				       (const char *)io->buf + io->len, c, &cw->mismatch, 0);
	if (rc < 0)
		rbd_aio_release(c);
	return rc < 0 ? (int)rc : 0;
}

static int caw_read(struct raid_io *io)
{
	struct rbd_vol *rv = io->rpriv[VOL];
	struct caw *cw = io->rpriv[CAW];
	rbd_completion_t c;
	int rc;

	io->rpriv_u[PHASE] = PH_CAW_READ;
	rc = rbd_aio_create_completion(io, on_complete, &c);
	if (rc < 0)
		return rc;
	rc = rbd_aio_read(rv->img, io->off, io->len, (char *)cw->tmp, c);
	if (rc < 0)
		rbd_aio_release(c);
	return rc;
}

static int caw_go(struct raid_io *io)
{
	return io->len == CAW_SECTOR ? caw_sector(io) : caw_read(io);
}

static void caw_locked(void *arg)
{
	struct raid_io *io = arg;
	int rc;

	((struct caw *)io->rpriv[CAW])->locked = true;
	rc = caw_go(io);
	if (rc < 0)
		fail_later(io, rc);
}

static int caw_start(struct raid_io *io)
{
	struct rbd_vol *rv = io->rpriv[VOL];
	struct caw *cw = calloc(1, sizeof(*cw));

	if (!cw)
		return -ENOMEM;
	io->rpriv[CAW] = cw;
	if (io->len != CAW_SECTOR) {
		cw->tmp = malloc(io->len);
		if (!cw->tmp)
			return -ENOMEM;
	}
	cw->lk.a = io->off;
	cw->lk.b = io->off + io->len;
	cw->lk.excl = true;
	cw->lk.ctx = io->rpriv[CTX];
	cw->lk.fn = caw_locked;
	cw->lk.arg = io;
	io->rpriv_u[PHASE] = PH_LOCK;
	if (!raid_slock_acquire(&rv->v.pool->lock, &cw->lk))
		return 0;   /* caw_locked() goes on */
	cw->locked = true;
	return caw_go(io);
}

static void caw_free(struct raid_io *io)
{
	struct caw *cw = io->rpriv[CAW];

	if (!cw)
		return;
	if (cw->locked)
		raid_slock_release(&((struct rbd_vol *)io->rpriv[VOL])->v.pool->lock, &cw->lk);
	free(cw->tmp);
	free(cw);
	io->rpriv[CAW] = NULL;
}

static void finish(struct raid_io *io, int64_t ret)
{
	struct rbd_vol *rv = io->rpriv[VOL];
	struct raid_ioctx *ctx = io->rpriv[CTX];
	struct caw *cw = io->rpriv[CAW];

	if (cw && io->rpriv_u[PHASE] == PH_CAW_SECTOR && ret == -EILSEQ) {
		struct rbd_vol *cv = io->rpriv[VOL];
		uint64_t obj = io->off - io->off % cv->obj_bytes;

		/* librbd means the image offset of the first differing byte,
		 * but 16.x maps cmpext's offset in the compared range as if
		 * it were one in the object: accept either (they coincide
		 * for a sector at an object's start), else the sector start */
		if (cw->mismatch >= io->off && cw->mismatch < io->off + io->len)
			io->miscompare_off = cw->mismatch - io->off;
		else if (cw->mismatch >= obj && cw->mismatch < obj + io->len)
			io->miscompare_off = cw->mismatch - obj;
		else
			io->miscompare_off = 0;
	}
	caw_free(io);

	/* librbd answers a read inside the image with every byte (zeros
	 * where nothing was written); a short count would leave bytes of the
	 * caller's buffer unread, which the target does not zero for a READ:
	 * never report it as data */
	if (ret >= 0 && io->op == RAID_OP_READ && (uint64_t)ret != io->len) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: read of %" PRIu64 " bytes at %" PRIu64
			" returned %" PRId64 " bytes", rp_of(rv->v.pool)->rbd_pool, rv->v.name,
			io->len, io->off, ret);
		ret = -EIO;
	}
	if (ret >= 0) {
		io->result = 0;
		if (io->op == RAID_OP_READ) {
			atomic_fetch_add(&rv->rd_bytes, io->len);
			atomic_fetch_add(&rv->rd_ops, 1);
		} else if (io->op != RAID_OP_FLUSH && io->op != RAID_OP_DISCARD &&
			   io->op != RAID_OP_MAP_STATUS) {
			atomic_fetch_add(&rv->wr_bytes, io->len);
			atomic_fetch_add(&rv->wr_ops, 1);
		}
	} else if (ret == -EILSEQ && io->op == RAID_OP_COMPARE_WRITE) {
		io->result = -EILSEQ;   /* miscompare_off already set */
	} else if (ret == -ENOLINK || ret == -ESHUTDOWN) {
		/* fenced (rbd_fence.c logs it once), or the cluster refused our
		 * blocklisted client (librados' EBLOCKLISTED): nothing of it
		 * was written, and nothing more will be */
		if (ret == -ESHUTDOWN)
			rbd_fence_gone(rp_of(rv->v.pool)->fence);
		io->result = -ENOLINK;
	} else {
		if (ret != -ENOMEM)
			LOG_ERR(RAID_MOD, "rbd: %s/%s: %s of %" PRIu64 " bytes at %" PRIu64 ": %s",
				rp_of(rv->v.pool)->rbd_pool, rv->v.name,
				io->op == RAID_OP_READ ? "read" :
				io->op == RAID_OP_FLUSH ? "flush" :
				io->op == RAID_OP_COMPARE_WRITE ? "compare-and-write" :
				io->op == RAID_OP_WRITE_SAME ? "write same" :
				io->op == RAID_OP_DISCARD ? "discard" :
				io->op == RAID_OP_MAP_STATUS ? "allocation lookup" : "write",
				io->len, io->off, strerror((int)-ret));
		/* the target maps -EIO to a medium error; keep -ENOMEM apart,
		 * and a full pool (or one over its quota), which is a
		 * space allocation failure, not a bad medium */
		io->result = ret == -ENOMEM ? -ENOMEM :
			     ret == -ENOSPC || ret == -EDQUOT ? -ENOSPC : -EIO;
	}
	io->rpriv_u[PHASE] = 0;
	raid_ioctx_io_done(ctx);
	io->cb(io);
}

static void step(void *arg)
{
	struct raid_io *io = arg;
	int64_t ret = (int64_t)io->rpriv_u[RET];
	int rc;

	RTGT_CHECK(io_check(io));
	if (ret >= 0 && io->rpriv_u[PHASE] == PH_CAW_READ && (uint64_t)ret != io->len)
		ret = -EIO;   /* a short read: the rest of tmp was never read */
	if (ret >= 0 && io->rpriv_u[PHASE] == PH_CAW_READ) {
		struct caw *cw = io->rpriv[CAW];
		struct rbd_vol *rv = io->rpriv[VOL];
		rbd_completion_t c;

		for (uint64_t i = 0; i < io->len; i++) {
			if (cw->tmp[i] != io->buf[i]) {
				io->miscompare_off = i;
				finish(io, -EILSEQ);
				return;
			}
		}
		io->rpriv_u[PHASE] = PH_CAW_WRITE;
		rc = rbd_aio_create_completion(io, on_complete, &c);
		if (rc == 0) {
			rc = rbd_aio_write(rv->img, io->off, io->len,
					   (const char *)io->buf + io->len, c);
			if (rc == 0)
				return;
			rbd_aio_release(c);
		}
		ret = rc;
	}
	if (ret >= 0 && io->rpriv_u[PHASE] == PH_MAIN &&
	    (io->op == RAID_OP_WRITE || io->op == RAID_OP_WRITE_SAME) &&
	    (io->flags & RAID_IO_FUA)) {
		io->rpriv_u[PHASE] = PH_FLUSH;
		rc = start_op(io);
		if (rc == 0)
			return;
		ret = rc;
	}
	finish(io, ret);
}

/* Owner thread: a write held while a peer was overdue goes on, or fails
 * (the peer could not be fenced in time, or this node is fenced now). */
static void held_resume(void *arg)
{
	struct raid_io *io = arg;
	struct rbd_vol *rv = io->rpriv[VOL];
	int64_t verdict = (int64_t)io->rpriv_u[RBD_IO_VERDICT];
	int rc;

	if (verdict == 0 && !rbd_fence_ok(rp_of(rv->v.pool)->fence))
		verdict = -ENOLINK;
	rc = (int)verdict;
	if (rc == 0)
		rc = io->op == RAID_OP_COMPARE_WRITE ? caw_start(io) : start_op(io);
	if (rc < 0) {
		io->rpriv_u[RET] = (uint64_t)(int64_t)rc;
		step(io);
	}
}

static int raid_rbd_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx,
			       struct raid_io *io)
{
	int rc;

	if (!io || !io->cb || (unsigned)io->op > RAID_OP_MAP_STATUS || !ctx)
		return -EINVAL;
	if ((io->op == RAID_OP_DISCARD || io->op == RAID_OP_MAP_STATUS) && !rv_of(vol)->thin)
		return -EINVAL;
	if (vol->snapshot && io->op != RAID_OP_READ && io->op != RAID_OP_FLUSH &&
	    io->op != RAID_OP_MAP_STATUS)
		return -EROFS;
	if (io->op != RAID_OP_FLUSH) {
		bool no_buf = io->op == RAID_OP_DISCARD || io->op == RAID_OP_MAP_STATUS;

		if (io->off % 512 || io->len % 512 || io->len == 0 || (!io->buf && !no_buf))
			return -EINVAL;
		if (io->op == RAID_OP_WRITE_SAME && io->len > WS_MAX)
			return -EINVAL;
		if (io->op == RAID_OP_DISCARD && io->len > DISCARD_MAX)
			return -EINVAL;
		if (io->off > vol->size || io->len > vol->size - io->off)
			return -ERANGE;
		/* provisioning zeros must never land on an initiator's data,
		 * nor an initiator read zeros not yet written */
		if (atomic_load(&rv_of(vol)->prov_state) != PROV_READY)
			return -EBUSY;
	}
	io->result = 0;
	io->miscompare_off = 0;
	io->map_len = 0;
	io->unmapped = false;
	io->rpriv[CTX] = ctx;
	io->rpriv[VOL] = vol;
	io->rpriv[CAW] = NULL;
	io->rpriv_u[PHASE] = PH_MAIN;
	raid_ioctx_io_started(ctx);
	if (vol->snapshot && io->op == RAID_OP_FLUSH) {
		fail_later(io, 0);   /* read-only: nothing to make durable */
		return 0;
	}
	/* fenced: a peer may take over (or has), nothing may reach the OSDs */
	if (!rbd_fence_ok(rp_of(vol->pool)->fence)) {
		fail_later(io, -ENOLINK);
		return 0;
	}
	/* a peer's lease is overdue: what it may still write must not land
	 * after this (rbd_fence.c, "Holding writes") */
	if (io->op != RAID_OP_READ && io->op != RAID_OP_FLUSH && io->op != RAID_OP_MAP_STATUS &&
	    rbd_fence_hold(rp_of(vol->pool)->fence, io, ctx, held_resume))
		return 0;
	rc = io->op == RAID_OP_COMPARE_WRITE ? caw_start(io) :
	     io->op == RAID_OP_MAP_STATUS ? map_start(io) : start_op(io);
	if (rc < 0)
		fail_later(io, rc);
	return 0;
}

/* ---- image metadata ---- */

/* The volume UUID: read it, or make and store one when the image has none
 * yet (only the node that created the image gets here in the normal case). */
static int vol_uuid(struct rbd_pool *rp, struct rbd_vol *rv, bool created)
{
	char s[64];
	int rc, tries;

	/* a peer that just created the image may not have stored it yet */
	for (tries = 0; tries < (created ? 1 : 50); tries++) {
		rc = rbd_meta_get(rv->img, META_UUID, s, sizeof(s));
		if (rc == 0) {
			if (rbd_meta_uuid_parse(s, rv->v.uuid) < 0) {
				LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s is not 32 hex digits: \"%s\"",
					rp->rbd_pool, rv->v.name, META_UUID, s);
				return -EINVAL;
			}
			return 0;
		}
		if (rc != -ENOENT)
			goto err;
		if (!created) {
			struct timespec t = { 0, 100000000 };

			nanosleep(&t, NULL);
		}
	}
	if (getrandom(rv->v.uuid, 16, 0) != 16)
		return -EIO;
	rbd_meta_uuid_fmt(rv->v.uuid, s);
	rc = rbd_metadata_set(rv->img, META_UUID, s);
	if (rc < 0)
		goto err;
	return 0;
err:
	LOG_ERR(RAID_MOD, "rbd: %s/%s: volume uuid (metadata %s): %s", rp->rbd_pool, rv->v.name,
		META_UUID, strerror(-rc));
	return rc;
}

/* ---- growing ---- */

/* Zeros over [from, to) of a thick image (its grown part), synchronously:
 * the caller (raid_vol_resize, or a start finishing a grow) is not a
 * reactor, and the new blocks are not visible to initiators until done. */
static int grow_write_out(struct rbd_vol *rv, uint64_t from, uint64_t to)
{
	static const char zero[512];

	while (from < to) {
		uint64_t len = to - from < WS_MAX ? to - from : WS_MAX;
		ssize_t r = rbd_writesame(rv->img, from, len, zero, sizeof(zero), 0);

		if (r < 0)
			return (int)r;
		from += len;
	}
	return 0;
}

/* Grows the image of @rv to @bytes (> its size); meta_mu held. Thick:
 * rtgt.grow records the old size first, so a crash part way leaves the
 * write-out to the next start (finish_grow); the size becomes visible only
 * after it. */
static int grow_locked(struct rbd_vol *rv, uint64_t bytes)
{
	struct rbd_pool *rp = rp_of(rv->v.pool);
	uint64_t old = atomic_load(&rv->v.size);
	bool thick = rp->thick && !rv->thin;
	char s[32];
	int rc;

	if (thick) {
		snprintf(s, sizeof(s), "%" PRIu64, old);
		rc = rbd_metadata_set(rv->img, META_GROW, s);
		if (rc < 0)
			goto err;
	}
	rc = rbd_resize2(rv->img, bytes, false, NULL, NULL);
	if (rc < 0)
		goto err;
	if (thick) {
		rc = grow_write_out(rv, old, bytes);
		if (rc < 0)
			goto err_grown;
		rc = rbd_metadata_remove(rv->img, META_GROW);
		if (rc < 0 && rc != -ENOENT)
			goto err_grown;
	}
	rv->v.extent = bytes;
	atomic_store_explicit(&rv->v.size, bytes, memory_order_release);
	LOG_INFO(RAID_MOD, "rbd: %s/%s: grown from %" PRIu64 " to %" PRIu64 " bytes%s",
		 rp->rbd_pool, rv->v.name, old, bytes, thick ? " (written out)" : "");
	return 0;

err_grown:
	/* the image is larger, its new part not all written out: rtgt.grow
	 * stays, and the next start finishes it; the LUN keeps its size */
	LOG_ERR(RAID_MOD, "rbd: %s/%s: grown to %" PRIu64 " bytes but the new part could not be written out (%s): the LUN stays %" PRIu64
		" bytes until a restart finishes it", rp->rbd_pool, rv->v.name, bytes,
		strerror(-rc), old);
	return rc;
err:
	LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot grow to %" PRIu64 " bytes: %s", rp->rbd_pool,
		rv->v.name, bytes, strerror(-rc));
	return rc;
}

/* At open: a grow that did not finish its write-out (rtgt.grow set) is
 * finished now, before the volume serves. */
static int finish_grow(struct rbd_vol *rv, uint64_t size)
{
	struct rbd_pool *rp = rp_of(rv->v.pool);
	char s[32], *end;
	uint64_t from;
	int rc = rbd_meta_get(rv->img, META_GROW, s, sizeof(s));

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	from = strtoull(s, &end, 10);
	if (*end || from > size)
		from = 0;   /* unreadable: the old end is unknown, and zeros there
			     * would destroy data: only say so */
	if (!from || rp->thick == false || rv->thin) {
		if (!from)
			LOG_WARN(RAID_MOD, "rbd: %s/%s: metadata %s is \"%s\": not writing anything out",
				 rp->rbd_pool, rv->v.name, META_GROW, s);
		rc = rbd_metadata_remove(rv->img, META_GROW);
		return rc == -ENOENT ? 0 : rc;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: finishing the write-out of its last grow (%" PRIu64
		 " to %" PRIu64 " bytes)", rp->rbd_pool, rv->v.name, from, size);
	rc = grow_write_out(rv, from, size);
	if (rc == 0)
		rc = rbd_metadata_remove(rv->img, META_GROW);
	return rc == -ENOENT ? 0 : rc;
}

static int raid_rbd_vol_resize(struct raid_vol *v, const struct conf_size *size)
{
	struct rbd_vol *rv = rv_of(v);
	uint64_t cur;
	int rc = 0;

	if (!size->bytes || size->bytes % 512) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: an rbd volume needs an absolute size, a multiple of 512 bytes",
			v->pool->name, v->name);
		return -EINVAL;
	}
	pthread_mutex_lock(&v->pool->meta_mu);
	cur = atomic_load(&v->size);
	if (atomic_load(&rv->prov_state) != PROV_READY) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s is still being written out: grow it once it is ready",
			v->pool->name, v->name);
		rc = -EBUSY;
	} else if (size->bytes < cur) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s is %" PRIu64 " bytes: %" PRIu64
			" would shrink it, and volumes never shrink", v->pool->name, v->name, cur,
			size->bytes);
		rc = -EINVAL;
	} else if (size->bytes > cur) {
		rc = grow_locked(rv, size->bytes);
	}
	pthread_mutex_unlock(&v->pool->meta_mu);
	return rc;
}

/* A peer grew the image: librbd re-reads the header when it was told of
 * the change (the peer's rbd_resize told every open image before it
 * returned); the size only ever grows here. */
static int raid_rbd_vol_refresh(struct raid_vol *v)
{
	struct rbd_vol *rv = rv_of(v);
	uint64_t sz = 0, cur;
	int rc;

	pthread_mutex_lock(&v->pool->meta_mu);
	rc = rbd_get_size(rv->img, &sz);
	cur = atomic_load(&v->size);
	if (rc == 0 && sz > cur && sz % 512 == 0) {
		v->extent = sz;
		atomic_store_explicit(&v->size, sz, memory_order_release);
		LOG_INFO(RAID_MOD, "rbd: %s/%s: grown by another node from %" PRIu64 " to %" PRIu64
			 " bytes", rp_of(v->pool)->rbd_pool, v->name, cur, sz);
	}
	pthread_mutex_unlock(&v->pool->meta_mu);
	return rc;
}

/* ---- volumes ---- */

/* rv->obj_id from the data prefix ("rbd_data.<image id>"), with the
 * snapshot id of a snapshot after '@' */
static void obj_id_set(struct rbd_vol *rv, bool snap, uint64_t snap_id)
{
	const char *dot = strchr(rv->prefix, '.');

	if (snap)
		snprintf(rv->obj_id, sizeof(rv->obj_id), "%s@%" PRIu64, dot ? dot + 1 : rv->prefix,
			 snap_id);
	else
		snprintf(rv->obj_id, sizeof(rv->obj_id), "%s", dot ? dot + 1 : rv->prefix);
}

/* meta_mu held: opens snapshot @name ("IMAGE@SNAP") read-only into @slot. */
static int snap_open(struct rbd_pool *rp, const char *name, unsigned slot, struct raid_vol **out)
{
	char img[RAID_SNAP_PART_MAX + 1], sn[RAID_SNAP_PART_MAX + 1], s[64];
	struct raid_pool *p = &rp->p;
	rbd_image_info_t info;
	struct rbd_vol *rv;
	uint8_t base[16];
	uint64_t sid = 0;
	int rc;

	if (rbd_adm_split(name, img, sn) < 0) {
		LOG_ERR(RAID_MOD, "pool %s: snapshot \"%s\" must be VOLUME@NAME, each 1..%u characters of A-Z a-z 0-9 . _ -",
			p->name, name, RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	rv = calloc(1, sizeof(*rv));
	if (!rv)
		return -ENOMEM;
	rv->v.pool = p;
	rv->v.snapshot = true;
	rv->thin = true;
	snprintf(rv->v.name, sizeof(rv->v.name), "%s", name);
	rc = rbd_open_read_only(rp->ioctx, img, &rv->img, sn);
	if (rc < 0) {
		if (rc == -ENOENT)
			LOG_ERR(RAID_MOD, "pool %s: no snapshot %s (rtgtctl volume list %s shows them)",
				p->name, name, p->name);
		else
			LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot open: %s", rp->rbd_pool, name,
				strerror(-rc));
		goto err_free;
	}
	rc = rbd_stat(rv->img, &info, sizeof(info));
	if (rc == 0)
		rc = rbd_snap_get_id(rv->img, sn, &sid);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: stat: %s", rp->rbd_pool, name, strerror(-rc));
		goto err_close;
	}
	rv->v.size = info.size;
	rv->v.extent = info.size;
	rv->obj_bytes = info.obj_size ? info.obj_size : (1u << RBD_ORDER);
	snprintf(rv->prefix, sizeof(rv->prefix), "%.*s", (int)sizeof(info.block_name_prefix),
		 info.block_name_prefix);
	obj_id_set(rv, true, sid);
	/* the image's UUID (not made here: the handle is read-only); an
	 * image rtgt never opened gets one from its id, the same on every
	 * node */
	memset(base, 0, sizeof(base));
	if (rbd_meta_get(rv->img, META_UUID, s, sizeof(s)) < 0 ||
	    rbd_meta_uuid_parse(s, base) < 0) {
		for (size_t i = 0; rv->obj_id[i] && rv->obj_id[i] != '@'; i++)
			base[i % 16] = (uint8_t)(base[i % 16] * 31u + (uint8_t)rv->obj_id[i]);
	}
	rbd_adm_uuid(base, sid, rv->v.uuid);
	p->vols[slot] = &rv->v;
	*out = &rv->v;
	LOG_INFO(RAID_MOD, "rbd: %s/%s: snapshot opened read-only, %" PRIu64 " bytes", rp->rbd_pool,
		 name, info.size);
	return 0;

err_close:
	rbd_close(rv->img);
err_free:
	free(rv);
	return rc;
}

static int raid_rbd_vol_open(struct raid_pool *p, const char *name, const struct conf_size *size,
			     unsigned flags, struct raid_vol **out)
{
	struct rbd_pool *rp = rp_of(p);
	struct rbd_vol *rv;
	rbd_image_info_t info;
	uint64_t from = 0;
	bool created = false, done = false;
	unsigned i, slot = RAID_MAX_VOLS;
	int order = RBD_ORDER, rc;

	if (!name || !*name || strlen(name) >= sizeof(rv->v.name)) {
		LOG_ERR(RAID_MOD, "pool %s: bad volume name", p->name);
		return -EINVAL;
	}
	if (!strchr(name, '@') && (!size->bytes || size->bytes % 512)) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: an rbd volume needs an absolute size, a multiple of 512 bytes",
			p->name, name);
		return -EINVAL;
	}
	pthread_mutex_lock(&p->meta_mu);
	for (i = 0; i < RAID_MAX_VOLS; i++) {
		if (p->vols[i] && !strcmp(p->vols[i]->name, name) && p->vols[i]->snapshot) {
			*out = p->vols[i];   /* as it is, whatever the LUN asks */
			rc = 0;
			goto out_unlock;
		}
		if (p->vols[i] && !strcmp(p->vols[i]->name, name)) {
			if (size->bytes > p->vols[i]->size ||
			    rv_of(p->vols[i])->thin != !!(flags & RAID_VOL_THIN)) {
				LOG_ERR(RAID_MOD, "pool %s: volume %s opened twice with different sizes or provisioning",
					p->name, name);
				rc = -EINVAL;
				goto out_unlock;
			}
			*out = p->vols[i];
			rc = 0;
			goto out_unlock;
		}
		if (!p->vols[i] && slot == RAID_MAX_VOLS)
			slot = i;
	}
	if (slot == RAID_MAX_VOLS) {
		LOG_ERR(RAID_MOD, "pool %s: more than %u volumes", p->name, RAID_MAX_VOLS);
		rc = -ENOSPC;
		goto out_unlock;
	}
	if (strchr(name, '@')) {
		rc = snap_open(rp, name, slot, out);
		goto out_unlock;
	}
	rv = calloc(1, sizeof(*rv));
	if (!rv) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	rv->v.pool = p;
	rv->thin = flags & RAID_VOL_THIN;
	snprintf(rv->v.name, sizeof(rv->v.name), "%s", name);

	rc = rbd_open(rp->ioctx, name, &rv->img, NULL);
	if (rc == -ENOENT) {
		/* layering only: no exclusive-lock, so two nodes can write the
		 * same image without passing a lock back and forth */
		rc = rbd_create2(rp->ioctx, name, size->bytes, RBD_FEATURE_LAYERING, &order);
		if (rc == 0) {
			created = true;
			LOG_INFO(RAID_MOD, "rbd: %s/%s: created, %" PRIu64 " bytes", rp->rbd_pool,
				 name, size->bytes);
		} else if (rc != -EEXIST) {   /* -EEXIST: a peer node was first */
			LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot create: %s", rp->rbd_pool, name,
				strerror(-rc));
			goto err_free;
		}
		rc = rbd_open(rp->ioctx, name, &rv->img, NULL);
	}
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot open: %s", rp->rbd_pool, name, strerror(-rc));
		goto err_free;
	}
	rc = rbd_stat(rv->img, &info, sizeof(info));
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: stat: %s", rp->rbd_pool, name, strerror(-rc));
		goto err_close;
	}
	rv->v.size = info.size;
	rv->v.extent = info.size;
	rv->obj_bytes = info.obj_size ? info.obj_size : (1u << RBD_ORDER);
	snprintf(rv->prefix, sizeof(rv->prefix), "%.*s", (int)sizeof(info.block_name_prefix),
		 info.block_name_prefix);
	obj_id_set(rv, false, 0);
	{
		uint64_t su = 0, sc = 0;

		/* only the plain layout rbd_create2 makes is used and tested
		 * (one write-out write per object, the header object's lease) */
		if (rbd_get_stripe_unit(rv->img, &su) == 0 && rbd_get_stripe_count(rv->img, &sc) == 0 &&
		    (su != rv->obj_bytes || sc != 1)) {
			LOG_ERR(RAID_MOD, "rbd: %s/%s: striped images (stripe unit %" PRIu64
				", count %" PRIu64 ") are not supported", rp->rbd_pool, name, su, sc);
			rc = -ENOTSUP;
			goto err_close;
		}
	}
	if (created && rp->thick && !rv->thin) {
		/* before the uuid: its presence tells a peer the image is set up */
		rc = rbd_metadata_set(rv->img, META_THICK, "0");
		if (rc < 0) {
			LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s: %s", rp->rbd_pool, name,
				META_THICK, strerror(-rc));
			goto err_close;
		}
	}
	rc = vol_uuid(rp, rv, created);
	if (rc < 0)
		goto err_close;
	rc = finish_grow(rv, info.size);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot finish the write-out of its last grow: %s",
			rp->rbd_pool, name, strerror(-rc));
		goto err_close;
	}
	if (info.size > size->bytes) {
		/* grown online (rtgtctl resize) and the file not raised yet:
		 * volumes never shrink */
		LOG_WARN(RAID_MOD, "pool %s: volume %s: image %s/%s is %" PRIu64
			 " bytes, more than the %" PRIu64 " the configuration asks for: serving %" PRIu64
			 " (raise size in the file)", p->name, name, rp->rbd_pool, name, info.size,
			 size->bytes, info.size);
	}
	rc = rbd_prov_checkpoint(rv, &done, &from);
	if (rc == 0 && !done && rv->thin) {
		/* a thin LUN's blocks need not exist: the zeros not yet
		 * written read back as zeros all the same */
		LOG_INFO(RAID_MOD, "rbd: %s/%s: thin: its write-out (%" PRIu64 " of %" PRIu64
			 " bytes) is not resumed", rp->rbd_pool, name, from, info.size);
	} else if (rc == 0 && !done) {
		/* written out in the background (rbd_prov.c); the volume is
		 * not ready meanwhile */
		rc = rbd_prov_start(rv, from);
		if (rc < 0)
			goto err_close;
		LOG_INFO(RAID_MOD, "rbd: %s/%s: not ready until written out (thick, %" PRIu64
			 " of %" PRIu64 " bytes done)", rp->rbd_pool, name, from, info.size);
	} else if (rc < 0 && rc != -ENOENT) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s: %s", rp->rbd_pool, name, META_THICK,
			strerror(-rc));
		goto err_close;
	} else if (rc == -ENOENT && rp->thick && !created && !rv->thin) {
		LOG_WARN(RAID_MOD, "rbd: %s/%s: existing image was not written out by rtgt (thin); not provisioning it now",
			 rp->rbd_pool, name);
	}
	if (info.size < size->bytes) {
		/* the file asks for more: grown in place, as a resize would */
		if (atomic_load(&rv->prov_state) != PROV_READY) {
			LOG_ERR(RAID_MOD, "pool %s: volume %s: image %s/%s is %" PRIu64
				" bytes, the configuration asks for %" PRIu64
				", and it is still being written out: grow it once it is ready (rtgtctl resize)",
				p->name, name, rp->rbd_pool, name, info.size, size->bytes);
			rc = -EBUSY;
			goto err_prov;
		}
		rc = grow_locked(rv, size->bytes);
		if (rc < 0)
			goto err_close;
	}
	p->vols[slot] = &rv->v;
	*out = &rv->v;
	pthread_mutex_unlock(&p->meta_mu);
	if (created)
		rbd_adm_list_kick(rp);   /* volume list shows it soon */
	rbd_prov_grace(rv);
	return 0;

err_prov:
	rbd_prov_stop(rv);

err_close:
	rbd_close(rv->img);
err_free:
	free(rv);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

/* ---- pools ---- */

static int raid_rbd_pool_open(const struct conf_pool *cp, struct raid_pool **out)
{
	struct rbd_pool *rp;
	char who[160];
	int rc;

	if (!cp->ceph_conf || !cp->rbd_pool) {
		LOG_ERR(RAID_MOD, "pool %s: an rbd pool needs ceph_conf and rbd_pool", cp->name);
		return -EINVAL;
	}
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	snprintf(rp->p.name, sizeof(rp->p.name), "%s", cp->name);
	snprintf(rp->rbd_pool, sizeof(rp->rbd_pool), "%s", cp->rbd_pool);
	rp->p.level = CONF_RBD;
	rp->thick = cp->rbd_thick;
	rp->prov_mbps = cp->provision_mbps;
	pthread_mutex_init(&rp->p.meta_mu, NULL);
	raid_slock_init(&rp->p.lock);

	snprintf(who, sizeof(who), "client.%s", cp->ceph_id ? cp->ceph_id : "admin");
	rc = rados_create2(&rp->cluster, "ceph", who, 0);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: rados_create2(%s): %s", cp->name, who, strerror(-rc));
		goto err_free;
	}
	rc = rados_conf_read_file(rp->cluster, cp->ceph_conf);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: cannot read ceph_conf %s: %s", cp->name, cp->ceph_conf,
			strerror(-rc));
		goto err_shutdown;
	}
	{
		/* no client cache: two nodes may serve the same image, and a
		 * completed write must already be on the OSDs (FUA, crashes);
		 * zeros written by write-same must really be written (thick);
		 * bounded waits so a dead cluster fails start-up and I/O
		 * instead of hanging them */
		static const char *const kv[][2] = {
			{ "rbd_cache", "false" },
			{ "rbd_discard_on_zeroed_write_same", "false" },
			/* a discard zeroes what it cannot free, so a thin LUN
			 * can promise that unmapped blocks read as zeros */
			{ "rbd_skip_partial_discard", "false" },
			/* the caller's buffer stays untouched until its
			 * callback (raid.h), so librbd may send it as is
			 * instead of copying every write */
			{ "rbd_disable_zero_copy_writes", "false" },
			/* librbd's default "simple" scheduler holds back a
			 * write to an object while another write to it is in
			 * flight, to merge them: the 1 MiB writes of one
			 * sequential stream (four per 4 MiB object) then reach
			 * the OSD one or two at a time instead of all the
			 * initiator sent (measured: 2.3 instead of 6 writes
			 * in flight at the OSD, 250 instead of 350 MB/s at 8
			 * in flight). The initiator already sends large
			 * writes; there is nothing to merge. */
			{ "rbd_io_scheduler", "none" },
			{ "client_mount_timeout", "20" },
			{ "rados_mon_op_timeout", "30" },
			{ "rados_osd_op_timeout", "60" },
		};

		for (unsigned i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
			rc = rados_conf_set(rp->cluster, kv[i][0], kv[i][1]);
			/* the scheduler only costs speed; a librbd older
			 * than the option (before Ceph 15) has none */
			if (rc == -ENOENT && !strcmp(kv[i][0], "rbd_io_scheduler")) {
				LOG_WARN(RAID_MOD, "pool %s: this librbd has no option %s",
					 cp->name, kv[i][0]);
				continue;
			}
			if (rc < 0) {
				LOG_ERR(RAID_MOD, "pool %s: ceph option %s: %s", cp->name, kv[i][0],
					strerror(-rc));
				goto err_shutdown;
			}
		}
	}
	if (cp->keyring) {
		rc = rados_conf_set(rp->cluster, "keyring", cp->keyring);
		if (rc < 0) {
			LOG_ERR(RAID_MOD, "pool %s: keyring %s: %s", cp->name, cp->keyring,
				strerror(-rc));
			goto err_shutdown;
		}
	}
	rc = rados_connect(rp->cluster);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: cannot connect to the Ceph cluster of %s as %s: %s",
			cp->name, cp->ceph_conf, who, strerror(-rc));
		goto err_shutdown;
	}
	rc = rados_ioctx_create(rp->cluster, cp->rbd_pool, &rp->ioctx);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: Ceph pool \"%s\": %s", cp->name, cp->rbd_pool,
			rc == -ENOENT ? "does not exist" : strerror(-rc));
		goto err_shutdown;
	}
	rc = rbd_fence_start(rp->cluster, cp->name, cp->rbd_pool, &rp->fence);
	if (rc < 0)
		goto err_ioctx;
	rc = rbd_adm_list_start(rp);
	if (rc < 0)
		goto err_fence;
	LOG_INFO(RAID_MOD, "pool %s: rbd pool \"%s\" as %s (%s)", cp->name, cp->rbd_pool, who,
		 rp->thick ? "thick" : "thin");
	*out = &rp->p;
	return 0;

err_fence:
	rbd_adm_list_stop(rp);
	rbd_fence_stop(rp->fence);
err_ioctx:
	rados_ioctx_destroy(rp->ioctx);
err_shutdown:
	rados_shutdown(rp->cluster);
err_free:
	raid_slock_destroy(&rp->p.lock);
	pthread_mutex_destroy(&rp->p.meta_mu);
	free(rp);
	return rc;
}

static void raid_rbd_pool_close(struct raid_pool *p)
{
	struct rbd_pool *rp = rp_of(p);

	rbd_adm_list_stop(rp);
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++) {
		struct rbd_vol *rv;
		int rc;

		if (!p->vols[i])
			continue;
		rv = rv_of(p->vols[i]);
		rbd_prov_stop(rv);
		rc = rv->v.snapshot ? 0 : rbd_flush(rv->img);
		if (rc < 0)
			LOG_ERR(RAID_MOD, "rbd: %s/%s: flush at close: %s", rp->rbd_pool, rv->v.name,
				strerror(-rc));
		rbd_close(rv->img);
		free(rv);
		p->vols[i] = NULL;
	}
	/* after the images are flushed and closed: removes our lease */
	rbd_fence_stop(rp->fence);
	rados_ioctx_destroy(rp->ioctx);
	rados_shutdown(rp->cluster);
	raid_slock_destroy(&p->lock);
	pthread_mutex_destroy(&p->meta_mu);
	free(rp);
}

static int raid_rbd_pool_info(struct raid_pool *p, struct raid_pool_info *out)
{
	struct rbd_pool *rp = rp_of(p);
	struct rados_cluster_stat_t st;
	uint64_t all_done = 0, all_total = 0, now = conf_mono_ms();

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", p->name);
	out->level = "rbd";
	/* this node may not serve the pool now (rbd_fence.c) */
	out->state = rbd_fence_ok(rp->fence) ? "optimal" : "fenced";
	out->rebuild_eta_s = -1;
	out->chunk = 1u << RBD_ORDER;
	out->scrub_state = "idle";
	/* what the cluster has left, raw: Ceph reserves nothing per image */
	if (rados_cluster_stat(rp->cluster, &st) == 0)
		out->usable_bytes = st.kb_avail * 1024;
	pthread_mutex_lock(&p->meta_mu);
	for (unsigned i = 0; i < RAID_MAX_VOLS && out->n_volumes < 64; i++) {
		if (!p->vols[i])
			continue;
		struct rbd_vol *rv = rv_of(p->vols[i]);
		/* prov_done before the state: all bytes done implies READY */
		uint64_t done = atomic_load(&rv->prov_done), base = atomic_load(&rv->prov_base);
		int pst = atomic_load(&rv->prov_state);
		uint64_t t0 = atomic_load(&rv->prov_t0_ms);
		__typeof__(&out->volumes[0]) vo = &out->volumes[out->n_volumes];

		snprintf(vo->name, sizeof(vo->name), "%s", rv->v.name);
		vo->bytes = rv->v.size;
		vo->open = true;
		/* until the listing has it (rbd_adm_list_fill corrects these) */
		vo->thin = rv->thin || !rp->thick;
		vo->snapshot = rv->v.snapshot;
		if (rv->v.snapshot)
			snprintf(vo->origin, sizeof(vo->origin), "%.*s",
				 (int)strcspn(rv->v.name, "@"), rv->v.name);
		vo->state = pst == PROV_RUNNING ? "provisioning" : pst == PROV_FAILED ? "failed" : "ready";
		vo->prov_total = rv->v.size;
		vo->prov_done = pst == PROV_READY ? rv->v.size : done;
		vo->prov_error = atomic_load(&rv->prov_err);
		vo->prov_eta_s = -1;
		/* rate of this run so far (not counting what an earlier run did) */
		if (pst == PROV_RUNNING && t0 && done > base && now > t0)
			vo->prov_eta_s = (double)(rv->v.size - done) * (double)(now - t0) /
					 1000.0 / (double)(done - base);
		if (pst == PROV_RUNNING && strcmp(out->state, "fenced")) {
			out->state = "provisioning";
			all_done += done;
			all_total += rv->v.size;
			if (vo->prov_eta_s > out->rebuild_eta_s)
				out->rebuild_eta_s = vo->prov_eta_s;
		}
		out->n_volumes++;
	}
	pthread_mutex_unlock(&p->meta_mu);
	rbd_adm_list_fill(rp, out);
	/* the pool-level fields summarise the volumes still being written out */
	out->rebuild_progress = all_total ? (double)all_done / (double)all_total : 0.0;
	return 0;
}


static uint64_t raid_rbd_vol_write_same_max(const struct raid_vol *vol)
{
	return WS_MAX;
}

static void raid_rbd_vol_prov(const struct raid_vol *vol, struct raid_vol_prov *out)
{
	const struct rbd_vol *rv = (const struct rbd_vol *)vol;

	if (!rv->thin)
		return;
	out->thin = true;
	out->discard_zeroes = true;
	out->gran = (uint32_t)rv->obj_bytes;
	out->discard_max = DISCARD_MAX;
}

/* One object (RBD_ORDER): a request inside one object is one OSD op */
static void raid_rbd_vol_opt(const struct raid_vol *vol, uint32_t *gran, uint32_t *len)
{
	*gran = 1u << RBD_ORDER;
	*len = 1u << RBD_ORDER;
}

static int raid_rbd_vol_ready(const struct raid_vol *vol, uint16_t *frac)
{
	struct rbd_vol *rv = rv_of((struct raid_vol *)vol);
	uint64_t done;

	if (!rbd_fence_ok(rp_of(vol->pool)->fence))
		return -ENOLINK;
	switch (atomic_load(&rv->prov_state)) {
	case PROV_READY:
		return 0;
	case PROV_RUNNING:
		break;
	default:
		return atomic_load(&rv->prov_err);
	}
	if (vol->size) {
		done = atomic_load(&rv->prov_done);
		/* 65535 at most: 65536 would wrap to 0, and the volume is not done */
		*frac = done >= vol->size ? 65535 :
			(uint16_t)((unsigned __int128)done * 65536u / vol->size);
	}
	return -EINPROGRESS;
}

static int raid_rbd_pool_scrub(struct raid_pool *p, bool repair)
{
	LOG_ERR(RAID_MOD, "pool %s: an rbd pool is scrubbed by Ceph (ceph pg deep-scrub)", p->name);
	return -ENOTSUP;
}

/* fail (no member of that name), add-spare and remove are the dispatcher's
 * answers for a backend without members: Ceph keeps its own redundancy and
 * manages its own devices */
const struct raid_vol_backend_ops raid_rbd_backend = {
	.name = "rbd",
	.serves = raid_rbd_serves,
	.pool_open = raid_rbd_pool_open,
	.pool_close = raid_rbd_pool_close,
	.pool_info = raid_rbd_pool_info,
	.pool_scrub = raid_rbd_pool_scrub,
	.vol_open = raid_rbd_vol_open,
	.vol_submit = raid_rbd_vol_submit,
	.vol_opt = raid_rbd_vol_opt,
	.vol_ready = raid_rbd_vol_ready,
	.vol_write_same_max = raid_rbd_vol_write_same_max,
	.vol_prov = raid_rbd_vol_prov,
	.vol_resize = raid_rbd_vol_resize,
	.vol_refresh = raid_rbd_vol_refresh,
	.pool_snapshot = rbd_adm_snapshot,
	.pool_vol_delete = rbd_adm_vol_delete,
	.pool_clone = rbd_adm_clone,
	.pool_rollback = rbd_adm_rollback,
	.pool_inflate = rbd_adm_inflate,
	.pool_vol_create = rbd_adm_vol_create,
	.shared_read = rbd_shared_read,
	.shared_update = rbd_shared_update,
	.shared_notify = rbd_shared_notify,
	.shared_notify_async = rbd_shared_notify_async,
	.shared_watch = rbd_shared_watch,
	.shared_unwatch = rbd_shared_unwatch,
};

#else /* !RTGT_HAVE_RBD */

/* No rbd volume can exist in this build: the backend only refuses pools. */
static int raid_rbd_pool_open(const struct conf_pool *cp, struct raid_pool **out)
{
	LOG_ERR(RAID_MOD, "pool %s: rbd pools are not supported by this build (built without librbd-dev/librados-dev)",
		cp->name);
	return -ENOTSUP;
}

static void raid_rbd_pool_close(struct raid_pool *p)
{
	free(p);
}

static int raid_rbd_pool_info(struct raid_pool *p, struct raid_pool_info *out)
{
	return -ENOTSUP;
}

static int raid_rbd_vol_open(struct raid_pool *p, const char *name, const struct conf_size *size,
			     unsigned flags, struct raid_vol **out)
{
	return -ENOTSUP;
}

static int raid_rbd_vol_submit(struct raid_vol *vol, struct raid_ioctx *ctx,
			       struct raid_io *io)
{
	return -ENOTSUP;
}

static void raid_rbd_vol_opt(const struct raid_vol *vol, uint32_t *gran, uint32_t *len)
{
	*gran = *len = 0;
}

const struct raid_vol_backend_ops raid_rbd_backend = {
	.name = "rbd",
	.serves = raid_rbd_serves,
	.pool_open = raid_rbd_pool_open,
	.pool_close = raid_rbd_pool_close,
	.pool_info = raid_rbd_pool_info,
	.vol_open = raid_rbd_vol_open,
	.vol_submit = raid_rbd_vol_submit,
	.vol_opt = raid_rbd_vol_opt,
};

#endif
