/*
 * conf/conf_targets.c - the "portals" list (listen addresses and TPGTs)
 * and the "targets" list: each target's portals, LUNs with their
 * per-group mappings, the LUN map every initiator group would see, its
 * allow list and CHAP, and its peer portal groups; conf_portal_find(),
 * conf_target_find().
 *
 * Portals are parsed before targets so that a target's portal names
 * resolve to TPGTs, and pools and initiator groups before targets so that
 * a LUN's pool and mappings resolve as they are read.
 *
 * Layer: targets, above the sections (conf/README.md "Layers"). May call:
 * conf_access.c (allow lists, CHAP, group names), conf_pools.c
 * (conf_pool_find), conf_val.c, the key table (conf_keys.c), libconfig, libc.
 */
#include <arpa/inet.h>
#include <libconfig.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

#define CONF_ALIAS_MAX 255
#define CONF_MAX_PEER_GROUPS 64   /* scsi target: SCSI_MAX_PORTS peer groups */

/* ---- portals ---- */


struct portal_addr {
	unsigned char addr[sizeof(struct in6_addr)];
	bool any;
};

void conf_parse_portals(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *l = config_setting_get_member(root, "portals");
	struct conf *c = v->c;
	struct portal_addr *addrs;
	int n;

	if (!l) {
		conf_err_at(v, root, "missing required list 'portals'");
		return;
	}
	if (config_setting_type(l) != CONFIG_TYPE_LIST) {
		conf_err_at(v, l, "portals must be a list ( { ... }, { ... } ), not %s",
			    conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	if (n == 0) {
		conf_err_at(v, l, "portals is empty: nothing would listen");
		return;
	}
	if (n > 65535) {
		conf_err_at(v, l, "too many portals");
		return;
	}
	c->portals = conf_xcalloc(v, (size_t)n, sizeof(*c->portals));
	addrs = conf_xcalloc(v, (size_t)n, sizeof(*addrs));
	if (!c->portals || !addrs)
		goto free_addrs;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
		struct conf_portal *pt = &c->portals[c->n_portals];
		struct portal_addr *pa = &addrs[c->n_portals];
		const char *name = NULL, *listen = NULL, *why;
		char where[96], host[64];
		unsigned long long num;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			conf_err_at(v, g, "portals[%d] must be a group { ... }, not %s", i,
				    conf_type_name(g));
			continue;
		}
		snprintf(where, sizeof(where), "portals[%d]", i);
		conf_check_keys(v, g, where, CONF_S_PORTAL);
		pt->line = conf_setting_line(g);
		/* by default the TPGT is the position in the file, so it stays
		 * stable as long as portals are only appended; a second node
		 * exporting the same target sets it to stay distinct */
		pt->tpgt = (uint16_t)(i + 1);
		if (conf_get_string(v, g, "name", where, true, &name) > 0) {
			pt->name = conf_xstrdup(v, name);
			snprintf(where, sizeof(where), "portal '%.63s'", name);
			for (unsigned j = 0; j < c->n_portals; j++)
				if (c->portals[j].name && strcmp(c->portals[j].name, name) == 0)
					conf_err_at(v, g,
						    "portal name '%s' is already used at line %d",
						    name, c->portals[j].line);
		}
		if (conf_get_key_uint(v, g, CK_PT_TPGT, where, &num) > 0) {
			pt->tpgt = (uint16_t)num;
			pt->tpgt_set = true;
		}
		for (unsigned j = 0; j < c->n_portals; j++) {
			if (c->portals[j].tpgt != pt->tpgt)
				continue;
			if (pt->tpgt_set)
				conf_err_at(v, config_setting_get_member(g, "tpgt"),
					    "%s: tpgt %u is already used by portal '%s' (line %d)",
					    where, pt->tpgt, c->portals[j].name ? c->portals[j].name : "?",
					    c->portals[j].line);
			else
				conf_err_at(v, g,
					    "%s: tpgt %u (its position in the list) is already "
					    "used by portal '%s' (line %d): give this portal a distinct "
					    "'tpgt'", where, pt->tpgt,
					    c->portals[j].name ? c->portals[j].name : "?",
					    c->portals[j].line);
			break;
		}
		if (conf_get_string(v, g, "listen", where, true, &listen) <= 0) {
			c->n_portals++;
			continue;
		}
		pt->listen = conf_xstrdup(v, listen);
		if (conf_listen_parse(listen, host, &pt->port, &pt->family, &why) < 0) {
			conf_err_at(v, config_setting_get_member(g, "listen"),
				    "%s: listen \"%s\" %s", where, listen, why);
			c->n_portals++;
			continue;
		}
		pt->host = conf_xstrdup(v, host);
		inet_pton(pt->family, host, pa->addr);
		pa->any = pt->family == AF_INET
				  ? memcmp(pa->addr, "\0\0\0\0", 4) == 0
				  : memcmp(pa->addr, &in6addr_any, sizeof(in6addr_any)) == 0;
		for (unsigned j = 0; j < c->n_portals; j++) {
			const struct conf_portal *o = &c->portals[j];
			const struct portal_addr *oa = &addrs[j];
			size_t alen = pt->family == AF_INET ? 4 : 16;

			if (!o->host || o->family != pt->family || o->port != pt->port)
				continue;
			if (memcmp(oa->addr, pa->addr, alen) == 0)
				conf_err_at(v, config_setting_get_member(g, "listen"),
					    "%s: listen address %s is already used by portal '%s' "
					    "(line %d)", where, listen, o->name ? o->name : "?",
					    o->line);
			else if (oa->any || pa->any)
				/* a wildcard listener owns the port on every
				 * address of its family: the second bind fails */
				conf_err_at(v, config_setting_get_member(g, "listen"),
					    "%s: listen %s overlaps the wildcard address of portal "
					    "'%s' (line %d)", where, listen, o->name ? o->name : "?",
					    o->line);
		}
		c->n_portals++;
	}
free_addrs:
	free(addrs);
}

