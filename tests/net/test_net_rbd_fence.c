/*
 * tests/net/test_net_rbd_fence.c - fencing of two rtgtd nodes serving one RBD
 * image (raid/rbd_fence.c): node leases, self-fencing, blocklisting of a
 * peer before it is treated as gone, and of the previous holder before a
 * thick write-out take-over. A throwaway single-node cluster
 * (scripts/ceph-cluster.sh), two real bin/rtgtd, libiscsi and the ceph CLI.
 *
 * Nodes A and B export the same image under one target name. A write "stuck
 * in A" is made two ways: A stopped (SIGSTOP) with the WRITE PDU in its
 * socket (case 01), and A stopped while the cluster is paused (`ceph osd
 * pause`), so that the write sits in A's librbd/librados, sent again only
 * when A runs and sees the cluster unpaused (cases 02 and 03): the write
 * of a node cut off from the cluster.
 *
 * 01 A stopped with a WRITE of block N waiting in its socket; 4 s later
 *    (an initiator's failover time) the same block is written through B:
 *    B holds it until A's lease expired and A is blocklisted (log line,
 *    `ceph osd blocklist ls` lists A's client address), then GOOD; A
 *    resumed answers its WRITE with NOT READY 04/0C (never GOOD), then
 *    READ and TEST UNIT READY too; block N holds B's data.
 * 02 as 01 but the WRITE through A is already inside A's librbd, held by
 *    the paused cluster, when A is stopped; the cluster is unpaused, B
 *    writes the block (held until A is blocklisted); A resumed: its librbd
 *    resends, the OSD refuses the blocklisted client, A answers NOT READY
 *    04/0C; block N holds B's data.
 * 03 thick write-out take-over: A writes a 512 MiB image out (20 MB/s);
 *    the cluster is paused with A's zero writes in flight, A stopped, the
 *    cluster unpaused; B takes the lapsed lease, blocklists A first (log,
 *    blocklist), finishes, and 64 MiB from A's last checkpoint on are
 *    written through B; A resumed: its librbd resends the zero writes, the
 *    OSD refuses them: the data reads back, rtgt.thick stays "done".
 * 04 peers that go away are not waited for: B stopped with SIGTERM removes
 *    its lease (A's writes right after take < 1 s, nothing blocklisted);
 *    B SIGKILLed: A sees its process is gone, blocklists it within 8 s
 *    (waiting out the lease would take 9 s or more) and writes on.
 *
 * Each of 01-03 fails without raid/rbd_fence.c (the stale write answers GOOD
 * or lands over B's data).
 *
 * CEPH_DIR=DIR runs on a cluster already started with scripts/ceph-cluster.sh
 * (left running); otherwise the test starts and stops its own. Without the
 * Ceph packages (or built without librbd) it prints SKIPPED with the reason.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ceph.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/lun_io.h"

#define BS 512u

static struct harness_daemon DA, DB;
static struct iscsi_context *CA, *CB;
static char cur_vol[64];
static unsigned vol_seq;
static bool paused;               /* the cluster is paused: unpause at teardown */

static void msleep(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static void cluster_pause(bool on)
{
	char line[256];

	ck_assert_msg(cl_run_line(line, sizeof(line), "ceph --conf %s/ceph.conf osd %s 2>&1",
				  cl_dir(), on ? "pause" : "unpause") == 0,
		      "ceph osd %s: %s", on ? "pause" : "unpause", line);
	paused = on;
}

static void unpause(void)
{
	char line[256];

	cl_run_line(line, sizeof(line), "ceph --conf %s/ceph.conf osd unpause 2>&1", cl_dir());
	paused = false;
}

/* Both nodes' logs, then the failure (a failed check ends the case's
 * process at once: no teardown). */
#define fail_dump(...) do { \
		harness_dump_log(&DA, stderr, 60); \
		harness_dump_log(&DB, stderr, 60); \
		ck_abort_msg(__VA_ARGS__); \
	} while (0)
#define check_dump(cond, ...) do { if (!(cond)) fail_dump(__VA_ARGS__); } while (0)

static void setup(void)
{
	ck_assert_int_eq(harness_init(&DA), 0);
	harness_fini_at_exit(&DA);
	ck_assert_int_eq(harness_init(&DB), 0);
	harness_fini_at_exit(&DB);
	/* a case that failed while the cluster was paused ended without its
	 * teardown */
	unpause();
	CA = CB = NULL;
	cur_vol[0] = '\0';
	paused = false;
}

