/*
 * raid/reshape.c - a pool grows by one member (raid0, raid5, raid6: more
 * data per row) or a mirror pair (raid10), or changes level (raid1 of two
 * members -> raid5 of three; raid5 -> raid6 with Q on the new member,
 * where nothing moves) while it serves I/O: md's --grow. The data moves from the old layout go
 * to the new layout gn window by window, from logical byte 0 up, on the
 * pool's background thread (rebuild.c calls raid_reshape_run), paced like
 * a rebuild. Logical addresses do not move: a volume's bytes keep their
 * offsets, only where they live on the members changes, so nothing above
 * the pool notices but the extra space at the end.
 *
 * Layer: background-jobs, below the thread that runs it
 * (raid/README.md "Layers"). May call: io.c (raid_md_vol_submit_geom,
 * raid_io_gate_go), bg_job.c, scache.c, bitmap.c, mstate.c, ioctx.c,
 * geom.c, parity.c, conf/. Its gate on the request path is
 * reshape_gate.c, below io.c.
 *
 * Layouts by position (rs.mu; ckpt <= pos <= gate_end):
 *   [0, ckpt)         gn, durable (members fsync'd, then the superblocks
 *                     record reshape_pos = ckpt)
 *   [ckpt, pos)       gn, maybe not durable: a crash redoes it from go
 *   [pos, gate_end)   the window being copied
 *   [gate_end, ...)   go
 * Requests overlapping [ckpt, gate_end) wait at the gate (a redo after a
 * crash would overwrite what they wrote in gn with go's older bytes, and
 * the window is being copied); below ckpt they are served by gn, from
 * gate_end on by go.
 *
 * Safety rule: a window's gn write of logical [wa, wb) covers member rows
 * [0, ceil(wb / gn.stripe)); go keeps the bytes from ckpt on in member rows
 * from floor(ckpt / go.stripe) on. The write may go ahead only when the
 * first ends before the second begins (safe()): go's copy of everything a
 * redo needs is then intact. When it does not hold with ckpt at pos, the
 * checkpoint moves to pos first; when it does not hold even so - the first
 * few windows, whose new place overlaps their own old one - the window is
 * first copied to the tail of the (first) new member (beyond anything gn uses
 * before the reshape ends), fdatasync'd, and recorded in the superblocks
 * (backup_pos/len/crc); a crash then restores it from there (resume()).
 *
 * States (rs.active, and what the background thread does):
 *   IDLE --raid_md_pool_grow (control thread: checked there, handed over
 *           by raid_reshape_request; grow_pending until started here:
 *           start())--> RUNNING, or IDLE again with a reshape_failed
 *           event when it could not start
 *   RUNNING --every byte of go moved (finish())--> IDLE, p->g = gn
 *   RUNNING --bg_stop: checkpoint at pos--> (pool closed; the superblocks
 *           say RESHAPE) --assembly: raid_reshape_resume--> RUNNING
 *   RUNNING --a window could not be read or written (rewind_gate)-->
 *           RUNNING with rs.error set, retried each second; meanwhile
 *           go serves everything from ckpt on again, but a window whose
 *           copy is on the new member stays held until it is put back
 * While RUNNING: the stripe cache takes nothing (p->sc_off), no rebuild,
 * scrub or resync starts (rebuild.c: they need one layout; a member lost
 * meanwhile is rebuilt, a crash's dirty regions resynced, once the
 * reshape ended), p->g is gn with its usable bytes clamped to go's (a new
 * volume fits where it is served either way).
 * Invariant (rs_check): ckpt <= pos <= gate_end <= go.usable, ckpt and
 * pos whole rows of gn (or go's end), a backup only at ckpt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/io_int.h"
#include "raid/member.h"

#define RS_WINDOW (1u << 20)            /* logical bytes per window, about */
#define RS_CKPT_BYTES (16u << 20)       /* checkpoint at least this often */
#define RS_CKPT_NS 1000000000ull        /* and at least once a second */

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* raid5 -> raid6 with Q on the new member: every data and P byte stays
 * where it is, a window's write only rewrites them with the same bytes
 * (and adds Q): nothing a redo needs is ever overwritten. */
