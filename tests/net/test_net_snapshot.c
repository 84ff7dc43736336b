/*
 * tests/net/test_net_snapshot.c - snapshots of thin volumes on RAID pools
 * (raid/thin.c "Sharing", raid/vol.c, target/daemon/vols.c), through a real
 * bin/rtgtd driven with libiscsi and bin/rtgtctl.
 *
 * 01 a thin LUN v0 (64 MiB) on a raid5 pool of 4 member files that held
 *    random bytes, 16 MiB written (pattern A). `rtgtctl snapshot p v0 s1`:
 *    exit 0; `volume list p --json`: v0@s1 is a snapshot of origin v0 with
 *    v0's allocation, every byte of both shared, none exclusive. Then v0 is
 *    written while the snapshot shares it: 1 MiB writes that do not line up
 *    with the extents (copies that keep the rest of the extent), a 4 KiB
 *    write, a whole-extent write (no read of the old), a partial UNMAP
 *    (zeroes into a copy) and an UNMAP of a whole shared extent (the entry
 *    goes, the snapshot keeps it). Refusals, each exit 1, one line, nothing
 *    changed: the name again, a name with '@', no such volume, volume
 *    delete of v0 (a LUN has it open), snapshot delete of a volume.
 *    SIGTERM, a start with LUN 1 volume = "v0@s1" (no size): LUN 0 reads
 *    what was written last, LUN 1 reads exactly pattern A and zeroes
 *    beyond (what was acknowledged before the snapshot), WRITE(16) and
 *    UNMAP to LUN 1 get DATA PROTECT, WRITE PROTECTED (07/27/00), MODE
 *    SENSE(6) has WP set; `snapshot delete` of the open snapshot is
 *    refused. SIGTERM, a start without LUN 1: snapshot delete succeeds,
 *    the pool's thin_used_bytes falls to v0's allocation (the space only
 *    the snapshot held is free), nothing is shared any more, and v0 still
 *    reads the same.
 * 02 a snapshot while writes are in flight: 8 commands kept in flight on
 *    v0 (libiscsi async) over 4 MiB of 64 KiB blocks, each a per-block,
 *    per-generation pattern; the snapshot is taken from another thread
 *    mid-run and the time rtgtctl took printed, then 200 more writes. Every
 *    write acknowledged
 *    before the snapshot command was sent is in the snapshot; every block
 *    of the snapshot holds a whole generation (never a mix), and after a
 *    SIGKILL and a start the snapshot still reads exactly that and v0 the
 *    last acknowledged generation of each block.
 * 03 clone, rollback, create, inflate: v0 written (A, 8 MiB), snapshot s1,
 *    0..4 MiB rewritten (B). `clone p v0@s1 c1`: c1 is thin, origin v0@s1,
 *    all its bytes shared. Refused, one line, exit 1: the clone again, a
 *    clone of no snapshot, deleting v0@s1 (c1 depends on it), rollback of
 *    the exported v0 without --force. `rollback p v0@s1 --force`: the
 *    session's next command gets 29/03 (BUS DEVICE RESET FUNCTION
 *    OCCURRED) and v0 reads A again. `volume create` of a thin and a thick
 *    volume (the name again is refused); a start exporting c1 and the new
 *    thin volume: c1 reads A and takes writes (C) while v0 stays A; the new
 *    volume reads zeroes. Without c1's LUN: `volume inflate p c1` copies
 *    its shared extents (nothing shared, origin ""), then v0@s1 may be
 *    deleted; deleting the thick volume gives its space to thin volumes
 *    (thin_space_bytes grows by its size); c1 still reads C then A.
 * 04 SIGKILL at every step (RTGT_CRASH_POINT, raid/fault.h): v0 holds A
 *    with B over its first 2 MiB, snapshot s1 holds A, clone c1 of s1;
 *    then, for each point, a start that dies there during one operation
 *    and a start after it: a snapshot (map-copied, map-written,
 *    snap-table) and a clone (map-written, clone-table) exist whole (and
 *    read what they were taken of) or not at all; a copy on write
 *    (cow-data, cow-map) leaves v0's extent all old or all new and s1
 *    untouched; a snapshot delete (delete-table, of a second snapshot s3
 *    that nothing depends on) leaves it whole or gone;
 *    a rollback (rollback-map, rollback-table) leaves v0 all before or all
 *    rolled back; an inflate (inflate-copy) leaves c1 reading the same and
 *    finishes when run again. Every time `rtgtctl check p` finds the maps
 *    consistent: no extent leaked or named twice.
 * 05 libiscsi's whole suite on a clone: `THIN=1 CLONE=1 LEVEL=raid5
 *    scripts/conformance.sh` (LUN 0 a clone of a written volume's
 *    snapshot, sharing its extents) exits 0, no thin-provisioning test
 *    skipped; the known GetLBAStatus.UnmapSingle assertion (the script's
 *    header says why) is reported apart.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_io.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define MIB (1u << 20)
#define V0  (64ull << 20)

static struct harness_daemon D;
static struct iscsi_context *C;
static uint8_t zero[MIB];

static void setup(void)
{
	nf_setup(&D);
	C = NULL;
}

static void teardown(void)
{
	if (C)
		iscsi_destroy_context(C);
	C = NULL;
	harness_fini(&D);
}

static void write_conf(const char *luns)
{
	char members[256];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", 4), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid5\"; chunk = \"64K\";\n"
		"            members = ( %s ); } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( %s );\n"
		"  allow = ( \"ALL\" ); } );\n",
		members, D.port, luns), 0);
}

static void random_members(uint64_t bytes, uint64_t seed)
{
	static uint8_t buf[MIB];

	for (unsigned i = 0; i < 4; i++) {
		char path[256];
		int fd;

		snprintf(path, sizeof(path), "%s/d%u.img", D.dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
		for (uint64_t off = 0; off < bytes; off += MIB) {
			harness_fill_random(buf, MIB, seed + i * 100003u + off / MIB);
			ck_assert_int_eq(pwrite(fd, buf, MIB, (off_t)off), MIB);
		}
		close(fd);
	}
}

/* A session with the power-on unit attentions of LUNs 0..2 taken */
static struct iscsi_context *login(void)
{
	struct iscsi_context *c = nf_login(&D, 0, &(struct harness_login){ 0 });

