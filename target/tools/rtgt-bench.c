/*
 * target/tools/rtgt-bench.c - iSCSI benchmark client (libiscsi initiator).
 *
 * Layer: bench (target/tools/README.md "Layers"), a program of its own,
 * linked with conf/clock.o only. May call: conf/clock, libiscsi, json-c,
 * libc. Nothing calls it.
 *
 * One session per --url, each on its own thread, driven asynchronously:
 * every session keeps --qd READ(16)/WRITE(16) commands outstanding, issuing
 * the next one from the completion callback of the previous, and
 * iscsi_service() runs from a poll() loop. Reports MB/s (10^6 bytes), IOPS
 * and latency percentiles per session and in total, as text or JSON.
 *
 * Session thread state machine (struct sess.state):
 *
 *   SETUP    --sess_setup() ok--> READY  (connected, capacity known)
 *   SETUP    --sess_setup() fails--> FAILED
 *   READY    --run_phase(PREFILL) (only with --prefill)--> READY
 *   READY    --barrier, main says go--> RUNNING --run_phase(RUN)--> DONE
 *   READY    --barrier, main says abort--> DONE
 *   RUNNING  --connection lost--> DONE (sess.dead, errors counted)
 *
 * Invariants (sess_check): 0 <= inflight <= qd; a slot is busy iff its
 * command is in flight; the sequential cursor stays inside the span and on
 * an I/O-size boundary.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "conf/util.h"

#define DEFAULT_INITIATOR "iqn.2026-11.org.rtgt:bench"
#define DEFAULT_SEED      0x7274677442656e63ull   /* "rtgtBenc" */
#define VERIFY_MAGIC      0x68636e6274677472ull   /* "rtgtbnch" little-endian */

/* ---- latency histogram: log-linear, 16 sub-buckets per power of two ---- */

#define HIST_SUB_BITS 4
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  (64 * HIST_SUB)

struct hist {
	uint64_t b[HIST_BUCKETS];
	uint64_t n;
};

