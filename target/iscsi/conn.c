/*
 * target/iscsi/conn.c - one iSCSI connection: socket I/O, the receive and
 * transmit state machines, keepalive, close and cleanup.
 *
 * Connection state machine (struct iscsi_conn.state):
 *
 *   (accept) --iscsi_conn_accepted/conn_attach--> CONN_LOGIN
 *   CONN_LOGIN --iscsi_conn_enter_ffp (final login response queued)--> CONN_FFP
 *   CONN_LOGIN / CONN_FFP --tx with close_after queued (login failure,
 *        logout response, Reject of an oversized PDU)--> CONN_CLOSING
 *        (close_timer: a peer that does not read gets CLOSING_TIMEOUT_MS)
 *   CONN_LOGIN --iscsi_conn_evict (server at max_connections, this is the
 *        oldest conn still logging in)--> CONN_CLEANUP
 *   CONN_FFP --iscsi_conn_shutdown_worker with commands inside scsi-->
 *        CONN_FFP + draining (no reading; close_timer = DRAIN_TIMEOUT_MS)
 *   CONN_FFP + draining --iscsi_conn_drain_check: n_scsi == 0 and the
 *        queue written--> CONN_CLEANUP
 *   any --iscsi_conn_close (error, EOF, timeout, shutdown, CLOSING drained)--> CONN_CLEANUP
 *   CONN_CLEANUP --conn_free_cb once n_scsi == 0--> freed
 *
 * Receive state machine (struct iscsi_conn.rx), one PDU at a time:
 *
 *   RX_BHS --iscsi_bhs_check REJECT_CLOSE (DataSegmentLength over what we
 *          declared)--> RX_ERROR, a Reject queued with close_after
 *   RX_BHS --48 bytes, iscsi_bhs_check ok/reject--> RX_AHS (AHS > 0)
 *          | RX_HDIGEST (header digest on) | header_done
 *   RX_AHS --> RX_HDIGEST | header_done
 *   RX_HDIGEST --CRC ok--> header_done
 *   header_done: payload destination chosen (task buffer, own buffer, or
 *          discard) --> RX_DATA (DSL > 0) | pdu_done
 *   RX_DATA --> RX_PAD (DSL % 4) | RX_DDIGEST (data digest on) | pdu_done
 *   RX_PAD --> RX_DDIGEST | pdu_done
 *   RX_DDIGEST --> pdu_done (digest error: Reject, or drop for Data-Out)
 *   pdu_done --> RX_BHS
 *   any --framing lost / fatal protocol error--> RX_ERROR (sticky; the conn
 *          is closed in the same step)
 *
 * Receive path: one read() takes up to ISCSI_RX_BUF bytes of what the
 * socket holds into the conn's read-ahead (rb); the state machine above
 * takes its pieces from there: headers are copied out of rb, payload bytes
 * that came with them are copied to their destination (at most
 * ISCSI_RX_BUF per read, so a 4 KiB write costs one memcpy and no system
 * call of its own). A payload still missing when rb runs dry is read
 * straight into its destination with readv(destination, rb), which also
 * takes the next headers. A read that returns less than it asked for means
 * the socket is empty: back to epoll without an extra read for EAGAIN. At
 * most RX_READS reads per wake-up; what is in rb is always parsed, except
 * while reading is paused, when rx_more makes iscsi_worker_prepare()
 * parse it once the pause ends (epoll would not report those bytes again).
 *
 * Transmit path: iscsi_conn_send() queues and puts the conn on its
 * worker's pend list; iscsi_worker_prepare(), the reactor's prepare hook,
 * writes each listed queue with one writev once the wake-up's events are
 * handled, so the responses of every command completed in one wake-up
 * leave together (status rides in the last Data-In, cmd.c). A queue the
 * socket did not take waits for EPOLLOUT (want_write) instead. The
 * exception is iscsi_conn_flush(), which writes the queue at once: an R2T
 * (cmd.c, send_r2ts) is what the initiator waits for before it sends the
 * next burst of a write, so it must not sit behind the rest of the
 * wake-up (up to RX_READS reads of this conn, the other conns, the member
 * I/O the ioctx hook does on the reactor). The whole queue goes, in
 * order, so StatSN, R2TSN and DataSN order on the wire stay those of
 * queueing. It may run inside the receive path: a write error closes the
 * conn there, which sets RX_ERROR and ends conn_rx like any other close.
 * A tx whose data the volume lent (mapped: cmd.c queue_datain, the
 * task's scsi data_hold) always puts its conn on the pend list, and the
 * prepare hook fetches whatever of it the writev left into the task's
 * buffer (conn_unmap): lent memory is read only within the wake-up that
 * completed the command. Invariant: n_mapped counts the mapped tx of the
 * queue, and is 0 whenever the prepare hook has passed the conn.
 *
 * Invariants (iscsi_conn_check): rx_got is below the current piece's size;
 * rb_off <= rb_end <= ISCSI_RX_BUF;
 * RX_ERROR iff state == CONN_CLEANUP or the socket is gone; txq_len counts
 * the tx list; n_scsi <= n_tasks; a conn in CONN_FFP has a session and no
 * login; a conn in CONN_LOGIN has a login.
 *
 * Memory bounds: a PDU payload is at most what we declared
 * (MaxRecvDataSegmentLength, 8192 during login); a longer one is never read
 * (Reject, close). Tasks are bounded by the CmdSN window plus
 * ISCSI_MAX_IMMEDIATE_TASKS. NOP-Out and Text payloads are charged while
 * held (held_charge: ISCSI_CONN_HELD_MAX per conn, ISCSI_SRV_HELD_MAX in
 * all); over budget the payload is discarded as read and the PDU answered
 * with a Reject in its CmdSN turn.
 *
 * Timers of a conn: login_timer (CONN_LOGIN), auth_timer (a CHAP response
 * held by the failure rate limit, login.c), nop_timer (CONN_FFP: NOP-In
 * keepalive of a normal session, idle close of a discovery session after
 * daemon.discovery_idle_timeout_s without a Text request), close_timer
 * (CONN_CLOSING or draining). conn_close cancels them all.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"
#define TX_IOV_MAX 64
/* read system calls per connection and wake-up (fairness between conns) */
#define RX_READS 16
/* How long a last PDU (login failure, Logout Response, Reject before a
 * close) may wait for the peer to read it. */
