/*
 * target/iscsi/iscsi_int.h - private to target/iscsi: the server, worker,
 * connection, session, request and task objects shared by conn.c, login.c,
 * session.c, cmd.c, tmf.c, textreq.c and server.c.
 *
 * Threading: everything reachable from a struct iscsi_conn (its session,
 * tasks, requests, TMF operations) is touched only on the conn's reactor
 * thread. The server's session registry and counters are shared between
 * threads and guarded by iscsi_server.lock; a session's registry fields
 * (names, ISID, TSIH, target, params, reinstated) are written before it is
 * published and then only read, except `reinstated` (under the lock).
 */
#ifndef RTGT_ISCSI_INT_H
#define RTGT_ISCSI_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "target/iscsi/iscsi.h"
#include "target/iscsi/iscsi_text.h"
#include "target/iscsi/pdu.h"
#include "target/scsi/scsi.h"

struct conf_chap;
struct conf_portal;
struct conf_target;
struct ev_timer;
struct iscsi_conn;
struct iscsi_session;
struct iscsi_task;
struct iscsi_tmfop;

/* Our side of the negotiation (what we declare / accept). */
#define ISCSI_TGT_MAX_RECV_DSL (256u << 10)
#define ISCSI_TGT_MAX_BURST (1u << 20)
#define ISCSI_TGT_FIRST_BURST (256u << 10)
#define ISCSI_TGT_MAX_R2T 4u
/* Immediate commands do not consume the CmdSN window; cap them per
 * connection so a flood cannot grow memory without bound. */
#define ISCSI_MAX_IMMEDIATE_TASKS 64u
/* Data buffers of one connection's commands, in total: a command that would
 * go over is answered TASK SET FULL (unless the conn holds none, so a
 * single maximal command always runs). With the CmdSN window and
 * ISCSI_MAX_IMMEDIATE_TASKS this bounds a connection's memory. */
#define ISCSI_CONN_BUF_BUDGET (64u << 20)
/* The same over the whole server (every connection's buf_bytes): a command
 * that would go over is answered TASK SET FULL too, unless its connection
 * holds no buffer, so that every connection can still make progress; at
 * worst max_connections x SCSI_MAX_XFER beyond it. */
#define ISCSI_SRV_BUF_BUDGET (1ull << 30)
#define ISCSI_TXQ_OWN_MAX (1u << 20)
/* Receive read-ahead of a connection: one read takes this much of what the
 * socket holds (several PDUs of a busy initiator at once). */
#define ISCSI_RX_BUF (16u << 10)
/* Payloads of NOP-Out and Text requests (up to ISCSI_TGT_MAX_RECV_DSL
 * each) held while received or parked out of CmdSN order: per connection
 * and over the whole server. A PDU that would go over is read and thrown
 * away and answered with a Reject (out of resources) when its CmdSN turn
 * comes; the window bounds the number of such (payload-less) requests. */
#define ISCSI_CONN_HELD_MAX (1u << 20)
#define ISCSI_SRV_HELD_MAX (64u << 20)

/* Per-target counters, updated from every worker thread. One per target
 * IQN the server ever served (srv->all_stats), kept across reloads so that
 * a target that stays keeps counting; freed with the server. */
struct iscsi_tgt_stats {
	atomic_uint_fast64_t read_ops, write_ops, other_ops;
	atomic_uint_fast64_t read_bytes, write_bytes;
	atomic_uint_fast64_t login_ok, login_failed;
	struct conf_hist lat;         /* command service time inside scsi */
	char *iqn;                     /* owned */
	struct iscsi_tgt_stats *next;  /* srv->all_stats, under srv->lock */
};

/*
 * One configuration generation: the conf plus the scsi_target of each of
 * its targets and their counters. Reference counted: the server holds one
 * reference on the current generation, every connection one on the
 * generation current when it was accepted (its portal and session target
 * indexes are into that conf). When the last reference goes (any thread)
 * the arrays are freed and the conf handed to srv->release (the daemon
 * frees it); without a release callback the conf is left to its owner.
 */
