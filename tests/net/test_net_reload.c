/*
 * tests/net/test_net_reload.c - live reload of a running bin/rtgtd
 * (`rtgtctl reload` and SIGHUP): a target added while another session does
 * I/O, an invalid file that changes nothing, an ACL entry removed, a LUN
 * added (unit attention, then REPORT LUNS), a target and a portal removed
 * and added, a pool with its LUN removed and re-added in a tight loop under
 * I/O and task management (LUN RESET, ABORT TASK).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
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

#define T2 "iqn.2026-11.org.rtgt:second"
#define INI_A "iqn.2026-11.org.example:a"
#define INI_B "iqn.2026-11.org.example:b"

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* The whole file: pool p (raid1), portal lo on D.port plus @portals_extra,
 * and @targets. */
static void write_conf(const char *portals_extra, const char *targets)
{
	int rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" );\n"
		"            create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; }%s );\n"
		"targets = ( %s );\n",
		D.port, portals_extra ? portals_extra : "", targets);

	ck_assert_int_eq(rc, 0);
}

static struct iscsi_context *login_as(const char *initiator, const char *target, uint32_t isid,
				      uint16_t port)
{
	struct harness_login o = { .initiator = initiator, .target = target, .isid_rnd = isid };

	return nf_login(&D, port, &o);
}

/* TEST UNIT READY status, or -1 when the command failed at transport
 * level (connection gone). */
static int tur(struct iscsi_context *c, int lun, struct scsi_sense *sense)
{
	struct scsi_task *t = iscsi_testunitready_sync(c, lun);
	int st;

	if (!t)
		return -1;
	st = t->status;
	if (sense)
		*sense = t->sense;
	scsi_free_scsi_task(t);
	return st;
}

/* ---- 01: a target added while another session does I/O ---- */

struct io_worker {
	struct iscsi_context *c;
	atomic_bool stop;
	atomic_uint ops;               /* read by the test while running */
	unsigned errors;
	char first_error[200];
};

static void *io_main(void *arg)
{
	struct io_worker *w = arg;
	uint8_t *buf = malloc(65536), *back = malloc(65536);
	uint64_t lba = 0;

	if (!buf || !back) {
		w->errors++;
		goto out;
	}
	while (!atomic_load(&w->stop)) {
		struct scsi_task *t;

		memset(buf, (int)(atomic_load(&w->ops) & 0xff), 65536);
		t = iscsi_write16_sync(w->c, 0, lba, buf, 65536, 512, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD) {
			if (!w->errors++)
				snprintf(w->first_error, sizeof(w->first_error), "write: %s",
					 iscsi_get_error(w->c));
			if (t)
				scsi_free_scsi_task(t);
			break;
		}
		scsi_free_scsi_task(t);
		t = iscsi_read16_sync(w->c, 0, lba, 65536, 512, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD || t->datain.size != 65536 ||
		    memcmp(t->datain.data, buf, 65536)) {
			if (!w->errors++)
				snprintf(w->first_error, sizeof(w->first_error), "read: %s",
					 t ? "bad data or status" : iscsi_get_error(w->c));
			if (t)
				scsi_free_scsi_task(t);
			break;
		}
		scsi_free_scsi_task(t);
		atomic_fetch_add(&w->ops, 1);
		lba = (lba + 128) % 8192;
	}
out:
	free(buf);
	free(back);
	return NULL;
}

#define TGT_DEFAULT_ALLOW_ALL HARNESS_TARGET_DEFAULT
#define TGT_SECOND                                                                  \
	"{ iqn = \"" T2 "\"; portals = ( \"lo\" );\n"                               \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v1\"; size = \"4M\"; } );\n" \
	"  allow = ( \"ALL\" ); }"

