/*
 * tests/net/test_net_io.c - end to end I/O through libiscsi against a real
 * bin/rtgtd: capacity, write/read round trips of random data at several
 * offsets and sizes, persistence across a restart (data and VPD 0x83), two
 * concurrent sessions, out-of-range reads, and a read sent from the
 * members' memory to a peer that stops reading.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/raw_login.h"

static struct harness_daemon D;

static void setup(void)
{
	nf_setup(&D);
}

static void teardown(void)
{
	harness_fini(&D);
}

static void start_std(const char *level)
{
	ck_assert_int_eq(harness_conf_std(&D, level, NULL), 0);
	nf_start(&D);
}

static struct iscsi_context *login(uint32_t isid)
{
	struct harness_login o = { .isid_rnd = isid };

	return nf_login(&D, 0, &o);
}

static void write16(struct iscsi_context *c, uint64_t lba, uint8_t *buf, uint32_t len,
		    uint32_t bs)
{
	struct scsi_task *t = iscsi_write16_sync(c, 0, lba, buf, len, (int)bs, 0, 0, 0, 0, 0);

	ck_assert_msg(t != NULL, "WRITE 16 lba %llu len %u: %s", (unsigned long long)lba, len,
		      iscsi_get_error(c));
	ck_assert_msg(t->status == SCSI_STATUS_GOOD,
		      "WRITE 16 lba %llu len %u: status %d sense %s",
		      (unsigned long long)lba, len, t->status, iscsi_get_error(c));
	scsi_free_scsi_task(t);
}

static void read16_cmp(struct iscsi_context *c, uint64_t lba, const uint8_t *want,
		       uint32_t len, uint32_t bs)
{
	struct scsi_task *t = iscsi_read16_sync(c, 0, lba, len, (int)bs, 0, 0, 0, 0, 0);

	ck_assert_msg(t != NULL, "READ 16 lba %llu len %u: %s", (unsigned long long)lba, len,
		      iscsi_get_error(c));
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "READ 16 lba %llu len %u: status %d (%s)",
		      (unsigned long long)lba, len, t->status, iscsi_get_error(c));
	ck_assert_msg(t->datain.size == (int)len, "READ 16 lba %llu: %d bytes, expected %u",
		      (unsigned long long)lba, t->datain.size, len);
	if (memcmp(t->datain.data, want, len)) {
		uint32_t i = 0;

		while (i < len && t->datain.data[i] == want[i])
			i++;
		ck_abort_msg("READ 16 lba %llu len %u: data differs at byte %u",
			     (unsigned long long)lba, len, i);
	}
	scsi_free_scsi_task(t);
}

START_TEST(t01_read_capacity)
{
	struct iscsi_context *c;
	uint64_t blocks;
	uint32_t bs;

	start_std("raid1");
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	ck_assert_msg(bs == 512 || bs == 4096, "block length %u", bs);
	/* 80% of a 32 MiB mirror, minus whatever metadata the pool keeps */
	ck_assert_msg(blocks * bs >= 16ULL << 20 && blocks * bs <= 32ULL << 20,
		      "capacity %llu bytes, expected about 80%% of 32 MiB",
		      (unsigned long long)(blocks * bs));
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

struct region {
	uint64_t lba;
	uint32_t len;
	uint8_t *data;
};

/* Non-overlapping regions of several sizes, the last one ending at the last
 * block. */
static unsigned make_regions(struct region *r, uint64_t blocks, uint32_t bs, uint64_t seed)
{
	const uint32_t sizes[] = { 512, 4096, 8192 + 512, 65536, 256 * 1024 + 4096, 1 << 20 };
	uint64_t lba = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = (sizes[i] + bs - 1) / bs * bs;

		r[n].lba = lba;
		r[n].len = len;
		/* odd gaps so that regions start at unaligned LBAs */
		lba += len / bs + 1 + i * 37;
		n++;
	}
	r[n].len = 128 * 1024;
	r[n].lba = blocks - r[n].len / bs;
	n++;
	ck_assert_msg(r[n - 2].lba + r[n - 2].len / bs <= r[n - 1].lba, "volume too small");
	for (unsigned i = 0; i < n; i++) {
		r[i].data = malloc(r[i].len);
		ck_assert_ptr_nonnull(r[i].data);
		harness_fill_random(r[i].data, r[i].len, seed + i);
	}
	return n;
}

static void free_regions(struct region *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(r[i].data);
}

