/*
 * tests/net/test_net_thin.c - thin LUNs (thin = true) on RAID pools
 * (raid/thin.c): space taken in extents as it is written, given back by
 * UNMAP, a crash-safe extent map, the pool running full and the soft
 * threshold, through a real bin/rtgtd driven with libiscsi and rtgtctl.
 *
 * 01 a thin LUN on a raid5 pool of 4 member files that held random bytes
 *    (reused disks; no create_size: a brand-new pool over them): READ
 *    CAPACITY(16) LBPME=1 LBPRZ=1, VPD B0 gives a whole number of stripes
 *    (>= 1 MiB) as OPTIMAL UNMAP GRANULARITY (the extent, G below), VPD B2
 *    LBPU, LBPWS, LBPWS10, LBPRZ and provisioning type thin; never-written
 *    ranges read zeros and GET LBA STATUS says deallocated; 32 MiB written:
 *    `rtgtctl status --json` shows the volume "thin": true with
 *    allocated_bytes = 32 MiB rounded up to G, and the pool's
 *    thin_used_bytes the same; the rest of the last extent reads zeros;
 *    UNMAP of it (pieces of whole extents, each within the Block Limits
 *    page's MAXIMUM UNMAP LBA COUNT) -> allocated 0, thin_used 0, zeros,
 *    GET LBA STATUS deallocated; an UNMAP that starts inside extent 0 and
 *    ends inside extent 3 zeroes exactly its bytes and frees only extents
 *    1 and 2 (GET LBA STATUS: mapped G, deallocated 2G, mapped G); the
 *    rewrite allocates them again; WRITE SAME(16) with UNMAP of zeroes
 *    frees extent 3; `rtgtctl resize` grows the thin LUN online to 256M
 *    (CAPACITY DATA HAS CHANGED, nothing allocated for it, the new part
 *    deallocated and zeros, its last MiB takes a write); SIGTERM and a
 *    start with the file still at 128M and a thick LUN 1 added: 256M
 *    served (the warning), the thick volume placed around the thin data
 *    (both read back, LUN 1 thick: LBPME=0, provisioning type 0), and the
 *    thin LUN reads, maps (GET LBA STATUS over all of it) and counts the
 *    same as before, and allocates again beside the thick volume.
 * 02 pool full: a 1 GiB thin LUN and an 8 MiB thick LUN 1 on a raid5 pool
 *    of 3 x 64 MiB (about 117 MiB of thin space), thin_threshold = 50,
 *    a second session on the thin LUN: 1 MiB sequential writes until one
 *    fails. It fails with CHECK CONDITION, DATA PROTECT, SPACE ALLOCATION
 *    FAILED WRITE PROTECT (07/27/07, fixed sense bytes checked) exactly
 *    when thin_used_bytes reaches thin_space_bytes; the writing session got
 *    THIN PROVISIONING SOFT THRESHOLD REACHED (06/38/07) exactly once, right
 *    after the write that took the pool to 50% (ceil(extents * 50 / 100)),
 *    the second session once too, the thick LUN's nexus never; the failed
 *    range reads zeros (deallocated); a write elsewhere fails the same way;
 *    a write into allocated space works; all data written before reads
 *    back; the thick LUN reads and writes; after UNMAP of 4 MiB exactly 4
 *    more 1 MiB writes succeed and the next fails 07/27/07 again, with no
 *    new unit attention; UNMAP below the threshold and writing it up again
 *    gives one more 38/07 (each upward crossing once).
 * 03 SIGKILL: a thin LUN on raid5 (3 member files of 18 MiB that held
 *    random bytes, 64 KiB chunk, G = 1 MiB: 33 extents of thin space, so
 *    new extents are mostly ones just freed; thin_threshold = 100), a
 *    32 MiB region of 512 blocks of 64 KiB (one chunk each: one member
 *    write). Each round keeps 8 commands in flight (libiscsi async API),
 *    random operations on idle blocks: WRITE of a per-block,
 *    per-generation pattern, UNMAP of the block (zeroes in place) or UNMAP
 *    of its whole extent (16 blocks: a free), and SIGKILLs rtgtd 0-2 ms
 *    after the acknowledged count passes a random number (3 rounds,
 *    different numbers, seed printed; THIN_SEED=N repeats a run). After
 *    each restart: every block holds what its last acknowledged operation
 *    left (zeros after an UNMAP), a block with an operation in flight
 *    holds the state before or after it, whole, an extent UNMAP in flight
 *    took all of its 16 blocks or none; GET LBA STATUS over the whole LUN:
 *    every block holding data is in a mapped extent, every extent whose
 *    last operation was an acknowledged extent UNMAP is deallocated;
 *    allocated_bytes and thin_used_bytes equal the mapped extents' bytes.
 * 04 libiscsi's thin-provisioning families (Unmap, GetLBAStatus,
 *    WriteSame10/16, ReadCapacity16, Inquiry, CompareAndWrite) on a raid5
 *    thin LUN: `THIN=1 LEVEL=raid5 scripts/conformance.sh` exits 0 with
 *    none of the thin-provisioning tests skipped.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_io.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define MIB        (1u << 20)
#define ASC_THIN_SOFT_THRESHOLD 0x3807
#define ASC_SPACE_ALLOC_FAILED  0x2707

static struct harness_daemon D;
static struct iscsi_context *C;

static uint8_t zero[MIB];
static int last_ua;   /* asc/ascq of the last unit attention tur_uas() saw */

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

/* ---- daemon ---- */

/* Pool "p" of @level over @n members dN.img, @pool_extra in its group
 * (create_size, thin_threshold), @luns the body of the LUN list. */
static void write_conf(const char *level, unsigned n, const char *pool_extra, const char *luns)
{
	char members[256];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", n), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; };\n"
		"pools = ( { name = \"p\"; level = \"%s\"; chunk = \"64K\";\n"
		"            members = ( %s ); %s } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( %s );\n"
		"  allow = ( \"ALL\" ); } );\n",
		level, members, pool_extra ? pool_extra : "", D.port, luns), 0);
}

/* Member files d0..d(n-1).img of @bytes each, full of random bytes (disks
 * that held something else before): never-written space must not show it. */
static void random_members(unsigned n, uint64_t bytes, uint64_t seed)
{
	static uint8_t buf[MIB];

	for (unsigned i = 0; i < n; i++) {
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

static struct iscsi_context *login_isid(uint32_t isid)
{
	return nf_login(&D, 0, &(struct harness_login){ .isid_rnd = isid });
}

static void stop_expect_0(void)
{
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, NULL);
}

static unsigned log_count(const char *needle)
{
	return harness_log_count(&D, needle);
}

/* ---- data ---- */

/* What the tests write: every 512-byte sector a function of its LBA and
 * @seed, so any range can be made again from its offset. */
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

static struct scsi_task *write16(struct iscsi_context *c, int lun, uint64_t off,
				 const uint8_t *buf, uint32_t len)
{
	return iscsi_write16_sync(c, lun, off / 512, (unsigned char *)buf, len, 512, 0, 0, 0, 0,
				  0);
}

static void write_good(struct iscsi_context *c, int lun, uint64_t off, const uint8_t *buf,
		       uint32_t len)
{
	struct scsi_task *t = write16(c, lun, off, buf, len);

	if (!t || t->status != SCSI_STATUS_GOOD)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 of LUN %d at %llu len %u: %s",
		      lun, (unsigned long long)off, len, task_err(c, t));
	scsi_free_scsi_task(t);
}

