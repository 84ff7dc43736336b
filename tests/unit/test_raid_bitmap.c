/*
 * tests/unit/test_raid_bitmap.c - write-intent bitmap and crash consistency.
 * A child process opens the pool and dies without closing it (exit, then
 * SIGKILL in the middle of overwrites); the parent reopens: only the dirty
 * regions are resynced, and afterwards every sector holds a whole old or new
 * version and losing a member changes nothing. An operator's scrub during the
 * resync waits for it instead of being refused. The bits are written by the
 * pool's bitmap writer thread; raid_bm_start_async continues on the caller's
 * ctx once they are durable.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raid/raid.h"
#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

#define MEMBER_BYTES (16u << 20)

static char tmpdir[64];
static char *paths[6];
static struct conf_pool cp;
static struct conf_size full = { .percent = 100 };

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-bm-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	for (unsigned i = 0; i < 6; i++) {
		if (paths[i])
			unlink(paths[i]);
		free(paths[i]);
		paths[i] = NULL;
	}
	rmdir(tmpdir);
}

static void mkpool(enum conf_level level, unsigned n, uint64_t chunk)
{
	memset(&cp, 0, sizeof(cp));
	for (unsigned i = 0; i < n; i++) {
		paths[i] = malloc(128);
		snprintf(paths[i], 128, "%s/d%u.img", tmpdir, i);
	}
	cp.name = "bm";
	cp.level = level;
	cp.chunk = chunk;
	cp.members = cp.member_paths = paths;
	cp.n_members = n;
	cp.create_size = MEMBER_BYTES;
}

static void io_cb(struct raid_io *io)
{
	*(int *)io->arg = 1;
}

static int do_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, uint64_t off,
		 uint64_t len, uint8_t *buf)
{
	struct raid_io io;
	int done = 0;

	memset(&io, 0, sizeof(io));
	io.op = op;
	io.off = off;
	io.len = len;
	io.buf = buf;
	io.cb = io_cb;
	io.arg = &done;
	if (raid_vol_submit(v, ctx, &io))
		return -EINVAL;
	while (!done)
		raid_ioctx_wait(ctx, 1000);
	return io.result;
}

/* A sector stamped with its offset and a version, all 64 words alike. */
static void stamp(uint8_t *b, uint64_t off, uint64_t len, uint64_t ver)
{
	for (uint64_t s = 0; s < len; s += 512)
		for (unsigned w = 0; w < 64; w++) {
			uint64_t x = ((off + s) << 20) ^ ver ^ ((uint64_t)w << 56);

			memcpy(b + s + w * 8, &x, 8);
		}
}

static bool stamped(const uint8_t *b, uint64_t off)
{
	uint64_t x0, ver;
	bool zero = true;

	for (unsigned i = 0; i < 512; i++)
		if (b[i])
			zero = false;
	if (zero)
		return true;        /* never written: the old data */
	memcpy(&x0, b, 8);
	ver = x0 ^ (off << 20);
	for (unsigned w = 0; w < 64; w++) {
		uint64_t x;

		memcpy(&x, b + w * 8, 8);
		if (x != ((off << 20) ^ ver ^ ((uint64_t)w << 56)))
			return false;
	}
	return true;
}

static void wait_resync(struct raid_pool *p)
{
	for (int i = 0; i < 1000 && atomic_load(&p->bm.n_unsynced); i++)
		usleep(20000);
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 0);
}

static void scrub_count(struct raid_pool *p, uint64_t *mism)
{
	struct raid_pool_info info;

	ck_assert_int_eq(raid_pool_scrub(p, false), 0);
	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!strcmp(info.scrub_state, "done"))
			break;
		usleep(20000);
	}
	ck_assert_str_eq(info.scrub_state, "done");
	*mism = info.scrub_mismatches;
}

static void corrupt(const char *path, uint64_t moff)
{
	int fd = open(path, O_RDWR);
	uint8_t junk[512];

	ck_assert_int_ge(fd, 0);
	memset(junk, 0x5c, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, 512, (off_t)(RAID_DATA_OFF + moff)), 512);
	close(fd);
}

