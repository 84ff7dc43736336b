/*
 * raid/vol.c - volumes of a RAID pool, recorded in the volume table of every
 * member's superblock: thick ones are extents of the pool's logical space
 * (below); a thin one's entry locates its extent map, and its data lives
 * in extents thin.c hands out (see there).
 *
 * Layer: ops tables, the top (raid/README.md "Layers"). May call: pool.c,
 * rebuild.c (scrub), thin.c, io.c, mstate.c and everything below, conf/.
 *
 * A volume's extent starts on a full-stripe boundary and is its size rounded
 * up to a full stripe, so a volume never shares a stripe (and so a parity
 * block or a stripe lock) with another. Extents are allocated first-fit at
 * creation and never move. A percentage size is N% of the pool's usable
 * bytes, rounded down to a full stripe; an absolute size is kept exactly
 * (it must be a multiple of 512).
 *
 * Growing (md_vol_resize, and md_vol_open when the configuration asks for
 * more than the table holds): the extent grows in place over the free
 * space after it, never moves, never shrinks. Under meta_mu the table entry
 * is changed and written to every member (two alternating superblock copies
 * a member, assembly takes the newest: a crash leaves the old or the new
 * size, both whole); only then does vol->size grow, so no request reaches
 * a block the table does not yet give the volume. The blocks gained hold
 * what the members held there (as a new volume's do), with parity made
 * consistent by the pool's initial sync.
 *
 * Snapshots, clones, rollback, delete (md_pool_*; raid.h "snapshots"): each
 * changes the table once, under open_mu (no open or resize meanwhile) and
 * meta_mu, with the map work done by thin.c in between without meta_mu:
 * a snapshot or clone gets a map region (find_space), thin.c copies and
 * writes the map, then the table names it; a rollback gets a new region
 * for the volume's map and the table entry moves to it; a delete takes the
 * entry out, then thin.c drops its references. A crash anywhere leaves the
 * table as before (and a region nothing names) or as after. Every refusal
 * is one line in the caller's @why, with nothing changed.
 *
 * Also the RAID backend's ops table (backend.h): which levels it serves and
 * where each op lives among pool.c, vol.c, io.c and rebuild.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "raid/backend.h"
#include "raid/fault.h"

static uint64_t want_bytes(const struct raid_pool *p, const struct conf_size *size)
{
	if (size->bytes)
		return size->bytes;
	return p->g.usable / 100 * size->percent / p->g.stripe_bytes * p->g.stripe_bytes;
}

/* A size a volume may have: 1..100 percent, or a multiple of 512 bytes
 * (logged when not). */
static bool size_valid(const struct raid_pool *p, const char *name, const struct conf_size *size)
{
	if ((!size->bytes && (size->percent < 1 || size->percent > 100)) || size->bytes % 512) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: size must be 1..100%% or a multiple of 512 bytes",
			p->name, name);
		return false;
	}
	return true;
}

/* The extent for @bytes: rounded up to a full stripe. */
static uint64_t extent_of(const struct raid_pool *p, uint64_t bytes)
{
	return (bytes + p->g.stripe_bytes - 1) / p->g.stripe_bytes * p->g.stripe_bytes;
}

/* First-fit search for @extent bytes, reserved against thin allocations
 * until the caller's raid_thin_pending(p, 0, 0); meta_mu held. */
static int find_space(const struct raid_pool *p, uint64_t extent, uint64_t *start)
{
	uint64_t pos = 0;

	for (;;) {
		bool moved = false;

		for (unsigned i = 0; i < p->sb.n_vols; i++) {
			const struct raid_sb_vol *v = &p->sb.vols[i];

			if (pos < v->start + v->extent && v->start < pos + extent) {
				pos = v->start + v->extent;
				moved = true;
			}
		}
		if (moved)
			continue;
		if (pos + extent > p->g.usable)
			return -ENOSPC;
		/* thin volumes' extents are not in the table: a free place is
		 * reserved against them at once (raid_thin_pending(p, 0, 0)
		 * once the table holds it, or not) */
		{
			uint64_t next;

			if (!raid_thin_reserve(p, pos, pos + extent, &next))
				break;
			pos = extent_of(p, next);
		}
	}
	*start = pos;
	return 0;
}

/* Grow table entry @i to @bytes (> its size) in place and write the table;
 * meta_mu held. The open volume, if any, is the caller's to update. */
