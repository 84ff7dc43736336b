/*
 * target/iscsi/session.c - sessions: the registry (TSIH, reinstatement,
 * limits), the CmdSN window and ordered delivery of requests, NOP-Out and
 * Logout handling.
 *
 * Limits: normal sessions count against daemon.max_sessions, discovery
 * sessions only against daemon.max_discovery_sessions (they need no
 * credentials, so they must not fill the normal slots); a registered
 * discovery session's conn leaves max_connections (srv->n_discovery).
 *
 * Session state machine:
 *   NEW        iscsi_session_create(): filled by login.c, not visible
 *   LOGGED_IN  iscsi_session_register(): in srv->sessions with a TSIH
 *   REINSTATED iscsi_session_register() of a newer login with the same
 *              initiator name, ISID and target: flagged under srv->lock and
 *              its conn closed on its own reactor (iscsi_session_kill)
 *   freed      iscsi_session_free(), from the conn's final cleanup, after
 *              every command of the session left scsi
 *
 * CmdSN window (RFC 7143 4.2.2.1, serial arithmetic RFC 1982):
 *   ExpCmdSN: next CmdSN to run. MaxCmdSN: last CmdSN accepted; advertised
 *   as ExpCmdSN + depth - 1 - (commands still active), never decreasing.
 *   A non-immediate request with CmdSN == ExpCmdSN runs at once and
 *   advances ExpCmdSN; ExpCmdSN < CmdSN <= MaxCmdSN waits in `pending`
 *   (sorted) until the gap fills; anything else is dropped silently.
 *   Immediate requests run at once and do not touch the window.
 *
 * Invariants (iscsi_session_check): every pending CmdSN lies in
 * (ExpCmdSN, MaxCmdSN] and the list is strictly increasing; n_pending
 * counts it; MaxCmdSN >= ExpCmdSN - 1.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"

/* ---------------- window arithmetic ---------------- */

enum iscsi_cmdsn_verdict iscsi_cmdsn_classify(uint32_t exp, uint32_t max, uint32_t sn)
{
	if (sn == exp && iscsi_sn_le(sn, max))
		return ISCSI_CMDSN_NOW;
	if (iscsi_sn_gt(sn, exp) && iscsi_sn_le(sn, max))
		return ISCSI_CMDSN_QUEUE;
	return ISCSI_CMDSN_DROP;
}

uint32_t iscsi_cmdsn_max(uint32_t exp, uint32_t prev_max, unsigned depth, unsigned active)
{
	uint32_t cand;

	if (depth == 0)
		depth = 1;
	if (active >= depth)
		cand = exp - 1;
	else
		cand = exp + (depth - 1 - active);
	return iscsi_sn_gt(cand, prev_max) ? cand : prev_max;
}

bool iscsi_session_check(const struct iscsi_session *sess)
{
	unsigned n = 0;
	const struct iscsi_req *r;
	uint32_t prev = sess->exp_cmdsn;

	if (iscsi_sn_lt(sess->max_cmdsn, sess->exp_cmdsn - 1))
		return false;
	for (r = sess->pending; r; r = r->next) {
		if (!iscsi_sn_gt(r->cmdsn, prev) || iscsi_sn_gt(r->cmdsn, sess->max_cmdsn))
			return false;
		prev = r->cmdsn;
		n++;
	}
	return n == sess->n_pending;
}

void iscsi_session_update_window(struct iscsi_conn *c)
{
	struct iscsi_session *sess = c->sess;
	unsigned active = sess->n_pending;

	for (struct iscsi_task *t = c->tasks; t; t = t->next)
		if (t->counted)
			active++;
	sess->max_cmdsn = iscsi_cmdsn_max(sess->exp_cmdsn, sess->max_cmdsn, sess->depth, active);
}

/* ---------------- registry ---------------- */

