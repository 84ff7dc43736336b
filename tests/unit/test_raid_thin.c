/*
 * tests/unit/test_raid_thin.c - raid/thin.c: thin volumes of RAID pools.
 * Members start out holding random bytes (reused disks).
 *
 * 01 a new thin volume reads zeroes everywhere, says it is thin (extent
 *    granularity, discards zero), every range unmapped; the pool's thin
 *    space is untouched.
 * 02 writes across extent boundaries read back, the rest of each extent
 *    they allocated reads zeroes (never the members' old bytes); map
 *    status: mapped where written, unmapped between, runs cut at extents.
 * 03 discard: whole extents are given back (usage falls), the parts of
 *    extents at the range's ends are zeroed in place; everything reads as
 *    expected, a rewrite allocates again; after a close and reopen the same
 *    contents, the same map, the same usage; the invariants hold.
 * 04 over-provisioned: a thin volume larger than the pool fills it; the
 *    write that finds no space fails with -ENOSPC and changes nothing,
 *    data written before reads back, a discard makes room for it again;
 *    the soft threshold (50%) counts one crossing per rise, none per
 *    write above it, another after falling below and rising again; one
 *    thin_threshold event per rise, one thin_full event.
 * 05 thick and thin volumes side by side: a thick volume created while
 *    thin data is spread over the pool goes around it, a grow of a thick
 *    volume into thin data is refused; every volume keeps its own bytes,
 *    also after a reopen. Provisioning cannot change: thick on disk opened
 *    as thin (and the other way) is refused; a thin volume never shrinks.
 * 06 two threads write different blocks of the same unallocated extents
 *    at once, and discard and rewrite them in turns: every block reads
 *    back what its thread wrote last, the invariants hold.
 * 07 COMPARE_WRITE on unallocated space crossing an extent boundary:
 *    compared against zeroes, written, then a miscompare at the right
 *    offset changes nothing; one within a mapped extent.
 * 08 a map block with both copies broken refuses the volume's open
 *    (-EUCLEAN); with one copy broken the other serves.
 * 09 SIGKILL at 3 random points of a stream of writes and discards (a
 *    child process; each acknowledged operation reported through a pipe):
 *    after each restart every block holds what the last acknowledged
 *    operation left (the one in flight: each sector before or after, then
 *    done again), the map is consistent, usage equals the extents mapped.
 * 10 growing a thin volume while another thread writes and reads it: no
 *    request fails, the old data stays, the new part reads zeroes and
 *    takes writes; durable (a reopen configured smaller serves the grown
 *    size), grown at open when the configuration asks for more, refused
 *    (-ENOSPC, size unchanged) past what its map region holds.
 * 11 raid0, raid1, raid10 and raid6: a thin volume reads zeroes, takes
 *    writes across an extent boundary, frees a whole extent, and reads the
 *    same after a reopen.
 * 12 thick volumes created one after another while a thread allocates thin
 *    extents: every thick and thin byte reads back (a new region and a new
 *    extent never share space).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "raid/backend.h"
#include "raid/ioctx.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

#define MB (1ull << 20)
#define MEMBER (16ull * MB)
#define NM 4u

static char dir[64];
static char *members[NM];

static void garbage(const char *path)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	uint8_t *b = malloc(MB);
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)path[strlen(path) - 5];

	ck_assert_int_ge(fd, 0);
	for (uint64_t o = 0; o < MEMBER; o += MB) {
		for (size_t i = 0; i < MB; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(b + i, &x, 8);
		}
		ck_assert_int_eq(pwrite(fd, b, MB, (off_t)o), (ssize_t)MB);
	}
	free(b);
	close(fd);
}

static void setup(void)
{
	rf_members_setup(dir, sizeof(dir), "rtgt-thin", members, NM);
	for (unsigned i = 0; i < NM; i++)
		garbage(members[i]);
}

static void teardown(void)
{
	rf_members_teardown(dir, members, NM);
}

static unsigned thr = 0;

static struct raid_pool *open_pool(enum conf_level lvl)
{
	struct conf_pool cp;
	struct raid_pool *p = NULL;

	rf_conf_pool(&cp, "tp", lvl, 64 << 10, members,
		     lvl == CONF_RAID1 ? 2 : lvl == CONF_RAID6 || lvl == CONF_RAID10 ? 4 : 3, 0);
	cp.thin_threshold = thr;
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	return p;
}

static int try_vol(struct raid_pool *p, const char *name, uint64_t bytes, bool thin,
		   struct raid_vol **v)
{
	struct conf_size sz = { .bytes = bytes };

	return raid_vol_open_ex(p, name, &sz, thin ? RAID_VOL_THIN : 0, v);
}

static struct raid_vol *vol(struct raid_pool *p, const char *name, uint64_t bytes, bool thin)
{
	struct raid_vol *v = NULL;

	ck_assert_int_eq(try_vol(p, name, bytes, thin, &v), 0);
	return v;
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 9) + 1);
}

static bool is_zero(const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

static void wr(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *w = malloc(len);

	fill(w, len, seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, off, len, w), 0);
	free(w);
}

/* [off, off+len) holds pattern @seed (0: zeroes) */
static void rd(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *w = malloc(len), *r = malloc(len);

	if (seed)
		fill(w, len, seed);
	else
		memset(w, 0, len);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, len, r), 0);
	ck_assert_msg(!memcmp(w, r, len), "bytes at %llu (+%zu) are not pattern %u",
		      (unsigned long long)off, len, seed);
	free(w);
	free(r);
}