/* ---- targets ---- */


/*
 * A LUN's "groups": ( "g1", { group = "g2"; lun = 3; read_only = true; } ).
 * A string maps the group under the LUN's own number with the LUN's
 * read_only. Only the listed groups see the LUN; an empty list hides it.
 */
static void parse_lun_groups(struct conf_vctx *v, const config_setting_t *l, const char *where,
			     struct conf_lun *lun)
{
	int n;

	if (config_setting_type(l) != CONFIG_TYPE_LIST &&
	    config_setting_type(l) != CONFIG_TYPE_ARRAY) {
		conf_err_at(v, l,
			    "%s: groups must be a list ( \"g1\", { group = \"g2\"; lun = 3; } ), "
			    "not %s", where, conf_type_name(l));
		return;
	}
	lun->masked = true;
	n = config_setting_length(l);
	if (n == 0) {
		conf_warn_at(v, l, "%s: groups is empty: no initiator sees this LUN", where);
		return;
	}
	lun->maps = conf_xcalloc(v, (size_t)n, sizeof(*lun->maps));
	if (!lun->maps)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
		struct conf_lun_map *m = &lun->maps[lun->n_maps];
		const char *name = NULL;
		char mwhere[352];
		unsigned long long num;
		bool ro = lun->read_only;
		int gi, r;

		snprintf(mwhere, sizeof(mwhere), "%s: groups[%d]", where, i);
		m->lun = lun->lun;
		if (config_setting_type(e) == CONFIG_TYPE_STRING) {
			name = config_setting_get_string(e);
		} else if (config_setting_type(e) == CONFIG_TYPE_GROUP) {
			conf_check_keys(v, e, mwhere, CONF_S_MAP);
			if (conf_get_string(v, e, "group", mwhere, true, &name) <= 0)
				continue;
			r = conf_get_key_uint(v, e, CK_M_LUN, mwhere, &num);
			if (r < 0)
				continue;
			if (r > 0)
				m->lun = (unsigned)num;
			if (conf_get_bool(v, e, "read_only", mwhere, &ro) > 0 && !ro &&
			    lun->read_only)
				conf_warn_at(v, config_setting_get_member(e, "read_only"),
					     "%s: read_only = false does not lift the LUN's own "
					     "read_only", mwhere);
			ro = ro || lun->read_only;
		} else {
			conf_err_at(v, e, "%s must be a group name or { group = ..; lun = ..; "
				    "read_only = ..; }, not %s", mwhere, conf_type_name(e));
			continue;
		}
		if (!name || !*name) {
			conf_err_at(v, e, "%s: group name must not be empty", mwhere);
			continue;
		}
		gi = conf_group_index(v->c, name);
		if (gi < 0) {
			conf_err_at(v, e, "%s: group '%s' is not defined in initiator_groups",
				    mwhere, name);
			continue;
		}
		for (unsigned j = 0; j < lun->n_maps; j++)
			if (lun->maps[j].group == (unsigned)gi)
				conf_err_at(v, e,
					    "%s: group '%s' is mapped twice to this LUN (line %d)",
					    mwhere, name, lun->maps[j].line);
		m->group = (unsigned)gi;
		m->read_only = ro;
		m->line = conf_setting_line(e);
		lun->n_maps++;
	}
}

