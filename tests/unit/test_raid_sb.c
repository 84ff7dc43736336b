/*
 * tests/unit/test_raid_sb.c - superblock encoding, checksum, and the two
 * alternating copies surviving a torn write.
 *
 * 01 every field survives encode/decode; a flipped bit or a bad magic is
 *    refused.
 * 02 the copies alternate: a torn write of one leaves the other.
 * 03 the reshape fields (RAID_SB_RESHAPE) survive encode/decode; an old
 *    layout with as many members as the new one is refused.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

static char path[64];
static int fd = -1;

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/rtgt-sb-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 2 << 20), 0);
}

static void teardown(void)
{
	close(fd);
	unlink(path);
}

static void sample(struct raid_sb *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->version = RAID_SB_VERSION;
	memset(sb->pool_uuid, 0x11, 16);
	memset(sb->member_uuid, 0x22, 16);
	snprintf(sb->name, sizeof(sb->name), "tank");
	sb->level = CONF_RAID6;
	sb->chunk = 65536;
	sb->n_members = 5;
	sb->n_slots = 6;
	sb->slot = 2;
	sb->events = 41;
	sb->data_offset = RAID_DATA_OFF;
	sb->data_size = 123 * 65536;
	sb->rebuild_slot = 5;
	sb->rebuild_pos = 7 * 65536;
	for (unsigned i = 0; i < 6; i++) {
		sb->slots[i].state = i == 5 ? RAID_M_SPARE : RAID_M_ACTIVE;
		memset(sb->slots[i].uuid, (int)i + 1, 16);
	}
	sb->n_vols = 2;
	snprintf(sb->vols[0].name, 64, "vol0");
	memset(sb->vols[0].uuid, 0xab, 16);
	sb->vols[0].start = 0;
	sb->vols[0].size = 1 << 20;
	sb->vols[0].extent = 3 << 18;
	snprintf(sb->vols[1].name, 64, "vol1");
	sb->vols[1].start = 3 << 18;
	sb->vols[1].size = 512;
	sb->vols[1].extent = 3 << 16;
	sb->flags = RAID_SB_SYNCING;
	sb->sync_pos = 9 * 65536;
	sb->n_bad = 2;
	sb->bad[0].slot = 3;
	sb->bad[0].a = 65536;
	sb->bad[0].b = 4 * 65536;
	sb->bad[1].slot = 5;
	sb->bad[1].a = 0;
	sb->bad[1].b = 123 * 65536;
}

START_TEST(t01_encode_decode)
{
	struct raid_sb a, b;
	uint8_t *buf = raid_alloc(RAID_SB_SIZE);
	const char *why;

	sample(&a);
	raid_sb_encode(&a, buf);
	ck_assert_int_eq(raid_sb_decode(buf, &b, &why), 0);
	ck_assert(memcmp(&a, &b, sizeof(a)) == 0);
	buf[300] ^= 1;
	ck_assert_int_eq(raid_sb_decode(buf, &b, &why), -EINVAL);
	ck_assert_str_eq(why, "superblock checksum mismatch");
	buf[300] ^= 1;
	buf[0] = 'X';
	ck_assert_int_eq(raid_sb_decode(buf, &b, &why), -EINVAL);
	free(buf);
}
END_TEST

START_TEST(t03_reshape_fields)
{
	struct raid_sb a, b;
	uint8_t *buf = raid_alloc(RAID_SB_SIZE);
	const char *why;

	sample(&a);
	a.flags = RAID_SB_RESHAPE;
	a.sync_pos = 0;
	a.reshape_level = CONF_RAID5;
	a.reshape_n = 4;
	a.reshape_pos = 17ull << 20;
	a.backup_pos = 17ull << 20;
	a.backup_len = 1u << 20;
	a.backup_crc = 0xdeadbeefu;
	raid_sb_encode(&a, buf);
	ck_assert_int_eq(raid_sb_decode(buf, &b, &why), 0);
	ck_assert(memcmp(&a, &b, sizeof(a)) == 0);
	a.reshape_n = 5;          /* not fewer raid disks than n_members */
	raid_sb_encode(&a, buf);
	ck_assert_int_eq(raid_sb_decode(buf, &b, &why), -EINVAL);
	ck_assert_str_eq(why, "superblock fields out of range");
	free(buf);
}
END_TEST

START_TEST(t02_alternating_copies)
{
	struct raid_sb a, b;
	uint8_t junk[512];

	ck_assert_int_eq(raid_sb_read(fd, &b), -ENOENT);   /* blank */
	sample(&a);
	a.events = 5;
	ck_assert_int_eq(raid_sb_write(fd, &a), 0);
	a.events = 6;
	a.vols[1].size = 1024;
	ck_assert_int_eq(raid_sb_write(fd, &a), 0);
	ck_assert_int_eq(raid_sb_read(fd, &b), 0);
	ck_assert_uint_eq(b.events, 6);
	ck_assert_uint_eq(b.vols[1].size, 1024);
	/* tear the newest copy (events 6 -> copy 0): the older one is used */
	memset(junk, 0x77, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)RAID_SB_COPY_OFF(0) + 4096), 512);
	ck_assert_int_eq(raid_sb_read(fd, &b), 0);
	ck_assert_uint_eq(b.events, 5);
	ck_assert_uint_eq(b.vols[1].size, 512);
	/* the next write goes to copy 1 (events 7) and wins */
	a.events = 7;
	ck_assert_int_eq(raid_sb_write(fd, &a), 0);
	ck_assert_int_eq(raid_sb_read(fd, &b), 0);
	ck_assert_uint_eq(b.events, 7);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_encode_decode", t01_encode_decode, .no_fixture = true),
		CK_CASE("02_alternating_copies", t02_alternating_copies),
		CK_CASE("03_reshape_fields", t03_reshape_fields, .no_fixture = true),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_sb", CK_CASES(cases), .setup = setup, .teardown = teardown });
}
