/*
 * raid/pool_admin.c - the pool's management: info, fail, replace, add
 * spare, grow, remove (rtgtctl through raid.h and vol.c's ops table).
 *
 * Layer: pool assembly (raid/README.md "Layers"), with pool.c, whose
 * helpers (pool_int.h) it uses; pool.c calls nothing here. May call:
 * pool.c, reshape.c, rebuild.c, thin.c, bitmap.c, member.c, mstate.c,
 * sb.c, lock.c, ioctx.c, geom.c, conf/. The slot table rule at the top of
 * pool.c holds here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/member.h"
#include "raid/mstate.h"
#include "raid/pool_int.h"

int raid_md_pool_info(struct raid_pool *p, struct raid_pool_info *out)
{
	unsigned i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->meta_mu);
	snprintf(out->name, sizeof(out->name), "%s", p->name);
	out->level = raid_level_name(p->level);
	out->state = raid_pool_state_name(p);
	out->rebuild_progress = 0.0;
	out->rebuild_eta_s = -1.0;
	out->usable_bytes = p->g.usable;
	out->chunk = p->g.chunk;
	out->n_members = p->n_slots;
	for (i = 0; i < p->n_slots && i < 64; i++) {
		struct raid_member *m = p->m[i];
		struct raid_member_info *mi = &out->members[i];
		int st = atomic_load(&m->state);

		snprintf(mi->path, sizeof(mi->path), "%s", m->path);
		mi->state = raid_mstate_name(st);
		mi->read_bytes = atomic_load(&m->rd_bytes);
		mi->write_bytes = atomic_load(&m->wr_bytes);
		mi->read_ops = atomic_load(&m->rd_ops);
		mi->write_ops = atomic_load(&m->wr_ops);
		mi->read_lat_p50_us = raid_lat_pct_us(&m->lat[0], 50);
		mi->read_lat_p99_us = raid_lat_pct_us(&m->lat[0], 99);
		mi->write_lat_p50_us = raid_lat_pct_us(&m->lat[1], 50);
		mi->write_lat_p99_us = raid_lat_pct_us(&m->lat[1], 99);
		mi->read_lat_max_us = conf_hist_max_ns(&m->lat[0]) / 1000;
		mi->write_lat_max_us = conf_hist_max_ns(&m->lat[1]) / 1000;
		mi->lat_sum_us[0] = conf_hist_sum_ns(&m->lat[0]) / 1000;
		mi->lat_sum_us[1] = conf_hist_sum_ns(&m->lat[1]) / 1000;
		for (unsigned d = 0; d < 2; d++)
			for (unsigned b = 0; b < RAID_MEMBER_LAT_BUCKETS; b++)
				mi->lat_hist[d][b] = conf_hist_bucket_count(&m->lat[d], b);
		mi->busy_ns = raid_member_busy_ns(m);
		if (st == RAID_M_REBUILDING && p->g.member_bytes)
			out->rebuild_progress = (double)atomic_load(&m->rebuild_pos) /
						(double)p->g.member_bytes;
		if (st == RAID_M_REPLACING && (int)i == atomic_load(&p->repl_slot) &&
		    p->g.member_bytes) {
			int s = atomic_load(&m->repl_for);
			uint64_t rate = atomic_load(&p->repl_rate), pos = atomic_load(&m->rebuild_pos);

			out->replacing = true;
			out->replace_progress = (double)pos / (double)p->g.member_bytes;
			out->replace_eta_s = rate ? (double)(p->g.member_bytes - pos) / (double)rate : -1.0;
			snprintf(mi->replaces, sizeof(mi->replaces), "%s",
				 s >= 0 && (unsigned)s < p->g.n ? p->m[s]->path : "");
		}
	}
	for (i = 0; i < p->sb.n_vols && i < 64; i++) {
		snprintf(out->volumes[i].name, sizeof(out->volumes[i].name), "%s", p->sb.vols[i].name);
		out->volumes[i].bytes = p->sb.vols[i].size;
		out->volumes[i].open = p->vols[i] != NULL;
		if (p->sb.vols[i].flags & RAID_SBV_THIN) {
			out->volumes[i].thin = true;
			raid_thin_space(p, p->sb.vols[i].uuid, &out->volumes[i].allocated,
					&out->volumes[i].shared);
			out->volumes[i].snapshot = !!(p->sb.vols[i].flags & RAID_SBV_SNAP);
			snprintf(out->volumes[i].origin, sizeof(out->volumes[i].origin), "%s",
				 p->sb.vols[i].origin);
			raid_thin_usage(p, &out->thin_used_bytes, &out->thin_space_bytes);
			out->thin_threshold = p->thin_threshold ? p->thin_threshold : 80;
		}
	}
	out->n_volumes = i;
	if (atomic_load(&p->rebuild_slot) >= 0) {
		struct raid_member *m = p->m[atomic_load(&p->rebuild_slot)];
		uint64_t rate = atomic_load(&p->rebuild_rate);

		out->rebuild_progress = (double)atomic_load(&m->rebuild_pos) / (double)p->g.member_bytes;
		if (rate)
			out->rebuild_eta_s = (double)(p->g.member_bytes - atomic_load(&m->rebuild_pos)) /
					     (double)rate;
	}
	out->syncing = atomic_load(&p->syncing);
	out->sync_progress = out->syncing && p->g.member_bytes ?
			     (double)atomic_load(&p->sync_pos) / (double)p->g.member_bytes : 1.0;
	out->sync_eta_s = -1.0;
	if (out->syncing && atomic_load(&p->rebuild_slot) < 0 && atomic_load(&p->scrub_state) == 3 &&
	    atomic_load(&p->rebuild_rate))
		out->sync_eta_s = (double)(p->g.member_bytes - atomic_load(&p->sync_pos)) /
				  (double)atomic_load(&p->rebuild_rate);
	pthread_mutex_lock(&p->bad_mu);
	for (i = 0; i < atomic_load(&p->n_bad); i++)
		out->bad_bytes += p->bad[i].b - p->bad[i].a;
	pthread_mutex_unlock(&p->bad_mu);
	out->scrub_mismatches = atomic_load(&p->scrub_mismatch);
	switch (atomic_load(&p->scrub_state)) {
	case 1: case 3: out->scrub_state = "running"; break;   /* 3: a resync */
	case 2: out->scrub_state = "done"; break;
	default: out->scrub_state = "idle"; break;
	}
	if (p->bm.region)
		out->unsynced_bytes = atomic_load(&p->bm.n_unsynced) * p->bm.region;
	raid_reshape_info(p, out);
	pthread_mutex_unlock(&p->meta_mu);
	return 0;
}

