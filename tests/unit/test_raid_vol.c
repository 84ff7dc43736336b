/*
 * tests/unit/test_raid_vol.c - raid/vol.c: thick volumes in the volume
 * table, and growing them in place.
 *
 * 01 grow in place on raid5: the data written before stays, the blocks
 *    gained take writes and give them back, a request past the new end is
 *    -ERANGE, the size is durable (a reopen with the old configured size
 *    serves the grown size, with a warning, never less); the same size
 *    again is 0 and changes nothing.
 * 02 refused, the size unchanged, also after a reopen: shrinking
 *    (-EINVAL), a size not a multiple of 512 (-EINVAL), over a volume that
 *    follows (-ENOSPC, the message names it), past the pool's end (-ENOSPC);
 *    growing exactly up to the next volume's start is taken.
 * 03 a percentage grows to that share of the pool, rounded down to a full
 *    stripe, as a volume created with it.
 * 04 a configuration raised while the pool was closed grows the volume at
 *    open; one the space after it cannot hold refuses the open.
 * 05 crash during the table write: with the new superblock copy torn on
 *    every member the old size is served, with it torn on all but one the
 *    new size; both are whole (the other volume and the data intact).
 * 06 a grow while another thread writes and reads the old blocks without
 *    pause: no request fails, every read returns what was written.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

#define MB (1u << 20)
#define MEMBER (16u * MB)

static char dir[64];
static char *members[3];

static void setup(void)
{
	rf_members_setup(dir, sizeof(dir), "rtgt-vol", members, 3);
}

static void teardown(void)
{
	rf_members_teardown(dir, members, 3);
}

static struct raid_pool *open_pool(void)
{
	struct conf_pool cp;
	struct raid_pool *p = NULL;

	rf_conf_pool(&cp, "tv", CONF_RAID5, 64 << 10, members, 3, MEMBER);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	return p;
}

static struct raid_vol *open_vol(struct raid_pool *p, const char *name, uint64_t bytes)
{
	struct conf_size sz = { .bytes = bytes };
	struct raid_vol *v = NULL;

	ck_assert_int_eq(raid_vol_open(p, name, &sz, &v), 0);
	return v;
}

static void never_cb(struct raid_io *io)
{
	(void)io;
	ck_abort_msg("a refused request completed");
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 9));
}

/* Writes the pattern @seed at [off, off+len) and reads it back. */
static void write_check(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, size_t len,
			unsigned seed)
{
	uint8_t *w = malloc(len), *r = malloc(len);

	fill(w, len, seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off, len, w), 0);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, len, r), 0);
	ck_assert(!memcmp(w, r, len));
	free(w);
	free(r);
}

static void read_check(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, size_t len,
		       unsigned seed)
{
	uint8_t *w = malloc(len), *r = malloc(len);

	fill(w, len, seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, len, r), 0);
	ck_assert_msg(!memcmp(w, r, len), "data at %llu changed", (unsigned long long)off);
	free(w);
	free(r);
}

START_TEST(t01_grow_in_place)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool();
	struct raid_vol *v = open_vol(p, "a", 4 * MB);
	struct conf_size six = { .bytes = 6 * MB };
	uint8_t b[4096];

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	write_check(v, ctx, 0, 256 << 10, 1);
	write_check(v, ctx, 4 * MB - 4096, 4096, 2);
	ck_assert_int_eq(raid_vol_submit(v, ctx, &(struct raid_io){
		.op = RAID_OP_WRITE, .off = 4 * MB, .len = 4096, .buf = b,
				.cb = never_cb }), -ERANGE);

	ck_assert_int_eq(raid_vol_resize(v, &six), 0);
	ck_assert_uint_eq(raid_vol_bytes(v), 6 * MB);
	read_check(v, ctx, 0, 256 << 10, 1);
	read_check(v, ctx, 4 * MB - 4096, 4096, 2);
	write_check(v, ctx, 4 * MB, 1 * MB, 3);
	write_check(v, ctx, 6 * MB - 4096, 4096, 4);
	ck_assert_int_eq(raid_vol_submit(v, ctx, &(struct raid_io){
		.op = RAID_OP_READ, .off = 6 * MB, .len = 4096, .buf = b,
				.cb = never_cb }), -ERANGE);
	ck_assert_int_eq(raid_vol_resize(v, &six), 0);
	ck_assert_uint_eq(raid_vol_bytes(v), 6 * MB);
	raid_pool_close(p);

	/* the old configured size: the grown size is served */
	p = open_pool();
	v = open_vol(p, "a", 4 * MB);
	ck_assert_uint_eq(raid_vol_bytes(v), 6 * MB);
	read_check(v, ctx, 0, 256 << 10, 1);
	read_check(v, ctx, 4 * MB, 1 * MB, 3);
	read_check(v, ctx, 6 * MB - 4096, 4096, 4);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

