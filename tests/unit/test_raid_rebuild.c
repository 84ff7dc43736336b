/*
 * tests/unit/test_raid_rebuild.c - the background thread: automatic rebuild
 * onto configured and added spares (data right even after an original member
 * fails afterwards), rebuild resumed after close/open, the rebuild rate cap,
 * scrub counting and repairing injected corruption; the initial sync of a
 * new pool over members that held data (and its resume), rows a rebuild
 * must not reconstruct (bad ranges) and writes that make them good again
 * (raid5 full row, mirror chunk), read errors during scrub, resync and
 * rebuild, the durable rebuild checkpoint, and I/O on two threads while
 * spares are swapped into slots over and over; the event callback;
 * proactive replacement of a working member by a spare (the pool optimal
 * throughout, resumed after close/open, abandoned when the member fails,
 * rows the member cannot read rebuilt into the copy).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "raid/raid.h"
#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

#define MEMBER_BYTES (8u << 20)

static char tmpdir[64];
static char *paths[10], *spaths[2];
static struct conf_pool cp;
static struct conf_size full = { .percent = 100 };

static void setup(void)
{
	rf_dir_make(tmpdir, sizeof(tmpdir), "rtgt-rb");
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	rf_paths_drop(paths, 10);
	rf_paths_drop(spaths, 2);
	rmdir(tmpdir);
}

static void mkpool(enum conf_level level, unsigned n, unsigned nspares, uint64_t chunk)
{
	rf_paths_make(paths, n, tmpdir, "d");
	rf_paths_make(spaths, nspares, tmpdir, "s");
	rf_conf_pool(&cp, "rb", level, chunk, paths, n, MEMBER_BYTES);
	cp.spares = cp.spare_paths = nspares ? spaths : NULL;
	cp.n_spares = nspares;
}

static void write_all(struct raid_vol *v, struct raid_ioctx *ctx, uint8_t *shadow)
{
	uint64_t size = raid_vol_bytes(v), step = 256 * 1024;

	for (uint64_t i = 0; i < size; i++)
		shadow[i] = (uint8_t)random();
	for (uint64_t off = 0; off < size; off += step)
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off,
				       size - off < step ? size - off : step, shadow + off), 0);
}

static void verify(struct raid_vol *v, struct raid_ioctx *ctx, const uint8_t *shadow)
{
	uint64_t size = raid_vol_bytes(v), step = 256 * 1024;
	uint8_t *buf = malloc(step);

	for (uint64_t off = 0; off < size; off += step) {
		uint64_t len = size - off < step ? size - off : step;

		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, len, buf), 0);
		ck_assert_msg(!memcmp(buf, shadow + off, len), "mismatch in [%llu, +%llu)",
			      (unsigned long long)off, (unsigned long long)len);
	}
	free(buf);
}

/* An I/O context, pool cp opened, its volume "v" over all of it written with
 * random data: returns the shadow copy (malloc'd). */
static uint8_t *open_written(struct raid_ioctx **ctx, struct raid_pool **p, struct raid_vol **v)
{
	uint8_t *shadow;

	ck_assert_int_eq(raid_ioctx_create(ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, p), 0);
	ck_assert_int_eq(raid_vol_open(*p, "v", &full, v), 0);
	shadow = malloc(raid_vol_bytes(*v));
	ck_assert_ptr_nonnull(shadow);
	write_all(*v, *ctx, shadow);
	return shadow;
}

/* Poll status until @state (or timeout). */
static void wait_state(struct raid_pool *p, const char *state, double max_s)
{
	struct raid_pool_info info;

	for (int i = 0; i < (int)(max_s * 50); i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!strcmp(info.state, state))
			return;
		usleep(20000);
	}
	ck_abort_msg("pool did not become %s (is %s)", state, info.state);
}

static const struct { enum conf_level level; unsigned n; uint64_t chunk; } shapes[] = {
	{ CONF_RAID1, 2, 65536 }, { CONF_RAID5, 4, 65536 }, { CONF_RAID6, 5, 16384 },
	{ CONF_RAID10, 4, 4096 },
};

START_TEST(t01_rebuild_configured_spare)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;

	srandom(1 + (unsigned)_i);
	mkpool(shapes[_i].level, shapes[_i].n, 1, shapes[_i].chunk);
	shadow = open_written(&ctx, &p, &v);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	wait_state(p, "optimal", 30);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.members[1].path, spaths[0]);
	ck_assert_str_eq(info.members[1].state, "active");
	ck_assert_uint_gt(info.members[1].write_bytes, MEMBER_BYTES / 2);
	/* now lose an original member: the rebuilt one must carry its part */
	ck_assert_int_eq(raid_pool_fail(p, paths[0]), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

START_TEST(t02_add_spare)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow;
	char sp[160];
	int fd;

	srandom(77);
	mkpool(CONF_RAID5, 3, 0, 16384);
	shadow = open_written(&ctx, &p, &v);
	ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	wait_state(p, "degraded", 1);
	snprintf(sp, sizeof(sp), "%s/new.img", tmpdir);
	ck_assert_int_eq(raid_pool_add_spare(p, sp), -ENOENT);
	fd = open(sp, O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);   /* too small */
	ck_assert_int_eq(raid_pool_add_spare(p, sp), -ENOSPC);
	ck_assert_int_eq(ftruncate(fd, MEMBER_BYTES), 0);
	close(fd);
	ck_assert_int_eq(raid_pool_add_spare(p, paths[0]), -EEXIST);
	ck_assert_int_eq(raid_pool_add_spare(p, sp), 0);
	wait_state(p, "optimal", 30);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	unlink(sp);
	free(shadow);
}
END_TEST