/* @len bytes of pat_fill(@seed) at @off, in commands of at most 1 MiB */
static void write_pat(struct iscsi_context *c, int lun, uint64_t off, uint64_t len,
		      uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		uint32_t n = len - o < MIB ? (uint32_t)(len - o) : MIB;

		pat_fill(buf, off + o, n, seed);
		write_good(c, lun, off + o, buf, n);
	}
}

/* [off, off + len) holds pat_fill(@seed), or zeros when @seed is 0 */
static void expect_pat(struct iscsi_context *c, int lun, uint64_t off, uint64_t len,
		       uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		uint32_t n = len - o < MIB ? (uint32_t)(len - o) : MIB;

		if (seed)
			pat_fill(buf, off + o, n, seed);
		lio_expect(c, lun, off + o, seed ? buf : zero, n);
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

/* GET LBA STATUS at byte @off: the first descriptor, which must start at
 * @off; its length in bytes and whether deallocated. */
static uint64_t lba_status(struct iscsi_context *c, int lun, uint64_t off, bool *dealloc)
{
	struct scsi_task *t = iscsi_get_lba_status_sync(c, lun, off / 512, 24);
	struct scsi_get_lba_status *st;
	uint64_t n;

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "GET LBA STATUS at %llu: %s",
		      (unsigned long long)off, task_err(c, t));
	st = scsi_datain_unmarshall(t);
	ck_assert_msg(st && st->num_descriptors >= 1, "GET LBA STATUS at %llu: no descriptor",
		      (unsigned long long)off);
	ck_assert_msg(st->descriptors[0].lba == off / 512,
		      "GET LBA STATUS at LBA %llu: first descriptor at %llu",
		      (unsigned long long)(off / 512), (unsigned long long)st->descriptors[0].lba);
	ck_assert_msg(st->descriptors[0].provisioning == SCSI_PROVISIONING_TYPE_MAPPED ||
		      st->descriptors[0].provisioning == SCSI_PROVISIONING_TYPE_DEALLOCATED,
		      "GET LBA STATUS at %llu: provisioning %d", (unsigned long long)off,
		      st->descriptors[0].provisioning);
	*dealloc = st->descriptors[0].provisioning == SCSI_PROVISIONING_TYPE_DEALLOCATED;
	n = (uint64_t)st->descriptors[0].num_blocks * 512;
	ck_assert_msg(n > 0, "GET LBA STATUS at %llu: an empty descriptor", (unsigned long long)off);
	scsi_free_scsi_task(t);
	return n;
}

/* GET LBA STATUS at @off is one run of @len bytes, deallocated or not */
static void expect_run(struct iscsi_context *c, uint64_t off, uint64_t len, bool dealloc)
{
	bool d;
	uint64_t n = lba_status(c, 0, off, &d);

	ck_assert_msg(d == dealloc && n == len,
		      "GET LBA STATUS at %llu: %s for %llu bytes, expected %s for %llu",
		      (unsigned long long)off, d ? "deallocated" : "mapped", (unsigned long long)n,
		      dealloc ? "deallocated" : "mapped", (unsigned long long)len);
}

/* Walks GET LBA STATUS over the @bytes of LUN 0: mapped[x] for each
 * extent of @g bytes (runs must end on extent boundaries, or at the end).
 * Returns the mapped extents' bytes: whole extents, the last one too when
 * the LUN ends inside it (the pool space it takes). */
static uint64_t map_walk(struct iscsi_context *c, uint64_t bytes, uint64_t g, bool *mapped)
{
	uint64_t off = 0, total = 0;

	while (off < bytes) {
		bool d;
		uint64_t n = lba_status(c, 0, off, &d);

		ck_assert_msg(off + n <= bytes, "GET LBA STATUS at %llu: %llu bytes past the end",
			      (unsigned long long)off, (unsigned long long)n);
		ck_assert_msg((off + n) % g == 0 || off + n == bytes,
			      "GET LBA STATUS at %llu: a run of %llu bytes ends inside an extent",
			      (unsigned long long)off, (unsigned long long)n);
		for (uint64_t x = off / g; x * g < off + n; x++) {
			mapped[x] = !d;
			total += d ? 0 : g;
		}
		off += n;
	}
	return total;
}

/* TEST UNIT READY of @c's @lun until GOOD: the unit attentions before it,
 * those of them that were 38/07 in *@thr */
static unsigned tur_uas(struct iscsi_context *c, int lun, unsigned *thr)
{
	unsigned n = 0;

	*thr = 0;
	last_ua = 0;
	for (int i = 0; i < 8; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(c, lun);

		ck_assert_ptr_nonnull(t);
		if (t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			return n;
		}
		ck_assert_msg(t->status == SCSI_STATUS_CHECK_CONDITION &&
			      t->sense.key == SCSI_SENSE_UNIT_ATTENTION,
			      "TEST UNIT READY of LUN %d: %s", lun, task_err(c, t));
		n++;
		last_ua = t->sense.ascq;
		if (t->sense.ascq == ASC_THIN_SOFT_THRESHOLD)
			(*thr)++;
		scsi_free_scsi_task(t);
	}
	ck_abort_msg("TEST UNIT READY of LUN %d: unit attentions do not end", lun);
	return n;
}

/* ---- rtgtctl status ---- */

struct thin_st {
	int64_t alloc;     /* the volume's allocated_bytes */
	int64_t used;      /* the pool's thin_used_bytes */
	int64_t space;     /* the pool's thin_space_bytes */
	int64_t thr;       /* the pool's thin_threshold */
};

static struct json_object *find_vol(struct json_object *pool, const char *vol)
{
	struct json_object *vs;

	ck_assert_msg(json_object_object_get_ex(pool, "volumes", &vs), "status: no volumes");
	for (size_t i = 0; i < json_object_array_length(vs); i++) {
		struct json_object *v = json_object_array_get_idx(vs, i);

		if (!strcmp(rj_str(v, "name"), vol))
			return v;
	}
	ck_abort_msg("status: no volume %s in %s", vol, json_object_to_json_string(pool));
	return NULL;
}

static void thin_fields(struct json_object *p, const char *vol, struct thin_st *s)
{
	struct json_object *v = find_vol(p, vol), *th;

	ck_assert_msg(json_object_object_get_ex(v, "thin", &th) && json_object_get_boolean(th),
		      "status: volume %s is not \"thin\": true: %s", vol,
		      json_object_to_json_string(v));
	s->alloc = rj_int(v, "allocated_bytes");
	s->used = rj_int(p, "thin_used_bytes");
	s->space = rj_int(p, "thin_space_bytes");
	s->thr = rj_int(p, "thin_threshold");
}

/* Pool p's thin fields and volume @vol's allocation (status on the socket) */
static struct thin_st thin_status(const char *vol)
{
	struct json_object *root, *p = rj_status_pool(&D, "p", &root);
	struct thin_st s;

	thin_fields(p, vol, &s);
	json_object_put(root);
	return s;
}

