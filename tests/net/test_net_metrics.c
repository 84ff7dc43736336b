/*
 * tests/net/test_net_metrics.c - the Prometheus endpoint of a real bin/rtgtd
 * (target/daemon/metrics.c on libmicrohttpd) under hostile clients, over
 * raw TCP from chosen loopback source addresses.
 *
 * 01 50 idle connections (127.0.0.2) and 5 that send one byte a second
 *    (127.0.0.3) stay open while scrapes from 127.0.0.1 answer 200 within
 *    1 s (their latencies printed); a 200 KB header gets 431 or is closed
 *    within 1 s and the next scrape is not delayed; after the hostile
 *    connections close a scrape answers within 1 s again; rtgtd's RSS
 *    before, during and after is printed and its growth bounded; the
 *    refusal counter says too_large.
 * 02 the limits: metrics_max_per_address and metrics_max_connections
 *    close the connection over them at once (a scrape from a third address
 *    is refused too while the total is reached), metrics_idle_timeout
 *    closes the silent ones; rtgt_metrics_refused_total counts each reason
 *    exactly.
 * 03 HEAD of /metrics and /healthz (the same headers, no body), GET
 *    /healthz 200 "ok", other paths and POST 404, malformed requests 400,
 *    a query string ignored, curl -I.
 * 04 /healthz while workers[0] is stalled (blocked opening the
 *    configuration, a FIFO, for a reload): 503 naming worker 0 within
 *    about 1 s, while a /metrics scrape waits for the same reactor on
 *    another connection; 200 again once the reactor runs.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define N_IDLE    50
#define N_TRICKLE 5
/* RSS growth allowed over the whole of 01: 55 connection threads and
 * their request buffers come and go; what stays is allocator caches.
 * rtgtd is the build flavour of this test (the Makefile's RTGTD): the
 * sanitizers keep freed memory (ASan's quarantine) and per-thread state
 * (TSan's, about 1 MiB a thread) of their own. Measured on 2 cores:
 * +1.9 MiB plain, +11.2 MiB ASan, +53 MiB TSan. */
#if defined(__SANITIZE_THREAD__)
#define RSS_GROWTH_MAX_KB (128u << 10)
#elif defined(__SANITIZE_ADDRESS__)
#define RSS_GROWTH_MAX_KB (32u << 10)
#else
#define RSS_GROWTH_MAX_KB (16u << 10)
#endif

static struct harness_daemon D;
static uint16_t mport;

static void setup(void)
{
	nf_setup(&D);
	ck_assert_int_eq(harness_free_port(&mport), 0);
}

static void teardown(void)
{
	harness_fini(&D);
}

/* raid1 "p" on two files, the portal, the target, daemon.metrics on
 * 127.0.0.1:mport with @extra in the daemon group. */
static void start(const char *extra)
{
	char d[512];

	snprintf(d, sizeof(d), "metrics = \"127.0.0.1:%u\"; %s", mport, extra);
	ck_assert_int_eq(harness_conf_std_ex(&D, d, "raid1", NULL), 0);
	nf_start(&D);
}

/* A TCP connection to the metrics port from @src (a loopback address);
 * -errno when it cannot connect. */
static int connect_from(const char *src)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(mport) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc;

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	inet_pton(AF_INET, src, &from.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* Reads @fd until EOF or @timeout_ms into @out (NUL-terminated). */
static size_t read_all(int fd, char *out, size_t len, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
	size_t got = 0;

	while (got < len - 1) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = harness_now_ms();
		ssize_t n;

		if (now >= deadline || poll(&pf, 1, (int)(deadline - now)) <= 0)
			break;
		n = recv(fd, out + got, len - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	return got;
}

/* Sends @req from @src and reads the whole answer into @out; returns the
 * status code (0: closed without one, -errno: no connection) and the
 * time it took in *@ms. */
static int http_from(const char *src, const char *req, size_t reqlen, char *out, size_t len,
		     uint64_t *ms)
{
	uint64_t t0 = harness_now_ms();
	int fd = connect_from(src), code = 0;

	if (fd < 0)
		return fd;
	if (harness_tcp_send(fd, req, reqlen) == 0 &&
	    read_all(fd, out, len, 10000) > 12 && !strncmp(out, "HTTP/1.", 7))
		code = atoi(out + 9);
	else
		out[0] = '\0';
	close(fd);
	if (ms)
		*ms = harness_now_ms() - t0;
	return code;
}

#define GET_METRICS "GET /metrics HTTP/1.1\r\nHost: rtgt\r\nAccept: text/plain\r\n\r\n"

static int scrape(char *out, size_t len, uint64_t *ms)
{
	return http_from("127.0.0.1", GET_METRICS, strlen(GET_METRICS), out, len, ms);
}

/* The value of rtgt_metrics_refused_total{reason="@reason"} in @text. */
static long refused(const char *text, const char *reason)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "\nrtgt_metrics_refused_total{reason=\"%s\"} ", reason);
	p = strstr(text, key);
	ck_assert_msg(p != NULL, "no %s", key + 1);
	return strtol(p + strlen(key), NULL, 10);
}