/* Only dirty regions are resynced. */
START_TEST(t01_dirty_regions_only)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *buf = malloc(65536);
	uint64_t mism, region;
	pid_t pid;
	int st;

	mkpool(CONF_RAID5, 3, 16384);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	region = p->bm.region;
	ck_assert_uint_ge(region, 1 << 20);
	raid_pool_close(p);

	pid = fork();
	if (pid == 0) {
		/* write into member region 1 only, then die uncleanly */
		if (raid_ioctx_create(&ctx) || raid_pool_open(&cp, &p) ||
		    raid_vol_open(p, "v", &full, &v))
			_exit(2);
		memset(buf, 0x42, 65536);
		if (do_io(v, ctx, RAID_OP_WRITE, region * 2 + 4096, 65536, buf))
			_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* region 1 of the members is dirty: break its parity, and also break
	 * clean region 5 which resync must not touch */
	corrupt(paths[0], region + 8192);
	corrupt(paths[1], region + 8192);
	corrupt(paths[2], region + 8192);
	corrupt(paths[0], 5 * region);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 1);
	wait_resync(p);
	scrub_count(p, &mism);
	ck_assert_uint_eq(mism, 1);     /* only the clean region's damage */
	raid_pool_close(p);
	free(buf);
}
END_TEST

/* SIGKILL during overwrites, restart, resync, lose a member. */
START_TEST(t02_sigkill_overwrites)
{
	enum conf_level level = _i ? CONF_RAID6 : CONF_RAID5;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint64_t size, span = 4u << 20;
	uint8_t *a, *b;
	pid_t pid;
	int st;

	mkpool(level, level == CONF_RAID6 ? 5 : 4, 16384);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	raid_pool_close(p);

	pid = fork();
	if (pid == 0) {
		struct raid_io io[8];
		uint8_t *bufs[8];
		int done[8];
		uint64_t ver = 1;
		unsigned seed = 77;

		if (raid_ioctx_create(&ctx) || raid_pool_open(&cp, &p) ||
		    raid_vol_open(p, "v", &full, &v))
			_exit(2);
		for (unsigned i = 0; i < 8; i++) {
			bufs[i] = malloc(128 * 1024);
			done[i] = 1;
		}
		for (;;) {
			for (unsigned i = 0; i < 8; i++) {
				uint64_t len = 512 * (1 + rand_r(&seed) % 256);

				if (!done[i])
					continue;
				memset(&io[i], 0, sizeof(io[i]));
				io[i].op = RAID_OP_WRITE;
				io[i].off = (rand_r(&seed) % ((span - len) / 512)) * 512;
				io[i].len = len;
				io[i].buf = bufs[i];
				stamp(bufs[i], io[i].off, len, ver++);
				io[i].cb = io_cb;
				io[i].arg = &done[i];
				done[i] = 0;
				raid_vol_submit(v, ctx, &io[i]);
			}
			raid_ioctx_wait(ctx, 100);
		}
	}
	usleep(700000);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_uint_gt(atomic_load(&p->bm.n_unsynced), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	wait_resync(p);
	size = span;
	a = malloc(size);
	b = malloc(size);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, size, a), 0);
	for (uint64_t s = 0; s < size; s += 512)
		ck_assert_msg(stamped(a + s, s), "sector at %llu is torn", (unsigned long long)s);
	/* losing a member (two for raid6) must change nothing */
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, size, b), 0);
	ck_assert_msg(!memcmp(a, b, size), "losing member 1 changed data");
	if (level == CONF_RAID6) {
		ck_assert_int_eq(raid_pool_fail(p, "3"), 0);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, size, b), 0);
		ck_assert_msg(!memcmp(a, b, size), "losing members 1 and 3 changed data");
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(a);
	free(b);
}
END_TEST

/*
 * An operator's scrub asked for while the resync after a crash runs is
 * queued, not refused (-EALREADY), and its "done" and count are its own:
 * the resync (2 mismatches) shows as running, the scrub finds 1.
 */
START_TEST(t03_scrub_during_resync)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *buf = malloc(65536);
	uint64_t region, mism;
	pid_t pid;
	int st, i;

	mkpool(CONF_RAID5, 3, 16384);
	cp.create_size = 5u << 20;          /* 4 MiB of data per member */
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	region = p->bm.region;
	ck_assert_uint_ge(p->g.member_bytes / region, 4);
	raid_pool_close(p);

	pid = fork();
	if (pid == 0) {
		/* dirty member regions 1 and 2, then die uncleanly */
		if (raid_ioctx_create(&ctx) || raid_pool_open(&cp, &p) ||
		    raid_vol_open(p, "v", &full, &v))
			_exit(2);
		memset(buf, 0x42, 65536);
		if (do_io(v, ctx, RAID_OP_WRITE, region * 2 + 4096, 65536, buf) ||
		    do_io(v, ctx, RAID_OP_WRITE, region * 4 + 4096, 65536, buf))
			_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	corrupt(paths[0], region + 8192);   /* dirty: the resync repairs them */
	corrupt(paths[0], region + 131072);
	corrupt(paths[1], 3 * region);      /* clean: only the scrub sees it */
	cp.rebuild_mbps = 2;                /* ~0.5 s per region resynced */
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 2);
	/* wait until the resync is half-way: one region done, one to go */
	for (i = 0; i < 1000 && atomic_load(&p->bm.n_unsynced) == 2; i++)
		usleep(5000);
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 1);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.scrub_state, "running");    /* the resync */
	ck_assert_int_eq(raid_pool_scrub(p, false), 0);
	ck_assert_int_eq(raid_pool_scrub(p, false), -EALREADY);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.scrub_state, "running");
	for (i = 0; i < 1500; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!strcmp(info.scrub_state, "done"))
			break;
		usleep(20000);
	}
	ck_assert_str_eq(info.scrub_state, "done");
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 0);
	mism = info.scrub_mismatches;
	ck_assert_uint_eq(mism, 1);
	raid_pool_close(p);
	free(buf);
}
END_TEST

