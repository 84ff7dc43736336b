/*
 * raid/ioctx.c - one io_uring ring per thread, plus a cross-thread queue of
 * deferred calls, both signalled through one eventfd.
 *
 * The eventfd is registered with the ring (io_uring_register_eventfd), so it
 * becomes readable when a CQE is posted; raid_defer() writes it too. A
 * reactor polls raid_ioctx_fd() and calls raid_ioctx_run(), which drains the
 * eventfd first and then everything that is ready, so nothing posted after the
 * drain can be missed.
 *
 * Member I/O is prepared as SQEs and submitted in one io_uring_submit() at the
 * end of raid_vol_submit()/raid_ioctx_run() (raid_ioctx_kick). At most
 * CQ_ENTRIES member I/Os are in the kernel at once so the completion queue
 * never overflows; the rest wait in a FIFO backlog.
 *
 * States of a struct raid_mio: BACKLOG (in ctx->bl_*) -> KERNEL (sqe queued or
 * submitted, counted in ctx->kernel) -> (short or EAGAIN: KERNEL again) ->
 * DONE (callback called once from complete_mio(); the mio is then the
 * caller's again). With the HDD model (hdd.c) DONE means "real I/O done":
 * the callback then runs when the modelled disk is done as well, and a mio
 * may additionally have a timeout in the ring (raid_ioctx_hdd_arm, user data
 * tagged with HDD_TIMER_TAG) that drives its member's model.
 * Invariant (ioctx_check): kernel <= CQ_ENTRIES and the backlog is empty
 * whenever kernel < CQ_ENTRIES after a kick.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <math.h>
#include <time.h>

#include <liburing.h>

#include "raid/raid_int.h"

#define SQ_ENTRIES 256u
#define CQ_ENTRIES 1024u
/* member writes at least this long are handed to io_uring's workers */
#define RAID_ASYNC_MIN (64u << 10)

struct defer_item {
	raid_defer_fn fn;
	void *arg;
	struct defer_item *next;
};

struct raid_ioctx {
	struct io_uring ring;
	int efd;
	unsigned inflight;          /* raid_io without callback yet (owner thread only) */
	unsigned kernel;            /* mios given to the ring */
	unsigned unsubmitted;       /* sqes prepared since the last io_uring_submit */
	struct raid_mio *bl_head, *bl_tail; /* backlog, owned by the ring's thread */
	pthread_mutex_t mu;         /* protects dq_* (any thread may defer) */
	struct defer_item *dq_head, *dq_tail;
};

static bool ioctx_check(const struct raid_ioctx *ctx)
{
	return ctx->kernel <= CQ_ENTRIES && (ctx->bl_head != NULL) == (ctx->bl_tail != NULL);
}

int raid_ioctx_create(struct raid_ioctx **out)
{
	struct io_uring_params prm;
	struct raid_ioctx *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (!ctx)
		return -ENOMEM;
	ctx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->efd < 0) {
		rc = -errno;
		goto err_free;
	}
	memset(&prm, 0, sizeof(prm));
	prm.flags = IORING_SETUP_CQSIZE;
	prm.cq_entries = CQ_ENTRIES;
	rc = io_uring_queue_init_params(SQ_ENTRIES, &ctx->ring, &prm);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "io_uring_queue_init: %s", strerror(-rc));
		goto err_efd;
	}
	rc = io_uring_register_eventfd(&ctx->ring, ctx->efd);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "io_uring_register_eventfd: %s", strerror(-rc));
		goto err_ring;
	}
	pthread_mutex_init(&ctx->mu, NULL);
	*out = ctx;
	return 0;
err_ring:
	io_uring_queue_exit(&ctx->ring);
err_efd:
	close(ctx->efd);
err_free:
	free(ctx);
	return rc;
}

void raid_ioctx_destroy(struct raid_ioctx *ctx)
{
	struct defer_item *d, *n;

	if (!ctx)
		return;
	/* Let the kernel finish what it has: buffers belong to callers. */
	while (ctx->kernel || ctx->bl_head)
		raid_ioctx_wait(ctx, 100);
	for (d = ctx->dq_head; d; d = n) {
		n = d->next;
		free(d);
	}
	io_uring_queue_exit(&ctx->ring);
	close(ctx->efd);
	pthread_mutex_destroy(&ctx->mu);
	free(ctx);
}

int raid_ioctx_fd(const struct raid_ioctx *ctx)
{
	return ctx->efd;
}

unsigned raid_ioctx_inflight(const struct raid_ioctx *ctx)
{
	return ctx->inflight;
}

void raid_ioctx_io_started(struct raid_ioctx *ctx)
{
	ctx->inflight++;
}

