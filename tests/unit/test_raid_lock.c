/*
 * tests/unit/test_raid_lock.c - the stripe lock: shared/exclusive conflicts,
 * FIFO order, grants delivered on the waiter's ioctx.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

static int granted[8];

static void on_grant(void *arg)
{
	granted[(long)arg]++;
}

static void mk(struct raid_lk *lk, uint64_t a, uint64_t b, bool excl, struct raid_ioctx *ctx,
	       long id)
{
	memset(lk, 0, sizeof(*lk));
	lk->a = a;
	lk->b = b;
	lk->excl = excl;
	lk->ctx = ctx;
	lk->fn = on_grant;
	lk->arg = (void *)id;
}

START_TEST(t01_conflicts_fifo)
{
	struct raid_slock sl;
	struct raid_ioctx *ctx;
	struct raid_lk r1, r2, w1, w2, w3;

	memset(granted, 0, sizeof(granted));
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_slock_init(&sl);
	mk(&r1, 0, 100, false, ctx, 1);
	mk(&w1, 50, 150, true, ctx, 2);
	mk(&r2, 60, 70, false, ctx, 3);
	mk(&w2, 200, 300, true, ctx, 4);
	mk(&w3, 100, 250, true, ctx, 5);
	ck_assert(raid_slock_acquire(&sl, &r1));
	ck_assert(!raid_slock_acquire(&sl, &w1));     /* overlaps a reader */
	ck_assert(!raid_slock_acquire(&sl, &r2));     /* behind the waiting writer */
	ck_assert(raid_slock_acquire(&sl, &w2));      /* disjoint */
	ck_assert(!raid_slock_acquire(&sl, &w3));     /* overlaps w1 (waiting) */
	ck_assert(raid_slock_check(&sl));
	raid_slock_release(&sl, &r1);
	ck_assert(raid_slock_check(&sl));
	ck_assert(w1.granted);
	ck_assert(!r2.granted);
	ck_assert(!w3.granted);
	ck_assert_int_eq(granted[2], 0);              /* only via the ctx */
	while (!granted[2])
		raid_ioctx_wait(ctx, 1000);
	raid_slock_release(&sl, &w1);
	ck_assert(r2.granted);
	ck_assert(!w3.granted);                       /* still w2 */
	raid_slock_release(&sl, &w2);
	ck_assert(w3.granted);
	raid_slock_release(&sl, &r2);
	raid_slock_release(&sl, &w3);
	while (granted[3] + granted[5] < 2)
		raid_ioctx_wait(ctx, 1000);
	ck_assert_int_eq(granted[1], 0);
	ck_assert_int_eq(granted[4], 0);
	ck_assert(raid_slock_check(&sl));
	raid_slock_destroy(&sl);
	raid_ioctx_destroy(ctx);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_conflicts_fifo", t01_conflicts_fifo),
	};

	return ck_main(&(struct ck_suite_def){ "raid_lock", CK_CASES(cases) });
}
