/*
 * tests/unit/test_raid_reshape.c - raid/reshape.c: growing a pool by a
 * member and raid1 -> raid5, online. Every member, the new one included,
 * starts out holding random bytes (reused disks); the pools are synced
 * before they grow.
 *
 * 01 raid5 4 -> 5 while a thread writes and reads the start of the volume:
 *    no request fails or reads wrong, the rest of the volume keeps its
 *    pattern, the usable bytes grow by a third, status shows the reshape
 *    while it runs; a volume in the new space takes writes; after a reopen
 *    (5 members) the same; then each member in turn lost: every block
 *    still right.
 * 02 raid1 of 2 -> raid5 of 3, the same checks (usable doubles).
 * 03 raid0 2 -> 3, the same but for the member loss (no redundancy).
 * 04 refused, nothing changed: a raid10 pool, raid5 -> raid1, an unknown
 *    level, a file already in the pool, a member too small, a degraded
 *    pool; the pool then opens with 4 members, not with 5.
 * 05 raid5 4 -> 5, SIGKILL at 3 random points of the reshape (a child
 *    process writes random blocks meanwhile and reports each before and
 *    after it is acknowledged; the first kill while member writes are
 *    slowed, inside the first windows, whose copy on the new member a
 *    restart puts back): after each restart the reshape resumes;
 *    at the end every block holds its last acknowledged write (the one
 *    in flight: old or new), also with any one member lost.
 * 06 raid1 -> raid5, the same.
 * 07 raid5 3 -> 4 with a hot spare, which moves out of the new raid disk's
 *    slot and stays a spare; after the reshape a member fails, the spare
 *    rebuilds it in the new layout: every block right, also after a
 *    reopen with the new configuration.
 * 08 raid5 3 -> raid6 4 (Q on the new member, nothing moves) as 01; then
 *    each member lost, and pairs of members: every block right.
 * 09 raid5 3 -> raid6 4 with SIGKILL as 05.
 * 10 raid10 4 -> 6 (a mirror pair) as 01 (usable x1.5).
 * 11 raid10 4 -> 6 with SIGKILL as 05.
 * 12 raid10 4 -> 6 where the second new member has no superblock (a crash
 *    between the two new members' superblock writes, before anything
 *    moved): it is taken as the new raid disk, the reshape ends, every
 *    block right.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "raid/fault.h"
#include "raid/member.h"
#include "raid/raid.h"
#include "raid/raid_int.h"
#include "raid/sb.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

#define MB (1ull << 20)
#define MEMBER (16ull * MB + MB)   /* 16 MiB of data after the 1 MiB header */
#define NM 6u
#define BS (64u << 10)
#define CHUNK (64u << 10)

static char dir[64];
static char *members[NM];
static char *saved[NM];

static void garbage(const char *path, unsigned seed)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	uint8_t *b = malloc(MB);
	uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;

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

static void copy_file(const char *from, const char *to)
{
	int a = open(from, O_RDONLY), b = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	uint8_t *buf = malloc(MB);
	ssize_t n;

	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	while ((n = read(a, buf, MB)) > 0)
		ck_assert_int_eq(write(b, buf, (size_t)n), n);
	free(buf);
	close(a);
	close(b);
}

static void setup(void)
{
	rf_members_setup(dir, sizeof(dir), "rtgt-reshape", members, NM);
	for (unsigned i = 0; i < NM; i++) {
		garbage(members[i], i + 1);
		saved[i] = malloc(160);
		snprintf(saved[i], 160, "%s.saved", members[i]);
	}
}

static void teardown(void)
{
	rf_paths_drop(saved, NM);
	rf_members_teardown(dir, members, NM);
}

static struct raid_pool *try_open(enum conf_level lvl, unsigned n, unsigned mbps, int *rc)
{
	struct conf_pool cp;
	struct raid_pool *p = NULL;

	rf_conf_pool(&cp, "rp", lvl, CHUNK, members, n, 0);
	cp.rebuild_mbps = mbps;
	*rc = raid_pool_open(&cp, &p);
	return p;
}

