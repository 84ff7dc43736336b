/*
 * tests/unit/test_raid_fault.c - the fault-injection layer of a member's
 * I/O stack (raid/fault.c): with nothing configured every mio passes
 * through unchanged; injected read and write errors hit the chosen member
 * and range only; added latency holds completions at least as long as
 * configured; a torn write leaves its prefix on the medium and the rest as
 * it was, and reports the configured result; refused submissions.
 * Member I/Os go straight to raid_mio_submit() on a one-member raid0 pool,
 * and the medium is checked with pread() on the member file.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/fault.h"
#include "raid/member.h"
#include "raid/raid.h"
#include "raid/raid_int.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/raid_fixture.h"

static char tmpdir[64];
static char *paths[1];
static struct raid_pool *pool;
static struct raid_ioctx *ctx;
static struct raid_member *mem;
static bool in_submit;

static void setup(void)
{
	struct conf_pool cp;

	rf_dir_make(tmpdir, sizeof(tmpdir), "rtgt-fault");
	conf_log_set_level(CONF_LOG_ERROR);
	rf_paths_make(paths, 1, tmpdir, "f");
	rf_conf_pool(&cp, "flt", CONF_RAID0, 65536, paths, 1, 64u << 20);
	ck_assert_int_eq(raid_ioctx_create(&ctx), 0);
	ck_assert_int_eq(raid_pool_open(&cp, &pool), 0);
	mem = pool->m[0];
}

static void teardown(void)
{
	raid_pool_close(pool);
	raid_ioctx_destroy(ctx);
	rf_paths_drop(paths, 1);
	rmdir(tmpdir);
}

struct one {
	struct raid_mio mio;
	bool done;
	int res;
	double t_sub, t_done;
};

static void one_cb(struct raid_mio *mio, int res)
{
	struct one *o = mio->arg;

	ck_assert(!in_submit);     /* never inside the submit */
	o->done = true;
	o->res = res;
	o->t_done = rf_now_s();
}

/* Submit one member I/O on the member: 0 or the submission's -errno. */
static int start(struct one *o, int op, uint8_t *buf, uint64_t off, uint64_t len)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->mio.m = mem;
	o->mio.op = op;
	o->mio.buf = buf;
	o->mio.off = off;
	o->mio.len = len;
	o->mio.cb = one_cb;
	o->mio.arg = o;
	o->t_sub = rf_now_s();
	in_submit = true;
	rc = raid_mio_submit(ctx, &o->mio);
	in_submit = false;
	if (rc == 0)
		ck_assert(!o->done);
	return rc;
}

static int finish(struct one *o)
{
	for (int k = 0; !o->done && k < 200; k++)
		raid_ioctx_wait(ctx, 50);
	ck_assert(o->done);
	return o->res;
}

static int mio_io(int op, uint8_t *buf, uint64_t off, uint64_t len)
{
	struct one o;
	int rc = start(&o, op, buf, off, len);

	return rc ? rc : finish(&o);
}

static void medium(uint64_t off, uint8_t *out, size_t len)
{
	ck_assert_int_eq(pread(mem->fd_buf, out, len, (off_t)(RAID_DATA_OFF + off)), (ssize_t)len);
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + seed * 13 + i / 4096);
}

/* 01: nothing configured: the layer is in the stack and passes through */
START_TEST(t01_pass_through)
{
	uint8_t *w = raid_alloc(65536), *r = raid_alloc(65536);
	uint64_t wr0 = atomic_load(&mem->wr_bytes), rd0 = atomic_load(&mem->rd_bytes);

	ck_assert_ptr_eq(mem->io.below, &mem->fault.l);
	ck_assert_ptr_eq(mem->fault.l.below, raid_ioctx_mlayer());
	fill(w, 65536, 1);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, w, 1u << 20, 65536), 0);
	ck_assert_int_eq(mio_io(RAID_MIO_READ, r, 1u << 20, 65536), 0);
	ck_assert_mem_eq(r, w, 65536);
	medium(1u << 20, r, 65536);
	ck_assert_mem_eq(r, w, 65536);
	ck_assert_int_eq(mio_io(RAID_MIO_FSYNC, NULL, 0, 0), 0);
	/* the member layer above still counts them */
	ck_assert_uint_eq(atomic_load(&mem->wr_bytes) - wr0, 65536);
	ck_assert_uint_eq(atomic_load(&mem->rd_bytes) - rd0, 65536);
	/* a cleared fault is gone again */
	raid_fault_read_error(&mem->fault, 0, RAID_FAULT_ALL);
	raid_fault_clear(&mem->fault);
	ck_assert_int_eq(mio_io(RAID_MIO_READ, r, 1u << 20, 4096), 0);
	free(w);
	free(r);
}
END_TEST

/* 02: read error on a range: overlapping reads fail, others and writes
 * not; a write over the whole range clears it */
START_TEST(t02_read_error)
{
	uint8_t *b = raid_alloc(16384);
	uint64_t base = 2u << 20;

	fill(b, 16384, 2);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 16384), 0);
	raid_fault_read_error(&mem->fault, base + 4096, 4096);
	ck_assert(raid_fault_read_error_set(&mem->fault));
	ck_assert_int_eq(mio_io(RAID_MIO_READ, b, base, 16384), -EIO);      /* overlaps */
	ck_assert_int_eq(mio_io(RAID_MIO_READ, b, base + 6144, 512), -EIO); /* inside */
	ck_assert_int_eq(mio_io(RAID_MIO_READ, b, base, 4096), 0);          /* before */
	ck_assert_int_eq(mio_io(RAID_MIO_READ, b, base + 8192, 8192), 0);   /* after */
	/* a write of part of it does not remap it */
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base + 4096, 2048), 0);
	ck_assert(raid_fault_read_error_set(&mem->fault));
	/* one over all of it does */
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 16384), 0);
	ck_assert(!raid_fault_read_error_set(&mem->fault));
	ck_assert_int_eq(mio_io(RAID_MIO_READ, b, base, 16384), 0);
	free(b);
}
END_TEST

