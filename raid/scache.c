/*
 * raid/scache.c - the stripe cache of a raid5/6 pool: rows that a streaming
 * write left partly written, held in memory until the next sequential write
 * completes them into a full stripe (written without any read), or until they
 * are flushed (SYNCHRONIZE CACHE, FUA, age, close).
 *
 * Layer: bitmap and stripe cache (raid/README.md "Layers"). May call:
 * ioctx.c, lock.c, parity.c, geom.c, conf/; its write-outs are io.c's.
 *
 * Entry states: absent -> DIRTY (raid_sc_merge with create, by the tail row of
 * a write of at least a full stripe) -> DIRTY (merges by later writes) ->
 * TAKEN (raid_sc_take: moved to the out list with the next write-out number,
 * owned by the request that writes it out or supersedes it with a full
 * stripe) -> raid_sc_done(): freed when the write-out succeeded, or
 * FAILED = DIRTY again with err set (back on the list: reads still overlay
 * it, a FLUSH writes it out again, the age-based write-out only after
 * retry_ms) when it failed and the caller keeps it.
 * Deferred errors: a write acknowledged from the cache sets the entry's
 * unreported flag (io.c, under the row lock); a failed write-out (kept or
 * not) of an entry with the flag set bumps its volume's write_failures once
 * and clears the flag, so retries failing over the same data count once
 * and data acknowledged after a failure makes the next failure count.
 * Every merge, take and done happens while the caller holds the exclusive
 * stripe lock of the row, so an entry's data only changes under that lock
 * and a kept entry never meets another one of its row; readers (holding a
 * shared lock) copy its valid sectors over what they read from the members.
 * The mutex protects the list, the out list and the waiting FLUSHes, which
 * come from every reactor of the pool.
 * FLUSH (raid_sc_wait): a waiter records seq = the last write-out number
 * handed out; it is woken (raid_defer to its own ctx) once no taken entry
 * with seq <= its seq is left, with the first error of those write-outs.
 * Invariant (raid_sc_check): at most one entry per row on the list, n ==
 * list length, n_out == out list length, n + n_out <= max, nvalid == number
 * of set bits, every entry on the out list has 0 < seq <= sc->seq, every
 * waiter waits for at least one of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/util.h"
#include "raid/ioctx.h"
#include "raid/raid_int.h"

/* A failed write-out is tried again by the age-based write-out only this
 * long after the failure (a FLUSH tries at once): a row that cannot be
 * written (degraded and not resynced) does not cost a member pass and an
 * error line every 100 ms. */
#define RAID_SC_RETRY_MS 5000u

void raid_sc_init(struct raid_scache *sc, uint64_t stripe_bytes, unsigned max)
{
	pthread_mutex_init(&sc->mu, NULL);
	sc->head = NULL;
	atomic_store(&sc->n, 0);
	sc->max = max;
	sc->stripe = stripe_bytes;
	sc->out = NULL;
	sc->n_out = 0;
	sc->seq = 0;
	sc->waiters = NULL;
	atomic_store(&sc->n_failed, 0);
}

void raid_sc_ent_free(struct raid_sc_ent *e)
{
	if (!e)
		return;
	free(e->data);
	free(e->valid);
	free(e);
}

void raid_sc_destroy(struct raid_scache *sc)
{
	/* at close nothing is in flight any more: out is empty */
	while (sc->head) {
		struct raid_sc_ent *e = sc->head;

		sc->head = e->next;
		raid_sc_ent_free(e);
	}
	while (sc->out) {
		struct raid_sc_ent *e = sc->out;

		sc->out = e->next;
		raid_sc_ent_free(e);
	}
	pthread_mutex_destroy(&sc->mu);
}

static struct raid_sc_ent *find(struct raid_scache *sc, uint64_t row)
{
	struct raid_sc_ent *e;

	for (e = sc->head; e; e = e->next)
		if (e->row == row)
			return e;
	return NULL;
}

