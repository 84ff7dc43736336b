/*
 * tests/unit/test_raid_geom.c - geometry of every level and member count:
 * logical -> member/offset -> logical round trips, every member byte used
 * exactly once (or twice for raid10, n times for raid1), md's layouts.
 *
 * 01 round trips of every level and 2..8 members.
 * 02 md's layouts (known rows).
 * 03 raid6 with Q on the last device (a raid5 grown into a raid6): round
 *    trips, P where the raid5 of n-1 members has it, Q on device n-1,
 *    every data byte where that raid5 has it; only for raid6.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

static const enum conf_level levels[] = { CONF_RAID0, CONF_RAID1, CONF_RAID5, CONF_RAID6,
					  CONF_RAID10 };

START_TEST(t01_round_trip)
{
	enum conf_level level = levels[_i];
	uint64_t chunk = 4096;

	for (unsigned n = 2; n <= 8; n++) {
		struct raid_geom g;
		uint64_t rows = 3 * n + 1;
		unsigned *uses;
		int rc = raid_geom_init(&g, level, n, chunk, rows * chunk + 100);

		if ((level == CONF_RAID5 && n < 3) || (level == CONF_RAID6 && n < 4) ||
		    (level == CONF_RAID10 && n % 2)) {
			ck_assert_int_eq(rc, -EINVAL);
			continue;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_uint_eq(g.member_bytes, rows * chunk);
		ck_assert_uint_eq(g.usable, rows * g.ndata * chunk);
		uses = calloc(n * rows * 8, sizeof(*uses));
		/* every 512-byte sector of the logical space */
		for (uint64_t l = 0; l < g.usable; l += 512) {
			struct raid_loc loc;

			raid_geom_map(&g, l, &loc);
			ck_assert_uint_eq(loc.ncopies, level == CONF_RAID1 ? n : level == CONF_RAID10 ? 2 : 1);
			for (unsigned c = 0; c < loc.ncopies; c++) {
				uint64_t back = ~0ull;

				ck_assert_uint_lt(loc.dev[c], n);
				ck_assert_uint_lt(loc.moff[c], g.member_bytes);
				ck_assert_int_eq(raid_geom_unmap(&g, loc.dev[c], loc.moff[c], &back), 0);
				ck_assert_uint_eq(back, l);
				uses[loc.dev[c] * rows * 8 + loc.moff[c] / 512]++;
				if (raid_geom_is_parity_level(&g)) {
					int pd, qd;

					raid_geom_parity(&g, loc.row, &pd, &qd);
					ck_assert_int_ne((int)loc.dev[c], pd);
					ck_assert_int_ne((int)loc.dev[c], qd);
					ck_assert_int_eq(raid_geom_dev_dd(&g, loc.row, loc.dev[c]), (int)loc.dd);
				}
			}
			if (level == CONF_RAID10)
				ck_assert_uint_ne(loc.dev[0], loc.dev[1]);
		}
		/* each member sector holds data once, or is parity */
		for (unsigned d = 0; d < n; d++) {
			for (uint64_t s = 0; s < rows * 8; s++) {
				uint64_t back;
				bool par = raid_geom_unmap(&g, d, s * 512, &back) == -ENOENT;

				ck_assert_uint_eq(uses[d * rows * 8 + s], par ? 0 : 1);
			}
		}
		free(uses);
	}
}
END_TEST

