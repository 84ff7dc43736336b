/*
 * tests/unit/test_raid_pool.c - pool assembly and the failure rule
 * (raid/pool.c):
 * 01 raid_lost_beyond() for every level (raid10: a mirror pair both lost)
 * 02 raid10 keeps serving with one member lost in each mirror pair, also
 *    across a close/reopen; losing a whole pair fails it
 * 03 a member of another pool in a member's place refuses the pool (1-1 on
 *    raid1 too); the foreign file is not modified
 * 04 a missing member refuses the pool, create_size does not re-create it;
 *    start_degraded starts without it; once recorded as failed the pool
 *    starts degraded without start_degraded; the old file coming back is
 *    stale and never used
 * 05 a member without a superblock refuses the pool (start_degraded: not
 *    used, not written)
 * 06 a stale member needed beyond redundancy: not started, even with
 *    start_degraded
 * 07 the file of a spare that took a slot in a rebuild goes missing: refused
 *    like a member's (start_degraded: degraded)
 * 08 raid_pool_remove of a spare: the slot goes, the file is left as it was,
 *    a restart with the file still configured warns and leaves it out; member
 *    latency percentiles are reported for members that did I/O
 * 09 raid_pool_remove of a faulty raid disk: its slot shows empty, the
 *    superblocks record it, a restart starts degraded with a warning and a
 *    spare added later rebuilds into the slot
 * 10 raid_pool_remove refuses an active member (-EBUSY) and an unknown one
 *    (-ENOENT); nothing changes
 * 11 bad ranges: adjacent ones merge, a full table merges ranges of one slot
 *    (never forgets a byte), a member is not readable there and the bitmap
 *    reports them unsynced; they survive a restart (superblock)
 * 12 a member smaller than the data area its superblock records (a file
 *    truncated, or data_size damaged with a valid checksum on every member):
 *    refused with the sizes named, start_degraded leaves the short member
 *    out unwritten; a damaged size on all members never starts the pool
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
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
#define MAXM 8

static char tmpdir[64];
static char *paths[MAXM], *bpaths[MAXM];
static struct conf_pool cp, cpb;
static struct conf_size full = { .percent = 100 };
static char logbuf[1 << 16];

static void setup(void)
{
	rf_dir_make(tmpdir, sizeof(tmpdir), "rtgt-pool");
	conf_log_set_level(CONF_LOG_INFO);
}

static void teardown(void)
{
	char p[128];

	rf_paths_drop(paths, MAXM);
	rf_paths_drop(bpaths, MAXM);
	snprintf(p, sizeof(p), "%s/keep.img", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/log", tmpdir);
	unlink(p);
	rmdir(tmpdir);
}

static void mkconf(struct conf_pool *c, char **list, char *name, enum conf_level level,
		   unsigned n)
{
	rf_paths_make(list, n, tmpdir, name);
	rf_conf_pool(c, name, level, 65536, list, n, MEMBER_BYTES);
}

/* raid_pool_open() with its log lines captured in logbuf. */
static int open_logged(const struct conf_pool *c, struct raid_pool **out)
{
	char lp[128];
	int fd, saved, rc;
	ssize_t n;

	snprintf(lp, sizeof(lp), "%s/log", tmpdir);
	fd = open(lp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(2);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	*out = NULL;
	rc = raid_pool_open(c, out);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, logbuf, sizeof(logbuf) - 1, 0);
	logbuf[n > 0 ? n : 0] = '\0';
	close(fd);
	fputs(logbuf, stderr);
	return rc;
}

static void has_line(const char *needle)
{
	ck_assert_msg(strstr(logbuf, needle), "no log line contains \"%s\"; log:\n%s", needle,
		      logbuf);
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static const char *pstate(struct raid_pool *p)
{
	static struct raid_pool_info info;

	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	return info.state;
}

static const char *mstate(struct raid_pool *p, unsigned slot)
{
	static struct raid_pool_info info;

	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_lt(slot, info.n_members);
	return info.members[slot].state;
}

/* Whole files equal? */
static bool same_file(const char *a, const char *b)
{
	static uint8_t ba[1 << 16], bb[1 << 16];
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC);
	bool eq = fa >= 0 && fb >= 0;

	while (eq) {
		ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));

		if (na != nb || na < 0 || memcmp(ba, bb, (size_t)na))
			eq = false;
		if (na <= 0)
			break;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return eq;
}

