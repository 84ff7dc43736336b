/*
 * raid/rbd_snap.c - the volume commands of raid.h "snapshots" on rbd pools
 * (rbd_int.h), with librbd's own means, and the pool's image listing that
 * raid_pool_info (rtgtctl volume list) shows.
 *
 * Names are raid.h's: "IMAGE@SNAP" is snapshot SNAP of image IMAGE, each
 * part 1..RAID_SNAP_PART_MAX of A-Z a-z 0-9 . _ -; every refusal is -errno
 * with one line in @why, checked before anything is changed.
 *
 *   snapshot   rbd_snap_create, through the handle of this daemon's LUN when
 *              one has the image open: librbd then holds that handle's new
 *              writes while it allocates the snapshot and switches the
 *              handle's snapshot context, so every write acknowledged before
 *              the call is in the snapshot (no client cache: acknowledged
 *              means on the OSDs) and none admitted after it; other handles
 *              (other nodes) are told through the header watch and refresh
 *              before their next write. Refused while a thick image is still
 *              being written out.
 *   delete     a snapshot: refused while a LUN of this daemon has it open,
 *              while a clone depends on it (rbd_list_children3, trashed
 *              clones included), or while it is protected by someone else;
 *              protected by rtgt (image metadata rtgt.protected.<SNAP>, set
 *              by clone) and without children it is unprotected, then
 *              removed (re-protected should the removal fail). An image:
 *              refused while a LUN of this daemon has it open, while it has
 *              snapshots, or while another client watches its header (every
 *              librbd that opened it read-write, i.e. another rtgt node
 *              serving it, or a kernel `rbd map`); then rbd_remove, which
 *              checks the watchers once more.
 *   clone      the snapshot is protected if it is not yet (marker first, so
 *              a crash leaves at worst a marker naming a snapshot that is
 *              not protected), then rbd_clone2 (layering only, like every
 *              image of rtgt); the clone inherits the parent's metadata,
 *              so it gets a UUID of its own and loses rtgt's write-out and
 *              protection keys before anyone can open it; any failure
 *              removes the clone and undoes the protection.
 *   rollback   rbd_snap_rollback. Refused when the snapshot's size is not
 *              the image's (volumes never shrink), when another client has
 *              the image open, and while a LUN of this daemon has it open
 *              unless forced: then through that LUN's own handle, since
 *              librbd holds that handle's writes, lets the ones in flight
 *              finish, rolls every object back and only then lets the held
 *              writes go (a rollback through another handle would race the
 *              LUN's writes object by object); reads meanwhile may see
 *              either side, which the caller's LU reset (UNIT ATTENTION
 *              29/03) covers. Without a LUN it runs with meta_mu held, so no
 *              LUN opens the image half rolled back.
 *   inflate    rbd_flatten, online (librbd copies the parent's data up
 *              object by object while the image serves).
 *   create     rbd_create2 as a LUN's first open does (layering, 4 MiB
 *              objects), rtgt.uuid stored; thick (pool thick, not --thin):
 *              rtgt.thick = "0", so the first open writes it out.
 *
 * Listing: a refresh reads every image of the pool (rbd_list2, each opened
 * read-only: no header watch), its snapshots and its parent, and what it
 * takes: thin images and snapshots count the objects rbd_diff_iterate2
 * (whole objects, parent included) finds, up to LIST_DIFF_MAX_OBJ objects
 * per image (librbd has no object map here, so that is one OSD lookup per
 * object); a clone's shared bytes are those it still reads from its parent
 * (parent included less its own objects). A snapshot's shared bytes are
 * not known cheaply (it would take a diff against the head per snapshot):
 * 0. The listing thread refreshes every LIST_PERIOD_MS, at once when kicked
 * (a volume opened), and every command refreshes it before it returns;
 * raid_pool_info only copies it (rbd_adm_list_fill), so it never waits
 * for the cluster. At most RBD_LIST_MAX entries.
 *
 * Locks: refresh_mu serializes the commands and refreshes (taken first);
 * meta_mu (p->vols) inside it; list_mu is a leaf.
 *
 * Layer: rbd admin (raid/README.md "Layers"). May call: rbd_meta.c
 * (metadata getter, UUID text), librbd/librados. Called by rbd.c (its ops
 * table, the listing, snapshot opens); knows rbd.c's volumes only through
 * struct rbd_vol in p->vols.
 *
 * Built without librbd this file is empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "raid/rbd_int.h"

#ifdef RTGT_HAVE_RBD

#define RBD_ORDER           22
#define LIST_PERIOD_MS      10000u
#define LIST_DIFF_MAX_OBJ   4096u     /* 16 GiB of 4 MiB objects */
#define META_PROT_PREFIX    "rtgt.protected."

/* ---- names ---- */

