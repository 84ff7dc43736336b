/* tests/unit/test_raid_hdd.c - HDD model (raid/hdd.c): gaps passed by
 * rotation, two sequential streams batched instead of seeking per request,
 * write cache absorbing a burst and FLUSH waiting for it, no read-ahead for
 * random reads while others wait, a re-write of sectors just read costing
 * one rotation (01-05: the default, write cache on); with write_cache =
 * false (06-09): writes done only after head time, the write-back of a
 * read-modify-write picked before farther queued reads, no free ride for an
 * idle head, FLUSH at once. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raid/member.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"

static char tmpdir[64];
static char path[128];
static char *paths[1] = { path };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-hdd-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/d0.img", tmpdir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(tmpdir);
}

static struct raid_pool *open_pool_wt(struct raid_vol **v, bool write_through)
{
	struct conf_pool cp;
	struct raid_pool *p;
	struct conf_size full = { .percent = 100 };

	memset(&cp, 0, sizeof(cp));
	cp.name = "hdd";
	cp.level = CONF_RAID0;
	cp.chunk = 65536;
	cp.members = cp.member_paths = paths;
	cp.n_members = 1;
	cp.create_size = 1ull << 30;
	cp.hdd.enabled = true;
	cp.hdd.mbps = 100;
	cp.hdd.avg_seek_ms = 8;
	cp.hdd.rpm = 7500;            /* rotation 8 ms */
	cp.hdd.write_through = write_through;
	ck_assert_int_eq(raid_pool_open(&cp, &p), 0);
	ck_assert_int_eq(raid_vol_open(p, "v", &full, v), 0);
	return p;
}

/* the default: the disks' write cache on */
static struct raid_pool *open_pool(struct raid_vol **v)
{
	return open_pool_wt(v, false);
}

struct slot {
	struct raid_io io;
	bool busy;
};

static void cb(struct raid_io *io)
{
	struct slot *s = io->arg;

	ck_assert_int_eq(io->result, 0);
	s->busy = false;
}

/* Run @n requests with up to @qd in flight; offsets from @offs. */
static double run(struct raid_vol *v, struct raid_ioctx *ctx, enum raid_op op, const uint64_t *offs,
		  unsigned n, uint64_t len, unsigned qd, uint8_t *buf)
{
	struct slot s[8];
	unsigned next = 0, busy;
	double t0 = now_s();

	memset(s, 0, sizeof(s));
	do {
		busy = 0;
		for (unsigned i = 0; i < qd; i++) {
			if (!s[i].busy && next < n) {
				memset(&s[i].io, 0, sizeof(s[i].io));
				s[i].io.op = op;
				s[i].io.off = offs[next++];
				s[i].io.len = len;
				s[i].io.buf = buf;
				s[i].io.cb = cb;
				s[i].io.arg = &s[i];
				s[i].busy = true;
				ck_assert_int_eq(raid_vol_submit(v, ctx, &s[i].io), 0);
			}
			busy += s[i].busy;
		}
		if (busy)
			raid_ioctx_wait(ctx, 100);
	} while (busy || next < n);
	return now_s() - t0;
}

/* 64 KiB reads skipping 64 KiB each: the gaps pass by rotation (2 x 0.65 ms
 * per request), not a seek + half rotation each (~ 12 ms) */
START_TEST(t01_forward_gap)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[100];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 100; i++)
		offs[i] = (512ull << 20) + i * 131072ull;
	el = run(v, ctx, RAID_OP_READ, offs, 100, 65536, 1, buf);
	/* 100 x (64K + 64K) / 100 MB/s = 0.13 s, plus the first seek */
	ck_assert_msg(el > 0.10 && el < 0.5, "gapped reads took %.3f s", el);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Two sequential readers far apart, interleaved request by request at qd 4:
 * batched, they cost about the transfer (64 MiB at 100 MB/s = 0.67 s) and a
 * few switches; one seek per request would add 128 x 12 ms = 1.5 s. */
START_TEST(t02_two_streams)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[64];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 64; i++)
		offs[i] = (i % 2 ? (600ull << 20) : 0) + (i / 2) * (1ull << 20);
	el = run(v, ctx, RAID_OP_READ, offs, 64, 1 << 20, 4, buf);
	ck_assert_msg(el > 0.6 && el < 1.2, "two streams took %.3f s", el);
	ck_assert_uint_lt(p->m[0]->hdd.n_switch, 20);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* 16 MiB of writes fit the write cache: acknowledged before the head could
 * write them; FLUSH then waits for the drain. "Before" is measured against
 * the model's own head time for the data (what a write-through disk would
 * make the writes wait), not a wall-clock constant: a loaded machine once
 * took 0.134 s for the cached writes against a 0.12 s bound. */
