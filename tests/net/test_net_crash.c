/*
 * tests/net/test_net_crash.c - the RAID engine across a crash and at
 * assembly, through a real bin/rtgtd driven with libiscsi and bin/rtgtctl.
 *
 * 01 crash consistency (raid5, raid1): pattern A over a region, then 4 KiB
 *    overwrites with pattern B, 16 in flight, and SIGKILL mid-way. After a
 *    restart and the resync, every 4 KiB block holds exactly A or B, and
 *    failing a member changes nothing that is read (parity / mirrors agree
 *    with the data). Before the restart, the test also tears one stripe by
 *    hand (garbage in the parity / second copy of a block whose write was in
 *    flight), so the resync has at least one real disagreement to repair,
 *    and then fails the member whose loss makes reads depend on it.
 * 03 SIGKILL during the initial sync of a raid5 pool over member files that
 *    held random bytes: `rtgtctl status` shows its progress (JSON and text);
 *    after the restart it resumes from its checkpoint, not from 0, and once
 *    done every written block (1 MiB and 4 KiB writes) and every never-written
 *    one reads the same with a member failed.
 * 04 SIGKILL during a rebuild onto a spare (raid5, 4 MB/s): after the restart
 *    the rebuild resumes from its checkpoint (not from 0), and once optimal,
 *    with another original member failed, every block reads what was written.
 * 02 a member file of another pool in place of a member: DESIGN.md Part B and
 *    raid/README.md ("Assembly"): rtgtd exits 1 at once with a line naming
 *    the member and the pool it belongs to, the foreign file untouched; with
 *    the right file back, pool p starts optimal and its data reads back.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define BLK      4096u
#define REGION   2048u          /* 4 KiB blocks overwritten: 8 MiB */
#define QD       16u
#define WAIT_MS  60000

static struct harness_daemon D;
static struct iscsi_context *C;

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

/* A 4 KiB block that names its block number and generation in every word,
 * so that a block is A, B, or neither - never ambiguous. */
static void stamp(uint8_t *b, uint64_t blk, uint64_t gen)
{
	/* memcpy: callers pass buffers at any offset (UBSan: misaligned store) */
	for (unsigned j = 0; j < BLK / 8; j++) {
		uint64_t w = (blk * 0x9E3779B97F4A7C15ULL) ^ (gen << 56) ^ ((uint64_t)j << 32) ^ 0x5A5A;

		memcpy(b + (size_t)j * 8, &w, sizeof(w));
	}
}

static void write_conf(const char *level, unsigned n)
{
	char members[256];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", n), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"%s\"; chunk = \"64K\";\n"
		"            members = ( %s );\n"
		"            create_size = \"32M\"; rebuild_mbps = 0; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		level, members, D.port, HARNESS_TARGET_DEFAULT), 0);
}

static void stop_expect_0(void)
{
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, NULL);
}

static uint32_t login(void)
{
	struct harness_login o = { 0 };
	uint64_t blocks;
	uint32_t bs;

	C = nf_login(&D, 0, &o);
	nf_capacity(C, &blocks, &bs);
	ck_assert_msg(BLK % bs == 0, "block length %u", bs);
	ck_assert_msg(blocks * bs >= (uint64_t)REGION * BLK, "LUN too small");
	return bs;
}

static void write_sync(uint64_t byte_off, uint8_t *buf, uint32_t len, uint32_t bs)
{
	struct scsi_task *t = iscsi_write16_sync(C, 0, byte_off / bs, buf, len, (int)bs,
						 0, 0, 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 at byte %llu: %s",
		      (unsigned long long)byte_off, iscsi_get_error(C));
	scsi_free_scsi_task(t);
}

