/*
 * raid/rbd_fence.c - fencing of the rtgt nodes that serve one RBD pool.
 *
 * Two rtgtd nodes may serve the same images (no exclusive lock, no client
 * cache: raid/README.md, "RBD pools"). Without fencing, a write that node A
 * accepted and then stalled on (A stopped, cut off from the cluster, its
 * librbd resending later) can land after the initiator, having given up on
 * A, rewrote the same block through node B. The design:
 *
 * Node lease. Every node that opens an rbd pool keeps one omap entry in
 * the pool-wide object "rtgt_nodes" (in the pool's rbd_pool): key = its
 * RADOS client instance id (rados_get_instance_id, unique per connection),
 * value = "SEQ ADDR BOOT PIDNS PID HOST": a counter bumped by every renewal
 * (every FENCE_RENEW_MS = 1 s), the client's address as the OSDs see it
 * (rados_getaddrs: what rados_blocklist_add takes), the host's boot id, the
 * pid namespace and pid of rtgtd, and the host name (for the log). Peers
 * judge the lease by the counter on their own monotonic clock, never by
 * timestamps in the entry, so no clock has to agree with another.
 *
 * Self-fencing. A node counts its lease from the moment it *sent* its last
 * renewal that succeeded (last_ok). If that is FENCE_MARGIN_MS = 6 s ago or
 * more, and its last look at "rtgt_nodes" showed another live node, it is
 * fenced: every request on the pool's volumes fails with -ENOLINK, which
 * the SCSI layer answers NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET
 * PORT IN UNAVAILABLE STATE (02/04/0C). It is checked on every submission
 * (rbd_fence_ok: a clock compare), not by the thread, so a node resumed
 * after SIGSTOP refuses the commands waiting in its sockets before its
 * thread has run at all. It ends when a renewal succeeds again, unless the
 * cluster refused the client as blocklisted (EBLOCKLISTED from a renewal or
 * any librbd request: rbd_fence_gone): then for good, until rtgtd restarts
 * with a new client. Why this answer: a CHECK CONDITION comes back at once,
 * and Linux fails a command with NOT READY 04/0C without retrying it on the
 * same path (only 04/01-style "becoming ready" and 04/0A "transitioning"
 * are retried there), so dm-multipath fails the path and resends the I/O
 * through the peer's path immediately; Windows MPIO (msdsm) treats the ALUA
 * "unavailable" state the same way. Dropping the connections instead would
 * leave the initiator to find out by its own timeouts (5-30 s) and to retry
 * logins into a node that refuses them. A node alone (no other live entry
 * in its last look) does not fence itself: nobody would take over, and
 * failing I/O during a cluster stall only hurts; librbd waits as before
 * (rados_osd_op_timeout). A peer that appears during a partition is covered
 * by blocklisting below, which does not depend on the self-fence.
 *
 * Peer fencing. The thread reads "rtgt_nodes" every FENCE_POLL_MS = 0.5 s.
 * A peer whose counter has not moved for FENCE_LEASE_MS = 10 s (measured
 * from when this node first saw the current value, which is after the
 * peer sent it: the peer stopped serving 4 s before) has expired; so has
 * one on this host (same boot id and pid namespace) whose process is gone.
 * Before it is treated as gone, its client address is blocklisted
 * (rados_blocklist_add, FENCE_BLOCKLIST_S = 3600 s, Ceph's own default;
 * it returns once this client has the OSD map with the entry, and the OSDs
 * take no op carrying that epoch, i.e. no later op of ours, before they
 * have it too: from then on every op of the peer's client is refused, and
 * those it sent before are ordered before ours), then its entry is
 * removed. A blocklisting that fails is retried every poll; the peer stays
 * overdue meanwhile.
 *
 * Holding writes. While any live peer is overdue (its counter unmoved for
 * FENCE_OVERDUE_MS = 3 s, not yet renewed again nor blocklisted) the
 * node holds every write (WRITE, WRITE SAME, COMPARE AND WRITE) it is
 * given (rbd_fence_hold), reads and flushes go on. The writes are started
 * once the peer renews again or has been blocklisted; held longer than
 * FENCE_HOLD_MAX_MS = 20 s (the peer could not be blocklisted: a monitor
 * unreachable, a client without the caps) they fail with -ENOLINK. So a
 * write accepted here while a peer has stalled cannot be overtaken later
 * by a write the stalled peer still held.
 *
 * Thick write-out take-over (rbd.c, prov_take): the holder of the
 * "rtgt.thick" lease records its address in image metadata
 * "rtgt.thick_holder"; a node taking the lease blocklists a recorded
 * holder other than itself (rbd_fence_blocklist) before it writes a zero.
 *
 * Threads: renew_main renews, one synchronous omap_set of the own entry
 * every FENCE_RENEW_MS and nothing else (a blocklisting waiting for the
 * monitors must not delay it); 0 moves last_ok to the time it was sent,
 * EBLOCKLISTED sets gone and ends the thread.
 * State machine of fence_main (per pool, one pass per 100 ms):
 *   READ:  no read in flight and FENCE_POLL_MS since the last: start one
 *          (aio omap_get_vals); its result updates the peer table:
 *          new key -> LIVE (changed = now); counter moved -> changed = now;
 *          same counter -> same = the read's start; key gone -> dropped
 *          (the peer stopped cleanly, or another node blocklisted and
 *          removed it);
 *   JUDGE: LIVE peer expired (same - changed >= FENCE_LEASE_MS: time this
 *          node stood still itself is not counted; or its process on this
 *          host is gone and a later read still shows it), and this node's
 *          own lease valid -> blocklist, FENCED, entry removed;
 *          paused = some LIVE peer overdue; when not paused (or fenced
 *          ourselves, or held too long) the held writes are handed back to
 *          their threads (raid_defer) with verdict 0 or -ENOLINK.
 * Peer states: LIVE -> FENCED (blocklisted by us or by rbd_fence_blocklist)
 * -> dropped when its entry is gone. Invariant (fence_check): a FENCED peer
 * is never counted overdue, paused implies a LIVE overdue peer, the held
 * list is empty while not paused except between the thread's unlock and
 * its hand-back.
 *
 * Not covered (raid/README.md, "Fencing of two nodes"): a write that
 * reached librbd on a node whose lease was still fresh (less than 3 s
 * since the peer saw it renew) is not held by the peer, so an initiator
 * that fails over to the peer within those 3 s, while that write is stuck
 * and the stalled node renews before its lease expires, can still see it
 * land late; a node that is fenced for good must be restarted; the
 * pool-wide entry holds writes to every image of the pool, not only the
 * images the stalled peer serves.
 *
 * Layer: rbd connection, the bottom of the rbd backend (raid/README.md
 * "Layers"). May call: ioctx.c (raid_defer), librados. Held writes go back
 * to rbd.c only through the resume callback it passed to rbd_fence_hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/util.h"
#include "raid/rbd_int.h"   /* librados, when built with it */

