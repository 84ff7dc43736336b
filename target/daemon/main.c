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
 *   SERVING  --SIGHUP / ctl "reload"-->        SERVING   (daemon_reload(): validate,
 *                                              prepare, commit; reload.c)
 *   SERVING  --SIGTERM/SIGINT-->               DRAINING  (iscsi_server_shutdown)
 *   DRAINING --every command answered-->       STOPPED   (reactors stopped,
 *                                              pools flushed and closed) -> exit 0
 *
 * The reload is reload.c's; what the control commands report (status,
 * stats, live, events, the metrics snapshot) is status.c's; the entries
 * (find, add, grow pools, LUs, targets) are entries.c's; all share the
 * daemon's entries through daemon_int.h.
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
 *
 * Layer: entry (target/daemon/README.md "Layers"), the top: the entry
 * point, called by nothing in the folder. May call: every other file of
 * target/daemon, conf/, net/, raid/, target/scsi/, target/iscsi/, json-c,
 * libc.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "raid/raid.h"
#include "target/daemon/ctl.h"
#include "target/daemon/daemon_int.h"
#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "target/daemon/metrics.h"
#include "target/daemon/notify.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"

#define DEGRADED_MAX 64u          /* --start-degraded options in one command line */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtgtd -c FILE [--check] [--start-degraded POOL]...\n"
		"       rtgtd --list-keys\n"
		"  -c, --config FILE  configuration file (default /etc/rtgt/rtgt.conf)\n"
		"      --check        validate the configuration and exit (0 valid, 2 not)\n"
		"      --list-keys    print every configuration key, one a line: section, key,\n"
		"                     type, range, default, reload, description (tab-separated)\n"
		"      --start-degraded POOL\n"
		"                     this start only: assemble POOL without members that are\n"
		"                     missing or unusable, if its redundancy allows\n"
		"  -h, --help         this text\n"
		"Runs in the foreground, logs to stderr, stops on SIGTERM or SIGINT,\n"
		"re-reads FILE on SIGHUP (live reload).\n");
}

