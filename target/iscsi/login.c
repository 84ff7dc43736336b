/*
 * target/iscsi/login.c - the login phase (RFC 7143 section 6, 11.12,
 * 11.13): stages and transitions, session type, target lookup and access
 * control, authentication (None / CHAP via iscsi_chap_step), operational
 * negotiation (iscsi_neg_*), session creation and reinstatement.
 *
 * Login state machine (struct iscsi_login.stage, conn in CONN_LOGIN):
 *
 *   START --first PDU, CSG=0--> SECURITY
 *   START --first PDU, CSG=1 (only if no CHAP configured)--> OPERATIONAL
 *   SECURITY --T=1, authenticated, NSG=1--> OPERATIONAL
 *   SECURITY / OPERATIONAL --T=1, NSG=3, login_finish ok--> FFP
 *        (iscsi_conn_enter_ffp; digests start with the next PDU)
 *   any --error: login_fail (status class 2/3 response, close after)--> FAILED
 *        (an InitiatorName or TargetName that is not an RFC 7143 4.2.7
 *        name after case mapping, iscsi_name_ok: 02/00, initiator error)
 *   any --login timer (daemon.login_timeout_s)--> conn closed
 *   SECURITY --request with CHAP_R while its address or initiator name has
 *        CHAP failures in a row--> held (l->held, text kept in acc,
 *        conn->auth_timer) --timer--> the same request handled once more
 *        (chap_slot); another request while held: 02/00
 *   any --a reload replaced the configuration (checked at every request,
 *        before the session is created, and by the reload sweep):
 *        iscsi_login_revalidate moves the login to the new generation, or
 *        refuses it (portal gone 03/01, target gone 02/03, initiator no
 *        longer allowed by name or address 02/02, CHAP credentials
 *        changed 02/01, discovery CHAP credentials changed 02/01)
 *
 * Discovery sessions need the configuration's discovery CHAP when it has
 * one (login_creds); normal sessions their initiator's on the target.
 *
 * CHAP failure rate limit: every wrong CHAP response counts against the
 * peer address and the initiator name (srv->authfail); the next response
 * of either waits ISCSI_AUTHFAIL_BASE_MS doubling per failure in a row (at
 * most ISCSI_AUTHFAIL_MAX_MS and half the login timeout), responses of one
 * key taking turns; a success clears both keys.
 *
 * Requests with C=1 are collected (an empty response asks for more) and the
 * joined text is handled when C=0. The target only answers T=1 when the
 * initiator asked for the transit and the current stage is complete.
 *
 * Invariants (login_check): stage is SECURITY or OPERATIONAL while the
 * login runs; auth_done is set before leaving SECURITY; the collected text
 * never exceeds LOGIN_TEXT_MAX; held iff conn->auth_timer is armed.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"
#define LOGIN_TEXT_MAX (64u << 10)

struct iscsi_login {
	bool started;
	int stage;                     /* ISCSI_STAGE_SECURITY / _OPERATIONAL */
	uint8_t isid[6];
	uint16_t tsih;
	uint16_t cid;
	uint32_t cmdsn;
	char *initiator;               /* owned, NULL until declared */
	char *alias;                   /* owned, may be NULL */
	bool typed;                    /* session type and target settled */
	enum iscsi_session_type type;
	int target;                    /* conf target index, -1: none */
	bool chap_required;
	bool auth_chap;                /* AuthMethod=CHAP agreed */
	bool auth_done;
	struct iscsi_chap chap;
	uint8_t *acc;                  /* owned: text of C=1 PDUs */
	size_t acc_len;
	/* CHAP failure rate limit: a request carrying CHAP_R waits (held,
	 * its text kept in acc) until auth_timer lets it through once */
	bool held;
	bool chap_slot;
	uint8_t held_bhs[ISCSI_BHS_LEN];
	char why_buf[200];             /* a why built at run time */
	char asked[224];               /* a TargetName not served here (validated:
	                                * an RFC 7143 name, at most 223 bytes) */
};

static bool login_check(const struct iscsi_login *l)
{
	if (l->stage != ISCSI_STAGE_SECURITY && l->stage != ISCSI_STAGE_OPERATIONAL)
		return false;
	if (l->stage == ISCSI_STAGE_OPERATIONAL && !l->auth_done)
		return false;
	return l->acc_len <= LOGIN_TEXT_MAX;
}

int iscsi_login_init(struct iscsi_conn *c)
{
	c->login = calloc(1, sizeof(*c->login));
	if (!c->login)
		return -ENOMEM;
	c->login->target = -1;
	return 0;
}

void iscsi_login_free(struct iscsi_login *l)
{
	if (!l)
		return;
	free(l->initiator);
	free(l->alias);
	free(l->acc);
	free(l);
}