/* Rate cap, progress, checkpoint and resume across close/open, writes
 * during the rebuild. */
START_TEST(t03_resume_and_rate)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;
	double t0, el;

	srandom(5);
	mkpool(CONF_RAID6, 4, 1, 65536);
	cp.rebuild_mbps = 3;     /* 7 MiB of member data: ~2.4 s */
	shadow = open_written(&ctx, &p, &v);
	t0 = rf_now_s();
	ck_assert_int_eq(raid_pool_fail(p, "3"), 0);
	wait_state(p, "rebuilding", 2);
	usleep(1200000);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "rebuilding");
	ck_assert(info.rebuild_progress > 0.1 && info.rebuild_progress < 0.9);
	ck_assert(info.rebuild_eta_s > 0);
	/* foreground writes while rebuilding */
	for (unsigned i = 0; i < 8; i++) {
		uint64_t off = (uint64_t)(random() % (raid_vol_bytes(v) / 4096)) * 4096;

		for (unsigned k = 0; k < 4096; k++)
			shadow[off + k] = (uint8_t)random();
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off, 4096, shadow + off), 0);
	}
	raid_pool_close(p);
	el = rf_now_s() - t0;
	ck_assert_msg(el > 1.0, "rebuild ran faster than its cap");

	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "rebuilding");
	ck_assert(info.rebuild_progress > 0.1);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	t0 = rf_now_s();
	wait_state(p, "optimal", 30);
	el = rf_now_s() - t0;
	ck_assert_msg(el < 2.6, "resume restarted from the beginning (%.2fs)", el);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

static void corrupt(const char *path, uint64_t moff, unsigned len)
{
	int fd = open(path, O_RDWR);
	uint8_t junk[512];

	ck_assert_int_ge(fd, 0);
	memset(junk, 0xee, sizeof(junk));
	for (unsigned i = 0; i < len; i += 512)
		ck_assert_int_eq(pwrite(fd, junk, 512, (off_t)(RAID_DATA_OFF + moff + i)), 512);
	close(fd);
}

static void scrub_wait(struct raid_pool *p, bool repair, uint64_t *mism)
{
	struct raid_pool_info info;

	ck_assert_int_eq(raid_pool_scrub(p, repair), 0);
	for (int i = 0; i < 1500; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!strcmp(info.scrub_state, "done"))
			break;
		usleep(20000);
	}
	ck_assert_str_eq(info.scrub_state, "done");
	*mism = info.scrub_mismatches;
}

START_TEST(t04_scrub)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow;
	uint64_t mism;
	unsigned s = (unsigned)_i;

	srandom(9);
	mkpool(shapes[s].level, shapes[s].n, 0, shapes[s].chunk);
	shadow = open_written(&ctx, &p, &v);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 0);
	/* corrupt data on member 1 in rows 2 and 5 */
	corrupt(paths[1], 2 * shapes[s].chunk + 512, 1024);
	corrupt(paths[1], 5 * shapes[s].chunk, 512);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 2);
	scrub_wait(p, true, &mism);
	ck_assert_uint_eq(mism, 2);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 0);
	if (shapes[s].level == CONF_RAID6 || shapes[s].level == CONF_RAID1 ||
	    shapes[s].level == CONF_RAID10) {
		/* raid6 located the bad member; mirrors copied from the first */
		ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
		verify(v, ctx, shadow);
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/* Member files that already hold data (a reused disk): random bytes. */
static void prefill(char **list, unsigned n, uint64_t bytes)
{
	uint8_t *buf = malloc(1 << 20);

	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; i < n; i++) {
		int fd = open(list[i], O_RDWR | O_CREAT | O_TRUNC, 0600);

		ck_assert_int_ge(fd, 0);
		for (uint64_t off = 0; off < bytes; off += 1 << 20) {
			for (unsigned k = 0; k < 1 << 20; k++)
				buf[k] = (uint8_t)random();
			ck_assert_int_eq(pwrite(fd, buf, 1 << 20, (off_t)off), 1 << 20);
		}
		close(fd);
	}
	free(buf);
}

static void file_copy(const char *from, const char *to)
{
	int a = open(from, O_RDONLY), b = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	uint8_t *buf = malloc(1 << 20);
	ssize_t r;

	ck_assert(a >= 0 && b >= 0 && buf);
	while ((r = read(a, buf, 1 << 20)) > 0)
		ck_assert_int_eq(write(b, buf, (size_t)r), r);
	ck_assert_int_eq(r, 0);
	close(a);
	close(b);
	free(buf);
}

static void wait_synced(struct raid_pool *p, double max_s)
{
	struct raid_pool_info info;

	for (int i = 0; i < (int)(max_s * 50); i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!info.syncing && atomic_load(&p->bm.n_unsynced) == 0)
			return;
		usleep(20000);
	}
	ck_abort_msg("initial sync did not finish (%.1f%%)", info.sync_progress * 100.0);
}

/* Every 4 KiB block reads what @shadow says or fails with -EIO (a medium
 * error): never different data. Returns how many failed. */
