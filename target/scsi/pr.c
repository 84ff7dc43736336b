/*
 * target/scsi/pr.c - reservations: SPC-2 RESERVE/RELEASE(6/10) and SPC-4
 * PERSISTENT RESERVE IN/OUT (every service action and type), with the APTPL
 * state kept in lu->pr_path.
 *
 * Persistent reservation state machine (per LU, under lu->lock):
 *
 *   states: UNREG  no registrations, no reservation
 *           REG    registrations, no reservation (pr_type == 0)
 *           RES    registrations and a reservation (pr_type != 0)
 *
 *   UNREG --REGISTER/REGISTER AND IGNORE (prout_register)--> REG
 *   REG   --last registration removed (prout_register, prout_preempt)--> UNREG
 *   REG   --RESERVE (prout_reserve)--> RES
 *   RES   --RELEASE (prout_release), holder unregisters (unregister)--> REG
 *   RES   --PREEMPT[ AND ABORT] (prout_preempt)--> RES (new holder/type)
 *   RES   --REGISTER AND MOVE (prout_move)--> RES (new holder)
 *   REG/RES --CLEAR (prout_clear)--> UNREG
 *
 * Invariants (pr_check()): pr_type == 0 implies pr_holder == NULL; for
 * WE/EA/WERO/EARO pr_holder is on lu->regs; for WEAR/EAAR pr_holder is NULL
 * and regs is not empty.
 *
 * SPC-2 reservation: lu->res2 holds the reserving nexus or NULL; RESERVE
 * sets it, RELEASE by the holder, a reset or the holder's nexus loss clear
 * it.
 *
 * Where the state lives (the APTPL file of a local LU, the cluster blob of
 * a shared LU) and when a change becomes the LU's is pr_state.c's; this
 * file runs the service actions on whatever LU it is given, real or a
 * scratch copy (pr_int.h).
 *
 * Layer: reservations, under the handlers (target/scsi/README.md
 * "Layers"). May call: sense.c, task.c, iscsi_name.c. Called by lu.c
 * (PERSISTENT RESERVE IN, RESERVE/RELEASE, conflict checks, nexus loss),
 * pr_out.c and pr_state.c; it calls none of them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/scsi/iscsi_name.h"
#include "target/scsi/pr_int.h"
#include "target/scsi/scsi_int.h"

bool pr_type_valid(uint8_t t)
{
	return t == PR_WE || t == PR_EA || t == PR_WERO || t == PR_EARO || t == PR_WEAR ||
	       t == PR_EAAR;
}

bool pr_type_all_reg(uint8_t t)
{
	return t == PR_WEAR || t == PR_EAAR;
}

static bool type_reg_only(uint8_t t)
{
	return t == PR_WERO || t == PR_EARO;
}

static bool type_excl_access(uint8_t t)
{
	return t == PR_EA || t == PR_EARO || t == PR_EAAR;
}

bool pr_reg_matches(const struct scsi_pr_reg *r, const char *iport, uint16_t rel_port)
{
	return strcmp(r->iport, iport) == 0 && (r->all_tg_pt || r->rel_port == rel_port);
}

struct scsi_pr_reg *pr_reg_find(struct scsi_lu *lu, const struct scsi_nexus *n)
{
	struct scsi_pr_reg *r;

	for (r = lu->regs; r; r = r->next)
		if (pr_reg_matches(r, n->iport, n->rel_port))
			return r;
	return NULL;
}

static bool is_holder(struct scsi_lu *lu, const struct scsi_pr_reg *r)
{
	if (!lu->pr_type || !r)
		return false;
	return pr_type_all_reg(lu->pr_type) || lu->pr_holder == r;
}

bool pr_check(struct scsi_lu *lu)
{
	const struct scsi_pr_reg *r;
	bool found = false;

	if (!lu->pr_type)
		return lu->pr_holder == NULL;
	if (pr_type_all_reg(lu->pr_type))
		return lu->pr_holder == NULL && lu->regs != NULL;
	for (r = lu->regs; r; r = r->next)
		if (r == lu->pr_holder)
			found = true;
	return found;
}

/* ---- events of a service action (recorded on scratch LUs) ---- */

