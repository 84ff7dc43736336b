/*
 * target/daemon/entries.c - the daemon's entries (pools, LUs, targets; struct
 * daemon in daemon_int.h): find, add, grow, drop, the SCSI target of a
 * configured target, the members handed to the health thread. Used at
 * start-up by main.c and by the reload's PREPARE and COMMIT (reload.c).
 *
 * Layer: helpers (target/daemon/README.md "Layers"), rtgtd only (D_SRCS),
 * below main.c and reload.c, beside status.c. May call: access.c, health.c,
 * conf/, raid/, target/scsi/, libc. Calls neither main.c nor reload.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/access.h"
#include "target/daemon/daemon_int.h"
#include "target/daemon/health.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"

static int push(void *arrp, unsigned *n, void *item)
{
	void ***arr = arrp;
	void **na = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = item;
	*arr = na;
	return 0;
}

bool daemon_check(const struct daemon *d)
{
	for (unsigned i = 0; i < d->n_pools; i++)
		if (!d->pools[i]->pool)
			return false;
	for (unsigned i = 0; i < d->n_lus; i++)
		if (!d->lus[i]->lu || !d->lus[i]->vol)
			return false;
	for (unsigned i = 0; i < d->n_tgts; i++)
		if (!d->tgts[i]->st)
			return false;
	if (d->cur)
		for (unsigned t = 0; t < d->conf->n_targets; t++) {
			bool ok = false;

			for (unsigned i = 0; i < d->n_tgts; i++)
				if (d->tgts[i]->st == d->cur[t] && d->tgts[i]->live &&
				    !strcmp(d->tgts[i]->iqn, d->conf->targets[t].iqn))
					ok = true;
			if (!ok)
				return false;
		}
	return true;
}

/* ---- assembly ---- */

struct pool_ent *daemon_pool_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->n_pools; i++)
		if (!strcmp(d->pools[i]->name, name))
			return d->pools[i];
	return NULL;
}

struct lu_ent *daemon_lu_find(struct daemon *d, const char *pool, const char *volume)
{
	for (unsigned i = 0; i < d->n_lus; i++)
		if (!strcmp(d->lus[i]->pool, pool) && !strcmp(d->lus[i]->volume, volume))
			return d->lus[i];
	return NULL;
}

struct tgt_ent *daemon_tgt_find(struct daemon *d, const char *iqn)
{
	for (unsigned i = 0; i < d->n_tgts; i++)
		if (!strcmp(d->tgts[i]->iqn, iqn))
			return d->tgts[i];
	return NULL;
}

int daemon_pool_add(struct daemon *d, const struct conf_pool *cp)
{
	struct pool_ent *pe;
	int rc;

	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	pe->name = strdup(cp->name);
	if (!pe->name) {
		rc = -ENOMEM;
		goto free_pe;
	}
	rc = raid_pool_open(cp, &pe->pool);
	if (rc) {
		LOG_ERR(MOD, "pool %s: cannot assemble: %s", cp->name, strerror(-rc));
		goto free_name;
	}
	rc = push(&d->pools, &d->n_pools, pe);
	if (rc)
		goto close_pool;
	return 0;

close_pool:
	raid_pool_close(pe->pool);
free_name:
	free(pe->name);
free_pe:
	free(pe);
	return rc;
}

/* Removes and closes the last @n pool entries (reload rollback). */
void daemon_pools_drop_last(struct daemon *d, unsigned n)
{
	while (n-- && d->n_pools) {
		struct pool_ent *pe = d->pools[--d->n_pools];

		raid_pool_close(pe->pool);
		free(pe->name);
		free(pe);
	}
}

/* The APTPL files' directory: daemon.state_dir of the configuration the
 * daemon runs (a reload that changes it takes effect at the next start, as
 * daemon.control does), never the control socket's directory, which is a
 * runtime directory under systemd and wiped at every stop. */
static char *state_dir(const struct daemon *d, const struct conf *c)
{
	return strdup(d->conf ? d->conf->daemon.state_dir : c->daemon.state_dir);
}

