/*
 * conf/clock.c - the one monotonic clock of the process.
 *
 * CLOCK_MONOTONIC never jumps with settimeofday() or NTP steps, so intervals
 * taken from it (latencies, timeouts, rate limits) stay right across a clock
 * change. The three units are one reading each, truncated: callers that
 * compare readings must take them in the same unit.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: libc only.
 */
#include <time.h>

#include "conf/util.h"

uint64_t conf_mono_ns(void)
{
	struct timespec ts;

	/* cannot fail for CLOCK_MONOTONIC with a valid pointer (Linux) */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t conf_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t conf_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000u;
}
