/*
 * raid/mgmt.c - operator actions that change a running pool: hot spares
 * and scrub. (Rebuild onto spares lives in rebuild.c.)
 */
#include <errno.h>

#include "raid/raid_int.h"

int raid_pool_add_spare(struct raid_pool *pool, const char *path)
{
	LOG_ERR(RAID_MOD, "pool %s: add-spare %s: not implemented yet", pool->name, path);
	return -ENOTSUP;
}

int raid_pool_scrub(struct raid_pool *pool, bool repair)
{
	LOG_ERR(RAID_MOD, "pool %s: scrub: not implemented yet", pool->name);
	return -ENOTSUP;
}