START_TEST(t01_add_target_during_io)
{
	struct io_worker w = { 0 };
	struct iscsi_context *c2;
	struct scsi_task *t;
	pthread_t th;
	char out[4096];
	unsigned before;
	int rc;

	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL);
	nf_start(&D);
	w.c = login_as(NULL, NULL, 1, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, io_main, &w), 0);
	usleep(300 * 1000);
	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL ", " TGT_SECOND);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	before = atomic_load(&w.ops);
	ck_assert_msg(rc == 0, "rtgtctl reload exited %d: %s", rc, out);
	ck_assert_msg(strstr(out, "targets added") && strstr(out, T2), "reload said: %s", out);
	ck_assert_msg(strstr(out, "volumes added") && strstr(out, "p/v1"), "reload said: %s", out);

	/* the new target is served at once */
	c2 = login_as(NULL, T2, 2, 0);
	t = iscsi_readcapacity16_sync(c2, 0);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	{
		struct scsi_readcapacity16 *rc16 = scsi_datain_unmarshall(t);

		ck_assert_ptr_nonnull(rc16);
		ck_assert_uint_eq((rc16->returned_lba + 1) * rc16->block_length, 4u << 20);
	}
	scsi_free_scsi_task(t);
	ck_assert_int_eq(tur(c2, 0, NULL), SCSI_STATUS_GOOD);

	/* the running session kept going through the reload */
	usleep(500 * 1000);
	atomic_store(&w.stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(w.errors == 0, "I/O session saw an error: %s", w.first_error);
	ck_assert_msg(atomic_load(&w.ops) > before,
		      "no I/O completed after the reload (%u before, %u after)", before,
		      atomic_load(&w.ops));

	/* sessions lists both, with their negotiated parameters */
	rc = rj_ctl(&D, out, sizeof(out), "sessions", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, T2) && strstr(out, HARNESS_TARGET) &&
			      strstr(out, "MaxBurstLength="),
		      "sessions said: %s", out);
	/* a second identical reload changes nothing */
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "nothing changed"), "second reload said: %s", out);
	ck_assert_int_eq(tur(c2, 0, NULL), SCSI_STATUS_GOOD);
	harness_iscsi_logout(c2);
	harness_iscsi_logout(w.c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 02: an invalid file changes nothing ---- */

START_TEST(t02_invalid_file)
{
	struct iscsi_context *c;
	char out[4096], log[65536], want[256];
	int rc;

	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL);
	nf_start(&D);
	c = login_as(NULL, NULL, 1, 0);
	/* line 5 of the file: a portal with a bad address, and a second
	 * target that must not appear */
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" );\n"
		"            create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:99999\"; } );\n"
		"targets = ( %s );\n", TGT_DEFAULT_ALLOW_ALL ", " TGT_SECOND), 0);
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 1, "rtgtctl reload of a bad file exited %d: %s", rc, out);
	snprintf(want, sizeof(want), "%s:5:", D.conf);
	ck_assert_msg(strstr(out, want), "reply lacks '%s': %s", want, out);
	ck_assert_int_gt(harness_read_log(&D, log, sizeof(log)), 0);
	ck_assert_msg(strstr(log, want), "daemon log lacks '%s'", want);

	/* nothing changed: the session works, the old target still takes
	 * logins, the new one does not exist, SIGHUP with the same file
	 * neither */
	ck_assert_int_eq(tur(c, 0, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(kill(D.pid, SIGHUP), 0);
	usleep(300 * 1000);
	ck_assert(harness_alive(&D));
	ck_assert_int_eq(tur(c, 0, NULL), SCSI_STATUS_GOOD);
	{
		struct harness_login o = { .target = T2 };
		char err[256];
		struct iscsi_context *c2 = harness_iscsi_login(D.port, &o, err, sizeof(err));

		ck_assert_msg(c2 == NULL, "login to a target of the refused file worked");
	}
	rc = rj_ctl(&D, out, sizeof(out), "status", "--json", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(!strstr(out, T2), "status shows the refused target: %s", out);
	{
		/* the reloads above went through daemon_check() and friends */
		struct json_object *st = json_tokener_parse(out);

		ck_assert_ptr_nonnull(st);
		ck_assert_int_eq(rj_int(st, "invariant_failures"), 0);
		json_object_put(st);
	}
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 03: an ACL entry removed closes that initiator's session ---- */

#define TGT_ALLOW(list)                                                                \
	"{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"                       \
	"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%\"; } );\n"  \
	"  allow = ( " list " ); }"

START_TEST(t03_acl_removed)
{
	struct iscsi_context *a, *b;
	char out[4096];
	uint64_t deadline;
	int rc, st = 0;

	write_conf(NULL, TGT_ALLOW("\"" INI_A "\", \"" INI_B "\""));
	nf_start(&D);
	a = login_as(INI_A, NULL, 1, 0);
	b = login_as(INI_B, NULL, 2, 0);
	ck_assert_int_eq(tur(a, 0, NULL), SCSI_STATUS_GOOD);
	write_conf(NULL, TGT_ALLOW("\"" INI_B "\""));
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	ck_assert_msg(strstr(out, "allow"), "reload does not say the ACL changed: %s", out);
	/* A's connection is closed (asynchronously, on its reactor) */
	deadline = harness_now_ms() + 5000;
	while (harness_now_ms() < deadline && (st = tur(a, 0, NULL)) == SCSI_STATUS_GOOD)
		usleep(100 * 1000);
	ck_assert_msg(st != SCSI_STATUS_GOOD, "session of the removed initiator still works");
	ck_assert_int_eq(tur(b, 0, NULL), SCSI_STATUS_GOOD);
	{
		struct harness_login o = { .initiator = INI_A };
		char err[256];
		struct iscsi_context *again = harness_iscsi_login(D.port, &o, err, sizeof(err));

		ck_assert_msg(again == NULL, "removed initiator could log in again");
	}
	iscsi_destroy_context(a);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 04: a LUN added: unit attention, then REPORT LUNS ---- */

START_TEST(t04_lun_added)
{
	struct iscsi_context *c;
	struct scsi_sense sense;
	struct scsi_task *t;
	struct scsi_reportluns_list *list;
	char out[4096];
	int rc, st;
	bool has1 = false;

	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL);
	nf_start(&D);
	c = login_as(NULL, NULL, 1, 0);
	/* the first command may carry the power-on unit attention */
	tur(c, 0, NULL);
	ck_assert_int_eq(tur(c, 0, NULL), SCSI_STATUS_GOOD);
	write_conf(NULL, "{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
			 "  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%\"; },\n"
			 "           { lun = 1; pool = \"p\"; volume = \"v1\"; size = \"4M\"; } );\n"
			 "  allow = ( \"ALL\" ); }");
	rc = rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL);
	ck_assert_msg(rc == 0, "reload exited %d: %s", rc, out);
	ck_assert_msg(strstr(out, "luns"), "reload does not say the LUNs changed: %s", out);
	st = tur(c, 0, &sense);
	ck_assert_msg(st == SCSI_STATUS_CHECK_CONDITION, "TUR after the LUN was added: status %d",
		      st);
	ck_assert_int_eq(sense.key, SCSI_SENSE_UNIT_ATTENTION);
	ck_assert_int_eq(sense.ascq, 0x3f0e); /* REPORTED LUNS DATA HAS CHANGED */
	ck_assert_int_eq(tur(c, 0, NULL), SCSI_STATUS_GOOD);
	t = iscsi_reportluns_sync(c, 0, 4096);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	list = scsi_datain_unmarshall(t);
	ck_assert_ptr_nonnull(list);
	ck_assert_uint_eq(list->num, 2);
	for (unsigned i = 0; i < list->num; i++)
		has1 |= list->luns[i] == 1;
	ck_assert(has1);
	scsi_free_scsi_task(t);
	/* a new LU's first command may carry its power-on unit attention */
	tur(c, 1, NULL);
	ck_assert_int_eq(tur(c, 1, NULL), SCSI_STATUS_GOOD);

	/* and removed again: the LUN goes, the other one tells */
	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", (char *)NULL), 0);
	st = tur(c, 0, &sense);
	ck_assert_int_eq(st, SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(sense.ascq, 0x3f0e);
	st = tur(c, 1, &sense);
	ck_assert_int_eq(st, SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(sense.key, SCSI_SENSE_ILLEGAL_REQUEST);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 05: SIGHUP: a target removed, a portal added then removed ---- */

START_TEST(t05_sighup_target_and_portal)
{
	struct iscsi_context *c1, *c2, *c3;
	uint16_t port2;
	char extra[128], out[8192];
	uint64_t deadline;
	int st = 0;

	ck_assert_int_eq(harness_free_port(&port2), 0);
	snprintf(extra, sizeof(extra), ", { name = \"lo2\"; listen = \"127.0.0.1:%u\"; }", port2);
	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL ", " TGT_SECOND);
	nf_start(&D);
	c1 = login_as(NULL, NULL, 1, 0);
	c2 = login_as(NULL, T2, 2, 0);
	/* second target removed, portal lo2 added (the first target on both) */
	write_conf(extra, "{ iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\", \"lo2\" );\n"
			  "  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%\"; } );\n"
			  "  allow = ( \"ALL\" ); }");
	ck_assert_int_eq(kill(D.pid, SIGHUP), 0);
	deadline = harness_now_ms() + 5000;
	while (harness_now_ms() < deadline && (st = tur(c2, 0, NULL)) == SCSI_STATUS_GOOD)
		usleep(100 * 1000);
	ck_assert_msg(st != SCSI_STATUS_GOOD, "session of the removed target still works");
	ck_assert_int_eq(tur(c1, 0, NULL), SCSI_STATUS_GOOD);
	c3 = login_as(NULL, NULL, 3, port2);
	ck_assert_int_eq(tur(c3, 0, NULL), SCSI_STATUS_GOOD);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "status", (char *)NULL), 0);
	ck_assert_msg(!strstr(out, T2), "status still shows the removed target: %s", out);

	/* portal lo2 removed: its listener and the session that came through
	 * it go, the one on lo stays */
	write_conf(NULL, TGT_DEFAULT_ALLOW_ALL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", "--json", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "\"portals_removed\":[\"lo2 "), "reload said: %s", out);
	deadline = harness_now_ms() + 5000;
	while (harness_now_ms() < deadline && (st = tur(c3, 0, NULL)) == SCSI_STATUS_GOOD)
		usleep(100 * 1000);
	ck_assert_msg(st != SCSI_STATUS_GOOD, "session through the removed portal still works");
	ck_assert_int_lt(harness_tcp_connect(port2), 0);
	ck_assert_int_eq(tur(c1, 0, NULL), SCSI_STATUS_GOOD);

	/* stats: per target, session and LUN with latency */
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "stats", "--json", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "\"latency_p99_us\"") && strstr(out, "\"luns\":[") &&
			      strstr(out, "\"p50_us\""),
		      "stats said: %s", out);
	iscsi_destroy_context(c2);
	iscsi_destroy_context(c3);
	harness_iscsi_logout(c1);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 06: a LUN's pool removed and re-added in a loop under I/O and TMFs ---- */

