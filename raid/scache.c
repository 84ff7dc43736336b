/*
 * raid/scache.c - the stripe cache of a raid5/6 pool: rows that a streaming
 * write left partly written, held in memory until the next sequential write
 * completes them into a full stripe (written without any read), or until they
 * are flushed (SYNCHRONIZE CACHE, FUA, age, close).
 *
 * Entry states: absent -> DIRTY (raid_sc_merge with create, by the tail row of
 * a write of at least a full stripe) -> DIRTY (merges by later writes) ->
 * TAKEN (raid_sc_take: removed from the list, owned by the request that
 * writes it out) -> freed after that write. Every merge and take happens
 * while the caller holds the exclusive stripe lock of the row, so an entry's
 * data only changes under that lock; readers (holding a shared lock) copy
 * its valid sectors over what they read from the members. The mutex only
 * protects the list.
 * Invariant (raid_sc_check): at most one entry per row, n == list length
 * <= max, nvalid == number of set bits < sectors per row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raid/raid_int.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void raid_sc_init(struct raid_scache *sc, uint64_t stripe_bytes, unsigned max)
{
	pthread_mutex_init(&sc->mu, NULL);
	sc->head = NULL;
	atomic_store(&sc->n, 0);
	sc->max = max;
	sc->stripe = stripe_bytes;
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
	while (sc->head) {
		struct raid_sc_ent *e = sc->head;

		sc->head = e->next;
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
	if (!e && create && atomic_load(&sc->n) < sc->max) {
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
			e->t_ms = now_ms();
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
			e->next = NULL;
			atomic_fetch_sub(&sc->n, 1);
			break;
		}
	}
	pthread_mutex_unlock(&sc->mu);
	return e;
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
	uint64_t now = now_ms();
	unsigned n = 0;

	if (!atomic_load(&sc->n))
		return 0;
	pthread_mutex_lock(&sc->mu);
	for (e = sc->head; e && n < max; e = e->next)
		if (now - e->t_ms >= min_age_ms)
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
	if (n != atomic_load(&sc->n) || n > sc->max)
		ok = false;
	pthread_mutex_unlock(&sc->mu);
	return ok;
}
