/*
 * raid/rebuild.c - the pool's background thread: rebuild onto hot spares,
 * resync after an unclean shutdown, and scrub. It has its own raid_ioctx and
 * works in steps of whole rows (about 1 MiB of member data), each under an
 * exclusive stripe lock, so foreground I/O waits at most one step. Steps are
 * paced to rebuild_mbps (10^6 bytes/s of member data per member written).
 *
 * Layer: background-thread, the top of the background work
 * (raid/README.md "Layers"). May call: reshape.c (which it runs),
 * bg_job.c, bitmap.c, lock.c, member.c, mstate.c, ioctx.c, geom.c,
 * parity.c, conf/. mstate.c wakes it through struct raid_pool_hooks.
 *
 * Thread states: IDLE (waiting on bg_cv) -> REBUILD (a raid disk slot is
 * unusable and a spare exists, or a REBUILDING member was found at assembly:
 * start_rebuild() swaps the spare into the slot) -> IDLE when done, stopped
 * or failed; IDLE -> SCRUB (scrub_req, or resync_req after an unclean
 * shutdown or while the initial sync of a new pool is pending: p->syncing)
 * -> IDLE; IDLE -> REPLACE (after those: a spare is REPLACING a raid disk,
 * replace() below) -> IDLE when the copy took the slot, was abandoned or
 * stopped; any state -> EXIT on bg_stop (raid_bg_stop). A stopped rebuild
 * leaves its checkpoint (rebuild_cp: rebuild_pos once fdatasync'd on the new
 * member, written to the superblocks at least once a second and at stop) and
 * resumes from there on the next start; the initial sync likewise (sync_cp,
 * after an fdatasync of the members; syncing goes false at its end).
 *
 * Rows nothing can rebuild (parity not in sync: raid_bm_unsynced; or more
 * members missing than the level tolerates) become bad ranges (mstate.c),
 * recorded before rebuild_pos passes them. Read errors of background reads
 * count like foreground ones (raid_member_read_error) and are repaired from
 * redundancy; only past the limit, or on a write error, is a member failed.
 *
 * scrub_state (changed under bg_mu): an operator's scrub is 1 from
 * raid_pool_scrub() until it ended, then 2; a resync is 3 ("running") then
 * 2. A scrub asked for during a resync is queued, not refused: the state
 * goes to 1 and the resync's end leaves it there until the scrub ended.
 *
 * Rebuild invariant: below member->rebuild_pos the rebuilding member holds
 * exactly what its slot should hold, except in its bad ranges; rebuild_pos
 * only grows, and only while the stripe lock of the rows below it is held;
 * rebuild_cp <= rebuild_pos.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/member.h"

#define STEP_BYTES (1u << 20)
/* rows in a step at the smallest chunk (CONF_CHUNK_MIN, 4 KiB) */
#define RAID_MAX_STEP_ROWS (STEP_BYTES / 4096u)
#define CACHE_MAX_AGE_MS 100

struct bgio {
	unsigned pending;
	int err;
	uint64_t rerr;            /* slots whose read failed and may be repaired */
};

/*
 * A read error is handled as in the foreground (raid_member_read_error):
 * counted, and below the limit the member stays in; the step rebuilds what
 * it could not read from redundancy and writes it back. A write error, or a
 * read error past the limit, fails the member.
 */
static void bg_mio_done(struct raid_mio *mio, int res)
{
	struct bgio *b = mio->arg;

	if (res < 0) {
		if (mio->op == RAID_MIO_READ && raid_member_read_error(mio->m, res, mio->off)) {
			b->rerr |= 1ull << mio->m->slot;
		} else {
			raid_member_fail(mio->m, res,
					 mio->op == RAID_MIO_READ ? "read failed" : "write failed");
			b->err = res;
		}
	}
	b->pending--;
}

/* A re-read of one row after a read error: only where it failed matters. */
struct reread {
	struct raid_mio mio;
	int res;
	unsigned *pending;
};

static void bg_reread_done(struct raid_mio *mio, int res)
{
	struct reread *rr = (struct reread *)mio;

	rr->res = res;     /* counted already by the read that found it */
	(*rr->pending)--;
}

/*
 * The step's read of each member in @rerr failed somewhere: read it again
 * row by row (chunk by chunk) into the same buffers, so that only the rows
 * that fail again are treated as missing (bit i of rowmask[r - row]).
 * Returns 0 or -ENOMEM (then every row of those members counts as failed).
 */
static int bg_failed_rows(struct raid_pool *p, struct raid_ioctx *ctx, uint8_t **bufs,
			  uint64_t rerr, uint64_t row, uint64_t r1, uint64_t *rowmask)
{
	const struct raid_geom *g = &p->g;
	struct reread *rr = calloc(r1 - row, sizeof(*rr));
	unsigned pending = 0;
	bool nomem = !rr;

	memset(rowmask, 0, (r1 - row) * sizeof(*rowmask));
	for (unsigned i = 0; i < g->n; i++) {
		if (!(rerr & (1ull << i)))
			continue;
		if (!rr) {
			for (uint64_t r = row; r < r1; r++)
				rowmask[r - row] |= 1ull << i;
			continue;
		}
		for (uint64_t r = row; r < r1; r++) {
			struct reread *x = &rr[r - row];

			memset(x, 0, sizeof(*x));
			x->pending = &pending;
			x->mio.m = p->m[i];
			x->mio.op = RAID_MIO_READ;
			x->mio.buf = bufs[i] + (r - row) * g->chunk;
			x->mio.off = r * g->chunk;
			x->mio.len = g->chunk;
			x->mio.cb = bg_reread_done;
			x->mio.arg = x;
			if (raid_mio_submit(ctx, &x->mio) == 0)
				pending++;
			else
				x->res = -EIO;
		}
		while (pending)
			raid_ioctx_wait(ctx, 100);
		for (uint64_t r = row; r < r1; r++)
			if (rr[r - row].res < 0)
				rowmask[r - row] |= 1ull << i;
	}
	free(rr);
	return nomem ? -ENOMEM : 0;
}