/* Pool q holds the volume of LUN 1; with @with_q false neither exists. A
 * reload without it unmaps LUN 1, closes q and frees its LU (when no command
 * holds it), the next one assembles q again and maps a new LU. */
static void write_conf_q(bool with_q)
{
	int rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"warn\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid1\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"32M\"; }%s );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%%\"; }%s );\n"
		"  allow = ( \"ALL\" ); } );\n",
		with_q ? ",\n          { name = \"q\"; level = \"raid1\"; chunk = \"64K\";\n"
			 "            members = ( \"e0.img\", \"e1.img\" ); create_size = \"8M\"; }"
		       : "",
		D.port,
		with_q ? ",\n           { lun = 1; pool = \"q\"; volume = \"w\"; size = \"4M\"; }" : "");

	ck_assert_int_eq(rc, 0);
}

#define TMF_SLOTS 4
#define TMF_XFER 65536

struct tmf_slot {
	struct scsi_task *task;
	bool done;
	int status;
};

struct tmf_worker {
	struct iscsi_context *c;
	bool resets;                   /* this one also sends LUN RESET */
	atomic_bool stop;
	unsigned rounds, tmfs, good, refused, aborted, lost, errors;
	char first_error[200];
};

static void slot_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct tmf_slot *s = priv;

	(void)c;
	(void)data;
	if (s->done)
		return;
	s->done = true;
	s->status = status;
}