	for (int lun = 0; lun < 3; lun++)
		for (int i = 0; i < 4; i++) {
			struct scsi_task *t = iscsi_testunitready_sync(c, lun);
			bool good = t && t->status == SCSI_STATUS_GOOD;

			scsi_free_scsi_task(t);
			if (good)
				break;
		}
	return c;
}

static const char *LUN_V0 = "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; }";

/* every 512-byte sector a function of its offset and @seed */
static void pat_fill(uint8_t *buf, uint64_t off, uint64_t len, uint64_t seed)
{
	for (uint64_t s = 0; s < len / 512; s++)
		harness_fill_random(buf + s * 512, 512,
				    seed * 0x9E3779B97F4A7C15ull ^ (off / 512 + s + 1));
}

static const char *task_err(struct iscsi_context *c, const struct scsi_task *t)
{
	static char b[160];

	if (!t)
		return iscsi_get_error(c);
	snprintf(b, sizeof(b), "status %d sense key %d asc/ascq 0x%04x", t->status, t->sense.key,
		 t->sense.ascq);
	return b;
}

static void write_buf(struct iscsi_context *c, int lun, uint64_t off, const uint8_t *buf,
		      uint32_t len)
{
	struct scsi_task *t = iscsi_write16_sync(c, lun, off / 512, (unsigned char *)buf, len, 512,
						 0, 0, 0, 0, 0);

	if (!t || t->status != SCSI_STATUS_GOOD)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 of LUN %d at %llu len %u: %s",
		      lun, (unsigned long long)off, len, task_err(c, t));
	scsi_free_scsi_task(t);
}

static void write_pat(struct iscsi_context *c, int lun, uint64_t off, uint64_t len,
		      uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		uint32_t n = len - o < MIB ? (uint32_t)(len - o) : MIB;

		pat_fill(buf, off + o, n, seed);
		write_buf(c, lun, off + o, buf, n);
	}
}

static void unmap_good(struct iscsi_context *c, int lun, uint64_t off, uint64_t len)
{
	struct unmap_list l = { .lba = off / 512, .num = (uint32_t)(len / 512) };
	struct scsi_task *t = iscsi_unmap_sync(c, lun, 0, 0, &l, 1);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "UNMAP at %llu len %llu: %s",
		      (unsigned long long)off, (unsigned long long)len, task_err(c, t));
	scsi_free_scsi_task(t);
}

/* What v0 holds in test 01, as the test wrote it: the seed of every
 * 512-byte sector (0: zeroes). */
static uint8_t model[V0 / 512];

static void model_set(uint64_t off, uint64_t len, uint8_t seed)
{
	memset(model + off / 512, seed, len / 512);
}

/* [off, off + len) of LUN @lun holds what @m says */
static void expect_model(struct iscsi_context *c, int lun, const uint8_t *m, uint64_t off,
			 uint64_t len)
{
	static uint8_t want[MIB];

	for (uint64_t o = off; o < off + len; o += MIB) {
		uint32_t n = off + len - o < MIB ? (uint32_t)(off + len - o) : MIB;

		for (uint32_t s = 0; s < n / 512; s++) {
			uint8_t seed = m[(o / 512) + s];

			if (seed)
				pat_fill(want + s * 512, o + s * 512, 512, seed);
			else
				memset(want + s * 512, 0, 512);
		}
		lio_expect(c, lun, o, want, n);
	}
}

/* `rtgtctl volume list p --json`: the entry named @name (a copy the caller
 * puts), NULL when none */
static struct json_object *vol_entry(const char *name)
{
	static char out[1 << 16];
	struct json_object *root, *vols, *found = NULL;
	int rc = rj_ctl(&D, out, sizeof(out), "volume", "list", "p", "--json", NULL);

	ck_assert_msg(rc == 0, "volume list exited %d: %s", rc, out);
	root = json_tokener_parse(out);
	ck_assert_msg(root && json_object_object_get_ex(root, "volumes", &vols), "volume list: %s",
		      out);
	for (size_t i = 0; i < json_object_array_length(vols); i++) {
		struct json_object *v = json_object_array_get_idx(vols, i);

		if (!strcmp(rj_str(v, "name"), name))
			found = json_object_get(v);
	}
	json_object_put(root);
	return found;
}

static int64_t pool_int(const char *key)
{
	struct json_object *root, *p = rj_status_pool(&D, "p", &root);
	int64_t v = rj_int(p, key);

	json_object_put(root);
	return v;
}