static void bg_io(struct raid_ioctx *ctx, struct bgio *b, struct raid_mio *mio, struct raid_member *m,
		  int op, uint8_t *buf, uint64_t off, uint64_t len)
{
	mio->m = m;
	mio->op = op;
	mio->buf = buf;
	mio->off = off;
	mio->len = len;
	mio->cb = bg_mio_done;
	mio->arg = b;
	if (raid_mio_submit(ctx, mio) == 0)
		b->pending++;
	else
		b->err = -EIO;
}

static int bg_wait(struct raid_ioctx *ctx, struct bgio *b)
{
	while (b->pending)
		raid_ioctx_wait(ctx, 100);
	return b->err;
}

static void bg_granted(void *arg)
{
	*(bool *)arg = true;
}

static void bg_lock(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_lk *lk, uint64_t a,
		    uint64_t b)
{
	bool got = false;

	memset(lk, 0, sizeof(*lk));
	lk->a = a;
	lk->b = b;
	lk->excl = true;
	lk->ctx = ctx;
	lk->fn = bg_granted;
	lk->arg = &got;
	if (raid_slock_acquire(&p->lock, lk))
		return;
	while (!got)
		raid_ioctx_wait(ctx, 100);
}

/* The rate so far, then sleep so that @bytes since @t0 do not exceed the
 * cap. */
static void pace(struct raid_pool *p, double t0, uint64_t bytes)
{
	double el = (conf_mono_ns() / 1e9) - t0;

	if (el > 0)
		atomic_store(&p->rebuild_rate, (uint64_t)((double)bytes / el));
	raid_bg_pace(p, t0, bytes);
}

/* Choose a slot to rebuild and a spare; swap the spare in. meta_mu held. */
static struct raid_member *start_rebuild(struct raid_pool *p)
{
	struct raid_member *t = NULL, *sp = NULL, *old;
	unsigned i, s = 0, k = 0;

	if (p->g.npar == 0 || atomic_load(&p->failed))
		return NULL;
	for (i = 0; i < p->g.n; i++) {
		int st = atomic_load(&p->m[i]->state);

		if (st == RAID_M_REBUILDING && p->m[i]->fd >= 0)
			return p->m[i];   /* resume */
		if (!t && st != RAID_M_ACTIVE) {
			t = p->m[i];
			s = i;
		}
	}
	if (!t)
		return NULL;
	for (i = p->g.n; i < p->n_slots; i++) {
		if (atomic_load(&p->m[i]->state) == RAID_M_SPARE && p->m[i]->fd >= 0) {
			sp = p->m[i];
			k = i;
			break;
		}
	}
	if (!sp)
		return NULL;
	old = t;
	atomic_store(&sp->rebuild_pos, 0);
	atomic_store(&sp->rebuild_cp, 0);
	atomic_store(&sp->state, RAID_M_REBUILDING);
	sp->slot = s;
	old->slot = k;
	/* a removed slot's placeholder stays a free (empty) slot */
	if (atomic_load(&old->state) != RAID_M_EMPTY)
		atomic_store(&old->state, RAID_M_FAULTY);
	p->m[k] = old;
	p->m[s] = sp;
	raid_pool_write_sbs_locked(p, false);
	LOG_INFO(RAID_MOD, "pool %s: rebuilding slot %u onto spare %s (replacing %s)", p->name, s,
		 sp->path, old->path);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REBUILD_STARTED, .member = sp->path,
						 .slot = (int)s, .detail = old->path });
	return sp;
}

/*
 * Between steps of a long rebuild or sync, what bg_main does between tasks:
 * cached stripe rows older than CACHE_MAX_AGE_MS go out, so acknowledged
 * writes do not wait in memory for the whole pass, and about once a second
 * idle bitmap regions are cleared, so a crash later in the pass does not
 * leave every region written meanwhile dirty (on a degraded pool a dirty
 * region cannot be rebuilt: it would become a bad range).
 */
static void bg_upkeep(struct raid_pool *p, struct raid_ioctx *ctx, double *last_clear)
{
	if (atomic_load(&p->sc.n))
		raid_bg_cache_flush(p, ctx, CACHE_MAX_AGE_MS);
	if ((conf_mono_ns() / 1e9) - *last_clear >= 1.0) {
		raid_bm_clear_idle(p, false);
		*last_clear = (conf_mono_ns() / 1e9);
	}
}

/* Can @m serve member rows [r0, r1) as a rebuild source? */
static bool src_ok(struct raid_pool *p, struct raid_member *m, uint64_t r0, uint64_t r1)
{
	int st = atomic_load(&m->state);
	const struct raid_geom *g = &p->g;

	if (m->fd < 0 || (st != RAID_M_ACTIVE && st != RAID_M_REBUILDING))
		return false;
	if (st == RAID_M_REBUILDING && r1 * g->chunk > atomic_load(&m->rebuild_pos))
		return false;
	return !raid_pool_bad(p, m->slot, r0 * g->chunk, r1 * g->chunk);
}

/* Rows [r0, r1) of @slot hold nothing valid: record them (merged). */
static void bad_rows(struct raid_pool *p, unsigned slot, uint64_t r0, uint64_t r1)
{
	raid_pool_bad_add(p, slot, r0 * p->g.chunk, r1 * p->g.chunk);
}

/* Rebuilt data durable on @t, then the checkpoint in the superblocks; false
 * when the new member could not sync (it is failed). */
static bool rebuild_checkpoint(struct raid_pool *p, struct raid_member *t)
{
	uint64_t pos = atomic_load(&t->rebuild_pos);

	if (fdatasync(t->fd)) {
		raid_member_fail(t, -errno, "fdatasync of rebuilt data failed");
		return false;
	}
	atomic_store(&t->rebuild_cp, pos);
	raid_pool_write_sbs(p, false);
	return true;
}

/*
 * Rebuild slot t->slot. A row is reconstructed only from members that hold
 * it and only where the parity is in sync (raid_bm_unsynced: not dirty
 * since a crash, reached by the initial sync, no bad range): a row parity
 * cannot be trusted for, or one with more members unreadable than the level
 * tolerates, is recorded as a bad range of the new member instead (reads of
 * it fail with a medium error, never return data rebuilt from torn parity).
 * Mirrors copy any surviving copy (it holds the old or the new data).
 */
