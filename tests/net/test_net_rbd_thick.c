/*
 * tests/net/test_net_rbd_thick.c - thick provisioning of RBD images in the
 * background and WRITE SAME through librbd's write-same: a throwaway
 * single-node cluster (scripts/ceph-cluster.sh), a real bin/rtgtd with an rbd
 * pool, libiscsi, rtgtctl and the rbd CLI.
 *
 * 01 a new 1.5 GiB thick image: rtgtd serves (portal, control socket) while
 *    it is written out; `rtgtctl status --json` shows the volume
 *    "provisioning" with growing progress, bytes done/total and an ETA, the
 *    text status the percentage; meanwhile TEST UNIT READY, READ, WRITE and
 *    WRITE SAME get NOT READY, LOGICAL UNIT IS IN PROCESS OF BECOMING READY
 *    (02/04/01) while INQUIRY, REPORT LUNS and READ CAPACITY(16) work;
 *    REQUEST SENSE returns GOOD with 02/04/01 and a growing PROGRESS
 *    INDICATION (SKSV set, never ahead of the status), TEST UNIT READY's
 *    sense the same indication; then
 *    "ready" at 100%, I/O works and `rbd du` shows the image fully used.
 * 02 SIGKILL during provisioning, restart: progress resumes from the
 *    checkpoint (never back at 0) and completes; the image is fully used.
 * 03 WRITE SAME(16) across an object boundary reads back as the block
 *    repeated, neighbours untouched; with NDOB as zeros; one of 150 MiB
 *    (more than one librbd request); WRITE SAME(10); the image stays fully
 *    allocated (zeros are written, not discarded).
 * 04 the cluster refuses rtgtd's client during provisioning (OSD
 *    blocklist): the volume shows "failed" with the error in status (JSON
 *    and text), the failure is logged, rtgtd keeps running and the LUN
 *    answers NOT READY (a blocklisted node is fenced: LOGICAL UNIT NOT
 *    ACCESSIBLE, TARGET PORT IN UNAVAILABLE STATE, 02/04/0C, rather than
 *    the MANUAL INTERVENTION REQUIRED, 02/04/03, of other failures).
 * 05 provision_mbps = 50 on a 512 MiB image: the write-out rate seen in
 *    `rtgtctl status` (bytes done over time, at least what two reads prove)
 *    stays at or under 55 MB/s over every window of 5 s or more, and the
 *    whole write-out is not held below half the cap.
 * 06 two nodes, one thick image: A writes it out (20 MB/s) and is stopped
 *    (SIGSTOP) past its lease; B takes the lapsed lease, finishes, and an
 *    initiator writes 64 MiB through B from A's last checkpoint on; A
 *    resumed (SIGCONT) notices its lease lapsed and writes no more zeros:
 *    the data reads back, rtgt.thick stays "done".
 *
 * 01, 02 and 04 write out with provision_mbps = 150 (BIG_MBPS): at least 10 s
 * however fast the cluster, so that they catch the write-out in progress in
 * the sanitizer build too (its rtgtd and rtgtctl run several times slower).
 *
 * libiscsi's conformance suite on an RBD LUN (WRITE SAME included) is
 * test_net_rbd's case 05.
 *
 * CEPH_DIR=DIR runs on a cluster already started with scripts/ceph-cluster.sh
 * (left running); otherwise the test starts and stops its own.
 * Without the Ceph packages (or built without librbd) the test prints
 * SKIPPED with the reason and exits 0: it neither passes nor fails anything.
 */
#include <check.h>
#include <errno.h>
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

#include "tests/lib/ceph.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"
#include "tests/lib/lun_io.h"

#define OBJ        (4u << 20)       /* librbd's object size (raid/rbd.c) */
/* unpaced, written out in 3-13 s on the shared 2-core VM (at BIG_MBPS in
 * 11 s); small enough for the test cluster's 4 GiB OSD (2 GiB images
 * brought it to its full ratio, which blocks every client op) */
#define BIG        "1536M"
#define BIG_BYTES  (1536ull << 20)
/* provision_mbps of the cases that must watch a write-out in progress: at
 * most 150 MB/s, so 1.5 GiB take at least 10.7 s however fast the cluster is,
 * and a slow build (sanitizers) still sees it running */
#define BIG_MBPS   150u

static unsigned vol_seq;             /* fresh image names across test cases */

static struct harness_daemon D, D2;  /* D2: the second node of case 06 */
static struct iscsi_context *C;
static char cur_vol[64];             /* image of the running case, removed after it */

/* ---- daemon ---- */

static void msleep(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}


static void setup(void)
{
	ck_assert_int_eq(harness_init(&D), 0);
	harness_fini_at_exit(&D);
	memset(&D2, 0, sizeof(D2));
	C = NULL;
	cur_vol[0] = '\0';
}

