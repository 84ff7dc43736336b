/* tests/unit/test_raid_hdd.c - HDD model (raid/hdd.c): gaps passed by
 * rotation, two sequential streams batched instead of seeking per request,
 * write cache absorbing a burst and FLUSH waiting for it, no read-ahead for
 * random reads while others wait, a re-write of sectors just read costing
 * one rotation. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raid/raid_int.h"

static char tmpdir[64];
static char path[128];
static char *paths[1] = { path };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-hdd-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/d0.img", tmpdir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(tmpdir);
}

static struct raid_pool *open_pool(struct raid_vol **v)
{
	struct conf_pool cp;
	struct raid_pool *p;
	struct conf_size full = { .percent = 100 };

	memset(&cp, 0, sizeof(cp));
	cp.name = "hdd";
	cp.level = CONF_RAID0;
	cp.chunk = 65536;
	cp.members = cp.member_paths = paths;
	cp.n_members = 1;
	cp.create_size = 1ull << 30;
	cp.hdd.enabled = true;
	cp.hdd.mbps = 100;
	cp.hdd.avg_seek_ms = 8;
	cp.hdd.rpm = 7500;            /* rotation 8 ms */
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, v), 0);
	return p;
}

struct slot {
	struct raid_io io;
	bool busy;
};

static void cb(struct raid_io *io)
{
	struct slot *s = io->arg;

	ck_assert_int_eq(io->result, 0);
	s->busy = false;
}

/* Run @n requests with up to @qd in flight; offsets from @offs. */
static double run(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, const uint64_t *offs,
		  unsigned n, uint64_t len, unsigned qd, uint8_t *buf)
{
	struct slot s[8];
	unsigned next = 0, busy;
	double t0 = now_s();

	memset(s, 0, sizeof(s));
	do {
		busy = 0;
		for (unsigned i = 0; i < qd; i++) {
			if (!s[i].busy && next < n) {
				memset(&s[i].io, 0, sizeof(s[i].io));
				s[i].io.op = op;
				s[i].io.off = offs[next++];
				s[i].io.len = len;
				s[i].io.buf = buf;
				s[i].io.cb = cb;
				s[i].io.arg = &s[i];
				s[i].busy = true;
				ck_assert_int_eq(raid_vol_submit(v, ctx, &s[i].io), 0);
			}
			busy += s[i].busy;
		}
		if (busy)
			raid_ioctx_wait(ctx, 100);
	} while (busy || next < n);
	return now_s() - t0;
}

/* 64 KiB reads skipping 64 KiB each: the gaps pass by rotation (2 x 0.65 ms
 * per request), not a seek + half rotation each (~ 12 ms) */
START_TEST(t01_forward_gap)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[100];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 100; i++)
		offs[i] = (512ull << 20) + i * 131072ull;
	el = run(v, ctx, RAID_OP_READ, offs, 100, 65536, 1, buf);
	/* 100 x (64K + 64K) / 100 MB/s = 0.13 s, plus the first seek */
	ck_assert_msg(el > 0.10 && el < 0.5, "gapped reads took %.3f s", el);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Two sequential readers far apart, interleaved request by request at qd 4:
 * batched, they cost about the transfer (64 MiB at 100 MB/s = 0.67 s) and a
 * few switches; one seek per request would add 128 x 12 ms = 1.5 s. */
START_TEST(t02_two_streams)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[64];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 64; i++)
		offs[i] = (i % 2 ? (600ull << 20) : 0) + (i / 2) * (1ull << 20);
	el = run(v, ctx, RAID_OP_READ, offs, 64, 1 << 20, 4, buf);
	ck_assert_msg(el > 0.6 && el < 1.2, "two streams took %.3f s", el);
	ck_assert_uint_lt(p->m[0]->hdd.n_switch, 20);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* 16 MiB of writes fit the write cache: acknowledged long before the head
 * could write them (0.17 s); FLUSH then waits for the drain. */
