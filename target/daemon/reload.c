/*
 * target/daemon/reload.c - rtgtd's live reload: SIGHUP or rtgtctl reload
 * re-reads the -c file and applies what can change on a running daemon.
 *
 * Reload (all on workers[0]'s thread, like every control request):
 *   VALIDATE conf_load() of the -c file; a bad file changes nothing and
 *            its FILE:LINE messages go to the log and the reply.
 *   COMPARE  what cannot change live is listed as "needs restart" and
 *            skipped (daemon.workers, daemon.control, a kept pool's level,
 *            chunk, members or spares, an rbd pool's Ceph keys; every key's
 *            reload column in conf/conf_keys.c): the running value stays,
 *            the rest of the file still applies.
 *   PREPARE  new pools opened, new volumes opened (created thick) and
 *            their LUs made. Any failure rolls back what this reload opened
 *            (a volume already created stays recorded in its pool) and the
 *            reload is refused: nothing else changed.
 *   COMMIT   cannot fail: kept volumes whose size changed grown in place
 *            (volumes_grow; one that cannot grow, or would shrink, is a
 *            warning and keeps its size), targets reconciled (LUN maps, ports and peer
 *            nodes' port groups, both live: a changed TPGT is a portal
 *            removed and added, a changed peer list raises ASYMMETRIC
 *            ACCESS STATE CHANGED; added
 *            targets made, removed ones unmapped and retired), the iSCSI
 *            server swapped to the new conf (listeners follow the portals,
 *            conns no longer served are closed), log level applied, pools
 *            no LUN uses any more closed when idle.
 *
 * What the assembly does (pools, LUs, targets) is entries.c's, shared through
 * daemon_int.h; this file decides what changes and in which order.
 *
 * Layer: reload (target/daemon/README.md "Layers"), rtgtd only (D_SRCS),
 * above entries.c and status.c, below main.c. May call: entries.c,
 * status.c, access.c, events.c, notify.c, raid/, target/scsi/,
 * target/iscsi/, conf/, json-c, libc. Never calls main.c.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/access.h"
#include "target/daemon/daemon_int.h"
#include "target/daemon/events.h"
#include "target/daemon/notify.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"

static bool strv_eq(char *const *a, unsigned na, char *const *b, unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return true;
}

/* Two optional strings (NULL: not set) say the same. */
static bool opt_eq(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (!a || !strcmp(a, b));
}

static bool chap_eq(const struct conf_chap *a, const struct conf_chap *b)
{
	const char *x[4] = { a->user, a->secret, a->mutual_user, a->mutual_secret };
	const char *y[4] = { b->user, b->secret, b->mutual_user, b->mutual_secret };

	for (unsigned i = 0; i < 4; i++)
		if ((x[i] == NULL) != (y[i] == NULL) || (x[i] && strcmp(x[i], y[i])))
			return false;
	return true;
}

/* Per-initiator credentials: the same initiators (in order) with the same
 * CHAP each. */
static bool acls_eq(const struct conf_target *a, const struct conf_target *b)
{
	if (a->n_acls != b->n_acls)
		return false;
	for (unsigned i = 0; i < a->n_acls; i++)
		if (strcasecmp(a->acls[i].initiator, b->acls[i].initiator) ||
		    !chap_eq(&a->acls[i].chap, &b->acls[i].chap))
			return false;
	return true;
}

/* What differs between two versions of a target, as a short list for the
 * log and the reply ("" when nothing). */
