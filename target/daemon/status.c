/*
 * target/daemon/status.c - what rtgtd reports: the control commands
 * "status"/"sessions", "stats", "live" and "events", and the snapshot the
 * metrics endpoint serves (taken on workers[0], where pools, LUs and the
 * configuration may change, and handed over under d->snap_mu), and its
 * /healthz probe (one queued call through every worker's reactor). Reads
 * the daemon's entries (daemon_int.h), changes nothing but the metrics
 * requests' state.
 *
 * Layer: helpers (target/daemon/README.md "Layers"), rtgtd only (D_SRCS),
 * below main.c and reload.c, beside entries.c. May call: events.c,
 * health.c, live.c, metrics.c, raid/, target/scsi/, target/iscsi/, net/
 * (ev_call), conf/, json-c, libc. Calls neither main.c nor reload.c.
 */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/daemon/daemon_int.h"
#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "target/daemon/live.h"
#include "target/daemon/metrics.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

void daemon_jadd_str(struct json_object *arr, const char *fmt, ...)
{
	char buf[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(arr, json_object_new_string(buf));
}

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
					daemon_jadd_str(ex, "%s/%u", c->targets[t].iqn,
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

/* The live snapshot plus each member's health and slow flag and the event
 * counters (metrics); workers[0]. */
static int snapshot_here(struct daemon *d, struct json_object *snap)
{
	struct json_object *pools, *ev = json_object_new_object();
	int rc = daemon_live_cmd(d, snap);

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
	json_object_object_add(snap, "invariant_failures",
			       json_object_new_int64((int64_t)conf_invariant_failures()));
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
	struct json_object *snap;    /* owned by the request; NULL once the waiting
	                              * thread took it */
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
int daemon_metrics_snapshot(void *arg, struct json_object *snap)
{
	struct daemon *d = arg;
	struct snap_req *r = calloc(1, sizeof(*r));
	struct json_object *taken = NULL;
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
		/* move the result over and take the request's object: json-c's
		 * reference counts are not atomic, so every get and put of the
		 * values shared by the two objects happens on this thread,
		 * never on workers[0] when its put of the request comes last */
		json_object_object_foreach(r->snap, key, val)
			json_object_object_add(snap, key, json_object_get(val));
		taken = r->snap;
		r->snap = NULL;
	}
	pthread_mutex_unlock(&d->snap_mu);
	json_object_put(taken);
	snap_req_put(d, r);
	return rc;
}

/* /healthz: one ev_call round trip through every reactor, the same path a
 * scrape's snapshot and every control request take; a reactor that does
 * not run its queued call within DAEMON_HEALTHZ_MS is stalled (a blocking
 * syscall, a loop that never returns) or gone. */
#define DAEMON_HEALTHZ_MS 1000

struct health_probe;

struct probe_call {
	struct health_probe *p;
	bool done;                   /* under snap_mu */
};

struct health_probe {
	struct daemon *d;
	unsigned refs;               /* the waiting thread and each queued call; under snap_mu */
	unsigned n, answered;        /* under snap_mu */
	struct probe_call calls[];   /* one per worker */
};

static void probe_put(struct daemon *d, struct health_probe *p)
{
	bool last;

	pthread_mutex_lock(&d->snap_mu);
	last = --p->refs == 0;
	pthread_mutex_unlock(&d->snap_mu);
	if (last)
		free(p);
}

/* on the probed worker's reactor */
static void probe_call_fn(void *arg)
{
	struct probe_call *pc = arg;
	struct health_probe *p = pc->p;
	struct daemon *d = p->d;

	pthread_mutex_lock(&d->snap_mu);
	pc->done = true;
	p->answered++;
	pthread_cond_broadcast(&d->snap_cv);
	pthread_mutex_unlock(&d->snap_mu);
	probe_put(d, p);
}

int daemon_metrics_health(void *arg, char *why, size_t len)
{
	struct daemon *d = arg;
	struct health_probe *p = calloc(1, sizeof(*p) + d->n_workers * sizeof(p->calls[0]));
	struct timespec ts;
	unsigned queued = 0;
	int rc = 0;

	if (!p) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	p->d = d;
	p->n = d->n_workers;
	p->refs = 1;
	for (unsigned i = 0; i < p->n; i++) {
		p->calls[i].p = p;
		pthread_mutex_lock(&d->snap_mu);
		p->refs++;
		pthread_mutex_unlock(&d->snap_mu);
		if (ev_call(d->workers[i].loop, probe_call_fn, &p->calls[i])) {
			pthread_mutex_lock(&d->snap_mu);
			p->refs--;
			pthread_mutex_unlock(&d->snap_mu);
			break;
		}
		queued++;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)DAEMON_HEALTHZ_MS % 1000 * 1000000L;
	ts.tv_sec += DAEMON_HEALTHZ_MS / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&d->snap_mu);
	while (p->answered < queued && !d->snap_abort)
		if (pthread_cond_timedwait(&d->snap_cv, &d->snap_mu, &ts) == ETIMEDOUT)
			break;
	if (d->snap_abort) {
		snprintf(why, len, "stopping");
		rc = -ESHUTDOWN;
	} else if (queued < p->n) {
		snprintf(why, len, "cannot queue a call to worker %u", queued);
		rc = -ENOMEM;
	} else {
		for (unsigned i = 0; i < p->n && !rc; i++)
			if (!p->calls[i].done) {
				snprintf(why, len, "worker %u did not answer within %u ms", i,
					 DAEMON_HEALTHZ_MS);
				rc = -ETIMEDOUT;
			}
	}
	pthread_mutex_unlock(&d->snap_mu);
	probe_put(d, p);
	return rc;
}

/* Stop the metrics server (on workers[0] while stopping, or at teardown). */
void daemon_metrics_end(struct daemon *d)
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
int daemon_events_cmd(struct daemon *d, const char *since, struct json_object *reply, char *err,
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

int daemon_status_json(struct daemon *d, struct json_object *reply, bool stats)
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
		if (pi->replacing) {
			/* a member being copied to a spare while it still serves */
			json_object_object_add(p, "replace_progress",
					       json_object_new_double(pi->replace_progress));
			if (pi->replace_eta_s >= 0)
				json_object_object_add(p, "replace_eta_s",
						       json_object_new_double(pi->replace_eta_s));
		}
		if (pi->reshaping) {
			/* rtgtctl grow / convert: the data moving to the wider layout */
			struct json_object *r = json_object_new_object();

			json_object_object_add(r, "from_level", json_object_new_string(pi->reshape_from_level));
			json_object_object_add(r, "from_members",
					       json_object_new_int((int)pi->reshape_from_members));
			json_object_object_add(r, "done_bytes",
					       json_object_new_int64((int64_t)pi->reshape_done_bytes));
			json_object_object_add(r, "total_bytes",
					       json_object_new_int64((int64_t)pi->reshape_total_bytes));
			json_object_object_add(r, "progress", json_object_new_double(pi->reshape_progress));
			if (pi->reshape_eta_s >= 0)
				json_object_object_add(r, "eta_s", json_object_new_double(pi->reshape_eta_s));
			if (pi->reshape_error)
				json_object_object_add(r, "error",
						       json_object_new_string(strerror(-pi->reshape_error)));
			json_object_object_add(p, "reshape", r);
		}
		if (pi->bad_bytes)
			json_object_object_add(p, "bad_bytes", json_object_new_int64((int64_t)pi->bad_bytes));
		if (pi->unsynced_bytes)
			json_object_object_add(p, "unsynced_bytes",
					       json_object_new_int64((int64_t)pi->unsynced_bytes));
		json_object_object_add(p, "usable_bytes", json_object_new_int64((int64_t)pi->usable_bytes));
		if (pi->thin_space_bytes) {
			/* thin volumes of a RAID pool */
			json_object_object_add(p, "thin_used_bytes",
					       json_object_new_int64((int64_t)pi->thin_used_bytes));
			json_object_object_add(p, "thin_space_bytes",
					       json_object_new_int64((int64_t)pi->thin_space_bytes));
			json_object_object_add(p, "thin_threshold",
					       json_object_new_int((int)pi->thin_threshold));
		}
		json_object_object_add(p, "chunk", json_object_new_int64((int64_t)pi->chunk));
		if (!conf_pool_find(d->conf, pi->name))
			json_object_object_add(p, "configured", json_object_new_boolean(false));
		members = json_object_new_array();
		for (unsigned m = 0; m < pi->n_members; m++) {
			struct raid_member_info *mi = &pi->members[m];
			struct json_object *mo = json_object_new_object();

			json_object_object_add(mo, "path", json_object_new_string(mi->path));
			json_object_object_add(mo, "state", json_object_new_string(mi->state));
			if (mi->replaces[0])
				json_object_object_add(mo, "replaces", json_object_new_string(mi->replaces));
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
			if (pi->volumes[v].thin) {
				json_object_object_add(vo, "thin", json_object_new_boolean(true));
				json_object_object_add(vo, "allocated_bytes",
						       json_object_new_int64((int64_t)pi->volumes[v].allocated));
			}
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
	/* RTGT_CHECK failures so far (conf/util.h): 0 unless there is a bug */
	json_object_object_add(reply, "invariant_failures",
			       json_object_new_int64((int64_t)conf_invariant_failures()));
	return rc;
}

int daemon_live_cmd(struct daemon *d, struct json_object *reply)
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