static void parse_luns(struct conf_vctx *v, const config_setting_t *g, const char *twhere,
		       struct conf_target *t)
{
	const config_setting_t *l = config_setting_get_member(g, "luns");
	int n;

	if (!l) {
		conf_err_at(v, g, "%s: missing required list 'luns'", twhere);
		return;
	}
	if (config_setting_type(l) != CONFIG_TYPE_LIST) {
		conf_err_at(v, l, "%s: luns must be a list ( { lun = 0; ... } ), not %s", twhere,
			    conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	if (n == 0) {
		conf_err_at(v, l, "%s: luns is empty: a target needs at least one LUN", twhere);
		return;
	}
	t->luns = conf_xcalloc(v, (size_t)n, sizeof(*t->luns));
	if (!t->luns)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
		struct conf_lun *lun = &t->luns[t->n_luns];
		const char *pool = NULL, *vol = NULL;
		char where[320];
		unsigned long long num;
		bool snap = false;
		int r;

		snprintf(where, sizeof(where), "%s: luns[%d]", twhere, i);
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			conf_err_at(v, e,
				    "%s must be a group { lun = ..; pool = ..; volume = ..; size = ..; }, "
				    "not %s", where, conf_type_name(e));
			continue;
		}
		conf_check_keys(v, e, where, CONF_S_LUN);
		lun->line = conf_setting_line(e);
		r = conf_get_key_uint(v, e, CK_L_LUN, where, &num);
		if (r == 0)
			conf_err_at(v, e, "%s: missing required key 'lun'", where);
		if (r > 0) {
			lun->lun = (unsigned)num;
			for (unsigned j = 0; j < t->n_luns; j++)
				if (t->luns[j].lun == lun->lun)
					conf_err_at(v, config_setting_get_member(e, "lun"),
						    "%s: lun %u is already used at line %d", where,
						    lun->lun, t->luns[j].line);
		} else {
			lun->lun = UINT_MAX; /* never equal to a valid LUN above */
		}
		if (conf_get_string(v, e, "pool", where, true, &pool) > 0) {
			lun->pool = conf_xstrdup(v, pool);
			if (!conf_pool_find(v->c, pool))
				conf_err_at(v, config_setting_get_member(e, "pool"),
					    "%s: pool '%s' is not defined", where, pool);
		}
		if (conf_get_string(v, e, "volume", where, true, &vol) > 0) {
			lun->volume = conf_xstrdup(v, vol);
			if (strchr(vol, '@')) {
				snap = true;
				if (conf_snapshot_name_check(vol) < 0)
					conf_err_at(v, config_setting_get_member(e, "volume"),
						    "%s: snapshot \"%s\" must be VOLUME@NAME, each 1..%d characters of "
						    "A-Z a-z 0-9 . _ -", where, vol, CONF_SNAP_PART_MAX);
			} else if (conf_volume_name_check(vol) < 0) {
				conf_err_at(v, config_setting_get_member(e, "volume"),
					    "%s: volume name \"%s\" must be 1..%d characters of "
					    "A-Z a-z 0-9 . _ -", where, vol, CONF_VOLUME_NAME_MAX);
			}
		}
		/* a snapshot's LUN has the snapshot's size and is read-only */
		r = conf_get_size(v, e, "size", where, true, &lun->size);
		if (r == 0 && !snap)
			conf_err_at(v, e, "%s: missing required key 'size'", where);
		if (r > 0 && snap)
			conf_err_at(v, config_setting_get_member(e, "size"),
				    "%s: a snapshot's LUN has the snapshot's size: remove 'size'", where);
		if (r > 0 && lun->size.bytes && lun->size.bytes % CONF_SIZE_ALIGN)
			conf_err_at(v, config_setting_get_member(e, "size"),
				    "%s: size must be a multiple of 4K", where);
		conf_get_bool(v, e, "read_only", where, &lun->read_only);
		if (snap) {
			int ro = 1;

			if (config_setting_lookup_bool(e, "read_only", &ro) && !ro)
				conf_err_at(v, config_setting_get_member(e, "read_only"),
					    "%s: a snapshot is read-only: read_only = false is not possible",
					    where);
			lun->read_only = true;
		}
		/* any pool: an rbd image is thin unless written out, a RAID
		 * pool's thin volume takes extents as it is written */
		conf_get_bool(v, e, "thin", where, &lun->thin);
		if (config_setting_get_member(e, "groups"))
			parse_lun_groups(v, config_setting_get_member(e, "groups"), where, lun);
		t->n_luns++;
	}
}

