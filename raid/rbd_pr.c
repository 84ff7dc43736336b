/*
 * raid/rbd_pr.c - shared state of a volume (raid.h, "shared state of a
 * volume") for RBD volumes, the shared-state ops of raid_rbd_backend
 * (rbd_int.h; backend.c checks the volume is shared before it calls them):
 * small blobs that every rtgt node serving the same image must agree on
 * (persistent reservations), kept in one RADOS object per blob and image,
 * "rtgt_<tag>.<image id>" ("rtgt_<tag>.<image id>@<snap id>" for a LUN
 * of a snapshot), in the image's pool.
 *
 * Update state machine (one struct upd, on its own helper thread):
 *
 *   READ --(object read, version V)--> APPLY --(fn wrote a blob)--> WRITE
 *   READ --(read error)------------------------------------------> DONE
 *   APPLY --(fn failed or had nothing to write)------------------> DONE
 *   WRITE --(version still V: written)--> NOTIFY --(acks/timeout)--> DONE
 *   WRITE --(another node wrote since: -ERANGE/-EOVERFLOW/-EEXIST)--> READ
 *
 *   READ    upd_thread() reads the object and its version through a
 *           private I/O context (so the version is ours, not another
 *           thread's);
 *   APPLY   the caller's fn turns the old blob into the new one;
 *   WRITE   one RADOS write op: assert_version(V) (or exclusive create when
 *           the object did not exist) + write_full: atomic in the OSD, so
 *           two nodes updating at once serialise, the loser reads again;
 *   NOTIFY  rados_notify2 with the new blob: returns once every watcher
 *           (every node with the volume open, this one included) ran its
 *           callback and acknowledged, or after NOTIFY_MS (-ETIMEDOUT: a
 *           node died or is cut off; the write stands);
 *   DONE    upd_done() runs the caller's done on the submitting thread
 *           (raid_defer) and frees the update.
 * Invariant (upd_check): attempts <= MAX_ATTEMPTS, a blob is held only in
 * WRITE/NOTIFY/DONE, ctx and vol are set.
 *
 * No lock lease is held anywhere: a node that dies mid-update leaves either
 * the old or the new object, never a lock others must wait out.
 *
 * Watch (one struct rbd_watch): rados_watch2 on the object (created
 * empty first if absent, so there is something to watch); on_notify() runs
 * the caller's callback and only then acknowledges. When the watch breaks
 * (on_watch_err: OSD restart, network trouble, we may have missed notifies)
 * rewatch_thread() re-registers it (retrying every second until it works
 * or the watch is stopped) and calls the callback with the current blob.
 *
 * A notify without an update (raid_vol_shared_notify: resets) is one
 * rados_notify2, blocking; raid_vol_shared_notify_async runs it on a
 * detached helper thread (anotify_thread) that calls the caller's done with
 * its result and frees the copy of the message: no state beyond that.
 *
 * Built without librbd this file is empty: that build's rbd backend has
 * no shared-state ops, so raid_vol_shared() is false and every call of
 * raid.h's shared-state API returns -EOPNOTSUPP.
 *
 * Layer: rbd shared state (raid/README.md "Layers"). May call: ioctx.c
 * (raid_defer, the I/O counts), librados; backend.h's inline
 * raid_backend_vol_shared. Not rbd.c nor backend.c: rbd.c reaches it
 * through its ops table only.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/rbd_int.h"

#ifdef RTGT_HAVE_RBD

#define SHARED_MAX   (1u << 20)   /* largest blob read back */
#define NOTIFY_MS    5000u        /* how long a writer waits for the other nodes */
#define MAX_ATTEMPTS 64u          /* read-modify-write rounds lost to other writers */

enum { ST_READ = 1, ST_APPLY, ST_WRITE, ST_NOTIFY, ST_DONE };

struct upd {
	struct raid_vol *vol;        /* borrowed; outlives the update */
	struct raid_ioctx *ctx;      /* borrowed; the submitting thread's */
	raid_shared_fn fn;
	raid_shared_done_fn done;
	void *arg;
	char tag[17];
	char oid[96];
	int state;
	unsigned attempts;
	int rc;
	uint8_t *blob;               /* owned: what was written; NULL before WRITE */
	size_t len;
};