static void rebuild(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_member *t)
{
	const struct raid_geom *g = &p->g;
	uint64_t k = STEP_BYTES / g->chunk ? STEP_BYTES / g->chunk : 1;
	uint64_t step = k * g->chunk, row, done = 0;
	unsigned n = g->n, s = t->slot, i;
	uint8_t *bufs[RAID_MAX_SLOTS] = { NULL };
	double t0 = (conf_mono_ns() / 1e9), last_cp = t0, last_clear = t0;
	bool ok = false, par = raid_geom_is_parity_level(g), stopping;

	atomic_store(&p->rebuild_slot, (int)s);
	for (i = 0; i < n; i++) {
		bufs[i] = raid_alloc(step);
		if (!bufs[i]) {
			LOG_ERR(RAID_MOD, "pool %s: rebuild: out of memory", p->name);
			goto out_free;
		}
	}
	row = atomic_load(&t->rebuild_pos) / g->chunk;
	if (row)
		LOG_INFO(RAID_MOD, "pool %s: rebuild of slot %u resumes at %.1f%%", p->name, s,
			 100.0 * (double)row / (double)g->rows);
	while (row < g->rows) {
		uint64_t r1 = row + k > g->rows ? g->rows : row + k, nb = (r1 - row) * g->chunk;
		uint64_t srcs = 0, fix = 0;
		struct raid_mio mio[RAID_MAX_SLOTS];
		struct bgio io = { 0, 0, 0 };
		struct raid_lk lk;
		int src = -1;

		if (raid_bg_stop_requested(p) || atomic_load(&t->state) != RAID_M_REBUILDING ||
		    atomic_load(&p->failed))
			break;
		bg_lock(p, ctx, &lk, row * g->stripe_bytes, r1 * g->stripe_bytes);
		if (par) {
			/* every member holding any of the rows; per row below */
			for (i = 0; i < n; i++) {
				struct raid_member *m = p->m[i];
				int st = atomic_load(&m->state);

				if (i == s || m->fd < 0 || (st != RAID_M_ACTIVE && st != RAID_M_REBUILDING))
					continue;
				srcs |= 1ull << i;
				bg_io(ctx, &io, &mio[i], m, RAID_MIO_READ, bufs[i], row * g->chunk, nb);
			}
		} else {
			/* a mirror copy of the same member rows */
			for (i = 0; i < n && src < 0; i++) {
				unsigned d = g->level == CONF_RAID10 ? (s ^ 1u) : i;

				if (d != s && src_ok(p, p->m[d], row, r1))
					src = (int)d;
			}
			if (src >= 0)
				bg_io(ctx, &io, &mio[0], p->m[src], RAID_MIO_READ, bufs[s], row * g->chunk, nb);
		}
		if (bg_wait(ctx, &io)) {
			/* a source failed for good: plan the step again */
			raid_slock_release(&p->lock, &lk);
			continue;
		}
		if (par) {
			uint64_t r, b0 = UINT64_MAX, rowmask[RAID_MAX_STEP_ROWS];

			if (io.rerr)
				bg_failed_rows(p, ctx, bufs, io.rerr, row, r1, rowmask);
			for (r = row; r <= r1; r++) {
				bool missing[RAID_MAX_SLOTS] = { false };
				uint8_t *rb[RAID_MAX_SLOTS];
				uint64_t failed = r < r1 && io.rerr ? rowmask[r - row] : 0;
				unsigned nm = 0;
				bool bad = false;

				if (r < r1) {
					for (i = 0; i < n; i++) {
						missing[i] = i == s || !(srcs & (1ull << i)) ||
							     (failed & (1ull << i)) ||
							     !src_ok(p, p->m[i], r, r + 1);
						nm += missing[i];
						rb[i] = bufs[i] + (r - row) * g->chunk;
					}
					/* parity of an unsynced row may be torn */
					bad = nm > g->npar || raid_bm_unsynced(p, r * g->chunk, g->chunk);
					if (!bad && raid_par_recover(g, r, rb, missing, g->chunk))
						bad = true;
				}
				if (bad) {
					if (b0 == UINT64_MAX)
						b0 = r;
					/* what a source could not read there stays unreadable */
					for (i = 0; i < n; i++)
						if (failed & (1ull << i))
							bad_rows(p, i, r, r + 1);
				} else if (b0 != UINT64_MAX) {
					bad_rows(p, s, b0, r);
					b0 = UINT64_MAX;
				}
			}
			fix = io.rerr;
		} else if (src < 0) {
			/* no copy left for these rows */
			bad_rows(p, s, row, r1);
		} else if (io.rerr) {
			/* rows the copy cannot read: from another copy, else lost */
			uint64_t rowmask[RAID_MAX_STEP_ROWS];
			uint8_t *sb[RAID_MAX_SLOTS] = { NULL };

			sb[src] = bufs[s];
			bg_failed_rows(p, ctx, sb, io.rerr, row, r1, rowmask);
			for (uint64_t r = row; r < r1; r++) {
				bool got = false;

				if (!rowmask[r - row])
					continue;
				for (i = 0; i < n && !got && g->level == CONF_RAID1; i++) {
					struct bgio one = { 0, 0, 0 };

					if (i == s || i == (unsigned)src || !src_ok(p, p->m[i], r, r + 1))
						continue;
					bg_io(ctx, &one, &mio[src], p->m[i], RAID_MIO_READ,
					      bufs[s] + (r - row) * g->chunk, r * g->chunk, g->chunk);
					got = !bg_wait(ctx, &one) && !one.rerr;
				}
				if (!got) {
					bad_rows(p, s, r, r + 1);
					bad_rows(p, (unsigned)src, r, r + 1);
				}
			}
			/* the copy gets back what it could not read */
			if (raid_member_writable(p->m[src]))
				bg_io(ctx, &io, &mio[src], p->m[src], RAID_MIO_WRITE, bufs[s], row * g->chunk, nb);
		}
		bg_io(ctx, &io, &mio[s], t, RAID_MIO_WRITE, bufs[s], row * g->chunk, nb);
		for (i = 0; i < n; i++)
			if ((fix & (1ull << i)) && i != s)
				bg_io(ctx, &io, &mio[i], p->m[i], RAID_MIO_WRITE, bufs[i], row * g->chunk, nb);
		if (bg_wait(ctx, &io)) {
			raid_slock_release(&p->lock, &lk);
			if (atomic_load(&t->state) != RAID_M_REBUILDING)
				break;
			continue;
		}
		/* bad ranges are recorded before the rows count as rebuilt */
		atomic_store(&t->rebuild_pos, r1 * g->chunk);
		raid_slock_release(&p->lock, &lk);
		row = r1;
		done += nb;
		pace(p, t0, done);
		bg_upkeep(p, ctx, &last_clear);
		if ((conf_mono_ns() / 1e9) - last_cp >= 1.0) {
			if (!rebuild_checkpoint(p, t))
				break;
			last_cp = (conf_mono_ns() / 1e9);
		}
	}
	ok = row >= g->rows;
out_free:
	for (i = 0; i < n; i++)
		free(bufs[i]);
	/* durable before any superblock calls it active (or moves the checkpoint) */
	if (atomic_load(&t->state) == RAID_M_REBUILDING && fdatasync(t->fd)) {
		raid_member_fail(t, -errno, "fdatasync of rebuilt data failed");
		ok = false;
	}
	stopping = raid_bg_stop_requested(p);   /* bg_mu: not under meta_mu */
	pthread_mutex_lock(&p->meta_mu);
	if (atomic_load(&t->state) == RAID_M_REBUILDING)
		atomic_store(&t->rebuild_cp, atomic_load(&t->rebuild_pos));
	if (ok && atomic_load(&t->state) == RAID_M_REBUILDING) {
		atomic_store(&t->state, RAID_M_ACTIVE);
		LOG_INFO(RAID_MOD, "pool %s: rebuild of slot %u onto %s complete", p->name, s, t->path);
	} else
		ok = false;
	raid_pool_write_sbs_locked(p, false);
	if (ok)
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REBUILD_DONE,
							 .member = t->path, .slot = (int)s });
	else if (!stopping)
		raid_event_emit(p, &(struct raid_event){
			.kind = RAID_EV_REBUILD_STOPPED, .member = t->path, .slot = (int)s,
			.detail = atomic_load(&t->state) == RAID_M_REBUILDING ?
				  "stopped part way" : "the new member failed" });
	/* with the state, so that nobody sees the pool optimal while a scrub
	 * would still be refused as "rebuilding" */
	atomic_store(&p->rebuild_slot, -1);
	pthread_mutex_unlock(&p->meta_mu);
}

