/*
 * raid/parity.c - P/Q parity and recovery for one row band, on top of isa-l.
 *
 * Layer: geometry (raid/README.md "Layers"). May call: geom.c, isa-l,
 * libc.
 *
 * Buffers are indexed by device (as the geometry lays them out) and turned
 * into isa-l's role order here: data index 0..ndata-1, then P, then Q. Q is
 * sum(2^d * D_d) in GF(2^8) with polynomial 0x11d, which is what isa-l's
 * pq_gen and md compute. Recovery of two data devices x < y solves
 *   Pxy = Dx + Dy,  Qxy = g^x Dx + g^y Dy
 * (Pxy, Qxy: parity computed with Dx = Dy = 0, added to the real P/Q), giving
 *   Dx = (g^x + g^y)^-1 * (g^y Pxy + Qxy),  Dy = Pxy + Dx,
 * evaluated with isa-l's ec_encode_data as a 2x1 matrix product.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "raid/parity.h"

void *raid_alloc_nz(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, RAID_ALIGN, len ? len : RAID_ALIGN))
		return NULL;
	return p;
}

void *raid_alloc(size_t len)
{
	void *p = NULL;

	if (len == 0)
		len = RAID_ALIGN;
	if (posix_memalign(&p, RAID_ALIGN, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

uint8_t raid_gf_pow2(unsigned e)
{
	uint8_t v = 1;

	e %= 255;
	while (e--)
		v = gf_mul(v, 2);
	return v;
}

/* Log base 2 in GF(2^8); -1 for 0. */
static int gf_log2(uint8_t v)
{
	uint8_t x = 1;
	int e;

	if (!v)
		return -1;
	for (e = 0; e < 255; e++) {
		if (x == v)
			return e;
		x = gf_mul(x, 2);
	}
	return -1;
}

/* Role-ordered pointers: data 0..ndata-1, P, Q. */
static void roles(const struct raid_geom *g, uint64_t row, uint8_t **bufs, uint8_t **r,
		  int *pdev, int *qdev)
{
	unsigned d;

	raid_geom_parity(g, row, pdev, qdev);
	for (d = 0; d < g->ndata; d++)
		r[d] = bufs[raid_geom_data_dev(g, row, d)];
	r[g->ndata] = bufs[*pdev];
	if (*qdev >= 0)
		r[g->ndata + 1] = bufs[*qdev];
}

int raid_par_gen(const struct raid_geom *g, uint64_t row, uint8_t **bufs, size_t len)
{
	uint8_t *r[RAID_MAX_SLOTS];
	int pdev, qdev;

	if (!raid_geom_is_parity_level(g) || len % 32)
		return -EINVAL;
	roles(g, row, bufs, r, &pdev, &qdev);
	if (g->level == CONF_RAID5)
		return xor_gen((int)g->ndata + 1, (int)len, (void **)r) ? -EIO : 0;
	return pq_gen((int)g->ndata + 2, (int)len, (void **)r) ? -EIO : 0;
}

/* dst = c * src over len bytes. */
static void gf_scale(uint8_t c, uint8_t *src, uint8_t *dst, size_t len)
{
	unsigned char tbl[32];
	unsigned char coef[1] = { c };
	unsigned char *in[1] = { src }, *out[1] = { dst };

	ec_init_tables(1, 1, coef, tbl);
	ec_encode_data((int)len, 1, 1, tbl, in, out);
}

static void xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t a, b;

		memcpy(&a, dst + i, 8);
		memcpy(&b, src + i, 8);
		a ^= b;
		memcpy(dst + i, &a, 8);
	}
	for (; i < len; i++)
		dst[i] ^= src[i];
}

