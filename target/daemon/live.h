/*
 * target/daemon/live.h - the control command "live": one snapshot of every
 * cumulative counter rtgtctl top, stats --watch and paths turn into rates.
 */
#ifndef RTGT_DAEMON_LIVE_H
#define RTGT_DAEMON_LIVE_H

struct conf;
struct iscsi_server;
struct json_object;
struct raid_pool;
struct scsi_lu;

struct live_lu {
	const char *pool, *volume;   /* borrowed */
	struct scsi_lu *lu;          /* borrowed */
};

/*
 * Fills @reply: "time_ns" (CLOCK_MONOTONIC), "wall" (Unix time, seconds),
 * the iSCSI server's portals, targets and sessions (iscsi_server_live_json),
 * "luns" [{pool, volume, exported_as, read/write/other ops and bytes,
 * latency_count, latency_sum_us, latency_hist}] and "pools" [{name, level,
 * state, rebuild_progress, rebuild_eta_s?, sync_progress?, scrub_state?,
 * scrub_mismatches?, thin_used_bytes? and thin_space_bytes? (pools with
 * thin volumes), members:[{path, state, read/write bytes and ops,
 * busy_ns, read_hist, write_hist, read/write_lat_sum_us,
 * read/write_lat_max_us}]}] (member histograms: [[upper bound us, count],
 * ...]).
 * Returns 0 or -ENOMEM. On the control loop's thread.
 */
int daemon_live_json(const struct conf *c, struct iscsi_server *srv,
		     struct raid_pool *const *pools, unsigned n_pools,
		     const struct live_lu *lus, unsigned n_lus, struct json_object *reply);

#endif
