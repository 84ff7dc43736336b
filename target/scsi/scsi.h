/*
 * target/scsi/scsi.h - SCSI block device emulation (SPC-4 / SBC-3) over raid
 * volumes, seen from the transport (target/iscsi).
 *
 * Objects:
 *   scsi_lu      one logical unit: a volume plus identity, mode pages,
 *                reservations and unit attentions. Shared by every session
 *                and path; internally locked.
 *   scsi_target  a target's LUN map and target ports (one per portal/TPG).
 *   scsi_nexus   one I_T nexus (an iSCSI session): initiator port name plus
 *                the relative target port it came in on.
 *   scsi_cmd     one command, allocated and owned by the transport.
 *
 * Threading: scsi_cmd_exec() runs on a reactor thread; it submits volume
 * I/O on cmd->ioctx and completes through cmd->done on the same thread.
 */
#ifndef RTGT_SCSI_H
#define RTGT_SCSI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/util.h"

struct raid_vol;
struct raid_ioctx;
struct raid_io_hold;

struct scsi_lu;
struct scsi_target;
struct scsi_nexus;

#define SCSI_SENSE_MAX 96
#define SCSI_CDB_MAX 32          /* 16 in the BHS plus an extended-CDB AHS */
/* Largest data buffer the transport gives a command; bigger requests are
 * refused with INVALID FIELD IN CDB and the Block Limits VPD says so. */
#define SCSI_MAX_XFER (16u << 20)

enum scsi_task_attr {
	SCSI_TASK_UNTAGGED = 0,
	SCSI_TASK_SIMPLE = 1,
	SCSI_TASK_ORDERED = 2,
	SCSI_TASK_HOQ = 3,
	SCSI_TASK_ACA = 4,
};

struct scsi_cmd {
	/* ---- set by the transport before scsi_cmd_exec() ---- */
	struct scsi_target *target;
	struct scsi_nexus *nexus;
	uint64_t lun;              /* LUN number decoded from the 8-byte field */
	uint8_t cdb[SCSI_CDB_MAX];
	uint8_t cdb_len;
	uint8_t task_attr;         /* enum scsi_task_attr */
	bool dir_read;             /* iSCSI R bit */
	bool dir_write;            /* iSCSI W bit */
	uint32_t edtl;             /* Expected Data Transfer Length */
	/* Data buffer, owned by the transport, buf_len == min(edtl, SCSI_MAX_XFER)
	 * bytes (NULL when 0). Writes: holds the data-out received. Reads: scsi
	 * writes data-in here. */
	uint8_t *buf;
	uint32_t buf_len;
	struct raid_ioctx *ioctx;  /* the calling thread's I/O context */
	void (*done)(struct scsi_cmd *cmd); /* exactly once; may run inside exec */
	void *tpriv;               /* transport's */
	/* The transport can send data-in from memory it does not own, within
	 * the wake-up that completes the command (data_hold below). */
	bool data_in_map;
	/* Set (from any thread) by task management; scsi stops early when it
	 * sees it and completes with status TASK ABORTED. Only through
	 * scsi_cmd_abort() / scsi_cmd_aborted(). */
	atomic_bool aborted;

	/* ---- set by scsi before done ---- */
	uint8_t status;            /* SAM status */
	uint8_t sense[SCSI_SENSE_MAX];
	uint8_t sense_len;
	/* Bytes of data-in placed in buf (<= buf_len). */
	uint32_t data_in_len;
	/* Bytes the command itself asked to transfer in its direction, from the
	 * CDB (blocks * block size, or the allocation length clipped to what
	 * exists); the transport reports edtl - xfer_len as residual. */
	uint32_t xfer_len;
	/* With data_in_map, on GOOD only: pieces of the data-in that are not
	 * in buf but in the volume's memory (scsi_cmd_data_piece); the
	 * transport sends them from there or fetches them into buf, then
	 * releases them with scsi_cmd_data_release() before its reactor
	 * sleeps again (a volume reshape waits for it). NULL: all in buf. */
	struct raid_io_hold *data_hold;

	/* ---- scsi-private ---- */
	void *spriv[8];
	uint64_t spriv_u[8];
	struct scsi_cmd *snext, *sprev;
};

