/*
 * tests/unit/test_metrics.c - target/daemon/metrics.c: the exposition text
 * of a made-up snapshot (families declared once with HELP and TYPE before
 * their samples, counters and gauges from the snapshot's numbers, label
 * values escaped, histograms on fixed bounds, cumulative, +Inf = _count,
 * _sum in seconds), and the HTTP server on a loopback port picked by the
 * kernel: 03 GET and HEAD of /metrics 200 with the content type (HEAD
 * without the body), /healthz 200 or 503 with the reason, other paths and
 * methods 404, malformed requests 400, request line and headers over
 * max_request 431 (ours and libmicrohttpd's) or 414, a failed snapshot
 * 503; 04 the limits: silent connections do not delay a scrape and are
 * closed (and counted) after the idle timeout, connections over the
 * per-address and total caps are closed at once and counted.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "target/daemon/metrics.h"
#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"

static const char *snap_json =
	"{\"luns\":[{\"pool\":\"tank\",\"volume\":\"v\\\"0\",\"read_bytes\":1000,\"write_bytes\":2000,"
	"\"read_ops\":3,\"write_ops\":4,\"other_ops\":5,\"latency_count\":6,\"latency_sum_us\":1500,"
	"\"latency_hist\":[[3,1],[100,2],[2048,2],[40000000,1]]}],"
	"\"sessions\":[{\"target\":\"iqn.x:t\",\"initiator\":\"iqn.y:i\",\"isid\":\"abc\","
	"\"portal_name\":\"nic1\",\"read_bytes\":7,\"write_bytes\":8,\"read_ops\":1,\"write_ops\":1,"
	"\"other_ops\":0,\"latency_sum_us\":0,\"latency_hist\":[]}],"
	"\"pools\":[{\"name\":\"tank\",\"level\":\"raid5\",\"state\":\"rebuilding\","
	"\"rebuild_progress\":0.25,\"scrub_state\":\"idle\",\"scrub_mismatches\":2,"
	"\"members\":[{\"path\":\"/dev/sdb\",\"state\":\"active\",\"read_bytes\":11,"
	"\"write_bytes\":12,\"read_ops\":1,\"write_ops\":2,\"busy_ns\":1500000000,"
	"\"read_hist\":[[64,10]],\"write_hist\":[[1024,3],[2048,1]],\"read_lat_sum_us\":400,"
	"\"write_lat_sum_us\":4000,\"read_lat_max_us\":60,\"write_lat_max_us\":1900,"
	"\"slow\":true,\"health\":{\"state\":\"warning\",\"temperature_c\":36,"
	"\"pending_sectors\":8,\"reallocated_sectors\":16}},"
	"{\"path\":\"d1\\nx\",\"state\":\"rebuilding\",\"read_bytes\":0,\"write_bytes\":0,"
	"\"read_ops\":0,\"write_ops\":0,\"busy_ns\":0,\"read_hist\":[],\"write_hist\":[],"
	"\"slow\":false}]}],"
	"\"events\":{\"posted\":9,\"dropped\":1,\"hook_runs\":8,\"hook_failures\":2,\"hook_timeouts\":1},"
	"\"invariant_failures\":3}";

static char *format(void)
{
	struct json_object *snap = json_tokener_parse(snap_json);
	char *text;
	size_t len;

	ck_assert_ptr_nonnull(snap);
	ck_assert_int_eq(metrics_format(snap, &text, &len), 0);
	ck_assert_uint_eq(strlen(text), len);
	json_object_put(snap);
	return text;
}

static bool has_line(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

#define LINE(t, l) ck_assert_msg(has_line(t, l), "no line: %s", l)

START_TEST(t01_format_values)
{
	char *t = format();

	LINE(t, "# HELP rtgt_lun_read_bytes_total Bytes read from the LUN by initiators.");
	LINE(t, "# TYPE rtgt_lun_read_bytes_total counter");
	LINE(t, "rtgt_lun_read_bytes_total{pool=\"tank\",volume=\"v\\\"0\"} 1000");
	LINE(t, "rtgt_lun_write_bytes_total{pool=\"tank\",volume=\"v\\\"0\"} 2000");
	LINE(t, "rtgt_lun_other_ops_total{pool=\"tank\",volume=\"v\\\"0\"} 5");
	/* buckets: 3 us -> le 4e-06; 100 -> 0.000128; 2048 -> 0.002048; 40 s -> +Inf */
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"4e-06\"} 1");
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"6.4e-05\"} 1");
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"0.000128\"} 3");
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"0.002048\"} 5");
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"16.777216\"} 5");
	LINE(t, "rtgt_lun_latency_seconds_bucket{pool=\"tank\",volume=\"v\\\"0\",le=\"+Inf\"} 6");
	LINE(t, "rtgt_lun_latency_seconds_sum{pool=\"tank\",volume=\"v\\\"0\"} 0.0015");
	LINE(t, "rtgt_lun_latency_seconds_count{pool=\"tank\",volume=\"v\\\"0\"} 6");
	LINE(t, "rtgt_sessions{target=\"iqn.x:t\"} 1");
	LINE(t, "rtgt_session_write_bytes_total{target=\"iqn.x:t\",initiator=\"iqn.y:i\",isid=\"abc\",portal=\"nic1\"} 8");
	LINE(t, "rtgt_session_latency_seconds_count{target=\"iqn.x:t\",initiator=\"iqn.y:i\",isid=\"abc\",portal=\"nic1\"} 0");
	LINE(t, "rtgt_pool_state{pool=\"tank\",level=\"raid5\",state=\"rebuilding\"} 1");
	LINE(t, "rtgt_pool_state{pool=\"tank\",level=\"raid5\",state=\"optimal\"} 0");
	LINE(t, "rtgt_rebuild_progress_ratio{pool=\"tank\"} 0.25");
	LINE(t, "rtgt_scrub_running{pool=\"tank\"} 0");
	LINE(t, "rtgt_scrub_mismatches{pool=\"tank\"} 2");
	LINE(t, "rtgt_member_write_bytes_total{pool=\"tank\",member=\"/dev/sdb\"} 12");
	LINE(t, "rtgt_member_busy_seconds_total{pool=\"tank\",member=\"/dev/sdb\"} 1.5");
	LINE(t, "rtgt_member_latency_seconds_bucket{pool=\"tank\",member=\"/dev/sdb\",op=\"write\",le=\"0.001024\"} 3");
	LINE(t, "rtgt_member_latency_seconds_bucket{pool=\"tank\",member=\"/dev/sdb\",op=\"write\",le=\"0.002048\"} 4");
	LINE(t, "rtgt_member_latency_seconds_sum{pool=\"tank\",member=\"/dev/sdb\",op=\"write\"} 0.004");
	LINE(t, "rtgt_member_latency_seconds_count{pool=\"tank\",member=\"/dev/sdb\",op=\"read\"} 10");
	LINE(t, "rtgt_member_latency_max_seconds{pool=\"tank\",member=\"/dev/sdb\",op=\"write\"} 0.0019");
	LINE(t, "rtgt_member_state{pool=\"tank\",member=\"/dev/sdb\",state=\"active\"} 1");
	LINE(t, "rtgt_member_state{pool=\"tank\",member=\"d1\\nx\",state=\"rebuilding\"} 1");
	LINE(t, "rtgt_member_slow{pool=\"tank\",member=\"/dev/sdb\"} 1");
	LINE(t, "rtgt_member_slow{pool=\"tank\",member=\"d1\\nx\"} 0");
	LINE(t, "rtgt_member_health{pool=\"tank\",member=\"/dev/sdb\",state=\"warning\"} 1");
	LINE(t, "rtgt_member_health{pool=\"tank\",member=\"/dev/sdb\",state=\"passed\"} 0");
	LINE(t, "rtgt_member_temperature_celsius{pool=\"tank\",member=\"/dev/sdb\"} 36");
	LINE(t, "rtgt_member_pending_sectors{pool=\"tank\",member=\"/dev/sdb\"} 8");
	LINE(t, "rtgt_member_reallocated_sectors{pool=\"tank\",member=\"/dev/sdb\"} 16");
	LINE(t, "rtgt_events_total 9");
	LINE(t, "rtgt_events_dropped_total 1");
	LINE(t, "rtgt_event_hook_timeouts_total 1");
	LINE(t, "# TYPE rtgt_invariant_failures_total counter");
	LINE(t, "rtgt_invariant_failures_total 3");
	/* a member without a health entry (a file) has no health samples */
	ck_assert_ptr_null(strstr(t, "rtgt_member_health{pool=\"tank\",member=\"d1"));
	free(t);
}
END_TEST