static struct raid_pool *open_pool(enum conf_level lvl, unsigned n, unsigned mbps)
{
	int rc;
	struct raid_pool *p = try_open(lvl, n, mbps, &rc);

	ck_assert_int_eq(rc, 0);
	return p;
}

static struct raid_vol *vol(struct raid_pool *p, const char *name, uint64_t bytes)
{
	struct raid_vol *v = NULL;
	struct conf_size sz = { .bytes = bytes };

	ck_assert_int_eq(raid_vol_open(p, name, &sz, &v), 0);
	return v;
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 4) {
		uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + 1;

		memcpy(b + i, &x, 4);
	}
}

static void wait_synced(struct raid_pool *p)
{
	struct raid_pool_info info;

	for (int i = 0; i < 3000; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		/* the initial sync over the old bytes, and its end (the
		 * resync state and the regions it left) */
		if (!info.syncing && atomic_load(&p->scrub_state) != 3 &&
		    (!p->bm.region || !atomic_load(&p->bm.n_unsynced)))
			return;
		usleep(10000);
	}
	ck_abort_msg("the pool did not sync");
}

/* Wait for the reshape to end; how many times it was seen running. */
static unsigned wait_reshaped(struct raid_pool *p)
{
	struct raid_pool_info info;
	unsigned seen = 0;

	for (int i = 0; i < 6000; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!info.reshaping)
			return seen;
		seen++;
		ck_assert_int_eq(info.reshape_error, 0);
		ck_assert(info.reshape_progress >= 0 && info.reshape_progress <= 1);
		usleep(10000);
	}
	ck_abort_msg("the reshape did not end");
	return seen;
}

/* Every block of @v from @from on holds pattern seed[b] (b: block index). */
static void verify(struct raid_vol *v, struct raid_ioctx *ctx, const unsigned *seed, unsigned nblk,
		   unsigned from, const char *what)
{
	uint8_t *r = malloc(BS), *w = malloc(BS);

	for (unsigned b = from; b < nblk; b++) {
		ck_assert_msg(rf_io(v, ctx, RAID_OP_READ, (uint64_t)b * BS, BS, r) == 0,
			      "%s: block %u unreadable", what, b);
		fill(w, BS, seed[b]);
		ck_assert_msg(!memcmp(r, w, BS), "%s: block %u is not pattern %u", what, b, seed[b]);
	}
	free(r);
	free(w);
}

static void write_all(struct raid_vol *v, struct raid_ioctx *ctx, unsigned *seed, unsigned nblk,
		      unsigned base)
{
	uint8_t *w = malloc(BS);

	for (unsigned b = 0; b < nblk; b++) {
		seed[b] = base + b;
		fill(w, BS, seed[b]);
		ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, (uint64_t)b * BS, BS, w), 0);
	}
	free(w);
}

/* raid_pool_grow with the @k members from members[@first] on */
static int grow(struct raid_pool *p, unsigned first, unsigned k, const char *level, char *err,
		size_t len)
{
	const char *paths[2] = { members[first], k > 1 ? members[first + 1] : NULL };

	return raid_pool_grow(p, paths, k, level, err, len);
}

/* Each member of the grown pool lost in turn (from saved copies): every
 * block still reads right. */