/* The same through `bin/rtgtctl status --json`, as a user reads it */
static struct thin_st thin_status_ctl(const char *vol)
{
	static char out[1 << 16];
	struct json_object *root, *pools;
	struct thin_st s = { 0 };
	int rc = rj_ctl(&D, out, sizeof(out), "status", "--json", NULL);
	bool found = false;

	ck_assert_msg(rc == 0, "rtgtctl status --json exited %d: %s", rc, out);
	root = json_tokener_parse(out);
	ck_assert_msg(root && json_object_object_get_ex(root, "pools", &pools),
		      "rtgtctl status --json: no pools in %s", out);
	for (size_t i = 0; i < json_object_array_length(pools); i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);

		if (!strcmp(rj_str(p, "name"), "p")) {
			thin_fields(p, vol, &s);
			found = true;
		}
	}
	json_object_put(root);
	ck_assert_msg(found, "rtgtctl status --json: no pool p");
	return s;
}

/* ---- provisioning pages ---- */

struct lbp {
	uint64_t gran;          /* OPTIMAL UNMAP GRANULARITY, bytes */
	uint64_t max_unmap;     /* MAXIMUM UNMAP LBA COUNT, bytes */
};

static struct lbp check_thin_pages(struct iscsi_context *c, int lun)
{
	struct scsi_task *t;
	struct lbp r;
	const uint8_t *d;

	t = iscsi_readcapacity16_sync(c, lun);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ CAPACITY 16: %s", task_err(c, t));
	{
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		ck_assert_ptr_nonnull(rc);
		ck_assert_msg(rc->lbpme == 1 && rc->lbprz == 1, "READ CAPACITY 16: LBPME %d LBPRZ %d",
			      rc->lbpme, rc->lbprz);
		ck_assert_uint_eq(rc->block_length, 512);
	}
	scsi_free_scsi_task(t);

	t = iscsi_inquiry_sync(c, lun, 1, 0xb2, 255);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 8, "VPD B2: %s",
		      task_err(c, t));
	d = t->datain.data;
	/* LBPU, LBPWS, LBPWS10, LBPRZ 001b; provisioning type 010b: thin */
	ck_assert_int_eq(d[5], 0x80 | 0x40 | 0x20 | 0x04);
	ck_assert_int_eq(d[6] & 0x07, 0x02);
	{
		struct scsi_inquiry_logical_block_provisioning *p = scsi_datain_unmarshall(t);

		ck_assert(p && p->lbpu && p->lbpws && p->lbpws10 && p->lbprz);
		ck_assert_int_eq(p->provisioning_type, PROVISIONING_TYPE_THIN);
	}
	scsi_free_scsi_task(t);

	t = iscsi_inquiry_sync(c, lun, 1, 0xb0, 255);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 36, "VPD B0: %s",
		      task_err(c, t));
	{
		struct scsi_inquiry_block_limits *bl = scsi_datain_unmarshall(t);

		ck_assert_ptr_nonnull(bl);
		ck_assert_msg(bl->ugavalid && bl->unmap_gran_align == 0, "VPD B0: UGAVALID %d, "
			      "alignment %u", bl->ugavalid, bl->unmap_gran_align);
		ck_assert_msg(bl->max_unmap > 0 && bl->max_unmap_bdc > 0,
			      "VPD B0: MAXIMUM UNMAP LBA COUNT %u, descriptors %u", bl->max_unmap,
			      bl->max_unmap_bdc);
		r.gran = (uint64_t)bl->opt_unmap_gran * 512;
		r.max_unmap = (uint64_t)bl->max_unmap * 512;
	}
	scsi_free_scsi_task(t);
	return r;
}

/* ---- 01 ---- */

#define V01  (128ull << 20)   /* thin LUN 0 */
#define V01G (256ull << 20)   /* grown */

