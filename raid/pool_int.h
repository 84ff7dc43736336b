/*
 * raid/pool_int.h - what pool.c (assembly) lends pool_admin.c (management),
 * private to the two.
 */
#ifndef RTGT_RAID_POOL_INT_H
#define RTGT_RAID_POOL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "raid/member.h"
#include "raid/raid_int.h"

/* A member or spare file being opened: by assembly, add-spare or grow. */
struct raid_cand {
	struct raid_member *m;
	bool spare;               /* listed under spares */
	unsigned pos;             /* index in the members or spares list */
	int open_err;             /* 0, or -errno of open() (-ENOENT: no such file) */
	int sbrc;                 /* raid_sb_read result (-ENODEV: not opened) */
	struct raid_sb sb;
	bool used;
	bool created;             /* create_files made it: sparse, all zeros */
};

/* Open @path (@rpath resolved) into @c and read its superblock; see pool.c. */
int raid_cand_open(const struct conf_pool *cp, const char *path, const char *rpath,
		   struct raid_cand *c);
/* Close a member's file and I/O stack (not linked into the pool). */
void raid_pool_member_close(struct raid_member *m);
/* The file bytes a member of @p needs (saturating). */
uint64_t raid_pool_member_need(const struct raid_pool *p);
/* Whether @m's file is large enough for @p. */
bool raid_pool_member_holds(const struct raid_pool *p, const struct raid_member *m);
/* A random (version 4) UUID. */
void raid_uuid_new(uint8_t u[16]);

#endif
