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
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define IQN "iqn.2026-11.org.rtgt:grow"
#define INI_A "iqn.2026-11.org.example:a"
#define INI_B "iqn.2026-11.org.example:b"
#define MB (1u << 20)
#define ASC_CAP_CHANGED 0x2a09

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

static uint64_t capacity(struct iscsi_context *c, int lun)
{
	struct scsi_task *t = iscsi_readcapacity16_sync(c, lun);
	struct scsi_readcapacity16 *rc;
	uint64_t blocks;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->status, SCSI_STATUS_GOOD);
	rc = scsi_datain_unmarshall(t);
	ck_assert_ptr_nonnull(rc);
	blocks = rc->returned_lba + 1;
	ck_assert_uint_eq(rc->block_length, 512);
	scsi_free_scsi_task(t);
	return blocks;
}

/* TEST UNIT READY: its status, the sense in *@ascq (0 when GOOD). */
static int tur(struct iscsi_context *c, int lun, int *ascq)
{
	struct scsi_task *t = iscsi_testunitready_sync(c, lun);
	int st;

	ck_assert_ptr_nonnull(t);
	st = t->status;
	*ascq = st == SCSI_STATUS_CHECK_CONDITION ? t->sense.ascq : 0;
	if (st == SCSI_STATUS_CHECK_CONDITION)
		ck_assert_int_eq(t->sense.key, SCSI_SENSE_UNIT_ATTENTION);
	scsi_free_scsi_task(t);
	return st;
}

/* Pending unit attentions of the nexus taken (power on, ...) until GOOD. */
static void drain_ua(struct iscsi_context *c, int lun)
{
	int ascq;

	for (int i = 0; i < 8; i++)
		if (tur(c, lun, &ascq) == SCSI_STATUS_GOOD)
			return;
	ck_abort_msg("unit attentions never end");
}

static void pattern(uint8_t *b, size_t len, uint64_t lba, unsigned gen)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = (lba + i / 512) * 0x9e3779b97f4a7c15ull ^ gen;

		memcpy(b + i, &v, 8);
	}
}

static int xfer(struct iscsi_context *c, bool write, uint64_t lba, uint8_t *buf, size_t len,
		int *ascq)
{
	struct scsi_task *t = write ?
		iscsi_write16_sync(c, 0, lba, buf, (uint32_t)len, 512, 0, 0, 0, 0, 0) :
		iscsi_read16_sync(c, 0, lba, (uint32_t)len, 512, 0, 0, 0, 0, 0);
	int st;

	if (!t)
		return -1;
	st = t->status;
	*ascq = st == SCSI_STATUS_CHECK_CONDITION ? t->sense.ascq : 0;
	if (st == SCSI_STATUS_GOOD && !write) {
		if (t->datain.size != (int)len)
			st = -2;
		else
			memcpy(buf, t->datain.data, len);
	}
	scsi_free_scsi_task(t);
	return st;
}

/* Writes and reads back 64 KiB pieces of the first @bytes, one generation
 * a pass; counts the capacity unit attentions it retried past. */
struct loader {
	struct iscsi_context *c;
	uint64_t bytes;
	atomic_bool stop;
	atomic_uint ops;
	unsigned ua, errors, wrong, gen[256];
	char first_error[200];
};

static void *load_main(void *arg)
{
	struct loader *l = arg;
	uint8_t w[65536], r[65536];
	unsigned n = (unsigned)(l->bytes / sizeof(w));

	for (unsigned k = 0; !atomic_load(&l->stop); k++) {
		unsigned piece = (k * 37u) % n;
		uint64_t lba = (uint64_t)piece * sizeof(w) / 512;
		int st, ascq, tries;

		pattern(w, sizeof(w), lba, k + 1);
		for (tries = 0; tries < 3; tries++) {
			st = xfer(l->c, true, lba, w, sizeof(w), &ascq);
			if (st != SCSI_STATUS_CHECK_CONDITION || ascq != ASC_CAP_CHANGED)
				break;
			l->ua++;
		}
		if (st == SCSI_STATUS_GOOD) {
			l->gen[piece] = k + 1;
			for (tries = 0; tries < 3; tries++) {
				st = xfer(l->c, false, lba, r, sizeof(r), &ascq);
				if (st != SCSI_STATUS_CHECK_CONDITION || ascq != ASC_CAP_CHANGED)
					break;
				l->ua++;
			}
		}
		if (st != SCSI_STATUS_GOOD) {
			if (!l->errors++)
				snprintf(l->first_error, sizeof(l->first_error),
					 "piece %u: status %d ascq 0x%04x", piece, st, ascq);
		} else if (memcmp(w, r, sizeof(w))) {
			l->wrong++;
		}
		atomic_fetch_add(&l->ops, 1);
	}
	return NULL;
}

/* Every piece the loader wrote holds its last generation. */
static void verify_pieces(struct iscsi_context *c, const struct loader *l)
{
	uint8_t w[65536], r[65536];
	int ascq;

	for (unsigned piece = 0; piece < l->bytes / sizeof(w); piece++) {
		uint64_t lba = (uint64_t)piece * sizeof(w) / 512;

		if (!l->gen[piece])
			continue;
		pattern(w, sizeof(w), lba, l->gen[piece]);
		ck_assert_int_eq(xfer(c, false, lba, r, sizeof(r), &ascq), SCSI_STATUS_GOOD);
		ck_assert_msg(!memcmp(w, r, sizeof(w)), "piece %u lost its data", piece);
	}
}

