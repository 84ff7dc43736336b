/*
 * tests/lib/raid_fixture.h - what the RAID engine's unit tests
 * (tests/unit/test_raid_*.c) share: a temp dir of member files, a pool
 * configuration over them, and a synchronous I/O on a volume.
 *
 * These call ck_assert: a failure fails the running Check test. Call them
 * from the test's own thread.
 */
#ifndef RTGT_TESTS_RAID_FIXTURE_H
#define RTGT_TESTS_RAID_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "raid/raid.h"

/* mkdtemp("/tmp/@prefix-XXXXXX") into @dir (must succeed). */
void rf_dir_make(char *dir, size_t len, const char *prefix);
/* list[i] = "@dir/@name<i>.img" for i < @n, each malloc'd (128 bytes). */
void rf_paths_make(char **list, unsigned n, const char *dir, const char *name);
/* Unlinks and frees list[i] for i < @n where not NULL, and NULLs it. */
void rf_paths_drop(char **list, unsigned n);
/* Removes @dir and all below it (a message on stderr when it cannot). */
void rf_dir_remove(const char *dir);
/* The usual fixture: log level ERROR, rf_dir_make(@dir, @len, @prefix),
 * rf_paths_make(@list, @n, @dir, "m"); and its undoing. */
void rf_members_setup(char *dir, size_t len, const char *prefix, char **list, unsigned n);
void rf_members_teardown(const char *dir, char **list, unsigned n);
/* *@c zeroed, then pool @name of @level and @chunk over the @n members in
 * @list (as written and resolved), created at @create_size bytes when
 * missing. @name and @list stay the caller's. */
void rf_conf_pool(struct conf_pool *c, char *name, enum conf_level level, uint64_t chunk,
		  char **list, unsigned n, uint64_t create_size);
/* One raid_vol_submit() (must be accepted), waited for on @ctx: the
 * I/O's result (0 or -errno). */
int rf_io(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, uint64_t off,
	  uint64_t len, uint8_t *buf);
/* CLOCK_MONOTONIC in seconds. */
double rf_now_s(void);

/* A thread that writes 16 KiB blocks of a pattern over the first @span
 * bytes of @v, one after the other, and reads each back, until stopped:
 * for tests that change a volume under I/O. Counts rounds, requests that
 * failed and reads that did not return what was written. */
struct rf_loader {
	struct raid_vol *v;
	uint64_t span;            /* multiple of 16 KiB */
	_Atomic bool stop;
	unsigned long rounds, errors, wrong;
	pthread_t th;
};
void rf_loader_start(struct rf_loader *l);
void rf_loader_stop(struct rf_loader *l);

#endif