static void copy_file(const char *from, const char *to)
{
	static uint8_t buf[1 << 16];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n;

	ck_assert_msg(in >= 0 && out >= 0, "copy %s -> %s", from, to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	ck_assert_int_eq(n, 0);
	close(in);
	close(out);
}

/* Creates the pool in cp, writes a pattern over its volume, closes it. */
static void make_pool_with_data(struct conf_pool *c, unsigned seed)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *buf = malloc(1u << 20);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(open_logged(c, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	fill(buf, 1u << 20, seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 0, 1u << 20, buf), 0);
	raid_ioctx_destroy(ctx);
	raid_pool_close(p);
	free(buf);
}

/* The pattern of make_pool_with_data reads back. */
static void check_data(struct raid_pool *p, unsigned seed)
{
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *want = malloc(1u << 20), *got = malloc(1u << 20);

	ck_assert(want && got);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	fill(want, 1u << 20, seed);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_READ, 0, 1u << 20, got), 0);
	ck_assert_msg(!memcmp(want, got, 1u << 20), "data differs");
	raid_ioctx_destroy(ctx);
	free(want);
	free(got);
}

START_TEST(t01_failure_rule)
{
	struct raid_geom g;
	bool lost[RAID_MAX_SLOTS] = { false };
	unsigned pair = 99;

	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID10, 6, 65536, 1u << 20), 0);
	ck_assert(!raid_lost_beyond(&g, lost, NULL));
	lost[1] = lost[2] = lost[4] = true;        /* one of each pair */
	ck_assert(!raid_lost_beyond(&g, lost, &pair));
	lost[5] = true;                            /* pair (4, 5) gone */
	ck_assert(raid_lost_beyond(&g, lost, &pair));
	ck_assert_uint_eq(pair, 4);
	memset(lost, 0, sizeof(lost));
	lost[2] = lost[3] = true;
	ck_assert(raid_lost_beyond(&g, lost, &pair));
	ck_assert_uint_eq(pair, 2);

	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID1, 3, 65536, 1u << 20), 0);
	memset(lost, 0, sizeof(lost));
	lost[0] = lost[2] = true;
	ck_assert(!raid_lost_beyond(&g, lost, NULL));
	lost[1] = true;
	ck_assert(raid_lost_beyond(&g, lost, NULL));

	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID5, 4, 65536, 1u << 20), 0);
	memset(lost, 0, sizeof(lost));
	lost[3] = true;
	ck_assert(!raid_lost_beyond(&g, lost, NULL));
	lost[0] = true;
	ck_assert(raid_lost_beyond(&g, lost, NULL));

	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID6, 5, 65536, 1u << 20), 0);
	memset(lost, 0, sizeof(lost));
	lost[1] = lost[4] = true;
	ck_assert(!raid_lost_beyond(&g, lost, NULL));
	lost[2] = true;
	ck_assert(raid_lost_beyond(&g, lost, NULL));

	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID0, 2, 65536, 1u << 20), 0);
	memset(lost, 0, sizeof(lost));
	ck_assert(!raid_lost_beyond(&g, lost, NULL));
	lost[1] = true;
	ck_assert(raid_lost_beyond(&g, lost, NULL));
}
END_TEST

START_TEST(t02_raid10_one_per_pair)
{
	struct raid_pool *p;
	struct raid_vol *v;
	struct raid_ioctx *ctx;
	uint8_t *buf = malloc(1u << 20);

	ck_assert_ptr_nonnull(buf);
	mkconf(&cp, paths, "t", CONF_RAID10, 4);
	make_pool_with_data(&cp, 1);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	ck_assert_int_eq(raid_pool_fail(p, "2"), 0);
	ck_assert_str_eq(pstate(p), "degraded");
	check_data(p, 1);
	/* writes still land on the surviving copy of each pair */
	ck_assert_int_eq(raid_vol_open(p, "v", &full, &v), 0);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	fill(buf, 1u << 20, 2);
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_WRITE, 0, 1u << 20, buf), 0);
	/* SYNCHRONIZE CACHE and FUA must not report the pool lost either */
	ck_assert_int_eq(rf_io(v, ctx, RAID_OP_FLUSH, 0, 0, buf), 0);
	raid_ioctx_destroy(ctx);
	raid_pool_close(p);

	/* a restart assembles it degraded: both losses were recorded */
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "degraded");
	ck_assert_str_eq(mstate(p, 0), "active");
	ck_assert_str_eq(mstate(p, 3), "active");
	check_data(p, 2);
	/* now pair (0, 1) has no copy left */
	ck_assert_int_eq(raid_pool_fail(p, "0"), 0);
	ck_assert_str_eq(pstate(p), "failed");
	raid_pool_close(p);
	ck_assert_int_ne(open_logged(&cp, &p), 0);
	has_line("mirror pair (slots 0, 1)");
	free(buf);
}
END_TEST