static void teardown(void)
{
	char line[256];

	if (paused)
		unpause();
	harness_iscsi_logout(CA);
	harness_iscsi_logout(CB);
	CA = CB = NULL;
	if (DA.pid > 0)
		kill(DA.pid, SIGCONT);
	/* a blocklisted node cannot close its image cleanly: end it */
	harness_fini(&DA);
	if (DB.pid > 0)
		harness_stop(&DB);
	harness_fini(&DB);
	for (int i = 0; cur_vol[0] && i < 45; i++) {
		if (cl_run_line(line, sizeof(line), "rbd --conf %s/ceph.conf --name client.admin "
				"rm --no-progress %s 2>&1 >/dev/null | tail -1", cl_dir(),
				cur_vol) != 0 || !line[0] || strstr(line, "No such file"))
			break;
		if (!strstr(line, "watchers") && !strstr(line, "still open"))
			break;
		msleep(1000);
	}
}

static void next_vol(void)
{
	snprintf(cur_vol, sizeof(cur_vol), "f%ld-%u", (long)getpid(), ++vol_seq);
}

static void write_conf(struct harness_daemon *d, const char *size, bool thick, unsigned mbps,
		       unsigned tpgt, unsigned peer)
{
	ck_assert_int_eq(harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"%s/ceph.conf\";\n"
		"            rbd_pool = \"rbd\"; ceph_id = \"rtgt\"; thick = %s;\n"
		"            provision_mbps = %u; keyring = \"%s/client.rtgt.keyring\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; tpgt = %u; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  peer_portal_groups = ( %u );\n"
		"  luns = ( { lun = 0; pool = \"c\"; volume = \"%s\"; size = \"%s\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n",
		cl_dir(), thick ? "true" : "false", mbps, cl_dir(), d->port, tpgt, peer, cur_vol,
		size), 0);
}

static void start(struct harness_daemon *d)
{
	int rc = harness_start(d);

	if (rc) {
		harness_dump_log(d, stderr, 40);
		ck_abort_msg("rtgtd did not start: %s (exit %d)", strerror(-rc), d->last_status);
	}
}

static bool log_has(const struct harness_daemon *d, const char *needle)
{
	static char buf[1 << 18];

	return harness_read_log(d, buf, sizeof(buf)) > 0 && strstr(buf, needle);
}

/* Log in without libiscsi's full connect (its TEST UNIT READY gives up on a
 * LU becoming ready); the unit attentions of a new nexus are taken. */
static struct iscsi_context *login(struct harness_daemon *d, bool wait_ready)
{
	struct iscsi_context *c = nf_login(d, 0, &(struct harness_login){ .login_only = true,
									 .timeout_s = 60 });
	uint64_t t0 = harness_now_ms();

	for (;;) {
		struct scsi_task *t = iscsi_testunitready_sync(c, 0);
		bool good = t && t->status == SCSI_STATUS_GOOD;
		bool ua = t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			  t->sense.key == SCSI_SENSE_UNIT_ATTENTION;

		scsi_free_scsi_task(t);
		if (good || (!wait_ready && !ua))
			break;
		ck_assert_msg(harness_now_ms() - t0 < 120000, "LUN not ready");
		msleep(ua ? 0 : 200);
	}
	return c;
}

static void write_good(struct iscsi_context *c, uint64_t off, const uint8_t *buf, uint32_t len,
		       const char *what)
{
	struct scsi_task *t = iscsi_write16_sync(c, 0, off / BS, (unsigned char *)buf, len, BS, 0,
						 0, 0, 0, 0);

	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "%s: %s (status %d sense %x/%04x)", what,
		      t ? "not GOOD" : iscsi_get_error(c), t ? t->status : -1,
		      t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	scsi_free_scsi_task(t);
}

static bool is_unavailable(const struct scsi_task *t)
{
	return t && t->status == SCSI_STATUS_CHECK_CONDITION &&
	       t->sense.key == SCSI_SENSE_NOT_READY && t->sense.ascq == 0x040c;
}