static int grow_locked(struct raid_pool *p, unsigned i, uint64_t bytes)
{
	struct raid_sb_vol *sv = &p->sb.vols[i];
	uint64_t extent = extent_of(p, bytes), old_size = sv->size, old_extent = sv->extent;
	int rc;

	if (sv->start + extent > p->g.usable) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s cannot grow to %llu bytes: the pool ends %llu bytes after its start (volumes are never moved)",
			p->name, sv->name, (unsigned long long)bytes,
			(unsigned long long)(p->g.usable - sv->start));
		return -ENOSPC;
	}
	for (unsigned k = 0; k < p->sb.n_vols; k++) {
		const struct raid_sb_vol *o = &p->sb.vols[k];

		if (k != i && o->start < sv->start + extent && sv->start < o->start + o->extent) {
			LOG_ERR(RAID_MOD, "pool %s: volume %s cannot grow to %llu bytes: volume %s follows it at %llu, so at most %llu bytes (volumes are never moved)",
				p->name, sv->name, (unsigned long long)bytes, o->name,
				(unsigned long long)o->start,
				(unsigned long long)(o->start - sv->start));
			return -ENOSPC;
		}
	}
	if (extent > sv->extent) {
		uint64_t next;

		if (raid_thin_reserve(p, sv->start + sv->extent, sv->start + extent, &next)) {
			LOG_ERR(RAID_MOD, "pool %s: volume %s cannot grow to %llu bytes: thin volumes' data lies after it (volumes are never moved)",
				p->name, sv->name, (unsigned long long)bytes);
			return -ENOSPC;
		}
	}
	sv->size = bytes;
	if (extent > sv->extent)
		sv->extent = extent;
	rc = raid_pool_write_sbs_locked(p, false);
	raid_thin_pending(p, 0, 0);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: the volume table could not be written (%s): size stays %llu bytes",
			p->name, sv->name, strerror(-rc), (unsigned long long)old_size);
		sv->size = old_size;
		sv->extent = old_extent;
		return rc;
	}
	LOG_INFO(RAID_MOD, "pool %s: volume %s grown from %llu to %llu bytes", p->name, sv->name,
		 (unsigned long long)old_size, (unsigned long long)bytes);
	return 0;
}

/* A family id no entry of the table has (never 0). */
static uint64_t new_family(const struct raid_pool *p)
{
	for (;;) {
		uint64_t f = 0;
		bool taken = false;

		if (getrandom(&f, sizeof(f), 0) != sizeof(f) || !f)
			continue;
		for (unsigned i = 0; i < p->sb.n_vols; i++)
			taken |= p->sb.vols[i].family == f;
		if (!taken)
			return f;
	}
}

/* A new thin volume: its map region found, written, then the table entry;
 * meta_mu held on entry and return, dropped for the map's writes (a member
 * failing meanwhile takes meta_mu). */
static int thin_create(struct raid_pool *p, const char *name, uint64_t bytes,
		       struct raid_sb_vol **out)
{
	struct raid_sb_vol nv;
	uint64_t extent = extent_of(p, raid_thin_map_bytes(p, bytes));
	int rc;

	memset(&nv, 0, sizeof(nv));
	rc = find_space(p, extent, &nv.start);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: no room for the extent map of thin volume %s (%llu bytes)",
			p->name, name, (unsigned long long)extent);
		return rc;
	}
	snprintf(nv.name, sizeof(nv.name), "%s", name);
	if (getrandom(nv.uuid, 16, 0) != 16) {
		raid_thin_pending(p, 0, 0);
		return -EIO;
	}
	nv.size = bytes;
	nv.extent = extent;
	nv.flags = RAID_SBV_THIN;
	nv.thin_ext = raid_thin_ext(p);
	nv.family = new_family(p);
	/* find_space reserved the region: no thin write takes it while the
	 * map is written without meta_mu */
	pthread_mutex_unlock(&p->meta_mu);
	rc = raid_thin_map_init(p, &nv);
	pthread_mutex_lock(&p->meta_mu);
	if (rc)
		goto out_unpend;
	p->sb.vols[p->sb.n_vols] = nv;
	p->sb.n_vols++;
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		p->sb.n_vols--;
		goto out_unpend;
	}
	*out = &p->sb.vols[p->sb.n_vols - 1];
	LOG_INFO(RAID_MOD, "pool %s: created thin volume %s, %llu bytes, extent map at %llu",
		 p->name, name, (unsigned long long)bytes, (unsigned long long)nv.start);
out_unpend:
	raid_thin_pending(p, 0, 0);
	return rc;
}

/* Grow open thin volume @v (table entry @i) to @bytes within its map
 * region: the map blocks it gains written empty, the table written, then
 * the size published. meta_mu held on entry and return, dropped for the
 * map's writes. */
