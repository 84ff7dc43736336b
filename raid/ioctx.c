/*
 * raid/ioctx.c - one io_uring ring per thread, plus a cross-thread queue of
 * deferred calls, both signalled through one eventfd.
 *
 * Layer: context (raid/README.md "Layers"). May call: geom.c, parity.c,
 * conf/, liburing; nothing above (completions go up through the callbacks
 * of raid_defer and raid_mlayer_up).
 *
 * The eventfd is registered with the ring (io_uring_register_eventfd), so it
 * becomes readable when a CQE is posted; raid_defer() writes it too. A
 * reactor polls raid_ioctx_fd() and calls raid_ioctx_run(), which drains the
 * eventfd first and then everything that is ready, so nothing posted after the
 * drain can be missed.
 *
 * Member I/O is collected in a plug and submitted in one io_uring_submit() at
 * the end of raid_vol_submit()/raid_ioctx_run() (raid_ioctx_kick). When the
 * plug is flushed, reads or writes of one member that follow each other on
 * the member (a sequential write touches row after row: 1 MiB on a 4-member
 * raid6 with 64 KiB chunks is 8 rows x 4 members of 64 KiB) go to the kernel
 * as one readv/writev, like the block layer's plug merging: one io_uring
 * work item and one inode lock instead of eight. At most CQ_ENTRIES SQEs are
 * in the kernel at once so the completion queue never overflows; the rest
 * wait in a FIFO backlog.
 *
 * States of a struct raid_mio: BACKLOG (in ctx->bl_*) -> PLUGGED (in
 * ctx->plug, counted in ctx->kernel) -> KERNEL (its own sqe, or a share of a
 * merged group's sqe, counted once per sqe in ctx->kernel) -> (short or
 * EAGAIN: KERNEL again; a mio a merged group's error or short result did
 * not cover: PLUGGED or BACKLOG again with mio->alone set, so it goes on its
 * own) -> DONE
 (handed once from complete_mio() to the layer above, raid_mlayer_up();
 * the mio is then that layer's again). This file is the bottom layer of the
 * member I/O stack (raid/mlayer.h): it knows the mio's descriptor, offset
 * and flags, never the member, pool or request behind it. Layers above keep
 * completions back with timers in the ring (raid_ioctx_timer_arm, user data
 * tagged with TIMER_TAG, counted in ctx->kernel) or deferred calls.
 * Memory-backed members (tmpfs/ramfs, mio->inl_ok): io_uring makes no
 * non-blocking attempt on such files and hands every request to one of its
 * worker threads (two context switches and a wake-up per 4 KiB). When the
 * plug is flushed, a run of at most INLINE_MAX bytes on such a member (no
 * HDD model) is read or written at once with one preadv/pwritev on the
 * owner's thread; the mios then wait on ctx->inl (state INLINE_DONE, not
 * counted in ctx->kernel) for raid_ioctx_run()/raid_ioctx_poll(), so
 * callbacks still never run inside a submit. A short or failed run is
 * redone mio by mio (inline again), so an error lands on its own mio; a
 * mio still short after that continues through the ring (complete_mio).
 * Larger runs keep going through the ring (writes on its workers: the copy
 * then runs on another core). A read that the member layer gave a mapping
 * (mio->map_addr, raid/mlayer.h RAID_MIO_READ_MAP) is not read at all:
 * mio->mapped points into the mapping and it waits on ctx->inl like an
 * inline one.
 *
 * Polled mode (raid_ioctx_set_polled): the owner calls raid_ioctx_poll()
 * before every sleep, so raid_ioctx_kick() only notes that a kick is due
 * (kick_due) and inline completions do not write the eventfd; the poll
 * submits everything gathered since the last wake-up in one io_uring_submit.
 *
 * Invariant (ioctx_check): kernel <= CQ_ENTRIES, nplug <= kernel, and the
 * backlog is empty whenever kernel < CQ_ENTRIES after a kick.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <math.h>
#include <time.h>

#include <liburing.h>

#include "conf/util.h"
#include "conf/conf.h"
#include "raid/ioctx.h"
#include "raid/raid.h"

#ifndef RAID_MOD
#define RAID_MOD "raid"
#endif

#define SQ_ENTRIES 256u
#define CQ_ENTRIES 1024u
/* member writes at least this long are handed to io_uring's workers */
#define RAID_ASYNC_MIN (64u << 10)
/* a run of mios on a memory-backed member up to this size is done inline */
#define INLINE_MAX (64u << 10)
/* O_DIRECT alignment of offsets, lengths and buffers */
#define ALIGN 4096u
/* a merged group: at most this many mios and bytes */
#define MERGE_MAX_MIOS 64u
#define MERGE_MAX_BYTES (4u << 20)

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
	struct raid_mio **plug;     /* CQ_ENTRIES slots, owned; mios waiting for kick */
	unsigned nplug;
	unsigned long merged;       /* mios sent inside a group, ever */
	struct raid_mio *inl_head, *inl_tail; /* done inline, callback not yet run */
	bool polled;                /* raid_ioctx_set_polled */
	bool kick_due;              /* polled: a kick was asked for since the last poll */
	unsigned long inlined;      /* mios done inline, ever */
	pthread_mutex_t mu;         /* protects dq_* (any thread may defer) */
	struct defer_item *dq_head, *dq_tail;
};

