/*
 * raid/pool.c - pool assembly: open (create or assemble) and close. The
 * pool's management (info, fail, replace, add spare, grow, remove) is
 * pool_admin.c, which uses the helpers pool_int.h lends it.
 *
 * Layer: pool assembly (raid/README.md "Layers"), above everything of the
 * RAID backend but the ops tables. May call: reshape.c, rebuild.c, thin.c,
 * bitmap.c, scache.c, member.c, mstate.c, sb.c, lock.c, ioctx.c, parity.c,
 * geom.c, conf/. Fills struct raid_pool_hooks at open, so that mstate.c
 * reaches rebuild.c and reshape.c without calling up.
 *
 * Assembly (raid_pool_open; policy in raid/README.md, "Assembly"):
 *   1. open every configured member and spare and read its superblock
 *      (cand_open; nothing is created or written yet);
 *   2. no superblock anywhere: a brand-new pool - create_files() makes the
 *      missing files when create_size is set, create_new() the pool. Files
 *      are never created for an existing pool;
 *   3. otherwise (assemble): members carrying different pool UUIDs refuse
 *      the pool (pool_identity; no vote); the newest superblock (highest
 *      event counter) is the reference; a member is accepted only when the
 *      reference lists its own UUID in its slot as active/spare/rebuilding.
 *      Known-failed members (stale: the reference records them faulty or
 *      replaced; missing files of slots recorded faulty) are left out with a
 *      log line. Members the pool expected but cannot use (missing, blank,
 *      unreadable, duplicate) refuse the pool unless start_degraded is set;
 *   4. the pool then starts (degraded) only if the level's failure rule
 *      (raid_lost_beyond) still holds for what was assembled.
 *   Refusal at any step writes nothing to any member.
 *
 * Member states, the failure rule and the bad ranges: mstate.c.
 *
 * Slot table rule (p->m[], p->n_slots, member->slot): written only under
 * meta_mu (rebuild.c start_rebuild, add-spare, remove), read without it by
 * the I/O path on every reactor, the bitmap writer and the background
 * thread. Every entry is an atomic pointer and n_slots and slot are atomic
 * (seq_cst), so a reader sees either the old or the new member of a slot,
 * each completely initialised: a member is made complete, and its state
 * set, before its pointer is stored; n_slots grows only after the new
 * entry is stored. Members are never freed while the pool is open
 * (replaced ones go to p->retired), so a pointer read before a swap stays
 * valid. A swap only ever replaces an unusable member (FAULTY, MISSING,
 * EMPTY) by a REBUILDING one with rebuild_pos 0, or a spare slot's entry:
 * neither old nor new serves reads of the slot, and writes that reach the
 * old one are redone by the rebuild (the rows' stripe locks order them).
 * The one exception is the end of a proactive replacement (rebuild.c
 * repl_swap): an ACTIVE member is replaced by its complete copy, under an
 * exclusive stripe lock over the whole pool, so no request is between
 * reading the entry and finishing its I/O. A
 * request that must name the slot of a member it issued to uses the index
 * it issued to, never member->slot, which a swap may have changed since.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/backend.h"
#include "raid/member.h"
#include "raid/mstate.h"
#include "raid/pool_int.h"

void raid_uuid_new(uint8_t u[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t r = getrandom(u + got, 16 - got, 0);

		if (r > 0)
			got += (size_t)r;
	}
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

static void uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

void raid_pool_member_close(struct raid_member *m)
{
	if (!m)
		return;
	if (m->fd_buf >= 0 && m->fd_buf != m->fd)
		close(m->fd_buf);
	if (m->fd >= 0)
		close(m->fd);
	raid_member_io_fini(m);
	free(m->rpath);
	free(m);
}

/* A configured device during assembly. */
/* "slot 1" / "spare 0": where the configuration lists it. */
static const char *cand_where(const struct raid_cand *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s %u", c->spare ? "spare" : "slot", c->pos);
	return buf;
}