static void verify_each_lost(enum conf_level lvl, unsigned n, const unsigned *seed, unsigned nblk,
			     uint64_t vbytes)
{
	struct raid_ioctx *ctx;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	for (unsigned i = 0; i < n; i++)
		copy_file(members[i], saved[i]);
	for (unsigned k = 0; k < n; k++) {
		struct raid_pool *p;
		struct raid_vol *v;
		char name[12], what[48];

		for (unsigned i = 0; i < n; i++)
			copy_file(saved[i], members[i]);
		p = open_pool(lvl, n, 0);
		v = vol(p, "v", vbytes);
		snprintf(name, sizeof(name), "%u", k);
		ck_assert_int_eq(raid_pool_fail(p, name), 0);
		snprintf(what, sizeof(what), "member %u lost", k);
		verify(v, ctx, seed, nblk, 0, what);
		raid_pool_close(p);
	}
	for (unsigned k = 0; lvl == CONF_RAID6 && k < n; k++) {
		/* raid6: any two */
		struct raid_pool *p;
		struct raid_vol *v;
		char a[12], b[12], what[48];

		for (unsigned i = 0; i < n; i++)
			copy_file(saved[i], members[i]);
		p = open_pool(lvl, n, 0);
		v = vol(p, "v", vbytes);
		snprintf(a, sizeof(a), "%u", k);
		snprintf(b, sizeof(b), "%u", (k + 1 + k / 2) % n);   /* never k */
		ck_assert_int_eq(raid_pool_fail(p, a), 0);
		ck_assert_int_eq(raid_pool_fail(p, b), 0);
		snprintf(what, sizeof(what), "members %s and %s lost", a, b);
		verify(v, ctx, seed, nblk, 0, what);
		raid_pool_close(p);
	}
	for (unsigned i = 0; i < n; i++)
		copy_file(saved[i], members[i]);
	raid_ioctx_destroy(ctx);
}

/* 01..03: grow @lvl from @n0 to @lvl1 on n0+1 under a loader. */
static void grow_online(enum conf_level lvl0, unsigned n0, unsigned k, enum conf_level lvl1,
			double factor)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(lvl0, n0, 40);
	uint64_t u0 = raid_pool_usable_bytes(p), vbytes = u0 / BS * BS, u1;
	unsigned nblk = (unsigned)(vbytes / BS), *seed = calloc(nblk, sizeof(unsigned));
	struct rf_loader l = { .span = 2 * MB };
	struct raid_vol *v;
	char err[256] = "";
	unsigned seen;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	wait_synced(p);
	l.v = v = vol(p, "v", vbytes);
	write_all(v, ctx, seed, nblk, 1000);
	rf_loader_start(&l);
	usleep(20000);
	ck_assert_msg(grow(p, n0, k, lvl1 != lvl0 ? conf_level_name(lvl1) : NULL, err, sizeof(err)) == 0,
		      "grow: %s", err);
	seen = wait_reshaped(p);
	rf_loader_stop(&l);
	ck_assert_uint_gt(seen, 0);
	ck_assert_uint_gt(l.rounds, 0);
	ck_assert_uint_eq(l.errors, 0);
	ck_assert_uint_eq(l.wrong, 0);
	u1 = raid_pool_usable_bytes(p);
	ck_assert_msg((double)u1 > (double)u0 * factor * 0.98 && (double)u1 < (double)u0 * factor * 1.02,
		      "usable %llu -> %llu", (unsigned long long)u0, (unsigned long long)u1);
	verify(v, ctx, seed, nblk, (unsigned)(l.span / BS), "after the reshape");
	/* the loader's part: write a pattern there too, for what follows */
	write_all(v, ctx, seed, nblk, 5000);
	/* new space (none for raid5 -> raid6) */
	if (u1 >= vbytes + 4 * BS) {
		struct raid_vol *x = vol(p, "x", (u1 - vbytes) / 2 / BS * BS);
		uint8_t *w = malloc(BS), *r = malloc(BS);

		fill(w, BS, 77);
		ck_assert_int_eq(rf_io(x, ctx, RAID_OP_WRITE, raid_vol_bytes(x) - BS, BS, w), 0);
		ck_assert_int_eq(rf_io(x, ctx, RAID_OP_READ, raid_vol_bytes(x) - BS, BS, r), 0);
		ck_assert(!memcmp(w, r, BS));
		free(w);
		free(r);
	}
	raid_pool_close(p);
	p = open_pool(lvl1, n0 + k, 0);
	ck_assert_uint_eq(raid_pool_usable_bytes(p), u1);
	v = vol(p, "v", vbytes);
	verify(v, ctx, seed, nblk, 0, "after a reopen");
	raid_pool_close(p);
	if (lvl1 != CONF_RAID0)
		verify_each_lost(lvl1, n0 + k, seed, nblk, vbytes);
	raid_ioctx_destroy(ctx);
	free(seed);
}