void raid_ioctx_io_done(struct raid_ioctx *ctx)
{
	assert(ctx->inflight > 0);
	ctx->inflight--;
}

static void signal_efd(struct raid_ioctx *ctx)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is already huge: still readable. */
	if (write(ctx->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_ERR(RAID_MOD, "eventfd write: %s", strerror(errno));
}

int raid_defer(struct raid_ioctx *ctx, raid_defer_fn fn, void *arg)
{
	struct defer_item *d = malloc(sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->fn = fn;
	d->arg = arg;
	d->next = NULL;
	pthread_mutex_lock(&ctx->mu);
	if (ctx->dq_tail)
		ctx->dq_tail->next = d;
	else
		ctx->dq_head = d;
	ctx->dq_tail = d;
	pthread_mutex_unlock(&ctx->mu);
	signal_efd(ctx);
	return 0;
}

static int kick(struct raid_ioctx *ctx)
{
	int rc;

	if (!ctx->unsubmitted)
		return 0;
	do {
		rc = io_uring_submit(&ctx->ring);
	} while (rc == -EINTR);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "io_uring_submit: %s", strerror(-rc));
		return rc;
	}
	ctx->unsubmitted = 0;
	return 0;
}

static void prep_mio(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
	uint8_t *b = mio->bounce ? mio->bounce : mio->buf;
	uint64_t poff = RAID_DATA_OFF + mio->off + mio->done;

	if (!sqe) {
		kick(ctx);
		sqe = io_uring_get_sqe(&ctx->ring);
	}
	/* The SQ has SQ_ENTRIES slots and kick() just emptied it. */
	assert(sqe);
	if (mio->op == RAID_MIO_READ)
		io_uring_prep_read(sqe, mio->fd, b + mio->done, (unsigned)(mio->len - mio->done), poff);
	else if (mio->op == RAID_MIO_WRITE)
		io_uring_prep_write(sqe, mio->fd, b + mio->done, (unsigned)(mio->len - mio->done), poff);
	else
		io_uring_prep_fsync(sqe, mio->fd, IORING_FSYNC_DATASYNC);
	/* A buffered write that the page cache takes at once (tmpfs, a fast
	 * disk) is copied inline by io_uring_submit(), on the reactor's core.
	 * Large ones go to io_uring's workers instead, so the copies run on
	 * other cores while the reactor goes on with its sockets (raid6 on
	 * memory writes 2x the data: the copy is its largest cost). */
	if (mio->op == RAID_MIO_WRITE && mio->len - mio->done >= RAID_ASYNC_MIN)
		sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data(sqe, mio);
	ctx->unsubmitted++;
}

/* Timeouts carry the mio's address with the low bit set, so a holder's
 * timeout and its real I/O (both in the ring at once) are told apart. */
#define HDD_TIMER_TAG 1u

void raid_ioctx_hdd_arm(struct raid_ioctx *ctx, struct raid_mio *mio, uint64_t when_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
	uint64_t now = raid_mono_ns(), d = when_ns > now ? when_ns - now : 1000;

	if (!sqe) {
		kick(ctx);
		sqe = io_uring_get_sqe(&ctx->ring);
	}
	assert(sqe);
	mio->hdd_wait = true;
	mio->hdd_ts.tv_sec = (long long)(d / 1000000000ull);
	mio->hdd_ts.tv_nsec = (long long)(d % 1000000000ull);
	io_uring_prep_timeout(sqe, &mio->hdd_ts, 0, 0);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)mio | HDD_TIMER_TAG);
	ctx->unsubmitted++;
	ctx->kernel++;
}

static void start_mio(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	if (ctx->kernel >= CQ_ENTRIES) {
		mio->next = NULL;
		if (ctx->bl_tail)
			ctx->bl_tail->next = mio;
		else
			ctx->bl_head = mio;
		ctx->bl_tail = mio;
		return;
	}
	ctx->kernel++;
	prep_mio(ctx, mio);
}

int raid_mio_submit(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_member *m = mio->m;
	bool direct = m->pool && m->pool->direct_io;

	mio->done = 0;
	mio->bounce = NULL;
	mio->next = NULL;
	mio->hdd_done_ns = 0;
	mio->hdd_wait = false;
	mio->t_sub_ns = raid_lat_now_ns();
	mio->fd = m->fd;
	if (mio->fd < 0)
		return -ENODEV;
	if (direct && mio->op != RAID_MIO_FSYNC) {
		if ((mio->off % RAID_ALIGN) || (mio->len % RAID_ALIGN)) {
			/* O_DIRECT needs device-block alignment of offset and
			 * length; the buffered descriptor is coherent with it. */
			mio->fd = m->fd_buf;
		} else if ((uintptr_t)mio->buf % RAID_ALIGN) {
			mio->bounce = raid_alloc(mio->len);
			if (!mio->bounce)
				return -ENOMEM;
			if (mio->op == RAID_MIO_WRITE)
				memcpy(mio->bounce, mio->buf, mio->len);
		}
	}
	mio->hdd_on = false;
	start_mio(ctx, mio);
	/* HDD model: the real I/O runs now, the modelled disk decides when it
	 * completes (hdd.c) */
	if (m->pool && m->pool->hdd.enabled)
		raid_hdd_submit(ctx, mio);
	return 0;
}