#ifdef RTGT_HAVE_RBD

#define FENCE_OBJ          "rtgt_nodes"
#define FENCE_RENEW_MS     1000u
#define FENCE_POLL_MS      500u
#define FENCE_OVERDUE_MS   3000u
#define FENCE_MARGIN_MS    6000u
#define FENCE_LEASE_MS     10000u
#define FENCE_HOLD_MAX_MS  20000u
#define FENCE_BLOCKLIST_S  3600u
#define FENCE_MAX_PEERS    32u
#define FENCE_MAX_FENCED   32u
#define FENCE_TICK_MS      100u
#define EBLOCKLISTED       ESHUTDOWN   /* what librados reports */

enum { PEER_LIVE = 1, PEER_FENCED };

struct peer {
	char key[24];
	uint64_t seq;
	uint64_t changed_ms;        /* our clock: the end of the read that first
	                             * showed seq (after the peer sent it) */
	uint64_t same_ms;           /* the start of the last read still showing
	                             * seq (the peer had sent nothing newer) */
	char addr[128], boot[40], pidns[40], host[64];
	long pid;
	int state;                  /* PEER_* */
	bool seen;                  /* in the last read */
	bool told;                  /* "overdue" logged */
	uint64_t dead_ms;           /* when its process was first found gone */
	uint64_t bl_tried_ms;       /* last failed blocklisting (log pacing) */
};