struct iscsi_cfg {
	atomic_uint refs;
	struct iscsi_server *srv;
	const struct conf *c;          /* see above */
	struct scsi_target **targets;  /* owned array of borrowed pointers, c->n_targets */
	struct iscsi_tgt_stats **stats; /* owned array of pointers into srv->all_stats */
};

#define ISCSI_BUFC_CLASSES 5      /* 4, 8, 16, 32, 64 KiB */
#define ISCSI_BUFC_MAX 32

struct iscsi_wstate {
	struct iscsi_server *srv;
	unsigned idx;
	struct ev_loop *loop;          /* borrowed from the daemon */
	struct raid_ioctx *ioctx;      /* borrowed */
	struct iscsi_conn *conns;      /* list of live conns on this loop; loop thread only */
	/* conns with PDUs queued but not yet written, or received bytes
	 * buffered but not yet parsed: iscsi_worker_prepare() handles them
	 * once per reactor wake-up (conn.c, "Transmit") */
	struct iscsi_conn *pend;
	/* freed command buffers kept for reuse (cmd.c, cmd_buf_get): class i
	 * holds blocks of 4 KiB << i, at most ISCSI_BUFC_MAX each, linked
	 * through their first bytes; loop thread only */
	void *bufc[ISCSI_BUFC_CLASSES];
	unsigned bufc_n[ISCSI_BUFC_CLASSES];
};

struct iscsi_listener {
	struct iscsi_server *srv;
	const struct conf_portal *cp;  /* borrowed from srv->cfg->c; updated by a reload */
	unsigned idx;                  /* index in srv->cfg->c->portals */
	int fd;                        /* -1 when not listening */
};

/* CHAP failures remembered per peer address ("a:ADDR") and per initiator
 * name ("n:NAME"): every failure doubles the wait before the next CHAP
 * response of that address or name is checked (login.c). A fixed table,
 * the least recent entry is reused; an entry quiet for
 * ISCSI_AUTHFAIL_FORGET_MS starts over. */
#define ISCSI_AUTHFAIL_SLOTS 256
#define ISCSI_AUTHFAIL_BASE_MS 250u
#define ISCSI_AUTHFAIL_MAX_MS 8000u
#define ISCSI_AUTHFAIL_FORGET_MS (15u * 60 * 1000)

struct iscsi_authfail {
	char key[232];                 /* "" when free */
	unsigned fails;                /* in a row, since the last success */
	uint64_t last_ms;              /* last failure, CLOCK_MONOTONIC */
	uint64_t next_ms;              /* next CHAP response checked not before */
};

struct iscsi_server {
	/* Current generation: replaced only on workers[0]'s thread under
	 * lock (iscsi_server_reload), so workers[0] reads it freely and other
	 * threads under lock. Never NULL after create. Reference held. */
	struct iscsi_cfg *cfg;
	void (*release)(const struct conf *c, void *arg);  /* may be NULL */
	void *release_arg;
	struct iscsi_wstate *w;        /* owned, n_workers */
	unsigned n_workers;
	struct iscsi_listener **ls;    /* owned, one per portal of cfg->c, same order */
	unsigned n_ls;
	struct iscsi_limits lim;
	unsigned rr;                   /* next worker for an accepted conn (workers[0] thread) */

	pthread_mutex_t lock;          /* guards everything below */
	struct iscsi_tgt_stats *all_stats; /* owned list */
	struct iscsi_session *sessions; /* registry: every session not yet freed */
	unsigned n_sessions;
	unsigned n_conns;              /* accepted and not yet freed */
	/* Conns still in the login phase, oldest first (lprev/lnext): at
	 * max_connections the oldest is evicted for a newcomer, so that idle
	 * sockets cannot lock every initiator out. */
	struct iscsi_conn *login_head, *login_tail;
	unsigned n_evicting;           /* evicted, not yet freed (still in n_conns) */
	/* Registered discovery sessions not yet freed (their conns are in
	 * n_conns but not counted against max_connections: they have their
	 * own cap, daemon.max_discovery_sessions). */
	unsigned n_discovery;
	uint64_t next_conn_id;
	uint16_t next_tsih;
	struct iscsi_authfail authfail[ISCSI_AUTHFAIL_SLOTS];
	bool stopping;
	/* not under lock: sum of every conn's held_bytes (ISCSI_SRV_HELD_MAX) */
	atomic_size_t held_bytes;
	/* not under lock: sum of every conn's buf_bytes (ISCSI_SRV_BUF_BUDGET) */
	_Atomic uint64_t buf_bytes;
	void (*shutdown_done)(void *arg);
	void *shutdown_arg;
};

