/*
 * tests/unit/test_raid_parity.c - parity against a plain byte-by-byte
 * reference (XOR; Q = sum 2^d * D_d in GF(2^8) mod 0x11d, computed with
 * shift-and-add), recovery of every single and pair of lost devices, and the
 * syndrome check naming a corrupted device.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

#define LEN 4096

static uint8_t ref_mul2(uint8_t a)
{
	return (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
}

static uint8_t ref_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = ref_mul2(a);
		b >>= 1;
	}
	return r;
}

static uint8_t ref_pow2(unsigned e)
{
	uint8_t v = 1;

	while (e--)
		v = ref_mul2(v);
	return v;
}

static void make_row(const struct raid_geom *g, uint64_t row, uint8_t **b, uint8_t **keep)
{
	for (unsigned i = 0; i < g->n; i++) {
		b[i] = raid_alloc(LEN);
		keep[i] = malloc(LEN);
		for (unsigned k = 0; k < LEN; k++)
			b[i][k] = (uint8_t)random();
	}
	ck_assert_int_eq(raid_par_gen(g, row, b, LEN), 0);
	for (unsigned i = 0; i < g->n; i++)
		memcpy(keep[i], b[i], LEN);
}

static void free_row(const struct raid_geom *g, uint8_t **b, uint8_t **keep)
{
	for (unsigned i = 0; i < g->n; i++) {
		free(b[i]);
		free(keep[i]);
	}
}

START_TEST(t01_reference)
{
	unsigned n = 4 + (unsigned)_i % 5;
	enum conf_level level = _i < 5 ? CONF_RAID5 : CONF_RAID6;
	struct raid_geom g;
	uint8_t *b[RAID_MAX_SLOTS], *keep[RAID_MAX_SLOTS];
	uint64_t row = (uint64_t)_i * 7 + 1;
	int pd, qd;

	srandom((unsigned)_i);
	ck_assert_int_eq(raid_geom_init(&g, level, n, 4096, 1 << 20), 0);
	make_row(&g, row, b, keep);
	raid_geom_parity(&g, row, &pd, &qd);
	for (unsigned k = 0; k < LEN; k++) {
		uint8_t p = 0, q = 0;

		for (unsigned d = 0; d < g.ndata; d++) {
			uint8_t v = b[raid_geom_data_dev(&g, row, d)][k];

			p ^= v;
			q ^= ref_mul(ref_pow2(d), v);
		}
		ck_assert_uint_eq(b[pd][k], p);
		if (qd >= 0)
			ck_assert_uint_eq(b[qd][k], q);
	}
	ck_assert_uint_eq(raid_gf_pow2(9), ref_pow2(9));
	free_row(&g, b, keep);
}
END_TEST

START_TEST(t02_recover_all)
{
	unsigned n = 4 + (unsigned)_i % 5;
	enum conf_level level = _i < 5 ? CONF_RAID5 : CONF_RAID6;
	struct raid_geom g;
	uint8_t *b[RAID_MAX_SLOTS], *keep[RAID_MAX_SLOTS];

	srandom(100 + (unsigned)_i);
	ck_assert_int_eq(raid_geom_init(&g, level, n, 4096, 1 << 20), 0);
	for (uint64_t row = 0; row < n; row++) {
		make_row(&g, row, b, keep);
		for (unsigned x = 0; x < n; x++) {
			for (unsigned y = x; y < n; y++) {
				bool miss[RAID_MAX_SLOTS] = { false };

				if (level == CONF_RAID5 && y != x)
					continue;
				miss[x] = miss[y] = true;
				memset(b[x], 0xa5, LEN);
				memset(b[y], 0x5a, LEN);
				ck_assert_int_eq(raid_par_recover(&g, row, b, miss, LEN), 0);
				for (unsigned i = 0; i < n; i++)
					ck_assert_msg(!memcmp(b[i], keep[i], LEN),
						      "n=%u row=%llu lost %u,%u: dev %u wrong", n,
						      (unsigned long long)row, x, y, i);
			}
		}
		/* more than tolerated */
		{
			bool miss[RAID_MAX_SLOTS] = { false };

			miss[0] = miss[1] = miss[2] = true;
			ck_assert_int_eq(raid_par_recover(&g, row, b, miss, LEN), -EIO);
		}
		free_row(&g, b, keep);
	}
}
END_TEST

START_TEST(t03_check_names_bad)
{
	struct raid_geom g;
	uint8_t *b[RAID_MAX_SLOTS], *keep[RAID_MAX_SLOTS];
	int bad;

	srandom(3);
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID6, 6, 4096, 1 << 20), 0);
	for (uint64_t row = 0; row < 6; row++) {
		make_row(&g, row, b, keep);
		ck_assert_int_eq(raid_par_check(&g, row, b, LEN, &bad), 0);
		for (unsigned d = 0; d < 6; d++) {
			b[d][100] ^= 0x33;
			b[d][2000] ^= 0x01;
			ck_assert_int_gt(raid_par_check(&g, row, b, LEN, &bad), 0);
			ck_assert_int_eq(bad, (int)d);
			memcpy(b[d], keep[d], LEN);
		}
		free_row(&g, b, keep);
	}
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID5, 4, 4096, 1 << 20), 0);
	make_row(&g, 0, b, keep);
	ck_assert_int_eq(raid_par_check(&g, 0, b, LEN, &bad), 0);
	b[1][7] ^= 1;
	ck_assert_int_eq(raid_par_check(&g, 0, b, LEN, &bad), 1);
	free_row(&g, b, keep);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_reference", t01_reference, .loop_end = 10),
		CK_CASE("02_recover_all", t02_recover_all, .timeout = 60, .loop_end = 10),
		CK_CASE("03_check_names_bad", t03_check_names_bad),
	};

	return ck_main(&(struct ck_suite_def){ "raid_parity", CK_CASES(cases) });
}