struct rbd_watch {
	struct raid_shared_watch base; /* first: what raid_vol_shared_unwatch sees */
	struct raid_vol *vol;        /* borrowed */
	rados_ioctx_t io;            /* owned: private I/O context of the watch */
	char tag[17];
	char oid[96];
	raid_shared_watch_fn cb;
	void *arg;
	uint64_t cookie;
	uint64_t self_id;            /* our client instance (rados_get_instance_id) */
	pthread_mutex_t mu;          /* broken, stopping, rewatch_running */
	bool broken, stopping, rewatch_running;
	pthread_t rewatch;
};

static bool tag_ok(const char *tag)
{
	size_t n = tag ? strlen(tag) : 0;

	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((tag[i] >= 'a' && tag[i] <= 'z') || (tag[i] >= '0' && tag[i] <= '9') ||
		      tag[i] == '_'))
			return false;
	return true;
}

/* The pool's librados I/O context (a rados_ioctx_t) in *@ioctx and the RBD
 * image id of @v in @id. 0, or -EOPNOTSUPP (not an rbd volume: only
 * raid_rbd_backend has rbd_shared_read). */
static int raid_rbd_vol_rados(struct raid_vol *v, void **ioctx, char *id, size_t idlen)
{
	/* the image id, with a snapshot's id after it (rbd.c, obj_id) */
	if (v->pool->ops->shared_read != rbd_shared_read || !rv_of(v)->obj_id[0])
		return -EOPNOTSUPP;
	*ioctx = rp_of(v->pool)->ioctx;
	snprintf(id, idlen, "%s", rv_of(v)->obj_id);
	return 0;
}

/* A private I/O context on the volume's pool and the blob's object name. */
static int obj_open(struct raid_vol *vol, const char *tag, rados_ioctx_t *io, char *oid,
		    size_t oidlen)
{
	void *pio;
	char id[64];
	int rc;

	if (!raid_backend_vol_shared(vol))
		return -EOPNOTSUPP;
	if (!tag_ok(tag))
		return -EINVAL;
	rc = raid_rbd_vol_rados(vol, &pio, id, sizeof(id));
	if (rc < 0)
		return rc;
	snprintf(oid, oidlen, "rtgt_%s.%s", tag, id);
	return rados_ioctx_create2(rados_ioctx_get_cluster((rados_ioctx_t)pio),
				   rados_ioctx_get_id((rados_ioctx_t)pio), io);
}

/* Reads the object: the byte count (0 and *@exists false when absent) or a
 * negative errno; *@ver its version. */
static int obj_read(rados_ioctx_t io, const char *oid, uint8_t *buf, bool *exists, uint64_t *ver)
{
	int n = rados_read(io, oid, (char *)buf, SHARED_MAX, 0);

	*exists = n != -ENOENT;
	*ver = 0;
	if (n == -ENOENT)
		return 0;
	if (n >= 0)
		*ver = rados_get_last_version(io);
	return n;
}

int rbd_shared_read(struct raid_vol *vol, const char *tag, uint8_t **out, size_t *out_len)
{
	rados_ioctx_t io;
	char oid[96];
	uint8_t *buf;
	uint64_t ver;
	bool exists;
	int rc, n;

	*out = NULL;
	*out_len = 0;
	rc = obj_open(vol, tag, &io, oid, sizeof(oid));
	if (rc < 0)
		return rc;
	buf = malloc(SHARED_MAX);
	if (!buf) {
		rc = -ENOMEM;
		goto destroy_io;
	}
	n = obj_read(io, oid, buf, &exists, &ver);
	if (n < 0) {
		rc = n;
		free(buf);
	} else if (n == 0) {
		free(buf);
	} else {
		*out = buf;
		*out_len = (size_t)n;
	}
destroy_io:
	rados_ioctx_destroy(io);
	return rc;
}

/* ---- updates ---- */

