/*
 * tests/net/test_net_raid.c - the RAID engine seen through iSCSI: a real
 * bin/rtgtd on raid1/5/6/10 pools of small member files, driven with libiscsi
 * and bin/rtgtctl (fail, add-spare, scrub, status --json), like an operator
 * would.
 *
 * 01 data written while optimal reads back after members fail (raid6 and
 *    raid1-3 lose two, raid10 one per mirror pair); status says "degraded"
 *    and "faulty".
 * 02 writes made while degraded read back degraded, and after add-spare +
 *    rebuild; then other original members fail and everything still reads
 *    back (the rebuilt members hold the right data).
 * 03 the same with spares from the configuration (automatic rebuild).
 * 04 member I/O cost counted by the engine: sequential 1 MiB writes at queue
 *    depth 1 and 8 cost n/(n-parity) member writes and no reads; 4 KiB
 *    random writes on raid5 cost at most 2 reads + 2 writes each.
 * 05 raid5 beyond redundancy: READ gets CHECK CONDITION, the daemon lives.
 * 06 scrub finds a corruption made in a member file, --repair fixes it.
 * 07 rtgtctl remove: refused for an active member; a failed member removed
 *    is no longer listed (its slot shows "(removed)", "empty"), member
 *    latency shows in stats; a restart with the file still configured
 *    starts degraded; add-spare then rebuilds into the slot.
 *
 * Every check reads the whole LUN and compares it with a shadow copy kept by
 * the test, so nothing is compared against data the test did not write.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define MEMBER_SIZE "32M"
#define DATA_OFF    (1u << 20)   /* raid/README.md: member data starts at 1 MiB */
#define CHUNK       65536u
#define WAIT_MS     60000

static struct harness_daemon D;

/* The LUN as the test believes it is: every write goes here too. */
static struct {
	struct iscsi_context *c;
	uint64_t blocks;
	uint32_t bs;
	uint8_t *shadow;      /* blocks * bs bytes, owned, NULL before lun_open() */
} L;

static void setup(void)
{
	nf_setup(&D);
	memset(&L, 0, sizeof(L));
}

static void teardown(void)
{
	harness_iscsi_logout(L.c);
	L.c = NULL;
	free(L.shadow);
	L.shadow = NULL;
	harness_fini(&D);
}

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- configuration and daemon ---- */

/*
 * Pool "p" of @level with @n members dN.img and @nspares spares sN.img,
 * chunk 64K, 32 MiB members, unlimited rebuild rate.
 */
static void write_conf(const char *level, unsigned n, unsigned nspares)
{
	char members[256], spares[256];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", n), 0);
	ck_assert_int_eq(harness_img_list(spares, sizeof(spares), "s", nspares), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"%s\"; chunk = \"64K\";\n"
		"            members = ( %s );\n"
		"            %s%s%s\n"
		"            create_size = \"" MEMBER_SIZE "\"; rebuild_mbps = 0; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		level, members, nspares ? "spares = ( " : "", spares, nspares ? " );" : "",
		D.port, HARNESS_TARGET_DEFAULT), 0);
}

static void stop_expect_0(void)
{
	harness_iscsi_logout(L.c);
	L.c = NULL;
	nf_stop_expect_0(&D, NULL);
}

/* Logs in, reads the capacity and makes a zeroed shadow (a new thick volume
 * on fresh sparse members reads as zeros). */
static void lun_open(void)
{
	struct harness_login o = { 0 };

	L.c = nf_login(&D, 0, &o);
	nf_capacity(L.c, &L.blocks, &L.bs);
	if (!L.shadow) {
		L.shadow = calloc(L.blocks, L.bs);
		ck_assert_ptr_nonnull(L.shadow);
	}
}

static void lun_write(uint64_t lba, const uint8_t *buf, uint32_t len)
{
	struct scsi_task *t;

	ck_assert_msg(lba + len / L.bs <= L.blocks, "test bug: write past the end");
	t = iscsi_write16_sync(L.c, 0, lba, (unsigned char *)buf, len, (int)L.bs, 0, 0, 0, 0, 0);
	ck_assert_msg(t != NULL, "WRITE 16 lba %llu len %u: %s", (unsigned long long)lba, len,
		      iscsi_get_error(L.c));
	ck_assert_msg(t->status == SCSI_STATUS_GOOD,
		      "WRITE 16 lba %llu len %u: status %d sense key %d asc/ascq 0x%04x",
		      (unsigned long long)lba, len, t->status, t->sense.key, t->sense.ascq);
	scsi_free_scsi_task(t);
	memcpy(L.shadow + lba * L.bs, buf, len);
}

