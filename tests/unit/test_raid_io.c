/*
 * tests/unit/test_raid_io.c - the RAID engine end to end through the public
 * volume API (raid.h) on small sparse member files in a mkdtemp directory:
 * data written at every level reads back healthy, with every single member
 * failed (raid1/5/10) and every pair (raid6); volumes persist; foreign and
 * stale members are refused; COMPARE_WRITE, FLUSH and FUA behave; a FLUSH
 * waits for a cache write-out another reactor is doing and fails with it,
 * and with two reactor threads streaming writes and FLUSHing, a FLUSH's 0
 * means both threads' acknowledged writes are on the members;
 * a failed write-out keeps its data (FLUSHes fail, reads never return the
 * old bytes with GOOD, writes into the row are refused) and counts one
 * deferred error (raid_vol_write_failures); mirror reads in a
 * region not resynced always return the resync's source copy; a member
 * write that cannot be submitted fails the member; reads that lend member
 * memory (RAID_IO_MAP) give the volume's bytes and hold what keeps them so.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raid/raid.h"
#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

#define MEMBER_BYTES (8u << 20)

static char tmpdir[64];

struct tpool {
	struct conf_pool cp;
	char *paths[8];
	char *spaths[2];
};

static void rm_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	if (rmdir(tmpdir))
		fprintf(stderr, "cannot remove %s: %s\n", tmpdir, strerror(errno));
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-raid-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	rm_tmpdir();
}

static void tp_init(struct tpool *t, const char *name, enum conf_level level, unsigned n,
		    uint64_t chunk)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < n; i++) {
		t->paths[i] = malloc(128);
		snprintf(t->paths[i], 128, "%s/%s-d%u.img", tmpdir, name, i);
	}
	t->cp.name = (char *)name;
	t->cp.level = level;
	t->cp.chunk = chunk;
	t->cp.members = t->paths;
	t->cp.member_paths = t->paths;
	t->cp.n_members = n;
	t->cp.create_size = MEMBER_BYTES;
}

static void tp_free(struct tpool *t)
{
	for (unsigned i = 0; i < 8; i++) {
		if (t->paths[i])
			unlink(t->paths[i]);
		free(t->paths[i]);
	}
	for (unsigned i = 0; i < 2; i++)
		free(t->spaths[i]);
}

static void io_cb(struct raid_io *io)
{
	*(int *)io->arg = 1;
}

/* One request, waited for; *hold gets what a RAID_IO_MAP read lent (the
 * caller releases it), hold NULL: nothing may be lent. */
static int do_io_hold(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, unsigned flags,
		      uint64_t off, uint64_t len, uint8_t *buf, uint64_t *mis,
		      struct raid_io_hold **hold)
{
	struct raid_io io;
	int done = 0, rc;

	memset(&io, 0, sizeof(io));
	io.op = op;
	io.flags = flags;
	io.off = off;
	io.len = len;
	io.buf = buf;
	io.cb = io_cb;
	io.arg = &done;
	rc = raid_vol_submit(v, ctx, &io);
	if (rc)
		return rc;
	ck_assert_int_eq(done, 0);   /* never inside submit */
	while (!done)
		ck_assert_int_ge(raid_ioctx_wait(ctx, 5000), 0);
	ck_assert_uint_eq(raid_ioctx_inflight(ctx), 0);
	if (mis)
		*mis = io.miscompare_off;
	ck_assert(io.result == 0 || !io.hold);
	if (hold)
		*hold = io.hold;
	else
		ck_assert_ptr_null(io.hold);
	return io.result;
}

static int do_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, unsigned flags,
		 uint64_t off, uint64_t len, uint8_t *buf, uint64_t *mis)
{
	return do_io_hold(v, ctx, op, flags, off, len, buf, mis, NULL);
}

static uint64_t rnd(void)
{
	return ((uint64_t)random() << 31) ^ (uint64_t)random();
}

static void fill(uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)random();
}

/* Random writes of every shape mirrored into @shadow. */
static void scribble(struct raid_vol *v, struct raid_ioctx *ctx, uint8_t *shadow, unsigned count)
{
	uint64_t size = raid_vol_bytes(v);
	uint32_t stripe = raid_vol_opt_len(v);
	uint8_t *buf = malloc(4 * stripe + 8192);

	for (unsigned i = 0; i < count; i++) {
		uint64_t len, off;

		switch (i % 4) {
		case 0: len = 512 * (1 + rnd() % 16); break;           /* small */
		case 1: len = stripe; break;                            /* maybe full */
		case 2: len = 512 * (1 + rnd() % (4 * stripe / 512)); break;
		default: len = 2 * (uint64_t)stripe; break;
		}
		off = (rnd() % ((size - len) / 512)) * 512;
		if (i % 4 == 1 || i % 4 == 3)
			off = off / stripe * stripe;
		/* odd buffer addresses too: parity must not need alignment */
		uint8_t *b = buf + (i % 3 == 2 ? 512 : 0);

		fill(b, len);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, off, len, b, NULL), 0);
		memcpy(shadow + off, b, len);
	}
	free(buf);
}

static void verify(struct raid_vol *v, struct raid_ioctx *ctx, const uint8_t *shadow)
{
	uint64_t size = raid_vol_bytes(v), step = 3 * 65536 + 512;
	uint8_t *buf = malloc(step);

	for (uint64_t off = 0; off < size; off += step) {
		uint64_t len = size - off < step ? size - off : step;

		ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, off, len, buf, NULL), 0);
		if (memcmp(buf, shadow + off, len)) {
			uint64_t i = 0;

			while (buf[i] == shadow[off + i])
				i++;
			ck_abort_msg("data mismatch at volume byte %llu", (unsigned long long)(off + i));
		}
	}
	free(buf);
}

static const struct { enum conf_level level; unsigned n; uint64_t chunk; } shapes[] = {
	{ CONF_RAID0, 3, 16384 }, { CONF_RAID1, 2, 4096 },   { CONF_RAID1, 3, 65536 },
	{ CONF_RAID5, 3, 16384 }, { CONF_RAID5, 4, 65536 },  { CONF_RAID5, 5, 4096 },
	{ CONF_RAID6, 4, 16384 }, { CONF_RAID6, 5, 4096 },   { CONF_RAID6, 6, 8192 },
	{ CONF_RAID10, 4, 16384 }, { CONF_RAID10, 6, 4096 },
};

static struct conf_size full = { .percent = 100 };

START_TEST(t01_roundtrip)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow;

	srandom(1000 + (unsigned)_i);
	tp_init(&t, "rt", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	scribble(v, ctx, shadow, 60);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	tp_free(&t);
}
END_TEST

/* Healthy writes, then every allowed failure set: reads reconstruct, and
 * degraded writes read back. */
