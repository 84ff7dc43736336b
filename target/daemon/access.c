/*
 * target/daemon/access.c - LUN masking and mapping from the configuration
 * to the SCSI target (see access.h). No state: each call builds the views
 * from the configuration and hands them to target/scsi, which copies them.
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * conf/, target/scsi/, libc. Calls no other file of target/daemon.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf.h"
#include "target/daemon/access.h"
#include "target/scsi/scsi.h"

/* The view of group @g (-1: an initiator in no group) of @ct into @out
 * (room for ct->n_luns entries); returns how many. */
static unsigned view_build(const struct conf_target *ct, int g, struct scsi_lun_map *out)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ct->n_luns; i++) {
		const struct conf_lun *l = &ct->luns[i];

		if (!l->masked) {
			out[n++] = (struct scsi_lun_map){ .lun = (uint16_t)l->lun,
							  .target_lun = (uint16_t)l->lun,
							  .read_only = l->read_only };
			continue;
		}
		for (unsigned m = 0; g >= 0 && m < l->n_maps; m++)
			if (l->maps[m].group == (unsigned)g)
				out[n++] = (struct scsi_lun_map){
					.lun = (uint16_t)l->maps[m].lun,
					.target_lun = (uint16_t)l->lun,
					.read_only = l->maps[m].read_only };
	}
	return n;
}

int access_apply(const struct conf *c, const struct conf_target *ct, struct scsi_target *st)
{
	unsigned ng = c->n_groups;
	struct scsi_lun_map *maps = calloc((size_t)(ng + 1) * (ct->n_luns ? ct->n_luns : 1),
					   sizeof(*maps));
	struct scsi_view *views = calloc(ng ? ng : 1, sizeof(*views));
	struct scsi_view dflt = { 0 };
	int rc;

	if (!maps || !views) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned g = 0; g < ng; g++) {
		struct scsi_lun_map *m = maps + (size_t)g * ct->n_luns;

		views[g].initiators = (const char *const *)c->groups[g].members;
		views[g].n_initiators = c->groups[g].n_members;
		views[g].map = m;
		views[g].n_map = view_build(ct, (int)g, m);
	}
	dflt.map = maps + (size_t)ng * ct->n_luns;
	dflt.n_map = view_build(ct, -1, (struct scsi_lun_map *)dflt.map);
	rc = scsi_target_set_access(st, views, ng, &dflt);
out:
	free(maps);
	free(views);
	return rc;
}

static bool maps_eq(const struct scsi_lun_map *a, unsigned na, const struct scsi_lun_map *b,
		    unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++) {
		bool found = false;

		for (unsigned j = 0; j < nb && !found; j++)
			found = a[i].lun == b[j].lun && a[i].target_lun == b[j].target_lun &&
				a[i].read_only == b[j].read_only;
		if (!found)
			return false;
	}
	return true;
}

/* The view @name's initiator has of @t in @c into @out; returns how many. */
static unsigned view_of(const struct conf *c, const struct conf_target *t, const char *name,
			struct scsi_lun_map *out)
{
	const struct conf_group *g = name ? conf_group_of(c, name) : NULL;

	return view_build(t, g ? (int)(g - c->groups) : -1, out);
}

bool access_changed(const struct conf *oc, const struct conf_target *o, const struct conf *nc,
		    const struct conf_target *n)
{
	size_t cap = (o->n_luns > n->n_luns ? o->n_luns : n->n_luns) + 1;
	struct scsi_lun_map *a = calloc(cap, sizeof(*a)), *b = calloc(cap, sizeof(*b));
	bool changed = false;

	if (!a || !b) {
		changed = true; /* cannot tell: say so */
		goto out;
	}
	/* the view of every initiator either file names, and of the rest */
	changed = !maps_eq(a, view_of(oc, o, NULL, a), b, view_of(nc, n, NULL, b));
	for (unsigned pass = 0; pass < 2 && !changed; pass++) {
		const struct conf *c = pass ? nc : oc;

		for (unsigned g = 0; g < c->n_groups && !changed; g++)
			for (unsigned m = 0; m < c->groups[g].n_members && !changed; m++) {
				const char *who = c->groups[g].members[m];

				changed = !maps_eq(a, view_of(oc, o, who, a), b,
						   view_of(nc, n, who, b));
			}
	}
out:
	free(a);
	free(b);
	return changed;
}

bool access_addr_changed(const struct conf_target *o, const struct conf_target *n)
{
	if (o->n_addr_rules != n->n_addr_rules)
		return true;
	for (unsigned i = 0; i < o->n_addr_rules; i++) {
		const struct conf_addr_rule *a = &o->addr_rules[i], *b = &n->addr_rules[i];

		if ((a->initiator == NULL) != (b->initiator == NULL) ||
		    (a->initiator && strcasecmp(a->initiator, b->initiator)) ||
		    a->n_nets != b->n_nets ||
		    memcmp(a->nets, b->nets, a->n_nets * sizeof(*a->nets)))
			return true;
	}
	return false;
}