static bool same_place(const struct raid_reshape *rs)
{
	return rs->go.level == CONF_RAID5 && rs->gn.level == CONF_RAID6 &&
	       rs->gn.layout == RAID_LAYOUT_Q_LAST && rs->gn.n == rs->go.n + 1;
}

static bool safe(const struct raid_reshape *rs, uint64_t wb, uint64_t ckpt)
{
	return same_place(rs) || div_up(wb, rs->gn.stripe_bytes) <= ckpt / rs->go.stripe_bytes;
}

static uint64_t window_bytes(const struct raid_reshape *rs)
{
	uint64_t k = RS_WINDOW / rs->gn.stripe_bytes;

	return (k ? k : 1) * rs->gn.stripe_bytes;
}

/* Member offset (data area) of the backup on the new member: its last
 * window's worth of bytes, which gn uses only for the space the reshape
 * adds (room_for_backup). */
static uint64_t backup_moff(const struct raid_reshape *rs)
{
	return rs->gn.member_bytes - window_bytes(rs);
}

static bool room_for_backup(const struct raid_reshape *rs)
{
	return same_place(rs) ||
	       div_up(rs->go.usable, rs->gn.stripe_bytes) * rs->gn.chunk <= backup_moff(rs);
}

static bool rs_check(struct raid_reshape *rs)
{
	bool ok;

	pthread_mutex_lock(&rs->mu);
	ok = rs->ckpt <= rs->pos && rs->pos <= rs->gate_end && rs->gate_end <= rs->go.usable &&
	     (rs->pos % rs->gn.stripe_bytes == 0 || rs->pos == rs->go.usable) &&
	     (!rs->backup_len || rs->backup_pos == rs->ckpt);
	pthread_mutex_unlock(&rs->mu);
	return ok;
}

void raid_reshape_init(struct raid_pool *p)
{
	memset(&p->rsh, 0, sizeof(p->rsh));
	pthread_mutex_init(&p->rsh.mu, NULL);
}

void raid_reshape_destroy(struct raid_pool *p)
{
	/* nothing can wait at the gate: every request ended before close */
	pthread_mutex_destroy(&p->rsh.mu);
}

/* Every request admitted so far has finished (those admitted from now on
 * see the gate as it is now). Background thread only. */
static void drain(struct raid_pool *p)
{
	unsigned e = atomic_fetch_add(&p->rsh.epoch, 1);

	while (atomic_load(&p->rsh.inflight[e & 1]))
		usleep(100);
}

/* The gate moved: the held requests try again (on their own threads). */
static void release(struct raid_pool *p)
{
	struct req *rq, *next;

	pthread_mutex_lock(&p->rsh.mu);
	rq = p->rsh.waiters;
	p->rsh.waiters = p->rsh.waiters_tail = NULL;
	pthread_mutex_unlock(&p->rsh.mu);
	for (; rq; rq = next) {
		next = rq->rs_next;
		rq->rs_next = NULL;
		while (raid_defer(rq->ctx, raid_io_gate_go, rq)) {
			LOG_ERR(RAID_MOD, "pool %s: out of memory releasing a request: retrying",
				p->name);
			usleep(10000);
		}
	}
}

/* ---------------- I/O of the background thread ---------------- */

static void io_cb(struct raid_io *io)
{
	*(bool *)io->arg = true;
}

static int rs_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, uint64_t off,
		 uint8_t *buf, uint64_t len, const struct raid_geom *g)
{
	struct raid_io io;
	bool done = false;
	int rc;

	memset(&io, 0, sizeof(io));
	io.op = op;
	io.off = off;
	io.len = len;
	io.buf = buf;
	io.cb = io_cb;
	io.arg = &done;
	rc = raid_md_vol_submit_geom(v, ctx, &io, g);
	if (rc)
		return rc;
	while (!done)
		raid_ioctx_wait(ctx, 100);
	return io.result;
}