/* Structure: every family once, HELP then TYPE, samples only after their
 * family's TYPE and before the next HELP, counters named _total. */
START_TEST(t02_format_structure)
{
	char *t = format(), *save = NULL, fam[128] = "", type[32] = "";
	static char seen[256][128];
	unsigned n = 0, samples = 0;

	for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (!strncmp(l, "# HELP ", 7)) {
			ck_assert_int_eq(sscanf(l + 7, "%127s", fam), 1);
			for (unsigned k = 0; k < n; k++)
				ck_assert_msg(strcmp(seen[k], fam), "%s twice", fam);
			snprintf(seen[n++], sizeof(seen[0]), "%s", fam);
			type[0] = '\0';
			continue;
		}
		if (!strncmp(l, "# TYPE ", 7)) {
			ck_assert_int_eq(sscanf(l + 7, "%127s %31s", name, type), 2);
			ck_assert_str_eq(name, fam);
			if (!strcmp(type, "counter"))
				ck_assert_msg(strstr(name, "_total") == name + strlen(name) - 6, "%s", name);
			continue;
		}
		ck_assert_msg(type[0], "sample before its TYPE: %s", l);
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(l, "{ "), l);
		if (!strcmp(type, "histogram"))
			ck_assert_msg(!strncmp(name, fam, strlen(fam)) &&
				      (!strcmp(name + strlen(fam), "_bucket") ||
				       !strcmp(name + strlen(fam), "_sum") ||
				       !strcmp(name + strlen(fam), "_count")), "%s in %s", name, fam);
		else
			ck_assert_str_eq(name, fam);
		samples++;
	}
	ck_assert_uint_gt(n, 30);
	ck_assert_uint_gt(samples, 100);
	free(t);
}
END_TEST

