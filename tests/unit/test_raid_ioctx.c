/*
 * tests/unit/test_raid_ioctx.c - the per-thread context: the eventfd wakes a
 * poller, deferred calls from another thread run on the owner, and the HDD
 * timing model makes random I/O pay seeks and rotation while sequential I/O
 * streams at the configured rate.
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
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

static char tmpdir[64];
static char *paths[2];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-ctx-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	for (unsigned i = 0; i < 2; i++) {
		if (paths[i])
			unlink(paths[i]);
		free(paths[i]);
		paths[i] = NULL;
	}
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

static void io_cb(struct raid_io *io)
{
	*(int *)io->arg = 1;
}

static void rd(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, uint64_t len, uint8_t *b)
{
	struct raid_io io;
	int done = 0;

	memset(&io, 0, sizeof(io));
	io.op = RAID_OP_READ;
	io.off = off;
	io.len = len;
	io.buf = b;
	io.cb = io_cb;
	io.arg = &done;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &io), 0);
	while (!done)
		raid_ioctx_wait(ctx, 1000);
	ck_assert_int_eq(io.result, 0);
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

	memset(&cp, 0, sizeof(cp));
	paths[0] = malloc(128);
	snprintf(paths[0], 128, "%s/d0.img", tmpdir);
	cp.name = "hdd";
	cp.level = CONF_RAID0;
	cp.chunk = 65536;
	cp.members = cp.member_paths = paths;
	cp.n_members = 1;
	cp.create_size = 64u << 20;
	cp.hdd.enabled = true;
	cp.hdd.mbps = 100;
	cp.hdd.avg_seek_ms = 4;
	cp.hdd.rpm = 7500;            /* half a rotation: 4 ms */
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);

	/* sequential: 16 MiB at 100 MB/s ~ 168 ms (+ one seek) */
	t0 = now_s();
	for (unsigned i = 0; i < 16; i++)
		rd(v, ctx, (uint64_t)i << 20, 1 << 20, buf);
	el = now_s() - t0;
	ck_assert_msg(el > 0.15 && el < 0.5, "sequential took %.3f s", el);

	/* 30 random 4 KiB reads: each >= 4 ms rotation, on average ~ 8 ms */
	srandom(3);
	t0 = now_s();
	for (unsigned i = 0; i < 30; i++)
		rd(v, ctx, (uint64_t)(random() % 15000) * 4096, 4096, buf);
	el = now_s() - t0;
	ck_assert_msg(el > 30 * 0.004 && el < 30 * 0.020, "random took %.3f s", el);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_defer_wakes_owner", t01_defer_wakes_owner, .no_fixture = true),
		CK_CASE("02_hdd_model", t02_hdd_model, .timeout = 30),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_ioctx", CK_CASES(cases), .setup = setup, .teardown = teardown });
}