static void teardown(void)
{
	char line[256];

	harness_iscsi_logout(C);
	C = NULL;
	/* SIGTERM first: a killed client's watch keeps the image from being
	 * removed for 30 s; case 06 may have left D stopped (SIGSTOP) */
	if (D.pid > 0) {
		kill(D.pid, SIGCONT);
		harness_stop(&D);
	}
	harness_fini(&D);
	if (D2.pid > 0)
		harness_stop(&D2);
	if (D2.port)
		harness_fini(&D2);
	/* the OSD holds 4 GiB: do not leave 1.5 GiB images behind; a SIGKILLed
	 * client's watch keeps the image for up to 30 s */
	for (int i = 0; cur_vol[0] && i < 45; i++) {
		if (cl_run_line(line, sizeof(line), "rbd --conf %s/ceph.conf --name client.admin "
			     "rm --no-progress %s 2>&1 >/dev/null | tail -1", cl_dir(),
			     cur_vol) != 0 || !line[0] || strstr(line, "No such file"))
			break;
		if (!strstr(line, "watchers") && !strstr(line, "still open")) {
			fprintf(stderr, "rbd rm %s: %s\n", cur_vol, line);
			break;
		}
		msleep(1000);
	}
}

/* @mbps: the pool's provision_mbps (0: unlimited) */
static void write_conf_d(struct harness_daemon *d, const char *vol, const char *size,
			 unsigned mbps)
{
	ck_assert_int_eq(harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\"; provision_mbps = %u;\n"
		"            keyring = \"%s/client.rtgt.keyring\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"%s\"; size = \"%s\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n",
		cl_dir(), mbps, cl_dir(), d->port, vol, size), 0);
}

static void write_conf(const char *vol, const char *size, unsigned mbps)
{
	write_conf_d(&D, vol, size, mbps);
}

static void start_d(struct harness_daemon *d)
{
	int rc = harness_start(d);

	if (rc) {
		harness_dump_log(d, stderr, 40);
		ck_abort_msg("rtgtd did not start: %s (exit %d)", strerror(-rc), d->last_status);
	}
}

static void start(void)
{
	start_d(&D);
}

/* Connect and log in without libiscsi's full connect, whose TEST UNIT READY
 * fails the login while the LU is becoming ready. */
static void login_d(struct harness_daemon *d)
{
	C = nf_login(d, 0, &(struct harness_login){ .login_only = true });
}

static void login(void)
{
	login_d(&D);
}

static bool log_has(const char *needle)
{
	static char buf[1 << 18];

	return harness_read_log(&D, buf, sizeof(buf)) > 0 && strstr(buf, needle);
}

static void next_vol(void)
{
	snprintf(cur_vol, sizeof(cur_vol), "k%ld-%u", (long)getpid(), ++vol_seq);
}

static const char *rtgtctl(void)
{
	return getenv("RTGTCTL") ? getenv("RTGTCTL") : "bin/rtgtctl";
}

/* ---- status ---- */

struct vstat {
	char state[32];
	long long done, total;
	double progress, eta;      /* eta < 0: not reported */
};

/* The volume's entry in the status reply (what `rtgtctl status --json`
 * prints); false when not available (daemon not up yet, volume not
 * listed). */
static bool vol_status(struct vstat *vs)
{
	/* straight on the control socket: a sanitizer rtgtctl costs a second
	 * or more a start on a loaded machine, which left too few samples of
	 * a write-out in progress (SAN run at load 15: 2 samples in 01) */
	static char buf[1 << 16];
	struct json_object *root, *pools;
	bool found = false;

	if (rj_query(&D, "status", buf, sizeof(buf)))
		return false;
	root = json_tokener_parse(buf);
	if (!root)
		return false;
	if (json_object_object_get_ex(root, "pools", &pools)) {
		for (size_t i = 0; i < json_object_array_length(pools) && !found; i++) {
			struct json_object *vols, *p = json_object_array_get_idx(pools, i);

			if (!json_object_object_get_ex(p, "volumes", &vols))
				continue;
			for (size_t v = 0; v < json_object_array_length(vols) && !found; v++) {
				struct json_object *vo = json_object_array_get_idx(vols, v), *x;

				if (!json_object_object_get_ex(vo, "name", &x) ||
				    strcmp(json_object_get_string(x), cur_vol))
					continue;
				found = true;
				memset(vs, 0, sizeof(*vs));
				vs->eta = -1;
				if (json_object_object_get_ex(vo, "state", &x))
					snprintf(vs->state, sizeof(vs->state), "%s",
						 json_object_get_string(x));
				if (json_object_object_get_ex(vo, "provision_done_bytes", &x))
					vs->done = json_object_get_int64(x);
				if (json_object_object_get_ex(vo, "provision_total_bytes", &x))
					vs->total = json_object_get_int64(x);
				if (json_object_object_get_ex(vo, "provision_progress", &x))
					vs->progress = json_object_get_double(x);
				if (json_object_object_get_ex(vo, "provision_eta_s", &x))
					vs->eta = json_object_get_double(x);
			}
		}
	}
	json_object_put(root);
	return found;
}

