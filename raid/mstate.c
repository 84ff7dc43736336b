/*
 * raid/mstate.c - member state: readable, writable, failed, read errors,
 * the bad-range table, events, superblock writes.
 *
 * Layer: member state (raid/README.md "Layers"). May call: sb.c, parity.c,
 * geom.c, conf/. Told of higher layers only through the callbacks in
 * struct raid_pool_hooks (p->hooks), which pool.c fills at open: the
 * background thread's kick (rebuild.c) after a member failed, and the
 * reshape's superblock fields (reshape.c). Below member.c, which reports
 * a failed replacement copy through raid_member_fail.
 *
 * Member states (struct raid_member.state): ACTIVE -> FAULTY
 * (raid_member_fail: I/O error or rtgtctl fail); SPARE -> REBUILDING ->
 * ACTIVE (rebuild); SPARE -> REPLACING (pool_admin.c raid_md_pool_replace) ->
 * ACTIVE in the replaced disk's slot, the disk FAULTY (rebuild.c
 * repl_swap), or -> SPARE / FAULTY when abandoned (repl_abandon); MISSING
 * is only set at assembly. Every change is written to the superblocks of
 * all present members with a bumped event counter before raid_member_fail
 * returns. Invariant (raid_pool_check): p->failed is set exactly when the
 * unusable raid disks break the level's rule (raid_lost_beyond: raid0 any,
 * raid1 all, raid5 two, raid6 three, raid10 both members of one mirror
 * pair), re-evaluated at every superblock write - assembly, failures, a
 * spare taking a slot, the end of a rebuild.
 *
 * Bad ranges (raid_pool_bad_add, under bad_mu): member bytes of a slot that
 * hold nothing valid (rebuild.c could not reconstruct them); persistent in
 * the superblocks. They grow when more is lost and shrink (or split) only
 * when a write rewrote those bytes on their member without reconstruction -
 * a full-row write (raid5/6) or any mirror write over them -
 * (raid_pool_bad_clear): the member is fdatasync'd, the range cut, and the
 * superblocks rewritten before the write is acknowledged. A crash before
 * that leaves the range bad (MEDIUM ERROR for data whose write was never
 * acknowledged), never good with old bytes. A member is not readable there
 * (raid_member_readable) and the bitmap reports them unsynced.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/member.h"
#include "raid/mstate.h"

const char *raid_level_name(enum conf_level l)
{
	switch (l) {
	case CONF_RAID0: return "raid0";
	case CONF_RAID1: return "raid1";
	case CONF_RAID5: return "raid5";
	case CONF_RAID6: return "raid6";
	case CONF_RAID10: return "raid10";
	default: return "?";   /* not a RAID level: never a pool of this backend */
	}
}

bool raid_member_writable(const struct raid_member *m)
{
	int st = atomic_load(&m->state);

	/* a replacement gets the bitmap and superblocks of a member: at the
	 * swap it becomes one (rebuild.c) */
	return m->fd >= 0 && (st == RAID_M_ACTIVE || st == RAID_M_REBUILDING ||
			      st == RAID_M_REPLACING);
}

bool raid_member_readable(const struct raid_member *m, uint64_t moff_end)
{
	int st = atomic_load(&m->state);
	struct raid_pool *p = m->pool;

	if (m->fd < 0)
		return false;
	if (st != RAID_M_ACTIVE &&
	    !(st == RAID_M_REBUILDING && moff_end <= atomic_load(&m->rebuild_pos)))
		return false;
	/* callers ask per row or chunk segment: the chunk ending at moff_end */
	if (p && atomic_load(&p->n_bad) && moff_end) {
		uint64_t a = (moff_end - 1) / p->g.chunk * p->g.chunk;

		if (raid_pool_bad(p, m->slot, a, moff_end))
			return false;
	}
	return true;
}

bool raid_pool_bad(struct raid_pool *p, unsigned slot, uint64_t a, uint64_t b)
{
	bool hit = false;

	if (!atomic_load(&p->n_bad))
		return false;
	pthread_mutex_lock(&p->bad_mu);
	for (unsigned i = 0; i < atomic_load(&p->n_bad) && !hit; i++)
		hit = (slot == UINT32_MAX || p->bad[i].slot == slot) && p->bad[i].a < b &&
		      a < p->bad[i].b;
	pthread_mutex_unlock(&p->bad_mu);
	return hit;
}