static unsigned hist_idx(uint64_t ns)
{
	unsigned msb;

	if (ns < HIST_SUB)
		return (unsigned)ns;
	msb = 63u - (unsigned)__builtin_clzll(ns);
	/* bucket group by magnitude, then the next 4 bits below the top one:
	 * relative error under 1/16 at any scale */
	return (msb - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned)((ns >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* The middle of bucket @i, in ns. */
static double hist_mid(unsigned i)
{
	unsigned group, sub, msb;
	double lo, width;

	if (i < HIST_SUB)
		return i;
	group = i / HIST_SUB;
	sub = i % HIST_SUB;
	msb = group + HIST_SUB_BITS - 1;
	width = ldexp(1.0, (int)(msb - HIST_SUB_BITS));
	lo = ldexp(1.0, (int)msb) + sub * width;
	return lo + width / 2;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	unsigned i = hist_idx(ns);

	if (i >= HIST_BUCKETS)
		i = HIST_BUCKETS - 1;
	h->b[i]++;
	h->n++;
}

static void hist_merge(struct hist *into, const struct hist *h)
{
	unsigned i;

	for (i = 0; i < HIST_BUCKETS; i++)
		into->b[i] += h->b[i];
	into->n += h->n;
}

/* The @p-th percentile (0 < p <= 100) in milliseconds; 0 when empty. */
static double hist_pct_ms(const struct hist *h, double p)
{
	uint64_t want, seen = 0;
	unsigned i;

	if (h->n == 0)
		return 0;
	want = (uint64_t)ceil(p / 100.0 * (double)h->n);
	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			return hist_mid(i) / 1e6;
	}
	return hist_mid(HIST_BUCKETS - 1) / 1e6;
}

/* ---- options ---- */

enum pattern {
	PAT_SEQWRITE,
	PAT_SEQREAD,
	PAT_RANDRW,
};

struct opts {
	char **urls;               /* borrowed from argv */
	unsigned n_urls;
	enum pattern pattern;
	uint64_t bs;
	unsigned qd;
	double time_s;             /* 0: no time limit */
	uint64_t bytes;            /* per session; 0: no byte limit */
	unsigned rwmix;            /* percent reads in randrw */
	uint64_t span;             /* 0: whole LUN */
	bool prefill;
	bool verify;
	bool json;
	bool quiet;
	uint64_t seed;
	unsigned timeout_s;
	const char *initiator;
};

static const char *pattern_name(enum pattern p)
{
	switch (p) {
	case PAT_SEQWRITE:
		return "seqwrite";
	case PAT_SEQREAD:
		return "seqread";
	case PAT_RANDRW:
		return "randrw";
	}
	return "?";
}

/* ---- sessions ---- */

enum sess_state {
	S_SETUP,
	S_READY,
	S_FAILED,
	S_RUNNING,
	S_DONE,
};

enum phase {
	PH_PREFILL,
	PH_RUN,
};

struct sess;

struct slot {
	struct sess *s;            /* owner, never NULL */
	uint8_t *buf;              /* owned, bs bytes */
	struct scsi_iovec iov;
	uint64_t lba;
	bool write;
	bool busy;                 /* a command using buf is in flight */
	bool expect_stamp;         /* read: the chunk was written before issue */
	uint64_t t0;
};

struct sess {
	const struct opts *o;      /* borrowed */
	const char *url_str;       /* borrowed from argv */
	unsigned idx;
	enum sess_state state;
	struct iscsi_context *ctx; /* owned; NULL before setup and after teardown */
	int lun;
	uint32_t block_size;
	uint64_t n_blocks;
	uint64_t io_blocks;        /* bs / block_size */
	uint64_t n_chunks;         /* span / bs */
	uint64_t cursor;           /* next sequential chunk */
	uint64_t issued;           /* bytes issued in this phase */
	enum phase phase;
	bool stop;                 /* no more issues in this phase */
	bool dead;                 /* connection lost */
	unsigned inflight;
	struct slot *slots;        /* owned, o->qd entries */
	uint8_t *written;          /* owned bitmap of chunks written, or NULL */
	uint64_t rng;
	pthread_t th;

	/* counters of the measured run; bytes/ops are read by the progress
	 * printer on the main thread, so they are updated atomically */
	uint64_t bytes, ops;
	uint64_t reads, writes;
	uint64_t errors;
	uint64_t verify_errors, verified_blocks;
	struct hist h;
	uint64_t t_end;            /* ns, last completion of the run */
	char err[256];             /* first error, for the report */
};

static volatile sig_atomic_t g_interrupted;
static pthread_barrier_t g_ready, g_go;
static bool g_abort;           /* written by main between the two barriers */
static uint64_t g_t_start;     /* likewise */

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static void sess_error(struct sess *s, const char *what, const char *detail)
{
	if (s->err[0] == '\0')
		snprintf(s->err, sizeof(s->err), "%s: %s", what, detail ? detail : "");
}

static int sess_check(const struct sess *s)
{
	unsigned i, busy = 0;

	for (i = 0; i < s->o->qd; i++)
		busy += s->slots[i].busy;
	if (busy != s->inflight || s->inflight > s->o->qd)
		return -EINVAL;
	if (s->n_chunks && s->cursor > s->n_chunks)
		return -EINVAL;
	return 0;
}

/* Stamps: every logical block carries magic, its LBA and the seed, then
 * words derived from both, so a block read back from the wrong place or
 * from another run is told apart from one never written. */
static void stamp_fill(uint8_t *blk, uint32_t bsz, uint64_t lba, uint64_t seed)
{
	uint64_t w[3] = { VERIFY_MAGIC, lba, seed };
	uint64_t st = (lba * 0x9e3779b97f4a7c15ull) ^ seed;
	uint32_t off;

	if (st == 0)
		st = 1;
	memcpy(blk, w, sizeof(w));
	for (off = sizeof(w); off + 8 <= bsz; off += 8) {
		uint64_t v = xorshift64(&st);

		memcpy(blk + off, &v, 8);
	}
}

/* 1: good stamp, 0: no stamp at all, -1: a stamp that is wrong */
static int stamp_check(const uint8_t *blk, uint32_t bsz, uint64_t lba, uint64_t seed)
{
	uint64_t w[3], st = (lba * 0x9e3779b97f4a7c15ull) ^ seed;
	uint32_t off;

	memcpy(w, blk, sizeof(w));
	if (w[0] != VERIFY_MAGIC)
		return 0;
	if (w[1] != lba || w[2] != seed)
		return -1;
	if (st == 0)
		st = 1;
	for (off = sizeof(w); off + 8 <= bsz; off += 8) {
		uint64_t v = xorshift64(&st), got;

		memcpy(&got, blk + off, 8);
		if (got != v)
			return -1;
	}
	return 1;
}

static bool bit_get(const uint8_t *bm, uint64_t i)
{
	return bm && (bm[i / 8] >> (i % 8)) & 1;
}

static void bit_set(uint8_t *bm, uint64_t i)
{
	if (bm)
		bm[i / 8] |= (uint8_t)(1u << (i % 8));
}

static void io_done(struct iscsi_context *ctx, int status, void *command_data, void *priv);

/* Picks the next command for @sl and sends it. Returns 0 when sent or when
 * there is nothing more to issue, a negative errno when libiscsi refused. */
static int issue(struct slot *sl)
{
	struct sess *s = sl->s;
	const struct opts *o = s->o;
	struct scsi_task *t;
	uint64_t chunk;
	bool write;

	if (s->stop || s->dead || g_interrupted)
		return 0;
	if (s->phase == PH_RUN && o->bytes && s->issued >= o->bytes) {
		s->stop = true;
		return 0;
	}
	if (s->phase == PH_PREFILL) {
		if (s->cursor >= s->n_chunks) {
			s->stop = true;
			return 0;
		}
		chunk = s->cursor++;
		write = true;
	} else if (o->pattern == PAT_RANDRW) {
		chunk = xorshift64(&s->rng) % s->n_chunks;
		write = xorshift64(&s->rng) % 100 >= o->rwmix;
	} else {
		if (s->cursor >= s->n_chunks)
			s->cursor = 0;
		chunk = s->cursor++;
		write = o->pattern == PAT_SEQWRITE;
	}

	sl->lba = chunk * s->io_blocks;
	sl->write = write;
	sl->iov.iov_base = sl->buf;
	sl->iov.iov_len = o->bs;
	if (write && o->verify) {
		uint64_t b;

		for (b = 0; b < s->io_blocks; b++)
			stamp_fill(sl->buf + b * s->block_size, s->block_size, sl->lba + b, o->seed);
	}
	sl->expect_stamp = !write && bit_get(s->written, chunk);
	sl->t0 = conf_mono_ns();
	if (write)
		t = iscsi_write16_iov_task(s->ctx, s->lun, sl->lba, NULL, (uint32_t)o->bs,
					   (int)s->block_size, 0, 0, 0, 0, 0, io_done, sl,
					   &sl->iov, 1);
	else
		t = iscsi_read16_iov_task(s->ctx, s->lun, sl->lba, (uint32_t)o->bs,
					  (int)s->block_size, 0, 0, 0, 0, 0, io_done, sl,
					  &sl->iov, 1);
	if (!t) {
		s->errors++;
		sess_error(s, "queueing a command", iscsi_get_error(s->ctx));
		s->stop = true;
		return -ENOMEM;
	}
	sl->busy = true;
	s->inflight++;
	s->issued += o->bs;
	return 0;
}

static void verify_read(struct sess *s, struct slot *sl)
{
	uint64_t b;

	for (b = 0; b < s->io_blocks; b++) {
		int r = stamp_check(sl->buf + b * s->block_size, s->block_size, sl->lba + b,
				    s->o->seed);

		if (r == 1) {
			s->verified_blocks++;
		} else if (r < 0 || sl->expect_stamp) {
			char d[96];

			snprintf(d, sizeof(d), "LBA %" PRIu64 " %s", sl->lba + b,
				 r < 0 ? "holds data stamped for another block or run"
				       : "lost the data written to it");
			sess_error(s, "verify", d);
			s->verify_errors++;
		}
	}
}

static void io_done(struct iscsi_context *ctx, int status, void *command_data, void *priv)
{
	struct slot *sl = priv;
	struct sess *s = sl->s;
	struct scsi_task *t = command_data;
	uint64_t lat = conf_mono_ns() - sl->t0;

	sl->busy = false;
	s->inflight--;
	if (status == SCSI_STATUS_GOOD) {
		if (s->phase == PH_RUN) {
			hist_add(&s->h, lat);
			__atomic_add_fetch(&s->bytes, s->o->bs, __ATOMIC_RELAXED);
			__atomic_add_fetch(&s->ops, 1, __ATOMIC_RELAXED);
			if (sl->write)
				s->writes++;
			else
				s->reads++;
			s->t_end = conf_mono_ns();
		}
		if (sl->write)
			bit_set(s->written, sl->lba / s->io_blocks);
		else if (s->o->verify)
			verify_read(s, sl);
	} else {
		char d[200];

		s->errors++;
		if (status == SCSI_STATUS_CHECK_CONDITION && t)
			snprintf(d, sizeof(d), "%s at LBA %" PRIu64 ": %s / %s",
				 sl->write ? "WRITE(16)" : "READ(16)", sl->lba,
				 scsi_sense_key_str(t->sense.key),
				 scsi_sense_ascq_str(t->sense.ascq));
		else
			snprintf(d, sizeof(d), "%s at LBA %" PRIu64 ": status 0x%x %s",
				 sl->write ? "WRITE(16)" : "READ(16)", sl->lba, (unsigned)status,
				 ctx ? iscsi_get_error(ctx) : "");
		sess_error(s, "command failed", d);
		/* A failing target would otherwise be hammered at full rate. */
		s->stop = true;
	}
	if (t)
		scsi_free_scsi_task(t);
	if (status == SCSI_STATUS_GOOD)
		issue(sl);
}

/* Drives one phase until nothing is in flight any more. */
static void run_phase(struct sess *s, enum phase ph, uint64_t deadline)
{
	unsigned i;

	s->phase = ph;
	s->stop = false;
	s->cursor = 0;
	s->issued = 0;
	for (i = 0; i < s->o->qd; i++)
		if (issue(&s->slots[i]) < 0)
			break;
	while (s->inflight > 0) {
		struct pollfd pfd = { .fd = iscsi_get_fd(s->ctx) };
		int r;

		pfd.events = (short)iscsi_which_events(s->ctx);
		r = poll(&pfd, 1, pfd.events ? 100 : 10);
		if (r < 0 && errno != EINTR) {
			sess_error(s, "poll", strerror(errno));
			s->errors++;
			s->dead = true;
			break;
		}
		if (iscsi_service(s->ctx, r > 0 ? pfd.revents : 0) < 0) {
			sess_error(s, "connection lost", iscsi_get_error(s->ctx));
			s->errors++;
			s->dead = true;
			break;
		}
		if ((deadline && conf_mono_ns() >= deadline) || g_interrupted)
			s->stop = true;
	}
	if (s->dead) {
		/* Commands still in flight never complete: count them. */
		s->errors += s->inflight;
		s->stop = true;
	}
}

static int read_capacity(struct sess *s)
{
	struct scsi_task *t;

	t = iscsi_readcapacity16_sync(s->ctx, s->lun);
	if (t && t->status == SCSI_STATUS_GOOD) {
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		if (rc) {
			s->block_size = rc->block_length;
			s->n_blocks = rc->returned_lba + 1;
		}
	}
	if (t)
		scsi_free_scsi_task(t);
	if (s->block_size == 0) {
		t = iscsi_readcapacity10_sync(s->ctx, s->lun, 0, 0);
		if (t && t->status == SCSI_STATUS_GOOD) {
			struct scsi_readcapacity10 *rc = scsi_datain_unmarshall(t);

			if (rc) {
				s->block_size = rc->block_size;
				s->n_blocks = (uint64_t)rc->lba + 1;
			}
		}
		if (t)
			scsi_free_scsi_task(t);
	}
	if (s->block_size == 0 || s->n_blocks == 0) {
		sess_error(s, "READ CAPACITY", iscsi_get_error(s->ctx));
		return -EIO;
	}
	return 0;
}

static int sess_setup(struct sess *s)
{
	const struct opts *o = s->o;
	struct iscsi_url *url;
	uint64_t span, isid;
	unsigned i;
	int ret;

	s->ctx = iscsi_create_context(o->initiator);
	if (!s->ctx) {
		sess_error(s, "libiscsi", "cannot create a context");
		return -ENOMEM;
	}
	url = iscsi_parse_full_url(s->ctx, s->url_str);
	if (!url) {
		sess_error(s, "bad URL", iscsi_get_error(s->ctx));
		ret = -EINVAL;
		goto destroy_ctx;
	}
	/* Each session gets its own random ISID: two sessions of this process
	 * to one target must not reinstate each other. */
	if (getrandom(&isid, sizeof(isid), 0) != sizeof(isid))
		isid = conf_mono_ns() ^ ((uint64_t)getpid() << 20) ^ s->idx;
	iscsi_set_isid_random(s->ctx, (uint32_t)isid & 0xffffff, (uint32_t)(isid >> 32) & 0xffff);
	iscsi_set_targetname(s->ctx, url->target);
	iscsi_set_session_type(s->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(s->ctx, ISCSI_HEADER_DIGEST_NONE);
	/* A connection loss is a benchmark error, not something to hide by
	 * logging in again. */
	iscsi_set_noautoreconnect(s->ctx, 1);
	if (o->timeout_s)
		iscsi_set_timeout(s->ctx, (int)o->timeout_s);
	if (url->user[0] &&
	    iscsi_set_initiator_username_pwd(s->ctx, url->user, url->passwd) != 0) {
		sess_error(s, "CHAP", iscsi_get_error(s->ctx));
		ret = -EINVAL;
		goto free_url;
	}
	if (url->target_user[0] &&
	    iscsi_set_target_username_pwd(s->ctx, url->target_user, url->target_passwd) != 0) {
		sess_error(s, "mutual CHAP", iscsi_get_error(s->ctx));
		ret = -EINVAL;
		goto free_url;
	}
	s->lun = url->lun;
	if (iscsi_full_connect_sync(s->ctx, url->portal, url->lun) != 0) {
		sess_error(s, "login", iscsi_get_error(s->ctx));
		ret = -ECONNREFUSED;
		goto free_url;
	}
	iscsi_destroy_url(url);
	url = NULL;

	ret = read_capacity(s);
	if (ret < 0)
		goto destroy_ctx;
	if (o->bs % s->block_size) {
		char d[96];

		snprintf(d, sizeof(d), "--bs %" PRIu64 " is not a multiple of the %u-byte block",
			 o->bs, s->block_size);
		sess_error(s, "setup", d);
		ret = -EINVAL;
		goto destroy_ctx;
	}
	span = s->n_blocks * s->block_size;
	if (o->span) {
		if (o->span > span) {
			char d[96];

			snprintf(d, sizeof(d), "--span %" PRIu64 " exceeds the LUN (%" PRIu64 " bytes)",
				 o->span, span);
			sess_error(s, "setup", d);
			ret = -EINVAL;
			goto destroy_ctx;
		}
		span = o->span;
	}
	s->io_blocks = o->bs / s->block_size;
	s->n_chunks = span / o->bs;
	if (s->n_chunks == 0) {
		sess_error(s, "setup", "the span is smaller than one --bs");
		ret = -EINVAL;
		goto destroy_ctx;
	}
	if (o->verify) {
		s->written = calloc((size_t)(s->n_chunks + 7) / 8, 1);
		if (!s->written) {
			ret = -ENOMEM;
			goto destroy_ctx;
		}
	}
	s->slots = calloc(o->qd, sizeof(*s->slots));
	if (!s->slots) {
		ret = -ENOMEM;
		goto destroy_ctx;
	}
	for (i = 0; i < o->qd; i++) {
		s->slots[i].s = s;
		if (posix_memalign((void **)&s->slots[i].buf, 4096, o->bs) != 0) {
			sess_error(s, "setup", "out of memory for I/O buffers");
			ret = -ENOMEM;
			goto destroy_ctx;
		}
		memset(s->slots[i].buf, 0, o->bs);
	}
	return 0;

free_url:
	iscsi_destroy_url(url);
destroy_ctx:
	iscsi_destroy_context(s->ctx);
	s->ctx = NULL;
	return ret;
}

static void sess_teardown(struct sess *s)
{
	unsigned i;

	if (s->ctx) {
		if (!s->dead)
			iscsi_logout_sync(s->ctx);
		/* Runs the callbacks of anything still queued (as cancelled). */
		iscsi_destroy_context(s->ctx);
		s->ctx = NULL;
	}
	if (s->slots)
		for (i = 0; i < s->o->qd; i++)
			free(s->slots[i].buf);
	free(s->slots);
	s->slots = NULL;
	free(s->written);
	s->written = NULL;
}

static void *sess_thread(void *arg)
{
	struct sess *s = arg;
	uint64_t deadline = 0;

	if (sess_setup(s) == 0) {
		s->state = S_READY;
		if (s->o->prefill) {
			run_phase(s, PH_PREFILL, 0);
			if (s->dead || s->errors)
				s->state = S_FAILED;
		}
	} else {
		s->errors++;
		s->state = S_FAILED;
	}
	pthread_barrier_wait(&g_ready);
	pthread_barrier_wait(&g_go);
	if (s->state == S_READY && !g_abort) {
		s->state = S_RUNNING;
		if (s->o->time_s > 0)
			deadline = g_t_start + (uint64_t)(s->o->time_s * 1e9);
		s->t_end = g_t_start;
		run_phase(s, PH_RUN, deadline);
		if (sess_check(s) < 0 && !s->dead)
			sess_error(s, "internal", "slot accounting broken");
	}
	sess_teardown(s);
	/* main polls this to know when to stop printing progress */
	__atomic_store_n(&s->state, S_DONE, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtgt-bench --url iscsi://HOST[:PORT]/IQN/LUN [--url ...]\n"
		"                  --pattern seqwrite|seqread|randrw [options]\n"
		"\n"
		"Drives one iSCSI session per --url (libiscsi), each keeping --qd READ(16)\n"
		"or WRITE(16) commands in flight, and reports MB/s (10^6 bytes), IOPS and\n"
		"p50/p99/p99.9 latency per session and in total. CHAP: put USER%%PASSWORD@\n"
		"before HOST in the URL (see libiscsi's URL format).\n"
		"\n"
		"  --url URL            a session (repeatable)\n"
		"  --pattern P          seqwrite, seqread or randrw\n"
		"  --bs SIZE            I/O size, e.g. 4K, 1M (default 1M); a multiple of\n"
		"                       the LUN's block size\n"
		"  --qd N               commands in flight per session (default 8)\n"
		"  --time SECONDS       run time (default 10 unless --bytes is given)\n"
		"  --bytes SIZE         stop each session after this much I/O\n"
		"  --rwmix PERCENT      randrw: share of reads, 0-100 (default 70)\n"
		"  --span SIZE          use only the first SIZE bytes of each LUN\n"
		"  --prefill            write the whole span sequentially first (not timed)\n"
		"  --verify             write stamped data (LBA + seed) and check reads\n"
		"  --seed N             stamp seed for --verify (default fixed, so a\n"
		"                       later seqread --verify checks an earlier write)\n"
		"  --timeout SECONDS    per-command timeout (default 30, 0 = none)\n"
		"  --initiator-name IQN (default " DEFAULT_INITIATOR ")\n"
		"  --json               print one JSON object instead of the table\n"
		"  --quiet              no progress line on stderr\n"
		"  --help               this text\n"
		"\n"
		"SIZE takes K, M, G, T suffixes (powers of 1024). Exit status: 0 on success,\n"
		"1 when any command failed, a session could not log in or lost its\n"
		"connection, or --verify found bad data; 2 on bad usage.\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] != '\0' && !(end[1] == 'i' && end[2] == 'B' && end[3] == '\0') &&
	    !(end[1] == 'B' && end[2] == '\0'))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int bad_opt(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "rtgt-bench: %s '%s': %s\n", opt, val, why);
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "time", required_argument, NULL, 't' },
		{ "bytes", required_argument, NULL, 'B' },
		{ "rwmix", required_argument, NULL, 'm' },
		{ "span", required_argument, NULL, 's' },
		{ "prefill", no_argument, NULL, 'P' },
		{ "verify", no_argument, NULL, 'V' },
		{ "seed", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "initiator-name", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_pattern = false, have_time = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->bs = 1 << 20;
	o->qd = 8;
	o->rwmix = 70;
	o->seed = DEFAULT_SEED;
	o->timeout_s = 30;
	o->initiator = DEFAULT_INITIATOR;
	o->urls = calloc((size_t)argc, sizeof(*o->urls));
	if (!o->urls)
		return -ENOMEM;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'u':
			if (strncmp(optarg, "iscsi://", 8) != 0)
				return bad_opt("--url", optarg, "must be iscsi://HOST[:PORT]/IQN/LUN");
			o->urls[o->n_urls++] = optarg;
			break;
		case 'p':
			if (strcmp(optarg, "seqwrite") == 0)
				o->pattern = PAT_SEQWRITE;
			else if (strcmp(optarg, "seqread") == 0)
				o->pattern = PAT_SEQREAD;
			else if (strcmp(optarg, "randrw") == 0)
				o->pattern = PAT_RANDRW;
			else
				return bad_opt("--pattern", optarg, "seqwrite, seqread or randrw");
			have_pattern = true;
			break;
		case 'b':
			if (parse_size(optarg, &o->bs) < 0 || o->bs == 0 || o->bs > (32u << 20))
				return bad_opt("--bs", optarg, "a size from 1 byte to 32M");
			break;
		case 'q':
			if (parse_uint(optarg, 1024, &o->qd) < 0 || o->qd == 0)
				return bad_opt("--qd", optarg, "a number from 1 to 1024");
			break;
		case 't':
			errno = 0;
			o->time_s = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(o->time_s > 0) || o->time_s > 1e6)
				return bad_opt("--time", optarg, "seconds, more than 0");
			have_time = true;
			break;
		case 'B':
			if (parse_size(optarg, &o->bytes) < 0 || o->bytes == 0)
				return bad_opt("--bytes", optarg, "a size above 0");
			break;
		case 'm':
			if (parse_uint(optarg, 100, &o->rwmix) < 0)
				return bad_opt("--rwmix", optarg, "a percentage 0-100");
			break;
		case 's':
			if (parse_size(optarg, &o->span) < 0 || o->span == 0)
				return bad_opt("--span", optarg, "a size above 0");
			break;
		case 'P':
			o->prefill = true;
			break;
		case 'V':
			o->verify = true;
			break;
		case 'S':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg)
				return bad_opt("--seed", optarg, "a number");
			break;
		case 'T':
			if (parse_uint(optarg, 3600, &o->timeout_s) < 0)
				return bad_opt("--timeout", optarg, "seconds, 0-3600");
			break;
		case 'i':
			if (!*optarg)
				return bad_opt("--initiator-name", optarg, "must not be empty");
			o->initiator = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'Q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		return bad_opt("argument", argv[optind], "unexpected");
	if (o->n_urls == 0) {
		fprintf(stderr, "rtgt-bench: at least one --url is needed (see --help)\n");
		return -EINVAL;
	}
	if (!have_pattern) {
		fprintf(stderr, "rtgt-bench: --pattern is needed (see --help)\n");
		return -EINVAL;
	}
	if (!have_time && !o->bytes)
		o->time_s = 10;
	return 0;
}

/* ---- report ---- */

struct summary {
	double secs, mbps, iops, p50, p99, p999, share;
	uint64_t bytes, ops, reads, writes, errors;
};

static void summarize(const struct hist *h, uint64_t bytes, uint64_t ops, double secs,
		      uint64_t total_bytes, struct summary *out)
{
	out->secs = secs;
	out->bytes = bytes;
	out->ops = ops;
	out->mbps = secs > 0 ? (double)bytes / 1e6 / secs : 0;
	out->iops = secs > 0 ? (double)ops / secs : 0;
	out->p50 = hist_pct_ms(h, 50);
	out->p99 = hist_pct_ms(h, 99);
	out->p999 = hist_pct_ms(h, 99.9);
	out->share = total_bytes ? (double)bytes / (double)total_bytes : 0;
}

/* A double with a fixed number of decimals in the JSON text. */
static struct json_object *jdouble(double v, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

static struct json_object *json_summary(const struct summary *m, const char *url)
{
	struct json_object *o = json_object_new_object(), *lat = json_object_new_object();

	if (url)
		json_object_object_add(o, "url", json_object_new_string(url));
	json_object_object_add(o, "mbps", jdouble(m->mbps, 2));
	json_object_object_add(o, "iops", jdouble(m->iops, 1));
	json_object_object_add(lat, "p50", jdouble(m->p50, 3));
	json_object_object_add(lat, "p99", jdouble(m->p99, 3));
	json_object_object_add(lat, "p999", jdouble(m->p999, 3));
	json_object_object_add(o, "lat_ms", lat);
	json_object_object_add(o, "share", jdouble(m->share, 4));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)m->bytes));
	json_object_object_add(o, "ops", json_object_new_int64((int64_t)m->ops));
	json_object_object_add(o, "reads", json_object_new_int64((int64_t)m->reads));
	json_object_object_add(o, "writes", json_object_new_int64((int64_t)m->writes));
	json_object_object_add(o, "errors", json_object_new_int64((int64_t)m->errors));
	json_object_object_add(o, "seconds", jdouble(m->secs, 3));
	return o;
}

