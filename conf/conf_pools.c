/*
 * conf/conf_pools.c - the "pools" list: RAID and rbd pools, their members,
 * spares and per-level keys, into struct conf_pool; the check that no
 * member or spare file is used twice across pools; conf_pool_find().
 *
 * An rbd pool lives in Ceph, so none of the local-member keys apply to it
 * and the Ceph keys apply to nothing else. Member and spare paths are kept
 * as written and resolved against the configuration's directory; the
 * files themselves are not touched (raid/ opens them at start-up).
 *
 * Layer: sections (conf/README.md "Layers"). May call: conf_val.c, the
 * key table (conf_keys.c), libconfig, libc.
 */
#include <libconfig.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

#define CONF_POOL_MAX_DEVS 64     /* members + spares: raid_pool_info.members[] */
#define CONF_MEMBER_PATH_MAX 255  /* raid_member_info.path[256] */

/* ---- pools ---- */


static const char *const level_names[] = {
	[CONF_RAID0] = "raid0", [CONF_RAID1] = "raid1", [CONF_RAID5] = "raid5",
	[CONF_RAID6] = "raid6", [CONF_RAID10] = "raid10", [CONF_RBD] = "rbd",
};

const char *conf_level_name(enum conf_level level)
{
	if ((unsigned)level >= sizeof(level_names) / sizeof(level_names[0]))
		return "unknown";
	return level_names[level];
}

/* Copies a string list into (written, resolved) arrays; returns the count. */
static unsigned copy_paths(struct conf_vctx *v, const config_setting_t *list, const char *where,
			   const char *key, char ***written, char ***resolved)
{
	int n = config_setting_length(list);
	unsigned k = 0;

	*written = conf_xcalloc(v, (size_t)n, sizeof(char *));
	*resolved = conf_xcalloc(v, (size_t)n, sizeof(char *));
	if (!*written || !*resolved)
		return 0;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		const char *p;

		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			continue; /* already reported */
		p = config_setting_get_string(e);
		if (!*p)
			continue;
		if (strlen(p) > CONF_MEMBER_PATH_MAX)
			conf_err_at(v, e, "%s: %s[%d] is longer than %d bytes", where, key, i,
				    CONF_MEMBER_PATH_MAX);
		(*written)[k] = conf_xstrdup(v, p);
		(*resolved)[k] = conf_path_resolve(v->c->dir, p);
		if (!(*resolved)[k])
			v->nomem = true;
		else if (strlen((*resolved)[k]) >= PATH_MAX)
			conf_err_at(v, e, "%s: %s[%d] resolves to a path longer than PATH_MAX",
				    where, key, i);
		k++;
	}
	return k;
}

static void parse_hdd(struct conf_vctx *v, const config_setting_t *g, const char *pwhere,
		      struct conf_hdd *hdd)
{
	char where[128];
	unsigned long long rpm;
	bool wc;
	int r;

	snprintf(where, sizeof(where), "%s: hdd", pwhere);
	if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
		conf_err_at(v, g, "%s must be a group { mbps = ..; avg_seek_ms = ..; rpm = ..; }, "
			    "not %s", where, conf_type_name(g));
		return;
	}
	conf_check_keys(v, g, where, CONF_S_HDD);
	hdd->enabled = true;
	r = conf_get_number(v, g, "mbps", where, &hdd->mbps);
	if (r == 0)
		conf_err_at(v, g, "%s: missing required key 'mbps'", where);
	else if (r > 0 && !(hdd->mbps > 0))
		conf_err_at(v, config_setting_get_member(g, "mbps"), "%s: mbps must be > 0", where);
	r = conf_get_number(v, g, "avg_seek_ms", where, &hdd->avg_seek_ms);
	if (r == 0)
		conf_err_at(v, g, "%s: missing required key 'avg_seek_ms'", where);
	else if (r > 0 && !(hdd->avg_seek_ms >= 0))
		conf_err_at(v, config_setting_get_member(g, "avg_seek_ms"),
			    "%s: avg_seek_ms must be >= 0", where);
	r = conf_get_key_uint(v, g, CK_H_RPM, where, &rpm);
	if (r == 0)
		conf_err_at(v, g, "%s: missing required key 'rpm'", where);
	else if (r > 0)
		hdd->rpm = (unsigned)rpm;
	/* drives ship with their volatile write cache on; arrays that care
	 * about power loss turn it off, which changes what a write costs */
	if (conf_get_bool(v, g, "write_cache", where, &wc) > 0)
		hdd->write_through = !wc;
}