void pr_ev_free(struct pr_ev *e)
{
	while (e) {
		struct pr_ev *next = e->next;

		free(e->iport);
		free(e->xiport);
		free(e);
		e = next;
	}
}

static void ev_record(struct pr_rec *rec, const struct scsi_pr_reg *r, const char *xiport,
		      uint16_t xrel, uint16_t code)
{
	struct pr_ev *e = calloc(1, sizeof(*e));

	if (!e || !(e->iport = strdup(r->iport)) || (xiport && !(e->xiport = strdup(xiport)))) {
		if (e)
			pr_ev_free(e);
		rec->err = -ENOMEM;
		return;
	}
	e->code = code;
	e->rel = r->rel_port;
	e->atp = r->all_tg_pt;
	e->xrel = xrel;
	*rec->tail = e;
	rec->tail = &e->next;
}

/* UA @code for every nexus that @r stands for, except @except. */
static void ua_reg(struct scsi_lu *lu, const struct scsi_pr_reg *r, const struct scsi_nexus *except,
		   uint16_t code)
{
	struct scsi_ua *ua;

	if (lu->pr_rec)
		ev_record(lu->pr_rec, r, except ? except->iport : NULL,
			  except ? except->rel_port : 0, code);
	for (ua = lu->uas; ua; ua = ua->next)
		if (ua->nexus != except && pr_reg_matches(r, ua->nexus->iport, ua->nexus->rel_port))
			scsi_ua_add(ua, code);
}

static void ua_other_regs(struct scsi_lu *lu, const struct scsi_nexus *except, uint16_t code)
{
	const struct scsi_pr_reg *r;

	for (r = lu->regs; r; r = r->next)
		ua_reg(lu, r, except, code);
}

static void abort_reg(struct scsi_lu *lu, const struct scsi_pr_reg *r)
{
	struct scsi_cmd *c;

	if (lu->pr_rec)
		ev_record(lu->pr_rec, r, NULL, 0, 0);
	for (c = lu->inflight; c; c = c->snext)
		if (pr_reg_matches(r, c->nexus->iport, c->nexus->rel_port))
			scsi_cmd_abort(c);
}

static void reg_unlink(struct scsi_lu *lu, struct scsi_pr_reg *dead)
{
	struct scsi_pr_reg **pp;

	for (pp = &lu->regs; *pp; pp = &(*pp)->next)
		if (*pp == dead) {
			*pp = dead->next;
			break;
		}
	if (lu->pr_holder == dead)
		lu->pr_holder = NULL;
	free(dead->iport);
	free(dead);
	if (!lu->regs) {
		lu->pr_type = 0;
		lu->pr_holder = NULL;
	}
}