START_TEST(t01_raid5_grow)
{
	grow_online(CONF_RAID5, 4, 1, CONF_RAID5, 4.0 / 3.0);
}
END_TEST

START_TEST(t02_raid1_to_raid5)
{
	grow_online(CONF_RAID1, 2, 1, CONF_RAID5, 2.0);
}
END_TEST

START_TEST(t03_raid0_grow)
{
	grow_online(CONF_RAID0, 2, 1, CONF_RAID0, 1.5);
}
END_TEST

START_TEST(t04_refused)
{
	struct raid_pool *p;
	char err[256];
	int rc;

	/* raid10 grows by a pair, never by one; raid1 is not reshaped */
	p = open_pool(CONF_RAID10, 4, 0);
	wait_synced(p);
	ck_assert_int_eq(grow(p, 4, 1, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "mirror pair"), "%s", err);
	raid_pool_close(p);
	garbage(members[0], 21);
	garbage(members[1], 22);
	p = open_pool(CONF_RAID1, 2, 0);
	wait_synced(p);
	ck_assert_int_eq(grow(p, 4, 1, NULL, err, sizeof(err)), -EOPNOTSUPP);
	raid_pool_close(p);
	unlink(members[0]);
	unlink(members[1]);
	unlink(members[2]);
	unlink(members[3]);
	garbage(members[0], 11);
	garbage(members[1], 12);
	garbage(members[2], 13);
	garbage(members[3], 14);
	p = open_pool(CONF_RAID5, 4, 0);
	wait_synced(p);
	/* raid5 -> raid1, an unknown level, a member of the pool, too small */
	ck_assert_int_eq(grow(p, 4, 1, "raid1", err, sizeof(err)), -EOPNOTSUPP);
	ck_assert_int_eq(grow(p, 4, 1, "raid7", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(grow(p, 2, 1, NULL, err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(grow(p, 4, 2, NULL, err, sizeof(err)), -EINVAL);   /* a pair: raid10 only */
	ck_assert_int_eq(truncate(members[4], 4 * MB), 0);
	ck_assert_int_eq(grow(p, 4, 1, NULL, err, sizeof(err)), -ENOSPC);
	ck_assert_msg(strstr(err, "too small"), "%s", err);
	garbage(members[4], 15);
	/* degraded */
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	ck_assert_int_eq(grow(p, 4, 1, NULL, err, sizeof(err)), -EBUSY);
	raid_pool_close(p);
	/* still 4 members on disk */
	p = try_open(CONF_RAID5, 5, 0, &rc);
	ck_assert_int_ne(rc, 0);
	ck_assert_ptr_null(p);
}
END_TEST

/* ---- 05, 06: SIGKILL ---- */
struct kop {
	uint32_t blk;           /* | 0x80000000: acknowledged */
	uint32_t seed;
};

static void kid(int fd, enum conf_level lvl0, unsigned n0, unsigned k, enum conf_level lvl1,
		bool first, unsigned nblk, uint64_t vbytes, unsigned seed)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = NULL;
	struct conf_pool cp;
	struct conf_size sz = { .bytes = vbytes };
	struct raid_vol *v = NULL;
	uint8_t *w = malloc(BS);
	char err[256];

	rf_conf_pool(&cp, "rp", first ? lvl0 : lvl1, CHUNK, members, first ? n0 : n0 + k, 0);
	cp.rebuild_mbps = 2;
	if (raid_pool_open(&cp, &p) || raid_vol_open(p, "v", &sz, &v) || raid_ioctx_create(&ctx))
		_exit(3);
	/* the first round: slow member writes, so that the kill falls inside
	 * one of the first windows, the ones copied to the new member first */
	if (first)
		raid_fault_latency(&p->m[0]->fault, 0, 150000000ull);
	if (first && grow(p, n0, k, lvl1 != lvl0 ? conf_level_name(lvl1) : NULL, err, sizeof(err)))
		_exit(6);
	/* raid_pool_grow hands the start to the pool's background thread:
	 * the parent kills us after our first write, which must find the new
	 * layout in the superblocks (on a loaded machine the start came
	 * after the kill, and the pool reopened at the old level) */
	while (first && atomic_load(&p->grow_pending))
		usleep(1000);
	if (first && !atomic_load(&p->rsh.active))
		_exit(7);
	srand(seed);
	for (uint32_t n = 1;; n++) {
		struct kop op = { .blk = (uint32_t)rand() % nblk, .seed = seed * 100000u + n };

		if (write(fd, &op, sizeof(op)) != sizeof(op))
			_exit(4);
		fill(w, BS, op.seed);
		if (rf_io(v, ctx, RAID_OP_WRITE, (uint64_t)op.blk * BS, BS, w))
			_exit(5);
		op.blk |= 0x80000000u;
		if (write(fd, &op, sizeof(op)) != sizeof(op))
			_exit(4);
		usleep(2000);
	}
}

static void sigkill_rounds(enum conf_level lvl0, unsigned n0, unsigned k, enum conf_level lvl1)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(lvl0, n0, 0);
	uint64_t vbytes = raid_pool_usable_bytes(p) / BS * BS;
	unsigned nblk = (unsigned)(vbytes / BS);
	unsigned *have = calloc(nblk, sizeof(unsigned)), *maybe = calloc(nblk, sizeof(unsigned));
	bool *pend = calloc(nblk, sizeof(bool));
	struct raid_vol *v;
	uint8_t *r = malloc(BS), *w = malloc(BS);
	unsigned seed, torn = 0;
	unsigned long total = 0;

	ck_assert_int_eq(getrandom(&seed, sizeof(seed), 0), (ssize_t)sizeof(seed));
	seed = seed % 10000 + 1;
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	wait_synced(p);
	v = vol(p, "v", vbytes);
	write_all(v, ctx, have, nblk, 1);
	raid_pool_close(p);
	for (unsigned round = 0; round < 3; round++) {
		int pfd[2];
		pid_t pid;
		struct kop op;
		unsigned long acked = 0;
		/* the first kill early (the windows copied to the new member
		 * first), the others anywhere in the next second */
		long ms = round == 0 ? 20 + (long)(seed % 200)
				     : 100 + (long)((seed * 7919u + round * 337u) % 900);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		struct raid_pool_info info;

		ck_assert_int_eq(pipe(pfd), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			kid(pfd[1], lvl0, n0, k, lvl1, round == 0, nblk, vbytes, seed + round);
		}
		close(pfd[1]);
		memset(pend, 0, nblk * sizeof(bool));
		for (bool killed = false;;) {
			if (read(pfd[0], &op, sizeof(op)) != sizeof(op)) {
				int st = 0;

				if (!killed)
					waitpid(pid, &st, 0);
				ck_assert_msg(killed, "round %u: the child stopped by itself (%d)", round,
					      WEXITSTATUS(st));
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
			if (!killed && acked == 1) {
				nanosleep(&ts, NULL);
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				killed = true;
			}
		}
		close(pfd[0]);
		total += acked;
		/* the reshape resumes where the superblocks say: slowly while
		 * this round is checked, at full speed in the last */
		p = open_pool(lvl1, n0 + k, round < 2 ? 1 : 0);
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		printf("%s: round %u: killed after %ld ms, %s at %.1f%%%s\n", __func__, round, ms,
		       info.reshaping ? "reshape resumes" : "reshape was done",
		       info.reshaping ? info.reshape_progress * 100 : 100.0,
		       info.reshape_restored ? ", a window restored from its copy" : "");
		v = vol(p, "v", vbytes);
		for (unsigned b = 0; b < nblk; b++) {
			ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, (uint64_t)b * BS, BS, r), 0);
			fill(w, BS, have[b]);
			if (!memcmp(r, w, BS))
				continue;
			ck_assert_msg(pend[b], "round %u block %u: not what was acknowledged", round, b);
			fill(w, BS, maybe[b]);
			if (memcmp(r, w, BS)) {
				/* each sector old or new; the next round from a whole block */
				uint8_t *o = malloc(BS);

				fill(o, BS, have[b]);
				for (unsigned s = 0; s < BS; s += 512)
					ck_assert_msg(!memcmp(r + s, w + s, 512) || !memcmp(r + s, o + s, 512),
						      "round %u block %u sector %u: neither old nor new",
						      round, b, s / 512);
				free(o);
				torn++;
				ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, (uint64_t)b * BS, BS, w), 0);
			}
			have[b] = maybe[b];
		}
		if (round < 2) {
			raid_pool_close(p);
			continue;
		}
		wait_reshaped(p);
		/* a crash's dirty regions are resynced once the reshape ended:
		 * until then a lost member could not be made up for there */
		for (int i = 0; i < 3000 && atomic_load(&p->bm.n_unsynced); i++)
			usleep(10000);
		ck_assert_uint_eq(atomic_load(&p->bm.n_unsynced), 0);
		for (unsigned b = 0; b < nblk; b++) {
			ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, (uint64_t)b * BS, BS, r), 0);
			fill(w, BS, have[b]);
			ck_assert_msg(!memcmp(r, w, BS), "after the reshape: block %u", b);
		}
		raid_pool_close(p);
	}
	printf("%s: seed %u, %lu writes acknowledged, %u found half done\n", __func__, seed, total,
	       torn);
	verify_each_lost(lvl1, n0 + k, have, nblk, vbytes);
	raid_ioctx_destroy(ctx);
	free(have);
	free(maybe);
	free(pend);
	free(r);
	free(w);
}