/* Reads the region into @out (REGION * BLK bytes) in 1 MiB pieces. */
static void read_region(uint8_t *out, uint32_t bs, const char *when)
{
	const uint32_t piece = 1u << 20;

	for (uint64_t off = 0; off < (uint64_t)REGION * BLK; off += piece) {
		struct scsi_task *t = iscsi_read16_sync(C, 0, off / bs, piece, (int)bs,
							0, 0, 0, 0, 0);

		ck_assert_msg(t != NULL, "%s: READ 16 at byte %llu: %s", when,
			      (unsigned long long)off, iscsi_get_error(C));
		if (t->status != SCSI_STATUS_GOOD)
			harness_dump_log(&D, stderr, 30);
		ck_assert_msg(t->status == SCSI_STATUS_GOOD && t->datain.size == (int)piece,
			      "%s: READ 16 at byte %llu: status %d sense key %d asc/ascq 0x%04x",
			      when, (unsigned long long)off, t->status, t->sense.key, t->sense.ascq);
		memcpy(out + off, t->datain.data, piece);
		scsi_free_scsi_task(t);
	}
}

/* ---- rtgtctl ---- */

/* The state of the member whose path ends with @name ("" when not listed). */
static const char *member_state(struct json_object *pool, const char *name)
{
	struct json_object *m = rj_member(pool, name);

	return m ? rj_str(m, "state") : "";
}

/* Optimal and no resync pending (@arg: whether the daemon logged an unclean
 * shutdown, and so must have run one). */
static bool resynced(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	bool unclean = *(bool *)arg;
	const char *sc = rj_str(p, "scrub_state");

	snprintf(last, lastlen, "state %s, scrub %s", rj_str(p, "state"), sc);
	return !strcmp(rj_str(p, "state"), "optimal") &&
	       (unclean ? !strcmp(sc, "done") : strcmp(sc, "running") != 0);
}

/*
 * Waits (bounded) until the pool is optimal and no resync is pending: when
 * the daemon logged an unclean shutdown, until the resync (a repairing scrub,
 * raid/rebuild.c) reports "done".
 */
static void wait_resynced(void)
{
	static char log[1 << 16];
	char last[160] = "";
	bool unclean;

	ck_assert_int_ge(harness_read_log(&D, log, sizeof(log)), 0);
	unclean = strstr(log, "not shut down cleanly") != NULL;
	if (rj_wait_pool(&D, "p", WAIT_MS, resynced, &unclean, last, sizeof(last)))
		return;
	harness_dump_log(&D, stderr, 30);
	ck_abort_msg("no optimal, resynced pool after %d s (%s)", WAIT_MS / 1000, last);
}

/* ---- simulating a torn stripe ---- */

#define DATA_OFF (1u << 20)      /* raid/README.md: member data starts at 1 MiB */
#define CHUNK    65536u

/* Whether @b is stamp(blk, gen) for some blk < REGION and gen 0 or 1. */
static bool is_stamp(const uint8_t *b, uint32_t *blk_out)
{
	const uint64_t k = 0x9E3779B97F4A7C15ULL;
	uint64_t kinv = k, w0;
	uint8_t want[BLK];

	for (int i = 0; i < 6; i++)   /* Newton: k * kinv == 1 mod 2^64 */
		kinv *= 2 - k * kinv;
	memcpy(&w0, b, 8);
	for (uint64_t gen = 0; gen < 2; gen++) {
		uint64_t blk = ((w0 ^ 0x5A5A ^ (gen << 56)) * kinv);

		if (blk >= REGION)
			continue;
		stamp(want, blk, gen);
		if (!memcmp(b, want, BLK)) {
			*blk_out = (uint32_t)blk;
			return true;
		}
	}
	return false;
}

