/*
 * tests/net/test_net_rbd.c - LUNs on Ceph RBD images: a throwaway single-node
 * cluster (scripts/ceph-cluster.sh) and a real bin/rtgtd with an rbd pool,
 * driven with libiscsi, rtgtctl and the rbd CLI.
 *
 * 01 first start creates the image (thick: `rbd du` shows it fully used) and
 *    stores its UUID; a restart reopens it with the same NAA identity
 *    (VPD 0x83); rtgtctl status --json lists the pool and the volume; a
 *    larger size in the file grows the image at the next start (written
 *    out), a smaller one is served at the image's size with a clear line.
 * 02 I/O through iSCSI: writes (plain and FUA) of several sizes, one of them
 *    across an object boundary, read back; SYNCHRONIZE CACHE; COMPARE AND
 *    WRITE inside an object and across two, both matching (data replaced)
 *    and not (MISCOMPARE, data unchanged).
 * 03 persistence: data written before SIGTERM, and before SIGKILL, reads back
 *    after a restart.
 * 04 thick = false: the image is created thin (`rbd du` shows nothing used);
 *    COMPARE AND WRITE where no RADOS object exists yet and past the end of
 *    a short one compares against zeros.
 * 05 libiscsi's conformance suite on an RBD-backed LUN
 *    (scripts/conformance.sh LEVEL=rbd on this cluster): 0 failures.
 * 06 two nodes, one image: two rtgtd export the same image under the same
 *    target name; both report the same NAA identity, data written through
 *    either reads back through the other, and libiscsi's whole multipath
 *    family (Simple, Reset, CompareAndWrite, CompareAndWriteAsync) passes
 *    with one URL per node (both nodes in the default TPGT here).
 * 07 start-up failures are clear and bounded: a Ceph pool that does not
 *    exist, and a monitor nobody answers at (rtgtd gives up after the
 *    20 s mount timeout), each exit 1 with one line naming the problem.
 * 08 persistent reservations shared by two nodes (TPGT 1 and 2) on one
 *    image: K1 registered and WRITE EXCLUSIVE reserved through A, K2
 *    registered through B; READ KEYS through either lists both and READ
 *    RESERVATION through B names K1; right after A's PROUT returned, a WRITE
 *    through B gets RESERVATION CONFLICT and a READ through B is GOOD; B
 *    PREEMPTs K1: A's next command gets REGISTRATIONS PREEMPTED and its
 *    WRITE a conflict; after B's RELEASE writes through either node are
 *    GOOD; B reserves again and restarts: the restarted node reports the
 *    same keys, generation and reservation and enforces it on A; RESERVE(6)
 *    on the shared LU is refused with INVALID COMMAND OPERATION CODE; a
 *    CLEAR through A gives B's nexus RESERVATIONS PREEMPTED.
 * 09 libiscsi's whole MultipathIO family (Simple, Reset, CompareAndWrite,
 *    CompareAndWriteAsync) with one URL per node: 0 failures (Reset needs
 *    the LUN reset through one node to raise the UA on the other's nexus).
 * 10 a malformed state object (rados put of garbage into rtgt_pr.<image
 *    id>): a node refuses to start with one line naming it; a running node
 *    keeps the state it has and refuses PERSISTENT RESERVE OUT (HARDWARE
 *    ERROR, a log line) until the object is removed.
 * 11 PROUTs through both nodes at once (20 REGISTER AND IGNORE EXISTING KEY
 *    each, two threads): all GOOD, the generation rose by exactly 40 and both
 *    nodes list both last keys: no update was lost to the other node's.
 * 12 REGISTER AND MOVE through A to B's registration on B's relative port
 *    (the peer's TPGT, from READ FULL STATUS through A): B holds the
 *    reservation and writes, A's writes conflict.
 * 13 a hung peer (SIGSTOP of B: its watch and its node lease stay until
 *    they time out; a peer whose process is gone is fenced at once,
 *    test_net_rbd_fence 04): a LUN reset through A is answered after
 *    the 3 s reset notify timeout while two other sessions on A get their
 *    READs answered meanwhile (no reactor waits for B);
 *    it holds A's PROUTs at most the 5 s notify
 *    timeout each (GOOD, warning logged; the times are printed); B
 *    restarted has A's changes made while it was dead and enforces them.
 * 14 COMPARE AND WRITE goes through librbd: on an image with a snapshot,
 *    CAWs of one sector and of 16 blocks change the head and leave the
 *    snapshot as it was (`rbd export` checksum); a one-sector miscompare
 *    names its byte; on a clone of that snapshot (objects not copied up
 *    yet) CAWs against the parent's data and against the zeros beside it
 *    succeed and the rest of each object keeps the parent's data.
 * 15 a thin LUN (thin = true): VPD B2 says thin with LBPU/LBPWS/LBPRZ,
 *    READ CAPACITY(16) LBPME and LBPRZ, B0 the object as UNMAP granularity;
 *    1 GiB written (`rbd du` about 1 GiB), then two UNMAPs of 512 MiB (the
 *    Block Limits maximum) give the space back (`rbd du` < 8 MiB) and every sampled block reads as
 *    zeros; an UNMAP that starts and ends inside objects zeroes exactly its
 *    blocks and leaves the data beside it; GET LBA STATUS says deallocated
 *    for the unmapped run and mapped for the written one; WRITE SAME with
 *    UNMAP of zeroes unmaps; after a restart all of it reads the same.
 * 16 libiscsi's thin-provisioning conformance tests (Unmap, GetLBAStatus,
 *    WriteSame10/16 with UNMAP, ReadCapacity16, Inquiry VPD) on thin LUNs
 *    (scripts/conformance.sh LEVEL=rbd THIN=1): 0 failures, none of them
 *    skipped for want of thin provisioning.
 * 17 growing a LUN online on two nodes: `rtgtctl resize` through node A
 *    of an image both serve, under verified I/O from a session on node B:
 *    that session sees CAPACITY DATA HAS CHANGED once and no other error
 *    nor wrong byte; another session on B gets the unit attention too and
 *    READ CAPACITY 16 the new size there; the blocks gained take writes
 *    through B and read back through A; the thick image is written out to
 *    its new size (`rbd du`); shrinking is refused; a restart of A with the
 *    old size in the file serves the grown size (a warning).
 *
 * Without the Ceph packages (or built without librbd) the test prints
 * SKIPPED with the reason and exits 0: it neither passes nor fails anything.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ceph.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_io.h"
#include "tests/lib/lun_grow.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define OBJ        (4u << 20)       /* librbd's object size (raid/rbd.c) */
#define VOL_BYTES  (16u << 20)

static unsigned vol_seq;             /* fresh image names across test cases */

static struct harness_daemon D, D2;   /* D2: the second node of cases 06, 08-10 */
static struct iscsi_context *C;

/* ---- daemon ---- */

static void setup(void)
{
	nf_setup(&D);
	memset(&D2, 0, sizeof(D2));
	C = NULL;
}

static void teardown(void)
{
	harness_iscsi_logout(C);
	C = NULL;
	harness_fini(&D);
	harness_fini(&D2);
}

static void write_conf_lun(struct harness_daemon *d, const char *vol, const char *size,
			   const char *extra, const char *lun_extra)
{
	ck_assert_int_eq(harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\";\n"
		"            keyring = \"%s/client.rtgt.keyring\"; %s } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"%s\"; size = \"%s\"; %s } );\n"
		"  allow = ( \"ALL\" ); } );\n",
		cl_dir(), cl_dir(), extra ? extra : "", d->port, vol, size,
		lun_extra ? lun_extra : ""), 0);
}

static void write_conf_d(struct harness_daemon *d, const char *vol, const char *size,
			 const char *extra)
{
	write_conf_lun(d, vol, size, extra, NULL);
}

static void write_conf(const char *vol, const char *size, const char *extra)
{
	write_conf_d(&D, vol, size, extra);
}

static struct iscsi_context *login_d(struct harness_daemon *d)
{
	return nf_login(d, 0, &(struct harness_login){ 0 });
}