START_TEST(t03_write_cache_flush)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[16];
	struct slot f;
	double el, t0, head;
	uint64_t busy0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned i = 0; i < 16; i++)
		offs[i] = (256ull << 20) + i * (1ull << 20);
	busy0 = p->m[0]->hdd.n_busy_ns;
	el = run(v, ctx, RAID_OP_WRITE, offs, 16, 1 << 20, 4, buf);
	t0 = now_s();
	memset(&f, 0, sizeof(f));
	f.io.op = RAID_OP_FLUSH;
	f.io.cb = cb;
	f.io.arg = &f;
	f.busy = true;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &f.io), 0);
	while (f.busy)
		raid_ioctx_wait(ctx, 100);
	head = (double)(p->m[0]->hdd.n_busy_ns - busy0) / 1e9;
	ck_assert_msg(head > 0.15, "the head wrote 16 MiB in %.3f s of model time", head);
	ck_assert_msg(el < head, "cached writes took %.3f s, as long as the head needed to write "
		      "them (%.3f s): not acknowledged from the cache", el, head);
	el = now_s() - t0 + el;
	ck_assert_msg(el > 0.15, "writes + flush took only %.3f s", el);
	ck_assert_uint_eq(p->m[0]->hdd.dirty, 0);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Random reads at qd 8 where every second one lands 8 KiB after the one
 * before (as random I/O sometimes does): the pair looks like a stream for a
 * moment, but its read-ahead must not hold the head while other reads wait.
 * With it, every pair read ahead until its 32 MiB batch ended (0.3 s each,
 * ~10 s in all); without, 64 reads cost about 64 x 12 ms at most. */
START_TEST(t04_random_no_readahead)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[64];
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned k = 0; k < 32; k++) {
		offs[2 * k] = ((k * 613ull) % 900) << 20;
		offs[2 * k + 1] = offs[2 * k] + 8192;
	}
	el = run(v, ctx, RAID_OP_READ, offs, 64, 4096, 8, buf);
	ck_assert_msg(el < 2.0, "64 random reads took %.3f s", el);
	/* only an idle head may read ahead (after the last read: one segment) */
	ck_assert_msg(p->m[0]->hdd.n_ra_bytes <= (32ull << 20), "read ahead %llu bytes",
		      (unsigned long long)p->m[0]->hdd.n_ra_bytes);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

static void flush_wait(struct raid_vol *v, struct raid_ioctx *ctx)
{
	struct slot f;

	memset(&f, 0, sizeof(f));
	f.io.op = RAID_OP_FLUSH;
	f.io.cb = cb;
	f.io.arg = &f;
	f.busy = true;
	ck_assert_int_eq(raid_vol_submit(v, ctx, &f.io), 0);
	while (f.busy)
		raid_ioctx_wait(ctx, 100);
}

/* A write of the sectors just read (a read-modify-write's write-back) on an
 * idle disk: the head is on their track, they have just passed under it, so
 * they come round after about one rotation (8 ms here) - no seek, no half
 * rotation on average plus write settle. A write 512 MiB away pays
 * seek(512 MiB) + half a rotation + the settle: 9.8 + 4 + 1 ms. Measured
 * with the model's own positioning time (not wall time: timers run late on a
 * loaded machine). */