static bool part_ok(const char *s, size_t n)
{
	if (n < 1 || n > RAID_SNAP_PART_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static bool name_ok(const char *s)
{
	return s && part_ok(s, strlen(s));
}

int rbd_adm_split(const char *name, char img[RAID_SNAP_PART_MAX + 1],
		   char snap[RAID_SNAP_PART_MAX + 1])
{
	const char *at = name ? strchr(name, '@') : NULL;

	if (!at || !part_ok(name, (size_t)(at - name)) || !name_ok(at + 1))
		return -EINVAL;
	snprintf(img, RAID_SNAP_PART_MAX + 1, "%.*s", (int)(at - name), name);
	snprintf(snap, RAID_SNAP_PART_MAX + 1, "%s", at + 1);
	return 0;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void rbd_adm_uuid(const uint8_t img_uuid[16], uint64_t snap_id, uint8_t out[16])
{
	uint64_t a = 0, b = 0;

	for (unsigned i = 0; i < 8; i++) {
		a = a << 8 | img_uuid[i];
		b = b << 8 | img_uuid[8 + i];
	}
	/* a bijection of (a, b) for each snap id, none the identity */
	a ^= mix64(snap_id ^ 0x5ba95ba95ba95ba9ull);
	b ^= mix64(a ^ snap_id);
	for (unsigned i = 0; i < 8; i++) {
		out[7 - i] = (uint8_t)(a >> (8 * i));
		out[15 - i] = (uint8_t)(b >> (8 * i));
	}
}

/* ---- helpers (refresh_mu held) ---- */

/* meta_mu held: this daemon's open volume @name, or NULL */
static struct rbd_vol *open_vol(struct raid_pool *p, const char *name)
{
	for (unsigned i = 0; i < RAID_MAX_VOLS; i++)
		if (p->vols[i] && !strcmp(p->vols[i]->name, name))
			return rv_of(p->vols[i]);
	return NULL;
}

/* A read-write handle on image @img: the open LUN's (*@temp false), or one
 * of its own (*@temp true: the caller closes it). meta_mu held. */
static int head_open(struct rbd_pool *rp, const char *img, rbd_image_t *h, bool *temp)
{
	struct rbd_vol *rv = open_vol(&rp->p, img);

	*temp = !rv;
	if (rv) {
		*h = rv->img;
		return 0;
	}
	return rbd_open(rp->ioctx, img, h, NULL);
}

static void head_close(rbd_image_t h, bool temp)
{
	if (temp)
		rbd_close(h);
}

/* Watchers of the image's header other than this daemon's client of the
 * pool: their count (the first one's address into @addr), or -errno. */
static int others_watching(struct rbd_pool *rp, rbd_image_t h, char *addr, size_t alen)
{
	rbd_image_watcher_t w[16];
	size_t n = sizeof(w) / sizeof(w[0]);
	int64_t self = (int64_t)rados_get_instance_id(rp->cluster);
	int rc = rbd_watchers_list(h, w, &n), others = 0;

	if (rc == -ERANGE) {
		snprintf(addr, alen, "%zu clients", n);
		return (int)n;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (w[i].id == self)
			continue;
		if (!others++)
			snprintf(addr, alen, "client.%" PRId64 " at %s", w[i].id, w[i].addr);
	}
	rbd_watchers_list_cleanup(w, n);
	return others;
}

/* The snapshot @snap of @h: 0 with its size and id, -ENOENT, or -errno. */
static int snap_find(rbd_image_t h, const char *snap, uint64_t *size, uint64_t *id)
{
	int max = 16, n;
	rbd_snap_info_t *s = NULL;

	for (;;) {
		rbd_snap_info_t *ns = realloc(s, (size_t)max * sizeof(*s));

		if (!ns) {
			free(s);
			return -ENOMEM;
		}
		s = ns;
		n = rbd_snap_list(h, s, &max);
		if (n != -ERANGE)
			break;
	}
	if (n < 0) {
		free(s);
		return n;
	}
	int rc = -ENOENT;

	for (int i = 0; i < n; i++) {
		if (!strcmp(s[i].name, snap)) {
			if (size)
				*size = s[i].size;
			if (id)
				*id = s[i].id;
			rc = 0;
		}
	}
	rbd_snap_list_end(s);
	free(s);
	return rc;
}

/* The first snapshot's name of @h into @first: their count, or -errno. */
static int snap_count(rbd_image_t h, char *first, size_t flen)
{
	int max = 16, n;
	rbd_snap_info_t *s = NULL;

	for (;;) {
		rbd_snap_info_t *ns = realloc(s, (size_t)max * sizeof(*s));

		if (!ns) {
			free(s);
			return -ENOMEM;
		}
		s = ns;
		n = rbd_snap_list(h, s, &max);
		if (n != -ERANGE)
			break;
	}
	if (n > 0) {
		snprintf(first, flen, "%s", s[0].name);
		rbd_snap_list_end(s);
	}
	free(s);
	return n;
}

/* Clones of snapshot @snap of image @img: their count (the first one's
 * name into @first, "(in the trash)" added for a trashed one), or -errno. */
static int children_of(struct rbd_pool *rp, const char *img, const char *snap, char *first,
		       size_t flen)
{
	rbd_linked_image_spec_t c[16];
	size_t n = sizeof(c) / sizeof(c[0]);
	rbd_image_t hs;
	int rc = rbd_open_read_only(rp->ioctx, img, &hs, snap);

	if (rc < 0)
		return rc;
	rc = rbd_list_children3(hs, c, &n);
	rbd_close(hs);
	if (rc == -ERANGE) {
		snprintf(first, flen, "one of %zu clones", n);
		return (int)n;
	}
	if (rc < 0)
		return rc;
	if (n)
		snprintf(first, flen, "%s%s", c[0].image_name, c[0].trash ? " (in the trash)" : "");
	rbd_linked_image_spec_list_cleanup(c, n);
	return (int)n;
}

static void prot_key(const char *snap, char *key, size_t len)
{
	snprintf(key, len, META_PROT_PREFIX "%s", snap);
}

/* rtgt.thick of @h says it is not written out in full yet */
static bool writing_out(rbd_image_t h)
{
	char s[32];

	return rbd_meta_get(h, META_THICK, s, sizeof(s)) == 0 && strcmp(s, "done") != 0;
}

/* Removes what a clone inherited of its parent's rtgt metadata and gives
 * it a UUID of its own. */
static int clone_meta(rbd_image_t h)
{
	static const char *const drop[] = { META_THICK, META_GROW, "rtgt.thick_holder" };
	char keys[4096], vals[4096], s[33];
	size_t kl = sizeof(keys), vl = sizeof(vals);
	uint8_t u[16];
	int rc;

	rc = rbd_metadata_list(h, "", 256, keys, &kl, vals, &vl);
	if (rc < 0)
		return rc;
	for (size_t o = 0; o < kl && keys[o]; o += strlen(keys + o) + 1) {
		bool gone = !strncmp(keys + o, META_PROT_PREFIX, strlen(META_PROT_PREFIX));

		for (unsigned i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
			gone |= !strcmp(keys + o, drop[i]);
		if (gone) {
			rc = rbd_metadata_remove(h, keys + o);
			if (rc < 0 && rc != -ENOENT)
				return rc;
		}
	}
	if (getrandom(u, 16, 0) != 16)
		return -EIO;
	rbd_meta_uuid_fmt(u, s);
	return rbd_metadata_set(h, META_UUID, s);
}

/* ---- listing ---- */

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rbd_list_ent *)a)->name, ((const struct rbd_list_ent *)b)->name);
}