static void lun_sync_cache(void)
{
	struct scsi_task *t = iscsi_synchronizecache10_sync(L.c, 0, 0, 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "SYNCHRONIZE CACHE: %s",
		      iscsi_get_error(L.c));
	scsi_free_scsi_task(t);
}

/* Reads the whole LUN in 1 MiB pieces and compares it with the shadow. */
static void lun_verify(const char *when)
{
	const uint32_t piece = 1u << 20;
	uint64_t total = L.blocks * L.bs;

	for (uint64_t off = 0; off < total; off += piece) {
		uint32_t len = total - off < piece ? (uint32_t)(total - off) : piece;
		struct scsi_task *t = iscsi_read16_sync(L.c, 0, off / L.bs, len, (int)L.bs,
							0, 0, 0, 0, 0);

		ck_assert_msg(t != NULL, "%s: READ 16 at byte %llu: %s", when,
			      (unsigned long long)off, iscsi_get_error(L.c));
		if (t->status != SCSI_STATUS_GOOD)
			harness_dump_log(&D, stderr, 30);
		ck_assert_msg(t->status == SCSI_STATUS_GOOD,
			      "%s: READ 16 at byte %llu: status %d sense key %d asc/ascq 0x%04x",
			      when, (unsigned long long)off, t->status, t->sense.key, t->sense.ascq);
		ck_assert_msg(t->datain.size == (int)len, "%s: READ 16 at byte %llu: %d bytes",
			      when, (unsigned long long)off, t->datain.size);
		if (memcmp(t->datain.data, L.shadow + off, len)) {
			uint32_t i = 0;

			while (t->datain.data[i] == L.shadow[off + i])
				i++;
			ck_abort_msg("%s: LUN byte %llu (lba %llu) differs from what was written",
				     when, (unsigned long long)(off + i),
				     (unsigned long long)((off + i) / L.bs));
		}
		scsi_free_scsi_task(t);
	}
}

/*
 * Writes random data over roughly half of the LUN: 1 MiB..3 MiB and small
 * odd-sized commands at LBAs that are not stripe aligned, every @stride
 * bytes starting at @start.
 */
static void write_pattern(uint64_t seed, uint64_t start, uint64_t stride)
{
	static const uint32_t sizes[] = { 1u << 20, 512, 4096 + 512, 65536 + 512,
					  192 * 1024 + 4096, 700 * 1024, 3u << 20, 4096 };
	uint64_t total = L.blocks * L.bs, off = start;
	uint8_t *buf = malloc(3u << 20);

	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; off < total; i++, off += stride) {
		uint32_t len = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		uint64_t lba = off / L.bs + (i * 37) % 250;

		if (lba * L.bs + len > total)
			len = (uint32_t)(total - lba * L.bs);
		if (!len || lba >= L.blocks)
			break;
		harness_fill_random(buf, len, seed + i);
		lun_write(lba, buf, len);
	}
	/* the last block too */
	harness_fill_random(buf, L.bs, seed + 999);
	lun_write(L.blocks - 1, buf, L.bs);
	free(buf);
}

/* ---- rtgtctl ---- */

/* Runs rtgtctl and insists on exit 0. */
static void ctl_ok(const char *a1, const char *a2, const char *a3, const char *a4)
{
	static char out[8192];
	int rc = rj_ctl(&D, out, sizeof(out), a1, a2, a3, a4, (char *)NULL);

	if (rc)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(rc == 0, "rtgtctl %s %s %s %s exited %d: %s", a1, a2 ? a2 : "",
		      a3 ? a3 : "", a4 ? a4 : "", rc, out);
}

static void fail_member(const char *path)
{
	ctl_ok("fail", "p", path, NULL);
}

static void expect_states(const char *pool_state, const char *member, const char *mstate)
{
	struct json_object *root, *p = rj_status_pool(&D, "p", &root), *m;

	ck_assert_msg(!strcmp(rj_str(p, "state"), pool_state), "pool state \"%s\", expected \"%s\"",
		      rj_str(p, "state"), pool_state);
	if (member) {
		m = rj_member(p, member);
		ck_assert_msg(m != NULL, "status does not list member %s: %s", member,
			      json_object_to_json_string(p));
		ck_assert_msg(!strcmp(rj_str(m, "state"), mstate),
			      "member %s state \"%s\", expected \"%s\"", member, rj_str(m, "state"),
			      mstate);
	}
	json_object_put(root);
}