/* Copy [off, off+len) into @e and mark it valid. */
void raid_sc_ent_put(struct raid_sc_ent *e, uint64_t off, uint64_t len, const uint8_t *src)
{
	memcpy(e->data + off, src, len);
	for (uint64_t s = off / 512; s < (off + len) / 512; s++) {
		if (!(e->valid[s / 8] & (1u << (s % 8)))) {
			e->valid[s / 8] |= (uint8_t)(1u << (s % 8));
			e->nvalid++;
		}
	}
}

bool raid_sc_ent_full(const struct raid_scache *sc, const struct raid_sc_ent *e)
{
	return e->nvalid == sc->stripe / 512;
}

bool raid_sc_ent_valid(const struct raid_sc_ent *e, uint64_t sector)
{
	return e->valid[sector / 8] & (1u << (sector % 8));
}

struct raid_sc_ent *raid_sc_merge(struct raid_scache *sc, uint64_t row, uint64_t off, uint64_t len,
				  const uint8_t *src, bool create)
{
	struct raid_sc_ent *e;

	pthread_mutex_lock(&sc->mu);
	e = find(sc, row);
	if (!e && create && atomic_load(&sc->n) + sc->n_out < sc->max) {
		e = calloc(1, sizeof(*e));
		if (e) {
			e->data = raid_alloc_nz(sc->stripe);   /* valid[] says what is set */
			e->valid = calloc(1, sc->stripe / 512 / 8 + 1);
			if (!e->data || !e->valid) {
				raid_sc_ent_free(e);
				e = NULL;
			}
		}
		if (e) {
			e->row = row;
			e->t_ms = conf_mono_ms();
			e->next = sc->head;
			sc->head = e;
			atomic_fetch_add(&sc->n, 1);
		}
	}
	pthread_mutex_unlock(&sc->mu);
	/* the caller holds the row's exclusive lock: e's content is ours */
	if (e)
		raid_sc_ent_put(e, off, len, src);
	return e;
}

struct raid_sc_ent *raid_sc_take(struct raid_scache *sc, uint64_t row)
{
	struct raid_sc_ent **pp, *e = NULL;

	if (!atomic_load(&sc->n))
		return NULL;
	pthread_mutex_lock(&sc->mu);
	for (pp = &sc->head; *pp; pp = &(*pp)->next) {
		if ((*pp)->row == row) {
			e = *pp;
			*pp = e->next;
			atomic_fetch_sub(&sc->n, 1);
			e->seq = ++sc->seq;
			e->next = sc->out;
			sc->out = e;
			sc->n_out++;
			break;
		}
	}
	pthread_mutex_unlock(&sc->mu);
	return e;
}

/* Whether a taken entry with seq <= @seq is still out. Under mu. */
static bool out_upto(const struct raid_scache *sc, uint64_t seq)
{
	for (const struct raid_sc_ent *e = sc->out; e; e = e->next)
		if (e->seq <= seq)
			return true;
	return false;
}

