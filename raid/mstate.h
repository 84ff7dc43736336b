/*
 * raid/mstate.h - member state (mstate.c), private to the RAID backend.
 *
 * The member-state calls the data path, the bitmap and the background
 * work use (raid_member_fail, raid_member_readable, raid_pool_bad_*,
 * raid_pool_write_sbs, raid_event_emit, ...) are declared in raid_int.h
 * with struct raid_pool_hooks; these are the few only the pool's
 * assembly and management (pool.c) need.
 */
#ifndef RTGT_RAID_MSTATE_H
#define RTGT_RAID_MSTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "raid/raid_int.h"

/* "raid0" .. "raid10"; "?" for anything else. */
const char *raid_level_name(enum conf_level l);
/* "failed", "rebuilding", "degraded" or "optimal". */
const char *raid_pool_state_name(struct raid_pool *p);
/* The invariant: p->failed says whether the level's rule is broken. */
bool raid_pool_check(struct raid_pool *p);
/* One line for the logs saying why the pool cannot serve. */
void raid_pool_why_beyond(struct raid_pool *p, char *buf, size_t len);

#endif
