/* tests/unit/test_hist.c - conf/hist.c: bucket boundaries of both shapes in
 * use (raid's log2, target/'s eighths), percentiles against a sorted
 * reference, the sum and maximum, and records from two threads. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "conf/util.h"
#include "tests/lib/ckmain.h"

static struct conf_hist h;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

START_TEST(t01_init_rejects_bad_shapes)
{
	ck_assert_int_eq(conf_hist_init(&h, CONF_HIST_SUB_BITS_MAX + 1, 31), -EINVAL);
	ck_assert_int_eq(conf_hist_init(&h, 3, 3), -EINVAL);
	ck_assert_int_eq(conf_hist_init(&h, 0, CONF_HIST_EXP_MAX + 1), -EINVAL);
	ck_assert_int_eq(conf_hist_init(&h, 0, 30), 0);
	ck_assert_uint_eq(conf_hist_buckets(&h), 32);
	ck_assert_int_eq(conf_hist_init(&h, 3, 31), 0);
	ck_assert_uint_eq(conf_hist_buckets(&h), 240);
	ck_assert_uint_le(conf_hist_buckets(&h), CONF_HIST_BUCKETS_MAX);
	ck_assert_uint_eq(conf_hist_count(&h), 0);
	ck_assert_uint_eq(conf_hist_percentile(&h, 99), 0);
}
END_TEST

/* log2: bucket b = [2^(b-1), 2^b) us, bucket 0 under 1 us, reported by its
 * upper bound 2^b; 32 buckets, the last one open-ended */
START_TEST(t02_log2_boundaries)
{
	ck_assert_int_eq(conf_hist_init(&h, 0, 30), 0);
	ck_assert_uint_eq(conf_hist_bucket(&h, 0), 0);
	ck_assert_uint_eq(conf_hist_bucket(&h, 1), 1);
	ck_assert_uint_eq(conf_hist_bucket(&h, 2), 2);
	ck_assert_uint_eq(conf_hist_bucket(&h, 3), 2);
	ck_assert_uint_eq(conf_hist_bucket(&h, 4), 3);
	ck_assert_uint_eq(conf_hist_bucket(&h, 1023), 10);
	ck_assert_uint_eq(conf_hist_bucket(&h, 1024), 11);
	for (unsigned b = 0; b < 32; b++)
		ck_assert_uint_eq(conf_hist_bucket_high(&h, b), 1ull << b);
	for (unsigned b = 1; b < 31; b++) {
		ck_assert_uint_eq(conf_hist_bucket(&h, (1ull << b) - 1), b);
		ck_assert_uint_eq(conf_hist_bucket(&h, 1ull << b), b + 1);
	}
	ck_assert_uint_eq(conf_hist_bucket(&h, 1ull << 30), 31);
	ck_assert_uint_eq(conf_hist_bucket(&h, 1ull << 31), 31);
	ck_assert_uint_eq(conf_hist_bucket(&h, UINT64_MAX), 31);
	/* past the end reads as the last bucket */
	ck_assert_uint_eq(conf_hist_bucket_high(&h, 99), 1ull << 31);
	ck_assert_uint_eq(conf_hist_bucket_count(&h, 99), 0);
}
END_TEST

/* eighths: one bucket a microsecond below 16, then 8 per power of two */
START_TEST(t03_eighths_boundaries)
{
	ck_assert_int_eq(conf_hist_init(&h, 3, 31), 0);
	for (unsigned us = 0; us < 16; us++) {
		ck_assert_uint_eq(conf_hist_bucket(&h, us), us);
		ck_assert_uint_eq(conf_hist_bucket_high(&h, us), us + 1);
	}
	ck_assert_uint_eq(conf_hist_bucket(&h, 16), 16);
	ck_assert_uint_eq(conf_hist_bucket(&h, 17), 16);
	ck_assert_uint_eq(conf_hist_bucket_high(&h, 16), 18);
	ck_assert_uint_eq(conf_hist_bucket(&h, 18), 17);
	ck_assert_uint_eq(conf_hist_bucket(&h, 31), 23);
	ck_assert_uint_eq(conf_hist_bucket_high(&h, 23), 32);
	ck_assert_uint_eq(conf_hist_bucket(&h, 32), 24);
	ck_assert_uint_eq(conf_hist_bucket_high(&h, 24), 36);
	/* every bucket starts where the previous one ends */
	for (unsigned b = 1; b < conf_hist_buckets(&h); b++) {
		uint64_t lo = conf_hist_bucket_high(&h, b - 1);

		ck_assert_uint_eq(conf_hist_bucket(&h, lo), b);
		ck_assert_uint_eq(conf_hist_bucket(&h, lo - 1), b - 1);
	}
	ck_assert_uint_eq(conf_hist_bucket_high(&h, 239), 1ull << 32);
	ck_assert_uint_eq(conf_hist_bucket(&h, 1ull << 32), 239);
	ck_assert_uint_eq(conf_hist_bucket(&h, UINT64_MAX), 239);
}
END_TEST

/* Every percentile is the bound of the bucket of the sorted reference's
 * ceil(n * pct / 100)-th value, for both shapes. */