int iscsi_session_create(struct iscsi_conn *c, struct iscsi_session **out)
{
	struct iscsi_session *sess = calloc(1, sizeof(*sess));

	if (!sess)
		return -ENOMEM;
	conf_hist_init(&sess->stats.lat, SCSI_LAT_SUB_BITS, SCSI_LAT_MAX_EXP);
	sess->srv = c->srv;
	sess->loop = c->w->loop;
	sess->conn = c;
	sess->sock_fd = c->fd;
	sess->local = c->local;
	sess->peer = c->peer;
	sess->portal = c->portal;
	sess->cfg = c->cfg;
	sess->target = -1;
	sess->depth = c->cfg->c->daemon.queue_depth ? c->cfg->c->daemon.queue_depth : 128;
	*out = sess;
	return 0;
}

static bool session_same_nexus(const struct iscsi_session *a, const struct iscsi_session *b)
{
	/* the scsi_target, not the index: the two may be of different
	 * configuration generations */
	return a->type == b->type && a->st == b->st &&
	       memcmp(a->isid, b->isid, sizeof(a->isid)) == 0 &&
	       strcmp(a->initiator, b->initiator) == 0;
}

int iscsi_session_register(struct iscsi_server *s, struct iscsi_session *sess,
			   uint16_t *old_tsih, struct ev_loop **old_loop)
{
	struct iscsi_session *o, *old = NULL;
	unsigned live = 0;
	int ret = 0;

	*old_tsih = 0;
	*old_loop = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		ret = -ESHUTDOWN;
		goto out_unlock;
	}
	/* Discovery and normal sessions are counted apart: discovery needs
	 * no credentials, so it must not be able to fill max_sessions. */
	for (o = s->sessions; o; o = o->next) {
		if (o->reinstated || o->ended || o->type != sess->type)
			continue;
		live++;
		if (!old && session_same_nexus(o, sess))
			old = o;
	}
	if (old)
		live--;
	if (live >= (sess->type == ISCSI_SESSION_DISCOVERY
			     ? s->cfg->c->daemon.max_discovery_sessions
			     : s->cfg->c->daemon.max_sessions)) {
		ret = -EUSERS;
		goto out_unlock;
	}
	if (old) {
		old->reinstated = true;
		*old_tsih = old->tsih;
		*old_loop = old->loop;
	}
	/* TSIH: 16 bits, never 0, unique among sessions not yet freed. */
	for (;;) {
		bool used = false;

		if (++s->next_tsih == 0)
			s->next_tsih = 1;
		for (o = s->sessions; o; o = o->next)
			if (o->tsih == s->next_tsih)
				used = true;
		if (!used)
			break;
	}
	sess->tsih = s->next_tsih;
	sess->next = s->sessions;
	s->sessions = sess;
	s->n_sessions++;
	if (sess->type == ISCSI_SESSION_DISCOVERY)
		s->n_discovery++;
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

struct kill_msg {
	struct iscsi_server *s;
	uint16_t tsih;
};

static void session_kill_cb(void *arg)
{
	struct kill_msg *m = arg;
	struct iscsi_session *o, *found = NULL;
	struct ev_loop *me = ev_loop_current();

	pthread_mutex_lock(&m->s->lock);
	for (o = m->s->sessions; o; o = o->next)
		if (o->tsih == m->tsih && o->reinstated && o->loop == me)
			found = o;
	pthread_mutex_unlock(&m->s->lock);
	/* Only this thread frees sessions of this loop, so `found` stays
	 * valid after the unlock. */
	if (found && found->conn)
		iscsi_conn_close(found->conn, "session reinstated by a new login");
	free(m);
}

void iscsi_session_kill(struct iscsi_server *s, struct ev_loop *loop, uint16_t tsih)
{
	struct kill_msg *m = malloc(sizeof(*m));

	if (!m) {
		LOG_ERR(MOD, "cannot close reinstated session tsih %u: out of memory", tsih);
		return;
	}
	m->s = s;
	m->tsih = tsih;
	if (ev_call(loop, session_kill_cb, m) < 0) {
		LOG_ERR(MOD, "cannot close reinstated session tsih %u: out of memory", tsih);
		free(m);
	}
}

static _Atomic(iscsi_session_event_fn) sess_ev_fn;
static void *_Atomic sess_ev_arg;

void iscsi_set_session_event_fn(iscsi_session_event_fn fn, void *arg)
{
	atomic_store(&sess_ev_fn, NULL);
	atomic_store(&sess_ev_arg, arg);
	atomic_store(&sess_ev_fn, fn);
}