static bool ioctx_check(const struct raid_ioctx *ctx)
{
	return ctx->kernel <= CQ_ENTRIES && ctx->nplug <= ctx->kernel &&
	       (ctx->bl_head != NULL) == (ctx->bl_tail != NULL);
}

int raid_ioctx_create(struct raid_ioctx **out)
{
	struct io_uring_params prm;
	struct raid_ioctx *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (!ctx)
		return -ENOMEM;
	ctx->plug = calloc(CQ_ENTRIES, sizeof(*ctx->plug));
	if (!ctx->plug) {
		rc = -ENOMEM;
		goto err_free;
	}
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
	free(ctx->plug);
	free(ctx);
	return rc;
}

void raid_ioctx_destroy(struct raid_ioctx *ctx)
{
	struct defer_item *d, *n;

	if (!ctx)
		return;
	/* Let the kernel finish what it has: buffers belong to callers. */
	while (ctx->kernel || ctx->bl_head || ctx->inl_head || ctx->nplug)
		raid_ioctx_wait(ctx, 100);
	free(ctx->plug);
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

unsigned long raid_ioctx_merged(const struct raid_ioctx *ctx)
{
	return ctx->merged;
}

unsigned long raid_ioctx_inlined(const struct raid_ioctx *ctx)
{
	return ctx->inlined;
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

static int submit_sq(struct raid_ioctx *ctx)
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

static uint8_t *mio_data(const struct raid_mio *mio)
{
	return mio->bounce ? mio->bounce : mio->buf;
}

static void prep_mio(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
	uint8_t *b = mio_data(mio);
	uint64_t poff = mio->base + mio->off + mio->done;

	if (!sqe) {
		submit_sq(ctx);
		sqe = io_uring_get_sqe(&ctx->ring);
	}
	/* The SQ has SQ_ENTRIES slots and submit_sq() just emptied it. */
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

/* Timeouts carry the timer's address with the low bit set, so a layer's
 * timer and a mio's real I/O (both in the ring at once) are told apart. */
#define TIMER_TAG 1u

void raid_ioctx_timer_arm(struct raid_ioctx *ctx, struct raid_iotimer *t, uint64_t when_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
	uint64_t now = conf_mono_ns(), d = when_ns > now ? when_ns - now : 1000;

	if (!sqe) {
		submit_sq(ctx);
		sqe = io_uring_get_sqe(&ctx->ring);
	}
	assert(sqe);
	t->ts.tv_sec = (long long)(d / 1000000000ull);
	t->ts.tv_nsec = (long long)(d % 1000000000ull);
	io_uring_prep_timeout(sqe, &t->ts, 0, 0);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)t | TIMER_TAG);
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
	ctx->plug[ctx->nplug++] = mio;
}

/* ---- plug merging ---- */

/* Low bits of a CQE's user data: a mio (0), a timer (1), a group (2). */
#define GROUP_TAG 2u

struct mgroup {
	unsigned n;
	struct raid_mio **mio;    /* n, in member order; points into the allocation */
	struct iovec iov[];       /* n */
};

static int plug_cmp(const void *a, const void *b)
{
	const struct raid_mio *x = *(struct raid_mio *const *)a, *y = *(struct raid_mio *const *)b;

	if (x->fd != y->fd)
		return x->fd < y->fd ? -1 : 1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return 0;
}

static bool mergeable(const struct raid_mio *a, const struct raid_mio *b)
{
	return a->fd == b->fd && a->op == b->op && a->op != RAID_MIO_FSYNC && !a->done &&
	       !b->done && !a->alone && !b->alone && a->off + a->len == b->off;
}

/* One sqe for @n mios that follow each other on one member. Returns false
 * when there is no memory for the group (the caller then preps them one by
 * one). */
static bool prep_group(struct raid_ioctx *ctx, struct raid_mio **mios, unsigned n)
{
	struct mgroup *g = malloc(sizeof(*g) + n * (sizeof(struct iovec) + sizeof(*mios)));
	struct io_uring_sqe *sqe;
	uint64_t total = 0;

	if (!g)
		return false;
	g->n = n;
	g->mio = (struct raid_mio **)(void *)&g->iov[n];
	for (unsigned i = 0; i < n; i++) {
		g->mio[i] = mios[i];
		g->iov[i].iov_base = mio_data(mios[i]);
		g->iov[i].iov_len = mios[i]->len;
		total += mios[i]->len;
	}
	sqe = io_uring_get_sqe(&ctx->ring);
	if (!sqe) {
		submit_sq(ctx);
		sqe = io_uring_get_sqe(&ctx->ring);
	}
	assert(sqe);
	if (mios[0]->op == RAID_MIO_READ)
		io_uring_prep_readv(sqe, mios[0]->fd, g->iov, n, mios[0]->base + mios[0]->off);
	else
		io_uring_prep_writev(sqe, mios[0]->fd, g->iov, n, mios[0]->base + mios[0]->off);
	if (mios[0]->op == RAID_MIO_WRITE && total >= RAID_ASYNC_MIN)
		sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)g | GROUP_TAG);
	ctx->unsubmitted++;
	return true;
}