static int discard(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, uint64_t len)
{
	return rf_io(v, ctx, RAID_OP_DISCARD, off, len, NULL);
}

static void ms_cb(struct raid_io *io)
{
	*(bool *)io->arg = true;
}

/* RAID_OP_MAP_STATUS: 1 unmapped, 0 mapped; *@map_len the run */
static int mapstat(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, uint64_t len,
		   uint64_t *map_len)
{
	bool fin = false;
	struct raid_io q = { .op = RAID_OP_MAP_STATUS, .off = off, .len = len, .cb = ms_cb,
			     .arg = &fin };

	ck_assert_int_eq(raid_vol_submit(v, ctx, &q), 0);
	while (!fin)
		raid_ioctx_wait(ctx, 1000);
	ck_assert_int_eq(q.result, 0);
	*map_len = q.map_len;
	return q.unmapped;
}

static uint64_t used(struct raid_pool *p)
{
	uint64_t d, c;

	raid_thin_usage(p, &d, &c);
	return d;
}

START_TEST(t01_new_reads_zeroes)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *v = vol(p, "t", 24 * MB, true);
	struct raid_vol_prov pr;
	uint64_t ml;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_vol_provisioning(v, &pr);
	ck_assert(pr.thin);
	ck_assert(pr.discard_zeroes);
	ck_assert_uint_eq(pr.gran, MB);
	ck_assert_uint_ge(pr.discard_max, pr.gran);
	ck_assert_uint_eq(raid_vol_bytes(v), 24 * MB);
	for (uint64_t o = 0; o < 24 * MB; o += 4 * MB)
		rd(v, ctx, o, 4 * MB, 0);
	ck_assert_int_eq(mapstat(v, ctx, 0, 24 * MB, &ml), 1);
	ck_assert_uint_eq(ml, 24 * MB);
	ck_assert_uint_eq(used(p), 0);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

START_TEST(t02_write_allocates)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *v = vol(p, "t", 24 * MB, true);
	uint64_t ml;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	/* 2 MiB - 8K .. 2 MiB + 8K: extents 1 and 2 */
	wr(v, ctx, 2 * MB - 8192, 16384, 3);
	wr(v, ctx, 10 * MB + 4096, 4096, 4);
	rd(v, ctx, 2 * MB - 8192, 16384, 3);
	rd(v, ctx, 10 * MB + 4096, 4096, 4);
	rd(v, ctx, 1 * MB, MB - 8192, 0);
	rd(v, ctx, 2 * MB + 8192, MB - 8192, 0);
	rd(v, ctx, 10 * MB, 4096, 0);
	rd(v, ctx, 10 * MB + 8192, MB - 8192, 0);
	ck_assert_uint_eq(used(p), 3 * MB);
	ck_assert_int_eq(mapstat(v, ctx, 0, 24 * MB, &ml), 1);
	ck_assert_uint_eq(ml, 1 * MB);
	ck_assert_int_eq(mapstat(v, ctx, 1 * MB + 512, 24 * MB - 2 * MB, &ml), 0);
	ck_assert_uint_eq(ml, 3 * MB - (1 * MB + 512));
	ck_assert_int_eq(mapstat(v, ctx, 3 * MB, 2 * MB, &ml), 1);
	ck_assert_uint_eq(ml, 2 * MB);
	ck_assert_int_eq(mapstat(v, ctx, 10 * MB, 4096, &ml), 0);
	ck_assert_uint_eq(ml, 4096);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