/* The table is full: merge the two nearest ranges of one slot into one
 * (covering the gap between them too). false when no slot has two. bad_mu held. */
static bool bad_make_room(struct raid_pool *p)
{
	unsigned i, k, n = atomic_load(&p->n_bad), bi = 0, bk = 0;
	uint64_t bestgap = UINT64_MAX;

	for (i = 0; i < n; i++)
		for (k = i + 1; k < n; k++) {
			struct raid_bad *x = &p->bad[i], *y = &p->bad[k];
			uint64_t gap;

			if (x->slot != y->slot)
				continue;
			gap = x->b < y->a ? y->a - x->b : y->b < x->a ? x->a - y->b : 0;
			if (gap < bestgap) {
				bestgap = gap;
				bi = i;
				bk = k;
			}
		}
	if (bestgap == UINT64_MAX)
		return false;
	p->bad[bi].a = p->bad[bi].a < p->bad[bk].a ? p->bad[bi].a : p->bad[bk].a;
	p->bad[bi].b = p->bad[bi].b > p->bad[bk].b ? p->bad[bi].b : p->bad[bk].b;
	p->bad[bk] = p->bad[n - 1];
	atomic_store(&p->n_bad, n - 1);
	return true;
}

void raid_pool_bad_add(struct raid_pool *p, unsigned slot, uint64_t a, uint64_t b)
{
	unsigned i, n, best = UINT32_MAX;
	uint64_t bestgap = UINT64_MAX;
	bool lost = false;

	pthread_mutex_lock(&p->bad_mu);
	n = atomic_load(&p->n_bad);
	for (i = 0; i < n; i++) {
		struct raid_bad *r = &p->bad[i];
		uint64_t gap;

		if (r->slot != slot)
			continue;
		gap = b < r->a ? r->a - b : a > r->b ? a - r->b : 0;
		if (gap < bestgap) {
			bestgap = gap;
			best = i;
		}
	}
	if (best != UINT32_MAX && (bestgap == 0 || n == RAID_MAX_BAD)) {
		/* adjacent or overlapping, or no room: grow (never lose any) */
		struct raid_bad *r = &p->bad[best];

		r->a = a < r->a ? a : r->a;
		r->b = b > r->b ? b : r->b;
		pthread_mutex_unlock(&p->bad_mu);
		return;     /* logged when it began */
	}
	if (n == RAID_MAX_BAD && !bad_make_room(p)) {
		lost = true;     /* 32 slots with one range each: cannot record it */
	} else {
		n = atomic_load(&p->n_bad);
		p->bad[n].slot = slot;
		p->bad[n].a = a;
		p->bad[n].b = b;
		atomic_store(&p->n_bad, n + 1);
	}
	pthread_mutex_unlock(&p->bad_mu);
	if (lost && slot < p->n_slots && p->m[slot]) {
		/* the member must not be read there: not at all, then */
		raid_member_fail(p->m[slot], -EIO, "bad range table full");
		return;
	}
	LOG_ERR(RAID_MOD, "pool %s: slot %u member bytes from [%llu, %llu) on cannot be reconstructed: recorded bad (reads fail with a medium error)",
		p->name, slot, (unsigned long long)a, (unsigned long long)b);
}

/* Cut [a, b) out of the ranges of the slots in @slots; a range that would
 * split with the table full stays whole (still bad: never wrongly good).
 * true when anything changed. bad_mu held. */
