/*
 * target/iscsi/server.c - iscsi_server_* (iscsi.h): portals' listening
 * sockets on workers[0], accepting and spreading connections round robin
 * over the workers, shutdown, status JSON.
 *
 * Server state machine:
 *   CREATED  iscsi_server_create(): nothing bound
 *   RUNNING  iscsi_server_start(): every portal listening on workers[0]
 *   STOPPING iscsi_server_shutdown(): listeners closed, every worker closes
 *            its conns (iscsi_conn_shutdown_worker); each conn is freed once
 *            its commands left scsi; the last one (n_conns == 0) posts
 *            done() to workers[0]
 *   STOPPED  done() called; iscsi_server_destroy() frees
 *   RUNNING --iscsi_server_reload()--> RUNNING with a new generation
 *            (struct iscsi_cfg): listeners rebuilt for the new portals,
 *            reload_sweep on every worker closes the conns it no longer
 *            serves; old generations live until their last conn is freed
 *
 * Accepting at max_connections (server_accept): the oldest conn still in
 * the login phase (srv->login_head) is evicted: flagged, counted in
 * n_evicting, closed on its own thread by evict_cb -> iscsi_conn_evict; the
 * newcomer takes its place. With no such conn the newcomer is accepted
 * over the limit (its login is refused with "too many connections"), up to
 * OVER_LIMIT_SLACK more; beyond that it is closed at once.
 *
 * Invariant (server_check): n_conns counts accepted, not yet freed conns;
 * n_evicting + n_discovery <= n_conns (both are conns the max_connections
 * count leaves out); n_sessions equals the registry length; the login
 * list only holds listed conns; a listener fd is >= 0 only while RUNNING.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"
#define LISTEN_BACKLOG 256
/* Beyond max_connections we still accept (to answer the login with "too
 * many connections"), up to this many more; then we just close. */
#define OVER_LIMIT_SLACK 16

static bool server_check(struct iscsi_server *s)
{
	unsigned n = 0;

	for (struct iscsi_session *o = s->sessions; o; o = o->next)
		n++;
	if (n != s->n_sessions || s->n_evicting + s->n_discovery > s->n_conns)
		return false;
	for (const struct iscsi_conn *c = s->login_head; c; c = c->lnext)
		if (!c->login_listed || c->evicted || (c->lnext && c->lnext->lprev != c))
			return false;
	return true;
}

/* ---- configuration generations ---- */

/* The counters of @iqn, made on first use. Caller holds s->lock. */
static struct iscsi_tgt_stats *stats_for(struct iscsi_server *s, const char *iqn)
{
	struct iscsi_tgt_stats *st;

	for (st = s->all_stats; st; st = st->next)
		if (!strcasecmp(st->iqn, iqn))
			return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	conf_hist_init(&st->lat, SCSI_LAT_SUB_BITS, SCSI_LAT_MAX_EXP);
	st->iqn = strdup(iqn);
	if (!st->iqn) {
		free(st);
		return NULL;
	}
	st->next = s->all_stats;
	s->all_stats = st;
	return st;
}

static void cfg_free(struct iscsi_cfg *g)
{
	free(g->targets);
	free(g->stats);
	free(g);
}

/* A generation with one reference (the caller's). */
static int cfg_new(struct iscsi_server *s, const struct conf *c, struct scsi_target **targets,
		   struct iscsi_cfg **out)
{
	struct iscsi_cfg *g = calloc(1, sizeof(*g));
	size_t n = c->n_targets ? c->n_targets : 1;

	if (!g)
		return -ENOMEM;
	g->srv = s;
	g->c = c;
	atomic_init(&g->refs, 1);
	g->targets = calloc(n, sizeof(*g->targets));
	g->stats = calloc(n, sizeof(*g->stats));
	if (!g->targets || !g->stats)
		goto err_free;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < c->n_targets; i++) {
		g->targets[i] = targets[i];
		g->stats[i] = stats_for(s, c->targets[i].iqn);
		if (!g->stats[i]) {
			pthread_mutex_unlock(&s->lock);
			goto err_free;
		}
	}
	pthread_mutex_unlock(&s->lock);
	*out = g;
	return 0;

