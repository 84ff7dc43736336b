/*
 * target/daemon/main.c - rtgtd: loads the configuration, assembles pools,
 * opens volumes, builds SCSI targets, starts one reactor per worker, the
 * iSCSI portals and the control socket; reloads the configuration live
 * (SIGHUP, rtgtctl reload); stops cleanly on SIGTERM/SIGINT.
 *
 * Daemon life:
 *   LOADING  --conf_load() ok-->               ASSEMBLING
 *   LOADING  --bad file-->                     exit 2
 *   ASSEMBLING --pools, volumes, portals ok--> SERVING   (reactors run; a
 *                                              new thick rbd volume may still
 *                                              be written out by its pool: its
 *                                              LU answers NOT READY until then,
 *                                              status shows the progress)
 *   ASSEMBLING --any failure-->                exit 1 (what was opened is closed)
 *   SERVING  --SIGHUP / ctl "reload"-->        SERVING   (reload(): validate,
 *                                              prepare, commit; see below)
 *   SERVING  --SIGTERM/SIGINT-->               DRAINING  (iscsi_server_shutdown)
 *   DRAINING --every command answered-->       STOPPED   (reactors stopped,
 *                                              pools flushed and closed) -> exit 0
 *
 * Reload (all on workers[0]'s thread, like every control request):
 *   VALIDATE conf_load() of the -c file; a bad file changes nothing and
 *            its FILE:LINE messages go to the log and the reply.
 *   COMPARE  what cannot change live is listed as "needs restart" and
 *            skipped (daemon.workers, daemon.control, a kept pool's level,
 *            chunk, members or spares, a kept volume's size): the running
 *            value stays, the rest of the file still applies.
 *   PREPARE  new pools opened, new volumes opened (created thick) and
 *            their LUs made. Any failure rolls back what this reload opened
 *            (a volume already created stays recorded in its pool) and the
 *            reload is refused: nothing else changed.
 *   COMMIT   cannot fail: targets reconciled (LUN maps, ports and peer
 *            nodes' port groups, both live: a changed TPGT is a portal
 *            removed and added, a changed peer list raises ASYMMETRIC
 *            ACCESS STATE CHANGED; added
 *            targets made, removed ones unmapped and retired), the iSCSI
 *            server swapped to the new conf (listeners follow the portals,
 *            conns no longer served are closed), log level applied, pools
 *            no LUN uses any more closed when idle.
 *
 * Ownership: the daemon owns pools, LUs and SCSI targets for its whole
 * life (a removed target or LU is retired, not freed, because sessions or
 * commands of the old configuration may still reach it; a re-added one is
 * reused). d->conf is the current conf; a replaced conf belongs to the
 * iSCSI server, which hands it to conf_release() once no connection uses
 * it. Nothing here keeps a pointer into a conf across a reload.
 *
 * Invariant (daemon_check): every pool, LU and target entry has its object;
 * d->cur has one target per d->conf target, each a live entry with that IQN.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "net/net.h"
#include "raid/raid.h"
#include "target/daemon/access.h"
#include "target/daemon/ctl.h"
#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "target/daemon/live.h"
#include "target/daemon/metrics.h"
#include "target/daemon/notify.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"
#define MAX_LUN 256

struct pool_ent {
	char *name;                  /* owned */
	struct raid_pool *pool;      /* owned, never NULL */
};

/* One exported volume; a volume exported by two LUNs is one entry. */
struct lu_ent {
	char *pool, *volume;         /* owned names */
	struct raid_vol *vol;        /* owned by its pool */
	struct scsi_lu *lu;          /* owned */
	char *pr_path;               /* owned */
};

struct tgt_ent {
	char *iqn;                   /* owned */
	struct scsi_target *st;      /* owned */
	bool live;                   /* in the current conf */
};

struct worker {
	unsigned id;
	struct ev_loop *loop;        /* owned */
	struct raid_ioctx *ioctx;    /* owned */
	pthread_t thread;            /* valid when started, id != 0 */
	int started;
};

struct daemon {
	const char *path;                /* -c as given (argv) */
	struct conf *conf;               /* current; owned until a reload hands it to the server */
	struct pool_ent **pools;         /* owned array of owned entries */
	unsigned n_pools;
	struct lu_ent **lus;             /* owned array of owned entries */
	unsigned n_lus;
	struct tgt_ent **tgts;           /* owned array of owned entries, retired ones too */
	unsigned n_tgts;
	struct scsi_target **cur;        /* owned array: target of each conf->targets[i] */
	struct worker *workers;          /* owned, n = conf->daemon.workers at start */
	unsigned n_workers;
	struct iscsi_server *server;     /* owned, NULL until created */
	struct iscsi_ctl *ctl;           /* owned, NULL when not started */
	int sigfd;
	int stopping;
	/* alerts and monitoring */
	struct events *events;           /* owned; raid's event callback posts here */
	struct health *health;           /* owned, NULL when not created */
	struct metrics *metrics;         /* owned, NULL when daemon.metrics is not set */
	struct slow_pool *slow;          /* owned, one per pool seen by the slow check */
	unsigned n_slow;
	struct ev_timer *slow_timer;     /* on workers[0] */
	pthread_mutex_t snap_mu;         /* metrics snapshots waiting for workers[0] */
	pthread_cond_t snap_cv;
	bool snap_abort;                 /* stopping: snapshots give up */
};

static void health_sync(struct daemon *d);

#define DEGRADED_MAX 64u          /* --start-degraded options in one command line */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtgtd -c FILE [--check] [--start-degraded POOL]...\n"
		"  -c, --config FILE  configuration file (default /etc/rtgt/rtgt.conf)\n"
		"      --check        validate the configuration and exit (0 valid, 2 not)\n"
		"      --start-degraded POOL\n"
		"                     this start only: assemble POOL without members that are\n"
		"                     missing or unusable, if its redundancy allows\n"
		"  -h, --help         this text\n"
		"Runs in the foreground, logs to stderr, stops on SIGTERM or SIGINT,\n"
		"re-reads FILE on SIGHUP (live reload).\n");
}

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

static bool daemon_check(const struct daemon *d)
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

