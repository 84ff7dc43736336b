/*
 * target/scsi/scsi_int.h - private to target/scsi: object layouts, the
 * opcode table entry, big-endian accessors, sense and unit-attention helpers
 * shared by lu.c (dispatch), spc.c (primary commands), sbc.c (block
 * commands), pr.c and pr_state.c (reservations).
 *
 * Locking: every field of struct scsi_lu below "lock" is protected by it.
 * The lock is never held across volume I/O or across cmd->done. Lock order:
 * scsi_target.lock before scsi_lu.lock, never the other way round.
 */
#ifndef RTGT_SCSI_INT_H
#define RTGT_SCSI_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "raid/raid.h"
#include "target/scsi/scsi.h"

#define SCSI_BS 512u
#define SCSI_BS_SHIFT 9
#define SCSI_UA_MAX 8
#define SCSI_MAX_LUNS 256
#define SCSI_MAX_PORTS 64

/* ---- opcodes ---- */
enum {
	OP_TEST_UNIT_READY = 0x00,
	OP_REQUEST_SENSE = 0x03,
	OP_READ_6 = 0x08,
	OP_WRITE_6 = 0x0a,
	OP_INQUIRY = 0x12,
	OP_MODE_SELECT_6 = 0x15,
	OP_RESERVE_6 = 0x16,
	OP_RELEASE_6 = 0x17,
	OP_MODE_SENSE_6 = 0x1a,
	OP_START_STOP_UNIT = 0x1b,
	OP_PREVENT_ALLOW = 0x1e,
	OP_READ_CAPACITY_10 = 0x25,
	OP_READ_10 = 0x28,
	OP_WRITE_10 = 0x2a,
	OP_WRITE_VERIFY_10 = 0x2e,
	OP_VERIFY_10 = 0x2f,
	OP_PRE_FETCH_10 = 0x34,
	OP_SYNC_CACHE_10 = 0x35,
	OP_WRITE_SAME_10 = 0x41,
	OP_UNMAP = 0x42,
	OP_MODE_SELECT_10 = 0x55,
	OP_RESERVE_10 = 0x56,
	OP_RELEASE_10 = 0x57,
	OP_MODE_SENSE_10 = 0x5a,
	OP_PR_IN = 0x5e,
	OP_PR_OUT = 0x5f,
	OP_EXTENDED_COPY = 0x83,
	OP_RECEIVE_COPY_RESULTS = 0x84,
	OP_READ_16 = 0x88,
	OP_COMPARE_AND_WRITE = 0x89,
	OP_WRITE_16 = 0x8a,
	OP_WRITE_VERIFY_16 = 0x8e,
	OP_VERIFY_16 = 0x8f,
	OP_PRE_FETCH_16 = 0x90,
	OP_SYNC_CACHE_16 = 0x91,
	OP_WRITE_SAME_16 = 0x93,
	OP_SAI_16 = 0x9e,
	OP_REPORT_LUNS = 0xa0,
	OP_MAINT_IN = 0xa3,
	OP_READ_12 = 0xa8,
	OP_WRITE_12 = 0xaa,
	OP_WRITE_VERIFY_12 = 0xae,
	OP_VERIFY_12 = 0xaf,
};

/* Limits a thin LU reports (Block Limits VPD page). UNMAP: 512 MiB and 256
 * descriptors per command, done as discards of at most the volume's
 * discard_max one after the other (bounded, so a command ends well inside
 * an initiator's timeout; Linux splits a larger discard). WRITE SAME: as
 * much as one transfer may carry (thick LUs report no limit) */
#define SCSI_UNMAP_MAX_BLOCKS (1u << 20)
#define SCSI_UNMAP_MAX_DESC 256u
#define SCSI_WS_MAX_BLOCKS (SCSI_MAX_XFER / SCSI_BS)

/* EXTENDED COPY (LID1) limits, reported by the Third-party Copy VPD page
 * and RECEIVE COPY RESULTS OPERATING PARAMETERS (xcopy.c, spc.c): CSCD
 * descriptors (32 bytes each), block-to-block segment descriptors (28
 * bytes each), the two lists together, blocks per segment (its NUMBER OF
 * BLOCKS field is 16 bits), no inline data. Copies held per I_T nexus for
 * RECEIVE COPY RESULTS (also the most it runs at once). */
