/*
 * raid/geom.h - md layouts as pure functions (geom.c): logical byte <-> member and
 * offset. No I/O.
 */
#ifndef RTGT_RAID_GEOM_H
#define RTGT_RAID_GEOM_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "raid/layout.h"

/* Where a raid6's parity lives (struct raid_geom.layout). */
enum raid_layout {
	RAID_LAYOUT_DEFAULT = 0,  /* every level: the layouts of geom.c's top */
	/* raid6 only: the first n-1 devices are a left-symmetric raid5 (P
	 * and data exactly where that raid5 has them), Q is on device n-1 in
	 * every row; what a raid5 becomes by adding a member without moving
	 * a byte (reshape.c; md's left-symmetric-6) */
	RAID_LAYOUT_Q_LAST = 1,
};

struct raid_geom {
	enum conf_level level;
	enum raid_layout layout;
	unsigned n;               /* raid disks */
	unsigned ndata;           /* data chunks per row (1 for raid1) */
	unsigned npar;            /* failures tolerated: 0, n-1 (raid1), 1, 2, 1 (raid10) */
	uint64_t chunk;           /* bytes */
	uint64_t member_bytes;    /* data bytes per member (multiple of chunk) */
	uint64_t rows;            /* member_bytes / chunk */
	uint64_t stripe_bytes;    /* logical bytes per row: ndata * chunk */
	uint64_t usable;          /* logical bytes of the pool */
};

/* Where one logical byte lives. For raid1 copies == n, raid10 copies == 2. */
struct raid_loc {
	uint64_t row;             /* stripe row (member chunk index) of copy 0 */
	unsigned dd;              /* data index inside the row (raid0/5/6) */
	unsigned ncopies;
	unsigned dev[RAID_MAX_SLOTS];
	uint64_t moff[RAID_MAX_SLOTS]; /* byte offset in the member's data area */
};

int raid_geom_init(struct raid_geom *g, enum conf_level level, unsigned n, uint64_t chunk,
		   uint64_t member_bytes);
/* The same with a layout other than the default (-EINVAL where it does
 * not apply). */
int raid_geom_init_layout(struct raid_geom *g, enum conf_level level, unsigned n, uint64_t chunk,
			  uint64_t member_bytes, enum raid_layout layout);
/* Map a logical byte offset (< usable). */
void raid_geom_map(const struct raid_geom *g, uint64_t loff, struct raid_loc *out);
/* Inverse: logical offset of member byte (dev, moff); -ENOENT for parity. */
int raid_geom_unmap(const struct raid_geom *g, unsigned dev, uint64_t moff, uint64_t *loff);
/* raid5/6: parity devices of a row (qdev = -1 for raid5). */
void raid_geom_parity(const struct raid_geom *g, uint64_t row, int *pdev, int *qdev);
/* raid0/5/6: device holding data index @dd of @row. */
unsigned raid_geom_data_dev(const struct raid_geom *g, uint64_t row, unsigned dd);
/* raid5/6: data index of @dev in @row, or -1 for a parity device. */
int raid_geom_dev_dd(const struct raid_geom *g, uint64_t row, unsigned dev);
bool raid_geom_is_parity_level(const struct raid_geom *g);

#endif