static void roundtrip(const char *level)
{
	struct region r[8];
	struct iscsi_context *c;
	uint64_t blocks;
	uint32_t bs;
	unsigned n;

	start_std(level);
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	n = make_regions(r, blocks, bs, 1000);
	for (unsigned i = 0; i < n; i++)
		write16(c, r[i].lba, r[i].data, r[i].len, bs);
	for (unsigned i = 0; i < n; i++)
		read16_cmp(c, r[i].lba, r[i].data, r[i].len, bs);
	/* the 1 MiB region again, read in 4 pieces */
	for (unsigned q = 0; q < 4; q++)
		read16_cmp(c, r[5].lba + (uint64_t)q * (r[5].len / 4) / bs,
			   r[5].data + q * (r[5].len / 4), r[5].len / 4, bs);
	/* overwrite a part in the middle and check the neighbours survive */
	harness_fill_random(r[4].data + 8192, 4096, 77);
	write16(c, r[4].lba + 8192 / bs, r[4].data + 8192, 4096, bs);
	read16_cmp(c, r[4].lba, r[4].data, r[4].len, bs);
	free_regions(r, n);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}

START_TEST(t02_roundtrip_raid1)
{
	roundtrip("raid1");
}
END_TEST

START_TEST(t03_roundtrip_raid5)
{
	roundtrip("raid5");
}
END_TEST

static struct scsi_task *vpd83(struct iscsi_context *c)
{
	struct scsi_inquiry_device_identification *id;
	struct scsi_task *t = iscsi_inquiry_sync(c, 0, 1, 0x83, 255);

	ck_assert_msg(t != NULL, "INQUIRY VPD 0x83: %s", iscsi_get_error(c));
	ck_assert_msg(t->status == SCSI_STATUS_GOOD, "INQUIRY VPD 0x83 status %d", t->status);
	id = scsi_datain_unmarshall(t);
	ck_assert_msg(id != NULL && id->designators != NULL, "VPD 0x83 has no designator");
	return t;
}

START_TEST(t04_persist_across_restart)
{
	struct scsi_task *before, *after;
	struct region r[8];
	struct iscsi_context *c;
	uint64_t blocks, blocks2;
	uint32_t bs, bs2;
	unsigned n;

	start_std("raid1");
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	n = make_regions(r, blocks, bs, 2000);
	for (unsigned i = 0; i < n; i++)
		write16(c, r[i].lba, r[i].data, r[i].len, bs);
	before = vpd83(c);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);

	nf_start(&D);
	c = login(0);
	nf_capacity(c, &blocks2, &bs2);
	ck_assert_msg(blocks2 == blocks && bs2 == bs, "capacity changed across restart: "
		      "%llu x %u -> %llu x %u", (unsigned long long)blocks, bs,
		      (unsigned long long)blocks2, bs2);
	for (unsigned i = 0; i < n; i++)
		read16_cmp(c, r[i].lba, r[i].data, r[i].len, bs);
	after = vpd83(c);
	ck_assert_msg(before->datain.size == after->datain.size &&
		      !memcmp(before->datain.data, after->datain.data, (size_t)after->datain.size),
		      "INQUIRY VPD 0x83 changed across a restart");
	scsi_free_scsi_task(before);
	scsi_free_scsi_task(after);
	free_regions(r, n);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

struct worker {
	pthread_t th;
	uint32_t isid;
	uint64_t first_lba;     /* region of this worker */
	uint32_t chunk;         /* bytes per command */
	unsigned count;         /* commands */
	uint32_t bs;
	uint64_t seed;
	char err[512];          /* empty on success */
};