/* ---------------- transmit ---------------- */

/* One PDU waiting to be written. Header digest and data digest are
 * computed when the PDU is queued, so the digest state in force then is
 * the one that applies (the last login response has none). */
struct iscsi_tx {
	struct iscsi_tx *next;
	uint8_t hdr[ISCSI_BHS_LEN + ISCSI_DIGEST_LEN];
	uint32_t hdr_len;
	const uint8_t *data;           /* NULL when dlen == 0; into own or a task buffer */
	uint8_t *own;                  /* owned payload to free when sent, may be NULL */
	uint32_t dlen;
	uint8_t trailer[3 + ISCSI_DIGEST_LEN]; /* pad bytes then data digest */
	uint32_t trailer_len;
	uint32_t sent;                 /* bytes of this PDU already written */
	struct iscsi_task *task;       /* holds a reference while queued, may be NULL */
	bool close_after;              /* close the connection once written */
	/* data is piece map_piece of task->cmd.data_hold (the volume's
	 * memory), not the task's buffer: sent by this wake-up's writev or
	 * fetched into the buffer right after it (conn.c, conn_unmap) */
	bool mapped;
	uint16_t map_piece;
};

/* ---------------- requests (PDUs that carry a CmdSN) ---------------- */

struct iscsi_req {
	struct iscsi_req *next;        /* CmdSN-ordered pending list */
	uint8_t bhs[ISCSI_BHS_LEN + ISCSI_AHS_MAX];
	uint32_t ahs_len;
	uint8_t *data;                 /* owned, NULL when the payload went to a task */
	uint32_t dlen;
	struct iscsi_task *task;       /* SCSI command's task, owned until dispatched */
	uint32_t cmdsn;
	uint8_t reject_reason;         /* != 0: answer with a Reject when its turn comes */
	bool immediate;
	bool placeholder;              /* CmdSN consumed by an ABORT TASK, no PDU */
	/* bytes of data charged to held_by's and the server's held budget
	 * (ISCSI_CONN_HELD_MAX); 0: none */
	uint32_t held;
	struct iscsi_conn *held_by;
};

/* ---------------- tasks (SCSI commands) ---------------- */

/*
 * Task states (see cmd.c for the transitions):
 *   TASK_NEW        created from the command header, taking immediate data
 *   TASK_QUEUED     waiting in the CmdSN gap queue (inside its req)
 *   TASK_DATA_OUT   dispatched, collecting unsolicited / solicited Data-Out
 *   TASK_EXEC       inside scsi_cmd_exec(), waiting for cmd->done
 *   TASK_RESPONDING response PDUs queued; freed when the last one is sent
 */
enum iscsi_task_state {
	TASK_NEW,
	TASK_QUEUED,
	TASK_DATA_OUT,
	TASK_EXEC,
	TASK_RESPONDING,
};

struct iscsi_r2t {
	uint32_t ttt;
	uint32_t off, len;             /* requested range */
	uint32_t next_off;             /* next byte expected */
	uint32_t datasn;               /* next DataSN expected */
	bool active;
};