/* ---- 01 ---- */

struct trickler {
	int fd[N_TRICKLE];
	int stop;                    /* atomic: set by the test */
	unsigned sent;               /* atomic: bytes sent on each */
};

/* One byte a second on every connection, a request that never ends. */
static void *trickle_main(void *arg)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: rtgt\r\nX-Slow: "
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct trickler *t = arg;

	unsigned sent = 0;

	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED) && sent < sizeof(req) - 1) {
		for (unsigned i = 0; i < N_TRICKLE; i++)
			if (send(t->fd[i], req + sent, 1, MSG_NOSIGNAL) != 1)
				return NULL;
		__atomic_store_n(&t->sent, ++sent, __ATOMIC_RELAXED);
		for (unsigned k = 0; k < 10 && !__atomic_load_n(&t->stop, __ATOMIC_RELAXED); k++)
			usleep(100000);
	}
	return NULL;
}

START_TEST(t01_hostile_clients)
{
	static char out[1 << 20];
	int idle[N_IDLE];
	struct trickler t = { .stop = 0 };
	pthread_t th;
	uint64_t ms, worst = 0, t0;
	long rss0, rss1, rss2;
	char *big;
	int code;

	/* every hostile connection admitted (the per-address cap is 02's),
	 * and kept open for the whole case by a long idle timeout */
	start("metrics_max_connections = 64; metrics_max_per_address = 64;"
	      " metrics_idle_timeout = 60;");
	ck_assert_int_eq(scrape(out, sizeof(out), &ms), 200);
	rss0 = harness_rss_kb(D.pid);
	ck_assert_int_gt(rss0, 0);
	for (unsigned i = 0; i < N_IDLE; i++) {
		idle[i] = connect_from("127.0.0.2");
		ck_assert_int_ge(idle[i], 0);
	}
	for (unsigned i = 0; i < N_TRICKLE; i++) {
		t.fd[i] = connect_from("127.0.0.3");
		ck_assert_int_ge(t.fd[i], 0);
	}
	ck_assert_int_eq(pthread_create(&th, NULL, trickle_main, &t), 0);
	usleep(300000);   /* every one accepted, the tricklers sending */
	/* scrapes over 5 s while they all sit there */
	t0 = harness_now_ms();
	for (unsigned i = 0; harness_now_ms() - t0 < 5000; i++) {
		code = scrape(out, sizeof(out), &ms);
		ck_assert_msg(code == 200, "scrape %u with %u hostile connections open: %d", i,
			      N_IDLE + N_TRICKLE, code);
		ck_assert_msg(ms < 1000, "scrape %u took %llu ms", i, (unsigned long long)ms);
		ck_assert_ptr_nonnull(strstr(out, "\nrtgt_lun_write_bytes_total{"));
		if (ms > worst)
			worst = ms;
		usleep(250000);
	}
	ck_assert_int_eq(http_from("127.0.0.1", "GET /healthz HTTP/1.0\r\n\r\n", 25, out,
				   sizeof(out), &ms), 200);
	ck_assert_uint_lt(ms, 1000);
	/* the hostile ones are still open: none was closed on us */
	for (unsigned i = 0; i < N_IDLE; i++) {
		char b;

		ck_assert_int_eq(recv(idle[i], &b, 1, MSG_DONTWAIT), -1);
		ck_assert_int_eq(errno, EAGAIN);
	}
	ck_assert_uint_ge(__atomic_load_n(&t.sent, __ATOMIC_RELAXED), 5);
	rss1 = harness_rss_kb(D.pid);
	/* a 200 KB header: 431 (or closed), at once, and no scrape waits for it */
	big = malloc(200 << 10);
	memset(big, 'h', 200 << 10);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX-Big: ", 30);
	memcpy(big + (200 << 10) - 4, "\r\n\r\n", 4);
	code = http_from("127.0.0.4", big, 200 << 10, out, sizeof(out), &ms);
	free(big);
	fprintf(stderr, "test_net_metrics 01: 200 KB header: %d after %llu ms\n", code,
		(unsigned long long)ms);
	ck_assert_msg(code == 431 || code == 0, "200 KB header: %d: %.80s", code, out);
	ck_assert_uint_lt(ms, 1000);
	ck_assert_int_eq(scrape(out, sizeof(out), &ms), 200);
	ck_assert_uint_lt(ms, 1000);
	if (ms > worst)
		worst = ms;
	ck_assert_int_ge(refused(out, "too_large"), 1);
	ck_assert_int_eq(refused(out, "per_address"), 0);
	ck_assert_int_eq(refused(out, "connections"), 0);
	/* they go; scrapes go on */
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	for (unsigned i = 0; i < N_IDLE; i++)
		close(idle[i]);
	for (unsigned i = 0; i < N_TRICKLE; i++)
		close(t.fd[i]);
	usleep(300000);
	code = scrape(out, sizeof(out), &ms);
	ck_assert_int_eq(code, 200);
	ck_assert_uint_lt(ms, 1000);
	rss2 = harness_rss_kb(D.pid);
	fprintf(stderr, "test_net_metrics 01: %u idle + %u trickling connections: slowest scrape "
		"%llu ms; after they closed %llu ms; rtgtd RSS %ld KiB before, %ld KiB with them, "
		"%ld KiB after (+%ld KiB, at most %u)\n", N_IDLE, N_TRICKLE, (unsigned long long)worst,
		(unsigned long long)ms, rss0, rss1, rss2, rss2 - rss0, RSS_GROWTH_MAX_KB);
	ck_assert_msg(rss2 - rss0 < (long)RSS_GROWTH_MAX_KB, "RSS grew by %ld KiB", rss2 - rss0);
	ck_assert_msg(rss1 - rss0 < (long)RSS_GROWTH_MAX_KB, "RSS grew by %ld KiB", rss1 - rss0);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 02 ---- */

START_TEST(t02_limits_counted)
{
	static char out[1 << 16];
	int fd[10];
	char b[16];
	uint64_t ms;

	start("metrics_max_connections = 8; metrics_max_per_address = 4; metrics_idle_timeout = 2;");
	ck_assert_int_eq(scrape(out, sizeof(out), NULL), 200);
	ck_assert_int_eq(refused(out, "timeout"), 0);
	/* 4 from .2 (its share); a 5th from it is closed at once */
	for (unsigned i = 0; i < 4; i++) {
		fd[i] = connect_from("127.0.0.2");
		ck_assert_int_ge(fd[i], 0);
	}
	usleep(200000);
	fd[4] = connect_from("127.0.0.2");
	ck_assert_int_ge(fd[4], 0);
	ck_assert_int_le(harness_tcp_recv(fd[4], b, sizeof(b), 1000), 0);
	close(fd[4]);
	/* 4 from .3: the total of 8 is reached; .4 and even a scrape refused */
	for (unsigned i = 4; i < 8; i++) {
		fd[i] = connect_from("127.0.0.3");
		ck_assert_int_ge(fd[i], 0);
	}
	usleep(200000);
	fd[8] = connect_from("127.0.0.4");
	ck_assert_int_ge(fd[8], 0);
	ck_assert_int_le(harness_tcp_recv(fd[8], b, sizeof(b), 1000), 0);
	close(fd[8]);
	ck_assert_int_eq(scrape(out, sizeof(out), NULL), 0);
	/* the 8 silent ones are closed after 2 s, counted as timeouts */
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_int_le(harness_tcp_recv(fd[i], b, sizeof(b), 5000), 0);
		close(fd[i]);
	}
	usleep(200000);
	ck_assert_int_eq(scrape(out, sizeof(out), &ms), 200);
	ck_assert_uint_lt(ms, 1000);
	fprintf(stderr, "test_net_metrics 02: refused connections %ld, per_address %ld, "
		"timeout %ld, too_large %ld\n", refused(out, "connections"),
		refused(out, "per_address"), refused(out, "timeout"), refused(out, "too_large"));
	ck_assert_int_eq(refused(out, "per_address"), 1);
	ck_assert_int_eq(refused(out, "connections"), 2);
	ck_assert_int_eq(refused(out, "timeout"), 8);
	ck_assert_int_eq(refused(out, "too_large"), 0);
	/* a client that hangs up itself is no timeout */
	fd[0] = connect_from("127.0.0.2");
	ck_assert_int_ge(fd[0], 0);
	usleep(500000);
	close(fd[0]);
	/* headers over metrics_max_request (8192 by default) */
	{
		char req[9000];

		memset(req, 'x', sizeof(req));
		memcpy(req, "GET /metrics HTTP/1.0\r\nX: ", 26);
		memcpy(req + sizeof(req) - 4, "\r\n\r\n", 4);
		ck_assert_int_eq(http_from("127.0.0.2", req, sizeof(req), out, sizeof(out), NULL),
				 431);
	}
	usleep(200000);
	ck_assert_int_eq(scrape(out, sizeof(out), NULL), 200);
	ck_assert_int_eq(refused(out, "timeout"), 8);
	ck_assert_int_eq(refused(out, "too_large"), 1);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 03 ---- */

static const char *header(const char *resp, const char *name, char *val, size_t len)
{
	const char *end = strstr(resp, "\r\n\r\n"), *p = resp;
	size_t n = strlen(name);

	while ((p = strstr(p, "\r\n")) && p < end) {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			snprintf(val, len, "%.*s", (int)strcspn(p + n + 2, "\r"), p + n + 2);
			return val;
		}
	}
	return NULL;
}