/*
 * Proactive replacement: spare t (REPLACING, in its spare slot) is filled
 * with a copy of raid disk s, which stays in its slot and serves every
 * read; writes to s are also written to t (member.c raid_mio_submit) from
 * the moment the replacement started. Steps of whole rows under the rows'
 * exclusive stripe lock, paced to rebuild_mbps like a rebuild. Rows s
 * cannot read are rebuilt from the other raid disks (repl_row); rows
 * nothing can rebuild become bad ranges of slot s, which stay with the
 * slot after the swap. At the end, under an exclusive lock over the whole
 * pool, t takes slot s and s is left FAULTY in t's old slot (repl_swap).
 *
 * Replacement invariant (like the rebuild's): below t->rebuild_pos, t holds
 * exactly what s holds, except in slot s's bad ranges; rebuild_cp (made
 * durable, in the superblocks as replace_pos) <= rebuild_pos. It ends
 * early (mstate.c repl_abandon) when t or any raid disk fails: t is a spare
 * again and the pool's usual rebuild takes over from row 0.
 */

/* Rebuild chunk @r of slot @s into @dst from the other raid disks: 0 done,
 * 1 nothing can (no copy or not enough members readable; parity of an
 * unsynced row is not trusted), -1 a member failed meanwhile (stop). */
static int repl_row(struct raid_pool *p, struct raid_ioctx *ctx, unsigned s, uint64_t r,
		    uint8_t *dst, uint8_t **tmp)
{
	const struct raid_geom *g = &p->g;
	struct raid_mio mio[RAID_MAX_SLOTS];
	bool missing[RAID_MAX_SLOTS] = { false };
	uint8_t *rb[RAID_MAX_SLOTS];
	struct bgio io = { 0, 0, 0 };
	unsigned i, nm = 0;

	if (!raid_geom_is_parity_level(g)) {
		for (i = 0; i < g->n; i++) {
			unsigned d = g->level == CONF_RAID10 ? (s ^ 1u) : i;

			if (d == s || !src_ok(p, p->m[d], r, r + 1))
				continue;
			bg_io(ctx, &io, &mio[0], p->m[d], RAID_MIO_READ, dst, r * g->chunk, g->chunk);
			if (bg_wait(ctx, &io))
				return -1;
			if (!io.rerr)
				return 0;
			io.rerr = 0;
			if (g->level == CONF_RAID10)
				break;
		}
		return 1;
	}
	if (raid_bm_unsynced(p, r * g->chunk, g->chunk))
		return 1;
	for (i = 0; i < g->n; i++) {
		rb[i] = i == s ? dst : tmp[i];
		missing[i] = i == s || !src_ok(p, p->m[i], r, r + 1);
		if (!missing[i])
			bg_io(ctx, &io, &mio[i], p->m[i], RAID_MIO_READ, tmp[i], r * g->chunk, g->chunk);
	}
	if (bg_wait(ctx, &io))
		return -1;
	for (i = 0; i < g->n; i++) {
		missing[i] |= (io.rerr & (1ull << i)) != 0;
		nm += missing[i];
	}
	if (nm > g->npar || raid_par_recover(g, r, rb, missing, g->chunk))
		return 1;
	return 0;
}

