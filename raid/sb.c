/*
 * raid/sb.c - the on-disk superblock of a member.
 *
 * Layer: member state (raid/README.md "Layers"). May call: parity.c,
 * geom.c, conf/.
 *
 * Two copies live at RAID_SB_COPY_OFF(0) and (1); an update writes the copy
 * chosen by the parity of its (always incremented) event counter, so the
 * previous generation in the other copy stays intact while this one is being
 * written: a torn write leaves the member with one valid superblock, one
 * event older. Readers take the valid copy with the higher counter.
 *
 * Little-endian layout, RAID_SB_SIZE bytes, CRC32C (isa-l crc32_iscsi) of
 * everything before the last 4 bytes in the last 4 bytes:
 *   0 magic "RTGTRAID"   8 version   12 sb size   16 pool uuid[16]
 *  32 member uuid[16]   48 pool name[64]   112 level   116 chunk
 * 120 n_members  124 slot  128 flags  132 bitmap_bytes  136 events (u64)
 * 144 data_offset  152 data_size  160 bitmap_offset  168 bitmap_chunk (u32)
 * 172 rebuild_slot  176 rebuild_pos (u64)  184 n_slots  188 n_vols
 * 192 sync_pos (u64, meaningful with flag RAID_SB_SYNCING)  200 n_bad
 * 208 replace_pos (u64: bytes copied to the REPLACING slot, made durable)
 * 216 reshape_level  220 reshape_n (u32: the layout being left, with flag
 *     RAID_SB_RESHAPE)  224 reshape_pos (u64: logical bytes below it are in
 *     the new layout, durable)  232 backup_pos (u64)  240 backup_len (u32:
 *     0 none)  244 backup_crc (u32: CRC32C of the backup)
 * 256 slots[64] x 32: state u32, uuid[16], repl u32 (1 + replaced slot)
 * 2304 vols[64] x 128: name[64], uuid[16], start, size, extent (u64)
 * 10496 bad[32] x 24: slot u32, 4 zero bytes, a, b (u64: member bytes)
 * 11264 vols' extension[64] x 72: family (u64: the volumes, snapshots and
 *     clones that may share extents have the same, non-zero), origin[64]
 *     (a snapshot's volume, a clone's snapshot; "" for none)
 * Superblocks written before sync_pos/n_bad/replace_pos/repl existed carry
 * zeros there (no flag, no bad range, no replacement): a synced pool without
 * bad ranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "raid/parity.h"
#include "raid/sb.h"

#define SB_MAGIC "RTGTRAID"
#define SB_SLOTS_OFF 256u
#define SB_SLOT_SIZE 32u
#define SB_VOLS_OFF (SB_SLOTS_OFF + RAID_MAX_SLOTS * SB_SLOT_SIZE)
#define SB_VOL_SIZE 128u
#define SB_BAD_OFF (SB_VOLS_OFF + RAID_MAX_VOLS * SB_VOL_SIZE)
#define SB_BAD_SIZE 24u
#define SB_CRC_OFF (RAID_SB_SIZE - 4u)

/* what a volume's entry gained with snapshots, beside the table */
#define SB_VOLX_OFF (SB_BAD_OFF + RAID_MAX_BAD * SB_BAD_SIZE)
#define SB_VOLX_SIZE 72u
_Static_assert(SB_VOLX_OFF + RAID_MAX_VOLS * SB_VOLX_SIZE <= SB_CRC_OFF, "superblock too big");
_Static_assert(RAID_SB_SIZE <= 65536u, "superblock copies overlap");

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

const char *raid_mstate_name(int st)
{
	switch (st) {
	case RAID_M_ACTIVE: return "active";
	case RAID_M_FAULTY: return "faulty";
	case RAID_M_SPARE: return "spare";
	case RAID_M_REBUILDING: return "rebuilding";
	case RAID_M_MISSING: return "missing";
	case RAID_M_REPLACING: return "replacing";
	default: return "empty";
	}
}

