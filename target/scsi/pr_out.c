/*
 * target/scsi/pr_out.c - the PERSISTENT RESERVE OUT command: its CDB and
 * parameter list checked at once, then the service action run where the
 * LU's reservation state lives: straight on the LU (pr.c's pr_dispatch()),
 * all or nothing against the APTPL file (pr_state.c's pr_local_out()), or
 * through the cluster for a shared LU (pr_shared_out(), which completes
 * the command later).
 *
 * Layer: handlers (target/scsi/README.md "Layers"). May call:
 * pr_state.c, pr.c, sense.c, task.c, conf/. Called by lu.c's opcode table
 * only.
 */
#include <pthread.h>
#include <string.h>

#include "conf/util.h"
#include "target/scsi/pr_int.h"
#include "target/scsi/scsi_int.h"

void pr_out(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = scsi_cmd_lu(cmd);
	uint8_t sa = cmd->cdb[1] & 0x1f;
	struct prout o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.cmd = cmd;
	o.lu = lu;
	o.n = cmd->nexus;
	o.scope = cmd->cdb[2] >> 4;
	o.type = cmd->cdb[2] & 0x0f;
	o.plen = conf_get_be32(&cmd->cdb[5]);
	o.param = cmd->buf;
	cmd->xfer_len = o.plen;
	if (sa > PRO_REGISTER_MOVE) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 1, 4);
		return scsi_cmd_complete(cmd);
	}
	if ((sa == PRO_REGISTER_MOVE ? o.plen < 24 : o.plen != 24) || o.plen > cmd->buf_len) {
		scsi_sense(cmd, SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return scsi_cmd_complete(cmd);
	}
	o.key = conf_get_be64(&o.param[0]);
	o.sa_key = conf_get_be64(&o.param[8]);
	if (sa != PRO_REGISTER_MOVE) {
		o.aptpl = o.param[20] & 0x01;
		o.all_tg_pt = o.param[20] & 0x04;
		if (o.param[20] & 0x08) { /* SPEC_I_PT: SIP_C=0 */
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false, 20, 3);
			return scsi_cmd_complete(cmd);
		}
	} else {
		o.aptpl = o.param[17] & 0x01;
	}
	if (o.aptpl && !lu->pr_path && !lu->pr_shared) {
		scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_PARAM, false,
				 sa == PRO_REGISTER_MOVE ? 17 : 20, 0);
		return scsi_cmd_complete(cmd);
	}
	if (sa == PRO_RESERVE || sa == PRO_RELEASE || sa == PRO_PREEMPT ||
	    sa == PRO_PREEMPT_ABORT || sa == PRO_REGISTER_MOVE) {
		if (o.scope != 0) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 7);
			return scsi_cmd_complete(cmd);
		}
		if (!pr_type_valid(o.type)) {
			scsi_sense_field(cmd, ASC_INVALID_FIELD_IN_CDB, true, 2, 3);
			return scsi_cmd_complete(cmd);
		}
	}

	if (sa == PRO_REGISTER_MOVE) {
		struct scsi_target *t = cmd->target;
		uint16_t rel = conf_get_be16(&o.param[18]);
		unsigned i;

		pthread_mutex_lock(&t->lock);
		for (i = 0; i < t->n_ports; i++)
			if (t->ports[i].rel_port == rel)
				o.move_port_ok = true;
		/* a shared LU is also reached through the peer nodes' ports
		 * (one per peer group, relative port = its TPGT) */
		for (i = 0; lu->pr_shared && i < t->n_peer_tpgs; i++)
			if (t->peer_tpgs[i] == rel)
				o.move_port_ok = true;
		pthread_mutex_unlock(&t->lock);
	}
	if (lu->pr_shared)
		return pr_shared_out(cmd, &o, sa);
	pthread_mutex_lock(&lu->lock);
	if (lu->pr_path) {
		rc = pr_local_out(lu, &o, sa);
	} else {
		o.reg = pr_reg_find(lu, o.n);
		rc = pr_dispatch(&o, sa);
	}
	pthread_mutex_unlock(&lu->lock);
	pr_out_status(cmd, rc);
	scsi_cmd_complete(cmd);
}
