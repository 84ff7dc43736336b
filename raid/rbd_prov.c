/*
 * raid/rbd_prov.c - thick write-out of an rbd image (rbd_int.h): zeros
 * written once over every object of a new image, on the volume's own
 * thread, so that the space is taken in the OSDs at creation and not at the
 * first write; resumed from a checkpoint after a restart, handed between
 * nodes through a lease on the image.
 *
 * Volume preparation state machine (struct rbd_vol, rv->prov_state; thick
 * provisioning runs on the volume's own thread, prov_main(), never on a
 * reactor):
 *
 *   READY  <---------------------------------------------------------------.
 *   RUNNING --rbd_prov_start() (the image opened is not written out yet):  |
 *        |     (prov_main: take the provisioning lock, resume from the      |
 *        |      rtgt.thick checkpoint, write-sames PROV_QD in flight, paced |
 *        |      to the pool's provision_mbps, checkpoints: provision())     |
 *        |--all written, flushed, rtgt.thick = "done" (prov_main) ---------'
 *        |--a peer node holds the lock and finishes: rtgt.thick = "done"
 *        |     seen while waiting (prov_main) ----------------------------> READY
 *        |--write/flush/metadata error, or a write not answered in
 *        |     PROV_IO_TIMEOUT_S (prov_main) --------------------------> FAILED
 *        `--pool closing (prov_stop set by rbd_prov_stop): the
 *              offset reached is checkpointed, thread ends, volume freed.
 *   FAILED: prov_err holds the errno; stays until the daemon restarts, which
 *           resumes from the checkpoint.
 * Opening the volume returns once the state left RUNNING or after
 * PROV_GRACE_MS, whichever is first (rbd_prov_grace: a small image is
 * ready at once).
 * While not READY the SCSI layer answers media access with NOT READY
 * (raid_vol_ready; raid_vol_ready_progress adds prov_done / size for the
 * sense data's progress indication) and the request path (rbd.c) refuses
 * all but FLUSH, so no initiator data can be overwritten by provisioning
 * zeros nor zeros read before they were written. The lock (RADOS lock "rtgt.thick" on the image
 * header object, 10 s lease renewed every second, also while waiting on a
 * slow write) makes one node write the image out while a peer opening the
 * same image waits for "done". A lease not renewed for PROV_LEASE_S -
 * PROV_LEASE_MARGIN_MS (6 s: the thread stalled, the cluster answered a
 * renewal late) counts as lost even if a renewal then succeeds, since a
 * peer may have taken it, finished and released it meanwhile: the write-out
 * ends (-EBUSY) and prov_main waits for "done", or takes the lease anew and
 * re-reads rtgt.thick before writing again. No zero write starts, and no
 * checkpoint or "done" is stored, without a lease renewed within those 6 s.
 * Writes already in flight when a lease is lost (a node cut off from the
 * cluster whose librbd resends them later) are not stopped by the lease
 * but by blocklisting: the holder records its client address in
 * rtgt.thick_holder when it takes the lease (prov_take), and a node taking
 * the lease over blocklists a recorded holder other than itself before it
 * writes (rbd_fence.c); a holder that finished or stopped cleanly with
 * every write completed removes the record under its lease.
 * Invariant (prov_check, on every state change): prov_done <= the volume
 * size, and < the size while RUNNING: the write-out is not done until
 * rtgt.thick says "done", so the last bytes are published only after the
 * state is READY (prov_main stores the state first, readers load prov_done
 * first: a reader that sees all bytes done also sees READY, and nobody
 * sees "provisioning" at 100%); FAILED has prov_err < 0, READY and RUNNING
 * have 0. Only the thread writes zeros, and only in RUNNING under the
 * lease; READY is final.
 *
 * Layer: rbd shared state (raid/README.md "Layers"). May call:
 * rbd_meta.c (rbd_meta_get), rbd_fence.c (blocklisting a lease holder),
 * librbd. Not rbd.c: rbd.c starts and stops it (rbd_prov_*).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "conf/util.h"
#include "raid/rbd_int.h"

#ifdef RTGT_HAVE_RBD

/* the client address of the node holding the write-out lease, blocklisted
 * by a node that takes the lease over (prov_take) */