static void expect_unavailable(struct scsi_task *t, struct iscsi_context *c, const char *what)
{
	ck_assert_msg(t, "%s: no answer: %s", what, iscsi_get_error(c));
	ck_assert_msg(is_unavailable(t), "%s through the fenced node: status %d sense %x/%04x, "
		      "expected NOT READY 02/04/0C", what, t->status, t->sense.key, t->sense.ascq);
	scsi_free_scsi_task(t);
}

/* ---- an asynchronous WRITE that the test leaves outstanding ---- */

struct pending {
	bool done;
	int status;
	int key, ascq;
};

static void pending_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct pending *p = priv;
	struct scsi_task *t = data;

	(void)c;
	p->done = true;
	p->status = status;
	if (t && status == SCSI_STATUS_CHECK_CONDITION) {
		p->key = t->sense.key;
		p->ascq = t->sense.ascq;
	}
	if (t)
		scsi_free_scsi_task(t);
}

/* Queue WRITE(16) of @buf at @off on @c and push it onto the socket (the
 * PDU has left libiscsi once nothing is left to send). */
static bool write_async(struct iscsi_context *c, uint64_t off, uint8_t *buf, uint32_t len,
			struct pending *p)
{
	uint64_t t0 = harness_now_ms();

	memset(p, 0, sizeof(*p));
	if (!iscsi_write16_task(c, 0, off / BS, buf, len, BS, 0, 0, 0, 0, 0, pending_cb, p))
		return false;
	while (iscsi_which_events(c) & POLLOUT) {
		struct pollfd pfd = { iscsi_get_fd(c), (short)iscsi_which_events(c), 0 };

		if (harness_now_ms() - t0 > 5000)
			return false;
		if (poll(&pfd, 1, 100) > 0 && iscsi_service(c, pfd.revents) < 0)
			return false;
	}
	return true;
}

/* Service @c until @p completed or @ms passed; true when it completed. */
static bool pending_wait(struct iscsi_context *c, struct pending *p, unsigned ms)
{
	uint64_t t0 = harness_now_ms();

	while (!p->done && harness_now_ms() - t0 < ms) {
		struct pollfd pfd = { iscsi_get_fd(c), (short)iscsi_which_events(c), 0 };

		if (poll(&pfd, 1, 100) > 0 && iscsi_service(c, pfd.revents) < 0)
			break;
	}
	return p->done;
}

/* ---- the cluster's view ---- */

/* The RADOS client address of @d's rtgtd, from its log ("node lease
 * client.N at ADDR in ..."). */
static void node_addr(const struct harness_daemon *d, char *addr, size_t len)
{
	static char buf[1 << 18];
	const char *p;

	ck_assert(harness_read_log(d, buf, sizeof(buf)) > 0);
	p = strstr(buf, "node lease client.");
	ck_assert_msg(p, "no node lease in the log");
	p = strstr(p, " at ");
	ck_assert(p);
	p += 4;
	snprintf(addr, len, "%.*s", (int)strcspn(p, " \n"), p);
	ck_assert_msg(addr[0], "no address in the log");
}

static bool blocklisted(const char *addr)
{
	char line[256];

	/* "ADDR EXPIRY" lines; one address may be the prefix of another */
	return cl_run_line(line, sizeof(line), "ceph --conf %s/ceph.conf osd blocklist ls 2>/dev/null "
			   "| awk '$1 == \"%s\"' | wc -l", cl_dir(), addr) == 0 && atoi(line) > 0;
}

/* rtgt.thick of the image: a byte offset, -2 for "done", -1 unreadable. */
static long long meta_thick(void)
{
	char line[128];

	if (cl_run_line(line, sizeof(line), "rbd --conf %s/ceph.conf --name client.admin "
			"image-meta get %s rtgt.thick 2>/dev/null", cl_dir(), cur_vol) != 0)
		return -1;
	if (!strcmp(line, "done"))
		return -2;
	return line[0] >= '0' && line[0] <= '9' ? atoll(line) : -1;
}

/*
 * SIGSTOP @pid and wait until every thread of it is stopped: kill()
 * returns before the signal has reached a thread running on another core,
 * and a reactor that was still running could take the WRITE sent next
 * off its socket (and even see it done) before it stops - the "write
 * waits in A's socket" the cases rely on would not hold.
 */