#define SCSI_XCOPY_MAX_CSCD 16u
#define SCSI_XCOPY_MAX_SEG 64u
#define SCSI_XCOPY_MAX_DESC_LEN (SCSI_XCOPY_MAX_CSCD * 32u + SCSI_XCOPY_MAX_SEG * 28u)
#define SCSI_XCOPY_MAX_SEG_BYTES (0xffffu * SCSI_BS)
#define SCSI_XCOPY_HELD 16u

/* service actions */
enum {
	SAI_READ_CAPACITY_16 = 0x10,
	SAI_GET_LBA_STATUS = 0x12,
	MI_REPORT_TPGS = 0x0a,
	MI_REPORT_OPCODES = 0x0c,
	MI_REPORT_TMFS = 0x0d,
	RCR_COPY_STATUS = 0x00,
	RCR_OPERATING_PARAMS = 0x03,
	RCR_FAILED_SEGMENT = 0x04,
};

/* ---- sense keys and codes (asc << 8 | ascq) ---- */
enum {
	SK_NO_SENSE = 0x0,
	SK_NOT_READY = 0x2,
	SK_MEDIUM_ERROR = 0x3,
	SK_HARDWARE_ERROR = 0x4,
	SK_ILLEGAL_REQUEST = 0x5,
	SK_UNIT_ATTENTION = 0x6,
	SK_DATA_PROTECT = 0x7,
	SK_COPY_ABORTED = 0xa,
	SK_ABORTED_COMMAND = 0xb,
	SK_MISCOMPARE = 0xe,
};

enum {
	ASC_NONE = 0x0000,
	ASC_BECOMING_READY = 0x0401,   /* NOT READY: in process of becoming ready */
	ASC_NOT_READY_MANUAL = 0x0403, /* NOT READY: manual intervention required */
	ASC_PORT_UNAVAILABLE = 0x040c, /* NOT READY: LU not accessible, target port
	                                * in unavailable state (fenced node) */
	ASC_WRITE_ERROR = 0x0c00,
	ASC_COPY_TARGET_NOT_REACHABLE = 0x0d02, /* COPY ABORTED: CSCD unknown or not usable */
	ASC_OPERATION_IN_PROGRESS = 0x0016,
	ASC_INVALID_FIELD_IN_IU = 0x0e03,
	ASC_READ_ERROR = 0x1100,
	ASC_PARAM_LIST_LENGTH = 0x1a00,
	ASC_MISCOMPARE_VERIFY = 0x1d00,
	ASC_INVALID_OPCODE = 0x2000,
	ASC_LBA_OUT_OF_RANGE = 0x2100,
	ASC_INVALID_FIELD_IN_CDB = 0x2400,
	ASC_LUN_NOT_SUPPORTED = 0x2500,
	ASC_INVALID_FIELD_IN_PARAM = 0x2600,
	ASC_INVALID_RELEASE_PR = 0x2604,
	ASC_TOO_MANY_TARGET_DESC = 0x2606,
	ASC_UNSUPP_TARGET_DESC = 0x2607,
	ASC_TOO_MANY_SEGMENT_DESC = 0x2608,
	ASC_UNSUPP_SEGMENT_DESC = 0x2609,
	ASC_WRITE_PROTECTED = 0x2700,
	ASC_SPACE_ALLOC_FAILED = 0x2707, /* DATA PROTECT: space allocation failed write protect */
	ASC_POWER_ON_RESET = 0x2900,
	ASC_BUS_DEVICE_RESET = 0x2903,
	ASC_NEXUS_LOSS = 0x2907,
	ASC_MODE_PARAMS_CHANGED = 0x2a01,
	ASC_RESERVATIONS_PREEMPTED = 0x2a03,
	ASC_RESERVATIONS_RELEASED = 0x2a04,
	ASC_REGISTRATIONS_PREEMPTED = 0x2a05,
	ASC_CAPACITY_CHANGED = 0x2a09,
	ASC_CMDS_CLEARED_BY_OTHER = 0x2f00,
	ASC_THIN_SOFT_THRESHOLD = 0x3807, /* UNIT ATTENTION: thin provisioning soft
	                                   * threshold reached (SBC-3 4.7.3.7) */
	ASC_SAVING_NOT_SUPPORTED = 0x3900,
	ASC_LUNS_CHANGED = 0x3f0e,
	ASC_INTERNAL_TARGET_FAILURE = 0x4400,
	ASC_INSUFFICIENT_RESOURCES = 0x5503,
	ASC_INSUFFICIENT_REG_RESOURCES = 0x5504,
};