static bool upd_check(const struct upd *u)
{
	if (!u->ctx || !u->vol || u->attempts > MAX_ATTEMPTS)
		return false;
	if (u->blob && u->state != ST_WRITE && u->state != ST_NOTIFY && u->state != ST_DONE)
		return false;
	return u->state >= ST_READ && u->state <= ST_DONE;
}

/* Submitting thread: the update is over. */
static void upd_done(void *arg)
{
	struct upd *u = arg;

	RTGT_CHECK(upd_check(u));
	raid_ioctx_io_done(u->ctx);
	u->done(u->arg, u->rc, u->blob, u->len);
	free(u->blob);
	free(u);
}

/* Two nodes that collided should not collide again: 1-8 ms plus a jitter
 * taken from the clock (rand() is not for threads). */
static void backoff(unsigned attempt)
{
	struct timespec ts = { 0, 0 };

	ts.tv_nsec = (long)(1000000u * (1u + attempt % 8u)) + (long)(conf_mono_ns() % 1000000u);
	nanosleep(&ts, NULL);
}

static void *upd_thread(void *arg)
{
	struct upd *u = arg;
	struct timespec ms = { 0, 1000000 };
	rados_ioctx_t io;
	uint8_t *buf = NULL;
	int rc;

	rc = obj_open(u->vol, u->tag, &io, u->oid, sizeof(u->oid));
	if (rc < 0)
		goto done;
	buf = malloc(SHARED_MAX);
	if (!buf) {
		rc = -ENOMEM;
		goto destroy_io;
	}
	for (;;) {
		rados_write_op_t op;
		uint64_t ver;
		bool exists;
		int n;

		u->state = ST_READ;
		n = obj_read(io, u->oid, buf, &exists, &ver);
		if (n < 0) {
			rc = n;
			LOG_ERR(RAID_MOD, "rbd: read %s: %s", u->oid, strerror(-n));
			break;
		}
		u->state = ST_APPLY;
		free(u->blob);
		u->blob = NULL;
		u->len = 0;
		rc = u->fn(u->arg, n ? buf : NULL, (size_t)n, &u->blob, &u->len);
		if (rc < 0 || !u->blob)
			break;
		u->state = ST_WRITE;
		op = rados_create_write_op();
		if (!op) {
			rc = -ENOMEM;
			break;
		}
		if (exists)
			rados_write_op_assert_version(op, ver);
		else
			rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_write_full(op, (const char *)u->blob, u->len);
		rc = rados_write_op_operate(op, io, u->oid, NULL, 0);
		rados_release_write_op(op);
		if ((rc == -ERANGE || rc == -EOVERFLOW || rc == -EEXIST) &&
		    ++u->attempts < MAX_ATTEMPTS) {
			backoff(u->attempts);
			continue;
		}
		if (rc < 0) {
			LOG_ERR(RAID_MOD, "rbd: write %s: %s", u->oid, strerror(-rc));
			free(u->blob);
			u->blob = NULL;
			u->len = 0;
			break;
		}
		u->state = ST_NOTIFY;
		{
			char *reply = NULL;
			size_t rlen = 0;

			rc = rados_notify2(io, u->oid, (const char *)u->blob, (int)u->len, NOTIFY_MS,
					   &reply, &rlen);
			if (reply)
				rados_buffer_free(reply);
			if (rc < 0) {
				LOG_WARN(RAID_MOD, "rbd: %s written, but not every node acknowledged it within %u ms: %s",
					 u->oid, NOTIFY_MS, strerror(-rc));
				rc = -ETIMEDOUT;
			}
		}
		break;
	}
	free(buf);
destroy_io:
	rados_ioctx_destroy(io);
done:
	u->rc = rc;
	u->state = ST_DONE;
	/* raid_defer only fails without memory: the completion must not be
	 * lost, so wait for memory rather than drop it */
	while (raid_defer(u->ctx, upd_done, u) < 0)
		nanosleep(&ms, NULL);
	return NULL;
}

/* Runs @fn(@arg) on a thread of its own that nobody joins; 0 or a positive
 * errno, like pthread_create. */
static int spawn_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_t tid;
	int rc = pthread_attr_init(&at);

	if (rc)
		return rc;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &at, fn, arg);
	pthread_attr_destroy(&at);
	return rc;
}