START_TEST(t01_thin_raid5)
{
	const uint64_t stripe = 3 * 65536;   /* raid5 of 4, 64K chunk */
	struct thin_st s, s2;
	struct lbp lp;
	uint64_t g, w, blocks;
	uint32_t bs;
	bool mapped_before[V01G / MIB], mapped_after[V01G / MIB];
	struct scsi_task *t;
	char out[4096];
	unsigned thr;
	int rc;

	random_members(4, 64ull << 20, 0x0101);
	write_conf("raid5", 4, NULL,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"128M\"; thin = true; }");
	nf_start(&D);
	ck_assert_uint_eq(log_count("new pool over existing data"), 1);
	C = login_isid(0);
	nf_capacity(C, &blocks, &bs);
	ck_assert_uint_eq(blocks * bs, V01);

	/* the provisioning pages: the extent is whole stripes, >= 1 MiB */
	lp = check_thin_pages(C, 0);
	g = lp.gran;
	printf("01_thin_raid5: unmap granularity (extent) %llu bytes, max unmap %llu bytes\n",
	       (unsigned long long)g, (unsigned long long)lp.max_unmap);
	ck_assert_msg(g >= MIB && g % stripe == 0 && g - stripe < MIB,
		      "granularity %llu: not the smallest whole number of 192 KiB stripes >= 1 MiB",
		      (unsigned long long)g);

	/* never written: zeros (the members held random bytes), deallocated */
	expect_pat(C, 0, 0, MIB, 0);
	expect_pat(C, 0, V01 / 2 + 4096, 65536, 0);
	expect_pat(C, 0, V01 - 512, 512, 0);
	expect_run(C, 0, V01, true);
	s = thin_status_ctl("v0");
	ck_assert_int_eq(s.alloc, 0);
	ck_assert_int_eq(s.used, 0);
	ck_assert_int_eq(s.thr, 80);
	ck_assert_msg(s.space >= (int64_t)(150 * MIB) && s.space % (int64_t)g == 0,
		      "thin_space_bytes %lld", (long long)s.space);

	/* 32 MiB written: the extents it touches, and only those */
	w = ((32ull << 20) + g - 1) / g * g;   /* 32 MiB rounded up to extents */
	write_pat(C, 0, 0, 32ull << 20, 11);
	s = thin_status_ctl("v0");
	printf("01_thin_raid5: 32 MiB written: allocated_bytes %lld, thin_used_bytes %lld of "
	       "%lld\n", (long long)s.alloc, (long long)s.used, (long long)s.space);
	ck_assert_int_ge(s.alloc, 32ll << 20);
	ck_assert_int_eq(s.alloc, (int64_t)w);
	ck_assert_int_eq(s.used, (int64_t)w);
	expect_pat(C, 0, 0, 32ull << 20, 11);
	expect_pat(C, 0, 32ull << 20, w - (32ull << 20), 0);   /* zeros around the data */
	expect_run(C, 0, w, false);
	expect_run(C, w, V01 - w, true);

	/* UNMAP of it: in whole extents, each piece within MAXIMUM UNMAP LBA
	 * COUNT (and at most half of it, so that it takes two commands) */
	{
		uint64_t piece = (lp.max_unmap < w / 2 ? lp.max_unmap : w / 2) / g * g;

		ck_assert_uint_gt(piece, 0);
		for (uint64_t o = 0; o < w; o += piece)
			unmap_good(C, 0, o, w - o < piece ? w - o : piece);
	}
	s = thin_status("v0");
	printf("01_thin_raid5: after UNMAP of it: allocated_bytes %lld, thin_used_bytes %lld\n",
	       (long long)s.alloc, (long long)s.used);
	ck_assert_int_eq(s.alloc, 0);
	ck_assert_int_eq(s.used, 0);
	expect_pat(C, 0, 0, w, 0);
	expect_run(C, 0, V01, true);

	/* an UNMAP from inside extent 0 to inside extent 3: its bytes zeroed,
	 * extents 1 and 2 freed, 0 and 3 kept with the data beside it */
	{
		uint64_t a = g / 2 + 512, b = 3 * g + 7 * 4096 + 1024;

		write_pat(C, 0, 0, 4 * g, 12);
		ck_assert_int_eq(thin_status("v0").alloc, (int64_t)(4 * g));
		unmap_good(C, 0, a, b - a);
		s = thin_status("v0");
		printf("01_thin_raid5: 4 extents written, UNMAP of bytes [%llu, %llu): allocated "
		       "%lld\n", (unsigned long long)a, (unsigned long long)b, (long long)s.alloc);
		ck_assert_int_eq(s.alloc, (int64_t)(2 * g));
		ck_assert_int_eq(s.used, (int64_t)(2 * g));
		expect_pat(C, 0, 0, a, 12);
		expect_pat(C, 0, a, b - a, 0);
		expect_pat(C, 0, b, 4 * g - b, 12);
		expect_run(C, 0, g, false);
		expect_run(C, g, 2 * g, true);
		expect_run(C, 3 * g, g, false);
		expect_run(C, 4 * g, V01 - 4 * g, true);

		/* rewritten: allocated again */
		write_pat(C, 0, a, b - a, 13);
		ck_assert_int_eq(thin_status("v0").alloc, (int64_t)(4 * g));
		expect_run(C, 0, 4 * g, false);
		expect_pat(C, 0, 0, a, 12);
		expect_pat(C, 0, a, b - a, 13);
		expect_pat(C, 0, b, 4 * g - b, 12);
	}

	/* WRITE SAME(16) with UNMAP of a zero block over extent 3: freed */
	t = iscsi_writesame16_sync(C, 0, 3 * g / 512, zero, 512, (uint32_t)(g / 512), 0, 1, 0, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE SAME 16 UNMAP: %s",
		      task_err(C, t));
	scsi_free_scsi_task(t);
	ck_assert_int_eq(thin_status("v0").alloc, (int64_t)(3 * g));
	expect_run(C, 0, 3 * g, false);
	expect_run(C, 3 * g, V01 - 3 * g, true);
	expect_pat(C, 0, 3 * g, g, 0);

	/* grown online (rtgtctl resize): CAPACITY DATA HAS CHANGED, nothing
	 * allocated for it, the new part deallocated and zeros */
	rc = rj_ctl(&D, out, sizeof(out), "resize", HARNESS_TARGET, "0", "256M", NULL);
	printf("01_thin_raid5: rtgtctl resize of the thin LUN: exit %d: %s", rc, out);
	ck_assert_msg(rc == 0 && strstr(out, "grown to 268435456 bytes"),
		      "rtgtctl resize of the thin RAID LUN exited %d: %s", rc, out);
	ck_assert_uint_eq(tur_uas(C, 0, &thr), 1);
	ck_assert_int_eq(last_ua, 0x2a09);
	nf_capacity(C, &blocks, &bs);
	ck_assert_uint_eq(blocks * bs, V01G);
	ck_assert_int_eq(thin_status("v0").alloc, (int64_t)(3 * g));
	expect_run(C, 3 * g, V01G - 3 * g, true);
	expect_pat(C, 0, V01G - MIB, MIB, 0);
	write_pat(C, 0, V01G - MIB, MIB, 16);   /* the last MiB: one or two extents */
	{
		uint64_t x0 = (V01G - MIB) / g, x1 = (V01G - 1) / g;

		ck_assert_int_eq(thin_status("v0").alloc, (int64_t)((3 + x1 - x0 + 1) * g));
		expect_run(C, x0 * g, V01G - x0 * g, false);
	}
	expect_pat(C, 0, V01G - MIB, MIB, 16);

	s = thin_status("v0");
	memset(mapped_before, 0, sizeof(mapped_before));
	ck_assert_uint_eq(map_walk(C, V01G, g, mapped_before), (uint64_t)s.alloc);

	/* SIGTERM; the next start adds a thick LUN 1: placed around the thin
	 * data; the thin LUN reads, maps and counts the same */
	stop_expect_0();
	write_conf("raid5", 4, NULL,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"128M\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"k1\"; size = \"24M\"; }");
	nf_start(&D);
	C = login_isid(0);
	nf_capacity(C, &blocks, &bs);
	ck_assert_uint_eq(blocks * bs, V01G);   /* the file still says 128M */
	ck_assert_uint_eq(log_count("volume v0 is 268435456 bytes on disk, more than the 134217728"), 1);
	ck_assert_uint_eq(check_thin_pages(C, 0).gran, g);
	tur_uas(C, 1, &thr);   /* LUN 1's nexus: power on */
	t = iscsi_readcapacity16_sync(C, 1);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ CAPACITY 16 of LUN 1: %s",
		      task_err(C, t));
	{
		struct scsi_readcapacity16 *rc16 = scsi_datain_unmarshall(t);

		ck_assert(rc16 && !rc16->lbpme && rc16->returned_lba + 1 == (24u << 20) / 512);
	}
	scsi_free_scsi_task(t);
	t = iscsi_inquiry_sync(C, 1, 1, 0xb2, 255);
	ck_assert(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 8);
	ck_assert_int_eq(t->datain.data[5], 0);
	ck_assert_int_eq(t->datain.data[6] & 0x07, 0);
	scsi_free_scsi_task(t);
	write_pat(C, 1, 0, 24u << 20, 14);

	s2 = thin_status("v0");
	printf("01_thin_raid5: after the restart: allocated_bytes %lld, thin_used_bytes %lld "
	       "of %lld (thick k1 beside it)\n", (long long)s2.alloc, (long long)s2.used,
	       (long long)s2.space);
	ck_assert_int_eq(s2.alloc, s.alloc);
	ck_assert_int_eq(s2.used, s.used);
	/* the thick volume's region leaves the thin space (sharing an extent
	 * at either end with another region at most) */
	ck_assert_msg(s.space - s2.space >= (24ll << 20) - 2 * (int64_t)g &&
		      s.space - s2.space <= (24ll << 20) + 2 * (int64_t)g,
		      "thin space %lld before the thick 24 MiB volume, %lld after",
		      (long long)s.space, (long long)s2.space);
	memset(mapped_after, 0, sizeof(mapped_after));
	ck_assert_uint_eq(map_walk(C, V01G, g, mapped_after), (uint64_t)s.alloc);
	ck_assert(!memcmp(mapped_before, mapped_after, sizeof(mapped_before)));
	{
		uint64_t a = g / 2 + 512;

		expect_pat(C, 0, 0, a, 12);
		expect_pat(C, 0, a, 3 * g - a, 13);
		expect_pat(C, 0, 3 * g, V01G - MIB - 3 * g, 0);   /* WRITE SAME UNMAP from 3g */
		expect_pat(C, 0, V01G - MIB, MIB, 16);
	}
	expect_pat(C, 1, 0, 24u << 20, 14);
	/* the thin LUN still allocates, next to the thick volume */
	write_pat(C, 0, 64ull << 20, 8ull << 20, 15);
	expect_pat(C, 1, 0, 24u << 20, 14);
	expect_pat(C, 0, 64ull << 20, 8ull << 20, 15);
	ck_assert_int_eq(thin_status("v0").alloc,
			 s.alloc + (int64_t)(((72ull << 20) - 1) / g - (64ull << 20) / g + 1) * (int64_t)g);
	stop_expect_0();
}
END_TEST