static void failure_case(unsigned shape, unsigned f1, int f2)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow;
	char s[16];

	srandom(7 * shape + f1 * 13 + (unsigned)f2);
	tp_init(&t, "f", shapes[shape].level, shapes[shape].n, shapes[shape].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	scribble(v, ctx, shadow, 24);
	snprintf(s, sizeof(s), "%u", f1);
	ck_assert_int_eq(raid_pool_fail(p, s), 0);
	if (f2 >= 0)
		ck_assert_int_eq(raid_pool_fail(p, t.paths[f2]), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "degraded");
	ck_assert_str_eq(info.members[f1].state, "faulty");
	verify(v, ctx, shadow);
	scribble(v, ctx, shadow, 24);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	tp_free(&t);
}

START_TEST(t02_single_failures)
{
	/* shapes 1..10 except raid0 */
	unsigned shape = 1 + (unsigned)_i;

	for (unsigned f = 0; f < shapes[shape].n; f++)
		failure_case(shape, f, -1);
}
END_TEST

START_TEST(t03_raid6_pairs)
{
	unsigned shape = 6 + (unsigned)_i;   /* raid6 shapes */

	for (unsigned a = 0; a < shapes[shape].n; a++)
		for (unsigned b = a + 1; b < shapes[shape].n; b++)
			failure_case(shape, a, (int)b);
}
END_TEST

START_TEST(t04_beyond_redundancy)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t buf[4096];

	tp_init(&t, "b", CONF_RAID5, 3, 16384);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "failed");
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 0, sizeof(buf), buf, NULL), -EIO);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, 0, sizeof(buf), buf, NULL), -EIO);
	raid_pool_close(p);
	/* and it does not start again */
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), -EIO);
	raid_ioctx_destroy(ctx);
	tp_free(&t);
}
END_TEST

START_TEST(t05_persistence)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *a, *b;
	struct raid_ioctx *ctx;
	struct conf_size half = { .percent = 40 }, abs = { .bytes = 5000 * 512 };
	struct conf_size wrong = { .bytes = 2000 * 512 };
	uint8_t ua[16], ub[16], u2[16], *shadow;

	srandom(5);
	tp_init(&t, "p", CONF_RAID5, 4, 65536);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "a", &half, &a), 0);
	ck_assert_int_eq(raid_vol_open(p, "b", &abs, &b), 0);
	ck_assert_uint_eq(raid_vol_bytes(b), 5000 * 512);
	ck_assert_uint_eq(raid_vol_bytes(a) % raid_vol_opt_len(a), 0);
	ck_assert_uint_le(raid_vol_bytes(a), raid_pool_usable_bytes(p) * 40 / 100);
	raid_vol_uuid(a, ua);
	raid_vol_uuid(b, ub);
	ck_assert(memcmp(ua, ub, 16) != 0);
	shadow = calloc(1, raid_vol_bytes(b));
	scribble(b, ctx, shadow, 20);
	raid_pool_close(p);

	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	/* a smaller configured size never cuts the volume (test_raid_vol) */
	ck_assert_int_eq(raid_vol_open(p, "b", &wrong, &b), 0);
	ck_assert_uint_eq(raid_vol_bytes(b), 5000 * 512);
	ck_assert_int_eq(raid_vol_open(p, "b", &abs, &b), 0);
	ck_assert_int_eq(raid_vol_open(p, "a", &half, &a), 0);
	raid_vol_uuid(b, u2);
	ck_assert(memcmp(u2, ub, 16) == 0);
	raid_vol_uuid(a, u2);
	ck_assert(memcmp(u2, ua, 16) == 0);
	verify(b, ctx, shadow);
	/* the rest of the pool is too small for 70% more */
	{
		struct conf_size big = { .percent = 70 };
		struct raid_vol *c;

		ck_assert_int_eq(raid_vol_open(p, "c", &big, &c), -ENOSPC);
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	tp_free(&t);
}
END_TEST

START_TEST(t06_foreign_and_stale)
{
	struct tpool a, b;
	struct raid_pool *pa, *pb;
	struct raid_pool_info info;
	char *save;

	tp_init(&a, "A", CONF_RAID5, 3, 16384);
	tp_init(&b, "B", CONF_RAID5, 3, 16384);
	ck_assert_int_eq(raid_pool_open(&a.cp, &pa), 0);
	ck_assert_int_eq(raid_pool_open(&b.cp, &pb), 0);
	/* two pools in one process */
	raid_pool_close(pb);
	raid_pool_close(pa);

	/* A with one of B's members in slot 1: the pool is refused (raid/README.md,
	 * "Assembly": members of two pools are never mixed) and nothing is written */
	save = a.paths[1];
	a.paths[1] = b.paths[1];
	ck_assert_int_eq(raid_pool_open(&a.cp, &pa), -EINVAL);
	a.paths[1] = save;

	/* A itself was not touched: still optimal */
	ck_assert_int_eq(raid_pool_open(&a.cp, &pa), 0);
	ck_assert_int_eq(raid_pool_info(pa, &info), 0);
	ck_assert_str_eq(info.state, "optimal");
	/* member 1 failed while A ran: its event counter is behind, it stays out */
	ck_assert_int_eq(raid_pool_fail(pa, "1"), 0);
	raid_pool_close(pa);
	ck_assert_int_eq(raid_pool_open(&a.cp, &pa), 0);
	ck_assert_int_eq(raid_pool_info(pa, &info), 0);
	ck_assert_str_eq(info.state, "degraded");
	ck_assert_str_ne(info.members[1].state, "active");
	raid_pool_close(pa);

	/* B was not touched: still optimal */
	ck_assert_int_eq(raid_pool_open(&b.cp, &pb), 0);
	ck_assert_int_eq(raid_pool_info(pb, &info), 0);
	ck_assert_str_eq(info.state, "optimal");
	raid_pool_close(pb);

	/* config disagreeing with the disks */
	b.cp.level = CONF_RAID0;
	ck_assert_int_eq(raid_pool_open(&b.cp, &pb), -EINVAL);
	tp_free(&a);
	tp_free(&b);
}
END_TEST

