/*
 * tests/unit/test_raid_scache.c - the stripe cache (raid/scache.c) on its
 * own: entries merged, taken for a write-out and ended; a FLUSH waiting
 * (raid_sc_wait) for exactly the write-outs taken before it, woken on its
 * own ctx with the first error among them; a failed write-out kept on the
 * list (readable, retried by a FLUSH at once and by the age-based write-out
 * only later); the wait against write-outs ending on another thread; and
 * the deferred-error count of a volume (raid_vol_write_failures).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

#define STRIPE 8192u

static void woken(void *arg)
{
	(*(int *)arg)++;
}

static void waiter_init(struct raid_sc_waiter *w, struct raid_ioctx *ctx, int *flag)
{
	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->fn = woken;
	w->arg = flag;
}

/* A new entry for @row holding @len bytes of @c at @off. */
static struct raid_sc_ent *put(struct raid_scache *sc, uint64_t row, uint64_t off, uint64_t len,
			       int c)
{
	uint8_t b[STRIPE];

	memset(b, c, len);
	return raid_sc_merge(sc, row, off, len, b, true);
}

static void run_for(struct raid_ioctx *ctx, int ms)
{
	ck_assert_int_ge(raid_ioctx_wait(ctx, ms), 0);
}

START_TEST(t01_take_done)
{
	struct raid_scache sc;

	raid_sc_init(&sc, STRIPE, 4);
	ck_assert_ptr_nonnull(put(&sc, 3, 0, 512, 1));
	ck_assert_uint_eq(atomic_load(&sc.n), 1);
	struct raid_sc_ent *e = raid_sc_take(&sc, 3);

	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(atomic_load(&sc.n), 0);
	ck_assert_uint_eq(sc.n_out, 1);
	ck_assert_uint_eq(e->seq, 1);
	ck_assert_ptr_null(raid_sc_take(&sc, 3));
	ck_assert(raid_sc_check(&sc));
	/* a write-out in flight counts against the cache's room */
	for (uint64_t r = 10; r < 13; r++)
		ck_assert_ptr_nonnull(put(&sc, r, 0, 512, 2));
	ck_assert_ptr_null(put(&sc, 13, 0, 512, 2));
	raid_sc_done(&sc, e, 0, true);
	ck_assert_uint_eq(sc.n_out, 0);
	ck_assert_uint_eq(atomic_load(&sc.n), 3);   /* written: freed, not kept */
	ck_assert_uint_eq(atomic_load(&sc.n_failed), 0);
	ck_assert(raid_sc_check(&sc));
	raid_sc_destroy(&sc);
}
END_TEST

START_TEST(t02_wait_for_earlier)
{
	struct raid_scache sc;
	struct raid_ioctx *ctx;
	struct raid_sc_waiter w1, w2, w3;
	struct raid_sc_ent *e1, *e2, *e3;
	int f1 = 0, f2 = 0, f3 = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_sc_init(&sc, STRIPE, 8);
	waiter_init(&w1, ctx, &f1);
	waiter_init(&w2, ctx, &f2);
	waiter_init(&w3, ctx, &f3);
	/* nothing in flight: at once */
	ck_assert(raid_sc_wait(&sc, &w3));
	ck_assert_int_eq(w3.err, 0);
	put(&sc, 1, 0, 512, 1);
	put(&sc, 2, 0, 512, 2);
	put(&sc, 3, 0, 512, 3);
	e1 = raid_sc_take(&sc, 1);
	e2 = raid_sc_take(&sc, 2);
	ck_assert(!raid_sc_wait(&sc, &w1));       /* waits for 1 and 2 */
	e3 = raid_sc_take(&sc, 3);
	ck_assert(!raid_sc_wait(&sc, &w2));       /* waits for 1, 2 and 3 */
	ck_assert(raid_sc_check(&sc));
	raid_sc_done(&sc, e1, 0, true);
	raid_sc_done(&sc, e3, -EIO, false);        /* only w2 waited for it */
	run_for(ctx, 50);
	ck_assert_int_eq(f1 + f2, 0);
	raid_sc_done(&sc, e2, 0, true);
	/* woken through raid_defer: only inside a run of their ctx */
	ck_assert_int_eq(f1 + f2, 0);
	for (int k = 0; k < 50 && f1 + f2 < 2; k++)
		run_for(ctx, 20);
	ck_assert_int_eq(f1, 1);
	ck_assert_int_eq(f2, 1);
	ck_assert_int_eq(w1.err, 0);
	ck_assert_int_eq(w2.err, -EIO);
	ck_assert_uint_eq(atomic_load(&sc.n_failed), 1);
	ck_assert_uint_eq(atomic_load(&sc.n) + sc.n_out, 0);
	ck_assert(raid_sc_check(&sc));
	raid_sc_destroy(&sc);
	raid_ioctx_destroy(ctx);
}
END_TEST

