/*
 * tests/net/test_net_rbd_snap.c - snapshots, clones, rollback, inflate,
 * volume create and delete on an rbd pool (raid/rbd_snap.c, raid/rbd.c),
 * through a real bin/rtgtd driven with libiscsi, bin/rtgtctl and the rbd
 * CLI, on one throwaway single-node Ceph cluster (tests/lib/ceph.h) that
 * all cases share.
 *
 * 01 a thin image V (16 MiB LUN), 8 MiB written (A). `rtgtctl snapshot c V
 *    s1`: exit 0, `rbd snap ls` has it; `volume list c --json`: V@s1 is a
 *    snapshot of origin V, V's size, allocated 8 MiB (whole objects). 4 MiB
 *    rewritten (B). Refusals, each exit 1 with one line, nothing changed:
 *    the name again, a name with '@', no such volume, volume delete of V (a
 *    LUN has it open). SIGTERM, a start with LUN 1 volume = "V@s1" (no
 *    size): LUN 0 reads B then A, LUN 1 exactly A and zeros beyond; WRITE(16)
 *    to LUN 1 gets DATA PROTECT, WRITE PROTECTED (07/27/00), MODE SENSE(6)
 *    has WP set, its NAA is not LUN 0's; snapshot delete of the open
 *    snapshot is refused ("in use"). SIGTERM, a start without LUN 1:
 *    snapshot delete succeeds and `rbd snap ls` is empty; V still reads B+A.
 * 02 clone, rollback, inflate: V written (A, 8 MiB), snapshot s1, 4 MiB
 *    rewritten (B). `clone c V@s1 K`: K is thin, origin V@s1, its bytes
 *    shared; s1 is protected. Refused: the clone again, a clone of no
 *    snapshot, deleting V@s1 (K depends on it), rollback of the exported V
 *    without --force. `rollback c V@s1 --force`: the session's next command
 *    gets UNIT ATTENTION 29/03 and V reads A again. A start with LUN 1 = K:
 *    K reads A, takes 2 MiB (C), reads C then A, V still reads A and the
 *    snapshot's checksum (`rbd export`) is what it was. `volume inflate c V`
 *    is refused (no clone); `volume inflate c K` (online) clears its origin
 *    and shared bytes; now `snapshot delete c V@s1` succeeds (rtgt had
 *    protected it, nobody depends on it) and K still reads C then A.
 *    `volume delete c K` is refused while its LUN is open.
 * 03 create and delete: `volume create c N 16M --thin` (exit 0, `rbd info`
 *    has it, volume list shows it thin, not open); again: "exists already";
 *    a bad name refused. With a snapshot N@s: volume delete of N refused
 *    ("has snapshots"); snapshot deleted. While another client has N open
 *    (`rbd watch`), volume delete of N is refused ("open elsewhere");
 *    once that client is gone it succeeds, `rbd info` no longer finds N,
 *    volume list does not show it, and deleting it again says "no volume".
 *
 * Without the Ceph packages (or built without librbd) the test prints
 * SKIPPED with the reason and exits 0: it neither passes nor fails anything.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ceph.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_io.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define MIB   (1u << 20)
#define VOL   (16ull << 20)
#define RBD_CLI "rbd --conf %s/ceph.conf --name client.admin "

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
	harness_iscsi_logout(C);
	C = NULL;
	harness_fini(&D);
}

static void write_conf(const char *luns)
{
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\";\n"
		"            keyring = \"%s/client.rtgt.keyring\"; thick = false; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( %s );\n"
		"  allow = ( \"ALL\" ); } );\n",
		cl_dir(), cl_dir(), D.port, luns), 0);
}

/* LUN @lun of image or snapshot @vol (a snapshot has no size) */
static void lun_str(char *out, size_t len, int lun, const char *vol)
{
	if (strchr(vol, '@'))
		snprintf(out, len, "{ lun = %d; pool = \"c\"; volume = \"%s\"; }", lun, vol);
	else
		snprintf(out, len, "{ lun = %d; pool = \"c\"; volume = \"%s\"; size = \"16M\"; thin = true; }",
			 lun, vol);
}