/* rtgtctl with the NULL-terminated @a (at most 6), its output in @out */
static int ctl_v(const char *const *a, char *out, size_t len)
{
	const char *x[6] = { NULL };

	for (int i = 0; i < 6 && a[i]; i++)
		x[i] = a[i];
	return rj_ctl(&D, out, len, x[0], x[1], x[2], x[3], x[4], x[5], NULL);
}

/* rtgtctl ARGS must exit 1 with one line containing @needle */
static void refused_v(const char *needle, const char *const *a)
{
	char out[1024];
	int rc = ctl_v(a, out, sizeof(out));

	ck_assert_msg(rc == 1, "rtgtctl %s %s %s: exit %d, want 1: %s", a[0], a[1], a[2], rc, out);
	ck_assert_msg(strstr(out, needle), "rtgtctl %s %s %s: '%s' not in: %s", a[0], a[1], a[2],
		      needle, out);
	ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "more than one line: %s", out);
}
#define refused(needle, ...) refused_v(needle, (const char *const[]){ __VA_ARGS__, NULL })

/* rtgtctl ARGS must exit 0 with @needle in its output */
static void ctl_ok_v(const char *needle, const char *const *a)
{
	char out[2048];
	int rc = ctl_v(a, out, sizeof(out));

	ck_assert_msg(rc == 0 && strstr(out, needle), "rtgtctl %s %s %s: exit %d: %s", a[0], a[1],
		      a[2], rc, out);
}
#define ctl_ok(needle, ...) ctl_ok_v(needle, (const char *const[]){ __VA_ARGS__, NULL })

static bool sense_is(const struct scsi_task *t, int key, int ascq)
{
	return t && t->status == SCSI_STATUS_CHECK_CONDITION && (int)t->sense.key == key &&
	       (int)t->sense.ascq == ascq;
}