START_TEST(t03_foreign_member)
{
	struct raid_pool *p;
	char keep[128];

	mkconf(&cp, paths, "a", CONF_RAID1, 2);
	mkconf(&cpb, bpaths, "b", CONF_RAID1, 2);
	make_pool_with_data(&cp, 3);
	make_pool_with_data(&cpb, 4);
	copy_file(paths[0], bpaths[0]);              /* a's member in b0's place */
	snprintf(keep, sizeof(keep), "%s/keep.img", tmpdir);
	copy_file(bpaths[0], keep);
	ck_assert_int_eq(open_logged(&cpb, &p), -EINVAL);
	ck_assert_ptr_null(p);
	has_line("pool b: member ");
	has_line("b0.img (slot 0) belongs to pool a (uuid ");
	has_line("), not to this pool");
	ck_assert_msg(same_file(bpaths[0], keep), "the foreign member was written");
	/* start_degraded does not make mixing two pools acceptable */
	cpb.start_degraded = true;
	ck_assert_int_eq(open_logged(&cpb, &p), -EINVAL);
	ck_assert_msg(same_file(bpaths[0], keep), "the foreign member was written");
	/* pool a itself is intact */
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "optimal");
	check_data(p, 3);
	raid_pool_close(p);
}
END_TEST

START_TEST(t04_missing_member)
{
	struct raid_pool *p;
	char keep[128];
	struct stat st;

	mkconf(&cp, paths, "m", CONF_RAID1, 2);
	make_pool_with_data(&cp, 5);
	snprintf(keep, sizeof(keep), "%s/keep.img", tmpdir);
	copy_file(paths[1], keep);
	ck_assert_int_eq(unlink(paths[1]), 0);
	/* refused, and create_size does not bring it back empty */
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	ck_assert_ptr_null(p);
	has_line("pool m: member ");
	has_line("m1.img (slot 1) is missing");
	ck_assert_msg(stat(paths[1], &st) && errno == ENOENT, "the missing member was created");
	/* start_degraded: starts without it, with an error line */
	cp.start_degraded = true;
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("ERROR");
	has_line("m1.img (slot 1) is missing; start_degraded is set");
	ck_assert_str_eq(pstate(p), "degraded");
	check_data(p, 5);
	raid_pool_close(p);
	ck_assert_msg(stat(paths[1], &st) && errno == ENOENT, "the missing member was created");
	/* recorded as failed now: no start_degraded needed */
	cp.start_degraded = false;
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("already recorded it as failed");
	ck_assert_str_eq(pstate(p), "degraded");
	raid_pool_close(p);
	/* the old file coming back is stale: never used again */
	copy_file(keep, paths[1]);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("m1.img (slot 1) is stale");
	ck_assert_str_eq(pstate(p), "degraded");
	ck_assert_str_ne(mstate(p, 1), "active");
	check_data(p, 5);
	raid_pool_close(p);
	ck_assert_msg(same_file(paths[1], keep), "the stale member was written");
}
END_TEST

START_TEST(t05_blank_member)
{
	struct raid_pool *p;
	char keep[128];
	int fd;

	mkconf(&cp, paths, "z", CONF_RAID5, 4);
	make_pool_with_data(&cp, 6);
	fd = open(paths[2], O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, MEMBER_BYTES), 0);
	close(fd);
	snprintf(keep, sizeof(keep), "%s/keep.img", tmpdir);
	copy_file(paths[2], keep);
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	has_line("z2.img (slot 2) has no rtgt superblock");
	cp.start_degraded = true;
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "degraded");
	check_data(p, 6);
	raid_pool_close(p);
	ck_assert_msg(same_file(paths[2], keep), "the blank member was written");
}
END_TEST

