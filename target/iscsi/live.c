/*
 * target/iscsi/live.c - the iSCSI half of the control socket's "live"
 * snapshot (rtgtctl top, stats --watch, paths).
 *
 * One call copies, under srv->lock, every normal session's identity (target,
 * initiator, ISID, TSIH), the portal it came in on, the local and peer
 * address of its connection, the negotiated parameters, its cumulative
 * counters with the latency histogram and its sum, and the kernel's
 * TCP_INFO of the socket. Nothing here keeps state between calls: rtgtctl
 * takes two snapshots and works out rates, shares and per-interval
 * percentiles from their differences.
 *
 * The socket is queried only while the session's sock_fd is set: the
 * connection clears it under the same lock before it closes the fd, so the
 * query never reaches a closed or reused descriptor.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "target/iscsi/iscsi_int.h"

struct json_object *iscsi_lat_hist_json(const struct conf_hist *h)
{
	struct json_object *a = json_object_new_array();

	for (unsigned b = 0; a && b < conf_hist_buckets(h); b++) {
		uint64_t n = conf_hist_bucket_count(h, b);
		struct json_object *pair;

		if (!n)
			continue;
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_int64((int64_t)conf_hist_bucket_high(h, b)));
		json_object_array_add(pair, json_object_new_int64((int64_t)n));
		json_object_array_add(a, pair);
	}
	return a;
}

struct json_object *iscsi_addr_json(const struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN], out[INET6_ADDRSTRLEN + 16];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(out, sizeof(out), "%s:%u", host, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(out, sizeof(out), "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		snprintf(out, sizeof(out), "?");
	}
	return json_object_new_string(out);
}

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

/* TCP_INFO of @fd; NULL when the kernel gave none. */
static struct json_object *tcp_json(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	struct json_object *o;

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	add_u64(o, "snd_mss", ti.tcpi_snd_mss);
	add_u64(o, "rcv_mss", ti.tcpi_rcv_mss);
	add_u64(o, "advmss", ti.tcpi_advmss);
	add_u64(o, "pmtu", ti.tcpi_pmtu);
	add_u64(o, "rtt_us", ti.tcpi_rtt);
	add_u64(o, "rttvar_us", ti.tcpi_rttvar);
	add_u64(o, "snd_cwnd", ti.tcpi_snd_cwnd);
	add_u64(o, "total_retrans", ti.tcpi_total_retrans);
	/* segment counts: kernels since 4.2 (the reply says how much it filled) */
	if (len >= offsetof(struct tcp_info, tcpi_segs_in) + sizeof(ti.tcpi_segs_in)) {
		add_u64(o, "segs_out", ti.tcpi_segs_out);
		add_u64(o, "segs_in", ti.tcpi_segs_in);
	}
	return o;
}

static struct json_object *session_json(struct iscsi_session *o)
{
	const struct conf *c = o->cfg->c;
	const struct conf_portal *cp = &c->portals[o->portal];
	struct json_object *so = json_object_new_object(), *tcp;
	char isid[16];

	if (!so)
		return NULL;
	snprintf(isid, sizeof(isid), "%02x%02x%02x%02x%02x%02x", o->isid[0], o->isid[1],
		 o->isid[2], o->isid[3], o->isid[4], o->isid[5]);
	json_object_object_add(so, "target", json_object_new_string(c->targets[o->target].iqn));
	json_object_object_add(so, "initiator", json_object_new_string(o->initiator));
	json_object_object_add(so, "isid", json_object_new_string(isid));
	json_object_object_add(so, "tsih", json_object_new_int(o->tsih));
	json_object_object_add(so, "portal_name", json_object_new_string(cp->name));
	json_object_object_add(so, "portal", json_object_new_string(cp->listen));
	json_object_object_add(so, "local", iscsi_addr_json(&o->local));
	json_object_object_add(so, "peer", iscsi_addr_json(&o->peer));
	json_object_object_add(so, "params", iscsi_params_json(&o->params));
	add_u64(so, "read_ops", atomic_load(&o->stats.read_ops));
	add_u64(so, "write_ops", atomic_load(&o->stats.write_ops));
	add_u64(so, "other_ops", atomic_load(&o->stats.other_ops));
	add_u64(so, "read_bytes", atomic_load(&o->stats.read_bytes));
	add_u64(so, "write_bytes", atomic_load(&o->stats.write_bytes));
	add_u64(so, "latency_count", atomic_load(&o->stats.lat.count));
	add_u64(so, "latency_sum_us", conf_hist_sum_ns(&o->stats.lat) / 1000u);
	json_object_object_add(so, "latency_hist", iscsi_lat_hist_json(&o->stats.lat));
	tcp = tcp_json(o->sock_fd);
	json_object_object_add(so, "tcp", tcp);   /* null once the socket is closed */
	return so;
}

int iscsi_server_live_json(struct iscsi_server *s, struct json_object *reply)
{
	struct json_object *sessions = json_object_new_array();
	struct json_object *portals = json_object_new_array();
	struct json_object *targets = json_object_new_array();
	const struct conf *c;
	int ret = 0;

	if (!sessions || !portals || !targets) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	c = s->cfg->c;
	for (unsigned i = 0; i < c->n_portals; i++) {
		struct json_object *p = json_object_new_object();

		json_object_object_add(p, "name", json_object_new_string(c->portals[i].name));
		json_object_object_add(p, "listen", json_object_new_string(c->portals[i].listen));
		json_object_array_add(portals, p);
	}
	for (unsigned i = 0; i < c->n_targets; i++) {
		struct json_object *t = json_object_new_object(), *tp = json_object_new_array();

		for (unsigned p = 0; p < c->targets[i].n_portals; p++)
			json_object_array_add(tp, json_object_new_string(
				c->portals[c->targets[i].portals[p]].name));
		json_object_object_add(t, "iqn", json_object_new_string(c->targets[i].iqn));
		json_object_object_add(t, "portals", tp);
		json_object_array_add(targets, t);
	}
	for (struct iscsi_session *o = s->sessions; o; o = o->next) {
		struct json_object *so;

		if (o->target < 0 || o->reinstated || o->ended || !o->initiator)
			continue;
		so = session_json(o);
		if (!so) {
			ret = -ENOMEM;
			break;
		}
		json_object_array_add(sessions, so);
	}
	pthread_mutex_unlock(&s->lock);
out:
	json_object_object_add(reply, "portals", portals);
	json_object_object_add(reply, "targets", targets);
	json_object_object_add(reply, "sessions", sessions);
	return ret;
}