static void login(void)
{
	C = login_d(&D);
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

static bool log_has(const char *needle)
{
	return log_count(needle) > 0;
}

static void next_vol(char *name, size_t len)
{
	snprintf(name, len, "t%ld-%u", (long)getpid(), ++vol_seq);
}

static void lun_write(uint64_t off, const uint8_t *buf, uint32_t len, bool fua)
{
	struct scsi_task *t = iscsi_write16_sync(C, 0, off / 512, (unsigned char *)buf, len, 512,
						 0, 0, fua, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 at %llu len %u: %s",
		      (unsigned long long)off, len, t ? "bad status" : iscsi_get_error(C));
	scsi_free_scsi_task(t);
}

static void lun_expect(uint64_t off, const uint8_t *want, uint32_t len)
{
	lio_expect(C, 0, off, want, len);
}

/* INFORMATION of the sense data (fixed or descriptor format), -1 if none.
 * libiscsi leaves the sense bytes in datain, after a 2-byte length. */
static long long sense_info(const struct scsi_task *t)
{
	const uint8_t *s = t->datain.data + 2;
	int len = t->datain.size - 2;

	if (len < 8)
		return -1;
	if ((s[0] & 0x7f) == 0x70 || (s[0] & 0x7f) == 0x71)
		return (s[0] & 0x80) && len >= 7 ?
			(long long)((uint32_t)s[3] << 24 | (uint32_t)s[4] << 16 | (uint32_t)s[5] << 8 | s[6]) : -1;
	for (int off = 8; off + 12 <= len; off += 2 + s[off + 1]) {
		if (s[off] == 0 && (s[off + 2] & 0x80)) {
			long long v = 0;

			for (int i = 0; i < 8; i++)
				v = v << 8 | s[off + 4 + i];
			return v;
		}
	}
	return -1;
}

/* NAA designator of VPD page 0x83 (the volume UUID's image) into @naa. */
static void lun_naa(uint8_t naa[16])
{
	struct scsi_task *t = iscsi_inquiry_sync(C, 0, 1, 0x83, 255);
	const uint8_t *d;
	int len, off;
	bool found = false;

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "INQUIRY VPD 0x83 failed");
	d = t->datain.data;
	len = 4 + ((d[2] << 8) | d[3]);
	for (off = 4; off + 4 <= len && off + 4 <= t->datain.size; off += 4 + d[off + 3]) {
		if ((d[off + 1] & 0x0f) == 3 && d[off + 3] <= 16) {   /* NAA */
			memset(naa, 0, 16);
			memcpy(naa, d + off + 4, d[off + 3]);
			found = true;
			break;
		}
	}
	scsi_free_scsi_task(t);
	ck_assert_msg(found, "no NAA designator in VPD 0x83");
}

/* ---- tests ---- */

START_TEST(t01_create_reopen_size)
{
	char vol[64], line[512];
	uint8_t naa1[16], naa2[16];

	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", NULL);
	nf_start(&D);
	ck_assert_msg(log_has("created, 16777216 bytes"), "no creation line in the log");
	ck_assert_msg(log_has("thick provisioning done"), "no provisioning line in the log");
	ck_assert_int_eq(cl_image_used(vol), VOL_BYTES);
	login();
	lun_naa(naa1);
	ck_assert_int_eq(cl_run_line(line, sizeof(line), "%s -s %s/rtgtd.sock status --json",
				     rj_rtgtctl_path(), D.dir), 0);
	ck_assert_msg(strstr(line, "\"level\":\"rbd\"") || strstr(line, "\"level\": \"rbd\""),
		      "status --json does not show an rbd pool: %s", line);
	ck_assert_msg(strstr(line, vol), "status --json does not list volume %s: %s", vol, line);
	stop_expect_0();

	nf_start(&D);
	ck_assert_msg(log_count("writing out") == 1, "a reopened image was provisioned again");
	login();
	lun_naa(naa2);
	ck_assert_msg(memcmp(naa1, naa2, 16) == 0, "NAA identity changed across a restart");
	stop_expect_0();

	/* a larger size in the file grows the image at start (written out:
	 * thick); a smaller one is served at the image's size, with a warning */
	write_conf(vol, "32M", NULL);
	nf_start(&D);
	ck_assert_msg(log_has("grown from 16777216 to 33554432 bytes (written out)"),
		      "no grow line at start");
	ck_assert_int_eq(cl_image_used(vol), 2 * VOL_BYTES);
	stop_expect_0();
	write_conf(vol, "16M", NULL);
	nf_start(&D);
	ck_assert_msg(log_has("is 33554432 bytes, more than the 16777216 the configuration asks for"),
		      "no clear size-mismatch line");
	login();
	ck_assert_int_eq(lg_capacity(C, 0), 2 * VOL_BYTES / 512);
	stop_expect_0();
}
END_TEST

START_TEST(t02_io)
{
	static uint8_t a[1 << 20], b[1 << 20], cw[2 * 8192];
	char vol[64];
	struct scsi_task *t;

	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", NULL);
	nf_start(&D);
	login();
	harness_fill_random(a, sizeof(a), 1);
	lun_write(0, a, 4096, false);
	lun_write(1 << 20, a, sizeof(a), true);                    /* FUA */
	lun_write(OBJ - 65536, a + 7, 131072 - 512, false);        /* across objects */
	lun_write(VOL_BYTES - 512, a + 3, 512, true);               /* last block */
	t = iscsi_synchronizecache10_sync(C, 0, 0, 0, 0, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "SYNCHRONIZE CACHE failed");
	scsi_free_scsi_task(t);
	lun_expect(0, a, 4096);
	lun_expect(1 << 20, a, sizeof(a));
	lun_expect(OBJ - 65536, a + 7, 131072 - 512);
	lun_expect(VOL_BYTES - 512, a + 3, 512);

	/* COMPARE AND WRITE inside one object, then across two objects */
	for (int across = 0; across < 2; across++) {
		uint64_t off = across ? 2 * (uint64_t)OBJ - 4096 : 3 * 1048576 + 8192;

		harness_fill_random(b, 8192, 10 + (uint64_t)across);
		lun_write(off, b, 8192, false);
		memcpy(cw, b, 8192);
		harness_fill_random(cw + 8192, 8192, 20 + (uint64_t)across);
		cw[5000] ^= 1;   /* miscompare at byte 5000 */
		t = iscsi_compareandwrite_sync(C, 0, off / 512, cw, sizeof(cw), 512, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			      t->sense.key == SCSI_SENSE_MISCOMPARE,
			      "COMPARE AND WRITE (across=%d) with a difference did not miscompare",
			      across);
		ck_assert_int_eq(sense_info(t), 5000);
		scsi_free_scsi_task(t);
		lun_expect(off, b, 8192);
		cw[5000] ^= 1;
		t = iscsi_compareandwrite_sync(C, 0, off / 512, cw, sizeof(cw), 512, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD,
			      "COMPARE AND WRITE (across=%d) with equal data failed", across);
		scsi_free_scsi_task(t);
		lun_expect(off, cw + 8192, 8192);
	}
	stop_expect_0();
}
END_TEST

START_TEST(t03_persistence)
{
	static uint8_t a[256 << 10];
	char vol[64];

	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", NULL);
	nf_start(&D);
	login();
	harness_fill_random(a, sizeof(a), 3);
	lun_write(5 << 20, a, sizeof(a), false);
	stop_expect_0();
	nf_start(&D);
	login();
	lun_expect(5 << 20, a, sizeof(a));
	/* completed writes are on the OSDs (no client cache): SIGKILL loses none */
	harness_fill_random(a, sizeof(a), 4);
	lun_write(9 << 20, a, sizeof(a), false);
	harness_iscsi_logout(C);
	C = NULL;
	kill(D.pid, SIGKILL);
	ck_assert(!harness_alive(&D) || (usleep(200000), !harness_alive(&D)));
	nf_start(&D);
	login();
	lun_expect(9 << 20, a, sizeof(a));
	stop_expect_0();
}
END_TEST