/* big-endian accessors: conf_get_be16() and friends, conf/util.h (through scsi.h) */

/* ---- objects ---- */

/* What RECEIVE COPY RESULTS reports of one EXTENDED COPY of an I_T nexus
 * (LIST ID USAGE 00b: held), in the nexus under its target's lock. */
enum { XRES_FREE = 0, XRES_RUNNING, XRES_DONE_OK, XRES_DONE_ERR };
struct scsi_xcopy_res {
	uint8_t state;                  /* XRES_* */
	uint8_t list_id;
	uint16_t segs_done;             /* segment descriptors completed */
	uint32_t bytes_done;            /* bytes written to destinations */
	uint64_t seq;                   /* order of the copies, oldest dropped first */
	uint8_t status;                 /* SAM status the command ended with */
	uint8_t sense_len;
	uint8_t sense[SCSI_SENSE_MAX];
};

struct scsi_nexus {
	struct scsi_target *t;          /* borrowed; outlives the nexus */
	char *iport;                    /* owned: "<iqn>,i,0x<isid>" */
	uint16_t rel_port;
	uint16_t tpgt;
	struct scsi_nexus *next;        /* target's nexus list (t->lock) */
	/* The nexus's view of the target's LUNs, resolved (t->lock): what
	 * its LUN number N reaches. Rebuilt under t->lock by every change of
	 * the LUN map or the access table, so vlu[] only ever holds LUs the
	 * target maps (the reload frees an LU only when no target maps it). */
	struct scsi_lu *vlu[SCSI_MAX_LUNS];
	uint16_t vtl[SCSI_MAX_LUNS];    /* target LUN; SCSI_MAX_LUNS: none */
	bool vro[SCSI_MAX_LUNS];        /* read-only through this view */
	/* EXTENDED COPY results this nexus may ask for (t->lock): another
	 * nexus never sees them */
	struct scsi_xcopy_res xres[SCSI_XCOPY_HELD];
	uint64_t xres_seq;
};

/* A copied scsi_view (scsi_target_set_access). */
struct scsi_access_view {
	char **ini;                     /* owned */
	unsigned n_ini;
	struct scsi_lun_map *map;       /* owned */
	unsigned n_map;
};

struct scsi_access {
	struct scsi_access_view *views; /* owned */
	unsigned n_views;
	struct scsi_access_view dflt;   /* ini unused */
};

/* Pending unit attentions of one I_T nexus on one LU, oldest first. Made at
 * the nexus's first command to the LU, with POWER ON, RESET OCCURRED. */
struct scsi_ua {
	struct scsi_nexus *nexus;       /* borrowed; record dropped with it */
	uint16_t q[SCSI_UA_MAX];        /* asc << 8 | ascq */
	unsigned n;
	/* deferred errors: the volume's raid_vol_write_failures() this
	 * nexus was last told of (see "Deferred errors" at the top of sense.c) */
	uint64_t wfail_seen;
	struct scsi_ua *next;
};

/* The deferred-error state of an I_T nexus that went away (its session
 * ended) while a deferred error was pending for it: the I_T nexus is the
 * initiator port and the target port (SAM-5), so the session that comes
 * back under the same names inherits it. At most SCSI_DFR_GONE_MAX per LU,
 * the oldest dropped. */
#define SCSI_DFR_GONE_MAX 64u
struct scsi_dfr_gone {
	char *iport;                    /* owned */
	uint16_t rel_port;
	uint64_t wfail_seen;
	struct scsi_dfr_gone *next;     /* newest first */
};

/* One persistent-reservation registration, keyed by I_T nexus identity
 * (initiator port name + relative target port) so it survives a session
 * ending and coming back. */
struct scsi_pr_reg {
	char *iport;                    /* owned */
	uint16_t rel_port;
	bool all_tg_pt;                 /* registered through every target port */
	uint64_t key;
	struct scsi_pr_reg *next;
};

