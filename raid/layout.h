/*
 * raid/layout.h - on-disk layout of a member and the format's limits: what the
 * superblock (sb.c), the geometry (geom.c) and the member layer (member.c)
 * agree on.
 */
#ifndef RTGT_RAID_LAYOUT_H
#define RTGT_RAID_LAYOUT_H

#include <stdint.h>

/* ---- on-disk layout of a member ----
 * [0, 64K)      superblock copy 0 (RAID_SB_SIZE used)
 * [64K, 128K)   superblock copy 1
 * [128K, 1M)    write-intent bitmap area
 * [1M, ...)     data (data_offset)
 */
#define RAID_SB_SIZE      16384u
#define RAID_SB_COPY_OFF(i) ((uint64_t)(i) * 65536u)
#define RAID_BITMAP_OFF   131072u
#define RAID_BITMAP_BYTES (1048576u - 131072u)
#define RAID_DATA_OFF     1048576u
#define RAID_MAX_SLOTS    64u
#define RAID_MAX_VOLS     64u
#define RAID_ALIGN        4096u
#define RAID_SB_VERSION   1u
#define RAID_SB_CLEAN     0x1u
/* The initial sync of a new pool has not finished: member bytes from
 * sb.sync_pos on have never been made consistent (parity, mirrors). */
#define RAID_SB_SYNCING   0x2u
/* A reshape (raid/reshape.c) is under way: the superblock's reshape_*
 * fields say from what and how far. */
#define RAID_SB_RESHAPE   0x4u
/* raid6 with Q on the last raid disk (geom.h RAID_LAYOUT_Q_LAST): a raid5
 * converted to raid6 (reshape.c). */
#define RAID_SB_Q_LAST    0x8u
/* With RAID_SB_RESHAPE: the layout being left is such a raid6. */
#define RAID_SB_FROM_Q_LAST 0x10u
/* Bad ranges (rows that cannot be reconstructed) kept per pool. */
#define RAID_MAX_BAD      32u

#endif