START_TEST(t04_thin)
{
	char vol[64];

	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", "thick = false;");
	nf_start(&D);
	ck_assert_msg(!log_has("writing out"), "a thin volume was provisioned");
	ck_assert_int_eq(cl_image_used(vol), 0);

	/* COMPARE AND WRITE where no object exists yet (reads as zeros), and
	 * beyond the end of an object that exists but is shorter */
	login();
	{
		static uint8_t cw[2 * 4096], z[4096];
		const uint64_t offs[] = { 0, 1 << 20, 6 << 20 };
		struct scsi_task *t;

		for (unsigned k = 0; k < 3; k++) {
			memset(cw, 0, 4096);
			cw[100] = 1;
			harness_fill_random(cw + 4096, 4096, 30 + k);
			t = iscsi_compareandwrite_sync(C, 0, offs[k] / 512, cw, sizeof(cw), 512, 0, 0,
						       0, 0, 0);
			ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
				      t->sense.key == SCSI_SENSE_MISCOMPARE,
				      "thin COMPARE AND WRITE at %llu against non-zero data did not miscompare",
				      (unsigned long long)offs[k]);
			ck_assert_int_eq(sense_info(t), 100);
			scsi_free_scsi_task(t);
			lun_expect(offs[k], z, 4096);
			cw[100] = 0;
			t = iscsi_compareandwrite_sync(C, 0, offs[k] / 512, cw, sizeof(cw), 512, 0, 0,
						       0, 0, 0);
			ck_assert_msg(t && t->status == SCSI_STATUS_GOOD,
				      "thin COMPARE AND WRITE at %llu against zeros failed",
				      (unsigned long long)offs[k]);
			scsi_free_scsi_task(t);
			lun_expect(offs[k], cw + 4096, 4096);
		}
	}
	stop_expect_0();
}
END_TEST

/* scripts/conformance.sh LEVEL=rbd with @env on this cluster, output in
 * conformance.out of the daemon's directory: must exit 0 (its tail shown
 * otherwise). */
static void conformance_rbd(const char *env, const char *what)
{
	char cmd[900], line[512];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "LEVEL=rbd %s CEPH_DIR=%s PORT=%u scripts/conformance.sh > %s/conformance.out 2>&1; "
		 "echo $?", env, cl_dir(), D.port, D.dir);
	rc = cl_run_line(line, sizeof(line), "%s", cmd);
	ck_assert_int_eq(rc, 0);
	if (strcmp(line, "0") != 0) {
		char show[600];

		snprintf(show, sizeof(show), "tail -30 %s/conformance.out >&2", D.dir);
		if (system(show) != 0)
			fprintf(stderr, "(no conformance output)\n");
	}
	ck_assert_msg(strcmp(line, "0") == 0, "%s failed (exit %s)", what, line);
}

START_TEST(t05_conformance)
{
	conformance_rbd("", "conformance on rbd");
}
END_TEST

/* iscsi-test-cu @test with one URL per node; returns the passed count and
 * fails on any failed test. */
static int multipath_run(const char *test)
{
	char line[256], u1[256], u2[256];
	int rc;

	ck_assert_int_eq(harness_url(u1, sizeof(u1), D.port, HARNESS_TARGET, 0), 0);
	ck_assert_int_eq(harness_url(u2, sizeof(u2), D2.port, HARNESS_TARGET, 0), 0);
	rc = cl_run_line(line, sizeof(line),
			 "timeout 300 iscsi-test-cu -d -t '%s' %s %s > %s/mp.log 2>&1; "
			 "grep -aE '^ +tests ' %s/mp.log | tail -1", test, u1, u2, D.dir, D.dir);
	ck_assert_int_eq(rc, 0);
	{
		int total = -1, ran = -1, passed = -1, failed = -1;

		ck_assert_msg(sscanf(line, " tests %d %d %d %d", &total, &ran, &passed,
				     &failed) == 4, "%s: no summary (\"%s\")", test, line);
		ck_assert_msg(failed == 0 && passed > 0, "%s across two nodes: %d passed, %d failed",
			      test, passed, failed);
		return passed;
	}
}

/* Nodes D and D2 serving one new 16M image (named into @vol) under the
 * same target name in the default TPGT, both started. */
static void same_tpgt_nodes(char *vol, size_t len)
{
	int rc;

	next_vol(vol, len);
	nf_setup(&D2);
	write_conf(vol, "16M", NULL);
	write_conf_d(&D2, vol, "16M", NULL);
	nf_start(&D);
	rc = harness_start(&D2);
	if (rc)
		harness_dump_log(&D2, stderr, 40);
	ck_assert_msg(rc == 0, "second node did not start: %s", strerror(-rc));
}

START_TEST(t06_two_nodes)
{
	static uint8_t a[128 << 10], b[128 << 10];
	struct iscsi_context *ca, *cb;
	uint8_t naa_a[16], naa_b[16];
	char vol[64];

	same_tpgt_nodes(vol, sizeof(vol));

	C = ca = login_d(&D);
	lun_naa(naa_a);
	harness_fill_random(a, sizeof(a), 6);
	lun_write(2 << 20, a, sizeof(a), false);
	cb = login_d(&D2);
	C = cb;
	lun_naa(naa_b);
	ck_assert_msg(memcmp(naa_a, naa_b, 16) == 0, "the two nodes report different NAA ids");
	lun_expect(2 << 20, a, sizeof(a));
	harness_fill_random(b, sizeof(b), 7);
	lun_write(7 << 20, b, sizeof(b), true);
	C = ca;
	lun_expect(7 << 20, b, sizeof(b));
	harness_iscsi_logout(cb);

	ck_assert_int_ge(multipath_run("ALL.MultipathIO"), 4);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

START_TEST(t07_bad_cluster)
{
	uint16_t dead;
	time_t t0;

	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 1; control = \"rtgtd.sock\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"nosuch\"; ceph_id = \"rtgt\";\n"
		"            keyring = \"%s/client.rtgt.keyring\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"v\"; size = \"16M\"; } ); } );\n",
		cl_dir(), cl_dir(), D.port), 0);
	ck_assert_int_eq(harness_start(&D), -ECHILD);
	ck_assert_int_eq(D.last_status, 1);
	ck_assert_msg(log_has("Ceph pool \"nosuch\": does not exist"), "no clear missing-pool line");

	/* a ceph.conf whose monitor address nobody listens on */
	ck_assert_int_eq(harness_free_port(&dead), 0);
	ck_assert_int_eq(harness_write_file(&D, "dead.conf",
		"[global]\nmon_host = [v2:127.0.0.1:%u]\nauth_client_required = cephx\n", dead), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 1; control = \"rtgtd.sock\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"dead.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\";\n"
		"            keyring = \"%s/client.rtgt.keyring\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"v\"; size = \"16M\"; } ); } );\n",
		cl_dir(), D.port), 0);
	t0 = time(NULL);
	ck_assert_int_eq(harness_start(&D), -ECHILD);
	ck_assert_int_eq(D.last_status, 1);
	ck_assert_msg(log_has("cannot connect to the Ceph cluster"), "no clear connection line");
	ck_assert_msg(time(NULL) - t0 < 29, "gave up only after %lld s",
		      (long long)(time(NULL) - t0));
}
END_TEST

/* ---- two nodes sharing reservations ---- */

/* Node @d on image @vol with its portal in target port group @tpgt, the
 * other node's group listed as its peer. */
static void write_conf_node(struct harness_daemon *d, const char *vol, unsigned tpgt)
{
	ck_assert_int_eq(harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\";\n"
		"            keyring = \"%s/client.rtgt.keyring\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; tpgt = %u; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  peer_portal_groups = ( %u );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"%s\"; size = \"16M\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n",
		cl_dir(), cl_dir(), d->port, tpgt, 3 - tpgt, vol), 0);
}

/* A session with a fixed ISID: the same I_T nexus again after a restart. */
static struct iscsi_context *login_isid(struct harness_daemon *d, uint32_t isid)
{
	return nf_login(d, 0, &(struct harness_login){ .isid_rnd = isid });
}

static void two_nodes(const char *vol)
{
	nf_setup(&D2);
	write_conf_node(&D, vol, 1);
	write_conf_node(&D2, vol, 2);
	nf_start(&D);
	nf_start(&D2);
}

/* @t (freed here) ended in CHECK CONDITION with sense key @key and
 * ASC/ASCQ @ascq; else fails, naming @what and the expected @want. */
static void expect_sense(struct scsi_task *t, int key, int ascq, const char *what,
			 const char *want)
{
	ck_assert_msg(t != NULL, "%s: no status", what);
	ck_assert_msg(t->status == SCSI_STATUS_CHECK_CONDITION && (int)t->sense.key == key &&
		      (int)t->sense.ascq == ascq,
		      "%s: status %d sense %x/%04x, expected %s", what, t->status, t->sense.key,
		      t->sense.ascq, want);
	scsi_free_scsi_task(t);
}