uint16_t iscsi_login_limit_status(unsigned n_sessions, unsigned max_sessions,
				  unsigned n_conns, unsigned max_conns)
{
	if (max_conns && n_conns > max_conns)
		return ISCSI_LOGIN_TOO_MANY_CONNS;
	if (n_sessions >= max_sessions)
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	return ISCSI_LOGIN_OK;
}

void iscsi_login_timeout(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct iscsi_conn *c = arg;

	c->login_timer = NULL;
	if (c->state == CONN_LOGIN || c->state == CONN_CLOSING)
		iscsi_conn_close(c, "login timeout");
}

static void login_header(struct iscsi_conn *c, const uint8_t *req, uint8_t *hdr, bool transit,
			 int csg, int nsg, uint16_t tsih)
{
	struct iscsi_login *l = c->login;
	unsigned depth = c->cfg->c->daemon.queue_depth ? c->cfg->c->daemon.queue_depth : 128;

	hdr[0] = ISCSI_OP_LOGIN_RSP;
	hdr[1] = (uint8_t)((transit ? ISCSI_LOGIN_TRANSIT : 0) | ((csg & 3) << 2) |
			   (transit ? (nsg & 3) : 0));
	hdr[2] = 0;    /* VersionMax */
	hdr[3] = 0;    /* VersionActive */
	memcpy(hdr + ISCSI_OFF_ISID, req + ISCSI_OFF_ISID, 6);
	conf_put_be16(hdr + ISCSI_OFF_TSIH, tsih);
	memcpy(hdr + ISCSI_OFF_ITT, req + ISCSI_OFF_ITT, 4);
	conf_put_be32(hdr + ISCSI_OFF_STATSN, c->stat_sn++);
	conf_put_be32(hdr + ISCSI_OFF_EXPCMDSN, l ? l->cmdsn : 0);
	conf_put_be32(hdr + ISCSI_OFF_MAXCMDSN, (l ? l->cmdsn : 0) + depth - 1);
}

static _Atomic(iscsi_login_event_fn) login_ev_fn;
static void *_Atomic login_ev_arg;

void iscsi_set_login_event_fn(iscsi_login_event_fn fn, void *arg)
{
	atomic_store(&login_ev_fn, NULL);
	atomic_store(&login_ev_arg, arg);
	atomic_store(&login_ev_fn, fn);
}

static void login_fail(struct iscsi_conn *c, const uint8_t *req, uint16_t status, const char *why)
{
	struct iscsi_tx *tx = iscsi_tx_new();
	struct iscsi_login *l = c->login;
	int csg = (iscsi_bhs_flags(req) >> 2) & 3;

	/* one line with everything an operator greps for; never a CHAP
	 * value (why is one of our fixed strings) */
	LOG_WARN(MOD, "login refused: initiator %s isid %02x%02x%02x%02x%02x%02x target %s "
		      "portal %s from %s: %s (status 0x%04x)",
		 l && l->initiator ? l->initiator : "?", l ? l->isid[0] : 0, l ? l->isid[1] : 0,
		 l ? l->isid[2] : 0, l ? l->isid[3] : 0, l ? l->isid[4] : 0, l ? l->isid[5] : 0,
		 l && l->target >= 0 ? c->cfg->c->targets[l->target].iqn
				     : (l && l->typed && l->type == ISCSI_SESSION_DISCOVERY ? "(discovery)"
				        : l && l->asked[0] ? l->asked : "?"),
		 c->cfg->c->portals[c->portal].name, c->peer_str, why, status);
	if (l && l->target >= 0)
		atomic_fetch_add(&iscsi_cfg_stats(c->cfg, l->target)->login_failed, 1);
	{
		iscsi_login_event_fn fn = atomic_load(&login_ev_fn);

		if (fn)
			fn(atomic_load(&login_ev_arg), &(struct iscsi_login_event){
				.initiator = l && l->initiator ? l->initiator : "?",
				.target = l && l->target >= 0 ? c->cfg->c->targets[l->target].iqn
					  : (l && l->typed && l->type == ISCSI_SESSION_DISCOVERY
					     ? "(discovery)" : l && l->asked[0] ? l->asked : "?"),
				.portal = c->cfg->c->portals[c->portal].name,
				.peer = c->peer_str, .reason = why, .status = status });
	}
	if (!tx) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	login_header(c, req, tx->hdr, false, csg, 0, 0);
	tx->hdr[ISCSI_OFF_STATUS_CLASS] = (uint8_t)(status >> 8);
	tx->hdr[ISCSI_OFF_STATUS_DETAIL] = (uint8_t)status;
	tx->close_after = true;
	iscsi_conn_queue(c, tx);
}