struct rbd_fence {
	rados_t cluster;            /* borrowed: the pool's */
	rados_ioctx_t io;           /* owned */
	char pool[128];             /* for the log */
	char key[24], addr[128], boot[40], pidns[40], host[64];
	uint64_t seq;
	_Atomic uint64_t last_ok_ms;   /* send time of the last renewal that succeeded */
	_Atomic bool has_peers;     /* the last read showed a LIVE peer */
	_Atomic bool gone;          /* blocklisted: fenced until restart */
	_Atomic bool paused;        /* writes are held (mu to set) */
	_Atomic bool stop;
	pthread_t thr;
	bool thr_live;
	pthread_mutex_t mu;         /* peers, fenced addresses, held list, paused */
	struct peer peers[FENCE_MAX_PEERS];
	unsigned n_peers;
	char fenced[FENCE_MAX_FENCED][128];   /* addresses we blocklisted (ring) */
	unsigned n_fenced;
	struct raid_io *held, **held_tail;
	pthread_t renew_thr;        /* renew_main: the lease, nothing else */
	bool renew_live;
	/* fence_main only */
	rados_completion_t read_c;
	rados_read_op_t read_op;
	rados_omap_iter_t read_it;
	int read_rval;
	uint64_t read_t;
	bool told_fenced;
};

static void read_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	out[0] = '\0';
	if (f) {
		if (fgets(out, (int)len, f))
			out[strcspn(out, "\n")] = '\0';
		fclose(f);
	}
	if (!out[0])
		snprintf(out, len, "-");
}

static void read_link(const char *path, char *out, size_t len)
{
	ssize_t n = readlink(path, out, len - 1);

	if (n <= 0)
		snprintf(out, len, "-");
	else
		out[n] = '\0';
	for (char *p = out; *p; p++)
		if (*p == ' ')
			*p = '_';
}

/* ---- entries ---- */

static int entry_fmt(struct rbd_fence *f, char *val, size_t len)
{
	return snprintf(val, len, "%" PRIu64 " %s %s %s %ld %s", f->seq, f->addr, f->boot, f->pidns,
			(long)getpid(), f->host);
}

static int entry_parse(const char *val, size_t len, struct peer *p)
{
	char buf[512];

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, val, len);
	buf[len] = '\0';
	if (sscanf(buf, "%" SCNu64 " %127s %39s %39s %ld %63s", &p->seq, p->addr, p->boot, p->pidns,
		   &p->pid, p->host) != 6)
		return -EINVAL;
	return 0;
}

/* Synchronous renewal (start-up) or removal (shutdown, a fenced peer). */
static int entry_set_sync(struct rbd_fence *f)
{
	rados_write_op_t op = rados_create_write_op();
	const char *keys[1] = { f->key };
	char val[512];
	const char *vals[1] = { val };
	size_t kl[1], vl[1];
	int rc;

	if (!op)
		return -ENOMEM;
	f->seq++;
	entry_fmt(f, val, sizeof(val));
	kl[0] = strlen(f->key);
	vl[0] = strlen(val);
	rados_write_op_omap_set2(op, keys, vals, kl, vl, 1);
	rc = rados_write_op_operate(op, f->io, FENCE_OBJ, NULL, 0);
	rados_release_write_op(op);
	return rc;
}

static int entry_rm_sync(struct rbd_fence *f, const char *key)
{
	rados_write_op_t op = rados_create_write_op();
	const char *keys[1] = { key };
	size_t kl[1] = { strlen(key) };
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_omap_rm_keys2(op, keys, kl, 1);
	rc = rados_write_op_operate(op, f->io, FENCE_OBJ, NULL, 0);
	rados_release_write_op(op);
	return rc;
}

/* ---- the peer table (mu held) ---- */

static bool fence_check(struct rbd_fence *f)
{
	bool overdue = false;

	if (f->n_peers > FENCE_MAX_PEERS)
		return false;
	for (unsigned i = 0; i < f->n_peers; i++) {
		const struct peer *p = &f->peers[i];

		if (p->state != PEER_LIVE && p->state != PEER_FENCED)
			return false;
		if (p->state == PEER_LIVE && conf_mono_ms() - p->changed_ms >= FENCE_OVERDUE_MS)
			overdue = true;
	}
	/* paused only while a LIVE peer is overdue (the thread updates both in
	 * one pass under mu; a peer can become overdue between passes) */
	return !atomic_load(&f->paused) || overdue;
}

