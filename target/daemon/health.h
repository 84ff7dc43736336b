/*
 * target/daemon/health.h - member health: SMART through smartmontools'
 * `smartctl --json` for members that are block devices, and the "slow"
 * flag for members whose latency stays far above their siblings'.
 *
 * smartctl runs on the health thread, never on a reactor: at start and
 * every daemon.health_interval seconds, one member after the other, each
 * run killed after HEALTH_TIMEOUT_MS. Members that are not block devices
 * (files) are not checked and have no health entry.
 */
#ifndef RTGT_DAEMON_HEALTH_H
#define RTGT_DAEMON_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid/raid.h"

struct events;
struct health;
struct json_object;

#define HEALTH_TIMEOUT_MS 30000u
#define HEALTH_OUT_MAX (1u << 20)   /* bytes of smartctl output read */

enum health_state {
	HEALTH_UNKNOWN,      /* not checked yet */
	HEALTH_PASSED,       /* the device's own verdict is good, no bad counters */
	HEALTH_WARNING,      /* passed, but reallocated/pending/uncorrectable
	                      * sectors or media errors are not zero */
	HEALTH_FAILING,      /* the device says it is failing, a pre-failure
	                      * attribute reached its threshold, or an NVMe
	                      * critical warning is set */
	HEALTH_UNAVAILABLE,  /* no SMART data (a loop device, a virtual disk,
	                      * smartctl missing): not an error */
	HEALTH_STANDBY,      /* asleep; smartctl -n standby did not wake it */
};

struct health_info {
	enum health_state state;
	char reason[160];          /* why failing/warning/unavailable; "" otherwise */
	char protocol[16];         /* "ATA", "NVMe", "SCSI" or "" */
	char model[64];
	/* -1 when the device does not report it */
	int64_t reallocated;       /* ATA 5, SCSI grown defect list */
	int64_t pending;           /* ATA 197 */
	int64_t uncorrectable;     /* ATA 198 */
	int64_t media_errors;      /* NVMe */
	int64_t percentage_used;   /* NVMe */
	int64_t temperature_c;
	int exit_status;           /* smartctl's */
};

const char *health_state_name(enum health_state s);

/* Parses smartctl's --json output (@len bytes at @json; @exit_status: the
 * process's, used when the output has none). Returns 0 (*@out filled; a
 * device without SMART is HEALTH_UNAVAILABLE, not an error) or -EINVAL
 * when @json is not smartctl JSON. */
int health_parse(const char *json, size_t len, int exit_status, struct health_info *out);
/* Runs @smartctl on @dev (blocking, at most @timeout_ms) and parses it.
 * A smartctl that cannot run gives HEALTH_UNAVAILABLE with the reason. */
int health_query(const char *smartctl, const char *dev, unsigned timeout_ms,
		 struct health_info *out);

/* ---- the health thread ---- */

struct health_member {
	char pool[64];
	char path[256];
};

/* Called on the health thread when a member's state becomes FAILING. */
typedef void (*health_failing_fn)(void *arg, const char *pool, const char *path);

/* Starts the thread; @interval_s 0: no checks at all. @ev may be NULL. */
int health_create(const char *smartctl, unsigned interval_s, struct events *ev,
		  health_failing_fn failing, void *arg, struct health **out);
void health_destroy(struct health *h);
/* The members to watch (copied; any thread); a new list is checked at
 * once for the members it did not have. */
int health_set_members(struct health *h, const struct health_member *m, unsigned n);
/* Adds "health" to @mo when @path was checked (any thread). */
void health_member_json(struct health *h, const char *path, struct json_object *mo);
/* Copies the newest result of @path; false when there is none. */
bool health_member_get(struct health *h, const char *path, struct health_info *out);

/* ---- slow members ----
 * Every SLOW_WINDOW_S the daemon hands in each pool's member histograms;
 * a member is slow when, over the last window, its p99 is above
 * SLOW_FACTOR x the median p99 of the pool's other active members and
 * above SLOW_FLOOR_US, with at least SLOW_MIN_IOS I/Os, in SLOW_WINDOWS
 * windows in a row; it stops being slow after one window that is not. */
#define SLOW_WINDOW_S 10u
#define SLOW_FACTOR 4u
#define SLOW_FLOOR_US 2000u
#define SLOW_MIN_IOS 50u
#define SLOW_WINDOWS 3u

struct slow_member {
	char path[256];
	uint64_t prev[RAID_MEMBER_LAT_BUCKETS];   /* reads + writes at the last window */
	unsigned over;          /* windows in a row over the bar */
	bool slow;
	uint64_t p99_us;        /* of the last window, 0: too few I/Os */
	bool seen;              /* in the newest pool info */
};

struct slow_pool {
	char name[64];
	unsigned n;
	struct slow_member m[64];
};

/* One window for @pi: updates @sp (matched by member path), posts
 * "member_slow" / "member_not_slow" events to @ev (may be NULL). */
void slow_update(struct slow_pool *sp, const struct raid_pool_info *pi, struct events *ev);
/* p99 upper bound (us) of a log2 histogram raid-style, 0 when empty. */
uint64_t slow_hist_p99(const uint64_t *h, uint64_t *count);

#endif