START_TEST(t07_compare_write_flush_fua)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *buf = malloc(3 * 8192), *rd = malloc(8192);
	uint64_t mis = 0;

	srandom(9);
	tp_init(&t, "c", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	fill(buf, 8192);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, RAID_IO_FUA, 4096, 8192, buf, NULL), 0);
	/* compare matches: second half written */
	fill(buf + 8192, 8192);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_COMPARE_WRITE, 0, 4096, 8192, buf, NULL), 0);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 4096, 8192, rd, NULL), 0);
	ck_assert(memcmp(rd, buf + 8192, 8192) == 0);
	/* compare fails at byte 5000: nothing written */
	memcpy(buf, buf + 8192, 8192);
	buf[5000] ^= 1;
	fill(buf + 8192, 8192);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_COMPARE_WRITE, 0, 4096, 8192, buf, &mis), -EILSEQ);
	ck_assert_uint_eq(mis, 5000);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 4096, 8192, buf + 8192, NULL), 0);
	ck_assert(memcmp(rd, buf + 8192, 8192) == 0);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_FLUSH, 0, 0, 0, NULL, NULL), 0);
	/* bad requests */
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 100, 512, rd, NULL), -EINVAL);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 0, 0, rd, NULL), -EINVAL);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, raid_vol_bytes(v), 512, rd, NULL), -ERANGE);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
	free(rd);
	tp_free(&t);
}
END_TEST

START_TEST(t08_direct_io)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow;

	srandom(11);
	tp_init(&t, "d", CONF_RAID6, 5, 16384);
	t.cp.direct_io = true;
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	scribble(v, ctx, shadow, 30);
	ck_assert_int_eq(raid_pool_fail(p, "3"), 0);
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	tp_free(&t);
}
END_TEST

static void totals(struct raid_pool *p, uint64_t *rb, uint64_t *wb, uint64_t *ro, uint64_t *wo)
{
	struct raid_pool_info info;

	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	*rb = *wb = *ro = *wo = 0;
	for (unsigned i = 0; i < info.n_members; i++) {
		*rb += info.members[i].read_bytes;
		*wb += info.members[i].write_bytes;
		*ro += info.members[i].read_ops;
		*wo += info.members[i].write_ops;
	}
}

/* Member traffic: 1 MiB sequential writes gather into full stripes through
 * the stripe cache; 4 KiB random writes cost at most 2 reads + 2 writes. */
START_TEST(t09_io_costs)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	enum conf_level level = _i ? CONF_RAID6 : CONF_RAID5;
	uint64_t rb, wb, ro, wo, rb0, wb0, ro0, wo0, data = 0;
	uint8_t *buf = malloc(1 << 20), *shadow;
	double factor = _i ? 2.0 : 4.0 / 3.0;

	srandom(21);
	tp_init(&t, "cost", level, 4, 65536);
	t.cp.create_size = 32u << 20;
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	totals(p, &rb0, &wb0, &ro0, &wo0);
	for (uint64_t off = 0; off + (1 << 20) <= raid_vol_bytes(v); off += 1 << 20) {
		fill(buf, 1 << 20);
		memcpy(shadow + off, buf, 1 << 20);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, off, 1 << 20, buf, NULL), 0);
		data += 1 << 20;
	}
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_FLUSH, 0, 0, 0, NULL, NULL), 0);
	ck_assert_uint_eq(atomic_load(&p->sc.n), 0);
	ck_assert(raid_sc_check(&p->sc));
	totals(p, &rb, &wb, &ro, &wo);
	ck_assert_msg(rb - rb0 < data / 20, "sequential: read %llu of %llu written",
		      (unsigned long long)(rb - rb0), (unsigned long long)data);
	ck_assert_msg((double)(wb - wb0) < (double)data * factor * 1.1 &&
			      (double)(wb - wb0) > (double)data * factor * 0.9,
		      "sequential: member writes %llu for %llu", (unsigned long long)(wb - wb0),
		      (unsigned long long)data);
	verify(v, ctx, shadow);

	totals(p, &rb0, &wb0, &ro0, &wo0);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t off = (rnd() % (raid_vol_bytes(v) / 4096)) * 4096;

		fill(buf, 4096);
		memcpy(shadow + off, buf, 4096);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, off, 4096, buf, NULL), 0);
	}
	totals(p, &rb, &wb, &ro, &wo);
	ck_assert_uint_le(ro - ro0, 200u * (_i ? 3 : 2));
	ck_assert_uint_le(wo - wo0, 200u * (_i ? 3 : 2));
	verify(v, ctx, shadow);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	free(buf);
	tp_free(&t);
}
END_TEST

/* Two threads, each with its own ctx, 8 requests in flight each, writes
 * and reads overlapping in one region: afterwards the stripes must be
 * consistent, so reading with a member failed returns the same bytes. */
struct thr {
	struct raid_vol *v;
	unsigned seed;
	uint64_t region;
	int err;
};

struct slot {
	struct raid_io io;
	uint8_t *buf;
	int busy;
};

static void slot_cb(struct raid_io *io)
{
	struct slot *sl = io->arg;

	sl->busy = 0;
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct raid_ioctx *ctx;
	struct slot sl[8];
	unsigned done = 0, issued = 0, seed = t->seed;

	if (raid_ioctx_create(&ctx))
		return NULL;
	memset(sl, 0, sizeof(sl));
	for (unsigned i = 0; i < 8; i++)
		sl[i].buf = malloc(256 * 1024);
	while (done < 400) {
		for (unsigned i = 0; i < 8; i++) {
			struct slot *x = &sl[i];
			uint64_t len = 512 * (1 + rand_r(&seed) % 512);

			if (x->busy)
				continue;
			if (x->io.cb) {
				if (x->io.result)
					t->err = x->io.result;
				done++;
				x->io.cb = NULL;
			}
			if (issued >= 400)
				continue;
			memset(&x->io, 0, sizeof(x->io));
			x->io.op = rand_r(&seed) % 3 ? RAID_OP_WRITE : RAID_OP_READ;
			x->io.off = (rand_r(&seed) % ((t->region - len) / 512)) * 512;
			x->io.len = len;
			x->io.buf = x->buf;
			memset(x->buf, (int)rand_r(&seed), len);
			x->io.cb = slot_cb;
			x->io.arg = x;
			x->busy = 1;
			if (raid_vol_submit(t->v, ctx, &x->io)) {
				t->err = -EINVAL;
				x->busy = 0;
			}
			issued++;
		}
		raid_ioctx_wait(ctx, 100);
	}
	raid_ioctx_destroy(ctx);
	for (unsigned i = 0; i < 8; i++)
		free(sl[i].buf);
	return NULL;
}

START_TEST(t10_threads)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct thr th[2];
	pthread_t tid[2];
	uint8_t *snap, *buf;
	uint64_t region = 3u << 20;

	tp_init(&t, "thr", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	for (unsigned i = 0; i < 2; i++) {
		th[i].v = v;
		th[i].seed = 31 + i;
		th[i].region = region;
		th[i].err = 0;
		ck_assert_int_eq(pthread_create(&tid[i], NULL, thr_main, &th[i]), 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_int_eq(th[i].err, 0);
	}
	ck_assert(raid_slock_check(&p->lock));
	snap = malloc(region);
	buf = malloc(region);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 0, region, snap, NULL), 0);
	if (shapes[_i].level != CONF_RAID0) {
		ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 0, region, buf, NULL), 0);
		ck_assert(memcmp(buf, snap, region) == 0);
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(snap);
	free(buf);
	tp_free(&t);
}
END_TEST