static struct raid_member *find_member(struct raid_pool *p, const char *member)
{
	char *end;
	unsigned long idx;
	unsigned i;

	errno = 0;
	idx = strtoul(member, &end, 10);
	if (*member && !*end && !errno && idx < p->n_slots)
		return p->m[idx];
	for (i = 0; i < p->n_slots; i++)
		if (p->m[i] && (!strcmp(p->m[i]->path, member) ||
				(p->m[i]->rpath && !strcmp(p->m[i]->rpath, member))))
			return p->m[i];
	return NULL;
}

int raid_md_pool_fail(struct raid_pool *p, const char *member)
{
	struct raid_member *m = find_member(p, member);
	int st;

	if (!m)
		return -ENOENT;
	st = atomic_load(&m->state);
	if (st == RAID_M_FAULTY || st == RAID_M_MISSING || st == RAID_M_EMPTY)
		return -EALREADY;
	raid_member_fail(m, 0, "failed by operator");
	return 0;
}

int raid_md_pool_replace(struct raid_pool *p, const char *member)
{
	struct raid_member *m, *sp = NULL;
	unsigned k;
	int rc = 0;

	if (p->g.npar == 0) {
		LOG_ERR(RAID_MOD, "pool %s: replace: raid0 has no redundancy to replace a member with", p->name);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&p->meta_mu);
	m = find_member(p, member);
	if (!m) {
		LOG_ERR(RAID_MOD, "pool %s: replace: no member %s", p->name, member);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (m->slot >= p->g.n || atomic_load(&m->state) != RAID_M_ACTIVE || m->fd < 0) {
		LOG_ERR(RAID_MOD, "pool %s: replace: %s is %s, not an active member", p->name, m->path,
			m->slot >= p->g.n ? "a spare" : raid_mstate_name(atomic_load(&m->state)));
		rc = -EINVAL;
		goto out_unlock;
	}
	if (atomic_load(&p->repl_slot) >= 0 || atomic_load(&p->rebuild_slot) >= 0 ||
	    raid_pool_unusable(p) || atomic_load(&p->failed) || atomic_load(&p->rsh.active)) {
		LOG_ERR(RAID_MOD, "pool %s: replace %s: %s", p->name, m->path,
			atomic_load(&p->rsh.active) || atomic_load(&p->grow_pending) ? "a reshape is running" :
			atomic_load(&p->repl_slot) >= 0 ? "a replacement is already running" :
			atomic_load(&p->rebuild_slot) >= 0 ? "a rebuild is running" :
							     "the pool is not optimal");
		rc = -EBUSY;
		goto out_unlock;
	}
	for (k = p->g.n; k < p->n_slots && !sp; k++)
		if (atomic_load(&p->m[k]->state) == RAID_M_SPARE && p->m[k]->fd >= 0)
			sp = p->m[k];
	if (!sp) {
		LOG_ERR(RAID_MOD, "pool %s: replace %s: no spare (rtgtctl add-spare first)", p->name,
			m->path);
		rc = -ENOSPC;
		goto out_unlock;
	}
	/* the state before the pointer: a write that sees the pointer sees a
	 * replacement (raid_mio_submit); one that does not is earlier than the
	 * copy of its rows, which waits for its stripe lock */
	atomic_store(&sp->rebuild_pos, 0);
	atomic_store(&sp->rebuild_cp, 0);
	atomic_store(&sp->repl_for, (int)m->slot);
	atomic_store(&sp->state, RAID_M_REPLACING);
	atomic_store(&p->repl_slot, (int)sp->slot);
	atomic_store(&m->repl, sp);
	rc = raid_pool_write_sbs_locked(p, false);
	LOG_INFO(RAID_MOD, "pool %s: replacing %s (slot %u) with spare %s", p->name, m->path, m->slot,
		 sp->path);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_REPLACE_STARTED, .member = sp->path,
						 .slot = (int)m->slot, .detail = m->path });
	pthread_mutex_unlock(&p->meta_mu);
	raid_bg_kick(p);
	return rc;