START_TEST(t01_snapshot_cow)
{
	struct json_object *v, *s;
	struct scsi_task *t;
	char out[2048];
	uint64_t g, alloc_v0, used_before, used_after, used_with, snap_excl;
	static uint8_t snap_model[V0 / 512];
	int rc;

	random_members(64ull << 20, 0x3801);
	write_conf(LUN_V0);
	nf_start(&D);
	C = login();
	write_pat(C, 0, 0, 16ull << 20, 1);
	model_set(0, 16ull << 20, 1);

	rc = rj_ctl(&D, out, sizeof(out), "snapshot", "p", "v0", "s1", NULL);
	ck_assert_msg(rc == 0 && strstr(out, "snapshot v0@s1 taken"), "snapshot: exit %d: %s", rc,
		      out);
	memcpy(snap_model, model, sizeof(model));
	v = vol_entry("v0");
	s = vol_entry("v0@s1");
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(rj_str(s, "type"), "snapshot");
	ck_assert_str_eq(rj_str(s, "origin"), "v0");
	ck_assert_str_eq(rj_str(v, "type"), "thin");
	ck_assert_int_eq(rj_int(s, "size"), (int64_t)V0);
	alloc_v0 = (uint64_t)rj_int(v, "allocated");
	ck_assert_msg(alloc_v0 >= (16ull << 20) && alloc_v0 < (16ull << 20) + 2 * MIB,
		      "v0 allocated %llu", (unsigned long long)alloc_v0);
	ck_assert_int_eq(rj_int(s, "allocated"), (int64_t)alloc_v0);
	ck_assert_int_eq(rj_int(s, "shared"), (int64_t)alloc_v0);
	ck_assert_int_eq(rj_int(v, "shared"), (int64_t)alloc_v0);
	ck_assert_int_eq(rj_int(v, "exclusive"), 0);
	json_object_put(v);
	json_object_put(s);
	used_before = (uint64_t)pool_int("thin_used_bytes");
	ck_assert_uint_eq(used_before, alloc_v0);

	/* writes into shared extents: each copies the extent first */
	{
		struct scsi_task *bl = iscsi_inquiry_sync(C, 0, 1, 0xb0, 64);
		struct scsi_inquiry_block_limits *b;

		ck_assert_msg(bl && bl->status == SCSI_STATUS_GOOD, "VPD B0: %s", task_err(C, bl));
		b = scsi_datain_unmarshall(bl);
		ck_assert_ptr_nonnull(b);
		g = (uint64_t)b->opt_unmap_gran * 512;
		scsi_free_scsi_task(bl);
	}
	printf("01_snapshot_cow: extent %llu bytes\n", (unsigned long long)g);
	ck_assert_msg(g > MIB && g < 2 * MIB, "extent %llu", (unsigned long long)g);
	write_pat(C, 0, 0, 4ull << 20, 2);                 /* 1 MiB pieces across extents */
	model_set(0, 4ull << 20, 2);
	write_pat(C, 0, 6 * g + 4096, 4096, 3);            /* a small write */
	model_set(6 * g + 4096, 4096, 3);
	write_pat(C, 0, 8 * g, g, 4);                      /* a whole extent */
	model_set(8 * g, g, 4);
	unmap_good(C, 0, 10 * g + 65536, 65536);           /* part of a shared extent */
	model_set(10 * g + 65536, 65536, 0);
	unmap_good(C, 0, 11 * g, g);                       /* a whole shared extent */
	model_set(11 * g, g, 0);
	expect_model(C, 0, model, 0, V0);

	/* refusals: one line each, exit 1, nothing changed */
	refused("exists already", "snapshot", "p", "v0", "s1");
	refused("characters", "snapshot", "p", "v0", "a@b");
	refused("no volume v9", "snapshot", "p", "v9", "s1");
	refused("in use", "volume", "delete", "p", "v0");
	refused("not a snapshot", "snapshot", "delete", "p", "v0");
	refused("no pool", "snapshot", "q", "v0", "s2");
	v = vol_entry("v0@a");
	ck_assert_ptr_null(v);

	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "before exporting the snapshot");
	write_conf("{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"v0@s1\"; }");
	nf_start(&D);
	C = login();
	expect_model(C, 0, model, 0, V0);
	expect_model(C, 1, snap_model, 0, V0);
	t = iscsi_write16_sync(C, 1, 0, zero, 4096, 512, 0, 0, 0, 0, 0);
	ck_assert_msg(sense_is(t, SCSI_SENSE_DATA_PROTECTION, 0x2700),
		      "WRITE 16 to the snapshot: %s", task_err(C, t));
	scsi_free_scsi_task(t);
	{
		struct unmap_list l = { .lba = 0, .num = 8 };

		t = iscsi_unmap_sync(C, 1, 0, 0, &l, 1);
		ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			      t->sense.key == SCSI_SENSE_DATA_PROTECTION,
			      "UNMAP of the snapshot: %s", task_err(C, t));
		scsi_free_scsi_task(t);
	}
	t = iscsi_modesense6_sync(C, 1, 0, SCSI_MODESENSE_PC_CURRENT, SCSI_MODEPAGE_RETURN_ALL_PAGES,
				  0, 255);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 4,
		      "MODE SENSE 6 of the snapshot: %s", task_err(C, t));
	ck_assert_msg(t->datain.data[2] & 0x80, "MODE SENSE 6: WP not set (byte 2 = 0x%02x)",
		      t->datain.data[2]);
	scsi_free_scsi_task(t);
	expect_model(C, 1, snap_model, 0, V0);
	refused("in use", "snapshot", "delete", "p", "v0@s1");
	s = vol_entry("v0@s1");
	ck_assert_ptr_nonnull(s);
	json_object_put(s);

	harness_iscsi_logout(C);
	C = NULL;
	/* the LUN removed by a reload: its volume is closed, no restart */
	write_conf(LUN_V0);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "volumes no longer exported (closed):\n  p/v0@s1\n"),
		      "reload without the snapshot's LUN: exit %d: %s", rc, out);
	s = vol_entry("v0@s1");
	ck_assert_ptr_nonnull(s);
	snap_excl = (uint64_t)rj_int(s, "exclusive");
	json_object_put(s);
	used_with = (uint64_t)pool_int("thin_used_bytes");
	ck_assert_msg(snap_excl >= 5 * g, "the snapshot's exclusive bytes %llu: fewer than the 5 extents v0 rewrote or unmapped",
		      (unsigned long long)snap_excl);
	rc = rj_ctl(&D, out, sizeof(out), "snapshot", "delete", "p", "v0@s1", NULL);
	ck_assert_msg(rc == 0 && strstr(out, "v0@s1 deleted"), "snapshot delete: exit %d: %s", rc,
		      out);
	ck_assert_ptr_null(vol_entry("v0@s1"));
	v = vol_entry("v0");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(rj_int(v, "shared"), 0);
	ck_assert_int_eq(rj_int(v, "exclusive"), rj_int(v, "allocated"));
	used_after = (uint64_t)pool_int("thin_used_bytes");
	ck_assert_uint_eq(used_after, (uint64_t)rj_int(v, "allocated"));
	ck_assert_uint_eq(used_with - used_after, snap_excl);
	printf("01_snapshot_cow: thin_used_bytes %llu before the writes, %llu with the snapshot's own extents, %llu after its delete\n",
	       (unsigned long long)used_before, (unsigned long long)used_with,
	       (unsigned long long)used_after);
	json_object_put(v);
	C = login();
	expect_model(C, 0, model, 0, V0);
	harness_iscsi_logout(C);
	C = NULL;

	/* a written thin volume whose LUN a reload replaced: closed, then
	 * deleted without a restart */
	write_conf("{ lun = 0; pool = \"p\"; volume = \"v1\"; size = \"8M\"; }");
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "volumes no longer exported (closed):\n  p/v0\n"),
		      "reload with v1 for v0: exit %d: %s", rc, out);
	rc = rj_ctl(&D, out, sizeof(out), "volume", "delete", "p", "v0", NULL);
	ck_assert_msg(rc == 0 && strstr(out, "v0 deleted"), "volume delete: exit %d: %s", rc, out);
	ck_assert_ptr_null(vol_entry("v0"));
	v = vol_entry("v1");
	ck_assert_ptr_nonnull(v);
	json_object_put(v);
	C = login();
	write_pat(C, 0, 0, 1ull << 20, 5);
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "at the end");
}
END_TEST

/* ---- 02: a snapshot under load ---- */

#define BLK   65536u
#define NBLK  64u      /* 4 MiB */
#define QD    8u

struct op {
	struct scsi_task *task;
	bool busy, done;
	int status;
	uint32_t blk, gen;
	uint8_t buf[BLK];
};

