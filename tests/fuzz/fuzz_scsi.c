/*
 * tests/fuzz/fuzz_scsi.c - SCSI CDB dispatch: scsi_cmd_exec() on an LU backed
 * by a small RAID1 volume on two sparse files in a mkdtemp directory, the
 * same set-up as tests/unit/scsi_fixture.h.
 *
 * Input: byte 0 flags (bit0 second nexus, bit1 W bit, bit2 R bit, bits 3-4
 * task attribute, bit5 an unmapped LUN, bit6 a 32-byte CDB as with an
 * extended-CDB AHS, bit7 keep the power-on unit attention), bytes 1..3 the Expected Data Transfer Length, then the
 * CDB (16 or 32 bytes), then data-out (zero-padded to the EDTL).
 *
 * The data buffer is allocated with exactly EDTL bytes so AddressSanitizer
 * sees any access past what the transport gave. With W it holds the
 * data-out (every byte received, as the transport guarantees); without W it
 * holds poison, a 16-byte token drawn afresh for every input (so libFuzzer
 * cannot learn it and send it as data-out) repeated over the buffer, which
 * stands for stale heap bytes no initiator sent. The target, LU and nexuses
 * are built afresh for every input (reservations, unit attentions and mode
 * pages do not leak from one input into the next, so a saved crash
 * reproduces alone); the volume's data does persist.
 *
 * Properties: done runs exactly once and within a bounded number of polls,
 * data_in_len <= buf_len, a CHECK CONDITION carries fixed or descriptor
 * sense within SCSI_SENSE_MAX, the status is a SAM status. No stale byte
 * leaves: a command that did not succeed reports no data-in, the data-in it
 * reports holds no poison, and after a command without W the poison is
 * nowhere on the medium (member 0's file, mapped, is searched for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "target/scsi/scsi.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_raid1.h"

#define VOL_BYTES (4u << 20)
#define MAX_EDTL (256u << 10)
#define HDR 4u

static struct {
	struct fz_raid1 r;
	char pr[140];
	const uint8_t *m0_map;  /* member 0's file, read-only */
	size_t m0_len;
	uint8_t poison[16];
} g;

static void poison_fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = g.poison[i % sizeof(g.poison)];
}

/* Whether the first @len bytes of a buffer still hold poison where it was
 * put: a whole aligned token, or for a short reply its first 4+ bytes. */
static bool holds_poison(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + sizeof(g.poison) <= len; i += sizeof(g.poison))
		if (!memcmp(p + i, g.poison, sizeof(g.poison)))
			return true;
	return len >= 4 && len < sizeof(g.poison) && !memcmp(p, g.poison, len);
}

static void map_member0(void)
{
	struct stat st;
	int fd = open(g.r.m0, O_RDONLY);
	void *m;

	if (fd < 0 || fstat(fd, &st) || st.st_size <= 0) {
		perror("fuzz_scsi: member 0");
		exit(1);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("fuzz_scsi: mmap member 0");
		exit(1);
	}
	g.m0_map = m;
	g.m0_len = (size_t)st.st_size;
}

