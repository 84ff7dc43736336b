/*
 * tests/unit/test_raid_backend.c - raid/backend.c: raid.h's entry points
 * find the pool's backend and answer for the ops it lacks. RAID pools here;
 * the rbd backend behind the same entry points needs a Ceph cluster and is
 * covered by tests/net/test_net_rbd*.c.
 *
 * 01 a RAID pool is served by the RAID backend: p->ops is raid_md_backend,
 *    and what that backend leaves out answers as raid.h says: no
 *    write-same (0), always ready (0, progress 0 even over a caller's
 *    garbage), not shared; opt_gran/opt_len are the chunk and the full
 *    stripe; resize reaches the backend (grown), and a backend without
 *    vol_resize answers -EOPNOTSUPP.
 * 02 raid_pool_close(NULL) does nothing.
 * 03 a level no backend serves: -EINVAL, *out untouched.
 * 04 an rbd pool reaches the rbd backend: without ceph_conf it is refused
 *    (-EINVAL; -ENOTSUP in a build without librbd) before any connection.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid/backend.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

static char dir[64];
static char *members[3];

static void setup(void)
{
	rf_members_setup(dir, sizeof(dir), "rtgt-backend", members, 3);
}

static void teardown(void)
{
	rf_members_teardown(dir, members, 3);
}

START_TEST(t01_raid_backend)
{
	struct conf_size sz = { .bytes = 4u << 20 };
	struct conf_pool cp;
	struct raid_pool *pool;
	struct raid_vol *vol;
	uint16_t frac = 1234;

	rf_conf_pool(&cp, "tp", CONF_RAID5, 64 << 10, members, 3, 16u << 20);
	ck_assert_int_eq(raid_pool_open(&cp, &pool), 0);
	ck_assert_ptr_eq(pool->ops, &raid_md_backend);
	ck_assert_int_eq(raid_vol_open(pool, "v0", &sz, &vol), 0);
	ck_assert_uint_eq(raid_vol_write_same_max(vol), 0);
	ck_assert_int_eq(raid_vol_ready(vol), 0);
	ck_assert_int_eq(raid_vol_ready_progress(vol, &frac), 0);
	ck_assert_uint_eq(frac, 0);
	struct raid_vol_backend_ops no_grow = raid_md_backend;
	struct conf_size big = { .bytes = 8u << 20 }, bigger = { .bytes = 12u << 20 };

	ck_assert_int_eq(raid_vol_resize(vol, &big), 0);
	ck_assert_uint_eq(raid_vol_bytes(vol), 8u << 20);
	no_grow.vol_resize = NULL;
	pool->ops = &no_grow;
	ck_assert_int_eq(raid_vol_resize(vol, &bigger), -EOPNOTSUPP);
	pool->ops = &raid_md_backend;
	ck_assert_uint_eq(raid_vol_bytes(vol), 8u << 20);
	ck_assert(!raid_vol_shared(vol));
	ck_assert_uint_eq(raid_vol_opt_gran(vol), 64u << 10);
	ck_assert_uint_eq(raid_vol_opt_len(vol), 128u << 10);
	raid_pool_close(pool);
}
END_TEST

START_TEST(t02_close_null)
{
	raid_pool_close(NULL);
}
END_TEST

START_TEST(t03_no_backend)
{
	struct conf_pool cp;
	struct raid_pool *pool = (struct raid_pool *)&cp;

	rf_conf_pool(&cp, "tp", CONF_RAID1, 64 << 10, members, 2, 16u << 20);
	cp.level = (enum conf_level)99;
	ck_assert_int_eq(raid_pool_open(&cp, &pool), -EINVAL);
	ck_assert_ptr_eq(pool, (struct raid_pool *)&cp);
}
END_TEST

START_TEST(t04_rbd_refused)
{
	struct conf_pool cp;
	struct raid_pool *pool = NULL;
	int rc;

	memset(&cp, 0, sizeof(cp));
	cp.name = "rp";
	cp.level = CONF_RBD;
	rc = raid_pool_open(&cp, &pool);
	ck_assert_msg(rc == -EINVAL || rc == -ENOTSUP, "rc %d", rc);
	ck_assert_ptr_null(pool);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_raid_backend", t01_raid_backend),
		CK_CASE("02_close_null", t02_close_null),
		CK_CASE("03_no_backend", t03_no_backend),
		CK_CASE("04_rbd_refused", t04_rbd_refused),
	};

	return ck_main(&(struct ck_suite_def){ "raid_backend", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 30 });
}