static bool bad_cut(struct raid_pool *p, uint64_t slots, uint64_t a, uint64_t b)
{
	unsigned i = 0;
	bool changed = false;

	while (i < atomic_load(&p->n_bad)) {
		struct raid_bad *r = &p->bad[i];
		unsigned n = atomic_load(&p->n_bad);

		if (r->slot >= 64 || !(slots & (1ull << r->slot)) || r->b <= a || b <= r->a) {
			i++;
			continue;
		}
		if (a <= r->a && r->b <= b) {
			*r = p->bad[n - 1];
			atomic_store(&p->n_bad, n - 1);
			changed = true;
			continue;            /* look at the entry moved here */
		}
		if (r->a < a && b < r->b) {
			if (n == RAID_MAX_BAD) {
				i++;
				continue;
			}
			p->bad[n] = *r;
			p->bad[n].a = b;
			r->b = a;
			atomic_store(&p->n_bad, n + 1);
		} else if (r->a < a) {
			r->b = a;
		} else {
			r->a = b;
		}
		changed = true;
		i++;
	}
	return changed;
}

int raid_pool_bad_clear(struct raid_pool *p, uint64_t slots, uint64_t a, uint64_t b)
{
	uint64_t hit = 0;
	bool changed;
	int rc = 0;

	if (!atomic_load(&p->n_bad))
		return 0;
	for (unsigned i = 0; i < p->n_slots && i < 64; i++)
		if ((slots & (1ull << i)) && raid_pool_bad(p, i, a, b))
			hit |= 1ull << i;
	if (!hit)
		return 0;
	pthread_mutex_lock(&p->meta_mu);
	/* the new bytes must be on the disk before a superblock says they are
	 * good: a crash in between would otherwise read what was there before
	 * (nothing valid) as good data */
	for (unsigned i = 0; i < p->n_slots && i < 64; i++) {
		struct raid_member *m = p->m[i];

		if (!(hit & (1ull << i)))
			continue;
		if (!m || !raid_member_writable(m) || fdatasync(m->fd)) {
			hit &= ~(1ull << i);
			rc = -EIO;
		}
	}
	pthread_mutex_lock(&p->bad_mu);
	changed = bad_cut(p, hit, a, b);
	pthread_mutex_unlock(&p->bad_mu);
	if (changed) {
		int wrc = raid_pool_write_sbs_locked(p, false);

		rc = rc ? rc : wrc;
		LOG_INFO(RAID_MOD, "pool %s: member bytes [%llu, %llu) rewritten: no longer bad",
			 p->name, (unsigned long long)a, (unsigned long long)b);
	}
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

unsigned raid_pool_unusable(struct raid_pool *p)
{
	unsigned i, c = 0;

	for (i = 0; i < p->g.n; i++)
		if (!p->m[i] || p->m[i]->fd < 0 || atomic_load(&p->m[i]->state) != RAID_M_ACTIVE)
			c++;
	return c;
}

/*
 * The level's failure rule. g->npar is the count the parity maths works with;
 * for raid10 it is 1 although the pool survives one loss per mirror pair, so
 * the rule is written out per level instead of comparing a count with it.
 */
bool raid_lost_beyond(const struct raid_geom *g, const bool *lost, unsigned *pair)
{
	unsigned i, n = 0;

	for (i = 0; i < g->n; i++)
		n += lost[i];
	switch (g->level) {
	case CONF_RAID0:
		return n > 0;
	case CONF_RAID1:
		return n >= g->n;
	case CONF_RAID5:
		return n > 1;
	case CONF_RAID6:
		return n > 2;
	case CONF_RAID10:
		/* near-2 on an even n: slots 2k and 2k+1 hold the same chunks */
		for (i = 0; i + 1 < g->n; i += 2) {
			if (lost[i] && lost[i + 1]) {
				if (pair)
					*pair = i;
				return true;
			}
		}
		return false;
	default:
		return n > g->npar;
	}
}

static void pool_lost(struct raid_pool *p, bool *lost)
{
	unsigned i;

	for (i = 0; i < p->g.n; i++)
		lost[i] = !p->m[i] || p->m[i]->fd < 0 ||
			  atomic_load(&p->m[i]->state) != RAID_M_ACTIVE;
}

bool raid_pool_beyond_redundancy(struct raid_pool *p)
{
	bool lost[RAID_MAX_SLOTS];

	pool_lost(p, lost);
	return raid_lost_beyond(&p->g, lost, NULL);
}

/* One line saying why the pool cannot serve, for the logs. */
void raid_pool_why_beyond(struct raid_pool *p, char *buf, size_t len)
{
	bool lost[RAID_MAX_SLOTS];
	unsigned pair = 0;

	pool_lost(p, lost);
	if (raid_lost_beyond(&p->g, lost, &pair) && p->level == CONF_RAID10)
		snprintf(buf, len, "both members of mirror pair (slots %u, %u) unusable: %s and %s",
			 pair, pair + 1, p->m[pair] ? p->m[pair]->path : "?",
			 p->m[pair + 1] ? p->m[pair + 1]->path : "?");
	else if (p->level == CONF_RAID1)
		snprintf(buf, len, "all %u members unusable", p->g.n);
	else
		snprintf(buf, len, "%u of %u members unusable, %s tolerates %u",
			 raid_pool_unusable(p), p->g.n, raid_level_name(p->level), p->g.npar);
}

bool raid_pool_check(struct raid_pool *p)
{
	return atomic_load(&p->failed) == raid_pool_beyond_redundancy(p);
}

/* Fill the pool-wide part of a superblock from the pool. meta_mu held. */
static void sb_fill(struct raid_pool *p, struct raid_sb *sb, bool clean)
{
	unsigned i;

	sb->version = RAID_SB_VERSION;
	memcpy(sb->pool_uuid, p->uuid, 16);
	snprintf(sb->name, sizeof(sb->name), "%s", p->name);
	sb->level = (uint32_t)p->level;
	sb->chunk = (uint32_t)p->g.chunk;
	sb->n_members = p->g.n;
	sb->flags = clean ? RAID_SB_CLEAN : 0;
	if (p->g.layout == RAID_LAYOUT_Q_LAST)
		sb->flags |= RAID_SB_Q_LAST;
	sb->events = p->events;
	sb->data_offset = RAID_DATA_OFF;
	sb->data_size = p->g.member_bytes;
	sb->bitmap_offset = RAID_BITMAP_OFF;
	sb->bitmap_bytes = (uint32_t)p->bm.bytes;
	sb->bitmap_chunk = (uint32_t)p->bm.region;
	sb->rebuild_slot = UINT32_MAX;
	sb->rebuild_pos = 0;
	sb->replace_pos = 0;
	sb->reshape_level = sb->reshape_n = 0;
	sb->reshape_pos = sb->backup_pos = 0;
	sb->backup_len = sb->backup_crc = 0;
	if (atomic_load(&p->syncing)) {
		sb->flags |= RAID_SB_SYNCING;
		sb->sync_pos = atomic_load(&p->sync_cp);
	} else {
		sb->sync_pos = 0;
	}
	pthread_mutex_lock(&p->bad_mu);
	sb->n_bad = atomic_load(&p->n_bad);
	memcpy(sb->bad, p->bad, sizeof(sb->bad));
	pthread_mutex_unlock(&p->bad_mu);
	if (p->hooks.sb_fill)
		p->hooks.sb_fill(p, sb);   /* reshape.c: its fields */
	sb->n_slots = p->n_slots;
	for (i = 0; i < p->n_slots; i++) {
		struct raid_member *m = p->m[i];
		int st = m ? atomic_load(&m->state) : RAID_M_FAULTY;

		sb->slots[i].state = (uint32_t)(st == RAID_M_MISSING ? RAID_M_FAULTY : st);
		sb->slots[i].repl = 0;
		if (m)
			memcpy(sb->slots[i].uuid, m->uuid, 16);
		if (m && st == RAID_M_REPLACING) {
			sb->slots[i].repl = (uint32_t)atomic_load(&m->repl_for) + 1;
			sb->replace_pos = atomic_load(&m->rebuild_cp);
		}
		if (m && st == RAID_M_REBUILDING) {
			/* only what the rebuild made durable (rebuild.c) */
			sb->rebuild_slot = i;
			sb->rebuild_pos = atomic_load(&m->rebuild_cp);
		}
	}
}

/* meta_mu held. */
int raid_pool_write_sbs_locked(struct raid_pool *p, bool clean)
{
	unsigned i, tries;
	int rc = 0;

	for (tries = 0; tries < RAID_MAX_SLOTS; tries++) {
		bool again = false;

		p->events++;
		sb_fill(p, &p->sb, clean);
		/* A rebuilding member first: a crash part way leaves it with the
		 * newest superblock (the reference at assembly), which lists it
		 * in the slot it took; the others are still listed there as
		 * active. The other way round, the members' newer superblocks
		 * would name it in its new slot while its own still said spare
		 * in the old one, and assembly would take it for replaced. The
		 * member a replacement swap just moved into a raid disk slot
		 * (p->sb_first) goes first for the same reason. */
		for (unsigned k = 0; k < 2 * p->n_slots; k++) {
			struct raid_member *m = p->m[k % p->n_slots];
			struct raid_sb sb;
			int st;

			i = k % p->n_slots;
			if (!m || m->fd < 0)
				continue;
			st = atomic_load(&m->state);
			if (st != RAID_M_ACTIVE && st != RAID_M_SPARE && st != RAID_M_REBUILDING &&
			    st != RAID_M_REPLACING)
				continue;
			if ((k < p->n_slots) != (st == RAID_M_REBUILDING || m == p->sb_first ||
						 m == p->sb_first2))
				continue;
			sb = p->sb;
			sb.slot = i;
			memcpy(sb.member_uuid, m->uuid, 16);
			rc = raid_sb_write(m->fd, &sb);
			if (rc) {
				LOG_ERR(RAID_MOD, "pool %s: member %s: superblock write failed: %s; member marked faulty",
					p->name, m->path, strerror(-rc));
				atomic_store(&m->state, RAID_M_FAULTY);
				raid_event_emit(p, &(struct raid_event){
					.kind = RAID_EV_MEMBER_FAULTY, .member = m->path, .slot = (int)i,
					.err = rc, .detail = "superblock write failed" });
				again = true;   /* the others must record that */
			}
		}
		if (!again)
			break;
	}
	atomic_store(&p->failed, raid_pool_beyond_redundancy(p));
	return rc;
}

int raid_pool_write_sbs(struct raid_pool *p, bool clean)
{
	int rc;

	pthread_mutex_lock(&p->meta_mu);
	rc = raid_pool_write_sbs_locked(p, clean);
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

/*
 * A proactive replacement ends early when its spare fails, or when any
 * raid disk fails: the pool is degraded then, and the spare is better used
 * to rebuild the lost slot (rebuild.c start_rebuild may pick it: it is a
 * spare again, and a rebuild starts from row 0, so nothing the copy did
 * is trusted). meta_mu held; @m just became FAULTY.
 */
static void repl_abandon(struct raid_pool *p, struct raid_member *m)
{
	int k = atomic_load(&p->repl_slot);
	struct raid_member *r;

	if (k < 0)
		return;
	r = p->m[k];
	if (r != m && m->slot >= p->g.n)
		return;      /* another spare */
	atomic_store(&p->repl_slot, -1);
	if (r != m)
		atomic_store(&r->state, RAID_M_SPARE);
	if (atomic_load(&r->repl_for) >= 0 && (unsigned)atomic_load(&r->repl_for) < p->g.n)
		atomic_store(&p->m[atomic_load(&r->repl_for)]->repl, NULL);
	LOG_WARN(RAID_MOD, "pool %s: replacement of slot %d by %s stopped: %s failed", p->name,
		 atomic_load(&r->repl_for), r->path, m->path);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REPLACE_STOPPED, .member = r->path,
						 .slot = atomic_load(&r->repl_for),
						 .detail = r == m ? "the replacement failed" :
							   "a raid disk failed" });
}