static unsigned verify_or_eio(struct raid_vol *v, struct raid_ioctx *ctx, const uint8_t *shadow)
{
	uint64_t size = raid_vol_bytes(v);
	uint8_t buf[4096];
	unsigned eio = 0;

	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		int rc = rf_io(v, ctx, RAID_OP_READ, off, sizeof(buf), buf);

		if (rc == -EIO) {
			eio++;
			continue;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_msg(!memcmp(buf, shadow + off, sizeof(buf)),
			      "GOOD with wrong data at %llu", (unsigned long long)off);
	}
	return eio;
}

/*
 * A new pool over members that hold random bytes: the initial sync makes
 * parity and mirrors agree (a scrub finds nothing), never-written blocks
 * read the same every time, and after small read-modify-write writes and
 * large ones every block reads right with any one member failed.
 */
START_TEST(t05_initial_sync)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	unsigned s = (unsigned)_i, n = shapes[s].n;
	uint64_t size, mism;
	uint8_t *shadow, *again;
	char bak[10][160];

	srandom(11 + s);
	mkpool(shapes[s].level, n, 0, shapes[s].chunk);
	prefill(paths, n, MEMBER_BYTES);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	wait_synced(p, 30);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "optimal");
	ck_assert(info.sync_progress >= 1.0);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 0);
	size = raid_vol_bytes(v);
	shadow = malloc(size);
	again = malloc(size);
	ck_assert(shadow && again);
	/* never written: whatever it reads, the same every time */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, size, shadow), 0);
	for (unsigned k = 0; k < 3; k++) {
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, size, again), 0);
		ck_assert(!memcmp(shadow, again, size));
	}
	/* small writes (read-modify-write on raid5/6) and a few large ones */
	for (unsigned k = 0; k < 64; k++) {
		uint64_t len = k % 8 == 7 ? 100 * 1024 : 4096;
		uint64_t off = (uint64_t)(random() % ((size - len) / 512)) * 512;

		for (uint64_t b = 0; b < len; b++)
			shadow[off + b] = (uint8_t)random();
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off, len, shadow + off), 0);
	}
	raid_pool_close(p);
	for (unsigned i = 0; i < n; i++) {
		snprintf(bak[i], sizeof(bak[i]), "%s.bak", paths[i]);
		file_copy(paths[i], bak[i]);
	}
	for (unsigned f = 0; f < n; f++) {
		char name[16];

		for (unsigned i = 0; i < n; i++)
			file_copy(bak[i], paths[i]);
		ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		ck_assert(!info.syncing);
		ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
		snprintf(name, sizeof(name), "%u", f);
		ck_assert_int_eq(raid_pool_fail(p, name), 0);
		verify(v, ctx, shadow);
		raid_pool_close(p);
	}
	for (unsigned i = 0; i < n; i++)
		unlink(bak[i]);
	raid_ioctx_destroy(ctx);
	free(shadow);
	free(again);
}
END_TEST

/*
 * The initial sync is paced like a rebuild, shows progress and an ETA, and
 * resumes after a restart from its checkpoint in the superblock; a pool
 * whose member files rtgt created (sparse) skips it.
 */
START_TEST(t06_initial_sync_resume)
{
	struct raid_pool *p;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	struct raid_sb sb;
	uint64_t mism;
	double frac, t0, el;
	int fd;

	srandom(21);
	mkpool(CONF_RAID5, 4, 0, 65536);
	cp.rebuild_mbps = 2;      /* 7 MiB of member data: ~3.7 s */
	prefill(paths, 4, MEMBER_BYTES);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	usleep(1500000);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "optimal");
	ck_assert(info.syncing);
	ck_assert_msg(info.sync_progress > 0.1 && info.sync_progress < 0.8, "progress %.2f",
		      info.sync_progress);
	ck_assert(info.sync_eta_s > 0);
	raid_pool_close(p);
	fd = open(paths[0], O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	close(fd);
	ck_assert(sb.flags & RAID_SB_SYNCING);
	ck_assert(!(sb.flags & RAID_SB_CLEAN));
	frac = (double)sb.sync_pos / (double)sb.data_size;
	ck_assert_msg(frac > 0.1, "checkpoint %.2f", frac);

	t0 = rf_now_s();
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert(info.syncing && info.sync_progress >= frac);
	wait_synced(p, 30);
	el = rf_now_s() - t0;
	ck_assert_msg(el < 3.7 * (1.0 - frac) + 0.8, "resume restarted from the beginning (%.2fs)", el);
	cp.rebuild_mbps = 0;
	raid_pool_close(p);
	fd = open(paths[0], O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	close(fd);
	ck_assert(!(sb.flags & RAID_SB_SYNCING));
	ck_assert(sb.flags & RAID_SB_CLEAN);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert(!info.syncing);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 0);
	raid_pool_close(p);

	/* files rtgt creates itself read zeros: nothing to sync */
	rf_paths_drop(paths, 4);
	mkpool(CONF_RAID5, 4, 0, 65536);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert(!info.syncing);
	ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 0);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* In a child process: open the pool, write @len bytes of @data at each of
 * @offs, and die without closing it (an unclean stop: the regions written
 * stay dirty in the bitmap). */