/* 03: write error on a range: the write reaches the medium, then fails */
START_TEST(t03_write_error)
{
	uint8_t *b = raid_alloc(8192), *m = raid_alloc(8192);
	uint64_t base = 3u << 20;

	raid_fault_write_error(&mem->fault, base, 8192);
	fill(b, 8192, 3);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base + 4096, 4096), -EIO);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base + 8192, 4096), 0);  /* after */
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base - 4096, 4096), 0);  /* before */
	ck_assert_int_eq(mio_io(RAID_MIO_READ, m, base, 8192), 0);          /* reads go on */
	medium(base + 4096, m, 4096);
	ck_assert_mem_eq(m, b, 4096);
	/* every write, then none */
	raid_fault_write_error(&mem->fault, 0, RAID_FAULT_ALL);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, 40u << 20, 4096), -EIO);
	raid_fault_write_error(&mem->fault, 0, 0);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 8192), 0);
	/* a refused submission: no callback, reads not counted */
	raid_fault_submit_error(&mem->fault, 2);
	ck_assert_int_eq(mio_io(RAID_MIO_READ, m, base, 4096), 0);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 4096), -ENOMEM);
	ck_assert_uint_eq(raid_fault_submit_errors_left(&mem->fault), 1);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 4096), -ENOMEM);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, b, base, 4096), 0);
	free(b);
	free(m);
}
END_TEST

/* 04: added latency: submission to callback at least what was set */
START_TEST(t04_latency)
{
	uint8_t *b = raid_alloc(4096);
	struct one o[4];
	double lat_r = 0.030, lat_w = 0.050;

	raid_fault_latency(&mem->fault, (uint64_t)(lat_r * 1e9), (uint64_t)(lat_w * 1e9));
	ck_assert_int_eq(start(&o[0], RAID_MIO_READ, b, 0, 4096), 0);
	ck_assert_int_eq(start(&o[1], RAID_MIO_WRITE, b, 65536, 4096), 0);
	ck_assert_int_eq(finish(&o[0]), 0);
	ck_assert_int_eq(finish(&o[1]), 0);
	ck_assert_msg(o[0].t_done - o[0].t_sub >= lat_r, "read %.4f s", o[0].t_done - o[0].t_sub);
	ck_assert_msg(o[1].t_done - o[1].t_sub >= lat_w, "write %.4f s",
		      o[1].t_done - o[1].t_sub);
	/* an error is held too, and stays an error */
	raid_fault_read_error(&mem->fault, 0, 4096);
	ck_assert_int_eq(start(&o[2], RAID_MIO_READ, b, 0, 4096), 0);
	ck_assert_int_eq(finish(&o[2]), -EIO);
	ck_assert(o[2].t_done - o[2].t_sub >= lat_r);
	/* none again: quick (well under the latency set before) */
	raid_fault_clear(&mem->fault);
	ck_assert_int_eq(start(&o[3], RAID_MIO_READ, b, 0, 4096), 0);
	ck_assert_int_eq(finish(&o[3]), 0);
	free(b);
}
END_TEST

/* 05: torn writes: the prefix lands, the rest keeps the old bytes, the
 * result is the configured one */
START_TEST(t05_torn_write)
{
	uint8_t *old = raid_alloc(16384), *nw = raid_alloc(16384), *m = raid_alloc(16384);
	uint64_t base = 5u << 20;
	static const struct { uint64_t prefix; int res; } cases[] = {
		{ 4096, -EIO }, { 1536, 0 }, { 0, -EIO }, { 65536, 0 },
	};

	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t keep = cases[c].prefix < 16384 ? cases[c].prefix : 16384;

		raid_fault_clear(&mem->fault);
		fill(old, 16384, 10 + c);
		fill(nw, 16384, 20 + c);
		ck_assert_int_eq(mio_io(RAID_MIO_WRITE, old, base, 16384), 0);
		raid_fault_torn_write(&mem->fault, base + 8192, 512, cases[c].prefix, cases[c].res);
		/* one that does not overlap the range is whole */
		ck_assert_int_eq(mio_io(RAID_MIO_WRITE, nw, base + 16384, 4096), 0);
		ck_assert_int_eq(mio_io(RAID_MIO_WRITE, nw, base, 16384), cases[c].res);
		medium(base, m, 16384);
		ck_assert_msg(memcmp(m, nw, keep) == 0, "case %u: prefix not on the medium", c);
		ck_assert_msg(memcmp(m + keep, old + keep, 16384 - keep) == 0,
			      "case %u: bytes past the prefix changed", c);
	}
	raid_fault_clear(&mem->fault);
	ck_assert_int_eq(mio_io(RAID_MIO_WRITE, nw, base, 16384), 0);
	medium(base, m, 16384);
	ck_assert_mem_eq(m, nw, 16384);
	free(old);
	free(nw);
	free(m);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_pass_through", t01_pass_through),
		CK_CASE("02_read_error", t02_read_error),
		CK_CASE("03_write_error", t03_write_error),
		CK_CASE("04_latency", t04_latency),
		CK_CASE("05_torn_write", t05_torn_write),
	};

	return ck_main(&(struct ck_suite_def){
		"raid_fault", CK_CASES(cases), .setup = setup, .teardown = teardown, .timeout = 30 });
}
