/*
 * tests/net/test_net_paths.c - rtgtctl paths and stats --watch against a
 * real rtgtd that sits in its own network namespace with two veth links
 * (the dual-NIC NAS), driven by libiscsi sessions from the root namespace:
 * each link has its own address pair from 198.18.0.0/15, so the sessions
 * arrive from two source addresses, and each link its own MTU.
 *
 * Every case builds its namespace (links 198.19.X.0/30 and 198.19.X.4/30,
 * X from the pid so that parallel runs do not meet), starts rtgtd inside it
 * (portals nic1 198.19.X.1, nic2 198.19.X.5, and lo 127.0.0.1 for the
 * harness's readiness check), and removes the namespace at the end; main()
 * removes any a failed case left.
 *
 * Needs root and iproute2 (ip netns, veth); without them the program
 * prints "SKIPPED: <reason>" and exits 0.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define IQN "iqn.2026-11.org.rtgt:paths"
#define INI "iqn.2026-11.org.example:paths"

static struct harness_daemon D;
static char ns[32], va[16], vb[16];     /* namespace, root-side veth names */
static unsigned X;                      /* 198.19.X.0/29 */
static pid_t main_pid;                  /* namespaces are rtgtp<main_pid>_<case pid> */
static char addr_a[32], addr_b[32];     /* portal addresses (in the namespace) */
static char peer_a[32], peer_b[32];     /* root-side addresses */

/* Runs a shell command line; its exit code. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024], out[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = harness_run_out((char *const[]){ "/bin/sh", "-c", cmd, NULL }, out, sizeof(out), 30000);
	if (rc)
		fprintf(stderr, "'%s' -> %d: %s\n", cmd, rc, out);
	return rc;
}

static void ns_down(void)
{
	if (ns[0])
		sh("ip netns del %s 2>/dev/null; ip link del %s 2>/dev/null; ip link del %s 2>/dev/null; true",
		   ns, va, vb);
}

/* The namespace with two links of MTU @mtu_a and @mtu_b. */
static void ns_up(unsigned mtu_a, unsigned mtu_b)
{
	unsigned pid = (unsigned)getpid();

	X = 20 + pid % 220;
	snprintf(ns, sizeof(ns), "rtgtp%u_%u", (unsigned)main_pid, pid);
	snprintf(va, sizeof(va), "rp%ua", pid % 1000000);
	snprintf(vb, sizeof(vb), "rp%ub", pid % 1000000);
	snprintf(addr_a, sizeof(addr_a), "198.19.%u.1", X);
	snprintf(peer_a, sizeof(peer_a), "198.19.%u.2", X);
	snprintf(addr_b, sizeof(addr_b), "198.19.%u.5", X);
	snprintf(peer_b, sizeof(peer_b), "198.19.%u.6", X);
	ns_down();
	ck_assert(sh("ip netns add %s", ns) == 0);
	ck_assert(sh("ip link add %s mtu %u type veth peer name %sn mtu %u && "
		     "ip link add %s mtu %u type veth peer name %sn mtu %u",
		     va, mtu_a, va, mtu_a, vb, mtu_b, vb, mtu_b) == 0);
	ck_assert(sh("ip link set %sn netns %s && ip link set %sn netns %s", va, ns, vb, ns) == 0);
	ck_assert(sh("ip addr add %s/30 dev %s && ip link set %s up && "
		     "ip addr add %s/30 dev %s && ip link set %s up",
		     peer_a, va, va, peer_b, vb, vb) == 0);
	ck_assert(sh("ip -n %s link set lo up && "
		     "ip -n %s addr add %s/30 dev %sn && ip -n %s link set %sn up && "
		     "ip -n %s addr add %s/30 dev %sn && ip -n %s link set %sn up",
		     ns, ns, addr_a, va, ns, va, ns, addr_b, vb, ns, vb) == 0);
}

static void set_mtu(unsigned mtu_b)
{
	ck_assert(sh("ip link set %s mtu %u && ip -n %s link set %sn mtu %u", vb, mtu_b, ns, vb,
		     mtu_b) == 0);
}

/* rtgtd inside the namespace: this thread enters it for the start (the
 * child inherits it, the readiness check connects to its 127.0.0.1) and
 * goes back. */