static int sum_cb(uint64_t off, size_t len, int exists, void *arg)
{
	(void)off;
	if (exists)
		*(uint64_t *)arg += len;
	return 0;
}

/* Bytes of the objects that hold data of @h as it is set (head or a
 * snapshot), its parent's with @parent: -errno, or 0 and *@out. */
static int allocated(rbd_image_t h, uint64_t size, bool parent, uint64_t *out)
{
	*out = 0;
	return rbd_diff_iterate2(h, NULL, 0, size, parent, 1, sum_cb, out);
}

static void list_image(struct rbd_pool *rp, const char *name, struct rbd_list_ent *e,
		       unsigned *n, unsigned max)
{
	struct rbd_list_ent *img = &e[*n];
	rbd_linked_image_spec_t pi;
	rbd_snap_spec_t ps;
	rbd_snap_info_t *s = NULL;
	rbd_image_t h;
	uint64_t size = 0;
	int ns = 0, smax = 16;
	bool small;
	char tmp[8];

	if (rbd_open_read_only(rp->ioctx, name, &h, NULL) < 0)
		return;   /* removed meanwhile, or not readable: not listed */
	if (rbd_get_size(h, &size) < 0)
		goto out_close;
	memset(img, 0, sizeof(*img));
	snprintf(img->name, sizeof(img->name), "%s", name);
	img->bytes = size;
	img->thin = rbd_meta_get(h, META_THICK, tmp, sizeof(tmp)) == -ENOENT;
	small = size / (1u << RBD_ORDER) <= LIST_DIFF_MAX_OBJ;
	if (rbd_get_parent(h, &pi, &ps) == 0) {
		uint64_t own = 0;

		if (pi.pool_id == rados_ioctx_get_id(rp->ioctx) && !pi.pool_namespace[0])
			snprintf(img->origin, sizeof(img->origin), "%s@%s", pi.image_name, ps.name);
		else
			snprintf(img->origin, sizeof(img->origin), "%s/%s@%s", pi.pool_name,
				 pi.image_name, ps.name);
		rbd_linked_image_spec_cleanup(&pi);
		rbd_snap_spec_cleanup(&ps);
		img->thin = true;
		if (small && allocated(h, size, true, &img->allocated) == 0 &&
		    allocated(h, size, false, &own) == 0 && img->allocated > own)
			img->shared = img->allocated - own;
	} else if (img->thin && small) {
		allocated(h, size, true, &img->allocated);
	}
	if (!img->thin)
		img->allocated = size;
	(*n)++;
	for (;;) {
		rbd_snap_info_t *x = realloc(s, (size_t)smax * sizeof(*s));

		if (!x)
			goto out_free;
		s = x;
		ns = rbd_snap_list(h, s, &smax);
		if (ns != -ERANGE)
			break;
	}
	for (int i = 0; i < ns && *n < max; i++) {
		struct rbd_list_ent *se = &e[*n];

		if (strlen(name) + 1 + strlen(s[i].name) >= sizeof(se->name))
			continue;
		memset(se, 0, sizeof(*se));
		snprintf(se->name, sizeof(se->name), "%s@%s", name, s[i].name);
		snprintf(se->origin, sizeof(se->origin), "%s", name);
		se->bytes = s[i].size;
		se->thin = se->snapshot = true;
		if (s[i].size / (1u << RBD_ORDER) <= LIST_DIFF_MAX_OBJ &&
		    rbd_snap_set(h, s[i].name) == 0)
			allocated(h, s[i].size, true, &se->allocated);
		(*n)++;
	}
	if (ns > 0)
		rbd_snap_list_end(s);
out_free:
	free(s);
out_close:
	rbd_close(h);
}