static struct peer *peer_find(struct rbd_fence *f, const char *key)
{
	for (unsigned i = 0; i < f->n_peers; i++)
		if (!strcmp(f->peers[i].key, key))
			return &f->peers[i];
	return NULL;
}

static bool addr_fenced(struct rbd_fence *f, const char *addr)
{
	unsigned n = f->n_fenced < FENCE_MAX_FENCED ? f->n_fenced : FENCE_MAX_FENCED;

	for (unsigned i = 0; i < n; i++)
		if (!strcmp(f->fenced[i], addr))
			return true;
	return false;
}

static void addr_fenced_add(struct rbd_fence *f, const char *addr)
{
	if (addr_fenced(f, addr))
		return;
	snprintf(f->fenced[f->n_fenced % FENCE_MAX_FENCED], sizeof(f->fenced[0]), "%s", addr);
	f->n_fenced++;
	for (unsigned i = 0; i < f->n_peers; i++)
		if (!strcmp(f->peers[i].addr, addr))
			f->peers[i].state = PEER_FENCED;
}

/* A read of "rtgt_nodes", started at @t_start, completed: fold it into the
 * table. */
static void peers_update(struct rbd_fence *f, uint64_t t_start)
{
	uint64_t now = conf_mono_ms();
	bool live = false;
	unsigned j = 0;

	for (unsigned i = 0; i < f->n_peers; i++)
		f->peers[i].seen = false;
	for (;;) {
		char *k = NULL, *v = NULL;
		size_t kl = 0, vl = 0;
		struct peer np, *p;
		char key[24];

		if (rados_omap_get_next2(f->read_it, &k, &v, &kl, &vl) < 0 || !k)
			break;
		if (kl == 0 || kl >= sizeof(key))
			continue;
		memcpy(key, k, kl);
		key[kl] = '\0';
		if (!strcmp(key, f->key))
			continue;
		memset(&np, 0, sizeof(np));
		if (entry_parse(v, vl, &np) < 0) {
			LOG_WARN(RAID_MOD, "rbd: %s: %s entry %s unreadable; ignored", f->pool,
				 FENCE_OBJ, key);
			continue;
		}
		p = peer_find(f, key);
		if (!p) {
			if (f->n_peers == FENCE_MAX_PEERS)
				continue;
			p = &f->peers[f->n_peers++];
			*p = np;
			snprintf(p->key, sizeof(p->key), "%s", key);
			p->changed_ms = now;
			p->same_ms = t_start;
			p->state = addr_fenced(f, p->addr) ? PEER_FENCED : PEER_LIVE;
			if (p->state == PEER_LIVE)
				LOG_INFO(RAID_MOD, "rbd: %s: peer node client.%s at %s (%s, pid %ld)",
					 f->pool, key, p->addr, p->host, p->pid);
		} else if (np.seq != p->seq) {
			p->seq = np.seq;
			p->changed_ms = now;
			p->same_ms = t_start;
			if (p->told && p->state == PEER_LIVE)
				LOG_INFO(RAID_MOD, "rbd: %s: peer node client.%s renewed its lease again",
					 f->pool, key);
			p->told = false;
		} else {
			p->same_ms = t_start;
		}
		p->seen = true;
	}
	/* entries gone: stopped cleanly, or blocklisted and removed by a node */
	for (unsigned i = 0; i < f->n_peers; i++) {
		if (!f->peers[i].seen)
			continue;
		f->peers[j++] = f->peers[i];
		live |= f->peers[i].state == PEER_LIVE;
	}
	f->n_peers = j;
	atomic_store(&f->has_peers, live);
}

/* Whether @p ran on this host (same boot, same pid namespace) and its
 * process is gone, and a read that began after we found that out still
 * showed its entry (a peer stopping cleanly removes it just before it
 * exits: such a peer is not fenced). mu held. */
static bool peer_dead_here(const struct rbd_fence *f, struct peer *p)
{
	if (strcmp(p->boot, f->boot) || strcmp(p->pidns, f->pidns) || p->pid <= 0)
		return false;
	if (!p->dead_ms) {
		if (kill((pid_t)p->pid, 0) == 0 || errno != ESRCH)
			return false;
		p->dead_ms = conf_mono_ms();
	}
	return p->same_ms > p->dead_ms;
}