static void member_io(unsigned m, bool wr, uint8_t *buf, uint64_t off)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/d%u.img", D.dir, m);
	fd = open(path, (wr ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	n = wr ? pwrite(fd, buf, BLK, (off_t)off) : pread(fd, buf, BLK, (off_t)off);
	ck_assert_msg(n == BLK, "%s %s at %llu failed", wr ? "pwrite" : "pread", path,
		      (unsigned long long)off);
	close(fd);
}

/*
 * With rtgtd dead, makes the redundancy of block @blk (whose write was in
 * flight at the crash, so its bitmap region is dirty) disagree with its data,
 * as a crash between the data and the parity/mirror write would: raid5 gets
 * garbage in the parity of that stripe (the parity member is the one whose
 * chunk is not a stamped block: no layout knowledge needed), raid1 in the
 * second copy. Returns the member to fail later so that reads depend on the
 * damaged redundancy: a data member of the stripe (raid5), or d0 (raid1).
 */
static unsigned tear(const char *level, unsigned n, uint32_t blk)
{
	uint8_t b[BLK], junk[BLK];
	unsigned par = n, data = n;
	uint32_t got;

	for (unsigned i = 0; i < BLK; i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	if (!strcmp(level, "raid1")) {
		member_io(0, false, b, DATA_OFF + (uint64_t)blk * BLK);
		ck_assert_msg(is_stamp(b, &got) && got == blk,
			      "raid1: d0 does not hold block %u at data offset + %u", blk, blk * BLK);
		member_io(1, true, junk, DATA_OFF + (uint64_t)blk * BLK);
		return 0;
	}
	{
		uint64_t row = (uint64_t)blk * BLK / ((uint64_t)(n - 1) * CHUNK);
		uint64_t in = (uint64_t)blk * BLK % CHUNK;

		for (unsigned i = 0; i < n; i++) {
			member_io(i, false, b, DATA_OFF + row * CHUNK + in);
			if (is_stamp(b, &got)) {
				if (got == blk)
					data = i;
			} else {
				ck_assert_msg(par == n, "%s row %llu: two non-data chunks", level,
					      (unsigned long long)row);
				par = i;
			}
		}
		ck_assert_msg(par < n && data < n, "%s: block %u not found in row %llu (parity %u, "
			      "data %u)", level, blk, (unsigned long long)row, par, data);
		member_io(par, true, junk, DATA_OFF + row * CHUNK + in);
		return data;
	}
}

/* ---- 01: crash consistency ---- */

struct aio {
	struct scsi_task *task;
	bool busy;
	int status;
	uint32_t blk;
	uint8_t buf[BLK];
};

static void aio_cb(struct iscsi_context *c, int status, void *command_data, void *priv)
{
	struct aio *a = priv;

	a->task = command_data;
	a->status = status;
	a->busy = false;
}

/*
 * Overwrites the region with generation-1 blocks in a random order, QD
 * commands in flight, and SIGKILLs rtgtd once @kill_after have completed.
 * @acked[blk] is set for every block whose write returned GOOD, @queued[blk]
 * for every block whose write was sent.
 */
static unsigned overwrite_and_kill(uint32_t bs, unsigned kill_after, bool *acked,
				   bool *queued)
{
	static struct aio a[QD];
	uint32_t order[REGION];
	uint64_t seed = 0xC0FFEE, deadline = harness_now_ms() + 60000;
	unsigned next = 0, good = 0;
	bool killed = false;

	for (uint32_t i = 0; i < REGION; i++)
		order[i] = i;
	for (uint32_t i = REGION - 1; i > 0; i--) {
		uint32_t j, tmp;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = (uint32_t)(seed % (i + 1));
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	memset(a, 0, sizeof(a));
	while (!killed) {
		struct pollfd pfd;

		for (unsigned s = 0; s < QD; s++) {
			if (a[s].busy)
				continue;
			if (a[s].task) {
				if (a[s].status == SCSI_STATUS_GOOD) {
					acked[a[s].blk] = true;
					good++;
				}
				scsi_free_scsi_task(a[s].task);
				a[s].task = NULL;
			}
			if (next < REGION) {
				a[s].blk = order[next++];
				queued[a[s].blk] = true;
				stamp(a[s].buf, a[s].blk, 1);
				a[s].busy = true;
				ck_assert_msg(iscsi_write16_task(C, 0, (uint64_t)a[s].blk * BLK / bs,
								 a[s].buf, BLK, (int)bs, 0, 0, 0, 0,
								 0, aio_cb, &a[s]) != NULL,
					      "cannot queue WRITE 16: %s", iscsi_get_error(C));
			}
		}
		if (good >= kill_after) {
			/* commands are in flight right now: the crash hits them */
			kill(D.pid, SIGKILL);
			killed = true;
			break;
		}
		ck_assert_msg(harness_now_ms() < deadline, "overwrites stuck (%u acknowledged)", good);
		pfd.fd = iscsi_get_fd(C);
		pfd.events = (short)iscsi_which_events(C);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) < 0)
			continue;
		ck_assert_msg(iscsi_service(C, pfd.revents) == 0, "iscsi_service: %s",
			      iscsi_get_error(C));
	}
	/* the in-flight tasks die with the context; their buffers are static */
	iscsi_destroy_context(C);
	C = NULL;
	for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
		usleep(10000);
	ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");
	return good;
}

static void crash_consistency(const char *level, unsigned n)
{
	uint8_t *before = malloc((size_t)REGION * BLK), *after = malloc((size_t)REGION * BLK);
	uint8_t *a = malloc(1u << 20), A[BLK], B[BLK];
	bool *acked = calloc(REGION, sizeof(bool)), *queued = calloc(REGION, sizeof(bool));
	unsigned good, nA = 0, nB = 0, lostacked = 0, victim;
	uint32_t torn = REGION;
	char vname[32];
	static char out[4096];
	uint32_t bs;
	int rc;

	ck_assert(before && after && a && acked && queued);
	write_conf(level, n);
	nf_start(&D);
	bs = login();
	/* pattern A in 1 MiB commands, made durable */
	for (uint32_t blk = 0; blk < REGION; blk += (1u << 20) / BLK) {
		for (uint32_t k = 0; k < (1u << 20) / BLK; k++)
			stamp(a + (size_t)k * BLK, blk + k, 0);
		write_sync((uint64_t)blk * BLK, a, 1u << 20, bs);
	}
	{
		struct scsi_task *t = iscsi_synchronizecache10_sync(C, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "SYNCHRONIZE CACHE: %s",
			      iscsi_get_error(C));
		scsi_free_scsi_task(t);
	}
	good = overwrite_and_kill(bs, REGION / 3, acked, queued);
	for (uint32_t blk = 0; blk < REGION && torn == REGION; blk++)
		if (queued[blk] && !acked[blk])
			torn = blk;
	ck_assert_msg(torn < REGION, "no write was in flight at the kill");
	victim = tear(level, n, torn);
	snprintf(vname, sizeof(vname), "d%u.img", victim);

	nf_start(&D);
	bs = login();
	wait_resynced();
	read_region(before, bs, "after the crash");
	for (uint32_t blk = 0; blk < REGION; blk++) {
		const uint8_t *got = before + (size_t)blk * BLK;

		stamp(A, blk, 0);
		stamp(B, blk, 1);
		if (!memcmp(got, A, BLK)) {
			nA++;
			lostacked += acked[blk];
		} else if (!memcmp(got, B, BLK)) {
			nB++;
		} else {
			ck_abort_msg("%s: after the crash, 4 KiB block %u holds neither its old nor "
				     "its new content", level, blk);
		}
	}
	fprintf(stderr, "%s crash: %u writes acknowledged, blocks old %u new %u, "
		"acknowledged but old %u\n", level, good, nA, nB, lostacked);
	ck_assert_msg(nB > 0, "%s: none of the %u acknowledged overwrites is there after the "
		      "crash", level, good);
	/* parity / mirrors must agree with that data: lose a member, read again */
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", vname, (char *)NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p %s exited %d: %s", vname, rc, out);
	read_region(after, bs, "after the crash, a member failed");
	for (uint32_t blk = 0; blk < REGION; blk++) {
		if (!memcmp(before + (size_t)blk * BLK, after + (size_t)blk * BLK, BLK))
			continue;
		stamp(A, blk, 0);
		ck_abort_msg("%s: after the crash and resync, 4 KiB block %u (%s before; block %u "
			     "was torn by hand) reads differently once %s has failed", level, blk,
			     !memcmp(before + (size_t)blk * BLK, A, BLK) ? "old" : "new", torn,
			     vname);
	}
	stop_expect_0();
	free(before);
	free(after);
	free(a);
	free(acked);
	free(queued);
}