/* TEST UNIT READY until GOOD (pending UAs consumed); returns how many UAs. */
static int drain_ua(struct iscsi_context *c)
{
	int n = 0;

	for (int i = 0; i < 10; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(c, 0);
		bool ua;

		ck_assert_msg(t != NULL, "TUR: %s", iscsi_get_error(c));
		if (t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			return n;
		}
		ua = t->status == SCSI_STATUS_CHECK_CONDITION &&
		     t->sense.key == SCSI_SENSE_UNIT_ATTENTION;
		scsi_free_scsi_task(t);
		ck_assert_msg(ua, "TUR: neither GOOD nor a unit attention");
		n++;
	}
	ck_abort_msg("TUR never became GOOD");
	return n;
}

/* Two nodes on a fresh image and a session through each with a fixed ISID
 * (A's also in C), their pending unit attentions taken. */
static void two_sessions(struct iscsi_context **ca, struct iscsi_context **cb)
{
	char vol[64];

	next_vol(vol, sizeof(vol));
	two_nodes(vol);
	C = *ca = login_isid(&D, 0xa1);
	*cb = login_isid(&D2, 0xb2);
	drain_ua(*ca);
	drain_ua(*cb);
}

/* PROUT @sa; returns the SAM status. */
static int prout(struct iscsi_context *c, int sa, int type, uint64_t key, uint64_t sa_key)
{
	struct scsi_persistent_reserve_out_basic p = { .reservation_key = key,
						       .service_action_reservation_key = sa_key };
	struct scsi_task *t = iscsi_persistent_reserve_out_sync(c, 0, sa,
		SCSI_PERSISTENT_RESERVE_SCOPE_LU, type, &p);
	int st;

	ck_assert_msg(t != NULL, "PROUT: %s", iscsi_get_error(c));
	st = t->status;
	scsi_free_scsi_task(t);
	return st;
}

/* READ KEYS: the keys, sorted, in @keys (at most 8); returns the count and
 * the generation in *@gen. */
static int read_keys(struct iscsi_context *c, uint64_t keys[8], uint32_t *gen)
{
	struct scsi_task *t = iscsi_persistent_reserve_in_sync(c, 0,
		SCSI_PERSISTENT_RESERVE_READ_KEYS, 1024);
	struct scsi_persistent_reserve_in_read_keys *rk;
	int n;

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ KEYS failed");
	rk = scsi_datain_unmarshall(t);
	ck_assert(rk != NULL);
	n = rk->num_keys < 8 ? rk->num_keys : 8;
	for (int i = 0; i < n; i++)
		keys[i] = rk->keys[i];
	*gen = rk->prgeneration;
	scsi_free_scsi_task(t);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keys[j - 1] > keys[j]; j--) {
			uint64_t x = keys[j];

			keys[j] = keys[j - 1];
			keys[j - 1] = x;
		}
	return n;
}

/* READ RESERVATION: the holder's key (0 when none) and type in *@type. */
static uint64_t read_res(struct iscsi_context *c, int *type)
{
	struct scsi_task *t = iscsi_persistent_reserve_in_sync(c, 0,
		SCSI_PERSISTENT_RESERVE_READ_RESERVATION, 1024);
	struct scsi_persistent_reserve_in_read_reservation *rr;
	uint64_t key = 0;

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ RESERVATION failed");
	rr = scsi_datain_unmarshall(t);
	ck_assert(rr != NULL);
	*type = 0;
	if (rr->reserved) {
		key = rr->reservation_key;
		*type = rr->pr_type;
	}
	scsi_free_scsi_task(t);
	return key;
}

static int write_st(struct iscsi_context *c, uint64_t lba)
{
	static uint8_t buf[4096];
	struct scsi_task *t = iscsi_write16_sync(c, 0, lba, buf, sizeof(buf), 512, 0, 0, 0, 0, 0);
	int st;

	ck_assert_msg(t != NULL, "WRITE: %s", iscsi_get_error(c));
	st = t->status;
	scsi_free_scsi_task(t);
	return st;
}

static int read_st(struct iscsi_context *c, uint64_t lba)
{
	struct scsi_task *t = iscsi_read16_sync(c, 0, lba, 4096, 512, 0, 0, 0, 0, 0);
	int st;

	ck_assert_msg(t != NULL, "READ: %s", iscsi_get_error(c));
	st = t->status;
	scsi_free_scsi_task(t);
	return st;
}

#define K1 0x1111000000000001ULL
#define K2 0x2222000000000002ULL
#define WE SCSI_PERSISTENT_RESERVE_TYPE_WRITE_EXCLUSIVE

START_TEST(t08_shared_pr)
{
	struct iscsi_context *ca, *cb;
	uint64_t ka[8], kb[8];
	uint32_t gen_a, gen_b;
	int type;

	two_sessions(&ca, &cb);

	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K1), SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_RESERVE, WE, K1, 0), SCSI_STATUS_GOOD);
	/* immediately after A's GOOD: B enforces it */
	ck_assert_int_eq(write_st(cb, 100), SCSI_STATUS_RESERVATION_CONFLICT);
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K2), SCSI_STATUS_GOOD);
	ck_assert_int_eq(read_keys(ca, ka, &gen_a), 2);
	ck_assert_int_eq(read_keys(cb, kb, &gen_b), 2);
	ck_assert_msg(ka[0] == K1 && ka[1] == K2 && kb[0] == K1 && kb[1] == K2,
		      "READ KEYS: A lists %llx %llx, B lists %llx %llx",
		      (unsigned long long)ka[0], (unsigned long long)ka[1],
		      (unsigned long long)kb[0], (unsigned long long)kb[1]);
	ck_assert_uint_eq(gen_a, gen_b);
	ck_assert_uint_eq(read_res(cb, &type), K1);
	ck_assert_int_eq(type, WE);
	/* registered, not the holder: writes conflict, reads do not */
	ck_assert_int_eq(write_st(cb, 100), SCSI_STATUS_RESERVATION_CONFLICT);
	ck_assert_int_eq(read_st(cb, 100), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write_st(ca, 100), SCSI_STATUS_GOOD);

	/* B preempts the holder: A's registration goes, A hears of it */
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_PREEMPT, WE, K2, K1), SCSI_STATUS_GOOD);
	expect_sense(iscsi_testunitready_sync(ca, 0), SCSI_SENSE_UNIT_ATTENTION, 0x2a05,
		     "A after the preemption", "UA REGISTRATIONS PREEMPTED (2a/05)");
	drain_ua(ca);
	ck_assert_int_eq(write_st(ca, 200), SCSI_STATUS_RESERVATION_CONFLICT);
	ck_assert_int_eq(write_st(cb, 200), SCSI_STATUS_GOOD);
	ck_assert_int_eq(read_keys(ca, ka, &gen_a), 1);
	ck_assert_uint_eq(ka[0], K2);
	ck_assert_uint_eq(read_res(ca, &type), K2);

	/* released: everyone writes */
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_RELEASE, WE, K2, 0), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write_st(ca, 300), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write_st(cb, 300), SCSI_STATUS_GOOD);

	/* B reserves again, then restarts: the state comes back from the
	 * cluster, not from B's memory */
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_RESERVE, WE, K2, 0), SCSI_STATUS_GOOD);
	ck_assert_int_eq(read_keys(ca, ka, &gen_a), 1);
	harness_iscsi_logout(cb);
	ck_assert_int_eq(harness_stop(&D2), 0);
	nf_start(&D2);
	cb = login_isid(&D2, 0xb2);
	drain_ua(cb);
	ck_assert_int_eq(read_keys(cb, kb, &gen_b), 1);
	ck_assert_uint_eq(kb[0], K2);
	ck_assert_uint_eq(gen_b, gen_a);
	ck_assert_uint_eq(read_res(cb, &type), K2);
	ck_assert_int_eq(type, WE);
	ck_assert_int_eq(write_st(cb, 400), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write_st(ca, 400), SCSI_STATUS_RESERVATION_CONFLICT);

	/* SPC-2 reservations are not shared: refused with a clear sense */
	expect_sense(iscsi_reserve6_sync(cb, 0), SCSI_SENSE_ILLEGAL_REQUEST, 0x2000,
		     "RESERVE(6) on a shared LU", "INVALID COMMAND OPERATION CODE (20/00)");

	/* clean up through A: CLEAR needs a registration */
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K1), SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_CLEAR, 0, K1, 0), SCSI_STATUS_GOOD);
	/* B's registration went with it: B's nexus hears of it, through B */
	expect_sense(iscsi_testunitready_sync(cb, 0), SCSI_SENSE_UNIT_ATTENTION, 0x2a03,
		     "B after CLEAR through A", "UA RESERVATIONS PREEMPTED (2a/03)");
	drain_ua(cb);
	ck_assert_int_eq(read_keys(cb, kb, &gen_b), 0);
	ck_assert_int_eq(write_st(ca, 500), SCSI_STATUS_GOOD);
	harness_iscsi_logout(cb);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

