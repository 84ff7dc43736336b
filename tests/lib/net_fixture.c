/*
 * tests/lib/net_fixture.c - see net_fixture.h.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/net_fixture.h"

void nf_setup(struct harness_daemon *d)
{
	ck_assert_int_eq(harness_init(d), 0);
	harness_fini_at_exit(d);
}

void nf_start(struct harness_daemon *d)
{
	int rc = harness_start(d);

	if (rc) {
		harness_dump_log(d, stderr, 40);
		ck_abort_msg("rtgtd did not start: %s (exit %d)", strerror(-rc), d->last_status);
	}
}

void nf_stop_expect_0(struct harness_daemon *d, const char *when)
{
	int rc = harness_stop(d);

	if (rc != 0)
		harness_dump_log(d, stderr, 40);
	ck_assert_msg(rc == 0, "%s%srtgtd exited %d on SIGTERM, expected 0", when ? when : "",
		      when ? ": " : "", rc);
}

struct iscsi_context *nf_login(const struct harness_daemon *d, uint16_t port,
			       const struct harness_login *o)
{
	struct iscsi_context *c;
	char err[512];

	c = harness_iscsi_login(port ? port : d->port, o, err, sizeof(err));
	if (!c)
		harness_dump_log(d, stderr, 30);
	ck_assert_msg(c != NULL, "login as %s to %s failed: %s",
		      o->initiator ? o->initiator : HARNESS_INITIATOR,
		      o->discovery ? "a discovery session" : o->target ? o->target : HARNESS_TARGET,
		      err);
	return c;
}

void nf_capacity(struct iscsi_context *c, uint64_t *blocks, uint32_t *bs)
{
	struct scsi_readcapacity16 *rc16;
	struct scsi_task *t = iscsi_readcapacity16_sync(c, 0);

	ck_assert_msg(t != NULL, "READ CAPACITY 16: %s", iscsi_get_error(c));
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "READ CAPACITY 16 status %d", t->status);
	rc16 = scsi_datain_unmarshall(t);
	ck_assert_msg(rc16 != NULL, "READ CAPACITY 16: cannot parse the data");
	*blocks = rc16->returned_lba + 1;
	*bs = rc16->block_length;
	scsi_free_scsi_task(t);
}