/* Read errors are rebuilt from redundancy and written back; the member
 * stays in until it has too many; raid0 just fails the read. */
START_TEST(t11_read_error_repair)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint8_t *shadow, buf[4096];
	struct raid_member *m;

	srandom(50 + (unsigned)_i);
	tp_init(&t, "re", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	scribble(v, ctx, shadow, 40);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_FLUSH, 0, 0, 0, NULL, NULL), 0);
	{
		/* fail reads of the member holding logical byte 5 chunks + 1K */
		uint64_t l = 5 * shapes[_i].chunk + 1024, blk = l / 4096 * 4096;
		struct raid_loc loc;

		raid_geom_map(&p->g, l, &loc);
		m = p->m[loc.dev[0]];
		raid_fault_read_error(&m->fault, loc.moff[0], 2048);
		if (shapes[_i].level == CONF_RAID0) {
			ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, blk, 4096, buf, NULL), -EIO);
			ck_assert_int_eq(raid_pool_info(p, &info), 0);
			ck_assert_str_eq(info.members[loc.dev[0]].state, "active");
			goto out;
		}
		/* mirrors spread reads: try until the bad copy was picked */
		for (unsigned k = 0; k < 16 && !atomic_load(&m->rd_errors); k++) {
			ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, blk, 4096, buf, NULL), 0);
			ck_assert(memcmp(buf, shadow + blk, 4096) == 0);
		}
	}
	verify(v, ctx, shadow);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.state, "optimal");
	ck_assert_uint_ge(atomic_load(&m->rd_errors), 1);
	ck_assert(!raid_fault_read_error_set(&m->fault));    /* rewritten */
	/* a member that keeps failing is let go */
	atomic_store(&m->rd_errors, RAID_MAX_READ_ERRORS);
	raid_fault_read_error(&m->fault, 0, shapes[_i].chunk * 64);
	verify(v, ctx, shadow);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.members[m->slot].state, "faulty");
	verify(v, ctx, shadow);
out:
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(shadow);
	tp_free(&t);
}
END_TEST

/* Mirror read balancing (io.c rs_pick): two sequential readers on one raid1
 * pool each stay on a copy of their own (no head shared between them); a
 * lone reader uses both copies, a 4 MiB band of member space each. */
static int member_read(struct raid_pool *p, const uint64_t *before)
{
	int who = -1;

	for (unsigned i = 0; i < 2; i++)
		if (atomic_load(&p->m[i]->rd_ops) != before[i]) {
			ck_assert_int_eq(who, -1);   /* one copy per 64K read */
			who = (int)i;
		}
	return who;
}

START_TEST(t12_mirror_read_balance)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *va, *vb, *vf;
	struct raid_ioctx *ctx;
	struct conf_size half = { .percent = 45 };
	uint8_t *buf = raid_alloc(65536);
	uint64_t before[2];
	unsigned used_a[2] = { 0 }, used_b[2] = { 0 }, used_f[2] = { 0 };

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	tp_init(&t, "mb", CONF_RAID1, 2, 65536);
	t.cp.create_size = 64u << 20;   /* the readers 29 MiB apart (sparse files) */
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "a", &half, &va), 0);
	ck_assert_int_eq(raid_vol_open(p, "b", &half, &vb), 0);
	/* interleaved a, b, a, b ... 64 KiB each, with an extra read of a
	 * every third time (a plain alternation of copies would also give
	 * each reader one copy if the two strictly alternated) */
	for (uint64_t off = 0; off < (4u << 20); off += 65536) {
		unsigned seq[3] = { 0, 1, 0 }, nseq = (off >> 16) % 3 ? 2 : 3;

		for (unsigned j = 0; j < nseq; j++) {
			unsigned k = seq[j];
			int who;

			before[0] = atomic_load(&p->m[0]->rd_ops);
			before[1] = atomic_load(&p->m[1]->rd_ops);
			ck_assert_int_eq(do_io(k ? vb : va, ctx, RAID_OP_READ, 0, off, 65536, buf, NULL), 0);
			who = member_read(p, before);
			ck_assert_int_ge(who, 0);
			if (off >= 8 * 65536)   /* after both are known as streams */
				(k ? used_b : used_a)[who]++;
		}
	}
	ck_assert_msg((used_a[0] == 0) != (used_a[1] == 0), "reader a used both copies: %u %u",
		      used_a[0], used_a[1]);
	ck_assert_msg((used_b[0] == 0) != (used_b[1] == 0), "reader b used both copies: %u %u",
		      used_b[0], used_b[1]);
	ck_assert_msg((used_a[0] == 0) == (used_b[0] != 0), "a and b share a copy");
	raid_pool_close(p);
	tp_free(&t);

	/* a lone reader over the whole pool: both copies, in bands */
	tp_init(&t, "mf", CONF_RAID1, 2, 65536);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "f", &full, &vf), 0);
	ck_assert_uint_gt(raid_vol_bytes(vf), 6u << 20);
	for (uint64_t off = 0; off + 65536 <= raid_vol_bytes(vf); off += 65536) {
		int who;

		before[0] = atomic_load(&p->m[0]->rd_ops);
		before[1] = atomic_load(&p->m[1]->rd_ops);
		ck_assert_int_eq(do_io(vf, ctx, RAID_OP_READ, 0, off, 65536, buf, NULL), 0);
		who = member_read(p, before);
		ck_assert_int_ge(who, 0);
		used_f[who]++;
	}
	/* 4 MiB bands: the first band on one copy, what follows on the other */
	ck_assert_msg(used_f[0] >= 32 && used_f[1] >= 32, "lone reader: %u / %u reads per copy",
		      used_f[0], used_f[1]);
	raid_pool_close(p);
	tp_free(&t);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* ---- the stripe cache and FLUSH, write-out failures, unsynced mirrors ---- */

/* An I/O submitted now and waited for later (controlled reactors: its
 * completions run only when the test runs its ctx). */
struct aio {
	struct raid_io io;
	int done;
};

static void aio_start(struct aio *a, struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op,
		      unsigned flags, uint64_t off, uint64_t len, uint8_t *buf)
{
	memset(a, 0, sizeof(*a));
	a->io.op = op;
	a->io.flags = flags;
	a->io.off = off;
	a->io.len = len;
	a->io.buf = buf;
	a->io.cb = io_cb;
	a->io.arg = &a->done;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &a->io), 0);
}

