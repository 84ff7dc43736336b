/*
 * raid/reshape_gate.c - the reshape's gate on the request path: every
 * request from outside is counted in the gate's epoch and given the
 * layout that serves its range; one that overlaps the window a reshape
 * is moving waits on the gate's list (reshape.c's top: layouts by
 * position, and who moves the window). Out of reshape.c so that io.c,
 * below the background work, asks the gate without calling up into the
 * reshape; reshape.c raises and lowers the gate and re-runs the waiters
 * (raid_io_gate_go).
 *
 * Layer: gate-hold, below the rows and segments and the request
 * (raid/README.md "Layers"). May call: conf/ only; it reads and writes
 * struct raid_reshape's gate fields (gate_end, ckpt, all, epoch,
 * inflight, the waiters) under rs.mu, as reshape.c does.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "raid/io_int.h"

/* ---------------- the gate ---------------- */

bool raid_reshape_admit(struct req *rq)
{
	struct raid_pool *p = rq->p;
	struct raid_reshape *rs = &p->rsh;
	bool flush = rq->io->op == RAID_OP_FLUSH;
	uint64_t a = rq->loff, b = rq->loff + rq->len;
	unsigned e;

	/* counted first, then the gate looked at: a reshape thread that
	 * flips the epoch after raising the gate waits for this request,
	 * or this request sees the gate */
	for (;;) {
		e = atomic_load(&rs->epoch);
		atomic_fetch_add(&rs->inflight[e & 1], 1);
		if (atomic_load(&rs->epoch) == e)
			break;
		atomic_fetch_sub(&rs->inflight[e & 1], 1);
	}
	rq->rs_counted = true;
	rq->rs_epoch = e;
	if (!atomic_load(&rs->active)) {
		rq->g = &p->g;
		return true;
	}
	pthread_mutex_lock(&rs->mu);
	if (rs->all || (!flush && a < rs->gate_end && b > rs->ckpt)) {
		rq->rs_counted = false;
		atomic_fetch_sub(&rs->inflight[e & 1], 1);
		rq->rs_next = NULL;
		if (rs->waiters_tail)
			rs->waiters_tail->rs_next = rq;
		else
			rs->waiters = rq;
		rs->waiters_tail = rq;
		rq->phase = PH_LOCKING;
		pthread_mutex_unlock(&rs->mu);
		return false;
	}
	rq->g = flush ? &p->g : b <= rs->ckpt ? &rs->gn : &rs->go;
	pthread_mutex_unlock(&rs->mu);
	return true;
}

void raid_reshape_leave(struct raid_pool *p, unsigned epoch)
{
	atomic_fetch_sub(&p->rsh.inflight[epoch & 1], 1);
}

void raid_reshape_done(struct req *rq)
{
	rq->rs_counted = false;
	raid_reshape_leave(rq->p, rq->rs_epoch);
}