static void start_with(const char *vol0, const char *vol1)
{
	char l0[160], l1[160], all[400];

	lun_str(l0, sizeof(l0), 0, vol0);
	if (vol1) {
		lun_str(l1, sizeof(l1), 1, vol1);
		snprintf(all, sizeof(all), "%s,\n%s", l0, l1);
	} else {
		snprintf(all, sizeof(all), "%s", l0);
	}
	write_conf(all);
	nf_start(&D);
}

/* A session with the power-on unit attentions of LUNs 0 and 1 taken */
static struct iscsi_context *login(void)
{
	struct iscsi_context *c = nf_login(&D, 0, &(struct harness_login){ 0 });

	for (int lun = 0; lun < 2; lun++)
		for (int i = 0; i < 4; i++) {
			struct scsi_task *t = iscsi_testunitready_sync(c, lun);
			bool good = t && t->status == SCSI_STATUS_GOOD;

			scsi_free_scsi_task(t);
			if (good)
				break;
		}
	return c;
}

static void stop(const char *when)
{
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, when);
}

static void next_vol(char *name, size_t len, const char *tag)
{
	snprintf(name, len, "s%ld%s", (long)getpid(), tag);
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

static bool sense_is(const struct scsi_task *t, int key, int ascq)
{
	return t && t->status == SCSI_STATUS_CHECK_CONDITION && (int)t->sense.key == key &&
	       (int)t->sense.ascq == ascq;
}

/* ---- data: every 512-byte sector a function of its offset and a seed ---- */

static void pat_fill(uint8_t *buf, uint64_t off, uint64_t len, uint64_t seed)
{
	for (uint64_t s = 0; s < len / 512; s++)
		harness_fill_random(buf + s * 512, 512,
				    seed * 0x9E3779B97F4A7C15ull ^ (off / 512 + s + 1));
}

static void write_pat(int lun, uint64_t off, uint64_t len, uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		struct scsi_task *t;

		pat_fill(buf, off + o, MIB, seed);
		t = iscsi_write16_sync(C, lun, (off + o) / 512, buf, MIB, 512, 0, 0, 0, 0, 0);
		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 of LUN %d at %llu: %s",
			      lun, (unsigned long long)(off + o), task_err(C, t));
		scsi_free_scsi_task(t);
	}
}

/* LUN @lun holds, per MiB from 0, the seed in @m (0: zeros), over @n MiB */
static void expect_mib(int lun, const uint8_t *m, unsigned n)
{
	static uint8_t want[MIB];

	for (unsigned i = 0; i < n; i++) {
		if (m[i])
			pat_fill(want, (uint64_t)i * MIB, MIB, m[i]);
		else
			memcpy(want, zero, MIB);
		lio_expect(C, lun, (uint64_t)i * MIB, want, MIB);
	}
}

/* ---- rtgtctl and the rbd CLI ---- */

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

static void ctl_ok_v(const char *needle, const char *const *a)
{
	char out[2048];
	int rc = ctl_v(a, out, sizeof(out));

	ck_assert_msg(rc == 0 && strstr(out, needle), "rtgtctl %s %s %s: exit %d: %s", a[0], a[1],
		      a[2], rc, out);
}
#define ctl_ok(needle, ...) ctl_ok_v(needle, (const char *const[]){ __VA_ARGS__, NULL })

/* `rtgtctl volume list c --json`: the entry named @name (the caller puts
 * it), NULL when none */
