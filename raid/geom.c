/*
 * raid/geom.c - where each logical byte of a pool lives, for every level.
 *
 * Layer: geometry, the bottom (raid/README.md "Layers"). May call: libc
 * only.
 *
 * Pure functions: no I/O, no state. The layouts are Linux md's:
 *
 *   raid0    logical chunk c -> device c % n, member chunk c / n.
 *   raid1    every device holds the whole logical space at the same offset.
 *   raid5    left-symmetric (md default): row r has parity on
 *            pd = n-1 - r % n; data index d on (pd + 1 + d) % n.
 *   raid6    left-symmetric with Q right after P: pd = n-1 - r % n,
 *            qd = (pd + 1) % n, data index d on (pd + 2 + d) % n; Q's
 *            coefficient for data index d is 2^d.
 *            With RAID_LAYOUT_Q_LAST (a raid5 grown into a raid6): the
 *            first m = n-1 devices are the raid5 - pd = m-1 - r % m, data
 *            index d on (pd + 1 + d) % m - and qd = n-1 in every row.
 *   raid10   near-2 (md "n2"): logical chunk c has copies at positions 2c and
 *            2c+1, position p lives on device p % n at member chunk p / n; with
 *            an even n this makes devices (0,1), (2,3), ... mirror pairs.
 *
 * A "row" is one member chunk index: all devices at member offset
 * [row*chunk, (row+1)*chunk). It holds stripe_bytes = ndata * chunk logical bytes.
 */
#include <errno.h>

#include "raid/geom.h"

bool raid_geom_is_parity_level(const struct raid_geom *g)
{
	return g->level == CONF_RAID5 || g->level == CONF_RAID6;
}

int raid_geom_init_layout(struct raid_geom *g, enum conf_level level, unsigned n, uint64_t chunk,
			  uint64_t member_bytes, enum raid_layout layout)
{
	int rc;

	if (layout != RAID_LAYOUT_DEFAULT && (layout != RAID_LAYOUT_Q_LAST || level != CONF_RAID6))
		return -EINVAL;
	rc = raid_geom_init(g, level, n, chunk, member_bytes);
	if (!rc)
		g->layout = layout;
	return rc;
}

int raid_geom_init(struct raid_geom *g, enum conf_level level, unsigned n, uint64_t chunk,
		   uint64_t member_bytes)
{
	unsigned min;

	if (chunk < 4096 || (chunk & (chunk - 1)) || chunk > (1u << 30))
		return -EINVAL;
	switch (level) {
	case CONF_RAID0: min = 1; break;
	case CONF_RAID1: min = 2; break;
	case CONF_RAID5: min = 3; break;
	case CONF_RAID6: min = 4; break;
	case CONF_RAID10: min = 2; break;
	default: return -EINVAL;
	}
	if (n < min || n > RAID_MAX_SLOTS)
		return -EINVAL;
	if (level == CONF_RAID10 && n % 2)
		return -EINVAL;
	g->level = level;
	g->layout = RAID_LAYOUT_DEFAULT;
	g->n = n;
	g->chunk = chunk;
	g->rows = member_bytes / chunk;
	g->member_bytes = g->rows * chunk;
	switch (level) {
	case CONF_RAID0: g->ndata = n; g->npar = 0; break;
	case CONF_RAID1: g->ndata = 1; g->npar = n - 1; break;
	case CONF_RAID5: g->ndata = n - 1; g->npar = 1; break;
	case CONF_RAID6: g->ndata = n - 2; g->npar = 2; break;
	default: g->ndata = n / 2; g->npar = 1; break;
	}
	g->stripe_bytes = (uint64_t)g->ndata * chunk;
	g->usable = g->rows * g->stripe_bytes;
	return 0;
}

static bool q_last(const struct raid_geom *g)
{
	return g->layout == RAID_LAYOUT_Q_LAST;
}