/* tmpfs or ramfs: the file's pages are its storage. */
static bool member_on_memory(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return false;
	return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

/* Open c->m->rpath and read its superblock. Failures are recorded in @c
 * (open_err, sbrc), not logged: assembly decides what they mean. */
static void cand_open_fd(const struct conf_pool *cp, struct raid_cand *c)
{
	struct raid_member *m = c->m;
	int flags = O_RDWR | O_CLOEXEC;
	struct stat st;

	c->sbrc = -ENODEV;
	m->fd = open(m->rpath, flags | (cp->direct_io ? O_DIRECT : 0));
	if (m->fd < 0) {
		c->open_err = -errno;
		return;
	}
	m->fd_buf = m->fd;
	if (cp->direct_io) {
		m->fd_buf = open(m->rpath, flags);
		if (m->fd_buf < 0) {
			c->open_err = -errno;
			close(m->fd);
			m->fd = m->fd_buf = -1;
			return;
		}
	}
	c->open_err = 0;
	m->mem = member_on_memory(m->fd);
	if (fstat(m->fd, &st) == 0 && S_ISBLK(st.st_mode)) {
		uint64_t b = 0;

		if (ioctl(m->fd, BLKGETSIZE64, &b) == 0)
			m->file_bytes = b;
	} else if (fstat(m->fd, &st) == 0) {
		m->file_bytes = (uint64_t)st.st_size;
	}
	c->sbrc = raid_sb_read(m->fd, &c->sb);
}

int raid_cand_open(const struct conf_pool *cp, const char *path, const char *rpath,
		     struct raid_cand *c)
{
	struct raid_member *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->fd = m->fd_buf = -1;
	raid_member_io_init(m);
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->rpath = strdup(rpath);
	atomic_store(&m->state, RAID_M_MISSING);
	c->m = m;
	c->sbrc = -ENODEV;
	c->open_err = -ENOENT;
	if (!m->rpath)
		return -ENOMEM;
	cand_open_fd(cp, c);
	return 0;
}

/*
 * A brand-new pool (no member carries a superblock): create the missing
 * files when create_size allows. Never called for an existing pool, whose
 * missing member must not come back as an empty file that the pool would
 * then trust.
 */
static int create_files(const struct conf_pool *cp, struct raid_cand *cs, unsigned nc)
{
	unsigned i;
	char w[32];

	for (i = 0; i < nc; i++) {
		struct raid_cand *c = &cs[i];
		int fd;

		if (c->m->fd >= 0 && c->sbrc != -ENOENT) {
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s): cannot read its superblock: %s; not creating a pool over it",
				cp->name, c->m->path, cand_where(c, w, sizeof(w)), strerror(-c->sbrc));
			return c->sbrc < 0 ? c->sbrc : -EIO;
		}
		if (c->m->fd >= 0 || c->open_err != -ENOENT || !cp->create_size)
			continue;
		/* a fresh clone has no var/: create the member's directory too */
		fd = conf_mkdir_parents(c->m->rpath, 0755);
		if (fd < 0) {
			LOG_ERR(RAID_MOD, "pool %s: cannot create the directory of member %s: %s",
				cp->name, c->m->path, strerror(-fd));
			return fd;
		}
		fd = open(c->m->rpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			LOG_ERR(RAID_MOD, "pool %s: cannot create member %s: %s", cp->name, c->m->path,
				strerror(errno));
			return -errno;
		}
		if (ftruncate(fd, (off_t)cp->create_size)) {
			int e = -errno;

			LOG_ERR(RAID_MOD, "pool %s: cannot size member %s: %s", cp->name, c->m->path,
				strerror(-e));
			close(fd);
			unlink(c->m->rpath);
			return e;
		}
		close(fd);
		LOG_INFO(RAID_MOD, "pool %s: created member %s (%llu bytes, sparse)", cp->name,
			 c->m->path, (unsigned long long)cp->create_size);
		cand_open_fd(cp, c);
		c->created = true;
	}
	return 0;
}

static int create_new(struct raid_pool *p, const struct conf_pool *cp, struct raid_cand *cs,
		      unsigned nc)
{
	uint64_t minb = UINT64_MAX;
	unsigned i;
	int rc = 0;

	for (i = 0; i < cp->n_members; i++) {
		if (cs[i].m->fd < 0) {
			LOG_ERR(RAID_MOD, "pool %s: cannot create the pool: member %s (slot %u): %s%s",
				cp->name, cs[i].m->path, i, strerror(-cs[i].open_err),
				cs[i].open_err == -ENOENT && !cp->create_size
					? " (create_size would create it)" : "");
			rc = -ENOENT;
			continue;
		}
		if (cs[i].m->file_bytes < minb)
			minb = cs[i].m->file_bytes;
	}
	if (rc)
		return rc;
	if (minb < RAID_DATA_OFF + 16 * cp->chunk) {
		LOG_ERR(RAID_MOD, "pool %s: members too small (%llu bytes; need at least %llu)",
			cp->name, (unsigned long long)minb,
			(unsigned long long)(RAID_DATA_OFF + 16 * cp->chunk));
		return -ENOSPC;
	}
	rc = raid_geom_init(&p->g, cp->level, cp->n_members, cp->chunk, minb - RAID_DATA_OFF);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: %u members are not valid for %s", cp->name,
			cp->n_members, raid_level_name(cp->level));
		return rc;
	}
	raid_uuid_new(p->uuid);
	/* Members hold whatever they held (a reused disk, an old file
	 * system): parity and mirrors agree with nothing until the initial
	 * sync made them. Only files created here are known to read zeros
	 * everywhere, which is consistent for every level already. */
	{
		bool zero = true;

		for (i = 0; i < cp->n_members; i++)
			zero = zero && cs[i].created;
		atomic_store(&p->syncing, p->g.npar && !zero);
		atomic_store(&p->sync_pos, 0);
		atomic_store(&p->sync_cp, 0);
		if (p->g.npar && !zero)
			LOG_INFO(RAID_MOD, "pool %s: new pool over existing data: initial sync in the background",
				 cp->name);
	}
	p->n_slots = 0;
	for (i = 0; i < nc; i++) {
		struct raid_member *m = cs[i].m;

		if (m->fd < 0) {
			LOG_WARN(RAID_MOD, "pool %s: spare %s: %s: not used", cp->name, m->path,
				 strerror(-cs[i].open_err));
			continue;
		}
		raid_uuid_new(m->uuid);
		m->slot = p->n_slots;
		atomic_store(&m->state, cs[i].spare ? RAID_M_SPARE : RAID_M_ACTIVE);
		p->m[p->n_slots++] = m;
		cs[i].used = true;
	}
	{
		char u[37];

		uuid_str(p->uuid, u);
		LOG_INFO(RAID_MOD, "pool %s: created %s, %u members, chunk %llu, uuid %s", cp->name,
			 raid_level_name(cp->level), cp->n_members, (unsigned long long)cp->chunk, u);
	}
	return 0;
}