static void write_read(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen)
{
	uint8_t *w = malloc(len), *r = malloc(len);
	int ascq;

	pattern(w, len, lba, gen);
	ck_assert_int_eq(xfer(c, true, lba, w, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert_int_eq(xfer(c, false, lba, r, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert(!memcmp(w, r, len));
	free(w);
	free(r);
}

static void read_expect(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen)
{
	uint8_t *w = malloc(len), *r = malloc(len);
	int ascq;

	pattern(w, len, lba, gen);
	ck_assert_int_eq(xfer(c, false, lba, r, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert_msg(!memcmp(w, r, len), "data at LBA %llu changed", (unsigned long long)lba);
	free(w);
	free(r);
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
	struct loader l = { .bytes = 15 * MB }; /* the last MiB is the test's */
	struct iscsi_context *b;
	pthread_t th;
	char out[4096];
	unsigned ops;
	int ascq;

	write_conf("16M", NULL);
	nf_start(&D);
	l.c = login_as(INI_A, 1);
	b = login_as(INI_B, 2);
	drain_ua(l.c, 0);
	drain_ua(b, 0);
	ck_assert_uint_eq(capacity(b, 0), 16 * MB / 512);
	write_read(b, 16 * MB / 512 - 8, 4096, 7);

	ck_assert_int_eq(pthread_create(&th, NULL, load_main, &l), 0);
	while (atomic_load(&l.ops) < 20)
		usleep(10000);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "0", "24M", NULL), 0);
	ck_assert_msg(strstr(out, "grown to 25165824 bytes"), "rtgtctl said: %s", out);
	ops = atomic_load(&l.ops);
	while (atomic_load(&l.ops) < ops + 20)
		usleep(10000);
	atomic_store(&l.stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(l.errors == 0, "%u errors, first: %s", l.errors, l.first_error);
	ck_assert_uint_eq(l.wrong, 0);
	ck_assert_uint_eq(l.ua, 1);

	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, ASC_CAP_CHANGED);
	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(capacity(b, 0), 24 * MB / 512);
	read_expect(b, 16 * MB / 512 - 8, 4096, 7);
	write_read(b, 16 * MB / 512, 65536, 8);
	write_read(b, 24 * MB / 512 - 8, 4096, 9);
	verify_pieces(b, &l);
	harness_iscsi_logout(l.c);
	harness_iscsi_logout(b);

	/* the file still says 16M */
	nf_stop_expect_0(&D, "after the resize");
	nf_start(&D);
	b = login_as(INI_B, 2);
	drain_ua(b, 0);
	ck_assert_uint_eq(capacity(b, 0), 24 * MB / 512);
	ck_assert(log_has("more than the 16777216 the configuration asks for"));
	read_expect(b, 16 * MB / 512 - 8, 4096, 7);
	read_expect(b, 24 * MB / 512 - 8, 4096, 9);
	verify_pieces(b, &l);
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
	drain_ua(b, 0);
	drain_ua(b, 1);

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

	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(capacity(b, 0), 16 * MB / 512);
	ck_assert_uint_eq(capacity(b, 1), 8 * MB / 512);
	/* w, the last volume, can grow; 0 cannot, w is in its way */
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "1", "40M", NULL), 0);
	ck_assert_int_eq(tur(b, 1, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, ASC_CAP_CHANGED);
	ck_assert_uint_eq(capacity(b, 1), 40 * MB / 512);
	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "resize", IQN, "1", "40M", NULL), 0);
	ck_assert_msg(strstr(out, "already 41943040 bytes"), "rtgtctl said: %s", out);
	ck_assert_int_eq(tur(b, 1, &ascq), SCSI_STATUS_GOOD);
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
	drain_ua(b, 0);
	write_read(b, 100, 8192, 11);

	write_conf("20M", NULL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", "--json", NULL), 0);
	r = json_tokener_parse(out);
	ck_assert_msg(r && json_object_object_get_ex(r, "volumes_resized", &a), "reply: %s", out);
	ck_assert_int_eq(json_object_array_length(a), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 0)),
			 "p/v 16777216 -> 20971520");
	json_object_put(r);
	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_CHECK_CONDITION);
	ck_assert_int_eq(ascq, ASC_CAP_CHANGED);
	ck_assert_uint_eq(capacity(b, 0), 20 * MB / 512);
	write_read(b, 20 * MB / 512 - 16, 8192, 12);

	write_conf("10M", NULL);
	ck_assert_int_eq(rj_ctl(&D, out, sizeof(out), "reload", NULL), 0);
	ck_assert_msg(strstr(out, "never shrink"), "rtgtctl said: %s", out);
	ck_assert_int_eq(tur(b, 0, &ascq), SCSI_STATUS_GOOD);
	ck_assert_uint_eq(capacity(b, 0), 20 * MB / 512);
	read_expect(b, 100, 8192, 11);
	read_expect(b, 20 * MB / 512 - 16, 8192, 12);
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