START_TEST(t03_discard_and_reopen)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *v = vol(p, "t", 24 * MB, true);
	uint64_t ml;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	for (unsigned i = 0; i < 8; i++)
		wr(v, ctx, i * MB, MB, 10 + i);
	ck_assert_uint_eq(used(p), 8 * MB);
	/* 1.5 MiB .. 5.5 MiB: extents 2, 3, 4 freed, halves of 1 and 5 zeroed */
	ck_assert_int_eq(discard(v, ctx, MB + MB / 2, 4 * MB), 0);
	ck_assert_uint_eq(used(p), 5 * MB);
	rd(v, ctx, 0, MB, 10);
	{
		uint8_t *w = malloc(MB), *r = malloc(MB);

		fill(w, MB, 11);
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, MB, MB, r), 0);
		ck_assert(!memcmp(w, r, MB / 2));
		ck_assert(is_zero(r + MB / 2, MB / 2));
		fill(w, MB, 15);
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 5 * MB, MB, r), 0);
		ck_assert(is_zero(r, MB / 2));
		ck_assert(!memcmp(w + MB / 2, r + MB / 2, MB / 2));
		free(w);
		free(r);
	}
	rd(v, ctx, 2 * MB, 3 * MB, 0);
	ck_assert_int_eq(mapstat(v, ctx, 2 * MB, 8 * MB, &ml), 1);
	ck_assert_uint_eq(ml, 3 * MB);
	/* discarding unallocated space is a no-op; rewrite allocates */
	ck_assert_int_eq(discard(v, ctx, 12 * MB, 4 * MB), 0);
	wr(v, ctx, 3 * MB + 4096, 4096, 30);
	ck_assert_uint_eq(used(p), 6 * MB);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);

	p = open_pool(CONF_RAID5);
	v = vol(p, "t", 24 * MB, true);
	ck_assert_uint_eq(used(p), 6 * MB);
	rd(v, ctx, 0, MB, 10);
	rd(v, ctx, 3 * MB, 4096, 0);
	rd(v, ctx, 3 * MB + 4096, 4096, 30);
	rd(v, ctx, 3 * MB + 8192, MB - 8192, 0);
	rd(v, ctx, 2 * MB, MB, 0);
	rd(v, ctx, 4 * MB, MB, 0);
	rd(v, ctx, 6 * MB, MB, 16);
	rd(v, ctx, 7 * MB, MB, 17);
	ck_assert_int_eq(mapstat(v, ctx, 4 * MB, MB, &ml), 1);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

static unsigned ev_thr, ev_full;

static void ev_count(void *arg, const struct raid_event *ev)
{
	(void)arg;
	if (ev->kind == RAID_EV_THIN_THRESHOLD)
		ev_thr++;
	if (ev->kind == RAID_EV_THIN_FULL)
		ev_full++;
}