START_TEST(t02_refused)
{
	struct raid_pool *p = open_pool();
	struct raid_vol *a = open_vol(p, "a", 4 * MB), *b = open_vol(p, "b", 4 * MB);
	struct conf_size three = { .bytes = 3 * MB }, odd = { .bytes = 5 * MB + 100 };
	struct conf_size over = { .bytes = 4 * MB + 512 }, huge = { .bytes = 64 * MB };
	struct conf_size upto;
	uint64_t b_start = b->start, a_start = a->start;

	ck_assert_uint_eq(a_start, 0);
	ck_assert_uint_eq(b_start, 4 * MB); /* 4 MiB is a multiple of the 128 KiB stripe */
	ck_assert_int_eq(raid_vol_resize(a, &three), -EINVAL);
	ck_assert_int_eq(raid_vol_resize(a, &odd), -EINVAL);
	ck_assert_int_eq(raid_vol_resize(a, &over), -ENOSPC);
	ck_assert_int_eq(raid_vol_resize(b, &huge), -ENOSPC);
	ck_assert_uint_eq(raid_vol_bytes(a), 4 * MB);
	ck_assert_uint_eq(raid_vol_bytes(b), 4 * MB);
	raid_pool_close(p);

	p = open_pool();
	a = open_vol(p, "a", 4 * MB);
	b = open_vol(p, "b", 4 * MB);
	ck_assert_uint_eq(raid_vol_bytes(a), 4 * MB);
	ck_assert_uint_eq(b->start, b_start);
	/* b grows to the pool's end less one stripe, exactly */
	upto.bytes = p->g.usable - b_start - p->g.stripe_bytes;
	upto.percent = 0;
	ck_assert_int_eq(raid_vol_resize(b, &upto), 0);
	upto.bytes += p->g.stripe_bytes;
	ck_assert_int_eq(raid_vol_resize(b, &upto), 0);
	ck_assert_uint_eq(raid_vol_bytes(b), p->g.usable - b_start);
	upto.bytes += 512;
	ck_assert_int_eq(raid_vol_resize(b, &upto), -ENOSPC);
	raid_pool_close(p);
}
END_TEST

START_TEST(t03_percent)
{
	struct raid_pool *p = open_pool();
	struct raid_vol *v = open_vol(p, "a", 1 * MB);
	struct conf_size half = { .percent = 50 };
	uint64_t want = p->g.usable / 100 * 50 / p->g.stripe_bytes * p->g.stripe_bytes;

	ck_assert_int_eq(raid_vol_resize(v, &half), 0);
	ck_assert_uint_eq(raid_vol_bytes(v), want);
	half.percent = 0;
	ck_assert_int_eq(raid_vol_resize(v, &half), -EINVAL);
	half.percent = 101;
	ck_assert_int_eq(raid_vol_resize(v, &half), -EINVAL);
	ck_assert_uint_eq(raid_vol_bytes(v), want);
	raid_pool_close(p);
}
END_TEST

START_TEST(t04_grow_at_open)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool();
	struct raid_vol *v = open_vol(p, "a", 2 * MB);
	struct conf_size big = { .bytes = 6 * MB };

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	write_check(v, ctx, 1 * MB, 1 * MB, 5);
	open_vol(p, "b", 2 * MB); /* at 2 MiB */
	raid_pool_close(p);

	p = open_pool();
	ck_assert_int_eq(raid_vol_open(p, "a", &big, &v), -ENOSPC);
	v = open_vol(p, "b", 8 * MB);
	ck_assert_uint_eq(raid_vol_bytes(v), 8 * MB);
	raid_pool_close(p);

	p = open_pool();
	v = open_vol(p, "a", 2 * MB);
	ck_assert_uint_eq(raid_vol_bytes(v), 2 * MB);
	read_check(v, ctx, 1 * MB, 1 * MB, 5);
	ck_assert_uint_eq(raid_vol_bytes(open_vol(p, "b", 8 * MB)), 8 * MB);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* The superblock area ([0, RAID_BITMAP_OFF)) of member @i, saved/put back. */