/* ---- the server ---- */

static int snap_rc;

static int fake_snapshot(void *arg, struct json_object *snap)
{
	struct json_object *src = json_tokener_parse(snap_json);

	ck_assert_ptr_eq(arg, &snap_rc);
	json_object_object_foreach(src, k, v)
		json_object_object_add(snap, k, json_object_get(v));
	json_object_put(src);
	return snap_rc;
}

#define REQ(s) s, strlen(s)

/* Sends @req on a new connection; the whole answer into @out. */
static ssize_t http(uint16_t port, const char *req, size_t reqlen, char *out, size_t len)
{
	int fd = harness_tcp_connect(port);
	ssize_t got = 0;

	ck_assert_int_ge(fd, 0);
	if (reqlen)
		ck_assert_int_eq(harness_tcp_send(fd, req, reqlen), 0);
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, 10000) <= 0)
			break;
		n = recv(fd, out + got, len - 1 - (size_t)got, 0);
		if (n <= 0)
			break;
		got += n;
	}
	out[got] = '\0';
	close(fd);
	return got;
}

static int health_rc;

static int fake_health(void *arg, char *why, size_t len)
{
	ck_assert_ptr_eq(arg, &snap_rc);
	if (health_rc)
		snprintf(why, len, "worker 1 did not answer within 1000 ms");
	return health_rc;
}

static const struct metrics_ops fake_ops = { fake_snapshot, fake_health, &snap_rc };

static struct metrics *start(uint16_t *port, const struct metrics_limits *lim)
{
	struct metrics *m;
	char addr[32];