#define META_HOLDER "rtgt.thick_holder"
#define PROV_QD    8u
#define PROV_LOCK  "rtgt.thick"
#define PROV_LEASE_S 10
/* a zero write starts only while the lease has this much left (lease_ms
 * is taken before the request, so the OSD's lease ends later still) */
#define PROV_LEASE_MARGIN_MS 4000u
#define PROV_GRACE_MS 1000u           /* rbd_prov_grace waits this long */

static bool prov_check(struct rbd_vol *rv)
{
	int st = atomic_load(&rv->prov_state), err = atomic_load(&rv->prov_err);

	uint64_t done = atomic_load(&rv->prov_done);

	if (done > rv->v.size || (st == PROV_RUNNING && done >= rv->v.size))
		return false;
	if (st == PROV_FAILED)
		return err < 0;
	return err == 0 && (st == PROV_READY || st == PROV_RUNNING);
}

static void prov_set(struct rbd_vol *rv, int state, int err)
{
	atomic_store(&rv->prov_err, err);
	atomic_store(&rv->prov_state, state);
	RTGT_CHECK(prov_check(rv));
}

/* Format 2 images: data objects "rbd_data.<id>.N", header "rbd_header.<id>". */
static void header_oid(const struct rbd_vol *rv, char *oid, size_t len)
{
	const char *id = strchr(rv->prefix, '.');

	snprintf(oid, len, "rbd_header.%s", id ? id + 1 : rv->prefix);
}

/* Take or renew the provisioning lease: 0, -EBUSY while a peer holds it. */
static void prov_unlock(struct rbd_pool *rp, struct rbd_vol *rv);

static int prov_lock(struct rbd_pool *rp, struct rbd_vol *rv)
{
	struct timeval lease = { PROV_LEASE_S, 0 };
	uint64_t t = conf_mono_ms();
	char oid[80];
	int rc;

	header_oid(rv, oid, sizeof(oid));
	rc = rados_lock_exclusive(rp->ioctx, oid, PROV_LOCK, "rtgt", "rtgt thick provisioning",
				  &lease, LIBRADOS_LOCK_FLAG_MAY_RENEW);
	if (rc == 0)
		rv->lease_ms = t;
	return rc == -EEXIST ? -EBUSY : rc;
}

/*
 * Take the write-out lease (not a renewal): 0, -EBUSY while a peer holds it
 * or its previous holder could not be fenced yet. A previous holder other
 * than this node (META_HOLDER: it lost the lease, was stopped, died) may
 * still have zero writes in its librbd: it is blocklisted before this node
 * writes anything, then this node records itself as the holder.
 */
static int prov_take(struct rbd_pool *rp, struct rbd_vol *rv, bool *told)
{
	const char *self = rbd_fence_addr(rp->fence);
	char prev[160];
	int rc = prov_lock(rp, rv);

	if (rc < 0)
		return rc;
	rc = rbd_meta_get(rv->img, META_HOLDER, prev, sizeof(prev));
	if (rc == 0 && prev[0] && strcmp(prev, self) != 0) {
		rc = rbd_fence_blocklist(rp->fence, prev);
		if (rc < 0) {
			if (!*told)
				LOG_ERR(RAID_MOD, "rbd: %s/%s: cannot blocklist %s, the previous holder of the write-out lease: %s; not taking over",
					rp->rbd_pool, rv->v.name, prev, strerror(-rc));
			*told = true;
			prov_unlock(rp, rv);
			return -EBUSY;
		}
		LOG_WARN(RAID_MOD, "rbd: %s/%s: taking the write-out over from %s: blocklisted it first",
			 rp->rbd_pool, rv->v.name, prev);
	} else if (rc < 0 && rc != -ENOENT) {
		goto err;
	}
	rc = rbd_metadata_set(rv->img, META_HOLDER, self);
	if (rc < 0)
		goto err;
	return 0;
err:
	LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s: %s", rp->rbd_pool, rv->v.name, META_HOLDER,
		strerror(-rc));
	prov_unlock(rp, rv);
	return rc;
}

