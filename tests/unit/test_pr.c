/* tests/unit/test_pr.c - target/scsi/pr.c and pr_state.c: RESERVE/RELEASE(6),
 * persistent reservations across two nexuses (pr.c), APTPL persistence (the
 * JSON file, damaged files, symlinks, a file that cannot be written:
 * pr_state.c), REGISTER AND MOVE TransportID checks. The shared state of
 * pr_state.c is covered by test_net_rbd (a throwaway Ceph cluster). */
#include "tests/unit/scsi_fixture.h"

static void setup(void)
{
	fx_setup();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
}

static struct scsi_cmd prout(struct scsi_nexus *n, uint8_t sa, uint8_t type, uint64_t key,
			     uint64_t sakey, uint8_t flags)
{
	uint8_t cdb[10] = { OP_PR_OUT, sa, type, 0, 0, 0, 0, 0, 24, 0 };

	memset(fx.buf, 0, 24);
	conf_put_be64(&fx.buf[0], key);
	conf_put_be64(&fx.buf[8], sakey);
	fx.buf[20] = flags;
	return fx_run(n, 0, cdb, 10, 24, true);
}

static struct scsi_cmd prin(struct scsi_nexus *n, uint8_t sa, uint16_t alloc)
{
	uint8_t cdb[10] = { OP_PR_IN, sa, 0, 0, 0, 0, 0, 0, 0, 0 };

	conf_put_be16(&cdb[7], alloc);
	return fx_run(n, 0, cdb, 10, alloc, false);
}

static struct scsi_cmd rw(struct scsi_nexus *n, bool write)
{
	uint8_t cdb[10] = { write ? OP_WRITE_10 : OP_READ_10, 0, 0, 0, 0, 9, 0, 0, 1, 0 };

	return fx_run(n, 0, cdb, 10, SCSI_BS, write);
}

START_TEST(t01_reserve6_two_nexuses)
{
	uint8_t res[6] = { OP_RESERVE_6 }, rel[6] = { OP_RELEASE_6 };
	uint8_t inq[6] = { OP_INQUIRY, 0, 0, 0, 36, 0 };
	uint8_t ms[6] = { OP_MODE_SENSE_6, 0, 0x3f, 0, 255, 0 };
	struct scsi_cmd c;

	c = fx_run(fx.a, 0, res, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 0, res, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.b, 0, res, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_RESERVATION_CONFLICT);
	c = fx_run(fx.b, 0, rel, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.b, 0, ms, 6, 255, false);
	ck_assert_int_eq(c.status, SCSI_RESERVATION_CONFLICT);
	c = fx_run(fx.b, 0, inq, 6, 36, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = fx_run(fx.a, 0, ms, 6, 255, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* nexus loss drops it */
	scsi_nexus_destroy(fx.a);
	fx.a = NULL;
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.a,i,0x400000000001", 1, &fx.a), 0);
	c = fx_run(fx.b, 0, res, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* LUN reset drops it too */
	ck_assert_int_eq(scsi_tmf(fx.t, fx.a, 0, SCSI_TMF_LUN_RESET), 0);
	fx_clear_ua(fx.a);
	c = fx_run(fx.a, 0, res, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);
}
END_TEST

START_TEST(t02_register_read_keys)
{
	struct scsi_cmd c;

	c = prout(fx.a, 0, 0, 0, 0xaaaa, 0);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = prout(fx.b, 6, 0, 0x1234, 0xbbbb, 0); /* REGISTER AND IGNORE */
	ck_assert_int_eq(c.status, SCSI_GOOD);
	/* REGISTER with a wrong key */
	c = prout(fx.a, 0, 0, 0x1, 0xcccc, 0);
	ck_assert_int_eq(c.status, SCSI_RESERVATION_CONFLICT);
	c = prin(fx.a, 0, 64);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), 2); /* generation */
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xaaaa);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[16]), 0xbbbb);
	/* truncated: full length still in the header */
	c = prin(fx.a, 0, 12);
	ck_assert_uint_eq(c.xfer_len, 12);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	/* unregister */
	c = prout(fx.a, 0, 0, 0xaaaa, 0, 0);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 8);
	/* bad service action, bad parameter length */
	c = prin(fx.a, 4, 64);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB);
	{
		uint8_t cdb[10] = { OP_PR_OUT, 0, 0, 0, 0, 0, 0, 0, 20, 0 };

		c = fx_run(fx.a, 0, cdb, 10, 20, true);
		ck_sense(c, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
	}
}
END_TEST