struct async_wait {
	struct raid_pool *p;
	uint64_t region;       /* bit to look for on the members */
	int done;
	bool on_disk;          /* the bit was on every member when fn ran */
	pthread_t thread;
};

/* The region's bit as stored on member @path. */
static bool disk_bit(const char *path, uint64_t region)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t b = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)(RAID_BITMAP_OFF + region / 8)), 1);
	close(fd);
	return b & (1u << (region % 8));
}

static void async_cb(void *arg)
{
	struct async_wait *w = arg;

	w->on_disk = true;
	for (unsigned i = 0; i < 3; i++)
		if (!disk_bit(paths[i], w->region))
			w->on_disk = false;
	w->thread = pthread_self();
	w->done++;
}

/* raid_bm_start_async: the continuation runs on the caller's ctx once the
 * bit is on every member; a dirty region goes on at once; several first
 * writes wait together; close clears the bits. */
START_TEST(t04_async_start)
{
	struct raid_pool *p;
	struct raid_ioctx *ctx;
	struct async_wait w[4];
	uint64_t region;
	int i;

	mkpool(CONF_RAID5, 3, 16384);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	region = p->bm.region;
	memset(w, 0, sizeof(w));
	for (unsigned k = 0; k < 4; k++) {
		w[k].p = p;
		w[k].region = k;
		ck_assert(!disk_bit(paths[0], k));
	}
	ck_assert(!raid_bm_start_async(p, 4096, 4096, ctx, async_cb, &w[0]));
	for (i = 0; i < 500 && !w[0].done; i++)
		raid_ioctx_wait(ctx, 10);
	ck_assert_int_eq(w[0].done, 1);
	ck_assert_msg(w[0].on_disk, "the continuation ran before the bit was on every member");
	ck_assert(pthread_equal(w[0].thread, pthread_self()));
	/* the region is dirty and durable now: no wait */
	ck_assert(raid_bm_start_async(p, 8192, 512, ctx, async_cb, &w[0]));
	ck_assert_int_eq(w[0].done, 1);
	/* three first writes at once: each waits, each is released once */
	for (unsigned k = 1; k < 4; k++)
		ck_assert(!raid_bm_start_async(p, k * region + 512, 1024, ctx, async_cb, &w[k]));
	for (i = 0; i < 500 && !(w[1].done && w[2].done && w[3].done); i++)
		raid_ioctx_wait(ctx, 10);
	for (unsigned k = 1; k < 4; k++) {
		ck_assert_int_eq(w[k].done, 1);
		ck_assert(w[k].on_disk);
	}
	ck_assert(raid_bm_check(p));
	/* the synchronous form returns with the bit durable too */
	raid_bm_start(p, 5 * region, 4096);
	for (unsigned k = 0; k < 3; k++)
		ck_assert(disk_bit(paths[k], 5));
	raid_bm_end(p, 5 * region, 4096);
	raid_bm_end(p, 4096, 4096);
	raid_bm_end(p, 8192, 512);
	for (unsigned k = 1; k < 4; k++)
		raid_bm_end(p, k * region + 512, 1024);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	for (unsigned k = 0; k < 6; k++)
		ck_assert_msg(!disk_bit(paths[1], k), "bit %u still set after close", k);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_dirty_regions_only", t01_dirty_regions_only),
		CK_CASE("02_sigkill_overwrites", t02_sigkill_overwrites, .loop_end = 2),
		CK_CASE("03_scrub_during_resync", t03_scrub_during_resync),
		CK_CASE("04_async_start", t04_async_start),
	};

	return ck_main(&(struct ck_suite_def){ "raid_bitmap", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 60 });
}