/* Whether the lease taken or renewed last still has the margin left. */
static bool prov_lease_ok(const struct rbd_vol *rv)
{
	return conf_mono_ms() - rv->lease_ms < PROV_LEASE_S * 1000u - PROV_LEASE_MARGIN_MS;
}

/*
 * Renew the lease held since the last take / renewal: 0, or -EBUSY when it
 * is lost. A lease that lapsed (this thread stalled: a stopped process, a
 * slow cluster, a renewal that itself took long) counts as lost even when
 * the renewal succeeds: a peer may have taken the lock meanwhile, finished
 * the write-out and released it, and "renewing" would then take it anew
 * and write zeros over data written through the peer since. The caller
 * ends its write-out; prov_main re-reads rtgt.thick under a fresh lease.
 */
static int prov_renew(struct rbd_pool *rp, struct rbd_vol *rv)
{
	uint64_t held = rv->lease_ms;
	int rc;

	if (!prov_lease_ok(rv))
		return -EBUSY;
	rc = prov_lock(rp, rv);
	if (rc == 0 && conf_mono_ms() - held >= PROV_LEASE_S * 1000u - PROV_LEASE_MARGIN_MS)
		rc = -EBUSY;   /* answered too late to know it had not lapsed */
	return rc;
}

static void prov_unlock(struct rbd_pool *rp, struct rbd_vol *rv)
{
	char oid[80];

	header_oid(rv, oid, sizeof(oid));
	rados_unlock(rp->ioctx, oid, PROV_LOCK, "rtgt");
}

/* The checkpoint in META_THICK: *done, or the object-aligned offset reached. */
int rbd_prov_checkpoint(struct rbd_vol *rv, bool *done, uint64_t *from)
{
	char s[32], *end;
	int rc = rbd_meta_get(rv->img, META_THICK, s, sizeof(s));

	if (rc < 0)
		return rc;
	*done = strcmp(s, "done") == 0;
	*from = *done ? rv->v.size : strtoull(s, &end, 10);
	if (!*done && (*end || *from > rv->v.size))
		*from = 0;   /* unreadable checkpoint: start over, zeros are idempotent */
	if (!*done)
		*from = *from / rv->obj_bytes * rv->obj_bytes;
	return 0;
}

/* While RUNNING the bytes done stay below the size (see the invariant). */
static void prov_publish(struct rbd_vol *rv, uint64_t pos)
{
	atomic_store(&rv->prov_done, pos < rv->v.size ? pos : rv->v.size - 1);
}

static void prov_progress(struct rbd_vol *rv, uint64_t pos)
{
	if (!atomic_load(&rv->prov_t0_ms)) {
		atomic_store(&rv->prov_base, pos);
		atomic_store(&rv->prov_t0_ms, conf_mono_ms());
	}
	prov_publish(rv, pos);
}

static void sleep_us(uint64_t us)
{
	struct timespec t = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };

	nanosleep(&t, NULL);
}

/* About every second: renew the lease (-EBUSY when a peer took it) and
 * checkpoint @done, below which every write completed. */
static int prov_tick(struct rbd_pool *rp, struct rbd_vol *rv, uint64_t done, uint64_t *last_ck)
{
	char s[32];
	int rc;

	if (conf_mono_ms() - *last_ck < 1000 || done >= rv->v.size)
		return 0;
	rc = prov_renew(rp, rv);
	if (rc < 0)
		return rc;
	snprintf(s, sizeof(s), "%" PRIu64, done);
	rbd_metadata_set(rv->img, META_THICK, s);   /* a hint only */
	*last_ck = conf_mono_ms();
	return 0;
}