START_TEST(t03_write_exclusive_access)
{
	struct scsi_cmd c;

	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.b, 0, 0, 0, 0xb, 0);
	c = prout(fx.a, 1, PR_WE, 0xa, 0, 0);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	c = prin(fx.b, 1, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xa);
	ck_assert_int_eq(fx.buf[21], PR_WE);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.b, false).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_RESERVATION_CONFLICT);
	/* reserve by another nexus conflicts; same type by holder is fine */
	ck_assert_int_eq(prout(fx.b, 1, PR_WE, 0xb, 0, 0).status, SCSI_RESERVATION_CONFLICT);
	ck_assert_int_eq(prout(fx.a, 1, PR_WE, 0xa, 0, 0).status, SCSI_GOOD);
	/* release with the wrong type */
	c = prout(fx.a, 2, PR_EA, 0xa, 0, 0);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_RELEASE_PR);
	ck_assert_int_eq(prout(fx.a, 2, PR_WE, 0xa, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_GOOD);
	ck_assert(pr_check(fx.lu));
}
END_TEST

START_TEST(t04_exclusive_access_registrants_only)
{
	struct scsi_nexus *c3;
	struct scsi_cmd c;

	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.c,i,0x400000000003", 1, &c3), 0);
	fx_clear_ua(c3);
	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.b, 0, 0, 0, 0xb, 0);
	ck_assert_int_eq(prout(fx.a, 1, PR_EARO, 0xa, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_GOOD);   /* registrant */
	ck_assert_int_eq(rw(c3, false).status, SCSI_RESERVATION_CONFLICT);
	/* holder unregisters: reservation goes, b gets RESERVATIONS RELEASED */
	ck_assert_int_eq(prout(fx.a, 0, 0, 0xa, 0, 0).status, SCSI_GOOD);
	c = prin(fx.a, 1, 64);
	ck_assert_int_eq(c.status, SCSI_GOOD); /* no UA for the one who did it */
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 0);
	c = rw(fx.b, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_RESERVATIONS_RELEASED);
	ck_assert_int_eq(rw(c3, false).status, SCSI_GOOD);
	scsi_nexus_destroy(c3);
}
END_TEST

START_TEST(t05_all_registrants)
{
	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.b, 0, 0, 0, 0xb, 0);
	ck_assert_int_eq(prout(fx.a, 1, PR_WEAR, 0xa, 0, 0).status, SCSI_GOOD);
	prin(fx.a, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0); /* key 0 for all-registrants */
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_GOOD);
	/* the reserving nexus leaves: still reserved for b */
	ck_assert_int_eq(prout(fx.a, 0, 0, 0xa, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_RESERVATION_CONFLICT);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_GOOD);
	ck_assert_int_eq(prout(fx.b, 2, PR_WEAR, 0xb, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_GOOD);
	ck_assert(pr_check(fx.lu));
}
END_TEST