int raid_par_recover(const struct raid_geom *g, uint64_t row, uint8_t **bufs,
		     const bool *missing, size_t len)
{
	uint8_t *r[RAID_MAX_SLOTS + 2], *t[RAID_MAX_SLOTS + 2];
	uint8_t *zero = NULL, *sp = NULL, *sq = NULL;
	int pdev, qdev, lost[2], nlost = 0, rc = 0;
	bool pmiss, qmiss;
	unsigned d, k = g->ndata;

	if (!raid_geom_is_parity_level(g) || len % 32)
		return -EINVAL;
	roles(g, row, bufs, r, &pdev, &qdev);
	for (d = 0; d < k; d++) {
		if (missing[raid_geom_data_dev(g, row, d)]) {
			if (nlost == 2)
				return -EIO;
			lost[nlost++] = (int)d;
		}
	}
	pmiss = missing[pdev];
	qmiss = qdev >= 0 && missing[qdev];
	if (nlost + pmiss + qmiss > (int)g->npar)
		return -EIO;
	if (nlost == 0) {
		if (pmiss || qmiss)
			return raid_par_gen(g, row, bufs, len);
		return 0;
	}
	if (g->level == CONF_RAID5 || !pmiss) {
		/* One data device from P: Dx = P + sum(others). */
		if (nlost == 1) {
			unsigned nv = 0;

			for (d = 0; d < k; d++)
				if ((int)d != lost[0])
					t[nv++] = r[d];
			t[nv++] = r[k];
			t[nv++] = r[lost[0]];
			if (nv == 2)
				memcpy(r[lost[0]], r[k], len);
			else if (xor_gen((int)nv, (int)len, (void **)t))
				return -EIO;
			if (qmiss)
				return raid_par_gen(g, row, bufs, len);
			return 0;
		}
	}
	/* raid6 from here: P+Q syndromes with the lost data zeroed. */
	zero = raid_alloc(len);
	sp = raid_alloc(len);
	sq = raid_alloc(len);
	if (!zero || !sp || !sq) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (d = 0; d < k; d++)
		t[d] = r[d];
	for (d = 0; d < (unsigned)nlost; d++)
		t[lost[d]] = zero;
	t[k] = sp;
	t[k + 1] = sq;
	if (pq_gen((int)k + 2, (int)len, (void **)t)) {
		rc = -EIO;
		goto out_free;
	}
	xor_into(sq, r[k + 1], len);            /* Qxy */
	if (nlost == 1) {
		/* data + P lost: Dx = g^-x * Qxy, then P from the data. */
		gf_scale(gf_inv(raid_gf_pow2((unsigned)lost[0])), sq, r[lost[0]], len);
		rc = raid_par_gen(g, row, bufs, len);
		goto out_free;
	}
	xor_into(sp, r[k], len);                /* Pxy */
	{
		uint8_t gx = raid_gf_pow2((unsigned)lost[0]), gy = raid_gf_pow2((unsigned)lost[1]);
		uint8_t inv = gf_inv(gx ^ gy);
		unsigned char coef[2] = { gf_mul(gy, inv), inv };
		unsigned char tbl[64];
		unsigned char *in[2] = { sp, sq }, *out[1] = { r[lost[0]] };

		ec_init_tables(2, 1, coef, tbl);
		ec_encode_data((int)len, 2, 1, tbl, in, out);
		memcpy(r[lost[1]], sp, len);
		xor_into(r[lost[1]], r[lost[0]], len);
	}
out_free:
	free(zero);
	free(sp);
	free(sq);
	return rc;
}

int raid_par_check(const struct raid_geom *g, uint64_t row, uint8_t **bufs, size_t len,
		   int *bad_dev)
{
	uint8_t *r[RAID_MAX_SLOTS + 2], *t[RAID_MAX_SLOTS + 2];
	uint8_t *sp, *sq;
	int pdev, qdev, mask = 0, z = -1;
	unsigned d;
	size_t i;

	*bad_dev = -1;
	if (!raid_geom_is_parity_level(g) || len % 32)
		return -EINVAL;
	roles(g, row, bufs, r, &pdev, &qdev);
	sp = raid_alloc(len);
	sq = raid_alloc(len);
	if (!sp || !sq) {
		free(sp);
		free(sq);
		return -ENOMEM;
	}
	for (d = 0; d < g->ndata; d++)
		t[d] = r[d];
	t[g->ndata] = sp;
	t[g->ndata + 1] = sq;
	if (g->level == CONF_RAID5)
		xor_gen((int)g->ndata + 1, (int)len, (void **)t);
	else
		pq_gen((int)g->ndata + 2, (int)len, (void **)t);
	xor_into(sp, r[g->ndata], len);
	if (qdev >= 0)
		xor_into(sq, r[g->ndata + 1], len);
	for (i = 0; i < len; i++) {
		if (sp[i])
			mask |= 1;
		if (qdev >= 0 && sq[i])
			mask |= 2;
	}
	if (mask == 1)
		*bad_dev = pdev;
	else if (mask == 2)
		*bad_dev = qdev;
	else if (mask == 3) {
		/* One bad data device z: dQ = g^z * dP at every byte. */
		for (i = 0; i < len; i++) {
			int e;

			if (!sp[i] && !sq[i])
				continue;
			if (!sp[i] || !sq[i]) {
				z = -1;
				break;
			}
			e = gf_log2(gf_mul(sq[i], gf_inv(sp[i])));
			if (e < 0 || e >= (int)g->ndata || (z >= 0 && e != z)) {
				z = -1;
				break;
			}
			z = e;
		}
		if (z >= 0)
			*bad_dev = (int)raid_geom_data_dev(g, row, (unsigned)z);
	}
	free(sp);
	free(sq);
	return mask;
}
