/*
 * tests/fuzz/fuzz_prout.c - PERSISTENT RESERVE OUT parameter lists and the
 * APTPL state file, on an LU over a small RAID1 volume (the set-up of
 * fuzz_scsi.c) with its state file in the same mkdtemp directory.
 *
 * Input: byte 0 selects the mode.
 *  - 0xff: the rest is written as the LU's state file, then the LU is
 *    created on it. Properties: the LU always comes up (a file it cannot
 *    take stops that LU alone: pr_bad), a loaded state passes pr_check()
 *    and names only valid initiator ports.
 *  - otherwise: a sequence of PR OUT commands, each one record
 *      [0] bits 0-2 service action, bits 3-4 the nexus (a, b, c; 3 = a)
 *      [1] the CDB's scope/type byte
 *      [2..3] the CDB's parameter list length (big endian, 16 bits)
 *      [4..5] n: how many data bytes follow (at most what is left)
 *      [6..]  n bytes of parameter list
 *    at most 16 records. Each command gets a buffer of exactly n bytes
 *    (ASan sees a read past what the transport gave, as with the
 *    REGISTER AND MOVE length that wrapped). After every command:
 *    pr_check(), and READ FULL STATUS well formed, naming only valid
 *    initiator ports. At the end, when APTPL is on, the LU is destroyed
 *    and created again from its file: it must load (not pr_bad) and READ
 *    FULL STATUS must return the very same bytes.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "target/iscsi/iscsi_text.h"
#include "target/scsi/scsi.h"
#include "target/scsi/scsi_int.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_raid1.h"

#define VOL_BYTES (4u << 20)
#define MAX_RECORDS 16
#define FS_MAX 65535u

static const char *const ports[3] = {
	"iqn.1994-05.com.a,i,0x400000000001",
	"iqn.1994-05.com.b,i,0x400000000002",
	"iqn.2026-11.org.ex-ample:a.b-c:d,i,0x23456789abcd",
};
static const uint16_t rels[3] = { 1, 2, 1 };

static struct {
	struct fz_raid1 r;
	char pr[140], tmp[150];
	struct scsi_lu *lu;
	struct scsi_target *t;
	struct scsi_nexus *n[3];
} g;

static void teardown(void)
{
	unlink(g.pr);
	unlink(g.tmp);
	fz_raid1_remove(&g.r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	conf_log_set_level(CONF_LOG_ERROR);
	fz_raid1_init(&g.r, "prout", 16u << 20);
	snprintf(g.pr, sizeof(g.pr), "%s/v0.pr", g.r.dir);
	snprintf(g.tmp, sizeof(g.tmp), "%s.tmp", g.pr);
	atexit(teardown);
	fz_raid1_open_vol(&g.r, "prout", VOL_BYTES);
	return 0;
}

static void run(struct scsi_cmd *c)
{
	fz_scsi_run(g.r.ctx, c);
}

static void up(void)
{
	struct scsi_lu_params lp = { .vol = g.r.vol, .name = "fz/v0", .pr_path = g.pr };

	if (scsi_lu_create(&lp, &g.lu) || scsi_target_create("iqn.2026-11.org.rtgt:fuzz", &g.t) ||
	    scsi_target_add_port(g.t, 1, 1) || scsi_target_add_port(g.t, 2, 2) ||
	    scsi_target_add_lu(g.t, 0, g.lu)) {
		fprintf(stderr, "fuzz_prout: cannot build the target\n");
		abort();
	}
	for (int i = 0; i < 3; i++) {
		FUZZ_CHECK(scsi_nexus_create(g.t, ports[i], rels[i], &g.n[i]) == 0);
		/* the POWER ON unit attention would fail the first command */
		for (int j = 0; j < 8 && !g.lu->pr_bad; j++) {
			struct scsi_cmd c;

			memset(&c, 0, sizeof(c));
			c.target = g.t;
			c.nexus = g.n[i];
			c.cdb_len = 16;
			run(&c);
			if (c.status == SCSI_GOOD)
				break;
		}
	}
}

static void down(void)
{
	for (int i = 0; i < 3; i++)
		scsi_nexus_destroy(g.n[i]);
	scsi_target_destroy(g.t);
	scsi_lu_destroy(g.lu);
	memset(g.n, 0, sizeof(g.n));
	g.t = NULL;
	g.lu = NULL;
}

/* A registrant's name: what a TransportID carried or login let through. */
static bool port_ok(const char *p, size_t max)
{
	char name[ISCSI_NAME_MAX + 1];
	size_t len = strnlen(p, max);
	const char *sep;

	if (len == max)
		return false;
	sep = strstr(p, ",i,0x");
	if (!sep || (size_t)(sep - p) > ISCSI_NAME_MAX || strlen(sep + 5) != 12)
		return false;
	memcpy(name, p, (size_t)(sep - p));
	name[sep - p] = 0;
	return iscsi_name_ok(name);
}