struct iscsi_task {
	struct scsi_cmd cmd;           /* cmd.tpriv == this; cmd.buf owned */
	struct iscsi_conn *conn;
	struct iscsi_task *prev, *next; /* conn->tasks list */
	enum iscsi_task_state state;
	int refs;                      /* list membership + queued tx PDUs + scsi */
	uint32_t itt, cmdsn;
	uint8_t lun_raw[8];
	bool immediate;
	bool counted;                  /* non-immediate: counts against the window */
	bool in_scsi;
	bool listed;                   /* on conn->tasks */
	struct iscsi_req *req;         /* the request holding it until dispatch, may be NULL */
	bool dead;                     /* aborted by us: no response, discard data */
	bool early_status;             /* answered without scsi (status already set) */
	uint32_t tmf_id;               /* highest TMF that aborted it, 0: none */
	uint32_t imm_len;              /* immediate data bytes */
	uint32_t unsol_end;            /* end of the unsolicited range */
	uint32_t unsol_next;           /* next unsolicited offset expected */
	uint32_t unsol_datasn;
	bool unsol_open;               /* unsolicited Data-Out may still come */
	uint32_t received;             /* bytes of data-out received in total */
	uint32_t r2t_next;             /* next offset to solicit */
	uint32_t r2tsn;                /* R2Ts sent */
	uint32_t datain_pdus;          /* Data-In PDUs sent */
	uint64_t exec_us;              /* monotonic us when handed to scsi, 0: never */
	unsigned mapped_tx;            /* queued tx with mapped data; cmd.data_hold
	                                * is released when it drops to 0 */
	struct iscsi_r2t r2t[ISCSI_TGT_MAX_R2T];
};

/* ---------------- connection ---------------- */

/*
 * Connection states (transitions in conn.c):
 *   CONN_LOGIN      accepted, login PDUs only; login timer armed
 *   CONN_FFP        full feature phase
 *   CONN_CLOSING    last PDU (login reject, logout response) queued; close when written
 *   CONN_CLEANUP    socket closed; waiting for commands inside scsi to finish
 */
enum iscsi_conn_state {
	CONN_LOGIN,
	CONN_FFP,
	CONN_CLOSING,
	CONN_CLEANUP,
};

enum iscsi_rx_state {
	RX_BHS,
	RX_AHS,
	RX_HDIGEST,
	RX_DATA,
	RX_PAD,
	RX_DDIGEST,
	RX_ERROR,                      /* sticky: nothing more is read */
};

struct iscsi_login;
struct iscsi_textop;

struct iscsi_conn {
	struct iscsi_server *srv;
	struct iscsi_cfg *cfg;         /* reference held until freed; never NULL */
	struct iscsi_wstate *w;
	struct iscsi_conn *prev, *next; /* w->conns */
	int fd;                        /* -1 after close */
	enum iscsi_conn_state state;
	unsigned portal;               /* index of the conf portal it came in on */
	struct sockaddr_storage local, peer;
	char peer_str[64];
	bool over_limit;               /* accepted beyond max_connections: refuse the login */
	uint64_t id;                   /* unique per server, for cross-thread lookups */
	/* srv->login_head list membership; all three under srv->lock */
	struct iscsi_conn *lprev, *lnext;
	bool login_listed;
	bool evicted;                  /* chosen for eviction (counted in n_evicting) */

	/* receive */
	enum iscsi_rx_state rx;
	/* socket bytes read ahead and not yet parsed: rb[rb_off, rb_end)
	 * (ISCSI_RX_BUF bytes, owned) */
	uint8_t *rb;
	uint32_t rb_off, rb_end;
	bool rx_more;                  /* rb holds bytes that wait for a resume */
	uint8_t rx_hdr[ISCSI_BHS_LEN + ISCSI_AHS_MAX];
	uint8_t rx_dig[ISCSI_DIGEST_LEN];
	uint8_t rx_pad[4];
	uint32_t rx_got;               /* bytes of the current state's piece */
	uint32_t rx_ahs, rx_dsl;
	uint8_t *rx_data;              /* payload destination; NULL: discard */
	struct iscsi_req *rx_req;      /* request being received, owned */
	struct iscsi_task *rx_task;    /* Data-Out target task (borrowed) */
	uint32_t rx_crc;
	uint8_t rx_reject;             /* != 0: the PDU gets a Reject */
	bool hdigest, ddigest;
	uint64_t last_rx_ms;