void raid_reshape_sb_fill(struct raid_pool *p, struct raid_sb *sb)
{
	struct raid_reshape *rs = &p->rsh;

	/* not before the pool has its new layout (start) */
	if (!rs->on_disk)
		return;
	pthread_mutex_lock(&rs->mu);
	sb->flags |= RAID_SB_RESHAPE;
	if (rs->go.layout == RAID_LAYOUT_Q_LAST)
		sb->flags |= RAID_SB_FROM_Q_LAST;
	sb->reshape_level = (uint32_t)rs->go.level;
	sb->reshape_n = rs->go.n;
	sb->reshape_pos = rs->ckpt_disk;
	sb->backup_pos = rs->backup_len ? rs->backup_pos : 0;
	sb->backup_len = rs->backup_len;
	sb->backup_crc = rs->backup_len ? rs->backup_crc : 0;
	pthread_mutex_unlock(&rs->mu);
}

/* Make [0, @to) durable in gn and say so in the superblocks; then open
 * the gate below @to. The order matters: a request let into gn below the
 * new checkpoint before the superblocks said so could be undone by a redo
 * after a crash. */
static int checkpoint(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_vol *v, uint64_t to)
{
	struct raid_reshape *rs = &p->rsh;
	int rc;

	rc = rs_io(v, ctx, RAID_OP_FLUSH, 0, NULL, 0, &p->g);
	if (rc)
		return rc;
	pthread_mutex_lock(&p->meta_mu);
	pthread_mutex_lock(&rs->mu);
	rs->ckpt_disk = to;
	if (rs->backup_len && rs->backup_pos < to)
		rs->backup_len = 0;
	pthread_mutex_unlock(&rs->mu);
	rc = raid_pool_write_sbs_locked(p, false);
	pthread_mutex_unlock(&p->meta_mu);
	if (rc)
		return rc;
	pthread_mutex_lock(&rs->mu);
	rs->ckpt = to;
	pthread_mutex_unlock(&rs->mu);
	rs->t_ckpt_ns = conf_mono_ns();
	release(p);
	return 0;
}

static struct raid_member *new_member(struct raid_pool *p)
{
	return p->m[p->rsh.go.n];
}

/* Copy @len bytes of the window at @wa to the new member's tail, durably,
 * and record it. ckpt == wa. */