START_TEST(t04_pool_full)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p;
	struct raid_vol *v;
	uint64_t cap, d, n = 0, e0;
	uint8_t *w = malloc(MB), *r = malloc(MB);

	thr = 50;
	raid_set_event_fn(ev_count, NULL);
	p = open_pool(CONF_RAID5);
	v = vol(p, "big", 256 * MB, true);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_thin_usage(p, &d, &cap);
	ck_assert_uint_lt(cap, 32 * MB);
	ck_assert_uint_eq(raid_vol_thin_threshold_events(v), 0);
	for (;; n++) {
		int rc;

		fill(w, MB, 40 + (unsigned)n);
		rc = rf_io(v, ctx, RAID_OP_WRITE, n * MB, MB, w);
		if (rc) {
			ck_assert_int_eq(rc, -ENOSPC);
			break;
		}
		ck_assert_uint_eq(raid_vol_thin_threshold_events(v), (n + 1) * MB * 100 >= cap * 50);
	}
	ck_assert_uint_eq(n * MB, cap);
	ck_assert_uint_eq(used(p), cap);
	/* the refused write changed nothing */
	rd(v, ctx, n * MB, MB, 0);
	for (uint64_t i = 0; i < n; i++)
		rd(v, ctx, i * MB, MB, 40 + (unsigned)i);
	/* writes into allocated space still work when full */
	wr(v, ctx, 0, 4096, 90);
	rd(v, ctx, 0, 4096, 90);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 200 * MB, 4096, w), -ENOSPC);
	e0 = raid_vol_thin_threshold_events(v);
	ck_assert_uint_eq(e0, 1);
	/* one event each, however many writes found no space */
	ck_assert_uint_eq(ev_thr, 1);
	ck_assert_uint_eq(ev_full, 1);
	/* below the threshold and over it again: one more */
	ck_assert_int_eq(discard(v, ctx, 0, n * MB), 0);
	ck_assert_uint_eq(used(p), 0);
	for (uint64_t i = 0; i < n; i++)
		wr(v, ctx, (100 + i) * MB, 4096, 60);
	ck_assert_uint_eq(raid_vol_thin_threshold_events(v), 2);
	ck_assert_uint_eq(ev_thr, 2);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_set_event_fn(NULL, NULL);
	raid_ioctx_destroy(ctx);
	free(w);
	free(r);
	thr = 0;
}
END_TEST

START_TEST(t05_thick_beside_thin)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *t = vol(p, "t", 256 * MB, true), *k, *x;
	struct conf_size more = { .bytes = 8 * MB };
	uint64_t d, cap;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	/* thin data over the first 12 MiB of the pool (or so) */
	for (unsigned i = 0; i < 12; i++)
		wr(t, ctx, i * 4 * MB, MB, 70 + i);
	k = vol(p, "k", 4 * MB, false);
	wr(k, ctx, 0, 4 * MB, 90);
	for (unsigned i = 0; i < 12; i++)
		rd(t, ctx, i * 4 * MB, MB, 70 + i);
	rd(k, ctx, 0, 4 * MB, 90);
	/* and thin data after the thick volume: its grow is refused */
	raid_thin_usage(p, &d, &cap);
	for (unsigned i = 12; d < cap; i++) {
		if (rf_io(t, ctx, RAID_OP_WRITE, (uint64_t)i * 4 * MB, 4096,
			  (uint8_t[4096]){ 1 }))
			break;
		raid_thin_usage(p, &d, &cap);
	}
	ck_assert_int_eq(raid_vol_resize(k, &more), -ENOSPC);
	ck_assert_uint_eq(raid_vol_bytes(k), 4 * MB);
	ck_assert(raid_thin_check(t));
	raid_pool_close(p);

	p = open_pool(CONF_RAID5);
	ck_assert_int_eq(try_vol(p, "k", 4 * MB, true, &x), -EINVAL);
	ck_assert_int_eq(try_vol(p, "t", 256 * MB, false, &x), -EINVAL);
	t = vol(p, "t", 256 * MB, true);
	k = vol(p, "k", 4 * MB, false);
	ck_assert_int_eq(raid_vol_resize(t, &more), -EINVAL);   /* smaller */
	for (unsigned i = 0; i < 12; i++)
		rd(t, ctx, i * 4 * MB, MB, 70 + i);
	rd(k, ctx, 0, 4 * MB, 90);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

struct racer {
	struct raid_vol *v;
	unsigned id;
	unsigned long errors, wrong;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct raid_ioctx *ctx;
	uint8_t w[8192], b[8192];