/*
 * Every member carrying a superblock must carry the same pool UUID. Members
 * of two pools are never mixed, and no vote picks one of them: with a 1-1
 * split on raid1 a vote could as well pick the foreign pool and overwrite
 * this one's members. The lines name the odd members out: the group whose
 * superblocks carry this pool's configured name (or, failing that, a strict
 * majority) is taken as "this pool" for the wording only.
 */
static int pool_identity(struct raid_pool *p, const struct conf_pool *cp, struct raid_cand *cs,
			 unsigned nc)
{
	unsigned grp[RAID_MAX_SLOTS], first[RAID_MAX_SLOTS], cnt[RAID_MAX_SLOTS];
	unsigned i, k, ng = 0, named = 0, home = UINT32_MAX, best = 0;
	bool tie = false;
	char u[37], w[32];

	for (i = 0; i < nc; i++) {
		if (cs[i].sbrc)
			continue;
		for (k = 0; k < ng; k++)
			if (!memcmp(cs[first[k]].sb.pool_uuid, cs[i].sb.pool_uuid, 16))
				break;
		if (k == ng) {
			first[ng] = i;
			cnt[ng++] = 0;
		}
		grp[i] = k;
		cnt[k]++;
	}
	if (ng == 1) {
		memcpy(p->uuid, cs[first[0]].sb.pool_uuid, 16);
		return 0;
	}
	for (k = 0; k < ng; k++) {
		if (!strcmp(cs[first[k]].sb.name, cp->name)) {
			named++;
			home = k;
		}
	}
	if (named != 1) {
		home = UINT32_MAX;
		for (k = 0; k < ng; k++) {
			if (named && strcmp(cs[first[k]].sb.name, cp->name))
				continue;
			if (cnt[k] > best) {
				best = cnt[k];
				home = k;
				tie = false;
			} else if (cnt[k] == best) {
				tie = true;
			}
		}
		if (tie)
			home = UINT32_MAX;
	}
	for (i = 0; i < nc; i++) {
		if (cs[i].sbrc || grp[i] == home)
			continue;
		uuid_str(cs[i].sb.pool_uuid, u);
		if (home != UINT32_MAX) {
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) belongs to pool %s (uuid %s), not to this pool",
				cp->name, cs[i].m->path, cand_where(&cs[i], w, sizeof(w)),
				cs[i].sb.name, u);
		} else {
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) carries pool %s (uuid %s, event %llu); the members carry %u different pool identities and none can be told to be this pool",
				cp->name, cs[i].m->path, cand_where(&cs[i], w, sizeof(w)),
				cs[i].sb.name, u, (unsigned long long)cs[i].sb.events, ng);
		}
	}
	return -EINVAL;
}

/*
 * After assembly (meta_mu held, bitmap loaded): a replacement recorded in
 * the superblocks goes on where its checkpoint says, if the disk it
 * replaces is still there and the pool is whole; otherwise the spare is a
 * spare again. After an unclean stop a write may have reached the disk and
 * not its copy (or the other way round): the copy starts again at the
 * first region the bitmap saw being written (@unclean).
 */
static void repl_resume(struct raid_pool *p, bool unclean)
{
	for (unsigned k = p->g.n; k < p->n_slots; k++) {
		struct raid_member *m = p->m[k], *old;
		int s;
		uint64_t pos;

		if (!m || atomic_load(&m->state) != RAID_M_REPLACING)
			continue;
		s = atomic_load(&m->repl_for);
		old = s >= 0 && (unsigned)s < p->g.n ? p->m[s] : NULL;
		if (m->fd < 0 || atomic_load(&p->repl_slot) >= 0 || !old || old->fd < 0 ||
		    atomic_load(&old->state) != RAID_M_ACTIVE || raid_pool_unusable(p)) {
			LOG_WARN(RAID_MOD, "pool %s: replacement of slot %d by %s not resumed: %s; it is a spare again",
				 p->name, s, m->path,
				 atomic_load(&p->repl_slot) >= 0 ? "another one runs" :
				 raid_pool_unusable(p) ? "the pool is degraded" :
							 "the member it replaces is gone");
			atomic_store(&m->state, RAID_M_SPARE);
			continue;
		}
		pos = atomic_load(&m->rebuild_pos);
		if (pos > p->g.member_bytes)
			pos = 0;
		for (uint64_t r = 0; unclean && p->bm.region && r * p->bm.region < pos; r++) {
			if (raid_bm_region_unsynced(p, r)) {
				pos = r * p->bm.region;
				break;
			}
		}
		atomic_store(&m->rebuild_pos, pos);
		atomic_store(&m->rebuild_cp, pos);
		atomic_store(&p->repl_slot, (int)k);
		atomic_store(&old->repl, m);
		LOG_INFO(RAID_MOD, "pool %s: replacement of slot %d (%s) by %s resumes at %.1f%%", p->name,
			 s, old->path, m->path,
			 p->g.member_bytes ? 100.0 * (double)pos / (double)p->g.member_bytes : 0.0);
	}
}