/* The TMF response: its code in status. */
static void tmf_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct tmf_slot *s = priv;

	(void)c;
	s->done = true;
	s->status = status == SCSI_STATUS_GOOD && data ? (int)*(uint32_t *)data : -1;
}

static void tmf_fail(struct tmf_worker *w, const char *what)
{
	if (!w->errors++)
		snprintf(w->first_error, sizeof(w->first_error), "round %u: %s: %s", w->rounds,
			 what, iscsi_get_error(w->c));
}

/* Serves the connection until every slot is done (with @tmf: until the TMF
 * response came) or @ms passed; false when the connection failed. */
static bool slots_wait(struct tmf_worker *w, struct tmf_slot *sl, const struct tmf_slot *tmf,
		       unsigned ms)
{
	uint64_t deadline = harness_now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = iscsi_get_fd(w->c), .events = iscsi_which_events(w->c) };
		unsigned left = 0;

		for (unsigned i = 0; i < TMF_SLOTS; i++)
			left += !tmf && sl[i].task && !sl[i].done;
		left += tmf && !tmf->done;
		if (!left || harness_now_ms() >= deadline)
			return true;
		if (poll(&pfd, 1, 50) < 0)
			return false;
		if (iscsi_service(w->c, pfd.revents) < 0)
			return false;
	}
}

