/*
 * tests/unit/test_raid_ioctx.c - the per-thread context: the eventfd wakes a
 * poller, deferred calls from another thread run on the owner, and the HDD
 * timing model makes random I/O pay seeks and rotation while sequential I/O
 * streams at the configured rate, and member I/Os that follow each other go
 * to the kernel as one readv/writev whose result is shared out right, also
 * when there are more of them than the ring may hold; small I/O on a
 * memory-backed member is done inline, its callbacks still run only from
 * the context's run or poll, and polled mode gathers kicks.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raid/raid.h"
#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

static char tmpdir[64];
static char *paths[2];

static void setup(void)
{
	rf_dir_make(tmpdir, sizeof(tmpdir), "rtgt-ctx");
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	rf_paths_drop(paths, 2);
	rmdir(tmpdir);
}

static int hits;
static pthread_t owner;

static void deferred(void *arg)
{
	ck_assert(pthread_equal(pthread_self(), owner));
	hits += (int)(long)arg;
}

static void *other(void *arg)
{
	raid_defer(arg, deferred, (void *)5L);
	return NULL;
}

START_TEST(t01_defer_wakes_owner)
{
	struct raid_ioctx *ctx;
	struct pollfd pfd;
	pthread_t t;

	hits = 0;
	owner = pthread_self();
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	pfd.fd = raid_ioctx_fd(ctx);
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, other, ctx), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(poll(&pfd, 1, 1000), 1);
	ck_assert_int_eq(hits, 0);
	raid_ioctx_run(ctx);
	ck_assert_int_eq(hits, 5);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);   /* drained */
	raid_ioctx_destroy(ctx);
}
END_TEST

static void rd(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, uint64_t len, uint8_t *b)
{
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, len, b), 0);
}

START_TEST(t02_hdd_model)
{
	struct conf_pool cp;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct conf_size full = { .percent = 100 };
	uint8_t *buf = malloc(1 << 20);
	double t0, el;

	rf_paths_make(paths, 1, tmpdir, "d");
	rf_conf_pool(&cp, "hdd", CONF_RAID0, 65536, paths, 1, 64u << 20);
	cp.hdd.enabled = true;
	cp.hdd.mbps = 100;
	cp.hdd.avg_seek_ms = 4;
	cp.hdd.rpm = 7500;            /* half a rotation: 4 ms */
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);

	/* sequential: 16 MiB at 100 MB/s ~ 168 ms (+ one seek) */
	t0 = rf_now_s();
	for (unsigned i = 0; i < 16; i++)
		rd(v, ctx, (uint64_t)i << 20, 1 << 20, buf);
	el = rf_now_s() - t0;
	ck_assert_msg(el > 0.15 && el < 0.5, "sequential took %.3f s", el);

	/* 30 random 4 KiB reads: each >= 4 ms rotation, on average ~ 8 ms */
	srandom(3);
	t0 = rf_now_s();
	for (unsigned i = 0; i < 30; i++)
		rd(v, ctx, (uint64_t)(random() % 15000) * 4096, 4096, buf);
	el = rf_now_s() - t0;
	ck_assert_msg(el > 30 * 0.004 && el < 30 * 0.020, "random took %.3f s", el);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST


/* ---- 03: plug merging ---- */

struct mwait {
	unsigned left;
	int res[8];
	struct raid_mio mio[8];
};

static void mio_cb(struct raid_mio *mio, int res)
{
	struct mwait *w = mio->arg;

	w->res[mio - w->mio] = res;
	w->left--;
}

/* @n mios of @len bytes each, back to back from @off on member @m. */
static void mios_run(struct raid_ioctx *ctx, struct raid_member *m, int op, uint8_t *buf,
		     uint64_t off, uint64_t len, unsigned n, struct mwait *w)
{
	memset(w, 0, sizeof(*w));
	w->left = n;
	for (unsigned i = 0; i < n; i++) {
		struct raid_mio *mio = &w->mio[i];

		mio->m = m;
		mio->op = op;
		mio->buf = buf + i * len;
		mio->off = off + i * len;
		mio->len = len;
		mio->cb = mio_cb;
		mio->arg = w;
		w->res[i] = 1;
	}
	/* submitted out of member order: the plug sorts them */
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(raid_mio_submit(ctx, &w->mio[(i * 5) % n]), 0);
	for (int k = 0; w->left && k < 100; k++)
		raid_ioctx_wait(ctx, 100);
	ck_assert_uint_eq(w->left, 0);
}