/* ---- SCSI ---- */

static bool is_becoming_ready(const struct scsi_task *t)
{
	return t && t->status == SCSI_STATUS_CHECK_CONDITION &&
	       t->sense.key == SCSI_SENSE_NOT_READY && t->sense.ascq == 0x0401;
}

static void expect_becoming_ready(struct scsi_task *t, const char *what)
{
	ck_assert_msg(t, "%s: no answer: %s", what, iscsi_get_error(C));
	ck_assert_msg(is_becoming_ready(t), "%s while provisioning: status %d sense %x/%04x, "
		      "expected NOT READY 02/04/01", what, t->status, t->sense.key, t->sense.ascq);
	scsi_free_scsi_task(t);
}

static void expect_good(struct scsi_task *t, const char *what)
{
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "%s: %s (status %d sense %x/%04x)", what,
		      t ? "bad status" : iscsi_get_error(C), t ? t->status : -1,
		      t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	scsi_free_scsi_task(t);
}

/* The PROGRESS INDICATION of fixed-format sense data @s (SKSV set: bytes
 * 15..17), -1 without one. */
static long sense_progress(const unsigned char *s, int len)
{
	if (len < 18 || (s[0] & 0x7f) != 0x70 || !(s[15] & 0x80))
		return -1;
	return (long)s[16] << 8 | s[17];
}

/* REQUEST SENSE (fixed format): its status GOOD and the sense it returns,
 * key and ASC/ASCQ into @key / @code; the progress indication, -1 without
 * one. A unit attention is taken and asked again. */
static long request_sense(int *key, int *code)
{
	for (int i = 0; i < 4; i++) {
		unsigned char cdb[6] = { 0x03, 0, 0, 0, 252, 0 };
		struct scsi_task *t = scsi_create_task(6, cdb, SCSI_XFER_READ, 252);
		const unsigned char *d;
		long prog;

		ck_assert(t != NULL);
		t = iscsi_scsi_command_sync(C, 0, t, NULL);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "REQUEST SENSE: %s (status %d)",
			      t ? "bad status" : iscsi_get_error(C), t ? t->status : -1);
		ck_assert_msg(t->datain.size >= 18, "REQUEST SENSE returned %d bytes", t->datain.size);
		d = t->datain.data;
		ck_assert_uint_eq(d[0] & 0x7f, 0x70);
		*key = d[2] & 0x0f;
		*code = d[12] << 8 | d[13];
		prog = sense_progress(d, t->datain.size);
		scsi_free_scsi_task(t);
		if (*key != SCSI_SENSE_UNIT_ATTENTION)
			return prog;
	}
	ck_abort_msg("REQUEST SENSE keeps returning unit attentions");
	return -1;
}

/* TEST UNIT READY until no unit attention is pending (POWER ON after login). */
static void clear_ua(void)
{
	for (int i = 0; i < 8; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(C, 0);
		bool ua = t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			  t->sense.key == SCSI_SENSE_UNIT_ATTENTION;

		scsi_free_scsi_task(t);
		if (!ua)
			return;
	}
}

static void lun_write(uint64_t off, const uint8_t *buf, uint32_t len)
{
	expect_good(iscsi_write16_sync(C, 0, off / 512, (unsigned char *)buf, len, 512, 0, 0, 0,
				       0, 0), "WRITE 16");
}

static void lun_expect(uint64_t off, const uint8_t *want, uint32_t len)
{
	lio_expect(C, 0, off, want, len);
}

/* WRITE SAME(16) built by hand (libiscsi has no NDOB argument). */
static struct scsi_task *write_same16(uint64_t lba, uint32_t n, const uint8_t *block, bool ndob)
{
	unsigned char cdb[16] = { 0x93 };
	struct iscsi_data d = { .size = 512, .data = (unsigned char *)block };
	struct scsi_task *t;