#define CLOSING_TIMEOUT_MS 5000
/* How long a shutdown waits for the commands of a conn inside scsi. */
#define DRAIN_TIMEOUT_MS 10000

static void conn_io(struct ev_loop *loop, int fd, uint32_t events, void *arg);
static void conn_nop_tick(struct ev_loop *loop, struct ev_timer *t, void *arg);

static size_t tx_own_size(const struct iscsi_tx *tx)
{
	return sizeof(*tx) + (tx->own ? tx->dlen : 0);
}

bool iscsi_conn_check(const struct iscsi_conn *c)
{
	unsigned n = 0;
	const struct iscsi_tx *tx;

	size_t own = 0;

	for (tx = c->txq; tx; tx = tx->next) {
		n++;
		own += tx_own_size(tx);
	}
	if (n != c->txq_len || own != c->txq_own)
		return false;
	if (c->rx_paused != (c->txq_own > ISCSI_TXQ_OWN_MAX) && c->state != CONN_CLEANUP)
		return false;
	if (c->n_scsi > c->n_tasks || c->held_bytes > ISCSI_CONN_HELD_MAX)
		return false;
	if (c->state == CONN_FFP && (!c->sess || c->login))
		return false;
	if (c->state == CONN_LOGIN && !c->login)
		return false;
	if (c->state == CONN_CLEANUP && c->fd >= 0)
		return false;
	if (c->rb_off > c->rb_end || c->rb_end > ISCSI_RX_BUF || (!c->rb && c->rb_end))
		return false;
	switch (c->rx) {
	case RX_BHS:
		return c->rx_got < ISCSI_BHS_LEN;
	case RX_AHS:
		return c->rx_got < c->rx_ahs;
	case RX_HDIGEST:
	case RX_DDIGEST:
		return c->rx_got < ISCSI_DIGEST_LEN;
	case RX_DATA:
		return c->rx_got < c->rx_dsl;
	case RX_PAD:
		return c->rx_got < iscsi_pad4(c->rx_dsl);
	case RX_ERROR:
		return c->state == CONN_CLEANUP || c->state == CONN_CLOSING;
	}
	return false;
}

/* ---------------- transmit ---------------- */

struct iscsi_tx *iscsi_tx_new(void)
{
	return calloc(1, sizeof(struct iscsi_tx));
}

static void tx_free(struct iscsi_tx *tx)
{
	if (tx->task) {
		iscsi_task_tx_unmapped(tx);
		iscsi_task_put(tx->task);
	}
	free(tx->own);
	free(tx);
}

void iscsi_conn_fill_sn(struct iscsi_conn *c, uint8_t *bhs, bool advance)
{
	conf_put_be32(bhs + ISCSI_OFF_STATSN, c->stat_sn);
	if (advance)
		c->stat_sn++;
	if (c->sess) {
		iscsi_session_update_window(c);
		conf_put_be32(bhs + ISCSI_OFF_EXPCMDSN, c->sess->exp_cmdsn);
		conf_put_be32(bhs + ISCSI_OFF_MAXCMDSN, c->sess->max_cmdsn);
	}
}

/* Puts @c on its worker's pend list (iscsi_worker_prepare). */
static void conn_pend(struct iscsi_conn *c)
{
	struct iscsi_wstate *w = c->w;

	if (c->pend_listed)
		return;
	c->pprev = NULL;
	c->pnext = w->pend;
	if (w->pend)
		w->pend->pprev = c;
	w->pend = c;
	c->pend_listed = true;
}

static void conn_unpend(struct iscsi_conn *c)
{
	if (!c->pend_listed)
		return;
	if (c->pprev)
		c->pprev->pnext = c->pnext;
	else
		c->w->pend = c->pnext;
	if (c->pnext)
		c->pnext->pprev = c->pprev;
	c->pprev = c->pnext = NULL;
	c->pend_listed = false;
}

void iscsi_conn_queue(struct iscsi_conn *c, struct iscsi_tx *tx)
{
	uint32_t pad = iscsi_pad4(tx->dlen);

	iscsi_bhs_set_dsl(tx->hdr, tx->dlen);
	tx->hdr_len = ISCSI_BHS_LEN;
	if (c->hdigest) {
		uint32_t crc = iscsi_crc_update(ISCSI_CRC_INIT, tx->hdr, ISCSI_BHS_LEN);

		iscsi_digest_put(tx->hdr + ISCSI_BHS_LEN, iscsi_crc_final(crc));
		tx->hdr_len += ISCSI_DIGEST_LEN;
	}
	memset(tx->trailer, 0, sizeof(tx->trailer));
	tx->trailer_len = pad;
	if (tx->dlen && c->ddigest) {
		uint32_t crc = iscsi_crc_update(ISCSI_CRC_INIT, tx->data, tx->dlen);

		crc = iscsi_crc_update(crc, tx->trailer, pad);
		iscsi_digest_put(tx->trailer + pad, iscsi_crc_final(crc));
		tx->trailer_len += ISCSI_DIGEST_LEN;
	}
	iscsi_conn_send(c, tx);
}

/* The epoll interest: reading unless the receive side stopped (RX_ERROR
 * while a last PDU drains: level-triggered input we no longer read would
 * wake us for nothing), writing while the queue waits on the socket. */
static void conn_update_events(struct iscsi_conn *c)
{
	uint32_t ev = 0;

	if (c->fd < 0)
		return;
	if (c->rx != RX_ERROR && !c->draining && !c->rx_paused)
		ev |= EV_READ;
	if (c->want_write)
		ev |= EV_WRITE;
	ev_io_mod(c->w->loop, c->fd, ev);
}

/* Pauses or resumes reading as the queue's own memory crosses
 * ISCSI_TXQ_OWN_MAX. */
static void conn_rx_gate(struct iscsi_conn *c)
{
	bool pause = c->txq_own > ISCSI_TXQ_OWN_MAX;

	if (pause == c->rx_paused)
		return;
	c->rx_paused = pause;
	if (pause)
		LOG_DBG(MOD, "%s: peer does not read: %zu bytes queued, reading paused",
			c->peer_str, c->txq_own);
	if (!pause && c->rb_end > c->rb_off) {
		/* read-ahead epoll will not report again */
		c->rx_more = true;
		conn_pend(c);
	}
	conn_update_events(c);
}