/* Known md layouts. */
START_TEST(t02_md_layouts)
{
	struct raid_geom g;
	struct raid_loc loc;
	int pd, qd;

	/* raid5 left-symmetric, 4 disks: row0 P=3 D=0,1,2; row1 P=2 D=3,0,1 */
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID5, 4, 65536, 1 << 24), 0);
	raid_geom_parity(&g, 0, &pd, &qd);
	ck_assert_int_eq(pd, 3);
	ck_assert_int_eq(qd, -1);
	raid_geom_parity(&g, 1, &pd, &qd);
	ck_assert_int_eq(pd, 2);
	ck_assert_uint_eq(raid_geom_data_dev(&g, 1, 0), 3);
	ck_assert_uint_eq(raid_geom_data_dev(&g, 1, 1), 0);
	ck_assert_uint_eq(raid_geom_data_dev(&g, 1, 2), 1);
	raid_geom_parity(&g, 3, &pd, &qd);
	ck_assert_int_eq(pd, 0);
	raid_geom_map(&g, 4 * 65536 + 100, &loc);   /* logical chunk 4 = row 1, d1 */
	ck_assert_uint_eq(loc.row, 1);
	ck_assert_uint_eq(loc.dd, 1);
	ck_assert_uint_eq(loc.dev[0], 0);
	ck_assert_uint_eq(loc.moff[0], 65536 + 100);
	/* raid6 left-symmetric, 5 disks: row0 P=4 Q=0 D=1,2,3; row1 P=3 Q=4 D=0,1,2 */
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID6, 5, 4096, 1 << 20), 0);
	raid_geom_parity(&g, 0, &pd, &qd);
	ck_assert_int_eq(pd, 4);
	ck_assert_int_eq(qd, 0);
	ck_assert_uint_eq(raid_geom_data_dev(&g, 0, 0), 1);
	raid_geom_parity(&g, 1, &pd, &qd);
	ck_assert_int_eq(pd, 3);
	ck_assert_int_eq(qd, 4);
	ck_assert_uint_eq(raid_geom_data_dev(&g, 1, 0), 0);
	/* raid10 near-2, 4 disks: chunk0 on 0+1, chunk1 on 2+3, chunk2 on 0+1 row1 */
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID10, 4, 4096, 1 << 20), 0);
	raid_geom_map(&g, 2 * 4096 + 8, &loc);
	ck_assert_uint_eq(loc.dev[0], 0);
	ck_assert_uint_eq(loc.dev[1], 1);
	ck_assert_uint_eq(loc.moff[0], 4096 + 8);
	raid_geom_map(&g, 4096, &loc);
	ck_assert_uint_eq(loc.dev[0], 2);
	ck_assert_uint_eq(loc.dev[1], 3);
	/* raid0 3 disks: chunk 4 on disk 1 row 1 */
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID0, 3, 4096, 1 << 20), 0);
	raid_geom_map(&g, 4 * 4096, &loc);
	ck_assert_uint_eq(loc.dev[0], 1);
	ck_assert_uint_eq(loc.moff[0], 4096);
	/* bad shapes */
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID5, 4, 3000, 1 << 20), -EINVAL);
	ck_assert_int_eq(raid_geom_init(&g, CONF_RBD, 4, 4096, 1 << 20), -EINVAL);
	ck_assert_int_eq(raid_geom_init(&g, CONF_RAID1, 1, 4096, 1 << 20), -EINVAL);
}
END_TEST

START_TEST(t03_q_last)
{
	uint64_t chunk = 4096;
	struct raid_geom g;

	ck_assert_int_eq(raid_geom_init_layout(&g, CONF_RAID5, 4, chunk, 64 * chunk, RAID_LAYOUT_Q_LAST),
			 -EINVAL);
	for (unsigned n = 4; n <= 8; n++) {
		struct raid_geom r5;
		uint64_t rows = 3 * n + 1;

		ck_assert_int_eq(raid_geom_init_layout(&g, CONF_RAID6, n, chunk, rows * chunk,
						       RAID_LAYOUT_Q_LAST), 0);
		ck_assert_int_eq(raid_geom_init(&r5, CONF_RAID5, n - 1, chunk, rows * chunk), 0);
		ck_assert_uint_eq(g.usable, r5.usable);
		for (uint64_t row = 0; row < rows; row++) {
			int pd, qd, p5, q5;

			raid_geom_parity(&g, row, &pd, &qd);
			raid_geom_parity(&r5, row, &p5, &q5);
			ck_assert_int_eq(pd, p5);
			ck_assert_int_eq(qd, (int)n - 1);
			ck_assert_int_eq(raid_geom_dev_dd(&g, row, n - 1), -1);
		}
		for (uint64_t l = 0; l < g.usable; l += 512) {
			struct raid_loc a, b;
			uint64_t back = ~0ull;
			int pd, qd;

			raid_geom_map(&g, l, &a);
			raid_geom_map(&r5, l, &b);
			ck_assert_uint_eq(a.dev[0], b.dev[0]);
			ck_assert_uint_eq(a.moff[0], b.moff[0]);
			ck_assert_int_eq(raid_geom_unmap(&g, a.dev[0], a.moff[0], &back), 0);
			ck_assert_uint_eq(back, l);
			raid_geom_parity(&g, a.row, &pd, &qd);
			ck_assert_int_ne((int)a.dev[0], pd);
			ck_assert_int_ne((int)a.dev[0], qd);
			ck_assert_int_eq(raid_geom_dev_dd(&g, a.row, a.dev[0]), (int)a.dd);
		}
	}
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_round_trip", t01_round_trip, .timeout = 60, .loop_end = 5),
		CK_CASE("02_md_layouts", t02_md_layouts),
		CK_CASE("03_q_last", t03_q_last),
	};

	return ck_main(&(struct ck_suite_def){ "raid_geom", CK_CASES(cases) });
}