	cdb[1] = ndob ? 0x01 : 0;
	for (int i = 0; i < 8; i++)
		cdb[2 + i] = (unsigned char)(lba >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		cdb[10 + i] = (unsigned char)(n >> (24 - 8 * i));
	t = scsi_create_task(16, cdb, ndob ? SCSI_XFER_NONE : SCSI_XFER_WRITE, ndob ? 0 : 512);
	ck_assert(t != NULL);
	return iscsi_scsi_command_sync(C, 0, t, ndob ? NULL : &d);
}

/* Reads [off, off + len) in 1 MiB pieces: every 512-byte block must equal
 * @block. */
static void lun_expect_same(uint64_t off, uint64_t len, const uint8_t *block)
{
	while (len) {
		uint32_t n = len < (1u << 20) ? (uint32_t)len : (1u << 20);
		struct scsi_task *t = iscsi_read16_sync(C, 0, off / 512, n, 512, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ 16 at %llu: %s",
			      (unsigned long long)off, t ? "bad status" : iscsi_get_error(C));
		for (uint32_t b = 0; b < n; b += 512)
			ck_assert_msg(memcmp(t->datain.data + b, block, 512) == 0,
				      "block at byte %llu is not the WRITE SAME pattern",
				      (unsigned long long)(off + b));
		scsi_free_scsi_task(t);
		off += n;
		len -= n;
	}
}

/* ---- tests ---- */

START_TEST(t01_background)
{
	struct vstat vs, prev = { .done = -1 };
	uint8_t buf[8192], blk[512] = { 0x5a };
	unsigned samples = 0, grew = 0, with_eta = 0, midway = 0, rs_samples = 0, rs_grew = 0;
	long rs_prev = -1;
	bool text_seen = false, rs_ready = false;
	time_t t0;

	next_vol();
	write_conf(cur_vol, BIG, BIG_MBPS);
	t0 = time(NULL);
	start();
	login();
	ck_assert_msg(vol_status(&vs), "status --json does not list %s while provisioning", cur_vol);
	ck_assert_msg(strcmp(vs.state, "provisioning") == 0,
		      "volume is \"%s\" right after start; make the image larger (provisioning "
		      "finished before serving)", vs.state);

	/* not ready: media access refused, the rest answers; the first
	 * command reports the POWER ON unit attention (it comes first) */
	{
		struct scsi_task *t = iscsi_testunitready_sync(C, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			      (t->sense.key == SCSI_SENSE_UNIT_ATTENTION || is_becoming_ready(t)),
			      "first TEST UNIT READY: neither UA nor NOT READY");
		scsi_free_scsi_task(t);
	}
	expect_becoming_ready(iscsi_testunitready_sync(C, 0), "TEST UNIT READY");
	expect_becoming_ready(iscsi_read16_sync(C, 0, 0, 4096, 512, 0, 0, 0, 0, 0), "READ 16");
	harness_fill_random(buf, sizeof(buf), 1);
	expect_becoming_ready(iscsi_write16_sync(C, 0, 8, buf, 4096, 512, 0, 0, 0, 0, 0),
			      "WRITE 16");
	expect_becoming_ready(write_same16(0, 16, blk, false), "WRITE SAME 16");
	expect_good(iscsi_inquiry_sync(C, 0, 0, 0, 255), "INQUIRY");
	expect_good(iscsi_reportluns_sync(C, 0, 512), "REPORT LUNS");
	{
		struct scsi_task *t = iscsi_readcapacity16_sync(C, 0);
		struct scsi_readcapacity16 *rc16;

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "READ CAPACITY 16 while provisioning");
		rc16 = scsi_datain_unmarshall(t);
		ck_assert(rc16 != NULL);
		ck_assert_msg((rc16->returned_lba + 1) * 512 == BIG_BYTES, "capacity %llu",
			      (unsigned long long)rc16->returned_lba);
		scsi_free_scsi_task(t);
	}