/*
 * The writes in flight of one provision() run, shared with librbd's
 * completion callbacks (prov_write_done, on librbd's threads): freed by
 * whichever lets go of it last, provision() or the last callback, so that a
 * write provision() gave up on (PROV_IO_TIMEOUT_S) can still complete into
 * live memory. slot[] is a ring, oldest write at provision()'s head.
 */
struct prov_win {
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* a write completed */
	unsigned refs;               /* provision() + each write in flight (mu) */
	int err;                     /* first write error, 0 (mu) */
	struct prov_slot {
		struct prov_win *w;
		uint64_t off, end;       /* the write covers [off, end) */
		uint64_t t_us;           /* when it was started */
		int ret;                 /* librbd's result once done (mu) */
		bool done;               /* (mu) */
	} slot[PROV_QD];
};

/* Drops one reference; called with w->mu held, returns with it released. */
static void prov_win_put(struct prov_win *w)
{
	bool last = --w->refs == 0;

	pthread_mutex_unlock(&w->mu);
	if (last) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
	}
}

/* librbd thread: record the result, wake provision(), let go. */
static void prov_write_done(rbd_completion_t c, void *arg)
{
	struct prov_slot *sl = arg;
	struct prov_win *w = sl->w;
	int r = (int)rbd_aio_get_return_value(c);

	rbd_aio_release(c);
	pthread_mutex_lock(&w->mu);
	sl->ret = r;
	sl->done = true;
	if (r < 0 && !w->err)
		w->err = r;
	pthread_cond_broadcast(&w->cv);
	prov_win_put(w);
}

/* Starts the write-same of [pos, pos + len) in slot @sl. */
static int prov_write(struct rbd_vol *rv, struct prov_win *w, struct prov_slot *sl, uint64_t pos,
		      uint64_t len)
{
	static const char zero[4096];
	rbd_completion_t c;
	int rc;

	sl->w = w;
	sl->off = pos;
	sl->end = pos + len;
	sl->t_us = conf_mono_us();
	sl->ret = 0;
	sl->done = false;
	rc = rbd_aio_create_completion(sl, prov_write_done, &c);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&w->mu);
	w->refs++;
	pthread_mutex_unlock(&w->mu);
	rc = rbd_aio_writesame(rv->img, pos, len, zero, len % sizeof(zero) ? 512 : sizeof(zero), c,
			       0);
	if (rc < 0) {
		rbd_aio_release(c);
		pthread_mutex_lock(&w->mu);
		w->refs--;            /* provision() still holds one */
		pthread_mutex_unlock(&w->mu);
	}
	return rc;
}

/*
 * Write zeros over [from, size), one object per write-same, up to PROV_QD in
 * flight (a sliding window: a new write starts as soon as the oldest one
 * completed). rbd_discard_on_zeroed_write_same is off (pool open), so the
 * zeros are really written and every object exists: the space is taken in
 * the OSDs now rather than at the first write. With provision_mbps the
 * writes are paced: each may start only at its slot in a schedule of
 * provision_mbps * 10^6 bytes/s (a token bucket one write deep), so the
 * write-out leaves the rest of the cluster's bandwidth to the other LUNs
 * while keeping several writes in flight; a thread woken up late makes up at
 * most PACE_SLACK_US, so a stall (a slow cluster) is never followed by a
 * burst above the cap. About every second the lease is renewed and the
 * offset reached (all writes before it completed) is checkpointed in
 * META_THICK, so an interrupted run resumes there. No new write starts once
 * one failed. A write not back after PROV_IO_TIMEOUT_S (librbd can hold the
 * writes of a client the cluster blocklisted for good, past
 * rados_osd_op_timeout) fails the run with -ETIMEDOUT and is left to
 * librbd (struct prov_win). Returns 0 when done ("done" stored), -ECANCELED
 * when the pool closes, -EBUSY when the lease was lost to a peer, or the
 * error that stopped it; every write but those given up on has completed.
 */
