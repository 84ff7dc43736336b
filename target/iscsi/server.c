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
 *
 * Accepting at max_connections (server_accept): the oldest conn still in
 * the login phase (srv->login_head) is evicted: flagged, counted in
 * n_evicting, closed on its own thread by evict_cb -> iscsi_conn_evict; the
 * newcomer takes its place. With no such conn the newcomer is accepted
 * over the limit (its login is refused with "too many connections"), up to
 * OVER_LIMIT_SLACK more; beyond that it is closed at once.
 *
 * Invariant (server_check): n_conns counts accepted, not yet freed conns;
 * n_evicting <= n_conns; n_sessions equals the registry length; the login
 * list only holds listed conns; a listener fd is >= 0 only while RUNNING.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
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
	if (n != s->n_sessions || s->n_evicting > s->n_conns)
		return false;
	for (const struct iscsi_conn *c = s->login_head; c; c = c->lnext)
		if (!c->login_listed || c->evicted || (c->lnext && c->lnext->lprev != c))
			return false;
	return true;
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
	s->c = c;
	s->n_workers = n_workers;
	s->w = calloc(n_workers, sizeof(*s->w));
	s->n_ls = c->n_portals;
	s->ls = calloc(c->n_portals ? c->n_portals : 1, sizeof(*s->ls));
	s->targets = calloc(c->n_targets ? c->n_targets : 1, sizeof(*s->targets));
	s->stats = calloc(c->n_targets ? c->n_targets : 1, sizeof(*s->stats));
	if (!s->w || !s->ls || !s->targets || !s->stats)
		goto err_free;
	for (unsigned i = 0; i < c->n_targets; i++)
		s->targets[i] = targets[i];
	for (unsigned i = 0; i < n_workers; i++) {
		s->w[i].srv = s;
		s->w[i].idx = i;
		s->w[i].loop = workers[i].loop;
		s->w[i].ioctx = workers[i].ioctx;
	}
	for (unsigned i = 0; i < s->n_ls; i++) {
		s->ls[i].srv = s;
		s->ls[i].cp = &c->portals[i];
		s->ls[i].idx = i;
		s->ls[i].fd = -1;
	}
	s->lim.max_recv_dsl = ISCSI_TGT_MAX_RECV_DSL;
	s->lim.max_burst = ISCSI_TGT_MAX_BURST;
	s->lim.first_burst = ISCSI_TGT_FIRST_BURST;
	s->lim.max_outstanding_r2t = ISCSI_TGT_MAX_R2T;
	s->lim.allow_digests = true;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		goto err_free;
	*out = s;
	return 0;

err_free:
	free(s->w);
	free(s->ls);
	free(s->targets);
	free(s->stats);
	free(s);
	return -ENOMEM;
}

unsigned iscsi_server_live_conns(const struct iscsi_server *s)
{
	return s->n_conns - s->n_evicting;
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
		unsigned max = s->c->daemon.max_connections;
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

int iscsi_server_start(struct iscsi_server *s)
{
	int ret = 0;

	for (unsigned i = 0; i < s->n_ls; i++) {
		struct iscsi_listener *l = &s->ls[i];
		struct sockaddr_storage ss;
		socklen_t len;
		int fd, r;

		r = sock_parse_addr(l->cp->listen, &ss, &len);
		if (r < 0) {
			LOG_ERR(MOD, "portal %s %s: %s", l->cp->name, l->cp->listen, strerror(-r));
			ret = ret ? ret : r;
			continue;
		}
		fd = sock_listen(&ss, len, LISTEN_BACKLOG);
		if (fd < 0) {
			LOG_ERR(MOD, "portal %s %s: %s", l->cp->name, l->cp->listen, strerror(-fd));
			ret = ret ? ret : fd;
			continue;
		}
		r = ev_io_add(s->w[0].loop, fd, EV_READ, server_accept, l);
		if (r < 0) {
			LOG_ERR(MOD, "portal %s %s: %s", l->cp->name, l->cp->listen, strerror(-r));
			close(fd);
			ret = ret ? ret : r;
			continue;
		}
		l->fd = fd;
		LOG_INFO(MOD, "portal %s listening on %s (tpgt %u)", l->cp->name, l->cp->listen,
			 l->cp->tpgt);
	}
	if (ret < 0) {
		for (unsigned i = 0; i < s->n_ls; i++) {
			if (s->ls[i].fd >= 0) {
				ev_io_del(s->w[0].loop, s->ls[i].fd);
				close(s->ls[i].fd);
				s->ls[i].fd = -1;
			}
		}
	}
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

	for (unsigned i = 0; i < s->n_ls; i++) {
		if (s->ls[i].fd >= 0) {
			ev_io_del(s->w[0].loop, s->ls[i].fd);
			close(s->ls[i].fd);
			s->ls[i].fd = -1;
		}
	}
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
	for (unsigned i = 0; i < s->n_ls; i++)
		if (s->ls[i].fd >= 0)
			close(s->ls[i].fd);
	if (s->n_conns || s->sessions)
		LOG_WARN(MOD, "server destroyed with %u connections left", s->n_conns);
	pthread_mutex_destroy(&s->lock);
	free(s->w);
	free(s->ls);
	free(s->targets);
	free(s->stats);
	free(s);
}

struct iscsi_tgt_stats *iscsi_server_stats(struct iscsi_server *s, int target)
{
	if (target < 0 || (unsigned)target >= s->c->n_targets)
		return NULL;
	return &s->stats[target];
}

static struct json_object *params_json(const struct iscsi_params *p)
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

	pthread_mutex_lock(&s->lock);
	if (!server_check(s))
		LOG_ERR(MOD, "session registry invariant violated");
	for (unsigned i = 0; i < s->c->n_targets && ret == 0; i++) {
		struct json_object *t = json_object_new_object();
		struct json_object *list = json_object_new_array();
		struct json_object *stats = json_object_new_object();
		struct iscsi_tgt_stats *st = &s->stats[i];
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

			if (o->target != (int)i || o->reinstated)
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
					       json_object_new_string(s->c->portals[o->portal].listen));
			json_object_object_add(so, "tsih", json_object_new_int(o->tsih));
			json_object_object_add(so, "params", params_json(&o->params));
			json_object_array_add(list, so);
			n++;
		}
		json_object_object_add(t, "iqn", json_object_new_string(s->c->targets[i].iqn));
		json_object_object_add(t, "sessions", json_object_new_int(n));
		json_object_object_add(t, "session_list", list);
		json_object_object_add(stats, "read_ops", json_object_new_int64((int64_t)st->read_ops));
		json_object_object_add(stats, "write_ops", json_object_new_int64((int64_t)st->write_ops));
		json_object_object_add(stats, "other_ops", json_object_new_int64((int64_t)st->other_ops));
		json_object_object_add(stats, "read_bytes", json_object_new_int64((int64_t)st->read_bytes));
		json_object_object_add(stats, "write_bytes",
				       json_object_new_int64((int64_t)st->write_bytes));
		json_object_object_add(stats, "logins", json_object_new_int64((int64_t)st->login_ok));
		json_object_object_add(stats, "login_failures",
				       json_object_new_int64((int64_t)st->login_failed));
		json_object_object_add(t, "stats", stats);
		json_object_array_add(targets, t);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}
