/*
 * target/scsi/pr_int.h - private to pr.c and pr_state.c: what the SPC-4
 * semantics (pr.c: the service actions, conflicts, PR IN) and the state
 * that must outlive a command (pr_state.c: the APTPL file of a local LU,
 * the cluster blob of a shared LU) share.
 *
 * The split: pr.c decides what a service action does to a state (a list of
 * registrations, holder, type, generation, APTPL), on any scsi_lu, real or
 * scratch; pr_state.c decides where that state lives and when a change
 * becomes the LU's (all or nothing on a local LU with an APTPL file,
 * through the cluster on a shared one). Neither file includes anything
 * from the other but this header.
 */
#ifndef RTGT_TARGET_SCSI_PR_INT_H
#define RTGT_TARGET_SCSI_PR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target/scsi/scsi_int.h"

/* Something a service action does to the nexuses of a registration, kept
 * with the new state so that every node does it to its own nexuses. */
struct pr_ev {
	uint64_t seq;                   /* the change (blob version) that made it */
	uint16_t code;                  /* UA asc << 8 | ascq; 0: abort their commands */
	uint16_t rel;                   /* the registration: iport, rel, atp */
	bool atp;
	char *iport;                    /* owned */
	uint16_t xrel;                  /* the sending nexus (no UA for it) */
	char *xiport;                   /* owned; NULL: none */
	struct pr_ev *next;
};

/* Where a scratch LU (lu->pr_rec) records the events of a service action
 * instead of raising them. */
struct pr_rec {
	struct pr_ev *head, **tail;
	int err;                        /* -ENOMEM while recording */
};

/* PERSISTENT RESERVE OUT service actions (SPC-4 6.16.2) */
enum {
	PRO_REGISTER = 0,
	PRO_RESERVE = 1,
	PRO_RELEASE = 2,
	PRO_CLEAR = 3,
	PRO_PREEMPT = 4,
	PRO_PREEMPT_ABORT = 5,
	PRO_REGISTER_IGNORE = 6,
	PRO_REGISTER_MOVE = 7,
};

/* One PERSISTENT RESERVE OUT, its parameters checked (pr_out()). */
struct prout {
	struct scsi_cmd *cmd;
	struct scsi_lu *lu;
	struct scsi_nexus *n;
	struct scsi_pr_reg *reg;        /* the sender's registration or NULL */
	uint64_t key, sa_key;
	uint8_t scope, type;
	bool aptpl, all_tg_pt;
	const uint8_t *param;
	uint32_t plen;
	/* REGISTER AND MOVE: the destination relative port exists (looked up
	 * before lu->lock is taken: the lock order is target, then LU) */
	bool move_port_ok;
};

/* Return codes of the prout_* handlers: 0 done (GOOD, generation bumped
 * where they decided), or one of these. */
enum { PRO_OK = 0, PRO_CONFLICT = 1, PRO_BAD_CDB = 2, PRO_BAD_PARAM = 3, PRO_NOMEM = 4,
       PRO_BAD_RELEASE = 5,
       PRO_SAVE_FAILED = 6 /* pr_local_out(): the APTPL file could not be written */ };

/* ---- pr.c: the semantics ---- */

bool pr_type_valid(uint8_t t);
bool pr_type_all_reg(uint8_t t);
bool pr_reg_matches(const struct scsi_pr_reg *r, const char *iport, uint16_t rel_port);
struct scsi_pr_reg *pr_reg_find(struct scsi_lu *lu, const struct scsi_nexus *n);
/* Appends a registration to lu->regs; NULL when out of memory. */
struct scsi_pr_reg *pr_reg_add(struct scsi_lu *lu, const char *iport, uint16_t rel_port,
			       bool all_tg_pt, uint64_t key);
/* Drops every registration and the reservation. */
void pr_regs_free(struct scsi_lu *lu);
void pr_ev_free(struct pr_ev *e);
/* "<iSCSI name>,i,0x<12 hex digits>" as login accepts the name; @len is
 * the bytes the source held. */
bool pr_iport_valid(const char *s, size_t len);
/* Runs service action @sa of @o on o->lu (o->reg found there); PRO_*. */
int pr_dispatch(struct prout *o, uint8_t sa);
/* Sets @cmd's status or sense for PRO_* @rc (nothing for PRO_OK). */
void pr_out_status(struct scsi_cmd *cmd, int rc);

/* ---- pr_state.c: where the state lives ---- */

/* @o on a local LU with an APTPL file (lu->pr_path), lock held: all or
 * nothing; PRO_*. */
int pr_local_out(struct scsi_lu *lu, struct prout *o, uint8_t sa);
/* @o on a shared LU: through the cluster; completes @cmd when done. */
void pr_shared_out(struct scsi_cmd *cmd, struct prout *o, uint8_t sa);

#endif