static struct op ops[QD];
static uint32_t acked_gen[NBLK];   /* last acknowledged generation */
static uint32_t sent_gen[NBLK];    /* generation in flight (0: none) */
static uint32_t at_snap[NBLK];     /* acknowledged when the snapshot was asked */
static uint32_t low_at_snap[NBLK]; /* highest gen sent when the snapshot returned */

static void blk_fill(uint8_t *buf, uint32_t b, uint32_t gen)
{
	for (uint32_t s = 0; s < BLK / 512; s++)
		harness_fill_random(buf + s * 512, 512, ((uint64_t)b << 32 | gen) * 131 + s);
}

static void op_cb(struct iscsi_context *c, int status, void *command_data, void *priv)
{
	struct op *o = priv;

	(void)c;
	o->task = command_data;
	o->status = status;
	o->done = true;
}

struct snap_thread {
	_Atomic bool go, done;
	int rc;
	uint64_t ms;
	char out[1024];
};

static void *snap_main(void *arg)
{
	struct snap_thread *st = arg;
	uint64_t t0;

	while (!st->go)
		usleep(100);
	t0 = harness_now_ms();
	st->rc = rj_ctl(&D, st->out, sizeof(st->out), "snapshot", "p", "v0", "live", NULL);
	st->ms = harness_now_ms() - t0;
	st->done = true;
	return NULL;
}

START_TEST(t02_snapshot_under_load)
{
	struct snap_thread st = { 0 };
	pthread_t th;
	unsigned sent = 0, acked = 0;
	uint64_t seed = 0x3802;
	static uint8_t buf[BLK];
	/* 0: writes, 1: the snapshot runs, 2: 200 more writes, 3: drain */
	int phase = 0;
	unsigned acked_then = 0;

	random_members(32ull << 20, 0x3802);
	write_conf(LUN_V0);
	nf_start(&D);
	C = login();
	ck_assert_int_eq(pthread_create(&th, NULL, snap_main, &st), 0);
	for (;;) {
		struct pollfd pfd;

		for (unsigned i = 0; i < QD && phase < 3; i++) {
			struct op *o = &ops[i];
			uint32_t b;

			if (o->busy)
				continue;
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b = (uint32_t)(seed >> 33) % NBLK;
			if (sent_gen[b])
				continue;
			o->blk = b;
			o->gen = acked_gen[b] + 1;
			sent_gen[b] = o->gen;
			blk_fill(o->buf, b, o->gen);
			o->busy = true;
			o->done = false;
			ck_assert_ptr_nonnull(iscsi_write16_task(C, 0, (uint64_t)b * BLK / 512, o->buf,
								 BLK, 512, 0, 0, 0, 0, 0, op_cb, o));
			sent++;
		}
		if (phase == 0 && acked >= 200) {
			memcpy(at_snap, acked_gen, sizeof(at_snap));
			phase = 1;
			st.go = true;
		}
		if (phase == 1 && st.done) {
			for (unsigned b = 0; b < NBLK; b++)
				low_at_snap[b] = sent_gen[b] ? sent_gen[b] : acked_gen[b];
			acked_then = acked;
			phase = 2;
		}
		if (phase == 2 && acked >= acked_then + 200)
			phase = 3;
		pfd.fd = iscsi_get_fd(C);
		pfd.events = (short)iscsi_which_events(C);
		ck_assert_int_ge(poll(&pfd, 1, 1000), 0);
		ck_assert_int_eq(iscsi_service(C, pfd.revents), 0);
		for (unsigned i = 0; i < QD; i++) {
			struct op *o = &ops[i];

			if (!o->busy || !o->done)
				continue;
			ck_assert_msg(o->status == SCSI_STATUS_GOOD, "write of block %u: %s", o->blk,
				      task_err(C, o->task));
			scsi_free_scsi_task(o->task);
			acked_gen[o->blk] = o->gen;
			sent_gen[o->blk] = 0;
			o->busy = false;
			acked++;
		}
		if (phase == 3) {
			bool any = false;

			for (unsigned i = 0; i < QD; i++)
				any |= ops[i].busy;
			if (!any)
				break;
		}
	}
	pthread_join(th, NULL);
	ck_assert_msg(st.rc == 0, "snapshot under load: exit %d: %s", st.rc, st.out);
	printf("02_snapshot_under_load: %u writes, snapshot command took %llu ms (rtgtctl start included)\n",
	       acked, (unsigned long long)st.ms);
	harness_iscsi_logout(C);
	C = NULL;

	/* SIGKILL, then a start exporting the snapshot as LUN 1 */
	kill(D.pid, SIGKILL);
	waitpid(D.pid, NULL, 0);
	D.pid = 0;
	write_conf("{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"v0@live\"; }");
	nf_start(&D);
	C = login();
	for (uint32_t b = 0; b < NBLK; b++) {
		struct scsi_task *t = iscsi_read16_sync(C, 1, (uint64_t)b * BLK / 512, BLK, 512, 0, 0,
							0, 0, 0);
		uint32_t found = UINT32_MAX;

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "read snapshot block %u: %s", b,
			      task_err(C, t));
		ck_assert_int_eq(t->datain.size, BLK);
		if (!memcmp(t->datain.data, zero, MIB < BLK ? MIB : BLK))
			found = 0;
		for (uint32_t gen = at_snap[b]; gen <= low_at_snap[b] && found == UINT32_MAX; gen++) {
			if (gen == 0)
				continue;
			blk_fill(buf, b, gen);
			if (!memcmp(t->datain.data, buf, BLK))
				found = gen;
		}
		ck_assert_msg(found != UINT32_MAX && found >= at_snap[b],
			      "snapshot block %u: not a whole generation in [%u, %u]", b, at_snap[b],
			      low_at_snap[b]);
		scsi_free_scsi_task(t);
		if (acked_gen[b]) {
			blk_fill(buf, b, acked_gen[b]);
			lio_expect(C, 0, (uint64_t)b * BLK, buf, BLK);
		}
	}
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "at the end");
}
END_TEST