static int thin_grow_locked(struct raid_pool *p, unsigned i, struct raid_vol *v, uint64_t bytes)
{
	struct raid_sb_vol *sv = &p->sb.vols[i];
	uint64_t old = sv->size, max = raid_thin_max_bytes(p, sv->extent);
	int rc;

	if (bytes > max) {
		LOG_ERR(RAID_MOD, "pool %s: thin volume %s cannot grow to %llu bytes: its extent map holds at most %llu (4 times the size it was created with, at least 64 GiB)",
			p->name, sv->name, (unsigned long long)bytes, (unsigned long long)max);
		return -ENOSPC;
	}
	pthread_mutex_unlock(&p->meta_mu);
	rc = raid_thin_grow_map(v, bytes);
	pthread_mutex_lock(&p->meta_mu);
	if (rc)
		return rc;
	sv = &p->sb.vols[i];
	sv->size = bytes;
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s: the volume table could not be written (%s): size stays %llu bytes",
			p->name, sv->name, strerror(-rc), (unsigned long long)old);
		sv->size = old;
		return rc;
	}
	rc = raid_thin_grow_mem(v, bytes);
	if (rc) {
		/* the table says the new size: the next start serves it */
		LOG_ERR(RAID_MOD, "pool %s: thin volume %s grown on disk to %llu bytes but not in memory (%s): it serves %llu until a restart",
			p->name, sv->name, (unsigned long long)bytes, strerror(-rc),
			(unsigned long long)old);
		return rc;
	}
	LOG_INFO(RAID_MOD, "pool %s: thin volume %s grown from %llu to %llu bytes", p->name, sv->name,
		 (unsigned long long)old, (unsigned long long)bytes);
	return 0;
}

static int open_locked(struct raid_pool *p, const char *name, const struct conf_size *size,
		       bool thin, bool create_only, struct raid_vol **out)
{
	struct raid_sb_vol *sv = NULL;
	struct raid_vol *v;
	uint64_t bytes;
	unsigned i;
	int rc = 0;

	if (!name || !*name || strlen(name) >= sizeof(v->name)) {
		LOG_ERR(RAID_MOD, "pool %s: bad volume name", p->name);
		return -EINVAL;
	}
	if (strchr(name, '@')) {
		/* a snapshot: opened as it is, whatever size or provisioning
		 * the LUN gives (conf.c makes its LUN read-only) */
		pthread_mutex_lock(&p->meta_mu);
		for (i = 0; i < p->sb.n_vols; i++)
			if (!strcmp(p->sb.vols[i].name, name) &&
			    (p->sb.vols[i].flags & RAID_SBV_SNAP))
				sv = &p->sb.vols[i];
		if (!sv) {
			LOG_ERR(RAID_MOD, "pool %s: no snapshot %s (rtgtctl volume list %s shows them)",
				p->name, name, p->name);
			rc = -ENOENT;
			goto out_unlock;
		}
		thin = true;
		bytes = sv->size;
		goto open;
	}
	if (!size_valid(p, name, size))
		return -EINVAL;
	bytes = want_bytes(p, size);
	pthread_mutex_lock(&p->meta_mu);
	for (i = 0; i < p->sb.n_vols; i++)
		if (!strcmp(p->sb.vols[i].name, name))
			sv = &p->sb.vols[i];
	if (sv && !!(sv->flags & RAID_SBV_THIN) != thin) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s is %s, the configuration says %s: a volume keeps the provisioning it was created with",
			p->name, name, thin ? "thick" : "thin", thin ? "thin" : "thick");
		rc = -EINVAL;
		goto out_unlock;
	}
	if (sv && sv->size < bytes && thin) {
		/* grown below, once open */
	} else if (sv && sv->size < bytes) {
		/* the configuration was raised while the daemon was down */
		rc = grow_locked(p, (unsigned)(sv - p->sb.vols), bytes);
		if (rc)
			goto out_unlock;
	} else if (sv && sv->size > bytes) {
		/* grown online (rtgtctl resize) with the file left behind:
		 * the volume keeps its data; nothing is ever cut off */
		LOG_WARN(RAID_MOD, "pool %s: volume %s is %llu bytes on disk, more than the %llu the configuration asks for (volumes never shrink): serving %llu; raise its size in the configuration",
			 p->name, name, (unsigned long long)sv->size, (unsigned long long)bytes,
			 (unsigned long long)sv->size);
	} else if (!sv) {
		uint64_t extent = extent_of(p, bytes);
		uint64_t start;

		if (bytes == 0) {
			LOG_ERR(RAID_MOD, "pool %s: volume %s: size rounds to 0 bytes", p->name, name);
			rc = -EINVAL;
			goto out_unlock;
		}
		if (p->sb.n_vols >= RAID_MAX_VOLS) {
			LOG_ERR(RAID_MOD, "pool %s: volume table full (%u volumes)", p->name, RAID_MAX_VOLS);
			rc = -ENOSPC;
			goto out_unlock;
		}
		if (thin) {
			rc = thin_create(p, name, bytes, &sv);
			if (rc)
				goto out_unlock;
			goto open;
		}
		rc = find_space(p, extent, &start);
		if (rc) {
			LOG_ERR(RAID_MOD, "pool %s: no room for volume %s (%llu bytes)", p->name, name,
				(unsigned long long)bytes);
			goto out_unlock;
		}
		sv = &p->sb.vols[p->sb.n_vols];
		memset(sv, 0, sizeof(*sv));
		snprintf(sv->name, sizeof(sv->name), "%s", name);
		if (getrandom(sv->uuid, 16, 0) != 16) {
			raid_thin_pending(p, 0, 0);
			rc = -EIO;
			goto out_unlock;
		}
		sv->start = start;
		sv->size = bytes;
		sv->extent = extent;
		p->sb.n_vols++;
		rc = 0;
		{
			/* write_sbs rebuilds p->sb from the pool but keeps vols */
			rc = raid_pool_write_sbs_locked(p, false);
		}
		raid_thin_pending(p, 0, 0);
		if (rc) {
			p->sb.n_vols--;
			goto out_unlock;
		}
		LOG_INFO(RAID_MOD, "pool %s: created volume %s, %llu bytes at %llu", p->name, name,
			 (unsigned long long)bytes, (unsigned long long)start);
	}