/* PR reservation types */
enum {
	PR_WE = 1,
	PR_EA = 3,
	PR_WERO = 5,
	PR_EARO = 6,
	PR_WEAR = 7,
	PR_EAAR = 8,
};

struct scsi_mode {
	bool wce;       /* caching page */
	bool d_sense;   /* control page: descriptor-format sense */
	bool swp;       /* control page: software write protect */
};

struct scsi_lu {
	struct raid_vol *vol;           /* borrowed; outlives the LU */
	char *name;                     /* owned */
	char *pr_path;                  /* owned; NULL: APTPL not persisted */
	/* grows only (scsi_lu_resized, under lock); read without it */
	_Atomic uint64_t nblocks;
	uint8_t uuid[16];
	unsigned hdd_rpm;
	char serial[33];
	struct raid_vol_prov prov;      /* the volume's, constant */
	/* thin LUs: the volume's raid_vol_thin_threshold_events() the LU last
	 * told its nexuses of (sbc.c thin_threshold_check). Starts at the
	 * count when the LU is made, so a crossing from before a restart is
	 * not reported again; moved only by compare-exchange, so one command
	 * raises each crossing. */
	_Atomic uint64_t thin_events_seen;
	/* LUN and target resets of this LU (lu.c lu_reset): an EXTENDED COPY
	 * sent to another LU that reads or writes this one stops when it
	 * moves (xcopy.c) */
	_Atomic uint64_t resets;

	pthread_mutex_t lock;
	struct scsi_mode mode;
	/* SPC-2 RESERVE(6/10) holder; cleared when that nexus goes away */
	struct scsi_nexus *res2;
	/* persistent reservations */
	struct scsi_pr_reg *regs;       /* owned list */
	uint32_t pr_gen;
	bool pr_aptpl;
	uint8_t pr_type;                /* 0: no reservation */
	struct scsi_pr_reg *pr_holder;  /* NULL for all-registrants types */
	/* the APTPL file could not be loaded (damaged, old format, a
	 * symlink, unreadable: pr_state.c logged why): every command but those
	 * flagged OPF_NO_UA (INQUIRY, REPORT LUNS, REQUEST SENSE) gets NOT
	 * READY, MANUAL INTERVENTION REQUIRED, rather than running without
	 * the reservations it should enforce. Set by pr_load(), then
	 * constant. */
	bool pr_bad;
	struct scsi_ua *uas;            /* owned list */
	struct scsi_dfr_gone *dfr_gone; /* owned list, newest first */
	unsigned n_dfr_gone;
	struct scsi_cmd *inflight;      /* commands inside scsi_cmd_exec */
	unsigned n_inflight;
	/* Holders of the LU that found it through a target's LUN map: a
	 * command from its lookup to its completion, a task-management call,
	 * a counter read. Taken under the target lock (lu_get() in lu.c), so
	 * once the LU is unmapped from every target the count only falls;
	 * dropped with release order, read with acquire, so that
	 * scsi_lu_destroy() (which waits for 0) happens after every holder's
	 * last access. */
	atomic_uint refs;
	/* rtgtctl stats: atomics, updated outside the lock */
	_Atomic uint64_t st_read_ops, st_write_ops, st_other_ops;
	_Atomic uint64_t st_read_bytes, st_write_bytes;
	struct conf_hist st_lat;
	/* Shared LU (raid_vol_shared(vol): an RBD image that other rtgt nodes
	 * serve too): the persistent-reservation state above is a copy of the
	 * volume's "pr" blob, installed under lock by pr_state.c (see the top of
	 * pr_state.c); pr_path is not used. Set by pr_load() before the LU is
	 * shared, then constant. */
	bool pr_shared;
	struct raid_shared_watch *pr_watch; /* owned; NULL unless pr_shared */
	uint64_t pr_seq;                /* version of the installed blob (lock);
	                                 * local LUs: changes installed (pr_state.c pr_local_out) */
	/* resets of this LU whose notify to the other nodes has not yet
	 * been acknowledged or timed out (pr_lu_reset; lock) */
	unsigned pr_resets_pending;
	/* grows by another node being looked at (pr_state.c grow_main; lock) */
	unsigned pr_grows_pending;
	/* pr_state.c's scratch LUs only: where pr.c's ua_reg()/abort_reg() record the
	 * events of a service action; NULL on real LUs */
	struct pr_rec *pr_rec;
};