/* refresh_mu held: reads the listing anew and publishes it; the old one
 * stays when the pool cannot be listed. */
static void list_refresh(struct rbd_pool *rp)
{
	rbd_image_spec_t *im = NULL;
	struct rbd_list_ent *e, *old;
	size_t max = 64;
	unsigned n = 0;
	int rc;

	for (;;) {
		rbd_image_spec_t *x = realloc(im, max * sizeof(*im));

		if (!x) {
			free(im);
			return;
		}
		im = x;
		rc = rbd_list2(rp->ioctx, im, &max);
		if (rc != -ERANGE)
			break;
	}
	e = rc < 0 ? NULL : calloc(RBD_LIST_MAX, sizeof(*e));
	if (!e) {
		if (rc >= 0)
			rbd_image_spec_list_cleanup(im, max);
		free(im);
		return;
	}
	for (size_t i = 0; i < max && n < RBD_LIST_MAX; i++)
		list_image(rp, im[i].name, e, &n, RBD_LIST_MAX);
	rbd_image_spec_list_cleanup(im, max);
	free(im);
	qsort(e, n, sizeof(*e), ent_cmp);
	pthread_mutex_lock(&rp->list_mu);
	old = rp->list;
	rp->list = e;
	rp->n_list = n;
	pthread_mutex_unlock(&rp->list_mu);
	free(old);
}