START_TEST(t03_plug_merge)
{
	struct conf_pool cp;
	struct raid_pool *p;
	struct raid_ioctx *ctx;
	struct raid_member *m;
	struct mwait w;
	uint8_t *wb = malloc(8 * 4096), *rb = malloc(8 * 4096);
	uint64_t end = (64u << 20) - RAID_DATA_OFF;   /* the file ends here */
	unsigned long merged;

	rf_paths_make(paths, 1, tmpdir, "m");
	rf_conf_pool(&cp, "mg", CONF_RAID0, 65536, paths, 1, 64u << 20);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	m = p->m[0];
	for (unsigned i = 0; i < 8 * 4096; i++)
		wb[i] = (uint8_t)(i / 4096 * 31 + i % 251);

	/* eight 4 KiB writes that follow each other: one writev, every
	 * callback 0, the bytes where each mio said */
	merged = raid_ioctx_merged(ctx);
	mios_run(ctx, m, RAID_MIO_WRITE, wb, 1u << 20, 4096, 8, &w);
	ck_assert_uint_eq(raid_ioctx_merged(ctx) - merged, 8);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(w.res[i], 0);
	ck_assert_int_eq(pread(m->fd, rb, 8 * 4096, RAID_DATA_OFF + (1u << 20)), 8 * 4096);
	ck_assert_mem_eq(rb, wb, 8 * 4096);

	/* read back as one readv */
	memset(rb, 0, 8 * 4096);
	merged = raid_ioctx_merged(ctx);
	mios_run(ctx, m, RAID_MIO_READ, rb, 1u << 20, 4096, 8, &w);
	ck_assert_uint_eq(raid_ioctx_merged(ctx) - merged, 8);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(w.res[i], 0);
	ck_assert_mem_eq(rb, wb, 8 * 4096);

	/* a readv that runs off the end of the file comes back short: the
	 * mios it covered complete, the others go again alone and fail */
	mios_run(ctx, m, RAID_MIO_READ, rb, end - 2 * 4096, 4096, 4, &w);
	ck_assert_int_eq(w.res[0], 0);
	ck_assert_int_eq(w.res[1], 0);
	ck_assert_int_eq(w.res[2], -EIO);
	ck_assert_int_eq(w.res[3], -EIO);

	/* mios with a gap between them are not merged */
	merged = raid_ioctx_merged(ctx);
	memset(&w, 0, sizeof(w));
	w.left = 2;
	for (unsigned i = 0; i < 2; i++) {
		w.mio[i] = (struct raid_mio){ .m = m, .op = RAID_MIO_WRITE, .buf = wb,
					      .off = (uint64_t)i * 65536, .len = 4096,
					      .cb = mio_cb, .arg = &w };
		ck_assert_int_eq(raid_mio_submit(ctx, &w.mio[i]), 0);
	}
	for (int k = 0; w.left && k < 100; k++)
		raid_ioctx_wait(ctx, 100);
	ck_assert_uint_eq(w.left, 0);
	ck_assert_uint_eq(raid_ioctx_merged(ctx) - merged, 0);

	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(wb);
	free(rb);
}
END_TEST


/* ---- 04: more mios than the ring may hold ---- */

static unsigned many_left;
static int many_err;

static void many_cb(struct raid_mio *mio, int res)
{
	(void)mio;
	if (res)
		many_err = res;
	many_left--;
}

START_TEST(t04_backlog)
{
	enum { N = 1500, LEN = 4096 };
	struct conf_pool cp;
	struct raid_pool *p;
	struct raid_ioctx *ctx;
	struct raid_mio *mios = calloc(N, sizeof(*mios));
	uint8_t *wb = malloc((size_t)N * LEN), *rb = malloc((size_t)N * LEN);
	unsigned long merged;

	rf_paths_make(paths, 1, tmpdir, "b");
	rf_conf_pool(&cp, "bl", CONF_RAID0, 65536, paths, 1, 64u << 20);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	for (size_t i = 0; i < (size_t)N * LEN; i++)
		wb[i] = (uint8_t)(i * 7 + i / LEN);
	/* 1500 back-to-back writes: more than the ring's 1024, so some wait
	 * in the backlog and are merged when room frees up */
	many_left = N;
	many_err = 0;
	merged = raid_ioctx_merged(ctx);
	for (unsigned i = 0; i < N; i++) {
		mios[i] = (struct raid_mio){ .m = p->m[0], .op = RAID_MIO_WRITE,
					     .buf = wb + (size_t)i * LEN, .off = (uint64_t)i * LEN,
					     .len = LEN, .cb = many_cb };
		ck_assert_int_eq(raid_mio_submit(ctx, &mios[i]), 0);
	}
	for (int k = 0; many_left && k < 200; k++)
		raid_ioctx_wait(ctx, 100);
	ck_assert_uint_eq(many_left, 0);
	ck_assert_int_eq(many_err, 0);
	ck_assert_uint_eq(raid_ioctx_merged(ctx) - merged, N);
	ck_assert_int_eq(pread(p->m[0]->fd, rb, (size_t)N * LEN, RAID_DATA_OFF), (ssize_t)N * LEN);
	ck_assert_mem_eq(rb, wb, (size_t)N * LEN);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(mios);
	free(wb);
	free(rb);
}
END_TEST

