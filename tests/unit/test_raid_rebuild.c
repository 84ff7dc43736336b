/*
 * tests/unit/test_raid_rebuild.c - the background thread: automatic rebuild
 * onto configured and added spares (data right even after an original member
 * fails afterwards), rebuild resumed after close/open, the rebuild rate cap,
 * scrub counting and repairing injected corruption.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raid/raid.h"
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

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_rebuild_configured_spare", t01_rebuild_configured_spare, .loop_end = 4),
		CK_CASE("02_add_spare", t02_add_spare),
		CK_CASE("03_resume_and_rate", t03_resume_and_rate),
		CK_CASE("04_scrub", t04_scrub, .loop_end = 4),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_rebuild", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 60 });
}
