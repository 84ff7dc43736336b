/*
 * raid/fault.c - the fault-injection layer of the member I/O stack
 * (raid/mlayer.h, settings in raid/fault.h).
 *
 * Layer: context (raid/README.md "Layers"). May call: ioctx.c, conf/;
 * the member layer below it only through mlayer.h.
 *
 * Submission: a write while sub_err > 0 is refused (-ENOMEM, one count
 * used); a write overlapping the torn range is cut to its prefix before it
 * goes down (a prefix of 0 goes nowhere: its completion is deferred on the
 * submitting ctx, never run inside the submit). Everything else goes down
 * as it came.
 * Completion, in this order: a torn write gets its length back and the
 * configured result (an error of the prefix's own write wins); a write
 * overlapping the write-error range fails; a read overlapping the
 * read-error range fails, a write covering all of it clears it; then, with
 * added latency, the result waits in a timer on the submitting ctx until
 * the configured time after the submission has passed.
 *
 * States of a mio in this layer: BELOW (submitted down, or deferred for a
 * prefix of 0) -> HELD (latency timer in the ring) -> UP (handed to the
 * layer above); HELD is skipped when no latency is due. Invariant
 * (fault_check): a torn mio going up has its original length back.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "conf/util.h"
#include "conf/conf.h"
#include "raid/fault.h"

#ifndef RAID_MOD
#define RAID_MOD "raid"
#endif

/* Per-request state, in the mio's layer-private area. */
struct fault_mio {
	struct raid_iotimer t;     /* latency hold; first: fault_timer's cast */
	struct raid_fault *f;
	struct raid_mio *mio;
	struct raid_ioctx *ctx;    /* submitting ctx */
	uint64_t t0;               /* submission time, when a latency was set */
	uint64_t len;              /* a torn write's full length */
	int res;                   /* a torn write's result; the held result */
	bool torn;
};

static struct fault_mio *fm(struct raid_fault *f, struct raid_mio *mio)
{
	return raid_mlayer_priv(&f->l, mio);
}

static bool fault_check(const struct fault_mio *x, const struct raid_mio *mio)
{
	return !x->torn || mio->len == x->len;
}

static uint64_t range_end(uint64_t off, uint64_t len)
{
	if (len == RAID_FAULT_ALL || off + len < off)
		return UINT64_MAX;
	return off + len;
}

static bool overlaps(const struct raid_mio *mio, uint64_t a, uint64_t b)
{
	return b && mio->off < b && a < mio->off + mio->len;
}

static void fault_timer(struct raid_ioctx *ctx, struct raid_iotimer *t)
{
	struct fault_mio *x = (struct fault_mio *)(void *)t;

	raid_mlayer_up(x->mio, x->res);
}

static void fault_complete(struct raid_mlayer *l, struct raid_mio *mio, int res)
{
	struct raid_fault *f = (struct raid_fault *)(void *)l;
	struct fault_mio *x = fm(f, mio);
	uint64_t lat = 0;

	if (x->torn) {
		mio->len = x->len;
		if (res == 0)
			res = x->res;
	} else if (res == 0 && mio->op != RAID_MIO_FSYNC) {
		uint64_t b = atomic_load(&f->wr_b), a = atomic_load(&f->wr_a);

		if (mio->op == RAID_MIO_WRITE && overlaps(mio, a, b))
			res = -EIO;
		b = atomic_load(&f->rd_b);
		a = atomic_load(&f->rd_a);
		if (res == 0 && overlaps(mio, a, b)) {
			if (mio->op == RAID_MIO_READ)
				res = -EIO;
			else if (mio->off <= a && mio->off + mio->len >= b)
				atomic_store(&f->rd_b, 0);   /* rewritten: remapped */
		}
	}
	RTGT_CHECK(fault_check(x, mio));
	if (mio->op == RAID_MIO_READ)
		lat = atomic_load(&f->rd_lat_ns);
	else if (mio->op == RAID_MIO_WRITE)
		lat = atomic_load(&f->wr_lat_ns);
	if (lat && x->t0 && conf_mono_ns() < x->t0 + lat) {
		x->res = res;
		x->t.fn = fault_timer;
		raid_ioctx_timer_arm(x->ctx, &x->t, x->t0 + lat);
		return;
	}
	raid_mlayer_up(mio, res);
}

/* A torn write with a prefix of 0: nothing went down. */
static void torn_nothing(void *arg)
{
	struct fault_mio *x = arg;

	x->mio->t_dev_ns = conf_mono_ns();
	fault_complete(&x->f->l, x->mio, 0);
}