#define PACE_SLACK_US 100000u
#define PROV_IO_TIMEOUT_S 65u        /* beyond rados_osd_op_timeout (60 s) */
static int provision(struct rbd_pool *rp, struct rbd_vol *rv, uint64_t from)
{
	uint64_t size = rv->v.size, pos = from, done = from, next_log, last_ck = conf_mono_ms();
	uint64_t next_us = conf_mono_us();     /* paced: when the next write may start */
	unsigned head = 0, n = 0;        /* ring of writes in flight in w->slot */
	bool broken = false;             /* a write failed: done stays before it */
	bool abandoned = false;          /* writes given up on are still out */
	struct prov_win *w = calloc(1, sizeof(*w));
	int rc = 0;

	if (!w)
		return -ENOMEM;
	{
		pthread_condattr_t ca;

		/* deadlines are on conf_mono_us()'s monotonic clock */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&w->mu, NULL);
	w->refs = 1;
	prov_progress(rv, from);
	next_log = from + size / 10;
	if (rp->prov_mbps)
		LOG_INFO(RAID_MOD, "rbd: %s/%s: writing out %" PRIu64 " bytes (thick, at most %u MB/s)%s",
			 rp->rbd_pool, rv->v.name, size - from, rp->prov_mbps,
			 from ? ", resuming" : "");
	else
		LOG_INFO(RAID_MOD, "rbd: %s/%s: writing out %" PRIu64 " bytes (thick)%s",
			 rp->rbd_pool, rv->v.name, size - from, from ? ", resuming" : "");
	while (pos < size || n) {
		uint64_t t = conf_mono_us(), wait = 0;
		bool more, head_done;
		int werr;

		pthread_mutex_lock(&w->mu);
		werr = w->err;
		head_done = n && w->slot[head].done;
		pthread_mutex_unlock(&w->mu);
		if (werr < 0 && rc == 0)
			rc = werr;           /* no new write after a failed one */
		more = rc == 0 && pos < size && n < PROV_QD;
		if (more && atomic_load(&rv->prov_stop)) {
			rc = -ECANCELED;
			more = false;
		}
		if (more && rp->prov_mbps && t < next_us) {
			wait = next_us - t;
			more = false;
		}
		if (more && !prov_lease_ok(rv)) {
			/* never a zero write without a valid lease */
			rc = prov_renew(rp, rv);
			if (rc < 0)
				more = false;
		}
		if (more) {
			uint64_t len = rv->obj_bytes - pos % rv->obj_bytes;

			if (len > size - pos)
				len = size - pos;
			rc = prov_write(rv, w, &w->slot[(head + n) % PROV_QD], pos, len);
			if (rc < 0)
				continue;   /* drain what is in flight */
			n++;
			pos += len;
			if (rp->prov_mbps) {
				if (next_us + PACE_SLACK_US < t)
					next_us = t - PACE_SLACK_US;
				next_us += len / rp->prov_mbps;   /* bytes / (MB/s) = us */
			}
			continue;
		}
		if (n && (!wait || head_done)) {
			struct prov_slot *sl = &w->slot[head];
			uint64_t dl = sl->t_us + PROV_IO_TIMEOUT_S * 1000000ull;
			int r = 0;

			/* window full, all issued, or stopping: wait for the
			 * oldest (the checkpoint only moves past writes that
			 * completed, in order) */
			pthread_mutex_lock(&w->mu);
			while (!sl->done && conf_mono_us() < dl && rc != -EBUSY) {
				/* keep the lease while waiting (a write may take up
				 * to the timeout): wake every 0.5 s to renew it */
				uint64_t s_us = conf_mono_us() + 500000u < dl ? conf_mono_us() + 500000u : dl;
				struct timespec sts = { (time_t)(s_us / 1000000u),
							(long)(s_us % 1000000u) * 1000L };

				while (!sl->done &&
				       pthread_cond_timedwait(&w->cv, &w->mu, &sts) != ETIMEDOUT)
					;
				if (sl->done || rc != 0)
					continue;
				pthread_mutex_unlock(&w->mu);
				rc = prov_tick(rp, rv, done, &last_ck);
				pthread_mutex_lock(&w->mu);
			}
			head_done = sl->done;
			r = sl->ret;
			pthread_mutex_unlock(&w->mu);
			if (!head_done && rc == -EBUSY) {
				/* the lease is lost: what is in flight is left to
				 * librbd (struct prov_win); nothing new starts */
				abandoned = true;
				break;
			}
			if (!head_done) {
				LOG_ERR(RAID_MOD, "rbd: %s/%s: a write-out write at %" PRIu64
					" got no answer in %u s; giving up on it", rp->rbd_pool,
					rv->v.name, sl->off, PROV_IO_TIMEOUT_S);
				if (rc == 0 || rc == -ECANCELED)
					rc = -ETIMEDOUT;
				abandoned = true;
				break;
			}
			if (r < 0) {
				broken = true;
				if (rc == 0)
					rc = r;
			} else if (!broken) {
				done = sl->end;
			}
			head = (head + 1) % PROV_QD;
			n--;
			prov_progress(rv, done);
			if (rc == 0)
				rc = prov_tick(rp, rv, done, &last_ck);
			if (rc == -EBUSY && n) {
				abandoned = true;   /* see above */
				break;
			}
			if (done >= next_log && done < size) {
				LOG_INFO(RAID_MOD, "rbd: %s/%s: thick provisioning %.0f%%", rp->rbd_pool,
					 rv->v.name, 100.0 * (double)done / (double)size);
				next_log = done + size / 10;
			}
			continue;
		}
		if (!wait)
			break;      /* stopped or failed, nothing left in flight */
		/* only the pace holds the next write back: with writes in
		 * flight wake up often to see them complete (progress) */
		sleep_us(wait < (n ? 2000u : 100000u) ? wait : (n ? 2000u : 100000u));
		if (rc == 0)
			rc = prov_tick(rp, rv, done, &last_ck);
	}
	pthread_mutex_lock(&w->mu);
	prov_win_put(w);
	if (rc == 0)
		rc = rbd_flush(rv->img);
	if (rc == 0 && prov_renew(rp, rv) < 0)
		rc = -EBUSY;   /* "done" only under a lease still held */
	if (rc == 0)
		rc = rbd_metadata_set(rv->img, META_THICK, "done");
	if (rc == -ECANCELED) {
		char s[32];

		/* only under the lease: a lapsed one may have let a peer
		 * store "done", which an offset must not replace */
		snprintf(s, sizeof(s), "%" PRIu64, done);
		if (prov_renew(rp, rv) == 0)
			rbd_metadata_set(rv->img, META_THICK, s);
		LOG_INFO(RAID_MOD, "rbd: %s/%s: thick provisioning interrupted at %" PRIu64
			 " of %" PRIu64 " bytes (the next start resumes)", rp->rbd_pool, rv->v.name,
			 done, size);
	} else if (rc == -EBUSY) {
		LOG_WARN(RAID_MOD, "rbd: %s/%s: thick provisioning lease lost to another node at %"
			 PRIu64 " bytes; waiting for it to finish", rp->rbd_pool, rv->v.name, done);
	} else if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: thick provisioning stopped at %" PRIu64 " of %" PRIu64
			" bytes: %s; the LUN stays not ready (the next start resumes)%s", rp->rbd_pool,
			rv->v.name, done, size, strerror(-rc),
			abandoned ? "; writes still held by librbd" : "");
	} else {
		LOG_INFO(RAID_MOD, "rbd: %s/%s: thick provisioning done", rp->rbd_pool, rv->v.name);
	}
	return rc;
}