static struct json_object *vol_entry(const char *name)
{
	static char out[1 << 17];
	struct json_object *root, *vols, *found = NULL;
	int rc = rj_ctl(&D, out, sizeof(out), "volume", "list", "c", "--json", NULL);

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

static bool rj_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* `rbd ARGS`: its exit code, first line in @line */
static int rbd_run(char *line, size_t len, const char *args)
{
	return cl_run_line(line, len, RBD_CLI "%s 2>&1", cl_dir(), args);
}

static void image_sum(const char *spec, char *sum, size_t len)
{
	ck_assert_int_eq(cl_run_line(sum, len, RBD_CLI "export rbd/%s - 2>/dev/null | md5sum",
				     cl_dir(), spec), 0);
	ck_assert_msg(strlen(sum) >= 32, "no checksum of %s: \"%s\"", spec, sum);
}

/* Snapshot names of image @img, space-separated, into @out */
static void snap_names(const char *img, char *out, size_t len)
{
	char args[512];

	snprintf(args, sizeof(args), "snap ls rbd/%s --format json | python3 -c "
		 "'import json,sys; print(\" \".join(s[\"name\"] + (\"+p\" if s.get(\"protected\") == \"true\" else \"\") for s in json.load(sys.stdin)) or \"-\")'",
		 img);
	ck_assert_int_eq(rbd_run(out, len, args), 0);
}

/* NAA designator of VPD page 0x83 of LUN @lun into @naa */
static void lun_naa(int lun, uint8_t naa[16])
{
	struct scsi_task *t = iscsi_inquiry_sync(C, lun, 1, 0x83, 255);
	const uint8_t *d;
	int len, off;
	bool found = false;

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "INQUIRY VPD 0x83: %s", task_err(C, t));
	d = t->datain.data;
	len = 4 + ((d[2] << 8) | d[3]);
	for (off = 4; off + 4 <= len && off + 4 <= t->datain.size; off += 4 + d[off + 3]) {
		if ((d[off + 1] & 0x0f) == 3 && d[off + 3] <= 16) {
			memset(naa, 0, 16);
			memcpy(naa, d + off + 4, d[off + 3]);
			found = true;
			break;
		}
	}
	scsi_free_scsi_task(t);
	ck_assert_msg(found, "no NAA designator in VPD 0x83 of LUN %d", lun);
}

/* ---- tests ---- */

START_TEST(t01_snapshot_readonly)
{
	char v[40], spec[64], names[256];
	uint8_t m_a[16] = { 0 }, m_b[16] = { 0 }, naa0[16], naa1[16];
	struct json_object *e;
	struct scsi_task *t;

	next_vol(v, sizeof(v), "a");
	snprintf(spec, sizeof(spec), "%s@s1", v);
	start_with(v, NULL);
	C = login();
	write_pat(0, 0, 8ull << 20, 1);
	memset(m_a, 1, 8);
	ctl_ok("snapshot", "snapshot", "c", v, "s1");
	snap_names(v, names, sizeof(names));
	ck_assert_str_eq(names, "s1");
	e = vol_entry(spec);
	ck_assert_msg(e, "volume list has no %s", spec);
	ck_assert_str_eq(rj_str(e, "type"), "snapshot");
	ck_assert_str_eq(rj_str(e, "origin"), v);
	ck_assert_int_eq(rj_int(e, "size"), (int64_t)VOL);
	ck_assert_int_eq(rj_int(e, "allocated"), 8ll << 20);
	ck_assert(!rj_bool(e, "open"));
	json_object_put(e);
	e = vol_entry(v);
	ck_assert_msg(e, "volume list has no %s", v);
	ck_assert_str_eq(rj_str(e, "type"), "thin");
	ck_assert(rj_bool(e, "open"));
	json_object_put(e);
	write_pat(0, 0, 4ull << 20, 2);
	memcpy(m_b, m_a, sizeof(m_b));
	memset(m_b, 2, 4);

	refused("exists already", "snapshot", "c", v, "s1");
	refused("characters", "snapshot", "c", v, "a@b");
	refused("no volume nosuch", "snapshot", "c", "nosuch", "s2");
	refused("in use", "volume", "delete", "c", v);
	snap_names(v, names, sizeof(names));
	ck_assert_str_eq(names, "s1");
	stop("before exporting the snapshot");

	start_with(v, spec);
	C = login();
	expect_mib(0, m_b, 16);
	expect_mib(1, m_a, 16);
	t = iscsi_write16_sync(C, 1, 0, zero, 4096, 512, 0, 0, 0, 0, 0);
	ck_assert_msg(sense_is(t, SCSI_SENSE_DATA_PROTECTION, 0x2700), "WRITE 16 to the snapshot: %s",
		      task_err(C, t));
	scsi_free_scsi_task(t);
	t = iscsi_modesense6_sync(C, 1, 0, SCSI_MODESENSE_PC_CURRENT, SCSI_MODEPAGE_RETURN_ALL_PAGES,
				  0, 255);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 4,
		      "MODE SENSE 6 of the snapshot: %s", task_err(C, t));
	ck_assert_msg(t->datain.data[2] & 0x80, "MODE SENSE 6: WP not set (byte 2 = 0x%02x)",
		      t->datain.data[2]);
	scsi_free_scsi_task(t);
	lun_naa(0, naa0);
	lun_naa(1, naa1);
	ck_assert_msg(memcmp(naa0, naa1, 16) != 0, "the snapshot's LUN has the image's NAA");
	expect_mib(1, m_a, 16);   /* the refused write changed nothing */
	refused("in use", "snapshot", "delete", "c", spec);
	stop("after the snapshot LUN");

	start_with(v, NULL);
	C = login();
	ctl_ok("deleted", "snapshot", "delete", "c", spec);
	snap_names(v, names, sizeof(names));
	ck_assert_str_eq(names, "-");
	e = vol_entry(spec);
	ck_assert_ptr_null(e);
	expect_mib(0, m_b, 16);
	stop("at the end");
}
END_TEST