static bool list_has(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && strncmp(p, item, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

static int find_target(const struct conf *cf, const char *name)
{
	for (unsigned i = 0; i < cf->n_targets; i++)
		if (strcasecmp(cf->targets[i].iqn, name) == 0)
			return (int)i;
	return -1;
}

const struct conf_chap *iscsi_chap_for(const struct conf_target *t, const char *initiator)
{
	for (unsigned i = 0; initiator && i < t->n_acls; i++)
		if (strcasecmp(t->acls[i].initiator, initiator) == 0)
			return &t->acls[i].chap;
	return &t->chap;
}

/* The credentials this login must prove in @cf: a discovery session the
 * "discovery" ones, a normal session its initiator's on its target. */
static const struct conf_chap *login_creds(const struct conf *cf, const struct iscsi_login *l)
{
	if (l->type == ISCSI_SESSION_DISCOVERY || l->target < 0)
		return &cf->discovery_chap;
	return iscsi_chap_for(&cf->targets[l->target], l->initiator);
}

uint16_t iscsi_login_revalidate(struct iscsi_conn *c, const char **why)
{
	struct iscsi_login *l = c->login;
	struct iscsi_cfg *now = iscsi_cfg_current(c->srv);
	const struct conf *was = c->cfg->c, *nc = now->c;
	const struct conf_portal *p = &was->portals[c->portal];
	uint16_t st = ISCSI_LOGIN_OK;
	int np = -1, nt = -1;

	if (now == c->cfg) {
		iscsi_cfg_put(now);
		return ISCSI_LOGIN_OK;
	}
	np = iscsi_portal_index(nc, p);
	if (np < 0) {
		*why = "reload during login: portal removed";
		st = ISCSI_LOGIN_SERVICE_UNAVAILABLE;
		goto out;
	}
	if (l && l->typed && l->type == ISCSI_SESSION_DISCOVERY &&
	    !iscsi_chap_same(&was->discovery_chap, &nc->discovery_chap)) {
		*why = "reload during login: discovery CHAP credentials changed";
		st = ISCSI_LOGIN_AUTH_FAILED;
		goto out;
	}
	if (l && l->target >= 0) {
		const struct conf_target *ot = &was->targets[l->target], *t;

		nt = find_target(nc, ot->iqn);
		t = nt >= 0 ? &nc->targets[nt] : NULL;
		if (!t || !iscsi_target_on_portal(t, (unsigned)np)) {
			*why = "reload during login: target removed from this portal";
			st = ISCSI_LOGIN_NOT_FOUND;
		} else if (!iscsi_target_allows(t, l->initiator, &c->peer)) {
			*why = "reload during login: initiator no longer in the allow list";
			st = ISCSI_LOGIN_FORBIDDEN;
		} else if (!iscsi_chap_same(iscsi_chap_for(ot, l->initiator),
					    iscsi_chap_for(t, l->initiator))) {
			/* whatever was proven (or skipped) was against the
			 * old credentials */
			*why = "reload during login: CHAP credentials changed";
			st = ISCSI_LOGIN_AUTH_FAILED;
		}
	}
out:
	if (st != ISCSI_LOGIN_OK) {
		iscsi_cfg_put(now);
		return st;
	}
	c->portal = (unsigned)np;
	if (l)
		l->target = nt;
	iscsi_cfg_put(c->cfg);
	c->cfg = now;
	return ISCSI_LOGIN_OK;
}

/* ---- CHAP failure rate limit (per peer address and initiator name) ---- */

static void authfail_keys(const struct iscsi_conn *c, char keys[2][232])
{
	char host[80];

	sock_addr_str(&c->peer, host, sizeof(host), false);
	snprintf(keys[0], sizeof(keys[0]), "a:%s", host);
	snprintf(keys[1], sizeof(keys[1]), "n:%s", c->login->initiator ? c->login->initiator : "");
}

/* The entry of @key (made when @create, reusing the least recent one);
 * NULL when absent. Caller holds s->lock. */
static struct iscsi_authfail *authfail_get(struct iscsi_server *s, const char *key, bool create,
					   uint64_t now)
{
	struct iscsi_authfail *e, *victim = &s->authfail[0];

	for (unsigned i = 0; i < ISCSI_AUTHFAIL_SLOTS; i++) {
		e = &s->authfail[i];
		if (e->key[0] && strcasecmp(e->key, key) == 0) {
			if (now - e->last_ms > ISCSI_AUTHFAIL_FORGET_MS && now >= e->next_ms)
				e->fails = 0;
			return e;
		}
		if (!e->key[0] || (victim->key[0] && e->last_ms < victim->last_ms))
			victim = e;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	snprintf(victim->key, sizeof(victim->key), "%s", key);
	return victim;
}

/* The wait after @fails failures in a row: doubling from
 * ISCSI_AUTHFAIL_BASE_MS, at most ISCSI_AUTHFAIL_MAX_MS and half the
 * login timeout (so that a right answer still fits in the login). */
static uint64_t authfail_delay(const struct iscsi_conn *c, unsigned fails)
{
	uint64_t cap = (uint64_t)c->cfg->c->daemon.login_timeout_s * 1000 / 2, d;

	if (!fails)
		return 0;
	d = (uint64_t)ISCSI_AUTHFAIL_BASE_MS << (fails > 12 ? 11 : fails - 1);
	if (d > ISCSI_AUTHFAIL_MAX_MS)
		d = ISCSI_AUTHFAIL_MAX_MS;
	return d < cap ? d : cap;
}

/* How long the CHAP response now arriving must wait. Each response takes
 * its turn: after failures, responses of one address or name are checked
 * one per delay, however many connections carry them. */
static uint64_t authfail_wait(struct iscsi_conn *c)
{
	struct iscsi_server *s = c->srv;
	uint64_t now = conf_mono_ms(), at = now;
	struct iscsi_authfail *e[2];
	char keys[2][232];

	authfail_keys(c, keys);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < 2; i++) {
		e[i] = authfail_get(s, keys[i], false, now);
		if (e[i] && e[i]->fails && e[i]->next_ms > at)
			at = e[i]->next_ms;
	}
	for (int i = 0; i < 2; i++)
		if (e[i] && e[i]->fails)
			e[i]->next_ms = at + authfail_delay(c, e[i]->fails);
	pthread_mutex_unlock(&s->lock);
	return at - now;
}

/* A CHAP response was wrong: counted for its address and name; the why
 * for the (one) log line of the failure says what it costs now. */
static const char *authfail_record(struct iscsi_conn *c)
{
	struct iscsi_server *s = c->srv;
	uint64_t now = conf_mono_ms(), d;
	unsigned fails = 0;
	char keys[2][232];

	authfail_keys(c, keys);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < 2; i++) {
		struct iscsi_authfail *e = authfail_get(s, keys[i], true, now);

		e->fails++;
		e->last_ms = now;
		if (e->next_ms < now + authfail_delay(c, e->fails))
			e->next_ms = now + authfail_delay(c, e->fails);
		if (e->fails > fails)
			fails = e->fails;
	}
	pthread_mutex_unlock(&s->lock);
	d = authfail_delay(c, fails);
	snprintf(c->login->why_buf, sizeof(c->login->why_buf),
		 "CHAP authentication failed (%u in a row from this address or name; "
		 "its next CHAP response waits %llu ms)", fails, (unsigned long long)d);
	return c->login->why_buf;
}

static void authfail_clear(struct iscsi_conn *c)
{
	struct iscsi_server *s = c->srv;
	char keys[2][232];

	authfail_keys(c, keys);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < 2; i++) {
		struct iscsi_authfail *e = authfail_get(s, keys[i], false, conf_mono_ms());

		if (e)
			memset(e, 0, sizeof(*e));
	}
	pthread_mutex_unlock(&s->lock);
}

