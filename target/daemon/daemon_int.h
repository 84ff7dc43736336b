/*
 * target/daemon/daemon_int.h - private to rtgtd's own files: main.c
 * (start-up, workers, monitoring, control dispatch, signals, shutdown),
 * reload.c (the live reload), status.c (status, stats, live, events and
 * the metrics snapshot) and entries.c (the entries: pools, LUs, targets,
 * used by main.c and reload.c). The four are linked into bin/rtgtd only,
 * never into librtgt.a: they are the daemon, not a library.
 *
 * Everything here runs on workers[0]'s thread (start-up, every control
 * request, SIGHUP) unless its comment says otherwise, so the entries below
 * need no lock; d->snap_mu guards only the metrics thread's requests.
 */
#ifndef RTGT_TARGET_DAEMON_DAEMON_INT_H
#define RTGT_TARGET_DAEMON_DAEMON_INT_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "conf/conf.h"
#include "net/net.h"
#include "raid/raid.h"
#include "target/daemon/ctl.h"
#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "target/daemon/metrics.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

#define MAX_LUN 256

struct pool_ent {
	char *name;                  /* owned */
	struct raid_pool *pool;      /* owned, never NULL */
};

/* One exported volume; a volume exported by two LUNs is one entry. */
struct lu_ent {
	char *pool, *volume;         /* owned names */
	struct raid_vol *vol;        /* owned by its pool; one open of it, closed
	                              * with the entry (daemon_lu_ent_free) */
	struct scsi_lu *lu;          /* owned */
	char *pr_path;               /* owned */
};

struct tgt_ent {
	char *iqn;                   /* owned */
	struct scsi_target *st;      /* owned */
	bool live;                   /* in the current conf */
};

struct worker {
	unsigned id;
	struct ev_loop *loop;        /* owned */
	struct raid_ioctx *ioctx;    /* owned */
	pthread_t thread;            /* valid when started, id != 0 */
	int started;
};

struct daemon {
	const char *path;                /* -c as given (argv) */
	struct conf *conf;               /* current; owned until a reload hands it to the server */
	struct pool_ent **pools;         /* owned array of owned entries */
	unsigned n_pools;
	struct lu_ent **lus;             /* owned array of owned entries */
	unsigned n_lus;
	struct tgt_ent **tgts;           /* owned array of owned entries, retired ones too */
	unsigned n_tgts;
	struct scsi_target **cur;        /* owned array: target of each conf->targets[i] */
	struct worker *workers;          /* owned, n = conf->daemon.workers at start */
	unsigned n_workers;
	struct iscsi_server *server;     /* owned, NULL until created */
	struct iscsi_ctl *ctl;           /* owned, NULL when not started */
	int sigfd;
	int stopping;
	/* alerts and monitoring */
	struct events *events;           /* owned; raid's event callback posts here */
	struct health *health;           /* owned, NULL when not created */
	struct metrics *metrics;         /* owned, NULL when daemon.metrics is not set */
	struct slow_pool *slow;          /* owned, one per pool seen by the slow check */
	unsigned n_slow;
	struct ev_timer *slow_timer;     /* on workers[0] */
	pthread_mutex_t snap_mu;         /* metrics snapshots waiting for workers[0] */
	pthread_cond_t snap_cv;
	bool snap_abort;                 /* stopping: snapshots give up */
};

/* ---- entries.c: assembly (start-up and the reload's PREPARE and COMMIT) ---- */

/* The invariant of the top of main.c. */
bool daemon_check(const struct daemon *d);
struct pool_ent *daemon_pool_find(struct daemon *d, const char *name);
/* vols.c: the control commands "volume" and "snapshot" (their args as
 * rtgtctl sends them); 0 or -errno with one line in @err. */
int daemon_vol_cmd(struct daemon *d, const char *cmd, struct json_object *args,
		   struct json_object *reply, char *err, size_t errlen);
struct lu_ent *daemon_lu_find(struct daemon *d, const char *pool, const char *volume);
struct tgt_ent *daemon_tgt_find(struct daemon *d, const char *iqn);
/* Assembles the pool of @cp and appends its entry. 0 or -errno (logged). */
int daemon_pool_add(struct daemon *d, const struct conf_pool *cp);
/* Removes and closes the last @n pool entries (reload rollback). */
void daemon_pools_drop_last(struct daemon *d, unsigned n);
/* Opens (creating it if new) the volume of @cl and its LU; a message in
 * @err on failure. */
int daemon_lu_add(struct daemon *d, const struct conf *c, const struct conf_lun *cl, char *err,
		  size_t errlen);
void daemon_lu_ent_free(struct lu_ent *e);
/* Grows the volume of @e to @size (raid_vol_resize) and tells its LU
 * (scsi_lu_resized: CAPACITY DATA HAS CHANGED). 0, also when it already has
 * that size; -errno with why in @err. */
int daemon_lu_grow(struct daemon *d, struct lu_ent *e, const struct conf_size *size, char *err,
		   size_t errlen);
/* Makes the SCSI target of @ct match it (LUN map, views, ports, peers). */
int daemon_tgt_sync(struct daemon *d, const struct conf *c, const struct conf_target *ct,
		struct scsi_target **out);
/* The members of every RAID pool to the health thread. */
void daemon_health_sync(struct daemon *d);

/* ---- reload.c ---- */

/* The live reload (top of reload.c). 0 with the summary in @reply, or
 * -errno with a message in @err (nothing changed). */
int daemon_reload(struct daemon *d, struct json_object *reply, char *err, size_t errlen);

/* ---- status.c ---- */

/* Appends a printf-formatted string to the JSON array @arr. */
void daemon_jadd_str(struct json_object *arr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "status"/"sessions" (@stats false) and "stats" (@stats true). */
int daemon_status_json(struct daemon *d, struct json_object *reply, bool stats);
/* "live": the snapshot rtgtctl top, stats --watch and paths subtract. */
int daemon_live_cmd(struct daemon *d, struct json_object *reply);
/* "events [SINCE]". */
int daemon_events_cmd(struct daemon *d, const char *since, struct json_object *reply, char *err,
		  size_t errlen);
/* metrics thread: the snapshot, taken on workers[0] (metrics_snapshot_fn). */
int daemon_metrics_snapshot(void *arg, struct json_object *snap);
/* metrics thread (/healthz): 0 when every worker's reactor ran a queued
 * call within 1 s (metrics_health_fn). */
int daemon_metrics_health(void *arg, char *why, size_t len);
/* Stops the metrics server (on workers[0] while stopping, or at teardown). */
void daemon_metrics_end(struct daemon *d);

#endif