START_TEST(t05_sigkill_raid5)
{
	sigkill_rounds(CONF_RAID5, 4, 1, CONF_RAID5);
}
END_TEST

START_TEST(t06_sigkill_raid1_to_raid5)
{
	sigkill_rounds(CONF_RAID1, 2, 1, CONF_RAID5);
}
END_TEST

START_TEST(t08_raid5_to_raid6)
{
	grow_online(CONF_RAID5, 3, 1, CONF_RAID6, 1.0);
}
END_TEST

START_TEST(t09_sigkill_raid5_to_raid6)
{
	sigkill_rounds(CONF_RAID5, 3, 1, CONF_RAID6);
}
END_TEST

START_TEST(t10_raid10_pair)
{
	grow_online(CONF_RAID10, 4, 2, CONF_RAID10, 1.5);
}
END_TEST

START_TEST(t11_sigkill_raid10_pair)
{
	sigkill_rounds(CONF_RAID10, 4, 2, CONF_RAID10);
}
END_TEST

/* 12: a crash between the superblock writes of the two new members of a
 * raid10 pair grow, made by hand: member 4 carries the reshape's first
 * superblock (raid10 4 -> 6, nothing moved), member 5 none, members 0-3
 * the one before. The blank member is taken as the new raid disk, the
 * reshape runs to its end, every block right. */
