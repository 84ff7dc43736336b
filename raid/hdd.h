/*
 * raid/hdd.h - the HDD timing model (hdd.c), a layer of the member I/O
 * stack (raid/mlayer.h) between the fault layer and the io_uring one: the
 * real I/O goes on below at once, its completion is held until the
 * modelled disk is done with it.
 */
#ifndef RTGT_RAID_HDD_H
#define RTGT_RAID_HDD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "raid/ioctx.h"
#include "raid/mlayer.h"

/* Model state of one member's disk, zero = idle disk at offset 0.
 * Protected by mu. Holds no pointers that outlive a request: waiting mios
 * are the submitters' until their callback. */
#define RAID_HDD_MAX_EXT 128u
#define RAID_HDD_NSTREAM 8u
struct raid_hdd_ext { uint64_t a, b; };
struct raid_hdd_stream {
	uint64_t lo;              /* read segment cached by the disk: [lo, ra_end) */
	uint64_t next;            /* end of the stream's last request */
	uint64_t ra_end;          /* read ahead up to here */
	uint64_t last_ns;         /* last use (LRU) */
	bool used, seq;           /* seq: two requests in a row continued it */
	unsigned run;             /* reads in a row that continued it closely */
};
struct raid_hdd {
	struct raid_mlayer l;     /* the layer; l.below set by raid_hdd_init */
	pthread_mutex_t mu;       /* head and queue */
	const struct conf_hdd *cfg;  /* the pool's model parameters */
	const uint64_t *stroke;   /* data bytes per member (the full stroke) */
	const char *name;         /* for the log */
	uint64_t busy_until;      /* the head is busy with a job until then */
	uint64_t head;            /* where the current/last job ends */
	uint64_t last_a;          /* where it started: re-reaching it costs a rotation */
	uint64_t end_ns;          /* when the head last finished a job: the platter
	                           * turns on while it idles (write-through writes) */
	int cur;                  /* stream the head serves (-1/0 unused: see hdd.c) */
	uint64_t batch;           /* bytes served on cur since the last switch */
	int job;                  /* current job kind (hdd.c) */
	uint64_t job_a, job_b;
	struct raid_mio *job_mio; /* read in service, NULL otherwise */
	struct raid_mio *q_head, *q_tail; /* waiting requests, arrival order */
	struct raid_mio *holder;  /* the waiting mio whose timeout drives the model */
	struct raid_hdd_ext ext[RAID_HDD_MAX_EXT]; /* dirty write cache, unsorted */
	unsigned n_ext;
	uint64_t dirty;
	struct raid_hdd_stream st[RAID_HDD_NSTREAM];
	/* statistics (tests, tuning) */
	uint64_t n_seek, n_switch, n_hit, n_ra_bytes;
	uint64_t n_busy_ns, n_pos_ns;      /* head time in jobs, of which positioning */
	uint64_t n_rd_jobs, n_drain_jobs;  /* jobs by kind (read-ahead: n_ra_bytes) */
	uint64_t n_rd_bytes, n_wr_bytes;   /* bytes the head read (jobs) / destaged */
	/* accounting window hdd.c logs at LOG_INFO (head busy share, seeks):
	 * start time and the counters at its start */
	uint64_t win_t0, win_busy, win_pos, win_seek, win_switch, win_rd, win_wr, win_ra;
};

/* An idle disk. Only its mutex needs raid_hdd_fini(). */
void raid_hdd_init(struct raid_hdd *d);
/* Stack it on @below with the model's parameters (read at every request,
 * so they must outlive the layer) and its name for the log. */
void raid_hdd_stack(struct raid_hdd *d, struct raid_mlayer *below, const struct conf_hdd *cfg,
		    const uint64_t *stroke, const char *name);
void raid_hdd_fini(struct raid_hdd *d);

#endif