	/* progress grows to 100%; REQUEST SENSE returns GOOD with the NOT
	 * READY sense and a growing progress indication, TEST UNIT READY's
	 * sense the same, neither ahead of the status read after them */
	for (;;) {
		int key, code;
		long rs = request_sense(&key, &code);
		struct scsi_task *t = iscsi_testunitready_sync(C, 0);
		long tur = -1;
		bool tur_ready = t && t->status == SCSI_STATUS_GOOD;

		ck_assert_msg(t, "TEST UNIT READY: %s", iscsi_get_error(C));
		if (!tur_ready) {
			ck_assert_msg(is_becoming_ready(t), "TEST UNIT READY while provisioning: "
				      "status %d sense %x/%04x", t->status, t->sense.key,
				      t->sense.ascq);
			/* libiscsi keeps the sense after its 2-byte length */
			if (t->datain.size > 2)
				tur = sense_progress(t->datain.data + 2, t->datain.size - 2);
			ck_assert_msg(tur >= 0, "TEST UNIT READY's NOT READY sense has no progress "
				      "indication");
			ck_assert_msg(tur >= rs, "TEST UNIT READY progress %ld < REQUEST SENSE's %ld",
				      tur, rs);
		}
		scsi_free_scsi_task(t);
		if (key == SCSI_SENSE_NO_SENSE) {
			rs_ready = true;    /* became ready in between: status says so */
		} else {
			ck_assert_msg(key == SCSI_SENSE_NOT_READY && code == 0x0401,
				      "REQUEST SENSE while provisioning: sense %x/%04x, expected "
				      "02/04/01", key, code);
			ck_assert_msg(rs >= 0, "REQUEST SENSE: no progress indication (SKSV)");
			ck_assert_msg(rs >= rs_prev, "REQUEST SENSE progress went back: %ld after %ld",
				      rs, rs_prev);
			if (rs > rs_prev && rs_prev >= 0)
				rs_grew++;
			rs_prev = rs;
			rs_samples++;
		}
		if (!vol_status(&vs))
			break;
		/* the progress indication is done / size in 65536ths */
		ck_assert_msg(rs < 0 || rs <= vs.progress * 65536.0 + 1, "REQUEST SENSE progress "
			      "%ld/65536 ahead of the status read after it (%f)", rs, vs.progress);
		ck_assert_msg(!rs_ready || strcmp(vs.state, "ready") == 0,
			      "REQUEST SENSE found the LU ready, status says %s", vs.state);
		ck_assert_msg(vs.total == (long long)BIG_BYTES, "provision_total_bytes %lld", vs.total);
		ck_assert_msg(vs.done >= prev.done, "progress went back: %lld after %lld", vs.done,
			      prev.done);
		samples++;
		if (vs.done > prev.done && prev.done >= 0)
			grew++;
		if (strcmp(vs.state, "ready") == 0)
			break;
		ck_assert_str_eq(vs.state, "provisioning");
		ck_assert_msg(vs.progress >= 0 && vs.progress < 1.0, "progress %f", vs.progress);
		if (vs.eta >= 0)
			with_eta++;
		if (vs.done > 0 && vs.done < vs.total)
			midway++;
		if (!text_seen) {
			char line[512];

			/* the text status: "k..-1 (1.5G, provisioning 12.3%, ..." */
			cl_run_line(line, sizeof(line), "%s -s %s/rtgtd.sock status | grep volumes",
				 rtgtctl(), D.dir);
			text_seen = strstr(line, "provisioning") && strstr(line, "%") &&
				    strstr(line, " of ");
		}
		prev = vs;
		ck_assert_msg(time(NULL) - t0 < 240, "provisioning did not finish in 240 s");
		msleep(250);
	}
	ck_assert_str_eq(vs.state, "ready");
	ck_assert_msg(vs.done == vs.total && vs.progress == 1.0, "ready at %lld of %lld", vs.done,
		      vs.total);
	ck_assert_msg(samples >= 4 && grew >= 2 && midway >= 2,
		      "too few progress samples (%u, grew %u times, %u midway)", samples, grew,
		      midway);
	ck_assert_msg(with_eta >= 1, "no ETA while provisioning");
	ck_assert_msg(rs_samples >= 4 && rs_grew >= 2, "REQUEST SENSE: %u progress samples, grew "
		      "%u times", rs_samples, rs_grew);
	ck_assert_msg(text_seen, "rtgtctl status did not show the provisioning percentage");
	fprintf(stderr, "01: %s written out in about %lld s, %u samples, REQUEST SENSE progress "
		"%u samples (last %ld/65536)\n", BIG, (long long)(time(NULL) - t0), samples,
		rs_samples, rs_prev);
	{
		int key, code;

		/* ready: nothing left to report */
		request_sense(&key, &code);
		ck_assert_msg(key == SCSI_SENSE_NO_SENSE, "REQUEST SENSE after provisioning: %x/%04x",
			      key, code);
	}

	/* ready: everything works, the image is allocated in full */
	expect_good(iscsi_testunitready_sync(C, 0), "TEST UNIT READY after provisioning");
	harness_fill_random(buf, sizeof(buf), 2);
	lun_write(BIG_BYTES - sizeof(buf), buf, sizeof(buf));
	lun_expect(BIG_BYTES - sizeof(buf), buf, sizeof(buf));
	ck_assert_int_eq(cl_image_used(cur_vol), (long long)BIG_BYTES);
	ck_assert(log_has("thick provisioning done"));
}
END_TEST

START_TEST(t02_kill_resume)
{
	struct vstat vs;
	long long at_kill = 0, first = -1;
	time_t t0 = time(NULL);

	next_vol();
	write_conf(cur_vol, BIG, BIG_MBPS);
	start();
	/* kill as soon as a checkpoint (one a second) past 1/8 is in the
	 * image's metadata: waiting a fixed time raced a fast cluster to the
	 * end */
	for (;;) {
		char line[128];

		ck_assert_msg(time(NULL) - t0 < 120, "no checkpoint");
		if (cl_run_line(line, sizeof(line), "rbd --conf %s/ceph.conf --name client.admin "
				"image-meta get %s rtgt.thick 2>/dev/null", cl_dir(), cur_vol) == 0 &&
		    line[0] >= '1' && line[0] <= '9' && atoll(line) >= (long long)(BIG_BYTES / 8))
			break;
		ck_assert_msg(strcmp(line, "done") != 0, "finished before the kill");
		msleep(50);
	}
	ck_assert(vol_status(&vs));
	ck_assert_msg(strcmp(vs.state, "provisioning") == 0, "finished before the kill");
	at_kill = vs.done;
	ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
	while (harness_alive(&D))
		msleep(50);

	start();
	while (vol_status(&vs) && strcmp(vs.state, "ready") != 0) {
		ck_assert_str_eq(vs.state, "provisioning");
		if (first < 0)
			first = vs.done;
		ck_assert_msg(vs.done > 0, "provisioning restarted from 0 after SIGKILL at %lld",
			      at_kill);
		ck_assert_msg(time(NULL) - t0 < 240, "provisioning did not finish after restart");
		msleep(200);
	}
	ck_assert_str_eq(vs.state, "ready");
	fprintf(stderr, "02: killed at %lld bytes, first seen after restart %lld\n", at_kill, first);
	/* the checkpoint is at most about a second behind the kill */
	ck_assert_msg(first < 0 || first >= (long long)(BIG_BYTES / 8),
		      "resumed at %lld, killed at %lld", first, at_kill);
	ck_assert_msg(log_has("resuming"), "no resume line in the log");
	ck_assert_int_eq(cl_image_used(cur_vol), (long long)BIG_BYTES);
	login();
	clear_ua();
	expect_good(iscsi_testunitready_sync(C, 0), "TEST UNIT READY after resumed provisioning");
}
END_TEST