static void tx_want_write(struct iscsi_conn *c, bool on)
{
	if (c->fd < 0 || c->want_write == on)
		return;
	c->want_write = on;
	conn_update_events(c);
}

static void conn_unmap(struct iscsi_conn *c);

/* Writes as much of the queue as the socket takes. Returns -EPIPE when the
 * conn was closed here. */
static int tx_flush(struct iscsi_conn *c)
{
	while (c->txq && c->fd >= 0) {
		struct iovec iov[TX_IOV_MAX];
		int n = 0;
		ssize_t w;

		for (struct iscsi_tx *tx = c->txq; tx && n + 3 <= TX_IOV_MAX; tx = tx->next) {
			uint32_t skip = tx->sent;
			struct {
				const void *p;
				uint32_t len;
			} parts[3] = { { tx->hdr, tx->hdr_len },
				       { tx->data, tx->dlen },
				       { tx->trailer, tx->trailer_len } };

			for (int i = 0; i < 3; i++) {
				if (skip >= parts[i].len) {
					skip -= parts[i].len;
					continue;
				}
				iov[n].iov_base = (uint8_t *)parts[i].p + skip;
				iov[n].iov_len = parts[i].len - skip;
				skip = 0;
				n++;
			}
			if (tx->close_after)
				break;
		}
		w = writev(c->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				tx_want_write(c, true);
				conn_rx_gate(c);
				return 0;
			}
			if (errno == EFAULT && c->n_mapped) {
				/* data lent by the volume could not be read (a
				 * member file cut short): fetch every piece into
				 * the buffers, which fails and closes the conn
				 * on the bad one, and retire that mapping */
				conn_unmap(c);
				if (c->state == CONN_CLEANUP)
					return -EPIPE;
				continue;
			}
			iscsi_conn_close(c, "write error");
			return -EPIPE;
		}
		c->tx_bytes += (uint64_t)w;
		while (w > 0 && c->txq) {
			struct iscsi_tx *tx = c->txq;
			uint32_t total = tx->hdr_len + tx->dlen + tx->trailer_len;
			uint32_t left = total - tx->sent;

			if ((size_t)w < left) {
				tx->sent += (uint32_t)w;
				w = 0;
				break;
			}
			w -= left;
			c->txq = tx->next;
			if (!c->txq)
				c->txq_tail = NULL;
			c->txq_len--;
			c->txq_own -= tx_own_size(tx);
			c->tx_pdus++;
			if (tx->close_after) {
				tx_free(tx);
				iscsi_conn_close(c, NULL);
				return -EPIPE;
			}
			tx_free(tx);
		}
	}
	tx_want_write(c, false);
	conn_rx_gate(c);
	return 0;
}

int iscsi_conn_flush(struct iscsi_conn *c)
{
	/* a queue waiting on EPOLLOUT stays there; CONN_CLOSING keeps its
	 * last PDU for the prepare hook (no R2T is sent then anyway) */
	if (c->state != CONN_FFP || !c->txq || c->want_write)
		return 0;
	return tx_flush(c);
}

static void conn_close_timeout(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct iscsi_conn *c = arg;

	c->close_timer = NULL;
	iscsi_conn_close(c, c->draining ? "server shutting down: drain timed out"
					: "peer does not read the last PDU");
}

void iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx *tx)
{
	if (c->state == CONN_CLEANUP) {
		tx_free(tx);
		return;
	}
	if (tx->close_after) {
		c->state = CONN_CLOSING;
		/* If the timer cannot be had, the conn still closes once the
		 * peer reads or goes away; only a stuck peer keeps it. */
		if (!c->close_timer)
			c->close_timer = ev_timer_add(c->w->loop, CLOSING_TIMEOUT_MS,
						      conn_close_timeout, c);
	}
	tx->next = NULL;
	if (c->txq_tail)
		c->txq_tail->next = tx;
	else
		c->txq = tx;
	c->txq_tail = tx;
	c->txq_len++;
	c->txq_own += tx_own_size(tx);
	/* Written by iscsi_worker_prepare() once this wake-up's events are
	 * handled, with whatever else they queued; a queue the socket did
	 * not take waits for EPOLLOUT. */
	if (!c->want_write || tx->mapped)
		conn_pend(c);    /* mapped data: conn_unmap in this wake-up */
	conn_rx_gate(c);
}

static void conn_reject(struct iscsi_conn *c, const uint8_t *bhs, uint8_t reason,
			bool close_after)
{
	struct iscsi_tx *tx = iscsi_tx_new();

	if (!tx) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	tx->own = malloc(ISCSI_BHS_LEN);
	if (!tx->own) {
		free(tx);
		iscsi_conn_close(c, "out of memory");
		return;
	}
	memcpy(tx->own, bhs, ISCSI_BHS_LEN);
	tx->data = tx->own;
	tx->dlen = ISCSI_BHS_LEN;
	tx->hdr[0] = ISCSI_OP_REJECT;
	tx->hdr[1] = ISCSI_FLAG_FINAL;
	tx->hdr[2] = reason;
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, ISCSI_RSVD_TAG);
	iscsi_conn_fill_sn(c, tx->hdr, true);
	tx->close_after = close_after;
	LOG_DBG(MOD, "%s: Reject opcode 0x%02x reason 0x%02x", c->peer_str,
		iscsi_bhs_opcode(bhs), reason);
	iscsi_conn_queue(c, tx);
}

void iscsi_conn_send_reject(struct iscsi_conn *c, const uint8_t *bhs, uint8_t reason)
{
	conn_reject(c, bhs, reason, false);
}

/* ---------------- close and free ---------------- */

void iscsi_conn_login_unlist_locked(struct iscsi_conn *c)
{
	struct iscsi_server *s = c->srv;

	if (!c->login_listed)
		return;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		s->login_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	else
		s->login_tail = c->lprev;
	c->lprev = c->lnext = NULL;
	c->login_listed = false;
}