START_TEST(t06_preempt_and_clear)
{
	struct scsi_cmd c;

	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.b, 0, 0, 0, 0xb, 0);
	ck_assert_int_eq(prout(fx.a, 1, PR_EA, 0xa, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.b, false).status, SCSI_RESERVATION_CONFLICT);
	/* b preempts a: a's registration and reservation go */
	c = prout(fx.b, 4, PR_WE, 0xb, 0xa, 0);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	prin(fx.b, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xb);
	ck_assert_int_eq(fx.buf[21], PR_WE);
	c = rw(fx.a, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_REGISTRATIONS_PREEMPTED);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_RESERVATION_CONFLICT);
	/* preempting a key nobody has */
	ck_assert_int_eq(prout(fx.b, 4, PR_WE, 0xb, 0x77, 0).status, SCSI_RESERVATION_CONFLICT);
	/* CLEAR by an unregistered nexus conflicts, by b works */
	ck_assert_int_eq(prout(fx.a, 3, 0, 0xa, 0, 0).status, SCSI_RESERVATION_CONFLICT);
	prout(fx.a, 0, 0, 0, 0xa2, 0);
	ck_assert_int_eq(prout(fx.b, 3, 0, 0xb, 0, 0).status, SCSI_GOOD);
	c = rw(fx.a, true);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_RESERVATIONS_PREEMPTED);
	prin(fx.b, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 0);
	ck_assert(pr_check(fx.lu));
}
END_TEST

START_TEST(t07_report_capabilities_full_status)
{
	struct scsi_cmd c;

	c = prin(fx.a, 2, 8);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_int_eq(conf_get_be16(&fx.buf[0]), 8);
	ck_assert_int_eq(fx.buf[2] & 0x01, 1); /* PTPL_C: a pr_path is set */
	ck_assert_int_eq(fx.buf[3] & 0x80, 0x80);
	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.a, 1, PR_WE, 0xa, 0, 0);
	c = prin(fx.a, 3, 1024);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xa);
	ck_assert_int_eq(fx.buf[8 + 12] & 1, 1);
	ck_assert_int_eq(fx.buf[8 + 13], PR_WE);
	ck_assert_int_eq(conf_get_be16(&fx.buf[8 + 18]), 1);
	ck_assert_int_eq(fx.buf[8 + 24], 0x45);
	ck_assert_str_eq((char *)&fx.buf[8 + 28], "iqn.1994-05.com.a,i,0x400000000001");
}
END_TEST

START_TEST(t08_aptpl_persists)
{
	struct scsi_cmd c;

	prout(fx.a, 0, 0, 0, 0xa, 0x01); /* APTPL */
	prout(fx.b, 0, 0, 0, 0xb, 0x01);
	ck_assert_int_eq(prout(fx.a, 1, PR_WERO, 0xa, 0, 0).status, SCSI_GOOD);
	ck_assert_int_eq(access(fx.pr, F_OK), 0);
	fx_lu_down();
	fx_lu_up();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	c = prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	c = prin(fx.a, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xa);
	ck_assert_int_eq(fx.buf[21], PR_WERO);
	c = prin(fx.a, 2, 8);
	ck_assert_int_eq(fx.buf[3] & 0x01, 1); /* PTPL_A */
	(void)c;
	/* registering with APTPL=0 stops persisting */
	prout(fx.a, 0, 0, 0xa, 0xa, 0);
	ck_assert_int_ne(access(fx.pr, F_OK), 0);
	fx_lu_down();
	fx_lu_up();
	fx_clear_ua(fx.a);
	prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 0);
}
END_TEST

/* Writes @text as the APTPL file and brings the LU up on it. */
static void lu_up_with(const char *text)
{
	FILE *f;

	fx_lu_down();
	unlink(fx.pr);
	if (text) {
		f = fopen(fx.pr, "w");
		ck_assert_ptr_nonnull(f);
		fputs(text, f);
		fclose(f);
	}
	fx_lu_up();
}

/* A file that cannot be loaded stops that LU alone: it is created (the
 * daemon goes on), INQUIRY still answers, everything else is NOT READY,
 * MANUAL INTERVENTION REQUIRED; the file stays as it was. */