open:
	i = (unsigned)(sv - p->sb.vols);
	if (create_only) {
		*out = NULL;
		goto out_unlock;
	}
	if (!p->vols[i]) {
		v = calloc(1, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		v->pool = p;
		snprintf(v->name, sizeof(v->name), "%s", sv->name);
		memcpy(v->uuid, sv->uuid, 16);
		v->start = sv->start;
		atomic_init(&v->size, sv->size);
		v->extent = sv->extent;
		v->snapshot = !!(sv->flags & RAID_SBV_SNAP);
		if (sv->flags & RAID_SBV_THIN) {
			rc = raid_thin_attach(p, i, v);
			if (rc) {
				free(v);
				goto out_unlock;
			}
		}
		p->vols[i] = v;
	} else if (atomic_load(&p->vols[i]->size) < sv->size) {
		/* open already, and grown just now */
		p->vols[i]->extent = sv->extent;
		atomic_store_explicit(&p->vols[i]->size, sv->size, memory_order_release);
	}
	if (thin && p->sb.vols[i].size < bytes) {
		/* the configuration was raised while the daemon was down */
		rc = thin_grow_locked(p, i, p->vols[i], bytes);
		if (rc)
			goto out_unlock;
	}
	*out = p->vols[i];
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	return rc;
}

static int md_vol_open(struct raid_pool *p, const char *name, const struct conf_size *size,
		       unsigned flags, struct raid_vol **out)
{
	int rc = raid_thin_pool_load(p);

	if (rc)
		return rc;
	raid_thin_lock(p);
	rc = open_locked(p, name, size, flags & RAID_VOL_THIN, false, out);
	raid_thin_unlock(p);
	return rc;
}

/* A name part of a snapshot (either side of the '@'). */
static bool part_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > RAID_SNAP_PART_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static int find_locked(const struct raid_pool *p, const char *name)
{
	for (unsigned i = 0; i < p->sb.n_vols; i++)
		if (!strcmp(p->sb.vols[i].name, name))
			return (int)i;
	return -1;
}

