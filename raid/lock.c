/*
 * raid/lock.c - the per-pool stripe lock: range locks over the pool's logical
 * address space, shared for reads and exclusive for writes, COMPARE AND
 * WRITE and rebuild/scrub rows.
 *
 * Layer: context (raid/README.md "Layers"). May call: ioctx.c (raid_defer),
 * conf/.
 *
 * Several reactor threads submit to one pool, so the structure is protected
 * by a mutex; the critical sections only walk short lists (one entry per
 * request in flight on the pool).
 *
 * States of a struct raid_lk: WAITING (on wait list, granted=false) ->
 * HELD (on held list, granted=true) by raid_slock_acquire() when nothing
 * conflicts, or by grant_waiters() from raid_slock_release() of another
 * lock; HELD -> FREE by raid_slock_release(). A waiter granted by another
 * thread gets its fn called on its own ctx (raid_defer).
 * Invariants (raid_slock_check): no two held locks conflict; a waiting lock
 * conflicts with a held lock or with an earlier waiting lock (FIFO: later
 * requests never overtake an earlier conflicting one, so writers are not
 * starved by a stream of readers).
 */
#include <errno.h>
#include <stdlib.h>

#include "raid/ioctx.h"
#include "raid/raid_int.h"

static bool conflicts(const struct raid_lk *x, const struct raid_lk *y)
{
	if (x->b <= y->a || y->b <= x->a)
		return false;
	return x->excl || y->excl;
}

static bool conflicts_list(const struct raid_lk *lk, const struct raid_lk *list,
			   const struct raid_lk *stop)
{
	for (; list && list != stop; list = list->next)
		if (conflicts(lk, list))
			return true;
	return false;
}

void raid_slock_init(struct raid_slock *sl)
{
	pthread_mutex_init(&sl->mu, NULL);
	sl->held = NULL;
	sl->wait_head = sl->wait_tail = NULL;
}

void raid_slock_destroy(struct raid_slock *sl)
{
	pthread_mutex_destroy(&sl->mu);
}

bool raid_slock_acquire(struct raid_slock *sl, struct raid_lk *lk)
{
	bool now;

	lk->next = NULL;
	lk->granted = false;
	pthread_mutex_lock(&sl->mu);
	now = !conflicts_list(lk, sl->held, NULL) && !conflicts_list(lk, sl->wait_head, NULL);
	if (now) {
		lk->granted = true;
		lk->next = sl->held;
		sl->held = lk;
	} else {
		if (sl->wait_tail)
			sl->wait_tail->next = lk;
		else
			sl->wait_head = lk;
		sl->wait_tail = lk;
	}
	pthread_mutex_unlock(&sl->mu);
	return now;
}

/* Called with sl->mu held. */
static void grant_waiters(struct raid_slock *sl)
{
	struct raid_lk *prev = NULL, *lk = sl->wait_head, *next;

	while (lk) {
		next = lk->next;
		if (!conflicts_list(lk, sl->held, NULL) && !conflicts_list(lk, sl->wait_head, lk)) {
			if (prev)
				prev->next = next;
			else
				sl->wait_head = next;
			if (sl->wait_tail == lk)
				sl->wait_tail = prev;
			lk->granted = true;
			lk->next = sl->held;
			sl->held = lk;
			if (raid_defer(lk->ctx, lk->fn, lk->arg))
				LOG_ERR(RAID_MOD, "stripe lock: cannot queue a grant (out of memory)");
		} else {
			prev = lk;
		}
		lk = next;
	}
}

void raid_slock_release(struct raid_slock *sl, struct raid_lk *lk)
{
	struct raid_lk **pp;

	pthread_mutex_lock(&sl->mu);
	for (pp = &sl->held; *pp; pp = &(*pp)->next) {
		if (*pp == lk) {
			*pp = lk->next;
			break;
		}
	}
	lk->granted = false;
	lk->next = NULL;
	grant_waiters(sl);
	pthread_mutex_unlock(&sl->mu);
}

bool raid_slock_check(struct raid_slock *sl)
{
	const struct raid_lk *x, *y;
	bool ok = true;

	pthread_mutex_lock(&sl->mu);
	for (x = sl->held; x && ok; x = x->next)
		for (y = x->next; y && ok; y = y->next)
			if (conflicts(x, y) || !x->granted)
				ok = false;
	for (x = sl->wait_head; x && ok; x = x->next)
		if (x->granted || (!conflicts_list(x, sl->held, NULL) &&
				   !conflicts_list(x, sl->wait_head, x)))
			ok = false;
	pthread_mutex_unlock(&sl->mu);
	return ok;
}