/*
 * One session: rounds of TMF_SLOTS writes to LUN 1 in flight at once, then
 * ABORT TASK of the first or (@resets) LUN RESET of LUN 1, while the main
 * thread reloads LUN 1 away and back. Every command must end in a SCSI
 * status (GOOD; CHECK CONDITION while LUN 1 is gone or with its unit
 * attentions; TASK ABORTED) or, aborted by a TMF, without one; the session
 * must never fail.
 */
static void *tmf_main(void *arg)
{
	struct tmf_worker *w = arg;
	uint8_t *buf = malloc(TMF_XFER);
	unsigned seed = w->resets ? 7 : 11;

	if (!buf) {
		w->errors++;
		return NULL;
	}
	memset(buf, 0x5a, TMF_XFER);
	while (!atomic_load(&w->stop) && !w->errors) {
		struct tmf_slot sl[TMF_SLOTS] = { 0 }, tmf = { 0 };
		int rc;

		for (unsigned i = 0; i < TMF_SLOTS; i++) {
			uint64_t lba = (uint64_t)(rand_r(&seed) % 64) * (TMF_XFER / 512);

			sl[i].task = iscsi_write16_task(w->c, 1, lba, buf, TMF_XFER, 512, 0, 0, 0,
							0, 0, slot_cb, &sl[i]);
			if (!sl[i].task) {
				tmf_fail(w, "write16_task");
				break;
			}
		}
		if (w->errors)
			goto free_round;
		/* let some reach the LU first, or not */
		if (!slots_wait(w, sl, NULL, rand_r(&seed) % 3)) {
			tmf_fail(w, "service");
			goto free_round;
		}
		if (w->resets && w->rounds % 2)
			rc = iscsi_task_mgmt_async(w->c, 1, ISCSI_TM_LUN_RESET, 0xffffffff, 0,
						   tmf_cb, &tmf);
		else
			rc = iscsi_task_mgmt_async(w->c, 1, ISCSI_TM_ABORT_TASK, sl[0].task->itt,
						   sl[0].task->cmdsn, tmf_cb, &tmf);
		if (rc < 0) {
			tmf_fail(w, "task management");
			goto free_round;
		}
		if (!slots_wait(w, sl, &tmf, 5000)) {
			tmf_fail(w, "service");
			goto free_round;
		}
		/* the task may have ended before the ABORT TASK came, the LUN
		 * may be gone for the moment */
		if (!tmf.done || (tmf.status != ISCSI_TMR_FUNC_COMPLETE &&
				  tmf.status != ISCSI_TMR_TASK_DOES_NOT_EXIST &&
				  tmf.status != ISCSI_TMR_LUN_DOES_NOT_EXIST)) {
			tmf_fail(w, tmf.done ? "TMF response" : "no TMF response");
			goto free_round;
		}
		w->tmfs++;
		/* The TMF response comes after every task it aborted ended, and
		 * those never get a response of their own: forget them here.
		 * The other session's LUN RESET aborts ours too, without a
		 * word: what is still unanswered a while later was aborted. */
		for (unsigned i = 0; i < TMF_SLOTS; i++)
			if (tmf.status == ISCSI_TMR_FUNC_COMPLETE && !sl[i].done &&
			    (i == 0 || (w->resets && w->rounds % 2))) {
				iscsi_scsi_cancel_task(w->c, sl[i].task);
				sl[i].done = true;
				sl[i].status = SCSI_STATUS_TASK_ABORTED;
			}
		if (!slots_wait(w, sl, NULL, 3000)) {
			tmf_fail(w, "service");
			goto free_round;
		}
		for (unsigned i = 0; i < TMF_SLOTS; i++) {
			if (!sl[i].done) {
				w->lost++;
				iscsi_scsi_cancel_task(w->c, sl[i].task);
				continue;
			}
			switch (sl[i].status) {
			case SCSI_STATUS_GOOD:
				w->good++;
				break;
			case SCSI_STATUS_CHECK_CONDITION:
				w->refused++;
				break;
			case SCSI_STATUS_TASK_ABORTED:
			case SCSI_STATUS_CANCELLED:
				w->aborted++;
				break;
			default:
				tmf_fail(w, "write status");
				break;
			}
		}
		w->rounds++;
free_round:
		for (unsigned i = 0; i < TMF_SLOTS; i++)
			if (sl[i].task)
				scsi_free_scsi_task(sl[i].task);
	}
	free(buf);
	return NULL;
}