/* The abort request crosses threads: a TMF, a reset or a preempting
 * reservation sets it on whatever thread runs them, the command's own thread
 * (or its volume I/O completion) reads it. Release/acquire: a thread that
 * sees the flag also sees everything the aborting thread wrote before
 * setting it. */
static inline void scsi_cmd_abort(struct scsi_cmd *cmd)
{
	atomic_store_explicit(&cmd->aborted, true, memory_order_release);
}

static inline bool scsi_cmd_aborted(const struct scsi_cmd *cmd)
{
	return atomic_load_explicit(&((struct scsi_cmd *)cmd)->aborted, memory_order_acquire);
}

/* Data-in left in the volume's memory (scsi_cmd.data_hold): piece @i's
 * bytes [*off, *off + *len) of the data-in are at *addr; false past the
 * last piece. Pieces come in ascending order and never overlap. */
bool scsi_cmd_data_piece(const struct scsi_cmd *cmd, unsigned i, uint32_t *off, uint32_t *len,
			 const uint8_t **addr);
/* Copies @len bytes of piece @i from @from (bytes into the piece) into
 * @dst by a read of the volume's storage: 0, or -errno (the storage went
 * away behind the pool's back: the data-in cannot be completed). */
int scsi_cmd_data_fetch(const struct scsi_cmd *cmd, unsigned i, uint32_t from, uint32_t len,
			uint8_t *dst);
/* Ends data_hold (NULL: nothing). */
void scsi_cmd_data_release(struct scsi_cmd *cmd);

/* SAM status codes */
#define SCSI_GOOD 0x00
#define SCSI_CHECK_CONDITION 0x02
#define SCSI_CONDITION_MET 0x04
#define SCSI_BUSY 0x08
#define SCSI_RESERVATION_CONFLICT 0x18
#define SCSI_TASK_SET_FULL 0x28
#define SCSI_ACA_ACTIVE 0x30
#define SCSI_TASK_ABORTED 0x40

void scsi_cmd_exec(struct scsi_cmd *cmd);
/* True for the CDBs (READ 6/10/12/16) whose data-in is the medium's blocks
 * read straight into cmd->buf: such a command reports data_in_len only once
 * its volume read has written every one of those bytes, so the transport
 * need not zero the buffer first (any other data-in buffer must be). */
bool scsi_cdb_fills_data_in(const uint8_t *cdb);

/* ---- logical units ---- */

struct scsi_lu_params {
	struct raid_vol *vol;
	const char *name;          /* for logs, e.g. "tank/vol0" */
	/* File holding persistent-reservation state when APTPL is set; NULL: not
	 * persisted. */
	const char *pr_path;
	/* Added by scsi: nominal rotation rate for the Block Device
	 * Characteristics VPD page; 0 reports a non-rotating medium (the
	 * default, e.g. SSD or file-backed members). */
	unsigned hdd_rpm;
};

int scsi_lu_create(const struct scsi_lu_params *p, struct scsi_lu **out);
/* The LU's volume grew (raid_vol_resize): READ CAPACITY reports the new
 * size from now on and every nexus known to the LU gets CAPACITY DATA HAS
 * CHANGED (SBC-3 4.6, as SPC-4 unit attentions are queued). true when the
 * size changed. Any thread. */
bool scsi_lu_resized(struct scsi_lu *lu);
/* The LU's medium changed under its initiators (a rollback of its volume):
 * a LUN reset's side effects (commands in flight aborted, reservations
 * released, BUS DEVICE RESET FUNCTION OCCURRED to every nexus). Any
 * thread. */
void scsi_lu_reset(struct scsi_lu *lu);
/* After scsi_lu_resized() on the node that grew a shared LU's volume
 * (raid_vol_shared: an RBD image other nodes serve): tells every other
 * node, which re-reads the size and raises CAPACITY DATA HAS CHANGED for
 * its own nexuses. Waits for them, at most 3 s (a warning when one does
 * not answer). Nothing for a LU that is not shared. Not on a reactor. */
void scsi_lu_grown_share(struct scsi_lu *lu);
/* Frees @lu, which no target maps any more; waits for the holders
 * scsi_lu_inflight() counts. */