err_free:
	cfg_free(g);
	return -ENOMEM;
}

struct iscsi_cfg *iscsi_cfg_current(struct iscsi_server *s)
{
	struct iscsi_cfg *g;

	pthread_mutex_lock(&s->lock);
	g = s->cfg;
	atomic_fetch_add(&g->refs, 1);
	pthread_mutex_unlock(&s->lock);
	return g;
}

void iscsi_cfg_put(struct iscsi_cfg *g)
{
	struct iscsi_server *s;

	if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
		return;
	s = g->srv;
	if (s->release)
		s->release(g->c, s->release_arg);
	cfg_free(g);
}

struct iscsi_tgt_stats *iscsi_cfg_stats(const struct iscsi_cfg *g, int target)
{
	if (!g || target < 0 || (unsigned)target >= g->c->n_targets)
		return NULL;
	return g->stats[target];
}

void iscsi_server_set_release(struct iscsi_server *s,
			      void (*release)(const struct conf *c, void *arg), void *arg)
{
	s->release = release;
	s->release_arg = arg;
}

/* ---- create ---- */

static void listener_free(struct iscsi_server *s, struct iscsi_listener *l)
{
	if (!l)
		return;
	if (l->fd >= 0) {
		ev_io_del(s->w[0].loop, l->fd);
		close(l->fd);
	}
	free(l);
}

static struct iscsi_listener *listener_new(struct iscsi_server *s, const struct conf *c,
					   unsigned idx)
{
	struct iscsi_listener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->srv = s;
	l->cp = &c->portals[idx];
	l->idx = idx;
	l->fd = -1;
	return l;
}

int iscsi_server_create(const struct conf *c, struct scsi_target **targets,
			const struct iscsi_worker *workers, unsigned n_workers,
			struct iscsi_server **out)
{
	struct iscsi_server *s;

	if (!c || !workers || n_workers == 0 || (!targets && c->n_targets))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return -ENOMEM;
	}
	s->n_workers = n_workers;
	s->w = calloc(n_workers, sizeof(*s->w));
	s->n_ls = c->n_portals;
	s->ls = calloc(c->n_portals ? c->n_portals : 1, sizeof(*s->ls));
	if (!s->w || !s->ls || cfg_new(s, c, targets, &s->cfg) < 0)
		goto err_free;
	for (unsigned i = 0; i < n_workers; i++) {
		s->w[i].srv = s;
		s->w[i].idx = i;
		s->w[i].loop = workers[i].loop;
		s->w[i].ioctx = workers[i].ioctx;
	}
	for (unsigned i = 0; i < s->n_ls; i++) {
		s->ls[i] = listener_new(s, c, i);
		if (!s->ls[i])
			goto err_free;
	}
	s->lim.max_recv_dsl = ISCSI_TGT_MAX_RECV_DSL;
	s->lim.max_burst = ISCSI_TGT_MAX_BURST;
	s->lim.first_burst = ISCSI_TGT_FIRST_BURST;
	s->lim.max_outstanding_r2t = ISCSI_TGT_MAX_R2T;
	s->lim.allow_digests = true;
	/* responses gathered during a wake-up leave in one writev per conn */
	for (unsigned i = 0; i < n_workers; i++)
		if (ev_prepare_add(s->w[i].loop, iscsi_worker_prepare, &s->w[i]) < 0) {
			while (i-- > 0)
				ev_prepare_del(s->w[i].loop, iscsi_worker_prepare, &s->w[i]);
			goto err_free;
		}
	*out = s;
	return 0;