static void print_row(const char *name, const char *url, const struct summary *m)
{
	printf("%-7s %-44s %10.1f %10.0f %8.3f %8.3f %8.3f %6.1f%% %6" PRIu64 "\n", name, url,
	       m->mbps, m->iops, m->p50, m->p99, m->p999, m->share * 100, m->errors);
}

static int report(const struct opts *o, struct sess *ss, unsigned n)
{
	struct summary *sm;
	struct summary tot = { 0 };
	struct hist *all;
	uint64_t total_bytes = 0, total_ops = 0, t_end = g_t_start, errs = 0, verr = 0, vblk = 0;
	unsigned i;

	sm = calloc(n, sizeof(*sm));
	all = calloc(1, sizeof(*all));
	if (!sm || !all) {
		free(sm);
		free(all);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		total_bytes += ss[i].bytes;
		total_ops += ss[i].ops;
		if (ss[i].t_end > t_end)
			t_end = ss[i].t_end;
		hist_merge(all, &ss[i].h);
	}
	for (i = 0; i < n; i++) {
		double secs = ss[i].t_end > g_t_start ? (double)(ss[i].t_end - g_t_start) / 1e9 : 0;

		summarize(&ss[i].h, ss[i].bytes, ss[i].ops, secs, total_bytes, &sm[i]);
		sm[i].reads = ss[i].reads;
		sm[i].writes = ss[i].writes;
		sm[i].errors = ss[i].errors + ss[i].verify_errors;
		errs += ss[i].errors;
		verr += ss[i].verify_errors;
		vblk += ss[i].verified_blocks;
	}
	summarize(all, total_bytes, total_ops, (double)(t_end - g_t_start) / 1e9, total_bytes, &tot);
	tot.reads = 0;
	tot.writes = 0;
	for (i = 0; i < n; i++) {
		tot.reads += ss[i].reads;
		tot.writes += ss[i].writes;
	}
	tot.errors = errs + verr;

	if (o->json) {
		struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
		struct json_object *t;

		for (i = 0; i < n; i++) {
			struct json_object *js = json_summary(&sm[i], ss[i].url_str);

			if (ss[i].err[0])
				json_object_object_add(js, "error", json_object_new_string(ss[i].err));
			json_object_array_add(arr, js);
		}
		json_object_object_add(root, "sessions", arr);
		t = json_summary(&tot, NULL);
		if (o->verify) {
			json_object_object_add(t, "verified_blocks", json_object_new_int64((int64_t)vblk));
			json_object_object_add(t, "verify_errors", json_object_new_int64((int64_t)verr));
		}
		json_object_object_add(root, "total", t);
		json_object_object_add(root, "pattern", json_object_new_string(pattern_name(o->pattern)));
		json_object_object_add(root, "bs", json_object_new_int64((int64_t)o->bs));
		json_object_object_add(root, "qd", json_object_new_int((int)o->qd));
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(root);
	} else {
		printf("pattern %s, bs %" PRIu64 ", qd %u, %u session%s, %.1f s\n",
		       pattern_name(o->pattern), o->bs, o->qd, n, n == 1 ? "" : "s", tot.secs);
		if (o->pattern == PAT_RANDRW)
			printf("rwmix %u%% reads: %" PRIu64 " reads, %" PRIu64 " writes\n", o->rwmix,
			       tot.reads, tot.writes);
		printf("%-7s %-44s %10s %10s %8s %8s %8s %7s %6s\n", "session", "url", "MB/s",
		       "IOPS", "p50 ms", "p99 ms", "p99.9ms", "share", "errors");
		for (i = 0; i < n; i++) {
			char name[16];

			snprintf(name, sizeof(name), "%u", i + 1);
			print_row(name, ss[i].url_str, &sm[i]);
		}
		if (n > 1)
			print_row("total", "", &tot);
		if (o->verify)
			printf("verify: %" PRIu64 " blocks checked, %" PRIu64 " bad\n", vblk, verr);
	}
	for (i = 0; i < n; i++)
		if (ss[i].err[0])
			fprintf(stderr, "rtgt-bench: session %u (%s): %s\n", i + 1, ss[i].url_str,
				ss[i].err);
	free(sm);
	free(all);
	return (errs || verr) ? 1 : 0;
}

