/*
 * tests/lib/net_fixture.c - see net_fixture.h.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* One Checks line over @n runners, in Check's own format (run-tests.sh
 * collects it), with every failure listed. */
static void report(SRunner *const *runners, unsigned n)
{
	int checks = 0, failures = 0, errors = 0;

	for (unsigned i = 0; i < n; i++) {
		TestResult **trs = srunner_failures(runners[i]);
		int nf = srunner_ntests_failed(runners[i]);

		checks += srunner_ntests_run(runners[i]);
		for (int k = 0; k < nf; k++) {
			bool err = tr_rtype(trs[k]) == CK_ERROR;

			if (err)
				errors++;
			else
				failures++;
			printf("%s:%d:%c:%s: %s\n", tr_lfile(trs[k]), tr_lno(trs[k]), err ? 'E' : 'F',
			       tr_tcname(trs[k]), tr_msg(trs[k]));
		}
		free(trs);
	}
	printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
	       checks ? 100 * (checks - failures - errors) / checks : 0, checks, failures, errors);
	fflush(stdout);
}

int nf_main_shared(struct harness_daemon *d, const char *prog,
		   int (*conf)(struct harness_daemon *d), Suite *cases, Suite *final)
{
	SRunner *sr[2];
	int failed, rc;

	if (harness_init(d)) {
		fprintf(stderr, "%s: cannot create a temp dir\n", prog);
		return EXIT_FAILURE;
	}
	harness_fini_at_exit(d);
	rc = conf(d);
	if (!rc)
		rc = harness_start(d);
	if (rc) {
		fprintf(stderr, "%s: rtgtd did not start: %s (exit %d)\n", prog, strerror(-rc),
			d->last_status);
		harness_dump_log(d, stderr, 40);
		harness_fini(d);
		return EXIT_FAILURE;
	}
	sr[0] = srunner_create(cases);
	srunner_run_all(sr[0], CK_NORMAL);
	failed = srunner_ntests_failed(sr[0]);
	sr[1] = srunner_create(final);
	srunner_set_fork_status(sr[1], CK_NOFORK);
	srunner_run_all(sr[1], CK_NORMAL);
	failed += srunner_ntests_failed(sr[1]);
	if (failed) {
		fflush(stdout);
		harness_dump_log(d, stderr, 25);
		fflush(stderr);
	}
	report(sr, 2);
	srunner_free(sr[0]);
	srunner_free(sr[1]);
	harness_fini(d);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