/* Polls status until pool "p" has state @want (and, with @scrub_done, the
 * scrub finished); bounded by WAIT_MS. */
struct pool_want {
	const char *state;
	bool scrub_done;
};

static bool pool_is(struct json_object *p, void *arg, char *last, size_t lastlen)
{
	const struct pool_want *w = arg;

	snprintf(last, lastlen, "state %s, scrub %s, rebuild_progress %s", rj_str(p, "state"),
		 rj_str(p, "scrub_state"), rj_str(p, "rebuild_progress"));
	return !strcmp(rj_str(p, "state"), w->state) &&
	       (!w->scrub_done || !strcmp(rj_str(p, "scrub_state"), "done"));
}

static void wait_pool(const char *want, bool scrub_done)
{
	struct pool_want w = { want, scrub_done };
	char last[128] = "";

	if (rj_wait_pool(&D, "p", WAIT_MS, pool_is, &w, last, sizeof(last)))
		return;
	harness_dump_log(&D, stderr, 30);
	ck_abort_msg("pool not \"%s\"%s after %d s (%s)", want, scrub_done ? " with scrub done" : "",
		     WAIT_MS / 1000, last);
}

/* ---- the levels ---- */

struct level {
	const char *tag;        /* tcase name suffix */
	const char *name;
	unsigned n;             /* members */
	unsigned nfail;         /* members failed first (d<fail[i]>.img) */
	unsigned fail[2];
	unsigned nother;        /* original members failed after the rebuild */
	unsigned other[2];
};

/* raid10 near-2 mirrors (0,1) and (2,3): losing 1 and 2 leaves one copy of
 * each; after the rebuild, losing 0 and 3 leaves only the rebuilt ones. */
static const struct level LV[] = {
	{ "raid1", "raid1", 3, 2, { 1, 2 }, 1, { 0 } },
	{ "raid5", "raid5", 4, 1, { 1 }, 1, { 0 } },
	{ "raid6", "raid6", 4, 2, { 1, 2 }, 2, { 0, 3 } },
	{ "raid10", "raid10", 4, 2, { 1, 2 }, 2, { 0, 3 } },
	/* one loss only, then its partner: the mirror path on its own */
	{ "raid10_one", "raid10", 4, 1, { 1 }, 1, { 0 } },
};

static char *dname(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "d%u.img", i);
	return buf;
}

static void fail_first(const struct level *lv)
{
	char name[32];

	for (unsigned i = 0; i < lv->nfail; i++)
		fail_member(dname(name, sizeof(name), lv->fail[i]));
	for (unsigned i = 0; i < lv->nfail; i++)
		expect_states("degraded", dname(name, sizeof(name), lv->fail[i]), "faulty");
}

static void fail_others(const struct level *lv, const char *when)
{
	char name[32], what[128];

	for (unsigned i = 0; i < lv->nother; i++)
		fail_member(dname(name, sizeof(name), lv->other[i]));
	expect_states("degraded", name, "faulty");
	snprintf(what, sizeof(what), "%s, then %u original member(s) failed", when, lv->nother);
	lun_verify(what);
}

/* 01: data written healthy reads back degraded */
static void degraded_read(const struct level *lv)
{
	write_conf(lv->name, lv->n, 0);
	nf_start(&D);
	lun_open();
	write_pattern(100, 0, 2u << 20);
	lun_verify("optimal");
	fail_first(lv);
	lun_verify("degraded");
	ck_assert_msg(harness_alive(&D), "rtgtd died");
	stop_expect_0();
}