START_TEST(t03_failed_kept)
{
	struct raid_scache sc;
	struct raid_ioctx *ctx;
	struct raid_sc_waiter w;
	struct raid_sc_ent *e;
	uint8_t dst[STRIPE];
	uint64_t rows[4];
	int f = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_sc_init(&sc, STRIPE, 4);
	waiter_init(&w, ctx, &f);
	put(&sc, 5, 1024, 1024, 0x5a);
	e = raid_sc_take(&sc, 5);
	raid_sc_done(&sc, e, -EIO, true);
	ck_assert_uint_eq(atomic_load(&sc.n), 1);
	ck_assert_uint_eq(atomic_load(&sc.n_failed), 1);
	/* still readable */
	memset(dst, 0, sizeof(dst));
	raid_sc_overlay(&sc, 5, 0, STRIPE, dst);
	ck_assert_uint_eq(dst[1024], 0x5a);
	ck_assert_uint_eq(dst[2047], 0x5a);
	ck_assert_uint_eq(dst[2048], 0);
	/* a FLUSH reports it at once, and writes it out again */
	ck_assert(raid_sc_wait(&sc, &w));
	ck_assert_int_eq(w.err, -EIO);
	ck_assert_uint_eq(raid_sc_rows(&sc, 0, rows, 4), 1);
	/* the age-based write-out leaves it alone for a while, old as it is */
	usleep(20 * 1000);
	ck_assert_uint_eq(raid_sc_rows(&sc, 10, rows, 4), 0);
	pthread_mutex_lock(&sc.mu);
	sc.head->retry_ms = 0;
	pthread_mutex_unlock(&sc.mu);
	ck_assert_uint_eq(raid_sc_rows(&sc, 10, rows, 4), 1);
	/* written out after all: gone, and FLUSHes are fine again */
	e = raid_sc_take(&sc, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->err, -EIO);
	raid_sc_done(&sc, e, 0, true);
	ck_assert_uint_eq(atomic_load(&sc.n), 0);
	ck_assert(raid_sc_wait(&sc, &w));
	ck_assert_int_eq(w.err, 0);
	ck_assert(raid_sc_check(&sc));
	raid_sc_destroy(&sc);
	raid_ioctx_destroy(ctx);
	ck_assert_int_eq(f, 0);
}
END_TEST

/* Write-outs taken and ended on one thread, FLUSHes waiting on another:
 * a woken FLUSH finds every write-out numbered up to its seq ended. */
#define NW 3000u

struct wo_thr {
	struct raid_scache *sc;
	_Atomic bool *ended;   /* by seq */
	_Atomic unsigned nwaits; /* FLUSHes the other thread registered */
};

static void *wo_main(void *arg)
{
	struct wo_thr *t = arg;
	struct raid_sc_ent *held[4] = { NULL };

	unsigned seen = 0;

	for (unsigned i = 0; i < NW; i++) {
		struct raid_sc_ent *e;

		if (i % 64 == 63) {
			/* let a FLUSH find write-outs in flight (at most 1 s) */
			for (unsigned k = 0; k < 100000 && atomic_load(&t->nwaits) == seen; k++)
				usleep(10);
			seen = atomic_load(&t->nwaits);
		}
		put(t->sc, i % 4, 0, 512, 1);
		e = raid_sc_take(t->sc, i % 4);
		if (held[i % 4]) {
			atomic_store(&t->ended[held[i % 4]->seq], true);
			raid_sc_done(t->sc, held[i % 4], 0, false);
		}
		held[i % 4] = e;
	}
	for (unsigned k = 0; k < 4; k++) {
		atomic_store(&t->ended[held[k]->seq], true);
		raid_sc_done(t->sc, held[k], 0, false);
	}
	return NULL;
}

