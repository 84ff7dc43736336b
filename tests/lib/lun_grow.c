/*
 * tests/lib/lun_grow.c - see lun_grow.h.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/lun_grow.h"
#include "tests/lib/rtgtctl_json.h"

uint64_t lg_capacity(struct iscsi_context *c, int lun)
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
int lg_tur(struct iscsi_context *c, int lun, int *ascq)
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
void lg_drain_ua(struct iscsi_context *c, int lun)
{
	int ascq;

	for (int i = 0; i < 8; i++)
		if (lg_tur(c, lun, &ascq) == SCSI_STATUS_GOOD)
			return;
	ck_abort_msg("unit attentions never end");
}

void lg_pattern(uint8_t *b, size_t len, uint64_t lba, unsigned gen)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = (lba + i / 512) * 0x9e3779b97f4a7c15ull ^ gen;

		memcpy(b + i, &v, 8);
	}
}

int lg_xfer(struct iscsi_context *c, bool write, uint64_t lba, uint8_t *buf, size_t len,
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

void *lg_load_main(void *arg)
{
	struct lg_loader *l = arg;
	uint8_t w[65536], r[65536];
	unsigned n = (unsigned)(l->bytes / sizeof(w));

	for (unsigned k = 0; !atomic_load(&l->stop); k++) {
		unsigned piece = (k * 37u) % n;
		uint64_t lba = (uint64_t)piece * sizeof(w) / 512;
		int st, ascq, tries;

		lg_pattern(w, sizeof(w), lba, k + 1);
		for (tries = 0; tries < 3; tries++) {
			st = lg_xfer(l->c, true, lba, w, sizeof(w), &ascq);
			if (st != SCSI_STATUS_CHECK_CONDITION || ascq != LG_ASC_CAP_CHANGED)
				break;
			l->ua++;
		}
		if (st == SCSI_STATUS_GOOD) {
			l->gen[piece] = k + 1;
			for (tries = 0; tries < 3; tries++) {
				st = lg_xfer(l->c, false, lba, r, sizeof(r), &ascq);
				if (st != SCSI_STATUS_CHECK_CONDITION || ascq != LG_ASC_CAP_CHANGED)
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
void lg_grow_under_load(struct lg_loader *l, const struct harness_daemon *d, const char *target,
			const char *size, uint64_t bytes)
{
	char out[4096], want[64];
	pthread_t th;
	unsigned ops;

	ck_assert_int_eq(pthread_create(&th, NULL, lg_load_main, l), 0);
	while (atomic_load(&l->ops) < 20)
		usleep(10000);
	ck_assert_int_eq(rj_ctl(d, out, sizeof(out), "resize", target, "0", size, NULL), 0);
	snprintf(want, sizeof(want), "grown to %llu bytes", (unsigned long long)bytes);
	ck_assert_msg(strstr(out, want), "rtgtctl said: %s", out);
	ops = atomic_load(&l->ops);
	while (atomic_load(&l->ops) < ops + 20)
		usleep(10000);
	atomic_store(&l->stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(l->errors == 0, "%u errors, first: %s", l->errors, l->first_error);
	ck_assert_uint_eq(l->wrong, 0);
	ck_assert_uint_eq(l->ua, 1);
}

void lg_verify_pieces(struct iscsi_context *c, const struct lg_loader *l)
{
	uint8_t w[65536], r[65536];
	int ascq;

	for (unsigned piece = 0; piece < l->bytes / sizeof(w); piece++) {
		uint64_t lba = (uint64_t)piece * sizeof(w) / 512;

		if (!l->gen[piece])
			continue;
		lg_pattern(w, sizeof(w), lba, l->gen[piece]);
		ck_assert_int_eq(lg_xfer(c, false, lba, r, sizeof(r), &ascq), SCSI_STATUS_GOOD);
		ck_assert_msg(!memcmp(w, r, sizeof(w)), "piece %u lost its data", piece);
	}
}

void lg_write_read(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen)
{
	uint8_t *w = malloc(len), *r = malloc(len);
	int ascq;

	lg_pattern(w, len, lba, gen);
	ck_assert_int_eq(lg_xfer(c, true, lba, w, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert_int_eq(lg_xfer(c, false, lba, r, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert(!memcmp(w, r, len));
	free(w);
	free(r);
}

void lg_read_expect(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen)
{
	uint8_t *w = malloc(len), *r = malloc(len);
	int ascq;

	lg_pattern(w, len, lba, gen);
	ck_assert_int_eq(lg_xfer(c, false, lba, r, len, &ascq), SCSI_STATUS_GOOD);
	ck_assert_msg(!memcmp(w, r, len), "data at LBA %llu changed", (unsigned long long)lba);
	free(w);
	free(r);
}

