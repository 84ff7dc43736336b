/*
 * raid/member.c - the member layer: top of a member's I/O stack
 * (raid/mlayer.h) and the one place that counts a member's I/O.
 *
 * Layer: one member (raid/README.md "Layers"). May call: mstate.c
 * (raid_member_fail), sb.c, fault.c, hdd.c, ioctx.c, parity.c, geom.c, conf/.
 *
 * raid_mio_submit() fills in what the bottom layer needs (descriptors,
 * data-area offset, O_DIRECT, whether small runs may be done inline) and
 * hands the mio to the member's stack: member -> fault (fault.c) -> hdd
 * (hdd.c, pools with the HDD model) -> io_uring (ioctx.c). On the way back
 * member_complete() counts it, then calls the submitter's callback.
 *
 * What is counted: bytes and operations of successful reads and writes
 * (rd_bytes/wr_bytes, rd_ops/wr_ops); their latency from submission to
 * the device's completion (t_dev_ns, the real I/O: an HDD model or an
 * injected latency holding the completion back does not count), in a
 * log2 histogram per direction; busy time: periods with at least one mio
 * between its submission and its callback (iostat's %util: the growth of
 * raid_member_busy_ns over an interval / the interval).
 *
 * States of a mio in this layer: SUBMITTED (counted in busy_inflight,
 * below) -> DONE (counted, callback run). Invariant (member_check): the
 * mio came back up to this layer with only this layer left on its path.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/member.h"
#include "raid/raid_int.h"

static void member_complete(struct raid_mlayer *l, struct raid_mio *mio, int res);

static bool member_check(const struct raid_mio *mio)
{
	return mio->depth == 1 && mio->path[0] == &mio->m->io;
}

static int member_submit(struct raid_mlayer *l, struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_member *m = mio->m;
	int rc = raid_mlayer_submit(l->below, ctx, mio);

	if (rc)
		return rc;
	if (atomic_fetch_add(&m->busy_inflight, 1) == 0)
		atomic_store(&m->busy_start_ns, mio->t_sub_ns);
	return 0;
}

static const struct raid_mlayer_ops member_ops = {
	.name = "member",
	.submit = member_submit,
	.complete = member_complete,
};

/*
 * Proactive replacement (rebuild.c replace()): while a spare is REPLACING
 * a raid disk, every write to that disk is also written to the spare, so
 * that what the copy has passed stays a copy. The submitter's mio ends once
 * both did, with the disk's own result: a failed copy fails only the spare
 * (the replacement stops; the disk and the request are unaffected).
 */
struct repl_pair {
	struct raid_mio child;    /* the write to the replacement */
	struct raid_mio *parent;  /* the submitter's, cb/arg borrowed */
	raid_mio_fn cb;
	void *arg;
	int res;
	unsigned pending;
};

static void repl_end(struct repl_pair *rp)
{
	struct raid_mio *parent = rp->parent;
	raid_mio_fn cb = rp->cb;
	int res = rp->res;

	parent->cb = cb;
	parent->arg = rp->arg;
	free(rp);
	cb(parent, res);
}

static void repl_parent_done(struct raid_mio *mio, int res)
{
	struct repl_pair *rp = mio->arg;

	rp->res = res;
	if (--rp->pending == 0)
		repl_end(rp);
}

static void repl_child_done(struct raid_mio *mio, int res)
{
	struct repl_pair *rp = mio->arg;

	if (res < 0)
		raid_member_fail(mio->m, res, "write of the replacement copy failed");
	if (--rp->pending == 0)
		repl_end(rp);
}

static int member_submit_one(struct raid_ioctx *ctx, struct raid_mio *mio);

static int submit_with_copy(struct raid_ioctx *ctx, struct raid_mio *mio, struct raid_member *r)
{
	struct repl_pair *rp = calloc(1, sizeof(*rp));
	int rc;

	if (!rp) {
		raid_member_fail(r, -ENOMEM, "no memory to copy a write to the replacement");
		return member_submit_one(ctx, mio);
	}
	rp->parent = mio;
	rp->cb = mio->cb;
	rp->arg = mio->arg;
	rp->pending = 2;
	mio->cb = repl_parent_done;
	mio->arg = rp;
	rc = member_submit_one(ctx, mio);
	if (rc) {
		mio->cb = rp->cb;
		mio->arg = rp->arg;
		free(rp);
		return rc;
	}
	/* completions never run inside a submit (mlayer.h): rp stays ours */
	rp->child.m = r;
	rp->child.op = RAID_MIO_WRITE;
	rp->child.buf = mio->buf;
	rp->child.off = mio->off;
	rp->child.len = mio->len;
	rp->child.cb = repl_child_done;
	rp->child.arg = rp;
	rc = member_submit_one(ctx, &rp->child);
	if (rc) {
		raid_member_fail(r, rc, "write of the replacement copy failed");
		rp->pending--;
	}
	return 0;
}