static int md_pool_snapshot(struct raid_pool *p, const char *vol, const char *snap, char *why,
			    size_t wl)
{
	struct raid_sb_vol nv;
	uint8_t ouuid[16];
	uint64_t us = 0, old_family = 0;
	char name[64];
	int i, rc;

	if (!part_ok(vol) || !part_ok(snap)) {
		snprintf(why, wl, "snapshot names: VOLUME and NAME of 1..%u characters of A-Z a-z 0-9 . _ - each ('@' joins them)",
			 RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%s@%s", vol, snap);
	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	i = find_locked(p, vol);
	if (i < 0) {
		snprintf(why, wl, "pool %s: no volume %s", p->name, vol);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (!(p->sb.vols[i].flags & RAID_SBV_THIN)) {
		snprintf(why, wl, "pool %s: volume %s is thick: snapshots are taken of thin volumes (a LUN with thin = true)",
			 p->name, vol);
		rc = -EOPNOTSUPP;
		goto out_unlock;
	}
	if (find_locked(p, name) >= 0) {
		snprintf(why, wl, "pool %s: snapshot %s exists already", p->name, name);
		rc = -EEXIST;
		goto out_unlock;
	}
	if (p->sb.n_vols >= RAID_MAX_VOLS) {
		snprintf(why, wl, "pool %s: the volume table is full (%u volumes and snapshots): delete one first",
			 p->name, RAID_MAX_VOLS);
		rc = -ENOSPC;
		goto out_unlock;
	}
	memset(&nv, 0, sizeof(nv));
	nv.extent = extent_of(p, raid_thin_snap_map_bytes(p, p->sb.vols[i].size));
	rc = find_space(p, nv.extent, &nv.start);
	if (rc) {
		snprintf(why, wl, "pool %s: no room for the extent map of snapshot %s (%llu bytes)",
			 p->name, name, (unsigned long long)nv.extent);
		goto out_unlock;
	}
	snprintf(nv.name, sizeof(nv.name), "%s", name);
	if (getrandom(nv.uuid, 16, 0) != 16) {
		snprintf(why, wl, "no random bytes for a UUID");
		rc = -EIO;
		goto out_unpend;
	}
	nv.size = p->sb.vols[i].size;
	nv.flags = RAID_SBV_THIN | RAID_SBV_SNAP;
	nv.thin_ext = raid_thin_ext(p);
	snprintf(nv.origin, sizeof(nv.origin), "%s", vol);
	/* a volume from before snapshots gets its family now, in the
	 * same table write as the snapshot that needs it */
	old_family = p->sb.vols[i].family;
	if (!old_family)
		p->sb.vols[i].family = new_family(p);
	nv.family = p->sb.vols[i].family;
	memcpy(ouuid, p->sb.vols[i].uuid, 16);
	/* the region stays reserved (find_space) while the map is written
	 * without meta_mu; open_mu keeps the table's other users out */
	pthread_mutex_unlock(&p->meta_mu);
	rc = raid_thin_snapshot(p, ouuid, &nv, &us);
	pthread_mutex_lock(&p->meta_mu);
	if (rc) {
		snprintf(why, wl, "pool %s: snapshot %s not taken: %s", p->name, name,
			 rc == -EBUSY ? "the volume's requests in flight did not finish" : strerror(-rc));
		i = find_locked(p, vol);
		if (i >= 0)
			p->sb.vols[i].family = old_family;
		goto out_unpend;
	}
	p->sb.vols[p->sb.n_vols++] = nv;
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		p->sb.n_vols--;
		raid_thin_forget(p, nv.uuid);
		i = find_locked(p, vol);
		if (i >= 0)
			p->sb.vols[i].family = old_family;
		snprintf(why, wl, "pool %s: snapshot %s not taken: the volume table could not be written (%s)",
			 p->name, name, strerror(-rc));
		goto out_unpend;
	}
	raid_crash_point("snap-table");
	LOG_INFO(RAID_MOD, "pool %s: snapshot %s taken (requests held %llu us), extent map at %llu",
		 p->name, name, (unsigned long long)us, (unsigned long long)nv.start);
out_unpend:
	raid_thin_pending(p, 0, 0);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_pool_vol_delete(struct raid_pool *p, const char *name, char *why, size_t wl)
{
	struct raid_sb_vol old[RAID_MAX_VOLS];
	struct raid_vol *oldv[RAID_MAX_VOLS];
	struct raid_sb_vol sv;
	unsigned n;
	int i, rc;

	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	i = find_locked(p, name);
	if (i < 0) {
		snprintf(why, wl, "pool %s: no volume or snapshot %s", p->name, name);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (p->vols[i]) {
		snprintf(why, wl, "pool %s: %s is in use: a LUN of this daemon has it open (remove the LUN from the configuration and reload)",
			 p->name, name);
		rc = -EBUSY;
		goto out_unlock;
	}
	for (unsigned k = 0; k < p->sb.n_vols; k++)
		if (!strcmp(p->sb.vols[k].origin, name) && !(p->sb.vols[k].flags & RAID_SBV_SNAP)) {
			snprintf(why, wl, "pool %s: clone %s depends on %s: volume inflate %s %s first (or delete the clone)",
				 p->name, p->sb.vols[k].name, name, p->name, p->sb.vols[k].name);
			rc = -EBUSY;
			goto out_unlock;
		}
	if (!strchr(name, '@')) {
		size_t len = strlen(name);

		for (unsigned k = 0; k < p->sb.n_vols; k++)
			if (!strncmp(p->sb.vols[k].name, name, len) && p->sb.vols[k].name[len] == '@') {
				snprintf(why, wl, "pool %s: volume %s has snapshots (%s first): delete them first",
					 p->name, name, p->sb.vols[k].name);
				rc = -EBUSY;
				goto out_unlock;
			}
	}
	n = p->sb.n_vols;
	sv = p->sb.vols[i];
	memcpy(old, p->sb.vols, sizeof(old[0]) * n);
	memcpy(oldv, p->vols, sizeof(oldv[0]) * n);
	memmove(&p->sb.vols[i], &p->sb.vols[i + 1], sizeof(old[0]) * (n - i - 1));
	memmove(&p->vols[i], &p->vols[i + 1], sizeof(oldv[0]) * (n - i - 1));
	p->vols[n - 1] = NULL;
	p->sb.n_vols--;
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		memcpy(p->sb.vols, old, sizeof(old[0]) * n);
		memcpy(p->vols, oldv, sizeof(oldv[0]) * n);
		p->sb.n_vols = n;
		snprintf(why, wl, "pool %s: %s not deleted: the volume table could not be written (%s)",
			 p->name, name, strerror(-rc));
		goto out_unlock;
	}
	raid_crash_point("delete-table");
	/* durable: its map region and the extents only it named are free */
	if (sv.flags & RAID_SBV_THIN)
		raid_thin_forget(p, sv.uuid);
	raid_thin_pending(p, 0, 0);
	LOG_INFO(RAID_MOD, "pool %s: %s %s deleted", p->name,
		 sv.flags & RAID_SBV_SNAP ? "snapshot" : "volume", name);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_pool_clone(struct raid_pool *p, const char *snap, const char *name, char *why,
			 size_t wl)
{
	struct raid_sb_vol nv;
	uint8_t suuid[16];
	int j, rc;

	if (!part_ok(name)) {
		snprintf(why, wl, "volume names: 1..%u characters of A-Z a-z 0-9 . _ -", RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	j = find_locked(p, snap);
	if (j < 0 || !(p->sb.vols[j].flags & RAID_SBV_SNAP)) {
		snprintf(why, wl, "pool %s: no snapshot %s", p->name, snap);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (find_locked(p, name) >= 0) {
		snprintf(why, wl, "pool %s: a volume %s exists already", p->name, name);
		rc = -EEXIST;
		goto out_unlock;
	}
	if (p->sb.n_vols >= RAID_MAX_VOLS) {
		snprintf(why, wl, "pool %s: the volume table is full (%u volumes and snapshots): delete one first",
			 p->name, RAID_MAX_VOLS);
		rc = -ENOSPC;
		goto out_unlock;
	}
	memset(&nv, 0, sizeof(nv));
	nv.size = p->sb.vols[j].size;
	nv.extent = extent_of(p, raid_thin_map_bytes(p, nv.size));
	rc = find_space(p, nv.extent, &nv.start);
	if (rc) {
		snprintf(why, wl, "pool %s: no room for the extent map of clone %s (%llu bytes)", p->name,
			 name, (unsigned long long)nv.extent);
		goto out_unlock;
	}
	snprintf(nv.name, sizeof(nv.name), "%s", name);
	if (getrandom(nv.uuid, 16, 0) != 16) {
		snprintf(why, wl, "no random bytes for a UUID");
		rc = -EIO;
		goto out_unpend;
	}
	nv.flags = RAID_SBV_THIN;
	nv.thin_ext = raid_thin_ext(p);
	nv.family = p->sb.vols[j].family;
	snprintf(nv.origin, sizeof(nv.origin), "%s", snap);
	memcpy(suuid, p->sb.vols[j].uuid, 16);
	pthread_mutex_unlock(&p->meta_mu);
	/* a snapshot never changes: taking its map as a snapshot's is a
	 * copy of a still map; the clone is a writable thin volume */
	rc = raid_thin_snapshot(p, suuid, &nv, NULL);
	pthread_mutex_lock(&p->meta_mu);
	if (rc) {
		snprintf(why, wl, "pool %s: clone %s not made: %s", p->name, name, strerror(-rc));
		goto out_unpend;
	}
	p->sb.vols[p->sb.n_vols++] = nv;
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		p->sb.n_vols--;
		raid_thin_forget(p, nv.uuid);
		snprintf(why, wl, "pool %s: clone %s not made: the volume table could not be written (%s)",
			 p->name, name, strerror(-rc));
		goto out_unpend;
	}
	raid_crash_point("clone-table");
	LOG_INFO(RAID_MOD, "pool %s: clone %s of %s made, extent map at %llu", p->name, name, snap,
		 (unsigned long long)nv.start);
out_unpend:
	raid_thin_pending(p, 0, 0);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_pool_rollback(struct raid_pool *p, const char *snap, bool force, char *why,
			    size_t wl)
{
	const char *at = strchr(snap, '@');
	struct raid_sb_vol nv;
	struct raid_thin *r = NULL;
	uint8_t vuuid[16], suuid[16];
	char vol[64];
	int i, j, rc;

	if (!at || at == snap || (size_t)(at - snap) >= sizeof(vol)) {
		snprintf(why, wl, "'%s' is not a snapshot (VOLUME@SNAP)", snap);
		return -EINVAL;
	}
	snprintf(vol, sizeof(vol), "%.*s", (int)(at - snap), snap);
	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	i = find_locked(p, vol);
	j = find_locked(p, snap);
	if (j < 0 || !(p->sb.vols[j].flags & RAID_SBV_SNAP) || i < 0 ||
	    strcmp(p->sb.vols[j].origin, vol)) {
		snprintf(why, wl, "pool %s: no snapshot %s of a volume %s", p->name, snap, vol);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (p->vols[i] && !force) {
		snprintf(why, wl, "pool %s: volume %s is exported by a LUN: unmount it on the initiators and give --force (the LUN is reset)",
			 p->name, vol);
		rc = -EBUSY;
		goto out_unlock;
	}
	nv = p->sb.vols[i];
	rc = find_space(p, nv.extent, &nv.start);
	if (rc) {
		snprintf(why, wl, "pool %s: no room for a new extent map of %s (%llu bytes)", p->name, vol,
			 (unsigned long long)nv.extent);
		goto out_unlock;
	}
	memcpy(vuuid, p->sb.vols[i].uuid, 16);
	memcpy(suuid, p->sb.vols[j].uuid, 16);
	pthread_mutex_unlock(&p->meta_mu);
	rc = raid_thin_rollback_prepare(p, vuuid, suuid, &nv, &r);
	pthread_mutex_lock(&p->meta_mu);
	if (rc) {
		snprintf(why, wl, "pool %s: %s not rolled back: %s", p->name, vol,
			 rc == -EBUSY ? "its requests in flight did not finish" : strerror(-rc));
		goto out_unpend;
	}
	/* one table write switches the volume to the new map: a crash
	 * leaves it all old or all rolled back */
	i = find_locked(p, vol);
	{
		struct raid_sb_vol old = p->sb.vols[i];

		p->sb.vols[i].start = nv.start;
		rc = raid_pool_write_sbs_locked(p, false);
		if (rc)
			p->sb.vols[i] = old;
		else
			raid_crash_point("rollback-table");
	}
	raid_thin_rollback_finish(p, vuuid, r, rc == 0);
	if (rc) {
		snprintf(why, wl, "pool %s: %s not rolled back: the volume table could not be written (%s)",
			 p->name, vol, strerror(-rc));
		goto out_unpend;
	}
	if (p->vols[i])
		p->vols[i]->start = nv.start;
	LOG_INFO(RAID_MOD, "pool %s: volume %s rolled back to %s%s", p->name, vol, snap,
		 p->vols[i] ? " while exported (--force)" : "");
out_unpend:
	raid_thin_pending(p, 0, 0);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_pool_inflate(struct raid_pool *p, const char *name, char *why, size_t wl)
{
	uint8_t uuid[16];
	uint64_t copied = 0;
	char origin[64];
	int i, rc;

	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	i = find_locked(p, name);
	if (i < 0 || (p->sb.vols[i].flags & RAID_SBV_SNAP) || !(p->sb.vols[i].flags & RAID_SBV_THIN)) {
		snprintf(why, wl, "pool %s: no thin volume %s", p->name, name);
		rc = -ENOENT;
		goto out_unlock;
	}
	if (!p->sb.vols[i].origin[0]) {
		snprintf(why, wl, "pool %s: volume %s is no clone: it depends on nothing", p->name, name);
		rc = -EINVAL;
		goto out_unlock;
	}
	if (p->vols[i]) {
		snprintf(why, wl, "pool %s: volume %s is in use: a LUN of this daemon has it open (inflate it before exporting it)",
			 p->name, name);
		rc = -EBUSY;
		goto out_unlock;
	}
	memcpy(uuid, p->sb.vols[i].uuid, 16);
	snprintf(origin, sizeof(origin), "%s", p->sb.vols[i].origin);
	pthread_mutex_unlock(&p->meta_mu);
	rc = raid_thin_inflate(p, uuid, &copied);
	pthread_mutex_lock(&p->meta_mu);
	i = find_locked(p, name);
	if (rc) {
		snprintf(why, wl, "pool %s: %s inflated in part (%llu extents copied): %s; run it again",
			 p->name, name, (unsigned long long)copied, strerror(-rc));
		goto out_unlock;
	}
	p->sb.vols[i].origin[0] = '\0';
	rc = raid_pool_write_sbs_locked(p, false);
	if (rc) {
		snprintf(p->sb.vols[i].origin, sizeof(p->sb.vols[i].origin), "%s", origin);
		snprintf(why, wl, "pool %s: %s: its extents are its own, but the volume table could not be written (%s); run it again",
			 p->name, name, strerror(-rc));
		goto out_unlock;
	}
	LOG_INFO(RAID_MOD, "pool %s: volume %s inflated: %llu extents copied, it no longer depends on %s",
		 p->name, name, (unsigned long long)copied, origin);
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_pool_vol_create(struct raid_pool *p, const char *name, const struct conf_size *size,
			      bool thin, char *why, size_t wl)
{
	struct raid_vol *v = NULL;
	bool exists = false;
	int rc;

	if (!part_ok(name)) {
		snprintf(why, wl, "volume names: 1..%u characters of A-Z a-z 0-9 . _ -", RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	pthread_mutex_lock(&p->meta_mu);
	exists = find_locked(p, name) >= 0;
	pthread_mutex_unlock(&p->meta_mu);
	if (exists) {
		snprintf(why, wl, "pool %s: a volume %s exists already", p->name, name);
		return -EEXIST;
	}
	rc = raid_thin_pool_load(p);
	if (rc) {
		snprintf(why, wl, "pool %s: its thin volumes' maps could not be loaded (%s)", p->name,
			 strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	rc = open_locked(p, name, size, thin, true, &v);
	raid_thin_unlock(p);
	if (rc)
		snprintf(why, wl, "pool %s: volume %s not created: %s (the log says more)", p->name, name,
			 rc == -ENOSPC ? "no room for it" : strerror(-rc));
	return rc;
}

static int md_pool_check(struct raid_pool *p, struct raid_maps_check *out, char *why, size_t wl)
{
	int rc = raid_thin_pool_load(p);

	if (rc) {
		/* what assembly found is the answer: the maps contradict
		 * themselves or cannot be read (the log says where) */
		snprintf(why, wl, "pool %s: its thin volumes' maps cannot be loaded (%s): the log names the entry",
			 p->name, strerror(-rc));
		return rc;
	}
	raid_thin_lock(p);
	rc = raid_thin_check_pool(p, out);
	raid_thin_unlock(p);
	if (rc)
		snprintf(why, wl, "pool %s: check not done: %s", p->name, strerror(-rc));
	return rc;
}

static int md_vol_resize(struct raid_vol *v, const struct conf_size *size)
{
	struct raid_pool *p = v->pool;
	uint64_t bytes, cur;
	unsigned i;
	int rc;

	if (!size_valid(p, v->name, size))
		return -EINVAL;
	bytes = want_bytes(p, size);
	rc = raid_thin_pool_load(p);
	if (rc)
		return rc;
	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	cur = atomic_load(&v->size);
	if (bytes < cur) {
		LOG_ERR(RAID_MOD, "pool %s: volume %s is %llu bytes: %llu would shrink it, and volumes never shrink",
			p->name, v->name, (unsigned long long)cur, (unsigned long long)bytes);
		rc = -EINVAL;
		goto out_unlock;
	}
	rc = 0;
	if (bytes == cur)
		goto out_unlock;
	for (i = 0; i < p->sb.n_vols; i++)
		if (p->vols[i] == v)
			break;
	if (i == p->sb.n_vols) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (v->thin) {
		rc = thin_grow_locked(p, i, v, bytes);
		goto out_unlock;
	}
	rc = grow_locked(p, i, bytes);
	if (!rc) {
		v->extent = p->sb.vols[i].extent;
		atomic_store_explicit(&v->size, bytes, memory_order_release);
	}
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	return rc;
}

static int md_vol_submit(struct raid_vol *v, struct raid_ioctx *ctx, struct raid_io *io)
{
	if (v->thin)
		return raid_thin_submit(v, ctx, io);
	return raid_md_vol_submit_thick(v, ctx, io);
}

/* The last close: the table entry stays, the in-memory volume goes (a thin
 * one's map back to the loaded ones), so that delete, rollback and inflate
 * see it closed. */
static void md_vol_close(struct raid_vol *v)
{
	struct raid_pool *p = v->pool;
	unsigned i;

	raid_thin_lock(p);
	pthread_mutex_lock(&p->meta_mu);
	for (i = 0; i < p->sb.n_vols && p->vols[i] != v; i++)
		;
	if (atomic_load(&v->opens) || i == p->sb.n_vols ||
	    (v->thin && raid_thin_detach(p, v))) {
		/* opened again meanwhile, or not in the table: stays */
		pthread_mutex_unlock(&p->meta_mu);
		raid_thin_unlock(p);
		return;
	}
	p->vols[i] = NULL;
	pthread_mutex_unlock(&p->meta_mu);
	raid_thin_unlock(p);
	LOG_INFO(RAID_MOD, "pool %s: volume %s closed", p->name, v->name);
	free(v);
}

static void md_vol_opt(const struct raid_vol *vol, uint32_t *gran, uint32_t *len)
{
	*gran = (uint32_t)vol->pool->g.chunk;
	*len = (uint32_t)vol->pool->g.stripe_bytes;
}

/* 4 KiB when the chunk allows it: on raid5/6 a write of part of it costs a
 * read-modify-write of the row's parity, and 4 KiB is what file systems
 * write anyway */
static uint32_t md_vol_phys(const struct raid_vol *vol)
{
	return vol->pool->g.chunk >= 4096 ? 4096 : 512;
}

static bool md_serves(const struct conf_pool *cp)
{
	switch (cp->level) {
	case CONF_RAID0:
	case CONF_RAID1:
	case CONF_RAID5:
	case CONF_RAID6:
	case CONF_RAID10:
		return true;
	default:
		return false;
	}
}

/* The RAID backend (backend.h). Its volumes have no write-same, no
 * background preparation and no shared state. */
const struct raid_vol_backend_ops raid_md_backend = {
	.name = "raid",
	.serves = md_serves,
	.pool_open = raid_md_pool_open,
	.pool_close = raid_md_pool_close,
	.pool_info = raid_md_pool_info,
	.pool_fail = raid_md_pool_fail,
	.pool_add_spare = raid_md_pool_add_spare,
	.pool_remove = raid_md_pool_remove,
	.pool_grow = raid_md_pool_grow,
	.pool_scrub = raid_md_pool_scrub,
	.pool_replace = raid_md_pool_replace,
	.vol_open = md_vol_open,
	.vol_submit = md_vol_submit,
	.vol_close = md_vol_close,
	.vol_prov = raid_thin_prov,
	.vol_threshold_events = raid_thin_threshold_events,
	.vol_opt = md_vol_opt,
	.vol_phys = md_vol_phys,
	.vol_resize = md_vol_resize,
	.pool_snapshot = md_pool_snapshot,
	.pool_vol_delete = md_pool_vol_delete,
	.pool_clone = md_pool_clone,
	.pool_rollback = md_pool_rollback,
	.pool_inflate = md_pool_inflate,
	.pool_vol_create = md_pool_vol_create,
	.pool_check = md_pool_check,
};