/* 02: writes made degraded read back, also after add-spare + rebuild */
static void degraded_write(const struct level *lv)
{
	char path[256];
	int fd;

	write_conf(lv->name, lv->n, 0);
	nf_start(&D);
	lun_open();
	write_pattern(200, 0, 2u << 20);
	fail_first(lv);
	/* overlapping the first pattern partly, filling most of its gaps */
	write_pattern(300, 1u << 20, 3u << 19);
	lun_verify("written degraded");
	expect_states("degraded", NULL, NULL);
	for (unsigned i = 0; i < lv->nfail; i++) {
		snprintf(path, sizeof(path), "%s/s%u.img", D.dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		ck_assert_msg(fd >= 0 && ftruncate(fd, 32 << 20) == 0, "cannot make %s", path);
		close(fd);
		ctl_ok("add-spare", "p", path, NULL);
	}
	wait_pool("optimal", false);
	for (unsigned i = 0; i < lv->nfail; i++) {
		snprintf(path, sizeof(path), "s%u.img", i);
		expect_states("optimal", path, "active");
	}
	lun_verify("after the rebuild onto added spares");
	fail_others(lv, "after the rebuild onto added spares");
	stop_expect_0();
}

/* 03: rebuild onto configured spares */
static void spare_rebuild(const struct level *lv)
{
	char name[32];

	write_conf(lv->name, lv->n, lv->nfail);
	nf_start(&D);
	lun_open();
	expect_states("optimal", "s0.img", "spare");
	write_pattern(400, 0, 3u << 19);
	for (unsigned i = 0; i < lv->nfail; i++) {
		fail_member(dname(name, sizeof(name), lv->fail[i]));
		wait_pool("optimal", false);
		snprintf(name, sizeof(name), "s%u.img", i);
		expect_states("optimal", name, "active");
	}
	lun_verify("after the rebuild onto configured spares");
	fail_others(lv, "after the rebuild onto configured spares");
	stop_expect_0();
}

START_TEST(t01_degraded_read)
{
	degraded_read(&LV[_i]);
}
END_TEST

START_TEST(t02_degraded_write)
{
	degraded_write(&LV[_i]);
}
END_TEST

START_TEST(t03_spare_rebuild)
{
	spare_rebuild(&LV[_i]);
}
END_TEST

/* ---- 04: member I/O cost ---- */

struct counters {
	uint64_t rb, wb, ro, wo;   /* sums over the pool's members */
};

static struct counters counters(void)
{
	struct json_object *root, *p = rj_status_pool(&D, "p", &root), *ms;
	struct counters c = { 0, 0, 0, 0 };

	ck_assert(json_object_object_get_ex(p, "members", &ms));
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);

		c.rb += (uint64_t)rj_int(m, "read_bytes");
		c.wb += (uint64_t)rj_int(m, "write_bytes");
		c.ro += (uint64_t)rj_int(m, "read_ops");
		c.wo += (uint64_t)rj_int(m, "write_ops");
	}
	json_object_put(root);
	return c;
}

struct aio {
	struct scsi_task *task;
	bool done;
	int status;
};

static void aio_cb(struct iscsi_context *c, int status, void *command_data, void *priv)
{
	struct aio *a = priv;

	a->task = command_data;
	a->status = status;
	a->done = true;
}

/* Writes @mib MiB from byte @start in 1 MiB WRITE(16)s, @qd in flight. */
static void seq_write(uint64_t start, unsigned mib, unsigned qd, uint64_t seed)
{
	struct aio a[8];
	uint8_t *buf[8];
	unsigned next = 0, done = 0;
	uint64_t deadline = harness_now_ms() + 60000;

	ck_assert(qd >= 1 && qd <= 8);
	ck_assert_msg(start + ((uint64_t)mib << 20) <= L.blocks * L.bs, "test bug: too big");
	for (unsigned i = 0; i < qd; i++) {
		buf[i] = malloc(1u << 20);
		ck_assert_ptr_nonnull(buf[i]);
		a[i].done = true;
		a[i].task = NULL;
		a[i].status = 0;
	}
	while (done < mib) {
		struct pollfd pfd;

		for (unsigned s = 0; s < qd; s++) {
			if (!a[s].done)
				continue;
			if (a[s].task) {
				ck_assert_msg(a[s].status == SCSI_STATUS_GOOD,
					      "sequential WRITE 16: status %d", a[s].status);
				scsi_free_scsi_task(a[s].task);
				a[s].task = NULL;
				done++;
			}
			if (next < mib) {
				uint64_t off = start + ((uint64_t)next << 20);

				harness_fill_random(buf[s], 1u << 20, seed + next);
				memcpy(L.shadow + off, buf[s], 1u << 20);
				a[s].done = false;
				ck_assert_msg(iscsi_write16_task(L.c, 0, off / L.bs, buf[s], 1u << 20,
								 (int)L.bs, 0, 0, 0, 0, 0, aio_cb,
								 &a[s]) != NULL,
					      "cannot queue WRITE 16: %s", iscsi_get_error(L.c));
				next++;
			}
		}
		if (done >= mib)
			break;
		ck_assert_msg(harness_now_ms() < deadline, "sequential writes not done after 60 s");
		pfd.fd = iscsi_get_fd(L.c);
		pfd.events = (short)iscsi_which_events(L.c);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) < 0)
			continue;
		ck_assert_msg(iscsi_service(L.c, pfd.revents) == 0, "iscsi_service: %s",
			      iscsi_get_error(L.c));
	}
	for (unsigned i = 0; i < qd; i++)
		free(buf[i]);
}

