/*
 * raid/parity.h - P/Q generation, recovery and check of a row (parity.c, isa-l), and
 * the aligned buffers the data path and the superblock code use.
 */
#ifndef RTGT_RAID_PARITY_H
#define RTGT_RAID_PARITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid/geom.h"

/* Compute P (and Q for raid6) of one row band: @bufs indexed by device,
 * every data buffer filled, parity buffers are outputs. 32-byte aligned,
 * @len a multiple of 32. */
int raid_par_gen(const struct raid_geom *g, uint64_t row, uint8_t **bufs, size_t len);
/* Rebuild the devices flagged in @missing (at most npar) from the others. */
int raid_par_recover(const struct raid_geom *g, uint64_t row, uint8_t **bufs,
		     const bool *missing, size_t len);
/* GF(2^8) with generator 2 and polynomial 0x11d (isa-l's field). */
uint8_t raid_gf_pow2(unsigned e);
/* Compare parity devices with what the data says: returns a bitmask:
 * bit0 P differs, bit1 Q differs. With raid6 and exactly one bad data device,
 * *bad_dev names it (else -1). */
int raid_par_check(const struct raid_geom *g, uint64_t row, uint8_t **bufs, size_t len,
		   int *bad_dev);
void *raid_alloc(size_t len);   /* RAID_ALIGN-aligned, zeroed; NULL on ENOMEM */
void *raid_alloc_nz(size_t len); /* same, not zeroed: for buffers that are fully overwritten */

#endif