/* Under an exclusive lock over the whole pool, so that no write is on its
 * way to s alone: t, synced, takes slot s. True when it did. */
static bool repl_swap(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_member *t,
		      struct raid_member *old, unsigned s)
{
	const struct raid_geom *g = &p->g;
	struct raid_lk lk;
	bool ok = false;
	char oldpath[sizeof(old->path)];

	bg_lock(p, ctx, &lk, 0, g->rows * g->stripe_bytes);
	if (fdatasync(t->fd)) {
		raid_member_fail(t, -errno, "fdatasync of the replacement copy failed");
		goto out_unlock_rows;
	}
	pthread_mutex_lock(&p->meta_mu);
	if (atomic_load(&t->state) == RAID_M_REPLACING && atomic_load(&old->state) == RAID_M_ACTIVE &&
	    p->m[s] == old && atomic_load(&p->repl_slot) == (int)t->slot) {
		unsigned k = t->slot;

		atomic_store(&old->repl, NULL);
		atomic_store(&p->repl_slot, -1);
		atomic_store(&t->rebuild_cp, atomic_load(&t->rebuild_pos));
		atomic_store(&t->state, RAID_M_ACTIVE);
		atomic_store(&t->rd_errors, 0);
		t->slot = s;
		old->slot = k;
		p->m[s] = t;
		p->m[k] = old;
		atomic_store(&old->state, RAID_M_FAULTY);
		snprintf(oldpath, sizeof(oldpath), "%s", old->path);
		p->sb_first = t;     /* see raid_pool_write_sbs_locked */
		raid_pool_write_sbs_locked(p, false);
		p->sb_first = NULL;
		LOG_INFO(RAID_MOD, "pool %s: %s replaced %s in slot %u; %s is left faulty (slot %u): rtgtctl remove it",
			 p->name, t->path, oldpath, s, oldpath, k);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REPLACE_DONE,
							 .member = t->path, .slot = (int)s,
							 .detail = oldpath });
		ok = true;
	}
	pthread_mutex_unlock(&p->meta_mu);
out_unlock_rows:
	raid_slock_release(&p->lock, &lk);
	return ok;
}

static void replace(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_member *t)
{
	const struct raid_geom *g = &p->g;
	uint64_t k = STEP_BYTES / g->chunk ? STEP_BYTES / g->chunk : 1;
	uint64_t step = k * g->chunk, row, done = 0;
	int s = atomic_load(&t->repl_for);
	struct raid_member *old = s >= 0 && (unsigned)s < g->n ? p->m[s] : NULL;
	uint8_t *buf = raid_alloc(step), *tmp[RAID_MAX_SLOTS] = { NULL };
	double t0 = (conf_mono_ns() / 1e9), last_cp = t0, last_clear = t0;
	bool stopped = false;
	unsigned i;

	if (!old || !buf)
		goto out_free;
	for (i = 0; i < g->n; i++)
		if (!(tmp[i] = raid_alloc(g->chunk)))
			goto out_free;
	row = atomic_load(&t->rebuild_pos) / g->chunk;
	LOG_INFO(RAID_MOD, "pool %s: copying %s (slot %d) to %s from %.1f%%", p->name, old->path, s,
		 t->path, 100.0 * (double)row / (double)g->rows);
	while (row < g->rows) {
		uint64_t r1 = row + k > g->rows ? g->rows : row + k, nb = (r1 - row) * g->chunk;
		struct raid_mio mio;
		struct bgio io = { 0, 0, 0 };
		struct raid_lk lk;
		bool abort = false;

		if (raid_bg_stop_requested(p) || atomic_load(&t->state) != RAID_M_REPLACING ||
		    atomic_load(&old->state) != RAID_M_ACTIVE || atomic_load(&p->failed))
			break;
		bg_lock(p, ctx, &lk, row * g->stripe_bytes, r1 * g->stripe_bytes);
		bg_io(ctx, &io, &mio, old, RAID_MIO_READ, buf, row * g->chunk, nb);
		if (bg_wait(ctx, &io)) {
			/* s failed for good: the replacement was abandoned */
			raid_slock_release(&p->lock, &lk);
			break;
		}
		if (io.rerr) {
			uint64_t rowmask[RAID_MAX_STEP_ROWS];
			uint8_t *sb[RAID_MAX_SLOTS] = { NULL };

			sb[s] = buf;
			bg_failed_rows(p, ctx, sb, io.rerr, row, r1, rowmask);
			for (uint64_t r = row; r < r1 && !abort; r++) {
				int rc;

				if (!(rowmask[r - row] & (1ull << s)))
					continue;
				rc = repl_row(p, ctx, (unsigned)s, r, buf + (r - row) * g->chunk, tmp);
				if (rc > 0)
					bad_rows(p, (unsigned)s, r, r + 1);
				abort = rc < 0;
			}
		}
		if (!abort) {
			io = (struct bgio){ 0, 0, 0 };
			bg_io(ctx, &io, &mio, t, RAID_MIO_WRITE, buf, row * g->chunk, nb);
			abort = bg_wait(ctx, &io) != 0;   /* t failed: abandoned */
		}
		if (abort) {
			raid_slock_release(&p->lock, &lk);
			break;
		}
		atomic_store(&t->rebuild_pos, r1 * g->chunk);
		raid_slock_release(&p->lock, &lk);
		row = r1;
		done += nb;
		pace(p, t0, done);
		atomic_store(&p->repl_rate, atomic_load(&p->rebuild_rate));
		bg_upkeep(p, ctx, &last_clear);
		if ((conf_mono_ns() / 1e9) - last_cp >= 1.0) {
			if (!rebuild_checkpoint(p, t))
				break;
			last_cp = (conf_mono_ns() / 1e9);
		}
	}
	if (row >= g->rows && repl_swap(p, ctx, t, old, (unsigned)s))
		goto out_free;
	stopped = raid_bg_stop_requested(p);
	/* stopped part way (shutdown): the checkpoint, to go on at the next start */
	if (atomic_load(&t->state) == RAID_M_REPLACING && !rebuild_checkpoint(p, t))
		stopped = false;
	pthread_mutex_lock(&p->meta_mu);
	if (atomic_load(&t->state) == RAID_M_REPLACING && !stopped) {
		/* neither stopped nor abandoned: the disk's state changed under
		 * it without a failure (cannot happen today); give the spare back */
		atomic_store(&t->state, RAID_M_SPARE);
		atomic_store(&old->repl, NULL);
		atomic_store(&p->repl_slot, -1);
		raid_pool_write_sbs_locked(p, false);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REPLACE_STOPPED,
							 .member = t->path, .slot = s,
							 .detail = "stopped part way" });
	} else if (atomic_load(&t->state) != RAID_M_REPLACING &&
		   atomic_load(&p->repl_slot) == (int)t->slot) {
		/* t was marked faulty without raid_member_fail (its superblock
		 * write failed): the replacement is over all the same */
		atomic_store(&old->repl, NULL);
		atomic_store(&p->repl_slot, -1);
	}
	pthread_mutex_unlock(&p->meta_mu);