void raid_member_fail(struct raid_member *m, int err, const char *why)
{
	struct raid_pool *p = m->pool;
	int st;

	pthread_mutex_lock(&p->meta_mu);
	st = atomic_load(&m->state);
	if (st == RAID_M_FAULTY || st == RAID_M_MISSING || st == RAID_M_EMPTY) {
		pthread_mutex_unlock(&p->meta_mu);
		return;
	}
	atomic_store(&m->state, RAID_M_FAULTY);
	LOG_ERR(RAID_MOD, "pool %s: member %s (slot %u) faulty: %s%s%s", p->name, m->path, m->slot,
		why, err ? ": " : "", err ? strerror(-err) : "");
	repl_abandon(p, m);
	raid_pool_write_sbs_locked(p, false);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_MEMBER_FAULTY, .member = m->path,
						 .slot = (int)m->slot, .err = err, .detail = why });
	if (atomic_load(&p->failed)) {
		char reason[640];

		raid_pool_why_beyond(p, reason, sizeof(reason));
		LOG_ERR(RAID_MOD, "pool %s: %s: pool failed", p->name, reason);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_POOL_FAILED, .slot = -1,
							 .detail = reason });
	} else if (m->slot < p->g.n)
		LOG_WARN(RAID_MOD, "pool %s: degraded", p->name);
	pthread_mutex_unlock(&p->meta_mu);
	if (p->hooks.kick)
		p->hooks.kick(p);          /* rebuild.c: a spare may take the slot */
}