/*
 * Sequential cost: member reads < 5% of the data, member writes within 10%
 * of data x n / (n - parity). The engine counts only data-path member I/O
 * (raid/ioctx.c accounts io_uring reads/writes; superblocks and the
 * write-intent bitmap are written with pwrite and are not in the counters).
 */
static void seq_cost(const char *level, unsigned npar, unsigned qd, uint64_t start,
		     unsigned mib)
{
	struct counters b, e;
	double data = (double)((uint64_t)mib << 20), want = data * 4.0 / (4.0 - npar);

	b = counters();
	seq_write(start, mib, qd, 7000 + qd);
	lun_sync_cache();   /* writes out rows the stripe cache still holds */
	e = counters();
	ck_assert_msg((double)(e.rb - b.rb) < 0.05 * data,
		      "%s qd %u: %u MiB sequential writes read %llu member bytes (>= 5%%)",
		      level, qd, mib, (unsigned long long)(e.rb - b.rb));
	ck_assert_msg((double)(e.wb - b.wb) >= 0.9 * want && (double)(e.wb - b.wb) <= 1.1 * want,
		      "%s qd %u: %u MiB sequential writes wrote %llu member bytes, expected "
		      "%.0f +- 10%%", level, qd, mib, (unsigned long long)(e.wb - b.wb), want);
}

START_TEST(t04_member_cost_raid5)
{
	uint64_t seed = 0x1234567;
	struct counters b, e, w0, w1;
	uint8_t buf[4096];
	unsigned maxr = 0, maxw = 0;
	const unsigned N = 500, EACH = 40;

	write_conf("raid5", 4, 0);
	nf_start(&D);
	lun_open();
	seq_cost("raid5", 1, 1, 0, 16);
	seq_cost("raid5", 1, 8, 16u << 20, 16);
	/* 4 KiB random writes: read old data + old parity, write both */
	b = counters();
	for (unsigned i = 0; i < N; i++) {
		uint64_t blk = rnd_next(&seed) % (L.blocks * L.bs / 4096);

		harness_fill_random(buf, sizeof(buf), 9000 + i);
		/* one rtgtctl run per write, not two: the counters after a
		 * write are those before the next (each run is a process; the
		 * sanitizer build on a loaded machine timed out at 80) */
		if (i == 0)
			w0 = b;
		lun_write(blk * 4096 / L.bs, buf, sizeof(buf));
		if (i < EACH) {
			w1 = counters();
			if (w1.ro - w0.ro > maxr)
				maxr = (unsigned)(w1.ro - w0.ro);
			if (w1.wo - w0.wo > maxw)
				maxw = (unsigned)(w1.wo - w0.wo);
			w0 = w1;
		}
	}
	e = counters();
	ck_assert_msg(maxr <= 2 && maxw <= 2, "one 4 KiB random write cost up to %u member reads "
		      "and %u member writes (at most 2 + 2 expected)", maxr, maxw);
	ck_assert_msg(e.ro - b.ro <= 2 * N && e.wo - b.wo <= 2 * N,
		      "%u 4 KiB random writes: %llu member reads, %llu member writes (<= %u each)",
		      N, (unsigned long long)(e.ro - b.ro), (unsigned long long)(e.wo - b.wo), 2 * N);
	ck_assert_msg(e.wb - b.wb <= 2ull * N * 4096 && e.rb - b.rb <= 2ull * N * 4096,
		      "%u 4 KiB random writes moved %llu bytes written / %llu read on members",
		      N, (unsigned long long)(e.wb - b.wb), (unsigned long long)(e.rb - b.rb));
	lun_verify("after the cost test");
	stop_expect_0();
}
END_TEST