/*
 * What each initiator group sees of target @t must be a LUN map: every LUN
 * visible to everyone (no "groups") under its own number plus the LUNs
 * mapped to the group under the mapping's number, no number twice. The
 * view of an initiator in no group is the first part alone, whose numbers
 * are the unique "lun" keys.
 */
static void check_views(struct conf_vctx *v, const struct conf_target *t, const char *where)
{
	for (unsigned g = 0; g < v->c->n_groups; g++) {
		int seen[CONF_MAX_LUN + 1];

		for (unsigned k = 0; k <= CONF_MAX_LUN; k++)
			seen[k] = 0;
		for (unsigned i = 0; i < t->n_luns; i++) {
			const struct conf_lun *l = &t->luns[i];
			unsigned num = UINT_MAX;
			int line = l->line;

			if (!l->masked) {
				num = l->lun;
			} else {
				for (unsigned m = 0; m < l->n_maps; m++)
					if (l->maps[m].group == g) {
						num = l->maps[m].lun;
						line = l->maps[m].line;
					}
			}
			if (num > CONF_MAX_LUN)
				continue;
			if (seen[num]) {
				fprintf(v->errs, "%s:%d: %s: group '%s' would see LUN %u twice "
					"(also at line %d): give the mapping another lun\n",
					v->path, line, where, v->c->groups[g].name, num,
					seen[num]);
				v->n_err++;
				continue;
			}
			seen[num] = line;
		}
	}
}

/* The TPGTs of the same target on other nodes. Each becomes a target port
 * group (and relative port id) this node reports as active/non-optimized,
 * so it must not collide with one of this target's own ports. Portals are
 * parsed before targets, so t->portals already resolves to TPGTs. */
static void parse_peer_groups(struct conf_vctx *v, const config_setting_t *s, const char *where,
			      struct conf_target *t)
{
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_LIST &&
	    config_setting_type(s) != CONFIG_TYPE_ARRAY) {
		conf_err_at(v, s, "%s: peer_portal_groups must be a list of TPGTs ( 2, 3 ), not %s",
			    where, conf_type_name(s));
		return;
	}
	n = config_setting_length(s);
	if (n > CONF_MAX_PEER_GROUPS) {
		conf_err_at(v, s, "%s: peer_portal_groups has %d entries, at most %d", where, n,
			    CONF_MAX_PEER_GROUPS);
		return;
	}
	if (n == 0)
		return;
	t->peer_groups = conf_xcalloc(v, (size_t)n, sizeof(*t->peer_groups));
	if (!t->peer_groups)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		long long id;
		bool bad = false;

		if (config_setting_type(e) != CONFIG_TYPE_INT &&
		    config_setting_type(e) != CONFIG_TYPE_INT64) {
			conf_err_at(v, e,
				    "%s: peer_portal_groups[%d] must be an integer TPGT, not %s",
				    where, i, conf_type_name(e));
			continue;
		}
		id = config_setting_get_int64(e);
		if (id < 1 || id > 65535) {
			conf_err_at(v, e,
				    "%s: peer_portal_groups[%d] = %lld is out of range 1..65535",
				    where, i, id);
			continue;
		}
		for (unsigned j = 0; j < t->n_peer_groups && !bad; j++)
			if (t->peer_groups[j] == id) {
				conf_err_at(v, e, "%s: peer_portal_groups lists %lld twice", where,
					    id);
				bad = true;
			}
		for (unsigned j = 0; j < t->n_portals && !bad; j++) {
			const struct conf_portal *pt = &v->c->portals[t->portals[j]];

			if (pt->tpgt == id) {
				conf_err_at(v, e,
					    "%s: peer_portal_groups: %lld is the tpgt of this "
					    "node's own portal '%s' (line %d); a peer node's portals "
					    "need tpgts of their own", where, id,
					    pt->name ? pt->name : "?", pt->line);
				bad = true;
			}
		}
		if (!bad)
			t->peer_groups[t->n_peer_groups++] = (uint16_t)id;
	}
}