struct scsi_pr_reg *pr_reg_add(struct scsi_lu *lu, const char *iport, uint16_t rel_port,
			       bool all_tg_pt, uint64_t key)
{
	struct scsi_pr_reg *r = calloc(1, sizeof(*r)), **pp;

	if (!r)
		return NULL;
	r->iport = strdup(iport);
	if (!r->iport) {
		free(r);
		return NULL;
	}
	r->rel_port = rel_port;
	r->all_tg_pt = all_tg_pt;
	r->key = key;
	for (pp = &lu->regs; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	return r;
}

/* "<iSCSI name>,i,0x<ISID as 12 hex digits>", the name as login accepts
 * it: the initiator port of a nexus, and all a TransportID or the state
 * file may name. @len is the bytes the source held (an embedded NUL
 * fails). */
bool pr_iport_valid(const char *s, size_t len)
{
	char name[ISCSI_NAME_MAX + 1];
	const char *sep;
	size_t n;

	if (strnlen(s, len) != len)
		return false;
	sep = strstr(s, ",i,0x");
	if (!sep)
		return false;
	n = (size_t)(sep - s);
	if (n == 0 || n > ISCSI_NAME_MAX || strlen(sep + 5) != 12)
		return false;
	for (unsigned i = 5; i < 17; i++)
		if (!isxdigit((unsigned char)sep[i]))
			return false;
	memcpy(name, s, n);
	name[n] = 0;
	return iscsi_name_ok(name);
}

void pr_regs_free(struct scsi_lu *lu)
{
	while (lu->regs)
		reg_unlink(lu, lu->regs);
	lu->pr_type = 0;
	lu->pr_holder = NULL;
}

void pr_nexus_gone(struct scsi_lu *lu, const struct scsi_nexus *n)
{
	if (lu->res2 == n)
		lu->res2 = NULL;
}

/* ---- conflicts ---- */

bool pr_conflict(struct scsi_lu *lu, const struct scsi_nexus *n, const struct scsi_op *op,
		 const uint8_t *cdb)
{
	uint8_t opc = cdb[0];
	struct scsi_pr_reg *r;

	if (lu->res2 && lu->res2 != n)
		return !(op->flags & OPF_RES2_OK);
	r = pr_reg_find(lu, n);
	/* shared LU: pr_reserve6/pr_release6 refuse them with a sense that
	 * says why, rather than a conflict */
	if (opc == OP_RESERVE_6 || opc == OP_RESERVE_10)
		return !lu->pr_shared && lu->regs != NULL;
	if (opc == OP_RELEASE_6 || opc == OP_RELEASE_10)
		return !lu->pr_shared && lu->pr_type && !r;
	if (!lu->pr_type || !(op->flags & (OPF_PR_READ | OPF_PR_WRITE)))
		return false;
	if (is_holder(lu, r))
		return false;
	if (type_reg_only(lu->pr_type) && r)
		return false;
	if (op->flags & OPF_PR_WRITE)
		return true;
	return type_excl_access(lu->pr_type);
}

/* ---- RESERVE / RELEASE (6/10) ---- */

void pr_reserve6(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);

	/* a shared LU has no SPC-2 reservations (see the top of the file) */
	if (lu->pr_shared) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
		return scsi_cmd_complete(cmd);
	}

	/* RESERVE(6) extent bit, RESERVE(10) third-party: not supported */
	if (cmd->cdb[1] & (cmd->cdb[0] == OP_RESERVE_6 ? 0x01 : 0x13)) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, -1);
		return scsi_cmd_complete(cmd);
	}
	pthread_mutex_lock(&lu->lock);
	if (lu->res2 && lu->res2 != cmd->nexus)
		cmd->status = SCSI_RESERVATION_CONFLICT;
	else
		lu->res2 = cmd->nexus;
	pthread_mutex_unlock(&lu->lock);
	scsi_cmd_complete(cmd);
}

void pr_release6(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);

	if (lu->pr_shared) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
		return scsi_cmd_complete(cmd);
	}

	if (cmd->cdb[0] == OP_RELEASE_10 && (cmd->cdb[1] & 0x13)) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, -1);
		return scsi_cmd_complete(cmd);
	}
	pthread_mutex_lock(&lu->lock);
	/* from a non-holder: GOOD and nothing happens */
	if (lu->res2 == cmd->nexus)
		lu->res2 = NULL;
	pthread_mutex_unlock(&lu->lock);
	scsi_cmd_complete(cmd);
}

/* ---- PERSISTENT RESERVE IN ---- */

/* iSCSI TransportID, format 01 (name plus ISID); returns its length. */
static unsigned put_tid(uint8_t *d, const char *iport)
{
	unsigned len = (unsigned)strlen(iport) + 1;

	len = (len + 3) & ~3u;
	if (len < 20)
		len = 20;
	memset(d, 0, 4 + len);
	d[0] = 0x40 | 0x05;
	conf_put_be16(&d[2], (uint16_t)len);
	memcpy(&d[4], iport, strlen(iport));
	return 4 + len;
}