int raid_mio_submit(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_member *r = mio->op == RAID_MIO_WRITE ? atomic_load(&mio->m->repl) : NULL;

	if (r && atomic_load(&r->state) == RAID_M_REPLACING && r->fd >= 0)
		return submit_with_copy(ctx, mio, r);
	return member_submit_one(ctx, mio);
}

/* ---------------- the mapping of a memory-backed member ---------------- */

void raid_mmap_get(struct raid_mmap *mm)
{
	atomic_fetch_add_explicit(&mm->refs, 1, memory_order_relaxed);
}

void raid_mmap_put(struct raid_mmap *mm)
{
	if (!mm || atomic_fetch_sub_explicit(&mm->refs, 1, memory_order_acq_rel) != 1)
		return;
	munmap((void *)mm->addr, mm->len);
	close(mm->fd);
	free(mm);
}

int raid_mmap_copy(const struct raid_mmap *mm, const uint8_t *addr, uint64_t len, uint8_t *dst)
{
	uint64_t off = (uint64_t)(addr - mm->addr), done = 0;

	if (addr < mm->addr || off > mm->len || len > mm->len - off)
		return -EINVAL;
	while (done < len) {
		ssize_t r = pread(mm->fd, dst + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			/* the file was cut short behind the pool's back */
			atomic_store(&((struct raid_mmap *)mm)->stale, true);
			return -EIO;
		}
		done += (uint64_t)r;
	}
	return 0;
}

/*
 * The mapping of @m, made on first use: NULL when it cannot be had (the
 * caller then reads as usual). Any reactor may get here first; the loser
 * of the race unmaps its own. One mmap of the whole file costs no memory
 * until pages are touched, and tmpfs pages are the file's storage, so a
 * mapped read sees exactly what a read() would.
 */
static struct raid_mmap *member_map(struct raid_member *m)
{
	struct raid_mmap *mm = atomic_load_explicit(&m->map, memory_order_acquire), *none = NULL;
	struct stat st;
	int err = EINVAL;
	void *a;

	if (mm)
		return atomic_load(&mm->stale) ? NULL : mm;
	if (atomic_load(&m->map_failed))
		return NULL;
	mm = calloc(1, sizeof(*mm));
	if (!mm)
		return NULL;
	mm->fd = fcntl(m->fd_buf, F_DUPFD_CLOEXEC, 0);
	if (mm->fd < 0 || fstat(mm->fd, &st) < 0) {
		err = errno;
		goto free_map;
	}
	if (st.st_size <= 0)
		goto free_map;
	a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, mm->fd, 0);
	if (a == MAP_FAILED) {
		err = errno;
		goto free_map;
	}
	mm->addr = a;
	mm->len = (uint64_t)st.st_size;
	atomic_init(&mm->refs, 1);
	if (atomic_compare_exchange_strong(&m->map, &none, mm))
		return mm;
	raid_mmap_put(mm);
	return none;
free_map:
	if (!atomic_exchange(&m->map_failed, true))
		LOG_WARN(RAID_MOD, "member %s: cannot map the file for reads (%s): reading it instead",
		 m->path, strerror(err));
	if (mm->fd >= 0)
		close(mm->fd);
	free(mm);
	return NULL;
}

static int member_submit_one(struct raid_ioctx *ctx, struct raid_mio *mio)
{
	struct raid_member *m = mio->m;
	const struct raid_pool *p = m->pool;
	bool direct = p && p->direct_io;
	bool map = mio->op == RAID_MIO_READ_MAP;

	mio->depth = 0;
	mio->t_sub_ns = conf_mono_ns();
	mio->t_dev_ns = 0;
	mio->fd = m->fd;
	mio->fd_buf = m->fd_buf;
	mio->base = RAID_DATA_OFF;
	mio->direct = direct;
	/* not with the HDD model (it must see every request's real timing)
	 * nor O_DIRECT (never the page cache) */
	mio->inl_ok = m->mem && !(p && (p->hdd.enabled || p->direct_io));
	if (mio->fd < 0)
		return -ENODEV;
	/* mapped reads under the same rule as inline I/O: the page cache of
	 * a memory-backed member is its storage, nothing to model or bypass */
	mio->map_addr = NULL;
	mio->map_len = 0;
	mio->mapped = NULL;
	if (map) {
		struct raid_mmap *mm = mio->inl_ok ? member_map(m) : NULL;

		mio->op = RAID_MIO_READ;
		if (mm) {
			mio->map_addr = mm->addr;
			mio->map_len = mm->len;
		}
	}
	return raid_mlayer_submit(&m->io, ctx, mio);
}