START_TEST(t03_clone_rollback)
{
	struct json_object *v;
	struct scsi_task *t;
	static uint8_t m_a[V0 / 512], m_c[V0 / 512], m_zero[V0 / 512];
	int64_t space_before, space_after;

	random_members(64ull << 20, 0x3803);
	write_conf(LUN_V0);
	nf_start(&D);
	C = login();
	write_pat(C, 0, 0, 8ull << 20, 1);
	memset(m_a, 0, sizeof(m_a));
	memset(m_a, 1, (8ull << 20) / 512);
	ctl_ok("snapshot v0@s1 taken", "snapshot", "p", "v0", "s1");
	write_pat(C, 0, 0, 4ull << 20, 2);
	ctl_ok("clone c1 of v0@s1 made", "clone", "p", "v0@s1", "c1");
	v = vol_entry("c1");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(rj_str(v, "type"), "thin");
	ck_assert_str_eq(rj_str(v, "origin"), "v0@s1");
	ck_assert_int_gt(rj_int(v, "allocated"), 0);
	ck_assert_int_eq(rj_int(v, "shared"), rj_int(v, "allocated"));
	json_object_put(v);
	refused("exists already", "clone", "p", "v0@s1", "c1");
	refused("no snapshot v0@s9", "clone", "p", "v0@s9", "c2");
	refused("clone c1 depends on v0@s1", "snapshot", "delete", "p", "v0@s1");
	refused("exported", "rollback", "p", "v0@s1");
	ctl_ok("rolled back to v0@s1 (its LUN was reset)", "rollback", "p", "v0@s1", "--force");
	t = iscsi_testunitready_sync(C, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_UNIT_ATTENTION && t->sense.ascq == 0x2903,
		      "after a forced rollback: %s", task_err(C, t));
	scsi_free_scsi_task(t);
	expect_model(C, 0, m_a, 0, V0);
	ctl_ok("volume n1 created", "volume", "create", "p", "n1", "16M", "--thin");
	ctl_ok("volume t1 created", "volume", "create", "p", "t1", "8M");
	refused("exists already", "volume", "create", "p", "n1", "16M");
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "before exporting the clone");

	write_conf("{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"c1\"; size = \"64M\"; thin = true; },\n"
		   "{ lun = 2; pool = \"p\"; volume = \"n1\"; size = \"16M\"; thin = true; }");
	nf_start(&D);
	C = login();
	expect_model(C, 1, m_a, 0, V0);
	write_pat(C, 1, 0, 2ull << 20, 3);
	memcpy(m_c, m_a, sizeof(m_c));
	memset(m_c, 3, (2ull << 20) / 512);
	expect_model(C, 1, m_c, 0, V0);
	expect_model(C, 0, m_a, 0, V0);
	expect_model(C, 2, m_zero, 0, 16ull << 20);
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "after the clone");

	write_conf(LUN_V0);
	nf_start(&D);
	refused("is no clone", "volume", "inflate", "p", "v0");
	ctl_ok("no longer shares", "volume", "inflate", "p", "c1");
	v = vol_entry("c1");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(rj_str(v, "origin"), "");
	ck_assert_int_eq(rj_int(v, "shared"), 0);
	json_object_put(v);
	ctl_ok("v0@s1 deleted", "snapshot", "delete", "p", "v0@s1");
	space_before = pool_int("thin_space_bytes");
	ctl_ok("t1 deleted", "volume", "delete", "p", "t1");
	space_after = pool_int("thin_space_bytes");
	printf("03_clone_rollback: thin_space_bytes %lld before deleting the 8 MiB thick volume, %lld after\n",
	       (long long)space_before, (long long)space_after);
	ck_assert_msg(space_after - space_before >= (int64_t)(8ull << 20) - 2 * (int64_t)MIB,
		      "thin space grew by %lld only", (long long)(space_after - space_before));
	nf_stop_expect_0(&D, "after the inflate");
	write_conf("{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"c1\"; size = \"64M\"; thin = true; }");
	nf_start(&D);
	C = login();
	expect_model(C, 1, m_c, 0, V0);
	expect_model(C, 0, m_a, 0, V0);
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "at the end");
}
END_TEST

/* `rtgtctl check p`: exit 0, consistent */
static void check_clean(const char *when)
{
	char out[4096];
	int rc = rj_ctl(&D, out, sizeof(out), "check", "p", NULL);

	ck_assert_msg(rc == 0 && strstr(out, "consistent"), "%s: rtgtctl check p: exit %d: %s", when,
		      rc, out);
}

static uint8_t m_now[V0 / 512], m_snap[V0 / 512];