err_free:
	if (s->ls)
		for (unsigned i = 0; i < s->n_ls; i++)
			free(s->ls[i]);
	free(s->w);
	free(s->ls);
	if (s->cfg)
		cfg_free(s->cfg);
	while (s->all_stats) {
		struct iscsi_tgt_stats *st = s->all_stats;

		s->all_stats = st->next;
		free(st->iqn);
		free(st);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
	return -ENOMEM;
}

unsigned iscsi_server_live_conns(const struct iscsi_server *s)
{
	return s->n_conns - s->n_evicting - s->n_discovery;
}

struct evict_msg {
	struct iscsi_wstate *w;
	uint64_t id;
};

static void evict_cb(void *arg)
{
	struct evict_msg *m = arg;

	iscsi_conn_evict(m->w, m->id);
	free(m);
}

static void server_accept(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	struct iscsi_listener *l = arg;
	struct iscsi_server *s = l->srv;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int cfd = sock_accept(fd, &peer, &plen);
		bool over, refuse;
		unsigned max = s->cfg->c->daemon.max_connections;
		struct iscsi_wstate *victim_w = NULL;
		uint64_t victim_id = 0;

		if (cfd == -EAGAIN || cfd == -EWOULDBLOCK)
			return;
		if (cfd < 0) {
			if (cfd == -EINTR || cfd == -ECONNABORTED)
				continue;
			LOG_WARN(MOD, "portal %s: accept: %s", l->cp->name, strerror(-cfd));
			return;
		}
		pthread_mutex_lock(&s->lock);
		over = max && iscsi_server_live_conns(s) >= max;
		if (over && !s->stopping && s->login_head) {
			/* Full: the oldest conn still logging in makes room.
			 * It stays counted in n_conns until freed, but no
			 * longer against the limit. */
			struct iscsi_conn *v = s->login_head;

			iscsi_conn_login_unlist_locked(v);
			v->evicted = true;
			s->n_evicting++;
			victim_w = v->w;
			victim_id = v->id;
			over = false;
		}
		refuse = s->stopping || (max && iscsi_server_live_conns(s) >= max + OVER_LIMIT_SLACK);
		if (!refuse)
			s->n_conns++;
		pthread_mutex_unlock(&s->lock);
		if (victim_w) {
			struct evict_msg *m = malloc(sizeof(*m));

			/* Without memory the victim is not closed now; the
			 * login timeout still ends it. */
			if (m) {
				m->w = victim_w;
				m->id = victim_id;
				if (ev_call(victim_w->loop, evict_cb, m) < 0)
					free(m);
			}
		}
		if (refuse) {
			char who[64];

			sock_addr_str(&peer, who, sizeof(who), true);
			LOG_WARN(MOD, "portal %s: connection from %s refused (%s)", l->cp->name, who,
				 s->stopping ? "shutting down" : "too many connections");
			close(cfd);
			continue;
		}
		iscsi_conn_accepted(s, cfd, l->idx, &peer, over);
	}
}

/* Returns 0 or a negative errno after logging (and writing to @err when
 * not NULL) "portal NAME ADDR: reason". */
static int listener_bind(struct iscsi_listener *l, char *err, size_t errlen)
{
	struct iscsi_server *s = l->srv;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r;

	r = sock_parse_addr(l->cp->listen, &ss, &len);
	if (r < 0)
		goto fail;
	fd = sock_listen(&ss, len, LISTEN_BACKLOG);
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	r = ev_io_add(s->w[0].loop, fd, EV_READ, server_accept, l);
	if (r < 0) {
		close(fd);
		goto fail;
	}
	l->fd = fd;
	LOG_INFO(MOD, "portal %s listening on %s (tpgt %u)", l->cp->name, l->cp->listen,
		 l->cp->tpgt);
	return 0;

fail:
	LOG_ERR(MOD, "portal %s %s: %s", l->cp->name, l->cp->listen, strerror(-r));
	if (err && errlen)
		snprintf(err, errlen, "portal %s %s: %s", l->cp->name, l->cp->listen,
			 strerror(-r));
	return r;
}