static void *list_main(void *arg)
{
	struct rbd_pool *rp = arg;

	pthread_mutex_lock(&rp->list_mu);
	while (!rp->list_stop) {
		struct timespec t;

		pthread_mutex_unlock(&rp->list_mu);
		pthread_mutex_lock(&rp->refresh_mu);
		list_refresh(rp);
		pthread_mutex_unlock(&rp->refresh_mu);
		pthread_mutex_lock(&rp->list_mu);
		if (rp->list_stop || rp->list_kicked) {
			rp->list_kicked = false;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += LIST_PERIOD_MS / 1000;
		while (!rp->list_stop && !rp->list_kicked &&
		       pthread_cond_timedwait(&rp->list_cv, &rp->list_mu, &t) == 0)
			;
		rp->list_kicked = false;
	}
	pthread_mutex_unlock(&rp->list_mu);
	return NULL;
}

int rbd_adm_list_start(struct rbd_pool *rp)
{
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_init(&rp->list_mu, NULL);
	pthread_mutex_init(&rp->refresh_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rp->list_cv, &ca);
	pthread_condattr_destroy(&ca);
	rp->list_inited = true;
	rc = pthread_create(&rp->list_thr, NULL, list_main, rp);
	if (rc) {
		LOG_ERR(RAID_MOD, "pool %s: no thread for the image listing: %s", rp->p.name,
			strerror(rc));
		return -rc;
	}
	rp->list_thread_live = true;
	return 0;
}

void rbd_adm_list_kick(struct rbd_pool *rp)
{
	if (!rp->list_inited)
		return;
	pthread_mutex_lock(&rp->list_mu);
	rp->list_kicked = true;
	pthread_cond_signal(&rp->list_cv);
	pthread_mutex_unlock(&rp->list_mu);
}

void rbd_adm_list_stop(struct rbd_pool *rp)
{
	if (!rp->list_inited)
		return;
	if (rp->list_thread_live) {
		pthread_mutex_lock(&rp->list_mu);
		rp->list_stop = true;
		pthread_cond_signal(&rp->list_cv);
		pthread_mutex_unlock(&rp->list_mu);
		pthread_join(rp->list_thr, NULL);
		rp->list_thread_live = false;
	}
	free(rp->list);
	rp->list = NULL;
	rp->n_list = 0;
	pthread_cond_destroy(&rp->list_cv);
	pthread_mutex_destroy(&rp->refresh_mu);
	pthread_mutex_destroy(&rp->list_mu);
	rp->list_inited = false;
}

void rbd_adm_list_fill(struct rbd_pool *rp, struct raid_pool_info *out)
{
	pthread_mutex_lock(&rp->list_mu);
	for (unsigned i = 0; i < rp->n_list; i++) {
		const struct rbd_list_ent *e = &rp->list[i];
		__typeof__(&out->volumes[0]) vo = NULL;

		for (unsigned k = 0; k < out->n_volumes && !vo; k++)
			if (!strcmp(out->volumes[k].name, e->name))
				vo = &out->volumes[k];
		if (!vo) {
			if (out->n_volumes >= sizeof(out->volumes) / sizeof(out->volumes[0]))
				continue;
			vo = &out->volumes[out->n_volumes++];
			memset(vo, 0, sizeof(*vo));
			snprintf(vo->name, sizeof(vo->name), "%s", e->name);
			vo->bytes = e->bytes;
			vo->state = "ready";
			vo->prov_done = vo->prov_total = e->bytes;
			vo->prov_eta_s = -1;
		}
		vo->thin = e->thin;
		vo->allocated = e->allocated;
		vo->shared = e->shared;
		vo->snapshot = e->snapshot;
		snprintf(vo->origin, sizeof(vo->origin), "%s", e->origin);
	}
	pthread_mutex_unlock(&rp->list_mu);
}

/* ---- the commands ---- */

int rbd_adm_snapshot(struct raid_pool *p, const char *vol, const char *snap, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	struct rbd_vol *rv;
	rbd_image_t h;
	bool temp;
	int rc;

	if (!name_ok(vol) || !name_ok(snap)) {
		snprintf(why, wl, "snapshot names: VOLUME and NAME of 1..%u characters of A-Z a-z 0-9 . _ - each ('@' joins them)",
			 RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	pthread_mutex_lock(&rp->refresh_mu);
	pthread_mutex_lock(&p->meta_mu);
	rv = open_vol(p, vol);
	rc = head_open(rp, vol, &h, &temp);
	pthread_mutex_unlock(&p->meta_mu);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no volume %s" : "pool %s: volume %s: %s",
			 p->name, vol, strerror(-rc));
		goto out_unlock;
	}
	if ((rv && atomic_load(&rv->prov_state) != PROV_READY) || (!rv && writing_out(h))) {
		snprintf(why, wl, "pool %s: volume %s is not written out yet (thick): snapshot it once it is ready",
			 p->name, vol);
		rc = -EBUSY;
		goto out_close;
	}
	if (snap_find(h, snap, NULL, NULL) == 0) {
		snprintf(why, wl, "pool %s: snapshot %s@%s exists already", p->name, vol, snap);
		rc = -EEXIST;
		goto out_close;
	}
	rc = rbd_snap_create(h, snap);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: snapshot %s@%s not taken: %s", p->name, vol, snap,
			 rc == -EEXIST ? "it exists already" : strerror(-rc));
		goto out_close;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: snapshot %s taken%s", rp->rbd_pool, vol, snap,
		 rv ? " through the LUN's handle" : "");
	list_refresh(rp);
out_close:
	head_close(h, temp);
out_unlock:
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

static int delete_snap(struct rbd_pool *rp, const char *name, char *why, size_t wl)
{
	struct raid_pool *p = &rp->p;
	char img[RAID_SNAP_PART_MAX + 1], snap[RAID_SNAP_PART_MAX + 1], key[64], v[8], c[96];
	bool temp, ours, unprot = false;
	int prot = 0;
	rbd_image_t h;
	int rc;

	if (rbd_adm_split(name, img, snap) < 0) {
		snprintf(why, wl, "pool %s: no volume or snapshot %s", p->name, name);
		return -ENOENT;
	}
	rc = head_open(rp, img, &h, &temp);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no volume or snapshot %s" :
			 "pool %s: %s: %s", p->name, name, strerror(-rc));
		return rc;
	}
	rc = snap_find(h, snap, NULL, NULL);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no volume or snapshot %s" :
			 "pool %s: %s: %s", p->name, name, strerror(-rc));
		goto out_close;
	}
	rc = children_of(rp, img, snap, c, sizeof(c));
	if (rc != 0) {
		if (rc > 0)
			snprintf(why, wl, "pool %s: clone %s depends on %s: volume inflate %s %s first (or delete the clone)",
				 p->name, c, name, p->name, c);
		else
			snprintf(why, wl, "pool %s: %s: its clones cannot be listed: %s", p->name,
				 name, strerror(-rc));
		rc = rc > 0 ? -EBUSY : rc;
		goto out_close;
	}
	rc = rbd_snap_is_protected(h, snap, &prot);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s: %s", p->name, name, strerror(-rc));
		goto out_close;
	}
	prot_key(snap, key, sizeof(key));
	ours = rbd_meta_get(h, key, v, sizeof(v)) == 0;
	if (prot && !ours) {
		snprintf(why, wl, "pool %s: snapshot %s is protected, and not by rtgt: `rbd snap unprotect` it first if nothing needs it",
			 p->name, name);
		rc = -EBUSY;
		goto out_close;
	}
	if (prot) {
		rc = rbd_snap_unprotect(h, snap);
		if (rc < 0) {
			snprintf(why, wl, "pool %s: %s not deleted: cannot unprotect it (%s)", p->name,
				 name, rc == -EBUSY ? "a clone appeared meanwhile" : strerror(-rc));
			goto out_close;
		}
		unprot = true;
	}
	rc = rbd_snap_remove(h, snap);
	if (rc < 0) {
		if (unprot)
			rbd_snap_protect(h, snap);   /* as it was */
		snprintf(why, wl, "pool %s: %s not deleted: %s", p->name, name, strerror(-rc));
		goto out_close;
	}
	if (ours)
		rbd_metadata_remove(h, key);   /* a stale marker protects nothing */
	LOG_INFO(RAID_MOD, "rbd: %s/%s: snapshot %s deleted", rp->rbd_pool, img, snap);