int rbd_shared_update(struct raid_vol *vol, const char *tag, struct raid_ioctx *ctx,
		      raid_shared_fn fn, raid_shared_done_fn done, void *arg)
{
	struct upd *u;
	int rc;

	if (!raid_backend_vol_shared(vol))
		return -EOPNOTSUPP;
	if (!tag_ok(tag) || !ctx || !fn || !done)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->vol = vol;
	u->ctx = ctx;
	u->fn = fn;
	u->done = done;
	u->arg = arg;
	u->state = ST_READ;
	snprintf(u->tag, sizeof(u->tag), "%s", tag);
	snprintf(u->oid, sizeof(u->oid), "rtgt_%s", tag);   /* completed by upd_thread */
	raid_ioctx_io_started(ctx);
	rc = spawn_detached(upd_thread, u);
	if (rc)
		goto undo_started;
	return 0;

undo_started:
	raid_ioctx_io_done(ctx);
	free(u);
	return -rc;
}

int rbd_shared_notify(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
		      unsigned timeout_ms)
{
	rados_ioctx_t io;
	char oid[96], *reply = NULL;
	size_t rlen = 0;
	int rc;

	rc = obj_open(vol, tag, &io, oid, sizeof(oid));
	if (rc < 0)
		return rc;
	rc = rados_notify2(io, oid, msg, (int)len, timeout_ms, &reply, &rlen);
	if (reply)
		rados_buffer_free(reply);
	rados_ioctx_destroy(io);
	if (rc < 0 && rc != -ETIMEDOUT)
		LOG_WARN(RAID_MOD, "rbd: notify %s: %s", oid, strerror(-rc));
	return rc;
}

/* A notify sent from its own thread (raid_vol_shared_notify_async): the
 * caller (a reactor answering a reset) must not wait up to the timeout for
 * a dead peer. */
struct anotify {
	struct raid_vol *vol;        /* borrowed; open until done ran */
	raid_shared_notify_done_fn done;
	void *arg;
	char tag[17];
	unsigned timeout_ms;
	size_t len;
	char msg[];                  /* owned copy */
};

static void *anotify_thread(void *arg)
{
	struct anotify *a = arg;
	int rc = rbd_shared_notify(a->vol, a->tag, a->msg, a->len, a->timeout_ms);

	a->done(a->arg, rc);
	free(a);
	return NULL;
}

int rbd_shared_notify_async(struct raid_vol *vol, const char *tag, const void *msg, size_t len,
			    unsigned timeout_ms, raid_shared_notify_done_fn done, void *arg)
{
	struct anotify *a;
	int rc;

	if (!tag_ok(tag) || !done || len > SHARED_MAX || (len && !msg))
		return -EINVAL;
	if (!raid_backend_vol_shared(vol))
		return -EOPNOTSUPP;
	a = calloc(1, sizeof(*a) + len);
	if (!a)
		return -ENOMEM;
	a->vol = vol;
	a->done = done;
	a->arg = arg;
	a->timeout_ms = timeout_ms;
	a->len = len;
	snprintf(a->tag, sizeof(a->tag), "%s", tag);
	if (len)
		memcpy(a->msg, msg, len);
	rc = spawn_detached(anotify_thread, a);
	if (rc)
		goto err_free;
	return 0;

err_free:
	free(a);
	return -rc;
}

/* ---- watches ---- */

static void on_notify(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
		      void *data, size_t len)
{
	struct rbd_watch *w = arg;
	int rc;

	w->cb(w->arg, data, len, notifier_id == w->self_id);
	/* only now: the writer's notify returning means we have the change */
	rc = rados_notify_ack(w->io, w->oid, notify_id, handle, NULL, 0);
	if (rc < 0)
		LOG_WARN(RAID_MOD, "rbd: ack on %s: %s", w->oid, strerror(-rc));
}

static void on_watch_err(void *arg, uint64_t cookie, int err);

static int watch_register(struct rbd_watch *w)
{
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	/* the object must exist to be watched; an empty one reads as "no
	 * state yet" */
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rc = rados_write_op_operate(op, w->io, w->oid, NULL, 0);
	rados_release_write_op(op);
	if (rc < 0)
		return rc;
	return rados_watch2(w->io, w->oid, &w->cookie, on_notify, on_watch_err, w);
}

