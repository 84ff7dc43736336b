/*
 * tests/unit/test_metrics.c - target/daemon/metrics.c: the exposition text
 * of a made-up snapshot (families declared once with HELP and TYPE before
 * their samples, counters and gauges from the snapshot's numbers, label
 * values escaped, histograms on fixed bounds, cumulative, +Inf = _count,
 * _sum in seconds), and the HTTP server on a loopback port picked by the
 * kernel (GET /metrics 200 with the content type, other paths and methods
 * 404, an over-long or silent request 400 within the I/O bound, a failed
 * snapshot 503, one slow client not blocking the next for longer than the
 * bound).
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

START_TEST(t03_server)
{
	static char out[1 << 20];
	struct metrics *m;
	uint16_t port;
	uint64_t t0;
	char *big;
	int slow;

	char addr[32];

	conf_log_set_level(CONF_LOG_ERROR);
	ck_assert_int_eq(harness_free_port(&port), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(metrics_start(addr, fake_snapshot, &snap_rc, &m), 0);
	ck_assert_uint_eq(metrics_port(m), port);
	/* 1.0 and 1.1 requests, a query string */
	ck_assert_int_gt(http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_ptr_nonnull(strstr(out, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "Connection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nrtgt_events_total 9\n"));
	{
		char *body = strstr(out, "\r\n\r\n") + 4;
		unsigned long clen = strtoul(strstr(out, "Content-Length: ") + 16, NULL, 10);

		ck_assert_uint_eq(clen, strlen(body));
	}
	ck_assert_int_gt(http(port, REQ("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_int_gt(http(port, REQ("GET /metrics HTTP/1.0\n\n"), out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	/* anything else */
	http(port, REQ("GET / HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("POST /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("GET /metricsfoo HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	http(port, REQ("GET /metrics\r\n\r\n"), out, sizeof(out));   /* HTTP/0.9 */
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 404 ", 13), 0);
	/* too long */
	big = malloc(METRICS_REQ_MAX + 100);
	memset(big, 'a', METRICS_REQ_MAX + 100);
	memcpy(big, "GET /metrics HTTP/1.0\r\nX: ", 26);
	http(port, big, METRICS_REQ_MAX + 100, out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 400 ", 13), 0);
	free(big);
	/* silent: 400 after the bound; the next client is served after it */
	slow = harness_tcp_connect(port);
	ck_assert_int_ge(slow, 0);
	t0 = harness_now_ms();
	http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 200 OK\r\n", 17), 0);
	ck_assert_uint_lt(harness_now_ms() - t0, METRICS_IO_MS + 2000);
	{
		char b[64];
		ssize_t n = harness_tcp_recv(slow, b, 12, 5000);

		ck_assert_int_eq(n, 12);
		ck_assert_int_eq(memcmp(b, "HTTP/1.0 400", 12), 0);
	}
	close(slow);
	/* a failed snapshot */
	snap_rc = -ETIMEDOUT;
	http(port, REQ("GET /metrics HTTP/1.0\r\n\r\n"), out, sizeof(out));
	ck_assert_int_eq(strncmp(out, "HTTP/1.0 503 ", 13), 0);
	snap_rc = 0;
	metrics_stop(m);
	/* the port is free again */
	ck_assert_int_lt(harness_tcp_connect(port), 0);
	/* an address in use */
	ck_assert_int_eq(metrics_start(addr, fake_snapshot, &snap_rc, &m), 0);
	{
		struct metrics *m2;

		ck_assert_int_eq(metrics_start(addr, fake_snapshot, &snap_rc, &m2), -EADDRINUSE);
		ck_assert_int_eq(metrics_start("nonsense", fake_snapshot, &snap_rc, &m2), -EINVAL);
	}
	metrics_stop(m);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_format_values", t01_format_values),
		CK_CASE("02_format_structure", t02_format_structure),
		CK_CASE("03_server", t03_server),
	};

	return ck_main(&(struct ck_suite_def){ "metrics", CK_CASES(cases), .timeout = 60 });
}