bool raid_member_read_error(struct raid_member *m, int err, uint64_t moff)
{
	struct raid_pool *p = m->pool;
	unsigned n = atomic_fetch_add(&m->rd_errors, 1) + 1;

	if (!p->g.npar)
		return false;     /* raid0: the request fails, the member stays */
	if (n > RAID_MAX_READ_ERRORS) {
		raid_member_fail(m, err, "too many read errors");
		return false;
	}
	LOG_WARN(RAID_MOD, "pool %s: member %s: read error at %llu (%s), repairing from redundancy (%u so far)",
		 p->name, m->path, (unsigned long long)moff, strerror(-err), n);
	return true;
}
const char *raid_pool_state_name(struct raid_pool *p)
{
	unsigned i;

	if (atomic_load(&p->failed))
		return "failed";
	for (i = 0; i < p->n_slots; i++)
		if (p->m[i] && atomic_load(&p->m[i]->state) == RAID_M_REBUILDING)
			return "rebuilding";
	return raid_pool_unusable(p) ? "degraded" : "optimal";
}

/* ---- events ---- */

static _Atomic(raid_event_fn) ev_fn;
static void *_Atomic ev_arg;

void raid_set_event_fn(raid_event_fn fn, void *arg)
{
	atomic_store(&ev_fn, NULL);
	atomic_store(&ev_arg, arg);
	atomic_store(&ev_fn, fn);
}