static void expect_stopped(const char *what)
{
	uint8_t inq[6] = { OP_INQUIRY, 0, 0, 0, 36, 0 }, tur[6] = { 0 };
	struct scsi_cmd c;

	c = fx_run(fx.a, 0, inq, 6, 36, false);
	ck_assert_msg(c.status == SCSI_GOOD, "%s: INQUIRY status %d", what, c.status);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_msg(c.status == SCSI_CHECK_CONDITION && fx_key(&c) == SK_NOT_READY &&
			      fx_asc(&c) == ASC_NOT_READY_MANUAL,
		      "%s: TUR status %d key %x asc %04x", what, c.status, fx_key(&c), fx_asc(&c));
	c = prout(fx.a, 0, 0, 0, 0xa, 0x01);
	ck_assert_msg(c.status == SCSI_CHECK_CONDITION && fx_key(&c) == SK_NOT_READY, "%s", what);
}

#define GOOD_HEAD "{ \"format\": \"rtgt-pr-aptpl\", \"version\": 2, \"generation\": 3, "

START_TEST(t09_damaged_file_stops_only_its_lu)
{
	static const char *const bad[] = {
		/* the old line format, here with a forged reservation */
		"rtgt-pr 1\ngen 1\ntype 3 0\nreg 00000000deadbeef 1 0 iqn.1994-05.com.evil,i,0x1\n",
		"{ \"format\": ",                                           /* cut */
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ ] } x",
		GOOD_HEAD "\"type\": 9, \"holder\": -1, \"registrations\": [ ] }",
		GOOD_HEAD "\"type\": 1, \"holder\": -1, \"registrations\": [ ] }",
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ ], \"x\": 1 }",
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ { \"key\": \"00000000000000aa\", "
			"\"rel_port\": 1, \"all_tg_pt\": false, \"initiator_port\": \"iqn.1994-05.com.a\\nreg,i,0x400000000001\" } ] }",
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ { \"key\": \"00000000000000aa\", "
			"\"rel_port\": 1, \"all_tg_pt\": false, \"initiator_port\": \"iqn.1994-05.com.a\\u0000,i,0x400000000001\" } ] }",
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ { \"key\": \"aa\", "
			"\"rel_port\": 1, \"all_tg_pt\": false, \"initiator_port\": \"iqn.1994-05.com.a,i,0x400000000001\" } ] }",
		GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ { \"key\": \"00000000000000aa\", "
			"\"rel_port\": 70000, \"all_tg_pt\": false, \"initiator_port\": \"iqn.1994-05.com.a,i,0x400000000001\" } ] }",
		"null",
		"",
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[32];

		snprintf(what, sizeof(what), "file %u", i);
		lu_up_with(bad[i]);
		expect_stopped(what);
		ck_assert_int_eq(access(fx.pr, F_OK), 0);
	}
	/* the same shape, right, loads */
	lu_up_with(GOOD_HEAD "\"type\": 1, \"holder\": 0, \"registrations\": [ { \"key\": \"00000000000000aa\", "
		   "\"rel_port\": 1, \"all_tg_pt\": false, \"initiator_port\": \"iqn.1994-05.com.a,i,0x400000000001\" } ] }");
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_RESERVATION_CONFLICT);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_GOOD);
	lu_up_with(NULL);
}
END_TEST

/* A symlink in place of the file is not followed; one in place of the temp
 * file is replaced, and what it points to is untouched. */
START_TEST(t11_symlinks_not_followed)
{
	char target[160], tmp[160], buf[64];
	FILE *f;

	snprintf(target, sizeof(target), "%s/elsewhere", fx.dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", fx.pr);
	f = fopen(target, "w");
	ck_assert_ptr_nonnull(f);
	fputs(GOOD_HEAD "\"type\": 0, \"holder\": -1, \"registrations\": [ ] }", f);
	fclose(f);
	fx_lu_down();
	ck_assert_int_eq(symlink(target, fx.pr), 0);
	fx_lu_up();
	expect_stopped("symlinked state file");

	lu_up_with(NULL);
	fx_clear_ua(fx.a);
	f = fopen(target, "w");
	fputs("victim", f);
	fclose(f);
	ck_assert_int_eq(symlink(target, tmp), 0);
	ck_assert_int_eq(prout(fx.a, 0, 0, 0, 0xa, 0x01).status, SCSI_GOOD);
	f = fopen(target, "r");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "victim");
	ck_assert_int_ne(access(tmp, F_OK), 0);
	f = fopen(fx.pr, "r");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_int_eq(buf[0], '{');
}
END_TEST