void raid_geom_parity(const struct raid_geom *g, uint64_t row, int *pdev, int *qdev)
{
	int pd = (int)(g->n - 1 - (unsigned)(row % g->n));

	*pdev = -1;
	*qdev = -1;
	if (q_last(g)) {
		*pdev = (int)(g->n - 2 - (unsigned)(row % (g->n - 1)));
		*qdev = (int)g->n - 1;
		return;
	}
	if (g->level == CONF_RAID5) {
		*pdev = pd;
	} else if (g->level == CONF_RAID6) {
		*pdev = pd;
		*qdev = (pd + 1) % (int)g->n;
	}
}

unsigned raid_geom_data_dev(const struct raid_geom *g, uint64_t row, unsigned dd)
{
	unsigned pd = g->n - 1 - (unsigned)(row % g->n);

	if (q_last(g)) {
		pd = g->n - 2 - (unsigned)(row % (g->n - 1));
		return (pd + 1 + dd) % (g->n - 1);
	}
	switch (g->level) {
	case CONF_RAID5: return (pd + 1 + dd) % g->n;
	case CONF_RAID6: return (pd + 2 + dd) % g->n;
	case CONF_RAID10: return 2 * dd;
	case CONF_RAID1: return 0;
	default: return dd;
	}
}

int raid_geom_dev_dd(const struct raid_geom *g, uint64_t row, unsigned dev)
{
	unsigned pd = g->n - 1 - (unsigned)(row % g->n);

	if (q_last(g)) {
		unsigned m = g->n - 1;

		pd = m - 1 - (unsigned)(row % m);
		if (dev == m || dev == pd)
			return -1;
		return (int)((dev + m - pd - 1) % m);
	}
	switch (g->level) {
	case CONF_RAID5:
		if (dev == pd)
			return -1;
		return (int)((dev + g->n - pd - 1) % g->n);
	case CONF_RAID6:
		if (dev == pd || dev == (pd + 1) % g->n)
			return -1;
		return (int)((dev + 2 * g->n - pd - 2) % g->n);
	case CONF_RAID10:
		return (int)(dev / 2);
	case CONF_RAID1:
		return 0;
	default:
		return (int)dev;
	}
}

void raid_geom_map(const struct raid_geom *g, uint64_t loff, struct raid_loc *out)
{
	uint64_t in = loff % g->chunk;
	uint64_t c = loff / g->chunk;   /* logical chunk */
	unsigned i;

	if (g->level == CONF_RAID1) {
		out->row = c;
		out->dd = 0;
		out->ncopies = g->n;
		for (i = 0; i < g->n; i++) {
			out->dev[i] = i;
			out->moff[i] = loff;
		}
		return;
	}
	out->row = c / g->ndata;
	out->dd = (unsigned)(c % g->ndata);
	if (g->level == CONF_RAID10) {
		out->ncopies = 2;
		for (i = 0; i < 2; i++) {
			uint64_t p = 2 * c + i;

			out->dev[i] = (unsigned)(p % g->n);
			out->moff[i] = (p / g->n) * g->chunk + in;
		}
		return;
	}
	out->ncopies = 1;
	out->dev[0] = raid_geom_data_dev(g, out->row, out->dd);
	out->moff[0] = out->row * g->chunk + in;
}

int raid_geom_unmap(const struct raid_geom *g, unsigned dev, uint64_t moff, uint64_t *loff)
{
	uint64_t row = moff / g->chunk, in = moff % g->chunk;
	int dd;

	if (dev >= g->n || moff >= g->member_bytes)
		return -EINVAL;
	if (g->level == CONF_RAID1) {
		*loff = moff;
		return 0;
	}
	if (g->level == CONF_RAID10) {
		uint64_t p = row * g->n + dev;

		*loff = (p / 2) * g->chunk + in;
		return 0;
	}
	dd = raid_geom_dev_dd(g, row, dev);
	if (dd < 0)
		return -ENOENT;
	*loff = (row * g->ndata + (unsigned)dd) * g->chunk + in;
	return 0;
}
