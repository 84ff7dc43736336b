/*
 * target/iscsi/textreq.c - Text requests in full feature phase (RFC 7143
 * 11.10, 11.11): SendTargets discovery (with access control) and minimal
 * operational key renegotiation, with continuation in both directions.
 *
 * Text exchange state machine (struct iscsi_textop, conn->text):
 *   IDLE       conn->text == NULL
 *   COLLECTING a request with C=1 arrived: its text is kept and an empty
 *              response with our TTT asks for the rest
 *   ANSWERING  the answer exceeds MaxRecvDataSegmentLength of the
 *              initiator: it goes in pieces (C=1, our TTT), one per empty
 *              Text request carrying that TTT; the last piece has F=1
 *   any --request with another ITT and TTT 0xffffffff--> restart (RFC 7143
 *         11.10.4: a new request resets the exchange)
 *
 * Invariant (textop_check): out_off <= out_len; ttt never 0xffffffff.
 *
 * Layer: target/iscsi, one protocol module (target/iscsi/README.md
 * "Layers"). May call: the other files of target/iscsi, target/scsi,
 * net/, conf/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/iscsi/iscsi_int.h"

#define MOD "iscsi"
/* Collected text of one request; RFC does not bound it, we do. */
#define TEXT_IN_MAX (64u << 10)

struct iscsi_textop {
	uint32_t itt;
	uint32_t ttt;
	uint8_t *in;                   /* owned, collected request text */
	size_t in_len;
	uint8_t *out;                  /* owned, answer still being sent */
	size_t out_len, out_off;
};

static bool textop_check(const struct iscsi_textop *t)
{
	return t->out_off <= t->out_len && t->ttt != ISCSI_RSVD_TAG;
}

void iscsi_textop_free(struct iscsi_textop *t)
{
	if (!t)
		return;
	free(t->in);
	free(t->out);
	free(t);
}