static int backup_write(struct raid_pool *p, const uint8_t *buf, uint64_t wa, uint64_t len)
{
	struct raid_reshape *rs = &p->rsh;
	struct raid_member *m = new_member(p);
	int rc;

	if (!m || m->fd < 0 || !raid_member_writable(m))
		return -EIO;
	if (pwrite(m->fd, buf, len, (off_t)(RAID_DATA_OFF + backup_moff(rs))) != (ssize_t)len ||
	    fdatasync(m->fd)) {
		rc = -errno ? -errno : -EIO;
		raid_member_fail(m, rc, "reshape backup write failed");
		return rc;
	}
	pthread_mutex_lock(&p->meta_mu);
	pthread_mutex_lock(&rs->mu);
	rs->backup_pos = wa;
	rs->backup_len = (uint32_t)len;
	rs->backup_crc = crc32_iscsi((unsigned char *)buf, (int)len, 0xffffffffu);
	pthread_mutex_unlock(&rs->mu);
	rc = raid_pool_write_sbs_locked(p, false);
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

static void set_error(struct raid_pool *p, int rc, const char *what, uint64_t a)
{
	if (atomic_exchange(&p->rsh.error, rc) != rc)
		LOG_ERR(RAID_MOD, "pool %s: reshape: %s at logical byte %llu failed: %s; retrying every second",
			p->name, what, (unsigned long long)a, strerror(-rc));
}

/* ---------------- start, resume, finish ---------------- */

/* Start moving to @lvl with the @k new members @nm (attached, in no
 * slot). Background thread; the control thread checked the pool. */
static int start(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_member *const *nm,
		 unsigned k, enum conf_level lvl)
{
	struct raid_reshape *rs = &p->rsh;
	struct raid_geom gn;
	unsigned n = p->g.n, i;
	int rc;

	rc = raid_geom_init_layout(&gn, lvl, n + k, p->g.chunk, p->g.member_bytes,
				   p->level == CONF_RAID5 && lvl == CONF_RAID6 ? RAID_LAYOUT_Q_LAST
										: RAID_LAYOUT_DEFAULT);
	if (rc)
		return rc;
	{
		struct raid_reshape t = { .go = p->g, .gn = gn };

		if (!room_for_backup(&t)) {
			LOG_ERR(RAID_MOD, "pool %s: the members are too small for a reshape to %s on %u members (no room for its window copy)",
				p->name, conf_level_name(lvl), n + k);
			return -ENOSPC;
		}
	}
	/* everything quiet, the cache empty and off; the layouts set first
	 * (status reads them as soon as the reshape is active) */
	pthread_mutex_lock(&rs->mu);
	rs->go = p->g;
	rs->gn = gn;
	rs->ckpt = rs->pos = rs->gate_end = rs->ckpt_disk = 0;
	rs->backup_len = 0;
	rs->t_start_ns = rs->t_ckpt_ns = conf_mono_ns();
	rs->pos_start = 0;
	rs->all = true;
	pthread_mutex_unlock(&rs->mu);
	atomic_store(&rs->active, true);
	drain(p);
	if (p->sc.max) {
		rc = raid_bg_cache_flush(p, ctx, 0);
		if (!rc && atomic_load(&p->sc.n))
			rc = -EIO;
		if (rc)
			goto out_ungate;
	}
	atomic_store(&p->sc_off, true);
	for (i = 0; i < k; i++) {
		rc = raid_bm_write_member(p, nm[i]);
		if (rc)
			goto out_cache;
	}

	pthread_mutex_lock(&p->meta_mu);
	if (p->n_slots + k > RAID_MAX_SLOTS) {
		pthread_mutex_unlock(&p->meta_mu);
		rc = -ENOSPC;
		goto out_cache;
	}
	for (i = 0; i < k; i++) {
		if (p->n_slots > n + i) {
			/* a spare or a free slot sits where a new raid disk goes:
			 * it moves to the end (no I/O goes to spares); entry
			 * first, then n_slots (the slot table rule, pool.c) */
			struct raid_member *sp = p->m[n + i];

			atomic_store(&sp->slot, p->n_slots);
			p->m[p->n_slots] = sp;
			p->n_slots++;
		}
		nm[i]->slot = n + i;
		atomic_store(&nm[i]->state, RAID_M_ACTIVE);
		p->m[n + i] = nm[i];
		if (p->n_slots == n + i)
			p->n_slots++;
	}
	p->g = gn;
	p->g.usable = rs->go.usable;
	p->level = lvl;
	rs->on_disk = true;
	/* their superblocks first: see raid_pool_write_sbs_locked */
	p->sb_first = nm[0];
	p->sb_first2 = k > 1 ? nm[1] : NULL;
	rc = raid_pool_write_sbs_locked(p, false);
	p->sb_first = p->sb_first2 = NULL;
	for (i = 0; i < k; i++)
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_RESHAPE_STARTED,
							 .member = nm[i]->path, .slot = (int)(n + i),
							 .detail = conf_level_name(lvl) });
	pthread_mutex_unlock(&p->meta_mu);
	LOG_INFO(RAID_MOD, "pool %s: reshape to %s on %u members started (new member%s %s%s%s)",
		 p->name, conf_level_name(lvl), n + k, k > 1 ? "s" : "", nm[0]->path,
		 k > 1 ? ", " : "", k > 1 ? nm[1]->path : "");
	pthread_mutex_lock(&rs->mu);
	rs->all = false;
	pthread_mutex_unlock(&rs->mu);
	release(p);
	return rc;