void pr_in(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint32_t alloc = conf_get_be16(&cmd->cdb[7]);
	const struct scsi_pr_reg *r;
	uint8_t *d;
	size_t cap = 8 + 16;
	unsigned p = 8;

	pthread_mutex_lock(&lu->lock);
	for (r = lu->regs; r; r = r->next)
		cap += 24 + 4 + strlen(r->iport) + 24;
	d = calloc(1, cap);
	if (!d) {
		pthread_mutex_unlock(&lu->lock);
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return scsi_cmd_complete(cmd);
	}
	conf_put_be32(&d[0], lu->pr_gen);
	switch (sa) {
	case 0: /* READ KEYS */
		for (r = lu->regs; r; r = r->next, p += 8)
			conf_put_be64(&d[p], r->key);
		conf_put_be32(&d[4], p - 8);
		break;
	case 1: /* READ RESERVATION */
		if (lu->pr_type) {
			if (lu->pr_holder)
				conf_put_be64(&d[8], lu->pr_holder->key);
			d[21] = lu->pr_type; /* scope 0: LU */
			p = 24;
		}
		conf_put_be32(&d[4], p - 8);
		break;
	case 2: /* REPORT CAPABILITIES */
		memset(d, 0, 8);
		conf_put_be16(&d[0], 8);
		/* CRH, ATP_C, PTPL_C when persistable */
		d[2] = 0x10 | 0x04 | (lu->pr_path || lu->pr_shared ? 0x01 : 0);
		/* TMV, PTPL_A */
		d[3] = 0x80 | (lu->pr_aptpl ? 0x01 : 0);
		d[4] = 0x80 | 0x40 | 0x20 | 0x08 | 0x02; /* WEAR EARO WERO EA WE */
		d[5] = 0x01;                               /* EAAR */
		p = 8;
		break;
	case 3: /* READ FULL STATUS */
		for (r = lu->regs; r; r = r->next) {
			uint8_t *e = &d[p];
			unsigned tl;

			memset(e, 0, 24);
			conf_put_be64(&e[0], r->key);
			if (r->all_tg_pt)
				e[12] |= 0x02;
			if (is_holder(lu, r)) {
				e[12] |= 0x01;
				e[13] = lu->pr_type;
			}
			conf_put_be16(&e[18], r->all_tg_pt ? 0 : r->rel_port);
			tl = put_tid(&e[24], r->iport);
			conf_put_be32(&e[20], tl);
			p += 24 + tl;
		}
		conf_put_be32(&d[4], p - 8);
		break;
	default:
		pthread_mutex_unlock(&lu->lock);
		free(d);
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 4);
		return scsi_cmd_complete(cmd);
	}
	pthread_mutex_unlock(&lu->lock);
	scsi_reply(cmd, d, p, alloc);
	free(d);
	scsi_cmd_complete(cmd);
}

/* ---- PERSISTENT RESERVE OUT ---- */

/* Drops the sender's registration (sa_key 0), with what SPC-4 5.12.10.2
 * asks when it was the reservation holder. */
static void unregister(struct prout *o)
{
	struct scsi_lu *lu = o->lu;
	uint8_t type = lu->pr_type;
	bool held = lu->pr_holder == o->reg && type && !pr_type_all_reg(type);

	/* an all-registrants reservation ends with its last registration,
	 * which reg_unlink() sees to */
	reg_unlink(lu, o->reg);
	o->reg = NULL;
	if (held) {
		lu->pr_type = 0;
		lu->pr_holder = NULL;
		if (type_reg_only(type))
			ua_other_regs(lu, o->n, ASC_RESERVATIONS_RELEASED);
	}
}

static int prout_register(struct prout *o, bool ignore)
{
	struct scsi_lu *lu = o->lu;

	if (!o->reg) {
		if (!ignore && o->key != 0)
			return PRO_CONFLICT;
		if (o->sa_key == 0)
			return PRO_OK;
		o->reg = pr_reg_add(lu, o->n->iport, o->n->rel_port, o->all_tg_pt, o->sa_key);
		if (!o->reg)
			return PRO_NOMEM;
	} else {
		if (!ignore && o->key != o->reg->key)
			return PRO_CONFLICT;
		if (o->sa_key == 0)
			unregister(o);
		else
			o->reg->key = o->sa_key;
	}
	lu->pr_aptpl = o->aptpl;
	lu->pr_gen++;
	return PRO_OK;
}