START_TEST(t01_crash_raid5)
{
	crash_consistency("raid5", 4);
}
END_TEST

START_TEST(t01_crash_raid1)
{
	crash_consistency("raid1", 2);
}
END_TEST

/* ---- 02: a member of another pool ---- */

static int file_equal(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC), rc = 1;
	static uint8_t ba[65536], bb[65536];

	if (fa < 0 || fb < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));

		if (na != nb || na < 0 || memcmp(ba, bb, (size_t)na)) {
			rc = 0;
			break;
		}
		if (na == 0)
			break;
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return rc;
}

START_TEST(t02_foreign_member)
{
	static char log[1 << 16];
	char from[256], to[256], keep[256], orig[256];
	struct json_object *root, *p;
	uint64_t t0;
	int rc;
	uint8_t *data = malloc(1u << 20);
	struct scsi_task *t;
	uint32_t bs;

	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 1; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = (\n"
		"  { name = \"p\"; level = \"raid5\"; chunk = \"64K\"; create_size = \"32M\";\n"
		"    members = ( \"d0.img\", \"d1.img\", \"d2.img\", \"d3.img\" ); },\n"
		"  { name = \"q\"; level = \"raid5\"; chunk = \"64K\"; create_size = \"32M\";\n"
		"    members = ( \"e0.img\", \"e1.img\", \"e2.img\", \"e3.img\" ); } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"vp\"; size = \"50%%\"; },\n"
		"           { lun = 1; pool = \"q\"; volume = \"vq\"; size = \"50%%\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n", D.port), 0);
	nf_start(&D);
	bs = login();
	for (unsigned i = 0; i < (1u << 20) / BLK; i++)
		stamp(data + (size_t)i * BLK, i, 7);
	write_sync(0, data, 1u << 20, bs);
	write_sync(5u << 20, data, 1u << 20, bs);
	stop_expect_0();

	snprintf(from, sizeof(from), "%s/e0.img", D.dir);
	snprintf(to, sizeof(to), "%s/d2.img", D.dir);
	snprintf(keep, sizeof(keep), "%s/foreign.copy", D.dir);
	snprintf(orig, sizeof(orig), "%s/d2.orig", D.dir);
	ck_assert_int_eq(harness_copy_file(to, orig), 0);
	ck_assert_int_eq(harness_copy_file(from, to), 0);
	ck_assert_int_eq(harness_copy_file(from, keep), 0);
	t0 = harness_now_ms();
	rc = harness_start(&D);
	ck_assert_msg(rc != 0 && D.last_status == 1,
		      "start with pool q's member in pool p's place: %s, exit %d, expected exit 1",
		      rc ? strerror(-rc) : "it served", D.last_status);
	ck_assert_msg(harness_now_ms() - t0 < 10000, "the refused start took %llu ms",
		      (unsigned long long)(harness_now_ms() - t0));
	ck_assert_int_ge(harness_read_log(&D, log, sizeof(log)), 0);
	ck_assert_msg(strstr(log, "d2.img (slot 2) belongs to pool q (uuid "),
		      "no log line says d2.img belongs to pool q:\n%s", log);
	ck_assert_msg(file_equal(to, keep) == 1,
		      "the refused foreign member d2.img was modified by the daemon");

	/* the right member back: nothing was lost or marked failed */
	ck_assert_int_eq(harness_copy_file(orig, to), 0);
	nf_start(&D);
	p = rj_status_pool(&D, "p", &root);
	ck_assert_msg(!strcmp(rj_str(p, "state"), "optimal"), "pool p state \"%s\" after the "
		      "refused start, expected \"optimal\"", rj_str(p, "state"));
	ck_assert_str_eq(member_state(p, "d2.img"), "active");
	json_object_put(root);
	bs = login();
	for (unsigned r = 0; r < 2; r++) {
		t = iscsi_read16_sync(C, 0, (r ? 5u << 20 : 0) / bs, 1u << 20, (int)bs,
				      0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size == 1 << 20 &&
			      !memcmp(t->datain.data, data, 1u << 20),
			      "pool p's data does not read back");
		scsi_free_scsi_task(t);
	}
	stop_expect_0();
	free(data);
}
END_TEST

