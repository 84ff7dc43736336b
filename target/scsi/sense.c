/*
 * target/scsi/sense.c - what a command is told: sense data (fixed or
 * descriptor format, as the LU's control mode page asks), the unit
 * attentions pending per (LU, nexus), deferred errors, and the NOT READY
 * answer of a volume that is not serving I/O.
 *
 * Layer: sense: sense data and unit attentions (target/scsi/README.md
 * "Layers"). May call: task.c, raid/raid.h, conf/.
 *
 * Unit attention per (LU, nexus): created on the nexus's first command to
 * the LU holding POWER ON, RESET OCCURRED; events append (duplicates and
 * overflow dropped); a reporting command pops the oldest.
 *
 * Deferred errors (SPC-4 4.5.5 rule c: the write-back cache cannot tell
 * whose write a failed write-out held, so every I_T nexus of the LU is
 * told): the volume counts write-outs of acknowledged data that failed
 * (raid_vol_write_failures(), raid.h); each (LU, nexus) record keeps the
 * count it was last told of (wfail_seen), starting at the count when the
 * record is made. States per record: CLEAR (wfail_seen == count) --a
 * failure bumps the count--> PENDING --the nexus's next command that
 * reports UAs (not INQUIRY, REPORT LUNS; after its pending UAs, before
 * reservation conflicts) gets CHECK CONDITION with the deferred sense and
 * is not executed, or REQUEST SENSE returns that sense with GOOD--> CLEAR
 * (wfail_seen = count: several failures in between are one report, SPC's
 * "only the last error"). A record dropped while PENDING (the session
 * ended) leaves its wfail_seen on lu->dfr_gone under the initiator port
 * and relative target port names, and the next record of that I_T nexus
 * (the session coming back) starts from it instead of the current count.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "raid/raid.h"
#include "target/scsi/scsi_int.h"

/* ---- sense ---- */

unsigned scsi_sense_build(uint8_t *out, bool desc, uint8_t key, uint16_t code, bool info_valid,
			  uint64_t info, bool sks_valid, const uint8_t sks[3])
{
	memset(out, 0, SCSI_SENSE_MAX);
	if (desc) {
		unsigned len = 8;

		out[0] = 0x72;
		out[1] = key & 0x0f;
		out[2] = (uint8_t)(code >> 8);
		out[3] = (uint8_t)code;
		if (info_valid) {
			out[len] = 0x00;        /* information descriptor */
			out[len + 1] = 0x0a;
			out[len + 2] = 0x80;    /* VALID */
			conf_put_be64(&out[len + 4], info);
			len += 12;
		}
		if (sks_valid) {
			out[len] = 0x02;        /* sense key specific descriptor */
			out[len + 1] = 0x06;
			memcpy(&out[len + 4], sks, 3);
			len += 8;
		}
		out[7] = (uint8_t)(len - 8);
		return len;
	}
	out[0] = 0x70;
	out[2] = key & 0x0f;
	if (info_valid) {
		out[0] |= 0x80;
		/* fixed format holds 32 bits; SBC says to use descriptor format
		 * for anything larger, which the initiator can select */
		conf_put_be32(&out[3], (uint32_t)info);
	}
	out[7] = 10;
	out[12] = (uint8_t)(code >> 8);
	out[13] = (uint8_t)code;
	if (sks_valid)
		memcpy(&out[15], sks, 3);
	return 18;
}

static bool lu_d_sense(struct scsi_lu *lu)
{
	bool d;

	if (!lu)
		return false;
	pthread_mutex_lock(&lu->lock);
	d = lu->mode.d_sense;
	pthread_mutex_unlock(&lu->lock);
	return d;
}

void scsi_sense(struct scsi_cmd *cmd, uint8_t key, uint16_t code)
{
	cmd->status = SCSI_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsi_sense_build(cmd->sense, lu_d_sense(scsi_cmd_lu(cmd)), key,
						   code, false, 0, false, NULL);
}

void scsi_sense_info(struct scsi_cmd *cmd, uint8_t key, uint16_t code, uint64_t info)
{
	cmd->status = SCSI_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsi_sense_build(cmd->sense, lu_d_sense(scsi_cmd_lu(cmd)), key,
						   code, true, info, false, NULL);
}

void scsi_sense_field(struct scsi_cmd *cmd, uint16_t code, bool cd, uint16_t byte, int bit)
{
	uint8_t sks[3];

	sks[0] = 0x80 | (cd ? 0x40 : 0);
	if (bit >= 0 && bit < 8)
		sks[0] |= 0x08 | (uint8_t)bit;
	conf_put_be16(&sks[1], byte);
	cmd->status = SCSI_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsi_sense_build(cmd->sense, lu_d_sense(scsi_cmd_lu(cmd)),
						   SK_ILLEGAL_REQUEST, code, false, 0, true, sks);
}