START_TEST(t12_pair_half_written)
{
	struct raid_ioctx *ctx;
	struct raid_pool *p = open_pool(CONF_RAID10, 4, 0);
	uint64_t vbytes = raid_pool_usable_bytes(p) / BS * BS;
	unsigned nblk = (unsigned)(vbytes / BS), *seed = calloc(nblk, sizeof(unsigned));
	struct raid_vol *v;
	struct raid_sb sb;
	uint8_t *zero = calloc(1, MB);
	int fd;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	wait_synced(p);
	v = vol(p, "v", vbytes);
	write_all(v, ctx, seed, nblk, 900);
	raid_pool_close(p);
	fd = open(members[0], O_RDONLY);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	close(fd);
	ck_assert_uint_eq(sb.n_slots, 4);
	sb.flags = RAID_SB_RESHAPE;          /* not clean: a crash */
	sb.reshape_level = CONF_RAID10;
	sb.reshape_n = 4;
	sb.reshape_pos = 0;
	sb.n_members = sb.n_slots = 6;
	sb.events++;
	for (unsigned i = 4; i < 6; i++) {
		sb.slots[i].state = RAID_M_ACTIVE;
		sb.slots[i].repl = 0;
		ck_assert_int_eq(getrandom(sb.slots[i].uuid, 16, 0), 16);
	}
	sb.slot = 4;
	memcpy(sb.member_uuid, sb.slots[4].uuid, 16);
	for (unsigned i = 4; i < 6; i++) {
		/* header: no superblock; bitmap area clear (start() writes it) */
		fd = open(members[i], O_WRONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, zero, MB, 0), (ssize_t)MB);
		if (i == 4)
			ck_assert_int_eq(raid_sb_write(fd, &sb), 0);
		close(fd);
	}
	p = open_pool(CONF_RAID10, 6, 0);
	v = vol(p, "v", vbytes);
	wait_reshaped(p);
	ck_assert_uint_eq(raid_pool_usable_bytes(p), 3 * (vbytes / BS * BS) / 2 / CHUNK * CHUNK);
	verify(v, ctx, seed, nblk, 0, "after the half-written pair");
	raid_pool_close(p);
	p = open_pool(CONF_RAID10, 6, 0);
	v = vol(p, "v", vbytes);
	verify(v, ctx, seed, nblk, 0, "after a reopen");
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(zero);
	free(seed);
}
END_TEST