/* ---- 02 ---- */

static bool sense_is_space_alloc_failed(const struct scsi_task *t)
{
	const uint8_t *s = t->datain.data + 2;

	if (t->status != SCSI_STATUS_CHECK_CONDITION || t->datain.size < 2 + 14)
		return false;
	/* fixed format: key at 2, ASC at 12, ASCQ at 13 */
	return (s[0] & 0x7f) == 0x70 && (s[2] & 0x0f) == 0x07 && s[12] == 0x27 && s[13] == 0x07 &&
	       t->sense.key == SCSI_SENSE_DATA_PROTECTION && t->sense.ascq == ASC_SPACE_ALLOC_FAILED;
}

/* Unit attentions 38/07 seen, and any other */
struct ua_count {
	unsigned thr, other;
	uint64_t thr_at[4];   /* bytes acknowledged by then */
};

/*
 * WRITE 16 of the 1 MiB piece @k of LUN 0 with its pattern; a unit
 * attention is counted (the bytes acknowledged so far noted) and the
 * command sent again. Returns the final task (GOOD or another status).
 */
static struct scsi_task *write_mib(unsigned k, uint64_t seed, struct ua_count *ua, uint64_t acked)
{
	static uint8_t buf[MIB];

	pat_fill(buf, (uint64_t)k * MIB, MIB, seed);
	for (int tries = 0; tries < 4; tries++) {
		struct scsi_task *t = write16(C, 0, (uint64_t)k * MIB, buf, MIB);

		ck_assert_msg(t != NULL, "WRITE 16 of MiB %u: %s", k, iscsi_get_error(C));
		if (t->status != SCSI_STATUS_CHECK_CONDITION || t->sense.key != SCSI_SENSE_UNIT_ATTENTION)
			return t;
		if (t->sense.ascq == ASC_THIN_SOFT_THRESHOLD) {
			if (ua->thr < 4)
				ua->thr_at[ua->thr] = acked;
			ua->thr++;
		} else {
			ua->other++;
		}
		scsi_free_scsi_task(t);
	}
	ck_abort_msg("WRITE 16 of MiB %u: unit attentions do not end", k);
	return NULL;
}

START_TEST(t02_pool_full)
{
	struct iscsi_context *c2;
	struct ua_count ua = { 0 };
	struct thin_st s;
	struct scsi_task *t;
	uint64_t g, n_ext, want_thr, acked = 0;
	unsigned k, full_at, thr, n;
	static uint8_t kbuf[MIB];

	write_conf("raid5", 3, "create_size = \"64M\"; thin_threshold = 50;",
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"1G\"; thin = true; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"k\"; size = \"8M\"; }");
	nf_start(&D);
	C = login_isid(0);
	c2 = login_isid(0x2222);
	g = check_thin_pages(C, 0).gran;
	ck_assert_uint_eq(g, MIB);   /* raid5 of 3, 64K chunk: 128K stripes */
	s = thin_status("v0");
	ck_assert_int_eq(s.thr, 50);
	ck_assert_int_eq(s.used, 0);
	n_ext = (uint64_t)s.space / g;
	want_thr = (n_ext * 50 + 99) / 100;   /* the first count at or over 50% */
	printf("02_pool_full: thin space %lld bytes (%llu extents), the threshold at %llu\n",
	       (long long)s.space, (unsigned long long)n_ext, (unsigned long long)want_thr);
	ck_assert_msg(s.space >= (int64_t)(100 * MIB) && s.space < (int64_t)(128 * MIB),
		      "thin_space_bytes %lld", (long long)s.space);
	/* LUN 1's nexuses: their power-on unit attentions */
	tur_uas(C, 1, &thr);
	tur_uas(c2, 1, &thr);
	write_pat(C, 1, 0, 8u << 20, 20);   /* the thick LUN before */

	/* 1 MiB at a time until a write fails */
	for (k = 0;; k++) {
		ck_assert_msg(k < 1024, "the 1 GiB LUN took 1 GiB on a pool of %lld bytes",
			      (long long)s.space);
		t = write_mib(k, 21, &ua, acked);
		if (t->status != SCSI_STATUS_GOOD)
			break;
		scsi_free_scsi_task(t);
		acked += MIB;
	}
	full_at = k;
	printf("02_pool_full: %u MiB written, MiB %u failed: %s; soft threshold UA %u time(s), "
	       "at %llu MiB\n", full_at, full_at, task_err(C, t), ua.thr,
	       (unsigned long long)(ua.thr ? ua.thr_at[0] / MIB : 0));
	ck_assert_msg(sense_is_space_alloc_failed(t),
		      "the write past the pool's space: %s, not DATA PROTECT 27/07 in fixed sense",
		      task_err(C, t));
	scsi_free_scsi_task(t);
	ck_assert_uint_eq(full_at, n_ext);
	s = thin_status("v0");
	ck_assert_int_eq(s.used, s.space);
	ck_assert_int_eq(s.alloc, s.space);
	ck_assert_uint_eq(ua.other, 0);
	ck_assert_msg(ua.thr == 1, "%u soft threshold unit attentions while filling", ua.thr);
	ck_assert_uint_eq(ua.thr_at[0], want_thr * g);
	ck_assert_msg(ua.thr_at[0] * 2 >= (uint64_t)s.space - 2 * g &&
		      ua.thr_at[0] * 2 <= (uint64_t)s.space + 2 * g,
		      "the UA came at %llu bytes of %lld", (unsigned long long)ua.thr_at[0],
		      (long long)s.space);
	ck_assert_uint_eq(log_count("at or over the soft threshold"), 1);
	ck_assert_uint_eq(log_count("no free space for thin volumes"), 1);
	/* every nexus of the thin LU was told once; the thick LU's none */
	ck_assert_uint_eq(tur_uas(c2, 0, &thr), 1);
	ck_assert_uint_eq(thr, 1);
	ck_assert_uint_eq(tur_uas(c2, 0, &thr), 0);
	ck_assert_uint_eq(tur_uas(C, 1, &thr), 0);
	ck_assert_uint_eq(tur_uas(c2, 1, &thr), 0);
	ck_assert_uint_eq(tur_uas(C, 0, &thr), 0);

	/* the failed range holds nothing; elsewhere fails the same way */
	expect_pat(C, 0, (uint64_t)full_at * MIB, MIB, 0);
	expect_run(C, (uint64_t)full_at * MIB, (1ull << 30) - (uint64_t)full_at * MIB, true);
	t = write_mib(900, 21, &ua, acked);
	ck_assert_msg(sense_is_space_alloc_failed(t), "a write at 900 MiB: %s", task_err(C, t));
	scsi_free_scsi_task(t);
	/* allocated space still takes writes */
	t = write_mib(3, 22, &ua, acked);
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "overwrite of MiB 3: %s", task_err(C, t));
	scsi_free_scsi_task(t);
	/* everything written before reads back; so does the thick LUN */
	for (k = 0; k < full_at; k++)
		expect_pat(C, 0, (uint64_t)k * MIB, MIB, k == 3 ? 22 : 21);
	expect_pat(C, 1, 0, 8u << 20, 20);
	pat_fill(kbuf, 0, MIB, 23);
	write_good(C, 1, 4u << 20, kbuf, MIB);
	lio_expect(C, 1, 4u << 20, kbuf, MIB);
	expect_pat(C, 1, 0, 4u << 20, 20);

	/* 4 MiB given back: exactly 4 more MiB fit */
	unmap_good(C, 0, 10ull * MIB, 4ull * MIB);
	ck_assert_int_eq(thin_status("v0").used, s.space - 4 * (int64_t)MIB);
	expect_pat(C, 0, 10ull * MIB, 4ull * MIB, 0);
	for (n = 0; n < 5; n++) {
		t = write_mib(full_at + n, 21, &ua, acked);
		if (n < 4) {
			ck_assert_msg(t->status == SCSI_STATUS_GOOD, "MiB %u after UNMAP: %s",
				      full_at + n, task_err(C, t));
			acked += MIB;
		} else {
			ck_assert_msg(sense_is_space_alloc_failed(t), "MiB %u after 4 refilled: %s",
				      full_at + n, task_err(C, t));
		}
		scsi_free_scsi_task(t);
	}
	ck_assert_uint_eq(ua.thr, 1);
	for (n = 0; n < 4; n++)
		expect_pat(C, 0, (uint64_t)(full_at + n) * MIB, MIB, 21);
	expect_pat(C, 0, 9ull * MIB, MIB, 21);
	expect_pat(C, 0, 14ull * MIB, MIB, 21);

	/* below the threshold and up again: one more UA */
	{
		uint64_t drop = (n_ext - want_thr + 8) * MIB;   /* to 8 below it */
		uint64_t from = 20ull * MIB;

		unmap_good(C, 0, from, drop);
		s = thin_status("v0");
		ck_assert_int_lt(s.used * 100, s.space * 50);
		ck_assert_uint_eq(tur_uas(C, 0, &thr), 0);
		for (k = (unsigned)(from / MIB); k < (from + drop) / MIB; k++) {
			t = write_mib(k, 24, &ua, acked);
			ck_assert_msg(t->status == SCSI_STATUS_GOOD, "rewrite of MiB %u: %s", k,
				      task_err(C, t));
			scsi_free_scsi_task(t);
			acked += MIB;
		}
		printf("02_pool_full: %llu MiB unmapped and written again: soft threshold UA %u "
		       "time(s) in all\n", (unsigned long long)(drop / MIB), ua.thr);
		ck_assert_uint_eq(ua.thr, 2);
		ck_assert_uint_eq(ua.other, 0);
		ck_assert_uint_eq(log_count("at or over the soft threshold"), 2);
		ck_assert_uint_eq(tur_uas(c2, 0, &thr), 1);
		ck_assert_uint_eq(thr, 1);
		expect_pat(C, 0, from, drop, 24);
	}
	ck_assert_int_eq(thin_status("v0").used, s.space);
	harness_iscsi_logout(c2);
	stop_expect_0();
}
END_TEST