out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

/* Whether @path is already an open member of @p (by the path it was
 * given or the one it resolves to). */
static bool in_pool(struct raid_pool *p, const char *path)
{
	for (unsigned i = 0; i < p->n_slots; i++) {
		if (p->m[i]->fd >= 0 && (!strcmp(p->m[i]->path, path) ||
					 (p->m[i]->rpath && !strcmp(p->m[i]->rpath, path))))
			return true;
	}
	return false;
}

/* Open @path as a candidate member of @p, with the pool's own I/O mode. */
static int cand_open(struct raid_pool *p, const char *path, struct raid_cand *c)
{
	struct conf_pool cp;

	memset(&cp, 0, sizeof(cp));
	cp.name = p->name;
	cp.direct_io = p->direct_io;
	memset(c, 0, sizeof(*c));
	return raid_cand_open(&cp, path, path, c);
}

int raid_md_pool_add_spare(struct raid_pool *p, const char *path)
{
	struct raid_cand c;
	unsigned idx;
	int rc;

	if (p->g.npar == 0) {
		LOG_ERR(RAID_MOD, "pool %s: raid0 cannot use spares", p->name);
		return -EINVAL;
	}
	if (in_pool(p, path)) {
		LOG_ERR(RAID_MOD, "pool %s: %s is already in the pool", p->name, path);
		return -EEXIST;
	}
	rc = cand_open(p, path, &c);
	if (!rc && c.m->fd < 0) {
		LOG_ERR(RAID_MOD, "pool %s: spare %s: %s", p->name, path, strerror(-c.open_err));
		rc = c.open_err ? c.open_err : -ENOENT;
	}
	if (rc) {
		raid_pool_member_close(c.m);
		return rc;
	}
	if (!raid_pool_member_holds(p, c.m)) {
		LOG_ERR(RAID_MOD, "pool %s: spare %s is too small (%llu bytes, need %llu)", p->name, path,
			(unsigned long long)c.m->file_bytes, (unsigned long long)raid_pool_member_need(p));
		raid_pool_member_close(c.m);
		return -ENOSPC;
	}
	raid_member_attach(c.m, p);
	raid_uuid_new(c.m->uuid);
	atomic_store(&c.m->state, RAID_M_SPARE);
	pthread_mutex_lock(&p->meta_mu);
	/* reuse a dead slot past the raid disks, else append */
	for (idx = p->g.n; idx < p->n_slots; idx++) {
		int st = atomic_load(&p->m[idx]->state);

		if (st == RAID_M_FAULTY || st == RAID_M_MISSING || st == RAID_M_EMPTY)
			break;
	}
	if (idx == p->n_slots && p->n_slots >= RAID_MAX_SLOTS) {
		pthread_mutex_unlock(&p->meta_mu);
		LOG_ERR(RAID_MOD, "pool %s: no free slot for spare %s", p->name, path);
		raid_pool_member_close(c.m);
		return -ENOSPC;
	}
	if (idx < p->n_slots) {
		p->m[idx]->retired_next = p->retired;
		p->retired = p->m[idx];
	}
	c.m->slot = idx;
	p->m[idx] = c.m;
	if (idx == p->n_slots)
		p->n_slots++;   /* after the entry: readers walk up to n_slots */
	rc = raid_pool_write_sbs_locked(p, false);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_SPARE_ADDED, .member = path,
						 .slot = (int)idx });
	pthread_mutex_unlock(&p->meta_mu);
	LOG_INFO(RAID_MOD, "pool %s: added spare %s", p->name, path);
	raid_bg_kick(p);
	return rc;
}