START_TEST(t05_rewrite_costs_rotation)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t off, pos0;
	double back_ms = 0, far_ms = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool(&v);
	for (unsigned k = 0; k < 4; k++) {
		off = (64ull + 40 * k) << 20;
		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		flush_wait(v, ctx);
		back_ms += (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6 / 4;

		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		off += 512ull << 20;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		flush_wait(v, ctx);
		far_ms += (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6 / 4;
	}
	ck_assert_msg(back_ms > 7.5 && back_ms < 8.1, "re-write positioning %.2f ms", back_ms);
	ck_assert_msg(far_ms > 14.0 && far_ms < 15.5, "far write positioning %.2f ms", far_ms);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Write-through: 16 MiB of sequential writes at qd 4 take the head's time
 * (16 MiB at 100 MB/s = 0.168 s; cached they were acknowledged in < 0.12 s,
 * test 03) and stream (no seek per request: well under 16 x 12 ms more);
 * the head wrote every byte, nothing is left dirty, and a
 * FLUSH afterwards costs no head time. A lone random 4 KiB write pays a seek
 * and half a rotation before it completes. */
START_TEST(t06_write_through_waits)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[16], busy0, wr0, pos0, off;
	double el;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool_wt(&v, true);
	for (unsigned i = 0; i < 16; i++)
		offs[i] = (256ull << 20) + i * (1ull << 20);
	wr0 = p->m[0]->hdd.n_wr_bytes;
	pos0 = p->m[0]->hdd.n_pos_ns;
	el = run(v, ctx, RAID_OP_WRITE, offs, 16, 1 << 20, 4, buf);
	ck_assert_msg(el > 0.16, "write-through writes took only %.3f s", el);
	/* streamed: one seek to the start, no seek or lost rotation per
	 * request (the model's own time: wall time is late on a loaded machine) */
	ck_assert_msg(p->m[0]->hdd.n_pos_ns - pos0 < 30000000ull, "sequential write positioning %.1f ms",
		      (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6);
	ck_assert_msg(el < 1.5, "sequential write-through writes took %.3f s", el);
	ck_assert_uint_eq(p->m[0]->hdd.n_wr_bytes - wr0, 16ull << 20);
	ck_assert_uint_eq(p->m[0]->hdd.dirty, 0);
	ck_assert_uint_eq(p->m[0]->hdd.n_ext, 0);

	off = 900ull << 20;
	pos0 = p->m[0]->hdd.n_pos_ns;
	el = now_s();
	run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
	el = now_s() - el;
	/* seek(644 MiB) = 8 * sqrt(644 / 341) = 11 ms, + 4 + 1 */
	ck_assert_msg(p->m[0]->hdd.n_pos_ns - pos0 > 14000000ull, "random write positioning %.2f ms",
		      (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6);
	ck_assert_msg(el > 0.014, "random write-through write done after %.4f s", el);

	busy0 = p->m[0]->hdd.n_busy_ns;
	el = now_s();
	flush_wait(v, ctx);
	el = now_s() - el;
	ck_assert_uint_eq(p->m[0]->hdd.n_busy_ns, busy0);
	ck_assert_msg(el < 0.5, "flush took %.3f s", el);   /* the real fsync only */
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Write-through: the write-back of sectors just read, queued behind the read
 * together with three reads 512 MiB away, goes first: the head reaches it
 * after about one rotation (8 ms less the 4 KiB just read) while the far
 * reads need seek(512 MiB) + half a rotation = 13.8 ms. An elevator that
 * always served reads first would send the head away and back (two seeks). */
START_TEST(t07_writeback_before_far_reads)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	struct slot s[5];
	unsigned order[5], n_done = 0;
	uint64_t off = 128ull << 20, pos0;
	double wb_ms;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool_wt(&v, true);
	/* the head to the region first, so the read below costs no long seek */
	run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
	off += 1ull << 20;
	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i < 5; i++) {
		s[i].io.op = i == 1 ? RAID_OP_WRITE : RAID_OP_READ;
		s[i].io.off = i < 2 ? off : off + (512ull << 20) + i * (8ull << 20);
		s[i].io.len = 4096;
		s[i].io.buf = buf + i * 4096;
		s[i].io.cb = cb;
		s[i].io.arg = &s[i];
		s[i].busy = true;
	}
	pos0 = p->m[0]->hdd.n_pos_ns;
	/* the read of the sectors, then the write-back and the three far reads
	 * while the read is in service. The write goes in right after the read:
	 * the model serves what has arrived by the time the head is free (about
	 * 5 ms after the read), and under the sanitizers on a busy machine a
	 * write sent after the far reads arrived too late (the CI SAN stage
	 * failed so: "write-back completed at 4, a far read at 1"). An elevator
	 * that serves reads first still sends the head away here. */
	ck_assert_int_eq(raid_vol_submit(v, ctx, &s[0].io), 0);
	ck_assert_int_eq(raid_vol_submit(v, ctx, &s[1].io), 0);
	for (unsigned i = 2; i < 5; i++)
		ck_assert_int_eq(raid_vol_submit(v, ctx, &s[i].io), 0);
	while (n_done < 5) {
		raid_ioctx_wait(ctx, 100);
		for (unsigned i = 0; i < 5; i++) {
			bool seen = false;

			for (unsigned k = 0; k < n_done; k++)
				seen |= order[k] == i;
			if (!s[i].busy && !seen)
				order[n_done++] = i;
		}
	}
	/* completions seen in one wait may come together: the write-back must
	 * not come after any far read */
	for (unsigned k = 0; k < 5; k++)
		if (order[k] == 1)
			for (unsigned j = k + 1; j < 5; j++)
				ck_assert_uint_ne(order[j], 0);
	ck_assert_msg(!(s[1].busy), "write-back not done");
	{
		unsigned pos_wb = 0, pos_far = 5;

		for (unsigned k = 0; k < 5; k++) {
			if (order[k] == 1)
				pos_wb = k;
			if (order[k] >= 2 && k < pos_far)
				pos_far = k;
		}
		ck_assert_msg(pos_wb < pos_far, "write-back completed at %u, a far read at %u",
			      pos_wb, pos_far);
	}
	/* read seek 1 MiB + 4 ms, write-back ~8 ms, far seek 13.8 ms, two near
	 * hops: about 1 + 4 + 8 + 13.8 + 2 x (3.9 + 4) = 42.6 ms; a head sent away
	 * and back first would add a seek(512 MiB) + half a rotation + settle */
	wb_ms = (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6;
	ck_assert_msg(wb_ms > 35.0 && wb_ms < 40.0, "positioning %.2f ms", wb_ms);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Write-through: a re-write of the sectors just read, sent when the read is
 * done (the host needs the read's data first), costs at most one rotation
 * (the sectors come round; how far they turned while the host worked is
 * taken off), never a seek (14.8 ms for the far write). */
START_TEST(t08_write_through_rewrite)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t off, pos0;
	double back_ms = 0, far_ms = 0;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool_wt(&v, true);
	for (unsigned k = 0; k < 4; k++) {
		off = (64ull + 40 * k) << 20;
		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		back_ms = (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6;
		ck_assert_msg(back_ms <= 8.0, "re-write positioning %.2f ms", back_ms);

		run(v, ctx, RAID_OP_READ, &off, 1, 4096, 1, buf);
		pos0 = p->m[0]->hdd.n_pos_ns;
		off += 512ull << 20;
		run(v, ctx, RAID_OP_WRITE, &off, 1, 4096, 1, buf);
		far_ms += (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6 / 4;
	}
	ck_assert_msg(far_ms > 14.0 && far_ms < 15.5, "far write positioning %.2f ms", far_ms);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

/* Write-through, one 64 KiB sequential write at a time (qd 1): between two
 * writes the head idles while the host completes one and sends the next,
 * the platter turns on and the next sectors must come round again - a disk
 * without write cache at qd 1 writes about one request per rotation, not
 * at mbps (32 x 0.66 ms = 21 ms). The same writes cached are acknowledged at
 * once. */
START_TEST(t09_write_through_qd1)
{
	struct raid_ioctx *ctx;
	struct raid_vol *v;
	struct raid_pool *p;
	uint8_t *buf = raid_alloc(1 << 20);
	uint64_t offs[32], pos0;
	double el, el_wt, pos_ms;

	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	p = open_pool_wt(&v, true);
	for (unsigned i = 0; i < 32; i++)
		offs[i] = (300ull << 20) + i * 65536ull;
	run(v, ctx, RAID_OP_WRITE, offs, 1, 65536, 1, buf);
	pos0 = p->m[0]->hdd.n_pos_ns;
	el = run(v, ctx, RAID_OP_WRITE, offs + 1, 31, 65536, 1, buf);
	pos_ms = (double)(p->m[0]->hdd.n_pos_ns - pos0) / 1e6;
	/* each waits 8 ms less the host's turnaround (tens of us here; a loaded
	 * machine can take longer, the platter then has turned further) */
	ck_assert_msg(pos_ms > 31 * 4.0, "31 qd-1 writes: positioning %.1f ms", pos_ms);
	ck_assert_msg(el > 31 * 0.004, "31 qd-1 writes took %.3f s", el);
	el_wt = el;
	raid_pool_close(p);

	p = open_pool(&v);
	el = run(v, ctx, RAID_OP_WRITE, offs + 1, 31, 65536, 1, buf);
	ck_assert_msg(el < el_wt / 2, "31 cached writes took %.3f s, write-through %.3f s", el, el_wt);
	raid_pool_close(p);
	raid_ioctx_destroy(ctx);
	free(buf);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_forward_gap", t01_forward_gap),
		CK_CASE("02_two_streams", t02_two_streams),
		CK_CASE("03_write_cache_flush", t03_write_cache_flush),
		CK_CASE("04_random_no_readahead", t04_random_no_readahead),
		CK_CASE("05_rewrite_costs_rotation", t05_rewrite_costs_rotation),
		CK_CASE("06_write_through_waits", t06_write_through_waits),
		CK_CASE("07_writeback_before_far_reads", t07_writeback_before_far_reads),
		CK_CASE("08_write_through_rewrite", t08_write_through_rewrite),
		CK_CASE("09_write_through_qd1", t09_write_through_qd1),
	};

	return ck_main(&(struct ck_suite_def){ "raid_hdd", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 30 });
}