START_TEST(t04_member_cost_raid6)
{
	write_conf("raid6", 4, 0);
	nf_start(&D);
	lun_open();
	seq_cost("raid6", 2, 1, 0, 16);
	seq_cost("raid6", 2, 8, 16u << 20, 16);
	lun_verify("after the cost test");
	stop_expect_0();
}
END_TEST

/* ---- 05: beyond redundancy ---- */

START_TEST(t05_beyond_redundancy)
{
	struct scsi_task *t;
	uint8_t buf[65536];
	static char out[4096];
	int rc;

	write_conf("raid5", 4, 0);
	nf_start(&D);
	lun_open();
	harness_fill_random(buf, sizeof(buf), 55);
	for (unsigned i = 0; i < 16; i++)
		lun_write((uint64_t)i * (1u << 20) / L.bs, buf, sizeof(buf));
	lun_sync_cache();
	fail_member("d1.img");
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "d2.img", (char *)NULL);
	ck_assert_msg(rc == 0, "failing a second raid5 member: rtgtctl exited %d: %s", rc, out);
	expect_states("failed", "d2.img", "faulty");
	for (unsigned i = 0; i < 16; i++) {
		t = iscsi_read16_sync(L.c, 0, (uint64_t)i * (1u << 20) / L.bs, sizeof(buf),
				      (int)L.bs, 0, 0, 0, 0, 0);
		ck_assert_msg(t != NULL, "READ 16 on a failed pool: no answer (%s)",
			      iscsi_get_error(L.c));
		ck_assert_msg(t->status == SCSI_STATUS_CHECK_CONDITION,
			      "READ 16 on a failed pool: status %d, expected CHECK CONDITION",
			      t->status);
		ck_assert_msg(t->sense.key == SCSI_SENSE_MEDIUM_ERROR ||
			      t->sense.key == SCSI_SENSE_HARDWARE_ERROR,
			      "READ 16 on a failed pool: sense key 0x%x, expected MEDIUM or "
			      "HARDWARE ERROR", t->sense.key);
		/* libiscsi leaves the sense data (2 + at most 252 bytes) in datain */
		ck_assert_msg(t->datain.size <= 254, "READ 16 on a failed pool returned %d bytes",
			      t->datain.size);
		scsi_free_scsi_task(t);
	}
	t = iscsi_write16_sync(L.c, 0, 0, buf, sizeof(buf), (int)L.bs, 0, 0, 0, 0, 0);
	ck_assert_msg(t && t->status == SCSI_STATUS_CHECK_CONDITION,
		      "WRITE 16 on a failed pool: status %d, expected CHECK CONDITION",
		      t ? t->status : -1);
	scsi_free_scsi_task(t);
	/* the daemon still serves: TEST UNIT READY answers, status works */
	t = iscsi_testunitready_sync(L.c, 0);
	ck_assert_msg(t != NULL, "TEST UNIT READY after failed reads: %s", iscsi_get_error(L.c));
	scsi_free_scsi_task(t);
	ck_assert_msg(harness_alive(&D), "rtgtd died");
	expect_states("failed", NULL, NULL);
	stop_expect_0();
}
END_TEST

/* ---- 06: scrub ---- */

static int member_rw(const char *name, bool write, void *buf, size_t len, uint64_t off)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", D.dir, name);
	fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);
	if (write)
		fdatasync(fd);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/*
 * Which member holds what in row @row: for each member, the index of the
 * LUN chunk of that row it holds (found by comparing the member file with
 * the shadow), or -1 for a parity chunk. Independent of the layout, which
 * the test does not want to know.
 */
static void row_map(unsigned n, unsigned ndata, uint64_t row, int *map)
{
	uint8_t *m = malloc(CHUNK);

	ck_assert_ptr_nonnull(m);
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		ck_assert_int_eq(member_rw(dname(name, sizeof(name), i), false, m, CHUNK,
					   DATA_OFF + row * CHUNK), 0);
		map[i] = -1;
		for (unsigned k = 0; k < ndata; k++)
			if (!memcmp(m, L.shadow + (row * ndata + k) * CHUNK, CHUNK))
				map[i] = (int)k;
	}
	free(m);
}