static struct pool_ent *pool_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->n_pools; i++)
		if (!strcmp(d->pools[i]->name, name))
			return d->pools[i];
	return NULL;
}

static struct lu_ent *lu_find(struct daemon *d, const char *pool, const char *volume)
{
	for (unsigned i = 0; i < d->n_lus; i++)
		if (!strcmp(d->lus[i]->pool, pool) && !strcmp(d->lus[i]->volume, volume))
			return d->lus[i];
	return NULL;
}

static struct tgt_ent *tgt_find(struct daemon *d, const char *iqn)
{
	for (unsigned i = 0; i < d->n_tgts; i++)
		if (!strcmp(d->tgts[i]->iqn, iqn))
			return d->tgts[i];
	return NULL;
}

static int pool_add(struct daemon *d, const struct conf_pool *cp)
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
static void pools_drop_last(struct daemon *d, unsigned n)
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

static void lu_ent_free(struct lu_ent *e)
{
	if (!e)
		return;
	if (e->lu)
		scsi_lu_destroy(e->lu);
	free(e->pr_path);
	free(e->pool);
	free(e->volume);
	free(e);
}

/* Opens (creating it if new) the volume of @cl and its LU. */
static int lu_add(struct daemon *d, const struct conf *c, const struct conf_lun *cl,
		  char *err, size_t errlen)
{
	struct pool_ent *pe = pool_find(d, cl->pool);
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
	rc = raid_vol_open(pe->pool, cl->volume, &cl->size, &e->vol);
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
	lu_ent_free(e);
	return rc;
}

/* Makes the SCSI target of @ct (or reuses the entry of that IQN) match it:
 * LUN map and ports. A change of the map raises REPORTED LUNS DATA HAS
 * CHANGED for the target's sessions (scsi does it). */