static void crash_after_writes(const uint64_t *offs, unsigned noffs, const uint8_t *data,
			       uint64_t len)
{
	int st = 0;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct raid_ioctx *c;
		struct raid_pool *q;
		struct raid_vol *w;

		if (raid_ioctx_create(&c) || raid_pool_open(&cp, &q) || raid_vol_open(q, "v", &full, &w))
			_exit(2);
		for (unsigned i = 0; i < noffs; i++)
			if (rf_io(w, c, RAID_OP_WRITE, offs[i], len, (uint8_t *)data))
				_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * Unclean stop (row 0 dirty), a torn write (one data chunk reached its
 * member, the parity did not), then a member lost and rebuilt onto a spare:
 * the rebuild must not reconstruct the dirty rows from that parity. They
 * become a bad range: reading them fails (medium error), also after a
 * restart; no block ever reads back wrong data.
 */
/* The scenario below up to the rebuild's end: pool cp open again, optimal,
 * with row 0's rebuilt chunk recorded bad; returns the shadow (malloc'd). */
static uint8_t *bad_row0(struct raid_ioctx **ctx, struct raid_pool **p, struct raid_vol **v)
{
	struct raid_pool_info info;
	uint8_t *shadow, torn[65536], buf[4096];
	uint64_t off0 = 0;
	unsigned dx, dl;
	int fd;

	mkpool(CONF_RAID5, 4, 1, 65536);
	shadow = open_written(ctx, p, v);
	dx = raid_geom_data_dev(&(*p)->g, 0, 1);
	dl = raid_geom_data_dev(&(*p)->g, 0, 2);
	raid_pool_close(*p);
	for (unsigned k = 0; k < 65536; k++)
		shadow[k] = (uint8_t)random();
	crash_after_writes(&off0, 1, shadow, 65536);
	for (unsigned k = 0; k < sizeof(torn); k++)
		torn[k] = (uint8_t)random();
	fd = open(paths[dx], O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, torn, sizeof(torn), RAID_DATA_OFF), (ssize_t)sizeof(torn));
	close(fd);
	memcpy(shadow + 65536, torn, sizeof(torn));
	ck_assert_int_eq(unlink(paths[dl]), 0);
	cp.start_degraded = true;

	ck_assert_int_eq(raid_pool_open(&cp, p), 0);
	ck_assert_int_eq(raid_vol_open(*p, "v", &full, v), 0);
	wait_state(*p, "optimal", 30);
	for (int i = 0; i < 500 && atomic_load(&(*p)->bm.n_unsynced); i++)
		usleep(20000);
	ck_assert_uint_eq(atomic_load(&(*p)->bm.n_unsynced), 0);
	ck_assert_uint_gt(verify_or_eio(*v, *ctx, shadow), 0);
	ck_assert_int_eq(rf_io(*v, *ctx, RAID_OP_READ, 131072, 4096, buf), -EIO);
	ck_assert_int_eq(raid_pool_info(*p, &info), 0);
	ck_assert_uint_gt(info.bad_bytes, 0);
	return shadow;
}

START_TEST(t07_rebuild_unsynced_rows)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow, buf[4096];

	srandom(31);
	shadow = bad_row0(&ctx, &p, &v);
	raid_pool_close(p);

	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 131072, 4096, buf), -EIO);
	ck_assert_uint_gt(verify_or_eio(v, ctx, shadow), 0);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/* Member @i's data area reads fail in [off, off + len) until rewritten. */
static void inject(struct raid_pool *p, unsigned i, uint64_t off, uint64_t len)
{
	raid_fault_read_error(&p->m[i]->fault, off, len);
}

static void assert_repaired(struct raid_pool *p, unsigned i)
{
	ck_assert_str_eq(raid_mstate_name(atomic_load(&p->m[i]->state)), "active");
	ck_assert_uint_ge(atomic_load(&p->m[i]->rd_errors), 1);
	ck_assert(!raid_fault_read_error_set(&p->m[i]->fault));     /* rewritten */
}

/*
 * A read error during a scrub (0), a resync (1) and a rebuild (2: raid6,
 * redundancy left; 3: raid5, none left for those rows) is handled like a
 * foreground one: rebuilt from redundancy and written back, the member
 * stays in; rows nothing can rebuild become a bad range instead of failing
 * the member (which on raid5 would have failed the pool).
 */
START_TEST(t08_background_read_errors)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;
	uint64_t mism, chunk = 65536;
	int pd, qd;

	srandom(41 + _i);
	mkpool(_i == 2 ? CONF_RAID6 : CONF_RAID5, _i == 2 ? 5 : 4, _i >= 2, chunk);
	shadow = open_written(&ctx, &p, &v);
	switch (_i) {
	case 0: {
		/* member 1 holds data in row 5 */
		uint64_t r = raid_geom_dev_dd(&p->g, 5, 1) >= 0 ? 5 : 6;

		inject(p, 1, r * chunk + 4096, 4096);
		scrub_wait(p, false, &mism);
		ck_assert_uint_eq(mism, 0);
		assert_repaired(p, 1);
		ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
		verify(v, ctx, shadow);
		break;
	}
	case 1: {
		/* dirty regions 0 and 3 at a crash; the resync reads parity of a
		 * row in region 3 with an error (region 0 first, then a paced
		 * pause: time to inject) */
		uint64_t r = 3 * (1u << 20) / chunk, offs[2] = { 0, r * p->g.stripe_bytes };
		uint8_t data[4096];

		memset(data, 0x5a, sizeof(data));
		raid_pool_close(p);
		crash_after_writes(offs, 2, data, sizeof(data));
		memcpy(shadow + offs[0], data, sizeof(data));
		memcpy(shadow + offs[1], data, sizeof(data));
		cp.rebuild_mbps = 1;
		ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
		raid_geom_parity(&p->g, r, &pd, &qd);
		inject(p, (unsigned)pd, r * chunk, 4096);
		ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
		for (int i = 0; i < 500 && atomic_load(&p->bm.n_unsynced); i++)
			usleep(20000);
		ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 0);
		assert_repaired(p, (unsigned)pd);
		scrub_wait(p, false, &mism);
		ck_assert_uint_eq(mism, 0);
		ck_assert_int_eq(raid_pool_fail(p, pd ? "0" : "1"), 0);
		verify(v, ctx, shadow);
		break;
	}
	case 2:
		/* raid6: slot 0 rebuilt, member 2 unreadable in row 5 */
		inject(p, 2, 5 * chunk, 4096);
		ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
		wait_state(p, "optimal", 30);
		assert_repaired(p, 2);
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		ck_assert_uint_eq(info.bad_bytes, 0);
		verify(v, ctx, shadow);
		ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
		ck_assert_int_eq(raid_pool_fail(p, "3"), 0);
		verify(v, ctx, shadow);
		break;
	default:
		/* raid5: slot 0 rebuilt, member 2 unreadable in row 5: that
		 * row has no redundancy left */
		inject(p, 2, 5 * chunk, 4096);
		ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
		wait_state(p, "optimal", 30);
		ck_assert_str_eq(raid_mstate_name(atomic_load(&p->m[2]->state)), "active");
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		ck_assert_uint_eq(info.bad_bytes, 2 * chunk);   /* row 5 of slots 0 and 2 */
		/* at most row 5 (io.c fails a row with two chunks missing) */
		mism = verify_or_eio(v, ctx, shadow);
		ck_assert(mism > 0 && mism <= p->g.stripe_bytes / 4096);
		break;
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