void daemon_lu_ent_free(struct lu_ent *e)
{
	if (!e)
		return;
	if (e->lu)
		scsi_lu_destroy(e->lu);
	/* after the LU: no command of it is left */
	raid_vol_close(e->vol);
	free(e->pr_path);
	free(e->pool);
	free(e->volume);
	free(e);
}

/* Opens (creating it if new) the volume of @cl and its LU. */
int daemon_lu_add(struct daemon *d, const struct conf *c, const struct conf_lun *cl,
		  char *err, size_t errlen)
{
	struct pool_ent *pe = daemon_pool_find(d, cl->pool);
	const struct conf_pool *cp = conf_pool_find(c, cl->pool);
	struct scsi_lu_params lp;
	struct lu_ent *e;
	char name[160], *sdir;
	int rc;

	if (!pe || !cp) {
		snprintf(err, errlen, "%s:%d: volume %s/%s: pool not assembled", c->path, cl->line,
			 cl->pool, cl->volume);
		return -ENOENT;
	}
	e = calloc(1, sizeof(*e));
	sdir = state_dir(d, c);
	if (!e || !sdir || !(e->pool = strdup(cl->pool)) || !(e->volume = strdup(cl->volume))) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto free_e;
	}
	rc = raid_vol_open_ex(pe->pool, cl->volume, &cl->size, cl->thin ? RAID_VOL_THIN : 0,
			      &e->vol);
	if (rc) {
		snprintf(err, errlen, "%s:%d: volume %s/%s: %s", c->path, cl->line, cl->pool,
			 cl->volume, strerror(-rc));
		goto free_e;
	}
	if (asprintf(&e->pr_path, "%s/%s.%s.pr", sdir, cl->pool, cl->volume) < 0) {
		e->pr_path = NULL;
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto free_e;
	}
	snprintf(name, sizeof(name), "%s/%s", cl->pool, cl->volume);
	memset(&lp, 0, sizeof(lp));
	lp.vol = e->vol;
	lp.name = name;
	lp.pr_path = e->pr_path;
	/* VPD B1 reports a rotating medium only for the HDD model */
	lp.hdd_rpm = cp->hdd.enabled ? cp->hdd.rpm : 0;
	rc = scsi_lu_create(&lp, &e->lu);
	if (rc) {
		snprintf(err, errlen, "volume %s: %s", name, strerror(-rc));
		goto free_e;
	}
	rc = push(&d->lus, &d->n_lus, e);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto free_e;
	}
	free(sdir);
	return 0;

free_e:
	free(sdir);
	daemon_lu_ent_free(e);
	return rc;
}

int daemon_lu_grow(struct daemon *d, struct lu_ent *e, const struct conf_size *size, char *err,
		   size_t errlen)
{
	uint64_t before = raid_vol_bytes(e->vol);
	int rc;

	(void)d;
	rc = raid_vol_resize(e->vol, size);
	switch (rc) {
	case 0:
		break;
	case -EINVAL:
		snprintf(err, errlen, "volume %s/%s: not resized: smaller than its %llu bytes, or not a multiple of 512 (volumes never shrink)",
			 e->pool, e->volume, (unsigned long long)before);
		return rc;
	case -ENOSPC:
		snprintf(err, errlen, "volume %s/%s: not resized: the space after it is taken or the pool ends (volumes are never moved; see the log)",
			 e->pool, e->volume);
		return rc;
	case -EOPNOTSUPP:
		snprintf(err, errlen, "volume %s/%s: not resized: its pool cannot grow volumes",
			 e->pool, e->volume);
		return rc;
	default:
		snprintf(err, errlen, "volume %s/%s: not resized: %s", e->pool, e->volume,
			 strerror(-rc));
		return rc;
	}
	if (scsi_lu_resized(e->lu)) {
		LOG_INFO(MOD, "volume %s/%s grown from %llu to %llu bytes: initiators are told CAPACITY DATA HAS CHANGED",
			 e->pool, e->volume, (unsigned long long)before,
			 (unsigned long long)raid_vol_bytes(e->vol));
		scsi_lu_grown_share(e->lu);   /* and those of the other nodes */
	}
	return 0;
}

/* Makes the SCSI target of @ct (or reuses the entry of that IQN) match it:
 * LUN map and ports. A change of the map raises REPORTED LUNS DATA HAS
 * CHANGED for the target's sessions (scsi does it). */