static void inl_push(struct raid_ioctx *ctx, struct raid_mio *mio, int res)
{
	mio->inl_res = res;
	mio->next = NULL;
	if (ctx->inl_tail)
		ctx->inl_tail->next = mio;
	else
		ctx->inl_head = mio;
	ctx->inl_tail = mio;
	ctx->inlined++;
}

static bool inline_ok(const struct raid_mio *mio, uint64_t bytes)
{
	return mio->inl_ok && mio->op != RAID_MIO_FSYNC && !mio->done && !mio->bounce &&
	       bytes <= INLINE_MAX;
}

static ssize_t inline_io(int fd, int op, const struct iovec *iov, int n, off_t off)
{
	ssize_t r;

	do {
		r = op == RAID_MIO_READ ? preadv(fd, iov, n, off) : pwritev(fd, iov, n, off);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

/* @n mios that follow each other on one memory-backed member (n <=
 * MERGE_MAX_MIOS), done now on this thread; see the top of the file. */
static void inline_run(struct raid_ioctx *ctx, struct raid_mio **mios, unsigned n,
		       uint64_t bytes)
{
	struct iovec iov[MERGE_MAX_MIOS] = { { 0 } };
	ssize_t r;

	for (unsigned i = 0; i < n; i++) {
		iov[i].iov_base = mio_data(mios[i]);
		iov[i].iov_len = mios[i]->len;
	}
	ctx->kernel -= n;    /* counted by start_mio, never given to the ring */
	r = inline_io(mios[0]->fd, mios[0]->op, iov, (int)n, (off_t)(mios[0]->base + mios[0]->off));
	if (r == (ssize_t)bytes) {
		for (unsigned i = 0; i < n; i++)
			inl_push(ctx, mios[i], (int)mios[i]->len);
		return;
	}
	/* each on its own: an error or a short count is then its own */
	for (unsigned i = 0; i < n; i++) {
		if (n == 1)
			inl_push(ctx, mios[i], (int)r);
		else
			inl_push(ctx, mios[i],
				 (int)inline_io(mios[i]->fd, mios[i]->op, &iov[i], 1,
						(off_t)(mios[i]->base + mios[i]->off)));
	}
}

/* Turn the plug into sqes: runs of mergeable mios become one group each. */
static void flush_plug(struct raid_ioctx *ctx)
{
	unsigned i = 0, n = ctx->nplug;

	if (!n)
		return;
	if (n > 1)
		qsort(ctx->plug, n, sizeof(*ctx->plug), plug_cmp);
	while (i < n) {
		unsigned j = i + 1;
		uint64_t bytes = ctx->plug[i]->len;

		while (j < n && j - i < MERGE_MAX_MIOS && bytes + ctx->plug[j]->len <= MERGE_MAX_BYTES &&
		       mergeable(ctx->plug[j - 1], ctx->plug[j]))
			bytes += ctx->plug[j++]->len;
		if (inline_ok(ctx->plug[i], bytes)) {
			inline_run(ctx, &ctx->plug[i], j - i, bytes);
		} else if (j - i > 1 && prep_group(ctx, &ctx->plug[i], j - i)) {
			ctx->kernel -= j - i - 1;    /* one sqe for all of them */
			ctx->merged += j - i;
		} else {
			for (unsigned k = i; k < j; k++)
				prep_mio(ctx, ctx->plug[k]);
		}
		i = j;
	}
	ctx->nplug = 0;
}

static void complete_mio(struct raid_ioctx *ctx, struct raid_mio *mio, int res);

/* A group's result is shared out in member order. A mio the kernel did not
 * (fully) reach, and every mio of a group that failed, goes again on its
 * own, so an error lands on exactly the mio whose range has it. */
static void complete_group(struct raid_ioctx *ctx, struct mgroup *g, int res)
{
	uint64_t left = res > 0 ? (uint64_t)res : 0;

	for (unsigned i = 0; i < g->n; i++) {
		struct raid_mio *mio = g->mio[i];
		uint64_t take = left < mio->len ? left : mio->len;

		left -= take;
		if (take) {
			complete_mio(ctx, mio, (int)take);
		} else {
			/* through the plug (or the backlog when the ring is
			 * full: the group held one slot, its mios need n) */
			mio->alone = true;
			start_mio(ctx, mio);
		}
	}
	free(g);
}

static int kick(struct raid_ioctx *ctx)
{
	for (;;) {
		flush_plug(ctx);
		if (!ctx->bl_head || ctx->kernel >= CQ_ENTRIES)
			break;
		while (ctx->bl_head && ctx->kernel < CQ_ENTRIES) {
			struct raid_mio *mio = ctx->bl_head;

			ctx->bl_head = mio->next;
			if (!ctx->bl_head)
				ctx->bl_tail = NULL;
			start_mio(ctx, mio);
		}
	}
	return submit_sq(ctx);
}

static void *zalloc_aligned(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, ALIGN, len ? len : ALIGN))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int uring_submit(struct raid_mlayer *l, struct raid_ioctx *ctx, struct raid_mio *mio)
{
	mio->done = 0;
	mio->bounce = NULL;
	mio->next = NULL;
	mio->alone = false;
	if (mio->fd < 0)
		return -ENODEV;
	if (mio->op == RAID_MIO_READ && mio->map_addr && mio->base + mio->off >= mio->base &&
	    mio->base + mio->off <= mio->map_len && mio->len <= mio->map_len - mio->base - mio->off &&
	    mio->len <= INT32_MAX) {
		/* a mapped read (raid/mlayer.h): nothing to read, done like an
		 * inline one, its callback in the next run of the ctx */
		mio->mapped = mio->map_addr + mio->base + mio->off;
		inl_push(ctx, mio, (int)mio->len);
		return 0;
	}
	if (mio->direct && mio->op != RAID_MIO_FSYNC) {
		if ((mio->off % ALIGN) || (mio->len % ALIGN)) {
			/* O_DIRECT needs device-block alignment of offset and
			 * length; the buffered descriptor is coherent with it. */
			mio->fd = mio->fd_buf;
		} else if ((uintptr_t)mio->buf % ALIGN) {
			mio->bounce = zalloc_aligned(mio->len);
			if (!mio->bounce)
				return -ENOMEM;
			if (mio->op == RAID_MIO_WRITE)
				memcpy(mio->bounce, mio->buf, mio->len);
		}
	}
	start_mio(ctx, mio);
	return 0;
}

static const struct raid_mlayer_ops uring_ops = {
	.name = "uring",
	.submit = uring_submit,
};

static struct raid_mlayer uring_layer = { .ops = &uring_ops };

struct raid_mlayer *raid_ioctx_mlayer(void)
{
	return &uring_layer;
}

static void complete_mio(struct raid_ioctx *ctx, struct raid_mio *mio, int res)
{
	if (res == -EAGAIN || res == -EINTR) {
		ctx->kernel++;
		prep_mio(ctx, mio);
		return;
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
		}
	}
	mio->t_dev_ns = conf_mono_ns();
	if (mio->bounce) {
		if (res == 0 && mio->op == RAID_MIO_READ)
			memcpy(mio->buf, mio->bounce, mio->len);
		free(mio->bounce);
		mio->bounce = NULL;
	}
	raid_mlayer_up(mio, res < 0 ? res : 0);
}