START_TEST(t02_clone_rollback_inflate)
{
	char v[40], k[40], spec[64], names[256], sum0[128], sum1[128];
	uint8_t m_a[16] = { 0 }, m_c[16];
	struct json_object *e;
	struct scsi_task *t;

	next_vol(v, sizeof(v), "b");
	next_vol(k, sizeof(k), "k");
	snprintf(spec, sizeof(spec), "%s@s1", v);
	start_with(v, NULL);
	C = login();
	write_pat(0, 0, 8ull << 20, 1);
	memset(m_a, 1, 8);
	ctl_ok("snapshot", "snapshot", "c", v, "s1");
	image_sum(spec, sum0, sizeof(sum0));
	write_pat(0, 0, 4ull << 20, 2);

	ctl_ok("made", "clone", "c", spec, k);
	e = vol_entry(k);
	ck_assert_msg(e, "volume list has no %s", k);
	ck_assert_str_eq(rj_str(e, "type"), "thin");
	ck_assert_str_eq(rj_str(e, "origin"), spec);
	ck_assert_int_eq(rj_int(e, "allocated"), 8ll << 20);
	ck_assert_int_eq(rj_int(e, "shared"), 8ll << 20);
	json_object_put(e);
	snap_names(v, names, sizeof(names));
	ck_assert_str_eq(names, "s1+p");
	refused("exists already", "clone", "c", spec, k);
	{
		char bad[64];

		snprintf(bad, sizeof(bad), "no snapshot %s@s9", v);
		snprintf(names, sizeof(names), "%s@s9", v);
		refused(bad, "clone", "c", names, "other");
	}
	{
		char dep[128];

		snprintf(dep, sizeof(dep), "clone %s depends on %s", k, spec);
		refused(dep, "snapshot", "delete", "c", spec);
	}
	refused("exported", "rollback", "c", spec);
	ctl_ok("rolled back", "rollback", "c", spec, "--force");
	t = iscsi_testunitready_sync(C, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_UNIT_ATTENTION && t->sense.ascq == 0x2903,
		      "after a forced rollback: %s", task_err(C, t));
	scsi_free_scsi_task(t);
	expect_mib(0, m_a, 16);
	stop("before exporting the clone");

	start_with(v, k);
	C = login();
	expect_mib(1, m_a, 16);
	write_pat(1, 0, 2ull << 20, 3);
	memcpy(m_c, m_a, sizeof(m_c));
	memset(m_c, 3, 2);
	expect_mib(1, m_c, 16);
	expect_mib(0, m_a, 16);
	image_sum(spec, sum1, sizeof(sum1));
	ck_assert_msg(!strcmp(sum0, sum1), "writing the clone changed snapshot %s", spec);

	refused("is no clone", "volume", "inflate", "c", v);
	ctl_ok("no longer shares", "volume", "inflate", "c", k);
	e = vol_entry(k);
	ck_assert_msg(e, "volume list has no %s", k);
	ck_assert_str_eq(rj_str(e, "origin"), "");
	ck_assert_int_eq(rj_int(e, "shared"), 0);
	json_object_put(e);
	ctl_ok("deleted", "snapshot", "delete", "c", spec);
	snap_names(v, names, sizeof(names));
	ck_assert_str_eq(names, "-");
	expect_mib(1, m_c, 16);
	refused("in use", "volume", "delete", "c", k);
	stop("at the end");
}
END_TEST

