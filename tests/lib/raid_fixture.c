/*
 * tests/lib/raid_fixture.c - see raid_fixture.h.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/ioctx.h"
#include "tests/lib/raid_fixture.h"

#define RF_PATH_LEN 128

void rf_dir_make(char *dir, size_t len, const char *prefix)
{
	snprintf(dir, len, "/tmp/%s-XXXXXX", prefix);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void rf_paths_make(char **list, unsigned n, const char *dir, const char *name)
{
	for (unsigned i = 0; i < n; i++) {
		list[i] = malloc(RF_PATH_LEN);
		ck_assert_ptr_nonnull(list[i]);
		snprintf(list[i], RF_PATH_LEN, "%s/%s%u.img", dir, name, i);
	}
}

void rf_paths_drop(char **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (list[i])
			unlink(list[i]);
		free(list[i]);
		list[i] = NULL;
	}
}

void rf_dir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

void rf_members_setup(char *dir, size_t len, const char *prefix, char **list, unsigned n)
{
	conf_log_set_level(CONF_LOG_ERROR);
	rf_dir_make(dir, len, prefix);
	rf_paths_make(list, n, dir, "m");
}

void rf_members_teardown(const char *dir, char **list, unsigned n)
{
	rf_paths_drop(list, n);
	rf_dir_remove(dir);
}

void rf_conf_pool(struct conf_pool *c, char *name, enum conf_level level, uint64_t chunk,
		  char **list, unsigned n, uint64_t create_size)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->level = level;
	c->chunk = chunk;
	c->members = c->member_paths = list;
	c->n_members = n;
	c->create_size = create_size;
}

static void io_done(struct raid_io *io)
{
	*(int *)io->arg = 1;
}

int rf_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, uint64_t off,
	  uint64_t len, uint8_t *buf)
{
	struct raid_io io;
	int done = 0;

	memset(&io, 0, sizeof(io));
	io.op = op;
	io.off = off;
	io.len = len;
	io.buf = buf;
	io.cb = io_done;
	io.arg = &done;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &io), 0);
	while (!done)
		raid_ioctx_wait(ctx, 1000);
	return io.result;
}

double rf_now_s(void)
{
	return (double)conf_mono_ns() / 1e9;
}

static void *loader_main(void *arg)
{
	struct rf_loader *l = arg;
	struct raid_ioctx *ctx;
	uint8_t w[16384], r[16384];

	if (raid_ioctx_create(&ctx)) {
		l->errors++;
		return NULL;
	}
	for (unsigned s = 0; !atomic_load(&l->stop); s++) {
		uint64_t off = (uint64_t)s * sizeof(w) % l->span;

		for (size_t i = 0; i < sizeof(w); i++)
			w[i] = (uint8_t)(s * 131u + i * 7u + (i >> 9) + 1);
		if (rf_io(l->v, ctx, RAID_OP_WRITE, off, sizeof(w), w) ||
		    rf_io(l->v, ctx, RAID_OP_READ, off, sizeof(r), r))
			l->errors++;
		else if (memcmp(w, r, sizeof(w)))
			l->wrong++;
		l->rounds++;
	}
	raid_ioctx_destroy(ctx);
	return NULL;
}

void rf_loader_start(struct rf_loader *l)
{
	atomic_store(&l->stop, false);
	ck_assert_int_eq(pthread_create(&l->th, NULL, loader_main, l), 0);
}

void rf_loader_stop(struct rf_loader *l)
{
	atomic_store(&l->stop, true);
	pthread_join(l->th, NULL);
}