/* Start-up: every pool (one line per failure), every volume, every target. */
static int assemble(struct daemon *d)
{
	const struct conf *c = d->conf;
	char err[512];
	int rc, bad = 0;

	for (unsigned i = 0; i < c->n_pools; i++)
		if (daemon_pool_add(d, &c->pools[i]))
			bad = 1;
	if (bad)
		return -EIO;
	for (unsigned t = 0; t < c->n_targets; t++)
		for (unsigned l = 0; l < c->targets[t].n_luns; l++) {
			const struct conf_lun *cl = &c->targets[t].luns[l];

			if (daemon_lu_find(d, cl->pool, cl->volume))
				continue;
			rc = daemon_lu_add(d, c, cl, err, sizeof(err));
			if (rc) {
				LOG_ERR(MOD, "%s", err);
				return rc;
			}
		}
	d->cur = calloc(c->n_targets ? c->n_targets : 1, sizeof(*d->cur));
	if (!d->cur)
		return -ENOMEM;
	for (unsigned t = 0; t < c->n_targets; t++) {
		rc = daemon_tgt_sync(d, c, &c->targets[t], &d->cur[t]);
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

static void conf_release(const struct conf *c, void *arg)
{
	(void)arg;
	conf_free((struct conf *)c);
}

/* ---- alerts and monitoring: member health, slow members ---- */

static struct raid_pool *pool_by_name(struct daemon *d, const char *name);

struct failing_req {
	struct daemon *d;
	char pool[64], path[256];
};

/* workers[0]: health_fail = "spare" and a spare is there: the spare is
 * filled with a copy of the failing member while it still serves, then
 * takes its place (raid_pool_replace: the pool stays redundant). */
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
			int rc;

			LOG_WARN(MOD, "pool %s: member %s fails its health check: replacing it with a spare",
				 r->pool, r->path);
			rc = raid_pool_replace(p, r->path);
			if (rc)
				events_post(d->events, "health_no_replace", "warning", NULL,
					    "pool %s: member %s fails its health check but is not replaced: %s",
					    r->pool, r->path, strerror(-rc));
			else
				events_post(d->events, "health_replace", "warning", NULL,
					    "pool %s: member %s fails its health check: copying it to a spare, which takes its place",
					    r->pool, r->path);
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

static struct raid_pool *pool_by_name(struct daemon *d, const char *name)
{
	struct pool_ent *pe = name ? daemon_pool_find(d, name) : NULL;

	return pe ? pe->pool : NULL;
}

/* "live": the snapshot rtgtctl top, stats --watch and paths subtract */
/* ---- control socket ---- */

/* resize TARGET LUN SIZE: the LUN of the running configuration. */
static int ctl_resize(struct daemon *d, struct json_object *args, struct json_object *reply,
		      char *err, size_t errlen)
{
	const char *a[3] = { NULL, NULL, NULL };
	const struct conf_target *ct = NULL;
	const struct conf_lun *cl = NULL;
	struct conf_size size;
	struct lu_ent *e;
	uint64_t before;
	char *end;
	unsigned long long lun;
	int rc;

	for (size_t i = 0; args && json_object_is_type(args, json_type_array) && i < 3 &&
			   i < json_object_array_length(args); i++)
		a[i] = json_object_get_string(json_object_array_get_idx(args, i));
	if (!a[0] || !a[1] || !a[2]) {
		snprintf(err, errlen, "usage: resize TARGET LUN SIZE");
		return -EINVAL;
	}
	for (unsigned t = 0; t < d->conf->n_targets && !ct; t++)
		if (!strcmp(d->conf->targets[t].iqn, a[0]))
			ct = &d->conf->targets[t];
	if (!ct) {
		snprintf(err, errlen, "resize: no target named '%s'", a[0]);
		return -ENOENT;
	}
	errno = 0;
	lun = strtoull(a[1], &end, 10);
	for (unsigned l = 0; !errno && end != a[1] && !*end && l < ct->n_luns && !cl; l++)
		if (ct->luns[l].lun == lun)
			cl = &ct->luns[l];
	if (!cl) {
		snprintf(err, errlen, "resize: target %s has no LUN '%s'", a[0], a[1]);
		return -ENOENT;
	}
	if (conf_parse_size(a[2], true, &size) || size.bytes % 4096) {
		/* 4K: what the configuration file takes, so it can follow */
		snprintf(err, errlen, "resize: '%s' is not a size (bytes, a multiple of 4K, with K, M, G or T; or N%% of the pool)",
			 a[2]);
		return -EINVAL;
	}
	e = daemon_lu_find(d, cl->pool, cl->volume);
	if (!e) {
		snprintf(err, errlen, "resize: volume %s/%s is not open", cl->pool, cl->volume);
		return -ENOENT;
	}
	before = raid_vol_bytes(e->vol);
	LOG_INFO(MOD, "ctl: resize of %s LUN %llu (volume %s/%s) to %s", a[0], lun, cl->pool,
		 cl->volume, a[2]);
	rc = daemon_lu_grow(d, e, &size, err, errlen);
	if (rc)
		return rc;
	json_object_object_add(reply, "volume", json_object_new_string(raid_vol_name(e->vol)));
	json_object_object_add(reply, "bytes_before", json_object_new_int64((int64_t)before));
	json_object_object_add(reply, "bytes", json_object_new_int64((int64_t)raid_vol_bytes(e->vol)));
	return 0;
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
		return daemon_status_json(d, reply, false);
	if (!strcmp(cmd, "stats"))
		return daemon_status_json(d, reply, true);
	if (!strcmp(cmd, "live"))
		return daemon_live_cmd(d, reply);
	if (!strcmp(cmd, "events"))
		return daemon_events_cmd(d, a0, reply, err, errlen);
	if (!strcmp(cmd, "reload"))
		return daemon_reload(d, reply, err, errlen);
	if (!strcmp(cmd, "resize"))
		return ctl_resize(d, args, reply, err, errlen);
	if (!strcmp(cmd, "volume") || !strcmp(cmd, "snapshot") || !strcmp(cmd, "clone") ||
	    !strcmp(cmd, "rollback") || !strcmp(cmd, "check"))
		return daemon_vol_cmd(d, cmd, args, reply, err, errlen);
	if (!strcmp(cmd, "grow") || !strcmp(cmd, "convert")) {
		/* args: POOL PATH [PATH | LEVEL] */
		const char *a2 = NULL;

		if (args && json_object_is_type(args, json_type_array) &&
		    json_object_array_length(args) > 2)
			a2 = json_object_get_string(json_object_array_get_idx(args, 2));
		p = pool_by_name(d, a0);
		if (!p) {
			snprintf(err, errlen, "no pool named '%s'", a0 ? a0 : "");
			return -ENOENT;
		}
		if (!a1 || (!strcmp(cmd, "convert") && !a2)) {
			snprintf(err, errlen, "usage: %s", !strcmp(cmd, "grow") ? "grow POOL --add PATH [--add PATH]"
							: "convert POOL LEVEL --add PATH");
			return -EINVAL;
		}
		LOG_INFO(MOD, "ctl: %s pool %s%s%s with %s", cmd, a0, a2 ? " to " : "", a2 ? a2 : "", a1);
		{
			char why[256] = "";

			/* grow: POOL PATH [PATH] (a pair for raid10); convert:
			 * POOL PATH LEVEL */
			bool conv = !strcmp(cmd, "convert");
			const char *paths[2] = { a1, conv ? NULL : a2 };

			rc = raid_pool_grow(p, paths, paths[1] ? 2 : 1, conv ? a2 : NULL, why, sizeof(why));
			if (rc)
				snprintf(err, errlen, "%s %s: %s", cmd, a0, why[0] ? why : strerror(-rc));
		}
		daemon_health_sync(d);
		return rc;
	}
	if (!strcmp(cmd, "fail") || !strcmp(cmd, "add-spare") || !strcmp(cmd, "scrub") ||
	    !strcmp(cmd, "remove") || !strcmp(cmd, "replace")) {
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
			daemon_health_sync(d);
			return rc;
		}
		if (!strcmp(cmd, "replace")) {
			if (!a1) {
				snprintf(err, errlen, "usage: replace POOL MEMBER");
				return -EINVAL;
			}
			LOG_INFO(MOD, "ctl: replacing member %s of pool %s with a spare", a1, a0);
			rc = raid_pool_replace(p, a1);
			if (rc == -ENOSPC)
				snprintf(err, errlen, "replace %s %s: no spare (add-spare first)", a0, a1);
			else if (rc == -EBUSY)
				snprintf(err, errlen, "replace %s %s: the pool is not optimal, or a rebuild, replacement or reshape runs", a0, a1);
			else if (rc == -EINVAL)
				snprintf(err, errlen, "replace %s %s: not an active member", a0, a1);
			else if (rc == -ENOENT)
				snprintf(err, errlen, "replace %s %s: no such member (give its position in status or its path)", a0, a1);
			else if (rc == -EOPNOTSUPP)
				snprintf(err, errlen, "replace %s: the pool has no redundancy or no members of its own", a0);
			else if (rc)
				snprintf(err, errlen, "replace %s %s: %s", a0, a1, strerror(-rc));
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
			daemon_health_sync(d);
		} else {
			LOG_INFO(MOD, "ctl: scrub of pool %s%s", a0,
				 a1 && !strcmp(a1, "--repair") ? " with repair" : "");
			rc = raid_pool_scrub(p, a1 && !strcmp(a1, "--repair"));
		}
		if (rc == -EBUSY && !strcmp(cmd, "scrub"))
			snprintf(err, errlen, "scrub %s: the pool must be optimal, not rebuilding or reshaping", a0);
		else if (rc)
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
		/* the outcome is logged by daemon_reload(); nobody reads the reply */
		reply = json_object_new_object();
		if (reply)
			daemon_reload(d, reply, err, sizeof(err));
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
	daemon_metrics_end(d);
	if (d->slow_timer) {
		ev_timer_cancel(loop, d->slow_timer);
		d->slow_timer = NULL;
	}
	iscsi_server_shutdown(d->server, stop_all, d);
}

static void teardown(struct daemon *d)
{
	daemon_metrics_end(d);
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
		daemon_lu_ent_free(d->lus[i]);
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
		{ "list-keys", no_argument, NULL, 'K' },
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
		case 'K':
			/* the key table, for scripts/conf-keys.py: no configuration read */
			conf_keys_print(stdout);
			return fflush(stdout) ? 1 : 0;
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
		const struct conf_daemon *cd = &d.conf->daemon;
		const struct metrics_limits lim = {
			.max_connections = cd->metrics_max_connections,
			.max_per_address = cd->metrics_max_per_address,
			.max_request = cd->metrics_max_request,
			.idle_timeout_s = cd->metrics_idle_timeout_s,
		};
		const struct metrics_ops mops = {
			.snapshot = daemon_metrics_snapshot,
			.health = daemon_metrics_health,
			.arg = &d,
		};

		rc = metrics_start(cd->metrics, &lim, &mops, &d.metrics);
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
	daemon_health_sync(&d);
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
	RTGT_CHECK(daemon_check(&d));
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