/* The volume's provisioning thread: wait for the lease (a peer may be
 * writing the image out; follow its checkpoint meanwhile), then write out
 * what is left. Never touches a reactor. */
static void *prov_main(void *arg)
{
	struct rbd_vol *rv = arg;
	struct rbd_pool *rp = rp_of(rv->v.pool);
	bool done = false, told = false, told_bl = false;
	uint64_t from = 0;
	int rc;

	for (;;) {
		if (atomic_load(&rv->prov_stop))
			return NULL;
		rc = prov_take(rp, rv, &told_bl);
		if (rc == 0) {
			/* under the lease: the checkpoint is the truth */
			rc = rbd_prov_checkpoint(rv, &done, &from);
			if (rc < 0)
				LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s: %s", rp->rbd_pool,
					rv->v.name, META_THICK, strerror(-rc));
			else if (!done)
				rc = provision(rp, rv, from);
			/* every zero write completed (done, or interrupted
			 * cleanly) and the lease still held: nobody need fence
			 * this node to take over. Otherwise (lease lost, writes
			 * given up on) the next holder blocklists it. */
			if ((rc == 0 || rc == -ECANCELED) && prov_lease_ok(rv))
				rbd_metadata_remove(rv->img, META_HOLDER);
			prov_unlock(rp, rv);
			if (rc != -EBUSY)
				break;
		} else if (rc != -EBUSY) {
			LOG_ERR(RAID_MOD, "rbd: %s/%s: provisioning lock: %s", rp->rbd_pool,
				rv->v.name, strerror(-rc));
			break;
		}
		rc = rbd_prov_checkpoint(rv, &done, &from);
		if (rc < 0)
			LOG_ERR(RAID_MOD, "rbd: %s/%s: metadata %s: %s", rp->rbd_pool, rv->v.name,
				META_THICK, strerror(-rc));
		if (rc < 0 || done)
			break;
		if (!told)
			LOG_INFO(RAID_MOD, "rbd: %s/%s: being written out by another node (or a previous run whose lease has not expired yet); waiting",
				 rp->rbd_pool, rv->v.name);
		told = true;
		prov_progress(rv, from);
		{
			/* a peer's "done" is seen within 0.1 s: a second node
			 * starting next to the first is ready with it */
			struct timespec ts = { 0, 100000000 };

			nanosleep(&ts, NULL);
		}
	}
	if (rc == -ECANCELED)
		return NULL;
	if (rc == -ESHUTDOWN)
		rbd_fence_gone(rp->fence);   /* librados' EBLOCKLISTED */
	if (rc < 0) {
		prov_set(rv, PROV_FAILED, rc);
		return NULL;
	}
	/* state first, then the last bytes: see the invariant */
	prov_set(rv, PROV_READY, 0);
	atomic_store(&rv->prov_done, rv->v.size);
	LOG_INFO(RAID_MOD, "rbd: %s/%s: ready", rp->rbd_pool, rv->v.name);
	return NULL;
}