/* Runs @ctx for @ms milliseconds or until @a is done: whether it is. */
static bool aio_wait(struct aio *a, struct raid_ioctx *ctx, unsigned ms)
{
	double end = rf_now_s() + ms / 1000.0;

	while (!a->done && rf_now_s() < end)
		ck_assert_int_ge(raid_ioctx_wait(ctx, 20), 0);
	return a->done;
}

/* The bytes of pool logical [loff, loff+len) (inside one chunk, parity
 * level) as stored on the member that holds them. */
static void member_bytes(struct raid_pool *p, uint64_t loff, uint64_t len, uint8_t *out)
{
	struct raid_loc loc;

	raid_geom_map(&p->g, loff, &loc);
	ck_assert_int_eq(pread(p->m[loc.dev[0]]->fd_buf, out, len,
			       (off_t)(RAID_DATA_OFF + loc.moff[0])), (ssize_t)len);
}

/* What assembly after an unclean stop leaves in memory: every region of the
 * write-intent bitmap waits for its resync (which is not started here). */
static void mark_unsynced(struct raid_pool *p)
{
	struct raid_bitmap *bm = &p->bm;

	ck_assert_uint_gt(bm->nbits, 0);
	pthread_mutex_lock(&bm->mu);
	for (uint64_t r = 0; r < bm->nbits; r++) {
		if (!(bm->unsynced[r / 8] & (1u << (r % 8)))) {
			bm->unsynced[r / 8] |= (uint8_t)(1u << (r % 8));
			atomic_fetch_add(&bm->n_unsynced, 1);
		}
	}
	pthread_mutex_unlock(&bm->mu);
}

/*
 * A FLUSH on one reactor while another reactor writes out a cache entry it
 * took (a FUA write into the cached row): the FLUSH must not complete
 * before that write-out did, and must fail when it fails. raid5 of 3, 64K
 * chunks: a 192 KiB write leaves the first chunk of the next row cached
 * (acknowledged); the FUA 4 KiB into that row takes the entry on ctx A,
 * whose completions only run when the test runs A.
 * _i = 0: the write-out succeeds, and the FLUSH's GOOD means the cached
 * bytes are on the member; _i = 1: member 2 was failed first and member 0's
 * writes fail, the write-out fails: so does the FLUSH.
 */
START_TEST(t13_flush_waits_for_writeouts)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *a, *b;
	uint64_t chunk = 65536, stripe = 2 * chunk;
	uint8_t *buf = malloc(3 * chunk), *fua = malloc(4096), *got = malloc(chunk);
	struct aio w, fl;
	unsigned tries;
	bool timely = false;

	srandom(1300 + (unsigned)_i);
	tp_init(&t, "fw", CONF_RAID5, 3, chunk);
	ck_assert_int_eq(raid_ioctx_create(&a), 0);
	ck_assert_int_eq(raid_ioctx_create(&b), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	if (_i)
		ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	/* the background thread writes out entries 100 ms old: the FUA must
	 * take the entry before that, else try again further on */
	for (tries = 0; tries < 20 && !timely; tries++) {
		uint64_t off = tries * 2 * stripe;
		double t0;

		fill(buf, 3 * chunk);
		fill(fua, 4096);
		t0 = rf_now_s();   /* before the entry exists */
		ck_assert_int_eq(do_io(v, a, RAID_OP_WRITE, 0, off, 3 * chunk, buf, NULL), 0);
		aio_start(&w, v, a, RAID_OP_WRITE, RAID_IO_FUA, off + stripe + chunk, 4096, fua);
		if (rf_now_s() - t0 > 0.08) {
			ck_assert(aio_wait(&w, a, 5000));
			continue;
		}
		timely = true;
		if (_i)
			raid_fault_write_error(&p->m[0]->fault, 0, RAID_FAULT_ALL);
		aio_start(&fl, v, b, RAID_OP_FLUSH, 0, 0, 0, NULL);
		/* ctx A is not run: its write-out cannot have ended */
		ck_assert_msg(!aio_wait(&fl, b, 300), "FLUSH completed (%d) during a write-out",
			      fl.io.result);
		ck_assert(aio_wait(&w, a, 5000));
		ck_assert(aio_wait(&fl, b, 5000));
		if (!_i) {
			ck_assert_int_eq(w.io.result, 0);
			ck_assert_int_eq(fl.io.result, 0);
			member_bytes(p, off + stripe, chunk, got);
			ck_assert(memcmp(got, buf + stripe, chunk) == 0);
			member_bytes(p, off + stripe + chunk, 4096, got);
			ck_assert(memcmp(got, fua, 4096) == 0);
			ck_assert_uint_eq(raid_vol_write_failures(v), 0);
		} else {
			ck_assert_int_ne(w.io.result, 0);
			ck_assert_int_ne(fl.io.result, 0);
			/* the 192 KiB write's cached chunk had been acknowledged */
			ck_assert_uint_ge(raid_vol_write_failures(v), 1);
			/* never the old bytes with GOOD */
			if (do_io(v, a, RAID_OP_READ, 0, off + stripe, chunk, got, NULL) == 0)
				ck_assert(memcmp(got, buf + stripe, chunk) == 0);
		}
	}
	ck_assert_msg(timely, "the FUA never found the entry in time (machine too busy?)");
	ck_assert(raid_sc_check(&p->sc));
	raid_pool_close(p);
	raid_ioctx_destroy(a);
	raid_ioctx_destroy(b);
	free(buf);
	free(fua);
	free(got);
	tp_free(&t);
}
END_TEST

static void set_flag(void *arg)
{
	*(int *)arg = 1;
}

/*
 * A write-out that fails keeps the acknowledged data: raid5 of 3 after an
 * unclean stop (regions not resynced), a row's first chunk cached, then
 * the row's parity member fails. The row can no longer be written (degraded
 * and not resynced: its parity may belong to a cut write), so the
 * background write-out fails. Every later FLUSH fails, reads of the cached
 * range return the new data (never the old bytes with GOOD), and a new
 * write into the row is refused like the data path refuses it instead of
 * being acknowledged from the cache. The failure counts one deferred error
 * on the volume (raid_vol_write_failures), however often the retries fail.
 */