static void listener_unbind(struct iscsi_listener *l)
{
	if (l->fd >= 0) {
		ev_io_del(l->srv->w[0].loop, l->fd);
		close(l->fd);
		l->fd = -1;
	}
}

int iscsi_server_start(struct iscsi_server *s)
{
	int ret = 0;

	for (unsigned i = 0; i < s->n_ls; i++) {
		int r = listener_bind(s->ls[i], NULL, 0);

		if (r < 0 && !ret)
			ret = r;
	}
	if (ret < 0)
		for (unsigned i = 0; i < s->n_ls; i++)
			listener_unbind(s->ls[i]);
	return ret;
}

static void server_done_cb(void *arg)
{
	struct iscsi_server *s = arg;
	void (*done)(void *);
	void *darg;

	pthread_mutex_lock(&s->lock);
	done = s->shutdown_done;
	darg = s->shutdown_arg;
	s->shutdown_done = NULL;
	pthread_mutex_unlock(&s->lock);
	if (done)
		done(darg);
}

void iscsi_server_conn_gone(struct iscsi_server *s, bool evicted)
{
	bool finish;

	pthread_mutex_lock(&s->lock);
	if (evicted && s->n_evicting)
		s->n_evicting--;
	if (s->n_conns)
		s->n_conns--;
	finish = s->stopping && s->n_conns == 0 && s->shutdown_done;
	pthread_mutex_unlock(&s->lock);
	if (finish && ev_call(s->w[0].loop, server_done_cb, s) < 0)
		LOG_ERR(MOD, "cannot signal the end of shutdown (ENOMEM)");
}

void iscsi_server_shutdown(struct iscsi_server *s, void (*done)(void *arg), void *arg)
{
	bool finish;

	for (unsigned i = 0; i < s->n_ls; i++)
		listener_unbind(s->ls[i]);
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	s->shutdown_done = done;
	s->shutdown_arg = arg;
	finish = s->n_conns == 0;
	pthread_mutex_unlock(&s->lock);
	LOG_INFO(MOD, "shutting down: closing every connection");
	for (unsigned i = 0; i < s->n_workers; i++)
		if (ev_call(s->w[i].loop, iscsi_conn_shutdown_worker, &s->w[i]) < 0)
			LOG_ERR(MOD, "cannot reach worker %u for shutdown (ENOMEM)", i);
	if (finish && ev_call(s->w[0].loop, server_done_cb, s) < 0)
		LOG_ERR(MOD, "cannot signal the end of shutdown (ENOMEM)");
}

void iscsi_server_destroy(struct iscsi_server *s)
{
	if (!s)
		return;
	/* the loops have stopped: close without touching epoll */
	for (unsigned i = 0; i < s->n_ls; i++) {
		if (s->ls[i]->fd >= 0)
			close(s->ls[i]->fd);
		free(s->ls[i]);
	}
	if (s->n_conns || s->sessions)
		LOG_WARN(MOD, "server destroyed with %u connections left", s->n_conns);
	/* the current generation's conf belongs to the caller */
	if (atomic_fetch_sub(&s->cfg->refs, 1) == 1)
		cfg_free(s->cfg);
	while (s->all_stats) {
		struct iscsi_tgt_stats *st = s->all_stats;

		s->all_stats = st->next;
		free(st->iqn);
		free(st);
	}
	for (unsigned i = 0; i < s->n_workers; i++) {
		ev_prepare_del(s->w[i].loop, iscsi_worker_prepare, &s->w[i]);
		iscsi_bufc_drop(&s->w[i]);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->w);
	free(s->ls);
	free(s);
}

/* ---- reload ---- */

struct sweep_msg {
	struct iscsi_wstate *w;
	struct iscsi_cfg *now;         /* reference held by the message */
};

static void reload_sweep(void *arg)
{
	struct sweep_msg *m = arg;
	struct iscsi_conn *c, *next;
	unsigned closed = 0;

	for (c = m->w->conns; c; c = next) {
		next = c->next;
		if (iscsi_conn_reload_check(c, m->now))
			closed++;
	}
	if (closed)
		LOG_INFO(MOD, "reload: worker %u closed %u connection(s)", m->w->idx, closed);
	iscsi_cfg_put(m->now);
	free(m);
}