/* Names with every character the iqn syntax allows survive the file, as do
 * the generation, type and holder. */
START_TEST(t12_aptpl_names_round_trip)
{
	const char *name = "iqn.2026-11.org.ex-ample:a.b-c:d:e-.f,i,0x23456789abcd";
	struct scsi_nexus *n = NULL;
	uint32_t gen;

	ck_assert_int_eq(scsi_nexus_create(fx.t, name, 2, &n), 0);
	fx_clear_ua(n);
	ck_assert_int_eq(prout(n, 0, 0, 0, 0x1122334455667788ULL, 0x01).status, SCSI_GOOD);
	ck_assert_int_eq(prout(fx.a, 0, 0, 0, 0xa, 0x01).status, SCSI_GOOD);
	ck_assert_int_eq(prout(n, 1, PR_EA, 0x1122334455667788ULL, 0, 0).status, SCSI_GOOD);
	prin(n, 0, 64);
	gen = conf_get_be32(&fx.buf[0]);
	scsi_nexus_destroy(n);
	fx_lu_down();
	fx_lu_up();
	ck_assert_int_eq(scsi_nexus_create(fx.t, name, 2, &n), 0);
	fx_clear_ua(n);
	fx_clear_ua(fx.a);
	prin(n, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), gen);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0x1122334455667788ULL);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[16]), 0xa);
	prin(n, 3, 512);
	ck_assert_str_eq((char *)&fx.buf[8 + 28], name);
	ck_assert_int_eq(fx.buf[8 + 12] & 1, 1);
	ck_assert_int_eq(fx.buf[8 + 13], PR_EA);
	ck_assert_int_eq(rw(fx.a, false).status, SCSI_RESERVATION_CONFLICT);
	ck_assert_int_eq(rw(n, false).status, SCSI_GOOD);
	scsi_nexus_destroy(n);
}
END_TEST

/* REGISTER AND MOVE with @tl bytes of TransportID (@tl_field in its length
 * field), @hdr its first byte, @nlen its additional length, @name in it. */
static struct scsi_cmd move(uint32_t tl_field, unsigned tl, uint8_t hdr, uint16_t nlen,
			    const char *name, size_t name_len)
{
	uint8_t cdb[10] = { OP_PR_OUT, 7, PR_WE, 0, 0, 0, 0, 0, 0, 0 };

	memset(fx.buf, 0, 24 + tl + 300);
	conf_put_be64(&fx.buf[0], 0xa);
	conf_put_be64(&fx.buf[8], 0xb0b);
	conf_put_be16(&fx.buf[18], 2);
	conf_put_be32(&fx.buf[20], tl_field);
	fx.buf[24] = hdr;
	conf_put_be16(&fx.buf[26], nlen);
	memcpy(&fx.buf[28], name, name_len);
	/* what an over-read would pick up */
	memset(&fx.buf[24 + tl], 'X', 300);
	conf_put_be32(&cdb[5], 24 + tl);
	return fx_run(fx.a, 0, cdb, 10, 24 + tl, true);
}