/* ---- held writes ---- */

static void held_release(struct rbd_fence *f, struct raid_io *list, int verdict)
{
	struct timespec ms = { 0, 1000000 };

	while (list) {
		struct raid_io *io = list, *next = io->rpriv[RBD_IO_LINK];
		struct raid_ioctx *ctx = io->rpriv[RBD_IO_HCTX];
		raid_defer_fn fn = (raid_defer_fn)(uintptr_t)io->rpriv[RBD_IO_HFN];

		io->rpriv[RBD_IO_LINK] = NULL;
		io->rpriv_u[RBD_IO_VERDICT] = (uint64_t)(int64_t)verdict;
		while (raid_defer(ctx, fn, io) < 0)
			nanosleep(&ms, NULL);
		list = next;
	}
	(void)f;
}

/* mu held: detach the held writes older than @max_ms (all with 0). */
static struct raid_io *held_take(struct rbd_fence *f, uint64_t max_ms)
{
	struct raid_io *out = NULL, **ot = &out, **pp = &f->held;
	uint64_t now = conf_mono_ms();

	while (*pp) {
		struct raid_io *io = *pp;

		if (max_ms && now - io->rpriv_u[RBD_IO_HELD] < max_ms) {
			pp = (struct raid_io **)&io->rpriv[RBD_IO_LINK];
			continue;
		}
		*pp = io->rpriv[RBD_IO_LINK];
		io->rpriv[RBD_IO_LINK] = NULL;
		*ot = io;
		ot = (struct raid_io **)&io->rpriv[RBD_IO_LINK];
	}
	f->held_tail = pp;
	return out;
}

/* ---- the thread ---- */

/*
 * The lease, on a thread of its own so that nothing else (a blocklisting
 * waiting for the monitors, a read) delays a renewal: one omap_set of our
 * entry per FENCE_RENEW_MS; a success moves last_ok to the time the
 * renewal was sent, EBLOCKLISTED ends it for good.
 */