/* Is @st a state a slot can be assembled in? */
static bool slot_state_usable(uint32_t st)
{
	return st == RAID_M_ACTIVE || st == RAID_M_SPARE || st == RAID_M_REBUILDING ||
	       st == RAID_M_REPLACING;
}

/*
 * Assembly of an existing pool (see raid/README.md, "Assembly"): refuses
 * outright a member of another pool; refuses, unless start_degraded, a
 * member that is missing, blank, unreadable or a duplicate while the pool
 * expected it; accepts without it a member the newest superblocks already
 * record as failed (missing or stale). Whether what is left suffices is
 * checked by the caller.
 */
/*
 * A grow by a pair (raid10) writes the superblocks of both new members
 * before the others'; a crash between the two leaves one of them blank
 * while the newest superblock lists it. Nothing has moved yet then (no
 * checkpoint, no window copy: the first window records its copy before
 * it writes anything), so a blank configured member can take the one new
 * slot still empty; its bytes do not matter yet. True when it did.
 */
static bool reshape_adopt(struct raid_pool *p, const struct raid_sb *ref, struct raid_member *m)
{
	unsigned s, free_slot = UINT32_MAX, nfree = 0;

	if (!(ref->flags & RAID_SB_RESHAPE) || ref->reshape_pos || ref->backup_len)
		return false;
	for (s = ref->reshape_n; s < ref->n_members; s++) {
		if (!p->m[s] && ref->slots[s].state == RAID_M_ACTIVE) {
			free_slot = s;
			nfree++;
		}
	}
	if (nfree != 1)
		return false;
	memcpy(m->uuid, ref->slots[free_slot].uuid, 16);
	m->slot = free_slot;
	atomic_store(&m->state, RAID_M_ACTIVE);
	p->m[free_slot] = m;
	return true;
}

/*
 * A member must hold the superblocks, the bitmap and the whole member data
 * area of the pool. A file truncated or a superblock whose data_size was
 * damaged would otherwise put volumes past the end of the member: reads
 * there return nothing (a file) or fail (a device) while the pool believes
 * the blocks exist. The one size rule for assembly, spares and grows.
 */
uint64_t raid_pool_member_need(const struct raid_pool *p)
{
	/* saturates: at assembly member_bytes is still a hostile claim */
	return p->g.member_bytes > UINT64_MAX - RAID_DATA_OFF ? UINT64_MAX
							      : RAID_DATA_OFF + p->g.member_bytes;
}

bool raid_pool_member_holds(const struct raid_pool *p, const struct raid_member *m)
{
	return m->file_bytes >= RAID_DATA_OFF && m->file_bytes - RAID_DATA_OFF >= p->g.member_bytes;
}

/* raid_pool_member_holds() at assembly: false, and the error logged, when not. */
static bool cand_fits(const struct raid_pool *p, const struct conf_pool *cp,
		      const struct raid_cand *c, const char *sd)
{
	char w[32];

	if (raid_pool_member_holds(p, c->m))
		return true;
	LOG_ERR(RAID_MOD, "pool %s: %s %s (%s) holds %llu bytes, the pool's members need %llu (superblocks and %llu data bytes): not used%s",
		cp->name, c->spare ? "spare" : "member", c->m->path, cand_where(c, w, sizeof(w)),
		(unsigned long long)c->m->file_bytes, (unsigned long long)raid_pool_member_need(p),
		(unsigned long long)p->g.member_bytes, sd);
	return false;
}