const char *raid_event_kind_name(enum raid_event_kind kind)
{
	switch (kind) {
	case RAID_EV_MEMBER_FAULTY: return "member_faulty";
	case RAID_EV_POOL_FAILED: return "pool_failed";
	case RAID_EV_POOL_DEGRADED: return "pool_degraded";
	case RAID_EV_REBUILD_STARTED: return "rebuild_started";
	case RAID_EV_REBUILD_DONE: return "rebuild_done";
	case RAID_EV_REBUILD_STOPPED: return "rebuild_stopped";
	case RAID_EV_SCRUB_DONE: return "scrub_done";
	case RAID_EV_SPARE_ADDED: return "spare_added";
	case RAID_EV_MEMBER_REMOVED: return "member_removed";
	case RAID_EV_REPLACE_STARTED: return "replace_started";
	case RAID_EV_REPLACE_DONE: return "replace_done";
	case RAID_EV_REPLACE_STOPPED: return "replace_stopped";
	case RAID_EV_THIN_THRESHOLD: return "thin_threshold";
	case RAID_EV_THIN_FULL: return "thin_full";
	case RAID_EV_RESHAPE_STARTED: return "reshape_started";
	case RAID_EV_RESHAPE_DONE: return "reshape_done";
	case RAID_EV_RESHAPE_FAILED: return "reshape_failed";
	}
	return "unknown";
}

void raid_event_emit(struct raid_pool *p, struct raid_event *ev)
{
	raid_event_fn fn = atomic_load(&ev_fn);

	if (!fn)
		return;
	if (p) {
		ev->pool = p->name;
		if (!ev->pool_state)
			ev->pool_state = raid_pool_state_name(p);
	}
	fn(atomic_load(&ev_arg), ev);
}