static void login_auth_resume(struct ev_loop *loop, struct ev_timer *t, void *arg)
{
	struct iscsi_conn *c = arg;
	struct iscsi_login *l = c->login;

	c->auth_timer = NULL;
	if (c->state != CONN_LOGIN || !l || !l->held)
		return;
	l->held = false;
	l->chap_slot = true;
	/* the text is still in l->acc */
	iscsi_login_rx(c, l->held_bhs, NULL, 0);
}

/* First pass: the keys that define the session. Returns a login status. */
static uint16_t login_identity(struct iscsi_conn *c, const struct iscsi_kvlist *kv,
			       struct iscsi_textbuf *resp, const char **why)
{
	struct iscsi_login *l = c->login;
	const struct conf *cf = c->cfg->c;
	const char *v;
	struct iscsi_limits lim;

	v = iscsi_kv_get(kv, "InitiatorName");
	if (v) {
		if (!*v) {
			*why = "empty InitiatorName";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
		if (l->initiator && strcmp(l->initiator, v) != 0) {
			*why = "InitiatorName changed during login";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
		if (!l->initiator && !(l->initiator = strdup(v))) {
			*why = "out of memory";
			return ISCSI_LOGIN_OUT_OF_RESOURCES;
		}
		/* kept even when malformed: login_fail logs it (escaped) */
		if (!iscsi_name_ok(v)) {
			*why = "malformed InitiatorName (RFC 7143 4.2.7: iqn./eui./naa., at most 223 bytes)";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
	}
	v = iscsi_kv_get(kv, "InitiatorAlias");
	if (v && !l->alias)
		l->alias = strdup(v);
	if (l->typed) {
		if (iscsi_kv_get(kv, "SessionType") || iscsi_kv_get(kv, "TargetName")) {
			/* RFC 7143 13.21/13.4: declared in the first request only */
			const char *st = iscsi_kv_get(kv, "SessionType");
			const char *tn = iscsi_kv_get(kv, "TargetName");

			if ((st && strcmp(st, l->type == ISCSI_SESSION_DISCOVERY ? "Discovery"
										  : "Normal")) ||
			    (tn && l->target >= 0 && strcasecmp(tn, cf->targets[l->target].iqn))) {
				*why = "SessionType/TargetName changed during login";
				return ISCSI_LOGIN_INITIATOR_ERROR;
			}
		}
		return ISCSI_LOGIN_OK;
	}
	if (!l->initiator) {
		*why = "no InitiatorName in the first login request";
		return ISCSI_LOGIN_MISSING_PARAM;
	}
	v = iscsi_kv_get(kv, "SessionType");
	if (!v || strcmp(v, "Normal") == 0) {
		l->type = ISCSI_SESSION_NORMAL;
	} else if (strcmp(v, "Discovery") == 0) {
		l->type = ISCSI_SESSION_DISCOVERY;
	} else {
		*why = "unknown SessionType";
		return ISCSI_LOGIN_SESSION_TYPE_UNSUPPORTED;
	}
	if (l->type == ISCSI_SESSION_NORMAL) {
		const struct conf_target *t;

		v = iscsi_kv_get(kv, "TargetName");
		if (!v || !*v) {
			*why = "no TargetName for a normal session";
			return ISCSI_LOGIN_MISSING_PARAM;
		}
		if (!iscsi_name_ok(v)) {
			*why = "malformed TargetName (RFC 7143 4.2.7)";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
		l->target = find_target(cf, v);
		if (l->target < 0 || !iscsi_target_on_portal(&cf->targets[l->target], c->portal)) {
			l->target = -1;
			snprintf(l->asked, sizeof(l->asked), "%s", v);
			*why = "no such target on this portal";
			return ISCSI_LOGIN_NOT_FOUND;
		}
		t = &cf->targets[l->target];
		if (!iscsi_target_allows(t, l->initiator, &c->peer)) {
			*why = "initiator not in the target's allow list (name or address)";
			return ISCSI_LOGIN_FORBIDDEN;
		}
		l->chap_required = iscsi_chap_for(t, l->initiator)->user != NULL;
		/* RFC 7143 13.9: the target reports its portal group in its
		 * first login response of a normal session. */
		iscsi_text_addf(resp, "TargetPortalGroupTag", "%u", cf->portals[c->portal].tpgt);
		if (t->alias)
			iscsi_text_add(resp, "TargetAlias", t->alias);
	}
	if (l->type == ISCSI_SESSION_DISCOVERY)
		l->chap_required = cf->discovery_chap.user != NULL;
	lim = c->srv->lim;
	iscsi_neg_init(&c->neg, &lim, true);
	c->neg.type = l->type;
	l->typed = true;
	return ISCSI_LOGIN_OK;
}

static bool is_identity_key(const char *k)
{
	return !strcmp(k, "InitiatorName") || !strcmp(k, "InitiatorAlias") ||
	       !strcmp(k, "SessionType") || !strcmp(k, "TargetName");
}

/* Second pass: authentication and operational keys. */
static uint16_t login_keys(struct iscsi_conn *c, int csg, const struct iscsi_kvlist *kv,
			   struct iscsi_textbuf *resp, const char **why)
{
	struct iscsi_login *l = c->login;
	bool has_chap = false;

	for (unsigned i = 0; i < kv->n; i++) {
		const char *k = kv->kv[i].key, *v = kv->kv[i].value;

		if (is_identity_key(k))
			continue;
		if (strncmp(k, "CHAP_", 5) == 0) {
			has_chap = true;
			continue;
		}
		if (strcmp(k, "AuthMethod") == 0) {
			if (csg != ISCSI_STAGE_SECURITY) {
				*why = "AuthMethod outside the security stage";
				return ISCSI_LOGIN_INITIATOR_ERROR;
			}
			if (l->chap_required && list_has(v, "CHAP")) {
				l->auth_chap = true;
				iscsi_text_add(resp, k, "CHAP");
			} else if (!l->chap_required && list_has(v, "None")) {
				l->auth_done = true;
				iscsi_text_add(resp, k, "None");
			} else {
				iscsi_text_add(resp, k, "Reject");
				*why = l->chap_required ? "CHAP required but not offered"
							: "no acceptable AuthMethod";
				return ISCSI_LOGIN_AUTH_FAILED;
			}
			continue;
		}
		if (strncmp(k, "X-", 2) == 0 || strncmp(k, "X#", 2) == 0) {
			iscsi_text_add(resp, k, "NotUnderstood");
			continue;
		}
		if (iscsi_neg_key(&c->neg, k, v, false, resp) < 0) {
			*why = "bad operational key";
			LOG_WARN(MOD, "%s: bad login key %s=%s", c->peer_str, k, v);
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
	}

	/* Without CHAP configured there is nothing to prove: an initiator
	 * may even skip the security stage (CSG=1 in its first request). */
	if (!l->chap_required)
		l->auth_done = true;
	if (csg == ISCSI_STAGE_SECURITY && l->chap_required && has_chap) {
		const struct conf_chap *ch = login_creds(c->cfg->c, l);
		struct iscsi_chap_creds cr = {
			.user = ch->user,
			.secret = ch->secret,
			.mutual_user = ch->mutual_user,
			.mutual_secret = ch->mutual_secret,
		};
		int r;

		if (!l->auth_chap) {
			*why = "CHAP keys before AuthMethod=CHAP";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
		r = iscsi_chap_step(&l->chap, &cr, kv, resp);
		RTGT_CHECK(iscsi_chap_check(&l->chap) == 0);
		if (r == -EACCES) {
			*why = authfail_record(c);
			return ISCSI_LOGIN_AUTH_FAILED;
		}
		if (r == 0)
			authfail_clear(c);
		if (r < 0) {
			*why = "CHAP protocol error";
			return ISCSI_LOGIN_INITIATOR_ERROR;
		}
		if (r == 0)
			l->auth_done = true;
	}
	if (csg == ISCSI_STAGE_OPERATIONAL && !l->auth_done) {
		*why = "authentication required";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	return ISCSI_LOGIN_OK;
}

static void sanitize_params(struct iscsi_params *p, const struct iscsi_limits *lim)
{
	if (!p->max_recv_dsl)
		p->max_recv_dsl = lim->max_recv_dsl;
	if (!p->max_xmit_dsl)
		p->max_xmit_dsl = 8192;
	if (!p->max_burst)
		p->max_burst = 262144;
	if (!p->first_burst || p->first_burst > p->max_burst)
		p->first_burst = p->max_burst < 65536 ? p->max_burst : 65536;
	if (!p->max_outstanding_r2t)
		p->max_outstanding_r2t = 1;
}

/* Leaving login for full feature phase: create and register the session. */
static uint16_t login_finish(struct iscsi_conn *c, const char **why, uint16_t *old_tsih,
			     struct ev_loop **old_loop)
{
	struct iscsi_login *l = c->login;
	struct iscsi_server *s = c->srv;
	struct iscsi_session *sess;
	uint16_t st;
	int r;

	/* again at the last step: a reload may have come in between */
	st = iscsi_login_revalidate(c, why);
	if (st != ISCSI_LOGIN_OK)
		return st;
	if (iscsi_session_create(c, &sess) < 0) {
		*why = "out of memory";
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	sess->initiator = strdup(l->initiator);
	sess->alias = l->alias ? strdup(l->alias) : NULL;
	if (!sess->initiator) {
		iscsi_session_free(sess);
		*why = "out of memory";
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	memcpy(sess->isid, l->isid, 6);
	sess->type = l->type;
	sess->target = l->target;
	sess->st = l->target >= 0 ? c->cfg->targets[l->target] : NULL;
	sess->params = c->neg.p;
	sanitize_params(&sess->params, &s->lim);
	sess->exp_cmdsn = l->cmdsn;
	sess->max_cmdsn = l->cmdsn + sess->depth - 1;
	if (l->type == ISCSI_SESSION_NORMAL) {
		char port[300];
		uint16_t tpgt = c->cfg->c->portals[c->portal].tpgt;

		snprintf(port, sizeof(port), "%s,i,0x%02x%02x%02x%02x%02x%02x", l->initiator,
			 l->isid[0], l->isid[1], l->isid[2], l->isid[3], l->isid[4], l->isid[5]);
		r = scsi_nexus_create(sess->st, port, tpgt, &sess->nexus);
		if (r < 0) {
			iscsi_session_free(sess);
			*why = "cannot create the I_T nexus";
			return ISCSI_LOGIN_TARGET_ERROR;
		}
	}
	r = iscsi_session_register(s, sess, old_tsih, old_loop);
	if (r < 0) {
		iscsi_session_free(sess);
		*why = r != -EUSERS ? "server shutting down"
		       : l->type == ISCSI_SESSION_DISCOVERY ? "max_discovery_sessions reached"
							    : "max_sessions reached";
		return r == -EUSERS ? ISCSI_LOGIN_OUT_OF_RESOURCES : ISCSI_LOGIN_SERVICE_UNAVAILABLE;
	}
	c->sess = sess;
	c->params = sess->params;
	return ISCSI_LOGIN_OK;
}

static int acc_append(struct iscsi_login *l, const uint8_t *data, uint32_t len)
{
	uint8_t *n;

	if (!len)
		return 0;
	if (l->acc_len + len > LOGIN_TEXT_MAX)
		return -E2BIG;
	n = realloc(l->acc, l->acc_len + len);
	if (!n)
		return -ENOMEM;
	memcpy(n + l->acc_len, data, len);
	l->acc = n;
	l->acc_len += len;
	return 0;
}

void iscsi_login_rx(struct iscsi_conn *c, const uint8_t *bhs, const uint8_t *data, uint32_t dlen)
{
	struct iscsi_login *l = c->login;
	uint8_t flags = iscsi_bhs_flags(bhs);
	bool transit = flags & ISCSI_LOGIN_TRANSIT;
	bool cont = flags & ISCSI_LOGIN_CONTINUE;
	int csg = (flags >> 2) & 3, nsg = flags & 3;
	struct iscsi_textbuf resp = { 0 };
	struct iscsi_kvlist kv;
	struct iscsi_tx *tx;
	const char *why = "";
	uint16_t st, tsih = 0, old_tsih = 0;
	struct ev_loop *old_loop = NULL;
	bool to_ffp = false;

	if (l->held) {
		/* the initiator must wait for the answer to its last request */
		login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR,
			   "login request before the previous one was answered");
		return;
	}
	if (!l->started) {
		struct iscsi_server *s = c->srv;
		unsigned n_sessions, n_conns;

		l->started = true;
		memcpy(l->isid, bhs + ISCSI_OFF_ISID, 6);
		l->tsih = conf_get_be16(bhs + ISCSI_OFF_TSIH);
		l->cid = conf_get_be16(bhs + ISCSI_OFF_CID);
		l->cmdsn = conf_get_be32(bhs + ISCSI_OFF_CMDSN);
		/* Our StatSN numbering may start anywhere (RFC 7143 11.13.4);
		 * continuing the initiator's expectation is friendliest. */
		c->stat_sn = conf_get_be32(bhs + ISCSI_OFF_EXPSTATSN);
		l->stage = csg;
		if (bhs[3] > 0 || bhs[2] < bhs[3]) {
			login_fail(c, bhs, ISCSI_LOGIN_UNSUPPORTED_VERSION, "unsupported version");
			return;
		}
		if (c->over_limit) {
			login_fail(c, bhs, ISCSI_LOGIN_TOO_MANY_CONNS, "max_connections reached");
			return;
		}
		pthread_mutex_lock(&s->lock);
		n_sessions = s->n_sessions;
		n_conns = iscsi_server_live_conns(s);
		pthread_mutex_unlock(&s->lock);
		if (l->tsih == 0 &&
		    iscsi_login_limit_status(n_sessions, c->cfg->c->daemon.max_sessions, n_conns,
					     c->cfg->c->daemon.max_connections) ==
			    ISCSI_LOGIN_TOO_MANY_CONNS) {
			login_fail(c, bhs, ISCSI_LOGIN_TOO_MANY_CONNS, "max_connections reached");
			return;
		}
		if (l->tsih != 0) {
			/* Adding a connection to a session: we negotiate one
			 * connection per session. */
			bool exists = false;

			pthread_mutex_lock(&s->lock);
			for (struct iscsi_session *o = s->sessions; o; o = o->next)
				if (o->tsih == l->tsih && !o->reinstated)
					exists = true;
			pthread_mutex_unlock(&s->lock);
			login_fail(c, bhs,
				   exists ? ISCSI_LOGIN_TOO_MANY_CONNS : ISCSI_LOGIN_NO_SUCH_SESSION,
				   exists ? "one connection per session" : "no session with that TSIH");
			return;
		}
		if (csg != ISCSI_STAGE_SECURITY && csg != ISCSI_STAGE_OPERATIONAL) {
			login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "bad CSG in first request");
			return;
		}
	} else {
		if (memcmp(l->isid, bhs + ISCSI_OFF_ISID, 6) != 0 ||
		    l->tsih != conf_get_be16(bhs + ISCSI_OFF_TSIH)) {
			login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "ISID/TSIH changed during login");
			return;
		}
		if (csg != l->stage) {
			login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "unexpected CSG");
			return;
		}
	}
	/* a reload since the last PDU: this one is judged by the new rules */
	st = iscsi_login_revalidate(c, &why);
	if (st != ISCSI_LOGIN_OK) {
		login_fail(c, bhs, st, why);
		return;
	}
	if (transit && (nsg <= csg || nsg == 2)) {
		login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "bad NSG");
		return;
	}
	if (acc_append(l, data, dlen) < 0) {
		login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "login text too long");
		return;
	}
	if (cont) {
		/* RFC 7143 11.12.2: answer with an empty response, T=0 */
		tx = iscsi_tx_new();
		if (!tx) {
			iscsi_conn_close(c, "out of memory");
			return;
		}
		login_header(c, bhs, tx->hdr, false, csg, 0, 0);
		iscsi_conn_queue(c, tx);
		return;
	}

	if (iscsi_kv_parse(l->acc, l->acc_len, &kv) < 0) {
		login_fail(c, bhs, ISCSI_LOGIN_INITIATOR_ERROR, "malformed login text");
		return;
	}
	if (l->chap_slot) {
		l->chap_slot = false;    /* this one already waited its turn */
	} else if (l->auth_chap && !l->auth_done && iscsi_kv_get(&kv, "CHAP_R")) {
		uint64_t wait = authfail_wait(c);

		if (wait) {
			iscsi_kv_free(&kv);
			memcpy(l->held_bhs, bhs, ISCSI_BHS_LEN);
			c->auth_timer = ev_timer_add(c->w->loop, wait, login_auth_resume, c);
			if (!c->auth_timer) {
				iscsi_conn_close(c, "out of memory");
				return;
			}
			l->held = true;
			LOG_DBG(MOD, "%s: CHAP response held %llu ms after earlier failures",
				c->peer_str, (unsigned long long)wait);
			return;
		}
	}
	free(l->acc);
	l->acc = NULL;
	l->acc_len = 0;

	st = login_identity(c, &kv, &resp, &why);
	if (st == ISCSI_LOGIN_OK && csg == ISCSI_STAGE_OPERATIONAL && l->chap_required &&
	    !l->auth_done) {
		st = ISCSI_LOGIN_AUTH_FAILED;
		why = "authentication required";
	}
	if (st == ISCSI_LOGIN_OK)
		st = login_keys(c, csg, &kv, &resp, &why);
	iscsi_kv_free(&kv);
	if (st != ISCSI_LOGIN_OK)
		goto fail;

	if (transit && csg == ISCSI_STAGE_SECURITY && !l->auth_done) {
		if (!l->auth_chap) {
			st = ISCSI_LOGIN_AUTH_FAILED;
			why = "transit requested before authentication";
			goto fail;
		}
		transit = false;    /* CHAP exchange still running */
	}
	if (transit && nsg == ISCSI_STAGE_FFP) {
		iscsi_neg_finish(&c->neg, &resp);
		RTGT_CHECK(iscsi_neg_check(&c->neg) == 0);
		st = login_finish(c, &why, &old_tsih, &old_loop);
		if (st != ISCSI_LOGIN_OK)
			goto fail;
		tsih = c->sess->tsih;
		to_ffp = true;
	}
	if (resp.error) {
		st = ISCSI_LOGIN_OUT_OF_RESOURCES;
		why = "out of memory";
		goto fail;
	}
	if (resp.len > ISCSI_LOGIN_DSL) {
		st = ISCSI_LOGIN_TARGET_ERROR;
		why = "login response over 8192 bytes";
		goto fail;
	}
	RTGT_CHECK(login_check(l) || (csg == ISCSI_STAGE_SECURITY && !l->auth_done));

	tx = iscsi_tx_new();
	if (!tx) {
		iscsi_text_free(&resp);
		iscsi_conn_close(c, "out of memory");
		return;
	}
	login_header(c, bhs, tx->hdr, transit, csg, nsg, tsih);
	if (to_ffp) {
		conf_put_be32(tx->hdr + ISCSI_OFF_EXPCMDSN, c->sess->exp_cmdsn);
		conf_put_be32(tx->hdr + ISCSI_OFF_MAXCMDSN, c->sess->max_cmdsn);
	}
	tx->own = resp.data;
	tx->data = resp.data;
	tx->dlen = (uint32_t)resp.len;
	resp.data = NULL;
	iscsi_conn_queue(c, tx);
	if (transit)
		l->stage = nsg;
	if (!to_ffp)
		return;

	LOG_INFO(MOD, "login: initiator %s isid %02x%02x%02x%02x%02x%02x tsih %u %s %s portal %s "
		      "from %s%s",
		 c->sess->initiator, c->sess->isid[0], c->sess->isid[1], c->sess->isid[2],
		 c->sess->isid[3], c->sess->isid[4], c->sess->isid[5], tsih,
		 c->sess->target >= 0 ? "target" : "session",
		 c->sess->target >= 0 ? c->cfg->c->targets[c->sess->target].iqn : "discovery",
		 c->cfg->c->portals[c->portal].name, c->peer_str,
		 c->sess->params.header_digest || c->sess->params.data_digest ? " (digests on)" : "");
	if (c->sess->target >= 0)
		atomic_fetch_add(&iscsi_cfg_stats(c->cfg, c->sess->target)->login_ok, 1);
	if (old_tsih) {
		LOG_INFO(MOD, "session reinstatement: initiator %s isid %02x%02x%02x%02x%02x%02x: "
			      "tsih %u replaces tsih %u",
			 c->sess->initiator, c->sess->isid[0], c->sess->isid[1], c->sess->isid[2],
			 c->sess->isid[3], c->sess->isid[4], c->sess->isid[5], tsih, old_tsih);
		iscsi_session_kill(c->srv, old_loop, old_tsih);
	}
	/* Digests apply from the first PDU after the final login response. */
	c->hdigest = c->params.header_digest;
	c->ddigest = c->params.data_digest;
	if (c->state == CONN_LOGIN)
		iscsi_conn_enter_ffp(c);
	return;

fail:
	iscsi_text_free(&resp);
	login_fail(c, bhs, st, why);
}