START_TEST(t09_multipath_all)
{
	char vol[64];

	next_vol(vol, sizeof(vol));
	two_nodes(vol);
	ck_assert_int_ge(multipath_run("ALL.MultipathIO"), 4);
	ck_assert_int_eq(harness_stop(&D), 0);
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

/* The RADOS object holding @vol's reservation state, from `rbd info`. */
static void pr_object(const char *vol, char *oid, size_t len)
{
	char id[128];
	int rc = cl_run_line(id, sizeof(id),
			     "rbd --conf %s/ceph.conf --name client.admin info --format json rbd/%s"
			     " | grep -o '\"id\":\"[0-9a-f]*\"' | cut -d'\"' -f4", cl_dir(), vol);

	ck_assert_msg(rc == 0 && id[0], "no image id for %s", vol);
	snprintf(oid, len, "rtgt_pr.%s", id);
}

START_TEST(t10_bad_state)
{
	struct iscsi_context *ca;
	char vol[64], oid[160], line[256];
	uint64_t ka[8];
	uint32_t gen;
	int rc;

	next_vol(vol, sizeof(vol));
	two_nodes(vol);
	C = ca = login_d(&D);
	drain_ua(ca);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K1), SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_RESERVE, WE, K1, 0), SCSI_STATUS_GOOD);
	ck_assert_int_eq(harness_stop(&D2), 0);

	pr_object(vol, oid, sizeof(oid));
	ck_assert_int_eq(harness_write_file(&D, "garbage", "rtgt-pr 2\nseq 99\nnonsense\n"), 0);
	rc = cl_run_line(line, sizeof(line), "rados --conf %s/ceph.conf --name client.admin -p rbd "
			 "put %s %s/garbage 2>&1; echo $?", cl_dir(), oid, D.dir);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(line, "0");
	/* a node that starts refuses it, with a line naming the object */
	ck_assert_int_eq(harness_start(&D2), -ECHILD);
	ck_assert_int_eq(D2.last_status, 1);
	{
		static char log[1 << 16];

		ck_assert_int_gt(harness_read_log(&D2, log, sizeof(log)), 0);
		ck_assert_msg(strstr(log, "rtgt_pr.<image id>") && strstr(log, "malformed"),
			      "no clear line about the malformed state object");
	}
	/* the running node keeps what it has and refuses to build on garbage */
	ck_assert_int_eq(read_keys(ca, ka, &gen), 1);
	ck_assert_uint_eq(ka[0], K1);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_RELEASE, WE, K1, 0),
			 SCSI_STATUS_CHECK_CONDITION);
	ck_assert(log_has("malformed"));
	/* removing the object starts over from no reservations */
	rc = cl_run_line(line, sizeof(line), "rados --conf %s/ceph.conf --name client.admin -p rbd "
			 "rm %s 2>&1; echo $?", cl_dir(), oid);
	ck_assert_str_eq(line, "0");
	nf_start(&D2);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

/* One node's share of case 11: @n registrations with changing keys. */
struct reg_loop {
	struct iscsi_context *c;
	uint64_t base;
	int n, bad;
};

static void *reg_loop_run(void *arg)
{
	struct reg_loop *l = arg;

	for (int i = 1; i <= l->n; i++) {
		struct scsi_persistent_reserve_out_basic p = {
			.service_action_reservation_key = l->base + (uint64_t)i };
		struct scsi_task *t = iscsi_persistent_reserve_out_sync(l->c, 0,
			SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY,
			SCSI_PERSISTENT_RESERVE_SCOPE_LU, 0, &p);

		if (!t || t->status != SCSI_STATUS_GOOD)
			l->bad++;
		if (t)
			scsi_free_scsi_task(t);
	}
	return NULL;
}

START_TEST(t11_concurrent_prout)
{
	struct reg_loop la = { .base = 0xa000, .n = 20 }, lb = { .base = 0xb000, .n = 20 };
	pthread_t ta, tb;
	uint64_t ka[8], kb[8];
	uint32_t gen_a, gen_b;

	two_sessions(&la.c, &lb.c);
	ck_assert_int_eq(read_keys(la.c, ka, &gen_a), 0);
	ck_assert_int_eq(pthread_create(&ta, NULL, reg_loop_run, &la), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, reg_loop_run, &lb), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_int_eq(la.bad + lb.bad, 0);
	/* every update counted once, none lost to the other node's */
	ck_assert_int_eq(read_keys(la.c, ka, &gen_b), 2);
	ck_assert_uint_eq(gen_b, gen_a + 40);
	ck_assert_uint_eq(ka[0], 0xa000 + 20);
	ck_assert_uint_eq(ka[1], 0xb000 + 20);
	ck_assert_int_eq(read_keys(lb.c, kb, &gen_b), 2);
	ck_assert_uint_eq(gen_b, gen_a + 40);
	ck_assert(kb[0] == ka[0] && kb[1] == ka[1]);
	harness_iscsi_logout(lb.c);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

/* A raw 10-byte PERSISTENT RESERVE IN/OUT; the task, freed by the caller. */
static struct scsi_task *pr_raw(struct iscsi_context *c, uint8_t op, uint8_t sa, uint8_t type,
				uint8_t *param, uint32_t len)
{
	struct scsi_task *t = calloc(1, sizeof(*t));
	struct iscsi_data d = { .size = len, .data = param };
	struct scsi_task *r;

	ck_assert_ptr_nonnull(t);
	t->cdb[0] = op;
	t->cdb[1] = sa;
	t->cdb[2] = type;
	t->cdb[5] = (uint8_t)(len >> 24);
	t->cdb[6] = (uint8_t)(len >> 16);
	t->cdb[7] = (uint8_t)(len >> 8);
	t->cdb[8] = (uint8_t)len;
	t->cdb_size = 10;
	t->xfer_dir = op == 0x5f ? SCSI_XFER_WRITE : SCSI_XFER_READ;
	t->expxferlen = len;
	r = iscsi_scsi_command_sync(c, 0, t, op == 0x5f ? &d : NULL);
	ck_assert_msg(r != NULL, "PR raw: %s", iscsi_get_error(c));
	return r;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

START_TEST(t12_move_across_nodes)
{
	struct iscsi_context *ca, *cb;
	struct scsi_task *t;
	uint8_t param[24 + 300];
	const uint8_t *d, *tid = NULL;
	unsigned tid_len = 0, rel = 0;
	int type;

	two_sessions(&ca, &cb);
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K2), SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K1), SCSI_STATUS_GOOD);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_RESERVE, WE, K1, 0), SCSI_STATUS_GOOD);

	/* B's TransportID and relative port, as READ FULL STATUS through A
	 * reports them */
	t = pr_raw(ca, 0x5e, 3, 0, NULL, 1024);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	d = t->datain.data;
	for (unsigned off = 8; off + 24 <= (unsigned)t->datain.size;) {
		unsigned tl = (unsigned)d[off + 20] << 24 | (unsigned)d[off + 21] << 16 |
			      (unsigned)d[off + 22] << 8 | d[off + 23];
		uint64_t key = 0;

		for (int i = 0; i < 8; i++)
			key = key << 8 | d[off + i];
		if (key == K2 && tl <= 300) {
			tid = d + off + 24;
			tid_len = tl;
			rel = (unsigned)d[off + 18] << 8 | d[off + 19];
		}
		off += 24 + tl;
	}
	ck_assert_msg(tid != NULL, "B's registration not in READ FULL STATUS through A");
	ck_assert_uint_eq(rel, 2);   /* B's TPGT */

	/* A moves its reservation to B's registration, through B's port */
	memset(param, 0, sizeof(param));
	put64(param, K1);
	put64(param + 8, K2);
	param[18] = (uint8_t)(rel >> 8);
	param[19] = (uint8_t)rel;
	param[20] = (uint8_t)(tid_len >> 24);
	param[21] = (uint8_t)(tid_len >> 16);
	param[22] = (uint8_t)(tid_len >> 8);
	param[23] = (uint8_t)tid_len;
	memcpy(param + 24, tid, tid_len);
	scsi_free_scsi_task(t);
	t = pr_raw(ca, 0x5f, 7, WE, param, 24 + tid_len);
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "REGISTER AND MOVE to the peer's port: status %d"
		      " sense %x/%04x", t->status, t->sense.key, t->sense.ascq);
	scsi_free_scsi_task(t);
	ck_assert_uint_eq(read_res(cb, &type), K2);
	ck_assert_int_eq(write_st(cb, 600), SCSI_STATUS_GOOD);
	ck_assert_int_eq(write_st(ca, 600), SCSI_STATUS_RESERVATION_CONFLICT);
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_CLEAR, 0, K2, 0), SCSI_STATUS_GOOD);
	harness_iscsi_logout(cb);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