/* ---- 03: SIGKILL during the initial sync ---- */

#define SYNC_SPAN (8u << 20)    /* never written, read before and after a failure */

static void read_range(uint64_t off0, uint64_t len, uint8_t *out, uint32_t bs, const char *when)
{
	const uint32_t piece = 1u << 20;

	for (uint64_t off = off0; off < off0 + len; off += piece) {
		struct scsi_task *t = iscsi_read16_sync(C, 0, off / bs, piece, (int)bs,
							0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size == (int)piece,
			      "%s: READ 16 at byte %llu failed", when, (unsigned long long)off);
		memcpy(out + (off - off0), t->datain.data, piece);
		scsi_free_scsi_task(t);
	}
}

static double sync_progress(struct json_object *p)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(p, "sync_progress", &v) ? json_object_get_double(v) : -1.0;
}

static bool sync_past(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	double got = sync_progress(p);

	snprintf(last, lastlen, "state %s, sync_progress %.3f", rj_str(p, "state"), got);
	return got >= *(double *)arg;
}

static bool sync_done(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	snprintf(last, lastlen, "state %s, sync_progress %.3f, scrub %s", rj_str(p, "state"),
		 sync_progress(p), rj_str(p, "scrub_state"));
	return !strcmp(rj_str(p, "state"), "optimal") && sync_progress(p) < 0 &&
	       strcmp(rj_str(p, "scrub_state"), "running") != 0;
}