static void granted(void *arg)
{
	*(bool *)arg = true;
}

/*
 * Superblocks record only the rebuild position made durable on the new
 * member (its checkpoint), also when something else rewrites them during a
 * rebuild: a crash then resumes from rows that are on the disk, not from
 * rows still in the page cache.
 */
START_TEST(t09_rebuild_checkpoint_durable)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_member *t;
	struct raid_sb sb;
	struct raid_lk lk;
	uint8_t *shadow;
	bool got = false;
	int fd, tries;

	srandom(51);
	mkpool(CONF_RAID5, 4, 1, 65536);
	cp.rebuild_mbps = 3;
	shadow = open_written(&ctx, &p, &v);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	wait_state(p, "rebuilding", 2);
	t = p->m[1];
	/* hold the rebuild between two steps, past its last checkpoint */
	for (tries = 0; tries < 100; tries++) {
		usleep(100000);
		memset(&lk, 0, sizeof(lk));
		lk.a = 0;
		lk.b = p->g.usable;
		lk.excl = true;
		lk.ctx = ctx;
		lk.fn = granted;
		lk.arg = &got;
		got = raid_slock_acquire(&p->lock, &lk);
		while (!got)
			raid_ioctx_wait(ctx, 100);
		if (atomic_load(&t->rebuild_pos) > atomic_load(&t->rebuild_cp) &&
		    atomic_load(&t->rebuild_cp) > 0)
			break;
		raid_slock_release(&p->lock, &lk);
	}
	ck_assert_int_lt(tries, 100);
	ck_assert_int_eq(raid_pool_write_sbs(p, false), 0);   /* e.g. a failure elsewhere */
	fd = open(spaths[0], O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	close(fd);
	ck_assert_uint_eq(sb.rebuild_slot, 1);
	ck_assert_uint_eq(sb.rebuild_pos, atomic_load(&t->rebuild_cp));
	ck_assert_uint_lt(sb.rebuild_pos, atomic_load(&t->rebuild_pos));
	raid_slock_release(&p->lock, &lk);
	wait_state(p, "optimal", 30);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/*
 * A bad range is good again once a write rewrote it without reconstruction:
 * writes into row 0 that need reconstruction stay refused, a full-row write
 * is accepted, after it the row reads back the new data, the bad range is
 * gone from the superblocks (reopen), and a member loss afterwards still
 * reconstructs the row right.
 */
START_TEST(t11_full_row_write_clears_bad)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow, *row, *buf;
	uint64_t stripe, bad0, chunk;
	unsigned eio0;

	srandom(41);
	shadow = bad_row0(&ctx, &p, &v);
	stripe = p->g.stripe_bytes;
	chunk = p->g.chunk;
	eio0 = verify_or_eio(v, ctx, shadow);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	bad0 = info.bad_bytes;
	ck_assert_uint_ge(bad0, chunk);
	row = malloc(stripe);
	buf = malloc(stripe);
	ck_assert(row && buf);
	for (uint64_t k = 0; k < stripe; k++)
		row[k] = (uint8_t)random();
	/* needs reconstruction from parity that cannot be trusted: refused */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 131072, 4096, row), -EIO);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 0, stripe, row), 0);
	memcpy(shadow, row, stripe);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, stripe, buf), 0);
	ck_assert(!memcmp(buf, row, stripe));
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.bad_bytes, bad0 - chunk);
	ck_assert_uint_eq(verify_or_eio(v, ctx, shadow), eio0 - chunk / 4096);
	raid_pool_close(p);

	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.bad_bytes, bad0 - chunk);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, stripe, buf), 0);
	ck_assert(!memcmp(buf, row, stripe));
	/* partial writes into the row work again, and the row survives a loss */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 131072, 4096, row), 0);
	memcpy(shadow + 131072, row, 4096);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, stripe, buf), 0);
	ck_assert(!memcmp(buf, shadow, stripe));
	verify_or_eio(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
	free(row);
	free(shadow);
}
END_TEST