/* Callbacks of the mios done inline so far (complete_mio may prep a short
 * one again, through the ring). */
static bool run_inline(struct raid_ioctx *ctx)
{
	struct raid_mio *mio = ctx->inl_head;

	if (!mio)
		return false;
	ctx->inl_head = ctx->inl_tail = NULL;
	while (mio) {
		struct raid_mio *next = mio->next;

		complete_mio(ctx, mio, mio->inl_res);
		mio = next;
	}
	return true;
}

/* Returns true when it ran anything; false when it stopped after 64 rounds
 * with more ready (*more set) or found nothing. */
static bool run_ready(struct raid_ioctx *ctx, bool *more)
{
	bool did = false;
	int rounds;

	for (rounds = 0; rounds < 64; rounds++) {
		struct io_uring_cqe *cqe;
		struct defer_item *d;
		bool any = run_inline(ctx);

		while (io_uring_peek_cqe(&ctx->ring, &cqe) == 0) {
			uint64_t ud = io_uring_cqe_get_data64(cqe);
			void *ptr = (void *)(uintptr_t)(ud & ~(uint64_t)(TIMER_TAG | GROUP_TAG));
			int res = cqe->res;

			io_uring_cqe_seen(&ctx->ring, cqe);
			ctx->kernel--;
			if (ud & GROUP_TAG) {
				complete_group(ctx, ptr, res);
			} else if (ud & TIMER_TAG) {
				struct raid_iotimer *t = ptr;

				t->fn(ctx, t);
			} else {
				complete_mio(ctx, ptr, res);
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
		ctx->kick_due = false;
		kick(ctx);    /* the plug, then the backlog while there is room */
		if (!any && !ctx->inl_head)
			break;
		did = true;
	}
	*more = rounds == 64;
	RTGT_CHECK(ioctx_check(ctx));
	return did;
}

void raid_ioctx_run(struct raid_ioctx *ctx)
{
	uint64_t v;
	bool more;

	if (read(ctx->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_ERR(RAID_MOD, "eventfd read: %s", strerror(errno));
	run_ready(ctx, &more);
	if (more)
		signal_efd(ctx);   /* more work is ready: come back soon */
}

bool raid_ioctx_poll(struct raid_ioctx *ctx)
{
	bool more, did;

	/* deferred calls need no look: raid_defer() signals the fd */
	if (!ctx->kick_due && !ctx->inl_head && !ctx->nplug && !ctx->unsubmitted &&
	    !io_uring_cq_ready(&ctx->ring))
		return false;
	did = run_ready(ctx, &more);
	return did || more;
}

void raid_ioctx_set_polled(struct raid_ioctx *ctx, bool polled)
{
	ctx->polled = polled;
}

void raid_ioctx_kick(struct raid_ioctx *ctx)
{
	if (ctx->polled) {
		ctx->kick_due = true;    /* raid_ioctx_poll() does it */
		return;
	}
	kick(ctx);
	/* inline completions have no CQE to wake the owner */
	if (ctx->inl_head)
		signal_efd(ctx);
}

int raid_ioctx_wait(struct raid_ioctx *ctx, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->efd, .events = POLLIN };
	int rc;

	kick(ctx);
	/* completions done inline are ready without the fd */
	rc = poll(&pfd, 1, ctx->inl_head ? 0 : timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	raid_ioctx_run(ctx);
	return rc;
}