void raid_sb_encode(const struct raid_sb *sb, uint8_t *b)
{
	unsigned i;

	memset(b, 0, RAID_SB_SIZE);
	memcpy(b, SB_MAGIC, 8);
	put32(b + 8, RAID_SB_VERSION);
	put32(b + 12, RAID_SB_SIZE);
	memcpy(b + 16, sb->pool_uuid, 16);
	memcpy(b + 32, sb->member_uuid, 16);
	memcpy(b + 48, sb->name, strnlen(sb->name, 63));
	put32(b + 112, sb->level);
	put32(b + 116, sb->chunk);
	put32(b + 120, sb->n_members);
	put32(b + 124, sb->slot);
	put32(b + 128, sb->flags);
	put32(b + 132, sb->bitmap_bytes);
	put64(b + 136, sb->events);
	put64(b + 144, sb->data_offset);
	put64(b + 152, sb->data_size);
	put64(b + 160, sb->bitmap_offset);
	put32(b + 168, sb->bitmap_chunk);
	put32(b + 172, sb->rebuild_slot);
	put64(b + 176, sb->rebuild_pos);
	put32(b + 184, sb->n_slots);
	put32(b + 188, sb->n_vols);
	put64(b + 192, sb->sync_pos);
	put32(b + 200, sb->n_bad);
	put64(b + 208, sb->replace_pos);
	put32(b + 216, sb->reshape_level);
	put32(b + 220, sb->reshape_n);
	put64(b + 224, sb->reshape_pos);
	put64(b + 232, sb->backup_pos);
	put32(b + 240, sb->backup_len);
	put32(b + 244, sb->backup_crc);
	for (i = 0; i < sb->n_bad && i < RAID_MAX_BAD; i++) {
		uint8_t *r = b + SB_BAD_OFF + i * SB_BAD_SIZE;

		put32(r, sb->bad[i].slot);
		put64(r + 8, sb->bad[i].a);
		put64(r + 16, sb->bad[i].b);
	}
	for (i = 0; i < sb->n_slots && i < RAID_MAX_SLOTS; i++) {
		uint8_t *s = b + SB_SLOTS_OFF + i * SB_SLOT_SIZE;

		put32(s, sb->slots[i].state);
		memcpy(s + 4, sb->slots[i].uuid, 16);
		put32(s + 20, sb->slots[i].repl);
	}
	for (i = 0; i < sb->n_vols && i < RAID_MAX_VOLS; i++) {
		uint8_t *v = b + SB_VOLS_OFF + i * SB_VOL_SIZE;

		memcpy(v, sb->vols[i].name, strnlen(sb->vols[i].name, 63));
		memcpy(v + 64, sb->vols[i].uuid, 16);
		put64(v + 80, sb->vols[i].start);
		put64(v + 88, sb->vols[i].size);
		put64(v + 96, sb->vols[i].extent);
		put32(v + 104, sb->vols[i].flags);
		put64(v + 112, sb->vols[i].thin_ext);
		v = b + SB_VOLX_OFF + i * SB_VOLX_SIZE;
		put64(v, sb->vols[i].family);
		memcpy(v + 8, sb->vols[i].origin, strnlen(sb->vols[i].origin, 63));
	}
	put32(b + SB_CRC_OFF, crc32_iscsi(b, (int)SB_CRC_OFF, 0xffffffffu));
}