	ck_assert_int_eq(harness_free_port(port), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", *port);
	ck_assert_int_eq(metrics_start(addr, lim, &fake_ops, &m), 0);
	ck_assert_uint_eq(metrics_port(m), *port);
	return m;
}

static unsigned long content_length(const char *out)
{
	const char *p = strstr(out, "Content-Length: ");

	ck_assert_msg(p != NULL, "%.300s", out);
	return strtoul(p + 16, NULL, 10);
}

/* The requests: paths, methods, versions, sizes, a failed snapshot. */
START_TEST(t03_server)
{
	static char out[1 << 20];
	const struct metrics_limits lim = { 8, 4, 2048, 1 };
	struct metrics *m;
	uint16_t port;
	unsigned long glen;
	char *big;

	conf_log_set_level(CONF_LOG_ERROR);
	m = start(&port, &lim);
	/* 1.0 and 1.1 requests, a query string */
	ck_assert_int_gt(http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_ptr_nonnull(strstr(out, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "Connection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_events_total 9\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_metrics_refused_total{reason=\"too_large\"} 0\n"));
	glen = content_length(out);
	ck_assert_uint_eq(glen, strlen(strstr(out, "\r\n\r\n") + 4));
	ck_assert_int_gt(http(port, REQ("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	/* HEAD: the same headers, no body */
	ck_assert_int_gt(http(port, REQ("HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_ptr_nonnull(strstr(out, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	ck_assert_uint_eq(content_length(out), glen);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\n");
	/* /healthz */
	ck_assert_int_gt(http(port, REQ("GET /healthz HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\nok\n");
	health_rc = -ETIMEDOUT;
	ck_assert_int_gt(http(port, REQ("GET /healthz HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 503 ", 13), 0);
	ck_assert_ptr_nonnull(strstr(out, "\r\n\r\nunhealthy: worker 1 did not answer within 1000 ms\n"));
	ck_assert_int_gt(http(port, REQ("HEAD /healthz HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 503 ", 13), 0);
	ck_assert_str_eq(strstr(out, "\r\n\r\n"), "\r\n\r\n");
	health_rc = 0;
	/* anything else */
	http(port, REQ("GET / HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("GET /metricsfoo HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("GET /healthz/ HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	/* malformed: HTTP/0.9, no method */
	http(port, REQ("GET /metrics\r\n\r\n"), out, sizeof(out));
	ck_assert_msg(strstr(out, " 400 ") == out + 8, "%.100s", out);
	http(port, REQ("GET /metrics HTTP/1.0\r\nno colon\r\n\r\n"), out, sizeof(out));
	ck_assert_msg(strstr(out, " 400 ") == out + 8, "%.100s", out);
	/* garbage: closed without an answer */
	http(port, REQ("\x01\x02 x\r\n\r\n"), out, sizeof(out));
	ck_assert_msg(!out[0] || strstr(out, " 400 ") == out + 8, "%.100s", out);
	/* headers over max_request, within libmicrohttpd's memory: ours */
	big = malloc(64 << 10);
	memset(big, 'a', 64 << 10);
	memcpy(big, "GET /metrics HTTP/1.0\r\nX: ", 26);
	memcpy(big + 2100, "\r\n\r\n", 4);
	http(port, big, 2104, out, sizeof(out));
	ck_assert_msg(!strncmp(out, "HTTP/1.0 431 ", 13), "%.100s", out);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_TOO_LARGE), 1);
	/* far over it: libmicrohttpd's 431, counted too */
	memset(big + 2100, 'a', 4);
	http(port, big, 64 << 10, out, sizeof(out));
	ck_assert_msg(!strncmp(out, "HTTP/1.1 431 ", 13), "%.100s", out);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_TOO_LARGE), 2);
	/* ... and a request line alone too long: 414 */
	memset(big + 5, 'a', 30);   /* no end of the request line */
	http(port, big, 64 << 10, out, sizeof(out));
	ck_assert_msg(!strncmp(out, "HTTP/1.1 414 ", 13), "%.100s", out);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_TOO_LARGE), 3);
	free(big);
	/* exactly max_request still served */
	{
		char req[2048];

		memset(req, 'b', sizeof(req));
		memcpy(req, "GET /metrics HTTP/1.0\r\nX: ", 26);
		memcpy(req + sizeof(req) - 4, "\r\n\r\n", 4);
		http(port, req, sizeof(req), out, sizeof(out));
		ck_assert_msg(!strncmp(out, "HTTP/1.0 200 OK\r\n", 17), "%.100s", out);
	}
	ck_assert_int_gt(http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_metrics_refused_total{reason=\"too_large\"} 3\n"));
	/* a failed snapshot */
	snap_rc = -ETIMEDOUT;
	http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 503 ", 13), 0);
	snap_rc = 0;
	metrics_stop(m);
	/* the port is free again */
	ck_assert_int_lt(harness_tcp_connect(port), 0);
	/* an address in use, a bad address, a bad limit */
	m = start(&port, &lim);
	{
		struct metrics *m2;
		const struct metrics_limits zero = { 0, 1, 2048, 1 };
		char addr[32];

		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		ck_assert_int_eq(metrics_start(addr, &lim, &fake_ops, &m2), -EADDRINUSE);
		ck_assert_int_eq(metrics_start("nonsense", &lim, &fake_ops, &m2), -EINVAL);
		ck_assert_int_eq(metrics_start("127.0.0.1:0", &zero, &fake_ops, &m2), -EINVAL);
	}
	metrics_stop(m);
}
END_TEST

/* The limits: silent connections do not hold a scrape, are closed after
 * the idle timeout and counted; connections over the per-address and
 * total caps are closed at once and counted. */
START_TEST(t04_limits)
{
	static char out[1 << 20];
	const struct metrics_limits lim = { 6, 3, 2048, 1 };
	struct metrics *m;
	uint16_t port;
	uint64_t t0;
	int fd[8];
	char b[16];

	conf_log_set_level(CONF_LOG_ERROR);
	m = start(&port, &lim);
	/* 3 silent from 127.0.0.1 (its whole share): the next from it is refused */
	for (unsigned i = 0; i < 3; i++) {
		fd[i] = harness_tcp_connect(port);
		ck_assert_int_ge(fd[i], 0);
	}
	usleep(200000);
	fd[3] = harness_tcp_connect(port);
	ck_assert_int_ge(fd[3], 0);
	ck_assert_int_le(harness_tcp_recv(fd[3], b, sizeof(b), 2000), 0);   /* closed, nothing sent */
	close(fd[3]);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_PER_ADDRESS), 1);
	/* 3 more silent from 127.0.0.2: the total is reached, 127.0.0.3 refused */
	for (unsigned i = 4; i < 8; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		struct sockaddr_in src = { .sin_family = AF_INET };

		inet_pton(AF_INET, i < 7 ? "127.0.0.2" : "127.0.0.3", &src.sin_addr);
		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(fd[i], 0);
		ck_assert_int_eq(bind(fd[i], (struct sockaddr *)&src, sizeof(src)), 0);
		ck_assert_int_eq(connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	ck_assert_int_le(harness_tcp_recv(fd[7], b, sizeof(b), 2000), 0);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_CONNECTIONS), 1);
	/* the silent ones are closed after the 1 s idle timeout, and counted */
	for (unsigned i = 0; i < 7; i++)
		if (i != 3) {
			ck_assert_int_le(harness_tcp_recv(fd[i], b, sizeof(b), 3000), 0);
			close(fd[i]);
		}
	close(fd[7]);
	usleep(200000);
	ck_assert_uint_eq(metrics_refused(m, METRICS_REFUSED_TIMEOUT), 6);
	/* while 5 sit silent (one short of the cap), a scrape is answered at once */
	for (unsigned i = 0; i < 2; i++)
		fd[i] = harness_tcp_connect(port);
	for (unsigned i = 2; i < 5; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		struct sockaddr_in src = { .sin_family = AF_INET };

		inet_pton(AF_INET, "127.0.0.2", &src.sin_addr);
		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_eq(bind(fd[i], (struct sockaddr *)&src, sizeof(src)), 0);
		ck_assert_int_eq(connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	t0 = harness_now_ms();
	http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_uint_lt(harness_now_ms() - t0, 500);
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_metrics_refused_total{reason=\"connections\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_metrics_refused_total{reason=\"per_address\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_metrics_refused_total{reason=\"timeout\"} 6\n"));
	for (unsigned i = 0; i < 5; i++)
		close(fd[i]);
	/* stopped with connections still open: nothing left behind (LSan) */
	fd[0] = harness_tcp_connect(port);
	usleep(100000);
	metrics_stop(m);
	close(fd[0]);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_format_values", t01_format_values),
		CK_CASE("02_format_structure", t02_format_structure),
		CK_CASE("03_server", t03_server),
		CK_CASE("04_limits", t04_limits),
	};

	return ck_main(&(struct ck_suite_def){ "metrics", CK_CASES(cases), .timeout = 60 });
}