	/* transmit */
	struct iscsi_tx *txq, *txq_tail;
	unsigned txq_len;
	/* Memory the queue itself owns (tx structs and own payloads; task
	 * buffers are bounded by ISCSI_CONN_BUF_BUDGET). Over
	 * ISCSI_TXQ_OWN_MAX reading pauses (rx_paused) until the peer reads:
	 * a peer sending NOP-Outs but never reading cannot grow it. */
	size_t txq_own;
	unsigned n_mapped;             /* tx in the queue with mapped data */
	bool rx_paused;
	bool want_write;
	/* on w->pend (pprev/pnext): a flush or an rx resume is due */
	bool pend_listed;
	struct iscsi_conn *pprev, *pnext;
	uint32_t stat_sn;              /* next StatSN to assign */

	/* login phase, owned, NULL once in full feature phase */
	struct iscsi_login *login;
	struct ev_timer *login_timer;
	/* a CHAP response held back by the failure rate limit; NULL otherwise */
	struct ev_timer *auth_timer;
	/* CONN_CLOSING: bounds how long a last PDU may wait for a peer that
	 * does not read; NULL otherwise */
	struct ev_timer *close_timer;
	/* server shutdown: nothing more is read; closed once the commands
	 * inside scsi are answered and the queue is written (or close_timer) */
	bool draining;

	/* full feature phase */
	struct iscsi_session *sess;    /* owned by the conn (one conn per session) */
	struct iscsi_params params;
	struct iscsi_neg neg;          /* kept for text renegotiation */
	struct iscsi_task *tasks;
	unsigned n_tasks, n_imm, n_scsi;
	uint64_t buf_bytes;            /* sum of live tasks' cmd.buf_len */
	size_t held_bytes;             /* sum of its reqs' held (ISCSI_CONN_HELD_MAX) */
	bool held_warned;              /* the over-budget line was logged */
	uint32_t next_ttt;
	struct iscsi_tmfop *tmfs;      /* TMFs waiting for their tasks, in arrival order */
	uint32_t next_tmf_id;
	struct iscsi_textop *text;     /* Text request continuation, may be NULL */
	struct ev_timer *nop_timer;
	bool nop_outstanding;
	uint32_t nop_ttt;
	uint64_t nop_sent_ms;
	/* discovery session: last Text request (or login), for
	 * daemon.discovery_idle_timeout */
	uint64_t last_text_ms;
	bool free_posted;

	/* counters */
	uint64_t rx_bytes, tx_bytes, rx_pdus, tx_pdus;
};

/* ---------------- session ---------------- */

/*
 * Session states: LOGGED_IN (in the registry, conn attached) ->
 * REINSTATED (another login took its place: conn being closed) -> freed by
 * its conn's cleanup. A session without a conn does not exist (ERL 0).
 */
struct iscsi_session {
	struct iscsi_session *next;    /* srv->sessions, under srv->lock */
	struct iscsi_server *srv;
	char *initiator;               /* owned */
	char *alias;                   /* owned, may be NULL */
	uint8_t isid[6];
	uint16_t tsih;
	enum iscsi_session_type type;
	const struct iscsi_cfg *cfg;   /* the conn's generation (borrowed; outlives us) */
	int target;                    /* index in cfg->c->targets, -1 for discovery */
	struct scsi_target *st;        /* that target (stable across reloads), NULL for discovery */
	unsigned portal;               /* index in cfg->c->portals */
	struct scsi_nexus *nexus;      /* owned, NULL for discovery */
	struct iscsi_params params;
	struct ev_loop *loop;          /* the conn's reactor */
	struct iscsi_conn *conn;       /* loop thread only */
	/* command counters of this session (login_* and iqn unused); written
	 * on the loop thread, read by the status JSON under srv->lock */
	struct iscsi_tgt_stats stats;
	bool reinstated;               /* under srv->lock */
	/* logged out (response queued): no longer counts against max_sessions
	 * nor as a nexus to reinstate, though the conn may still be draining;
	 * under srv->lock */
	bool ended;

	/* the connection's socket, for TCP_INFO in the path view (live.c):
	 * -1 once the conn closed it; under srv->lock */
	int sock_fd;
	struct sockaddr_storage local, peer;  /* set at create, then constant */

