/*
 * tests/lib/lun_io.c - see lun_io.h.
 */
#include <check.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/lun_io.h"

void lio_expect(struct iscsi_context *c, int lun, uint64_t off, const uint8_t *want,
		uint32_t len)
{
	struct scsi_task *t = iscsi_read16_sync(c, lun, off / 512, len, 512, 0, 0, 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD,
		      "READ 16 at %llu len %u: %s (status %d sense %x/%04x)",
		      (unsigned long long)off, len, t ? "bad status" : iscsi_get_error(c),
		      t ? t->status : -1, t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	ck_assert_msg(t->datain.size == (int)len, "READ 16 at %llu: %d bytes, expected %u",
		      (unsigned long long)off, t->datain.size, len);
	ck_assert_msg(memcmp(t->datain.data, want, len) == 0,
		      "data read at %llu (%u bytes) differs from what was expected",
		      (unsigned long long)off, len);
	scsi_free_scsi_task(t);
}