START_TEST(t13_move_transport_ids_checked)
{
	const char *dst = "iqn.1994-05.com.b,i,0x400000000002";
	char longname[300];
	struct scsi_cmd c;

	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.a, 1, PR_WE, 0xa, 0, 0);
	/* the wrapping length: 24 + 0xfffffff0 is 8 */
	c = move(0xfffffff0u, 40, 0x45, 36, dst, strlen(dst));
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	c = move(0xffffffe8u, 24, 0x45, 20, "iqn.1994-05.com.b", 17);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	/* longer than the list */
	c = move(44, 40, 0x45, 36, dst, strlen(dst));
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	/* format 00, other protocol */
	c = move(40, 40, 0x05, 36, dst, strlen(dst));
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	c = move(40, 40, 0x46, 36, dst, strlen(dst));
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	/* no NUL inside the field */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "iqn.1994-05.com.b:", 18);
	c = move(40, 40, 0x45, 36, longname, 36);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	/* names that are not iSCSI initiator ports */
	c = move(40, 40, 0x45, 36, "iqn.1994-05.com.b\n,i,0x400000000002", 35);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	c = move(40, 40, 0x45, 36, "iqn.1994-05.com.b,i,0x4000000002", 32);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	c = move(40, 40, 0x45, 36, "foo,i,0x400000000002", 20);
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	/* additional length not a multiple of 4 */
	c = move(40, 40, 0x45, 35, dst, strlen(dst));
	ck_sense(c, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
	ck_assert(pr_check(fx.lu));
	/* nothing of that moved anything */
	c = move(40, 40, 0x45, 36, dst, strlen(dst));
	ck_assert_int_eq(c.status, SCSI_GOOD);
	prin(fx.b, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xb0b);
}
END_TEST

START_TEST(t10_register_and_move)
{
	uint8_t cdb[10] = { OP_PR_OUT, 7, PR_WE, 0, 0, 0, 0, 0, 0, 0 };
	const char *dst = "iqn.1994-05.com.b,i,0x400000000002";
	unsigned tl = 40;
	struct scsi_cmd c;

	prout(fx.a, 0, 0, 0, 0xa, 0);
	prout(fx.a, 1, PR_WE, 0xa, 0, 0);
	memset(fx.buf, 0, 24 + tl);
	conf_put_be64(&fx.buf[0], 0xa);
	conf_put_be64(&fx.buf[8], 0xb0b);
	fx.buf[17] = 0x02; /* UNREG */
	conf_put_be16(&fx.buf[18], 2);
	conf_put_be32(&fx.buf[20], tl);
	fx.buf[24] = 0x45;
	conf_put_be16(&fx.buf[26], (uint16_t)(tl - 4));
	memcpy(&fx.buf[28], dst, strlen(dst));
	conf_put_be32(&cdb[5], 24 + tl);
	c = fx_run(fx.a, 0, cdb, 10, 24 + tl, true);
	ck_assert_int_eq(c.status, SCSI_GOOD);
	prin(fx.b, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xb0b);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_GOOD);
	ck_assert_int_eq(rw(fx.a, true).status, SCSI_RESERVATION_CONFLICT);
	ck_assert(pr_check(fx.lu));
}
END_TEST

/* A regular file at @path (where the state directory should be). */
static void plant_file(const char *path)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fclose(f);
}

/*
 * The APTPL file cannot be written (a regular file where its directory
 * should be, so ENOTDIR also as root): a PERSISTENT RESERVE OUT whose state
 * must persist gets HARDWARE ERROR, INTERNAL TARGET FAILURE, never GOOD,
 * and changes nothing (keys, generation, PTPL_A, reservation; no UA for
 * the nexus it would have preempted). With APTPL 0 before and after there
 * is nothing to save and it works. Once the directory is back the same
 * commands work, raise their UAs and persist.
 */