void scsi_lu_destroy(struct scsi_lu *lu);

/* ---- targets and ports ---- */

int scsi_target_create(const char *iqn, struct scsi_target **out);
void scsi_target_destroy(struct scsi_target *t);
int scsi_target_add_lu(struct scsi_target *t, uint64_t lun, struct scsi_lu *lu);
/* One target port per portal group: @rel_port 1..65535, @tpgt the iSCSI
 * TPGT; the SCSI target port name is "<iqn>,t,0x<tpgt as 4 hex digits>". */
int scsi_target_add_port(struct scsi_target *t, uint16_t rel_port, uint16_t tpgt);
/* Implicit ALUA across nodes: every local port is its own target port group
 * (group id = its tpgt), reported active/optimized. @ids (n <= 64) are the
 * groups of the same target served by other nodes, reported
 * active/non-optimized with one port each whose relative port id is the
 * group id. Replaces the previous list; when it changes, every nexus gets
 * ASYMMETRIC ACCESS STATE CHANGED on every LU. -EINVAL for a 0 or repeated
 * id or one equal to a local port's tpgt, -E2BIG for too many. */
int scsi_target_set_peer_groups(struct scsi_target *t, const uint16_t *ids, unsigned n);
/* Removes the local port @rel_port (its portal left the target on a
 * reload): 0 or -ENOENT. Nexuses already made through it keep working. */
int scsi_target_remove_port(struct scsi_target *t, uint16_t rel_port);
/* Copies up to @max local relative port ids; returns how many ports exist. */
unsigned scsi_target_ports(struct scsi_target *t, uint16_t *rel_ports, unsigned max);

/* ---- LUN masking and mapping (per-initiator views) ---- */

/* One LUN of a view: what the initiator addresses as @lun reaches the LU
 * the target maps at @target_lun (scsi_target_add_lu). */
struct scsi_lun_map {
	uint16_t lun;              /* < 256 */
	uint16_t target_lun;       /* < 256 */
	bool read_only;            /* medium writes: DATA PROTECT, WRITE PROTECTED */
};

struct scsi_view {
	const char *const *initiators; /* initiator names (case-insensitive) */
	unsigned n_initiators;
	const struct scsi_lun_map *map;
	unsigned n_map;
};

/*
 * Replaces @t's access table (copied). An I_T nexus whose initiator name
 * is listed in views[i] sees views[i].map (the first such view), any other
 * nexus @dflt's map (NULL: nothing). n_views 0 and @dflt NULL restore the
 * default: every nexus sees every LUN of the map under its own number,
 * writable. A nexus whose view changes (here, or through
 * scsi_target_add_lu / scsi_target_remove_lu) gets REPORTED LUNS DATA HAS
 * CHANGED on the LUs of its new view that it has addressed before (the
 * others give it POWER ON first anyway); a LUN that left its view answers
 * LOGICAL UNIT NOT SUPPORTED from the next command on, commands already
 * running finish. Returns 0, -EINVAL (a number >= 256, or twice in one
 * map) or -ENOMEM; on error the table is unchanged.
 */
int scsi_target_set_access(struct scsi_target *t, const struct scsi_view *views,
			   unsigned n_views, const struct scsi_view *dflt);
/* The target LUN that @n reaches as @lun (for scsi_inflight() and
 * scsi_resets_pending()), SCSI_NO_LUN when none; UINT64_MAX stays. */
#define SCSI_NO_LUN ((uint64_t)0xfffffffffffffffeull)
uint64_t scsi_nexus_target_lun(struct scsi_nexus *n, uint64_t lun);

/* ---- I_T nexus ---- */

/* @initiator_port: "<initiator iqn>,i,0x<isid as 12 hex digits>". */
int scsi_nexus_create(struct scsi_target *t, const char *initiator_port, uint16_t rel_port,
		      struct scsi_nexus **out);
/* I_T nexus loss (session ends): drops RESERVE(6/10) reservations held by
 * it and raises the unit attentions SPC-4 asks for. */