struct scsi_port {
	uint16_t rel_port;
	uint16_t tpgt;
};

struct scsi_target {
	char *iqn;                      /* owned */
	pthread_mutex_t lock;           /* LUN map, ports, nexus list */
	struct scsi_lu *luns[SCSI_MAX_LUNS]; /* borrowed */
	struct scsi_port ports[SCSI_MAX_PORTS];
	unsigned n_ports;
	struct scsi_nexus *nexuses;
	/* Target port groups of the same target on other nodes (implicit
	 * ALUA): reported active/non-optimized, each holding one port whose
	 * relative port id equals the group id. Never equal to a local
	 * port's tpgt (scsi_target_set_peer_groups refuses it). Under lock. */
	uint16_t peer_tpgs[SCSI_MAX_PORTS];
	unsigned n_peer_tpgs;
	/* LUN masking (scsi_target_set_access); NULL: every nexus sees the
	 * whole map, writable. Under lock. */
	struct scsi_access *access;
};

/* ---- opcode table ---- */

enum scsi_op_flags {
	OPF_ANY_LUN = 1u << 0,   /* runs for LUNs that do not exist */
	OPF_NO_UA = 1u << 1,     /* does not report pending unit attentions */
	OPF_RES2_OK = 1u << 2,   /* allowed under another nexus's RESERVE(6/10) */
	OPF_PR_READ = 1u << 3,   /* conflicts with exclusive-access reservations */
	OPF_PR_WRITE = 1u << 4,  /* conflicts with any reservation not held */
	OPF_MEDIUM_WRITE = 1u << 5, /* refused when write protected */
	OPF_RCTD = 1u << 6,      /* listed in RSOC */
	/* data-out that may stop short of the CDB's transfer length at a
	 * logical block boundary: the blocks sent are written (FCP-4 9.4.2 a) */
	OPF_OUT_TRUNC = 1u << 7,
	/* exists only on a thin LU (logical block provisioning, LBPU=1):
	 * elsewhere it is an invalid opcode, and RSOC leaves it out */
	OPF_THIN = 1u << 8,
};

/* Which way a command's data flows (SAM-5 5.4): what the CDB asks for,
 * checked by the dispatcher against the transport's R/W bits and EDTL. */
enum scsi_xfer_dir {
	XFER_NONE = 0,   /* no data either way */
	XFER_IN,         /* data-in: device server to initiator */
	XFER_OUT,        /* data-out: the initiator sends it (data or parameter list) */
};

struct scsi_op {
	/* Returns nothing: completes the command itself, now or later, through
	 * scsi_cmd_complete(). */
	void (*fn)(struct scsi_cmd *cmd);
	uint8_t cdb_len;
	uint16_t flags;
	/* Data direction; with @xfer, the bytes the CDB moves that way (0:
	 * none for this CDB, e.g. a transfer length of 0 or VERIFY with
	 * BYTCHK=0). XFER_NONE entries have no @xfer. */
	uint8_t dir;
	uint64_t (*xfer)(const uint8_t *cdb);
	const char *name;
	/* CDB usage bitmap for REPORT SUPPORTED OPERATION CODES (cdb_len bytes;
	 * byte 0 is the opcode itself). */
	uint8_t usage[16];
	/* Opcodes with service actions: sub-table indexed by cdb[1] & 0x1f. */
	const struct scsi_op *sa;
	unsigned n_sa;
};

/* spriv_u[] slots the dispatcher fills for task.c and the handlers. */
/* 1 when the command reached its LU through a read-only mapping of its
 * nexus's view. */
#define SPRIV_VIEW_RO 6
/* CLOCK_MONOTONIC microseconds when the command entered the device server,
 * for the LU's latency histogram. */
#define SPRIV_START_US 7

/* ---- task.c: a command's plumbing ---- */

struct scsi_lu *scsi_cmd_lu(const struct scsi_cmd *cmd);
/* The command reached its LU through a read-only mapping. */
bool scsi_cmd_view_ro(const struct scsi_cmd *cmd);
/* The LUN numbers @n sees (all of @t's with @n NULL), ascending, into
 * @out (SCSI_MAX_LUNS entries); returns how many. */