int daemon_tgt_sync(struct daemon *d, const struct conf *c, const struct conf_target *ct,
		struct scsi_target **out)
{
	struct tgt_ent *te = daemon_tgt_find(d, ct->iqn);
	struct scsi_lu *want[MAX_LUN] = { 0 };
	int rc;

	if (!te) {
		te = calloc(1, sizeof(*te));
		if (!te || !(te->iqn = strdup(ct->iqn))) {
			free(te);
			return -ENOMEM;
		}
		rc = scsi_target_create(ct->iqn, &te->st);
		if (!rc)
			rc = push(&d->tgts, &d->n_tgts, te);
		if (rc) {
			scsi_target_destroy(te->st);
			free(te->iqn);
			free(te);
			return rc;
		}
	}
	te->live = true;
	for (unsigned l = 0; l < ct->n_luns; l++) {
		struct lu_ent *e = daemon_lu_find(d, ct->luns[l].pool, ct->luns[l].volume);

		if (!e || ct->luns[l].lun >= MAX_LUN)
			return -ENOENT;
		want[ct->luns[l].lun] = e->lu;
	}
	/* LUs leaving a LUN go first, then the new views (who sees which
	 * LUN under which number, read-only or not), then the LUs arriving:
	 * no initiator ever sees, even for an instant, a new LU through an
	 * old mapping or an old LU through a new one */
	for (unsigned lun = 0; lun < MAX_LUN; lun++) {
		struct scsi_lu *have = scsi_target_lu(te->st, lun);

		if (have && have != want[lun])
			scsi_target_remove_lu(te->st, lun);
	}
	rc = access_apply(c, ct, te->st);
	if (rc)
		return rc;
	for (unsigned lun = 0; lun < MAX_LUN; lun++) {
		if (!want[lun] || scsi_target_lu(te->st, lun) == want[lun])
			continue;
		rc = scsi_target_add_lu(te->st, lun, want[lun]);
		if (rc)
			return rc;
	}
	/* Ports (relative port id = TPGT) and peer nodes' groups. Ports the
	 * target no longer has go first and the peer list is replaced next,
	 * so a TPGT that moved between "ours" and "the peer's" on a reload
	 * never collides with its old role. */
	{
		uint16_t have[64];
		unsigned n_have = scsi_target_ports(te->st, have, 64);

		for (unsigned i = 0; i < n_have && i < 64; i++) {
			bool keep = false;

			for (unsigned p = 0; p < ct->n_portals && !keep; p++)
				keep = c->portals[ct->portals[p]].tpgt == have[i];
			if (!keep)
				scsi_target_remove_port(te->st, have[i]);
		}
	}
	rc = scsi_target_set_peer_groups(te->st, ct->peer_groups, ct->n_peer_groups);
	if (rc)
		return rc;
	for (unsigned p = 0; p < ct->n_portals; p++) {
		uint16_t tpgt = c->portals[ct->portals[p]].tpgt;

		rc = scsi_target_add_port(te->st, tpgt, tpgt);
		if (rc && rc != -EEXIST)
			return rc;
	}
	*out = te->st;
	return 0;
}

/* The members of every RAID pool to the health thread (start, reload,
 * add-spare, remove). */
void daemon_health_sync(struct daemon *d)
{
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	struct health_member *hm = NULL;
	unsigned n = 0, cap = 0;

	if (!d->health || !pi)
		goto out;
	for (unsigned i = 0; i < d->n_pools; i++) {
		if (raid_pool_info(d->pools[i]->pool, pi))
			continue;
		for (unsigned m = 0; m < pi->n_members && m < 64; m++) {
			if (n == cap) {
				struct health_member *nh = realloc(hm, (cap + 64) * sizeof(*hm));

				if (!nh)
					goto out;
				hm = nh;
				cap += 64;
			}
			snprintf(hm[n].pool, sizeof(hm[n].pool), "%s", pi->name);
			snprintf(hm[n].path, sizeof(hm[n].path), "%s", pi->members[m].path);
			n++;
		}
	}
	health_set_members(d->health, hm, n);
out:
	free(hm);
	free(pi);
}
