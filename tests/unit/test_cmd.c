/* tests/unit/test_cmd.c - target/iscsi/cmd.c: residual computation and the
 * Data-In split (MaxRecvDataSegmentLength, MaxBurstLength F bits), the
 * per-connection data buffer budget. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "target/iscsi/iscsi_int.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_residuals)
{
	uint8_t f;
	uint32_t n;

	iscsi_residual(4096, 4096, &f, &n);
	ck_assert_uint_eq(f, 0);
	ck_assert_uint_eq(n, 0);
	/* EDTL 10000 for one 512-byte block: underflow 9488 */
	iscsi_residual(10000, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_UNDERFLOW);
	ck_assert_uint_eq(n, 9488);
	/* EDTL 0 for one block: overflow 512 */
	iscsi_residual(0, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_OVERFLOW);
	ck_assert_uint_eq(n, 512);
	/* EDTL 200 for one block: overflow 312 */
	iscsi_residual(200, 512, &f, &n);
	ck_assert_uint_eq(f, ISCSI_FLAG_OVERFLOW);
	ck_assert_uint_eq(n, 312);
}
END_TEST

START_TEST(t02_datain_split)
{
	ck_assert_uint_eq(iscsi_datain_count(0, 8192), 0);
	ck_assert_uint_eq(iscsi_datain_count(1, 8192), 1);
	ck_assert_uint_eq(iscsi_datain_count(8192, 8192), 1);
	ck_assert_uint_eq(iscsi_datain_count(8193, 8192), 2);
	ck_assert_uint_eq(iscsi_datain_count(1 << 20, 262144), 4);
	/* default when the initiator declared nothing usable */
	ck_assert_uint_eq(iscsi_datain_count(16384, 0), 2);
}
END_TEST

START_TEST(t03_datain_final)
{
	/* last PDU always ends the sequence */
	ck_assert(iscsi_datain_final(0, 512, 512, 262144));
	ck_assert(iscsi_datain_final(8192, 8192, 16384, 262144));
	/* inside a burst: no F */
	ck_assert(!iscsi_datain_final(0, 8192, 16384, 262144));
	/* at a MaxBurstLength boundary: F */
	ck_assert(iscsi_datain_final(262144 - 8192, 8192, 1 << 20, 262144));
	ck_assert(!iscsi_datain_final(262144, 8192, 1 << 20, 262144));
}
END_TEST

/* A connection in full feature phase with just what iscsi_cmd_prepare()
 * looks at. */
struct fake {
	struct iscsi_server srv;
	struct iscsi_wstate w;
	struct iscsi_session sess;
	struct iscsi_conn c;
	struct scsi_target *targets[1];
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->sess.st = f->targets[0];
	f->w.srv = &f->srv;
	f->sess.type = ISCSI_SESSION_NORMAL;
	f->sess.target = 0;
	f->c.srv = &f->srv;
	f->c.w = &f->w;
	f->c.sess = &f->sess;
	f->c.state = CONN_FFP;
	iscsi_params_default(&f->c.params);
	strcpy(f->c.peer_str, "test");
}

static struct iscsi_req *read_req(uint32_t itt, uint32_t edtl)
{
	struct iscsi_req *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->bhs[0] = ISCSI_OP_SCSI_CMD;
	r->bhs[1] = ISCSI_FLAG_FINAL | ISCSI_CMD_READ | 1;
	conf_put_be32(r->bhs + ISCSI_OFF_ITT, itt);
	conf_put_be32(r->bhs + ISCSI_OFF_EDTL, edtl);
	r->bhs[ISCSI_OFF_CDB] = 0x88;    /* READ 16; never executed here */
	r->cmdsn = itt;
	return r;
}

START_TEST(t04_buffer_budget)
{
	enum { N = ISCSI_CONN_BUF_BUDGET / SCSI_MAX_XFER + 2 };
	struct iscsi_req *reqs[N];
	struct fake f;

	fake_init(&f);
	/* maximal reads fill the budget exactly, then TASK SET FULL */
	for (unsigned i = 0; i < N; i++) {
		reqs[i] = read_req(i + 1, SCSI_MAX_XFER);
		ck_assert_int_eq(iscsi_cmd_prepare(&f.c, reqs[i]), 0);
		ck_assert_ptr_nonnull(reqs[i]->task);
		if ((uint64_t)(i + 1) * SCSI_MAX_XFER <= ISCSI_CONN_BUF_BUDGET) {
			ck_assert_msg(!reqs[i]->task->early_status, "command %u refused", i);
			ck_assert_ptr_nonnull(reqs[i]->task->cmd.buf);
		} else {
			ck_assert_msg(reqs[i]->task->early_status, "command %u over budget ran", i);
			ck_assert_uint_eq(reqs[i]->task->cmd.status, SCSI_TASK_SET_FULL);
			ck_assert_ptr_null(reqs[i]->task->cmd.buf);
		}
	}
	ck_assert_uint_eq(f.c.buf_bytes, ISCSI_CONN_BUF_BUDGET);
	/* freeing gives the bytes back */
	for (unsigned i = 0; i < N; i++)
		iscsi_req_free(reqs[i]);
	ck_assert_uint_eq(f.c.buf_bytes, 0);
	ck_assert_uint_eq(f.c.n_tasks, 0);
	ck_assert_ptr_null(f.c.tasks);

	/* one command alone always gets its buffer, even over the budget's
	 * remainder: a small one still fits next to it */
	reqs[0] = read_req(1, SCSI_MAX_XFER);
	reqs[1] = read_req(2, 4096);
	ck_assert_int_eq(iscsi_cmd_prepare(&f.c, reqs[0]), 0);
	ck_assert_int_eq(iscsi_cmd_prepare(&f.c, reqs[1]), 0);
	ck_assert(!reqs[0]->task->early_status && !reqs[1]->task->early_status);
	ck_assert_uint_eq(f.c.buf_bytes, SCSI_MAX_XFER + 4096);
	iscsi_req_free(reqs[0]);
	iscsi_req_free(reqs[1]);
	ck_assert_uint_eq(f.c.buf_bytes, 0);
	/* the two buffers went to the worker's cache: a 4 KiB data-in
	 * command that is no READ (INQUIRY) reuses one zeroed, whatever it
	 * held */
	ck_assert_uint_eq(f.w.bufc_n[0], 1);
	/* (its first bytes link the cache: left as they are) */
	memset((uint8_t *)f.w.bufc[0] + sizeof(void *), 0xa5, 4096 - sizeof(void *));
	reqs[0] = read_req(3, 4096);
	reqs[0]->bhs[ISCSI_OFF_CDB] = 0x12;
	ck_assert(!scsi_cdb_fills_data_in(reqs[0]->bhs + ISCSI_OFF_CDB));
	ck_assert_int_eq(iscsi_cmd_prepare(&f.c, reqs[0]), 0);
	ck_assert_uint_eq(f.w.bufc_n[0], 0);
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(reqs[0]->task->cmd.buf[i], 0);
	iscsi_req_free(reqs[0]);
	iscsi_bufc_drop(&f.w);
	ck_assert_ptr_null(f.w.bufc[0]);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_residuals", t01_residuals),
		CK_CASE("02_datain_split", t02_datain_split),
		CK_CASE("03_datain_final", t03_datain_final),
		CK_CASE("04_buffer_budget", t04_buffer_budget),
	};

	return ck_main(&(struct ck_suite_def){ "cmd", CK_CASES(cases) });
}