/* ---- 03 ---- */

#define BLK       65536u                /* one chunk: one member write */
#define REGION    (32u << 20)
#define NBLK      (REGION / BLK)        /* 512 */
#define V03       (48ull << 20)
#define EXT3      MIB                   /* raid5 of 3, 64K chunk */
#define BPE       (EXT3 / BLK)          /* blocks per extent: 16 */
#define QD        8u
#define ROUNDS    3

enum { OP_WRITE, OP_UNMAP_BLK, OP_UNMAP_EXT };

struct op {
	bool busy;
	int kind;
	uint32_t blk, nblk;
	uint32_t after;          /* gen after it (0: zeros) */
	int status;
	struct scsi_task *task;  /* answered: what the callback got */
	/* what iscsi_*_task returned: a task cancelled by the context's
	 * destruction reaches the callback as NULL and is still ours to free */
	struct scsi_task *sent;
	struct unmap_list ul;
	uint8_t buf[BLK];
};

struct model {
	uint32_t cur[NBLK];      /* what the last acknowledged operation left: gen, 0 zeros */
	int inflight[NBLK];      /* slot of the op in flight on the block, -1 */
	bool ext_unmapped[V03 / EXT3];   /* last op on the extent: an acknowledged extent UNMAP */
	uint32_t gen;
	uint64_t rnd;
};

static struct op ops[QD];

static uint64_t rnd_next(struct model *m)
{
	m->rnd ^= m->rnd << 13;
	m->rnd ^= m->rnd >> 7;
	m->rnd ^= m->rnd << 17;
	return m->rnd;
}

/* Block @b's content at gen @gen */
static void blk_fill(uint8_t *buf, uint32_t b, uint32_t gen)
{
	if (!gen)
		memset(buf, 0, BLK);
	else
		pat_fill(buf, (uint64_t)b * BLK, BLK, 0x30000 + gen);
}

static void op_cb(struct iscsi_context *c, int status, void *command_data, void *priv)
{
	struct op *o = priv;

	(void)c;
	o->task = command_data;
	o->status = status;
	o->busy = false;
}

/* Sends a new random operation in slot @o. */
static void op_send(struct model *m, struct op *o)
{
	uint32_t b;
	int r;

	for (;;) {
		b = (uint32_t)(rnd_next(m) % NBLK);
		if (m->inflight[b] < 0)
			break;
	}
	r = (int)(rnd_next(m) % 100);
	o->kind = r < 55 ? OP_WRITE : r < 82 ? OP_UNMAP_BLK : OP_UNMAP_EXT;
	o->blk = b;
	o->nblk = 1;
	if (o->kind == OP_UNMAP_EXT) {
		o->blk = b / BPE * BPE;
		o->nblk = BPE;
		for (uint32_t i = 0; i < BPE; i++)
			if (m->inflight[o->blk + i] >= 0) {
				/* a neighbour is busy: a block UNMAP instead */
				o->kind = OP_UNMAP_BLK;
				o->blk = b;
				o->nblk = 1;
				break;
			}
	}
	o->after = o->kind == OP_WRITE ? ++m->gen : 0;
	for (uint32_t i = 0; i < o->nblk; i++)
		m->inflight[o->blk + i] = (int)(o - ops);
	if (o->kind == OP_WRITE)
		m->ext_unmapped[o->blk / BPE] = false;   /* it may allocate, acknowledged or not */
	o->busy = true;
	o->task = NULL;
	if (o->kind == OP_WRITE) {
		blk_fill(o->buf, o->blk, o->after);
		o->sent = iscsi_write16_task(C, 0, (uint64_t)o->blk * BLK / 512, o->buf, BLK, 512,
					     0, 0, 0, 0, 0, op_cb, o);
		ck_assert_msg(o->sent != NULL, "cannot queue WRITE 16: %s", iscsi_get_error(C));
	} else {
		o->ul.lba = (uint64_t)o->blk * BLK / 512;
		o->ul.num = o->nblk * BLK / 512;
		o->sent = iscsi_unmap_task(C, 0, 0, 0, &o->ul, 1, op_cb, o);
		ck_assert_msg(o->sent != NULL, "cannot queue UNMAP: %s", iscsi_get_error(C));
	}
}