START_TEST(t03_initial_sync_crash)
{
	uint8_t *want = malloc((size_t)REGION * BLK), *got = malloc((size_t)REGION * BLK);
	uint8_t *span0 = malloc(SYNC_SPAN), *span1 = malloc(SYNC_SPAN), *buf = malloc(1u << 20);
	char members[256], last[160];
	static char out[8192];
	double at = 0.15, resumed;
	struct json_object *root, *p;
	uint64_t blocks, span_off;
	uint32_t bs;
	int rc;

	ck_assert(want && got && span0 && span1 && buf);
	/* members that already hold data: random bytes */
	for (unsigned i = 0; i < 4; i++) {
		char path[256];
		int fd;

		snprintf(path, sizeof(path), "%s/d%u.img", D.dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		for (unsigned mb = 0; mb < 32; mb++) {
			harness_fill_random(buf, 1u << 20, 1000u * i + mb + 1);
			ck_assert_int_eq(pwrite(fd, buf, 1u << 20, (off_t)mb << 20), 1 << 20);
		}
		close(fd);
	}
	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", 4), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid5\"; chunk = \"64K\";\n"
		"            members = ( %s );\n"
		"            create_size = \"32M\"; rebuild_mbps = 4; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		members, D.port, HARNESS_TARGET_DEFAULT), 0);
	nf_start(&D);
	bs = login();
	nf_capacity(C, &blocks, &bs);
	span_off = blocks * bs - SYNC_SPAN;
	/* pattern A in 1 MiB writes, then every 7th block again in 4 KiB
	 * writes (read-modify-write): while the sync runs */
	for (uint32_t blk = 0; blk < REGION; blk++)
		stamp(want + (size_t)blk * BLK, blk, 0);
	for (uint32_t blk = 0; blk < REGION; blk += (1u << 20) / BLK)
		write_sync((uint64_t)blk * BLK, want + (size_t)blk * BLK, 1u << 20, bs);
	for (uint32_t blk = 3; blk < REGION; blk += 7) {
		stamp(want + (size_t)blk * BLK, blk, 1);
		write_sync((uint64_t)blk * BLK, want + (size_t)blk * BLK, BLK, bs);
	}
	{
		struct scsi_task *t = iscsi_synchronizecache10_sync(C, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "SYNCHRONIZE CACHE: %s",
			      iscsi_get_error(C));
		scsi_free_scsi_task(t);
	}
	if (!rj_wait_pool(&D, "p", WAIT_MS, sync_past, &at, last, sizeof(last)))
		ck_abort_msg("no initial sync progress in status (%s)", last);
	p = rj_status_pool(&D, "p", &root);
	ck_assert_msg(sync_progress(p) < 0.9, "initial sync ran faster than its cap (%.2f)",
		      sync_progress(p));
	json_object_put(root);
	rc = rj_ctl(&D, out, sizeof(out), "status", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "initial sync "), "rtgtctl status: %d\n%s", rc, out);
	/* a checkpoint is written about once a second */
	usleep(1200000);
	kill(D.pid, SIGKILL);
	iscsi_destroy_context(C);
	C = NULL;
	for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
		usleep(10000);
	ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");

	nf_start(&D);
	p = rj_status_pool(&D, "p", &root);
	resumed = sync_progress(p);
	json_object_put(root);
	ck_assert_msg(resumed >= at, "initial sync resumed at %.3f, not from its checkpoint "
		      "(>= %.3f)", resumed, at);
	if (!rj_wait_pool(&D, "p", WAIT_MS, sync_done, NULL, last, sizeof(last))) {
		harness_dump_log(&D, stderr, 30);
		ck_abort_msg("initial sync did not finish (%s)", last);
	}
	bs = login();
	read_region(got, bs, "after the initial sync");
	for (uint32_t blk = 0; blk < REGION; blk++)
		ck_assert_msg(!memcmp(got + (size_t)blk * BLK, want + (size_t)blk * BLK, BLK),
			      "after the crash and the sync, block %u does not read back", blk);
	read_range(span_off, SYNC_SPAN, span0, bs, "never written");
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "d1.img", (char *)NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p d1.img exited %d: %s", rc, out);
	read_region(got, bs, "a member failed");
	for (uint32_t blk = 0; blk < REGION; blk++)
		ck_assert_msg(!memcmp(got + (size_t)blk * BLK, want + (size_t)blk * BLK, BLK),
			      "with d1 failed, block %u reads wrong", blk);
	read_range(span_off, SYNC_SPAN, span1, bs, "never written, a member failed");
	ck_assert_msg(!memcmp(span0, span1, SYNC_SPAN),
		      "never-written blocks read differently with d1 failed");
	stop_expect_0();
	free(want);
	free(got);
	free(span0);
	free(span1);
	free(buf);
}
END_TEST

