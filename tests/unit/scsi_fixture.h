/*
 * tests/unit/scsi_fixture.h - shared by the target/scsi unit tests: a RAID1
 * pool of two sparse files in a mkdtemp directory, one 8 MiB volume, an LU on
 * it, a target with two ports and two nexuses, and a helper that runs one
 * command to completion by polling the I/O context.
 *
 * Header-only (static functions) so each test binary stays one file.
 */
#ifndef RTGT_TEST_SCSI_FIXTURE_H
#define RTGT_TEST_SCSI_FIXTURE_H

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "raid/raid.h"
#include "target/scsi/scsi.h"
#include "target/scsi/scsi_int.h"
#include "tests/lib/ckmain.h"

#define FX_VOL_BYTES (8u << 20)
#define FX_BUF (1u << 20)

struct fx {
	char dir[64];
	char m0[128], m1[128], pr[128];
	char *members[2];
	struct conf_pool cp;
	struct raid_pool *pool;
	struct raid_vol *vol;
	struct raid_ioctx *ctx;
	struct scsi_lu *lu;
	struct scsi_target *t;
	struct scsi_nexus *a, *b;
	uint8_t *buf;
};

static struct fx fx;

static void fx_lu_up(void)
{
	struct scsi_lu_params p = { .vol = fx.vol, .name = "test/v0", .pr_path = fx.pr };

	ck_assert_int_eq(scsi_lu_create(&p, &fx.lu), 0);
	ck_assert_int_eq(scsi_target_create("iqn.2026-11.org.rtgt:test", &fx.t), 0);
	ck_assert_int_eq(scsi_target_add_port(fx.t, 1, 1), 0);
	ck_assert_int_eq(scsi_target_add_port(fx.t, 2, 2), 0);
	ck_assert_int_eq(scsi_target_add_lu(fx.t, 0, fx.lu), 0);
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.a,i,0x400000000001", 1, &fx.a), 0);
	ck_assert_int_eq(scsi_nexus_create(fx.t, "iqn.1994-05.com.b,i,0x400000000002", 2, &fx.b), 0);
}

static void fx_lu_down(void)
{
	scsi_nexus_destroy(fx.a);
	scsi_nexus_destroy(fx.b);
	scsi_target_destroy(fx.t);
	scsi_lu_destroy(fx.lu);
	fx.a = fx.b = NULL;
	fx.t = NULL;
	fx.lu = NULL;
}

static void fx_setup(void)
{
	struct conf_size sz = { .bytes = FX_VOL_BYTES };

	conf_log_set_level(CONF_LOG_ERROR);
	memset(&fx, 0, sizeof(fx));
	strcpy(fx.dir, "/tmp/rtgt-scsi-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(fx.dir));
	snprintf(fx.m0, sizeof(fx.m0), "%s/m0.img", fx.dir);
	snprintf(fx.m1, sizeof(fx.m1), "%s/m1.img", fx.dir);
	snprintf(fx.pr, sizeof(fx.pr), "%s/v0.pr", fx.dir);
	fx.members[0] = fx.m0;
	fx.members[1] = fx.m1;
	fx.cp.name = "tp";
	fx.cp.level = CONF_RAID1;
	fx.cp.chunk = 64 << 10;
	fx.cp.members = fx.members;
	fx.cp.member_paths = fx.members;
	fx.cp.n_members = 2;
	fx.cp.create_size = 32u << 20;
	ck_assert_int_eq(raid_pool_open(&fx.cp, &fx.pool), 0);
	ck_assert_int_eq(raid_vol_open(fx.pool, "v0", &sz, &fx.vol), 0);
	ck_assert_int_eq(raid_ioctx_create(&fx.ctx), 0);
	fx.buf = calloc(1, FX_BUF);
	ck_assert_ptr_nonnull(fx.buf);
	fx_lu_up();
}

static void fx_teardown(void)
{
	char cmd[200];

	fx_lu_down();
	raid_ioctx_destroy(fx.ctx);
	raid_pool_close(fx.pool);
	free(fx.buf);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fx.dir);
}

static void fx_done(struct scsi_cmd *cmd)
{
	(*(int *)cmd->tpriv)++;
}

/* Runs @cdb from nexus @n with @edtl bytes of buffer (fx.buf: data-out
 * for writes, data-in for reads). Returns the finished command. */
static struct scsi_cmd fx_run(struct scsi_nexus *n, uint64_t lun, const uint8_t *cdb,
			      unsigned cdb_len, uint32_t edtl, bool write)
{
	struct scsi_cmd c;
	int done = 0, spins = 0;

	memset(&c, 0, sizeof(c));
	c.target = fx.t;
	c.nexus = n;
	c.lun = lun;
	memcpy(c.cdb, cdb, cdb_len);
	c.cdb_len = 16;
	c.dir_write = write;
	c.dir_read = !write && edtl;
	c.edtl = edtl;
	c.buf = edtl ? fx.buf : NULL;
	c.buf_len = edtl;
	c.ioctx = fx.ctx;
	c.done = fx_done;
	c.tpriv = &done;
	scsi_cmd_exec(&c);
	while (!done) {
		struct pollfd pfd = { .fd = raid_ioctx_fd(fx.ctx), .events = POLLIN };

		ck_assert_int_lt(spins++, 5000);
		poll(&pfd, 1, 10);
		raid_ioctx_run(fx.ctx);
	}
	ck_assert_int_eq(done, 1);
	return c;
}

/* Clears the POWER ON UA of @n. */
static void fx_clear_ua(struct scsi_nexus *n)
{
	uint8_t tur[6] = { 0 };
	struct scsi_cmd c;
	int i;

	for (i = 0; i < 10; i++) {
		c = fx_run(n, 0, tur, 6, 0, false);
		if (c.status == SCSI_GOOD)
			return;
	}
	ck_abort_msg("unit attentions do not clear");
}

static uint16_t fx_asc(const struct scsi_cmd *c)
{
	if (c->sense[0] == 0x72 || c->sense[0] == 0x73)
		return (uint16_t)(c->sense[2] << 8 | c->sense[3]);
	return (uint16_t)(c->sense[12] << 8 | c->sense[13]);
}

static uint8_t fx_key(const struct scsi_cmd *c)
{
	if (c->sense[0] == 0x72 || c->sense[0] == 0x73)
		return c->sense[1] & 0x0f;
	return c->sense[2] & 0x0f;
}

#define ck_sense(c, key, code)                                                 \
	do {                                                                   \
		ck_assert_int_eq((c).status, SCSI_CHECK_CONDITION);            \
		ck_assert_int_eq(fx_key(&(c)), (key));                         \
		ck_assert_int_eq(fx_asc(&(c)), (code));                        \
	} while (0)

#endif