static void teardown(void)
{
	if (g.m0_map)
		munmap((void *)g.m0_map, g.m0_len);
	unlink(g.pr);
	fz_raid1_remove(&g.r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	conf_log_set_level(CONF_LOG_ERROR);
	fz_raid1_init(&g.r, "scsi", 16u << 20);
	snprintf(g.pr, sizeof(g.pr), "%s/v0.pr", g.r.dir);
	atexit(teardown);
	fz_raid1_open_vol(&g.r, "scsi", VOL_BYTES);
	map_member0();
	return 0;
}

static void run(struct scsi_cmd *c)
{
	fz_scsi_run(g.r.ctx, c);
}

/* A fresh nexus starts with a POWER ON unit attention that fails every
 * command but a few: clear it, or the fuzzer never gets past it. */
static void clear_ua(struct scsi_target *t, struct scsi_nexus *n)
{
	struct scsi_cmd c;

	for (int i = 0; i < 8; i++) {
		memset(&c, 0, sizeof(c));
		c.target = t;
		c.nexus = n;
		c.cdb_len = 16;   /* TEST UNIT READY: all zero */
		run(&c);
		if (c.status == SCSI_GOOD)
			return;
	}
	FUZZ_CHECK(!"unit attentions do not clear");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsi_lu_params lp = { .vol = g.r.vol, .name = "fz/v0", .pr_path = g.pr };
	struct scsi_lu *lu = NULL;
	struct scsi_target *t = NULL;
	struct scsi_nexus *na = NULL, *nb = NULL;
	struct scsi_cmd c;
	unsigned cdb_len;
	uint32_t edtl;
	size_t dlen;

	if (size < HDR)
		return 0;
	cdb_len = (data[0] & 0x40) ? SCSI_CDB_MAX : 16;
	if (size < HDR + cdb_len)
		return 0;
	edtl = ((uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3]) % (MAX_EDTL + 1);

	unlink(g.pr);
	if (scsi_lu_create(&lp, &lu) || scsi_target_create("iqn.2026-11.org.rtgt:fuzz", &t) ||
	    scsi_target_add_port(t, 1, 1) || scsi_target_add_port(t, 2, 2) ||
	    scsi_target_add_lu(t, 0, lu) ||
	    scsi_nexus_create(t, "iqn.1994-05.com.a,i,0x400000000001", 1, &na) ||
	    scsi_nexus_create(t, "iqn.1994-05.com.b,i,0x400000000002", 2, &nb)) {
		fprintf(stderr, "fuzz_scsi: cannot build the target\n");
		abort();
	}
	/* bit 7: keep the unit attentions (the path of a first command) */
	if (!(data[0] & 0x80)) {
		clear_ua(t, na);
		clear_ua(t, nb);
	}

	memset(&c, 0, sizeof(c));
	c.target = t;
	c.nexus = (data[0] & 1) ? nb : na;
	c.lun = (data[0] & 0x20) ? 1 : 0;
	memcpy(c.cdb, data + HDR, cdb_len);
	c.cdb_len = (uint8_t)cdb_len;
	c.task_attr = (data[0] >> 3) & 3;
	c.dir_write = data[0] & 2;
	c.dir_read = data[0] & 4;
	c.edtl = edtl;
	c.buf_len = edtl;
	FUZZ_CHECK(getrandom(g.poison, sizeof(g.poison), 0) == sizeof(g.poison));
	if (edtl) {
		c.buf = calloc(1, edtl);
		FUZZ_CHECK(c.buf != NULL);
		dlen = size - HDR - cdb_len;
		if (c.dir_write)
			memcpy(c.buf, data + HDR + cdb_len, dlen < edtl ? dlen : edtl);
		else
			poison_fill(c.buf, edtl);
	}
	run(&c);
	FUZZ_CHECK(c.data_in_len <= c.buf_len);
	if (c.status != SCSI_GOOD && c.status != SCSI_CONDITION_MET)
		FUZZ_CHECK(c.data_in_len == 0);
	if (c.buf && !c.dir_write) {
		FUZZ_CHECK(!holds_poison(c.buf, c.data_in_len));
		FUZZ_CHECK(!memmem(g.m0_map, g.m0_len, g.poison, sizeof(g.poison)));
	}
	switch (c.status) {
	case SCSI_GOOD:
	case SCSI_CONDITION_MET:
	case SCSI_BUSY:
	case SCSI_RESERVATION_CONFLICT:
	case SCSI_TASK_SET_FULL:
	case SCSI_ACA_ACTIVE:
	case SCSI_TASK_ABORTED:
		break;
	case SCSI_CHECK_CONDITION:
		FUZZ_CHECK(c.sense_len >= 8 && c.sense_len <= SCSI_SENSE_MAX);
		FUZZ_CHECK((c.sense[0] & 0x7f) >= 0x70 && (c.sense[0] & 0x7f) <= 0x73);
		break;
	default:
		FUZZ_CHECK(!"status is not a SAM status");
	}
	if (c.status != SCSI_CHECK_CONDITION)
		FUZZ_CHECK(c.sense_len <= SCSI_SENSE_MAX);

	free(c.buf);
	scsi_nexus_destroy(na);
	scsi_nexus_destroy(nb);
	scsi_target_destroy(t);
	scsi_lu_destroy(lu);
	return 0;
}