/* ---- 04: SIGKILL during a rebuild ---- */

static double rebuild_progress(struct json_object *p)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(p, "rebuild_progress", &v) ? json_object_get_double(v) : -1.0;
}

static bool rebuild_past(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	snprintf(last, lastlen, "state %s, rebuild_progress %.3f", rj_str(p, "state"),
		 rebuild_progress(p));
	return !strcmp(rj_str(p, "state"), "rebuilding") && rebuild_progress(p) >= *(double *)arg;
}

static bool optimal(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	snprintf(last, lastlen, "state %s, rebuild_progress %.3f", rj_str(p, "state"),
		 rebuild_progress(p));
	return !strcmp(rj_str(p, "state"), "optimal");
}

START_TEST(t04_rebuild_crash)
{
	uint8_t *want = malloc((size_t)REGION * BLK), *got = malloc((size_t)REGION * BLK);
	char members[256], last[160];
	static char out[8192];
	double at = 0.4, resumed;
	struct json_object *root, *p;
	uint32_t bs;
	int rc;

	ck_assert(want && got);
	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", 4), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid5\"; chunk = \"64K\";\n"
		"            members = ( %s ); spares = ( \"s0.img\" );\n"
		"            create_size = \"32M\"; rebuild_mbps = 4; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		members, D.port, HARNESS_TARGET_DEFAULT), 0);
	nf_start(&D);
	bs = login();
	for (uint32_t blk = 0; blk < REGION; blk++)
		stamp(want + (size_t)blk * BLK, blk, 0);
	for (uint32_t blk = 0; blk < REGION; blk += (1u << 20) / BLK)
		write_sync((uint64_t)blk * BLK, want + (size_t)blk * BLK, 1u << 20, bs);
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "d2.img", (char *)NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p d2.img exited %d: %s", rc, out);
	/* writes while it rebuilds, some into rows not rebuilt yet */
	for (uint32_t blk = 5; blk < REGION; blk += 11) {
		stamp(want + (size_t)blk * BLK, blk, 1);
		write_sync((uint64_t)blk * BLK, want + (size_t)blk * BLK, BLK, bs);
	}
	{
		struct scsi_task *t = iscsi_synchronizecache10_sync(C, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "SYNCHRONIZE CACHE: %s",
			      iscsi_get_error(C));
		scsi_free_scsi_task(t);
	}
	if (!rj_wait_pool(&D, "p", WAIT_MS, rebuild_past, &at, last, sizeof(last)))
		ck_abort_msg("no rebuild progress (%s)", last);
	usleep(1200000);    /* past a checkpoint */
	kill(D.pid, SIGKILL);
	iscsi_destroy_context(C);
	C = NULL;
	for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
		usleep(10000);
	ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");

	nf_start(&D);
	p = rj_status_pool(&D, "p", &root);
	resumed = rebuild_progress(p);
	ck_assert_msg(!strcmp(rj_str(p, "state"), "rebuilding") && resumed >= at,
		      "after the restart: state %s, rebuild at %.3f (the checkpoint was past %.3f)",
		      rj_str(p, "state"), resumed, at);
	json_object_put(root);
	if (!rj_wait_pool(&D, "p", WAIT_MS, optimal, NULL, last, sizeof(last))) {
		harness_dump_log(&D, stderr, 30);
		ck_abort_msg("the resumed rebuild did not finish (%s)", last);
	}
	/* every write had ended long before the kill: nothing is dirty, so
	 * nothing had to be given up as a bad range */
	p = rj_status_pool(&D, "p", &root);
	ck_assert_msg(!json_object_object_get_ex(p, "bad_bytes", NULL), "bad ranges recorded: %lld bytes",
		      (long long)rj_int(p, "bad_bytes"));
	json_object_put(root);
	bs = login();
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "d0.img", (char *)NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p d0.img exited %d: %s", rc, out);
	read_region(got, bs, "rebuilt, d0 failed");
	for (uint32_t blk = 0; blk < REGION; blk++)
		ck_assert_msg(!memcmp(got + (size_t)blk * BLK, want + (size_t)blk * BLK, BLK),
			      "after the crash during the rebuild, with d0 failed, block %u reads wrong",
			      blk);
	stop_expect_0();
	free(want);
	free(got);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_crash_raid5", t01_crash_raid5),
		CK_CASE("01_crash_raid1", t01_crash_raid1),
		CK_CASE("02_foreign_member", t02_foreign_member),
		CK_CASE("03_initial_sync_crash", t03_initial_sync_crash),
		CK_CASE("04_rebuild_crash", t04_rebuild_crash),
	};

	return ck_main(&(struct ck_suite_def){
		"net_crash", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 120 });
}