/* A LUN reset from its own thread (it waits for the dead peer). */
struct reset_run {
	struct iscsi_context *c;
	int rc;
	double secs;
	_Atomic bool done;
};

static void *reset_main(void *arg)
{
	struct reset_run *r = arg;
	uint64_t t0 = harness_now_ms();

	r->rc = iscsi_task_mgmt_lun_reset_sync(r->c, 0);
	r->secs = (double)(harness_now_ms() - t0) / 1e3;
	atomic_store(&r->done, true);
	return NULL;
}

START_TEST(t13_dead_peer)
{
	struct iscsi_context *ca, *cb;
	uint64_t kb[8];
	uint32_t gen;
	double t0, reg_s, res_s;
	int type;

	two_sessions(&ca, &cb);
	ck_assert_int_eq(prout(cb, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K2), SCSI_STATUS_GOOD);
	harness_iscsi_logout(cb);
	ck_assert_int_eq(kill(D2.pid, SIGSTOP), 0);

	/* a LUN reset through A waits for B's acknowledgement (B's watch
	 * outlives B on the OSD) up to the 3 s reset notify timeout before
	 * its TMF response; meanwhile A's reactors keep serving: two more
	 * sessions (with 2 workers one of them shares ca's reactor) get their
	 * READs answered at once */
	{
		struct iscsi_context *cx[2];
		struct reset_run r = { .c = ca };
		pthread_t th;
		double worst = 0;
		unsigned during = 0;

		cx[0] = login_isid(&D, 0xc1);
		cx[1] = login_isid(&D, 0xc2);
		drain_ua(cx[0]);
		drain_ua(cx[1]);
		ck_assert_int_eq(pthread_create(&th, NULL, reset_main, &r), 0);
		usleep(200000);
		while (!atomic_load(&r.done)) {
			for (int i = 0; i < 2; i++) {
				uint64_t t = harness_now_ms();
				struct scsi_task *tk = iscsi_read16_sync(cx[i], 0, 0, 4096, 512, 0, 0, 0,
									 0, 0);
				double lat = (double)(harness_now_ms() - t) / 1e3;

				/* GOOD, or the reset's unit attention: answered */
				ck_assert_msg(tk && (tk->status == SCSI_STATUS_GOOD ||
					      tk->status == SCSI_STATUS_CHECK_CONDITION),
					      "READ during the reset: %s", iscsi_get_error(cx[i]));
				scsi_free_scsi_task(tk);
				if (lat > worst)
					worst = lat;
				if (!atomic_load(&r.done))
					during++;
			}
		}
		pthread_join(th, NULL);
		fprintf(stderr, "13_dead_peer: LUN reset answered after %.2f s; %u READs of two other "
			"sessions meanwhile, slowest %.3f s\n", r.secs, during, worst);
		ck_assert_msg(r.rc == 0, "LUN reset failed: %s", iscsi_get_error(ca));
		ck_assert_msg(r.secs >= 2.5 && r.secs < 10, "LUN reset with a dead peer answered "
			      "after %.2f s (the 3 s notify timeout expected)", r.secs);
		ck_assert_msg(during >= 4 && worst < 1.0, "other sessions stalled during the reset: "
			      "%u READs, slowest %.2f s", during, worst);
		ck_assert(log_has("reset not confirmed by every other node"));
		drain_ua(ca);
		harness_iscsi_logout(cx[0]);
		harness_iscsi_logout(cx[1]);
	}

	/* B's watch outlives B on the OSD (until its timeout): A's PROUTs
	 * wait for B's acknowledgement a bounded time, then complete */
	t0 = harness_now_ms() / 1e3;
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_REGISTER, 0, 0, K1), SCSI_STATUS_GOOD);
	reg_s = harness_now_ms() / 1e3 - t0;
	t0 = harness_now_ms() / 1e3;
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_RESERVE, WE, K1, 0), SCSI_STATUS_GOOD);
	res_s = harness_now_ms() / 1e3 - t0;
	fprintf(stderr, "13_dead_peer: PROUT with a dead peer: REGISTER %.2f s, RESERVE %.2f s\n",
		reg_s, res_s);
	ck_assert_msg(reg_s < 10 && res_s < 10, "PROUT held %.1f / %.1f s by a dead peer", reg_s,
		      res_s);
	ck_assert(log_has("not every node acknowledged"));

	/* B comes back: it has everything, A's changes made while it was dead
	 * included (A has fenced the stopped one meanwhile) */
	kill(D2.pid, SIGKILL);
	kill(D2.pid, SIGCONT);
	for (int i = 0; i < 50 && harness_alive(&D2); i++)
		usleep(100000);
	ck_assert(!harness_alive(&D2));
	nf_start(&D2);
	cb = login_isid(&D2, 0xb2);
	drain_ua(cb);
	ck_assert_int_eq(read_keys(cb, kb, &gen), 2);
	ck_assert(kb[0] == K1 && kb[1] == K2);
	ck_assert_uint_eq(read_res(cb, &type), K1);
	ck_assert_int_eq(type, WE);
	ck_assert_int_eq(write_st(cb, 700), SCSI_STATUS_RESERVATION_CONFLICT);
	ck_assert_int_eq(prout(ca, SCSI_PERSISTENT_RESERVE_CLEAR, 0, K1, 0), SCSI_STATUS_GOOD);
	harness_iscsi_logout(cb);
	stop_expect_0();
	ck_assert_int_eq(harness_stop(&D2), 0);
}
END_TEST

/* the rbd CLI as the cluster admin */
#define RBD_CLI "rbd --conf %s/ceph.conf --name client.admin "

/* md5 of `rbd export` of @spec (image or image@snap) into @sum. */
static void image_sum(const char *spec, char *sum, size_t len)
{
	ck_assert_int_eq(cl_run_line(sum, len, RBD_CLI "export rbd/%s - 2>/dev/null | md5sum",
				     cl_dir(), spec), 0);
	ck_assert_msg(strlen(sum) >= 32, "no checksum of %s: \"%s\"", spec, sum);
}

static void rbd_cli(const char *fmt_args)
{
	char line[512];
	int rc = cl_run_line(line, sizeof(line), RBD_CLI "%s 2>&1", cl_dir(), fmt_args);

	ck_assert_msg(rc == 0, "rbd %s: exit %d: %s", fmt_args, rc, line);
}

/* COMPARE AND WRITE of @n blocks at @off: @cmp compared, @data written. */
static struct scsi_task *caw(uint64_t off, const uint8_t *cmp, const uint8_t *data, unsigned n)
{
	static uint8_t cw[2 * 32768];

	memcpy(cw, cmp, n * 512u);
	memcpy(cw + n * 512u, data, n * 512u);
	return iscsi_compareandwrite_sync(C, 0, off / 512, cw, 2 * n * 512u, 512, 0, 0, 0, 0, 0);
}

static void caw_good(uint64_t off, const uint8_t *cmp, const uint8_t *data, unsigned n)
{
	struct scsi_task *t = caw(off, cmp, data, n);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD,
		      "COMPARE AND WRITE of %u blocks at %llu with equal data: %s", n,
		      (unsigned long long)off, t ? "not GOOD" : iscsi_get_error(C));
	scsi_free_scsi_task(t);
}