static int fault_submit(struct raid_mlayer *l, struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_fault *f = (struct raid_fault *)(void *)l;
	struct fault_mio *x = fm(f, mio);
	int rc;

	if (mio->op == RAID_MIO_WRITE && atomic_load(&f->sub_err)) {
		atomic_fetch_sub(&f->sub_err, 1);
		return -ENOMEM;
	}
	x->f = f;
	x->mio = mio;
	x->ctx = ctx;
	x->torn = false;
	x->t0 = atomic_load(&f->rd_lat_ns) || atomic_load(&f->wr_lat_ns) ? conf_mono_ns() : 0;
	if (mio->op == RAID_MIO_WRITE &&
	    overlaps(mio, atomic_load(&f->torn_a), atomic_load(&f->torn_b))) {
		uint64_t prefix = atomic_load(&f->torn_prefix);

		x->torn = true;
		x->len = mio->len;
		x->res = atomic_load(&f->torn_res);
		if (prefix == 0)
			return raid_defer(ctx, torn_nothing, x);
		if (prefix < mio->len)
			mio->len = prefix;
	}
	rc = raid_mlayer_submit(l->below, ctx, mio);
	if (rc && x->torn)
		mio->len = x->len;
	return rc;
}

static const struct raid_mlayer_ops fault_ops = {
	.name = "fault",
	.priv_size = sizeof(struct fault_mio),
	.submit = fault_submit,
	.complete = fault_complete,
};

void raid_fault_init(struct raid_fault *f)
{
	memset(f, 0, sizeof(*f));
	f->l.ops = &fault_ops;
}

void raid_fault_stack(struct raid_fault *f, struct raid_mlayer *below)
{
	f->l.below = below;
}

void raid_fault_clear(struct raid_fault *f)
{
	atomic_store(&f->rd_b, 0);
	atomic_store(&f->wr_b, 0);
	atomic_store(&f->torn_b, 0);
	atomic_store(&f->sub_err, 0);
	atomic_store(&f->rd_lat_ns, 0);
	atomic_store(&f->wr_lat_ns, 0);
}

/* The end goes to 0 first, so a request in between sees no range at all
 * rather than a mix of the old and the new one. */
static void set_range(_Atomic uint64_t *a, _Atomic uint64_t *b, uint64_t off, uint64_t len)
{
	atomic_store(b, 0);
	if (!len)
		return;
	atomic_store(a, off);
	atomic_store(b, range_end(off, len));
}

void raid_fault_read_error(struct raid_fault *f, uint64_t off, uint64_t len)
{
	set_range(&f->rd_a, &f->rd_b, off, len);
}

bool raid_fault_read_error_set(const struct raid_fault *f)
{
	return atomic_load(&f->rd_b) != 0;
}

void raid_fault_write_error(struct raid_fault *f, uint64_t off, uint64_t len)
{
	set_range(&f->wr_a, &f->wr_b, off, len);
}

void raid_fault_submit_error(struct raid_fault *f, unsigned n)
{
	atomic_store(&f->sub_err, n);
}

unsigned raid_fault_submit_errors_left(const struct raid_fault *f)
{
	return atomic_load(&f->sub_err);
}

void raid_fault_latency(struct raid_fault *f, uint64_t read_ns, uint64_t write_ns)
{
	atomic_store(&f->rd_lat_ns, read_ns);
	atomic_store(&f->wr_lat_ns, write_ns);
}

void raid_fault_torn_write(struct raid_fault *f, uint64_t off, uint64_t len, uint64_t prefix,
			   int res)
{
	atomic_store(&f->torn_b, 0);
	atomic_store(&f->torn_prefix, prefix);
	atomic_store(&f->torn_res, res);
	set_range(&f->torn_a, &f->torn_b, off, len);
}

/* ---- crash points ---- */

static pthread_once_t crash_once = PTHREAD_ONCE_INIT;
static const char *crash_at;     /* RTGT_CRASH_POINT, NULL when unset */

static void crash_init(void)
{
	const char *v = getenv("RTGT_CRASH_POINT");

	crash_at = v && *v ? v : NULL;
}

void raid_crash_point(const char *where)
{
	pthread_once(&crash_once, crash_init);
	if (!crash_at || strcmp(crash_at, where))
		return;
	LOG_WARN(RAID_MOD, "crash point %s reached: SIGKILL (RTGT_CRASH_POINT)", where);
	raise(SIGKILL);
}