/* A finished slot: its result goes into the model. Returns 1 if GOOD. */
static unsigned op_reap(struct model *m, struct op *o, unsigned *errors, char *first, size_t len)
{
	unsigned good = 0;

	if (!o->task)
		return 0;
	if (o->status == SCSI_STATUS_GOOD) {
		for (uint32_t i = 0; i < o->nblk; i++)
			m->cur[o->blk + i] = o->after;
		if (o->kind == OP_UNMAP_EXT)
			m->ext_unmapped[o->blk / BPE] = true;
		good = 1;
	} else if (!(*errors)++) {
		snprintf(first, len, "%s of block %u: %s", o->kind == OP_WRITE ? "WRITE" : "UNMAP",
			 o->blk, task_err(C, o->task));
	}
	for (uint32_t i = 0; i < o->nblk; i++)
		m->inflight[o->blk + i] = -1;
	scsi_free_scsi_task(o->task);
	o->task = NULL;
	o->sent = NULL;
	return good;
}

/*
 * Random operations, QD in flight, until @kill_after are acknowledged; then
 * SIGKILL with QD in flight. The model's inflight[] names what was in
 * flight at the kill. Returns the acknowledged count.
 */
static unsigned run_and_kill(struct model *m, unsigned kill_after, unsigned *kinds,
			     unsigned *inflight)
{
	uint64_t deadline = harness_now_ms() + 90000;
	unsigned good = 0, errors = 0;
	char first[200] = "";

	memset(ops, 0, sizeof(ops));
	for (;;) {
		struct pollfd pfd;

		for (unsigned s = 0; s < QD; s++)
			if (!ops[s].busy)
				good += op_reap(m, &ops[s], &errors, first, sizeof(first));
		for (unsigned s = 0; s < QD; s++)
			if (!ops[s].busy) {
				op_send(m, &ops[s]);
				kinds[ops[s].kind]++;
			}
		if (good >= kill_after)
			break;
		ck_assert_msg(harness_now_ms() < deadline, "operations stuck (%u acknowledged)", good);
		pfd.fd = iscsi_get_fd(C);
		pfd.events = (short)iscsi_which_events(C);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) < 0)
			continue;
		ck_assert_msg(iscsi_service(C, pfd.revents) == 0, "iscsi_service: %s",
			      iscsi_get_error(C));
	}
	/* the slots just refilled are in flight: after a random 0-2 ms (the
	 * target busy with them meanwhile) and reaping what was answered by
	 * then, the kill meets them at different stages */
	usleep((useconds_t)(rnd_next(m) % 2000));
	{
		struct pollfd pfd = { .fd = iscsi_get_fd(C), .events = (short)iscsi_which_events(C) };

		if (poll(&pfd, 1, 0) > 0)
			ck_assert_msg(iscsi_service(C, pfd.revents) == 0, "iscsi_service: %s",
				      iscsi_get_error(C));
		for (unsigned s = 0; s < QD; s++)
			if (!ops[s].busy)
				good += op_reap(m, &ops[s], &errors, first, sizeof(first));
	}
	kill(D.pid, SIGKILL);
	*inflight = 0;
	for (unsigned s = 0; s < QD; s++)
		*inflight += ops[s].busy;
	if (errors)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(errors == 0, "%u operations failed; the first: %s", errors, first);
	/* the tasks in flight go with it (their callbacks see CANCELLED; the
	 * model keeps them in flight) */
	iscsi_destroy_context(C);
	C = NULL;
	/* answered but not reaped, or cancelled (the callback got NULL) */
	for (unsigned s = 0; s < QD; s++) {
		struct scsi_task *t = ops[s].task ? ops[s].task : ops[s].sent;

		if (t)
			scsi_free_scsi_task(t);
		ops[s].task = ops[s].sent = NULL;
	}
	for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
		usleep(10000);
	ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");
	return good;
}

/* After a restart: every block checked against the model (in-flight ones
 * settled into it), then the map against the data and the status. */
static void verify_after_crash(struct model *m, unsigned round, unsigned *settled)
{
	static uint8_t got[MIB], want[BLK], alt[BLK];
	bool mapped[V03 / EXT3], nonzero_ext[V03 / EXT3];
	int took[QD];   /* extent UNMAP in flight: -1 unknown, 0 none took, 1 all took */
	uint64_t mapped_bytes;
	struct thin_st st;

	for (unsigned i = 0; i < QD; i++)
		took[i] = -1;
	memset(nonzero_ext, 0, sizeof(nonzero_ext));
	for (uint32_t b0 = 0; b0 < NBLK; b0 += MIB / BLK) {
		struct scsi_task *t = iscsi_read16_sync(C, 0, (uint64_t)b0 * BLK / 512, MIB, 512, 0,
							0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size == (int)MIB,
			      "round %u: READ 16 of block %u: %s", round, b0, task_err(C, t));
		memcpy(got, t->datain.data, MIB);
		scsi_free_scsi_task(t);
		for (uint32_t b = b0; b < b0 + MIB / BLK; b++) {
			const uint8_t *g = got + (size_t)(b - b0) * BLK;
			int s = m->inflight[b];

			blk_fill(want, b, m->cur[b]);
			if (memcmp(g, want, BLK)) {
				bool is_after = false;

				if (s >= 0) {
					blk_fill(alt, b, ops[s].after);
					is_after = !memcmp(g, alt, BLK);
				}
				if (!is_after) {
					unsigned old = 0, neu = 0, zer = 0, none = 0;

					if (s >= 0)
						blk_fill(alt, b, ops[s].after);
					for (unsigned q = 0; q < BLK / 4096; q++) {
						bool o = !memcmp(g + q * 4096, want + q * 4096, 4096);
						bool n2 = s >= 0 && !memcmp(g + q * 4096, alt + q * 4096, 4096);

						if (o)
							old++;
						else if (n2)
							neu++;
						else if (!memcmp(g + q * 4096, zero, 4096))
							zer++;
						else
							none++;
					}
					ck_abort_msg("round %u: block %u (last acknowledged gen %u, %s in "
						     "flight) holds neither: of its 4 KiB pieces %u old, "
						     "%u new, %u other zeros, %u other", round, b,
						     m->cur[b], s < 0 ? "nothing" :
						     ops[s].kind == OP_WRITE ? "a WRITE" : "an UNMAP",
						     old, neu, zer, none);
				}
				/* the in-flight operation took effect */
				if (ops[s].kind == OP_UNMAP_EXT) {
					ck_assert_msg(took[s] != 0, "round %u: extent UNMAP of blocks "
						      "%u.. in flight: block %u zeroed, an earlier one not",
						      round, ops[s].blk, b);
					took[s] = 1;
				}
				m->cur[b] = ops[s].after;
				(*settled)++;
			} else if (s >= 0 && ops[s].kind == OP_UNMAP_EXT && m->cur[b] != 0) {
				ck_assert_msg(took[s] != 1, "round %u: extent UNMAP of blocks %u.. in "
					      "flight: block %u kept its data, an earlier one zeroed",
					      round, ops[s].blk, b);
				took[s] = 0;
			}
			if (m->cur[b])
				nonzero_ext[b / BPE] = true;
		}
	}
	for (unsigned i = 0; i < QD; i++)
		if (ops[i].kind == OP_UNMAP_EXT && took[i] == 1)
			m->ext_unmapped[ops[i].blk / BPE] = true;
	for (uint32_t b = 0; b < NBLK; b++)
		m->inflight[b] = -1;

	/* the map: data only in mapped extents, freed ones deallocated, and
	 * the status counting exactly the mapped extents */
	memset(mapped, 0, sizeof(mapped));
	mapped_bytes = map_walk(C, V03, EXT3, mapped);
	for (uint32_t x = 0; x < V03 / EXT3; x++) {
		ck_assert_msg(!nonzero_ext[x] || mapped[x],
			      "round %u: extent %u holds data but GET LBA STATUS says deallocated",
			      round, x);
		ck_assert_msg(!m->ext_unmapped[x] || !mapped[x],
			      "round %u: extent %u was freed (acknowledged UNMAP of all of it) but "
			      "GET LBA STATUS says mapped", round, x);
		ck_assert_msg(x < REGION / EXT3 || !mapped[x],
			      "round %u: extent %u, never written, is mapped", round, x);
	}
	st = thin_status("v0");
	ck_assert_msg(st.alloc == (int64_t)mapped_bytes && st.used == (int64_t)mapped_bytes,
		      "round %u: allocated_bytes %lld, thin_used_bytes %lld, GET LBA STATUS maps %llu",
		      round, (long long)st.alloc, (long long)st.used, (unsigned long long)mapped_bytes);
	printf("03_sigkill: round %u verified: %llu bytes mapped (%llu extents), allocated_bytes "
	       "%lld\n", round, (unsigned long long)mapped_bytes,
	       (unsigned long long)(mapped_bytes / EXT3), (long long)st.alloc);
}