void scsi_set_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	cmd->status = SCSI_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsi_sense_build(cmd->sense, false, key,
						   (uint16_t)(asc << 8 | ascq), false, 0, false,
						   NULL);
}

/* ---- deferred errors ---- */

static uint64_t lu_wfail(const struct scsi_lu *lu)
{
	return lu->vol ? raid_vol_write_failures(lu->vol) : 0;
}

static bool dfr_match(const struct scsi_dfr_gone *g, const struct scsi_nexus *n)
{
	return g->rel_port == n->rel_port && !strcmp(g->iport, n->iport);
}

/* Where a new record of @n starts: what its I_T nexus's previous session
 * left pending (taken off the list), else the current count. lu->lock. */
static uint64_t dfr_inherit(struct scsi_lu *lu, const struct scsi_nexus *n)
{
	struct scsi_dfr_gone **gp;

	if (n && n->iport)
		for (gp = &lu->dfr_gone; *gp; gp = &(*gp)->next)
			if (dfr_match(*gp, n)) {
				struct scsi_dfr_gone *g = *gp;
				uint64_t seen = g->wfail_seen;

				*gp = g->next;
				lu->n_dfr_gone--;
				free(g->iport);
				free(g);
				return seen;
			}
	return lu_wfail(lu);
}

/* @n's record goes away with a deferred error still pending (@seen behind
 * the count): keep it for the I_T nexus's next session. lu->lock. */
static void dfr_remember(struct scsi_lu *lu, const struct scsi_nexus *n, uint64_t seen)
{
	struct scsi_dfr_gone *g, **gp;

	for (gp = &lu->dfr_gone; *gp; gp = &(*gp)->next)
		if (dfr_match(*gp, n)) {
			(*gp)->wfail_seen = seen;
			return;
		}
	g = calloc(1, sizeof(*g));
	if (g)
		g->iport = strdup(n->iport);
	if (!g || !g->iport) {
		free(g);
		LOG_WARN("scsi", "%s: %s: out of memory: a pending deferred error is dropped with the session",
			 lu->name, n->iport);
		return;
	}
	g->rel_port = n->rel_port;
	g->wfail_seen = seen;
	g->next = lu->dfr_gone;
	lu->dfr_gone = g;
	if (++lu->n_dfr_gone > SCSI_DFR_GONE_MAX) {
		/* drop the oldest: the list's tail */
		for (gp = &lu->dfr_gone; (*gp)->next; gp = &(*gp)->next)
			;
		free((*gp)->iport);
		free(*gp);
		*gp = NULL;
		lu->n_dfr_gone--;
	}
}

bool scsi_deferred_pending(struct scsi_lu *lu, struct scsi_ua *ua)
{
	uint64_t now = lu_wfail(lu);

	if (ua->wfail_seen == now)
		return false;
	ua->wfail_seen = now;
	return true;
}

bool scsi_deferred_take(struct scsi_lu *lu, struct scsi_nexus *n)
{
	struct scsi_ua *ua;
	bool got = false;

	pthread_mutex_lock(&lu->lock);
	ua = scsi_ua_get(lu, n, true);
	if (ua)
		got = scsi_deferred_pending(lu, ua);
	pthread_mutex_unlock(&lu->lock);
	return got;
}

unsigned scsi_deferred_sense(uint8_t *out, bool desc)
{
	unsigned len = scsi_sense_build(out, desc, SK_MEDIUM_ERROR, ASC_WRITE_ERROR, false, 0,
					false, NULL);

	out[0] = desc ? 0x73 : 0x71;   /* deferred error, VALID (fixed) clear */
	return len;
}

/* ---- unit attentions ---- */

struct scsi_ua *scsi_ua_get(struct scsi_lu *lu, struct scsi_nexus *n, bool create)
{
	struct scsi_ua *ua;

	for (ua = lu->uas; ua; ua = ua->next)
		if (ua->nexus == n)
			return ua;
	if (!create)
		return NULL;
	ua = calloc(1, sizeof(*ua));
	if (!ua)
		return NULL;
	ua->nexus = n;
	ua->q[ua->n++] = ASC_POWER_ON_RESET;
	ua->wfail_seen = dfr_inherit(lu, n);
	ua->next = lu->uas;
	lu->uas = ua;
	return ua;
}

void scsi_ua_add(struct scsi_ua *ua, uint16_t code)
{
	unsigned i;

	for (i = 0; i < ua->n; i++)
		if (ua->q[i] == code)
			return;
	if (ua->n < SCSI_UA_MAX)
		ua->q[ua->n++] = code;
}

void scsi_ua_add_all(struct scsi_lu *lu, const struct scsi_nexus *except, uint16_t code)
{
	struct scsi_ua *ua;

	for (ua = lu->uas; ua; ua = ua->next)
		if (ua->nexus != except)
			scsi_ua_add(ua, code);
}