/*
 * rtgtctl grow / convert: @paths become more raid disks - one, or a pair
 * for raid10 - and the data is reshaped onto them (reshape.c). @level: the
 * level after it (-1: the same) - the pool's own for raid0/5/6/10 (more
 * data per row), raid5 for a raid1 of two members, raid6 for a raid5 (Q on
 * the new member, nothing moves). Only an optimal, quiet pool is
 * reshaped: every raid disk active, no rebuild, replacement, initial sync,
 * resync or scrub, no bad range.
 */
static int grow_open(struct raid_pool *p, const char *path, struct raid_member **out, char *err,
		     size_t errlen)
{
	struct raid_cand c;
	int rc;

	if (in_pool(p, path)) {
		snprintf(err, errlen, "%s is already in the pool", path);
		return -EEXIST;
	}
	rc = cand_open(p, path, &c);
	if (!rc && c.m->fd < 0)
		rc = c.open_err ? c.open_err : -ENOENT;
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		raid_pool_member_close(c.m);
		return rc;
	}
	if (!raid_pool_member_holds(p, c.m)) {
		snprintf(err, errlen, "%s is too small (%llu bytes, need %llu)", path,
			 (unsigned long long)c.m->file_bytes, (unsigned long long)raid_pool_member_need(p));
		raid_pool_member_close(c.m);
		return -ENOSPC;
	}
	if (!c.sbrc && !memcmp(c.sb.pool_uuid, p->uuid, 16)) {
		snprintf(err, errlen, "%s carries a superblock of this pool (a removed member?): wipe it first", path);
		raid_pool_member_close(c.m);
		return -EEXIST;
	}
	raid_member_attach(c.m, p);
	raid_uuid_new(c.m->uuid);
	*out = c.m;
	return 0;
}