	if (raid_ioctx_create(&ctx))
		return NULL;
	for (unsigned round = 0; round < 60; round++) {
		for (unsigned e = 0; e < 4; e++) {
			/* thread 0 the first 8K of every 16K, thread 1 the second */
			uint64_t off = e * MB + (round % 32) * 16384 + r->id * 8192;

			fill(w, sizeof(w), round * 8 + e * 2 + r->id + 1);
			if (rf_io(r->v, ctx, RAID_OP_WRITE, off, sizeof(w), w) ||
			    rf_io(r->v, ctx, RAID_OP_READ, off, sizeof(b), b)) {
				r->errors++;
				continue;
			}
			/* the other thread may discard the extent meanwhile:
			 * then zeroes, never the other's bytes */
			if (memcmp(w, b, sizeof(w)) && !is_zero(b, sizeof(b)))
				r->wrong++;
		}
		if (round % 10 == 9 && r->id == 1)
			if (discard(r->v, ctx, (round / 10 % 4) * MB, MB))
				r->errors++;
	}
	raid_ioctx_destroy(ctx);
	return NULL;
}

START_TEST(t06_two_threads)
{
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *v = vol(p, "t", 8 * MB, true);
	struct racer r[2] = { { .v = v, .id = 0 }, { .v = v, .id = 1 } };
	pthread_t th[2];

	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_uint_eq(r[i].errors, 0);
		ck_assert_uint_eq(r[i].wrong, 0);
	}
	ck_assert(raid_thin_check(v));
	ck_assert_uint_le(used(p), 4 * MB);
	raid_pool_close(p);
}
END_TEST

START_TEST(t07_compare_write)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct raid_vol *v = vol(p, "t", 8 * MB, true);
	uint8_t b[2 * 16384];
	uint64_t off = 2 * MB - 8192;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	memset(b, 0, 16384);
	fill(b + 16384, 16384, 5);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_COMPARE_WRITE, off, 16384, b), 0);
	rd(v, ctx, off, 16384, 5);
	ck_assert_uint_eq(used(p), 2 * MB);
	/* compare data differs at byte 9000: nothing written */
	fill(b, 16384, 5);
	b[9000] ^= 1;
	fill(b + 16384, 16384, 6);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_COMPARE_WRITE, off, 16384, b), -EILSEQ);
	rd(v, ctx, off, 16384, 5);
	/* within one mapped extent */
	{
		uint8_t cur[4096], cw[8192];

		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 2 * MB, 4096, cur), 0);
		memcpy(cw, cur, 4096);
		fill(cw + 4096, 4096, 8);
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_COMPARE_WRITE, 2 * MB, 4096, cw), 0);
		rd(v, ctx, 2 * MB, 4096, 8);
	}
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* The pool-logical offset of the thin volume @name's map (volume table). */
static uint64_t map_start(struct raid_pool *p, const char *name)
{
	for (unsigned i = 0; i < p->sb.n_vols; i++)
		if (!strcmp(p->sb.vols[i].name, name))
			return p->sb.vols[i].start;
	ck_abort_msg("no volume %s", name);
	return 0;
}

/* Overwrite pool-logical [off, off+len) on raid1 (both members). */
static void poke_raid1(uint64_t off, size_t len)
{
	uint8_t *b = malloc(len);

	memset(b, 0xa5, len);
	for (unsigned i = 0; i < 2; i++) {
		int fd = open(members[i], O_WRONLY);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, b, len, (off_t)(RAID_DATA_OFF + off)), (ssize_t)len);
		close(fd);
	}
	free(b);
}

START_TEST(t08_broken_map)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID1);
	struct raid_vol *v = vol(p, "t", 8 * MB, true), *x;
	uint64_t ms = map_start(p, "t");

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	wr(v, ctx, 0, 4096, 1);     /* block 0 written once: copy 1 newest */
	wr(v, ctx, MB, 4096, 2);    /* and again: copy 0 newest */
	raid_pool_close(p);
	/* the newest copy (0) broken: the older one (extent 0 only) serves */
	poke_raid1(ms, 4096);
	p = open_pool(CONF_RAID1);
	v = vol(p, "t", 8 * MB, true);
	rd(v, ctx, 0, 4096, 1);
	rd(v, ctx, MB, 4096, 0);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	/* both broken: refused */
	poke_raid1(ms + 4096, 4096);
	p = open_pool(CONF_RAID1);
	ck_assert_int_eq(try_vol(p, "t", 8 * MB, true, &x), -EUCLEAN);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* ---- 09: SIGKILL ---- */
#define K_BLOCKS 48u            /* 64 KiB blocks over 3 MiB... of a 12 MiB volume */
#define K_BS     (256u << 10)
#define K_VOL    (12ull * MB)