static void start_in_ns(void)
{
	char path[128];
	int self, there, rc;

	nf_setup(&D);
	rc = harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; state_dir = \"state\"; log_level = \"info\"; };\n"
		"pools = ( { name = \"p\"; level = \"raid0\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\" ); create_size = \"64M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; },\n"
		"            { name = \"nic1\"; listen = \"%s:%u\"; },\n"
		"            { name = \"nic2\"; listen = \"%s:%u\"; } );\n"
		"targets = ( { iqn = \"" IQN "\"; portals = ( \"nic1\", \"nic2\" );\n"
		"  luns = ( { lun = 0; pool = \"p\"; volume = \"v0\"; size = \"80%%\"; } );\n"
		"  allow = ( \"ALL\" ); } );\n",
		D.port, addr_a, D.port, addr_b, D.port);
	ck_assert(rc == 0);
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	there = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert(self >= 0 && there >= 0);
	ck_assert_msg(setns(there, CLONE_NEWNET) == 0, "setns: %s", strerror(errno));
	rc = harness_start(&D);
	ck_assert(setns(self, CLONE_NEWNET) == 0);
	close(self);
	close(there);
	if (rc)
		harness_dump_log(&D, stderr, 40);
	ck_assert_msg(rc == 0, "rtgtd did not start in %s: %s", ns, strerror(-rc));
}

static void finish(void)
{
	nf_stop_expect_0(&D, "end of case");
	harness_fini(&D);
	ns_down();
}

static struct iscsi_context *login(const char *addr)
{
	struct iscsi_context *c = iscsi_create_context(INI);
	char portal[64];

	ck_assert(c);
	snprintf(portal, sizeof(portal), "%s:%u", addr, D.port);
	iscsi_set_targetname(c, IQN);
	iscsi_set_session_type(c, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(c, ISCSI_HEADER_DIGEST_NONE);
	if (iscsi_full_connect_sync(c, portal, 0)) {
		harness_dump_log(&D, stderr, 20);
		ck_abort_msg("login through %s: %s", portal, iscsi_get_error(c));
	}
	return c;
}

static void logout(struct iscsi_context *c)
{
	iscsi_logout_sync(c);
	iscsi_destroy_context(c);
}

/* @n 256 KiB WRITE(16)s on @c at block @lba. */
static void io(struct iscsi_context *c, unsigned n, uint64_t lba)
{
	static uint8_t buf[256 * 1024];

	for (unsigned i = 0; i < n; i++) {
		struct scsi_task *t = iscsi_write16_sync(c, 0, lba + (uint64_t)i * 512, buf,
							 sizeof(buf), 512, 0, 0, 0, 0, 0);

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE(16): %s", iscsi_get_error(c));
		scsi_free_scsi_task(t);
	}
}

/* `rtgtctl paths --json --interval S` in the background; its stdout in @f. */
static pid_t paths_bg(const char *f, const char *interval)
{
	char sock[200];
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/rtgtd.sock", D.dir);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(rj_rtgtctl_path(), "rtgtctl", "-s", sock, "paths", "--json", "--interval",
		      interval, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static struct json_object *wait_json(pid_t pid, const char *f)
{
	struct json_object *o;
	int st;

	ck_assert(waitpid(pid, &st, 0) == pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rtgtctl exit %d", st);
	o = json_object_from_file(f);
	ck_assert_msg(o, "no JSON in %s", f);
	return o;
}

static struct json_object *paths_now(void)
{
	char f[200];

	snprintf(f, sizeof(f), "%s/paths.json", D.dir);
	return wait_json(paths_bg(f, "0.5"), f);
}

/* The one initiator's entry (there must be exactly one). */
static struct json_object *the_initiator(struct json_object *root)
{
	struct json_object *a, *i;

	ck_assert(json_object_object_get_ex(root, "initiators", &a));
	ck_assert_int_eq(json_object_array_length(a), 1);
	i = json_object_array_get_idx(a, 0);
	ck_assert_str_eq(rj_str(i, "initiator"), INI);
	return i;
}

static bool has_warning(struct json_object *ini, const char *words)
{
	struct json_object *w;

	ck_assert(json_object_object_get_ex(ini, "warnings", &w));
	for (size_t i = 0; i < json_object_array_length(w); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(w, i)), words))
			return true;
	return false;
}

static struct json_object *session_via(struct json_object *ini, const char *portal_name)
{
	struct json_object *s;

