/*
 * raid/sb.h - the on-disk superblock (sb.c): its structure, the slot states it
 * stores, encode/decode, read/write of the two copies.
 */
#ifndef RTGT_RAID_SB_H
#define RTGT_RAID_SB_H

#include <stdint.h>

#include "raid/layout.h"

/* Slot states as stored on disk. */
enum raid_mstate {
	RAID_M_EMPTY = 0,
	RAID_M_ACTIVE = 1,
	RAID_M_FAULTY = 2,
	RAID_M_SPARE = 3,
	RAID_M_REBUILDING = 4,
	RAID_M_MISSING = 5,       /* runtime only: configured, not found */
	/* a spare being filled with a copy of a raid disk that still works
	 * (proactive replacement, rebuild.c): it keeps its spare slot, the
	 * slot entry's repl names the slot it replaces */
	RAID_M_REPLACING = 6,
};
/* RAID_M_EMPTY in a slot < n_members: the member was removed (rtgtctl
 * remove) and the slot waits for a spare; past n_members: a free slot. */
const char *raid_mstate_name(int st);

struct raid_sb_slot {
	uint32_t state;
	uint8_t uuid[16];
	uint32_t repl;            /* REPLACING: 1 + the slot it replaces; else 0 */
};

struct raid_sb_vol {
	char name[64];
	uint8_t uuid[16];
	uint64_t start;           /* logical byte offset in the pool, stripe-aligned */
	uint64_t size;            /* bytes exposed */
	uint64_t extent;          /* bytes reserved: size rounded up to the stripe;
	                           * of a thin volume, its extent map (thin.c) */
	uint32_t flags;           /* RAID_SBV_* */
	uint64_t thin_ext;        /* RAID_SBV_THIN: bytes of the pool's extents
	                           * (the same in every thin entry of a pool:
	                           * fixed once, whatever the geometry later) */
	/* Thin entries that may share extents (a volume, its snapshots, their
	 * clones) have the same non-zero family; 0 (entries written before
	 * snapshots) shares with nothing. */
	uint64_t family;
	char origin[64];          /* a snapshot's volume, a clone's snapshot, "" */
};
/* A thin volume (raid/thin.c): [start, start + extent) holds its extent
 * map, its data lives in extents of the pool's free space. 0 in
 * superblocks written before thin volumes existed: thick. */
#define RAID_SBV_THIN 0x1u
/* With RAID_SBV_THIN: a snapshot, named "VOLUME@SNAP" after the volume it
 * was taken of; read-only, its map shares extents with that volume and its
 * other snapshots (thin.c "Sharing"). A daemon from before snapshots
 * refuses such a pool (it finds extents named twice) rather than write into
 * a shared extent. */
#define RAID_SBV_SNAP 0x2u

/* Member bytes [a, b) of slot @slot hold no valid data: a row the rebuild
 * could not reconstruct (no redundancy left, or parity not synced). */
struct raid_bad {
	uint32_t slot;
	uint64_t a, b;
};

struct raid_sb {
	uint32_t version;
	uint8_t pool_uuid[16];
	uint8_t member_uuid[16];
	char name[64];
	uint32_t level;           /* enum conf_level */
	uint32_t chunk;
	uint32_t n_members;       /* raid disks */
	uint32_t slot;            /* index in slots[] */
	uint32_t flags;           /* RAID_SB_CLEAN */
	uint64_t events;
	uint64_t data_offset;
	uint64_t data_size;       /* per member */
	uint64_t bitmap_offset;
	uint32_t bitmap_bytes;
	uint32_t bitmap_chunk;    /* bytes of member data per bitmap bit */
	uint32_t rebuild_slot;    /* slot being rebuilt, or UINT32_MAX */
	uint64_t rebuild_pos;     /* checkpoint: member bytes done */
	uint64_t replace_pos;     /* the REPLACING slot's checkpoint: bytes copied */
	uint32_t n_slots;         /* members then spares */
	struct raid_sb_slot slots[RAID_MAX_SLOTS];
	uint32_t n_vols;
	struct raid_sb_vol vols[RAID_MAX_VOLS];
	uint64_t sync_pos;        /* RAID_SB_SYNCING: initial sync done below */
	uint32_t n_bad;
	struct raid_bad bad[RAID_MAX_BAD];
	/* RAID_SB_RESHAPE (reshape.c): level and n_members are the layout
	 * being made; these name the one being left and how far it got */
	uint32_t reshape_level;   /* enum conf_level of the old layout */
	uint32_t reshape_n;       /* its raid disks (< n_members) */
	uint64_t reshape_pos;     /* logical bytes: below, new layout, durable */
	/* a window copied to the new member's tail before it was rewritten
	 * over its own old place (the first windows only); backup_len 0: none */
	uint64_t backup_pos;
	uint32_t backup_len;
	uint32_t backup_crc;
};

void raid_sb_encode(const struct raid_sb *sb, uint8_t *buf);   /* RAID_SB_SIZE */
/* -EINVAL (with *why) when the block is not a valid superblock. */
int raid_sb_decode(const uint8_t *buf, struct raid_sb *sb, const char **why);
/* Read both copies, return the valid one with the higher event counter.
 * -ENOENT: no valid copy (blank member); -errno on I/O failure. */
int raid_sb_read(int fd, struct raid_sb *sb);
/* Write the copy selected by the event counter's parity, then fdatasync. */
int raid_sb_write(int fd, const struct raid_sb *sb);

#endif