static void parse_pool(struct conf_vctx *v, const config_setting_t *g, unsigned idx,
		       struct conf_pool *p)
{
	const char *name = NULL, *lvl = NULL, *str;
	const config_setting_t *members, *spares, *s;
	char where[96];
	struct conf_size sz;
	unsigned long long u;
	bool bad = false, level_ok = false;
	unsigned min = 1;

	p->line = conf_setting_line(g);
	p->chunk = CONF_CHUNK_DEFAULT;
	snprintf(where, sizeof(where), "pools[%u]", idx);
	conf_check_keys(v, g, where, CONF_S_POOL);
	if (conf_get_string(v, g, "name", where, true, &name) > 0) {
		p->name = conf_xstrdup(v, name);
		snprintf(where, sizeof(where), "pool '%.63s'", name);
		if (conf_volume_name_check(name) < 0)
			conf_err_at(v, config_setting_get_member(g, "name"),
				    "%s: name must be 1..%d characters of A-Z a-z 0-9 . _ -", where,
				    CONF_NAME_MAX);
	}
	if (conf_get_string(v, g, "level", where, true, &lvl) > 0) {
		for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
			if (strcmp(lvl, level_names[i]) == 0) {
				p->level = (enum conf_level)i;
				level_ok = true;
			}
		}
		if (!level_ok)
			conf_err_at(v, config_setting_get_member(g, "level"),
				    "%s: level \"%s\" is not one of raid0, raid1, raid5, raid6, "
				    "raid10, rbd", where, lvl);
	}
	if (conf_get_size(v, g, "chunk", where, false, &sz) > 0) {
		s = config_setting_get_member(g, "chunk");
		if (sz.bytes & (sz.bytes - 1))
			conf_err_at(v, s, "%s: chunk %llu is not a power of two", where,
				    (unsigned long long)sz.bytes);
		else if (sz.bytes < CONF_CHUNK_MIN || sz.bytes > CONF_CHUNK_MAX)
			conf_err_at(v, s, "%s: chunk must be between 4K and 16M", where);
		else
			p->chunk = sz.bytes;
	}
	members = conf_get_string_list(v, g, "members", where, &bad);
	spares = conf_get_string_list(v, g, "spares", where, &bad);
	if (conf_get_bool(v, g, "direct_io", where, &p->direct_io) > 0 && level_ok &&
	    p->level == CONF_RBD)
		conf_err_at(v, config_setting_get_member(g, "direct_io"),
			    "%s: direct_io is not valid for an rbd pool", where);
	if (conf_get_key_uint(v, g, CK_P_REBUILD_MBPS, where, &u) > 0)
		p->rebuild_mbps = (unsigned)u;
	if (conf_get_bool(v, g, "start_degraded", where, &p->start_degraded) > 0 &&
	    p->start_degraded)
		/* kept set, it also applies at a later start when the current
		 * members are the missing ones and a stale one is left */
		conf_warn_at(v, config_setting_get_member(g, "start_degraded"),
			     "%s: start_degraded is deprecated: it applies at every start; start once "
			     "with rtgtd --start-degraded %s instead", where, p->name ? p->name : "POOL");
	if (conf_get_size(v, g, "create_size", where, false, &sz) > 0) {
		s = config_setting_get_member(g, "create_size");
		if (sz.bytes < (1ULL << 20) || sz.bytes % CONF_SIZE_ALIGN)
			conf_err_at(v, s,
				    "%s: create_size must be at least 1M and a multiple of 4K",
				    where);
		else
			p->create_size = sz.bytes;
	}
	s = config_setting_get_member(g, "hdd");
	if (s)
		parse_hdd(v, s, where, &p->hdd);

	/* rbd pools live in Ceph: none of the local-member keys apply, and
	 * the Ceph keys apply to nothing else. */
	if (level_ok && p->level == CONF_RBD) {
		static const char *const local_only[] = {
			"members", "spares", "create_size", "rebuild_mbps", "hdd",
			"start_degraded", NULL,
		};

		for (const char *const *k = local_only; *k; k++) {
			s = config_setting_get_member(g, *k);
			if (s)
				conf_err_at(v, s, "%s: %s is not valid for an rbd pool", where, *k);
		}
		if (conf_get_string(v, g, "ceph_conf", where, true, &str) > 0) {
			p->ceph_conf = conf_path_resolve(v->c->dir, str);
			if (!p->ceph_conf)
				v->nomem = true;
		}
		if (conf_get_string(v, g, "rbd_pool", where, true, &str) > 0)
			p->rbd_pool = conf_xstrdup(v, str);
		if (conf_get_string(v, g, "ceph_id", where, false, &str) > 0)
			p->ceph_id = conf_xstrdup(v, str);
		if (conf_get_string(v, g, "keyring", where, false, &str) > 0) {
			p->keyring = conf_path_resolve(v->c->dir, str);
			if (!p->keyring)
				v->nomem = true;
		}
		p->rbd_thick = true;
		conf_get_bool(v, g, "thick", where, &p->rbd_thick);
		/* MB/s (10^6 bytes/s), like rebuild_mbps; 0 = unlimited */
		if (conf_get_key_uint(v, g, CK_P_PROVISION_MBPS, where, &u) > 0)
			p->provision_mbps = (unsigned)u;
		/* a Ceph pool's space is the cluster's: its quotas and
		 * nearfull warnings are Ceph's own, rtgt counts nothing */
		s = config_setting_get_member(g, "thin_threshold");
		if (s)
			conf_err_at(v, s,
				    "%s: thin_threshold is not valid for an rbd pool: it applies "
				    "to RAID pools (Ceph pools report their own quotas)", where);
		return;
	}
	if (level_ok) {
		static const char *const ceph_only[] = {
			"ceph_conf", "rbd_pool", "ceph_id", "keyring", "thick", "provision_mbps",
			NULL,
		};

		for (const char *const *k = ceph_only; *k; k++) {
			s = config_setting_get_member(g, *k);
			if (s)
				conf_err_at(v, s, "%s: %s is only valid for level rbd", where, *k);
		}
	}
	/* the share of the pool's space its thin volumes may take at which
	 * their LUs raise THIN PROVISIONING SOFT THRESHOLD REACHED */
	p->thin_threshold = (unsigned)conf_keys[CK_P_THIN_THRESHOLD].idef;
	if (conf_get_key_uint(v, g, CK_P_THIN_THRESHOLD, where, &u) > 0)
		p->thin_threshold = (unsigned)u;
	if (!members) {
		if (!bad)
			conf_err_at(v, g, "%s: missing required key 'members'", where);
		return;
	}
	p->n_members = copy_paths(v, members, where, "members", &p->members,
				  &p->member_paths);
	if (spares)
		p->n_spares = copy_paths(v, spares, where, "spares", &p->spares,
					 &p->spare_paths);
	if (!level_ok)
		return;
	switch (p->level) {
	case CONF_RAID0: min = 1; break;
	case CONF_RAID1: min = 2; break;
	case CONF_RAID5: min = 3; break;
	case CONF_RAID6: min = 4; break;
	case CONF_RAID10: min = 4; break;
	case CONF_RBD: break;
	}
	/* count as written, so a bad entry does not also trip the minimum */
	if ((unsigned)config_setting_length(members) < min)
		conf_err_at(v, members, "%s: %s needs at least %u members, has %d", where,
			    conf_level_name(p->level), min, config_setting_length(members));
	else if (p->level == CONF_RAID10 && config_setting_length(members) % 2)
		conf_err_at(v, members, "%s: raid10 needs an even number of members (mirrored "
			    "pairs), has %d", where, config_setting_length(members));
	if (config_setting_length(members) + (spares ? config_setting_length(spares) : 0) >
	    CONF_POOL_MAX_DEVS)
		conf_err_at(v, members, "%s: more than %d members and spares", where,
			    CONF_POOL_MAX_DEVS);
	if (p->level == CONF_RAID0 && spares && config_setting_length(spares) > 0)
		conf_warn_at(v, spares, "%s: raid0 has no redundancy, spares will never be used",
			     where);
}