	ck_assert(json_object_object_get_ex(ini, "sessions", &s));
	for (size_t i = 0; i < json_object_array_length(s); i++)
		if (!strcmp(rj_str(json_object_array_get_idx(s, i), "portal_name"), portal_name))
			return json_object_array_get_idx(s, i);
	ck_abort_msg("no session via %s", portal_name);
	return NULL;
}

static int64_t mss_of(struct json_object *s)
{
	struct json_object *t;

	ck_assert(json_object_object_get_ex(s, "tcp", &t) && t);
	return rj_int(t, "snd_mss");
}

static bool addr_is(const char *addr_port, const char *addr)
{
	size_t n = strlen(addr);

	return !strncmp(addr_port, addr, n) && addr_port[n] == ':';
}

/* 01: two sessions from two source addresses over links of MTU 1500 and
 * 9000: each shows its portal and peer, MSS follows the MTU, warning. */
START_TEST(t01_two_sources_mss_differs)
{
	struct json_object *root, *ini, *a, *b;
	struct iscsi_context *ca, *cb;

	ns_up(1500, 9000);
	start_in_ns();
	ca = login(addr_a);
	cb = login(addr_b);
	io(ca, 4, 0);
	io(cb, 4, 8192);
	root = paths_now();
	ini = the_initiator(root);
	a = session_via(ini, "nic1");
	b = session_via(ini, "nic2");
	ck_assert_msg(addr_is(rj_str(a, "local"), addr_a), "%s", rj_str(a, "local"));
	ck_assert_msg(addr_is(rj_str(a, "peer"), peer_a), "%s", rj_str(a, "peer"));
	ck_assert_msg(addr_is(rj_str(b, "local"), addr_b), "%s", rj_str(b, "local"));
	ck_assert_msg(addr_is(rj_str(b, "peer"), peer_b), "%s", rj_str(b, "peer"));
	/* 1500 - 40 (IP+TCP) - 12 (timestamps) = 1448; 9000 -> 8948 */
	ck_assert_msg(mss_of(a) >= 1400 && mss_of(a) <= 1460, "mss %ld", (long)mss_of(a));
	ck_assert_msg(mss_of(b) >= 8900 && mss_of(b) <= 8960, "mss %ld", (long)mss_of(b));
	ck_assert(has_warning(ini, "MSS differs between paths"));
	ck_assert(!has_warning(ini, "one path only"));
	ck_assert(!has_warning(ini, "two sessions of one initiator through one portal"));
	ck_assert(!has_warning(ini, "data digest on"));
	ck_assert_str_eq(rj_str(a, "data_digest"), "None");
	ck_assert_int_gt(rj_int(a, "max_recv_dsl"), 0);
	ck_assert_int_gt(rj_int(a, "max_burst"), 0);
	json_object_put(root);
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

/* 02: the same links once their MTUs match: new sessions, equal MSS, no
 * warning. */
START_TEST(t02_mss_matches_no_warning)
{
	struct json_object *root, *ini;
	struct iscsi_context *ca, *cb;

	ns_up(1500, 9000);
	start_in_ns();
	set_mtu(1500);
	ca = login(addr_a);
	cb = login(addr_b);
	root = paths_now();
	ini = the_initiator(root);
	ck_assert_int_eq(mss_of(session_via(ini, "nic1")), mss_of(session_via(ini, "nic2")));
	ck_assert(!has_warning(ini, "MSS differs between paths"));
	json_object_put(root);
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

/* 03: one session only, then two through one portal. */
START_TEST(t03_one_path_and_one_portal_twice)
{
	struct json_object *root, *ini;
	struct iscsi_context *ca, *cb;

	ns_up(1500, 1500);
	start_in_ns();
	ca = login(addr_a);
	root = paths_now();
	ini = the_initiator(root);
	ck_assert(has_warning(ini, "one path only"));
	ck_assert(!has_warning(ini, "two sessions of one initiator through one portal"));
	json_object_put(root);
	cb = login(addr_a);
	root = paths_now();
	ini = the_initiator(root);
	ck_assert(has_warning(ini, "two sessions of one initiator through one portal"));
	ck_assert(!has_warning(ini, "one path only"));
	json_object_put(root);
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

/* 04: I/O on one of two sessions while paths measures: its share near
 * 100% and the failover warning; then on both alike: near half each. */
START_TEST(t04_all_io_on_one_path_then_balanced)
{
	struct json_object *root, *ini;
	struct iscsi_context *ca, *cb;
	char f[200];
	pid_t pid;
	uint64_t end;
	double sa, sb;

	ns_up(1500, 1500);
	start_in_ns();
	ca = login(addr_a);
	cb = login(addr_b);
	snprintf(f, sizeof(f), "%s/paths.json", D.dir);
	pid = paths_bg(f, "2");
	end = harness_now_ms() + 2600;
	while (harness_now_ms() < end)
		io(ca, 2, 0);
	root = wait_json(pid, f);
	ini = the_initiator(root);
	sa = json_object_get_double(json_object_object_get(session_via(ini, "nic1"), "share"));
	ck_assert_msg(sa > 0.95, "share of nic1 %.2f", sa);
	ck_assert(has_warning(ini, "all I/O on one path"));
	json_object_put(root);

	pid = paths_bg(f, "2");
	end = harness_now_ms() + 2600;
	while (harness_now_ms() < end) {
		io(ca, 1, 0);
		io(cb, 1, 8192);
	}
	root = wait_json(pid, f);
	ini = the_initiator(root);
	sa = json_object_get_double(json_object_object_get(session_via(ini, "nic1"), "share"));
	sb = json_object_get_double(json_object_object_get(session_via(ini, "nic2"), "share"));
	ck_assert_msg(sa > 0.35 && sa < 0.65 && sb > 0.35 && sb < 0.65, "shares %.2f %.2f", sa, sb);
	ck_assert(!has_warning(ini, "all I/O on one path"));
	json_object_put(root);
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

/* 05: stats --watch --json records one object per interval with both
 * portals near half of the bytes while the two sessions alternate. */
START_TEST(t05_stats_watch_record)
{
	struct iscsi_context *ca, *cb;
	char f[200], sock[200], line[65536];
	unsigned lines = 0;
	uint64_t end;
	pid_t pid;
	FILE *in;
	int st;

	ns_up(1500, 1500);
	start_in_ns();
	ca = login(addr_a);
	cb = login(addr_b);
	snprintf(f, sizeof(f), "%s/watch.jsonl", D.dir);
	snprintf(sock, sizeof(sock), "%s/rtgtd.sock", D.dir);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(rj_rtgtctl_path(), "rtgtctl", "-s", sock, "stats", "--watch", "1", "--count",
		      "2", "--json", (char *)NULL);
		_exit(127);
	}
	end = harness_now_ms() + 2800;
	while (harness_now_ms() < end) {
		io(ca, 1, 0);
		io(cb, 1, 8192);
	}
	ck_assert(waitpid(pid, &st, 0) == pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rtgtctl exit %d", st);
	in = fopen(f, "r");
	ck_assert(in);
	while (fgets(line, sizeof(line), in)) {
		struct json_object *o = json_tokener_parse(line), *p, *t;
		double s1 = -1, s2 = -1;

		ck_assert_msg(o, "not JSON: %.200s", line);
		ck_assert(json_object_object_get_ex(o, "portals", &p));
		for (size_t i = 0; i < json_object_array_length(p); i++) {
			struct json_object *e = json_object_array_get_idx(p, i);
			double s = json_object_get_double(json_object_object_get(e, "share"));

			if (!strcmp(rj_str(e, "name"), "nic1"))
				s1 = s;
			if (!strcmp(rj_str(e, "name"), "nic2"))
				s2 = s;
		}
		ck_assert_msg(s1 > 0.35 && s1 < 0.65 && s2 > 0.35 && s2 < 0.65,
			      "interval %u: shares %.2f %.2f", lines, s1, s2);
		ck_assert(json_object_object_get_ex(o, "total", &t));
		ck_assert_msg(json_object_get_double(json_object_object_get(t, "write_mbps")) > 0,
			      "no write MB/s in %.200s", line);
		ck_assert(json_object_object_get_ex(o, "pools", &p) && json_object_array_length(p) == 1);
		json_object_put(o);
		lines++;
	}
	fclose(in);
	ck_assert_int_eq(lines, 2);
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

/* 06: rtgtctl top in a tmux pane: capture-pane shows a line per portal
 * with its MB/s and one per session with its source address; q quits. */
START_TEST(t06_top_under_tmux)
{
	struct iscsi_context *ca, *cb;
	char sock[200], srv[32], out[16384], line_a[64], line_b[64];
	uint64_t end;
	bool quit = false;

	if (sh("command -v tmux >/dev/null")) {
		printf("06_top_under_tmux: SKIPPED: tmux not installed (scripts/deps.sh installs it)\n");
		return;
	}
	ns_up(1500, 1500);
	start_in_ns();
	ca = login(addr_a);
	cb = login(addr_b);
	snprintf(sock, sizeof(sock), "%s/rtgtd.sock", D.dir);
	snprintf(srv, sizeof(srv), "rtgtp%u", (unsigned)getpid());
	ck_assert(sh("tmux -L %s new-session -d -s top -x 160 -y 50 '%s -s %s top --interval 0.5'",
		     srv, rj_rtgtctl_path(), sock) == 0);
	end = harness_now_ms() + 2500;
	while (harness_now_ms() < end) {
		io(ca, 1, 0);
		io(cb, 1, 8192);
	}
	ck_assert(harness_run_out((char *const[]){ "/usr/bin/env", "tmux", "-L", srv, "capture-pane",
						 "-p", "-t", "top", NULL }, out, sizeof(out), 10000) == 0);
	snprintf(line_a, sizeof(line_a), "portal nic1 %s:%u", addr_a, D.port);
	snprintf(line_b, sizeof(line_b), "portal nic2 %s:%u", addr_b, D.port);
	ck_assert_msg(strstr(out, line_a) && strstr(out, line_b), "no portal lines in:\n%s", out);
	ck_assert_msg(strstr(out, peer_a) && strstr(out, peer_b), "no session lines in:\n%s", out);
	ck_assert_msg(strstr(out, "pool p raid0 optimal"), "no pool line in:\n%s", out);
	/* the portal lines carry traffic: a write column above 0 */
	{
		const char *l = strstr(out, line_a);
		double rd = -1, wr = -1;

		ck_assert(sscanf(l + strlen(line_a), " (%*d sess) %lf %lf", &rd, &wr) == 2);
		ck_assert_msg(wr > 0, "nic1 line without write MB/s: %.120s", l);
	}
	sh("tmux -L %s send-keys -t top q", srv);
	end = harness_now_ms() + 5000;
	while (!quit && harness_now_ms() < end) {
		/* the session ends with its only pane's program */
		quit = sh("tmux -L %s has-session -t top 2>/dev/null && exit 1; exit 0", srv) == 0;
		usleep(100000);
	}
	sh("tmux -L %s kill-server 2>/dev/null; true", srv);
	ck_assert_msg(quit, "top did not quit on q");
	logout(ca);
	logout(cb);
	finish();
}
END_TEST

static const char *why_skip(void)
{
	if (geteuid() != 0)
		return "needs root (network namespaces and veth links)";
	if (sh("ip netns list >/dev/null 2>&1 && command -v ip >/dev/null"))
		return "iproute2 (ip netns) not usable";
	return NULL;
}

int main(void)
{
	const char *why = why_skip();
	char prefix[32];
	int rc;
	const struct ck_case cases[] = {
		CK_CASE("01_two_sources_mss_differs", t01_two_sources_mss_differs),
		CK_CASE("02_mss_matches_no_warning", t02_mss_matches_no_warning),
		CK_CASE("03_one_path_and_one_portal_twice", t03_one_path_and_one_portal_twice),
		CK_CASE("04_all_io_on_one_path_then_balanced", t04_all_io_on_one_path_then_balanced),
		CK_CASE("05_stats_watch_record", t05_stats_watch_record),
		CK_CASE("06_top_under_tmux", t06_top_under_tmux),
	};

	if (why) {
		printf("SKIPPED: %s\n", why);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	main_pid = getpid();
	rc = ck_main(&(struct ck_suite_def){ "net_paths", CK_CASES(cases), .timeout = 90 });
	/* what a failed (forked) case left behind: its namespace (the veth
	 * pairs go with it) */
	snprintf(prefix, sizeof(prefix), "rtgtp%u_", (unsigned)main_pid);
	sh("for n in $(ip netns list | awk '{print $1}' | grep '^%s'); do ip netns del $n; done; true",
	   prefix);
	return rc;
}