out_free:
	for (i = 0; i < g->n; i++)
		free(tmp[i]);
	free(buf);
}

/* Members synced, then the initial sync's checkpoint in the superblocks. */
static void sync_checkpoint(struct raid_pool *p, bool finished)
{
	uint64_t pos = atomic_load(&p->sync_pos);

	for (unsigned i = 0; i < p->g.n; i++)
		if (raid_member_writable(p->m[i]) && fdatasync(p->m[i]->fd))
			raid_member_fail(p->m[i], -errno, "fdatasync failed");
	if (raid_pool_unusable(p))
		return;     /* the next pass resumes from the last checkpoint */
	pthread_mutex_lock(&p->meta_mu);
	atomic_store(&p->sync_cp, pos);
	if (finished) {
		atomic_store(&p->syncing, false);
		LOG_INFO(RAID_MOD, "pool %s: initial sync complete", p->name);
	}
	raid_pool_write_sbs_locked(p, false);
	pthread_mutex_unlock(&p->meta_mu);
}

/*
 * Read errors of one step (slots in @rerr; the rows that fail again when
 * read one by one are the ones lost): rebuild what could not be read
 * from the other members into @rb, row by row, and return the slots to
 * write back. Parity is trusted only where the row is in sync
 * (!@unsynced): in an unsynced row only a parity device's chunk can be
 * rebuilt (from the data); a data chunk that cannot be is recorded bad.
 */
static uint64_t scrub_fix_reads(struct raid_pool *p, struct raid_ioctx *ctx, uint64_t row,
				uint64_t r1, uint8_t **bufs, uint64_t rerr, bool unsynced)
{
	const struct raid_geom *g = &p->g;
	unsigned n = g->n, i;
	uint64_t fix = 0, rowmask[RAID_MAX_STEP_ROWS];

	bg_failed_rows(p, ctx, bufs, rerr, row, r1, rowmask);
	for (uint64_t r = row; r < r1; r++) {
		uint8_t *rb[RAID_MAX_SLOTS];
		bool miss[RAID_MAX_SLOTS] = { false };
		uint64_t o = (r - row) * g->chunk;
		unsigned nm = 0;
		bool lost = false;

		for (i = 0; i < n; i++) {
			rb[i] = bufs[i] + o;
			miss[i] = rowmask[r - row] & (1ull << i);
			nm += miss[i];
		}
		if (raid_geom_is_parity_level(g)) {
			for (i = 0; i < n && unsynced; i++)
				if (miss[i] && raid_geom_dev_dd(g, r, i) >= 0)
					lost = true;
			lost = lost || nm > g->npar || raid_par_recover(g, r, rb, miss, g->chunk);
		} else {
			/* each mirror set: copy a copy that was read */
			unsigned set = g->level == CONF_RAID1 ? n : 2;

			for (unsigned b = 0; b < n; b += set) {
				int ref = -1;

				for (i = b; i < b + set; i++)
					if (!miss[i] && ref < 0)
						ref = (int)i;
				for (i = b; i < b + set; i++) {
					if (!miss[i])
						continue;
					if (ref < 0)
						raid_pool_bad_add(p, i, r * g->chunk, (r + 1) * g->chunk);
					else
						memcpy(rb[i], rb[ref], g->chunk);
				}
			}
			continue;
		}
		if (lost) {
			for (i = 0; i < n; i++)
				if (miss[i])
					raid_pool_bad_add(p, i, r * g->chunk, (r + 1) * g->chunk);
		}
	}
	for (i = 0; i < n; i++)
		if (rerr & (1ull << i))
			fix |= 1ull << i;
	return fix;
}

/*
 * Check (and with @repair fix) every row; pool must be optimal. With
 * @resync only the unsynced regions (dirty at a crash, or not reached by
 * the initial sync) are visited, always repairing: parity recomputed from
 * the data, mirrors copied from their first copy. Rows in a bad range are
 * left alone (nothing valid to check them against). Read errors are
 * repaired from redundancy (scrub_fix_reads) and the member stays in.
 */