static void stop_now(pid_t pid)
{
	char dir[64];
	uint64_t t0 = harness_now_ms();

	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *e;
		bool all = d != NULL;

		while (d && (e = readdir(d))) {
			char path[384], buf[512], *p;
			FILE *fp;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
			fp = fopen(path, "r");
			if (!fp)
				continue;   /* a thread that just ended */
			buf[0] = '\0';
			if (!fgets(buf, sizeof(buf), fp))
				buf[0] = '\0';
			fclose(fp);
			/* "tid (comm) S ...": the state after the last ')' */
			p = strrchr(buf, ')');
			if (!p || (p[2] != 'T' && p[2] != 't'))
				all = false;
		}
		if (d)
			closedir(d);
		if (all)
			return;
		ck_assert_msg(harness_now_ms() - t0 < 5000, "rtgtd %d not stopped 5 s after SIGSTOP",
			      (int)pid);
		usleep(1000);
	}
}

/* Whether `rtgtctl status --json` of @d shows the pool in @state. */
static bool pool_state_is(const struct harness_daemon *d, const char *state)
{
	char line[256];
	const char *ctl = getenv("RTGTCTL") ? getenv("RTGTCTL") : "bin/rtgtctl";

	return cl_run_line(line, sizeof(line), "%s -s %s/rtgtd.sock status --json | tr -d ' \\n' | "
			   "grep -c '\"level\":\"rbd\",\"state\":\"%s\"'", ctl, d->dir, state) == 0 &&
	       atoi(line) > 0;
}

/* Two nodes on a fresh thin image, a session on each. */
static void two_nodes(void)
{
	next_vol();
	write_conf(&DA, "64M", false, 0, 1, 2);
	write_conf(&DB, "64M", false, 0, 2, 1);
	start(&DA);
	start(&DB);
	CA = login(&DA, true);
	CB = login(&DB, true);
	/* A has seen B's lease (it reads the node table every 0.5 s) */
	msleep(1500);
}