static int assemble(struct raid_pool *p, const struct conf_pool *cp, struct raid_cand *cs,
		    unsigned nc)
{
	const struct raid_sb *ref = NULL;
	unsigned i, problems = 0, expected_absent = 0;
	const char *sd = cp->start_degraded ? "; start_degraded is set: starting without it" : "";
	char u[37], mu[37], w[32];
	int rc;

	rc = pool_identity(p, cp, cs, nc);
	if (rc)
		return rc;
	for (i = 0; i < nc; i++)
		if (!cs[i].sbrc && (!ref || cs[i].sb.events > ref->events))
			ref = &cs[i].sb;
	uuid_str(p->uuid, u);
	if (ref->level != (uint32_t)cp->level || ref->chunk != cp->chunk ||
	    ref->n_members != cp->n_members) {
		LOG_ERR(RAID_MOD, "pool %s: on-disk pool is %s, %u members, chunk %u%s; the configuration says %s, %u members, chunk %llu%s",
			cp->name, raid_level_name((enum conf_level)ref->level), ref->n_members, ref->chunk,
			ref->flags & RAID_SB_RESHAPE ? " (being reshaped)" : "",
			raid_level_name(cp->level), cp->n_members, (unsigned long long)cp->chunk,
			ref->n_members > cp->n_members
				? ": after rtgtctl grow or convert, list the new member and the level in the configuration"
				: "");
		return -EINVAL;
	}
	rc = raid_geom_init_layout(&p->g, cp->level, cp->n_members, cp->chunk, ref->data_size,
				   ref->flags & RAID_SB_Q_LAST ? RAID_LAYOUT_Q_LAST : RAID_LAYOUT_DEFAULT);
	if (rc || ref->data_offset != RAID_DATA_OFF || ref->n_slots < ref->n_members) {
		LOG_ERR(RAID_MOD, "pool %s: unsupported on-disk geometry", cp->name);
		return -EINVAL;
	}
	p->events = ref->events;
	p->n_slots = ref->n_slots;

	/* members with a superblock of this pool */
	for (i = 0; i < nc; i++) {
		struct raid_cand *c = &cs[i];
		struct raid_member *m = c->m;
		uint32_t st;

		if (c->sbrc)
			continue;
		st = c->sb.slot < ref->n_slots ? ref->slots[c->sb.slot].state : RAID_M_EMPTY;
		if (c->sb.slot >= ref->n_slots ||
		    memcmp(ref->slots[c->sb.slot].uuid, c->sb.member_uuid, 16) ||
		    !slot_state_usable(st)) {
			bool replaced = c->sb.slot < ref->n_slots &&
					memcmp(ref->slots[c->sb.slot].uuid, c->sb.member_uuid, 16);
			/* rtgtctl remove empties the slot or, past the raid
			 * disks, frees it (then a new spare may reuse it) */
			bool removed = c->sb.slot >= ref->n_slots ||
				       (!replaced && st == RAID_M_EMPTY) ||
				       (replaced && c->sb.slot >= ref->n_members);

			if (removed) {
				LOG_WARN(RAID_MOD, "pool %s: member %s (%s) was removed from the pool (event counter %llu, pool at %llu): not used; it may be taken out of the configuration",
					 cp->name, m->path, cand_where(c, w, sizeof(w)),
					 (unsigned long long)c->sb.events,
					 (unsigned long long)ref->events);
				continue;
			}
			/* a known-failed member: never used again (md) */
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) is stale (event counter %llu, pool at %llu; the pool recorded it as %s): not used",
				cp->name, m->path, cand_where(c, w, sizeof(w)),
				(unsigned long long)c->sb.events, (unsigned long long)ref->events,
				replaced ? "replaced" : raid_mstate_name((int)st));
			continue;
		}
		if (!cand_fits(p, cp, c, sd)) {
			problems++;
			continue;
		}
		if (p->m[c->sb.slot]) {
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) duplicates slot %u (held by %s): not used%s",
				cp->name, m->path, cand_where(c, w, sizeof(w)), c->sb.slot,
				p->m[c->sb.slot]->path, sd);
			problems++;
			continue;
		}
		memcpy(m->uuid, c->sb.member_uuid, 16);
		m->slot = c->sb.slot;
		atomic_store(&m->state, (int)st);
		if (st == RAID_M_REBUILDING) {
			atomic_store(&m->rebuild_pos, ref->rebuild_slot == m->slot ? ref->rebuild_pos : 0);
			atomic_store(&m->rebuild_cp, atomic_load(&m->rebuild_pos));
		}
		if (st == RAID_M_REPLACING) {
			/* checked against the disk it replaces in repl_resume() */
			atomic_store(&m->repl_for, (int)ref->slots[m->slot].repl - 1);
			atomic_store(&m->rebuild_pos, ref->replace_pos);
			atomic_store(&m->rebuild_cp, ref->replace_pos);
		}
		p->m[m->slot] = m;
		c->used = true;
	}

	/* blank and unreadable devices */
	for (i = 0; i < nc; i++) {
		struct raid_cand *c = &cs[i];
		struct raid_member *m = c->m;

		if (c->used || m->fd < 0 || !c->sbrc)
			continue;
		if (c->sbrc == -ENOENT && !cand_fits(p, cp, c, c->spare ? "" : sd)) {
			problems += !c->spare;
			continue;
		}
		if (c->sbrc == -ENOENT && c->spare && p->n_slots < RAID_MAX_SLOTS) {
			/* A blank spare joins the pool: nothing on it is trusted. */
			raid_uuid_new(m->uuid);
			m->slot = p->n_slots;
			atomic_store(&m->state, RAID_M_SPARE);
			p->m[p->n_slots++] = m;
			c->used = true;
			LOG_INFO(RAID_MOD, "pool %s: new spare %s", cp->name, m->path);
		} else if (c->sbrc == -ENOENT && c->spare) {
			LOG_ERR(RAID_MOD, "pool %s: spare %s: no free slot: not used", cp->name, m->path);
		} else if (c->sbrc == -ENOENT && reshape_adopt(p, ref, m)) {
			LOG_WARN(RAID_MOD, "pool %s: member %s (%s) has no superblock yet: it is taken as new raid disk %u of the reshape, which had not moved anything (a crash while its superblocks were written)",
				 cp->name, m->path, cand_where(c, w, sizeof(w)), m->slot);
			c->used = true;
		} else if (c->sbrc == -ENOENT) {
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) has no rtgt superblock (this pool, uuid %s, is on the other members): not used%s",
				cp->name, m->path, cand_where(c, w, sizeof(w)), u, sd);
			problems++;
		} else {
			LOG_ERR(RAID_MOD, "pool %s: %s %s (%s): cannot read its superblock: %s: not used%s",
				cp->name, c->spare ? "spare" : "member", m->path,
				cand_where(c, w, sizeof(w)), strerror(-c->sbrc), c->spare ? "" : sd);
			problems += !c->spare;
		}
	}

	/* Slots nobody filled: placeholders so status can show them. */
	for (i = 0; i < p->n_slots; i++) {
		struct raid_member *m;
		bool was_up = ref->slots[i].state == RAID_M_ACTIVE ||
			      ref->slots[i].state == RAID_M_REBUILDING;
		bool empty = ref->slots[i].state == RAID_M_EMPTY;

		if (p->m[i])
			continue;
		m = calloc(1, sizeof(*m));
		if (!m)
			return -ENOMEM;
		raid_member_io_init(m);
		m->fd = m->fd_buf = -1;
		m->slot = i;
		raid_member_attach(m, p);
		memcpy(m->uuid, ref->slots[i].uuid, 16);
		atomic_store(&m->state, was_up ? RAID_M_MISSING : empty ? RAID_M_EMPTY : RAID_M_FAULTY);
		snprintf(m->path, sizeof(m->path), "%s",
			 empty ? "(removed)" :
			 i < cp->n_members && !cs[i].used ? cp->members[i] : "(unknown)");
		p->m[i] = m;
		if (i < p->g.n && was_up)
			expected_absent++;
	}

	/* configured files that could not be opened */
	for (i = 0; i < nc; i++) {
		struct raid_cand *c = &cs[i];
		bool known_failed;

		if (c->m->fd >= 0)
			continue;
		if (c->spare && !expected_absent) {
			LOG_WARN(RAID_MOD, "pool %s: spare %s: %s: not used", cp->name, c->m->path,
				 strerror(-c->open_err));
			continue;
		}
		if (c->spare) {
			/* it may be the one that took a slot in a rebuild */
			LOG_ERR(RAID_MOD, "pool %s: spare %s (%s) is %s and a member slot is empty%s",
				cp->name, c->m->path, cand_where(c, w, sizeof(w)),
				c->open_err == -ENOENT ? "missing" : strerror(-c->open_err), sd);
			problems++;
			continue;
		}
		/* its slot, if the configuration lists members in slot order */
		if (c->pos < p->g.n && !p->m[c->pos]->rpath && p->m[c->pos]->fd < 0)
			known_failed = atomic_load(&p->m[c->pos]->state) == RAID_M_FAULTY ||
				       atomic_load(&p->m[c->pos]->state) == RAID_M_EMPTY;
		else
			known_failed = expected_absent == 0;
		if (known_failed) {
			LOG_WARN(RAID_MOD, "pool %s: member %s (%s) is %s; the pool had already recorded it as failed: starting degraded",
				 cp->name, c->m->path, cand_where(c, w, sizeof(w)),
				 c->open_err == -ENOENT ? "missing" : strerror(-c->open_err));
			continue;
		}
		if (c->open_err == -ENOENT)
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s) is missing%s", cp->name, c->m->path,
				cand_where(c, w, sizeof(w)), sd);
		else
			LOG_ERR(RAID_MOD, "pool %s: member %s (%s): cannot open: %s%s", cp->name,
				c->m->path, cand_where(c, w, sizeof(w)), strerror(-c->open_err), sd);
		problems++;
	}
	if (expected_absent && !problems) {
		/* every configured file was accounted for, yet a slot is empty */
		for (i = 0; i < p->g.n; i++) {
			if (atomic_load(&p->m[i]->state) != RAID_M_MISSING)
				continue;
			uuid_str(p->m[i]->uuid, mu);
			LOG_ERR(RAID_MOD, "pool %s: slot %u (member uuid %s) is not among the configured members%s",
				cp->name, i, mu, sd);
			problems++;
		}
	}
	if (problems && !cp->start_degraded)
		return -ENOENT;

	memcpy(&p->sb, ref, sizeof(p->sb));
	atomic_store(&p->n_bad, ref->n_bad <= RAID_MAX_BAD ? ref->n_bad : RAID_MAX_BAD);
	memcpy(p->bad, ref->bad, sizeof(p->bad));
	if ((ref->flags & RAID_SB_SYNCING) && p->g.npar) {
		uint64_t sp = ref->sync_pos < p->g.member_bytes ? ref->sync_pos : p->g.member_bytes;

		atomic_store(&p->syncing, true);
		atomic_store(&p->sync_pos, sp);
		atomic_store(&p->sync_cp, sp);
		p->resync_req = true;
		LOG_WARN(RAID_MOD, "pool %s: initial sync resumes at %.1f%%", cp->name,
			 100.0 * (double)sp / (double)p->g.member_bytes);
	}
	if (!(ref->flags & RAID_SB_CLEAN) && p->g.npar) {
		p->resync_req = true;
		LOG_WARN(RAID_MOD, "pool %s: was not shut down cleanly: resynchronising in the background",
			 cp->name);
	}
	if (ref->flags & RAID_SB_RESHAPE)
		return raid_reshape_resume(p, ref);
	return 0;
}