/* ---- entry points (rbd_int.h) ---- */

int rbd_prov_start(struct rbd_vol *rv, uint64_t from)
{
	int rc;

	prov_publish(rv, from);
	prov_set(rv, PROV_RUNNING, 0);
	rc = pthread_create(&rv->prov_thr, NULL, prov_main, rv);
	if (rc) {
		LOG_ERR(RAID_MOD, "rbd: %s/%s: provisioning thread: %s",
			rp_of(rv->v.pool)->rbd_pool, rv->v.name, strerror(rc));
		return -rc;
	}
	rv->prov_thread_live = true;
	return 0;
}

void rbd_prov_grace(struct rbd_vol *rv)
{
	if (!rv->prov_thread_live)
		return;
	/* a small image is written out in a moment: let it be ready when the
	 * daemon starts serving rather than answer NOT READY for a fraction
	 * of a second; a large one goes on in the background */
	for (unsigned t = 0; t < PROV_GRACE_MS / 10 &&
	     atomic_load(&rv->prov_state) == PROV_RUNNING; t++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
}

void rbd_prov_stop(struct rbd_vol *rv)
{
	if (!rv->prov_thread_live)
		return;
	/* at most one batch (PROV_QD objects) to wait for; the offset reached
	 * is checkpointed */
	atomic_store(&rv->prov_stop, true);
	pthread_join(rv->prov_thr, NULL);
	rv->prov_thread_live = false;
}

#endif /* RTGT_HAVE_RBD */