START_TEST(t03_write_cache_flush)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[16];
	struct slot f;
	double el, t0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 16; i++)
		offs[i] = (256ull << 20) + i * (1ull << 20);
	el = run(v, ctx, RAID_OP_WRITE, offs, 16, 1 << 20, 4, buf);
	ck_assert_msg(el < 0.12, "cached writes took %.3f s", el);
	t0 = now_s();
	memset(&f, 0, sizeof(f));
	f.io.op = RAID_OP_FLUSH;
	f.io.cb = cb;
	f.io.arg = &f;
	f.busy = true;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &f.io), 0);
	while (f.busy)
		raid_ioctx_wait(ctx, 100);
	el = now_s() - t0 + el;
	ck_assert_msg(el > 0.15, "writes + flush took only %.3f s", el);
	ck_assert_uint_eq(p->m[0]->hdd.dirty, 0);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Random reads at qd 8 where every second one lands 8 KiB after the one
 * before (as random I/O sometimes does): the pair looks like a stream for a
 * moment, but its read-ahead must not hold the head while other reads wait.
 * With it, every pair read ahead until its 32 MiB batch ended (0.3 s each,
 * ~10 s in all); without, 64 reads cost about 64 x 12 ms at most. */
START_TEST(t04_random_no_readahead)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[64];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned k = 0; k < 32; k++) {
		offs[2 * k] = ((k * 613ull) % 900) << 20;
		offs[2 * k + 1] = offs[2 * k] + 8192;
	}
	el = run(v, ctx, RAID_OP_READ, offs, 64, 4096, 8, buf);
	ck_assert_msg(el < 2.0, "64 random reads took %.3f s", el);
	/* only an idle head may read ahead (after the last read: one segment) */
	ck_assert_msg(p->m[0]->hdd.n_ra_bytes <= (32ull << 20), "read ahead %llu bytes",
		      (unsigned long long)p->m[0]->hdd.n_ra_bytes);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

static void flush_wait(struct raid_vol *v, struct raid_ioctx *ctx)
{
	struct slot f;

	memset(&f, 0, sizeof(f));
	f.io.op = RAID_OP_FLUSH;
	f.io.cb = cb;
	f.io.arg = &f;
	f.busy = true;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &f.io), 0);
	while (f.busy)
		raid_ioctx_wait(ctx, 100);
}

/* A write of the sectors just read (a read-modify-write's write-back) on an
 * idle disk: the head is on their track, they have just passed under it, so
 * they come round after about one rotation (8 ms here) - no seek, no half
 * rotation on average plus write settle. A write 512 MiB away pays
 * seek(512 MiB) + half a rotation + the settle: 9.8 + 4 + 1 ms. Measured
 * with the model's own positioning time (not wall time: timers run late on a
 * loaded machine). */
START_TEST(t05_rewrite_costs_rotation)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t off, pos0;
	double back_ms = 0, far_ms = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned k = 0; k < 4; k++) {
		off = (64ull + 40 * k) << 20;
		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		flush_wait(v, ctx);
		back_ms += (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6 / 4;

		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		off += 512ull << 20;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		flush_wait(v, ctx);
		far_ms += (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6 / 4;
	}
	ck_assert_msg(back_ms > 7.5 && back_ms < 8.1, "re-write positioning %.2f ms", back_ms);
	ck_assert_msg(far_ms > 14.0 && far_ms < 15.5, "far write positioning %.2f ms", far_ms);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("raid_hdd");
	TCase *tc;
	SRunner *sr;
	int failed;

	tc = tcase_create("01_forward_gap");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t01_forward_gap);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("02_two_streams");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t02_two_streams);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("03_write_cache_flush");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t03_write_cache_flush);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("04_random_no_readahead");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t04_random_no_readahead);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("05_rewrite_costs_rotation");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t05_rewrite_costs_rotation);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