int raid_md_pool_open(const struct conf_pool *cp, struct raid_pool **out)
{
	struct raid_pool *p;
	struct raid_cand *cs;
	unsigned i, nc = cp->n_members + cp->n_spares, valid = 0;
	int rc;

	if (nc > RAID_MAX_SLOTS || cp->n_members == 0) {
		LOG_ERR(RAID_MOD, "pool %s: %u members and spares (1..%u allowed)", cp->name, nc,
			RAID_MAX_SLOTS);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	cs = calloc(nc, sizeof(*cs));
	if (!p || !cs) {
		rc = -ENOMEM;
		goto err_free;
	}
	p->hooks.kick = raid_bg_kick;
	p->hooks.sb_fill = raid_reshape_sb_fill;
	atomic_store(&p->repl_slot, -1);
	atomic_store(&p->rebuild_slot, -1);   /* also without a background thread (raid0) */
	snprintf(p->name, sizeof(p->name), "%s", cp->name);
	p->level = cp->level;
	p->direct_io = cp->direct_io;
	p->rebuild_mbps = cp->rebuild_mbps;
	p->thin_threshold = cp->thin_threshold;
	p->hdd = cp->hdd;
	if (p->hdd.enabled && (p->hdd.mbps <= 0 || p->hdd.avg_seek_ms < 0 || !p->hdd.rpm)) {
		LOG_ERR(RAID_MOD, "pool %s: hdd model needs mbps > 0, avg_seek_ms >= 0, rpm > 0", cp->name);
		free(p);
		free(cs);
		return -EINVAL;
	}
	pthread_mutex_init(&p->meta_mu, NULL);
	pthread_mutex_init(&p->bad_mu, NULL);
	raid_slock_init(&p->lock);
	raid_reshape_init(p);
	for (i = 0; i < nc; i++) {
		bool spare = i >= cp->n_members;
		const char *path = spare ? cp->spares[i - cp->n_members] : cp->members[i];
		const char *rpath = spare ? cp->spare_paths[i - cp->n_members] : cp->member_paths[i];

		cs[i].spare = spare;
		cs[i].pos = spare ? i - cp->n_members : i;
		rc = raid_cand_open(cp, path, rpath, &cs[i]);
		if (rc)
			goto err_cands;
		raid_member_attach(cs[i].m, p);
		if (cs[i].sbrc == 0)
			valid++;
	}
	if (valid) {
		rc = assemble(p, cp, cs, nc);
	} else {
		rc = create_files(cp, cs, nc);
		if (!rc)
			rc = create_new(p, cp, cs, nc);
	}
	if (rc)
		goto err_cands;
	for (i = 0; i < nc; i++) {
		if (!cs[i].used) {
			raid_pool_member_close(cs[i].m);
			cs[i].m = NULL;
		}
	}
	if (raid_pool_beyond_redundancy(p)) {
		char reason[640];

		raid_pool_why_beyond(p, reason, sizeof(reason));
		LOG_ERR(RAID_MOD, "pool %s: %s: not started", p->name, reason);
		rc = -EIO;
		goto err_members;
	}
	if (raid_pool_unusable(p)) {
		LOG_WARN(RAID_MOD, "pool %s: started degraded (%u of %u members unusable)", p->name,
			 raid_pool_unusable(p), p->g.n);
		raid_event_emit(p, &(struct raid_event){ .kind = RAID_EV_POOL_DEGRADED, .slot = -1,
							 .count = raid_pool_unusable(p),
							 .detail = "started degraded",
							 .pool_state = "degraded" });
	}
	pthread_mutex_lock(&p->meta_mu);
	rc = raid_pool_write_sbs_locked(p, false);
	pthread_mutex_unlock(&p->meta_mu);
	if (rc || atomic_load(&p->failed)) {
		rc = rc ? rc : -EIO;
		goto err_members;
	}
	free(cs);
	/* 64 rows: enough for a few streams of sequential writes */
	raid_sc_init(&p->sc, p->g.stripe_bytes, raid_geom_is_parity_level(&p->g) ? 64 : 0);
	if (p->g.npar) {
		uint64_t region = p->sb.bitmap_chunk ? p->sb.bitmap_chunk
						     : raid_bm_region_for(p->g.member_bytes, p->g.chunk);

		rc = raid_bm_init(p, region, p->resync_req,
				  atomic_load(&p->syncing) ? atomic_load(&p->sync_pos) : p->g.member_bytes,
				  !valid && atomic_load(&p->syncing));
		if (rc) {
			LOG_ERR(RAID_MOD, "pool %s: cannot set up the write-intent bitmap: %s", p->name,
				strerror(-rc));
			raid_bm_free(p);
			raid_sc_destroy(&p->sc);
			goto err_members_nocs;
		}
		pthread_mutex_lock(&p->meta_mu);
		repl_resume(p, p->resync_req);   /* resync_req here: an unclean stop */
		pthread_mutex_unlock(&p->meta_mu);
		if (p->resync_req)
			LOG_WARN(RAID_MOD, "pool %s: %llu dirty bitmap regions to resync", p->name,
				 (unsigned long long)atomic_load(&p->bm.n_unsynced));
		if (atomic_load(&p->syncing))
			p->resync_req = true;     /* the initial sync: rebuild.c */
		if (!atomic_load(&p->bm.n_unsynced))
			p->resync_req = false;
		rc = raid_bg_start(p);
		if (rc) {
			LOG_ERR(RAID_MOD, "pool %s: cannot start the background thread: %s", p->name,
				strerror(-rc));
			raid_bm_free(p);
			raid_sc_destroy(&p->sc);
			goto err_members_nocs;
		}
		raid_pool_write_sbs(p, false);   /* records the bitmap geometry */
	} else if (atomic_load(&p->rsh.active)) {
		/* raid0 has no background thread but for a reshape */
		rc = raid_bg_start(p);
		if (rc) {
			LOG_ERR(RAID_MOD, "pool %s: cannot start the background thread: %s", p->name,
				strerror(-rc));
			raid_sc_destroy(&p->sc);
			goto err_members_nocs;
		}
	}
	*out = p;
	return 0;

err_members:
	free(cs);
	cs = NULL;
err_members_nocs:
	for (i = 0; i < p->n_slots; i++) {
		raid_pool_member_close(p->m[i]);
		p->m[i] = NULL;
	}
	goto err_free;
err_cands:
	for (i = 0; i < nc; i++) {
		bool in_pool = false;

		for (unsigned k = 0; k < p->n_slots; k++)
			if (cs[i].m && p->m[k] == cs[i].m)
				in_pool = true;
		if (!in_pool)
			raid_pool_member_close(cs[i].m);
	}
	for (i = 0; i < p->n_slots; i++)
		raid_pool_member_close(p->m[i]);
err_free:
	if (p) {
		raid_reshape_destroy(p);
		raid_slock_destroy(&p->lock);
		pthread_mutex_destroy(&p->meta_mu);
		pthread_mutex_destroy(&p->bad_mu);
	}
	free(cs);
	free(p);
	return rc;
}

void raid_md_pool_close(struct raid_pool *p)
{
	unsigned i;

	if (!p)
		return;
	raid_bg_stop(p);
	/* nothing is in flight any more: every lock released, the cache and
	 * the bitmap at rest */
	RTGT_CHECK(raid_slock_check(&p->lock));
	RTGT_CHECK(raid_bm_check(p));
	if (atomic_load(&p->sc.n)) {
		struct raid_ioctx *ctx;

		if (raid_ioctx_create(&ctx) == 0) {
			raid_bg_cache_flush(p, ctx, 0);
			raid_ioctx_destroy(ctx);
		} else {
			LOG_ERR(RAID_MOD, "pool %s: cannot write out cached stripes", p->name);
		}
	}
	RTGT_CHECK(!p->sc.max || raid_sc_check(&p->sc));
	raid_sc_destroy(&p->sc);
	raid_bm_clear_idle(p, true);
	pthread_mutex_lock(&p->meta_mu);
	for (i = 0; i < p->n_slots; i++)
		if (p->m[i] && raid_member_writable(p->m[i]) && fdatasync(p->m[i]->fd))
			LOG_ERR(RAID_MOD, "pool %s: member %s: fdatasync: %s", p->name, p->m[i]->path,
				strerror(errno));
	/* regions still waiting for resync keep the pool "unclean" */
	raid_pool_write_sbs_locked(p, atomic_load(&p->bm.n_unsynced) == 0);
	pthread_mutex_unlock(&p->meta_mu);
	raid_bm_free(p);
	RTGT_CHECK(raid_pool_check(p));
	for (i = 0; i < p->n_slots; i++)
		raid_pool_member_close(p->m[i]);
	while (p->retired) {
		struct raid_member *m = p->retired;

		p->retired = m->retired_next;
		raid_pool_member_close(m);
	}
	for (i = 0; i < RAID_MAX_VOLS; i++) {
		if (p->vols[i])
			raid_thin_vol_free(p->vols[i]);
		free(p->vols[i]);
	}
	raid_thin_pool_free(p);
	raid_reshape_destroy(p);
	raid_slock_destroy(&p->lock);
	pthread_mutex_destroy(&p->meta_mu);
	pthread_mutex_destroy(&p->bad_mu);
	free(p);
}

const char *raid_pool_name(const struct raid_pool *pool)
{
	return pool->name;
}

uint64_t raid_pool_usable_bytes(const struct raid_pool *pool)
{
	return pool->g.usable;
}