/*
 * Mirrors: a write over a copy's bad range makes those bytes good again on
 * that copy (any write: nothing is reconstructed), the rest of the range
 * stays bad, and the cut range is what the superblocks say after a reopen.
 */
START_TEST(t12_mirror_write_clears_bad)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow, buf[2 * 65536];

	srandom(43);
	mkpool(CONF_RAID1, 2, 0, 65536);
	shadow = open_written(&ctx, &p, &v);
	raid_pool_bad_add(p, 1, 65536, 3 * 65536);
	ck_assert_int_eq(raid_pool_write_sbs(p, false), 0);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 65536, 4096, buf), -EIO);
	for (unsigned k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)random();
	/* part of a chunk: the chunk still holds lost bytes, stays bad */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 65536 + 4096, 8192, buf), 0);
	memcpy(shadow + 65536 + 4096, buf, 8192);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.bad_bytes, 2 * 65536);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 65536 + 4096, 4096, buf), -EIO);
	/* the whole chunk (and a bit of each neighbour) */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 65536 - 4096, 65536 + 8192, buf), 0);
	memcpy(shadow + 65536 - 4096, buf, 65536 + 8192);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.bad_bytes, 65536);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 65536, 65536, buf), 0);
	ck_assert(!memcmp(buf, shadow + 65536, 65536));
	ck_assert_uint_eq(verify_or_eio(v, ctx, shadow), 65536 / 4096);
	raid_pool_close(p);

	cp.start_degraded = true;      /* member 0 stays faulty */
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.bad_bytes, 65536);
	ck_assert_uint_eq(verify_or_eio(v, ctx, shadow), 65536 / 4096);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/*
 * Foreground I/O on two threads while the slot table changes under it: a
 * member fails, the spare is swapped into its slot and rebuilt, the failed
 * file is removed and added back as the next spare, over and over. Every
 * read returns what its thread last wrote (a ThreadSanitizer build of this
 * case checks the slot table's publication).
 */
struct swap_io {
	struct raid_vol *v;
	uint64_t base, len;
	_Atomic bool *stop;
	unsigned seed;
	unsigned ios, bad;
};

static void *swap_io_main(void *arg)
{
	struct swap_io *w = arg;
	struct raid_ioctx *ctx;
	uint8_t *shadow = calloc(1, w->len), buf[16384];
	unsigned seed = w->seed;

	if (!shadow || raid_ioctx_create(&ctx)) {
		free(shadow);
		w->bad++;
		return NULL;
	}
	if (rf_io(w->v, ctx, RAID_OP_WRITE, w->base, w->len, shadow))
		w->bad++;
	while (!atomic_load(w->stop)) {
		uint64_t off = (uint64_t)(rand_r(&seed) % (unsigned)(w->len / 4096 - 4)) * 4096;
		unsigned len = 4096u * (1 + (unsigned)rand_r(&seed) % 4);

		if (rand_r(&seed) & 1) {
			for (unsigned k = 0; k < len; k++)
				buf[k] = (uint8_t)rand_r(&seed);
			if (rf_io(w->v, ctx, RAID_OP_WRITE, w->base + off, len, buf))
				w->bad++;
			else
				memcpy(shadow + off, buf, len);
		} else if (rf_io(w->v, ctx, RAID_OP_READ, w->base + off, len, buf) ||
			   memcmp(buf, shadow + off, len)) {
			w->bad++;
		}
		w->ios++;
	}
	if (rf_io(w->v, ctx, RAID_OP_READ, w->base, 16384, buf) || memcmp(buf, shadow, 16384))
		w->bad++;
	raid_ioctx_destroy(ctx);
	free(shadow);
	return NULL;
}