unsigned scsi_view_luns(struct scsi_target *t, struct scsi_nexus *n, uint16_t *out);
/* Completes @cmd: drops it from the in-flight list and calls cmd->done. */
void scsi_cmd_complete(struct scsi_cmd *cmd);
/* Drops a reference lu_get() (lu.c) took; NULL is a no-op. */
void scsi_lu_put(struct scsi_lu *lu);
/* Drops the command's LU reference before done: done may free the
 * command, and the transport never looks at the LU. */
void scsi_cmd_release_lu(struct scsi_cmd *cmd);
/* Copies @len bytes of reply data, clipped to the allocation length and
 * the buffer, and sets xfer_len/data_in_len. */
void scsi_reply(struct scsi_cmd *cmd, const void *data, uint32_t len, uint32_t alloc_len);

/* ---- sense.c: sense data, unit attentions, deferred errors ---- */

/* Fills status/sense in the LU's current sense format; code = asc<<8|ascq. */
void scsi_sense(struct scsi_cmd *cmd, uint8_t key, uint16_t code);
/* Same with the INFORMATION field set. */
void scsi_sense_info(struct scsi_cmd *cmd, uint8_t key, uint16_t code, uint64_t info);
/* ILLEGAL REQUEST with a sense-key-specific field pointer: @cd true: CDB,
 * false: parameter list; @bit < 8 marks the bit, else byte only. */
void scsi_sense_field(struct scsi_cmd *cmd, uint16_t code, bool cd, uint16_t byte, int bit);
/* Builds sense bytes into @out (>= SCSI_SENSE_MAX) and returns their length. */
unsigned scsi_sense_build(uint8_t *out, bool desc, uint8_t key, uint16_t code, bool info_valid,
			  uint64_t info, bool sks_valid, const uint8_t sks[3]);

/* Unit attentions; caller holds lu->lock. */
struct scsi_ua *scsi_ua_get(struct scsi_lu *lu, struct scsi_nexus *n, bool create);
void scsi_ua_add(struct scsi_ua *ua, uint16_t code);
/* To every known nexus but @except (may be NULL). */
void scsi_ua_add_all(struct scsi_lu *lu, const struct scsi_nexus *except, uint16_t code);
/* Pops the oldest of @ua's pending UAs (there is one) into *@code. */
void scsi_ua_pop(struct scsi_ua *ua, uint16_t *code);
/* Drops @n's record on @lu (the nexus goes away, or the LU leaves its
 * target), keeping a pending deferred error for the I_T nexus's next
 * session (lu->dfr_gone). */
void scsi_ua_drop(struct scsi_lu *lu, const struct scsi_nexus *n);
/* REQUEST SENSE: pops the oldest pending UA of @n; false if none. Takes
 * lu->lock itself. */
bool scsi_ua_take(struct scsi_lu *lu, struct scsi_nexus *n, uint16_t *code);
/* Deferred errors (top of sense.c): true, once, when the volume's write-out
 * failures moved since @ua's nexus was last told (and records it told).
 * Caller holds lu->lock. */
bool scsi_deferred_pending(struct scsi_lu *lu, struct scsi_ua *ua);
/* The same for REQUEST SENSE; takes lu->lock itself. */
bool scsi_deferred_take(struct scsi_lu *lu, struct scsi_nexus *n);
/* The sense data of a deferred write error into @out (>= SCSI_SENSE_MAX):
 * response code 71h (fixed) or 73h (descriptor, @desc), MEDIUM ERROR,
 * WRITE ERROR (03/0c/00), no INFORMATION; returns its length. */
unsigned scsi_deferred_sense(uint8_t *out, bool desc);
/* Sense data of a volume that is not ready (@ready: raid_vol_ready_progress()
 * < 0) into @out (>= SCSI_SENSE_MAX), fixed or descriptor format (@desc);
 * returns its length. NOT READY, IN PROCESS OF BECOMING READY (02/04/01)
 * with the sense-key specific PROGRESS INDICATION @frac (SKSV set) while it
 * is prepared, NOT READY, MANUAL INTERVENTION REQUIRED (02/04/03) after a
 * failure, NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN
 * UNAVAILABLE STATE (02/04/0C) while this node is fenced from the volume's
 * shared storage (@ready -ENOLINK). */