void iscsi_session_event(struct iscsi_conn *c, const char *kind, const char *why)
{
	iscsi_session_event_fn fn = atomic_load(&sess_ev_fn);
	struct iscsi_session *sess = c->sess;
	bool quiet;

	if (!fn || !sess || !sess->tsih || sess->type != ISCSI_SESSION_NORMAL || c->draining)
		return;
	/* a shutdown, or the tail of an accepted logout, ends sessions on
	 * purpose: nothing for the operator to act on */
	pthread_mutex_lock(&c->srv->lock);
	quiet = c->srv->stopping || sess->ended;
	pthread_mutex_unlock(&c->srv->lock);
	if (quiet)
		return;
	fn(atomic_load(&sess_ev_arg), &(struct iscsi_session_event){
		.kind = kind,
		.initiator = sess->initiator ? sess->initiator : "?",
		.target = sess->target >= 0 && sess->cfg ? sess->cfg->c->targets[sess->target].iqn : "?",
		.portal = sess->cfg ? sess->cfg->c->portals[sess->portal].name : "?",
		.peer = c->peer_str, .reason = why, .tsih = sess->tsih });
}

void iscsi_session_free(struct iscsi_session *sess)
{
	struct iscsi_server *s = sess->srv;
	struct iscsi_session **pp;

	if (sess->tsih) {
		pthread_mutex_lock(&s->lock);
		for (pp = &s->sessions; *pp; pp = &(*pp)->next) {
			if (*pp == sess) {
				*pp = sess->next;
				s->n_sessions--;
				if (sess->type == ISCSI_SESSION_DISCOVERY && s->n_discovery)
					s->n_discovery--;
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);
		LOG_INFO(MOD, "logout: initiator %s isid %02x%02x%02x%02x%02x%02x tsih %u %s %s "
			      "portal %s: session ended",
			 sess->initiator ? sess->initiator : "?", sess->isid[0], sess->isid[1],
			 sess->isid[2], sess->isid[3], sess->isid[4], sess->isid[5], sess->tsih,
			 sess->target >= 0 ? "target" : "session",
			 sess->target >= 0 && sess->cfg ? sess->cfg->c->targets[sess->target].iqn
							 : "discovery",
			 sess->cfg ? sess->cfg->c->portals[sess->portal].name : "?");
	}
	while (sess->pending) {
		struct iscsi_req *r = sess->pending;

		sess->pending = r->next;
		iscsi_req_free(r);
	}
	if (sess->nexus)
		scsi_nexus_destroy(sess->nexus);
	free(sess->initiator);
	free(sess->alias);
	free(sess);
}

/* ---------------- requests in CmdSN order ---------------- */

void iscsi_req_uncharge(struct iscsi_req *req)
{
	struct iscsi_conn *c = req->held_by;

	if (!req->held)
		return;
	c->held_bytes -= req->held;
	atomic_fetch_sub(&c->srv->held_bytes, req->held);
	req->held = 0;
	req->held_by = NULL;
}

void iscsi_req_free(struct iscsi_req *req)
{
	if (!req)
		return;
	iscsi_req_uncharge(req);
	if (req->task)
		iscsi_task_abort(req->task, 0);
	free(req->data);
	free(req);
}

static void session_drain(struct iscsi_conn *c)
{
	struct iscsi_session *sess = c->sess;

	while (c->state != CONN_CLEANUP && sess->pending &&
	       sess->pending->cmdsn == sess->exp_cmdsn) {
		struct iscsi_req *r = sess->pending;

		sess->pending = r->next;
		sess->n_pending--;
		sess->exp_cmdsn++;
		iscsi_req_dispatch(c, r);
	}
}

/* Inserts in CmdSN order; false when that CmdSN is already waiting. */
static bool session_enqueue(struct iscsi_session *sess, struct iscsi_req *req)
{
	struct iscsi_req **pp = &sess->pending;

	while (*pp && iscsi_sn_lt((*pp)->cmdsn, req->cmdsn))
		pp = &(*pp)->next;
	if (*pp && (*pp)->cmdsn == req->cmdsn)
		return false;
	req->next = *pp;
	*pp = req;
	sess->n_pending++;
	return true;
}

void iscsi_session_submit(struct iscsi_conn *c, struct iscsi_req *req)
{
	struct iscsi_session *sess = c->sess;

	if (req->immediate) {
		iscsi_req_dispatch(c, req);
		return;
	}
	iscsi_session_update_window(c);
	switch (iscsi_cmdsn_classify(sess->exp_cmdsn, sess->max_cmdsn, req->cmdsn)) {
	case ISCSI_CMDSN_NOW:
		sess->exp_cmdsn++;
		iscsi_req_dispatch(c, req);
		session_drain(c);
		/* drained: what waits is past ExpCmdSN again (while draining,
		 * the head may equal it, so not from inside a dispatch) */
		if (c->state != CONN_CLEANUP)
			RTGT_CHECK(iscsi_session_check(sess));
		return;
	case ISCSI_CMDSN_QUEUE:
		if (req->task)
			req->task->state = TASK_QUEUED;
		if (!session_enqueue(sess, req)) {
			LOG_DBG(MOD, "%s: duplicate CmdSN %u dropped", c->peer_str, req->cmdsn);
			iscsi_req_free(req);
		}
		RTGT_CHECK(iscsi_session_check(sess));
		return;
	case ISCSI_CMDSN_DROP:
		LOG_DBG(MOD, "%s: CmdSN %u outside window [%u, %u]: dropped", c->peer_str,
			req->cmdsn, sess->exp_cmdsn, sess->max_cmdsn);
		iscsi_req_free(req);
		return;
	}
}

void iscsi_session_consume(struct iscsi_conn *c, uint32_t cmdsn)
{
	struct iscsi_session *sess = c->sess;
	struct iscsi_req *ph;

	if (cmdsn == sess->exp_cmdsn) {
		sess->exp_cmdsn++;
		session_drain(c);
		return;
	}
	if (iscsi_cmdsn_classify(sess->exp_cmdsn, sess->max_cmdsn, cmdsn) != ISCSI_CMDSN_QUEUE)
		return;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return;
	ph->cmdsn = cmdsn;
	ph->placeholder = true;
	if (!session_enqueue(sess, ph))
		free(ph);
}

/* ---------------- NOP-Out, Logout ---------------- */

static void nop_out(struct iscsi_conn *c, struct iscsi_req *req)
{
	uint32_t itt = iscsi_bhs_itt(req->bhs);
	uint32_t ttt = conf_get_be32(req->bhs + ISCSI_OFF_TTT);
	struct iscsi_tx *tx;

	if (itt == ISCSI_RSVD_TAG) {
		/* An answer to our ping, or a one-way NOP carrying ExpStatSN. */
		if (ttt != ISCSI_RSVD_TAG && c->nop_outstanding && ttt == c->nop_ttt)
			c->nop_outstanding = false;
		iscsi_req_free(req);
		return;
	}
	tx = iscsi_tx_new();
	if (!tx) {
		iscsi_req_free(req);
		iscsi_conn_close(c, "out of memory");
		return;
	}
	tx->hdr[0] = ISCSI_OP_NOP_IN;
	tx->hdr[1] = ISCSI_FLAG_FINAL;
	memcpy(tx->hdr + ISCSI_OFF_LUN, req->bhs + ISCSI_OFF_LUN, 8);
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, itt);
	conf_put_be32(tx->hdr + ISCSI_OFF_TTT, ISCSI_RSVD_TAG);
	/* Ping data is echoed back (RFC 7143 11.18.5); from here the
	 * transmit queue's own bound (ISCSI_TXQ_OWN_MAX) holds it. */
	iscsi_req_uncharge(req);
	tx->own = req->data;
	tx->data = req->data;
	tx->dlen = req->dlen;
	/* ...but never beyond what the initiator declared it can take. */
	if (c->params.max_xmit_dsl && tx->dlen > c->params.max_xmit_dsl)
		tx->dlen = c->params.max_xmit_dsl;
	req->data = NULL;
	iscsi_conn_fill_sn(c, tx->hdr, true);
	iscsi_req_free(req);
	iscsi_conn_queue(c, tx);
}