START_TEST(t06_stale_needed)
{
	struct raid_pool *p;

	mkconf(&cp, paths, "s", CONF_RAID5, 4);
	make_pool_with_data(&cp, 7);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	raid_pool_close(p);
	/* stale d1 alone: degraded start */
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("s1.img (slot 1) is stale");
	ck_assert_str_eq(pstate(p), "degraded");
	raid_pool_close(p);
	/* and d2 gone too: raid5 cannot do without two */
	ck_assert_int_eq(unlink(paths[2]), 0);
	cp.start_degraded = true;
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	ck_assert_ptr_null(p);
	has_line("2 of 4 members unusable, raid5 tolerates 1: not started");
}
END_TEST

/* A spare that took a slot in a rebuild is a member like the others: its
 * file missing refuses the pool; the member it replaced stays out. */
START_TEST(t07_rebuilt_spare_missing)
{
	static char *spare[2];
	struct raid_pool *p;
	int i;

	mkconf(&cp, paths, "r", CONF_RAID1, 2);
	spare[0] = malloc(128);
	ck_assert_ptr_nonnull(spare[0]);
	snprintf(spare[0], 128, "%s/s0.img", tmpdir);
	bpaths[0] = spare[0];                /* teardown removes it */
	cp.spares = cp.spare_paths = spare;
	cp.n_spares = 1;
	make_pool_with_data(&cp, 8);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	for (i = 0; i < 1000 && strcmp(pstate(p), "optimal"); i++)
		usleep(10000);
	ck_assert_str_eq(pstate(p), "optimal");
	raid_pool_close(p);
	ck_assert_int_eq(open_logged(&cp, &p), 0);    /* r1.img stale, s0 in slot 1 */
	has_line("r1.img (slot 1) is stale");
	ck_assert_str_eq(pstate(p), "optimal");
	check_data(p, 8);
	raid_pool_close(p);
	ck_assert_int_eq(unlink(spare[0]), 0);
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	has_line("s0.img (spare 0) is missing");
	cp.start_degraded = true;
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "degraded");
	check_data(p, 8);
	raid_pool_close(p);
}
END_TEST

static void make_spare_file(char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, MEMBER_BYTES), 0);
	close(fd);
}

START_TEST(t08_remove_spare)
{
	static char *spare[2];
	static struct raid_pool_info info;
	struct raid_pool *p;
	char keep[128];
	unsigned i, with_io = 0;

	mkconf(&cp, paths, "q", CONF_RAID1, 2);
	spare[0] = malloc(128);
	ck_assert_ptr_nonnull(spare[0]);
	snprintf(spare[0], 128, "%s/qs0.img", tmpdir);
	bpaths[0] = spare[0];
	cp.spares = cp.spare_paths = spare;
	cp.n_spares = 1;
	make_pool_with_data(&cp, 9);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(mstate(p, 2), "spare");
	check_data(p, 9);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	for (i = 0; i < info.n_members; i++) {
		struct raid_member_info *mi = &info.members[i];

		if (mi->read_ops) {
			with_io++;
			ck_assert_uint_ge(mi->read_lat_p50_us, 1);
			ck_assert_uint_ge(mi->read_lat_p99_us, mi->read_lat_p50_us);
		} else {
			ck_assert_uint_eq(mi->read_lat_p50_us, 0);
		}
		if (mi->write_ops)
			ck_assert_uint_ge(mi->write_lat_p99_us, mi->write_lat_p50_us);
	}
	ck_assert_uint_ge(with_io, 1);
	snprintf(keep, sizeof(keep), "%s/keep.img", tmpdir);
	copy_file(spare[0], keep);
	ck_assert_int_eq(raid_pool_remove(p, spare[0]), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.n_members, 2);
	ck_assert_str_eq(info.state, "optimal");
	ck_assert_int_eq(raid_pool_remove(p, spare[0]), -ENOENT);
	check_data(p, 9);
	raid_pool_close(p);
	ck_assert_msg(same_file(spare[0], keep), "the removed spare was written");
	/* still in the configuration: left out with a warning */
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("qs0.img (spare 0) was removed from the pool");
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_eq(info.n_members, 2);
	ck_assert_str_eq(info.state, "optimal");
	check_data(p, 9);
	raid_pool_close(p);
	ck_assert_msg(same_file(spare[0], keep), "the removed spare was written at restart");
}
END_TEST