START_TEST(t10_io_during_slot_swaps)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct swap_io w[2];
	pthread_t th[2];
	_Atomic bool stop = false;
	char *gone;

	mkpool(CONF_RAID1, 2, 1, 65536);
	cp.rebuild_mbps = 0;
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	for (unsigned t = 0; t < 2; t++) {
		w[t] = (struct swap_io){ .v = v, .len = raid_vol_bytes(v) / 2 & ~(uint64_t)4095,
					 .stop = &stop, .seed = 7 + t };
		w[t].base = t * w[t].len;
		ck_assert_int_eq(pthread_create(&th[t], NULL, swap_io_main, &w[t]), 0);
	}
	for (unsigned round = 0; round < 6; round++) {
		unsigned slot = round % 2;

		char *files[3] = { paths[0], paths[1], spaths[0] };

		gone = NULL;
		for (unsigned k = 0; k < 3; k++)
			if (!strcmp(atomic_load(&p->m[slot])->path, files[k]))
				gone = files[k];
		ck_assert_ptr_nonnull(gone);
		ck_assert_int_eq(raid_pool_fail(p, slot ? "1" : "0"), 0);
		wait_state(p, "optimal", 60);
		ck_assert_int_eq(raid_pool_remove(p, gone), 0);
		ck_assert_int_eq(raid_pool_add_spare(p, gone), 0);
	}
	usleep(100000);
	atomic_store(&stop, true);
	for (unsigned t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		ck_assert_uint_gt(w[t].ios, 10);
		ck_assert_msg(w[t].bad == 0, "thread %u: %u of %u I/Os wrong", t, w[t].bad, w[t].ios);
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* ---- 13: the event callback (raid_set_event_fn) ---- */

#define REC_MAX 32
static struct {
	pthread_mutex_t mu;
	unsigned n;
	struct { enum raid_event_kind kind; char pool[32], member[160], state[16], detail[160];
		 int slot; uint64_t count; bool repaired, complete; } ev[REC_MAX];
} rec = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void rec_fn(void *arg, const struct raid_event *ev)
{
	ck_assert_ptr_eq(arg, &rec);
	pthread_mutex_lock(&rec.mu);
	if (rec.n < REC_MAX) {
		typeof(rec.ev[0]) *r = &rec.ev[rec.n++];

		r->kind = ev->kind;
		snprintf(r->pool, sizeof(r->pool), "%s", ev->pool);
		snprintf(r->member, sizeof(r->member), "%s", ev->member ? ev->member : "");
		snprintf(r->state, sizeof(r->state), "%s", ev->pool_state ? ev->pool_state : "");
		snprintf(r->detail, sizeof(r->detail), "%s", ev->detail ? ev->detail : "");
		r->slot = ev->slot;
		r->count = ev->count;
		r->repaired = ev->repaired;
		r->complete = ev->complete;
	}
	pthread_mutex_unlock(&rec.mu);
}

static unsigned rec_count(enum raid_event_kind kind)
{
	unsigned n = 0;

	pthread_mutex_lock(&rec.mu);
	for (unsigned i = 0; i < rec.n; i++)
		n += rec.ev[i].kind == kind;
	pthread_mutex_unlock(&rec.mu);
	return n;
}

/* Fail (with a spare: rebuild started and done), scrub over an injected
 * mismatch, add and remove a spare: each is one event, in that order, with
 * the member, slot, count and pool state it concerns. Member latency max is
 * at least the p99 bucket's lower bound. */
START_TEST(t13_events)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint64_t mism;
	uint8_t *shadow;

	srandom(13);
	rec.n = 0;
	mkpool(CONF_RAID5, 4, 1, 65536);
	raid_set_event_fn(rec_fn, &rec);
	shadow = open_written(&ctx, &p, &v);
	ck_assert_uint_eq(rec.n, 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_gt(info.members[i].write_lat_max_us, 0);
		ck_assert_uint_ge(2 * info.members[i].write_lat_max_us,
				  info.members[i].write_lat_p99_us);
	}
	ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	wait_state(p, "optimal", 30);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(rec.n, 3);
	ck_assert_int_eq(rec.ev[0].kind, RAID_EV_MEMBER_FAULTY);
	ck_assert_str_eq(rec.ev[0].pool, "rb");
	ck_assert_str_eq(rec.ev[0].member, paths[2]);
	ck_assert_int_eq(rec.ev[0].slot, 2);
	ck_assert_str_eq(rec.ev[0].detail, "failed by operator");
	ck_assert_str_eq(rec.ev[0].state, "degraded");
	ck_assert_int_eq(rec.ev[1].kind, RAID_EV_REBUILD_STARTED);
	ck_assert_str_eq(rec.ev[1].member, spaths[0]);
	ck_assert_str_eq(rec.ev[1].detail, paths[2]);
	ck_assert_str_eq(rec.ev[1].state, "rebuilding");
	ck_assert_int_eq(rec.ev[2].kind, RAID_EV_REBUILD_DONE);
	ck_assert_str_eq(rec.ev[2].member, spaths[0]);
	ck_assert_int_eq(rec.ev[2].slot, 2);
	ck_assert_str_eq(rec.ev[2].state, "optimal");
	corrupt(paths[1], 3 * 65536, 512);
	scrub_wait(p, false, &mism);
	ck_assert_uint_eq(mism, 1);
	ck_assert_uint_eq(rec.n, 4);
	ck_assert_int_eq(rec.ev[3].kind, RAID_EV_SCRUB_DONE);
	ck_assert_uint_eq(rec.ev[3].count, 1);
	ck_assert(!rec.ev[3].repaired && rec.ev[3].complete);
	ck_assert_int_eq(raid_pool_remove(p, paths[2]), 0);
	ck_assert_uint_eq(rec_count(RAID_EV_MEMBER_REMOVED), 1);
	ck_assert_str_eq(rec.ev[4].member, paths[2]);
	/* losing two more members of a raid5: faulty, then pool failed */
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	ck_assert_uint_eq(rec_count(RAID_EV_MEMBER_FAULTY), 3);
	ck_assert_uint_eq(rec_count(RAID_EV_POOL_FAILED), 1);
	ck_assert_str_eq(rec.ev[rec.n - 1].state, "failed");
	raid_pool_close(p);
	raid_set_event_fn(NULL, NULL);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/* Until the replacement of member 1 by spare 0 ended (30 s at most), the
 * pool optimal at every look; then the spare holds slot 1. */
static void wait_replaced(struct raid_pool *p, struct raid_pool_info *info)
{
	for (int i = 0; i < 1500; i++) {
		ck_assert_int_eq(raid_pool_info(p, info), 0);
		ck_assert_str_eq(info->state, "optimal");
		if (!info->replacing)
			break;
		usleep(20000);
	}
	ck_assert(!info->replacing);
	ck_assert_str_eq(info->members[1].path, spaths[0]);
	ck_assert_str_eq(info->members[1].state, "active");
}

/*
 * Proactive replacement: member 1 is copied to the spare while it serves;
 * the pool stays optimal throughout (never degraded), writes during the copy
 * and across a close/open part way (resume from the checkpoint) land on the
 * copy, and once it took the slot, losing another original member still
 * leaves every block right (the copy carries slot 1's part).
 */
START_TEST(t14_replace)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;
	bool seen = false;

	srandom(100 + (unsigned)_i);
	mkpool(shapes[_i].level, shapes[_i].n, 1, shapes[_i].chunk);
	cp.rebuild_mbps = 4;     /* 7 MiB of member data: ~1.8 s */
	shadow = open_written(&ctx, &p, &v);
	ck_assert_int_eq(raid_pool_replace(p, "9"), -ENOENT);
	ck_assert_int_eq(raid_pool_replace(p, spaths[0]), -EINVAL);
	ck_assert_int_eq(raid_pool_replace(p, "1"), 0);
	ck_assert_int_eq(raid_pool_replace(p, "0"), -EBUSY);
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned i = 0; i < 16; i++) {
			uint64_t off = (uint64_t)(random() % (raid_vol_bytes(v) / 4096)) * 4096;

			for (unsigned k = 0; k < 8192 && off + k < raid_vol_bytes(v); k++)
				shadow[off + k] = (uint8_t)random();
			ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off,
					       off + 8192 <= raid_vol_bytes(v) ? 8192 : 4096,
					       shadow + off), 0);
			ck_assert_int_eq(raid_pool_info(p, &info), 0);
			ck_assert_str_eq(info.state, "optimal");
			if (info.replacing) {
				seen = true;
				ck_assert_str_eq(info.members[shapes[_i].n].state, "replacing");
				ck_assert_str_eq(info.members[shapes[_i].n].replaces, paths[1]);
			}
			usleep(30000);
		}
		if (round == 0) {
			/* part way: the copy resumes from its checkpoint */
			ck_assert_int_eq(raid_pool_info(p, &info), 0);
			ck_assert(info.replacing && info.replace_progress > 0.05 &&
				  info.replace_progress < 0.95);
			raid_pool_close(p);
			ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
			ck_assert_int_eq(raid_pool_info(p, &info), 0);
			ck_assert_msg(info.replacing && info.replace_progress > 0.05,
				      "replacement not resumed (%.3f)", info.replace_progress);
			ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
		}
	}
	ck_assert(seen);
	wait_replaced(p, &info);
	ck_assert_str_eq(info.members[shapes[_i].n].path, paths[1]);
	ck_assert_str_eq(info.members[shapes[_i].n].state, "faulty");
	verify(v, ctx, shadow);
	/* member 0 holds slot 1's other copy (raid1/10) or its share of parity:
	 * without it, slot 1's data comes from the copy */
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	/* reopened: the copy is the member of slot 1, the old one stale */
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/* The member being replaced fails part way: the replacement stops, the
 * spare rebuilds the slot from row 0 and the data is right. */