static int tgt_sync(struct daemon *d, const struct conf *c, const struct conf_target *ct,
		    struct scsi_target **out)
{
	struct tgt_ent *te = tgt_find(d, ct->iqn);
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
		struct lu_ent *e = lu_find(d, ct->luns[l].pool, ct->luns[l].volume);

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

/* Start-up: every pool (one line per failure), every volume, every target. */
static int assemble(struct daemon *d)
{
	const struct conf *c = d->conf;
	char err[512];
	int rc, bad = 0;

	for (unsigned i = 0; i < c->n_pools; i++)
		if (pool_add(d, &c->pools[i]))
			bad = 1;
	if (bad)
		return -EIO;
	for (unsigned t = 0; t < c->n_targets; t++)
		for (unsigned l = 0; l < c->targets[t].n_luns; l++) {
			const struct conf_lun *cl = &c->targets[t].luns[l];

			if (lu_find(d, cl->pool, cl->volume))
				continue;
			rc = lu_add(d, c, cl, err, sizeof(err));
			if (rc) {
				LOG_ERR(MOD, "%s", err);
				return rc;
			}
		}
	d->cur = calloc(c->n_targets ? c->n_targets : 1, sizeof(*d->cur));
	if (!d->cur)
		return -ENOMEM;
	for (unsigned t = 0; t < c->n_targets; t++) {
		rc = tgt_sync(d, c, &c->targets[t], &d->cur[t]);
		if (rc) {
			LOG_ERR(MOD, "target %s: %s", c->targets[t].iqn, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* ---- workers ---- */

static void on_ioctx(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	raid_ioctx_run(arg);
}

/* Before the reactor sleeps: submit the member I/O its batch of events
 * gathered, run what completed inline (raid_ioctx_set_polled). */
static bool on_ioctx_prepare(struct ev_loop *loop, void *arg)
{
	return raid_ioctx_poll(arg);
}

static int create_workers(struct daemon *d)
{
	int rc;

	d->n_workers = d->conf->daemon.workers;
	d->workers = calloc(d->n_workers, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < d->n_workers; i++) {
		struct worker *w = &d->workers[i];

		w->id = i;
		rc = ev_loop_create(i, &w->loop);
		if (rc)
			return rc;
		rc = raid_ioctx_create(&w->ioctx);
		if (rc)
			return rc;
		rc = ev_io_add(w->loop, raid_ioctx_fd(w->ioctx), EV_READ, on_ioctx, w->ioctx);
		if (rc)
			return rc;
		rc = ev_prepare_add(w->loop, on_ioctx_prepare, w->ioctx);
		if (rc)
			return rc;
		raid_ioctx_set_polled(w->ioctx, true);
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];
	int rc;

	/* "rtgtd-w1"...: per-thread CPU in top -H, perf and the benchmarks;
	 * worker 0 runs on the main thread, which keeps the program's name */
	if (w->id > 0) {
		snprintf(name, sizeof(name), "rtgtd-w%u", w->id % 100000u);
		pthread_setname_np(pthread_self(), name);
	}
	rc = ev_run(w->loop);

	if (rc)
		LOG_ERR(MOD, "worker %u: reactor failed: %s", w->id, strerror(-rc));
	return NULL;
}

/* ---- reload ---- */

static bool strv_eq(char *const *a, unsigned na, char *const *b, unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return true;
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

static void jadd_str(struct json_object *arr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void jadd_str(struct json_object *arr, const char *fmt, ...)
{
	char buf[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(arr, json_object_new_string(buf));
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
		jadd_str(restart, "daemon.workers (%u -> %u)", oc->daemon.workers,
			 nc->daemon.workers);
	if (strcmp(oc->daemon.control, nc->daemon.control))
		jadd_str(restart, "daemon.control (%s -> %s)", oc->daemon.control,
			 nc->daemon.control);
	if (strcmp(oc->daemon.state_dir, nc->daemon.state_dir))
		jadd_str(restart, "daemon.state_dir (%s -> %s)", oc->daemon.state_dir,
			 nc->daemon.state_dir);
	if (strcmp(oc->daemon.metrics ? oc->daemon.metrics : "",
		   nc->daemon.metrics ? nc->daemon.metrics : ""))
		jadd_str(restart, "daemon.metrics (%s -> %s)",
			 oc->daemon.metrics ? oc->daemon.metrics : "off",
			 nc->daemon.metrics ? nc->daemon.metrics : "off");
	if (strcmp(oc->daemon.smartctl, nc->daemon.smartctl) ||
	    oc->daemon.health_interval_s != nc->daemon.health_interval_s)
		jadd_str(restart, "daemon.smartctl/health_interval");
	for (unsigned i = 0; i < nc->n_pools; i++) {
		const struct conf_pool *n = &nc->pools[i], *o = conf_pool_find(oc, n->name);

		if (!o)
			continue;
		if (o->level != n->level)
			jadd_str(restart, "pool %s: level (%s -> %s)", n->name,
				 conf_level_name(o->level), conf_level_name(n->level));
		if (o->chunk != n->chunk)
			jadd_str(restart, "pool %s: chunk", n->name);
		if (!strv_eq(o->member_paths, o->n_members, n->member_paths, n->n_members))
			jadd_str(restart, "pool %s: members (use rtgtctl fail/add-spare live)",
				 n->name);
		if (!strv_eq(o->spare_paths, o->n_spares, n->spare_paths, n->n_spares))
			jadd_str(restart, "pool %s: spares (use rtgtctl add-spare live)", n->name);
		if (o->direct_io != n->direct_io || o->rebuild_mbps != n->rebuild_mbps ||
		    o->hdd.enabled != n->hdd.enabled || o->hdd.mbps != n->hdd.mbps ||
		    o->hdd.rpm != n->hdd.rpm || o->hdd.avg_seek_ms != n->hdd.avg_seek_ms ||
		    o->hdd.write_through != n->hdd.write_through)
			jadd_str(restart, "pool %s: direct_io/rebuild_mbps/hdd", n->name);
	}
	for (unsigned t = 0; t < nc->n_targets; t++)
		for (unsigned l = 0; l < nc->targets[t].n_luns; l++) {
			const struct conf_lun *n = &nc->targets[t].luns[l];
			const struct conf_lun *o = lun_of_volume(oc, n->pool, n->volume);

			if (o && (o->size.bytes != n->size.bytes || o->size.percent != n->size.percent))
				jadd_str(restart, "volume %s/%s: size (volumes are not resized)",
					 n->pool, n->volume);
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
		if (busy) {
			LOG_WARN(MOD, "reload: pool %s no longer configured but %u command(s) still "
				      "inside its volumes: left open until the next reload",
				 pe->name, busy);
			jadd_str(warnings, "pool %s: still busy, left open", pe->name);
			i++;
			continue;
		}
		for (unsigned j = 0; j < d->n_lus;) {
			if (strcmp(d->lus[j]->pool, pe->name)) {
				j++;
				continue;
			}
			lu_ent_free(d->lus[j]);
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

static void conf_release(const struct conf *c, void *arg)
{
	(void)arg;
	conf_free((struct conf *)c);
}

/*
 * The reload (see the top of the file). Returns 0 with the summary in
 * @reply, or a negative errno with a message in @err (nothing changed).
 */
static int reload(struct daemon *d, struct json_object *reply, char *err, size_t errlen)
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
	struct scsi_target **cur = NULL;
	unsigned pools_before = d->n_pools, lus_before = d->n_lus;
	char berr[300];
	int rc;

	if (!ms || !restart || !warnings || !t_add || !t_del || !t_chg || !p_add || !p_del ||
	    !pool_add_j || !pool_del_j || !vol_add) {
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
		if (pool_find(d, nc->pools[i].name))
			continue;
		rc = pool_add(d, &nc->pools[i]);
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

			if (lu_find(d, cl->pool, cl->volume))
				continue;
			rc = lu_add(d, nc, cl, err, errlen);
			if (rc)
				goto rollback;
			jadd_str(vol_add, "%s/%s", cl->pool, cl->volume);
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
				jadd_str(t_chg, "%s (%s)", n->iqn, what);
				LOG_INFO(MOD, "reload: target %s changed: %s", n->iqn, what);
			}
		}
		rc = tgt_sync(d, nc, n, &cur[t]);
		if (rc) {
			/* only ENOMEM gets here: the map is partly updated */
			LOG_ERR(MOD, "reload: target %s: %s", n->iqn, strerror(-rc));
			jadd_str(warnings, "target %s: %s", n->iqn, strerror(-rc));
			if (!cur[t]) {
				struct tgt_ent *te = tgt_find(d, n->iqn);

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
			jadd_str(p_add, "%s %s", nc->portals[i].name, nc->portals[i].listen);
	}
	for (unsigned i = 0; i < oc->n_portals; i++) {
		const struct conf_portal *n = conf_portal_find(nc, oc->portals[i].name);

		if (!n || strcmp(n->listen, oc->portals[i].listen) || n->tpgt != oc->portals[i].tpgt)
			jadd_str(p_del, "%s %s", oc->portals[i].name, oc->portals[i].listen);
	}
	iscsi_notify("RELOADING=1");
	/* From here oc may be freed at any time (by the last connection of
	 * the old configuration): nothing below reads it. */
	rc = iscsi_server_reload(d->server, nc, cur, berr, sizeof(berr));
	if (rc == -ESHUTDOWN) {
		snprintf(err, errlen, "shutting down");
		goto rollback_targets;
	}
	if (rc) {
		jadd_str(warnings, "%s", berr[0] ? berr : strerror(-rc));
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
		jadd_str(warnings, "daemon.event_exec: out of memory, the old hook stays");
	pools_retire(d, pool_del_j, warnings);
	health_sync(d);
	iscsi_notify_ready();
	if (!daemon_check(d))
		LOG_ERR(MOD, "reload: daemon invariant violated");
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
		lu_ent_free(d->lus[i]);
	if (d->n_lus > lus_before)
		d->n_lus = lus_before;
	pools_drop_last(d, d->n_pools - pools_before);
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
	json_object_put(vol_add);
	return rc;
}

/* ---- control socket ---- */

static struct json_object *lat_json(uint64_t count, uint64_t p50, uint64_t p99)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "count", json_object_new_int64((int64_t)count));
	json_object_object_add(o, "p50_us", json_object_new_int64((int64_t)p50));
	json_object_object_add(o, "p99_us", json_object_new_int64((int64_t)p99));
	return o;
}

/* Per LU: where it is exported, counters and latency. */
static struct json_object *luns_json(struct daemon *d)
{
	struct json_object *arr = json_object_new_array();
	const struct conf *c = d->conf;

	for (unsigned i = 0; i < d->n_lus; i++) {
		struct lu_ent *e = d->lus[i];
		struct json_object *o = json_object_new_object(), *ex = json_object_new_array();
		struct scsi_lu_stats st;

		for (unsigned t = 0; t < c->n_targets; t++)
			for (unsigned l = 0; l < c->targets[t].n_luns; l++)
				if (!strcmp(c->targets[t].luns[l].pool, e->pool) &&
				    !strcmp(c->targets[t].luns[l].volume, e->volume))
					jadd_str(ex, "%s/%u", c->targets[t].iqn,
						 c->targets[t].luns[l].lun);
		scsi_lu_get_stats(e->lu, &st);
		json_object_object_add(o, "volume", json_object_new_string(scsi_lu_name(e->lu)));
		json_object_object_add(o, "exported_as", ex);
		json_object_object_add(o, "read_ops", json_object_new_int64((int64_t)st.read_ops));
		json_object_object_add(o, "write_ops", json_object_new_int64((int64_t)st.write_ops));
		json_object_object_add(o, "other_ops", json_object_new_int64((int64_t)st.other_ops));
		json_object_object_add(o, "read_bytes", json_object_new_int64((int64_t)st.read_bytes));
		json_object_object_add(o, "write_bytes", json_object_new_int64((int64_t)st.write_bytes));
		json_object_object_add(o, "latency", lat_json(st.lat_count, st.lat_p50_us, st.lat_p99_us));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *u16_array(const uint16_t *v, unsigned n)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_int(v[i]));
	return a;
}

/* Which node this is, per target: the TPGTs it serves (its target port
 * groups, active/optimized here) and the peer nodes' (active/non-optimized). */
static void targets_add_tpgts(const struct conf *c, struct json_object *targets)
{
	for (size_t i = 0; i < json_object_array_length(targets); i++) {
		struct json_object *t = json_object_array_get_idx(targets, i), *iqn;
		const struct conf_target *ct;
		uint16_t own[64];
		unsigned n = 0;

		if (!json_object_object_get_ex(t, "iqn", &iqn) ||
		    !(ct = conf_target_find(c, json_object_get_string(iqn))))
			continue;
		for (unsigned p = 0; p < ct->n_portals && n < 64; p++)
			own[n++] = c->portals[ct->portals[p]].tpgt;
		json_object_object_add(t, "tpgts", u16_array(own, n));
		json_object_object_add(t, "peer_tpgts", u16_array(ct->peer_groups, ct->n_peer_groups));
	}
}

/* ---- alerts and monitoring: events, member health, slow members, metrics ---- */

static struct raid_pool *pool_by_name(struct daemon *d, const char *name);

static struct slow_member *slow_find(struct daemon *d, const char *pool, const char *path)
{
	for (unsigned i = 0; i < d->n_slow; i++) {
		if (strcmp(d->slow[i].name, pool))
			continue;
		for (unsigned k = 0; k < d->slow[i].n; k++)
			if (!strcmp(d->slow[i].m[k].path, path))
				return &d->slow[i].m[k];
	}
	return NULL;
}

/* "health" (block devices that were checked) and "slow" of one member. */
static void member_alerts_json(struct daemon *d, const char *pool, const char *path,
			       struct json_object *mo)
{
	struct slow_member *sm = slow_find(d, pool, path);

	health_member_json(d->health, path, mo);
	json_object_object_add(mo, "slow", json_object_new_boolean(sm && sm->slow));
}

/* The members of every RAID pool to the health thread (start, reload,
 * add-spare, remove). */
static void health_sync(struct daemon *d)
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

struct failing_req {
	struct daemon *d;
	char pool[64], path[256];
};

/* workers[0]: health_fail = "spare" and a spare is there: fail the member,
 * the spare rebuilds (the pool is degraded meanwhile). */
static void on_failing_call(void *arg)
{
	struct failing_req *r = arg;
	struct daemon *d = r->d;
	struct raid_pool *p = pool_by_name(d, r->pool);
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	bool spare = false;

	if (!d->stopping && p && pi && d->conf->daemon.health_fail_spare && !raid_pool_info(p, pi)) {
		for (unsigned m = 0; m < pi->n_members && m < 64; m++)
			spare |= !strcmp(pi->members[m].state, "spare");
		if (!spare || strcmp(pi->state, "optimal")) {
			events_post(d->events, "health_no_replace", "warning", NULL,
				    "pool %s: member %s fails its health check but is not replaced: %s",
				    r->pool, r->path, spare ? "the pool is not optimal" : "no spare");
		} else {
			LOG_WARN(MOD, "pool %s: member %s fails its health check: replacing it with a spare",
				 r->pool, r->path);
			events_post(d->events, "health_replace", "warning", NULL,
				    "pool %s: member %s fails its health check: failed out, a spare rebuilds",
				    r->pool, r->path);
			raid_pool_fail(p, r->path);
		}
	}
	free(pi);
	free(r);
}

/* health thread */
static void on_health_failing(void *arg, const char *pool, const char *path)
{
	struct daemon *d = arg;
	struct failing_req *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->d = d;
	snprintf(r->pool, sizeof(r->pool), "%s", pool);
	snprintf(r->path, sizeof(r->path), "%s", path);
	if (ev_call(d->workers[0].loop, on_failing_call, r))
		free(r);
}

/* workers[0], every SLOW_WINDOW_S: one window of the slow check per pool */
static void on_slow_timer(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct daemon *d = arg;
	struct raid_pool_info *pi = malloc(sizeof(*pi));

	d->slow_timer = NULL;
	for (unsigned i = 0; pi && i < d->n_pools; i++) {
		struct slow_pool *sp = NULL;

		if (raid_pool_info(d->pools[i]->pool, pi) || !pi->n_members)
			continue;
		for (unsigned k = 0; k < d->n_slow && !sp; k++)
			if (!strcmp(d->slow[k].name, pi->name))
				sp = &d->slow[k];
		if (!sp) {
			struct slow_pool *ns = realloc(d->slow, (d->n_slow + 1) * sizeof(*ns));

			if (!ns)
				continue;
			d->slow = ns;
			sp = &d->slow[d->n_slow++];
			memset(sp, 0, sizeof(*sp));
		}
		slow_update(sp, pi, d->events);
	}
	free(pi);
	if (!d->stopping)
		d->slow_timer = ev_timer_add(loop, SLOW_WINDOW_S * 1000u, on_slow_timer, d);
}

/* The live snapshot plus each member's health and slow flag and the event
 * counters (metrics); workers[0]. */
static int live_cmd(struct daemon *d, struct json_object *reply);

static int snapshot_here(struct daemon *d, struct json_object *snap)
{
	struct json_object *pools, *ev = json_object_new_object();
	int rc = live_cmd(d, snap);

	if (!rc && json_object_object_get_ex(snap, "pools", &pools))
		for (size_t i = 0; i < json_object_array_length(pools); i++) {
			struct json_object *p = json_object_array_get_idx(pools, i), *ms, *name;

			if (!json_object_object_get_ex(p, "members", &ms) ||
			    !json_object_object_get_ex(p, "name", &name))
				continue;
			for (size_t k = 0; k < json_object_array_length(ms); k++) {
				struct json_object *m = json_object_array_get_idx(ms, k), *path;

				if (json_object_object_get_ex(m, "path", &path))
					member_alerts_json(d, json_object_get_string(name),
							   json_object_get_string(path), m);
			}
		}
	if (ev && !events_json(d->events, UINT64_MAX - 1, 0, ev)) {
		json_object_object_del(ev, "events");
		json_object_object_add(snap, "events", ev);
	} else {
		json_object_put(ev);
	}
	return rc;
}

struct snap_req {
	struct daemon *d;
	struct json_object *snap;    /* owned by the request */
	int rc;
	bool done;
	unsigned refs;               /* the waiting thread and the call; under snap_mu */
};

static void snap_req_put(struct daemon *d, struct snap_req *r)
{
	bool last;

	pthread_mutex_lock(&d->snap_mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&d->snap_mu);
	if (last) {
		json_object_put(r->snap);
		free(r);
	}
}

static void snap_call(void *arg)
{
	struct snap_req *r = arg;
	struct daemon *d = r->d;
	bool abandoned;

	pthread_mutex_lock(&d->snap_mu);
	abandoned = r->refs == 1;
	pthread_mutex_unlock(&d->snap_mu);
	if (!abandoned)
		r->rc = snapshot_here(d, r->snap);
	pthread_mutex_lock(&d->snap_mu);
	r->done = true;
	pthread_cond_broadcast(&d->snap_cv);
	pthread_mutex_unlock(&d->snap_mu);
	snap_req_put(d, r);
}

/* metrics thread: the snapshot is taken on workers[0] (where the pools,
 * LUs and conf may change), at most 5 s waited for */
static int metrics_snapshot(void *arg, struct json_object *snap)
{
	struct daemon *d = arg;
	struct snap_req *r = calloc(1, sizeof(*r));
	struct timespec ts;
	int rc;

	if (!r || !(r->snap = json_object_new_object())) {
		free(r);
		return -ENOMEM;
	}
	r->d = d;
	r->refs = 2;
	if (ev_call(d->workers[0].loop, snap_call, r)) {
		json_object_put(r->snap);
		free(r);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&d->snap_mu);
	while (!r->done && !d->snap_abort)
		if (pthread_cond_timedwait(&d->snap_cv, &d->snap_mu, &ts) == ETIMEDOUT)
			break;
	rc = r->done ? r->rc : -ETIMEDOUT;
	if (r->done) {
		/* move the result over */
		json_object_object_foreach(r->snap, key, val)
			json_object_object_add(snap, key, json_object_get(val));
	}
	pthread_mutex_unlock(&d->snap_mu);
	snap_req_put(d, r);
	return rc;
}

/* Stop the metrics server (on workers[0] while stopping, or at teardown). */
static void metrics_end(struct daemon *d)
{
	if (!d->metrics)
		return;
	pthread_mutex_lock(&d->snap_mu);
	d->snap_abort = true;
	pthread_cond_broadcast(&d->snap_cv);
	pthread_mutex_unlock(&d->snap_mu);
	metrics_stop(d->metrics);
	d->metrics = NULL;
}

/* "events [SINCE]": the kept events after seq SINCE (default 0: all) */
static int events_cmd(struct daemon *d, const char *since, struct json_object *reply, char *err,
		      size_t errlen)
{
	unsigned long long s = 0;
	char *end = NULL;

	if (since) {
		errno = 0;
		s = strtoull(since, &end, 10);
		if (errno || !*since || *end || since[0] == '-') {
			snprintf(err, errlen, "events: '%s' is not a sequence number", since);
			return -EINVAL;
		}
	}
	return events_json(d->events, s, EVENTS_KEEP, reply);
}

static int status_json(struct daemon *d, struct json_object *reply, bool stats)
{
	struct json_object *pools = json_object_new_array();
	struct json_object *targets = json_object_new_array();
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	int rc = 0;

	if (!pools || !targets || !pi) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < d->n_pools; i++) {
		struct json_object *p, *members, *vols;

		if (raid_pool_info(d->pools[i]->pool, pi))
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "name", json_object_new_string(pi->name));
		json_object_object_add(p, "level", json_object_new_string(pi->level));
		json_object_object_add(p, "state", json_object_new_string(pi->state));
		json_object_object_add(p, "rebuild_progress",
				       json_object_new_double(pi->rebuild_progress));
		if (pi->rebuild_eta_s >= 0)
			json_object_object_add(p, "rebuild_eta_s",
					       json_object_new_double(pi->rebuild_eta_s));
		if (pi->syncing) {
			/* initial sync of a new pool over members that held data */
			json_object_object_add(p, "sync_progress", json_object_new_double(pi->sync_progress));
			if (pi->sync_eta_s >= 0)
				json_object_object_add(p, "sync_eta_s", json_object_new_double(pi->sync_eta_s));
		}
		if (pi->bad_bytes)
			json_object_object_add(p, "bad_bytes", json_object_new_int64((int64_t)pi->bad_bytes));
		json_object_object_add(p, "usable_bytes", json_object_new_int64((int64_t)pi->usable_bytes));
		json_object_object_add(p, "chunk", json_object_new_int64((int64_t)pi->chunk));
		if (!conf_pool_find(d->conf, pi->name))
			json_object_object_add(p, "configured", json_object_new_boolean(false));
		members = json_object_new_array();
		for (unsigned m = 0; m < pi->n_members; m++) {
			struct raid_member_info *mi = &pi->members[m];
			struct json_object *mo = json_object_new_object();

			json_object_object_add(mo, "path", json_object_new_string(mi->path));
			json_object_object_add(mo, "state", json_object_new_string(mi->state));
			json_object_object_add(mo, "read_bytes", json_object_new_int64((int64_t)mi->read_bytes));
			json_object_object_add(mo, "write_bytes", json_object_new_int64((int64_t)mi->write_bytes));
			json_object_object_add(mo, "read_ops", json_object_new_int64((int64_t)mi->read_ops));
			json_object_object_add(mo, "write_ops", json_object_new_int64((int64_t)mi->write_ops));
			json_object_object_add(mo, "read_lat_p50_us", json_object_new_int64((int64_t)mi->read_lat_p50_us));
			json_object_object_add(mo, "read_lat_p99_us", json_object_new_int64((int64_t)mi->read_lat_p99_us));
			json_object_object_add(mo, "write_lat_p50_us", json_object_new_int64((int64_t)mi->write_lat_p50_us));
			json_object_object_add(mo, "write_lat_p99_us", json_object_new_int64((int64_t)mi->write_lat_p99_us));
			json_object_object_add(mo, "read_lat_max_us", json_object_new_int64((int64_t)mi->read_lat_max_us));
			json_object_object_add(mo, "write_lat_max_us", json_object_new_int64((int64_t)mi->write_lat_max_us));
			member_alerts_json(d, pi->name, mi->path, mo);
			json_object_array_add(members, mo);
		}
		json_object_object_add(p, "members", members);
		vols = json_object_new_array();
		for (unsigned v = 0; v < pi->n_volumes; v++) {
			struct json_object *vo = json_object_new_object();

			json_object_object_add(vo, "name", json_object_new_string(pi->volumes[v].name));
			json_object_object_add(vo, "bytes", json_object_new_int64((int64_t)pi->volumes[v].bytes));
			if (pi->volumes[v].state) {
				/* background preparation (rbd thick provisioning) */
				const typeof(pi->volumes[0]) *pv = &pi->volumes[v];

				json_object_object_add(vo, "state", json_object_new_string(pv->state));
				json_object_object_add(vo, "provision_done_bytes",
						       json_object_new_int64((int64_t)pv->prov_done));
				json_object_object_add(vo, "provision_total_bytes",
						       json_object_new_int64((int64_t)pv->prov_total));
				json_object_object_add(vo, "provision_progress",
						       json_object_new_double(pv->prov_total ?
							(double)pv->prov_done / (double)pv->prov_total : 1.0));
				if (pv->prov_eta_s >= 0)
					json_object_object_add(vo, "provision_eta_s",
							       json_object_new_double(pv->prov_eta_s));
				if (pv->prov_error)
					json_object_object_add(vo, "provision_error",
							       json_object_new_string(strerror(-pv->prov_error)));
			}
			json_object_array_add(vols, vo);
		}
		json_object_object_add(p, "volumes", vols);
		if (pi->scrub_state) {
			json_object_object_add(p, "scrub_state", json_object_new_string(pi->scrub_state));
			json_object_object_add(p, "scrub_mismatches",
					       json_object_new_int64((int64_t)pi->scrub_mismatches));
		}
		json_object_array_add(pools, p);
	}
	rc = iscsi_server_status_json(d->server, targets);
	if (!rc)
		targets_add_tpgts(d->conf, targets);
	if (stats)
		json_object_object_add(reply, "luns", luns_json(d));
out:
	free(pi);
	json_object_object_add(reply, "pools", pools);
	json_object_object_add(reply, "targets", targets);
	return rc;
}

static struct raid_pool *pool_by_name(struct daemon *d, const char *name)
{
	struct pool_ent *pe = name ? pool_find(d, name) : NULL;

	return pe ? pe->pool : NULL;
}

/* "live": the snapshot rtgtctl top, stats --watch and paths subtract */
static int live_cmd(struct daemon *d, struct json_object *reply)
{
	struct raid_pool **pools = calloc(d->n_pools + 1, sizeof(*pools));
	struct live_lu *lus = calloc(d->n_lus + 1, sizeof(*lus));
	int rc = -ENOMEM;

	if (pools && lus) {
		for (unsigned i = 0; i < d->n_pools; i++)
			pools[i] = d->pools[i]->pool;
		for (unsigned i = 0; i < d->n_lus; i++)
			lus[i] = (struct live_lu){ d->lus[i]->pool, d->lus[i]->volume, d->lus[i]->lu };
		rc = daemon_live_json(d->conf, d->server, pools, d->n_pools, lus, d->n_lus, reply);
	}
	free(pools);
	free(lus);
	return rc;
}

static int ctl_handle(void *arg, const char *cmd, struct json_object *args,
		      struct json_object *reply, char *err, size_t errlen)
{
	struct daemon *d = arg;
	const char *a0 = NULL, *a1 = NULL;
	struct raid_pool *p;
	int rc;

	if (args && json_object_is_type(args, json_type_array)) {
		if (json_object_array_length(args) > 0)
			a0 = json_object_get_string(json_object_array_get_idx(args, 0));
		if (json_object_array_length(args) > 1)
			a1 = json_object_get_string(json_object_array_get_idx(args, 1));
	}
	if (!strcmp(cmd, "status") || !strcmp(cmd, "sessions"))
		return status_json(d, reply, false);
	if (!strcmp(cmd, "stats"))
		return status_json(d, reply, true);
	if (!strcmp(cmd, "live"))
		return live_cmd(d, reply);
	if (!strcmp(cmd, "events"))
		return events_cmd(d, a0, reply, err, errlen);
	if (!strcmp(cmd, "reload"))
		return reload(d, reply, err, errlen);
	if (!strcmp(cmd, "fail") || !strcmp(cmd, "add-spare") || !strcmp(cmd, "scrub") ||
	    !strcmp(cmd, "remove")) {
		p = pool_by_name(d, a0);
		if (!p) {
			snprintf(err, errlen, "no pool named '%s'", a0 ? a0 : "");
			return -ENOENT;
		}
		if (!strcmp(cmd, "remove")) {
			if (!a1) {
				snprintf(err, errlen, "usage: remove POOL MEMBER");
				return -EINVAL;
			}
			LOG_INFO(MOD, "ctl: removing member %s from pool %s", a1, a0);
			rc = raid_pool_remove(p, a1);
			if (rc == -EBUSY)
				snprintf(err, errlen, "remove %s %s: member is active: fail it first", a0, a1);
			else if (rc == -ENOENT)
				snprintf(err, errlen, "remove %s %s: no such member (give its position in status or its path)", a0, a1);
			else if (rc == -EALREADY)
				snprintf(err, errlen, "remove %s %s: slot already empty", a0, a1);
			else if (rc == -EOPNOTSUPP)
				snprintf(err, errlen, "remove %s: not for rbd pools (Ceph manages its own devices)", a0);
			else if (rc)
				snprintf(err, errlen, "remove %s %s: %s", a0, a1, strerror(-rc));
			health_sync(d);
			return rc;
		}
		if (!strcmp(cmd, "fail")) {
			if (!a1) {
				snprintf(err, errlen, "usage: fail POOL MEMBER");
				return -EINVAL;
			}
			LOG_INFO(MOD, "ctl: marking member %s of pool %s faulty", a1, a0);
			rc = raid_pool_fail(p, a1);
		} else if (!strcmp(cmd, "add-spare")) {
			if (!a1) {
				snprintf(err, errlen, "usage: add-spare POOL PATH");
				return -EINVAL;
			}
			LOG_INFO(MOD, "ctl: adding spare %s to pool %s", a1, a0);
			rc = raid_pool_add_spare(p, a1);
			health_sync(d);
		} else {
			LOG_INFO(MOD, "ctl: scrub of pool %s%s", a0,
				 a1 && !strcmp(a1, "--repair") ? " with repair" : "");
			rc = raid_pool_scrub(p, a1 && !strcmp(a1, "--repair"));
		}
		if (rc)
			snprintf(err, errlen, "%s %s: %s", cmd, a0, strerror(-rc));
		return rc;
	}
	snprintf(err, errlen, "unknown command '%s'", cmd);
	return -EINVAL;
}

/* ---- signals and shutdown ---- */

static void stop_all(void *arg)
{
	struct daemon *d = arg;

	for (unsigned i = 0; i < d->n_workers; i++)
		ev_loop_stop(d->workers[i].loop);
}

static void on_signal(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	struct daemon *d = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		struct json_object *reply;
		char err[2048];

		if (d->stopping) {
			LOG_WARN(MOD, "SIGHUP while stopping: no reload");
			return;
		}
		LOG_INFO(MOD, "SIGHUP: reloading the configuration");
		/* the outcome is logged by reload(); nobody reads the reply */
		reply = json_object_new_object();
		if (reply)
			reload(d, reply, err, sizeof(err));
		json_object_put(reply);
		return;
	}
	if (d->stopping) {
		LOG_WARN(MOD, "signal %u again: still draining in-flight commands", si.ssi_signo);
		return;
	}
	d->stopping = 1;
	LOG_INFO(MOD, "signal %u: stopping: draining in-flight commands", si.ssi_signo);
	iscsi_notify_stopping();
	if (d->ctl) {
		iscsi_ctl_stop(d->ctl);
		d->ctl = NULL;
	}
	metrics_end(d);
	if (d->slow_timer) {
		ev_timer_cancel(loop, d->slow_timer);
		d->slow_timer = NULL;
	}
	iscsi_server_shutdown(d->server, stop_all, d);
}

static void teardown(struct daemon *d)
{
	metrics_end(d);
	health_destroy(d->health);
	d->health = NULL;
	if (d->ctl)
		iscsi_ctl_stop(d->ctl);
	if (d->server)
		iscsi_server_destroy(d->server);
	for (unsigned i = 0; i < d->n_tgts; i++) {
		scsi_target_destroy(d->tgts[i]->st);
		free(d->tgts[i]->iqn);
		free(d->tgts[i]);
	}
	for (unsigned i = 0; i < d->n_lus; i++)
		lu_ent_free(d->lus[i]);
	for (unsigned i = 0; i < d->n_pools; i++) {
		raid_pool_close(d->pools[i]->pool);
		free(d->pools[i]->name);
		free(d->pools[i]);
	}
	if (d->workers)
		for (unsigned i = 0; i < d->n_workers; i++) {
			if (d->workers[i].ioctx)
				raid_ioctx_destroy(d->workers[i].ioctx);
			if (d->workers[i].loop)
				ev_loop_destroy(d->workers[i].loop);
		}
	free(d->workers);
	free(d->tgts);
	free(d->lus);
	free(d->pools);
	free(d->cur);
	if (d->sigfd >= 0)
		close(d->sigfd);
	/* pools are closed: no raid event can come any more */
	raid_set_event_fn(NULL, NULL);
	iscsi_set_login_event_fn(NULL, NULL);
	iscsi_set_session_event_fn(NULL, NULL);
	events_destroy(d->events);
	free(d->slow);
	pthread_cond_destroy(&d->snap_cv);
	pthread_mutex_destroy(&d->snap_mu);
	conf_free(d->conf);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "start-degraded", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = "/etc/rtgt/rtgt.conf";
	struct daemon d = { .sigfd = -1, .snap_mu = PTHREAD_MUTEX_INITIALIZER,
			    .snap_cv = PTHREAD_COND_INITIALIZER };
	struct iscsi_worker *iw = NULL;
	struct iscsi_ctl_ops ops = { .arg = &d, .handle = ctl_handle };
	int check = 0, opt, rc, status = 1;
	/* pools to start degraded now: an override for this start only, so it
	 * cannot stay set and let a stale member lead a later assembly */
	const char *degraded[DEGRADED_MAX];
	unsigned n_degraded = 0;
	sigset_t mask;

	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'k':
			check = 1;
			break;
		case 'D':
			if (n_degraded == DEGRADED_MAX) {
				fprintf(stderr, "rtgtd: --start-degraded given more than %u times\n",
					DEGRADED_MAX);
				return 2;
			}
			degraded[n_degraded++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	d.path = path;
	rc = conf_load(path, &d.conf, stderr);
	if (rc == -EINVAL)
		return 2;
	if (rc) {
		fprintf(stderr, "rtgtd: %s: %s\n", path, strerror(-rc));
		return check ? 2 : 1;
	}
	for (unsigned k = 0; k < n_degraded; k++) {
		struct conf_pool *cp = NULL;

		for (unsigned i = 0; i < d.conf->n_pools; i++)
			if (!strcmp(d.conf->pools[i].name, degraded[k]))
				cp = &d.conf->pools[i];
		if (!cp || cp->level == CONF_RBD) {
			fprintf(stderr, "rtgtd: --start-degraded %s: %s\n", degraded[k],
				cp ? "an rbd pool has no members to start without"
				   : "no pool of that name in the configuration");
			conf_free(d.conf);
			return 2;
		}
		cp->start_degraded = true;
	}
	if (check) {
		conf_free(d.conf);
		return 0;
	}
	conf_log_set_level(d.conf->daemon.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* every thread inherits the mask; only the signalfd sees them */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);

	/* before the pools: assembly's own events (started degraded) count */
	rc = events_create(d.conf->daemon.event_exec, d.conf->daemon.event_exec_timeout_s * 1000u,
			   &d.events);
	if (rc) {
		LOG_ERR(MOD, "cannot start the event thread: %s", strerror(-rc));
		goto out;
	}
	raid_set_event_fn(events_raid_fn, d.events);
	iscsi_set_login_event_fn(events_login_fn, d.events);
	iscsi_set_session_event_fn(events_session_fn, d.events);
	if (assemble(&d))
		goto out;
	rc = create_workers(&d);
	if (rc) {
		LOG_ERR(MOD, "cannot create reactors: %s", strerror(-rc));
		goto out;
	}
	iw = calloc(d.n_workers, sizeof(*iw));
	if (!iw)
		goto out;
	for (unsigned i = 0; i < d.n_workers; i++) {
		iw[i].loop = d.workers[i].loop;
		iw[i].ioctx = d.workers[i].ioctx;
	}
	/* the control socket before the portals listen: whoever waits for
	 * the iSCSI port (a boot script, the tests) then finds rtgtctl
	 * answering too, and never a stale socket file of a killed daemon
	 * (connection refused). Requests are served only once worker 0's
	 * loop runs, after the server below exists. */
	rc = conf_mkdir_parents(d.conf->daemon.control, 0755);
	if (rc) {
		LOG_ERR(MOD, "control socket %s: cannot create its directory: %s",
			d.conf->daemon.control, strerror(-rc));
		goto out;
	}
	rc = iscsi_ctl_start(d.workers[0].loop, d.conf->daemon.control, &ops, &d.ctl);
	if (rc) {
		LOG_ERR(MOD, "control socket %s: %s", d.conf->daemon.control, strerror(-rc));
		goto out;
	}
	rc = iscsi_server_create(d.conf, d.cur, iw, d.n_workers, &d.server);
	if (rc) {
		LOG_ERR(MOD, "cannot create the iSCSI server: %s", strerror(-rc));
		goto out;
	}
	iscsi_server_set_release(d.server, conf_release, NULL);
	if (iscsi_server_start(d.server))
		goto out;
	if (d.conf->daemon.metrics) {
		rc = metrics_start(d.conf->daemon.metrics, metrics_snapshot, &d, &d.metrics);
		if (rc) {
			LOG_ERR(MOD, "metrics %s: %s", d.conf->daemon.metrics,
				rc == -EADDRINUSE ? "address in use" : strerror(-rc));
			goto out;
		}
	}
	rc = health_create(d.conf->daemon.smartctl, d.conf->daemon.health_interval_s, d.events,
			   on_health_failing, &d, &d.health);
	if (rc) {
		LOG_ERR(MOD, "cannot start the health thread: %s", strerror(-rc));
		goto out;
	}
	health_sync(&d);
	d.slow_timer = ev_timer_add(d.workers[0].loop, SLOW_WINDOW_S * 1000u, on_slow_timer, &d);
	d.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d.sigfd < 0 || ev_io_add(d.workers[0].loop, d.sigfd, EV_READ, on_signal, &d)) {
		LOG_ERR(MOD, "cannot watch signals: %s", strerror(errno));
		goto out;
	}
	for (unsigned i = 1; i < d.n_workers; i++) {
		if (pthread_create(&d.workers[i].thread, NULL, worker_main, &d.workers[i])) {
			LOG_ERR(MOD, "cannot start worker %u", i);
			for (unsigned j = 1; j < i; j++)
				ev_loop_stop(d.workers[j].loop);
			for (unsigned j = 1; j < i; j++)
				pthread_join(d.workers[j].thread, NULL);
			goto out;
		}
		d.workers[i].started = 1;
	}
	assert(daemon_check(&d));
	LOG_INFO(MOD, "serving %u target(s) on %u portal(s) with %u worker(s)",
		 d.conf->n_targets, d.conf->n_portals, d.n_workers);
	iscsi_notify_ready();
	worker_main(&d.workers[0]);
	for (unsigned i = 1; i < d.n_workers; i++)
		if (d.workers[i].started)
			pthread_join(d.workers[i].thread, NULL);
	status = 0;
	LOG_INFO(MOD, "stopped");
out:
	free(iw);
	teardown(&d);
	return status;
}