START_TEST(t03_create_delete)
{
	char n[40], u[40], spec[64], line[256], args[256];
	struct json_object *e;
	int rc;

	next_vol(n, sizeof(n), "n");
	next_vol(u, sizeof(u), "u");
	snprintf(spec, sizeof(spec), "%s@s", n);
	start_with(u, NULL);   /* a LUN of its own: a target needs one */

	ctl_ok("created", "volume", "create", "c", n, "16M", "--thin");
	snprintf(args, sizeof(args), "info rbd/%s", n);
	ck_assert_int_eq(rbd_run(line, sizeof(line), args), 0);
	e = vol_entry(n);
	ck_assert_msg(e, "volume list has no %s", n);
	ck_assert_str_eq(rj_str(e, "type"), "thin");
	ck_assert_int_eq(rj_int(e, "size"), (int64_t)VOL);
	ck_assert(!rj_bool(e, "open"));
	json_object_put(e);
	refused("exists already", "volume", "create", "c", n, "16M", "--thin");
	refused("volume names", "volume", "create", "c", "bad/name", "16M", "--thin");

	ctl_ok("snapshot", "snapshot", "c", n, "s");
	refused("has snapshots", "volume", "delete", "c", n);
	ctl_ok("deleted", "snapshot", "delete", "c", spec);

	/* another client with the image open: `rbd watch` until its stdin ends */
	rc = cl_run_line(line, sizeof(line),
			 "(sleep 8 | " RBD_CLI "watch rbd/%s >/dev/null 2>&1 &); sleep 2; echo started",
			 cl_dir(), n);
	ck_assert_int_eq(rc, 0);
	refused("open elsewhere", "volume", "delete", "c", n);
	ck_assert_int_eq(rbd_run(line, sizeof(line), args), 0);   /* still there */
	for (int i = 0; i < 40; i++) {
		char out[1024];
		const char *a[] = { "volume", "delete", "c", n, NULL };

		rc = ctl_v(a, out, sizeof(out));
		if (rc == 0)
			break;
		ck_assert_msg(strstr(out, "open elsewhere"), "volume delete: %s", out);
		sleep(1);
	}
	ck_assert_msg(rc == 0, "volume delete still refused after the other client left");
	ck_assert_int_ne(rbd_run(line, sizeof(line), args), 0);
	e = vol_entry(n);
	ck_assert_ptr_null(e);
	refused("no volume or snapshot", "volume", "delete", "c", n);
	nf_stop_expect_0(&D, "at the end");
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_snapshot_readonly", t01_snapshot_readonly, .timeout = 300),
		CK_CASE("02_clone_rollback_inflate", t02_clone_rollback_inflate, .timeout = 300),
		CK_CASE("03_create_delete", t03_create_delete, .timeout = 300),
	};

	return cl_main("rtgt-rbdsnap", &(struct ck_suite_def){ "net_rbd_snap", CK_CASES(cases),
		.setup = setup, .teardown = teardown });
}