static void *renew_main(void *arg)
{
	struct rbd_fence *f = arg;
	bool told = false;

	while (!atomic_load(&f->stop) && !atomic_load(&f->gone)) {
		uint64_t t = conf_mono_ms(), el;
		int rc = entry_set_sync(f);

		if (rc == 0) {
			atomic_store(&f->last_ok_ms, t);
			if (told)
				LOG_INFO(RAID_MOD, "rbd: %s: node lease renewed again after %.1f s",
					 f->pool, (double)(conf_mono_ms() - t) / 1e3);
			told = false;
		} else if (rc == -EBLOCKLISTED) {
			rbd_fence_gone(f);
		} else if (!told) {
			LOG_WARN(RAID_MOD, "rbd: %s: node lease renewal (%s): %s", f->pool, FENCE_OBJ,
				 strerror(-rc));
			told = true;
		}
		el = conf_mono_ms() - t;
		for (uint64_t left = el < FENCE_RENEW_MS ? FENCE_RENEW_MS - el : 0;
		     left && !atomic_load(&f->stop); left -= left < 100 ? left : 100) {
			struct timespec ts = { 0, (long)(left < 100 ? left : 100) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void read_poll(struct rbd_fence *f)
{
	int rc;

	if (f->read_c && rados_aio_is_complete(f->read_c)) {
		rc = rados_aio_get_return_value(f->read_c);
		if (rc == 0 && f->read_rval == 0) {
			pthread_mutex_lock(&f->mu);
			peers_update(f, f->read_t);
			pthread_mutex_unlock(&f->mu);
		} else if (rc == -EBLOCKLISTED) {
			rbd_fence_gone(f);
		}
		if (f->read_it)
			rados_omap_get_end(f->read_it);
		f->read_it = NULL;
		rados_aio_release(f->read_c);
		rados_release_read_op(f->read_op);
		f->read_c = NULL;
		f->read_op = NULL;
	}
	if (!f->read_c && conf_mono_ms() - f->read_t >= FENCE_POLL_MS) {
		f->read_op = rados_create_read_op();
		if (!f->read_op)
			return;
		if (rados_aio_create_completion2(NULL, NULL, &f->read_c) < 0) {
			rados_release_read_op(f->read_op);
			f->read_op = NULL;
			f->read_c = NULL;
			return;
		}
		f->read_rval = 0;
		f->read_it = NULL;
		rados_read_op_omap_get_vals2(f->read_op, "", "", FENCE_MAX_PEERS * 2, &f->read_it, NULL,
					     &f->read_rval);
		f->read_t = conf_mono_ms();
		rc = rados_aio_read_op_operate(f->read_op, f->io, f->read_c, FENCE_OBJ, 0);
		if (rc < 0) {
			rados_aio_release(f->read_c);
			rados_release_read_op(f->read_op);
			f->read_c = NULL;
			f->read_op = NULL;
		}
	}
}

/* Blocklist the expired LIVE peers; mu held on entry and exit (dropped
 * around the monitor command). */
static void judge_expired(struct rbd_fence *f)
{
	/* a node whose own lease is stale has most likely been stopped or cut
	 * off itself: its view of the others is old, and they are the ones
	 * about to fence it */
	bool self_ok = rbd_fence_ok(f);

	for (unsigned i = 0; i < f->n_peers; i++) {
		bool here = peer_dead_here(f, &f->peers[i]);
		struct peer p = f->peers[i];
		uint64_t now = conf_mono_ms(), quiet = now - p.changed_ms;
		/* expired: reads that began 10 s after the one that showed
		 * the current counter had ended still show it. Not "now":
		 * time this node itself stood still (stopped, starved) is
		 * not time the peer failed to renew in. */
		uint64_t proven = p.same_ms > p.changed_ms ? p.same_ms - p.changed_ms : 0;
		int rc;

		if (p.state != PEER_LIVE || !self_ok)
			continue;
		if (quiet >= FENCE_OVERDUE_MS && !p.told && !here) {
			LOG_WARN(RAID_MOD, "rbd: %s: peer node client.%s (%s, pid %ld) has not renewed its lease for %.1f s: holding writes until it does or is fenced",
				 f->pool, p.key, p.host, p.pid, (double)quiet / 1e3);
			f->peers[i].told = true;
		}
		if (proven < FENCE_LEASE_MS && !here)
			continue;
		pthread_mutex_unlock(&f->mu);
		rc = rbd_fence_blocklist(f, p.addr);
		if (rc == 0) {
			LOG_WARN(RAID_MOD, "rbd: %s: peer node client.%s at %s (%s, pid %ld) %s: blocklisted for %u s",
				 f->pool, p.key, p.addr, p.host, p.pid,
				 here ? "is gone (its process exited)" : "let its lease expire",
				 FENCE_BLOCKLIST_S);
			if (!here)
				LOG_INFO(RAID_MOD, "rbd: %s: (its lease counter stood still for %.1f s)",
					 f->pool, (double)proven / 1e3);
			/* an op with the new map epoch: the OSD has the entry now */
			rc = entry_rm_sync(f, p.key);
			if (rc < 0 && rc != -ENOENT)
				LOG_WARN(RAID_MOD, "rbd: %s: removing the entry of client.%s: %s",
					 f->pool, p.key, strerror(-rc));
		} else if (now - p.bl_tried_ms >= 5000) {
			LOG_ERR(RAID_MOD, "rbd: %s: cannot blocklist peer node client.%s at %s: %s; its writes may still land, holding ours",
				 f->pool, p.key, p.addr, strerror(-rc));
		}
		pthread_mutex_lock(&f->mu);
		{
			struct peer *q = peer_find(f, p.key);

			if (q && rc < 0 && now - p.bl_tried_ms >= 5000)
				q->bl_tried_ms = now;
		}
	}
}

static void judge(struct rbd_fence *f)
{
	struct raid_io *go = NULL, *late = NULL;
	bool overdue = false, fenced = !rbd_fence_ok(f);

	pthread_mutex_lock(&f->mu);
	judge_expired(f);
	for (unsigned i = 0; i < f->n_peers; i++)
		if (f->peers[i].state == PEER_LIVE &&
		    conf_mono_ms() - f->peers[i].changed_ms >= FENCE_OVERDUE_MS)
			overdue = true;
	atomic_store(&f->paused, overdue && !fenced);
	if (!atomic_load(&f->paused))
		go = held_take(f, 0);
	else
		late = held_take(f, FENCE_HOLD_MAX_MS);
	RTGT_CHECK(fence_check(f));
	pthread_mutex_unlock(&f->mu);
	if (late)
		LOG_ERR(RAID_MOD, "rbd: %s: writes held %u s for a peer that could not be fenced: failing them",
			f->pool, FENCE_HOLD_MAX_MS / 1000);
	held_release(f, go, fenced ? -ENOLINK : 0);
	held_release(f, late, -ENOLINK);
}

static void *fence_main(void *arg)
{
	struct rbd_fence *f = arg;
	struct timespec tick = { 0, FENCE_TICK_MS * 1000000L };

	while (!atomic_load(&f->stop)) {
		bool ok;

		read_poll(f);
		judge(f);
		ok = rbd_fence_ok(f);
		if (!ok && !f->told_fenced && !atomic_load(&f->gone))
			LOG_ERR(RAID_MOD, "rbd: %s: node lease not renewed for %.1f s: fenced (the pool's LUNs answer NOT READY, TARGET PORT IN UNAVAILABLE STATE until it is renewed)",
				f->pool, (double)(conf_mono_ms() - atomic_load(&f->last_ok_ms)) / 1e3);
		else if (ok && f->told_fenced)
			LOG_INFO(RAID_MOD, "rbd: %s: node lease renewed: serving again", f->pool);
		f->told_fenced = !ok;
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* ---- entry points (rbd_int.h) ---- */

bool rbd_fence_ok(struct rbd_fence *f)
{
	if (!f)
		return true;
	if (atomic_load(&f->gone))
		return false;
	return !atomic_load(&f->has_peers) ||
	       conf_mono_ms() - atomic_load(&f->last_ok_ms) < FENCE_MARGIN_MS;
}

void rbd_fence_gone(struct rbd_fence *f)
{
	if (!f || atomic_exchange(&f->gone, true))
		return;
	LOG_ERR(RAID_MOD, "rbd: %s: this node's RADOS client (%s) was blocklisted (a peer fenced it): the pool's LUNs answer NOT READY, TARGET PORT IN UNAVAILABLE STATE until rtgtd is restarted",
		f->pool, f->addr);
}

bool rbd_fence_hold(struct rbd_fence *f, struct raid_io *io, struct raid_ioctx *ctx,
		    void (*resume)(void *io))
{
	if (!f || !atomic_load(&f->paused))
		return false;
	pthread_mutex_lock(&f->mu);
	if (!atomic_load(&f->paused)) {
		pthread_mutex_unlock(&f->mu);
		return false;
	}
	io->rpriv[RBD_IO_LINK] = NULL;
	io->rpriv[RBD_IO_HCTX] = ctx;
	io->rpriv[RBD_IO_HFN] = (void *)(uintptr_t)resume;
	io->rpriv_u[RBD_IO_HELD] = conf_mono_ms();
	*f->held_tail = io;
	f->held_tail = (struct raid_io **)&io->rpriv[RBD_IO_LINK];
	pthread_mutex_unlock(&f->mu);
	return true;
}

int rbd_fence_blocklist(struct rbd_fence *f, const char *addr)
{
	char a[128];
	int rc;

	if (!f || !addr || !*addr || strlen(addr) >= sizeof(a))
		return -EINVAL;
	if (!strcmp(addr, f->addr))
		return -EINVAL;
	pthread_mutex_lock(&f->mu);
	rc = addr_fenced(f, addr);
	pthread_mutex_unlock(&f->mu);
	if (rc)
		return 0;
	snprintf(a, sizeof(a), "%s", addr);
	rc = rados_blocklist_add(f->cluster, a, FENCE_BLOCKLIST_S);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->mu);
	addr_fenced_add(f, addr);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

const char *rbd_fence_addr(const struct rbd_fence *f)
{
	return f ? f->addr : "";
}

int rbd_fence_start(void *cluster, const char *pool_name, const char *rbd_pool,
		    struct rbd_fence **out)
{
	struct rbd_fence *f = calloc(1, sizeof(*f));
	char *addrs = NULL;
	int rc;

	if (!f)
		return -ENOMEM;
	f->cluster = (rados_t)cluster;
	snprintf(f->pool, sizeof(f->pool), "%s", pool_name);
	pthread_mutex_init(&f->mu, NULL);
	f->held_tail = &f->held;
	snprintf(f->key, sizeof(f->key), "%" PRIu64, rados_get_instance_id(f->cluster));
	rc = rados_getaddrs(f->cluster, &addrs);
	if (rc < 0 || !addrs || !*addrs || strlen(addrs) >= sizeof(f->addr) || strchr(addrs, ' ')) {
		LOG_ERR(RAID_MOD, "pool %s: this RADOS client's address: %s", pool_name,
			rc < 0 ? strerror(-rc) : "unusable");
		rc = rc < 0 ? rc : -EINVAL;
		goto err;
	}
	snprintf(f->addr, sizeof(f->addr), "%s", addrs);
	read_line("/proc/sys/kernel/random/boot_id", f->boot, sizeof(f->boot));
	read_link("/proc/self/ns/pid", f->pidns, sizeof(f->pidns));
	if (gethostname(f->host, sizeof(f->host) - 1) < 0 || !f->host[0])
		snprintf(f->host, sizeof(f->host), "-");
	for (char *p = f->host; *p; p++)
		if (*p == ' ')
			*p = '_';
	rc = rados_ioctx_create(f->cluster, rbd_pool, &f->io);
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: Ceph pool \"%s\": %s", pool_name, rbd_pool, strerror(-rc));
		goto err;
	}
	{
		uint64_t t = conf_mono_ms();

		rc = entry_set_sync(f);
		atomic_store(&f->last_ok_ms, t);
	}
	if (rc < 0) {
		LOG_ERR(RAID_MOD, "pool %s: cannot write the node lease (object %s in \"%s\"): %s",
			pool_name, FENCE_OBJ, rbd_pool, strerror(-rc));
		goto err_io;
	}
	/* the peers before the first I/O: their leases count from now */
	{
		rados_read_op_t op = rados_create_read_op();

		if (op) {
			f->read_rval = 0;
			rados_read_op_omap_get_vals2(op, "", "", FENCE_MAX_PEERS * 2, &f->read_it, NULL,
						     &f->read_rval);
			f->read_t = conf_mono_ms();
			rc = rados_read_op_operate(op, f->io, FENCE_OBJ, 0);
			if (rc == 0 && f->read_rval == 0)
				peers_update(f, f->read_t);
			if (f->read_it)
				rados_omap_get_end(f->read_it);
			f->read_it = NULL;
			rados_release_read_op(op);
		}
	}
	rc = pthread_create(&f->renew_thr, NULL, renew_main, f);
	if (rc) {
		rc = -rc;
		goto err_rm;
	}
	f->renew_live = true;
	rc = pthread_create(&f->thr, NULL, fence_main, f);
	if (rc) {
		rc = -rc;
		atomic_store(&f->stop, true);
		pthread_join(f->renew_thr, NULL);
		goto err_rm;
	}
	f->thr_live = true;
	LOG_INFO(RAID_MOD, "pool %s: node lease client.%s at %s in %s/%s (%u peer%s)", pool_name,
		 f->key, f->addr, rbd_pool, FENCE_OBJ, f->n_peers, f->n_peers == 1 ? "" : "s");
	rados_buffer_free(addrs);
	*out = f;
	return 0;

err_rm:
	entry_rm_sync(f, f->key);
err_io:
	rados_ioctx_destroy(f->io);
err:
	if (addrs)
		rados_buffer_free(addrs);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return rc;
}

void rbd_fence_stop(struct rbd_fence *f)
{
	struct raid_io *left;

	if (!f)
		return;
	atomic_store(&f->stop, true);
	if (f->thr_live)
		pthread_join(f->thr, NULL);
	if (f->renew_live)
		pthread_join(f->renew_thr, NULL);
	if (f->read_c) {
		rados_aio_wait_for_complete(f->read_c);
		if (f->read_it)
			rados_omap_get_end(f->read_it);
		rados_aio_release(f->read_c);
		rados_release_read_op(f->read_op);
	}
	pthread_mutex_lock(&f->mu);
	left = held_take(f, 0);
	pthread_mutex_unlock(&f->mu);
	held_release(f, left, -ENOLINK);
	/* the images are closed (flushed): nothing of ours is in flight, the
	 * peers need not wait out our lease */
	if (!atomic_load(&f->gone))
		entry_rm_sync(f, f->key);
	rados_ioctx_destroy(f->io);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

#endif
