/* tests/unit/test_clock.c - conf/clock.c: the one monotonic clock, its three
 * units and that they are one clock. */
#include <check.h>
#include <stdint.h>
#include <time.h>

#include "conf/util.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_never_goes_back)
{
	uint64_t ns = conf_mono_ns(), us = conf_mono_us(), ms = conf_mono_ms();

	for (int i = 0; i < 100000; i++) {
		uint64_t n = conf_mono_ns(), u = conf_mono_us(), m = conf_mono_ms();

		ck_assert_uint_ge(n, ns);
		ck_assert_uint_ge(u, us);
		ck_assert_uint_ge(m, ms);
		ns = n;
		us = u;
		ms = m;
	}
}
END_TEST

START_TEST(t02_units_agree)
{
	/* read in ascending order of coarseness and back: each finer reading
	 * truncated to the coarser unit brackets the coarser one */
	uint64_t n0 = conf_mono_ns(), u = conf_mono_us(), m = conf_mono_ms();
	uint64_t n1 = conf_mono_ns();

	ck_assert_uint_le(n0 / 1000u, u);
	ck_assert_uint_le(u, n1 / 1000u);
	ck_assert_uint_le(n0 / 1000000u, m);
	ck_assert_uint_le(m, n1 / 1000000u);
}
END_TEST

START_TEST(t03_is_clock_monotonic)
{
	struct timespec a, b;
	uint64_t mine, lo, hi;

	clock_gettime(CLOCK_MONOTONIC, &a);
	mine = conf_mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &b);
	lo = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
	hi = (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
	ck_assert_uint_le(lo, mine);
	ck_assert_uint_le(mine, hi);
}
END_TEST

START_TEST(t04_measures_a_sleep)
{
	struct timespec d = { .tv_sec = 0, .tv_nsec = 20 * 1000000 };
	uint64_t t0 = conf_mono_ms(), u0 = conf_mono_us(), dt_ms, dt_us;

	nanosleep(&d, NULL);
	dt_ms = conf_mono_ms() - t0;
	dt_us = conf_mono_us() - u0;
	/* at least the sleep; the upper bound is generous for a shared machine */
	ck_assert_uint_ge(dt_ms, 19);
	ck_assert_uint_ge(dt_us, 20000);
	ck_assert_uint_lt(dt_ms, 5000);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_never_goes_back", t01_never_goes_back),
		CK_CASE("02_units_agree", t02_units_agree),
		CK_CASE("03_is_clock_monotonic", t03_is_clock_monotonic),
		CK_CASE("04_measures_a_sleep", t04_measures_a_sleep),
	};

	return ck_main(&(struct ck_suite_def){ "clock", CK_CASES(cases) });
}