START_TEST(t06_lun_pool_cycled_under_io_and_tmf)
{
	struct tmf_worker w[2] = { { .resets = true }, { .resets = false } };
	pthread_t th[2];
	char out[4096];
	unsigned retired = 0, cycles = 0;
	uint64_t deadline;

	write_conf_q(true);
	nf_start(&D);
	for (unsigned i = 0; i < 2; i++) {
		w[i].c = login_as(INI_A, NULL, 10 + i, 0);
		ck_assert_ptr_nonnull(w[i].c);
		ck_assert_int_eq(pthread_create(&th[i], NULL, tmf_main, &w[i]), 0);
	}
	/* a few seconds of reloads, at least 15 cycles however slow the build */
	deadline = harness_now_ms() + 4000;
	while (cycles < 15 || harness_now_ms() < deadline) {
		write_conf_q(false);
		ck_assert_msg(rj_ctl(&D, out, sizeof(out), "reload", "--json", (char *)NULL) == 0,
			      "reload without q: %s", out);
		retired += strstr(out, "\"pools_removed\":[\"q\"]") != NULL;
		write_conf_q(true);
		ck_assert_msg(rj_ctl(&D, out, sizeof(out), "reload", "--json", (char *)NULL) == 0,
			      "reload with q: %s", out);
		cycles++;
		if (cycles > 200)
			break;
	}
	for (unsigned i = 0; i < 2; i++) {
		atomic_store(&w[i].stop, true);
		pthread_join(th[i], NULL);
	}
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_msg(w[i].errors == 0, "session %u: %s", i, w[i].first_error);
		ck_assert_msg(w[i].rounds > 0, "session %u did no round", i);
		fprintf(stderr, "session %u: %u rounds, %u TMFs, %u good, %u refused, "
				"%u aborted, %u unanswered\n",
			i, w[i].rounds, w[i].tmfs, w[i].good, w[i].refused, w[i].aborted,
			w[i].lost);
	}
	fprintf(stderr, "%u reload cycles, LU freed in %u\n", cycles, retired);
	/* the loop did free the LU under the sessions, not only unmap it */
	ck_assert_uint_gt(retired, 0);
	/* the daemon is whole: both LUNs serve a new session */
	{
		struct iscsi_context *c = login_as(INI_B, NULL, 20, 0);

		tur(c, 0, NULL);
		ck_assert_int_eq(tur(c, 0, NULL), SCSI_STATUS_GOOD);
		tur(c, 1, NULL);
		ck_assert_int_eq(tur(c, 1, NULL), SCSI_STATUS_GOOD);
		harness_iscsi_logout(c);
	}
	for (unsigned i = 0; i < 2; i++)
		harness_iscsi_logout(w[i].c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_add_target_during_io", t01_add_target_during_io),
		CK_CASE("02_invalid_file", t02_invalid_file),
		CK_CASE("03_acl_removed", t03_acl_removed),
		CK_CASE("04_lun_added", t04_lun_added),
		CK_CASE("05_sighup_target_and_portal", t05_sighup_target_and_portal),
		CK_CASE("06_lun_pool_cycled_under_io_and_tmf", t06_lun_pool_cycled_under_io_and_tmf),
	};

	return ck_main(&(struct ck_suite_def){
		"net_reload", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 90 });
}
