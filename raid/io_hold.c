/*
 * raid/io_hold.c - the hold of a mapped read: the member memory a
 * RAID_IO_MAP read lends to its caller instead of copying it, and the
 * references that keep it the volume's bytes until the caller releases
 * it (raid.h raid_io_hold_*). Out of io.c so that io_mirror.c, which adds
 * the pieces, sits below the request core instead of calling up into it.
 *
 * Layer: gate-hold, below the rows and segments and the request
 * (raid/README.md "Layers"). May call: reshape_gate.c (the gate count a
 * hold carries), member.c (mappings), conf/.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "raid/io_int.h"
#include "raid/member.h"

/* ---------------- mapped reads: the hold ---------------- */

/*
 * A RAID_IO_MAP read (raid.h) whose segments came back as addresses in
 * members' mappings (io_mirror.c, mlayer.h RAID_MIO_READ_MAP) keeps, past
 * its completion, what makes those addresses the volume's bytes: a
 * reference to each mapping, and its count in the reshape gate (a reshape
 * moves data only once every request it drained has ended, so a range
 * lent out is not moved under the reader). Thin volumes never lend (an
 * extent can be freed and handed to another volume); parity levels never
 * do (their reads may be reconstructions). States: COLLECTING (rq->hold,
 * pieces added as segments end) -> HELD (io->hold, the caller's, from the
 * callback on; pieces sorted) -> released (raid_io_hold_release).
 */
struct raid_io_hold {
	struct raid_pool *p;      /* whose gate counts it while rs_counted */
	unsigned rs_epoch;
	bool rs_counted;
	unsigned n;
	struct raid_io_piece piece[RAID_HOLD_PIECES];
	struct raid_mmap *map[RAID_HOLD_PIECES];   /* a reference each */
};

int raid_io_map_piece(struct req *rq, uint8_t *dst, uint64_t len, struct raid_member *m,
		      const uint8_t *addr)
{
	struct raid_mmap *mm = atomic_load(&m->map);
	struct raid_io_hold *h = rq->hold;

	if (!mm)
		return -EIO;    /* never: a mapped read had the mapping */
	if (!h) {
		/* not zeroed: 2 KiB per read, of which only n entries are
		 * ever looked at; hold_keep sets the rest */
		h = rq->hold = malloc(sizeof(*h));
		if (h) {
			h->p = rq->p;
			h->n = 0;
		}
	}
	if (!h || h->n == RAID_HOLD_PIECES)
		return raid_mmap_copy(mm, addr, len, dst);
	raid_mmap_get(mm);
	h->map[h->n] = mm;
	h->piece[h->n].off = (uint64_t)(dst - rq->data);
	h->piece[h->n].len = len;
	h->piece[h->n].addr = addr;
	h->n++;
	return 0;
}

void raid_io_hold_free(struct raid_io_hold *h)
{
	for (unsigned i = 0; i < h->n; i++)
		raid_mmap_put(h->map[i]);
	free(h);
}

/* COLLECTING -> HELD: pieces in ascending order; the request's gate count
 * moves to the hold. */
void raid_io_hold_keep(struct req *rq)
{
	struct raid_io_hold *h = rq->hold;

	for (unsigned i = 1; i < h->n; i++) {
		struct raid_io_piece pc = h->piece[i];
		struct raid_mmap *mm = h->map[i];
		unsigned j = i;

		for (; j > 0 && h->piece[j - 1].off > pc.off; j--) {
			h->piece[j] = h->piece[j - 1];
			h->map[j] = h->map[j - 1];
		}
		h->piece[j] = pc;
		h->map[j] = mm;
	}
	h->rs_counted = rq->rs_counted;
	h->rs_epoch = rq->rs_epoch;
	rq->rs_counted = false;
	atomic_fetch_add(&h->p->holds, 1);
	rq->io->hold = h;
	rq->hold = NULL;
}

unsigned raid_io_hold_pieces(const struct raid_io_hold *h, const struct raid_io_piece **out)
{
	*out = h ? h->piece : NULL;
	return h ? h->n : 0;
}

int raid_io_hold_copy(const struct raid_io_hold *h, unsigned i, uint64_t from, uint64_t len,
		      uint8_t *dst)
{
	if (!h || i >= h->n || from > h->piece[i].len || len > h->piece[i].len - from)
		return -EINVAL;
	return raid_mmap_copy(h->map[i], h->piece[i].addr + from, len, dst);
}

void raid_io_hold_release(struct raid_io_hold *h)
{
	if (!h)
		return;
	if (h->rs_counted)
		raid_reshape_leave(h->p, h->rs_epoch);
	atomic_fetch_sub(&h->p->holds, 1);
	raid_io_hold_free(h);
}