START_TEST(t14_failed_writeout_kept)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint64_t chunk = 65536, stripe = 2 * chunk;
	uint8_t *buf = malloc(3 * chunk), *got = malloc(chunk), *old = malloc(chunk);
	char slot[8];
	int pd, qd, rc;

	struct raid_lk lk;
	int granted = 0;
	unsigned tries;

	srandom(1400);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	fill(buf, 3 * chunk);
	/* The background write-out must not write the entry out before the
	 * member is failed: a shared lock of row 1 holds it off (it writes out
	 * under the row's exclusive lock). When it was quicker than us (a busy
	 * machine), again on a fresh pool. */
	for (tries = 0; tries < 5; tries++) {
		tp_init(&t, "fk", CONF_RAID5, 3, chunk);
		ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
		ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
		mark_unsynced(p);
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, 0, 3 * chunk, buf, NULL), 0);
		memset(&lk, 0, sizeof(lk));
		lk.a = stripe;
		lk.b = 2 * stripe;
		lk.ctx = ctx;
		lk.fn = set_flag;
		lk.arg = &granted;
		granted = 0;
		if (!raid_slock_acquire(&p->lock, &lk)) {
			while (!granted)
				ck_assert_int_ge(raid_ioctx_wait(ctx, 100), 0);
		} else if (atomic_load(&p->sc.n) == 1) {
			break;   /* row 1's first chunk cached and held */
		}
		raid_slock_release(&p->lock, &lk);
		raid_pool_close(p);
		tp_free(&t);
	}
	ck_assert_uint_lt(tries, 5);
	member_bytes(p, stripe, chunk, old);
	ck_assert(memcmp(old, buf + stripe, chunk) != 0);
	raid_geom_parity(&p->g, 1, &pd, &qd);
	snprintf(slot, sizeof(slot), "%d", pd);
	ck_assert_int_eq(raid_pool_fail(p, slot), 0);
	raid_slock_release(&p->lock, &lk);
	ck_assert_uint_eq(raid_vol_write_failures(v), 0);
	/* at once (the entry is still cached): a write into the row is not
	 * acknowledged from the cache, the row cannot be written */
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, stripe + 8192, 4096, buf, NULL), -EIO);
	/* the background write-out (100 ms) tries and fails: acknowledged
	 * data not on the members, a deferred error for the target layer */
	for (unsigned k = 0; k < 100 && !raid_vol_write_failures(v); k++)
		usleep(20 * 1000);
	ck_assert_uint_eq(raid_vol_write_failures(v), 1);
	/* twice: the error is not reported once and then forgotten */
	for (unsigned k = 0; k < 2; k++) {
		ck_assert_int_ne(do_io(v, ctx, RAID_OP_FLUSH, 0, 0, 0, NULL, NULL), 0);
		memset(got, 0, chunk);
		rc = do_io(v, ctx, RAID_OP_READ, 0, stripe, chunk, got, NULL);
		ck_assert_msg(rc != 0 || memcmp(got, buf + stripe, chunk) == 0,
			      "read %d: GOOD with %s data", k, memcmp(got, old, chunk) ? "wrong" : "the old");
	}
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, stripe + 4096, 4096, buf, NULL), -EIO);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, stripe, chunk, got, NULL), 0);
	ck_assert(memcmp(got, buf + stripe, chunk) == 0);
	ck_assert_uint_ge(atomic_load(&p->sc.n_failed), 2);
	/* the retries failed over the same data (nothing acknowledged into
	 * the row since): still the one deferred error */
	ck_assert_uint_eq(raid_vol_write_failures(v), 1);
	ck_assert(raid_sc_check(&p->sc));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
	free(got);
	free(old);
	tp_free(&t);
}
END_TEST

/*
 * raid1/raid10 after an unclean stop, with the copies of one block
 * different in a region not resynced yet (a write cut between the
 * copies): every read of it returns the same bytes - those of the copy
 * the resync keeps (the first) - whatever the read balancing would pick.
 * The block lies in an odd 4 MiB band of member space, where a stream
 * alternates to the other copy.
 */
START_TEST(t15_unsynced_mirror_reads)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint64_t len = 65536, loff = _i ? 10u << 20 : 5u << 20;
	uint8_t *a = malloc(len), *other = malloc(len), *got = malloc(len), *far = malloc(len);
	struct raid_loc loc;

	srandom(1500 + (unsigned)_i);
	tp_init(&t, "um", _i ? CONF_RAID10 : CONF_RAID1, _i ? 4 : 2, 65536);
	t.cp.create_size = 16u << 20;
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	fill(a, len);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, RAID_IO_FUA, loff, len, a, NULL), 0);
	raid_geom_map(&p->g, loff, &loc);
	ck_assert_uint_eq(loc.ncopies, 2);
	ck_assert_uint_eq(loc.moff[0] / (4u << 20) % 2, 1);
	fill(other, len);
	ck_assert_int_eq(pwrite(p->m[loc.dev[1]]->fd_buf, other, len,
				(off_t)(RAID_DATA_OFF + loc.moff[1])), (ssize_t)len);
	mark_unsynced(p);
	for (unsigned k = 0; k < 20; k++) {
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, loff, len, got, NULL), 0);
		ck_assert_msg(memcmp(got, a, len) == 0, "read %u returned %s", k,
			      memcmp(got, other, len) ? "neither copy" : "the second copy");
		if (k % 5 == 4)   /* other readers in between */
			ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, (k * 1234567ull) % (4u << 20) /
					       512 * 512, len, far, NULL), 0);
	}
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(a);
	free(other);
	free(got);
	free(far);
	tp_free(&t);
}
END_TEST

/*
 * A member write that cannot be submitted (no memory for a bounce buffer,
 * injected) is a failed write: the member is failed and the data reads
 * back right; never a GOOD write that left a member with old data.
 * _i: raid5 of 3 (a full stripe), raid1 of 2.
 */
START_TEST(t16_write_submit_failure)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	struct raid_pool_info info;
	uint64_t len = 2 * 16384;
	uint8_t *d = malloc(len), *got = malloc(len);

	srandom(1600 + (unsigned)_i);
	tp_init(&t, "sf", _i ? CONF_RAID1 : CONF_RAID5, _i ? 2 : 3, 16384);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	fill(d, len);
	raid_fault_submit_error(&p->m[0]->fault, 1);
	ck_assert_int_eq(do_io(v, ctx, RAID_OP_WRITE, 0, 0, len, d, NULL), 0);
	ck_assert_uint_eq(raid_fault_submit_errors_left(&p->m[0]->fault), 0);
	for (unsigned k = 0; k < 4; k++) {
		ck_assert_int_eq(do_io(v, ctx, RAID_OP_READ, 0, 0, len, got, NULL), 0);
		ck_assert_msg(memcmp(got, d, len) == 0, "read %u: old data", k);
	}
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_str_eq(info.members[0].state, "faulty");
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(d);
	free(got);
	tp_free(&t);
}
END_TEST

/*
 * FLUSHes on two reactor threads while both stream writes that leave rows
 * half cached and complete them with the next write (the row-completing
 * write takes the entry and writes it out on its own thread): when a FLUSH
 * returns 0, every write either thread had acknowledged before it was
 * submitted is on the members (checked on the member files, the last
 * 256 KiB of each thread's acknowledged range).
 */