	/* CmdSN window; loop thread only */
	uint32_t exp_cmdsn, max_cmdsn;
	unsigned depth;
	struct iscsi_req *pending;     /* CmdSN-sorted, all after exp_cmdsn */
	unsigned n_pending;
};

/* ---------------- server.c / live.c ---------------- */
/* The negotiated parameters as rtgtctl sessions shows them. */
struct json_object *iscsi_params_json(const struct iscsi_params *p);
/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6), "?" for anything else. */
struct json_object *iscsi_addr_json(const struct sockaddr_storage *ss);

/* ---------------- conn.c ---------------- */
void iscsi_conn_accepted(struct iscsi_server *s, int fd, unsigned portal,
			 const struct sockaddr_storage *peer, bool over_limit);
void iscsi_conn_close(struct iscsi_conn *c, const char *why);
void iscsi_conn_shutdown_worker(void *arg);
/* On @w's thread: closes conn @id if it is still logging in (eviction). */
void iscsi_conn_evict(struct iscsi_wstate *w, uint64_t id);
/* Takes @c off srv's login list (under srv->lock); harmless if not on it. */
void iscsi_conn_login_unlist(struct iscsi_conn *c);
void iscsi_conn_login_unlist_locked(struct iscsi_conn *c);
void iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx *tx);
struct iscsi_tx *iscsi_tx_new(void);
/* Finishes a tx whose hdr (48 bytes) and data are filled: DSL, digests,
 * padding; then queues it. */
void iscsi_conn_queue(struct iscsi_conn *c, struct iscsi_tx *tx);
/* Writes the queue now rather than at the prepare hook (a PDU the peer
 * waits on before it can send more, like an R2T). May close the conn:
 * -EPIPE then. */
int iscsi_conn_flush(struct iscsi_conn *c);
/* Fills StatSN (consuming one when @advance), ExpCmdSN and MaxCmdSN. */
void iscsi_conn_fill_sn(struct iscsi_conn *c, uint8_t *bhs, bool advance);
void iscsi_conn_send_reject(struct iscsi_conn *c, const uint8_t *bhs, uint8_t reason);
void iscsi_conn_enter_ffp(struct iscsi_conn *c);
void iscsi_conn_task_released(struct iscsi_conn *c);
/* A draining conn (shutdown) whose last command was answered and written
 * is closed here. Call only where @c may be closed under the caller. */
void iscsi_conn_drain_check(struct iscsi_conn *c);
bool iscsi_conn_check(const struct iscsi_conn *c);
/* The worker's prepare hook (ev_prepare_add, server.c): writes every
 * queue filled during this reactor wake-up, one writev per connection,
 * and parses read-ahead left by a resumed connection. True when it did. */
bool iscsi_worker_prepare(struct ev_loop *loop, void *arg);

/* ---------------- login.c ---------------- */
int iscsi_login_init(struct iscsi_conn *c);
void iscsi_login_free(struct iscsi_login *l);
void iscsi_login_rx(struct iscsi_conn *c, const uint8_t *bhs, const uint8_t *data, uint32_t dlen);
void iscsi_login_timeout(struct ev_loop *loop, struct ev_timer *t, void *arg);
/* A login still running is judged by the configuration current now: when
 * a reload replaced c->cfg, re-checks portal, target, allow list and CHAP
 * credentials against the new generation and moves the login to it.
 * Returns ISCSI_LOGIN_OK, or the status to refuse with (*why set). */
uint16_t iscsi_login_revalidate(struct iscsi_conn *c, const char **why);
/* Status class/detail for a login refused because of server limits. */
uint16_t iscsi_login_limit_status(unsigned n_sessions, unsigned max_sessions,
				  unsigned n_conns, unsigned max_conns);

/* ---------------- session.c ---------------- */
enum iscsi_cmdsn_verdict {
	ISCSI_CMDSN_NOW,               /* == ExpCmdSN: run it and advance */
	ISCSI_CMDSN_QUEUE,             /* inside the window but ahead: hold */
	ISCSI_CMDSN_DROP,              /* outside: silently ignore */
};
enum iscsi_cmdsn_verdict iscsi_cmdsn_classify(uint32_t exp, uint32_t max, uint32_t sn);
/* The MaxCmdSN to advertise: never below the last one, at most
 * depth - active commands ahead of ExpCmdSN. */
