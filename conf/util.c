/*
 * conf/util.c - the invariant policy behind RTGT_CHECK (conf/util.h).
 *
 * No state machine lives here. The counter is the only state: one atomic
 * that any thread may bump, read by the daemon's status and metrics.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: log.c, libc.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "conf/conf.h"
#include "conf/util.h"

static _Atomic uint64_t invariant_failures;

void conf_invariant_failed(const char *file, int line, const char *expr)
{
	atomic_fetch_add_explicit(&invariant_failures, 1, memory_order_relaxed);
	conf_log(CONF_LOG_ERROR, "check", "%s:%d: invariant failed: %s", file, line, expr);
}

void conf_invariant_abort(const char *file, int line, const char *expr)
{
	atomic_fetch_add_explicit(&invariant_failures, 1, memory_order_relaxed);
	/* straight to stderr, as assert() does: the logger's lock may be the
	 * very thing whose holder broke the invariant */
	fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, expr);
	fflush(stderr);
	abort();
}

uint64_t conf_invariant_failures(void)
{
	return atomic_load_explicit(&invariant_failures, memory_order_relaxed);
}