void raid_sc_done(struct raid_scache *sc, struct raid_sc_ent *e, int err, bool keep)
{
	struct raid_sc_ent **pp;
	struct raid_sc_waiter **wp, *run = NULL;

	if (!e)
		return;
	pthread_mutex_lock(&sc->mu);
	for (pp = &sc->out; *pp && *pp != e; pp = &(*pp)->next)
		;
	if (*pp) {
		*pp = e->next;
		sc->n_out--;
	}
	if (err) {
		atomic_fetch_add(&sc->n_failed, 1);
		/* acknowledged data not on the members that no earlier failure
		 * covered: the initiators get a deferred error (target/scsi) */
		if (e->unreported && e->vol)
			atomic_fetch_add(&e->vol->write_failures, 1);
		e->unreported = false;
		for (struct raid_sc_waiter *w = sc->waiters; w; w = w->next)
			if (w->seq >= e->seq && !w->err)
				w->err = err;
	}
	if (err && keep) {
		e->err = err;
		e->retry_ms = conf_mono_ms() + RAID_SC_RETRY_MS;
		e->next = sc->head;
		sc->head = e;
		atomic_fetch_add(&sc->n, 1);
		e = NULL;
	}
	for (wp = &sc->waiters; *wp;) {
		struct raid_sc_waiter *w = *wp;

		if (out_upto(sc, w->seq)) {
			wp = &w->next;
			continue;
		}
		*wp = w->next;
		w->next = run;
		run = w;
	}
	pthread_mutex_unlock(&sc->mu);
	raid_sc_ent_free(e);
	while (run) {
		struct raid_sc_waiter *w = run;

		/* w belongs to the FLUSH, which waits on its ctx: gone after fn */
		run = w->next;
		if (raid_defer(w->ctx, w->fn, w->arg))
			LOG_ERR(RAID_MOD, "stripe cache: cannot queue a FLUSH's continuation (out of memory)");
	}
}

bool raid_sc_wait(struct raid_scache *sc, struct raid_sc_waiter *w)
{
	bool now;

	w->err = 0;
	w->next = NULL;
	pthread_mutex_lock(&sc->mu);
	for (const struct raid_sc_ent *e = sc->head; e; e = e->next)
		if (e->err && !w->err)
			w->err = e->err;
	w->seq = sc->seq;
	now = !out_upto(sc, w->seq);
	if (!now) {
		w->next = sc->waiters;
		sc->waiters = w;
	}
	pthread_mutex_unlock(&sc->mu);
	return now;
}

void raid_sc_overlay(struct raid_scache *sc, uint64_t row, uint64_t off, uint64_t len, uint8_t *dst)
{
	struct raid_sc_ent *e;

	if (!atomic_load(&sc->n))
		return;
	pthread_mutex_lock(&sc->mu);
	e = find(sc, row);
	if (e) {
		for (uint64_t s = off / 512; s < (off + len) / 512; s++)
			if (raid_sc_ent_valid(e, s))
				memcpy(dst + (s * 512 - off), e->data + s * 512, 512);
	}
	pthread_mutex_unlock(&sc->mu);
}

unsigned raid_sc_rows(struct raid_scache *sc, uint64_t min_age_ms, uint64_t *rows, unsigned max)
{
	struct raid_sc_ent *e;
	uint64_t now = conf_mono_ms();
	unsigned n = 0;

	if (!atomic_load(&sc->n))
		return 0;
	pthread_mutex_lock(&sc->mu);
	for (e = sc->head; e && n < max; e = e->next)
		if (now - e->t_ms >= min_age_ms && !(min_age_ms && e->err && now < e->retry_ms))
			rows[n++] = e->row;
	pthread_mutex_unlock(&sc->mu);
	return n;
}

bool raid_sc_check(struct raid_scache *sc)
{
	struct raid_sc_ent *e, *f;
	unsigned n = 0;
	bool ok = true;

	pthread_mutex_lock(&sc->mu);
	for (e = sc->head; e; e = e->next) {
		uint64_t bits = 0;

		n++;
		for (f = e->next; f; f = f->next)
			if (f->row == e->row)
				ok = false;
		for (uint64_t s = 0; s < sc->stripe / 512; s++)
			bits += raid_sc_ent_valid(e, s);
		if (bits != e->nvalid)
			ok = false;
	}
	if (n != atomic_load(&sc->n))
		ok = false;
	n = 0;
	for (e = sc->out; e; e = e->next) {
		n++;
		if (!e->seq || e->seq > sc->seq)
			ok = false;
	}
	if (n != sc->n_out || atomic_load(&sc->n) + n > sc->max)
		ok = false;
	for (struct raid_sc_waiter *w = sc->waiters; w; w = w->next)
		if (!out_upto(sc, w->seq))
			ok = false;
	pthread_mutex_unlock(&sc->mu);
	return ok;
}