/* No ck_assert here: Check's assertions are not thread-safe. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct harness_login o = { .isid_rnd = w->isid };
	struct iscsi_context *c;
	uint8_t *buf = malloc(w->chunk);
	struct scsi_task *t;

	if (!buf) {
		snprintf(w->err, sizeof(w->err), "out of memory");
		return NULL;
	}
	c = harness_iscsi_login(D.port, &o, w->err, sizeof(w->err));
	if (!c)
		goto out_free;
	for (unsigned i = 0; i < w->count && !w->err[0]; i++) {
		uint64_t lba = w->first_lba + (uint64_t)i * (w->chunk / w->bs);

		harness_fill_random(buf, w->chunk, w->seed + i);
		t = iscsi_write16_sync(c, 0, lba, buf, w->chunk, (int)w->bs, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD)
			snprintf(w->err, sizeof(w->err), "write lba %llu: %s",
				 (unsigned long long)lba, iscsi_get_error(c));
		if (t)
			scsi_free_scsi_task(t);
	}
	for (unsigned i = 0; i < w->count && !w->err[0]; i++) {
		uint64_t lba = w->first_lba + (uint64_t)i * (w->chunk / w->bs);

		harness_fill_random(buf, w->chunk, w->seed + i);
		t = iscsi_read16_sync(c, 0, lba, w->chunk, (int)w->bs, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD || t->datain.size != (int)w->chunk)
			snprintf(w->err, sizeof(w->err), "read lba %llu: %s",
				 (unsigned long long)lba, iscsi_get_error(c));
		else if (memcmp(t->datain.data, buf, w->chunk))
			snprintf(w->err, sizeof(w->err), "lba %llu: read back other data",
				 (unsigned long long)lba);
		if (t)
			scsi_free_scsi_task(t);
	}
	harness_iscsi_logout(c);
out_free:
	free(buf);
	return NULL;
}

START_TEST(t05_two_sessions)
{
	struct worker w[2];
	struct iscsi_context *c;
	uint64_t blocks;
	uint32_t bs;

	start_std("raid1");
	c = login(0x1111);
	nf_capacity(c, &blocks, &bs);
	harness_iscsi_logout(c);
	memset(w, 0, sizeof(w));
	for (unsigned i = 0; i < 2; i++) {
		w[i].isid = 0x2000 + i;
		w[i].chunk = 64 * 1024;
		w[i].count = 48;
		w[i].bs = bs;
		/* interleaved neighbours: worker 1's region starts where 0's ends */
		w[i].first_lba = 4096 + (uint64_t)i * w[i].count * (w[i].chunk / bs);
		w[i].seed = 5000 + 1000 * i;
		ck_assert_int_eq(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
	}
	for (unsigned i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_msg(!w[i].err[0], "session %u: %s", i, w[i].err);
	/* a third session sees both regions */
	c = login(0x3333);
	for (unsigned i = 0; i < 2; i++) {
		uint8_t *buf = malloc(w[i].chunk);

		ck_assert_ptr_nonnull(buf);
		for (unsigned k = 0; k < w[i].count; k += 7) {
			harness_fill_random(buf, w[i].chunk, w[i].seed + k);
			read16_cmp(c, w[i].first_lba + (uint64_t)k * (w[i].chunk / bs), buf,
				   w[i].chunk, bs);
		}
		free(buf);
	}
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

static void expect_lba_out_of_range(struct iscsi_context *c, struct scsi_task *t,
				    const char *what)
{
	ck_assert_msg(t != NULL, "%s: %s", what, iscsi_get_error(c));
	ck_assert_msg(t->status == SCSI_STATUS_CHECK_CONDITION,
		      "%s: status %d, expected CHECK CONDITION", what, t->status);
	ck_assert_msg(t->sense.key == SCSI_SENSE_ILLEGAL_REQUEST,
		      "%s: sense key 0x%x, expected ILLEGAL REQUEST", what, t->sense.key);
	ck_assert_msg(t->sense.ascq == SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE,
		      "%s: ASC/ASCQ 0x%04x, expected 0x2100 LBA OUT OF RANGE", what,
		      t->sense.ascq);
	scsi_free_scsi_task(t);
}

START_TEST(t06_read_beyond_end)
{
	struct iscsi_context *c;
	uint8_t *buf;
	uint64_t blocks;
	uint32_t bs;

	start_std("raid1");
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	buf = calloc(2, bs);
	ck_assert_ptr_nonnull(buf);
	expect_lba_out_of_range(c, iscsi_read16_sync(c, 0, blocks, bs, (int)bs, 0, 0, 0, 0, 0),
				"READ 16 at the block after the last");
	expect_lba_out_of_range(c, iscsi_read16_sync(c, 0, blocks - 1, 2 * bs, (int)bs,
						     0, 0, 0, 0, 0),
				"READ 16 across the end");
	expect_lba_out_of_range(c, iscsi_read16_sync(c, 0, UINT64_MAX, bs, (int)bs,
						     0, 0, 0, 0, 0),
				"READ 16 at LBA 2^64-1");
	expect_lba_out_of_range(c, iscsi_write16_sync(c, 0, blocks, buf, bs, (int)bs,
						      0, 0, 0, 0, 0),
				"WRITE 16 after the end");
	/* the last block itself is fine */
	harness_fill_random(buf, bs, 9);
	write16(c, blocks - 1, buf, bs, bs);
	read16_cmp(c, blocks - 1, buf, bs, bs);
	free(buf);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- many commands in flight on one session (libiscsi async API) ---- */

struct aio {
	struct scsi_task *task;   /* set by the callback; freed by the test */
	int done;
	int status;
};

static void aio_cb(struct iscsi_context *c, int status, void *command_data, void *priv)
{
	struct aio *a = priv;

	a->task = command_data;
	a->status = status;
	a->done = 1;
}

static void drive(struct iscsi_context *c, struct aio *a, unsigned n)
{
	uint64_t deadline = harness_now_ms() + 60000;

	for (;;) {
		struct pollfd pfd;
		unsigned left = 0;

		for (unsigned i = 0; i < n; i++)
			left += !a[i].done;
		if (!left)
			return;
		ck_assert_msg(harness_now_ms() < deadline, "%u of %u commands still outstanding after 60 s",
			      left, n);
		pfd.fd = iscsi_get_fd(c);
		pfd.events = (short)iscsi_which_events(c);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) < 0)
			continue;
		ck_assert_msg(iscsi_service(c, pfd.revents) == 0, "iscsi_service: %s",
			      iscsi_get_error(c));
	}
}