unsigned scsi_not_ready_sense(uint8_t *out, bool desc, int ready, uint16_t frac);
/* true when the LU's volume serves I/O; otherwise completes @cmd with NOT
 * READY (becoming ready / manual intervention required) and returns false. */
bool scsi_medium_ready(struct scsi_cmd *cmd);

/* ---- lu.c ---- */

/* Invariant check of the command/UA state machine in lu.c (takes the lock). */
bool scsi_lu_check(struct scsi_lu *lu);

/* ---- spc.c ---- */
void spc_test_unit_ready(struct scsi_cmd *cmd);
void spc_request_sense(struct scsi_cmd *cmd);
void spc_inquiry(struct scsi_cmd *cmd);
void spc_mode_sense(struct scsi_cmd *cmd);
void spc_mode_select(struct scsi_cmd *cmd);
void spc_report_luns(struct scsi_cmd *cmd);
void spc_report_tmfs(struct scsi_cmd *cmd);
void spc_report_tpgs(struct scsi_cmd *cmd);
void spc_start_stop(struct scsi_cmd *cmd);
void spc_prevent_allow(struct scsi_cmd *cmd);
/* Invariant check of the mode-parameter state machine (takes the lock). */
bool spc_mode_check(struct scsi_lu *lu);

/* The LU's NAA designator (VPD 0x83, type 3, association 0) into @out. */
void spc_lu_naa(const struct scsi_lu *lu, uint8_t out[16]);

/* ---- xcopy.c ---- */
void xcopy_extended_copy(struct scsi_cmd *cmd);
void xcopy_receive_results(struct scsi_cmd *cmd);

/* ---- sbc.c ---- */
void sbc_read(struct scsi_cmd *cmd);
void sbc_write(struct scsi_cmd *cmd);
void sbc_verify(struct scsi_cmd *cmd);
void sbc_write_same(struct scsi_cmd *cmd);
void sbc_compare_write(struct scsi_cmd *cmd);
void sbc_sync_cache(struct scsi_cmd *cmd);
void sbc_prefetch(struct scsi_cmd *cmd);
void sbc_read_capacity10(struct scsi_cmd *cmd);
void sbc_read_capacity16(struct scsi_cmd *cmd);
void sbc_get_lba_status(struct scsi_cmd *cmd);
void sbc_unmap(struct scsi_cmd *cmd);

/* ---- pr.c (SPC-4 semantics) and pr_state.c (APTPL file, shared state) ---- */
void pr_reserve6(struct scsi_cmd *cmd);
void pr_release6(struct scsi_cmd *cmd);
void pr_in(struct scsi_cmd *cmd);
void pr_out(struct scsi_cmd *cmd);
/* Returns true when @op from @n must get RESERVATION CONFLICT. Caller holds
 * lu->lock. */
bool pr_conflict(struct scsi_lu *lu, const struct scsi_nexus *n, const struct scsi_op *op,
		 const uint8_t *cdb);
/* Loads APTPL state from lu->pr_path, if present. Called before the LU is
 * shared. Returns 0 or a negative errno (bad file). */
int pr_load(struct scsi_lu *lu);
void pr_free(struct scsi_lu *lu);
/* Invariant check of the PR state machine in pr.c; caller holds lu->lock. */
bool pr_check(struct scsi_lu *lu);
/* Called with lu->lock held when a nexus goes away or a reset happens. */
void pr_nexus_gone(struct scsi_lu *lu, const struct scsi_nexus *n);
/* After a LOGICAL UNIT RESET (@code ASC_BUS_DEVICE_RESET) or target reset
 * (ASC_POWER_ON_RESET) of @lu, lock not held: on a shared LU tells the
 * other nodes, which abort the LU's commands and raise @code for their
 * nexuses. Returns at once: the notify runs on a helper thread, counted in
 * lu->pr_resets_pending until the others answered or PR_RESET_NOTIFY_MS
 * passed (scsi_resets_pending; pr_free waits for it). */
void pr_lu_reset(struct scsi_lu *lu, uint16_t code);

#endif