int iscsi_portal_index(const struct conf *c, const struct conf_portal *p)
{
	for (unsigned i = 0; i < c->n_portals; i++) {
		const struct conf_portal *q = &c->portals[i];

		if (!strcmp(q->name, p->name) && !strcmp(q->listen, p->listen) && q->tpgt == p->tpgt)
			return (int)i;
	}
	return -1;
}

int iscsi_server_reload(struct iscsi_server *s, const struct conf *c,
			struct scsi_target **targets, char *err, size_t errlen)
{
	struct iscsi_listener **ls;
	struct iscsi_cfg *g, *old;
	int ret = 0;
	bool stopping;

	if (err && errlen)
		err[0] = '\0';
	pthread_mutex_lock(&s->lock);
	stopping = s->stopping;
	pthread_mutex_unlock(&s->lock);
	if (stopping)
		return -ESHUTDOWN;
	ls = calloc(c->n_portals ? c->n_portals : 1, sizeof(*ls));
	if (!ls || cfg_new(s, c, targets, &g) < 0) {
		free(ls);
		return -ENOMEM;
	}
	/* Listeners: keep the unchanged ones, close the rest first so that a
	 * new portal may take over an address an old one used. */
	for (unsigned i = 0; i < s->n_ls; i++) {
		struct iscsi_listener *l = s->ls[i];
		int j = iscsi_portal_index(c, l->cp);

		if (j >= 0 && !ls[j]) {
			ls[j] = l;
			continue;
		}
		LOG_INFO(MOD, "reload: portal %s %s closed", l->cp->name, l->cp->listen);
		listener_free(s, l);
	}
	for (unsigned i = 0; i < c->n_portals; i++) {
		if (ls[i]) {
			ls[i]->cp = &c->portals[i];
			ls[i]->idx = i;
			continue;
		}
		ls[i] = listener_new(s, c, i);
		if (!ls[i]) {
			ret = ret ? ret : -ENOMEM;
			continue;
		}
		int r = listener_bind(ls[i], ret ? NULL : err, errlen);

		if (r < 0 && !ret)
			ret = r;
	}
	/* server_accept runs on this thread: it sees either the old
	 * listeners and generation or the new ones, never a mix */
	free(s->ls);
	s->ls = ls;
	s->n_ls = c->n_portals;
	pthread_mutex_lock(&s->lock);
	old = s->cfg;
	s->cfg = g;
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->n_workers; i++) {
		struct sweep_msg *m = malloc(sizeof(*m));

		if (m) {
			m->w = &s->w[i];
			m->now = g;
			atomic_fetch_add(&g->refs, 1);
			if (ev_call(s->w[i].loop, reload_sweep, m) == 0)
				continue;
			atomic_fetch_sub(&g->refs, 1);
			free(m);
		}
		LOG_ERR(MOD, "reload: cannot reach worker %u (ENOMEM): its connections "
			     "keep the old configuration", i);
	}
	iscsi_cfg_put(old);
	return ret;
}

static struct json_object *counters_json(struct iscsi_tgt_stats *st, bool logins)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "read_ops", json_object_new_int64((int64_t)st->read_ops));
	json_object_object_add(o, "write_ops", json_object_new_int64((int64_t)st->write_ops));
	json_object_object_add(o, "other_ops", json_object_new_int64((int64_t)st->other_ops));
	json_object_object_add(o, "read_bytes", json_object_new_int64((int64_t)st->read_bytes));
	json_object_object_add(o, "write_bytes", json_object_new_int64((int64_t)st->write_bytes));
	if (logins) {
		json_object_object_add(o, "logins", json_object_new_int64((int64_t)st->login_ok));
		json_object_object_add(o, "login_failures",
				       json_object_new_int64((int64_t)st->login_failed));
	}
	json_object_object_add(o, "latency_count",
			       json_object_new_int64((int64_t)conf_hist_count(&st->lat)));
	json_object_object_add(o, "latency_p50_us",
			       json_object_new_int64((int64_t)conf_hist_percentile(&st->lat, 50)));
	json_object_object_add(o, "latency_p99_us",
			       json_object_new_int64((int64_t)conf_hist_percentile(&st->lat, 99)));
	return o;
}