static const char *CONF_V0_C1 =
	"{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; thin = true; },\n"
	"{ lun = 1; pool = \"p\"; volume = \"c1\"; size = \"64M\"; thin = true; }";

/* the daemon must die of SIGKILL at its crash point: reaped, env cleared */
static void expect_killed(const char *point)
{
	int st = 0;
	pid_t r = 0;

	for (int i = 0; i < 200 && r == 0; i++) {
		r = waitpid(D.pid, &st, WNOHANG);
		if (r == 0)
			usleep(100000);
	}
	ck_assert_msg(r == D.pid, "%s: rtgtd still runs 20 s after the operation", point);
	D.pid = 0;
	unsetenv("RTGT_CRASH_POINT");
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		      "%s: rtgtd did not die at its crash point (status 0x%x)", point, st);
	ck_assert_uint_ge(harness_log_count(&D, "crash point"), 1);
}

static bool vol_exists(const char *name)
{
	struct json_object *v = vol_entry(name);

	json_object_put(v);
	return v != NULL;
}

/* A start exporting LUN 2 of @extra (the group's body, when not NULL)
 * beside v0 and c1; reads LUN 2 against @m, v0 against m_now and c1
 * against m_snap; check; stop. */
static void verify_with(const char *point, const char *extra, const uint8_t *m)
{
	char luns[512];

	snprintf(luns, sizeof(luns), "%s%s%s%s", CONF_V0_C1, extra ? ",\n{ lun = 2; pool = \"p\"; " : "",
		 extra ? extra : "", extra ? " }" : "");
	write_conf(luns);
	nf_start(&D);
	C = login();
	expect_model(C, 0, m_now, 0, V0);
	expect_model(C, 1, m_snap, 0, V0);
	if (extra)
		expect_model(C, 2, m, 0, V0);
	check_clean(point);
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, point);
}

/* the start of extent 2 (3 x 64 KiB stripes of raid5 of 4 make 1152 KiB
 * extents: test 01 prints it) */
#define COW_OFF (2ull * 1179648)

enum crash_op { OP_SNAP, OP_CLONE, OP_COW, OP_DELETE, OP_ROLLBACK, OP_INFLATE };

static void crash_one(const char *point, enum crash_op op, uint64_t seed)
{
	char out[1024];
	int rc;

	harness_fini(&D);
	nf_setup(&D);
	random_members(32ull << 20, seed);
	/* the clone's LUN cannot be opened before it exists */
	write_conf(LUN_V0);
	nf_start(&D);
	C = login();
	memset(m_snap, 0, sizeof(m_snap));
	memset(m_snap, 1, (4ull << 20) / 512);
	write_pat(C, 0, 0, 4ull << 20, 1);
	ctl_ok("taken", "snapshot", "p", "v0", "s1");
	memcpy(m_now, m_snap, sizeof(m_now));
	memset(m_now, 2, (2ull << 20) / 512);
	write_pat(C, 0, 0, 2ull << 20, 2);
	ctl_ok("made", "clone", "p", "v0@s1", "c1");
	ctl_ok("taken", "snapshot", "p", "v0", "s3");   /* one nothing depends on */
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, "set-up");

	write_conf(CONF_V0_C1);
	setenv("RTGT_CRASH_POINT", point, 1);
	nf_start(&D);
	C = login();
	switch (op) {
	case OP_SNAP:
		rc = rj_ctl(&D, out, sizeof(out), "snapshot", "p", "v0", "s2", NULL);
		break;
	case OP_CLONE:
		rc = rj_ctl(&D, out, sizeof(out), "clone", "p", "v0@s1", "c2", NULL);
		break;
	case OP_DELETE:
		rc = rj_ctl(&D, out, sizeof(out), "snapshot", "delete", "p", "v0@s3", NULL);
		break;
	case OP_ROLLBACK:
		rc = rj_ctl(&D, out, sizeof(out), "rollback", "p", "v0@s1", "--force", NULL);
		break;
	case OP_INFLATE:
		/* c1 must not be open: a start without its LUN */
		harness_iscsi_logout(C);
		C = NULL;
		kill(D.pid, SIGKILL);
		waitpid(D.pid, NULL, 0);
		D.pid = 0;
		write_conf(LUN_V0);
		nf_start(&D);
		rc = rj_ctl(&D, out, sizeof(out), "volume", "inflate", "p", "c1", NULL);
		break;
	case OP_COW: {
		static uint8_t buf[MIB];
		struct scsi_task *t;

		/* extent 2 of v0, still shared with s1 (B rewrote 0..1) */
		pat_fill(buf, COW_OFF, MIB, 3);
		t = iscsi_write16_sync(C, 0, COW_OFF / 512, buf, MIB, 512, 0, 0, 0, 0, 0);
		rc = t && t->status == SCSI_STATUS_GOOD ? 0 : 1;
		scsi_free_scsi_task(t);
		break;
	}
	}
	ck_assert_msg(rc != 0, "%s: the operation succeeded: %s", point, op == OP_COW ? "" : out);
	if (C) {
		iscsi_destroy_context(C);
		C = NULL;
	}
	expect_killed(point);

	/* a start after the crash: what exists is whole */
	write_conf(CONF_V0_C1);
	nf_start(&D);
	check_clean(point);
	switch (op) {
	case OP_SNAP: {
		bool there = vol_exists("v0@s2");

		printf("04_crash: %-14s snapshot %s\n", point, there ? "taken" : "not taken");
		nf_stop_expect_0(&D, point);
		verify_with(point, there ? "volume = \"v0@s2\";" : NULL, m_now);
		break;
	}
	case OP_CLONE: {
		bool there = vol_exists("c2");

		printf("04_crash: %-14s clone %s\n", point, there ? "made" : "not made");
		nf_stop_expect_0(&D, point);
		verify_with(point, there ? "volume = \"c2\"; size = \"64M\"; thin = true;" : NULL,
			    m_snap);
		break;
	}
	case OP_DELETE: {
		bool there = vol_exists("v0@s3");

		printf("04_crash: %-14s snapshot %s\n", point, there ? "kept" : "deleted");
		ck_assert_msg(vol_exists("v0") && vol_exists("v0@s1"), "v0 or v0@s1 lost");
		nf_stop_expect_0(&D, point);
		verify_with(point, there ? "volume = \"v0@s3\";" : NULL, m_now);
		break;
	}
	case OP_ROLLBACK: {
		static uint8_t got[MIB];
		struct scsi_task *t;
		bool rolled;

		C = login();
		t = iscsi_read16_sync(C, 0, 0, MIB, 512, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "read v0: %s", task_err(C, t));
		pat_fill(got, 0, MIB, 1);
		rolled = !memcmp(t->datain.data, got, MIB);
		scsi_free_scsi_task(t);
		printf("04_crash: %-14s v0 %s\n", point, rolled ? "rolled back" : "as before");
		if (rolled)
			memcpy(m_now, m_snap, sizeof(m_now));
		harness_iscsi_logout(C);
		C = NULL;
		nf_stop_expect_0(&D, point);
		verify_with(point, NULL, NULL);
		break;
	}
	case OP_INFLATE: {
		nf_stop_expect_0(&D, point);
		verify_with(point, NULL, NULL);
		write_conf(LUN_V0);
		nf_start(&D);
		ctl_ok("no longer shares", "volume", "inflate", "p", "c1");
		check_clean("the inflate run again");
		nf_stop_expect_0(&D, point);
		printf("04_crash: %-14s inflate finished when run again\n", point);
		verify_with(point, NULL, NULL);
		break;
	}
	case OP_COW: {
		static uint8_t got[MIB];
		struct scsi_task *t;
		bool new_data;

		C = login();
		t = iscsi_read16_sync(C, 0, COW_OFF / 512, MIB, 512, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "read v0: %s", task_err(C, t));
		pat_fill(got, COW_OFF, MIB, 3);
		new_data = !memcmp(t->datain.data, got, MIB);
		scsi_free_scsi_task(t);
		printf("04_crash: %-14s v0's extent %s\n", point, new_data ? "new" : "old");
		if (new_data)
			memset(m_now + COW_OFF / 512, 3, MIB / 512);
		harness_iscsi_logout(C);
		C = NULL;
		nf_stop_expect_0(&D, point);
		verify_with(point, NULL, NULL);
		break;
	}
	}
}