out_cache:
	atomic_store(&p->sc_off, false);
out_ungate:
	atomic_store(&rs->active, false);
	pthread_mutex_lock(&rs->mu);
	rs->all = false;
	pthread_mutex_unlock(&rs->mu);
	release(p);
	return rc;
}

int raid_reshape_resume(struct raid_pool *p, const struct raid_sb *sb)
{
	struct raid_reshape *rs = &p->rsh;
	int rc;

	rs->gn = p->g;
	rc = raid_geom_init_layout(&rs->go, (enum conf_level)sb->reshape_level, sb->reshape_n,
				   p->g.chunk, p->g.member_bytes,
				   sb->flags & RAID_SB_FROM_Q_LAST ? RAID_LAYOUT_Q_LAST
								   : RAID_LAYOUT_DEFAULT);
	if (rc || sb->reshape_pos > rs->go.usable ||
	    (sb->reshape_pos % rs->gn.stripe_bytes && sb->reshape_pos != rs->go.usable) ||
	    (sb->backup_len && (sb->backup_pos != sb->reshape_pos ||
				sb->backup_len > window_bytes(rs) ||
				sb->backup_pos + sb->backup_len > rs->go.usable))) {
		LOG_ERR(RAID_MOD, "pool %s: the superblocks record a reshape this version cannot continue",
			p->name);
		return -EINVAL;
	}
	rs->ckpt = rs->pos = rs->gate_end = rs->ckpt_disk = sb->reshape_pos;
	rs->backup_pos = sb->backup_pos;
	rs->backup_len = sb->backup_len;
	rs->backup_crc = sb->backup_crc;
	if (rs->backup_len) {
		/* the window's old place may be overwritten: nothing is served
		 * from it until the backup is back (first thing the thread does) */
		struct raid_member *m = p->m[rs->go.n];
		uint8_t *buf = raid_alloc_nz(rs->backup_len);

		if (!buf)
			return -ENOMEM;
		if (!m || m->fd < 0 ||
		    pread(m->fd, buf, rs->backup_len, (off_t)(RAID_DATA_OFF + backup_moff(rs))) !=
			    (ssize_t)rs->backup_len ||
		    crc32_iscsi(buf, (int)rs->backup_len, 0xffffffffu) != rs->backup_crc) {
			free(buf);
			LOG_ERR(RAID_MOD, "pool %s: reshape: the copy of logical bytes [%llu, %llu) on the new member is unreadable or damaged: those bytes cannot be recovered; the pool is not started",
				p->name, (unsigned long long)rs->backup_pos,
				(unsigned long long)(rs->backup_pos + rs->backup_len));
			return -EIO;
		}
		free(buf);
		rs->gate_end = rs->backup_pos + rs->backup_len;
	}
	rs->t_start_ns = rs->t_ckpt_ns = conf_mono_ns();
	rs->pos_start = rs->pos;
	p->g.usable = rs->go.usable;
	rs->on_disk = true;
	atomic_store(&p->sc_off, true);
	atomic_store(&rs->active, true);
	LOG_INFO(RAID_MOD, "pool %s: resuming the reshape from %s on %u members to %s on %u at %llu of %llu bytes%s",
		 p->name, conf_level_name(rs->go.level), rs->go.n, conf_level_name(rs->gn.level),
		 rs->gn.n, (unsigned long long)rs->ckpt, (unsigned long long)rs->go.usable,
		 rs->backup_len ? " (restoring a window from its copy first)" : "");
	return 0;
}