START_TEST(t03_write_same)
{
	const uint64_t vol_bytes = 160ull << 20;
	uint8_t blk[512], zero[512] = { 0 }, before[4096], after[4096];
	uint64_t lba = OBJ / 512 - 100;     /* 100 blocks before the first boundary */
	uint32_t n = 300;
	struct vstat vs;
	time_t t0 = time(NULL);

	next_vol();
	write_conf(cur_vol, "160M", 0);
	start();
	while (vol_status(&vs) && strcmp(vs.state, "ready") != 0) {
		ck_assert_msg(time(NULL) - t0 < 120, "160M not provisioned in 120 s");
		msleep(100);
	}
	login();
	clear_ua();
	harness_fill_random(blk, sizeof(blk), 3);
	harness_fill_random(before, sizeof(before), 4);
	harness_fill_random(after, sizeof(after), 5);
	lun_write(lba * 512 - sizeof(before), before, sizeof(before));
	lun_write((lba + n) * 512, after, sizeof(after));

	expect_good(write_same16(lba, n, blk, false), "WRITE SAME 16 across an object boundary");
	lun_expect_same(lba * 512, n * 512ull, blk);
	lun_expect(lba * 512 - sizeof(before), before, sizeof(before));
	lun_expect((lba + n) * 512, after, sizeof(after));

	/* NDOB: zeros, the neighbours again untouched */
	expect_good(write_same16(lba + 50, 200, NULL, true), "WRITE SAME 16 NDOB");
	lun_expect_same((lba + 50) * 512, 200 * 512ull, zero);
	lun_expect_same(lba * 512, 50 * 512ull, blk);
	lun_expect_same((lba + 250) * 512, 50 * 512ull, blk);
	lun_expect((lba + n) * 512, after, sizeof(after));

	/* 150 MiB: more than one 64 MiB volume request */
	harness_fill_random(blk, sizeof(blk), 6);
	expect_good(write_same16(8, (150u << 20) / 512, blk, false), "WRITE SAME 16 of 150 MiB");
	lun_expect_same(8 * 512, 150ull << 20, blk);
	lun_expect_same(0, 8 * 512, zero);
	lun_expect_same(8 * 512 + (150ull << 20), vol_bytes - 8 * 512 - (150ull << 20), zero);

	/* WRITE SAME(10) takes the same path */
	harness_fill_random(blk, sizeof(blk), 7);
	expect_good(iscsi_writesame10_sync(C, 0, 2 * OBJ / 512 - 3, blk, 512, 6, 0, 0, 0, 0),
		    "WRITE SAME 10 across an object boundary");
	lun_expect_same(2ull * OBJ - 3 * 512, 6 * 512, blk);

	/* zeros are written, never discarded: the image stays allocated */
	expect_good(write_same16(0, (uint32_t)(vol_bytes / 512), NULL, true),
		    "WRITE SAME 16 NDOB over the whole image");
	lun_expect_same(0, 8u << 20, zero);
	ck_assert_int_eq(cl_image_used(cur_vol), (long long)vol_bytes);
}
END_TEST

