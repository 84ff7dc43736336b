/*
 * tests/lib/lun_io.h - checked data comparisons on a LUN through libiscsi,
 * for the network tests that write data and read it back.
 *
 * These call ck_assert: each one fails the running Check test. Call them
 * from the test's own thread only.
 */
#ifndef RTGT_TESTS_LUN_IO_H
#define RTGT_TESTS_LUN_IO_H

#include <stdint.h>

struct iscsi_context;

/* READ 16 of @len bytes at byte @off (a multiple of 512) of LUN @lun must
 * succeed, return exactly @len bytes, and equal @want; the failure names
 * the offset and length. */
void lio_expect(struct iscsi_context *c, int lun, uint64_t off, const uint8_t *want,
		uint32_t len);

#endif