/* Every byte is in gn: the pool becomes gn. */
static int finish(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_vol *v)
{
	struct raid_reshape *rs = &p->rsh;
	int rc;

	rc = checkpoint(p, ctx, v, rs->go.usable);
	if (rc)
		return rc;
	pthread_mutex_lock(&rs->mu);
	rs->all = true;
	pthread_mutex_unlock(&rs->mu);
	drain(p);
	pthread_mutex_lock(&p->meta_mu);
	p->g = rs->gn;
	rs->on_disk = false;
	raid_sc_destroy(&p->sc);
	raid_sc_init(&p->sc, p->g.stripe_bytes, raid_geom_is_parity_level(&p->g) ? 64 : 0);
	atomic_store(&p->sc_off, false);
	atomic_store(&rs->active, false);
	rc = raid_pool_write_sbs_locked(p, false);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_RESHAPE_DONE, .slot = -1,
						 .detail = conf_level_name(p->g.level),
						 .count = p->g.n });
	pthread_mutex_unlock(&p->meta_mu);
	LOG_INFO(RAID_MOD, "pool %s: reshape done: %s on %u members, %llu bytes usable (was %llu)",
		 p->name, conf_level_name(p->g.level), p->g.n, (unsigned long long)p->g.usable,
		 (unsigned long long)rs->go.usable);
	pthread_mutex_lock(&rs->mu);
	rs->all = false;
	pthread_mutex_unlock(&rs->mu);
	release(p);
	return rc;
}

/* ---------------- the copy ---------------- */

/* Sleep so that the member bytes written since the start stay under the
 * rebuild cap (rebuild_mbps, 10^6 bytes/s per member written). */
static void pace(struct raid_pool *p)
{
	struct raid_reshape *rs = &p->rsh;
	double el = (double)(conf_mono_ns() - rs->t_start_ns) / 1e9;
	uint64_t done = rs->pos - rs->pos_start;

	if (el > 0)
		atomic_store(&rs->rate, (uint64_t)((double)done / el));
	raid_bg_pace(p, (double)rs->t_start_ns / 1e9, done / rs->gn.ndata);
}

/* One window [wa, wb): 0, or -errno with nothing moved past ckpt. */
static int window(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_vol *v, uint8_t *buf,
		  uint64_t wa, uint64_t wb)
{
	struct raid_reshape *rs = &p->rsh;
	bool critical;
	int rc;

	if (!safe(rs, wb, rs->ckpt) && rs->ckpt < wa) {
		rc = checkpoint(p, ctx, v, wa);
		if (rc) {
			set_error(p, rc, "a checkpoint", wa);
			return rc;
		}
	}
	critical = !safe(rs, wb, wa);
	pthread_mutex_lock(&rs->mu);
	if (rs->gate_end < wb)
		rs->gate_end = wb;
	pthread_mutex_unlock(&rs->mu);
	drain(p);
	rc = rs_io(v, ctx, RAID_OP_READ, wa, buf, wb - wa, &rs->go);
	if (rc) {
		set_error(p, rc, "reading the old layout", wa);
		return rc;
	}
	if (critical) {
		rc = backup_write(p, buf, wa, wb - wa);
		if (rc) {
			set_error(p, rc, "copying a window to the new member", wa);
			return rc;
		}
	}
	rc = rs_io(v, ctx, RAID_OP_WRITE, wa, buf, wb - wa, &rs->gn);
	if (rc) {
		set_error(p, rc, "writing the new layout", wa);
		return rc;
	}
	pthread_mutex_lock(&rs->mu);
	rs->pos = wb;
	pthread_mutex_unlock(&rs->mu);
	if (critical || wb - rs->ckpt >= RS_CKPT_BYTES ||
	    conf_mono_ns() - rs->t_ckpt_ns >= RS_CKPT_NS) {
		rc = checkpoint(p, ctx, v, wb);
		if (rc) {
			set_error(p, rc, "a checkpoint", wb);
			return rc;
		}
	}
	atomic_store(&rs->error, 0);
	return 0;
}