#define FT_REGION (6u << 20)
#define FT_WRITE (3u * 16384u)

struct ft {
	struct raid_vol *v;
	struct raid_pool *p;
	unsigned id;
	_Atomic uint64_t *acked;     /* both threads' acknowledged ends */
	unsigned flushes;
	char err[160];
};

static uint64_t ft_word(uint64_t voff)
{
	return (voff / 8 + 1) * 0x9e3779b97f4a7c15ull;
}

static void ft_fill(uint8_t *b, uint64_t voff, uint64_t len)
{
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t w = ft_word(voff + i);

		memcpy(b + i, &w, 8);
	}
}

static int ft_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, uint64_t off,
		 uint64_t len, uint8_t *buf)
{
	struct aio a;

	memset(&a, 0, sizeof(a));
	a.io.op = op;
	a.io.off = off;
	a.io.len = len;
	a.io.buf = buf;
	a.io.cb = io_cb;
	a.io.arg = &a.done;
	if (raid_vol_submit(v, ctx, &a.io))
		return -EINVAL;
	while (!a.done)
		if (raid_ioctx_wait(ctx, 5000) < 0)
			return -EIO;
	return a.io.result;
}

/* [voff, end) of the volume as stored on the members: 0 or the first bad offset + 1 */
static uint64_t ft_check(struct raid_pool *p, uint64_t voff, uint64_t end)
{
	uint8_t got[512], want[512];

	for (uint64_t o = voff; o < end; o += 512) {
		struct raid_loc loc;

		raid_geom_map(&p->g, o, &loc);
		if (pread(p->m[loc.dev[0]]->fd_buf, got, 512, (off_t)(RAID_DATA_OFF + loc.moff[0])) != 512)
			return o + 1;
		ft_fill(want, o, 512);
		if (memcmp(got, want, 512))
			return o + 1;
	}
	return 0;
}

static void *ft_main(void *arg)
{
	struct ft *t = arg;
	struct raid_ioctx *ctx;
	uint8_t *buf = malloc(FT_WRITE);
	uint64_t base = t->id * FT_REGION;

	if (raid_ioctx_create(&ctx)) {
		snprintf(t->err, sizeof(t->err), "no ctx");
		return NULL;
	}
	for (uint64_t pos = 0, n = 0; pos + FT_WRITE <= FT_REGION && !t->err[0]; pos += FT_WRITE, n++) {
		ft_fill(buf, base + pos, FT_WRITE);
		if (ft_io(t->v, ctx, RAID_OP_WRITE, base + pos, FT_WRITE, buf)) {
			snprintf(t->err, sizeof(t->err), "write at %llu failed", (unsigned long long)(base + pos));
			break;
		}
		atomic_store(&t->acked[t->id], pos + FT_WRITE);
		if (n % 6 == 5) {
			uint64_t upto[2];

			for (unsigned k = 0; k < 2; k++)
				upto[k] = atomic_load(&t->acked[k]);
			if (ft_io(t->v, ctx, RAID_OP_FLUSH, 0, 0, NULL)) {
				snprintf(t->err, sizeof(t->err), "FLUSH failed");
				break;
			}
			t->flushes++;
			for (unsigned k = 0; k < 2 && !t->err[0]; k++) {
				uint64_t b = k * FT_REGION, from = upto[k] > (256u << 10) ? upto[k] - (256u << 10) : 0;
				uint64_t bad = ft_check(t->p, b + from, b + upto[k]);

				if (bad)
					snprintf(t->err, sizeof(t->err),
						 "thread %u: FLUSH 0 but volume byte %llu (acknowledged by thread %u) not on its member",
						 t->id, (unsigned long long)(bad - 1), k);
			}
		}
	}
	raid_ioctx_destroy(ctx);
	free(buf);
	return NULL;
}

START_TEST(t17_flush_threads)
{
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct ft th[2];
	pthread_t tid[2];
	_Atomic uint64_t acked[2];

	tp_init(&t, "ft", CONF_RAID5, 3, 16384);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_uint_ge(raid_vol_bytes(v), 2 * FT_REGION);
	atomic_store(&acked[0], 0);
	atomic_store(&acked[1], 0);
	for (unsigned i = 0; i < 2; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].v = v;
		th[i].p = p;
		th[i].id = i;
		th[i].acked = acked;
		ck_assert_int_eq(pthread_create(&tid[i], NULL, ft_main, &th[i]), 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_msg(!th[i].err[0], "%s", th[i].err);
		ck_assert_uint_gt(th[i].flushes, 10);
	}
	ck_assert(raid_sc_check(&p->sc));
	raid_pool_close(p);
	tp_free(&t);
}
END_TEST

/*
 * 18: RAID_IO_MAP reads (io.c "mapped reads") on members in /dev/shm, every
 * shape, a member failed on the redundant ones: every byte of a read is
 * the volume's, either in buf or at a piece's address (and the same
 * through raid_io_hold_copy); pieces are sorted, disjoint, inside the
 * read and really not copied (buf keeps its poison there); only
 * raid0/1/10 lend pieces; the hold is counted in the pool and in the
 * reshape gate until released. On the first shape: the same pool on /tmp
 * (not memory) lends nothing, a read error on the copy lent out falls
 * back to the other copy or fails on raid0, and a member file cut short
 * behind the pool's back makes raid_io_hold_copy fail instead of
 * returning short data.
 */
static int map_read(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, uint64_t len,
		    uint8_t *buf, struct raid_io_hold **hold)
{
	return do_io_hold(v, ctx, RAID_OP_READ, RAID_IO_MAP, off, len, buf, NULL, hold);
}

/* Checks one mapped read of [off, off + len) against @shadow; returns how
 * many pieces it lent. */
