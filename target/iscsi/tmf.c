/*
 * target/iscsi/tmf.c - Task Management Function requests (RFC 7143 11.5,
 * 11.6; SAM-5 semantics through scsi_tmf()).
 *
 * TMF operation state machine (struct iscsi_tmfop, list conn->tmfs):
 *   WAITING  created by iscsi_tmf_dispatch after the affected tasks were
 *            flagged (iscsi_task_abort with the op's id) and scsi_tmf()
 *            applied; waits until no task of this conn with tmf_id >= id is
 *            still inside scsi and, for LUN/target resets, until
 *            scsi_inflight() and scsi_resets_pending() (a shared LU's
 *            other nodes not yet told, at most 3 s) are 0 or
 *            TMF_WAIT_MAX_MS passed (polled every TMF_POLL_MS by
 *            tmf_timer; the reactor serves everything else meanwhile)
 *   ANSWERED iscsi_tmf_progress sends the response (in arrival order),
 *            frees the op; a TARGET COLD RESET then closes the connection
 *
 * Invariant (tmf_check): op ids strictly increase along conn->tmfs; an op
 * has a timer only while waiting on scsi_inflight() / scsi_resets_pending().
 *
 * Aborted tasks never get a response of their own: the TMF response comes
 * after all of them ended, as RFC 7143 4.2.3.3 asks.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdlib.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"
#define TMF_POLL_MS 10
#define TMF_WAIT_MAX_MS 30000

struct iscsi_tmfop {
	struct iscsi_tmfop *next;
	struct iscsi_conn *conn;
	uint32_t id;
	uint32_t itt;
	uint8_t fn;
	uint8_t response;
	bool wait_scsi;                /* also wait for scsi_inflight() == 0 */
	uint64_t lun;                  /* UINT64_MAX: whole target */
	uint64_t deadline;
	struct ev_timer *timer;        /* owned while armed, may be NULL */
};

static bool tmf_check(const struct iscsi_conn *c)
{
	uint32_t prev = 0;

	for (const struct iscsi_tmfop *op = c->tmfs; op; op = op->next) {
		if (op->id <= prev)
			return false;
		if (op->timer && !op->wait_scsi)
			return false;
		prev = op->id;
	}
	return true;
}

uint8_t iscsi_tmf_scsi_fn(uint8_t iscsi_fn, int *scsi_fn)
{
	*scsi_fn = -1;
	switch (iscsi_fn) {
	case ISCSI_TMF_ABORT_TASK:
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_ABORT_TASK_SET:
		*scsi_fn = SCSI_TMF_ABORT_TASK_SET;
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_CLEAR_TASK_SET:
		*scsi_fn = SCSI_TMF_CLEAR_TASK_SET;
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_LUN_RESET:
		*scsi_fn = SCSI_TMF_LUN_RESET;
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_TARGET_WARM_RESET:
		*scsi_fn = SCSI_TMF_TARGET_WARM_RESET;
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_TARGET_COLD_RESET:
		*scsi_fn = SCSI_TMF_TARGET_COLD_RESET;
		return ISCSI_TMF_RSP_COMPLETE;
	case ISCSI_TMF_CLEAR_ACA:
		/* NACA is never set in our control mode page: no ACA to clear */
		return ISCSI_TMF_RSP_NOT_SUPPORTED;
	case ISCSI_TMF_TASK_REASSIGN:
		/* needs ErrorRecoveryLevel 2 */
		return ISCSI_TMF_RSP_NO_REASSIGN;
	default:
		return ISCSI_TMF_RSP_REJECTED;
	}
}

static void tmf_free(struct iscsi_tmfop *op)
{
	if (op->timer)
		ev_timer_cancel(op->conn->w->loop, op->timer);
	free(op);
}

void iscsi_tmf_free_all(struct iscsi_conn *c)
{
	while (c->tmfs) {
		struct iscsi_tmfop *op = c->tmfs;

		c->tmfs = op->next;
		tmf_free(op);
	}
}

static void tmf_timer(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct iscsi_tmfop *op = arg;

	op->timer = NULL;
	iscsi_tmf_progress(op->conn);
}

static bool tmf_ready(struct iscsi_conn *c, struct iscsi_tmfop *op)
{
	for (struct iscsi_task *t = c->tasks; t; t = t->next)
		if (t->in_scsi && t->tmf_id >= op->id)
			return false;
	if (op->wait_scsi) {
		struct scsi_target *st = c->sess->st;
		uint64_t now = ev_now_ms(c->w->loop);
		/* the LUN as the session numbers it is its view's: the
		 * counters count per target LUN */
		uint64_t lun = scsi_nexus_target_lun(c->sess->nexus, op->lun);

		/* a reset of a shared LU also waits for the other nodes'
		 * acknowledgement (at most 3 s), polled like the commands */
		if (scsi_inflight(st, lun) + scsi_resets_pending(st, lun) > 0 &&
		    now < op->deadline) {
			if (!op->timer)
				op->timer = ev_timer_add(c->w->loop, TMF_POLL_MS, tmf_timer, op);
			return false;
		}
		if (scsi_inflight(st, lun) > 0)
			LOG_WARN(MOD, "%s: TMF %u answered with commands of other sessions still running",
				 c->peer_str, op->fn);
	}
	return true;
}