START_TEST(t15_replace_source_fails)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;

	srandom(200);
	mkpool(CONF_RAID5, 4, 1, 65536);
	cp.rebuild_mbps = 4;
	shadow = open_written(&ctx, &p, &v);
	ck_assert_int_eq(raid_pool_replace(p, "2"), 0);
	usleep(600000);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert(info.replacing);
	ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert(!info.replacing);
	wait_state(p, "optimal", 30);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.members[2].path, spaths[0]);
	ck_assert_str_eq(info.members[2].state, "active");
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

/*
 * The member being replaced cannot read some rows: they are rebuilt from
 * redundancy into the copy (a mirror copy on raid1/10, parity on raid5/6);
 * the member is not failed for it, and the copy, alone with the others
 * once another original member is lost, still gives every block right.
 */
START_TEST(t16_replace_read_errors)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;
	uint64_t chunk = shapes[_i].chunk;

	srandom(300 + (unsigned)_i);
	mkpool(shapes[_i].level, shapes[_i].n, 1, chunk);
	shadow = open_written(&ctx, &p, &v);
	/* two chunks unreadable (one injected range per member), and what a
	 * read would return there is junk: only a rebuild from redundancy
	 * gives the copy the right bytes */
	inject(p, 1, 40 * chunk + 512, 2 * chunk - 1024);
	corrupt(paths[1], 40 * chunk, (unsigned)(2 * chunk));
	ck_assert_int_eq(raid_pool_replace(p, "1"), 0);
	wait_replaced(p, &info);
	ck_assert_uint_eq(info.bad_bytes, 0);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_rebuild_configured_spare", t01_rebuild_configured_spare, .loop_end = 4),
		CK_CASE("02_add_spare", t02_add_spare),
		CK_CASE("03_resume_and_rate", t03_resume_and_rate),
		CK_CASE("04_scrub", t04_scrub, .loop_end = 4),
		CK_CASE("05_initial_sync", t05_initial_sync, .loop_end = 4),
		CK_CASE("06_initial_sync_resume", t06_initial_sync_resume),
		CK_CASE("07_rebuild_unsynced_rows", t07_rebuild_unsynced_rows),
		CK_CASE("08_background_read_errors", t08_background_read_errors, .loop_end = 4),
		CK_CASE("09_rebuild_checkpoint_durable", t09_rebuild_checkpoint_durable),
		CK_CASE("10_io_during_slot_swaps", t10_io_during_slot_swaps),
		CK_CASE("11_full_row_write_clears_bad", t11_full_row_write_clears_bad),
		CK_CASE("12_mirror_write_clears_bad", t12_mirror_write_clears_bad),
		CK_CASE("13_events", t13_events),
		CK_CASE("14_replace", t14_replace, .loop_end = 4),
		CK_CASE("15_replace_source_fails", t15_replace_source_fails),
		CK_CASE("16_replace_read_errors", t16_replace_read_errors, .loop_end = 4),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_rebuild", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 60 });
}