static unsigned map_check(struct raid_pool *p, struct raid_vol *v, struct raid_ioctx *ctx,
			  const uint8_t *shadow, uint64_t off, uint64_t len, uint8_t *buf)
{
	struct raid_io_hold *h = NULL;
	const struct raid_io_piece *pc;
	uint64_t at = 0;
	unsigned n;
	uint8_t *tmp = malloc(len);

	memset(buf, 0xa5, len);
	ck_assert_int_eq(map_read(v, ctx, off, len, buf, &h), 0);
	n = raid_io_hold_pieces(h, &pc);
	ck_assert_uint_eq(raid_pool_holds(p), h ? 1 : 0);
	ck_assert_uint_eq(atomic_load(&p->rsh.inflight[0]) + atomic_load(&p->rsh.inflight[1]),
			  h ? 1 : 0);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_ge(pc[i].off, at);
		ck_assert_uint_gt(pc[i].len, 0);
		ck_assert_uint_le(pc[i].off + pc[i].len, len);
		/* the gap before it came through buf */
		ck_assert(memcmp(buf + at, shadow + off + at, pc[i].off - at) == 0);
		ck_assert_msg(memcmp(pc[i].addr, shadow + off + pc[i].off, pc[i].len) == 0,
			      "piece %u at %llu differs", i, (unsigned long long)(off + pc[i].off));
		for (uint64_t b = 0; b < pc[i].len; b++)
			if (buf[pc[i].off + b] != 0xa5)
				ck_abort_msg("piece %u was copied into buf", i);
		ck_assert_int_eq(raid_io_hold_copy(h, i, 0, pc[i].len, tmp), 0);
		ck_assert(memcmp(tmp, shadow + off + pc[i].off, pc[i].len) == 0);
		at = pc[i].off + pc[i].len;
	}
	ck_assert(memcmp(buf + at, shadow + off + at, len - at) == 0);
	ck_assert_int_eq(raid_io_hold_copy(h, n, 0, 512, tmp), -EINVAL);
	raid_io_hold_release(h);
	ck_assert_uint_eq(raid_pool_holds(p), 0);
	ck_assert_uint_eq(atomic_load(&p->rsh.inflight[0]) + atomic_load(&p->rsh.inflight[1]), 0);
	free(tmp);
	return n;
}

static void map_shm_dir(void)
{
	rm_tmpdir();
	snprintf(tmpdir, sizeof(tmpdir), "/dev/shm/rtgt-raid-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

START_TEST(t18_mapped_reads)
{
	bool mirror = shapes[_i].level == CONF_RAID0 || shapes[_i].level == CONF_RAID1 ||
		      shapes[_i].level == CONF_RAID10;
	struct tpool t;
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *shadow, *buf = malloc(1u << 20);
	unsigned lent = 0;

	map_shm_dir();
	srandom(1800 + (unsigned)_i);
	tp_init(&t, "mr", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	shadow = calloc(1, raid_vol_bytes(v));
	scribble(v, ctx, shadow, 40);
	for (unsigned k = 0; k < 40; k++) {
		uint64_t size = raid_vol_bytes(v);
		uint64_t len = k % 2 ? (1u << 20) : 512 * (1 + rnd() % 600);
		uint64_t off = (rnd() % ((size - len) / 512)) * 512;
		unsigned n = map_check(p, v, ctx, shadow, off, len, buf);

		if (mirror)
			ck_assert_uint_ge(n, 1);
		else
			ck_assert_uint_eq(n, 0);
		lent += n;
		if (k == 20 && shapes[_i].level != CONF_RAID0) {
			/* degraded: the survivors lend, reconstructions never */
			ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
		}
	}
	ck_assert_uint_eq(lent > 0, mirror);
	if (_i == 0) {
		struct raid_io_hold *h = NULL;
		const struct raid_io_piece *pc;
		struct raid_loc loc;
		struct raid_member *m;

		/* a read error on a lent copy: raid0 fails the read */
		raid_geom_map(&p->g, 0, &loc);
		m = p->m[loc.dev[0]];
		raid_fault_read_error(&m->fault, loc.moff[0], 512);
		ck_assert_int_eq(map_read(v, ctx, 0, 65536, buf, &h), -EIO);
		ck_assert_ptr_null(h);
		ck_assert_uint_eq(raid_pool_holds(p), 0);
		raid_fault_clear(&m->fault);
		/* the member file cut short while a piece is lent out */
		ck_assert_int_eq(map_read(v, ctx, 0, 65536, buf, &h), 0);
		ck_assert_uint_ge(raid_io_hold_pieces(h, &pc), 1);
		ck_assert_int_eq(truncate(t.paths[loc.dev[0]], RAID_DATA_OFF), 0);
		ck_assert_int_eq(raid_io_hold_copy(h, 0, 0, pc[0].len, buf), -EIO);
		raid_io_hold_release(h);
	}
	raid_pool_close(p);
	tp_free(&t);
	free(shadow);
	if (_i == 0) {
		/* the same shape on a disk file system: nothing is lent */
		rm_tmpdir();
		setup();
		tp_init(&t, "mr", shapes[_i].level, shapes[_i].n, shapes[_i].chunk);
		ck_assert_int_eq(raid_pool_open(&t.cp, &p), 0);
		ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
		shadow = calloc(1, raid_vol_bytes(v));
		scribble(v, ctx, shadow, 10);
		ck_assert_uint_eq(map_check(p, v, ctx, shadow, 0, 1u << 20, buf), 0);
		raid_pool_close(p);
		tp_free(&t);
		free(shadow);
	}
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

int main(void)
{
	const int nshapes = (int)(sizeof(shapes) / sizeof(shapes[0]));
	const struct ck_case cases[] = {
		CK_CASE("01_roundtrip", t01_roundtrip, .loop_end = nshapes, .timeout = 60),
		CK_CASE("02_single_failures", t02_single_failures, .loop_end = nshapes - 1,
			.timeout = 120),
		CK_CASE("03_raid6_pairs", t03_raid6_pairs, .loop_end = 3, .timeout = 120),
		CK_CASE("04_beyond_redundancy", t04_beyond_redundancy),
		CK_CASE("05_persistence", t05_persistence),
		CK_CASE("06_foreign_and_stale", t06_foreign_and_stale),
		CK_CASE("07_compare_write_flush_fua", t07_compare_write_flush_fua, .loop_end = nshapes),
		CK_CASE("08_direct_io", t08_direct_io, .timeout = 60),
		CK_CASE("09_io_costs", t09_io_costs, .loop_end = 2, .timeout = 60),
		CK_CASE("10_threads", t10_threads, .loop_end = nshapes, .timeout = 60),
		CK_CASE("11_read_error_repair", t11_read_error_repair, .loop_end = nshapes, .timeout = 60),
		CK_CASE("12_mirror_read_balance", t12_mirror_read_balance, .timeout = 60),
		CK_CASE("13_flush_waits_for_writeouts", t13_flush_waits_for_writeouts, .loop_end = 2,
			.timeout = 60),
		CK_CASE("14_failed_writeout_kept", t14_failed_writeout_kept, .timeout = 60),
		CK_CASE("15_unsynced_mirror_reads", t15_unsynced_mirror_reads, .loop_end = 2,
			.timeout = 60),
		CK_CASE("16_write_submit_failure", t16_write_submit_failure, .loop_end = 2,
			.timeout = 60),
		CK_CASE("17_flush_threads", t17_flush_threads, .timeout = 120),
		CK_CASE("18_mapped_reads", t18_mapped_reads, .loop_end = nshapes, .timeout = 60),
	};

	return ck_main(&(struct ck_suite_def){ "raid_io", CK_CASES(cases),
		.setup = setup, .teardown = teardown });
}