int raid_md_pool_grow(struct raid_pool *p, const char *const *paths, unsigned npaths, int level,
		      char *err, size_t errlen)
{
	enum conf_level lvl = level < 0 ? p->level : (enum conf_level)level;
	struct raid_member *nm[2] = { NULL, NULL };
	unsigned i, n = p->g.n, k = lvl == CONF_RAID10 ? 2 : 1;
	int rc;

	if (lvl == p->level && lvl == CONF_RAID1) {
		snprintf(err, errlen, "a raid1 pool is not reshaped (add-spare adds a hot spare; convert makes a raid1 of two a raid5)");
		return -EOPNOTSUPP;
	}
	if (lvl != p->level && !(p->level == CONF_RAID1 && lvl == CONF_RAID5) &&
	    !(p->level == CONF_RAID5 && lvl == CONF_RAID6)) {
		snprintf(err, errlen, "%s -> %s is not a conversion this version makes (raid1 of two members -> raid5 and raid5 -> raid6 are)",
			 raid_level_name(p->level), raid_level_name(lvl));
		return -EOPNOTSUPP;
	}
	if (npaths != k) {
		snprintf(err, errlen, k == 2 ? "a raid10 pool grows by a mirror pair: give two --add"
					     : "give one --add (two only for a raid10 pool)");
		return -EINVAL;
	}
	if (npaths == 2 && !strcmp(paths[0], paths[1])) {
		snprintf(err, errlen, "%s is given twice", paths[0]);
		return -EINVAL;
	}
	if (p->level == CONF_RAID1 && n != 2) {
		snprintf(err, errlen, "raid1 -> raid5 needs a raid1 of two members (this one has %u)", n);
		return -EOPNOTSUPP;
	}
	if (n + k > RAID_MAX_SLOTS || p->n_slots + k > RAID_MAX_SLOTS) {
		snprintf(err, errlen, "no slot left for another member");
		return -ENOSPC;
	}
	if (atomic_load(&p->rsh.active) || atomic_load(&p->grow_pending)) {
		snprintf(err, errlen, "a reshape is already running");
		return -EALREADY;
	}
	if (raid_pool_unusable(p) || atomic_load(&p->failed) || atomic_load(&p->rebuild_slot) >= 0 ||
	    atomic_load(&p->repl_slot) >= 0 || atomic_load(&p->syncing) || atomic_load(&p->n_bad) ||
	    p->resync_req || atomic_load(&p->scrub_state) == 1 || atomic_load(&p->scrub_state) == 3 ||
	    (p->bm.region && atomic_load(&p->bm.n_unsynced))) {
		snprintf(err, errlen, "the pool must be optimal and quiet: every member active, no rebuild, replacement, sync, resync, scrub or bad range");
		return -EBUSY;
	}
	for (i = 0; i < k; i++) {
		rc = grow_open(p, paths[i], &nm[i], err, errlen);
		if (rc)
			goto out_close;
	}
	if (!p->bg_started) {
		rc = raid_bg_start(p);   /* raid0 runs none otherwise */
		if (rc) {
			snprintf(err, errlen, "no background thread: %s", strerror(-rc));
			goto out_close;
		}
	}
	rc = raid_reshape_request(p, nm, k, lvl);
	if (rc) {
		snprintf(err, errlen, "%s", rc == -EALREADY ? "a reshape is already running"
							: strerror(-rc));
		goto out_close;
	}
	return 0;

out_close:
	for (i = 0; i < k; i++)
		raid_pool_member_close(nm[i]);
	return rc;
}

