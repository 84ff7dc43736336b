/*
 * tests/fuzz/fuzz_metrics.c - the metrics endpoint's own request handling
 * (target/daemon/metrics.c): libmicrohttpd parses the bytes, but the
 * accept policy, the per-address count, the request-size check, the
 * routing (metrics_route) and the answers are rtgt's, as is the exposition
 * text, where client-chosen strings (initiator names, ISIDs) become label
 * values.
 *
 * Input, by byte 0:
 *   even: bytes 1.. are sent as a raw request over a loopback TCP
 *         connection to one metrics server started at initialisation (a
 *         made-up snapshot, /healthz alternating 200 and 503 by bit 1),
 *         then the write side is shut and the whole answer read.
 *   odd:  bytes 1.. split at NUL bytes name a session's target, initiator,
 *         ISID and portal and a member's path in a snapshot given to
 *         metrics_format().
 *
 * Properties (HTTP): the server answers or closes within 3 s; an answer is
 * one "HTTP/1.x NNN " status line with a status among those documented;
 * 200 only for GET or HEAD (a NUL inside the method token gets 400), with "Connection: close" and a Content-Length
 * that a GET's body matches exactly and a HEAD sends no body of; the
 * server's connection count returns to zero (the per-address table empties:
 * a scrape from the same address is then always admitted, checked every
 * 256 inputs). (Format) every line is a "# HELP", a "# TYPE" or a sample
 * "name{l="v",...} value" whose label values hold only escaped quotes,
 * backslashes and newlines, so no client string can forge a sample.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "target/daemon/metrics.h"
#include "tests/fuzz/fuzz.h"

static struct metrics *srv;
static uint16_t port;
static bool healthy = true;
static unsigned runs;

static const char *snap_json =
	"{\"luns\":[{\"pool\":\"p\",\"volume\":\"v\",\"read_bytes\":1,\"latency_hist\":[[8,1]]}],"
	"\"sessions\":[],\"pools\":[],\"events\":{\"posted\":1}}";

static int fake_snapshot(void *arg, struct json_object *snap)
{
	struct json_object *src = json_tokener_parse(snap_json);

	if (!src)
		return -ENOMEM;
	json_object_object_foreach(src, k, v)
		json_object_object_add(snap, k, json_object_get(v));
	json_object_put(src);
	return 0;
}

static int fake_health(void *arg, char *why, size_t len)
{
	if (__atomic_load_n(&healthy, __ATOMIC_RELAXED))   /* the server's thread reads it */
		return 0;
	snprintf(why, len, "worker 0 did not answer");
	return -ETIMEDOUT;
}

static void teardown(void)
{
	metrics_stop(srv);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct metrics_limits lim = { 16, 8, 4096, 2 };
	const struct metrics_ops ops = { fake_snapshot, fake_health, NULL };

	char addr[32];
	int rc = -EADDRINUSE;

	conf_log_set_level(CONF_LOG_ERROR);
	/* a port the kernel picks for a throwaway socket (net/ takes no 0) */
	for (unsigned tries = 0; rc == -EADDRINUSE && tries < 20; tries++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(fd, (struct sockaddr *)&a, &al)) {
			perror("fuzz_metrics: a free port");
			exit(1);
		}
		close(fd);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(a.sin_port));
		rc = metrics_start(addr, &lim, &ops, &srv);
	}
	if (rc) {
		fprintf(stderr, "fuzz_metrics: cannot start the server: %s\n", strerror(-rc));
		exit(1);
	}
	port = metrics_port(srv);
	atexit(teardown);
	return 0;
}

static int connect_srv(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	FUZZ_CHECK(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* libFuzzer's timeout alarm (SIGALRM, no SA_RESTART) may interrupt a
	 * connect waiting for the server's accept queue: it then goes on in
	 * the background, and its end is read from SO_ERROR */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		socklen_t el = sizeof(int);
		int err = errno;

		if (err != EINTR) {
			char msg[80];

			snprintf(msg, sizeof(msg), "fuzz_metrics: connect: %s", strerror(err));
			fprintf(stderr, "%s\n", msg);
			__sanitizer_report_error_summary(msg);
			abort();
		}
		while (poll(&pf, 1, 10000) < 0 && errno == EINTR)
			;
		FUZZ_CHECK(!getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) && !err);
	}
	return fd;
}

/* Sends @req, shuts the write side, reads until EOF (3 s at most). */
static size_t exchange(const uint8_t *req, size_t len, char *out, size_t cap)
{
	uint64_t deadline = conf_mono_ms() + 3000;
	int fd = connect_srv();
	size_t got = 0;

	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;   /* the server closed on us: what it sent is read below */
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = conf_mono_ms();
		ssize_t n;

		FUZZ_CHECK(now < deadline);   /* answered or closed in bounded time */
		if (poll(&pf, 1, (int)(deadline - now)) <= 0)
			continue;
		n = recv(fd, out + got, cap - 1 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		FUZZ_CHECK(got < cap - 1);   /* answers are small */
	}
	out[got] = '\0';
	close(fd);
	return got;
}

static bool status_known(int code)
{
	static const int known[] = { 200, 400, 404, 413, 414, 417, 431, 500, 501, 503, 505 };

	for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (code == known[i])
			return true;
	return false;
}