uint32_t iscsi_cmdsn_max(uint32_t exp, uint32_t prev_max, unsigned depth, unsigned active);

int iscsi_session_create(struct iscsi_conn *c, struct iscsi_session **out);
/* Registers @sess (assigning a TSIH) and returns the session it replaces
 * (already flagged reinstated) in *old_tsih (0 when none). Returns 0 or
 * -EUSERS when max_sessions is reached. */
int iscsi_session_register(struct iscsi_server *s, struct iscsi_session *sess,
			   uint16_t *old_tsih, struct ev_loop **old_loop);
void iscsi_session_kill(struct iscsi_server *s, struct ev_loop *loop, uint16_t tsih);
void iscsi_session_free(struct iscsi_session *sess);
/* Reports @c's normal session through the session event callback (see
 * iscsi.h), unless the server is stopping or the session logged out. On
 * the conn's reactor. */
void iscsi_session_event(struct iscsi_conn *c, const char *kind, const char *why);
/* Hands a received request to the CmdSN machinery: runs it now, queues it
 * or drops it; takes ownership of @req. */
void iscsi_session_submit(struct iscsi_conn *c, struct iscsi_req *req);
/* Consumes @cmdsn as if received (ABORT TASK of a command not yet here). */
void iscsi_session_consume(struct iscsi_conn *c, uint32_t cmdsn);
void iscsi_session_update_window(struct iscsi_conn *c);
void iscsi_req_free(struct iscsi_req *req);
/* Gives back what @req's data was charged (its data leaves the req). */
void iscsi_req_uncharge(struct iscsi_req *req);
/* Dispatches one in-order request to its handler (owns @req). */
void iscsi_req_dispatch(struct iscsi_conn *c, struct iscsi_req *req);
bool iscsi_session_check(const struct iscsi_session *sess);

/* ---------------- cmd.c ---------------- */
/* Header of a SCSI Command received: create its task and say where the
 * immediate data goes. Returns 0, or a Reject reason (> 0). */
int iscsi_cmd_prepare(struct iscsi_conn *c, struct iscsi_req *req);
/* Frees @w's cache of command buffers (server destroy, tests). */
void iscsi_bufc_drop(struct iscsi_wstate *w);
void iscsi_cmd_dispatch(struct iscsi_conn *c, struct iscsi_req *req);
/* Header of a Data-Out received: returns 0 (c->rx_data set, maybe NULL to
 * discard) or -EPROTO when the connection must be dropped (*why set). */
int iscsi_dataout_prepare(struct iscsi_conn *c, const char **why);
void iscsi_dataout_done(struct iscsi_conn *c);
struct iscsi_task *iscsi_task_find(struct iscsi_conn *c, uint32_t itt);
void iscsi_task_put(struct iscsi_task *t);
/* @tx (mapped data) leaves the queue or gets a copy in the buffer: the
 * last such tx of its task ends the task's data hold. */
void iscsi_task_tx_unmapped(struct iscsi_tx *tx);
/* Fetches mapped @tx's data into its task's buffer and points it there:
 * 0, or -errno when the volume's storage could not give it. */
int iscsi_task_tx_fetch(struct iscsi_tx *tx);
void iscsi_task_abort(struct iscsi_task *t, uint32_t tmf_id);
/* Connection teardown: every task is aborted; those inside scsi are
 * unlinked and freed by their completion. */
void iscsi_tasks_abort_all(struct iscsi_conn *c);
/* Residual for edtl vs. what the command asked: flags (O/U) and count. */
void iscsi_residual(uint32_t edtl, uint32_t xfer_len, uint8_t *flags, uint32_t *count);
/* Splits @len bytes of Data-In by @max_dsl and @max_burst; returns the
 * number of PDUs and whether PDU @i ends a sequence (F bit). */
uint32_t iscsi_datain_count(uint32_t len, uint32_t max_dsl);
bool iscsi_datain_final(uint32_t off, uint32_t seg, uint32_t len, uint32_t max_burst);