static int prout_reserve(struct prout *o)
{
	struct scsi_lu *lu = o->lu;

	if (!o->reg || o->reg->key != o->key)
		return PRO_CONFLICT;
	if (lu->pr_type) {
		if (!is_holder(lu, o->reg) || lu->pr_type != o->type)
			return PRO_CONFLICT;
		return PRO_OK;
	}
	lu->pr_type = o->type;
	lu->pr_holder = pr_type_all_reg(o->type) ? NULL : o->reg;
	return PRO_OK;
}

static int prout_release(struct prout *o)
{
	struct scsi_lu *lu = o->lu;
	uint8_t type = lu->pr_type;

	if (!o->reg || o->reg->key != o->key)
		return PRO_CONFLICT;
	if (!type || !is_holder(lu, o->reg))
		return PRO_OK;
	if (type != o->type)
		return PRO_BAD_RELEASE;
	lu->pr_type = 0;
	lu->pr_holder = NULL;
	if (type_reg_only(type) || pr_type_all_reg(type))
		ua_other_regs(lu, o->n, ASC_RESERVATIONS_RELEASED);
	return PRO_OK;
}

static int prout_clear(struct prout *o)
{
	struct scsi_lu *lu = o->lu;

	if (!o->reg || o->reg->key != o->key)
		return PRO_CONFLICT;
	ua_other_regs(lu, o->n, ASC_RESERVATIONS_PREEMPTED);
	pr_regs_free(lu);
	o->reg = NULL;
	lu->pr_gen++;
	return PRO_OK;
}

/* Removes every registration with key @key other than the sender's;
 * returns how many. */
static unsigned remove_key(struct prout *o, uint64_t key, bool any_key, bool abort)
{
	struct scsi_lu *lu = o->lu;
	struct scsi_pr_reg *r, *next;
	unsigned n = 0;

	for (r = lu->regs; r; r = next) {
		next = r->next;
		if (r == o->reg || (!any_key && r->key != key))
			continue;
		ua_reg(lu, r, o->n, ASC_REGISTRATIONS_PREEMPTED);
		if (abort)
			abort_reg(lu, r);
		/* keep the reservation alive through reg_unlink: it drops
		 * pr_type only when the list empties, and ours stays */
		reg_unlink(lu, r);
		n++;
	}
	return n;
}

static int prout_preempt(struct prout *o, bool abort)
{
	struct scsi_lu *lu = o->lu;
	uint8_t old_type = lu->pr_type;

	if (!o->reg || o->reg->key != o->key)
		return PRO_CONFLICT;
	if (!old_type) {
		if (o->sa_key == 0)
			return PRO_BAD_PARAM;
		if (!remove_key(o, o->sa_key, false, abort) && !(o->sa_key == o->reg->key))
			return PRO_CONFLICT;
		lu->pr_gen++;
		return PRO_OK;
	}
	if (pr_type_all_reg(old_type)) {
		if (o->sa_key == 0) {
			remove_key(o, 0, true, abort);
			lu->pr_type = o->type;
			lu->pr_holder = pr_type_all_reg(o->type) ? NULL : o->reg;
		} else if (!remove_key(o, o->sa_key, false, abort) && o->sa_key != o->reg->key) {
			return PRO_CONFLICT;
		}
		lu->pr_gen++;
		return PRO_OK;
	}
	if (lu->pr_holder && lu->pr_holder->key == o->sa_key) {
		bool changed = lu->pr_holder != o->reg || old_type != o->type;

		remove_key(o, o->sa_key, false, abort);
		lu->pr_type = o->type;
		lu->pr_holder = pr_type_all_reg(o->type) ? NULL : o->reg;
		if (changed)
			ua_other_regs(lu, o->n, ASC_RESERVATIONS_RELEASED);
		lu->pr_gen++;
		return PRO_OK;
	}
	if (o->sa_key == 0)
		return PRO_BAD_PARAM;
	if (!remove_key(o, o->sa_key, false, abort))
		return PRO_CONFLICT;
	lu->pr_gen++;
	return PRO_OK;
}