static void scrub(struct raid_pool *p, struct raid_ioctx *ctx, bool repair, bool resync)
{
	const struct raid_geom *g = &p->g;
	uint64_t k = STEP_BYTES / g->chunk ? STEP_BYTES / g->chunk : 1;
	uint64_t step = k * g->chunk, row = 0, done = 0;
	uint8_t *bufs[RAID_MAX_SLOTS] = { NULL };
	unsigned n = g->n, i;
	double t0 = (conf_mono_ns() / 1e9), last_cp = t0, last_clear = t0;
	uint64_t nmis = 0;
	bool initial = resync && atomic_load(&p->syncing);
	const char *what = initial ? "initial sync" : resync ? "resync" : "scrub";

	/* A resync shows as a running scrub (state 3) but an operator's scrub
	 * asked for meanwhile (state 1) keeps its state: see raid_pool_scrub. */
	pthread_mutex_lock(&p->bg_mu);
	if (!resync || atomic_load(&p->scrub_state) != 1) {
		atomic_store(&p->scrub_mismatch, 0);
		atomic_store(&p->scrub_pos, 0);
		atomic_store(&p->scrub_state, resync ? 3 : 1);
	}
	pthread_mutex_unlock(&p->bg_mu);
	for (i = 0; i < n; i++)
		if (!(bufs[i] = raid_alloc(step)))
			goto out;
	LOG_INFO(RAID_MOD, "pool %s: %s%s started", p->name, what, repair && !resync ? " (repair)" : "");
	while (row < g->rows && !raid_bg_stop_requested(p)) {
		uint64_t r1 = row + k > g->rows ? g->rows : row + k, nb = (r1 - row) * g->chunk;
		struct raid_mio mio[RAID_MAX_SLOTS];
		struct bgio io = { 0, 0, 0 };
		struct raid_lk lk;
		uint64_t fixmask = 0;
		bool unsynced = false;

		if (raid_pool_unusable(p)) {
			LOG_ERR(RAID_MOD, "pool %s: %s stopped: pool not optimal", p->name, what);
			if (resync) {
				pthread_mutex_lock(&p->bg_mu);
				p->resync_req = true;   /* again once optimal */
				pthread_mutex_unlock(&p->bg_mu);
			}
			break;
		}
		if (resync && !raid_bm_region_unsynced(p, row * g->chunk / p->bm.region)) {
			row = r1;   /* a step never straddles two regions */
			continue;
		}
		bg_lock(p, ctx, &lk, row * g->stripe_bytes, r1 * g->stripe_bytes);
		for (i = 0; i < n; i++)
			bg_io(ctx, &io, &mio[i], p->m[i], RAID_MIO_READ, bufs[i], row * g->chunk, nb);
		if (bg_wait(ctx, &io)) {
			raid_slock_release(&p->lock, &lk);
			continue;
		}
		unsynced = resync || raid_bm_unsynced(p, row * g->chunk, nb);
		if (io.rerr)
			fixmask = scrub_fix_reads(p, ctx, row, r1, bufs, io.rerr, unsynced);
		for (uint64_t r = row; r < r1; r++) {
			uint8_t *rb[RAID_MAX_SLOTS];
			uint64_t o = (r - row) * g->chunk;

			if (raid_pool_bad(p, UINT32_MAX, r * g->chunk, (r + 1) * g->chunk))
				continue;
			for (i = 0; i < n; i++)
				rb[i] = bufs[i] + o;
			if (raid_geom_is_parity_level(g)) {
				int bad = -1, mask = raid_par_check(g, r, rb, g->chunk, &bad);

				if (mask <= 0)
					continue;
				nmis++;
				atomic_fetch_add(&p->scrub_mismatch, 1);
				if (!initial)
					LOG_WARN(RAID_MOD, "pool %s: %s: row %llu mismatch%s%s", p->name, what,
						 (unsigned long long)r, bad >= 0 ? ", bad member " : "",
						 bad >= 0 ? p->m[bad]->path : "");
				if (!repair)
					continue;
				if (g->level == CONF_RAID6 && bad >= 0 && !resync) {
					bool miss[RAID_MAX_SLOTS] = { false };

					miss[bad] = true;
					raid_par_recover(g, r, rb, miss, g->chunk);
					fixmask |= 1ull << bad;
				} else {
					int pd, qd;

					raid_par_gen(g, r, rb, g->chunk);
					raid_geom_parity(g, r, &pd, &qd);
					fixmask |= 1ull << pd;
					if (qd >= 0)
						fixmask |= 1ull << qd;
				}
			} else if (g->npar) {
				/* mirrors: raid1 all devices, raid10 pairs (0,1), (2,3)... */
				for (i = 0; i < n; i++) {
					unsigned ref = g->level == CONF_RAID1 ? 0 : (i & ~1u);

					if (i == ref || !memcmp(rb[i], rb[ref], g->chunk))
						continue;
					nmis++;
					atomic_fetch_add(&p->scrub_mismatch, 1);
					if (repair) {
						memcpy(rb[i], rb[ref], g->chunk);
						fixmask |= 1ull << i;
					}
				}
			}
		}
		for (i = 0; i < n; i++)
			if (fixmask & (1ull << i))
				bg_io(ctx, &io, &mio[i], p->m[i], RAID_MIO_WRITE, bufs[i], row * g->chunk, nb);
		if (bg_wait(ctx, &io)) {
			/* a member failed writing: the loop stops, the region stays unsynced */
			raid_slock_release(&p->lock, &lk);
			continue;
		}
		raid_slock_release(&p->lock, &lk);
		if (resync && (r1 * g->chunk % p->bm.region == 0 || r1 == g->rows)) {
			raid_bm_synced(p, (r1 * g->chunk - 1) / p->bm.region);
			if (initial && r1 * g->chunk > atomic_load(&p->sync_pos))
				atomic_store(&p->sync_pos, r1 * g->chunk);
		}
		row = r1;
		done += nb;
		atomic_store(&p->scrub_pos, row * g->chunk);
		pace(p, t0, done);
		bg_upkeep(p, ctx, &last_clear);
		if (initial && (conf_mono_ns() / 1e9) - last_cp >= 1.0) {
			sync_checkpoint(p, false);
			last_cp = (conf_mono_ns() / 1e9);
		}
	}
	if (initial)
		sync_checkpoint(p, row >= g->rows && !atomic_load(&p->bm.n_unsynced));
	LOG_INFO(RAID_MOD, "pool %s: %s done: %llu mismatches%s", p->name, what,
		 (unsigned long long)nmis, repair ? " (repaired)" : "");
	if (!resync) {
		pthread_mutex_lock(&p->meta_mu);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_SCRUB_DONE, .slot = -1,
							 .count = nmis, .repaired = repair,
							 .complete = row >= g->rows });
		pthread_mutex_unlock(&p->meta_mu);
	}
out:
	for (i = 0; i < n; i++)
		free(bufs[i]);
	pthread_mutex_lock(&p->bg_mu);
	if (!resync || atomic_load(&p->scrub_state) == 3)
		atomic_store(&p->scrub_state, 2);
	pthread_mutex_unlock(&p->bg_mu);
}