/* READ FULL STATUS from nexus a into @d; returns its length. Properties:
 * GOOD (or, on a stopped LU, NOT READY), descriptors inside the data,
 * every TransportID an iSCSI initiator port. */
static size_t full_status(uint8_t *d)
{
	uint8_t cdb[10] = { 0x5e, 3, 0, 0, 0, 0, 0, (uint8_t)(FS_MAX >> 8), (uint8_t)FS_MAX, 0 };
	struct scsi_cmd c;
	size_t len, p;

	/* unit attentions a service action raised for nexus a come first */
	for (int i = 0; i < 8; i++) {
		memset(&c, 0, sizeof(c));
		c.target = g.t;
		c.nexus = g.n[0];
		memcpy(c.cdb, cdb, sizeof(cdb));
		c.cdb_len = 16;
		c.dir_read = true;
		c.edtl = c.buf_len = FS_MAX;
		c.buf = d;
		run(&c);
		if (c.status != SCSI_CHECK_CONDITION || g.lu->pr_bad)
			break;
	}
	if (g.lu->pr_bad) {
		FUZZ_CHECK(c.status == SCSI_CHECK_CONDITION);
		return 0;
	}
	FUZZ_CHECK(c.status == SCSI_GOOD);
	FUZZ_CHECK(c.data_in_len >= 8 && c.data_in_len <= FS_MAX);
	len = 8 + ((size_t)d[4] << 24 | (size_t)d[5] << 16 | (size_t)d[6] << 8 | d[7]);
	FUZZ_CHECK(len == c.data_in_len);
	for (p = 8; p < len;) {
		size_t tl;

		FUZZ_CHECK(p + 24 <= len);
		tl = (size_t)d[p + 20] << 24 | (size_t)d[p + 21] << 16 | (size_t)d[p + 22] << 8 |
		     d[p + 23];
		FUZZ_CHECK(tl >= 24 && p + 24 + tl <= len);
		FUZZ_CHECK(d[p + 24] == 0x45);
		FUZZ_CHECK(port_ok((const char *)&d[p + 28], tl - 4));
		p += 24 + tl;
	}
	return len;
}

static void prout(const uint8_t *r, const uint8_t *param, size_t n)
{
	struct scsi_cmd c;
	unsigned who = (r[0] >> 3) & 3;

	memset(&c, 0, sizeof(c));
	c.target = g.t;
	c.nexus = g.n[who == 3 ? 0 : who];
	c.cdb[0] = 0x5f;
	c.cdb[1] = r[0] & 7;
	c.cdb[2] = r[1];
	c.cdb[7] = r[2];
	c.cdb[8] = r[3];
	c.cdb_len = 16;
	c.dir_write = n != 0;
	c.edtl = c.buf_len = (uint32_t)n;
	if (n) {
		c.buf = malloc(n);
		FUZZ_CHECK(c.buf != NULL);
		memcpy(c.buf, param, n);
	}
	run(&c);
	free(c.buf);
	FUZZ_CHECK(c.status == SCSI_GOOD || c.status == SCSI_RESERVATION_CONFLICT ||
		   c.status == SCSI_CHECK_CONDITION);
	pthread_mutex_lock(&g.lu->lock);
	FUZZ_CHECK(pr_check(g.lu));
	pthread_mutex_unlock(&g.lu->lock);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t before[FS_MAX], after[FS_MAX];
	size_t off = 1, len;
	unsigned recs = 0;

	if (size < 1)
		return 0;
	unlink(g.pr);
	unlink(g.tmp);
	if (data[0] == 0xff) {
		FILE *f = fopen(g.pr, "w");

		FUZZ_CHECK(f != NULL);
		FUZZ_CHECK(fwrite(data + 1, 1, size - 1, f) == size - 1);
		FUZZ_CHECK(fclose(f) == 0);
		up();
		FUZZ_CHECK(pr_check(g.lu));
		full_status(before);
		down();
		return 0;
	}

	up();
	while (off + 6 <= size && recs++ < MAX_RECORDS) {
		const uint8_t *r = data + off;
		size_t n = (size_t)r[4] << 8 | r[5];

		off += 6;
		if (n > size - off)
			n = size - off;
		prout(r, data + off, n);
		off += n;
		full_status(before);
	}
	len = full_status(before);
	if (g.lu->pr_aptpl) {
		/* the state file is the state: a restart gives it back exactly */
		down();
		up();
		FUZZ_CHECK(!g.lu->pr_bad);
		FUZZ_CHECK(full_status(after) == len);
		FUZZ_CHECK(memcmp(before, after, len) == 0);
	}
	down();
	return 0;
}