static void logout(struct iscsi_conn *c, struct iscsi_req *req)
{
	uint8_t reason = iscsi_bhs_flags(req->bhs) & ISCSI_FUNC_MASK;
	uint8_t rsp;
	struct iscsi_tx *tx = iscsi_tx_new();

	if (!tx) {
		iscsi_req_free(req);
		iscsi_conn_close(c, "out of memory");
		return;
	}
	switch (reason) {
	case ISCSI_LOGOUT_CLOSE_SESSION:
	case ISCSI_LOGOUT_CLOSE_CONN:
		/* One connection per session: both end the session. */
		rsp = ISCSI_LOGOUT_RSP_OK;
		break;
	case ISCSI_LOGOUT_RECOVERY:
		rsp = ISCSI_LOGOUT_RSP_NO_RECOVERY;
		iscsi_session_event(c, "logout_failed",
				    "connection recovery is not supported (ErrorRecoveryLevel 0)");
		break;
	default:
		iscsi_session_event(c, "logout_failed", "Logout with an unknown reason code");
		free(tx);
		iscsi_conn_send_reject(c, req->bhs, ISCSI_REJECT_INVALID_FIELD);
		iscsi_req_free(req);
		return;
	}
	tx->hdr[0] = ISCSI_OP_LOGOUT_RSP;
	tx->hdr[1] = ISCSI_FLAG_FINAL;
	tx->hdr[2] = rsp;
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, iscsi_bhs_itt(req->bhs));
	conf_put_be16(tx->hdr + ISCSI_OFF_TIME2WAIT, 0);
	conf_put_be16(tx->hdr + ISCSI_OFF_TIME2RETAIN, 0);
	iscsi_conn_fill_sn(c, tx->hdr, true);
	tx->close_after = rsp == ISCSI_LOGOUT_RSP_OK;
	if (tx->close_after && c->sess) {
		/* The initiator may log in again as soon as it reads the
		 * response, before this conn has drained and freed the
		 * session: the slot is free from now on. */
		pthread_mutex_lock(&c->sess->srv->lock);
		c->sess->ended = true;
		pthread_mutex_unlock(&c->sess->srv->lock);
		/* and its RESERVE(6/10) reservations end now, not when the
		 * session is freed: libiscsi's Reserve6 Logout test RESERVEs
		 * from a second initiator right after this response, and got
		 * RESERVATION CONFLICT under the sanitizers on a loaded box */
		scsi_nexus_release(c->sess->nexus);
	}
	LOG_INFO(MOD, "%s: logout (reason %u)", c->peer_str, reason);
	iscsi_req_free(req);
	iscsi_conn_queue(c, tx);
}