static void sb_area(unsigned i, uint8_t *buf, bool put)
{
	int fd = open(members[i], O_RDWR);

	ck_assert_int_ge(fd, 0);
	if (put)
		ck_assert_int_eq(pwrite(fd, buf, RAID_BITMAP_OFF, 0), (ssize_t)RAID_BITMAP_OFF);
	else
		ck_assert_int_eq(pread(fd, buf, RAID_BITMAP_OFF, 0), (ssize_t)RAID_BITMAP_OFF);
	close(fd);
}

/* Member @i as if the grow's superblock write (the one after the state in
 * @before) had been torn: the before state, its older copy garbage. */
static void tear(unsigned i, uint8_t *before)
{
	struct raid_sb sb[2];
	const char *why;
	int older;

	ck_assert_int_eq(raid_sb_decode(before + RAID_SB_COPY_OFF(0), &sb[0], &why), 0);
	ck_assert_int_eq(raid_sb_decode(before + RAID_SB_COPY_OFF(1), &sb[1], &why), 0);
	older = sb[0].events < sb[1].events ? 0 : 1;
	memset(before + RAID_SB_COPY_OFF(older) + 100, 0xa5, 4096);
	sb_area(i, before, true);
}

START_TEST(t05_torn_table)
{
	struct raid_ioctx *ctx;
	struct conf_size six = { .bytes = 6 * MB };
	uint8_t *before[3];
	struct raid_pool *p;
	struct raid_vol *v;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	for (unsigned torn = 3; torn >= 2; torn--) {
		p = open_pool();
		write_check(open_vol(p, "a", 4 * MB), ctx, 0, 128 << 10, 6);
		write_check(open_vol(p, "z", 1 * MB), ctx, 0, 64 << 10, 7);
		raid_pool_close(p);
		for (unsigned i = 0; i < 3; i++) {
			before[i] = malloc(RAID_BITMAP_OFF);
			sb_area(i, before[i], false);
		}
		p = open_pool();
		v = open_vol(p, "z", 1 * MB);
		ck_assert_int_eq(raid_vol_resize(v, &six), 0);
		raid_pool_close(p);
		for (unsigned i = 0; i < torn; i++)
			tear(i, before[i]);

		p = open_pool();
		v = open_vol(p, "z", 1 * MB);
		ck_assert_uint_eq(raid_vol_bytes(v), torn == 3 ? 1 * MB : 6 * MB);
		read_check(v, ctx, 0, 64 << 10, 7);
		v = open_vol(p, "a", 4 * MB);
		ck_assert_uint_eq(raid_vol_bytes(v), 4 * MB);
		read_check(v, ctx, 0, 128 << 10, 6);
		raid_pool_close(p);
		for (unsigned i = 0; i < 3; i++)
			free(before[i]);
		teardown();
		setup();
	}
	raid_ioctx_destroy(ctx);
}
END_TEST

START_TEST(t06_grow_under_io)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool();
	struct rf_loader l = { .v = open_vol(p, "a", 4 * MB), .span = 4 * MB };

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	rf_loader_start(&l);
	for (unsigned i = 1; i <= 8; i++) {
		struct conf_size sz = { .bytes = (4 + i) * MB };

		usleep(20000);
		ck_assert_int_eq(raid_vol_resize(l.v, &sz), 0);
		write_check(l.v, ctx, (3 + i) * MB, 64 << 10, 100 + i);
	}
	usleep(20000);
	rf_loader_stop(&l);
	ck_assert_uint_gt(l.rounds, 8);
	ck_assert_uint_eq(l.errors, 0);
	ck_assert_uint_eq(l.wrong, 0);
	ck_assert_uint_eq(raid_vol_bytes(l.v), 12 * MB);
	for (unsigned i = 1; i <= 8; i++)
		read_check(l.v, ctx, (3 + i) * MB, 64 << 10, 100 + i);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_grow_in_place", t01_grow_in_place),
		CK_CASE("02_refused", t02_refused),
		CK_CASE("03_percent", t03_percent),
		CK_CASE("04_grow_at_open", t04_grow_at_open),
		CK_CASE("05_torn_table", t05_torn_table),
		CK_CASE("06_grow_under_io", t06_grow_under_io),
	};

	return ck_main(&(struct ck_suite_def){ "raid_vol", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 60 });
}