static uint64_t scrub(bool repair)
{
	struct json_object *root, *p;
	uint64_t mism;

	ctl_ok("scrub", "p", repair ? "--repair" : NULL, NULL);
	wait_pool("optimal", true);
	p = rj_status_pool(&D, "p", &root);
	mism = (uint64_t)rj_int(p, "scrub_mismatches");
	json_object_put(root);
	return mism;
}

enum victim { V_PARITY, V_DATA, V_SECOND };

/*
 * Writes data, finds the victim member of @row (V_PARITY: the raid5 parity
 * chunk, since a raid5 repair can only trust the data chunks; V_DATA: a data
 * chunk, which raid6 must locate; V_SECOND: d1, since a mirror repair copies
 * the first member), corrupts 4 KiB of it in the member file, and checks:
 * scrub finds mismatches, --repair fixes them, a second scrub finds none, and
 * the LUN reads back what was written.
 */
static void scrub_case(const char *level, unsigned n, unsigned ndata, uint64_t row,
		       enum victim how)
{
	static char log[1 << 16];
	unsigned victim = n;
	uint8_t junk[4096];
	char name[32], want[64];
	uint64_t mism;
	int map[8];

	write_conf(level, n, 0);
	nf_start(&D);
	lun_open();
	write_pattern(600, 0, 1u << 20);
	lun_sync_cache();
	ck_assert_int_eq(scrub(false), 0);
	if (how == V_SECOND) {
		victim = 1;
	} else {
		row_map(n, ndata, row, map);
		for (unsigned i = 0; i < n && victim == n; i++)
			if ((how == V_PARITY) == (map[i] < 0))
				victim = i;
		ck_assert_msg(victim < n, "%s row %llu: no %s chunk found in the member files",
			      level, (unsigned long long)row, how == V_PARITY ? "parity" : "data");
	}
	harness_fill_random(junk, sizeof(junk), 66);
	ck_assert_int_eq(member_rw(dname(name, sizeof(name), victim), true, junk, sizeof(junk),
				   DATA_OFF + row * CHUNK + 8192), 0);
	mism = scrub(false);
	ck_assert_msg(mism > 0, "%s: scrub after corrupting %s found no mismatch", level, name);
	if (how == V_DATA) {
		/* raid6 names the bad member (raid/rebuild.c: "bad member PATH") */
		snprintf(want, sizeof(want), "bad member %s", name);
		ck_assert_int_ge(harness_read_log(&D, log, sizeof(log)), 0);
		ck_assert_msg(strstr(log, want), "%s: the log does not name the bad member "
			      "(\"%s\")", level, want);
	}
	ck_assert_msg(scrub(true) > 0, "%s: the repairing scrub found no mismatch", level);
	mism = scrub(false);
	ck_assert_msg(mism == 0, "%s: %llu mismatches left after the repair", level,
		      (unsigned long long)mism);
	lun_verify("after scrub --repair");
	stop_expect_0();
}

START_TEST(t06_scrub_raid5)
{
	scrub_case("raid5", 4, 3, 5, V_PARITY);
}
END_TEST

START_TEST(t06_scrub_raid6)
{
	scrub_case("raid6", 4, 2, 5, V_DATA);
}
END_TEST

START_TEST(t06_scrub_raid1)
{
	scrub_case("raid1", 2, 1, 7, V_SECOND);
}
END_TEST

/* ---- 07: remove ---- */