struct kop {
	uint32_t blk;
	uint32_t seed;           /* 0: discard */
};

static void kid(int fd, unsigned seed)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = NULL;
	struct raid_vol *v = NULL;
	struct conf_pool cp;
	struct conf_size sz = { .bytes = K_VOL };
	uint8_t *w = malloc(K_BS);

	rf_conf_pool(&cp, "tp", CONF_RAID5, 64 << 10, members, 3, 0);
	if (raid_pool_open(&cp, &p) || raid_vol_open_ex(p, "t", &sz, RAID_VOL_THIN, &v) ||
	    raid_ioctx_create(&ctx))
		_exit(3);
	srand(seed);
	for (uint32_t n = 1;; n++) {
		struct kop op = { .blk = (uint32_t)rand() % K_BLOCKS,
				  .seed = rand() % 4 ? n * 7 + seed : 0 };
		int rc;

		/* announce, do, acknowledge */
		if (write(fd, &op, sizeof(op)) != sizeof(op))
			_exit(4);
		if (op.seed) {
			fill(w, K_BS, op.seed);
			rc = rf_io(v, ctx, RAID_OP_WRITE, (uint64_t)op.blk * K_BS, K_BS, w);
		} else {
			rc = rf_io(v, ctx, RAID_OP_DISCARD, (uint64_t)op.blk * K_BS, K_BS, NULL);
		}
		if (rc)
			_exit(5);
		op.blk |= 0x80000000u;
		if (write(fd, &op, sizeof(op)) != sizeof(op))
			_exit(4);
	}
}

START_TEST(t09_sigkill)
{
	uint32_t have[K_BLOCKS], maybe[K_BLOCKS];
	bool pend[K_BLOCKS];
	struct raid_ioctx *ctx;
	uint8_t *r = malloc(K_BS), *w = malloc(K_BS), *w2 = malloc(K_BS);
	unsigned seed, torn = 0;
	unsigned long total = 0;

	ck_assert_int_eq(getrandom(&seed, sizeof(seed), 0), (ssize_t)sizeof(seed));
	memset(have, 0, sizeof(have));
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	for (unsigned round = 0; round < 3; round++) {
		int pfd[2];
		pid_t pid;
		struct kop op;
		unsigned long acked = 0;
		struct timespec ts = { 0, (long)((seed + round * 7919) % 500) * 1000000L };
		struct raid_pool *p;
		struct raid_vol *v;
		uint64_t ml, mapped = 0;

		memset(pend, 0, sizeof(pend));
		ck_assert_int_eq(pipe(pfd), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			kid(pfd[1], seed + round);
		}
		close(pfd[1]);
		/* the random moment counts from the child's fourth acknowledged
		 * operation (opening the pool takes a while on a loaded machine) */
		for (bool killed = false;;) {
			if (read(pfd[0], &op, sizeof(op)) != sizeof(op)) {
				ck_assert_msg(killed, "round %u: the writer stopped by itself", round);
				break;
			}
			if (op.blk & 0x80000000u) {
				op.blk &= ~0x80000000u;
				have[op.blk] = op.seed;
				pend[op.blk] = false;
				acked++;
			} else {
				pend[op.blk] = true;
				maybe[op.blk] = op.seed;
			}
			if (!killed && acked == 4) {
				/* the pipe holds ~64 KiB: the child does not block on
				 * it in this time; what it writes meanwhile is read on */
				nanosleep(&ts, NULL);
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				killed = true;
			}
		}
		close(pfd[0]);
		ck_assert_uint_ge(acked, 4);
		total += acked;

		p = open_pool(CONF_RAID5);
		v = vol(p, "t", K_VOL, true);
		ck_assert(raid_thin_check(v));
		for (unsigned b = 0; b < K_BLOCKS; b++) {
			ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, (uint64_t)b * K_BS, K_BS, r), 0);
			if (have[b])
				fill(w, K_BS, have[b]);
			else
				memset(w, 0, K_BS);
			if (!memcmp(r, w, K_BS))
				continue;
			ck_assert_msg(pend[b], "round %u block %u: not what was acknowledged", round, b);
			/* the operation in flight may have reached some rows and
			 * not others: each sector is the old or the new one */
			if (maybe[b])
				fill(w2, K_BS, maybe[b]);
			else
				memset(w2, 0, K_BS);
			for (unsigned o = 0; o < K_BS; o += 512)
				ck_assert_msg(!memcmp(r + o, w + o, 512) || !memcmp(r + o, w2 + o, 512),
					      "round %u block %u: sector %u neither before nor after",
					      round, b, o / 512);
			/* the next round starts from a whole block: the
			 * operation done again */
			if (memcmp(r, w2, K_BS)) {
				torn++;
				ck_assert_int_eq(maybe[b] ? rf_io(v, ctx, RAID_OP_WRITE, (uint64_t)b * K_BS,
								  K_BS, w2)
						 : discard(v, ctx, (uint64_t)b * K_BS, K_BS), 0);
			}
			have[b] = maybe[b];
		}
		for (uint64_t o = 0; o < K_VOL; o += ml) {
			if (!mapstat(v, ctx, o, K_VOL - o, &ml))
				mapped += ml;
		}
		ck_assert_uint_eq(mapped, used(p));
		raid_pool_close(p);
	}
	printf("09_sigkill: seed %u, %lu operations acknowledged, %u in flight found half done\n",
	       seed, total, torn);
	raid_ioctx_destroy(ctx);
	free(r);
	free(w);
	free(w2);
}
END_TEST