out_close:
	head_close(h, temp);
	return rc;
}

static int delete_image(struct rbd_pool *rp, const char *name, char *why, size_t wl)
{
	struct raid_pool *p = &rp->p;
	char first[96], who[160];
	rbd_image_t h;
	int rc;

	rc = rbd_open_read_only(rp->ioctx, name, &h, NULL);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no volume or snapshot %s" :
			 "pool %s: %s: %s", p->name, name, strerror(-rc));
		return rc;
	}
	rc = snap_count(h, first, sizeof(first));
	if (rc > 0) {
		snprintf(why, wl, "pool %s: volume %s has snapshots (%s@%s first): delete them first",
			 p->name, name, name, first);
		rc = -EBUSY;
	} else if (rc == 0) {
		rc = others_watching(rp, h, who, sizeof(who));
		if (rc > 0) {
			snprintf(why, wl, "pool %s: volume %s is open elsewhere (%s: another rtgt node serving it, or an rbd map): close it there first",
				 p->name, name, who);
			rc = -EBUSY;
		}
	}
	if (rc < 0 && !why[0])
		snprintf(why, wl, "pool %s: %s: %s", p->name, name, strerror(-rc));
	rbd_close(h);
	if (rc < 0)
		return rc;
	rc = rbd_remove(rp->ioctx, name);
	if (rc == -EBUSY || rc == -ENOTEMPTY) {
		snprintf(why, wl, "pool %s: volume %s not deleted: %s", p->name, name,
			 rc == -EBUSY ? "another client opened it meanwhile" : "it has snapshots");
		return rc;
	}
	if (rc < 0) {
		/* librbd removes the data objects before the header: the image
		 * may be gone in part; running it again finishes it */
		snprintf(why, wl, "pool %s: volume %s not (fully) deleted: %s; run it again", p->name,
			 name, strerror(-rc));
		return rc;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: deleted", rp->rbd_pool, name);
	return 0;
}

int rbd_adm_vol_delete(struct raid_pool *p, const char *name, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	int rc;

	if (!name || !*name || strlen(name) >= 64) {
		snprintf(why, wl, "pool %s: no volume or snapshot %s", p->name, name ? name : "");
		return -ENOENT;
	}
	why[0] = '\0';
	pthread_mutex_lock(&rp->refresh_mu);
	/* meta_mu throughout: no LUN opens it while it goes */
	pthread_mutex_lock(&p->meta_mu);
	if (open_vol(p, name)) {
		snprintf(why, wl, "pool %s: %s is in use: a LUN of this daemon opened it (remove the LUN, reload, and restart the daemon to close it)",
			 p->name, name);
		rc = -EBUSY;
	} else {
		rc = strchr(name, '@') ? delete_snap(rp, name, why, wl) :
					 delete_image(rp, name, why, wl);
	}
	pthread_mutex_unlock(&p->meta_mu);
	if (rc == 0)
		list_refresh(rp);
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

int rbd_adm_clone(struct raid_pool *p, const char *snap, const char *name, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	char img[RAID_SNAP_PART_MAX + 1], sn[RAID_SNAP_PART_MAX + 1], key[64];
	rbd_image_t h = NULL, hs, hc;
	bool temp = false, protected_now = false;
	int prot = 0;
	int order = RBD_ORDER, rc;

	if (rbd_adm_split(snap, img, sn) < 0) {
		snprintf(why, wl, "'%s' is not a snapshot (VOLUME@SNAP)", snap);
		return -EINVAL;
	}
	if (!name_ok(name)) {
		snprintf(why, wl, "volume names: 1..%u characters of A-Z a-z 0-9 . _ -", RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	pthread_mutex_lock(&rp->refresh_mu);
	rc = rbd_open_read_only(rp->ioctx, name, &hc, NULL);
	if (rc == 0) {
		rbd_close(hc);
		snprintf(why, wl, "pool %s: a volume %s exists already", p->name, name);
		rc = -EEXIST;
		goto out_unlock;
	}
	rc = rbd_open_read_only(rp->ioctx, img, &hs, sn);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no snapshot %s" : "pool %s: %s: %s",
			 p->name, snap, strerror(-rc));
		goto out_unlock;
	}
	rc = rbd_snap_is_protected(hs, sn, &prot);
	rbd_close(hs);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s: %s", p->name, snap, strerror(-rc));
		goto out_unlock;
	}
	pthread_mutex_lock(&p->meta_mu);
	rc = head_open(rp, img, &h, &temp);
	pthread_mutex_unlock(&p->meta_mu);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s: %s", p->name, img, strerror(-rc));
		goto out_unlock;
	}
	prot_key(sn, key, sizeof(key));
	if (!prot) {
		/* the marker first: a crash between leaves a marker on a
		 * snapshot that is not protected, which delete ignores */
		rc = rbd_metadata_set(h, key, "1");
		if (rc == 0) {
			rc = rbd_snap_protect(h, sn);
			if (rc < 0)
				rbd_metadata_remove(h, key);
		}
		if (rc < 0) {
			snprintf(why, wl, "pool %s: clone %s not made: cannot protect %s (%s)", p->name,
				 name, snap, strerror(-rc));
			goto out_close;
		}
		protected_now = true;
	}
	rc = rbd_clone2(rp->ioctx, img, sn, rp->ioctx, name, RBD_FEATURE_LAYERING, &order, 0, 0);
	if (rc < 0) {
		snprintf(why, wl, rc == -EEXIST ? "pool %s: a volume %s exists already" :
			 "pool %s: clone %s not made: %s", p->name, name, strerror(-rc));
		goto out_unprotect;
	}
	rc = rbd_open(rp->ioctx, name, &hc, NULL);
	if (rc == 0) {
		rc = clone_meta(hc);
		rbd_close(hc);
	}
	if (rc < 0) {
		snprintf(why, wl, "pool %s: clone %s not made: its metadata could not be set (%s)",
			 p->name, name, strerror(-rc));
		rbd_remove(rp->ioctx, name);
		goto out_unprotect;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: cloned from %s%s", rp->rbd_pool, name, snap,
		 protected_now ? " (protected it)" : "");
	list_refresh(rp);
	goto out_close;