START_TEST(t07_spare_moves)
{
	struct raid_ioctx *ctx;
	struct conf_pool cp;
	struct raid_pool *p = NULL;
	struct raid_pool_info info;
	struct raid_vol *v;
	uint64_t vbytes;
	unsigned nblk, *seed;
	char err[256] = "";
	int i;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	rf_conf_pool(&cp, "rp", CONF_RAID5, CHUNK, members, 3, 0);
	cp.spares = cp.spare_paths = &members[4];
	cp.n_spares = 1;
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	wait_synced(p);
	vbytes = raid_pool_usable_bytes(p) / BS * BS;
	nblk = (unsigned)(vbytes / BS);
	seed = calloc(nblk, sizeof(unsigned));
	v = vol(p, "v", vbytes);
	write_all(v, ctx, seed, nblk, 300);
	ck_assert_msg(grow(p, 3, 1, NULL, err, sizeof(err)) == 0, "%s", err);
	wait_reshaped(p);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.n_members, 5);
	ck_assert_str_eq(info.members[3].state, "active");
	ck_assert_str_eq(info.members[4].state, "spare");
	verify(v, ctx, seed, nblk, 0, "after the reshape");
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	for (i = 0; i < 3000; i++) {
		ck_assert_int_eq(raid_pool_info(p, &info), 0);
		if (!strcmp(info.state, "optimal"))
			break;
		usleep(10000);
	}
	ck_assert_str_eq(info.state, "optimal");
	verify(v, ctx, seed, nblk, 0, "after the rebuild");
	raid_pool_close(p);
	rf_conf_pool(&cp, "rp", CONF_RAID5, CHUNK, members, 4, 0);
	cp.spares = cp.spare_paths = &members[4];
	cp.n_spares = 1;
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	v = vol(p, "v", vbytes);
	verify(v, ctx, seed, nblk, 0, "after a reopen");
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(seed);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_raid5_grow", t01_raid5_grow),
		CK_CASE("02_raid1_to_raid5", t02_raid1_to_raid5),
		CK_CASE("03_raid0_grow", t03_raid0_grow),
		CK_CASE("04_refused", t04_refused),
		CK_CASE("05_sigkill_raid5", t05_sigkill_raid5),
		CK_CASE("06_sigkill_raid1_to_raid5", t06_sigkill_raid1_to_raid5),
		CK_CASE("07_spare_moves", t07_spare_moves),
		CK_CASE("08_raid5_to_raid6", t08_raid5_to_raid6),
		CK_CASE("09_sigkill_raid5_to_raid6", t09_sigkill_raid5_to_raid6),
		CK_CASE("10_raid10_pair", t10_raid10_pair),
		CK_CASE("11_sigkill_raid10_pair", t11_sigkill_raid10_pair),
		CK_CASE("12_pair_half_written", t12_pair_half_written),
	};

	return ck_main(&(struct ck_suite_def){ "raid_reshape", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 240 });
}
