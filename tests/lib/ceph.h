/*
 * tests/lib/ceph.h - the throwaway single-node Ceph cluster of the network
 * tests that need one (scripts/ceph-cluster.sh in a fresh temp dir), and
 * the SKIPPED/failure lines they print when it cannot run.
 *
 * A test program starts at most one cluster, from main() before its suite
 * runs (every case then shares it), and stops it after the run; an atexit
 * handler stops it as well when the program leaves some other way. Forked
 * test processes never stop it (only the process that started it does).
 *
 * These do not call ck_assert: they run outside any Check test.
 */
#ifndef RTGT_TESTS_CEPH_H
#define RTGT_TESTS_CEPH_H

#include <stddef.h>

#include "tests/lib/ckmain.h"

/* The cluster's DIR (ceph.conf, client.rtgt.keyring, client.admin.keyring),
 * "" while none runs. */
const char *cl_dir(void);
/*
 * Starts a cluster in DIR = /tmp/@prefix.XXXXXX/ceph, or, with CEPH_DIR set
 * in the environment, uses the cluster already running there (started with
 * scripts/ceph-cluster.sh, never stopped by cl_stop). Returns 0 when it
 * runs, > 0 when Ceph cannot run here (built without librbd, packages
 * missing: the reason into @why), < 0 on failure (the script's output on
 * stderr).
 */
int cl_start(const char *prefix, char *why, size_t whylen);
/* Stops the cluster and removes its directories; nothing when none runs or
 * the caller is not the process that started it. */
void cl_stop(void);

/* Runs the shell command line @fmt... (the Ceph CLI: `rbd`, `rados`, with
 * "--conf <cl_dir()>/ceph.conf --name client.admin"); its first output line,
 * without the newline, into @out. Returns its exit code, -EINTR when it was
 * killed, or -errno. */
int cl_run_line(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Bytes the cluster has allocated for image @name of pool "rbd" (`rbd du`),
 * -1 when unknown. */
long long cl_image_used(const char *name);

/* The closing line of a program whose cluster failed to start (rc < 0 from
 * cl_start), counting @checks checks and one failure:
 * "0%: Checks: @checks, Failures: 1: cannot start the Ceph test cluster: ..." */
void cl_print_start_failure(int rc, int checks);
/*
 * main() of a program whose every case needs the cluster: cl_start(@prefix),
 * then ck_main(@def) and cl_stop(). When Ceph cannot run here, prints
 * "0%: Checks: 0, SKIPPED: <reason>" (scripts/run-tests.sh shows it in its
 * summary) and returns EXIT_SUCCESS: nothing passed, nothing failed. When
 * the cluster fails to start: cl_print_start_failure() and EXIT_FAILURE.
 */
int cl_main(const char *prefix, const struct ck_suite_def *def);

#endif