static void on_signal(int sig)
{
	(void)sig;
	g_interrupted = 1;
}

static void progress(const struct opts *o, struct sess *ss, unsigned n, uint64_t *last_bytes,
		     uint64_t *last_ops, uint64_t *last_t)
{
	uint64_t b = 0, ops = 0, t = conf_mono_ns();
	double dt = (double)(t - *last_t) / 1e9;
	unsigned i;

	for (i = 0; i < n; i++) {
		b += __atomic_load_n(&ss[i].bytes, __ATOMIC_RELAXED);
		ops += __atomic_load_n(&ss[i].ops, __ATOMIC_RELAXED);
	}
	if (!o->quiet && dt > 0)
		fprintf(stderr, "[%5.0fs] %9.1f MB/s %9.0f IOPS\n", (double)(t - g_t_start) / 1e9,
			(double)(b - *last_bytes) / 1e6 / dt, (double)(ops - *last_ops) / dt);
	*last_bytes = b;
	*last_ops = ops;
	*last_t = t;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sess *ss;
	struct sigaction sa;
	unsigned i, started = 0;
	bool any_failed = false;
	int ret;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	ss = calloc(o.n_urls, sizeof(*ss));
	if (!ss) {
		fprintf(stderr, "rtgt-bench: out of memory\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	pthread_barrier_init(&g_ready, NULL, o.n_urls + 1);
	pthread_barrier_init(&g_go, NULL, o.n_urls + 1);
	for (i = 0; i < o.n_urls; i++) {
		ss[i].o = &o;
		ss[i].url_str = o.urls[i];
		ss[i].idx = i;
		ss[i].rng = o.seed ^ (0x9e3779b97f4a7c15ull * (i + 1));
		if (ss[i].rng == 0)
			ss[i].rng = 1;
		if (pthread_create(&ss[i].th, NULL, sess_thread, &ss[i]) != 0) {
			fprintf(stderr, "rtgt-bench: cannot start a thread\n");
			/* the barriers count on every thread: give up hard */
			exit(1);
		}
		started++;
	}

	pthread_barrier_wait(&g_ready);
	for (i = 0; i < o.n_urls; i++)
		if (ss[i].state == S_FAILED)
			any_failed = true;
	g_abort = any_failed || g_interrupted;
	g_t_start = conf_mono_ns();
	pthread_barrier_wait(&g_go);

	if (!g_abort) {
		uint64_t lb = 0, lo_ = 0, lt = g_t_start;
		bool running = true;

		while (running) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			uint64_t t;

			nanosleep(&ts, NULL);
			running = false;
			for (i = 0; i < o.n_urls; i++)
				if (__atomic_load_n(&ss[i].state, __ATOMIC_ACQUIRE) != S_DONE)
					running = true;
			t = conf_mono_ns();
			if (running && t - lt >= 1000000000ull)
				progress(&o, ss, o.n_urls, &lb, &lo_, &lt);
		}
	}
	for (i = 0; i < started; i++)
		pthread_join(ss[i].th, NULL);
	pthread_barrier_destroy(&g_ready);
	pthread_barrier_destroy(&g_go);

	if (g_abort) {
		for (i = 0; i < o.n_urls; i++)
			if (ss[i].err[0])
				fprintf(stderr, "rtgt-bench: session %u (%s): %s\n", i + 1,
					ss[i].url_str, ss[i].err);
		if (g_interrupted)
			fprintf(stderr, "rtgt-bench: interrupted before the run\n");
		ret = 1;
	} else {
		ret = report(&o, ss, o.n_urls);
		if (ret < 0) {
			fprintf(stderr, "rtgt-bench: out of memory\n");
			ret = 1;
		}
		if (g_interrupted)
			fprintf(stderr, "rtgt-bench: interrupted; results cover the time run\n");
	}
	free(ss);
	free(o.urls);
	return ret;
}