/* ---------------- tmf.c ---------------- */
void iscsi_tmf_dispatch(struct iscsi_conn *c, struct iscsi_req *req);
/* A task that a TMF may wait for ended: re-check pending TMFs. */
void iscsi_tmf_progress(struct iscsi_conn *c);
void iscsi_tmf_free_all(struct iscsi_conn *c);
uint8_t iscsi_tmf_scsi_fn(uint8_t iscsi_fn, int *scsi_fn);

/* ---------------- textreq.c ---------------- */
void iscsi_text_dispatch(struct iscsi_conn *c, struct iscsi_req *req);
void iscsi_textop_free(struct iscsi_textop *t);
/* SendTargets answer for @initiator: "All", a target name or "" (the
 * session's own target, @own >= 0). Appends to @out. */
int iscsi_sendtargets(const struct conf *c, const char *initiator, const char *what,
		      int own, const struct sockaddr_storage *local, struct iscsi_textbuf *out);
/* The same, listing only targets served on portal @portal (index in @c;
 * -1: every portal). A listed target still gets every one of its portals'
 * addresses, so multipath discovery through one portal finds all paths.
 * This is what a session's SendTargets uses, with the portal it came in on. */
int iscsi_sendtargets_portal(const struct conf *c, const char *initiator, const char *what,
			     int own, int portal, const struct sockaddr_storage *local,
			     const struct sockaddr_storage *peer, struct iscsi_textbuf *out);
/* Whether @initiator may log in to @t from @peer (NULL: an unknown address,
 * which no address rule matches): an "allow" entry naming it decides
 * alone (its address rule, if any, must match @peer); otherwise "ALL", a
 * plain name or an address-only entry containing @peer lets it in. */
bool iscsi_target_allows(const struct conf_target *t, const char *initiator,
			 const struct sockaddr_storage *peer);
bool iscsi_target_on_portal(const struct conf_target *t, unsigned portal);
/* Same CHAP credentials (both directions) in two configurations. */
bool iscsi_chap_same(const struct conf_chap *a, const struct conf_chap *b);
/* The CHAP credentials @initiator must prove on @t: its own "allow" entry's
 * when it has one (matched case-insensitively, like the allow list), else
 * the target-level ones (user NULL: none). Never NULL. Comparing these with
 * iscsi_chap_same across a reload tells whether that initiator's proof
 * still holds. */
const struct conf_chap *iscsi_chap_for(const struct conf_target *t, const char *initiator);
/* "host:port,tpgt" with brackets for IPv6; a wildcard listen address is
 * replaced by @local's address. */
void iscsi_format_portal(const struct conf_portal *p, const struct sockaddr_storage *local,
			 char *buf, size_t len);

/* ---------------- server.c ---------------- */
/* Called on any thread when a conn is freed: may finish a shutdown. */
void iscsi_server_conn_gone(struct iscsi_server *s, bool evicted);
/* Connections that count against max_connections: accepted, not freed, and
 * not already evicted. Caller holds s->lock. */
unsigned iscsi_server_live_conns(const struct iscsi_server *s);
/* Counters of target @target of @cfg, NULL when out of range. */
struct iscsi_tgt_stats *iscsi_cfg_stats(const struct iscsi_cfg *cfg, int target);
/* The index in @c of the portal that is @p (same name, listen address and
 * TPGT; @p may be of another configuration), -1 when none. */
int iscsi_portal_index(const struct conf *c, const struct conf_portal *p);
/* A reference on the current generation (any thread). */
struct iscsi_cfg *iscsi_cfg_current(struct iscsi_server *s);
/* Drops a reference; the last one frees the generation (any thread). */
void iscsi_cfg_put(struct iscsi_cfg *cfg);
/* On a conn's own thread after a reload: closes it when the new
 * generation no longer serves it (portal gone, target gone, initiator not
 * allowed, target no longer on the portal). Returns true when closed. */
bool iscsi_conn_reload_check(struct iscsi_conn *c, const struct iscsi_cfg *now);

#endif