START_TEST(t04_failure)
{
	char addr[128], line[512];
	struct vstat vs;
	time_t t0 = time(NULL);
	struct scsi_task *t;

	next_vol();
	write_conf(cur_vol, BIG, BIG_MBPS);
	start();
	while (vol_status(&vs) && strcmp(vs.state, "provisioning") == 0 && vs.done < OBJ * 8) {
		ck_assert_msg(time(NULL) - t0 < 120, "no progress");
		msleep(50);
	}
	ck_assert_msg(strcmp(vs.state, "provisioning") == 0, "finished before the failure");
	/* the cluster refuses every further op of this rtgtd's client */
	ck_assert_int_eq(cl_run_line(addr, sizeof(addr), "rbd --conf %s/ceph.conf --name client.admin "
				  "status %s | grep -o 'watcher=[^ ]*' | head -1 | cut -d= -f2",
				  cl_dir(), cur_vol), 0);
	ck_assert_msg(addr[0], "no watcher on %s", cur_vol);
	ck_assert_int_eq(cl_run_line(line, sizeof(line), "ceph --conf %s/ceph.conf osd blocklist add %s "
				  "2>&1", cl_dir(), addr), 0);
	/* a status request may fail while the client is refused: ask again */
	while (!vol_status(&vs) || strcmp(vs.state, "provisioning") == 0) {
		ck_assert_msg(time(NULL) - t0 < 150, "provisioning did not fail after blocklisting");
		msleep(200);
	}
	cl_run_line(line, sizeof(line), "ceph --conf %s/ceph.conf osd blocklist rm %s 2>&1",
		 cl_dir(), addr);
	ck_assert_str_eq(vs.state, "failed");
	ck_assert_msg(vs.done < vs.total, "failed at %lld of %lld", vs.done, vs.total);
	ck_assert_msg(log_has("thick provisioning stopped at"), "failure not logged");
	ck_assert_msg(log_has("was blocklisted"), "the fencing not logged");
	if (!harness_alive(&D))
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(harness_alive(&D), "rtgtd died with the provisioning (status %d)", D.last_status);
	for (int i = 0; i < 20; i++) {
		cl_run_line(line, sizeof(line), "%s -s %s/rtgtd.sock status | grep volumes", rtgtctl(),
			 D.dir);
		if (strstr(line, "FAILED"))
			break;
		msleep(500);
	}
	if (!strstr(line, "FAILED"))
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(strstr(line, "FAILED"), "text status does not show the failure: %s", line);
	/* the LUN stays not ready; the blocklisted node is fenced */
	login();
	clear_ua();
	t = iscsi_read16_sync(C, 0, 0, 4096, 512, 0, 0, 0, 0, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_NOT_READY && t->sense.ascq == 0x040c,
		      "READ after a failed provisioning: status %d sense %x/%04x, expected 02/04/0C",
		      t ? t->status : -1, t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	scsi_free_scsi_task(t);
	expect_good(iscsi_inquiry_sync(C, 0, 0, 0, 255), "INQUIRY after a failed provisioning");
	harness_iscsi_logout(C);
	C = NULL;
	/* a blocklisted client cannot flush at close: end it */
	harness_fini(&D);
}
END_TEST

START_TEST(t05_rate_cap)
{
	/* 512 MiB at 50 MB/s: about 10.7 s, several 5 s windows; unpaced the
	 * test cluster writes 120-500 MB/s */
	enum { CAP = 50, MAXS = 1024 };
	const uint64_t bytes = 512ull << 20;
	/* the status was read somewhere between ta and tb */
	static struct { uint64_t ta, tb; long long done; } smp[MAXS];
	struct vstat vs;
	unsigned n = 0;
	uint64_t t0 = harness_now_ms();
	double overall, worst = 0, worst_mid = 0;

	next_vol();
	write_conf(cur_vol, "512M", CAP);
	start();
	for (;;) {
		uint64_t ta = harness_now_ms(), tb;
		bool ok = vol_status(&vs);

		tb = harness_now_ms();
		ck_assert_msg(tb - t0 < 120000, "512M at %u MB/s not written out in 120 s", CAP);
		if (!ok)
			continue;
		if (strcmp(vs.state, "provisioning") != 0)
			break;
		/* from the first object done: the clock of the write-out starts
		 * there, not at the daemon's start */
		if (vs.done > 0 && n < MAXS) {
			smp[n].ta = ta;
			smp[n].tb = tb;
			smp[n].done = vs.done;
			n++;
		}
		msleep(200);
	}
	ck_assert_str_eq(vs.state, "ready");
	ck_assert_msg(n >= 5 && smp[n - 1].ta - smp[0].tb >= 5000,
		      "too few samples of the paced write-out (%u over %llu ms)", n,
		      n ? (unsigned long long)(smp[n - 1].ta - smp[0].tb) : 0ull);
	/* every window of at least 5 s stays at the cap + 10% (the pace lets
	 * a late wake-up make up 0.1 s and completes 4 MiB objects). The rate
	 * checked is the least the write-out certainly reached (bytes over the
	 * longest time the two reads can be apart), so that a slow rtgtctl
	 * (sanitizer build: up to a second a poll) cannot fail it; unpaced,
	 * the cluster's 120+ MB/s fail it all the same. The rate between the
	 * reads' midpoints is printed too. */
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = i + 1; j < n; j++) {
			double dd = (double)(smp[j].done - smp[i].done) / 1e3, lo, mid;

			if ((smp[j].ta + smp[j].tb) / 2 - (smp[i].ta + smp[i].tb) / 2 < 5000)
				continue;
			lo = dd / (double)(smp[j].tb - smp[i].ta);
			mid = dd / ((double)(smp[j].ta + smp[j].tb) / 2 -
				    (double)(smp[i].ta + smp[i].tb) / 2);
			if (lo > worst)
				worst = lo;
			if (mid > worst_mid)
				worst_mid = mid;
		}
	}
	/* and the most it can have been overall, for the lower bound */
	overall = (double)(smp[n - 1].done - smp[0].done) / 1e3 /
		  (double)(smp[n - 1].ta - smp[0].tb);
	fprintf(stderr, "05: %llu MiB at provision_mbps = %u: at most %.1f MB/s over %.1f s; "
		"over any 5 s window at least %.1f MB/s certainly, %.1f MB/s between the reads' "
		"midpoints; %u samples\n", (unsigned long long)(bytes >> 20), CAP, overall,
		(double)(smp[n - 1].ta - smp[0].tb) / 1e3, worst, worst_mid, n);
	ck_assert_msg(worst <= CAP * 1.1, "write-out at %.1f MB/s over a 5 s window, cap %u",
		      worst, CAP);
	/* paced, not starved: the cluster takes far more than the cap */
	ck_assert_msg(overall >= CAP * 0.5, "write-out at only %.1f MB/s with a cap of %u",
		      overall, CAP);
	ck_assert_int_eq(cl_image_used(cur_vol), (long long)bytes);
	ck_assert(log_has("at most 50 MB/s"));
}
END_TEST