static void member_complete(struct raid_mlayer *l, struct raid_mio *mio, int res)
{
	struct raid_member *m = mio->m;
	uint64_t start, now;

	RTGT_CHECK(member_check(mio));
	if (res == 0 && mio->op != RAID_MIO_FSYNC) {
		uint64_t dev = mio->t_dev_ns ? mio->t_dev_ns : conf_mono_ns();

		raid_io_account(m, mio->op == RAID_MIO_WRITE, mio->len);
		raid_member_lat(m, mio->op == RAID_MIO_WRITE, dev - mio->t_sub_ns);
	}
	/* read before leaving: once the count is 0 another submission may
	 * start the next period */
	start = atomic_load(&m->busy_start_ns);
	now = conf_mono_ns();
	if (atomic_fetch_sub(&m->busy_inflight, 1) == 1 && now > start)
		atomic_fetch_add(&m->busy_ns, now - start);
	raid_mlayer_up(mio, res);
}

/* The layers below the member's own, each with its share of lpriv. */
static void stack(struct raid_member *m, bool hdd)
{
	struct raid_mlayer *bottom = raid_ioctx_mlayer();
	unsigned off = 0;

	m->io.ops = &member_ops;
	m->io.below = &m->fault.l;
	m->fault.l.priv_off = off;
	off += (unsigned)((m->fault.l.ops->priv_size + 15) / 16 * 16);
	if (hdd) {
		raid_fault_stack(&m->fault, &m->hdd.l);
		m->hdd.l.priv_off = off;
		off += (unsigned)((m->hdd.l.ops->priv_size + 15) / 16 * 16);
		raid_hdd_stack(&m->hdd, bottom, &m->pool->hdd, &m->pool->g.member_bytes, m->path);
	} else {
		raid_fault_stack(&m->fault, bottom);
	}
	assert(off <= RAID_MIO_LPRIV);
}

void raid_member_io_init(struct raid_member *m)
{
	raid_fault_init(&m->fault);
	raid_hdd_init(&m->hdd);
	stack(m, false);
}

void raid_member_io_fini(struct raid_member *m)
{
	raid_mmap_put(atomic_exchange(&m->map, NULL));
	raid_hdd_fini(&m->hdd);
}

void raid_member_attach(struct raid_member *m, struct raid_pool *p)
{
	/* 32 buckets up to 2^31 us (RAID_LAT_BUCKETS, raid.h's snapshot);
	 * shaped once: a member attached again keeps what it counted */
	for (unsigned d = 0; d < 2; d++)
		if (!m->lat[d].max_exp) {
			conf_hist_init(&m->lat[d], 0, RAID_LAT_BUCKETS - 2);
			RTGT_CHECK(conf_hist_buckets(&m->lat[d]) == RAID_LAT_BUCKETS);
		}
	m->pool = p;
	stack(m, p->hdd.enabled);
}

uint64_t raid_member_busy_ns(struct raid_member *m)
{
	uint64_t busy = atomic_load(&m->busy_ns), start = atomic_load(&m->busy_start_ns);
	uint64_t now = conf_mono_ns();

	if (atomic_load(&m->busy_inflight) && now > start)
		busy += now - start;
	return busy;
}

void raid_io_account(struct raid_member *m, bool write, uint64_t len)
{
	if (write) {
		atomic_fetch_add(&m->wr_bytes, len);
		atomic_fetch_add(&m->wr_ops, 1);
	} else {
		atomic_fetch_add(&m->rd_bytes, len);
		atomic_fetch_add(&m->rd_ops, 1);
	}
}

void raid_member_lat(struct raid_member *m, bool write, uint64_t ns)
{
	conf_hist_record(&m->lat[write], ns);
}

uint64_t raid_lat_pct_us(const struct conf_hist *h, unsigned pct)
{
	return conf_hist_percentile(h, pct);
}