START_TEST(t14_caw_snap_clone)
{
	static uint8_t p[65536], q[65536], z[65536], x[8192];
	char vol[64], clone[80], spec[96], sum0[128], sum1[128], args[256];
	struct scsi_task *t;

	/* the parent: data in objects 0..3, a snapshot of it */
	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", "thick = false;");
	nf_start(&D);
	login();
	harness_fill_random(p, sizeof(p), 140);
	for (unsigned o = 0; o < 4; o++)
		lun_write((uint64_t)o * OBJ, p, sizeof(p), false);
	snprintf(spec, sizeof(spec), "%s@s1", vol);
	snprintf(args, sizeof(args), "snap create rbd/%s", spec);
	rbd_cli(args);
	image_sum(spec, sum0, sizeof(sum0));
	sleep(1);   /* the daemon's librbd hears of the snapshot (header watch) */

	/* compare-and-writes of one sector and of 16 blocks on the head */
	harness_fill_random(q, sizeof(q), 141);
	caw_good(512, p + 512, q, 1);
	caw_good(OBJ + 8192, p + 8192, q + 4096, 16);
	lun_expect(512, q, 512);
	lun_expect(OBJ + 8192, q + 4096, 8192);
	/* a one-sector miscompare names the differing byte */
	memcpy(x, p + 4096, 512);
	x[100] ^= 0x40;
	t = caw(OBJ + 4096, x, q, 1);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_MISCOMPARE,
		      "one-sector COMPARE AND WRITE with a difference did not miscompare");
	ck_assert_int_eq(sense_info(t), 100);
	scsi_free_scsi_task(t);
	lun_expect(OBJ + 4096, p + 4096, 512);
	image_sum(spec, sum1, sizeof(sum1));
	ck_assert_msg(!strcmp(sum0, sum1), "COMPARE AND WRITE on the head changed snapshot %s "
		      "(%.32s before, %.32s after)", spec, sum0, sum1);
	stop_expect_0();

	/* a clone of the snapshot served as the LUN: its objects 2 and 3 do
	 * not exist yet, the parent's data shows through */
	snprintf(args, sizeof(args), "snap protect rbd/%s", spec);
	rbd_cli(args);
	snprintf(clone, sizeof(clone), "%sc", vol);
	snprintf(args, sizeof(args), "clone rbd/%s rbd/%s", spec, clone);
	rbd_cli(args);
	write_conf(clone, "16M", "thick = false;");
	nf_start(&D);
	login();
	lun_expect(2 * (uint64_t)OBJ, p, sizeof(p));
	/* against the parent's data */
	caw_good(2 * (uint64_t)OBJ + 1024, p + 1024, q, 1);
	caw_good(3 * (uint64_t)OBJ + 16384, p + 16384, q + 8192, 16);
	/* against zeros the parent holds beyond its data in the same object:
	 * the rest of the object keeps the parent's data */
	caw_good(2 * (uint64_t)OBJ + 131072, z, q + 512, 1);
	caw_good(3 * (uint64_t)OBJ + 262144, z, q + 16384, 16);
	memcpy(z, p, sizeof(p));
	memcpy(z + 1024, q, 512);
	lun_expect(2 * (uint64_t)OBJ, z, sizeof(z));
	lun_expect(2 * (uint64_t)OBJ + 131072, q + 512, 512);
	memcpy(z, p, sizeof(p));
	memcpy(z + 16384, q + 8192, 8192);
	lun_expect(3 * (uint64_t)OBJ, z, sizeof(z));
	lun_expect(3 * (uint64_t)OBJ + 262144, q + 16384, 8192);
	/* a miscompare on the clone changes nothing */
	memcpy(x, p + 32768, 512);
	x[7] ^= 1;
	t = caw(2 * (uint64_t)OBJ + 32768, x, q, 1);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_MISCOMPARE,
		      "COMPARE AND WRITE on the clone with a difference did not miscompare");
	ck_assert_int_eq(sense_info(t), 7);
	scsi_free_scsi_task(t);
	lun_expect(2 * (uint64_t)OBJ + 32768, p + 32768, 512);
	image_sum(spec, sum1, sizeof(sum1));
	ck_assert_msg(!strcmp(sum0, sum1), "COMPARE AND WRITE on the clone changed its parent");
	stop_expect_0();
}
END_TEST

/* ---- thin LUNs ---- */

static void thin_lba_status(uint64_t lba, uint64_t *got, uint32_t *n, int *prov)
{
	struct scsi_task *t = iscsi_get_lba_status_sync(C, 0, lba, 24);
	struct scsi_get_lba_status *st;

	if (!t || t->status != SCSI_STATUS_GOOD)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "GET LBA STATUS at %llu: %s (status %d sense %x/%04x)",
		      (unsigned long long)lba, t ? "bad status" : iscsi_get_error(C),
		      t ? t->status : -1, t ? (unsigned)t->sense.key : 0u,
		      t ? (unsigned)t->sense.ascq : 0u);
	st = scsi_datain_unmarshall(t);
	ck_assert_msg(st && st->num_descriptors >= 1, "GET LBA STATUS: no descriptor");
	*got = st->descriptors[0].lba;
	*n = st->descriptors[0].num_blocks;
	*prov = (int)st->descriptors[0].provisioning;
	scsi_free_scsi_task(t);
}

static void thin_unmap(uint64_t lba, uint32_t n)
{
	struct unmap_list l = { .lba = lba, .num = n };
	struct scsi_task *t = iscsi_unmap_sync(C, 0, 0, 0, &l, 1);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "UNMAP %llu+%u: %s",
		      (unsigned long long)lba, n, t ? "bad status" : iscsi_get_error(C));
	scsi_free_scsi_task(t);
}