void scsi_nexus_destroy(struct scsi_nexus *n);
/* The reservation part of a nexus loss, ahead of it: drops the RESERVE(6/10)
 * reservations @n holds. The transport calls it before it answers a Logout,
 * because the initiator (or another) may issue its next command as soon as
 * it reads the response, while the session is still being torn down. */
void scsi_nexus_release(struct scsi_nexus *n);

/* ---- task management (called by the transport) ---- */

enum scsi_tmf {
	SCSI_TMF_ABORT_TASK_SET,
	SCSI_TMF_CLEAR_TASK_SET,
	SCSI_TMF_LUN_RESET,
	SCSI_TMF_TARGET_WARM_RESET,
	SCSI_TMF_TARGET_COLD_RESET,
};

/* Applies the reset side effects (reservations released, unit attentions
 * for the other nexuses, mode pages reset) and marks matching in-flight
 * commands aborted. @lun is as @by addresses it (its view); a target
 * reset resets the LUs of @by's view only (all with @by NULL). Returns 0
 * or a negative errno (-ENOENT: no such LUN). */
int scsi_tmf(struct scsi_target *t, struct scsi_nexus *by, uint64_t lun, enum scsi_tmf fn);

/* Number of commands of @t (or of one LUN with @lun != UINT64_MAX) that have
 * entered scsi_cmd_exec and not completed. */
unsigned scsi_inflight(struct scsi_target *t, uint64_t lun);
/* Number of resets of @t's LUs (or of one LUN) still telling the other
 * nodes of a shared LU (at most 3 s each): a reset's TMF response waits for
 * them as for the commands it aborted, without blocking the caller. */
unsigned scsi_resets_pending(struct scsi_target *t, uint64_t lun);

/* ---- helpers for transports ---- */

/* Fills @cmd with CHECK CONDITION and fixed-format sense (key/asc/ascq). */
void scsi_set_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq);

/* Decode the 8-byte SAM LUN field (peripheral and flat addressing). */
uint64_t scsi_lun_decode(const uint8_t lun[8]);
void scsi_lun_encode(uint64_t lun, uint8_t out[8]);

/* ---- statistics (added for rtgtctl stats) ---- */

/* The LU and target latency histograms (struct conf_hist, conf/util.h):
 * values below 16 us have a bucket each, above that 8 buckets per power of
 * two (<= 12.5% error), up to 2^31 us; larger values land in the last
 * bucket. The sum of the recorded values (conf_hist_sum_ns): the difference
 * of two readings over the time between them is the mean number of
 * commands in service (rtgtctl stats --watch, top: queue depth). */
#define SCSI_LAT_SUB_BITS 3u
#define SCSI_LAT_MAX_EXP 31u

/* Counters of one LU since it was created: commands that reached the
 * device server (not those refused for a missing LUN). Latency is the
 * service time from scsi_cmd_exec() to completion. */
struct scsi_lu_stats {
	uint64_t read_ops, write_ops, other_ops;
	uint64_t read_bytes, write_bytes;
	uint64_t lat_count, lat_p50_us, lat_p99_us;
};

void scsi_lu_get_stats(struct scsi_lu *lu, struct scsi_lu_stats *out);
const char *scsi_lu_name(const struct scsi_lu *lu);
/* The LU's latency histogram (live view: its buckets and sum). */
const struct conf_hist *scsi_lu_lat(const struct scsi_lu *lu);

/* Unmaps @lun from @t (the LU itself stays; the caller destroys it once no
 * target maps it and scsi_lu_inflight() is 0). Sessions logged in see
 * REPORTED LUNS DATA HAS CHANGED on the target's remaining LUs. Returns 0
 * or -ENOENT. */
int scsi_target_remove_lu(struct scsi_target *t, uint64_t lun);
/* The LU mapped at @lun, or NULL: for the owner of the map (the daemon's
 * reload), which alone may free it; takes no reference. */
struct scsi_lu *scsi_target_lu(struct scsi_target *t, uint64_t lun);
/* Commands and task-management calls holding @lu: those still between the
 * LUN lookup and their completion, counted or not yet. Once no target maps
 * @lu it only falls, and at 0 scsi_lu_destroy() does not wait. */
unsigned scsi_lu_inflight(struct scsi_lu *lu);

#endif
