/*
 * tests/lib/lun_grow.h - a LUN growing under I/O, seen from libiscsi: READ
 * CAPACITY, unit attentions, and a loader thread that writes and reads back
 * 64 KiB pieces while the LUN grows (test_net_resize.c, test_net_rbd.c).
 *
 * lg_load_main runs on its own thread and never calls ck_assert: it counts
 * what went wrong in its struct lg_loader, which the test checks after
 * joining it. The other functions ck_assert and belong to the test's thread.
 */
#ifndef RTGT_TESTS_LUN_GROW_H
#define RTGT_TESTS_LUN_GROW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iscsi_context;

#define LG_ASC_CAP_CHANGED 0x2a09   /* CAPACITY DATA HAS CHANGED */

/* READ CAPACITY(16) of @lun: its blocks (of 512 bytes, asserted). */
uint64_t lg_capacity(struct iscsi_context *c, int lun);
/* TEST UNIT READY: its status, the sense in *@ascq (0 when GOOD; a check
 * condition must be a unit attention). */
int lg_tur(struct iscsi_context *c, int lun, int *ascq);
/* Pending unit attentions of the nexus taken (power on, ...) until GOOD. */
void lg_drain_ua(struct iscsi_context *c, int lun);
/* The data lg_load_main writes: a function of the LBA and a generation. */
void lg_pattern(uint8_t *b, size_t len, uint64_t lba, unsigned gen);
/* WRITE(16) or READ(16) of LUN 0: the status (-1: no task, -2: a short
 * read), the sense in *@ascq. */
int lg_xfer(struct iscsi_context *c, bool write, uint64_t lba, uint8_t *buf, size_t len,
	    int *ascq);

/* Writes and reads back 64 KiB pieces of the first @bytes, one generation
 * more each time, until @stop; a command that gets CAPACITY DATA HAS
 * CHANGED is counted in @ua and retried. */
struct lg_loader {
	struct iscsi_context *c;
	uint64_t bytes;            /* at most 256 pieces */
	atomic_bool stop;
	atomic_uint ops;
	unsigned ua, errors, wrong, gen[256];
	char first_error[200];
};
void *lg_load_main(void *arg);
/* Starts @l on a thread, and once it is under way runs `rtgtctl resize
 * @target 0 @size` on daemon @d (it must say "grown to @bytes bytes"); then
 * lets the loader go on a while, stops it and asserts it saw no error, no
 * wrong byte and exactly one CAPACITY DATA HAS CHANGED. */
struct harness_daemon;
void lg_grow_under_load(struct lg_loader *l, const struct harness_daemon *d, const char *target,
			const char *size, uint64_t bytes);
/* Every piece the loader wrote holds its last generation. */
void lg_verify_pieces(struct iscsi_context *c, const struct lg_loader *l);
/* lg_pattern(@gen) written at @lba and read back equal. */
void lg_write_read(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen);
/* What lg_write_read(@gen) wrote is still there. */
void lg_read_expect(struct iscsi_context *c, uint64_t lba, size_t len, unsigned gen);

#endif