void iscsi_conn_login_unlist(struct iscsi_conn *c)
{
	pthread_mutex_lock(&c->srv->lock);
	iscsi_conn_login_unlist_locked(c);
	pthread_mutex_unlock(&c->srv->lock);
}

static void conn_free_cb(void *arg)
{
	struct iscsi_conn *c = arg;
	struct iscsi_server *s = c->srv;
	bool evicted;

	c->free_posted = false;
	if (c->n_scsi > 0)
		return;    /* the last scsi completion posts us again */
	if (c->prev)
		c->prev->next = c->next;
	else if (c->w->conns == c)
		c->w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	iscsi_tmf_free_all(c);
	conn_unpend(c);
	if (c->sess)
		iscsi_session_free(c->sess);
	if (c->login)
		iscsi_login_free(c->login);
	free(c->rb);
	pthread_mutex_lock(&s->lock);
	iscsi_conn_login_unlist_locked(c);
	evicted = c->evicted;
	pthread_mutex_unlock(&s->lock);
	/* after the session: the registry may read sess->cfg until then */
	iscsi_cfg_put(c->cfg);
	free(c);
	iscsi_server_conn_gone(s, evicted);
}

static void conn_post_free(struct iscsi_conn *c)
{
	if (c->free_posted || c->n_scsi > 0)
		return;
	if (ev_call(c->w->loop, conn_free_cb, c) == 0)
		c->free_posted = true;
	else
		LOG_ERR(MOD, "%s: cannot schedule connection cleanup (ENOMEM)", c->peer_str);
}

void iscsi_conn_task_released(struct iscsi_conn *c)
{
	if (c->state == CONN_CLEANUP)
		conn_post_free(c);
}