static void *bg_main(void *arg)
{
	struct raid_pool *p = arg;
	struct raid_ioctx *ctx;

	if (raid_ioctx_create(&ctx)) {
		LOG_ERR(RAID_MOD, "pool %s: background thread has no io context", p->name);
		return NULL;
	}
	for (;;) {
		struct raid_member *t;
		bool do_scrub, repair, resync = false;

		pthread_mutex_lock(&p->bg_mu);
		while (!p->bg_stop && !p->bg_kick && !p->scrub_req && !p->grow_k &&
		       !(p->resync_req && !raid_pool_unusable(p) && !atomic_load(&p->rsh.active))) {
			if (atomic_load(&p->sc.n)) {
				/* cached rows: look again soon */
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 50 * 1000000L;
				if (ts.tv_nsec >= 1000000000L) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000L;
				}
				if (pthread_cond_timedwait(&p->bg_cv, &p->bg_mu, &ts) == ETIMEDOUT)
					break;
			} else {
				/* once a second: clear idle bitmap regions */
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec++;
				if (pthread_cond_timedwait(&p->bg_cv, &p->bg_mu, &ts) == ETIMEDOUT)
					break;
			}
		}
		if (p->bg_stop) {
			pthread_mutex_unlock(&p->bg_mu);
			break;
		}
		p->bg_kick = false;
		if (p->grow_k || atomic_load(&p->rsh.active)) {
			/* A reshape first and alone: rebuild, resync and scrub
			 * work in one layout (reshape.c). A scrub asked for
			 * meanwhile stays queued. */
			pthread_mutex_unlock(&p->bg_mu);
			raid_reshape_take_request(p, ctx);
			if (atomic_load(&p->rsh.active))
				raid_reshape_run(p, ctx);
			raid_bm_clear_idle(p, false);
			if (!atomic_load(&p->rsh.active))
				raid_bg_kick(p);   /* what waited for it */
			continue;
		}
		do_scrub = p->scrub_req;
		repair = p->scrub_repair;
		p->scrub_req = false;
		if (p->resync_req && !do_scrub && !raid_pool_unusable(p)) {
			/* After a crash, rows written at that moment may have
			 * parity (or mirrors) that disagree with the data: make
			 * them agree before a failure needs them. */
			p->resync_req = false;
			do_scrub = repair = resync = true;
		}
		pthread_mutex_unlock(&p->bg_mu);

		if (atomic_load(&p->sc.n))
			raid_bg_cache_flush(p, ctx, CACHE_MAX_AGE_MS);
		pthread_mutex_lock(&p->meta_mu);
		t = start_rebuild(p);
		pthread_mutex_unlock(&p->meta_mu);
		if (t) {
			rebuild(p, ctx, t);
			raid_bg_kick(p);     /* another slot may need a spare */
		}
		if (do_scrub)
			scrub(p, ctx, repair, resync);
		if (!t) {
			struct raid_member *r = NULL;
			int k;

			pthread_mutex_lock(&p->meta_mu);
			k = atomic_load(&p->repl_slot);
			if (k >= 0 && atomic_load(&p->m[k]->state) == RAID_M_REPLACING)
				r = p->m[k];
			pthread_mutex_unlock(&p->meta_mu);
			if (r)
				replace(p, ctx, r);
		}
		raid_bm_clear_idle(p, false);
	}
	raid_ioctx_destroy(ctx);
	return NULL;
}

int raid_bg_start(struct raid_pool *p)
{
	int rc;

	pthread_mutex_init(&p->bg_mu, NULL);
	pthread_cond_init(&p->bg_cv, NULL);
	atomic_store(&p->rebuild_slot, -1);
	p->bg_kick = true;     /* look for work left from the last run */
	rc = pthread_create(&p->bg, NULL, bg_main, p);
	if (rc) {
		pthread_cond_destroy(&p->bg_cv);
		pthread_mutex_destroy(&p->bg_mu);
		return -rc;
	}
	p->bg_started = true;
	return 0;
}

void raid_bg_stop(struct raid_pool *p)
{
	if (!p->bg_started)
		return;
	pthread_mutex_lock(&p->bg_mu);
	p->bg_stop = true;
	pthread_cond_signal(&p->bg_cv);
	pthread_mutex_unlock(&p->bg_mu);
	pthread_join(p->bg, NULL);
	pthread_cond_destroy(&p->bg_cv);
	pthread_mutex_destroy(&p->bg_mu);
	p->bg_started = false;
}

void raid_bg_kick(struct raid_pool *p)
{
	if (!p->bg_started)
		return;
	pthread_mutex_lock(&p->bg_mu);
	p->bg_kick = true;
	pthread_cond_signal(&p->bg_cv);
	pthread_mutex_unlock(&p->bg_mu);
}

int raid_md_pool_scrub(struct raid_pool *p, bool repair)
{
	if (p->g.npar == 0) {
		LOG_ERR(RAID_MOD, "pool %s: raid0 has nothing to scrub", p->name);
		return -EINVAL;
	}
	if (raid_pool_unusable(p) || atomic_load(&p->rebuild_slot) >= 0 ||
	    atomic_load(&p->rsh.active) || atomic_load(&p->grow_pending)) {
		LOG_ERR(RAID_MOD, "pool %s: scrub needs an optimal pool, not rebuilding or reshaping",
			p->name);
		return -EBUSY;
	}
	/* A resync in progress (state 3) does not refuse it: the request waits
	 * for the background thread, which runs it after the resync; until it
	 * ended the state stays "running" (1), so nobody reads the resync's
	 * count as this scrub's result. */
	pthread_mutex_lock(&p->bg_mu);
	if (p->scrub_req || atomic_load(&p->scrub_state) == 1) {
		pthread_mutex_unlock(&p->bg_mu);
		return -EALREADY;
	}
	p->scrub_req = true;
	p->scrub_repair = repair;
	atomic_store(&p->scrub_state, 1);
	pthread_cond_signal(&p->bg_cv);
	pthread_mutex_unlock(&p->bg_mu);
	return 0;
}