static int prout_move(struct prout *o)
{
	struct scsi_lu *lu = o->lu;
	const uint8_t *p = o->param;
	uint32_t tlen;
	uint16_t rel;
	char name[300];
	struct scsi_pr_reg *dst, *r;
	bool unreg;
	unsigned nlen;

	if (o->plen < 24)
		return PRO_BAD_PARAM;
	if (!o->reg || o->reg->key != o->key)
		return PRO_CONFLICT;
	if (!lu->pr_type || pr_type_all_reg(lu->pr_type) || lu->pr_holder != o->reg)
		return PRO_CONFLICT;
	if (o->sa_key == 0)
		return PRO_BAD_PARAM;
	unreg = p[17] & 0x02;
	rel = conf_get_be16(&p[18]);
	tlen = conf_get_be32(&p[20]);
	/* SPC-4 6.16.4 / 7.6.4.6: the TransportID follows the 24 bytes and
	 * fits the list; written as a subtraction (plen >= 24 above) because
	 * 24 + tlen wraps for tlen >= 0xffffffe8 */
	if (tlen < 24 || tlen > o->plen - 24)
		return PRO_BAD_PARAM;
	/* iSCSI (protocol 5), format 01: name ",i,0x" ISID. Format 00 names a
	 * whole initiator, not the I_T nexus a move needs. */
	if (p[24] != (0x40 | 0x05))
		return PRO_BAD_PARAM;
	nlen = conf_get_be16(&p[26]);
	if (nlen < 20 || nlen % 4 || nlen > tlen - 4 || nlen >= sizeof(name))
		return PRO_BAD_PARAM;
	memcpy(name, &p[28], nlen);
	name[nlen] = 0;
	/* NUL-terminated inside its field, and a name login would accept:
	 * what REGISTER AND MOVE names becomes a registrant that READ FULL
	 * STATUS returns and the state file and the cluster blob keep */
	if (!memchr(&p[28], 0, nlen) || !pr_iport_valid(name, strlen(name)))
		return PRO_BAD_PARAM;
	if (!o->move_port_ok)
		return PRO_BAD_PARAM;
	if (pr_reg_matches(o->reg, name, rel))
		return PRO_BAD_PARAM;
	dst = NULL;
	for (r = lu->regs; r; r = r->next)
		if (pr_reg_matches(r, name, rel))
			dst = r;
	if (!dst) {
		dst = pr_reg_add(lu, name, rel, false, o->sa_key);
		if (!dst)
			return PRO_NOMEM;
	}
	lu->pr_holder = dst;
	if (unreg)
		reg_unlink(lu, o->reg);
	lu->pr_aptpl = p[17] & 0x01;
	lu->pr_gen++;
	return PRO_OK;
}

int pr_dispatch(struct prout *o, uint8_t sa)
{
	switch (sa) {
	case PRO_REGISTER:
		return prout_register(o, false);
	case PRO_REGISTER_IGNORE:
		return prout_register(o, true);
	case PRO_RESERVE:
		return prout_reserve(o);
	case PRO_RELEASE:
		return prout_release(o);
	case PRO_CLEAR:
		return prout_clear(o);
	case PRO_PREEMPT:
	case PRO_PREEMPT_ABORT:
		return prout_preempt(o, sa == PRO_PREEMPT_ABORT);
	default:
		return prout_move(o);
	}
}

void pr_out_status(struct scsi_cmd *cmd, int rc)
{
	switch (rc) {
	case PRO_SAVE_FAILED:
		scsi_sense(cmd, SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		break;
	case PRO_CONFLICT:
		cmd->status = SCSI_RESERVATION_CONFLICT;
		break;
	case PRO_BAD_PARAM:
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAM);
		break;
	case PRO_NOMEM:
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INSUFFICIENT_REG_RESOURCES);
		break;
	case PRO_BAD_RELEASE:
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_INVALID_RELEASE_PR);
		break;
	}
}