/* After a crash inside a window that had to be copied: put the copy in
 * its new place, then go on from its end. */
static int restore_backup(struct raid_pool *p, struct raid_ioctx *ctx, struct raid_vol *v,
			  uint8_t *buf)
{
	struct raid_reshape *rs = &p->rsh;
	struct raid_member *m = new_member(p);
	uint64_t a = rs->backup_pos, len = rs->backup_len;
	int rc;

	if (!m || m->fd < 0 ||
	    pread(m->fd, buf, len, (off_t)(RAID_DATA_OFF + backup_moff(rs))) != (ssize_t)len ||
	    crc32_iscsi(buf, (int)len, 0xffffffffu) != rs->backup_crc) {
		set_error(p, -EIO, "reading the window's copy", a);
		return -EIO;
	}
	rc = rs_io(v, ctx, RAID_OP_WRITE, a, buf, len, &rs->gn);
	if (rc) {
		set_error(p, rc, "writing the restored window", a);
		return rc;
	}
	pthread_mutex_lock(&rs->mu);
	rs->pos = a + len;
	pthread_mutex_unlock(&rs->mu);
	rc = checkpoint(p, ctx, v, a + len);
	if (rc)
		set_error(p, rc, "a checkpoint", a + len);
	else
		atomic_store(&rs->restored, true);
	if (!rc)
		LOG_INFO(RAID_MOD, "pool %s: reshape: logical bytes [%llu, %llu) restored from their copy",
			 p->name, (unsigned long long)a, (unsigned long long)(a + len));
	return rc;
}

/* A window failed: until the retry, what it held is served by go again,
 * whose copy of everything from ckpt on is intact - unless the window had
 * to be copied to the new member first (its old place may be partly
 * overwritten): then it stays held until its copy is put back. */
static void rewind_gate(struct raid_pool *p)
{
	struct raid_reshape *rs = &p->rsh;

	pthread_mutex_lock(&rs->mu);
	if (rs->backup_len) {
		pthread_mutex_unlock(&rs->mu);
		return;
	}
	rs->pos = rs->gate_end = rs->ckpt;
	pthread_mutex_unlock(&rs->mu);
	release(p);
}

void raid_reshape_run(struct raid_pool *p, struct raid_ioctx *ctx)
{
	struct raid_reshape *rs = &p->rsh;
	struct raid_vol v;
	uint64_t W = window_bytes(rs), end = rs->go.usable;
	uint8_t *buf;
	int rc = 0;

	memset(&v, 0, sizeof(v));
	v.pool = p;
	v.start = 0;
	atomic_store(&v.size, end);
	snprintf(v.name, sizeof(v.name), "(reshape)");
	buf = raid_alloc_nz(W);
	if (!buf) {
		set_error(p, -ENOMEM, "a buffer", rs->pos);
		return;
	}
	if (rs->backup_len) {
		rc = restore_backup(p, ctx, &v, buf);
		if (rc)
			goto out_free;
	}
	/* what a crash left in [ckpt, pos) is redone from go */
	pthread_mutex_lock(&rs->mu);
	rs->pos = rs->ckpt;
	pthread_mutex_unlock(&rs->mu);
	while (rs->pos < end && !raid_bg_stop_requested(p) && !atomic_load(&p->failed)) {
		uint64_t wa = rs->pos, wb = wa + W < end ? wa + W : end;

		RTGT_CHECK(rs_check(rs));
		rc = window(p, ctx, &v, buf, wa, wb);
		if (rc) {
			rewind_gate(p);
			goto out_free;
		}
		pace(p);
	}
	if (rs->pos == end)
		rc = finish(p, ctx, &v);
	else if (rs->ckpt < rs->pos)
		rc = checkpoint(p, ctx, &v, rs->pos);   /* stopping: keep what is done */
	if (rc)
		set_error(p, rc, "a checkpoint", rs->pos);
out_free:
	free(buf);
}