struct json_object *iscsi_params_json(const struct iscsi_params *p)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "HeaderDigest",
			       json_object_new_string(p->header_digest ? "CRC32C" : "None"));
	json_object_object_add(o, "DataDigest",
			       json_object_new_string(p->data_digest ? "CRC32C" : "None"));
	json_object_object_add(o, "InitialR2T", json_object_new_boolean(p->initial_r2t));
	json_object_object_add(o, "ImmediateData", json_object_new_boolean(p->immediate_data));
	json_object_object_add(o, "MaxRecvDataSegmentLength",
			       json_object_new_int64(p->max_recv_dsl));
	json_object_object_add(o, "MaxXmitDataSegmentLength",
			       json_object_new_int64(p->max_xmit_dsl));
	json_object_object_add(o, "MaxBurstLength", json_object_new_int64(p->max_burst));
	json_object_object_add(o, "FirstBurstLength", json_object_new_int64(p->first_burst));
	json_object_object_add(o, "MaxOutstandingR2T",
			       json_object_new_int64(p->max_outstanding_r2t));
	json_object_object_add(o, "ErrorRecoveryLevel",
			       json_object_new_int64(p->error_recovery_level));
	return o;
}

int iscsi_server_status_json(struct iscsi_server *s, struct json_object *targets)
{
	int ret = 0;

	const struct iscsi_cfg *g;

	pthread_mutex_lock(&s->lock);
	g = s->cfg;
	RTGT_CHECK(server_check(s));
	for (unsigned i = 0; i < g->c->n_targets && ret == 0; i++) {
		struct json_object *t = json_object_new_object();
		struct json_object *list = json_object_new_array();
		struct json_object *stats = counters_json(g->stats[i], true);
		int n = 0;

		if (!t || !list || !stats) {
			json_object_put(t);
			json_object_put(list);
			json_object_put(stats);
			ret = -ENOMEM;
			break;
		}
		for (struct iscsi_session *o = s->sessions; o; o = o->next) {
			struct json_object *so;
			char isid[16];

			/* a session may be of an older generation: its
			 * scsi_target is what stays the same */
			if (o->target < 0 || o->st != g->targets[i] || o->reinstated)
				continue;
			so = json_object_new_object();
			if (!so) {
				ret = -ENOMEM;
				break;
			}
			snprintf(isid, sizeof(isid), "%02x%02x%02x%02x%02x%02x", o->isid[0],
				 o->isid[1], o->isid[2], o->isid[3], o->isid[4], o->isid[5]);
			json_object_object_add(so, "initiator", json_object_new_string(o->initiator));
			json_object_object_add(so, "isid", json_object_new_string(isid));
			json_object_object_add(so, "portal",
					       json_object_new_string(o->cfg->c->portals[o->portal].listen));
			json_object_object_add(so, "portal_name",
					       json_object_new_string(o->cfg->c->portals[o->portal].name));
			json_object_object_add(so, "tsih", json_object_new_int(o->tsih));
			json_object_object_add(so, "params", iscsi_params_json(&o->params));
			json_object_object_add(so, "stats", counters_json(&o->stats, false));
			json_object_array_add(list, so);
			n++;
		}
		json_object_object_add(t, "iqn", json_object_new_string(g->c->targets[i].iqn));
		json_object_object_add(t, "sessions", json_object_new_int(n));
		json_object_object_add(t, "session_list", list);
		json_object_object_add(t, "stats", stats);
		json_object_array_add(targets, t);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}