START_TEST(t07_remove)
{
	static char out[8192];
	struct json_object *root, *p, *ms, *m;
	char path[256];
	unsigned with_io = 0;
	int rc, fd;

	write_conf("raid5", 4, 0);
	nf_start(&D);
	lun_open();
	write_pattern(700, 0, 2u << 20);
	rc = rj_ctl(&D, out, sizeof(out), "remove", "p", "d1.img", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "fail it first"),
		      "remove of an active member: exit %d: %s", rc, out);
	rc = rj_ctl(&D, out, sizeof(out), "remove", "p", "nosuch.img", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "no such member"),
		      "remove of an unknown member: exit %d: %s", rc, out);
	expect_states("optimal", "d1.img", "active");
	fail_member("d1.img");
	expect_states("degraded", "d1.img", "faulty");
	ctl_ok("remove", "p", "d1.img", NULL);
	p = rj_status_pool(&D, "p", &root);
	ck_assert_msg(rj_member(p, "d1.img") == NULL, "d1.img still listed after remove: %s",
		      json_object_to_json_string(p));
	ck_assert_msg(!strcmp(rj_str(p, "state"), "degraded"), "pool %s", rj_str(p, "state"));
	ck_assert(json_object_object_get_ex(p, "members", &ms));
	ck_assert_uint_eq(json_object_array_length(ms), 4);
	m = json_object_array_get_idx(ms, 1);
	ck_assert_str_eq(rj_str(m, "path"), "(removed)");
	ck_assert_str_eq(rj_str(m, "state"), "empty");
	json_object_put(root);
	rc = rj_ctl(&D, out, sizeof(out), "remove", "p", "1", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "already empty"), "second remove: exit %d: %s", rc,
		      out);
	lun_verify("after remove");
	/* member latency: every member that read has percentiles */
	p = rj_status_pool(&D, "p", &root);
	ck_assert(json_object_object_get_ex(p, "members", &ms));
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		m = json_object_array_get_idx(ms, i);
		if (rj_int(m, "read_ops") <= 0)
			continue;
		with_io++;
		ck_assert_msg(rj_int(m, "read_lat_p50_us") >= 1 &&
			      rj_int(m, "read_lat_p99_us") >= rj_int(m, "read_lat_p50_us"),
			      "member %s: read latency p50 %lld p99 %lld", rj_str(m, "path"),
			      (long long)rj_int(m, "read_lat_p50_us"),
			      (long long)rj_int(m, "read_lat_p99_us"));
	}
	json_object_put(root);
	ck_assert_uint_ge(with_io, 3);
	rc = rj_ctl(&D, out, sizeof(out), "stats", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "RD p99"), "stats: exit %d: %s", rc, out);
	/* d1.img is still in the configuration: a restart starts degraded */
	stop_expect_0();
	nf_start(&D);
	lun_open();
	expect_states("degraded", NULL, NULL);
	lun_verify("after a restart with the removed member configured");
	snprintf(path, sizeof(path), "%s/s0.img", D.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0 && ftruncate(fd, 32 << 20) == 0, "cannot make %s", path);
	close(fd);
	ctl_ok("add-spare", "p", path, NULL);
	wait_pool("optimal", false);
	expect_states("optimal", "s0.img", "active");
	lun_verify("after the rebuild into the removed slot");
	fail_member("d0.img");
	lun_verify("rebuilt member needed");
	stop_expect_0();
}
END_TEST

int main(void)
{
	const struct {
		const char *name;
		const TTest *fn;
		int loop;   /* > 0: one tcase per level of LV[] */
	} tests[] = {
		{ "01_degraded_read", t01_degraded_read, 1 },
		{ "02_degraded_write", t02_degraded_write, 1 },
		{ "03_spare_rebuild", t03_spare_rebuild, 1 },
		{ "04_member_cost_raid5", t04_member_cost_raid5, 0 },
		{ "04_member_cost_raid6", t04_member_cost_raid6, 0 },
		{ "05_beyond_redundancy", t05_beyond_redundancy, 0 },
		{ "06_scrub_raid5", t06_scrub_raid5, 0 },
		{ "06_scrub_raid6", t06_scrub_raid6, 0 },
		{ "06_scrub_raid1", t06_scrub_raid1, 0 },
		{ "07_remove", t07_remove, 0 },
	};
	enum { NT = sizeof(tests) / sizeof(tests[0]), NL = sizeof(LV) / sizeof(LV[0]) };
	/* Check keeps the pointer: the names must outlive the suite (static,
	 * not strdup: LeakSanitizer in make check SAN=1 reported those) */
	static char names[NT * NL][64];
	struct ck_case cases[NT * NL];
	unsigned nn = 0, nc = 0;

	for (size_t i = 0; i < NT; i++) {
		if (!tests[i].loop) {
			cases[nc++] = (struct ck_case)CK_CASE(tests[i].name, tests[i].fn);
			continue;
		}
		for (int l = 0; l < NL; l++) {
			char *name = names[nn++];

			snprintf(name, sizeof(names[0]), "%s_%s", tests[i].name, LV[l].tag);
			cases[nc++] = (struct ck_case)CK_CASE(name, tests[i].fn, .loop_start = l,
							      .loop_end = l + 1);
		}
	}
	return ck_main(&(struct ck_suite_def){
		"net_raid", .cases = cases, .ncases = nc, .setup = setup, .teardown = teardown,
		.timeout = 120 });
}