/* ---------------- management ---------------- */

/* Hands @nm (@k of them) to the background thread and returns: the
 * control thread must not wait for the start, which drains the pool's
 * requests - some of which may complete only on the thread that called us
 * (rtgtd's worker 0 answers the control socket and serves connections). */
int raid_reshape_request(struct raid_pool *p, struct raid_member *const *nm, unsigned k,
			 enum conf_level lvl)
{
	pthread_mutex_lock(&p->bg_mu);
	if (p->grow_k || atomic_load(&p->grow_pending) || atomic_load(&p->rsh.active)) {
		pthread_mutex_unlock(&p->bg_mu);
		return -EALREADY;
	}
	for (unsigned i = 0; i < k; i++)
		p->grow_m[i] = nm[i];
	p->grow_k = k;
	p->grow_level = lvl;
	atomic_store(&p->grow_pending, true);
	p->bg_kick = true;
	pthread_cond_signal(&p->bg_cv);
	pthread_mutex_unlock(&p->bg_mu);
	return 0;
}

void raid_reshape_take_request(struct raid_pool *p, struct raid_ioctx *ctx)
{
	struct raid_member *nm[2];
	enum conf_level lvl;
	unsigned k;
	char why[96];
	int rc;

	pthread_mutex_lock(&p->bg_mu);
	k = p->grow_k;
	nm[0] = p->grow_m[0];
	nm[1] = p->grow_m[1];
	lvl = p->grow_level;
	p->grow_k = 0;
	pthread_mutex_unlock(&p->bg_mu);
	if (!k)
		return;
	rc = start(p, ctx, nm, k, lvl);
	if (rc && !atomic_load(&p->rsh.active)) {
		/* they never joined: their files stay open until the pool
		 * closes, as any member's that left */
		snprintf(why, sizeof(why), "%s", strerror(-rc));
		LOG_ERR(RAID_MOD, "pool %s: the reshape to %s with %s did not start: %s; the pool is as it was",
			p->name, conf_level_name(lvl), nm[0]->path, why);
		pthread_mutex_lock(&p->meta_mu);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_RESHAPE_FAILED,
							 .member = nm[0]->path, .slot = -1, .err = rc,
							 .detail = why });
		for (unsigned i = 0; i < k; i++) {
			nm[i]->retired_next = p->retired;
			p->retired = nm[i];
		}
		pthread_mutex_unlock(&p->meta_mu);
	}
	atomic_store(&p->grow_pending, false);
}

void raid_reshape_info(struct raid_pool *p, struct raid_pool_info *out)
{
	struct raid_reshape *rs = &p->rsh;
	uint64_t rate;

	if (!atomic_load(&rs->active)) {
		if (atomic_load(&p->grow_pending)) {
			/* asked for, not started yet */
			out->reshaping = true;
			out->reshape_from_level = conf_level_name(p->level);
			out->reshape_from_members = p->g.n;
			out->reshape_total_bytes = p->g.usable;
			out->reshape_eta_s = -1;
		}
		return;
	}
	pthread_mutex_lock(&rs->mu);
	out->reshaping = true;
	out->reshape_from_level = conf_level_name(rs->go.level);
	out->reshape_from_members = rs->go.n;
	out->reshape_done_bytes = rs->pos;
	out->reshape_total_bytes = rs->go.usable;
	out->reshape_progress = rs->go.usable ? (double)rs->pos / (double)rs->go.usable : 1.0;
	rate = atomic_load(&rs->rate);
	out->reshape_eta_s = rate ? (double)(rs->go.usable - rs->pos) / (double)rate : -1;
	out->reshape_error = atomic_load(&rs->error);
	out->reshape_restored = atomic_load(&rs->restored) || rs->backup_len;
	pthread_mutex_unlock(&rs->mu);
}
