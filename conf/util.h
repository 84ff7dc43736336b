/*
 * conf/util.h - the small helpers every module of rtgt shares: the one
 * monotonic clock, the one latency histogram, big-endian accessors for wire
 * and CDB fields, and the invariant policy (RTGT_CHECK).
 *
 * conf/ is the lowest module (it calls nothing else of the project), so
 * whatever lives here can be used from net/, raid/, target/ and the tools
 * without bending the dependency rules; one copy of each helper means one
 * behaviour to test (tests/unit/test_clock.c, test_hist.c, test_util.c).
 */
#ifndef RTGT_CONF_UTIL_H
#define RTGT_CONF_UTIL_H

#include <stdatomic.h>
#include <stdint.h>

/* ---- clock (clock.c) ---- */

/* CLOCK_MONOTONIC: for intervals, timeouts and latencies, never for dates
 * (conf_log() stamps lines with the wall clock on its own). */
uint64_t conf_mono_ns(void);
uint64_t conf_mono_us(void);
uint64_t conf_mono_ms(void);

/* ---- latency histogram (hist.c) ---- */

/*
 * Buckets over microseconds, of one of two shapes picked at init by
 * sub_bits (0..CONF_HIST_SUB_BITS_MAX):
 *   - below 2^(sub_bits+1) us one bucket per microsecond, bucket i = [i, i+1);
 *   - above, every power of two [2^e, 2^(e+1)) is cut into 2^sub_bits equal
 *     buckets, up to e = max_exp; anything longer lands in the last bucket.
 * sub_bits 0 is the plain log2 histogram (bucket b = [2^(b-1), 2^b), bucket 0
 * "under 1 us"); sub_bits 3 keeps every bucket within 1/8 of its value.
 * A bucket is reported by its exclusive upper bound (conf_hist_bucket_high),
 * and so are percentiles: "p99 = 1024" means 99% took less than 1024 us.
 *
 * record() is lock-free (relaxed atomics) and may race with readers, which
 * then see a histogram a few records old or new; it is a statistic.
 * A zeroed struct is a usable (coarse) histogram, but callers init it.
 */
#define CONF_HIST_SUB_BITS_MAX 3u
#define CONF_HIST_EXP_MAX 31u
#define CONF_HIST_BUCKETS_MAX                                              \
	((2u << CONF_HIST_SUB_BITS_MAX) +                                  \
	 (CONF_HIST_EXP_MAX - CONF_HIST_SUB_BITS_MAX) * (1u << CONF_HIST_SUB_BITS_MAX))

struct conf_hist {
	unsigned sub_bits;              /* set by init, then read-only */
	unsigned max_exp;               /* set by init, then read-only */
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t max_ns;
	_Atomic uint64_t bucket[CONF_HIST_BUCKETS_MAX];
};

/* Empties @h and gives it its shape. -EINVAL when sub_bits is over
 * CONF_HIST_SUB_BITS_MAX or max_exp is not in sub_bits+1..CONF_HIST_EXP_MAX. */
int conf_hist_init(struct conf_hist *h, unsigned sub_bits, unsigned max_exp);
unsigned conf_hist_buckets(const struct conf_hist *h);
/* the bucket of a value of @us microseconds */
unsigned conf_hist_bucket(const struct conf_hist *h, uint64_t us);
/* exclusive upper bound of bucket @b in us (the last bucket's own range) */
uint64_t conf_hist_bucket_high(const struct conf_hist *h, unsigned b);
uint64_t conf_hist_bucket_count(const struct conf_hist *h, unsigned b);
/* One sample of @ns nanoseconds: bucketed by whole microseconds, summed and
 * maxed in nanoseconds. Thread-safe. */
void conf_hist_record(struct conf_hist *h, uint64_t ns);
/* The upper bound of the smallest bucket holding at least @pct percent
 * (ceil(count * pct / 100), at least one sample) of the samples; 0 when
 * empty. @pct over 100 counts as 100. */
uint64_t conf_hist_percentile(const struct conf_hist *h, unsigned pct);
uint64_t conf_hist_count(const struct conf_hist *h);
uint64_t conf_hist_sum_ns(const struct conf_hist *h);
uint64_t conf_hist_max_ns(const struct conf_hist *h);

/* ---- big-endian accessors (SCSI CDBs and data, iSCSI headers) ---- */

static inline uint16_t conf_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t conf_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t conf_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t conf_get_be64(const uint8_t *p)
{
	return (uint64_t)conf_get_be32(p) << 32 | conf_get_be32(p + 4);
}

static inline void conf_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* the low 24 bits of @v; the top byte is dropped */
static inline void conf_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void conf_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void conf_put_be64(uint8_t *p, uint64_t v)
{
	conf_put_be32(p, (uint32_t)(v >> 32));
	conf_put_be32(p + 4, (uint32_t)v);
}

/* ---- invariants (util.c) ---- */

/*
 * RTGT_CHECK(expr): the one policy for a state machine's invariant checker
 * (every state machine documents one at the top of its file). @expr is
 * evaluated once, in every build.
 *   - Debug builds (-DRTGT_DEBUG: the SAN, TSAN and fuzz builds): a false
 *     @expr prints "FILE:LINE: invariant failed: expr" on stderr and aborts,
 *     like assert(), so that the test or fuzz input that broke it stops there.
 *   - Release builds: it logs the same text as an ERROR and counts it in a
 *     process-wide counter (conf_invariant_failures(), in `rtgtctl status`
 *     and the metrics) and goes on: a daemon serving I/O is not taken down by
 *     a bookkeeping bug, but the bug does not go unseen either.
 */
#ifdef RTGT_DEBUG
#define RTGT_CHECK(expr)                                                       \
	((expr) ? (void)0 : conf_invariant_abort(__FILE__, __LINE__, #expr))
#else
#define RTGT_CHECK(expr)                                                       \
	((expr) ? (void)0 : conf_invariant_failed(__FILE__, __LINE__, #expr))
#endif

/* what RTGT_CHECK calls on a failure; also callable directly (the tests) */
void conf_invariant_failed(const char *file, int line, const char *expr);
_Noreturn void conf_invariant_abort(const char *file, int line, const char *expr);
/* failures counted since the process started */
uint64_t conf_invariant_failures(void);

#endif