bool iscsi_target_allows(const struct conf_target *t, const char *initiator,
			 const struct sockaddr_storage *peer)
{
	const struct conf_addr_rule *r;

	/* an entry naming the initiator binds it to that entry's address */
	for (unsigned i = 0; i < t->n_addr_rules; i++) {
		r = &t->addr_rules[i];
		if (!r->initiator || strcasecmp(r->initiator, initiator) != 0)
			continue;
		for (unsigned k = 0; k < r->n_nets; k++)
			if (conf_net_match(&r->nets[k], peer))
				return true;
		return false;
	}
	if (t->allow_all)
		return true;
	for (unsigned i = 0; i < t->n_allow; i++)
		if (strcasecmp(t->allow[i], initiator) == 0)
			return true;
	for (unsigned i = 0; i < t->n_addr_rules; i++) {
		r = &t->addr_rules[i];
		for (unsigned k = 0; !r->initiator && k < r->n_nets; k++)
			if (conf_net_match(&r->nets[k], peer))
				return true;
	}
	return false;
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

bool iscsi_chap_same(const struct conf_chap *a, const struct conf_chap *b)
{
	return str_same(a->user, b->user) && str_same(a->secret, b->secret) &&
	       str_same(a->mutual_user, b->mutual_user) &&
	       str_same(a->mutual_secret, b->mutual_secret);
}

bool iscsi_target_on_portal(const struct conf_target *t, unsigned portal)
{
	for (unsigned i = 0; i < t->n_portals; i++)
		if (t->portals[i] == portal)
			return true;
	return false;
}

static bool host_is_wildcard(const char *h)
{
	return !h || !*h || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 ||
	       strcmp(h, "*") == 0;
}

void iscsi_format_portal(const struct conf_portal *p, const struct sockaddr_storage *local,
			 char *buf, size_t len)
{
	char host[80];

	if (host_is_wildcard(p->host) && local &&
	    (local->ss_family == AF_INET || local->ss_family == AF_INET6))
		sock_addr_str(local, host, sizeof(host), false);
	else if (p->family == AF_INET6)
		snprintf(host, sizeof(host), "[%s]", p->host);
	else
		snprintf(host, sizeof(host), "%s", p->host);
	snprintf(buf, len, "%s:%u,%u", host, p->port, p->tpgt);
}

int iscsi_sendtargets(const struct conf *c, const char *initiator, const char *what,
		      int own, const struct sockaddr_storage *local, struct iscsi_textbuf *out)
{
	return iscsi_sendtargets_portal(c, initiator, what, own, -1, local, NULL, out);
}

int iscsi_sendtargets_portal(const struct conf *c, const char *initiator, const char *what,
			     int own, int portal, const struct sockaddr_storage *local,
			     const struct sockaddr_storage *peer, struct iscsi_textbuf *out)
{
	for (unsigned i = 0; i < c->n_targets; i++) {
		const struct conf_target *t = &c->targets[i];
		bool want;

		/* a portal does not reveal what it does not serve (an
		 * internal portal's targets stay unknown on a public one) */
		if (portal >= 0 && !iscsi_target_on_portal(t, (unsigned)portal))
			continue;

		if (strcmp(what, "All") == 0)
			want = true;
		else if (*what == '\0')
			want = own >= 0 && (unsigned)own == i;
		else
			want = strcasecmp(t->iqn, what) == 0;
		if (!want || !iscsi_target_allows(t, initiator, peer))
			continue;
		iscsi_text_add(out, "TargetName", t->iqn);
		for (unsigned j = 0; j < t->n_portals; j++) {
			char addr[128];

			iscsi_format_portal(&c->portals[t->portals[j]], local, addr, sizeof(addr));
			iscsi_text_add(out, "TargetAddress", addr);
		}
	}
	return out->error;
}

/* Sends the next piece of @op's answer (or an empty one while collecting). */
static void text_send(struct iscsi_conn *c, uint32_t itt, const uint8_t *lun,
		      struct iscsi_textop *op, const uint8_t *data, size_t len)
{
	struct iscsi_tx *tx = iscsi_tx_new();
	uint32_t max = c->params.max_xmit_dsl ? c->params.max_xmit_dsl : 8192;
	bool more = false;

	if (!tx) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	if (op && op->out) {
		data = op->out + op->out_off;
		len = op->out_len - op->out_off;
	}
	if (len > max) {
		len = max;
		more = true;
	}
	if (len) {
		tx->own = malloc(len);
		if (!tx->own) {
			free(tx);
			iscsi_conn_close(c, "out of memory");
			return;
		}
		memcpy(tx->own, data, len);
		tx->data = tx->own;
		tx->dlen = (uint32_t)len;
	}
	if (op && op->out)
		op->out_off += len;
	tx->hdr[0] = ISCSI_OP_TEXT_RSP;
	/* F=1 only on the last piece of a complete answer */
	if (!more && !(op && !op->out))
		tx->hdr[1] = ISCSI_FLAG_FINAL;
	else if (more)
		tx->hdr[1] = ISCSI_TEXT_CONTINUE;
	memcpy(tx->hdr + ISCSI_OFF_LUN, lun, 8);
	conf_put_be32(tx->hdr + ISCSI_OFF_ITT, itt);
	conf_put_be32(tx->hdr + ISCSI_OFF_TTT, (more || (op && !op->out)) ? op->ttt : ISCSI_RSVD_TAG);
	iscsi_conn_fill_sn(c, tx->hdr, true);
	iscsi_conn_queue(c, tx);
}

static struct iscsi_textop *textop_new(struct iscsi_conn *c, uint32_t itt)
{
	struct iscsi_textop *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->itt = itt;
	if (++c->next_ttt == ISCSI_RSVD_TAG)
		c->next_ttt = 1;
	op->ttt = c->next_ttt;
	return op;
}

static int text_append(struct iscsi_textop *op, const uint8_t *data, uint32_t len)
{
	uint8_t *n;

	if (!len)
		return 0;
	if (op->in_len + len > TEXT_IN_MAX)
		return -E2BIG;
	n = realloc(op->in, op->in_len + len);
	if (!n)
		return -ENOMEM;
	memcpy(n + op->in_len, data, len);
	op->in = n;
	op->in_len += len;
	return 0;
}

/* SendTargets answers from the configuration current now, not the one
 * the session logged in under: a reload that removed a target or an
 * initiator from an allow list hides it from sessions already open. */
static int sendtargets_now(struct iscsi_conn *c, const char *what, struct iscsi_textbuf *resp)
{
	struct iscsi_session *sess = c->sess;
	struct iscsi_cfg *now = iscsi_cfg_current(c->srv);
	const struct conf *was = c->cfg->c, *nc = now->c;
	int portal = iscsi_portal_index(nc, &was->portals[c->portal]), own = -1, r = 0;

	if (sess->target >= 0) {
		const struct conf_target *t = conf_target_find(nc, was->targets[sess->target].iqn);

		own = t ? (int)(t - nc->targets) : -1;
	}
	/* a portal the reload removed serves nothing (its conns are closing) */
	if (portal >= 0)
		r = iscsi_sendtargets_portal(nc, sess->initiator, what, own, portal, &c->local, &c->peer,
					     resp);
	iscsi_cfg_put(now);
	return r;
}

/* Builds the whole answer for the request text. */
static int text_answer(struct iscsi_conn *c, const uint8_t *data, size_t len,
		       struct iscsi_textbuf *resp)
{
	struct iscsi_kvlist kv;
	struct iscsi_session *sess = c->sess;
	int r = iscsi_kv_parse(data, len, &kv);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < kv.n; i++) {
		const char *k = kv.kv[i].key, *v = kv.kv[i].value;

		if (strcmp(k, "SendTargets") == 0) {
			/* empty / the session's own target only in a normal
			 * session; "All" is allowed everywhere */
			if (sess->type == ISCSI_SESSION_DISCOVERY && *v == '\0')
				continue;
			r = sendtargets_now(c, v, resp);
		} else if (strncmp(k, "X-", 2) == 0 || strncmp(k, "X#", 2) == 0) {
			iscsi_text_add(resp, k, "NotUnderstood");
		} else {
			r = iscsi_neg_key(&c->neg, k, v, true, resp);
			if (r == -EINVAL) {
				/* a bad key in FFP does not end the session */
				iscsi_text_add(resp, k, "Reject");
				r = 0;
			}
		}
		if (r < 0)
			break;
	}
	/* Declarative keys may have changed what the initiator accepts. */
	if (c->neg.p.max_xmit_dsl)
		c->params.max_xmit_dsl = c->neg.p.max_xmit_dsl;
	iscsi_kv_free(&kv);
	if (r == 0 && resp->error)
		r = resp->error;
	return r;
}