out_unprotect:
	if (protected_now && rbd_snap_unprotect(h, sn) == 0)
		rbd_metadata_remove(h, key);
out_close:
	head_close(h, temp);
out_unlock:
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

int rbd_adm_rollback(struct raid_pool *p, const char *snap, bool force, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	char img[RAID_SNAP_PART_MAX + 1], sn[RAID_SNAP_PART_MAX + 1], who[160];
	struct rbd_vol *rv;
	uint64_t ssize = 0, isize = 0;
	bool temp, locked = true;
	rbd_image_t h;
	int rc;

	if (rbd_adm_split(snap, img, sn) < 0) {
		snprintf(why, wl, "'%s' is not a snapshot (VOLUME@SNAP)", snap);
		return -EINVAL;
	}
	pthread_mutex_lock(&rp->refresh_mu);
	pthread_mutex_lock(&p->meta_mu);
	rv = open_vol(p, img);
	rc = head_open(rp, img, &h, &temp);
	if (rc < 0) {
		if (rc == -ENOENT)
			snprintf(why, wl, "pool %s: no snapshot %s of a volume %s", p->name, snap, img);
		else
			snprintf(why, wl, "pool %s: %s: %s", p->name, snap, strerror(-rc));
		goto out_unlock;
	}
	rc = snap_find(h, sn, &ssize, NULL);
	if (rc == 0)
		rc = rbd_get_size(h, &isize);
	if (rc < 0) {
		if (rc == -ENOENT)
			snprintf(why, wl, "pool %s: no snapshot %s of a volume %s", p->name, snap, img);
		else
			snprintf(why, wl, "pool %s: %s: %s", p->name, snap, strerror(-rc));
		goto out_close;
	}
	if (ssize != isize) {
		snprintf(why, wl, "pool %s: snapshot %s is %" PRIu64 " bytes, volume %s %" PRIu64
			 " now: a rollback would change its size (clone the snapshot instead)",
			 p->name, snap, ssize, img, isize);
		rc = -EINVAL;
		goto out_close;
	}
	rc = others_watching(rp, h, who, sizeof(who));
	if (rc != 0) {
		if (rc > 0)
			snprintf(why, wl, "pool %s: volume %s is open elsewhere (%s: another rtgt node serving it, or an rbd map): close it there first",
				 p->name, img, who);
		else
			snprintf(why, wl, "pool %s: %s: its clients cannot be listed: %s", p->name,
				 img, strerror(-rc));
		rc = rc > 0 ? -EBUSY : rc;
		goto out_close;
	}
	if (rv && !force) {
		snprintf(why, wl, "pool %s: volume %s is exported by a LUN: unmount it on the initiators and give --force (the LUN is reset)",
			 p->name, img);
		rc = -EBUSY;
		goto out_close;
	}
	if (rv && atomic_load(&rv->prov_state) != PROV_READY) {
		snprintf(why, wl, "pool %s: volume %s is not written out yet (thick): roll it back once it is ready",
			 p->name, img);
		rc = -EBUSY;
		goto out_close;
	}
	if (rv) {
		/* the LUN's handle: librbd holds its writes meanwhile (top) */
		pthread_mutex_unlock(&p->meta_mu);
		locked = false;
	}
	rc = rbd_snap_rollback(h, sn);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s rolled back in part, or not at all (%s): run it again",
			 p->name, img, strerror(-rc));
		goto out_close;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: rolled back to snapshot %s%s", rp->rbd_pool, img, sn,
		 rv ? " under its LUN (forced)" : "");