/* A slot holder for a removed member: no file, state EMPTY. */
static struct raid_member *placeholder_new(struct raid_pool *p, const struct raid_member *was)
{
	struct raid_member *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	raid_member_io_init(m);
	m->fd = m->fd_buf = -1;
	raid_member_attach(m, p);
	m->slot = was->slot;
	/* the slot keeps the removed member's UUID so that, at assembly, its
	 * file is recognised as removed rather than as an unknown member */
	memcpy(m->uuid, was->uuid, 16);
	atomic_store(&m->state, RAID_M_EMPTY);
	snprintf(m->path, sizeof(m->path), "(removed)");
	return m;
}

/*
 * Detach a member that holds no data the pool relies on: a faulty or missing
 * raid disk (its slot stays, EMPTY, for a spare to rebuild into) or a spare
 * (its slot is freed: trailing free slots are dropped, others are reused by
 * add-spare). The member struct goes on p->retired, not freed: a late
 * completion may still point at it. Its file is left untouched and stays
 * open until the pool closes. A faulty member gets no new I/O
 * (readable/writable say no) and a spare gets none at all; the superblock
 * writes that do reach them run under meta_mu, which we hold.
 */
int raid_md_pool_remove(struct raid_pool *p, const char *member)
{
	struct raid_member *m, *ph;
	unsigned slot;
	int st, rc;
	char path[256];

	ph = NULL;
	pthread_mutex_lock(&p->meta_mu);
	m = find_member(p, member);
	if (!m) {
		LOG_ERR(RAID_MOD, "pool %s: remove: no member %s", p->name, member);
		rc = -ENOENT;
		goto out_unlock;
	}
	st = atomic_load(&m->state);
	if (st == RAID_M_EMPTY) {
		LOG_ERR(RAID_MOD, "pool %s: remove: slot %u is already empty", p->name, m->slot);
		rc = -EALREADY;
		goto out_unlock;
	}
	if (st == RAID_M_ACTIVE || st == RAID_M_REBUILDING || st == RAID_M_REPLACING) {
		LOG_ERR(RAID_MOD, "pool %s: remove: member %s is %s: fail it first", p->name, m->path,
			raid_mstate_name(st));
		rc = -EBUSY;
		goto out_unlock;
	}
	slot = m->slot;
	if (slot < p->g.n || slot + 1 < p->n_slots) {
		ph = placeholder_new(p, m);
		if (!ph) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		p->m[slot] = ph;
	} else {
		p->n_slots--;   /* before the entry goes: readers walk up to n_slots */
		p->m[slot] = NULL;
	}
	/* free slots at the end go away (never raid disks) */
	while (p->n_slots > p->g.n && atomic_load(&p->m[p->n_slots - 1]->state) == RAID_M_EMPTY) {
		struct raid_member *e = p->m[--p->n_slots];

		p->m[p->n_slots] = NULL;
		e->retired_next = p->retired;
		p->retired = e;
	}
	/* The descriptors stay open until the pool closes (member_close on
	 * p->retired): a request that saw the member usable just before it
	 * failed may still be on its way to the ring, and a closed number could
	 * meanwhile be reused for another file. */
	m->retired_next = p->retired;
	p->retired = m;
	snprintf(path, sizeof(path), "%s", m->path);
	rc = raid_pool_write_sbs_locked(p, false);
	raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_MEMBER_REMOVED, .member = path,
						 .slot = (int)slot, .detail = raid_mstate_name(st) });
	pthread_mutex_unlock(&p->meta_mu);
	LOG_INFO(RAID_MOD, "pool %s: removed %s %s (slot %u)%s", p->name, raid_mstate_name(st), path,
		 slot, slot < p->g.n ? ": the slot waits for a spare" : "");
	raid_bg_kick(p);
	return rc;

out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}
