/*
 * conf/hist.c - the latency histogram shared by the member statistics of
 * raid/ and the LU and target statistics of target/ (shape in conf/util.h).
 *
 * No state machine: a histogram only accumulates. Invariant: every bucket
 * index computed here is below conf_hist_buckets(), whatever the value, so
 * a record never writes outside the array; the sum of the buckets is the
 * number of records once the writers are quiet.
 *
 * The bucket function is a floating-point-free log-linear scale: the
 * leading bit of the value picks the power of two, the sub_bits bits below
 * it the slice of that power. Both scales of the project (raid's plain log2
 * and target/'s eighths) are the same function with another sub_bits, so
 * their buckets, bounds and percentiles are unchanged by sharing it.
 *
 * Layer: conf helpers (conf/README.md "Layers"). May call: libc only.
 */
#include <errno.h>
#include <string.h>

#include "conf/util.h"

/* below this many microseconds, one bucket per microsecond */
static unsigned linear(const struct conf_hist *h)
{
	return 2u << h->sub_bits;
}

unsigned conf_hist_buckets(const struct conf_hist *h)
{
	return linear(h) + (h->max_exp - h->sub_bits) * (1u << h->sub_bits);
}

int conf_hist_init(struct conf_hist *h, unsigned sub_bits, unsigned max_exp)
{
	if (sub_bits > CONF_HIST_SUB_BITS_MAX || max_exp <= sub_bits ||
	    max_exp > CONF_HIST_EXP_MAX)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->sub_bits = sub_bits;
	h->max_exp = max_exp;
	return 0;
}

unsigned conf_hist_bucket(const struct conf_hist *h, uint64_t us)
{
	unsigned s = h->sub_bits, e;

	if (us < linear(h))
		return (unsigned)us;
	e = 63u - (unsigned)__builtin_clzll(us);   /* > s */
	if (e > h->max_exp)
		return conf_hist_buckets(h) - 1;
	return linear(h) + (e - s - 1u) * (1u << s) +
	       (unsigned)((us >> (e - s)) & ((1u << s) - 1u));
}

uint64_t conf_hist_bucket_high(const struct conf_hist *h, unsigned b)
{
	unsigned s = h->sub_bits, n = conf_hist_buckets(h), e, sub;

	if (b < linear(h))
		return b + 1u;
	if (b >= n)
		b = n - 1;
	e = s + 1u + (b - linear(h)) / (1u << s);
	sub = (b - linear(h)) % (1u << s);
	return (uint64_t)((1u << s) + sub + 1u) << (e - s);
}

uint64_t conf_hist_bucket_count(const struct conf_hist *h, unsigned b)
{
	if (b >= conf_hist_buckets(h))
		return 0;
	return atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
}

void conf_hist_record(struct conf_hist *h, uint64_t ns)
{
	unsigned b = conf_hist_bucket(h, ns / 1000u);
	uint64_t cur;

	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	cur = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
	while (ns > cur && !atomic_compare_exchange_weak_explicit(&h->max_ns, &cur, ns,
								  memory_order_relaxed,
								  memory_order_relaxed))
		;
}

uint64_t conf_hist_percentile(const struct conf_hist *h, unsigned pct)
{
	uint64_t snap[CONF_HIST_BUCKETS_MAX], total = 0, need, seen = 0;
	unsigned n = conf_hist_buckets(h), b;

	/* one snapshot, summed, rather than count: both move under us, and the
	 * walk must see the same numbers the total was made of */
	for (b = 0; b < n; b++) {
		snap[b] = atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
		total += snap[b];
	}
	if (!total)
		return 0;
	if (pct > 100)
		pct = 100;
	/* ceil(total * pct / 100) without overflowing for any total */
	need = total / 100u * pct + ((total % 100u) * pct + 99u) / 100u;
	if (!need)
		need = 1;
	for (b = 0; b < n; b++) {
		seen += snap[b];
		if (seen >= need)
			break;
	}
	return conf_hist_bucket_high(h, b < n ? b : n - 1);
}

uint64_t conf_hist_count(const struct conf_hist *h)
{
	return atomic_load_explicit(&h->count, memory_order_relaxed);
}

uint64_t conf_hist_sum_ns(const struct conf_hist *h)
{
	return atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}

uint64_t conf_hist_max_ns(const struct conf_hist *h)
{
	return atomic_load_explicit(&h->max_ns, memory_order_relaxed);
}