void iscsi_text_dispatch(struct iscsi_conn *c, struct iscsi_req *req)
{
	const uint8_t *bhs = req->bhs;
	uint32_t itt = iscsi_bhs_itt(bhs);
	uint32_t ttt = conf_get_be32(bhs + ISCSI_OFF_TTT);
	bool cont = iscsi_bhs_flags(bhs) & ISCSI_TEXT_CONTINUE;
	struct iscsi_textop *op = c->text;
	struct iscsi_textbuf resp = { 0 };
	uint8_t lun[8];
	int r;

	memcpy(lun, bhs + ISCSI_OFF_LUN, 8);
	c->last_text_ms = ev_now_ms(c->w->loop);
	if (op && (ttt == ISCSI_RSVD_TAG || op->itt != itt)) {
		/* a new exchange replaces whatever was going on */
		iscsi_textop_free(op);
		op = c->text = NULL;
	}
	if (ttt != ISCSI_RSVD_TAG && (!op || op->ttt != ttt)) {
		iscsi_conn_send_reject(c, bhs, ISCSI_REJECT_INVALID_FIELD);
		goto out_req;
	}
	RTGT_CHECK(!op || textop_check(op));
	if (op && op->out) {
		/* the initiator asks for the next piece of our answer */
		text_send(c, itt, lun, op, NULL, 0);
		if (op->out_off >= op->out_len) {
			iscsi_textop_free(op);
			c->text = NULL;
		}
		goto out_req;
	}
	if (cont || op) {
		if (!op) {
			op = textop_new(c, itt);
			if (!op) {
				iscsi_conn_close(c, "out of memory");
				goto out_req;
			}
			c->text = op;
		}
		r = text_append(op, req->data, req->dlen);
		if (r < 0) {
			LOG_WARN(MOD, "%s: Text request too long", c->peer_str);
			iscsi_textop_free(op);
			c->text = NULL;
			iscsi_conn_send_reject(c, bhs, ISCSI_REJECT_OUT_OF_RESOURCES);
			goto out_req;
		}
		if (cont) {
			text_send(c, itt, lun, op, NULL, 0);
			goto out_req;
		}
		r = text_answer(c, op->in, op->in_len, &resp);
	} else {
		r = text_answer(c, req->data, req->dlen, &resp);
	}
	if (r < 0) {
		LOG_WARN(MOD, "%s: bad Text request: %d", c->peer_str, r);
		iscsi_text_free(&resp);
		if (op) {
			iscsi_textop_free(op);
			c->text = NULL;
		}
		iscsi_conn_send_reject(c, bhs, r == -ENOMEM ? ISCSI_REJECT_OUT_OF_RESOURCES
							   : ISCSI_REJECT_PROTOCOL);
		goto out_req;
	}
	if (resp.len > (c->params.max_xmit_dsl ? c->params.max_xmit_dsl : 8192)) {
		if (!op) {
			op = textop_new(c, itt);
			if (!op) {
				iscsi_text_free(&resp);
				iscsi_conn_close(c, "out of memory");
				goto out_req;
			}
			c->text = op;
		}
		free(op->in);
		op->in = NULL;
		op->in_len = 0;
		op->out = resp.data;
		op->out_len = resp.len;
		op->out_off = 0;
		resp.data = NULL;
		text_send(c, itt, lun, op, NULL, 0);
		goto out_req;
	}
	if (op) {
		iscsi_textop_free(op);
		c->text = NULL;
	}
	text_send(c, itt, lun, NULL, resp.data, resp.len);
	iscsi_text_free(&resp);
out_req:
	iscsi_req_free(req);
}
