/*
 * tests/fuzz/fuzz_sb.c - the member superblock: raid_sb_decode() on what a
 * member file holds, and pool assembly (raid_pool_open()) from a member
 * carrying that superblock.
 *
 * Input: byte 0 is the mode; the rest is laid over a valid superblock (from
 * a real RAID1 pool made at start-up) from offset 0, the remainder of the
 * RAID_SB_SIZE block kept from that template.
 *   bit0 set: keep the checksum as given (exercises the checksum refusal);
 *             clear: recompute it, so that mutations reach the field checks.
 *   bit1 set: also write the block into both superblock copies of member 0
 *             of the template pool and assemble the pool, then open its
 *             volume; the members' first 1 MiB (superblocks and bitmap) are
 *             restored from the template for every input.
 *
 * Properties: decode succeeds or says why; encode(decode(b)) is a fixed
 * point (decoding and encoding it again gives the same bytes, and the
 * checksum of what we encode always verifies); a decoded superblock
 * respects its documented ranges; assembly from a hostile superblock fails
 * cleanly or yields a pool that opens and closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_raid1.h"

#define HEAD_BYTES RAID_DATA_OFF       /* superblocks + bitmap of a member */

static struct {
	struct fz_raid1 r;
	uint8_t *tmpl[2];                  /* HEAD_BYTES of each member */
	uint8_t sb[RAID_SB_SIZE];          /* member 0's current superblock */
} g;

static void teardown(void)
{
	fz_raid1_remove(&g.r);
	free(g.tmpl[0]);
	free(g.tmpl[1]);
}

static int pread_all(const char *p, uint8_t *buf, size_t len)
{
	int fd = open(p, O_RDONLY);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = pread(fd, buf, len, 0);
	close(fd);
	return r == (ssize_t)len ? 0 : -EIO;
}

static void pwrite_all(const char *p, const uint8_t *buf, size_t len, uint64_t off)
{
	int fd = open(p, O_WRONLY);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len);
	FUZZ_CHECK(close(fd) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct conf_size sz = { .bytes = 1u << 20 };
	struct raid_pool *pool;
	struct raid_vol *vol;
	struct raid_sb sb;

	conf_log_set_level(CONF_LOG_ERROR);
	fz_raid1_init(&g.r, "sb", 4u << 20);
	atexit(teardown);
	g.tmpl[0] = malloc(HEAD_BYTES);
	g.tmpl[1] = malloc(HEAD_BYTES);
	if (!g.tmpl[0] || !g.tmpl[1] || raid_pool_open(&g.r.cp, &pool)) {
		fprintf(stderr, "fuzz_sb: cannot create the template pool in %s\n", g.r.dir);
		exit(1);
	}
	if (raid_vol_open(pool, "v0", &sz, &vol)) {
		fprintf(stderr, "fuzz_sb: cannot create the template volume\n");
		exit(1);
	}
	raid_pool_close(pool);
	if (pread_all(g.r.m0, g.tmpl[0], HEAD_BYTES) || pread_all(g.r.m1, g.tmpl[1], HEAD_BYTES)) {
		fprintf(stderr, "fuzz_sb: cannot read the template members\n");
		exit(1);
	}
	/* the copy with the higher event counter is the current one */
	{
		struct raid_sb a, b;
		const char *why;
		int ra = raid_sb_decode(g.tmpl[0] + RAID_SB_COPY_OFF(0), &a, &why);
		int rb = raid_sb_decode(g.tmpl[0] + RAID_SB_COPY_OFF(1), &b, &why);

		if (ra && rb) {
			fprintf(stderr, "fuzz_sb: template has no valid superblock\n");
			exit(1);
		}
		sb = (!ra && (rb || a.events >= b.events)) ? a : b;
		raid_sb_encode(&sb, g.sb);
	}
	return 0;
}

static void fix_crc(uint8_t *b)
{
	uint32_t crc = crc32_iscsi(b, (int)(RAID_SB_SIZE - 4), 0xffffffffu);

	for (int i = 0; i < 4; i++)
		b[RAID_SB_SIZE - 4 + i] = (uint8_t)(crc >> (8 * i));
}

static void check_decoded(const struct raid_sb *sb)
{
	FUZZ_CHECK(sb->n_slots <= RAID_MAX_SLOTS && sb->n_vols <= RAID_MAX_VOLS);
	FUZZ_CHECK(sb->n_members <= sb->n_slots && sb->slot < sb->n_slots);
	FUZZ_CHECK(sb->chunk != 0 && sb->level <= CONF_RAID10);
	FUZZ_CHECK(memchr(sb->name, '\0', sizeof(sb->name)) != NULL);
	for (unsigned i = 0; i < sb->n_vols; i++)
		FUZZ_CHECK(memchr(sb->vols[i].name, '\0', sizeof(sb->vols[i].name)) != NULL);
}

static void assemble(const uint8_t *blk)
{
	struct conf_size sz = { .bytes = 1u << 20 };
	struct raid_pool *pool = NULL;
	struct raid_vol *vol = NULL;

	pwrite_all(g.r.m0, g.tmpl[0], HEAD_BYTES, 0);
	pwrite_all(g.r.m1, g.tmpl[1], HEAD_BYTES, 0);
	pwrite_all(g.r.m0, blk, RAID_SB_SIZE, RAID_SB_COPY_OFF(0));
	pwrite_all(g.r.m0, blk, RAID_SB_SIZE, RAID_SB_COPY_OFF(1));
	if (raid_pool_open(&g.r.cp, &pool))
		return;
	FUZZ_CHECK(pool != NULL);
	(void)raid_vol_open(pool, "v0", &sz, &vol);
	raid_pool_close(pool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t blk[RAID_SB_SIZE], again[RAID_SB_SIZE], third[RAID_SB_SIZE];
	static struct raid_sb sb, sb2;
	const char *why = NULL;
	size_t n;
	int rc;

	if (size < 1)
		return 0;
	n = size - 1 > RAID_SB_SIZE ? RAID_SB_SIZE : size - 1;
	memcpy(blk, g.sb, RAID_SB_SIZE);
	memcpy(blk, data + 1, n);
	if (!(data[0] & 1))
		fix_crc(blk);

	rc = raid_sb_decode(blk, &sb, &why);
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL && why && why[0]);
	} else {
		check_decoded(&sb);
		raid_sb_encode(&sb, again);
		FUZZ_CHECK(raid_sb_decode(again, &sb2, &why) == 0);
		check_decoded(&sb2);
		raid_sb_encode(&sb2, third);
		FUZZ_CHECK(memcmp(again, third, RAID_SB_SIZE) == 0);
	}
	if (data[0] & 2)
		assemble(blk);
	return 0;
}