START_TEST(t09_remove_faulty_restart)
{
	struct raid_pool *p;
	struct raid_sb sb;
	char sp[128];
	int fd, i;

	mkconf(&cp, paths, "f", CONF_RAID5, 4);
	make_pool_with_data(&cp, 10);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_fail(p, "1"), 0);
	ck_assert_int_eq(raid_pool_remove(p, "1"), 0);
	ck_assert_str_eq(mstate(p, 1), "empty");
	ck_assert_str_eq(pstate(p), "degraded");
	ck_assert_int_eq(raid_pool_remove(p, "1"), -EALREADY);
	ck_assert_int_eq(raid_pool_fail(p, "1"), -EALREADY);
	check_data(p, 10);
	raid_pool_close(p);
	/* the others' superblocks record the slot as empty */
	fd = open(paths[0], O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	close(fd);
	ck_assert_uint_eq(sb.slots[1].state, RAID_M_EMPTY);
	/* f1.img still configured: degraded start with a warning, not refused */
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	has_line("f1.img (slot 1) was removed from the pool");
	has_line("started degraded");
	ck_assert_str_eq(pstate(p), "degraded");
	ck_assert_str_eq(mstate(p, 1), "empty");
	check_data(p, 10);
	/* a spare rebuilds into the empty slot */
	snprintf(sp, sizeof(sp), "%s/keep.img", tmpdir);   /* teardown removes it */
	make_spare_file(sp);
	ck_assert_int_eq(raid_pool_add_spare(p, sp), 0);
	for (i = 0; i < 1000 && strcmp(pstate(p), "optimal"); i++)
		usleep(10000);
	ck_assert_str_eq(pstate(p), "optimal");
	ck_assert_str_eq(mstate(p, 1), "active");
	check_data(p, 10);
	raid_pool_close(p);
}
END_TEST

START_TEST(t10_remove_active_refused)
{
	struct raid_pool *p;

	mkconf(&cp, paths, "a", CONF_RAID5, 3);
	make_pool_with_data(&cp, 11);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_int_eq(raid_pool_remove(p, "0"), -EBUSY);
	ck_assert_int_eq(raid_pool_remove(p, paths[2]), -EBUSY);
	ck_assert_int_eq(raid_pool_remove(p, "7"), -ENOENT);
	ck_assert_int_eq(raid_pool_remove(p, "/nonexistent.img"), -ENOENT);
	ck_assert_str_eq(pstate(p), "optimal");
	ck_assert_str_eq(mstate(p, 0), "active");
	ck_assert_str_eq(mstate(p, 2), "active");
	check_data(p, 11);
	raid_pool_close(p);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "optimal");
	raid_pool_close(p);
}
END_TEST

START_TEST(t11_bad_ranges)
{
	struct raid_pool *p;
	struct raid_pool_info info;
	const uint64_t c = 65536;

	mkconf(&cp, paths, "a", CONF_RAID5, 4);
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert(raid_member_readable(p->m[1], 3 * c));
	raid_pool_bad_add(p, 1, 2 * c, 3 * c);
	raid_pool_bad_add(p, 1, 3 * c, 4 * c);          /* adjacent: one range */
	ck_assert_uint_eq(atomic_load(&p->n_bad), 1);
	ck_assert(!raid_member_readable(p->m[1], 3 * c));
	ck_assert(!raid_member_readable(p->m[1], 4 * c));
	ck_assert(raid_member_readable(p->m[1], 2 * c));
	ck_assert(raid_member_readable(p->m[1], 5 * c));
	ck_assert(raid_member_readable(p->m[2], 3 * c));  /* other slots */
	ck_assert(raid_bm_unsynced(p, 3 * c, c));
	ck_assert(!raid_bm_unsynced(p, 6 * c, c));
	/* 40 more, every other row of slot 2: the table holds 32, merged */
	for (uint64_t r = 0; r < 40; r++)
		raid_pool_bad_add(p, 2, (2 * r + 10) * c, (2 * r + 11) * c);
	ck_assert_uint_le(atomic_load(&p->n_bad), RAID_MAX_BAD);
	for (uint64_t r = 0; r < 40; r++)
		ck_assert(raid_pool_bad(p, 2, (2 * r + 10) * c, (2 * r + 11) * c));
	ck_assert(raid_pool_bad(p, 1, 2 * c, 4 * c));
	ck_assert(!raid_pool_bad(p, 1, 4 * c, 100 * c));
	ck_assert_int_eq(raid_pool_write_sbs(p, false), 0);
	ck_assert_int_eq(raid_pool_info(p, &info), 0);
	ck_assert_uint_ge(info.bad_bytes, 42 * c);
	raid_pool_close(p);

	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert(!raid_member_readable(p->m[1], 3 * c));
	for (uint64_t r = 0; r < 40; r++)
		ck_assert(!raid_member_readable(p->m[2], (2 * r + 11) * c));
	ck_assert(raid_member_readable(p->m[3], 11 * c));
	raid_pool_close(p);
}
END_TEST

