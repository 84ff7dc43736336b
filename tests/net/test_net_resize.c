/*
 * tests/net/test_net_resize.c - growing a LUN online (rtgtctl resize, a
 * raised size and rtgtctl reload) on a raid5 pool of a running bin/rtgtd,
 * driven over libiscsi.
 *
 * 01 rtgtctl resize under verified I/O from another session: that session
 *    sees CAPACITY DATA HAS CHANGED (06/2A/09) once, retries, and has no
 *    other error and no wrong byte; the resizing session sees the unit
 *    attention too, READ CAPACITY 16 reports the new size, the blocks
 *    gained take writes and give them back, the old data is intact; a
 *    restart with the size still the old one in the file serves the grown
 *    size (warning in the log) and the same data.
 * 02 refusals say why and change nothing (exit 1, capacity unchanged, no
 *    unit attention): a smaller size (never shrink), a size that would
 *    reach the next volume (never moved), a size that is no size or not a
 *    multiple of 4K, an unknown target or LUN, a missing argument (usage,
 *    exit 2); the last volume grows, and the same size again is no change.
 * 03 a size raised in the file and rtgtctl reload grows the LUN
 *    ("volumes grown" in the reply, the unit attention, the new capacity);
 *    a size lowered in the file and reload is a warning, the size stays.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_grow.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define IQN "iqn.2026-11.org.rtgt:grow"
#define INI_A "iqn.2026-11.org.example:a"
#define INI_B "iqn.2026-11.org.example:b"
#define MB (1u << 20)
#define LG_ASC_CAP_CHANGED 0x2a09

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* raid5 of four 32 MiB members (96 MiB usable less metadata); LUN 0 is
 * volume v of @v_size, LUN 1 (when @w_size) volume w right after it. */
static void write_conf(const char *v_size, const char *w_size)
{
	char luns[256];
	int rc;

	snprintf(luns, sizeof(luns), "{ lun = 0; pool = \"p\"; volume = \"v\"; size = \"%s\"; }%s%s%s",
		 v_size, w_size ? ", { lun = 1; pool = \"p\"; volume = \"w\"; size = \"" : "",
		 w_size ? w_size : "", w_size ? "\"; }" : "");
	rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid5\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\", \"d2.img\", \"d3.img\" );\n"
		"            create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" IQN "\"; portals = ( \"lo\" ); allow = ( \"ALL\" );\n"
		"              luns = ( %s ); } );\n",
		D.port, luns);
	ck_assert_int_eq(rc, 0);
}

static struct iscsi_context *login_as(const char *initiator, uint32_t isid)
{
	struct harness_login o = { .initiator = initiator, .target = IQN, .isid_rnd = isid };

	return nf_login(&D, 0, &o);
}

static bool log_has(const char *s)
{
	static char buf[1 << 20];
	ssize_t n = harness_read_log(&D, buf, sizeof(buf) - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, s) != NULL;
}

START_TEST(t01_resize_under_io)
{
	struct lg_loader l = { .bytes = 15 * MB }; /* the last MiB is the test's */
	struct iscsi_context *b;
	int ascq;

	write_conf("16M", NULL);
	nf_start(&D);
	l.c = login_as(INI_A, 1);
	b = login_as(INI_B, 2);
	lg_drain_ua(l.c, 0);
	lg_drain_ua(b, 0);
	ck_assert_uint_eq(lg_capacity(b, 0), 16 * MB / 512);
	lg_write_read(b, 16 * MB / 512 - 8, 4096, 7);

	lg_grow_under_load(&l, &D, IQN, "24M", 24 * MB);

	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, LG_ASC_CAP_CHANGED);
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(lg_capacity(b, 0), 24 * MB / 512);
	lg_read_expect(b, 16 * MB / 512 - 8, 4096, 7);
	lg_write_read(b, 16 * MB / 512, 65536, 8);
	lg_write_read(b, 24 * MB / 512 - 8, 4096, 9);
	lg_verify_pieces(b, &l);
	harness_iscsi_logout(l.c);
	harness_iscsi_logout(b);

	/* the file still says 16M */
	nf_stop_expect_0(&D, "after the resize");
	nf_start(&D);
	b = login_as(INI_B, 2);
	lg_drain_ua(b, 0);
	ck_assert_uint_eq(lg_capacity(b, 0), 24 * MB / 512);
	ck_assert(log_has("more than the 16777216 the configuration asks for"));
	lg_read_expect(b, 16 * MB / 512 - 8, 4096, 7);
	lg_read_expect(b, 24 * MB / 512 - 8, 4096, 9);
	lg_verify_pieces(b, &l);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, "after the restart");
}
END_TEST

