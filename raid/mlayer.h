/*
 * raid/mlayer.h - member I/O as a stack of layers.
 *
 * One member I/O (struct raid_mio) goes down a stack of layers and comes
 * back up the same way:
 *
 *   member.c  (top: accounting, busy time, latency histograms; mio->cb)
 *   fault.c   (injected errors, added latency, torn writes)
 *   hdd.c     (HDD timing model, only on pools with hdd.enabled)
 *   ioctx.c   (bottom: io_uring on the member's file or block device)
 *
 * A layer knows only the layer below it (raid_mlayer_submit on
 * l->below) and the interface here: completions go up through
 * raid_mlayer_up(), which hands the mio to whichever layer pushed it, so no
 * layer calls into the one above it by name. The path a mio took is kept
 * in the mio itself (path[], depth), so a layer instance (the bottom is one
 * for every member) may sit in several stacks.
 *
 * Completions run only on the submitting ctx, inside its raid_ioctx_run()
 * or raid_ioctx_poll(), never inside a submit: a layer that holds a
 * completion back does so with a timer or a deferred call on that ctx.
 *
 * A layer keeps its per-request state in the mio's layer-private area
 * (lpriv, at the layer's priv_off, ops->priv_size bytes): nothing of any
 * layer lives in the generic fields.
 */
#ifndef RTGT_RAID_MLAYER_H
#define RTGT_RAID_MLAYER_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct raid_ioctx;
struct raid_member;
struct raid_mio;
struct raid_mlayer;

/* RAID_MIO_READ_MAP: a read that may be answered with the address of the
 * bytes in the member's memory instead of a copy into buf (mio->mapped).
 * Only the top layer (member.c) sees it: it turns it into RAID_MIO_READ
 * with map_addr set where the member allows it, NULL elsewhere. */
enum { RAID_MIO_READ, RAID_MIO_WRITE, RAID_MIO_FSYNC, RAID_MIO_READ_MAP };

typedef void (*raid_mio_fn)(struct raid_mio *mio, int res);

struct raid_mlayer_ops {
	const char *name;
	/* bytes of per-request state in the mio's lpriv */
	size_t priv_size;
	/* Take @mio, submitted on @ctx: 0, or -errno when it was not taken
	 * (then no completion follows). */
	int (*submit)(struct raid_mlayer *l, struct raid_ioctx *ctx, struct raid_mio *mio);
	/* The layer below finished @mio with @res (0 or -errno); the layer
	 * passes it on with raid_mlayer_up(), now or later on the same ctx. */
	void (*complete)(struct raid_mlayer *l, struct raid_mio *mio, int res);
};

struct raid_mlayer {
	const struct raid_mlayer_ops *ops;
	struct raid_mlayer *below;  /* NULL for the bottom */
	unsigned priv_off;          /* its share of lpriv (set by whoever stacks it) */
};

#define RAID_MLAYER_DEPTH 4u
#define RAID_MIO_LPRIV 160u

/* One member I/O. Owned by whoever submitted it until its callback ran. */
struct raid_mio {
	struct raid_member *m;
	int op;                   /* RAID_MIO_READ/WRITE/FSYNC */
	uint8_t *buf;             /* caller's buffer */
	uint64_t off;             /* bytes in the member's data area */
	uint64_t len;
	raid_mio_fn cb;
	void *arg;
	/* where it goes, set by the top layer for the bottom one */
	int fd;                   /* O_DIRECT when direct */
	int fd_buf;               /* buffered descriptor for unaligned I/O */
	uint64_t base;            /* device offset of the data area */
	bool direct;              /* O_DIRECT: alignment rules, bounce buffers */
	bool inl_ok;              /* memory-backed: small runs may be done inline */
	/* a RAID_MIO_READ_MAP read: the member file mapped read-only, shared,
	 * from device offset 0 for map_len bytes; NULL otherwise (set by the
	 * top layer on every submission) */
	const uint8_t *map_addr;
	uint64_t map_len;
	/* set by the bottom layer instead of reading when the whole range
	 * lies in map_addr: where the bytes are (buf untouched); else NULL */
	const uint8_t *mapped;
	uint64_t t_sub_ns;        /* CLOCK_MONOTONIC at submission (latency) */
	uint64_t t_dev_ns;        /* when the device finished it (bottom layer) */
	/* bottom layer (ioctx.c) */
	uint8_t *bounce;          /* aligned copy when buf is unaligned (O_DIRECT) */
	uint64_t done;
	struct raid_mio *next;    /* ioctx backlog */
	bool alone;               /* a merged group it was in failed or came
	                           * back short: goes again on its own */
	int inl_res;              /* result of a synchronous (inline) I/O */
	/* the layers it went through, top first */
	struct raid_mlayer *path[RAID_MLAYER_DEPTH];
	unsigned depth;
	_Alignas(16) unsigned char lpriv[RAID_MIO_LPRIV];
};

static inline void *raid_mlayer_priv(const struct raid_mlayer *l, struct raid_mio *mio)
{
	return mio->lpriv + l->priv_off;
}

/* Hand @mio to layer @l (the top one, or the caller's l->below). */
static inline int raid_mlayer_submit(struct raid_mlayer *l, struct raid_ioctx *ctx,
				     struct raid_mio *mio)
{
	int rc;

	assert(mio->depth < RAID_MLAYER_DEPTH);
	mio->path[mio->depth++] = l;
	rc = l->ops->submit(l, ctx, mio);
	if (rc)
		mio->depth--;
	return rc;
}

/* The current layer is done with @mio: on to the layer above it, or to the
 * submitter's callback above the top. */
static inline void raid_mlayer_up(struct raid_mio *mio, int res)
{
	struct raid_mlayer *l;

	assert(mio->depth > 0);
	mio->depth--;
	if (!mio->depth) {
		mio->cb(mio, res);
		return;
	}
	l = mio->path[mio->depth - 1];
	l->ops->complete(l, mio, res);
}

#endif