static void tmf_respond(struct iscsi_conn *c, struct iscsi_tmfop *op)
{
	struct iscsi_tx *tx = iscsi_tx_new();

	if (!tx) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	tx->hdr[0] = ISCSI_OP_TMF_RSP;
	tx->hdr[1] = ISCSI_FLAG_FINAL;
	tx->hdr[2] = op->response;
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, op->itt);
	iscsi_conn_fill_sn(c, tx->hdr, true);
	/* a cold reset ends every I_T nexus of the target: ours goes after
	 * the response (RFC 7143 11.5.1) */
	tx->close_after = op->fn == ISCSI_TMF_TARGET_COLD_RESET &&
			  op->response == ISCSI_TMF_RSP_COMPLETE;
	LOG_INFO(MOD, "%s: TMF function %u -> response %u", c->peer_str, op->fn, op->response);
	iscsi_conn_queue(c, tx);
}

void iscsi_tmf_progress(struct iscsi_conn *c)
{
	RTGT_CHECK(tmf_check(c));
	while (c->tmfs && c->state == CONN_FFP) {
		struct iscsi_tmfop *op = c->tmfs;

		if (!tmf_ready(c, op))
			return;
		c->tmfs = op->next;
		tmf_respond(c, op);
		tmf_free(op);
	}
}

/* Flags this conn's tasks on @lun (UINT64_MAX: all) for @op. */
static void abort_own(struct iscsi_conn *c, uint64_t lun, uint32_t id)
{
	struct iscsi_task *t = c->tasks, *next;

	for (; t; t = next) {
		next = t->next;
		if (lun == UINT64_MAX || t->cmd.lun == lun)
			iscsi_task_abort(t, id);
	}
}

void iscsi_tmf_dispatch(struct iscsi_conn *c, struct iscsi_req *req)
{
	const uint8_t *bhs = req->bhs;
	uint8_t fn = iscsi_bhs_flags(bhs) & ISCSI_FUNC_MASK;
	uint64_t lun = scsi_lun_decode(bhs + ISCSI_OFF_LUN);
	uint32_t rtt = conf_get_be32(bhs + ISCSI_OFF_RTT);
	uint32_t refcmdsn = conf_get_be32(bhs + ISCSI_OFF_REFCMDSN);
	struct scsi_target *st = c->sess->st;
	struct iscsi_tmfop *op, **tail;
	int scsi_fn;

	op = calloc(1, sizeof(*op));
	if (!op) {
		iscsi_req_free(req);
		iscsi_conn_close(c, "out of memory");
		return;
	}
	op->conn = c;
	op->id = ++c->next_tmf_id;
	op->itt = iscsi_bhs_itt(bhs);
	op->fn = fn;
	op->lun = lun;
	op->response = iscsi_tmf_scsi_fn(fn, &scsi_fn);

	if (fn == ISCSI_TMF_ABORT_TASK) {
		struct iscsi_task *t = iscsi_task_find(c, rtt);

		if (t) {
			iscsi_task_abort(t, op->id);
		} else if (iscsi_cmdsn_classify(c->sess->exp_cmdsn, c->sess->max_cmdsn, refcmdsn) !=
				   ISCSI_CMDSN_DROP &&
			   iscsi_sn_lt(refcmdsn, req->cmdsn + (req->immediate ? 1 : 0))) {
			/* RFC 7143 11.5.1 b): not here yet but inside the
			 * window: consider it received and done with. */
			iscsi_session_consume(c, refcmdsn);
		} else {
			op->response = ISCSI_TMF_RSP_NO_TASK;
		}
	} else if (scsi_fn >= 0) {
		uint64_t scope = lun;
		int r;

		if (scsi_fn == SCSI_TMF_TARGET_WARM_RESET || scsi_fn == SCSI_TMF_TARGET_COLD_RESET)
			scope = UINT64_MAX;
		r = scsi_tmf(st, c->sess->nexus, lun, (enum scsi_tmf)scsi_fn);
		if (r == -ENOENT) {
			op->response = ISCSI_TMF_RSP_NO_LUN;
		} else if (r < 0) {
			op->response = ISCSI_TMF_RSP_REJECTED;
			LOG_WARN(MOD, "%s: TMF %u failed: %d", c->peer_str, fn, r);
		} else {
			abort_own(c, scope, op->id);
			if (scsi_fn != SCSI_TMF_ABORT_TASK_SET) {
				op->wait_scsi = true;
				op->lun = scope;
				op->deadline = ev_now_ms(c->w->loop) + TMF_WAIT_MAX_MS;
			}
		}
	}
	iscsi_req_free(req);
	for (tail = &c->tmfs; *tail; tail = &(*tail)->next)
		;
	*tail = op;
	iscsi_tmf_progress(c);
}