START_TEST(t07_queued_commands)
{
	enum { N = 48 };
	struct aio w[N], r[N];
	uint8_t *data[N];
	uint32_t len[N];
	uint64_t lba[N], blocks;
	struct iscsi_context *c;
	uint32_t bs;

	start_std("raid5");
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	memset(w, 0, sizeof(w));
	memset(r, 0, sizeof(r));
	for (unsigned i = 0; i < N; i++) {
		len[i] = (1 + (i * 7) % 32) * 8192;    /* 8 KiB .. 256 KiB */
		lba[i] = (uint64_t)i * (384 * 1024 / bs) + (i % 5);
		ck_assert_msg(lba[i] + len[i] / bs <= blocks, "volume too small");
		data[i] = malloc(len[i]);
		ck_assert_ptr_nonnull(data[i]);
		harness_fill_random(data[i], len[i], 7000 + i);
	}
	/* all writes at once: the target sees up to N commands in its window */
	for (unsigned i = 0; i < N; i++)
		ck_assert_msg(iscsi_write16_task(c, 0, lba[i], data[i], len[i], (int)bs, 0, 0, 0, 0,
						 0, aio_cb, &w[i]) != NULL,
			      "cannot queue write %u: %s", i, iscsi_get_error(c));
	drive(c, w, N);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_msg(w[i].status == SCSI_STATUS_GOOD, "queued write %u: status %d (%s)",
			      i, w[i].status, iscsi_get_error(c));
		scsi_free_scsi_task(w[i].task);
	}
	for (unsigned i = 0; i < N; i++)
		ck_assert_msg(iscsi_read16_task(c, 0, lba[i], len[i], (int)bs, 0, 0, 0, 0, 0,
						aio_cb, &r[i]) != NULL,
			      "cannot queue read %u: %s", i, iscsi_get_error(c));
	drive(c, r, N);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_msg(r[i].status == SCSI_STATUS_GOOD, "queued read %u: status %d", i,
			      r[i].status);
		ck_assert_msg(r[i].task->datain.size == (int)len[i] &&
			      !memcmp(r[i].task->datain.data, data[i], len[i]),
			      "queued read %u (lba %llu, %u bytes) returned other data", i,
			      (unsigned long long)lba[i], len[i]);
		scsi_free_scsi_task(r[i].task);
		free(data[i]);
	}
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/*
 * 08: Data-In sent from the members' memory (raid0 on /dev/shm: the read
 * lends pieces of the member mappings, raid/io.c "mapped reads") to a
 * peer that stops reading. A 16 MiB READ fills the socket; while the
 * peer reads nothing, a second session overwrites the range; the stalled
 * read then returns, GOOD, every byte as it was when the read completed:
 * what the socket did not take in the read's wake-up was fetched into
 * the task's buffer there (target/iscsi/conn.c conn_unmap), not left
 * pointing at the member, which would now send the newer data.
 */
static int connect_small_rcvbuf(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static bool member_mapped(pid_t pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " r--s ") && strstr(line, "d0.img"))
			found = true;
	fclose(f);
	return found;
}