static void *rewatch_thread(void *arg)
{
	struct rbd_watch *w = arg;
	uint8_t *blob;
	size_t len;
	unsigned tries = 0;
	int rc;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		if (w->stopping) {
			pthread_mutex_unlock(&w->mu);
			return NULL;
		}
		pthread_mutex_unlock(&w->mu);
		/* the cookie is librados' handle of the watch: unwatch it once
		 * (a second unwatch of the same cookie after a failed retry
		 * touches freed memory) */
		if (w->cookie)
			rados_unwatch2(w->io, w->cookie);
		w->cookie = 0;
		rc = watch_register(w);
		if (rc == 0)
			break;
		/* a node fenced for good (blocklisted) retries until it is
		 * restarted: once a minute in the log is enough */
		if (tries++ % 60 == 0)
			LOG_WARN(RAID_MOD, "rbd: cannot watch %s again: %s (retrying every second)",
				 w->oid, strerror(-rc));
		sleep(1);
	}
	rc = rbd_shared_read(w->vol, w->tag, &blob, &len);
	if (rc == 0) {
		w->cb(w->arg, blob, len, false);
		free(blob);
		LOG_INFO(RAID_MOD, "rbd: watching %s again, state re-read", w->oid);
	} else {
		LOG_ERR(RAID_MOD, "rbd: watching %s again but cannot re-read it: %s", w->oid,
			strerror(-rc));
	}
	pthread_mutex_lock(&w->mu);
	w->broken = false;
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void on_watch_err(void *arg, uint64_t cookie, int err)
{
	struct rbd_watch *w = arg;

	LOG_WARN(RAID_MOD, "rbd: watch on %s lost: %s; re-registering", w->oid, strerror(-err));
	pthread_mutex_lock(&w->mu);
	if (!w->stopping && !w->broken) {
		if (w->rewatch_running) {
			pthread_join(w->rewatch, NULL);
			w->rewatch_running = false;
		}
		w->broken = true;
		if (pthread_create(&w->rewatch, NULL, rewatch_thread, w) == 0)
			w->rewatch_running = true;
		else
			w->broken = false;
	}
	pthread_mutex_unlock(&w->mu);
}

int rbd_shared_watch(struct raid_vol *vol, const char *tag, raid_shared_watch_fn cb, void *arg,
		     struct raid_shared_watch **out)
{
	struct rbd_watch *w;
	int rc;

	if (!raid_backend_vol_shared(vol))
		return -EOPNOTSUPP;
	if (!cb || !out)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->base.ops = vol->pool->ops;
	w->vol = vol;
	w->cb = cb;
	w->arg = arg;
	snprintf(w->tag, sizeof(w->tag), "%s", tag ? tag : "");
	pthread_mutex_init(&w->mu, NULL);
	rc = obj_open(vol, tag, &w->io, w->oid, sizeof(w->oid));
	if (rc < 0)
		goto free_w;
	w->self_id = rados_get_instance_id(rados_ioctx_get_cluster(w->io));
	rc = watch_register(w);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "rbd: cannot watch %s: %s", w->oid, strerror(-rc));
		goto destroy_io;
	}
	*out = &w->base;
	return 0;

destroy_io:
	rados_ioctx_destroy(w->io);
free_w:
	pthread_mutex_destroy(&w->mu);
	free(w);
	return rc;
}

void rbd_shared_unwatch(struct raid_shared_watch *base)
{
	struct rbd_watch *w = (struct rbd_watch *)base;
	bool running;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	running = w->rewatch_running;
	w->rewatch_running = false;
	pthread_mutex_unlock(&w->mu);
	if (running)
		pthread_join(w->rewatch, NULL);
	if (w->cookie)   /* 0: a re-watch gave up its old watch and got none */
		rados_unwatch2(w->io, w->cookie);
	/* no callback may run once we return: the caller frees arg */
	rados_watch_flush(rados_ioctx_get_cluster(w->io));
	rados_ioctx_destroy(w->io);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

#endif