START_TEST(t04_threads)
{
	struct raid_scache sc;
	struct raid_ioctx *ctx;
	struct wo_thr t;
	pthread_t tid;
	unsigned deferred = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	raid_sc_init(&sc, STRIPE, 8);
	t.sc = &sc;
	t.ended = calloc(NW + 1, sizeof(*t.ended));
	atomic_store(&t.nwaits, 0);
	ck_assert_int_eq(pthread_create(&tid, NULL, wo_main, &t), 0);
	for (;;) {
		struct raid_sc_waiter w;
		int f = 0;
		bool now, last;

		pthread_mutex_lock(&sc.mu);
		last = sc.seq >= NW;
		pthread_mutex_unlock(&sc.mu);
		waiter_init(&w, ctx, &f);
		now = raid_sc_wait(&sc, &w);
		atomic_fetch_add(&t.nwaits, 1);
		while (!now && !f)
			run_for(ctx, 1000);
		deferred += !now;
		for (uint64_t s = 1; s <= w.seq; s++)
			ck_assert_msg(atomic_load(&t.ended[s]), "FLUSH woken with write-out %llu of %llu in flight",
				      (unsigned long long)s, (unsigned long long)w.seq);
		if (last)
			break;
	}
	pthread_join(tid, NULL);
	ck_assert_uint_gt(deferred, 0);
	ck_assert(raid_sc_check(&sc));
	raid_sc_destroy(&sc);
	raid_ioctx_destroy(ctx);
	free(t.ended);
}
END_TEST

/* What io.c does when a write ends in the cache (acknowledged from it). */
static void acked(struct raid_sc_ent *e, struct raid_vol *v)
{
	e->vol = v;
	e->unreported = true;
}

/*
 * Deferred errors: a failed write-out of an entry holding acknowledged data
 * bumps its volume's write_failures once; failing again over the same data
 * does not; data acknowledged after a failure makes the next failure count;
 * a success counts nothing; a failed write-out of an entry that was not
 * kept (superseded by a failed full-stripe write) counts; an entry no write
 * was acknowledged from (filled and written out by its own write, which
 * gets the error itself) counts nothing.
 */
START_TEST(t05_deferred_count)
{
	struct raid_scache sc;
	struct raid_vol v;
	struct raid_sc_ent *e;

	memset(&v, 0, sizeof(v));
	raid_sc_init(&sc, STRIPE, 4);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 0);
	acked(put(&sc, 5, 0, 512, 1), &v);
	e = raid_sc_take(&sc, 5);
	raid_sc_done(&sc, e, -EIO, true);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 1);
	/* retried, fails again over the same data: told already */
	e = raid_sc_take(&sc, 5);
	ck_assert(!e->unreported);
	raid_sc_done(&sc, e, -EIO, true);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 1);
	/* a write acknowledged into it since: the next failure counts */
	acked(put(&sc, 5, 512, 512, 2), &v);
	e = raid_sc_take(&sc, 5);
	raid_sc_done(&sc, e, -EIO, true);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 2);
	/* written out at last: nothing to count */
	e = raid_sc_take(&sc, 5);
	raid_sc_done(&sc, e, 0, true);
	ck_assert_uint_eq(atomic_load(&sc.n), 0);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 2);
	/* superseded by a full-stripe write that failed: dropped, counted */
	acked(put(&sc, 6, 0, 512, 3), &v);
	e = raid_sc_take(&sc, 6);
	raid_sc_done(&sc, e, -EIO, false);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 3);
	/* never acknowledged from the cache */
	e = put(&sc, 7, 0, 512, 4);
	e->vol = &v;
	e = raid_sc_take(&sc, 7);
	raid_sc_done(&sc, e, -EIO, true);
	ck_assert_uint_eq(raid_vol_write_failures(&v), 3);
	ck_assert_uint_eq(atomic_load(&sc.n_failed), 5);
	ck_assert(raid_sc_check(&sc));
	raid_sc_destroy(&sc);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_take_done", t01_take_done),
		CK_CASE("02_wait_for_earlier", t02_wait_for_earlier),
		CK_CASE("03_failed_kept", t03_failed_kept),
		CK_CASE("04_threads", t04_threads, .timeout = 60),
		CK_CASE("05_deferred_count", t05_deferred_count),
	};

	return ck_main(&(struct ck_suite_def){ "raid_scache", CK_CASES(cases) });
}