void conf_parse_pools(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *l = config_setting_get_member(root, "pools");
	struct conf *c = v->c;
	int n;

	if (!l)
		return; /* a target's LUN will report the missing pool */
	if (config_setting_type(l) != CONFIG_TYPE_LIST) {
		conf_err_at(v, l, "pools must be a list ( { ... }, { ... } ), not %s",
			    conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	c->pools = conf_xcalloc(v, (size_t)n, sizeof(*c->pools));
	if (!c->pools)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			conf_err_at(v, g, "pools[%d] must be a group { ... }, not %s", i,
				    conf_type_name(g));
			continue;
		}
		parse_pool(v, g, (unsigned)i, &c->pools[c->n_pools]);
		for (unsigned j = 0; j < c->n_pools; j++) {
			const char *a = c->pools[j].name, *b = c->pools[c->n_pools].name;

			if (a && b && strcmp(a, b) == 0)
				conf_err_at(v, g, "pool name '%s' is already used at line %d", b,
					    c->pools[j].line);
		}
		c->n_pools++;
	}
}

/* Every member and spare path, across all pools, names a distinct file.
 * Walks the settings again rather than struct conf so that each duplicate
 * is reported at its own line. */
void conf_check_paths_unique(struct conf_vctx *v, const config_setting_t *root)
{
	struct ent { char *path; const char *pool; int line; } *all;
	const config_setting_t *pools = config_setting_get_member(root, "pools");
	size_t n = 0, cap = 0;

	for (unsigned i = 0; i < v->c->n_pools; i++)
		cap += v->c->pools[i].n_members + v->c->pools[i].n_spares;
	if (cap == 0 || !pools || config_setting_type(pools) != CONFIG_TYPE_LIST)
		return;
	all = conf_xcalloc(v, cap, sizeof(*all));
	if (!all)
		return;
	for (int i = 0; i < config_setting_length(pools); i++) {
		const config_setting_t *g = config_setting_get_elem(pools, (unsigned)i);
		static const char *const keys[] = { "members", "spares" };
		const char *pname = NULL;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP)
			continue;
		config_setting_lookup_string(g, "name", &pname);
		for (unsigned k = 0; k < 2; k++) {
			const config_setting_t *l = config_setting_get_member(g, keys[k]);

			if (!l || !config_setting_is_aggregate(l))
				continue;
			for (int e = 0; e < config_setting_length(l) && n < cap; e++) {
				const config_setting_t *es = config_setting_get_elem(l, (unsigned)e);
				const char *p = config_setting_get_string(es);
				char *path;

				if (!p || !*p)
					continue;
				path = conf_path_resolve(v->c->dir, p);
				if (!path) {
					v->nomem = true;
					goto free_all;
				}
				for (size_t j = 0; j < n; j++) {
					if (strcmp(all[j].path, path) != 0)
						continue;
					conf_err_at(v, es,
						    "pool '%s': %s \"%s\" (%s) is already used by "
						    "pool '%s' at line %d", pname ? pname : "?",
						    k ? "spare" : "member", p, path,
						    all[j].pool ? all[j].pool : "?", all[j].line);
					break;
				}
				all[n++] = (struct ent){ path, pname, conf_setting_line(es) };
			}
		}
	}
free_all:
	for (size_t j = 0; j < n; j++)
		free(all[j].path);
	free(all);
}

const struct conf_pool *conf_pool_find(const struct conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_pools; i++)
		if (c->pools[i].name && strcmp(c->pools[i].name, name) == 0)
			return &c->pools[i];
	return NULL;
}