/* ---- 05: a member on tmpfs: small I/O inline ---- */

START_TEST(t05_inline_on_memory)
{
	struct conf_pool cp;
	struct raid_pool *p;
	struct raid_ioctx *ctx;
	struct raid_member *m;
	struct mwait w;
	struct pollfd pfd;
	uint8_t *wb = malloc(8 * 4096), *rb = malloc(8 * 4096);
	uint64_t end = (16u << 20) - RAID_DATA_OFF;
	unsigned long inl, merged;
	char dir[64] = "/dev/shm/rtgt-inl-XXXXXX";

	if (!mkdtemp(dir)) {
		printf("t05: no /dev/shm here (%s): SKIPPED\n", strerror(errno));
		free(wb);
		free(rb);
		return;
	}
	rf_paths_make(paths, 1, dir, "i");
	rf_conf_pool(&cp, "inl", CONF_RAID0, 65536, paths, 1, 16u << 20);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	m = p->m[0];
	ck_assert(m->mem);
	for (unsigned i = 0; i < 8 * 4096; i++)
		wb[i] = (uint8_t)(i / 4096 * 17 + i % 241);

	/* eight writes that follow each other: one pwritev, no ring */
	inl = raid_ioctx_inlined(ctx);
	merged = raid_ioctx_merged(ctx);
	mios_run(ctx, m, RAID_MIO_WRITE, wb, 1u << 20, 4096, 8, &w);
	ck_assert_uint_eq(raid_ioctx_inlined(ctx) - inl, 8);
	ck_assert_uint_eq(raid_ioctx_merged(ctx) - merged, 0);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(w.res[i], 0);
	ck_assert_int_eq(pread(m->fd, rb, 8 * 4096, RAID_DATA_OFF + (1u << 20)), 8 * 4096);
	ck_assert_mem_eq(rb, wb, 8 * 4096);

	/* read back; a read that runs off the end: the two it covered
	 * complete, the two beyond fail on their own */
	memset(rb, 0, 8 * 4096);
	mios_run(ctx, m, RAID_MIO_READ, rb, 1u << 20, 4096, 8, &w);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(w.res[i], 0);
	ck_assert_mem_eq(rb, wb, 8 * 4096);
	mios_run(ctx, m, RAID_MIO_READ, rb, end - 2 * 4096, 4096, 4, &w);
	ck_assert_int_eq(w.res[0], 0);
	ck_assert_int_eq(w.res[1], 0);
	ck_assert_int_eq(w.res[2], -EIO);
	ck_assert_int_eq(w.res[3], -EIO);

	/* unpolled: done inside the kick, the callback waits for the run,
	 * and the fd says so */
	memset(&w, 0, sizeof(w));
	w.left = 1;
	w.mio[0] = (struct raid_mio){ .m = m, .op = RAID_MIO_READ, .buf = rb, .off = 0,
				      .len = 4096, .cb = mio_cb, .arg = &w };
	ck_assert_int_eq(raid_mio_submit(ctx, &w.mio[0]), 0);
	raid_ioctx_kick(ctx);
	ck_assert_uint_eq(w.left, 1);
	pfd = (struct pollfd){ .fd = raid_ioctx_fd(ctx), .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 1000), 1);
	raid_ioctx_run(ctx);
	ck_assert_uint_eq(w.left, 0);

	/* polled: the kick only notes it; raid_ioctx_poll does the I/O and
	 * runs the callback; nothing is left for the fd */
	raid_ioctx_set_polled(ctx, true);
	ck_assert(!raid_ioctx_poll(ctx));
	w.left = 1;
	inl = raid_ioctx_inlined(ctx);
	ck_assert_int_eq(raid_mio_submit(ctx, &w.mio[0]), 0);
	raid_ioctx_kick(ctx);
	ck_assert_uint_eq(raid_ioctx_inlined(ctx) - inl, 0);
	ck_assert_uint_eq(w.left, 1);
	ck_assert(raid_ioctx_poll(ctx));
	ck_assert_uint_eq(w.left, 0);
	ck_assert_int_eq(w.res[0], 0);
	ck_assert_uint_eq(raid_ioctx_inlined(ctx) - inl, 1);
	ck_assert(!raid_ioctx_poll(ctx));
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	raid_ioctx_set_polled(ctx, false);

	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	rf_paths_drop(paths, 1);
	rmdir(dir);
	free(wb);
	free(rb);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_defer_wakes_owner", t01_defer_wakes_owner, .no_fixture = true),
		CK_CASE("02_hdd_model", t02_hdd_model, .timeout = 30),
		CK_CASE("03_plug_merge", t03_plug_merge, .timeout = 30),
		CK_CASE("04_backlog", t04_backlog, .timeout = 30),
		CK_CASE("05_inline_on_memory", t05_inline_on_memory, .timeout = 30),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_ioctx", CK_CASES(cases), .setup = setup, .teardown = teardown });
}