void scsi_ua_pop(struct scsi_ua *ua, uint16_t *code)
{
	*code = ua->q[0];
	memmove(&ua->q[0], &ua->q[1], (ua->n - 1) * sizeof(ua->q[0]));
	ua->n--;
}

void scsi_ua_drop(struct scsi_lu *lu, const struct scsi_nexus *n)
{
	struct scsi_ua **up;

	for (up = &lu->uas; *up; up = &(*up)->next)
		if ((*up)->nexus == n) {
			struct scsi_ua *dead = *up;

			*up = dead->next;
			if (dead->wfail_seen != lu_wfail(lu))
				dfr_remember(lu, n, dead->wfail_seen);
			free(dead);
			break;
		}
}

bool scsi_lu_resized(struct scsi_lu *lu)
{
	uint64_t nb = raid_vol_bytes(lu->vol) >> SCSI_BS_SHIFT;
	bool grew = false;

	pthread_mutex_lock(&lu->lock);
	if (nb > atomic_load(&lu->nblocks)) {
		atomic_store_explicit(&lu->nblocks, nb, memory_order_release);
		scsi_ua_add_all(lu, NULL, ASC_CAPACITY_CHANGED);
		grew = true;
	}
	pthread_mutex_unlock(&lu->lock);
	if (grew)
		LOG_INFO("scsi", "%s: capacity now %llu blocks", lu->name, (unsigned long long)nb);
	return grew;
}

bool scsi_ua_take(struct scsi_lu *lu, struct scsi_nexus *n, uint16_t *code)
{
	struct scsi_ua *ua;
	bool got = false;

	pthread_mutex_lock(&lu->lock);
	ua = scsi_ua_get(lu, n, true);
	if (ua && ua->n) {
		scsi_ua_pop(ua, code);
		got = true;
	}
	pthread_mutex_unlock(&lu->lock);
	return got;
}

/* ---- readiness ---- */

unsigned scsi_not_ready_sense(uint8_t *out, bool desc, int ready, uint16_t frac)
{
	uint8_t sks[3];

	if (ready == -ENOLINK)
		return scsi_sense_build(out, desc, SK_NOT_READY, ASC_PORT_UNAVAILABLE, false, 0,
					false, NULL);
	if (ready != -EINPROGRESS)
		return scsi_sense_build(out, desc, SK_NOT_READY, ASC_NOT_READY_MANUAL, false, 0,
					false, NULL);
	/* SPC-4 4.5.2.4.4: SKSV, then the fraction done of 65536 */
	sks[0] = 0x80;
	conf_put_be16(&sks[1], frac);
	return scsi_sense_build(out, desc, SK_NOT_READY, ASC_BECOMING_READY, false, 0, true, sks);
}

/*
 * A volume still being prepared (thick provisioning of an rbd image) has no
 * medium yet: media access gets NOT READY, LOGICAL UNIT IS IN PROCESS OF
 * BECOMING READY (SBC-3 4.x, SPC-4 TEST UNIT READY), so an initiator never
 * reads zeros it did not write nor has its data overwritten by them; if the
 * preparation failed, NOT READY, MANUAL INTERVENTION REQUIRED (the operator
 * has to fix the cluster and restart). While it is being prepared the sense
 * carries the PROGRESS INDICATION (SPC-4 4.5.2.4.4: how much of the volume
 * is written out, in 65536ths), the same REQUEST SENSE returns. INQUIRY,
 * REPORT LUNS, READ CAPACITY and the others that do not touch the medium
 * keep working. A node fenced from the volume's shared storage (rbd: its
 * lease lapsed while a peer serves the image too, or the cluster
 * blocklisted it; raid/rbd_fence.c) answers NOT READY, LOGICAL UNIT NOT
 * ACCESSIBLE, TARGET PORT IN UNAVAILABLE STATE (02/04/0C): the initiator
 * fails this path over to the peer node's.
 */
bool scsi_medium_ready(struct scsi_cmd *cmd)
{
	uint16_t frac;
	int rc = raid_vol_ready_progress(scsi_cmd_lu(cmd)->vol, &frac);

	if (rc == 0)
		return true;
	/* scsi_sense picks the LU's sense format (D_SENSE); the same sense
	 * is then rebuilt in that format with the progress indication */
	scsi_sense(cmd, SK_NOT_READY, rc == -EINPROGRESS ? ASC_BECOMING_READY :
				      rc == -ENOLINK ? ASC_PORT_UNAVAILABLE : ASC_NOT_READY_MANUAL);
	cmd->sense_len = (uint8_t)scsi_not_ready_sense(cmd->sense, (cmd->sense[0] & 0x7f) == 0x72,
						      rc, frac);
	scsi_cmd_complete(cmd);
	return false;
}