static void parse_target(struct conf_vctx *v, const config_setting_t *g, unsigned idx,
			 struct conf_target *t)
{
	const config_setting_t *l, *s;
	const char *iqn = NULL, *alias = NULL, *why;
	char where[256];
	bool bad = false;

	t->line = conf_setting_line(g);
	snprintf(where, sizeof(where), "targets[%u]", idx);
	conf_check_keys(v, g, where, CONF_S_TARGET);
	if (conf_get_string(v, g, "iqn", where, true, &iqn) > 0) {
		t->iqn = conf_xstrdup(v, iqn);
		snprintf(where, sizeof(where), "target '%.223s'", iqn);
		if (conf_iqn_check(iqn, &why) < 0)
			conf_err_at(v, config_setting_get_member(g, "iqn"), "%s: iqn %s", where,
				    why);
	}
	if (conf_get_string(v, g, "alias", where, false, &alias) > 0) {
		if (strlen(alias) > CONF_ALIAS_MAX)
			conf_err_at(v, config_setting_get_member(g, "alias"),
				    "%s: alias is longer than %d bytes", where, CONF_ALIAS_MAX);
		t->alias = conf_xstrdup(v, alias);
	}

	l = conf_get_string_list(v, g, "portals", where, &bad);
	if (!l && !bad)
		conf_err_at(v, g, "%s: missing required list 'portals'", where);
	if (l && config_setting_length(l) == 0)
		conf_err_at(v, l, "%s: portals is empty: the target would be unreachable", where);
	if (l && config_setting_length(l) > 0) {
		t->portals = conf_xcalloc(v, (size_t)config_setting_length(l), sizeof(unsigned));
		for (int i = 0; t->portals && i < config_setting_length(l); i++) {
			const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
			const char *pn = config_setting_get_string(e);
			bool found = false;

			if (!pn || !*pn)
				continue;
			for (unsigned k = 0; k < v->c->n_portals; k++) {
				if (!v->c->portals[k].name || strcmp(v->c->portals[k].name, pn))
					continue;
				found = true;
				for (unsigned j = 0; j < t->n_portals; j++)
					if (t->portals[j] == k)
						conf_err_at(v, e, "%s: portal '%s' is listed twice",
							    where, pn);
				t->portals[t->n_portals++] = k;
				break;
			}
			if (!found)
				conf_err_at(v, e, "%s: portal '%s' is not defined", where, pn);
		}
	}

	parse_luns(v, g, where, t);
	check_views(v, t, where);

	conf_parse_allow(v, g, where, t);

	s = config_setting_get_member(g, "chap");
	if (s)
		conf_parse_chap(v, s, where, &t->chap);
	s = config_setting_get_member(g, "peer_portal_groups");
	if (s)
		parse_peer_groups(v, s, where, t);
}

void conf_parse_targets(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *l = config_setting_get_member(root, "targets");
	struct conf *c = v->c;
	int n;

	if (!l) {
		conf_err_at(v, root, "missing required list 'targets'");
		return;
	}
	if (config_setting_type(l) != CONFIG_TYPE_LIST) {
		conf_err_at(v, l, "targets must be a list ( { ... }, { ... } ), not %s",
			    conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	if (n == 0) {
		conf_err_at(v, l, "targets is empty: nothing would be served");
		return;
	}
	c->targets = conf_xcalloc(v, (size_t)n, sizeof(*c->targets));
	if (!c->targets)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
		struct conf_target *t = &c->targets[c->n_targets];

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			conf_err_at(v, g, "targets[%d] must be a group { ... }, not %s", i,
				    conf_type_name(g));
			continue;
		}
		parse_target(v, g, (unsigned)i, t);
		for (unsigned j = 0; j < c->n_targets; j++)
			if (t->iqn && c->targets[j].iqn && strcmp(t->iqn, c->targets[j].iqn) == 0)
				conf_err_at(v, g, "target iqn '%s' is already used at line %d",
					    t->iqn,
					    c->targets[j].line);
		c->n_targets++;
	}
}

const struct conf_portal *conf_portal_find(const struct conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_portals; i++)
		if (c->portals[i].name && strcmp(c->portals[i].name, name) == 0)
			return &c->portals[i];
	return NULL;
}

const struct conf_target *conf_target_find(const struct conf *c, const char *iqn)
{
	for (unsigned i = 0; i < c->n_targets; i++)
		if (c->targets[i].iqn && strcmp(c->targets[i].iqn, iqn) == 0)
			return &c->targets[i];
	return NULL;
}