static void check_http(const uint8_t *req, size_t len)
{
	static char out[1 << 16];
	size_t got = exchange(req, len, out, sizeof(out));
	const char *end, *cl;
	int code;

	if (!got)
		return;   /* closed without an answer: allowed for garbage */
	FUZZ_CHECK(got > 13 && !strncmp(out, "HTTP/1.", 7) && (out[7] == '0' || out[7] == '1') &&
		   out[8] == ' ' && out[12] == ' ');
	code = atoi(out + 9);
	FUZZ_CHECK(status_known(code));
	end = strstr(out, "\r\n\r\n");
	FUZZ_CHECK(end != NULL);
	if (code != 200)
		return;
	/* (empty lines before the request line are skipped, RFC 9112 2.2) */
	while (len && (*req == '\r' || *req == '\n')) {
		req++;
		len--;
	}
	FUZZ_CHECK((len >= 4 && !memcmp(req, "GET ", 4)) || (len >= 5 && !memcmp(req, "HEAD ", 5)));
	FUZZ_CHECK(strstr(out, "\r\nConnection: close\r\n") != NULL);
	cl = strstr(out, "\r\nContent-Length: ");
	FUZZ_CHECK(cl && cl < end);
	if (req[0] == 'G')
		FUZZ_CHECK(strtoul(cl + 18, NULL, 10) == got - (size_t)(end + 4 - out));
	else
		FUZZ_CHECK(end + 4 == out + got);
}

/* The label set of a sample: {name="value",...} with valid escapes only. */
static bool labels_ok(const char *p, const char *eol, const char **after)
{
	if (*p != '{') {
		*after = p;
		return true;
	}
	p++;
	while (p < eol && *p != '}') {
		while (p < eol && ((*p >= 'a' && *p <= 'z') || *p == '_'))
			p++;
		if (p + 1 >= eol || p[0] != '=' || p[1] != '"')
			return false;
		for (p += 2; p < eol && *p != '"'; p++)
			if (*p == '\\' && (++p >= eol || (*p != '\\' && *p != '"' && *p != 'n')))
				return false;
		if (p >= eol)
			return false;
		p++;
		if (p < eol && *p == ',')
			p++;
	}
	if (p >= eol)
		return false;
	*after = p + 1;
	return true;
}

static void check_format(const uint8_t *data, size_t len)
{
	const char *f[5] = { "", "", "", "", "" };
	char *copy = malloc(len + 1), *text = NULL, *p;
	struct json_object *snap, *sess, *s, *pools, *pool, *ms, *m;
	size_t tlen, n = 0;

	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, len);
	copy[len] = '\0';
	for (p = copy; n < 5 && p <= copy + len; p += strlen(p) + 1)
		f[n++] = p;
	snap = json_object_new_object();
	sess = json_object_new_array();
	s = json_object_new_object();
	json_object_object_add(s, "target", json_object_new_string(f[0]));
	json_object_object_add(s, "initiator", json_object_new_string(f[1]));
	json_object_object_add(s, "isid", json_object_new_string(f[2]));
	json_object_object_add(s, "portal_name", json_object_new_string(f[3]));
	json_object_array_add(sess, s);
	json_object_object_add(snap, "sessions", sess);
	pools = json_object_new_array();
	pool = json_object_new_object();
	ms = json_object_new_array();
	m = json_object_new_object();
	json_object_object_add(pool, "name", json_object_new_string(f[0]));
	json_object_object_add(m, "path", json_object_new_string(f[4]));
	json_object_object_add(m, "state", json_object_new_string(f[1]));
	json_object_array_add(ms, m);
	json_object_object_add(pool, "members", ms);
	json_object_array_add(pools, pool);
	json_object_object_add(snap, "pools", pools);
	FUZZ_CHECK(metrics_format(snap, &text, &tlen) == 0);
	FUZZ_CHECK(strlen(text) == tlen && tlen && text[tlen - 1] == '\n');
	for (const char *l = text; *l;) {
		const char *eol = strchr(l, '\n'), *after;

		FUZZ_CHECK(eol != NULL);
		if (!strncmp(l, "# HELP rtgt_", 12) || !strncmp(l, "# TYPE rtgt_", 12)) {
			l = eol + 1;
			continue;
		}
		FUZZ_CHECK(!strncmp(l, "rtgt_", 5));
		while (l < eol && ((*l >= 'a' && *l <= 'z') || *l == '_'))
			l++;
		FUZZ_CHECK(labels_ok(l, eol, &after));
		FUZZ_CHECK(after < eol && *after == ' ');
		strtod(after + 1, &p);
		FUZZ_CHECK(p == eol);
		l = eol + 1;
	}
	free(text);
	json_object_put(snap);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1) {
		check_format(data + 1, size - 1);
		return 0;
	}
	__atomic_store_n(&healthy, !(data[0] & 2), __ATOMIC_RELAXED);
	check_http(data + 1, size - 1);
	/* every connection's slot comes back: a scrape is always admitted */
	if (++runs % 256 == 0) {
		static const uint8_t get[] = "GET /metrics HTTP/1.0\r\n\r\n";
		static char out[1 << 16];
		uint64_t deadline = conf_mono_ms() + 3000;

		/* closed connections are released by the server's listening
		 * thread just after they end */
		for (;;) {
			size_t got = exchange(get, sizeof(get) - 1, out, sizeof(out));

			if (got > 12 && !strncmp(out + 9, "200", 3))
				break;
			FUZZ_CHECK(conf_mono_ms() < deadline);
			usleep(10000);
		}
	}
	return 0;
}