/* READ through @c must return @want (GOOD); logs of both nodes otherwise. */
static void read_expect(struct iscsi_context *c, uint64_t off, const uint8_t *want, uint32_t len,
			const char *what)
{
	struct scsi_task *t = iscsi_read16_sync(c, 0, off / BS, len, BS, 0, 0, 0, 0, 0);

	check_dump(t && t->status == SCSI_STATUS_GOOD && t->datain.size == (int)len,
		   "%s: READ at %llu: %s (status %d sense %x/%04x)", what,
		   (unsigned long long)off, t ? "not GOOD" : iscsi_get_error(c), t ? t->status : -1,
		   t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	check_dump(!memcmp(t->datain.data, want, len), "%s: READ at %llu: other data", what,
		   (unsigned long long)off);
	scsi_free_scsi_task(t);
}

/* After A was stopped with a write outstanding (@pa): B's write of the
 * same block waits for A's fencing, then A resumed answers 04/0C. The data
 * and A's answers are checked first: what fails without fencing. */
static void peer_takes_over(uint64_t off, uint8_t *mine, struct pending *pa, double min_held)
{
	char a_addr[160];
	uint64_t t0;
	double held;

	msleep(4000);   /* the initiator gives up on A and fails over */
	t0 = harness_now_ms();
	write_good(CB, off, mine, 4096, "WRITE through B after A stalled");
	held = (double)(harness_now_ms() - t0) / 1e3;
	fprintf(stderr, "B's write held %.2f s\n", held);
	read_expect(CB, off, mine, 4096, "B after its write");

	/* A resumes: its outstanding write must not land nor answer GOOD */
	ck_assert_int_eq(kill(DA.pid, SIGCONT), 0);
	check_dump(pending_wait(CA, pa, 30000), "A did not answer its WRITE after SIGCONT");
	msleep(2000);   /* anything A still had would have landed by now */
	read_expect(CB, off, mine, 4096, "B after A resumed");
	check_dump(pa->status == SCSI_STATUS_CHECK_CONDITION && pa->key == SCSI_SENSE_NOT_READY &&
		   pa->ascq == 0x040c, "A answered its stale WRITE with status %d sense %x/%04x, "
		   "expected NOT READY 02/04/0C", pa->status, pa->key, pa->ascq);
	expect_unavailable(iscsi_read16_sync(CA, 0, off / BS, 4096, BS, 0, 0, 0, 0, 0), CA, "READ");
	expect_unavailable(iscsi_testunitready_sync(CA, 0), CA, "TEST UNIT READY");
	check_dump(pool_state_is(&DA, "fenced"), "A's status does not show the pool fenced");

	/* how: B waited for A's lease and blocklisted it first */
	node_addr(&DA, a_addr, sizeof(a_addr));
	check_dump(blocklisted(a_addr), "A (%s) is not blocklisted after B wrote", a_addr);
	check_dump(log_has(&DB, "let its lease expire: blocklisted"), "B did not log fencing A");
	check_dump(held >= min_held, "B's write was not held for A's lease (%.2f s)", held);
}

START_TEST(t01_stopped_with_write_in_socket)
{
	static uint8_t p1[4096], p2[4096], p3[4096];
	const uint64_t off = 1u << 20;
	struct pending pa;

	harness_fill_random(p1, sizeof(p1), 101);
	harness_fill_random(p2, sizeof(p2), 102);
	harness_fill_random(p3, sizeof(p3), 103);
	two_nodes();
	write_good(CA, off, p1, sizeof(p1), "WRITE through A");

	stop_now(DA.pid);
	ck_assert(write_async(CA, off, p2, sizeof(p2), &pa));   /* waits in A's socket */
	/* A's last renewal came at most 1 s before the stop, B's write 4 s
	 * after it: held until 10 s after that renewal */
	peer_takes_over(off, p3, &pa, 4.0);
	ck_assert_msg(log_has(&DA, "fenced"), "A did not log its fencing");
}
END_TEST

START_TEST(t02_stopped_with_write_in_librbd)
{
	static uint8_t p1[4096], p2[4096], p3[4096];
	const uint64_t off = 3u << 20;
	struct pending pa;

	harness_fill_random(p1, sizeof(p1), 201);
	harness_fill_random(p2, sizeof(p2), 202);
	harness_fill_random(p3, sizeof(p3), 203);
	two_nodes();
	write_good(CA, off, p1, sizeof(p1), "WRITE through A");

	/* the write reaches A's librbd, which holds it for the paused
	 * cluster; A is stopped before it sees the cluster again */
	cluster_pause(true);
	{
		/* no check may end the case while the cluster is paused. A
		 * client learns of the pause with its next ops' replies (A's
		 * lease renewals, every second): give it 2 s */
		bool sent, answered;

		msleep(2000);
		sent = write_async(CA, off, p2, sizeof(p2), &pa);

		msleep(500);
		answered = pending_wait(CA, &pa, 500);
		stop_now(DA.pid);
		unpause();
		ck_assert_msg(sent, "WRITE through A not sent");
		ck_assert_msg(!answered, "A answered a WRITE on a paused cluster (status %d)",
			      pa.status);
	}
	/* A's lease stopped with the pause, 2.5 s before the stop: B's write
	 * may find A expired already */
	peer_takes_over(off, p3, &pa, 0);
	ck_assert_msg(log_has(&DA, "was blocklisted"), "A did not notice it was blocklisted");
}
END_TEST

START_TEST(t03_thick_takeover)
{
	static uint8_t pat[1 << 20];
	const uint64_t span = 64ull << 20;
	long long ck;
	char a_addr[160];
	time_t t0 = time(NULL);

	next_vol();
	write_conf(&DA, "512M", true, 20, 1, 2);
	start(&DA);
	while ((ck = meta_thick()) < (16ll << 20)) {
		ck_assert_msg(ck != -2, "finished before the stop");
		ck_assert_msg(time(NULL) - t0 < 60, "no checkpoint past 16 MiB");
		msleep(50);
	}
	/* A's zero writes pile up in its librbd while the cluster is paused
	 * (8 in flight at 20 MB/s take 1.6 s); A is stopped with them */
	cluster_pause(true);
	msleep(2500);
	stop_now(DA.pid);
	unpause();
	ck = meta_thick();
	ck_assert_msg(ck >= 0, "checkpoint gone after the stop");

	/* B takes the lapsed lease (blocklisting A first), finishes unpaced */
	write_conf(&DB, "512M", true, 0, 2, 1);
	start(&DB);
	while (meta_thick() != -2) {
		ck_assert_msg(time(NULL) - t0 < 150, "B did not finish the write-out");
		msleep(200);
	}
	CB = login(&DB, true);
	for (uint64_t o = 0; o < span; o += sizeof(pat)) {
		harness_fill_random(pat, sizeof(pat), 300 + o / sizeof(pat));
		write_good(CB, (uint64_t)ck + o, pat, sizeof(pat), "WRITE through B");
	}

	/* A resumes: the zero writes its librbd held are sent again now */
	ck_assert_int_eq(kill(DA.pid, SIGCONT), 0);
	msleep(8000);
	for (uint64_t o = 0; o < span; o += sizeof(pat)) {
		harness_fill_random(pat, sizeof(pat), 300 + o / sizeof(pat));
		lio_expect(CB, 0, (uint64_t)ck + o, pat, sizeof(pat));
	}
	ck_assert_msg(meta_thick() == -2, "rtgt.thick is no longer \"done\"");
	/* how: B blocklisted A before its first zero write */
	node_addr(&DA, a_addr, sizeof(a_addr));
	check_dump(log_has(&DB, "blocklisted it first"), "B took over without fencing A");
	check_dump(blocklisted(a_addr), "A (%s) is not blocklisted", a_addr);
	fprintf(stderr, "03: A stopped at checkpoint %lld with its writes held; B fenced it, "
		"finished; data kept\n", ck);
}
END_TEST

START_TEST(t04_peer_goes_away)
{
	static uint8_t p[4096];
	char b_addr[160];
	uint64_t t0;
	double worst = 0;

	harness_fill_random(p, sizeof(p), 401);
	two_nodes();
	/* a clean stop removes B's lease: A does not wait for it */
	harness_iscsi_logout(CB);
	CB = NULL;
	node_addr(&DB, b_addr, sizeof(b_addr));
	ck_assert_int_eq(harness_stop(&DB), 0);
	for (unsigned i = 0; i < 20; i++) {
		t0 = harness_now_ms();
		write_good(CA, (uint64_t)i * 4096, p, sizeof(p), "WRITE after B stopped");
		if ((double)(harness_now_ms() - t0) / 1e3 > worst)
			worst = (double)(harness_now_ms() - t0) / 1e3;
		msleep(250);
	}
	/* a write held for B would wait until B's lease expired (7 s and more) */
	ck_assert_msg(worst < 2.5, "writes held %.2f s after a clean stop of the peer", worst);
	check_dump(!blocklisted(b_addr), "a cleanly stopped peer (%s) was blocklisted", b_addr);

	/* SIGKILL: its process is gone, A need not wait out the lease (10 s
	 * from B's last renewal, at most 1 s before the kill: 9 s or more) */
	harness_fini(&DB);
	ck_assert_int_eq(harness_init(&DB), 0);
	write_conf(&DB, "64M", false, 0, 2, 1);
	start(&DB);
	msleep(1500);
	node_addr(&DB, b_addr, sizeof(b_addr));
	harness_fini(&DB);   /* SIGKILL, reaped (a zombie still has its pid) */
	t0 = harness_now_ms();
	while (!blocklisted(b_addr)) {
		ck_assert_msg(harness_now_ms() - t0 < 8000, "a killed peer not blocklisted in 8 s");
		msleep(100);
	}
	fprintf(stderr, "04: killed peer blocklisted after %.2f s\n",
		(double)(harness_now_ms() - t0) / 1e3);
	t0 = harness_now_ms();
	write_good(CA, 0, p, sizeof(p), "WRITE after B was killed");
	ck_assert_msg(harness_now_ms() - t0 < 3000, "write held %.2f s after a killed peer",
		      (double)(harness_now_ms() - t0) / 1e3);
	ck_assert(log_has(&DA, "is gone (its process exited)"));
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_stopped_with_write_in_socket", t01_stopped_with_write_in_socket,
			.timeout = 180),
		CK_CASE("02_stopped_with_write_in_librbd", t02_stopped_with_write_in_librbd,
			.timeout = 180),
		CK_CASE("03_thick_takeover", t03_thick_takeover, .timeout = 300),
		CK_CASE("04_peer_goes_away", t04_peer_goes_away, .timeout = 180),
	};
	struct ck_suite_def def = { "net_rbd_fence", CK_CASES(cases),
		.setup = setup, .teardown = teardown };

	return cl_main("rtgt-rbdf", &def);
}