START_TEST(t15_thin_unmap)
{
	const uint64_t GIB = 1ull << 30, chunk = 4u << 20;
	static uint8_t buf[4u << 20], z[4u << 20], pat[1u << 20];
	char vol[64];
	struct scsi_task *t;
	long long used;
	uint64_t lba;
	uint32_t n;
	int prov;

	next_vol(vol, sizeof(vol));
	write_conf_lun(&D, vol, "2G", NULL, "thin = true;");
	nf_start(&D);
	ck_assert_msg(!log_has("writing out"), "a thin LUN was written out");
	ck_assert_int_eq(cl_image_used(vol), 0);
	login();

	t = iscsi_inquiry_sync(C, 0, 1, 0xb2, 255);
	ck_assert(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 8);
	ck_assert_int_eq(t->datain.data[5], 0x80 | 0x40 | 0x20 | 0x04);
	ck_assert_int_eq(t->datain.data[6] & 0x07, 0x02);
	scsi_free_scsi_task(t);
	t = iscsi_inquiry_sync(C, 0, 1, 0xb0, 255);
	ck_assert(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 36);
	ck_assert_uint_eq((uint32_t)t->datain.data[28] << 24 | (uint32_t)t->datain.data[29] << 16 |
			  (uint32_t)t->datain.data[30] << 8 | t->datain.data[31], OBJ / 512);
	scsi_free_scsi_task(t);
	t = iscsi_readcapacity16_sync(C, 0);
	ck_assert(t && t->status == SCSI_STATUS_GOOD);
	{
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		ck_assert(rc && rc->lbpme && rc->lbprz);
	}
	scsi_free_scsi_task(t);

	/* 1 GiB of data, then all of it unmapped at once */
	for (uint64_t off = 0; off < GIB; off += chunk) {
		harness_fill_random(buf, chunk, (unsigned)(off / chunk) + 1);
		lun_write(off, buf, chunk, false);
	}
	used = cl_image_used(vol);
	ck_assert_msg(used >= (long long)(GIB - chunk), "rbd du after 1 GiB written: %lld", used);
	thin_lba_status(0, &lba, &n, &prov);
	ck_assert_uint_eq(lba, 0);
	ck_assert_int_eq(prov, SCSI_PROVISIONING_TYPE_MAPPED);
	ck_assert_uint_ge(n, OBJ / 512);
	/* as fstrim sends it: commands of the Block Limits page's maximum */
	thin_unmap(0, (uint32_t)(GIB / 2 / 512));
	thin_unmap(GIB / 2 / 512, (uint32_t)(GIB / 2 / 512));
	used = cl_image_used(vol);
	printf("15_thin_unmap: rbd du after writing 1 GiB and unmapping it: %lld bytes\n", used);
	ck_assert_msg(used >= 0 && used < (8ll << 20), "rbd du after UNMAP of 1 GiB: %lld", used);
	for (unsigned k = 0; k < 16; k++)
		lun_expect((uint64_t)k * (GIB / 16) + 4096u * k, z, 65536);
	thin_lba_status(0, &lba, &n, &prov);
	ck_assert_int_eq(prov, SCSI_PROVISIONING_TYPE_DEALLOCATED);
	ck_assert_uint_ge(n, OBJ / 512);

	/* an UNMAP inside objects: 3 MiB + 1 KiB from 1 MiB + 512 bytes */
	harness_fill_random(buf, chunk, 77);
	lun_write(0, buf, chunk, false);
	lun_write(chunk, buf, chunk, false);
	thin_unmap((1u << 20) / 512 + 1, (3u << 20) / 512 + 2);
	lun_expect(0, buf, (1u << 20) + 512);
	lun_expect((1u << 20) + 512, z, (3u << 20) + 1024);   /* to 4 MiB + 1536 */
	lun_expect(chunk + 1536, buf + 1536, (1u << 20));
	thin_lba_status(0, &lba, &n, &prov);
	ck_assert_int_eq(prov, SCSI_PROVISIONING_TYPE_MAPPED);

	/* WRITE SAME(16) with UNMAP of a zero block: unmapped */
	memset(pat, 0, 512);
	t = iscsi_writesame16_sync(C, 0, 2 * chunk / 512, pat, 512, (uint32_t)(2 * chunk / 512),
				   0, 1, 0, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE SAME UNMAP failed");
	scsi_free_scsi_task(t);
	lun_expect(chunk + 1536, buf + 1536, chunk - 1536);   /* before it: untouched */
	thin_lba_status(2 * chunk / 512, &lba, &n, &prov);
	ck_assert_uint_eq(lba, 2 * chunk / 512);
	ck_assert_int_eq(prov, SCSI_PROVISIONING_TYPE_DEALLOCATED);

	/* all the same after a restart */
	stop_expect_0();
	nf_start(&D);
	login();
	lun_expect(0, buf, (1u << 20) + 512);
	lun_expect((1u << 20) + 512, z, (3u << 20) + 1024);
	lun_expect(chunk + 1536, buf + 1536, chunk - 1536);
	lun_expect(2 * chunk, z, 65536);
	lun_expect(GIB / 2, z, 65536);
	stop_expect_0();
}
END_TEST

START_TEST(t16_conformance_thin)
{
	char cmd[300], line[512];

	conformance_rbd("THIN=1 MIN_PASSED=20 TESTS='ALL.Unmap*,ALL.GetLBAStatus*,ALL.WriteSame10*,"
			"ALL.WriteSame16*,ALL.ReadCapacity16*,ALL.Inquiry*'",
			"thin conformance on rbd");
	snprintf(cmd, sizeof(cmd), "grep -a 'skipped' %s/conformance.out | tail -1", D.dir);
	ck_assert_int_eq(cl_run_line(line, sizeof(line), "%s", cmd), 0);
	printf("16_conformance_thin: %s\n", line);
	ck_assert_msg(strstr(line, "thin-provisioning tests skipped: 0"), "%s", line);
}
END_TEST

START_TEST(t17_grow_two_nodes)
{
	struct lg_loader l = { .bytes = 15u << 20 };
	struct iscsi_context *a, *b;
	char vol[64], out[4096];
	int ascq;
	long long used;

	same_tpgt_nodes(vol, sizeof(vol));
	a = login_d(&D);
	b = login_d(&D2);
	l.c = login_d(&D2);
	lg_drain_ua(a, 0);
	lg_drain_ua(b, 0);
	lg_drain_ua(l.c, 0);
	lg_write_read(a, (16u << 20) / 512 - 8, 4096, 7);

	lg_grow_under_load(&l, &D, HARNESS_TARGET, "24M", 24u << 20);

	/* node B: the unit attention, the new size, the new blocks */
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, LG_ASC_CAP_CHANGED);
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(lg_capacity(b, 0), (24u << 20) / 512);
	lg_read_expect(b, (16u << 20) / 512 - 8, 4096, 7);
	lg_write_read(b, (24u << 20) / 512 - 8, 4096, 9);
	lg_write_read(b, (16u << 20) / 512, 65536, 8);
	/* node A: the same */
	ck_assert_int_eq(lg_tur(a, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, LG_ASC_CAP_CHANGED);
	ck_assert_uint_eq(lg_capacity(a, 0), (24u << 20) / 512);
	lg_read_expect(a, (24u << 20) / 512 - 8, 4096, 9);
	lg_verify_pieces(a, &l);
	used = cl_image_used(vol);
	ck_assert_msg(used == 24ll << 20, "rbd du of the grown thick image: %lld", used);
	/* never shrinks */
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", HARNESS_TARGET, "0", "20M", NULL),
			 1);
	ck_assert_uint_eq(lg_capacity(a, 0), (24u << 20) / 512);
	harness_iscsi_logout(a);
	harness_iscsi_logout(b);
	harness_iscsi_logout(l.c);
	ck_assert_int_eq(harness_stop(&D2), 0);

	/* the file still says 16M */
	nf_stop_expect_0(&D, "after the grow");
	nf_start(&D);
	a = login_d(&D);
	lg_drain_ua(a, 0);
	ck_assert_uint_eq(lg_capacity(a, 0), (24u << 20) / 512);
	ck_assert(log_has("more than the 16777216 the configuration asks for"));
	lg_read_expect(a, (24u << 20) / 512 - 8, 4096, 9);
	lg_verify_pieces(a, &l);
	harness_iscsi_logout(a);
	nf_stop_expect_0(&D, "after the restart");
}
END_TEST

/* A kept rbd pool's Ceph keys are read once, at pool open: a reload that
 * changes one says it needs a restart instead of dropping it silently. */
START_TEST(t18_reload_ceph_keys)
{
	static char out[8192];
	char vol[64];
	int rc;

	next_vol(vol, sizeof(vol));
	write_conf(vol, "16M", NULL);
	nf_start(&D);
	write_conf(vol, "16M", "provision_mbps = 50; thick = false;");
	rc = rj_ctl(&D, out, sizeof(out), "reload", "--json", NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	ck_assert_msg(strstr(out, "pool c: ceph_conf/rbd_pool/ceph_id/keyring/thick/provision_mbps"),
		      "the reply does not list the rbd keys as needing a restart: %s", out);
	/* the same file again: the reply compares with the last file read,
	 * as for every needs-restart key, so it is said once */
	rc = rj_ctl(&D, out, sizeof(out), "reload", "--json", NULL);
	ck_assert_msg(rc == 0 && !strstr(out, "ceph_conf/rbd_pool"),
		      "an unchanged file still lists the rbd keys: %s", out);
	stop_expect_0();
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_create_reopen_size", t01_create_reopen_size, .timeout = 180),
		CK_CASE("02_io", t02_io, .timeout = 120),
		CK_CASE("03_persistence", t03_persistence, .timeout = 180),
		CK_CASE("04_thin", t04_thin, .timeout = 120),
		CK_CASE("05_conformance", t05_conformance, .timeout = 1800),
		CK_CASE("06_two_nodes", t06_two_nodes, .timeout = 600),
		CK_CASE("07_bad_cluster", t07_bad_cluster, .timeout = 120),
		CK_CASE("08_shared_pr", t08_shared_pr, .timeout = 300),
		CK_CASE("09_multipath_all", t09_multipath_all, .timeout = 600),
		CK_CASE("10_bad_state", t10_bad_state, .timeout = 300),
		CK_CASE("11_concurrent_prout", t11_concurrent_prout, .timeout = 300),
		CK_CASE("12_move_across_nodes", t12_move_across_nodes, .timeout = 300),
		CK_CASE("13_dead_peer", t13_dead_peer, .timeout = 300),
		CK_CASE("14_caw_snap_clone", t14_caw_snap_clone, .timeout = 300),
		CK_CASE("15_thin_unmap", t15_thin_unmap, .timeout = 600),
		CK_CASE("16_conformance_thin", t16_conformance_thin, .timeout = 900),
		CK_CASE("17_grow_two_nodes", t17_grow_two_nodes, .timeout = 300),
		CK_CASE("18_reload_ceph_keys", t18_reload_ceph_keys, .timeout = 180),
	};

	return cl_main("rtgt-rbd", &(struct ck_suite_def){ "net_rbd", CK_CASES(cases),
		.setup = setup, .teardown = teardown });
}