void iscsi_req_dispatch(struct iscsi_conn *c, struct iscsi_req *req)
{
	uint8_t op = iscsi_bhs_opcode(req->bhs);
	bool discovery = c->sess->type == ISCSI_SESSION_DISCOVERY;

	if (req->placeholder || c->state == CONN_CLEANUP) {
		iscsi_req_free(req);
		return;
	}
	if (c->state == CONN_CLOSING) {
		/* After the Logout response only the close remains. */
		iscsi_req_free(req);
		return;
	}
	if (!req->reject_reason && discovery &&
	    (op == ISCSI_OP_SCSI_CMD || op == ISCSI_OP_TMF_REQ))
		req->reject_reason = ISCSI_REJECT_PROTOCOL;
	if (req->reject_reason) {
		iscsi_conn_send_reject(c, req->bhs, req->reject_reason);
		iscsi_req_free(req);
		return;
	}
	switch (op) {
	case ISCSI_OP_NOP_OUT:
		nop_out(c, req);
		return;
	case ISCSI_OP_SCSI_CMD:
		iscsi_cmd_dispatch(c, req);
		return;
	case ISCSI_OP_TMF_REQ:
		iscsi_tmf_dispatch(c, req);
		return;
	case ISCSI_OP_TEXT_REQ:
		iscsi_text_dispatch(c, req);
		return;
	case ISCSI_OP_LOGOUT_REQ:
		logout(c, req);
		return;
	default:
		iscsi_conn_send_reject(c, req->bhs, ISCSI_REJECT_CMD_NOT_SUPPORTED);
		iscsi_req_free(req);
		return;
	}
}