START_TEST(t14_aptpl_save_failure)
{
	uint8_t tur[6] = { 0 };
	char sd[96], away[112];
	struct scsi_cmd c;
	uint32_t gen;

	snprintf(sd, sizeof(sd), "%s/sd", fx.dir);
	snprintf(away, sizeof(away), "%s/sd.away", fx.dir);
	fx_lu_down();
	snprintf(fx.pr, sizeof(fx.pr), "%s/v0.pr", sd);
	fx_lu_up();
	fx_clear_ua(fx.a);
	fx_clear_ua(fx.b);
	plant_file(sd);

	ck_assert_int_eq(prout(fx.a, 0, 0, 0, 0xa, 0).status, SCSI_GOOD);
	prin(fx.a, 0, 64);
	gen = conf_get_be32(&fx.buf[0]);
	c = prout(fx.b, 0, 0, 0, 0xb, 0x01);    /* REGISTER, APTPL */
	ck_sense(c, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
	prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), gen);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 8);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xa);
	prin(fx.a, 2, 8);
	ck_assert_int_eq(fx.buf[3] & 0x01, 0);  /* PTPL_A still 0 */

	/* the directory can be made again: the same command works */
	ck_assert_int_eq(unlink(sd), 0);
	ck_assert_int_eq(prout(fx.b, 0, 0, 0, 0xb, 0x01).status, SCSI_GOOD);
	ck_assert_int_eq(access(fx.pr, F_OK), 0);
	ck_assert_int_eq(prout(fx.a, 1, PR_WE, 0xa, 0, 0).status, SCSI_GOOD);

	/* gone again: b's PREEMPT of a is refused and does nothing */
	ck_assert_int_eq(rename(sd, away), 0);
	plant_file(sd);
	prin(fx.a, 0, 64);
	gen = conf_get_be32(&fx.buf[0]);
	c = prout(fx.b, 4, PR_WE, 0xb, 0xa, 0);
	ck_sense(c, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_assert_int_eq(c.status, SCSI_GOOD);  /* no REGISTRATIONS PREEMPTED */
	prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[0]), gen);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 16);
	prin(fx.a, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xa);
	ck_assert_int_eq(fx.buf[21], PR_WE);
	ck_assert_int_eq(rw(fx.b, true).status, SCSI_RESERVATION_CONFLICT);

	/* back: it works, a is told, and the file holds the new state */
	ck_assert_int_eq(unlink(sd), 0);
	ck_assert_int_eq(rename(away, sd), 0);
	ck_assert_int_eq(prout(fx.b, 4, PR_WE, 0xb, 0xa, 0).status, SCSI_GOOD);
	c = fx_run(fx.a, 0, tur, 6, 0, false);
	ck_sense(c, SK_UNIT_ATTENTION, ASC_REGISTRATIONS_PREEMPTED);
	fx_lu_down();
	fx_lu_up();
	fx_clear_ua(fx.a);
	prin(fx.a, 0, 64);
	ck_assert_uint_eq(conf_get_be32(&fx.buf[4]), 8);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xb);
	prin(fx.a, 1, 64);
	ck_assert_uint_eq(conf_get_be64(&fx.buf[8]), 0xb);
	ck_assert(pr_check(fx.lu));
}
END_TEST

int main(void)
{
	/* one tcase "pr": each test after the first joins it */
	const struct ck_case cases[] = {
		CK_CASE("pr", t01_reserve6_two_nexuses),
		CK_CASE(NULL, t02_register_read_keys),
		CK_CASE(NULL, t03_write_exclusive_access),
		CK_CASE(NULL, t04_exclusive_access_registrants_only),
		CK_CASE(NULL, t05_all_registrants),
		CK_CASE(NULL, t06_preempt_and_clear),
		CK_CASE(NULL, t07_report_capabilities_full_status),
		CK_CASE(NULL, t08_aptpl_persists),
		CK_CASE(NULL, t09_damaged_file_stops_only_its_lu),
		CK_CASE(NULL, t10_register_and_move),
		CK_CASE(NULL, t11_symlinks_not_followed),
		CK_CASE(NULL, t12_aptpl_names_round_trip),
		CK_CASE(NULL, t13_move_transport_ids_checked),
		CK_CASE(NULL, t14_aptpl_save_failure),
	};

	return ck_main(&(struct ck_suite_def){ "scsi_pr", CK_CASES(cases),
		.setup = setup, .teardown = fx_teardown, .timeout = 30 });
}