START_TEST(t04_percentiles_match_sorted_reference)
{
	static const unsigned shapes[][2] = { { 0, 30 }, { 3, 31 } };
	enum { N = 5000 };
	static uint64_t v[N];
	uint64_t seed = 0x9e3779b97f4a7c15ull, sum = 0, max = 0;

	for (unsigned s = 0; s < 2; s++) {
		ck_assert_int_eq(conf_hist_init(&h, shapes[s][0], shapes[s][1]), 0);
		sum = max = 0;
		for (unsigned i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* spread over ns .. seconds: a log-uniform-ish mix */
			v[i] = (seed >> 33) >> ((seed >> 8) % 31);
			conf_hist_record(&h, v[i]);
			sum += v[i];
			if (v[i] > max)
				max = v[i];
		}
		qsort(v, N, sizeof(v[0]), cmp_u64);
		for (unsigned pct = 0; pct <= 100; pct++) {
			uint64_t need = ((uint64_t)N * pct + 99) / 100;
			uint64_t ref = v[(need ? need : 1) - 1] / 1000u;

			ck_assert_uint_eq(conf_hist_percentile(&h, pct),
					  conf_hist_bucket_high(&h, conf_hist_bucket(&h, ref)));
		}
		ck_assert_uint_eq(conf_hist_percentile(&h, 250), conf_hist_percentile(&h, 100));
		ck_assert_uint_eq(conf_hist_count(&h), N);
		ck_assert_uint_eq(conf_hist_sum_ns(&h), sum);
		ck_assert_uint_eq(conf_hist_max_ns(&h), max);
	}
}
END_TEST

/* the numbers raid/'s member latency gives today: 90 at 5 us, 10 at 1 ms */
START_TEST(t05_small_known_percentiles)
{
	ck_assert_int_eq(conf_hist_init(&h, 0, 30), 0);
	for (int i = 0; i < 90; i++)
		conf_hist_record(&h, 5000);
	for (int i = 0; i < 10; i++)
		conf_hist_record(&h, 1000000);
	ck_assert_uint_eq(conf_hist_percentile(&h, 50), 8);
	ck_assert_uint_eq(conf_hist_percentile(&h, 90), 8);
	ck_assert_uint_eq(conf_hist_percentile(&h, 91), 1024);
	ck_assert_uint_eq(conf_hist_percentile(&h, 99), 1024);
	ck_assert_uint_eq(conf_hist_percentile(&h, 0), 8);
	ck_assert_uint_eq(conf_hist_bucket_count(&h, 3), 90);
	ck_assert_uint_eq(conf_hist_bucket_count(&h, 10), 10);
	ck_assert_uint_eq(conf_hist_max_ns(&h), 1000000);
	/* sub-microsecond samples count in bucket 0 but keep their ns */
	conf_hist_record(&h, 999);
	ck_assert_uint_eq(conf_hist_bucket_count(&h, 0), 1);
	ck_assert_uint_eq(conf_hist_sum_ns(&h), 90 * 5000 + 10 * 1000000 + 999);
}
END_TEST

enum { PER_THREAD = 200000 };

static void *recorder(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg;

	for (unsigned i = 0; i < PER_THREAD; i++)
		conf_hist_record(&h, base + (i % 64) * 1000u);
	return NULL;
}

/* two threads at once lose no record, no sum and the right maximum */
START_TEST(t06_two_threads)
{
	pthread_t a, b;
	uint64_t total = 0, sum = 0;

	ck_assert_int_eq(conf_hist_init(&h, 3, 31), 0);
	ck_assert_int_eq(pthread_create(&a, NULL, recorder, (void *)(uintptr_t)1000), 0);
	ck_assert_int_eq(pthread_create(&b, NULL, recorder, (void *)(uintptr_t)500000), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	for (unsigned i = 0; i < conf_hist_buckets(&h); i++)
		total += conf_hist_bucket_count(&h, i);
	for (unsigned i = 0; i < PER_THREAD; i++)
		sum += 1000 + (i % 64) * 1000u + 500000 + (i % 64) * 1000u;
	ck_assert_uint_eq(total, 2u * PER_THREAD);
	ck_assert_uint_eq(conf_hist_count(&h), 2u * PER_THREAD);
	ck_assert_uint_eq(conf_hist_sum_ns(&h), sum);
	ck_assert_uint_eq(conf_hist_max_ns(&h), 500000 + 63 * 1000u);
	/* half the samples are 1..64 us, half 500..563 us */
	ck_assert_uint_le(conf_hist_percentile(&h, 50), 72);
	ck_assert_uint_ge(conf_hist_percentile(&h, 51), 500);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_init_rejects_bad_shapes", t01_init_rejects_bad_shapes),
		CK_CASE("02_log2_boundaries", t02_log2_boundaries),
		CK_CASE("03_eighths_boundaries", t03_eighths_boundaries),
		CK_CASE("04_percentiles_match_sorted_reference",
			t04_percentiles_match_sorted_reference),
		CK_CASE("05_small_known_percentiles", t05_small_known_percentiles),
		CK_CASE("06_two_threads", t06_two_threads),
	};

	return ck_main(&(struct ck_suite_def){ "hist", CK_CASES(cases) });
}