START_TEST(t03_methods_paths)
{
	static char out[1 << 20];
	char v1[128], v2[128];
	const char *body;
	size_t get_len;

	start("");
	ck_assert_int_eq(scrape(out, sizeof(out), NULL), 200);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_ptr_nonnull(header(out, "Content-Type", v1, sizeof(v1)));
	ck_assert_str_eq(v1, "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_ptr_nonnull(header(out, "Connection", v1, sizeof(v1)));
	ck_assert_str_eq(v1, "close");
	ck_assert_ptr_nonnull(header(out, "Content-Length", v1, sizeof(v1)));
	body = strstr(out, "\r\n\r\n") + 4;
	get_len = strlen(body);
	ck_assert_uint_eq(strtoul(v1, NULL, 10), get_len);
	/* HEAD: the same headers, no body (the length of a fresh snapshot,
	 * within a few bytes of the GET's: counters move) */
	ck_assert_int_eq(http_from("127.0.0.1", "HEAD /metrics HTTP/1.1\r\nHost: r\r\n\r\n", 35,
				   out, sizeof(out), NULL), 200);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\n");
	ck_assert_ptr_nonnull(header(out, "Content-Type", v2, sizeof(v2)));
	ck_assert_str_eq(v2, "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_ptr_nonnull(header(out, "Content-Length", v2, sizeof(v2)));
	ck_assert_uint_lt(labs((long)strtoul(v2, NULL, 10) - (long)get_len), 64);
	/* /healthz */
	ck_assert_int_eq(http_from("127.0.0.1", "GET /healthz HTTP/1.1\r\nHost: r\r\n\r\n", 34,
				   out, sizeof(out), NULL), 200);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\nok\n");
	ck_assert_int_eq(http_from("127.0.0.1", "HEAD /healthz HTTP/1.0\r\n\r\n", 26, out,
				   sizeof(out), NULL), 200);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\n");
	ck_assert_ptr_nonnull(header(out, "Content-Length", v2, sizeof(v2)));
	ck_assert_str_eq(v2, "3");
	ck_assert_int_eq(http_from("127.0.0.1", "GET /healthz?verbose=1 HTTP/1.0\r\n\r\n", 35, out,
				   sizeof(out), NULL), 200);
	/* 404 */
	ck_assert_int_eq(http_from("127.0.0.1", "GET / HTTP/1.0\r\n\r\n", 18, out, sizeof(out),
				   NULL), 404);
	ck_assert_int_eq(http_from("127.0.0.1", "GET /metricsx HTTP/1.0\r\n\r\n", 26, out,
				   sizeof(out), NULL), 404);
	ck_assert_int_eq(http_from("127.0.0.1", "POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nab",
				   48, out, sizeof(out), NULL), 404);
	ck_assert_int_eq(http_from("127.0.0.1", "DELETE /healthz HTTP/1.0\r\n\r\n", 28, out,
				   sizeof(out), NULL), 404);
	/* 400 */
	ck_assert_int_eq(http_from("127.0.0.1", "GET /metrics\r\n\r\n", 16, out, sizeof(out), NULL),
			 400);
	ck_assert_int_eq(http_from("127.0.0.1", "GET /metrics HTTP/1.0\r\nbad header\r\n\r\n", 37,
				   out, sizeof(out), NULL), 400);
	/* curl -I (HEAD) */
	{
		char url[64];
		char *argv[] = { "/usr/bin/curl", "-s", "-I", "-o", "/dev/null", "-w", "%{http_code}",
				 url, NULL };

		ck_assert_int_eq(access("/usr/bin/curl", X_OK), 0);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", mport);
		ck_assert_int_eq(harness_run_out(argv, out, sizeof(out), 20000), 0);
		ck_assert_str_eq(out, "200");
	}
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/* ---- 04 ---- */

struct bg_req {
	const char *req;
	char out[1 << 16];
	int code;
	uint64_t ms;
};

static void *bg_http(void *arg)
{
	struct bg_req *r = arg;
	int code = http_from("127.0.0.1", r->req, strlen(r->req), r->out, sizeof(r->out), &r->ms);

	__atomic_store_n(&r->code, code, __ATOMIC_RELEASE);   /* read before the join */
	return NULL;
}

struct bg_ctl {
	char out[4096];
	int rc;
};

static void *bg_reload(void *arg)
{
	struct bg_ctl *c = arg;

	c->rc = rj_ctl(&D, c->out, sizeof(c->out), "reload", (char *)NULL);
	return NULL;
}

START_TEST(t04_healthz_stalled)
{
	static char out[1 << 16];
	static struct bg_req scrape_bg = { .req = GET_METRICS, .code = 0 };
	static struct bg_ctl reload;
	char real[160], fifo2[160];
	pthread_t ts, tr;
	uint64_t ms;
	int code, wfd;

	start("");
	ck_assert_int_eq(http_from("127.0.0.1", "GET /healthz HTTP/1.0\r\n\r\n", 25, out,
				   sizeof(out), NULL), 200);
	/* the configuration becomes a FIFO: the reload's open() blocks
	 * workers[0] until a writer comes (a second name keeps the FIFO
	 * reachable once the real file is back) */
	snprintf(real, sizeof(real), "%s.real", D.conf);
	snprintf(fifo2, sizeof(fifo2), "%s/stall.fifo", D.dir);
	ck_assert_int_eq(rename(D.conf, real), 0);
	ck_assert_int_eq(mkfifo(D.conf, 0600), 0);
	ck_assert_int_eq(link(D.conf, fifo2), 0);
	ck_assert_int_eq(pthread_create(&tr, NULL, bg_reload, &reload), 0);
	usleep(300000);
	ck_assert_int_eq(pthread_create(&ts, NULL, bg_http, &scrape_bg), 0);
	usleep(100000);
	code = http_from("127.0.0.1", "GET /healthz HTTP/1.0\r\n\r\n", 25, out, sizeof(out), &ms);
	fprintf(stderr, "test_net_metrics 04: /healthz with workers[0] stalled: %d after %llu ms: %s",
		code, (unsigned long long)ms, strstr(out, "\r\n\r\n") ? strstr(out, "\r\n\r\n") + 4 : "");
	ck_assert_int_eq(code, 503);
	ck_assert_ptr_nonnull(strstr(out, "\r\n\r\nunhealthy: worker 0 did not answer within 1000 ms\n"));
	ck_assert_uint_ge(ms, 900);
	ck_assert_uint_lt(ms, 2500);
	/* the waiting scrape did not hold it, and still waits */
	ck_assert_int_eq(__atomic_load_n(&scrape_bg.code, __ATOMIC_ACQUIRE), 0);
	/* let workers[0] go: the real file back, then a writer for the FIFO */
	ck_assert_int_eq(rename(real, D.conf), 0);
	wfd = open(fifo2, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(wfd, 0);
	close(wfd);
	pthread_join(tr, NULL);
	pthread_join(ts, NULL);
	fprintf(stderr, "test_net_metrics 04: the scrape queued behind the stall: %d after %llu ms; "
		"reload exit %d\n", scrape_bg.code, (unsigned long long)scrape_bg.ms, reload.rc);
	ck_assert_msg(reload.rc == 0, "reload: %d %s", reload.rc, reload.out);
	ck_assert(scrape_bg.code == 200 || scrape_bg.code == 503);
	ck_assert_int_eq(http_from("127.0.0.1", "GET /healthz HTTP/1.0\r\n\r\n", 25, out,
				   sizeof(out), &ms), 200);
	ck_assert_uint_lt(ms, 1000);
	ck_assert_int_eq(scrape(out, sizeof(out), NULL), 200);
	unlink(fifo2);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_hostile_clients", t01_hostile_clients),
		CK_CASE("02_limits_counted", t02_limits_counted),
		CK_CASE("03_methods_paths", t03_methods_paths),
		CK_CASE("04_healthz_stalled", t04_healthz_stalled),
	};

	signal(SIGPIPE, SIG_IGN);
	return ck_main(&(struct ck_suite_def){ "net_metrics", CK_CASES(cases), .setup = setup,
					       .teardown = teardown, .timeout = 60 });
}