/* rtgt.thick of the running case's image: a byte offset, or -2 for "done"
 * and -1 when unreadable. */
static long long meta_thick(void)
{
	char line[128];

	if (cl_run_line(line, sizeof(line), "rbd --conf %s/ceph.conf --name client.admin "
			"image-meta get %s rtgt.thick 2>/dev/null", cl_dir(), cur_vol) != 0)
		return -1;
	if (!strcmp(line, "done"))
		return -2;
	return line[0] >= '0' && line[0] <= '9' ? atoll(line) : -1;
}

START_TEST(t06_stalled_holder)
{
	static uint8_t pat[1 << 20];
	const uint64_t span = 64ull << 20;
	long long ck;
	time_t t0 = time(NULL);

	/* node A writes a 512 MiB image out at 20 MB/s; stopped past its
	 * lease once its checkpoint passed 16 MiB */
	next_vol();
	write_conf(cur_vol, "512M", 20);
	start();
	while ((ck = meta_thick()) < (16ll << 20)) {
		ck_assert_msg(ck != -2, "finished before the stop");
		ck_assert_msg(time(NULL) - t0 < 60, "no checkpoint past 16 MiB");
		msleep(50);
	}
	ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
	ck = meta_thick();
	ck_assert_msg(ck >= 0, "checkpoint gone after the stop");

	/* node B takes the lapsed lease, finishes unpaced, serves data
	 * over where A stood */
	ck_assert_int_eq(harness_init(&D2), 0);
	write_conf_d(&D2, cur_vol, "512M", 0);
	start_d(&D2);
	while (meta_thick() != -2) {
		ck_assert_msg(time(NULL) - t0 < 150, "B did not finish the write-out");
		msleep(200);
	}
	login_d(&D2);
	clear_ua();
	for (;;) {   /* B is ready a moment after it stored "done" */
		struct scsi_task *t = iscsi_testunitready_sync(C, 0);
		bool good = t && t->status == SCSI_STATUS_GOOD;

		scsi_free_scsi_task(t);
		if (good)
			break;
		if (time(NULL) - t0 > 160)
			harness_dump_log(&D2, stderr, 30);
		ck_assert_msg(time(NULL) - t0 < 160, "B not ready after \"done\"");
		msleep(200);
	}
	for (uint64_t o = 0; o < span; o += sizeof(pat)) {
		harness_fill_random(pat, sizeof(pat), 600 + o / sizeof(pat));
		lun_write((uint64_t)ck + o, pat, sizeof(pat));
	}

	/* A resumes: its lease lapsed, so it must not write another zero */
	ck_assert_int_eq(kill(D.pid, SIGCONT), 0);
	msleep(8000);   /* at 20 MB/s, 160 MB of zeros if it went on */
	for (uint64_t o = 0; o < span; o += sizeof(pat)) {
		harness_fill_random(pat, sizeof(pat), 600 + o / sizeof(pat));
		lun_expect((uint64_t)ck + o, pat, sizeof(pat));
	}
	ck_assert_msg(meta_thick() == -2, "rtgt.thick is no longer \"done\"");
	ck_assert_msg(log_has("lease lost"), "A did not notice its lapsed lease");
	fprintf(stderr, "06: A stopped at checkpoint %lld; B finished; data kept\n", ck);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_background", t01_background, .timeout = 300),
		CK_CASE("02_kill_resume", t02_kill_resume, .timeout = 300),
		CK_CASE("03_write_same", t03_write_same, .timeout = 300),
		CK_CASE("04_failure", t04_failure, .timeout = 300),
		CK_CASE("05_rate_cap", t05_rate_cap, .timeout = 300),
		CK_CASE("06_stalled_holder", t06_stalled_holder, .timeout = 300),
	};
	struct ck_suite_def def = { "net_rbd_thick", CK_CASES(cases),
		.setup = setup, .teardown = teardown };

	return cl_main("rtgt-rbdt", &def);
}