START_TEST(t02_refused)
{
	struct iscsi_context *b;
	char out[4096];
	int ascq;

	write_conf("16M", "8M");
	nf_start(&D);
	b = login_as(INI_B, 2);
	lg_drain_ua(b, 0);
	lg_drain_ua(b, 1);

	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", "8M", NULL), 1);
	ck_assert_msg(strstr(out, "never shrink"), "rtgtctl said: %s", out);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", "17M", NULL), 1);
	ck_assert_msg(strstr(out, "never moved"), "rtgtctl said: %s", out);
	ck_assert(log_has("volume w follows it"));
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", "lots", NULL), 1);
	ck_assert_msg(strstr(out, "is not a size"), "rtgtctl said: %s", out);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", "16777728", NULL), 1);
	ck_assert_msg(strstr(out, "multiple of 4K"), "rtgtctl said: %s", out);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "7", "32M", NULL), 1);
	ck_assert_msg(strstr(out, "has no LUN '7'"), "rtgtctl said: %s", out);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", "iqn.2026-11.org.rtgt:none", "0",
				"32M", NULL), 1);
	ck_assert_msg(strstr(out, "no target named"), "rtgtctl said: %s", out);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", NULL), 2);

	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(lg_capacity(b, 0), 16 * MB / 512);
	ck_assert_uint_eq(lg_capacity(b, 1), 8 * MB / 512);
	/* w, the last volume, can grow; 0 cannot, w is in its way */
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "1", "40M", NULL), 0);
	ck_assert_int_eq(lg_tur(b, 1, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, LG_ASC_CAP_CHANGED);
	ck_assert_uint_eq(lg_capacity(b, 1), 40 * MB / 512);
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "1", "40M", NULL), 0);
	ck_assert_msg(strstr(out, "already 41943040 bytes"), "rtgtctl said: %s", out);
	ck_assert_int_eq(lg_tur(b, 1, &ascq), SCSI_STATUS_GOOD);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

START_TEST(t03_reload)
{
	struct iscsi_context *b;
	struct json_object *r, *a;
	char out[8192];
	int ascq;

	write_conf("16M", NULL);
	nf_start(&D);
	b = login_as(INI_B, 2);
	lg_drain_ua(b, 0);
	lg_write_read(b, 100, 8192, 11);

	write_conf("20M", NULL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", "--json", NULL), 0);
	r = json_tokener_parse(out);
	ck_assert_msg(r && json_object_object_get_ex(r, "volumes_resized", &a), "reply: %s", out);
	ck_assert_int_eq(json_object_array_length(a), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 0)),
			 "p/v 16777216 -> 20971520");
	json_object_put(r);
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, LG_ASC_CAP_CHANGED);
	ck_assert_uint_eq(lg_capacity(b, 0), 20 * MB / 512);
	lg_write_read(b, 20 * MB / 512 - 16, 8192, 12);

	write_conf("10M", NULL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", NULL), 0);
	ck_assert_msg(strstr(out, "never shrink"), "rtgtctl said: %s", out);
	ck_assert_int_eq(lg_tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(lg_capacity(b, 0), 20 * MB / 512);
	lg_read_expect(b, 100, 8192, 11);
	lg_read_expect(b, 20 * MB / 512 - 16, 8192, 12);
	harness_iscsi_logout(b);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_resize_under_io", t01_resize_under_io),
		CK_CASE("02_refused", t02_refused),
		CK_CASE("03_reload", t03_reload),
	};

	return ck_main(&(struct ck_suite_def){ "net_resize", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 120 });
}
