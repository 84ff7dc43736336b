/*
 * tests/fuzz/fuzz_raid1.h - the RAID1 set-up the fuzz targets share: two
 * member files in a mkdtemp directory (on tmpfs where there is one, so FUA,
 * SYNCHRONIZE CACHE and superblock fdatasyncs are free), the pool's
 * configuration, and for the SCSI targets a volume, an I/O context and a
 * helper that runs one command to completion.
 *
 * Header-only (static functions), so every fuzz target stays one .c file
 * (the Makefile builds each tests/fuzz/fuzz_*.c into its own binary).
 * Failures during set-up exit(1) with the directory named: libFuzzer has
 * not started yet, so they are not findings.
 */
#ifndef RTGT_FUZZ_RAID1_H
#define RTGT_FUZZ_RAID1_H

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "tests/fuzz/fuzz.h"

struct fz_raid1 {
	char dir[64];
	char m0[128], m1[128];
	char *members[2];             /* point at m0, m1 */
	struct conf_pool cp;          /* members created at create_size bytes */
	struct raid_pool *pool;       /* NULL until fz_raid1_open_vol */
	struct raid_vol *vol;         /* owned by pool */
	struct raid_ioctx *ctx;       /* NULL until fz_raid1_open_vol */
};

/* Makes the directory "rtgt-fuzz-@tag-XXXXXX" and fills in @r's paths and
 * pool configuration (not yet opened). */
static inline void fz_raid1_init(struct fz_raid1 *r, const char *tag, uint64_t create_size)
{
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s/rtgt-fuzz-%s-XXXXXX", base, tag);
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, "fuzz_%s: mkdtemp %s: ", tag, r->dir);
		perror(NULL);
		exit(1);
	}
	snprintf(r->m0, sizeof(r->m0), "%s/m0.img", r->dir);
	snprintf(r->m1, sizeof(r->m1), "%s/m1.img", r->dir);
	r->members[0] = r->m0;
	r->members[1] = r->m1;
	r->cp.name = "fz";
	r->cp.level = CONF_RAID1;
	r->cp.chunk = 64 << 10;
	r->cp.members = r->members;
	r->cp.member_paths = r->members;
	r->cp.n_members = 2;
	r->cp.create_size = create_size;
}

/* Opens the pool, one volume "v0" of @vol_bytes and an I/O context. */
static inline void fz_raid1_open_vol(struct fz_raid1 *r, const char *tag, uint64_t vol_bytes)
{
	struct conf_size sz = { .bytes = vol_bytes };

	if (raid_pool_open(&r->cp, &r->pool) || raid_vol_open(r->pool, "v0", &sz, &r->vol) ||
	    raid_ioctx_create(&r->ctx)) {
		fprintf(stderr, "fuzz_%s: cannot set up the RAID1 volume in %s\n", tag, r->dir);
		exit(1);
	}
}

/* Closes what fz_raid1_open_vol opened and removes the member files and the
 * directory; files the caller put there must be gone already. */
static inline void fz_raid1_remove(struct fz_raid1 *r)
{
	if (r->ctx)
		raid_ioctx_destroy(r->ctx);
	if (r->pool)
		raid_pool_close(r->pool);
	r->ctx = NULL;
	r->pool = NULL;
	unlink(r->m0);
	unlink(r->m1);
	rmdir(r->dir);
}

#ifdef RTGT_SCSI_H
static inline void fz_scsi_done(struct scsi_cmd *cmd)
{
	(*(int *)cmd->tpriv)++;
}

/* Runs @c on @ctx to completion: done exactly once, within ~10 s (a command
 * that never completes is a finding), and nothing left in flight. */
static inline void fz_scsi_run(struct raid_ioctx *ctx, struct scsi_cmd *c)
{
	unsigned spins = 0;
	int done = 0;

	c->ioctx = ctx;
	c->done = fz_scsi_done;
	c->tpriv = &done;
	scsi_cmd_exec(c);
	while (!done) {
		struct pollfd pfd = { .fd = raid_ioctx_fd(ctx), .events = POLLIN };

		FUZZ_CHECK(spins++ < 1000);
		poll(&pfd, 1, 10);
		raid_ioctx_run(ctx);
	}
	FUZZ_CHECK(done == 1);
	FUZZ_CHECK(raid_ioctx_inflight(ctx) == 0);
}
#endif

#endif