START_TEST(t08_stalled_reader_mapped)
{
	enum { LEN = 16u << 20, STEP = 1u << 20 };
	uint8_t *old = malloc(LEN), *new = malloc(LEN), *got = calloc(1, LEN);
	uint8_t pdu[48 + 16] = { 0 }, bhs[HARNESS_BHS_LEN], *seg = malloc(1u << 20);
	struct iscsi_context *c;
	struct rl_conn r;
	uint64_t blocks, covered = 0;
	uint32_t bs;
	bool status = false;
	int fd;

	/* members on tmpfs, where reads may lend member memory */
	harness_fini(&D);
	setenv("RTGT_TEST_TMP", "/dev/shm", 1);
	nf_setup(&D);
	start_std("raid0");
	c = login(0);
	nf_capacity(c, &blocks, &bs);
	ck_assert_uint_ge(blocks * bs, LEN);
	harness_fill_random(old, LEN, 8001);
	harness_fill_random(new, LEN, 8002);
	for (uint32_t o = 0; o < LEN; o += STEP)
		write16(c, o / bs, old + o, STEP, bs);

	fd = connect_small_rcvbuf(D.port);
	rl_open(&r, fd, 0x38);
	ck_assert_int_eq(rl_login(&r, HARNESS_INITIATOR, HARNESS_TARGET), RL_OK);
	/* TEST UNIT READY takes the new nexus's unit attention */
	pdu[0] = 0x01;
	pdu[1] = 0x80 | 0x01;
	harness_put_be32(pdu + 16, 0x5150);
	harness_put_be32(pdu + 24, r.cmdsn++);
	harness_put_be32(pdu + 28, r.expstatsn);
	ck_assert_int_eq(harness_tcp_send(fd, pdu, 48), 0);
	ck_assert_int_ge(harness_recv_pdu(fd, bhs, seg, 1u << 20, RL_WAIT_MS), 0);
	ck_assert_uint_eq(bhs[0] & 0x3f, 0x21);
	/* SCSI Command: F, R, simple; LUN 0; EDTL 16 MiB; READ(16) of it */
	pdu[1] = 0x80 | 0x40 | 0x01;
	harness_put_be32(pdu + 16, 0x5151);
	harness_put_be32(pdu + 20, LEN);
	harness_put_be32(pdu + 24, r.cmdsn++);
	harness_put_be32(pdu + 28, harness_get_be32(bhs + 24) + 1);
	pdu[32] = 0x88;
	harness_put_be32(pdu + 32 + 10, LEN / bs);
	ck_assert_int_eq(harness_tcp_send(fd, pdu, 48), 0);
	/* the read completes and fills the socket; the peer reads nothing */
	usleep(300 * 1000);
	ck_assert_msg(member_mapped(D.pid), "rtgtd never mapped a member on /dev/shm (%s)", D.dir);
	for (uint32_t o = 0; o < LEN; o += STEP)
		write16(c, o / bs, new + o, STEP, bs);
	while (!status) {
		ssize_t n = harness_recv_pdu(fd, bhs, seg, 1u << 20, RL_WAIT_MS);
		uint32_t off = harness_get_be32(bhs + 40);

		ck_assert_int_ge(n, 0);
		ck_assert_uint_eq(bhs[0] & 0x3f, 0x25);    /* Data-In */
		ck_assert_uint_eq(harness_get_be32(bhs + 16), 0x5151);
		ck_assert_uint_le((uint64_t)off + (uint64_t)n, LEN);
		memcpy(got + off, seg, (size_t)n);
		covered += (uint64_t)n;
		if (bhs[1] & 0x01) {
			status = true;
			ck_assert_uint_eq(bhs[3], 0);    /* GOOD */
		}
	}
	ck_assert_uint_eq(covered, LEN);
	for (uint32_t o = 0; o < LEN; o += 512)
		ck_assert_msg(!memcmp(got + o, old + o, 512),
			      "byte %u of the stalled read is not what the volume held when it "
			      "completed (%s)", o, !memcmp(got + o, new + o, 512) ? "a later write" : "garbage");
	close(fd);
	harness_iscsi_logout(c);
	nf_stop_expect_0(&D, NULL);
	free(old);
	free(new);
	free(got);
	free(seg);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_read_capacity", t01_read_capacity),
		CK_CASE("02_roundtrip_raid1", t02_roundtrip_raid1),
		CK_CASE("03_roundtrip_raid5", t03_roundtrip_raid5),
		CK_CASE("04_persist_across_restart", t04_persist_across_restart),
		CK_CASE("05_two_sessions", t05_two_sessions),
		CK_CASE("06_read_beyond_end", t06_read_beyond_end),
		CK_CASE("07_queued_commands", t07_queued_commands),
		CK_CASE("08_stalled_reader_mapped", t08_stalled_reader_mapped, .timeout = 60),
	};

	return ck_main(&(struct ck_suite_def){
		"net_io", CK_CASES(cases), .setup = setup, .teardown = teardown,
		.timeout = 120 });
}