static void complete_mio(struct raid_ioctx *ctx, struct raid_mio *mio, int res)
{
	if (res == -EAGAIN || res == -EINTR) {
		ctx->kernel++;
		prep_mio(ctx, mio);
		return;
	}
	if (res >= 0 && mio->op != RAID_MIO_FSYNC && atomic_load(&mio->m->fi_len)) {
		uint64_t a = atomic_load(&mio->m->fi_off), b = a + atomic_load(&mio->m->fi_len);

		if (mio->off < b && a < mio->off + mio->len) {
			if (mio->op == RAID_MIO_READ)
				res = -EIO;
			else if (mio->off <= a && mio->off + mio->len >= b)
				atomic_store(&mio->m->fi_len, 0);   /* rewritten: remapped */
		}
	}
	if (res >= 0 && mio->op != RAID_MIO_FSYNC) {
		if (res == 0) {
			res = -EIO;    /* members are never shorter than their data area */
		} else {
			mio->done += (uint64_t)res;
			if (mio->done < mio->len) {
				ctx->kernel++;
				prep_mio(ctx, mio);
				return;
			}
			res = 0;
			raid_io_account(mio->m, mio->op == RAID_MIO_WRITE, mio->len);
			raid_member_lat(mio->m, mio->op == RAID_MIO_WRITE,
					raid_lat_now_ns() - mio->t_sub_ns);
		}
	}
	if (mio->bounce) {
		if (res == 0 && mio->op == RAID_MIO_READ)
			memcpy(mio->buf, mio->bounce, mio->len);
		free(mio->bounce);
		mio->bounce = NULL;
	}
	if (mio->hdd_on) {
		if (raid_hdd_real_done(mio, res < 0 ? res : 0))
			mio->cb(mio, res < 0 ? res : 0);
		return;
	}
	mio->cb(mio, res < 0 ? res : 0);
}

void raid_ioctx_run(struct raid_ioctx *ctx)
{
	uint64_t v;
	int rounds;

	if (read(ctx->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_ERR(RAID_MOD, "eventfd read: %s", strerror(errno));
	for (rounds = 0; rounds < 64; rounds++) {
		struct io_uring_cqe *cqe;
		struct defer_item *d;
		bool any = false;

		while (io_uring_peek_cqe(&ctx->ring, &cqe) == 0) {
			uint64_t ud = io_uring_cqe_get_data64(cqe);
			struct raid_mio *mio = (struct raid_mio *)(uintptr_t)(ud & ~(uint64_t)HDD_TIMER_TAG);
			int res = cqe->res;

			io_uring_cqe_seen(&ctx->ring, cqe);
			ctx->kernel--;
			if (ud & HDD_TIMER_TAG) {
				mio->hdd_wait = false;
				raid_hdd_timer(ctx, mio);
			} else {
				complete_mio(ctx, mio, res);
			}
			any = true;
		}
		pthread_mutex_lock(&ctx->mu);
		d = ctx->dq_head;
		ctx->dq_head = ctx->dq_tail = NULL;
		pthread_mutex_unlock(&ctx->mu);
		while (d) {
			struct defer_item *n = d->next;

			d->fn(d->arg);
			free(d);
			d = n;
			any = true;
		}
		while (ctx->bl_head && ctx->kernel < CQ_ENTRIES) {
			struct raid_mio *mio = ctx->bl_head;

			ctx->bl_head = mio->next;
			if (!ctx->bl_head)
				ctx->bl_tail = NULL;
			start_mio(ctx, mio);
		}
		kick(ctx);
		if (!any)
			break;
	}
	if (rounds == 64)
		signal_efd(ctx);   /* more work is ready: come back soon */
	assert(ioctx_check(ctx));
}

void raid_ioctx_kick(struct raid_ioctx *ctx)
{
	kick(ctx);
}

int raid_ioctx_wait(struct raid_ioctx *ctx, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->efd, .events = POLLIN };
	int rc;

	kick(ctx);
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	raid_ioctx_run(ctx);
	return rc;
}