/* Rewrites both superblock copies of @path with data_size = @ds; returns
 * the size it recorded before. */
static uint64_t set_data_size(const char *path, uint64_t ds)
{
	uint8_t *b = raid_alloc(RAID_SB_SIZE);
	struct raid_sb sb;
	uint64_t old;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	ck_assert_ptr_nonnull(b);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raid_sb_read(fd, &sb), 0);
	old = sb.data_size;
	sb.data_size = ds;
	raid_sb_encode(&sb, b);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(pwrite(fd, b, RAID_SB_SIZE, (off_t)RAID_SB_COPY_OFF(i)),
				 RAID_SB_SIZE);
	close(fd);
	free(b);
	return old;
}

START_TEST(t12_member_too_small)
{
	struct raid_pool *p;
	char keep[128];
	uint64_t ds = 0;
	int fd;

	mkconf(&cp, paths, "s", CONF_RAID1, 2);
	make_pool_with_data(&cp, 9);
	/* member 1 cut to half its data area */
	fd = open(paths[1], O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, RAID_DATA_OFF + MEMBER_BYTES / 2), 0);
	close(fd);
	snprintf(keep, sizeof(keep), "%s/keep.img", tmpdir);
	copy_file(paths[1], keep);
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	ck_assert_ptr_null(p);
	has_line("s1.img (slot 1) holds ");
	has_line("the pool's members need ");
	cp.start_degraded = true;
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "degraded");
	ck_assert_str_ne(mstate(p, 1), "active");
	check_data(p, 9);
	raid_pool_close(p);
	ck_assert_msg(same_file(paths[1], keep), "the short member was written");
	rf_paths_drop(paths, MAXM);

	/* every superblock claims 2.5 PB of data: nothing may start (nor
	 * size anything after that claim) */
	cp.start_degraded = false;
	mkconf(&cp, paths, "d", CONF_RAID1, 2);
	make_pool_with_data(&cp, 10);
	for (unsigned i = 0; i < 2; i++)
		ds = set_data_size(paths[i], 0x9000100445000ull);
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	has_line("d0.img (slot 0) holds ");
	has_line("d1.img (slot 1) holds ");
	cp.start_degraded = true;
	ck_assert_int_lt(open_logged(&cp, &p), 0);
	ck_assert_ptr_null(p);
	/* the sizes restored, the pool is whole again */
	cp.start_degraded = false;
	for (unsigned i = 0; i < 2; i++)
		set_data_size(paths[i], ds);
	ck_assert_int_eq(open_logged(&cp, &p), 0);
	ck_assert_str_eq(pstate(p), "optimal");
	check_data(p, 10);
	raid_pool_close(p);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_failure_rule", t01_failure_rule),
		CK_CASE("02_raid10_one_per_pair", t02_raid10_one_per_pair),
		CK_CASE("03_foreign_member", t03_foreign_member),
		CK_CASE("04_missing_member", t04_missing_member),
		CK_CASE("05_blank_member", t05_blank_member),
		CK_CASE("06_stale_needed", t06_stale_needed),
		CK_CASE("07_rebuilt_spare_missing", t07_rebuilt_spare_missing),
		CK_CASE("08_remove_spare", t08_remove_spare),
		CK_CASE("09_remove_faulty_restart", t09_remove_faulty_restart),
		CK_CASE("10_remove_active_refused", t10_remove_active_refused),
		CK_CASE("11_bad_ranges", t11_bad_ranges),
		CK_CASE("12_member_too_small", t12_member_too_small),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_pool", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 60 });
}