int raid_sb_decode(const uint8_t *b, struct raid_sb *sb, const char **why)
{
	unsigned i;

	*why = NULL;
	if (memcmp(b, SB_MAGIC, 8)) {
		*why = "no rtgt superblock (bad magic)";
		return -EINVAL;
	}
	if (get32(b + SB_CRC_OFF) != crc32_iscsi((unsigned char *)b, (int)SB_CRC_OFF, 0xffffffffu)) {
		*why = "superblock checksum mismatch";
		return -EINVAL;
	}
	if (get32(b + 8) != RAID_SB_VERSION || get32(b + 12) != RAID_SB_SIZE) {
		*why = "unsupported superblock version";
		return -EINVAL;
	}
	memset(sb, 0, sizeof(*sb));
	sb->version = get32(b + 8);
	memcpy(sb->pool_uuid, b + 16, 16);
	memcpy(sb->member_uuid, b + 32, 16);
	memcpy(sb->name, b + 48, 63);
	sb->level = get32(b + 112);
	sb->chunk = get32(b + 116);
	sb->n_members = get32(b + 120);
	sb->slot = get32(b + 124);
	sb->flags = get32(b + 128);
	sb->bitmap_bytes = get32(b + 132);
	sb->events = get64(b + 136);
	sb->data_offset = get64(b + 144);
	sb->data_size = get64(b + 152);
	sb->bitmap_offset = get64(b + 160);
	sb->bitmap_chunk = get32(b + 168);
	sb->rebuild_slot = get32(b + 172);
	sb->rebuild_pos = get64(b + 176);
	sb->n_slots = get32(b + 184);
	sb->n_vols = get32(b + 188);
	sb->sync_pos = get64(b + 192);
	sb->n_bad = get32(b + 200);
	sb->replace_pos = get64(b + 208);
	sb->reshape_level = get32(b + 216);
	sb->reshape_n = get32(b + 220);
	sb->reshape_pos = get64(b + 224);
	sb->backup_pos = get64(b + 232);
	sb->backup_len = get32(b + 240);
	sb->backup_crc = get32(b + 244);
	if (sb->n_bad > RAID_MAX_BAD ||
	    (sb->flags & RAID_SB_RESHAPE &&
	     (sb->reshape_level > CONF_RAID10 || sb->reshape_n == 0 ||
	      sb->reshape_n >= sb->n_members))) {
		*why = "superblock fields out of range";
		return -EINVAL;
	}
	for (i = 0; i < sb->n_bad; i++) {
		const uint8_t *r = b + SB_BAD_OFF + i * SB_BAD_SIZE;

		sb->bad[i].slot = get32(r);
		sb->bad[i].a = get64(r + 8);
		sb->bad[i].b = get64(r + 16);
	}
	if (sb->n_slots > RAID_MAX_SLOTS || sb->n_vols > RAID_MAX_VOLS ||
	    sb->n_members > sb->n_slots || sb->slot >= sb->n_slots || sb->chunk == 0 ||
	    sb->level > CONF_RAID10) {
		*why = "superblock fields out of range";
		return -EINVAL;
	}
	for (i = 0; i < sb->n_slots; i++) {
		const uint8_t *s = b + SB_SLOTS_OFF + i * SB_SLOT_SIZE;

		sb->slots[i].state = get32(s);
		memcpy(sb->slots[i].uuid, s + 4, 16);
		sb->slots[i].repl = get32(s + 20);
		/* a replacement sits in a spare slot and names a raid disk */
		if ((sb->slots[i].state == RAID_M_REPLACING) !=
		    (sb->slots[i].repl != 0) ||
		    (sb->slots[i].repl && (i < sb->n_members || sb->slots[i].repl > sb->n_members))) {
			*why = "superblock fields out of range";
			return -EINVAL;
		}
	}
	for (i = 0; i < sb->n_vols; i++) {
		const uint8_t *v = b + SB_VOLS_OFF + i * SB_VOL_SIZE;

		memcpy(sb->vols[i].name, v, 63);
		memcpy(sb->vols[i].uuid, v + 64, 16);
		sb->vols[i].start = get64(v + 80);
		sb->vols[i].size = get64(v + 88);
		sb->vols[i].extent = get64(v + 96);
		sb->vols[i].flags = get32(v + 104);
		sb->vols[i].thin_ext = get64(v + 112);
		sb->vols[i].family = get64(b + SB_VOLX_OFF + i * SB_VOLX_SIZE);
		memcpy(sb->vols[i].origin, b + SB_VOLX_OFF + i * SB_VOLX_SIZE + 8, 63);
		if ((sb->vols[i].flags & ~(RAID_SBV_THIN | RAID_SBV_SNAP)) ||
		    ((sb->vols[i].flags & RAID_SBV_SNAP) && !(sb->vols[i].flags & RAID_SBV_THIN)) ||
		    (sb->vols[i].flags & RAID_SBV_THIN &&
		     (sb->vols[i].thin_ext == 0 || sb->vols[i].thin_ext % 4096))) {
			*why = "superblock fields out of range";
			return -EINVAL;
		}
	}
	return 0;
}

static int pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, buf + done, len - done, (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ENODATA;
		done += (size_t)r;
	}
	return 0;
}

int raid_sb_read(int fd, struct raid_sb *sb)
{
	uint8_t *buf = raid_alloc(RAID_SB_SIZE);
	struct raid_sb tmp;
	const char *why;
	int rc, best = -ENOENT, ioerr = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < 2; i++) {
		rc = pread_full(fd, buf, RAID_SB_SIZE, RAID_SB_COPY_OFF(i));
		if (rc == -ENODATA)
			continue;       /* file too short: blank */
		if (rc) {
			ioerr = rc;
			continue;
		}
		if (raid_sb_decode(buf, &tmp, &why))
			continue;
		if (best == -ENOENT || tmp.events > sb->events) {
			*sb = tmp;
			best = 0;
		}
	}
	free(buf);
	if (best == -ENOENT && ioerr)
		return ioerr;
	return best;
}

int raid_sb_write(int fd, const struct raid_sb *sb)
{
	uint8_t *buf = raid_alloc(RAID_SB_SIZE);
	uint64_t off = RAID_SB_COPY_OFF(sb->events & 1);
	size_t done = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	raid_sb_encode(sb, buf);
	while (done < RAID_SB_SIZE) {
		ssize_t w = pwrite(fd, buf + done, RAID_SB_SIZE - done, (off_t)(off + done));

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out_free;
		}
		done += (size_t)w;
	}
	if (fdatasync(fd))
		rc = -errno;
out_free:
	free(buf);
	return rc;
}