START_TEST(t03_sigkill)
{
	static struct model m;
	const char *env = getenv("THIN_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) :
			(uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	unsigned kill_at[ROUNDS];

	memset(&m, 0, sizeof(m));
	for (uint32_t b = 0; b < NBLK; b++)
		m.inflight[b] = -1;
	m.rnd = seed | 1;
	printf("03_sigkill: seed %llu (THIN_SEED=%llu repeats it)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	/* kill points: different, spread over 300..3299 acknowledged */
	for (unsigned r = 0; r < ROUNDS; r++) {
		do
			kill_at[r] = 300 + (unsigned)(rnd_next(&m) % 3000);
		while ((r > 0 && kill_at[r] == kill_at[r - 1]) || (r > 1 && kill_at[r] == kill_at[0]));
	}

	/* a pool just large enough: 2 x 17 MiB of data, 34 extents less the
	 * map's, for the region's 32, so a new extent is nearly always one an
	 * UNMAP has just freed (a free made before its map write is durable
	 * would be reused while the old entry still names it) */
	random_members(3, 18ull << 20, 0x0303);
	/* never at the soft threshold (32 of 33 at most): no unit attention
	 * among the operations */
	write_conf("raid5", 3, "thin_threshold = 100;",
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"48M\"; thin = true; }");
	nf_start(&D);
	C = login_isid(0);
	ck_assert_uint_eq(check_thin_pages(C, 0).gran, EXT3);
	{
		struct thin_st st = thin_status("v0");

		printf("03_sigkill: thin space %lld bytes (%lld extents) for a region of %u\n",
		       (long long)st.space, (long long)(st.space / EXT3), REGION / EXT3);
		ck_assert_int_ge(st.space, (int64_t)REGION);
		ck_assert_int_le(st.space, (int64_t)REGION + 2 * (int64_t)EXT3);
	}
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned kinds[3] = { 0 }, fl[3], good, inflight = 0, settled = 0;
		uint64_t t0 = harness_now_ms();

		good = run_and_kill(&m, kill_at[r], kinds, &inflight);
		memset(fl, 0, sizeof(fl));
		for (uint32_t b = 0; b < NBLK; b++)
			if (m.inflight[b] >= 0 && ops[m.inflight[b]].blk == b)
				fl[ops[m.inflight[b]].kind]++;
		nf_start(&D);
		C = login_isid(0);
		verify_after_crash(&m, r + 1, &settled);
		printf("03_sigkill: round %u: SIGKILL after %u acknowledged (%u writes, %u block "
		       "UNMAPs, %u extent UNMAPs sent) in %.1f s, %u in flight (%u/%u/%u), %u "
		       "blocks found with their in-flight operation done\n", r + 1, good,
		       kinds[0], kinds[1], kinds[2], (harness_now_ms() - t0) / 1e3, inflight,
		       fl[0], fl[1], fl[2], settled);
		ck_assert_uint_ge(good, kill_at[r]);
	}
	ck_assert_uint_eq(log_count("not shut down cleanly"), ROUNDS);
	stop_expect_0();
}
END_TEST

/* ---- 04 ---- */

START_TEST(t04_conformance_thin)
{
	char cmd[1200], line[1200], err[256];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "THIN=1 LEVEL=raid5 MIN_PASSED=20 TESTS='ALL.Unmap*,ALL.GetLBAStatus*,"
		 "ALL.WriteSame10*,ALL.WriteSame16*,ALL.ReadCapacity16*,ALL.Inquiry*,"
		 "ALL.CompareAndWrite*' PORT=%u scripts/conformance.sh > %s/conformance.out 2>&1",
		 D.port, D.dir);
	rc = harness_run(argv, err, sizeof(err), 110000);
	snprintf(cmd, sizeof(cmd), "grep -a '^conformance' %s/conformance.out >&2", D.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "(no conformance summary)\n");
	if (rc != 0) {
		snprintf(cmd, sizeof(cmd), "tail -30 %s/conformance.out >&2", D.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "(no conformance output)\n");
	}
	ck_assert_msg(rc == 0, "THIN=1 LEVEL=raid5 conformance exited %d", rc);
	{
		FILE *f;

		snprintf(cmd, sizeof(cmd), "%s/conformance.out", D.dir);
		f = fopen(cmd, "r");
		ck_assert_ptr_nonnull(f);
		line[0] = '\0';
		while (fgets(cmd, sizeof(cmd), f))
			if (strstr(cmd, "thin-provisioning tests skipped:"))
				snprintf(line, sizeof(line), "%s", cmd);
		fclose(f);
	}
	printf("04_conformance_thin: %s", line);
	ck_assert_msg(strstr(line, "thin-provisioning tests skipped: 0\n"), "thin tests skipped: %s",
		      line[0] ? line : "(no summary line)\n");
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_thin_raid5", t01_thin_raid5),
		CK_CASE("02_pool_full", t02_pool_full),
		CK_CASE("03_sigkill", t03_sigkill),
		CK_CASE("04_conformance_thin", t04_conformance_thin),
	};

	/* the figures printed survive a failing (forked) case */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return ck_main(&(struct ck_suite_def){ "net_thin", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 120 });
}