static void target_diff(const struct conf *oc, const struct conf_target *o,
			const struct conf *nc, const struct conf_target *n, char *buf, size_t len)
{
	size_t off = 0;
	bool luns = o->n_luns != n->n_luns, portals = o->n_portals != n->n_portals;

	buf[0] = '\0';
	for (unsigned i = 0; !luns && i < o->n_luns; i++)
		luns = o->luns[i].lun != n->luns[i].lun || strcmp(o->luns[i].pool, n->luns[i].pool) ||
		       strcmp(o->luns[i].volume, n->luns[i].volume);
	for (unsigned i = 0; !portals && i < o->n_portals; i++)
		portals = strcmp(oc->portals[o->portals[i]].name, nc->portals[n->portals[i]].name) ||
			  strcmp(oc->portals[o->portals[i]].listen, nc->portals[n->portals[i]].listen) ||
			  oc->portals[o->portals[i]].tpgt != nc->portals[n->portals[i]].tpgt;
#define NOTE(cond, what)                                                                  \
	do {                                                                              \
		if ((cond) && off < len)                                                  \
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", \
						what);                                    \
	} while (0)
	NOTE(luns, "luns");
	NOTE(portals, "portals");
	NOTE(o->allow_all != n->allow_all || !strv_eq(o->allow, o->n_allow, n->allow, n->n_allow) ||
	     access_addr_changed(o, n),
	     "allow");
	NOTE(access_changed(oc, o, nc, n), "access");
	/* which CHAP field changed is not said: it may be a secret */
	NOTE(!chap_eq(&o->chap, &n->chap) || !acls_eq(o, n), "chap");
	NOTE((o->alias == NULL) != (n->alias == NULL) || (o->alias && strcmp(o->alias, n->alias)),
	     "alias");
	NOTE(o->n_peer_groups != n->n_peer_groups ||
	     (n->n_peer_groups && memcmp(o->peer_groups, n->peer_groups,
					 n->n_peer_groups * sizeof(*n->peer_groups))),
	     "peer_portal_groups");
#undef NOTE
}

static const struct conf_lun *lun_of_volume(const struct conf *c, const char *pool,
					     const char *volume)
{
	for (unsigned t = 0; t < c->n_targets; t++)
		for (unsigned l = 0; l < c->targets[t].n_luns; l++)
			if (!strcmp(c->targets[t].luns[l].pool, pool) &&
			    !strcmp(c->targets[t].luns[l].volume, volume))
				return &c->targets[t].luns[l];
	return NULL;
}

/* Lists in @restart what of @nc cannot be applied live. */
static void needs_restart(const struct conf *oc, const struct conf *nc, struct json_object *restart)
{
	if (oc->daemon.workers != nc->daemon.workers)
		daemon_jadd_str(restart, "daemon.workers (%u -> %u)", oc->daemon.workers,
			 nc->daemon.workers);
	if (strcmp(oc->daemon.control, nc->daemon.control))
		daemon_jadd_str(restart, "daemon.control (%s -> %s)", oc->daemon.control,
			 nc->daemon.control);
	if (strcmp(oc->daemon.state_dir, nc->daemon.state_dir))
		daemon_jadd_str(restart, "daemon.state_dir (%s -> %s)", oc->daemon.state_dir,
			 nc->daemon.state_dir);
	if (strcmp(oc->daemon.metrics ? oc->daemon.metrics : "",
		   nc->daemon.metrics ? nc->daemon.metrics : ""))
		daemon_jadd_str(restart, "daemon.metrics (%s -> %s)",
			 oc->daemon.metrics ? oc->daemon.metrics : "off",
			 nc->daemon.metrics ? nc->daemon.metrics : "off");
	if (oc->daemon.metrics_max_connections != nc->daemon.metrics_max_connections ||
	    oc->daemon.metrics_max_per_address != nc->daemon.metrics_max_per_address ||
	    oc->daemon.metrics_max_request != nc->daemon.metrics_max_request ||
	    oc->daemon.metrics_idle_timeout_s != nc->daemon.metrics_idle_timeout_s)
		daemon_jadd_str(restart, "daemon.metrics_* limits");
	if (strcmp(oc->daemon.smartctl, nc->daemon.smartctl) ||
	    oc->daemon.health_interval_s != nc->daemon.health_interval_s)
		daemon_jadd_str(restart, "daemon.smartctl/health_interval");
	for (unsigned i = 0; i < nc->n_pools; i++) {
		const struct conf_pool *n = &nc->pools[i], *o = conf_pool_find(oc, n->name);

		if (!o)
			continue;
		if (o->level != n->level)
			daemon_jadd_str(restart, "pool %s: level (%s -> %s)", n->name,
				 conf_level_name(o->level), conf_level_name(n->level));
		if (o->chunk != n->chunk)
			daemon_jadd_str(restart, "pool %s: chunk", n->name);
		if (!strv_eq(o->member_paths, o->n_members, n->member_paths, n->n_members))
			daemon_jadd_str(restart, "pool %s: members (use rtgtctl fail/add-spare/grow live)",
				 n->name);
		if (!strv_eq(o->spare_paths, o->n_spares, n->spare_paths, n->n_spares))
			daemon_jadd_str(restart, "pool %s: spares (use rtgtctl add-spare live)", n->name);
		if (o->direct_io != n->direct_io || o->rebuild_mbps != n->rebuild_mbps ||
		    o->hdd.enabled != n->hdd.enabled || o->hdd.mbps != n->hdd.mbps ||
		    o->hdd.rpm != n->hdd.rpm || o->hdd.avg_seek_ms != n->hdd.avg_seek_ms ||
		    o->hdd.write_through != n->hdd.write_through)
			daemon_jadd_str(restart, "pool %s: direct_io/rebuild_mbps/hdd", n->name);
		/* an rbd pool's cluster connection and provisioning are set up
		 * once, at pool open (raid/rbd.c) */
		if (o->level == CONF_RBD && n->level == CONF_RBD &&
		    (!opt_eq(o->ceph_conf, n->ceph_conf) || !opt_eq(o->rbd_pool, n->rbd_pool) ||
		     !opt_eq(o->ceph_id, n->ceph_id) || !opt_eq(o->keyring, n->keyring) ||
		     o->rbd_thick != n->rbd_thick || o->provision_mbps != n->provision_mbps))
			daemon_jadd_str(restart, "pool %s: ceph_conf/rbd_pool/ceph_id/keyring/thick/"
					"provision_mbps", n->name);
		/* read once at pool open (raid_pool_open) */
		if (o->thin_threshold != n->thin_threshold)
			daemon_jadd_str(restart, "pool %s: thin_threshold (%u -> %u)", n->name,
					o->thin_threshold, n->thin_threshold);
	}
	/* an open volume's provisioning is fixed (raid_vol_open_ex) */
	for (unsigned t = 0; t < nc->n_targets; t++)
		for (unsigned l = 0; l < nc->targets[t].n_luns; l++) {
			const struct conf_lun *n = &nc->targets[t].luns[l];
			const struct conf_lun *o = lun_of_volume(oc, n->pool, n->volume);

			if (o && o->thin != n->thin)
				daemon_jadd_str(restart, "volume %s/%s: thin (%s -> %s)", n->pool,
						n->volume, o->thin ? "true" : "false",
						n->thin ? "true" : "false");
		}
}

/* Kept volumes whose size the file changed grow in place (daemon_lu_grow);
 * one that cannot is a warning and keeps its size. */
static void volumes_grow(struct daemon *d, const struct conf *oc, const struct conf *nc,
			 struct json_object *resized, struct json_object *warnings)
{
	for (unsigned t = 0; t < nc->n_targets; t++)
		for (unsigned l = 0; l < nc->targets[t].n_luns; l++) {
			const struct conf_lun *n = &nc->targets[t].luns[l];
			const struct conf_lun *o = lun_of_volume(oc, n->pool, n->volume);
			struct lu_ent *e = daemon_lu_find(d, n->pool, n->volume);
			uint64_t before;
			char why[300];

			if (!o || !e || (o->size.bytes == n->size.bytes &&
					 o->size.percent == n->size.percent) ||
			    lun_of_volume(nc, n->pool, n->volume) != n)
				continue;
			before = raid_vol_bytes(e->vol);
			if (daemon_lu_grow(d, e, &n->size, why, sizeof(why))) {
				LOG_WARN(MOD, "reload: %s", why);
				daemon_jadd_str(warnings, "%s", why);
			} else if (raid_vol_bytes(e->vol) != before) {
				daemon_jadd_str(resized, "%s/%s %llu -> %llu", n->pool, n->volume,
						(unsigned long long)before,
						(unsigned long long)raid_vol_bytes(e->vol));
			}
		}
}

/* Whether a target of the daemon maps @lu. */
static bool lu_mapped(const struct daemon *d, struct scsi_lu *lu)
{
	for (unsigned i = 0; i < d->n_tgts; i++)
		for (unsigned lun = 0; lun < MAX_LUN; lun++)
			if (scsi_target_lu(d->tgts[i]->st, lun) == lu)
				return true;
	return false;
}

/* Frees the LUs that no target maps any more (a LUN removed from the
 * configuration) and closes their volumes, so that the volume may be
 * deleted or rolled back without a restart; one with a command still
 * inside, or a read hold left in its pool, stays until the next reload. */
static void lus_retire(struct daemon *d, struct json_object *closed,
		       struct json_object *warnings)
{
	for (unsigned i = 0; i < d->n_lus;) {
		struct lu_ent *e = d->lus[i];
		struct pool_ent *pe;

		if (!e->lu || lu_mapped(d, e->lu)) {
			i++;
			continue;
		}
		pe = daemon_pool_find(d, e->pool);
		if (scsi_lu_inflight(e->lu) || (pe && raid_pool_holds(pe->pool))) {
			LOG_WARN(MOD, "reload: volume %s/%s no longer exported but busy: left open until the next reload",
				 e->pool, e->volume);
			daemon_jadd_str(warnings, "volume %s/%s: still busy, left open", e->pool,
					e->volume);
			i++;
			continue;
		}
		LOG_INFO(MOD, "reload: volume %s/%s no longer exported: closed", e->pool, e->volume);
		daemon_jadd_str(closed, "%s/%s", e->pool, e->volume);
		daemon_lu_ent_free(e);
		d->lus[i] = d->lus[--d->n_lus];
	}
}

/* Closes pools the current conf no longer names, with their LUs, when no
 * command is inside any of those LUs; says which stay open. */
static void pools_retire(struct daemon *d, struct json_object *removed,
			 struct json_object *warnings)
{
	for (unsigned i = 0; i < d->n_pools;) {
		struct pool_ent *pe = d->pools[i];
		unsigned busy = 0;

		if (conf_pool_find(d->conf, pe->name)) {
			i++;
			continue;
		}
		for (unsigned j = 0; j < d->n_lus; j++)
			if (!strcmp(d->lus[j]->pool, pe->name))
				busy += scsi_lu_inflight(d->lus[j]->lu);
		/* after the commands: a read's hold is taken before it leaves
		 * its LU (raid_pool_holds) */
		busy += raid_pool_holds(pe->pool);
		if (busy) {
			LOG_WARN(MOD, "reload: pool %s no longer configured but %u command(s) still "
				      "inside its volumes: left open until the next reload",
				 pe->name, busy);
			daemon_jadd_str(warnings, "pool %s: still busy, left open", pe->name);
			i++;
			continue;
		}
		for (unsigned j = 0; j < d->n_lus;) {
			if (strcmp(d->lus[j]->pool, pe->name)) {
				j++;
				continue;
			}
			daemon_lu_ent_free(d->lus[j]);
			d->lus[j] = d->lus[--d->n_lus];
		}
		raid_pool_close(pe->pool);
		LOG_INFO(MOD, "reload: pool %s closed", pe->name);
		json_object_array_add(removed, json_object_new_string(pe->name));
		free(pe->name);
		free(pe);
		d->pools[i] = d->pools[--d->n_pools];
	}
}

/*
 * The reload (see the top of the file). Returns 0 with the summary in
 * @reply, or a negative errno with a message in @err (nothing changed).
 */
int daemon_reload(struct daemon *d, struct json_object *reply, char *err, size_t errlen)
{
	struct conf *nc = NULL, *oc = d->conf;
	char *msgs = NULL;
	size_t msglen = 0;
	FILE *ms = open_memstream(&msgs, &msglen);
	struct json_object *restart = json_object_new_array();
	struct json_object *warnings = json_object_new_array();
	struct json_object *t_add = json_object_new_array(), *t_del = json_object_new_array();
	struct json_object *t_chg = json_object_new_array();
	struct json_object *p_add = json_object_new_array(), *p_del = json_object_new_array();
	struct json_object *pool_add_j = json_object_new_array();
	struct json_object *pool_del_j = json_object_new_array();
	struct json_object *vol_add = json_object_new_array();
	struct json_object *vol_grown = json_object_new_array();
	struct json_object *vol_closed = json_object_new_array();
	struct scsi_target **cur = NULL;
	unsigned pools_before = d->n_pools, lus_before = d->n_lus;
	char berr[300];
	int rc;

	if (!ms || !restart || !warnings || !t_add || !t_del || !t_chg || !p_add || !p_del ||
	    !pool_add_j || !pool_del_j || !vol_add || !vol_grown || !vol_closed) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	LOG_INFO(MOD, "reload: reading %s", d->path);
	rc = conf_load(d->path, &nc, ms);
	fclose(ms);
	ms = NULL;
	if (rc) {
		/* one log line per problem; the reply carries them all */
		char *line, *save = NULL, *copy = msgs ? strdup(msgs) : NULL;
		size_t off = 0;

		err[0] = '\0';
		for (line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
		     line = strtok_r(NULL, "\n", &save)) {
			LOG_ERR(MOD, "reload refused: %s", line);
			if (off < errlen)
				off += (size_t)snprintf(err + off, errlen - off, "%s%s",
							off ? "\n" : "", line);
		}
		if (!err[0])
			snprintf(err, errlen, "%s: %s", d->path, strerror(-rc));
		LOG_ERR(MOD, "reload refused: configuration unchanged");
		free(copy);
		nc = NULL;
		goto out;
	}

	/* COMPARE */
	needs_restart(oc, nc, restart);
	for (size_t i = 0; i < json_object_array_length(restart); i++)
		LOG_WARN(MOD, "reload: needs restart, skipped: %s",
			 json_object_get_string(json_object_array_get_idx(restart, i)));

	/* PREPARE: new pools, new volumes */
	for (unsigned i = 0; i < nc->n_pools; i++) {
		if (daemon_pool_find(d, nc->pools[i].name))
			continue;
		rc = daemon_pool_add(d, &nc->pools[i]);
		if (rc) {
			snprintf(err, errlen, "%s:%d: pool %s: cannot assemble: %s", nc->path,
				 nc->pools[i].line, nc->pools[i].name, strerror(-rc));
			goto rollback;
		}
		json_object_array_add(pool_add_j, json_object_new_string(nc->pools[i].name));
	}
	for (unsigned t = 0; t < nc->n_targets; t++)
		for (unsigned l = 0; l < nc->targets[t].n_luns; l++) {
			const struct conf_lun *cl = &nc->targets[t].luns[l];

			if (daemon_lu_find(d, cl->pool, cl->volume))
				continue;
			rc = daemon_lu_add(d, nc, cl, err, errlen);
			if (rc)
				goto rollback;
			daemon_jadd_str(vol_add, "%s/%s", cl->pool, cl->volume);
		}

	/* COMMIT */
	cur = calloc(nc->n_targets ? nc->n_targets : 1, sizeof(*cur));
	if (!cur) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto rollback;
	}
	for (unsigned i = 0; i < d->n_tgts; i++)
		d->tgts[i]->live = false;
	for (unsigned t = 0; t < nc->n_targets; t++) {
		const struct conf_target *n = &nc->targets[t], *o = conf_target_find(oc, n->iqn);
		char what[64];

		if (!o) {
			json_object_array_add(t_add, json_object_new_string(n->iqn));
			LOG_INFO(MOD, "reload: target %s added", n->iqn);
		} else {
			target_diff(oc, o, nc, n, what, sizeof(what));
			if (what[0]) {
				daemon_jadd_str(t_chg, "%s (%s)", n->iqn, what);
				LOG_INFO(MOD, "reload: target %s changed: %s", n->iqn, what);
			}
		}
		rc = daemon_tgt_sync(d, nc, n, &cur[t]);
		if (rc) {
			/* only ENOMEM gets here: the map is partly updated */
			LOG_ERR(MOD, "reload: target %s: %s", n->iqn, strerror(-rc));
			daemon_jadd_str(warnings, "target %s: %s", n->iqn, strerror(-rc));
			if (!cur[t]) {
				struct tgt_ent *te = daemon_tgt_find(d, n->iqn);

				cur[t] = te ? te->st : NULL;
			}
		}
	}
	for (unsigned i = 0; i < d->n_tgts; i++) {
		struct tgt_ent *te = d->tgts[i];

		if (te->live || !conf_target_find(oc, te->iqn))
			continue;
		/* retired: its sessions are closed by the server; until then
		 * their commands find no LUN */
		for (unsigned lun = 0; lun < MAX_LUN; lun++)
			if (scsi_target_lu(te->st, lun))
				scsi_target_remove_lu(te->st, lun);
		json_object_array_add(t_del, json_object_new_string(te->iqn));
		LOG_INFO(MOD, "reload: target %s removed: its sessions are closed", te->iqn);
	}
	for (unsigned i = 0; i < nc->n_portals; i++) {
		const struct conf_portal *o = conf_portal_find(oc, nc->portals[i].name);

		if (!o || strcmp(o->listen, nc->portals[i].listen) || o->tpgt != nc->portals[i].tpgt)
			daemon_jadd_str(p_add, "%s %s", nc->portals[i].name, nc->portals[i].listen);
	}
	for (unsigned i = 0; i < oc->n_portals; i++) {
		const struct conf_portal *n = conf_portal_find(nc, oc->portals[i].name);

		if (!n || strcmp(n->listen, oc->portals[i].listen) || n->tpgt != oc->portals[i].tpgt)
			daemon_jadd_str(p_del, "%s %s", oc->portals[i].name, oc->portals[i].listen);
	}
	volumes_grow(d, oc, nc, vol_grown, warnings);
	iscsi_notify("RELOADING=1");
	/* From here oc may be freed at any time (by the last connection of
	 * the old configuration): nothing below reads it. */
	rc = iscsi_server_reload(d->server, nc, cur, berr, sizeof(berr));
	if (rc == -ESHUTDOWN) {
		snprintf(err, errlen, "shutting down");
		goto rollback_targets;
	}
	if (rc) {
		daemon_jadd_str(warnings, "%s", berr[0] ? berr : strerror(-rc));
		rc = 0;
	}
	d->conf = nc;
	free(d->cur);
	d->cur = cur;
	cur = NULL;
	nc = NULL;
	conf_log_set_level(d->conf->daemon.log_level);
	if (events_set_exec(d->events, d->conf->daemon.event_exec,
			    d->conf->daemon.event_exec_timeout_s * 1000u))
		daemon_jadd_str(warnings, "daemon.event_exec: out of memory, the old hook stays");
	lus_retire(d, vol_closed, warnings);
	pools_retire(d, pool_del_j, warnings);
	daemon_health_sync(d);
	iscsi_notify_ready();
	RTGT_CHECK(daemon_check(d));
	LOG_INFO(MOD, "reload done: targets +%zu -%zu ~%zu, portals +%zu -%zu, pools +%zu -%zu, "
		      "volumes +%zu, %zu needing a restart, %zu warning(s)",
		 json_object_array_length(t_add), json_object_array_length(t_del),
		 json_object_array_length(t_chg), json_object_array_length(p_add),
		 json_object_array_length(p_del), json_object_array_length(pool_add_j),
		 json_object_array_length(pool_del_j), json_object_array_length(vol_add),
		 json_object_array_length(restart), json_object_array_length(warnings));
	json_object_object_add(reply, "targets_added", json_object_get(t_add));
	json_object_object_add(reply, "targets_removed", json_object_get(t_del));
	json_object_object_add(reply, "targets_changed", json_object_get(t_chg));
	json_object_object_add(reply, "portals_added", json_object_get(p_add));
	json_object_object_add(reply, "portals_removed", json_object_get(p_del));
	json_object_object_add(reply, "pools_added", json_object_get(pool_add_j));
	json_object_object_add(reply, "pools_removed", json_object_get(pool_del_j));
	json_object_object_add(reply, "volumes_added", json_object_get(vol_add));
	json_object_object_add(reply, "volumes_resized", json_object_get(vol_grown));
	json_object_object_add(reply, "volumes_closed", json_object_get(vol_closed));
	json_object_object_add(reply, "needs_restart", json_object_get(restart));
	json_object_object_add(reply, "warnings", json_object_get(warnings));
	goto out;

rollback_targets:
	/* Shutting down: the LUN maps may already point at the new LUs, so
	 * they stay (teardown frees them); only the new conf goes. */
	LOG_WARN(MOD, "reload abandoned: shutting down");
	goto out;
rollback:
	LOG_ERR(MOD, "reload refused: %s; configuration unchanged", err);
	for (unsigned i = lus_before; i < d->n_lus; i++)
		daemon_lu_ent_free(d->lus[i]);
	if (d->n_lus > lus_before)
		d->n_lus = lus_before;
	daemon_pools_drop_last(d, d->n_pools - pools_before);
out:
	if (ms)
		fclose(ms);
	free(msgs);
	free(cur);
	conf_free(nc);
	json_object_put(restart);
	json_object_put(warnings);
	json_object_put(t_add);
	json_object_put(t_del);
	json_object_put(t_chg);
	json_object_put(p_add);
	json_object_put(p_del);
	json_object_put(pool_add_j);
	json_object_put(pool_del_j);
	json_object_put(vol_closed);
	json_object_put(vol_add);
	json_object_put(vol_grown);
	return rc;
}