START_TEST(t04_crash)
{
	static const struct { const char *point; enum crash_op op; } pts[] = {
		{ "map-copied", OP_SNAP },     { "map-written", OP_SNAP },
		{ "snap-table", OP_SNAP },     { "map-written", OP_CLONE },
		{ "clone-table", OP_CLONE },   { "cow-data", OP_COW },
		{ "cow-map", OP_COW },         { "delete-table", OP_DELETE },
		{ "rollback-map", OP_ROLLBACK }, { "rollback-table", OP_ROLLBACK },
		{ "inflate-copy", OP_INFLATE },
	};

	const char *only = getenv("SNAP_CRASH_ONLY");   /* one point, to debug it */

	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++)
		if (!only || !strcmp(only, pts[i].point))
			crash_one(pts[i].point, pts[i].op, 0x3804 + i);
}
END_TEST

START_TEST(t05_conformance_clone)
{
	char cmd[512], line[512] = "";
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "THIN=1 CLONE=1 LEVEL=raid5 scripts/conformance.sh > %s/conformance.out 2>&1",
		 D.dir);
	rc = system(cmd);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
	snprintf(cmd, sizeof(cmd), "%s/conformance.out", D.dir);
	f = fopen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(cmd, sizeof(cmd), f)) {
		if (strstr(cmd, "thin-provisioning tests skipped:"))
			snprintf(line, sizeof(line), "%s", cmd);
		if (rc)
			fputs(cmd, stderr);
	}
	fclose(f);
	printf("05_conformance_clone: %s", line);
	ck_assert_msg(rc == 0, "THIN=1 CLONE=1 LEVEL=raid5 conformance exited %d", rc);
	ck_assert_msg(strstr(line, "clone") && strstr(line, "thin-provisioning tests skipped: 0\n"),
		      "clone run, thin tests skipped: %s", line[0] ? line : "(no summary line)\n");
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_snapshot_cow", t01_snapshot_cow),
		CK_CASE("02_snapshot_under_load", t02_snapshot_under_load),
		CK_CASE("03_clone_rollback", t03_clone_rollback),
		CK_CASE("04_crash", t04_crash),
		CK_CASE("05_conformance_clone", t05_conformance_clone),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return ck_main(&(struct ck_suite_def){ "net_snapshot", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 600 });
}