out_close:
	head_close(h, temp);
out_unlock:
	if (locked)
		pthread_mutex_unlock(&p->meta_mu);
	if (rc == 0)
		list_refresh(rp);
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

int rbd_adm_inflate(struct raid_pool *p, const char *name, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	rbd_linked_image_spec_t pi;
	rbd_snap_spec_t ps;
	rbd_image_t h;
	bool temp;
	int rc;

	if (!name_ok(name)) {
		snprintf(why, wl, "pool %s: no volume %s%s", p->name, name ? name : "",
			 name && strchr(name, '@') ? " (a snapshot is not inflated: clone it)" : "");
		return -EINVAL;
	}
	pthread_mutex_lock(&rp->refresh_mu);
	pthread_mutex_lock(&p->meta_mu);
	rc = head_open(rp, name, &h, &temp);
	pthread_mutex_unlock(&p->meta_mu);
	if (rc < 0) {
		snprintf(why, wl, rc == -ENOENT ? "pool %s: no volume %s" : "pool %s: %s: %s",
			 p->name, name, strerror(-rc));
		goto out_unlock;
	}
	rc = rbd_get_parent(h, &pi, &ps);
	if (rc == -ENOENT) {
		snprintf(why, wl, "pool %s: volume %s is no clone: it depends on nothing", p->name,
			 name);
		rc = -EINVAL;
		goto out_close;
	}
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s: %s", p->name, name, strerror(-rc));
		goto out_close;
	}
	rbd_linked_image_spec_cleanup(&pi);
	rbd_snap_spec_cleanup(&ps);
	rc = rbd_flatten(h);
	if (rc < 0) {
		snprintf(why, wl, "pool %s: %s inflated in part (%s); run it again", p->name, name,
			 strerror(-rc));
		goto out_close;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: inflated (flattened): it depends on nothing now",
		 rp->rbd_pool, name);
	list_refresh(rp);
out_close:
	head_close(h, temp);
out_unlock:
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

int rbd_adm_vol_create(struct raid_pool *p, const char *name, const struct conf_size *size,
			bool thin, char *why, size_t wl)
{
	struct rbd_pool *rp = rp_of(p);
	bool thick = rp->thick && !thin;
	int order = RBD_ORDER, rc;
	uint8_t u[16];
	rbd_image_t h;
	char s[33];

	if (!name_ok(name)) {
		snprintf(why, wl, "volume names: 1..%u characters of A-Z a-z 0-9 . _ -", RAID_SNAP_PART_MAX);
		return -EINVAL;
	}
	if (!size->bytes || size->bytes % 512) {
		snprintf(why, wl, "pool %s: an rbd volume needs an absolute size, a multiple of 512 bytes",
			 p->name);
		return -EINVAL;
	}
	pthread_mutex_lock(&rp->refresh_mu);
	pthread_mutex_lock(&p->meta_mu);
	rc = rbd_create2(rp->ioctx, name, size->bytes, RBD_FEATURE_LAYERING, &order);
	if (rc < 0) {
		snprintf(why, wl, rc == -EEXIST ? "pool %s: a volume %s exists already" :
			 "pool %s: volume %s not created: %s", p->name, name, strerror(-rc));
		goto out_unlock;
	}
	rc = rbd_open(rp->ioctx, name, &h, NULL);
	if (rc == 0) {
		/* as a LUN's first open does: the write-out mark before the
		 * UUID, whose presence tells a peer the image is set up */
		if (thick)
			rc = rbd_metadata_set(h, META_THICK, "0");
		if (rc == 0 && getrandom(u, 16, 0) != 16)
			rc = -EIO;
		if (rc == 0) {
			rbd_meta_uuid_fmt(u, s);
			rc = rbd_metadata_set(h, META_UUID, s);
		}
		rbd_close(h);
	}
	if (rc < 0) {
		snprintf(why, wl, "pool %s: volume %s not created: its metadata could not be set (%s)",
			 p->name, name, strerror(-rc));
		rbd_remove(rp->ioctx, name);
		goto out_unlock;
	}
	LOG_INFO(RAID_MOD, "rbd: %s/%s: created, %" PRIu64 " bytes, %s", rp->rbd_pool, name,
		 size->bytes, thick ? "thick (written out when a LUN first opens it)" : "thin");
out_unlock:
	pthread_mutex_unlock(&p->meta_mu);
	if (rc == 0)
		list_refresh(rp);
	pthread_mutex_unlock(&rp->refresh_mu);
	return rc;
}

#endif /* RTGT_HAVE_RBD */
