/*
 * tests/unit/test_raid_rbd_pr.c - raid/rbd_pr.c seen from a RAID pool: the
 * shared-state API of raid.h refuses every RAID volume (they are never
 * shared) without side effects. The RBD side needs a Ceph cluster and is
 * covered by tests/net/test_net_rbd.c (cases 08-11).
 *
 * 01 a RAID volume is not shared: raid_vol_shared() false; read, update,
 *    notify and watch return -EOPNOTSUPP, the update's callbacks never run
 *    and the I/O context counts nothing in flight.
 * 02 no volume: raid_vol_shared(NULL) is false.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

static char dir[64], m0[128], m1[128];
static char *members[2];
static struct conf_pool cp;
static struct raid_pool *pool;
static struct raid_vol *vol;
static struct raid_ioctx *ctx;
static int calls;

static void setup(void)
{
	struct conf_size sz = { .bytes = 4u << 20 };

	conf_log_set_level(CONF_LOG_ERROR);
	rf_dir_make(dir, sizeof(dir), "rtgt-rbdpr");
	snprintf(m0, sizeof(m0), "%s/m0.img", dir);
	snprintf(m1, sizeof(m1), "%s/m1.img", dir);
	members[0] = m0;
	members[1] = m1;
	rf_conf_pool(&cp, "tp", CONF_RAID1, 64 << 10, members, 2, 16u << 20);
	ck_assert_int_eq(raid_pool_open(&cp, &pool), 0);
	ck_assert_int_eq(raid_vol_open(pool, "v0", &sz, &vol), 0);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	calls = 0;
}

static void teardown(void)
{
	raid_ioctx_destroy(ctx);
	raid_pool_close(pool);
	rf_dir_remove(dir);
}

static int xform(void *arg, const uint8_t *old, size_t old_len, uint8_t **out, size_t *out_len)
{
	calls++;
	return 0;
}

static void done(void *arg, int rc, const uint8_t *blob, size_t len)
{
	calls++;
}

static void watch(void *arg, const uint8_t *msg, size_t len, bool self)
{
	calls++;
}

START_TEST(t01_raid_not_shared)
{
	struct raid_shared_watch *w = NULL;
	uint8_t *blob = (uint8_t *)&calls;
	size_t len = 7;

	ck_assert(!raid_vol_shared(vol));
	ck_assert_int_eq(raid_vol_shared_read(vol, "pr", &blob, &len), -EOPNOTSUPP);
	ck_assert_int_eq(raid_vol_shared_update(vol, "pr", ctx, xform, done, NULL), -EOPNOTSUPP);
	ck_assert_int_eq(raid_vol_shared_notify(vol, "pr", "x", 1, 100), -EOPNOTSUPP);
	ck_assert_int_eq(raid_vol_shared_watch(vol, "pr", watch, NULL, &w), -EOPNOTSUPP);
	ck_assert_ptr_null(w);
	raid_vol_shared_unwatch(NULL);
	raid_ioctx_run(ctx);
	ck_assert_int_eq(calls, 0);
	ck_assert_uint_eq(raid_ioctx_inflight(ctx), 0);
}
END_TEST

START_TEST(t02_no_volume)
{
	ck_assert(!raid_vol_shared(NULL));
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_raid_not_shared", t01_raid_not_shared),
		CK_CASE("02_no_volume", t02_no_volume),
	};

	return ck_main(&(struct ck_suite_def){ "raid_rbd_pr", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 30 });
}