void iscsi_conn_close(struct iscsi_conn *c, const char *why)
{
	struct iscsi_req *r;

	if (c->state == CONN_CLEANUP)
		return;
	if (why && c->sess)
		LOG_INFO(MOD, "%s: closing connection of initiator %s tsih %u: %s", c->peer_str,
			 c->sess->initiator ? c->sess->initiator : "?", c->sess->tsih, why);
	else if (why)
		LOG_INFO(MOD, "%s: closing connection: %s", c->peer_str, why);
	else
		LOG_DBG(MOD, "%s: connection closed", c->peer_str);
	if (why && (c->state == CONN_FFP || c->state == CONN_CLOSING))
		iscsi_session_event(c, "session_lost", why);
	c->state = CONN_CLEANUP;
	c->rx = RX_ERROR;
	conn_unpend(c);
	c->rb_off = c->rb_end = 0;
	c->rx_more = false;
	iscsi_conn_login_unlist(c);
	if (c->fd >= 0) {
		if (c->sess) {
			/* the path view must not query a closed (or reused) fd */
			pthread_mutex_lock(&c->srv->lock);
			c->sess->sock_fd = -1;
			pthread_mutex_unlock(&c->srv->lock);
		}
		ev_io_del(c->w->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (c->login_timer) {
		ev_timer_cancel(c->w->loop, c->login_timer);
		c->login_timer = NULL;
	}
	if (c->nop_timer) {
		ev_timer_cancel(c->w->loop, c->nop_timer);
		c->nop_timer = NULL;
	}
	if (c->auth_timer) {
		ev_timer_cancel(c->w->loop, c->auth_timer);
		c->auth_timer = NULL;
	}
	if (c->close_timer) {
		ev_timer_cancel(c->w->loop, c->close_timer);
		c->close_timer = NULL;
	}
	while (c->txq) {
		struct iscsi_tx *tx = c->txq;

		c->txq = tx->next;
		tx_free(tx);
	}
	c->txq_tail = NULL;
	c->txq_len = 0;
	c->txq_own = 0;
	if (c->rx_req) {
		iscsi_req_free(c->rx_req);
		c->rx_req = NULL;
	}
	if (c->text) {
		iscsi_textop_free(c->text);
		c->text = NULL;
	}
	if (c->sess) {
		while ((r = c->sess->pending)) {
			c->sess->pending = r->next;
			iscsi_req_free(r);
		}
		c->sess->n_pending = 0;
	}
	/* Every task ends here: those inside scsi are flagged and finish on
	 * their own (no response goes out); the others go now. */
	iscsi_tasks_abort_all(c);
	iscsi_tmf_free_all(c);
	conn_post_free(c);
}

/* ---------------- receive ---------------- */

static void rx_reset(struct iscsi_conn *c)
{
	c->rx = RX_BHS;
	c->rx_got = 0;
	c->rx_ahs = c->rx_dsl = 0;
	c->rx_data = NULL;
	c->rx_task = NULL;
	c->rx_reject = 0;
	c->rx_crc = ISCSI_CRC_INIT;
}

static void rx_fatal(struct iscsi_conn *c, const char *why)
{
	c->rx = RX_ERROR;
	iscsi_conn_close(c, why);
}

static enum iscsi_phase conn_phase(const struct iscsi_conn *c)
{
	return c->state == CONN_LOGIN ? ISCSI_PHASE_LOGIN : ISCSI_PHASE_FFP;
}

static uint32_t conn_max_recv(const struct iscsi_conn *c)
{
	return c->state == CONN_LOGIN ? ISCSI_LOGIN_DSL : c->params.max_recv_dsl;
}

static void pdu_done(struct iscsi_conn *c);

/* Charges @len payload bytes of @req to the conn's and the server's held
 * budgets; false (nothing charged) when either would go over. */
static bool held_charge(struct iscsi_conn *c, struct iscsi_req *req, uint32_t len)
{
	struct iscsi_server *s = c->srv;
	size_t total;

	if (c->held_bytes + len > ISCSI_CONN_HELD_MAX)
		goto over;
	total = atomic_fetch_add(&s->held_bytes, len) + len;
	if (total > ISCSI_SRV_HELD_MAX) {
		atomic_fetch_sub(&s->held_bytes, len);
		goto over;
	}
	c->held_bytes += len;
	req->held = len;
	req->held_by = c;
	return true;

over:
	if (!c->held_warned) {
		/* once per connection: a flood must not flood the log too */
		LOG_WARN(MOD, "%s: payload of opcode 0x%02x (%u bytes) over the memory budget "
			      "(%zu held by this connection; %u allowed per connection, %u in all): rejected",
			 c->peer_str, iscsi_bhs_opcode(c->rx_hdr), len, c->held_bytes,
			 ISCSI_CONN_HELD_MAX, ISCSI_SRV_HELD_MAX);
		c->held_warned = true;
	}
	return false;
}

/* Header complete (and digest checked): decide where the payload goes. */
static void header_done(struct iscsi_conn *c)
{
	uint8_t op = iscsi_bhs_opcode(c->rx_hdr);
	struct iscsi_req *req;

	c->rx_data = NULL;
	if (c->state == CONN_LOGIN || c->state == CONN_CLOSING) {
		if (c->rx_dsl) {
			c->rx_req = calloc(1, sizeof(*c->rx_req));
			if (!c->rx_req || !(c->rx_req->data = malloc(c->rx_dsl))) {
				rx_fatal(c, "out of memory");
				return;
			}
			c->rx_data = c->rx_req->data;
		}
		goto payload;
	}

	if (op == ISCSI_OP_DATA_OUT && !c->rx_reject) {
		const char *why = NULL;

		if (iscsi_dataout_prepare(c, &why) < 0) {
			rx_fatal(c, why);
			return;
		}
		goto payload;
	}

	req = calloc(1, sizeof(*req));
	if (!req) {
		rx_fatal(c, "out of memory");
		return;
	}
	memcpy(req->bhs, c->rx_hdr, ISCSI_BHS_LEN + c->rx_ahs);
	req->ahs_len = c->rx_ahs;
	req->immediate = iscsi_bhs_immediate(c->rx_hdr);
	req->cmdsn = conf_get_be32(c->rx_hdr + ISCSI_OFF_CMDSN);
	req->reject_reason = c->rx_reject;
	c->rx_req = req;
	if (op == ISCSI_OP_DATA_OUT || op == ISCSI_OP_SNACK) {
		/* no CmdSN: rejected outside the window machinery */
		goto payload;
	}
	if (!req->reject_reason && op == ISCSI_OP_SCSI_CMD) {
		int r = iscsi_cmd_prepare(c, req);

		if (r < 0) {
			rx_fatal(c, "out of memory");
			return;
		}
		if (r > 0)
			req->reject_reason = (uint8_t)r;
		else if (req->task && c->rx_dsl <= req->task->cmd.buf_len)
			c->rx_data = req->task->cmd.buf;
		goto payload;
	}
	if (!req->reject_reason && c->rx_dsl) {
		if (!held_charge(c, req, c->rx_dsl)) {
			/* read and thrown away; the Reject leaves in CmdSN
			 * order like any answer */
			req->reject_reason = ISCSI_REJECT_OUT_OF_RESOURCES;
			goto payload;
		}
		req->data = malloc(c->rx_dsl);
		if (!req->data) {
			rx_fatal(c, "out of memory");
			return;
		}
		req->dlen = c->rx_dsl;
		c->rx_data = req->data;
	}

payload:
	if (c->rx_dsl == 0) {
		pdu_done(c);
		return;
	}
	c->rx = RX_DATA;
	c->rx_got = 0;
}

static void pdu_done(struct iscsi_conn *c)
{
	uint8_t op = iscsi_bhs_opcode(c->rx_hdr);
	struct iscsi_req *req = c->rx_req;

	c->rx_req = NULL;
	c->rx_pdus++;
	if (c->state == CONN_LOGIN || c->state == CONN_CLOSING) {
		if (c->state == CONN_LOGIN)
			iscsi_login_rx(c, c->rx_hdr, req ? req->data : NULL, c->rx_dsl);
		if (req)
			iscsi_req_free(req);
		if (c->state != CONN_CLEANUP)
			rx_reset(c);
		return;
	}
	if (op == ISCSI_OP_DATA_OUT && !req) {
		iscsi_dataout_done(c);
	} else if (!req) {
		/* nothing */
	} else if (op == ISCSI_OP_DATA_OUT || op == ISCSI_OP_SNACK) {
		iscsi_conn_send_reject(c, req->bhs, req->reject_reason ? req->reject_reason
								      : ISCSI_REJECT_PROTOCOL);
		iscsi_req_free(req);
	} else {
		iscsi_session_submit(c, req);
	}
	if (c->state != CONN_CLEANUP)
		rx_reset(c);
}

/* One piece of the current rx state is complete: advance. */
static void rx_advance(struct iscsi_conn *c)
{
	uint32_t crc;
	const char *why;

	switch (c->rx) {
	case RX_BHS: {
		enum iscsi_bhs_verdict v;

		c->last_rx_ms = ev_now_ms(c->w->loop);
		v = iscsi_bhs_check(c->rx_hdr, conn_phase(c), conn_max_recv(c), &c->rx_reject,
				    &why);
		if (v == ISCSI_BHS_DROP) {
			rx_fatal(c, why);
			return;
		}
		if (v == ISCSI_BHS_REJECT_CLOSE) {
			/* Nothing more is read; the Reject leaves, then the
			 * socket closes (conn_reject's close_after). */
			LOG_WARN(MOD, "%s: closing after opcode 0x%02x: %s", c->peer_str,
				 iscsi_bhs_opcode(c->rx_hdr), why);
			c->rx = RX_ERROR;
			conn_update_events(c);
			conn_reject(c, c->rx_hdr, c->rx_reject, true);
			return;
		}
		if (v == ISCSI_BHS_REJECT)
			LOG_WARN(MOD, "%s: rejecting PDU opcode 0x%02x: %s", c->peer_str,
				 iscsi_bhs_opcode(c->rx_hdr), why);
		c->rx_ahs = iscsi_bhs_ahs_len(c->rx_hdr);
		c->rx_dsl = iscsi_bhs_dsl(c->rx_hdr);
		c->rx_got = 0;
		if (c->rx_ahs) {
			c->rx = RX_AHS;
			return;
		}
		if (c->hdigest) {
			c->rx = RX_HDIGEST;
			return;
		}
		header_done(c);
		return;
	}
	case RX_AHS:
		c->rx_got = 0;
		if (c->hdigest) {
			c->rx = RX_HDIGEST;
			return;
		}
		header_done(c);
		return;
	case RX_HDIGEST:
		crc = iscsi_crc_update(ISCSI_CRC_INIT, c->rx_hdr, ISCSI_BHS_LEN + c->rx_ahs);
		if (iscsi_crc_final(crc) != iscsi_digest_get(c->rx_dig)) {
			/* The lengths cannot be trusted: framing is lost. */
			rx_fatal(c, "header digest error");
			return;
		}
		c->rx_got = 0;
		header_done(c);
		return;
	case RX_DATA:
		c->rx_got = 0;
		if (iscsi_pad4(c->rx_dsl)) {
			c->rx = RX_PAD;
			return;
		}
		/* fall through */
	case RX_PAD:
		c->rx_got = 0;
		if (c->ddigest) {
			c->rx = RX_DDIGEST;
			return;
		}
		pdu_done(c);
		return;
	case RX_DDIGEST:
		c->rx_got = 0;
		if (iscsi_crc_final(c->rx_crc) != iscsi_digest_get(c->rx_dig)) {
			if (iscsi_bhs_opcode(c->rx_hdr) == ISCSI_OP_DATA_OUT) {
				/* ERL 0: no recovery of a lost data sequence. */
				rx_fatal(c, "data digest error on Data-Out");
				return;
			}
			LOG_WARN(MOD, "%s: data digest error on opcode 0x%02x", c->peer_str,
				 iscsi_bhs_opcode(c->rx_hdr));
			if (c->rx_req) {
				c->rx_req->reject_reason = ISCSI_REJECT_DATA_DIGEST;
			} else {
				rx_fatal(c, "data digest error during login");
				return;
			}
		}
		pdu_done(c);
		return;
	case RX_ERROR:
		return;
	}
}

/* Where the current piece goes and how much of it is missing; *dst NULL:
 * payload to discard. False in RX_ERROR. */
static bool rx_piece(struct iscsi_conn *c, uint8_t **dst, uint32_t *want)
{
	switch (c->rx) {
	case RX_BHS:
		*dst = c->rx_hdr + c->rx_got;
		*want = ISCSI_BHS_LEN - c->rx_got;
		return true;
	case RX_AHS:
		*dst = c->rx_hdr + ISCSI_BHS_LEN + c->rx_got;
		*want = c->rx_ahs - c->rx_got;
		return true;
	case RX_HDIGEST:
	case RX_DDIGEST:
		*dst = c->rx_dig + c->rx_got;
		*want = ISCSI_DIGEST_LEN - c->rx_got;
		return true;
	case RX_DATA:
		*dst = c->rx_data ? c->rx_data + c->rx_got : NULL;
		*want = c->rx_dsl - c->rx_got;
		return true;
	case RX_PAD:
		*dst = c->rx_pad + c->rx_got;
		*want = iscsi_pad4(c->rx_dsl) - c->rx_got;
		return true;
	case RX_ERROR:
		break;
	}
	return false;
}

/* @n bytes of the current piece (@want missing) arrived at @p: digest,
 * advance when the piece is complete. */
static void rx_took(struct iscsi_conn *c, const uint8_t *p, uint32_t n, uint32_t want)
{
	if (c->ddigest && (c->rx == RX_DATA || c->rx == RX_PAD))
		c->rx_crc = iscsi_crc_update(c->rx_crc, p, n);
	c->rx_got += n;
	if (n == want)
		rx_advance(c);
}

static void conn_rx(struct iscsi_conn *c)
{
	int reads = RX_READS;
	bool sock_empty = false;

	c->rx_more = false;
	while (c->rx != RX_ERROR && !c->rx_paused && !c->draining) {
		uint8_t *dst;
		uint32_t want, avail = c->rb_end - c->rb_off;
		struct iovec iov[2];
		int niov = 0;
		size_t asked = 0;
		ssize_t n;

		if (!rx_piece(c, &dst, &want))
			return;
		if (avail) {
			/* from the read-ahead */
			const uint8_t *src = c->rb + c->rb_off;
			uint32_t take = avail < want ? avail : want;

			if (dst)
				memcpy(dst, src, take);
			c->rb_off += take;
			if (c->rb_off == c->rb_end)
				c->rb_off = c->rb_end = 0;
			rx_took(c, dst ? dst : src, take, want);
			continue;
		}
		if (sock_empty || reads == 0)
			return;    /* level-triggered epoll reports the rest */
		reads--;
		if (c->rx == RX_DATA && dst) {
			/* the payload straight to its buffer, what follows to rb */
			iov[niov++] = (struct iovec){ dst, want };
			asked += want;
		}
		iov[niov++] = (struct iovec){ c->rb, ISCSI_RX_BUF };
		asked += ISCSI_RX_BUF;
		n = niov == 1 ? read(c->fd, c->rb, ISCSI_RX_BUF) : readv(c->fd, iov, niov);
		if (n == 0) {
			bool boundary = c->state == CONN_FFP && c->rx == RX_BHS && c->rx_got == 0;

			/* at a PDU boundary a close is no protocol error and
			 * is not logged, but a session that ends without a
			 * Logout is still worth an event */
			if (boundary)
				iscsi_session_event(c, "session_lost",
						    "initiator closed the connection without a Logout");
			iscsi_conn_close(c, boundary ? NULL : "peer closed the connection");
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				iscsi_conn_close(c, "read error");
			return;
		}
		c->rx_bytes += (uint64_t)n;
		sock_empty = (size_t)n < asked;
		if (niov == 2) {
			uint32_t direct = (size_t)n < want ? (uint32_t)n : want;

			c->rb_end = (uint32_t)((size_t)n - direct);
			rx_took(c, dst, direct, want);
		} else {
			c->rb_end = (uint32_t)n;
		}
	}
}

static void conn_io(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	struct iscsi_conn *c = arg;

	if (events & EPOLLIN) {
		conn_rx(c);
		if (c->state == CONN_CLEANUP)
			return;
	} else if (events & (EPOLLERR | EPOLLHUP)) {
		iscsi_conn_close(c, "socket error");
		return;
	}
	if (events & EPOLLOUT) {
		tx_flush(c);
		iscsi_conn_drain_check(c);
	}
	/* between two wake-ups: no PDU half handled */
	if (c->state == CONN_LOGIN || c->state == CONN_FFP)
		RTGT_CHECK(iscsi_conn_check(c));
}

/* ---------------- once per wake-up ---------------- */

/*
 * What this wake-up's writev left of Data-In sent from the volume's memory
 * (cmd.c, queue_datain) is fetched into the tasks' buffers, which ends
 * their holds: a hold never outlives the wake-up that made it, so a peer
 * that stops reading keeps nothing of the volume's but its own buffers,
 * and a reshape waits for no socket. A fetch that fails (the member file
 * cut short behind the pool's back) closes the connection: the status
 * in the last Data-In must not reach the initiator without all its data.
 */
static void conn_unmap(struct iscsi_conn *c)
{
	for (struct iscsi_tx *tx = c->txq; tx && c->n_mapped; tx = tx->next) {
		int rc;

		if (!tx->mapped)
			continue;
		rc = iscsi_task_tx_fetch(tx);
		if (rc) {
			LOG_ERR(MOD, "%s: ITT 0x%x: reading the volume for Data-In failed (%s)",
				c->peer_str, tx->task->itt, strerror(-rc));
			iscsi_conn_close(c, "volume read failed");
			return;
		}
	}
}

bool iscsi_worker_prepare(struct ev_loop *loop, void *arg)
{
	struct iscsi_wstate *w = arg;
	bool did = false;
	struct iscsi_conn *c;

	/* a conn is taken off before its turn: what its turn queues puts it
	 * back and is written in the same pass; conns are freed only from
	 * ev_call callbacks, never inside this loop */
	while ((c = w->pend)) {
		conn_unpend(c);
		did = true;
		if (c->state == CONN_CLEANUP)
			continue;
		if (c->rx_more)
			conn_rx(c);
		if (c->state != CONN_CLEANUP && c->txq && !c->want_write)
			tx_flush(c);
		if (c->state != CONN_CLEANUP && c->n_mapped)
			conn_unmap(c);
		if (c->state != CONN_CLEANUP)
			iscsi_conn_drain_check(c);
	}
	return did;
}

/* ---------------- keepalive ---------------- */

static void conn_nop_arm(struct iscsi_conn *c)
{
	c->nop_timer = ev_timer_add(c->w->loop, 1000, conn_nop_tick, c);
}

static void conn_nop_tick(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct iscsi_conn *c = arg;
	const struct conf_daemon *d = &c->cfg->c->daemon;
	uint64_t now = ev_now_ms(loop);
	struct iscsi_tx *tx;

	c->nop_timer = NULL;
	if (c->state != CONN_FFP)
		return;
	if (c->sess->type == ISCSI_SESSION_DISCOVERY) {
		/* Only a Text request counts as use: a peer that merely
		 * answers or sends NOPs would hold its slot forever. */
		if (now - c->last_text_ms >= (uint64_t)d->discovery_idle_timeout_s * 1000) {
			iscsi_conn_close(c, "discovery session idle");
			return;
		}
	} else if (c->nop_outstanding) {
		if (now - c->nop_sent_ms >= (uint64_t)d->nop_timeout_s * 1000) {
			iscsi_conn_close(c, "no answer to NOP-In ping");
			return;
		}
	} else if (now - c->last_rx_ms >= (uint64_t)d->nop_interval_s * 1000) {
		tx = iscsi_tx_new();
		if (tx) {
			if (++c->next_ttt == ISCSI_RSVD_TAG)
				c->next_ttt = 1;
			c->nop_ttt = c->next_ttt;
			c->nop_outstanding = true;
			c->nop_sent_ms = now;
			tx->hdr[0] = ISCSI_OP_NOP_IN;
			tx->hdr[1] = ISCSI_FLAG_FINAL;
			conf_put_be32(tx->hdr + ISCSI_OFF_ITT, ISCSI_RSVD_TAG);
			conf_put_be32(tx->hdr + ISCSI_OFF_TTT, c->nop_ttt);
			/* A ping does not consume a StatSN (RFC 7143 11.19). */
			iscsi_conn_fill_sn(c, tx->hdr, false);
			iscsi_conn_queue(c, tx);
			if (c->state == CONN_CLEANUP)
				return;
		}
	}
	conn_nop_arm(c);
}

void iscsi_conn_enter_ffp(struct iscsi_conn *c)
{
	c->state = CONN_FFP;
	iscsi_conn_login_unlist(c);
	if (c->login_timer) {
		ev_timer_cancel(c->w->loop, c->login_timer);
		c->login_timer = NULL;
	}
	if (c->login) {
		iscsi_login_free(c->login);
		c->login = NULL;
	}
	c->last_rx_ms = ev_now_ms(c->w->loop);
	c->last_text_ms = c->last_rx_ms;
	/* discovery sessions always get the tick: it enforces their idle
	 * timeout (they are never pinged) */
	if (c->sess && (c->sess->type == ISCSI_SESSION_DISCOVERY ||
			c->cfg->c->daemon.nop_interval_s > 0))
		conn_nop_arm(c);
}

/* ---------------- accept ---------------- */

static void conn_attach(void *arg)
{
	struct iscsi_conn *c = arg;
	struct iscsi_server *s = c->srv;
	bool stopping;

	pthread_mutex_lock(&s->lock);
	stopping = s->stopping;
	pthread_mutex_unlock(&s->lock);

	c->next = c->w->conns;
	if (c->next)
		c->next->prev = c;
	c->w->conns = c;
	if (stopping) {
		iscsi_conn_close(c, "server shutting down");
		return;
	}
	if (ev_io_add(c->w->loop, c->fd, EV_READ, conn_io, c) < 0) {
		iscsi_conn_close(c, "cannot register socket");
		return;
	}
	c->last_rx_ms = ev_now_ms(c->w->loop);
	c->login_timer = ev_timer_add(c->w->loop, (uint64_t)c->cfg->c->daemon.login_timeout_s * 1000,
				      iscsi_login_timeout, c);
	if (!c->login_timer)
		iscsi_conn_close(c, "out of memory");
}

void iscsi_conn_accepted(struct iscsi_server *s, int fd, unsigned portal,
			 const struct sockaddr_storage *peer, bool over_limit)
{
	struct iscsi_conn *c = calloc(1, sizeof(*c));
	socklen_t len;

	if (!c)
		goto err_close;
	c->srv = s;
	c->cfg = iscsi_cfg_current(s);
	c->fd = fd;
	c->portal = portal;
	c->peer = *peer;
	c->over_limit = over_limit;
	c->state = CONN_LOGIN;
	c->next_ttt = 1;
	c->stat_sn = 1;
	iscsi_params_default(&c->params);
	sock_addr_str(peer, c->peer_str, sizeof(c->peer_str), true);
	if (sock_local_addr(fd, &c->local, &len) < 0)
		memset(&c->local, 0, sizeof(c->local));
	rx_reset(c);
	c->rb = malloc(ISCSI_RX_BUF);
	if (!c->rb || iscsi_login_init(c) < 0)
		goto err_free;
	c->w = &s->w[s->rr++ % s->n_workers];
	pthread_mutex_lock(&s->lock);
	c->id = ++s->next_conn_id;
	c->lprev = s->login_tail;
	if (s->login_tail)
		s->login_tail->lnext = c;
	else
		s->login_head = c;
	s->login_tail = c;
	c->login_listed = true;
	pthread_mutex_unlock(&s->lock);
	if (ev_call(c->w->loop, conn_attach, c) < 0)
		goto err_unlist;
	return;

err_unlist:
	iscsi_conn_login_unlist(c);
	iscsi_login_free(c->login);
	if (c->evicted) {
		/* chosen for eviction in the meantime: its count goes too */
		iscsi_cfg_put(c->cfg);
		free(c->rb);
		free(c);
		close(fd);
		iscsi_server_conn_gone(s, true);
		return;
	}
	goto err_free;
err_free:
	iscsi_cfg_put(c->cfg);
	free(c->rb);
	free(c);
err_close:
	LOG_ERR(MOD, "cannot take a new connection: out of memory");
	close(fd);
	iscsi_server_conn_gone(s, false);
}

void iscsi_conn_evict(struct iscsi_wstate *w, uint64_t id)
{
	for (struct iscsi_conn *c = w->conns; c; c = c->next) {
		if (c->id != id)
			continue;
		if (c->state == CONN_LOGIN) {
			iscsi_conn_close(c, "evicted: oldest connection still not logged in "
					    "while at max_connections");
		} else {
			/* it finished its login before this ran: it stays, and
			 * no longer counts as evicting (it counts as live, or as
			 * discovery, like any logged-in connection) */
			struct iscsi_server *s = c->srv;

			pthread_mutex_lock(&s->lock);
			if (c->evicted) {
				c->evicted = false;
				if (s->n_evicting)
					s->n_evicting--;
			}
			pthread_mutex_unlock(&s->lock);
		}
		return;
	}
}

void iscsi_conn_drain_check(struct iscsi_conn *c)
{
	if (c->draining && c->state == CONN_FFP && c->n_scsi == 0 && !c->txq)
		iscsi_conn_close(c, "server shutting down: commands answered");
}

void iscsi_conn_shutdown_worker(void *arg)
{
	struct iscsi_wstate *w = arg;
	struct iscsi_conn *c, *next;

	for (c = w->conns; c; c = next) {
		next = c->next;
		if (c->state != CONN_FFP || (c->n_scsi == 0 && !c->txq)) {
			iscsi_conn_close(c, "server shutting down");
			continue;
		}
		/* Commands inside scsi finish and are answered; new ones are
		 * not read (a command waiting for Data-Out or its CmdSN turn
		 * cannot complete and fails with the connection). */
		c->draining = true;
		conn_update_events(c);
		if (c->close_timer)
			continue;
		c->close_timer = ev_timer_add(w->loop, DRAIN_TIMEOUT_MS, conn_close_timeout, c);
		if (!c->close_timer)
			iscsi_conn_close(c, "server shutting down");
	}
}

/* ---------------- reload ---------------- */

bool iscsi_conn_reload_check(struct iscsi_conn *c, const struct iscsi_cfg *now)
{
	const struct conf *was = c->cfg->c, *nc = now->c;
	const struct conf_portal *p = &was->portals[c->portal];
	const struct conf_target *t;
	const char *why = NULL;
	char msg[400];
	int np;

	if (c->state == CONN_LOGIN && c->login) {
		/* a login is judged by the configuration current when it
		 * completes: one in progress moves to it now, or ends */
		if (iscsi_login_revalidate(c, &why) == ISCSI_LOGIN_OK)
			return false;
		iscsi_conn_close(c, why);
		return true;
	}
	if (c->cfg == now || c->state != CONN_FFP)
		return false;
	np = iscsi_portal_index(nc, p);
	if (np < 0) {
		snprintf(msg, sizeof(msg), "reload: portal %s %s removed", p->name, p->listen);
		why = msg;
	} else if (c->sess && c->sess->type == ISCSI_SESSION_DISCOVERY) {
		if (!iscsi_chap_same(&was->discovery_chap, &nc->discovery_chap))
			why = "reload: discovery CHAP credentials changed";
	} else if (c->sess && c->sess->target >= 0) {
		const char *iqn = was->targets[c->sess->target].iqn;

		t = conf_target_find(nc, iqn);
		if (!t)
			snprintf(msg, sizeof(msg), "reload: target %s removed", iqn);
		else if (!iscsi_target_allows(t, c->sess->initiator, &c->peer))
			snprintf(msg, sizeof(msg), "reload: initiator %s no longer allowed on %s",
				 c->sess->initiator, iqn);
		else if (!iscsi_chap_same(iscsi_chap_for(&was->targets[c->sess->target],
							 c->sess->initiator),
					  iscsi_chap_for(t, c->sess->initiator)))
			/* it authenticated (or did not) against credentials
			 * that no longer hold: it must log in again */
			snprintf(msg, sizeof(msg), "reload: CHAP credentials of %s changed", iqn);
		else if (!iscsi_target_on_portal(t, (unsigned)np))
			snprintf(msg, sizeof(msg), "reload: target %s no longer on portal %s", iqn,
				 p->name);
		else
			return false;
		why = msg;
	}
	if (!why)
		return false;
	iscsi_conn_close(c, why);
	return true;
}
