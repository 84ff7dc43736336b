/*
 * tests/lib/net_fixture.h - the checked steps every network test repeats
 * around tests/lib/harness.h: make the daemon's directory, start rtgtd, stop
 * it expecting exit 0, log in, read the capacity.
 *
 * Unlike harness.h, these call ck_assert/ck_abort_msg: each one fails the
 * running Check test (after printing the tail of rtgtd.log where the daemon
 * is to blame). Call them from the test's own thread only.
 */
#ifndef RTGT_TESTS_NET_FIXTURE_H
#define RTGT_TESTS_NET_FIXTURE_H

#include <check.h>
#include <stdint.h>

#include "tests/lib/harness.h"

struct iscsi_context;

/* harness_init(@d) (must succeed) and harness_fini_at_exit(@d): for a
 * checked fixture's setup. */
void nf_setup(struct harness_daemon *d);
/* harness_start(@d); on failure prints 40 lines of the log and fails. */
void nf_start(struct harness_daemon *d);
/* harness_stop(@d) must return 0 (SIGTERM, clean exit); else prints 40
 * lines of the log and fails, the message prefixed with "@when: " unless
 * @when is NULL. */
void nf_stop_expect_0(struct harness_daemon *d, const char *when);
/* harness_iscsi_login() to @port (0: d->port) must succeed; else prints 30
 * lines of the log and fails naming the initiator and the target. */
struct iscsi_context *nf_login(const struct harness_daemon *d, uint16_t port,
			       const struct harness_login *o);
/* READ CAPACITY 16 of LUN 0 must succeed: the block count and size. */
void nf_capacity(struct iscsi_context *c, uint64_t *blocks, uint32_t *bs);

/* main() of a program whose cases share one rtgtd: harness_init(@d), @conf
 * writes its configuration (0 or -errno), rtgtd starts; then @cases run
 * (forked, CK_NORMAL) and @final in this process, since only rtgtd's parent
 * sees its exit status (the case that stops it expecting 0). On a failure
 * the tail of rtgtd.log is printed. Prints one Checks line over both
 * suites. @prog names the program in messages. Returns the exit code. */
int nf_main_shared(struct harness_daemon *d, const char *prog,
		   int (*conf)(struct harness_daemon *d), Suite *cases, Suite *final);

#endif