START_TEST(t10_grow)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct rf_loader l = { .v = vol(p, "t", 8 * MB, true), .span = 8 * MB };
	struct conf_size huge = { .bytes = 1ull << 40 };
	struct raid_vol *v;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	rf_loader_start(&l);
	for (unsigned i = 1; i <= 6; i++) {
		struct conf_size sz = { .bytes = (8 + 4 * i) * MB };

		usleep(20000);
		ck_assert_int_eq(raid_vol_resize(l.v, &sz), 0);
		ck_assert_uint_eq(raid_vol_bytes(l.v), (8 + 4 * i) * MB);
		rd(l.v, ctx, (4 + 4 * i) * MB, 4 * MB, 0);
		wr(l.v, ctx, (4 + 4 * i) * MB + 4096, 8192, 100 + i);
	}
	usleep(20000);
	rf_loader_stop(&l);
	ck_assert_uint_gt(l.rounds, 6);
	ck_assert_uint_eq(l.errors, 0);
	ck_assert_uint_eq(l.wrong, 0);
	ck_assert_int_eq(raid_vol_resize(l.v, &huge), -ENOSPC);
	ck_assert_uint_eq(raid_vol_bytes(l.v), 32 * MB);
	ck_assert(raid_thin_check(l.v));
	raid_pool_close(p);

	p = open_pool(CONF_RAID5);
	v = vol(p, "t", 8 * MB, true);          /* smaller in the file: kept */
	ck_assert_uint_eq(raid_vol_bytes(v), 32 * MB);
	for (unsigned i = 1; i <= 6; i++)
		rd(v, ctx, (4 + 4 * i) * MB + 4096, 8192, 100 + i);
	raid_pool_close(p);
	p = open_pool(CONF_RAID5);
	v = vol(p, "t", 48 * MB, true);         /* raised in the file */
	ck_assert_uint_eq(raid_vol_bytes(v), 48 * MB);
	rd(v, ctx, 32 * MB, 16 * MB, 0);
	wr(v, ctx, 47 * MB, MB, 7);
	rd(v, ctx, 47 * MB, MB, 7);
	rd(v, ctx, 28 * MB + 4096, 8192, 106);
	ck_assert(raid_thin_check(v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

/* [off, off+4096) holds the second half of an 8 KiB pattern @seed */
static void half(struct raid_vol *v, struct raid_ioctx *ctx, uint64_t off, unsigned seed)
{
	uint8_t w[8192], r[4096];

	fill(w, sizeof(w), seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, off, sizeof(r), r), 0);
	ck_assert_msg(!memcmp(w + 4096, r, sizeof(r)), "bytes at %llu changed",
		      (unsigned long long)off);
}

START_TEST(t11_levels)
{
	static const enum conf_level lv[] = { CONF_RAID0, CONF_RAID1, CONF_RAID10, CONF_RAID6 };
	struct raid_ioctx *ctx;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	for (unsigned l = 0; l < 4; l++) {
		struct raid_pool *p = open_pool(lv[l]);
		struct raid_vol *v = vol(p, "t", 64 * MB, true);
		struct raid_vol_prov pr;
		uint64_t ml;

		raid_vol_provisioning(v, &pr);
		ck_assert(pr.thin);
		ck_assert_uint_eq(pr.gran % (64 << 10), 0);
		rd(v, ctx, 0, 4 * MB, 0);
		wr(v, ctx, pr.gran - 4096, 8192, 20 + l);
		wr(v, ctx, 10 * MB, MB, 30 + l);
		rd(v, ctx, pr.gran - 4096, 8192, 20 + l);
		ck_assert_int_eq(discard(v, ctx, 0, pr.gran), 0);
		rd(v, ctx, 0, pr.gran, 0);
		half(v, ctx, pr.gran, 20 + l);
		ck_assert_int_eq(mapstat(v, ctx, 0, 64 * MB, &ml), 1);
		ck_assert_uint_eq(ml, pr.gran);
		raid_pool_close(p);
		p = open_pool(lv[l]);
		v = vol(p, "t", 64 * MB, true);
		rd(v, ctx, 0, pr.gran, 0);
		half(v, ctx, pr.gran, 20 + l);
		rd(v, ctx, 10 * MB, MB, 30 + l);
		ck_assert(raid_thin_check(v));
		raid_pool_close(p);
		teardown();
		setup();
	}
	raid_ioctx_destroy(ctx);
}
END_TEST

struct filler {
	struct raid_vol *v;
	unsigned long written, errors;
};

/* 64 KiB into every other MiB of the thin volume, each a new extent */
static void *fill_thin(void *arg)
{
	struct filler *f = arg;
	struct raid_ioctx *ctx;
	uint8_t *w = malloc(65536);

	if (!w || raid_ioctx_create(&ctx)) {
		f->errors++;
		free(w);
		return NULL;
	}
	for (unsigned i = 0; i < 10; i++) {
		fill(w, 65536, 200 + i);
		if (rf_io(f->v, ctx, RAID_OP_WRITE, (uint64_t)i * 2 * MB, 65536, w))
			f->errors++;
		else
			f->written++;
	}
	raid_ioctx_destroy(ctx);
	free(w);
	return NULL;
}

START_TEST(t12_thick_created_beside_writes)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID5);
	struct filler f = { .v = vol(p, "t", 64 * MB, true) };
	struct raid_vol *k[8];
	pthread_t th;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, fill_thin, &f), 0);
	for (unsigned i = 0; i < 8; i++) {
		char name[8];

		snprintf(name, sizeof(name), "k%u", i);
		k[i] = vol(p, name, MB, false);
		wr(k[i], ctx, 0, MB, 100 + i);
	}
	pthread_join(th, NULL);
	ck_assert_uint_eq(f.errors, 0);
	for (unsigned i = 0; i < 10; i++)
		rd(f.v, ctx, (uint64_t)i * 2 * MB, 65536, 200 + i);
	for (unsigned i = 0; i < 8; i++)
		rd(k[i], ctx, 0, MB, 100 + i);
	ck_assert(raid_thin_check(f.v));
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_new_reads_zeroes", t01_new_reads_zeroes),
		CK_CASE("02_write_allocates", t02_write_allocates),
		CK_CASE("03_discard_and_reopen", t03_discard_and_reopen),
		CK_CASE("04_pool_full", t04_pool_full),
		CK_CASE("05_thick_beside_thin", t05_thick_beside_thin),
		CK_CASE("06_two_threads", t06_two_threads),
		CK_CASE("07_compare_write", t07_compare_write),
		CK_CASE("08_broken_map", t08_broken_map),
		CK_CASE("09_sigkill", t09_sigkill),
		CK_CASE("10_grow", t10_grow),
		CK_CASE("11_levels", t11_levels),
		CK_CASE("12_thick_created_beside_writes", t12_thick_created_beside_writes),
	};

	return ck_main(&(struct ck_suite_def){ "raid_thin", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 120 });
}
