/*
 * tests/unit/test_health.c - target/daemon/health.c: the smartctl JSON
 * parser on the samples in tests/data/smartctl (ATA passed, pending
 * sectors, failing; NVMe passed and critical; SCSI grown defects; standby;
 * a loop device), smartctl run through a stand-in chosen by path (its
 * arguments, a hanging one killed at the timeout, a missing one), the real
 * smartctl on a loop device ("unavailable", not an error; skipped with the
 * reason where losetup cannot attach), the health thread's status entries
 * and events, and the slow-member check.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target/daemon/events.h"
#include "target/daemon/health.h"
#include "tests/lib/ckmain.h"

#define DATA "tests/data/smartctl/"

static char dir[64];
static char loopdev[128];   /* attached by 05, detached in teardown */
/* a failed check _exit()s the case without teardown: main() detaches
 * what is listed here */
static char loop_list[64];

static void setup(void)
{
	strcpy(dir, "/tmp/rtgt-health-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	conf_log_set_level(CONF_LOG_ERROR);
}

static void teardown(void)
{
	char cmd[256];

	if (loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loopdev);
		ck_assert_int_eq(system(cmd), 0);
		loopdev[0] = '\0';
	}

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = malloc(1 << 20);

	ck_assert_msg(f != NULL, "cannot open %s (run from the source tree)", path);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void parse_file(const char *name, int exit_status, struct health_info *hi)
{
	char path[256];
	size_t len;
	char *buf;

	snprintf(path, sizeof(path), DATA "%s", name);
	buf = slurp(path, &len);
	ck_assert_int_eq(health_parse(buf, len, exit_status, hi), 0);
	free(buf);
}

/* A copy of the stand-in in dir with @dev's sample (NULL: none); returns
 * the stand-in's path (static). */
static const char *standin(const char *devname, const char *sample)
{
	static char path[160];
	char cmd[512];

	snprintf(path, sizeof(path), "%s/smartctl", dir);
	snprintf(cmd, sizeof(cmd), "cp " DATA "standin.sh %s", path);
	ck_assert_int_eq(system(cmd), 0);
	if (sample) {
		snprintf(cmd, sizeof(cmd), "cp " DATA "%s %s/%s.json", sample, dir, devname);
		ck_assert_int_eq(system(cmd), 0);
	}
	return path;
}

START_TEST(t01_parse_samples)
{
	struct health_info hi;

	parse_file("ata-passed.json", 0, &hi);
	ck_assert_int_eq(hi.state, HEALTH_PASSED);
	ck_assert_str_eq(hi.protocol, "ATA");
	ck_assert_str_eq(hi.model, "WDC WD40EFRX-68N32N0");
	ck_assert_int_eq(hi.reallocated, 0);
	ck_assert_int_eq(hi.pending, 0);
	ck_assert_int_eq(hi.uncorrectable, 0);
	ck_assert_int_eq(hi.temperature_c, 34);
	ck_assert_int_eq(hi.media_errors, -1);
	ck_assert_str_eq(hi.reason, "");

	parse_file("ata-pending.json", 0, &hi);
	ck_assert_int_eq(hi.state, HEALTH_WARNING);
	ck_assert_int_eq(hi.reallocated, 16);
	ck_assert_int_eq(hi.pending, 8);
	ck_assert_int_eq(hi.uncorrectable, 2);
	ck_assert_int_eq(hi.temperature_c, 36);
	ck_assert_str_eq(hi.reason, "16 reallocated, 8 pending, 2 uncorrectable sectors");

	parse_file("ata-failing.json", 0, &hi);
	ck_assert_int_eq(hi.state, HEALTH_FAILING);
	ck_assert_int_eq(hi.exit_status, 24);
	ck_assert_int_eq(hi.reallocated, 1958);
	ck_assert_str_eq(hi.reason, "SMART overall-health self-assessment: FAILED");

	parse_file("ata-standby.json", 2, &hi);
	ck_assert_int_eq(hi.state, HEALTH_STANDBY);

	parse_file("nvme-passed.json", 0, &hi);
	ck_assert_int_eq(hi.state, HEALTH_PASSED);
	ck_assert_str_eq(hi.protocol, "NVMe");
	ck_assert_int_eq(hi.media_errors, 0);
	ck_assert_int_eq(hi.percentage_used, 3);
	ck_assert_int_eq(hi.temperature_c, 38);
	ck_assert_int_eq(hi.reallocated, -1);

	parse_file("nvme-critical.json", 8, &hi);
	ck_assert_int_eq(hi.state, HEALTH_FAILING);
	ck_assert_int_eq(hi.media_errors, 12);
	ck_assert_int_eq(hi.percentage_used, 97);

	parse_file("scsi-defects.json", 0, &hi);
	ck_assert_int_eq(hi.state, HEALTH_WARNING);
	ck_assert_str_eq(hi.protocol, "SCSI");
	ck_assert_int_eq(hi.reallocated, 3);
	ck_assert_int_eq(hi.temperature_c, 31);

	parse_file("loop-unavailable.json", 1, &hi);
	ck_assert_int_eq(hi.state, HEALTH_UNAVAILABLE);
	ck_assert_str_eq(hi.reason, "/dev/loop0: Unable to detect device type");
}
END_TEST

/* Exit status bits alone, NVMe critical warning alone, and what is not
 * smartctl JSON. */
START_TEST(t02_parse_rules)
{
	struct health_info hi;
	const char *prefail =
		"{\"smartctl\":{\"exit_status\":16},\"smart_status\":{\"passed\":true},"
		"\"ata_smart_attributes\":{\"table\":[{\"id\":5,\"raw\":{\"value\":0}}]}}";
	const char *nvme =
		"{\"smartctl\":{\"exit_status\":0},\"smart_status\":{\"passed\":true},"
		"\"nvme_smart_health_information_log\":{\"critical_warning\":4,\"media_errors\":0}}";

	ck_assert_int_eq(health_parse(prefail, strlen(prefail), 0, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_FAILING);
	ck_assert_str_eq(hi.reason, "a pre-failure attribute is at or below its threshold");
	ck_assert_int_eq(health_parse(nvme, strlen(nvme), 0, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_FAILING);
	ck_assert_str_eq(hi.reason, "NVMe critical warning 0x04");
	ck_assert_int_eq(health_parse("", 0, 1, &hi), -EINVAL);
	ck_assert_int_eq(health_parse("not json", 8, 1, &hi), -EINVAL);
	ck_assert_int_eq(health_parse("[1,2]", 5, 0, &hi), -EINVAL);
	ck_assert_int_eq(health_parse("{\"a\":1}", 7, 0, &hi), -EINVAL);
	/* a truncated report */
	ck_assert_int_eq(health_parse(prefail, 30, 0, &hi), -EINVAL);
}
END_TEST

/* The stand-in at a configured path gets smartctl's arguments and its
 * output is parsed; a device it does not know is "unavailable". */
START_TEST(t03_query_standin)
{
	struct health_info hi;
	char log[160], *calls;
	size_t len;

	ck_assert_int_eq(health_query(standin("sdq", "ata-pending.json"), "/dev/sdq", 5000, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_WARNING);
	ck_assert_int_eq(hi.pending, 8);
	ck_assert_int_eq(health_query(standin("sdq", NULL), "/dev/sdz", 5000, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_UNAVAILABLE);
	ck_assert_str_eq(hi.reason, "/dev/sdz: Unable to detect device type");
	snprintf(log, sizeof(log), "%s/calls.log", dir);
	calls = slurp(log, &len);
	ck_assert_str_eq(calls, "--json=c -n standby -H -A -i /dev/sdq\n"
				"--json=c -n standby -H -A -i /dev/sdz\n");
	free(calls);
}
END_TEST

/* A smartctl that hangs is killed at the timeout; one that does not exist
 * or prints no JSON is "unavailable" with the reason. */
START_TEST(t04_query_hang_missing_garbage)
{
	struct health_info hi;
	char p[160];
	double t0;
	FILE *f;

	standin("sdh", "ata-passed.json");
	snprintf(p, sizeof(p), "%s/sdh.sleep", dir);
	f = fopen(p, "w");
	fputs("30\n", f);
	fclose(f);
	t0 = now_s();
	ck_assert_int_eq(health_query(standin("sdh", NULL), "/dev/sdh", 300, &hi), -ETIMEDOUT);
	ck_assert_msg(now_s() - t0 < 3, "took %.2f s", now_s() - t0);
	ck_assert_str_eq(hi.reason, "smartctl did not finish within 300 ms");

	snprintf(p, sizeof(p), "%s/no-such-smartctl", dir);
	ck_assert_int_eq(health_query(p, "/dev/sda", 1000, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_UNAVAILABLE);
	ck_assert_ptr_nonnull(strstr(hi.reason, "cannot run"));

	ck_assert_int_eq(health_query("/bin/echo", "/dev/sda", 1000, &hi), 0);
	ck_assert_int_eq(hi.state, HEALTH_UNAVAILABLE);
	ck_assert_str_eq(hi.reason, "/bin/echo gave no JSON (exit status 0)");
}
END_TEST

/* losetup a file; "" when that is not possible here (reason in @why). */
static void loop_attach(char *dev, size_t len, char *why, size_t wlen)
{
	char img[160], cmd[320];
	FILE *p;
	int fd;

	dev[0] = '\0';
	snprintf(img, sizeof(img), "%s/loop.img", dir);
	fd = open(img, O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 16 << 20), 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "losetup -f --show %s 2>&1", img);
	p = popen(cmd, "r");
	if (!p || !fgets(dev, (int)len, p)) {
		snprintf(why, wlen, "losetup printed nothing");
		dev[0] = '\0';
	}
	if (p && pclose(p) != 0) {
		snprintf(why, wlen, "losetup -f failed: %s", dev);
		dev[0] = '\0';
	}
	dev[strcspn(dev, "\n")] = '\0';
	snprintf(loopdev, sizeof(loopdev), "%s", dev);
	if (dev[0]) {
		FILE *f = fopen(loop_list, "a");

		ck_assert_ptr_nonnull(f);
		fprintf(f, "%s\n", dev);
		fclose(f);
	}
}

/* The real smartctl on a loop device: no SMART, "unavailable", not an
 * error; then the health thread with the stand-in on the same loop device:
 * status entry, one member_health event per change, the failing callback
 * once. */
static unsigned failing_calls;
static char failing_path[256];

static void on_failing(void *arg, const char *pool, const char *path)
{
	ck_assert_str_eq(pool, "tank");
	snprintf(failing_path, sizeof(failing_path), "%s", path);
	failing_calls++;
}

START_TEST(t05_loop_device)
{
	char dev[128], why[256] = "", name[64], src[160], dst[160];
	struct health_info hi;
	struct health *h;
	struct events *ev;
	struct health_member m;
	struct json_object *mo, *o, *r, *arr;
	const char *smartctl = "/usr/sbin/smartctl";
	double t0;

	loop_attach(dev, sizeof(dev), why, sizeof(why));
	if (!dev[0]) {
		fprintf(stderr, "test_health 05: SKIPPED: %s\n", why);
		return;
	}
	if (access(smartctl, X_OK)) {
		fprintf(stderr, "test_health 05: %s missing: real smartctl part SKIPPED\n", smartctl);
	} else {
		ck_assert_int_eq(health_query(smartctl, dev, 30000, &hi), 0);
		ck_assert_msg(hi.state == HEALTH_UNAVAILABLE, "%s: %s (%s)", dev,
			      health_state_name(hi.state), hi.reason);
		ck_assert_ptr_nonnull(strstr(hi.reason, dev));
	}
	/* the thread, the stand-in saying "passed" first */
	snprintf(name, sizeof(name), "%s", strrchr(dev, '/') + 1);
	ck_assert_int_eq(events_create(NULL, 1000, &ev), 0);
	ck_assert_int_eq(health_create(standin(name, "ata-passed.json"), 1, ev, on_failing, NULL, &h), 0);
	snprintf(m.pool, sizeof(m.pool), "tank");
	snprintf(m.path, sizeof(m.path), "%s", dev);
	ck_assert_int_eq(health_set_members(h, &m, 1), 0);
	for (t0 = now_s(); !health_member_get(h, dev, &hi) && now_s() - t0 < 10;)
		usleep(20000);
	ck_assert_int_eq(hi.state, HEALTH_PASSED);
	mo = json_object_new_object();
	health_member_json(h, dev, mo);
	ck_assert(json_object_object_get_ex(mo, "health", &o));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "passed");
	ck_assert_int_eq(json_object_get_int(json_object_object_get(o, "temperature_c")), 34);
	ck_assert_int_eq(json_object_get_int(json_object_object_get(o, "pending_sectors")), 0);
	json_object_put(mo);
	/* a file member gets no entry */
	mo = json_object_new_object();
	health_member_json(h, "/tmp/some-file.img", mo);
	ck_assert(!json_object_object_get_ex(mo, "health", NULL));
	json_object_put(mo);
	/* the disk turns failing: one event, one callback (interval 1 s) */
	snprintf(src, sizeof(src), DATA "ata-failing.json");
	snprintf(dst, sizeof(dst), "%s/%s.json.new", dir, name);
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "cp %s %s && mv %s %s/%s.json", src, dst, dst, dir, name);
		ck_assert_int_eq(system(cmd), 0);
	}
	for (t0 = now_s(); failing_calls == 0 && now_s() - t0 < 10;)
		usleep(20000);
	ck_assert_uint_eq(failing_calls, 1);
	ck_assert_str_eq(failing_path, dev);
	usleep(2500000);   /* two more checks: still failing, no new event */
	ck_assert_uint_eq(failing_calls, 1);
	health_destroy(h);
	r = json_object_new_object();
	ck_assert_int_eq(events_json(ev, 0, 100, r), 0);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 1);
	o = json_object_array_get_idx(arr, 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "kind")), "member_health");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "health")), "failing");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "was")), "passed");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "member")), dev);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "severity")), "error");
	json_object_put(r);
	events_destroy(ev);
}
END_TEST

/* ---- slow members ---- */

/* Pool info of 4 active members, @ios each, member @slow's at @slow_us and
 * the others at 500 us, added to @pi's histograms. */
static void window(struct raid_pool_info *pi, int slow, uint64_t slow_us, uint64_t ios)
{
	snprintf(pi->name, sizeof(pi->name), "tank");
	pi->n_members = 4;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t us = (int)i == slow ? slow_us : 500;
		unsigned b = 0;

		snprintf(pi->members[i].path, sizeof(pi->members[i].path), "d%u", i);
		pi->members[i].state = "active";
		while (us && b < RAID_MEMBER_LAT_BUCKETS - 1) {
			us >>= 1;
			b++;
		}
		pi->members[i].lat_hist[0][b] += ios;
	}
}

static unsigned count_kind(struct events *ev, const char *kind)
{
	struct json_object *r = json_object_new_object(), *arr;
	unsigned n = 0;

	ck_assert_int_eq(events_json(ev, 0, 1000, r), 0);
	ck_assert(json_object_object_get_ex(r, "events", &arr));
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		n += !strcmp(json_object_get_string(json_object_object_get(
				     json_object_array_get_idx(arr, i), "kind")), kind);
	json_object_put(r);
	return n;
}

START_TEST(t06_slow_member)
{
	static struct raid_pool_info pi;
	static struct slow_pool sp;
	struct events *ev;
	uint64_t cnt;

	ck_assert_int_eq(events_create(NULL, 1000, &ev), 0);
	memset(&pi, 0, sizeof(pi));
	memset(&sp, 0, sizeof(sp));
	window(&pi, -1, 0, 100);
	slow_update(&sp, &pi, ev);   /* the first window starts */
	ck_assert_uint_eq(sp.n, 4);
	/* member 2 at 40 ms: slow after SLOW_WINDOWS windows, not before */
	for (unsigned w = 1; w <= SLOW_WINDOWS; w++) {
		window(&pi, 2, 40000, 100);
		slow_update(&sp, &pi, ev);
		ck_assert_uint_eq(sp.m[2].slow, w == SLOW_WINDOWS);
		ck_assert_uint_eq(sp.m[2].p99_us, 65536);
		ck_assert_uint_eq(sp.m[0].p99_us, 512);
		ck_assert(!sp.m[0].slow && !sp.m[1].slow && !sp.m[3].slow);
	}
	ck_assert_uint_eq(count_kind(ev, "member_slow"), 1);
	window(&pi, 2, 40000, 100);
	slow_update(&sp, &pi, ev);
	ck_assert_uint_eq(count_kind(ev, "member_slow"), 1);   /* once */
	/* too few I/Os in a window: no verdict either way */
	window(&pi, -1, 0, 10);
	slow_update(&sp, &pi, ev);
	ck_assert(sp.m[2].slow);
	/* a normal window: no longer slow */
	window(&pi, -1, 0, 100);
	slow_update(&sp, &pi, ev);
	ck_assert(!sp.m[2].slow);
	ck_assert_uint_eq(count_kind(ev, "member_not_slow"), 1);
	/* 3x the siblings (below SLOW_FACTOR) or under the floor: never slow */
	for (unsigned w = 0; w < 2 * SLOW_WINDOWS; w++) {
		window(&pi, 1, 1500, 100);
		slow_update(&sp, &pi, ev);
		ck_assert(!sp.m[1].slow);
	}
	ck_assert_uint_eq(count_kind(ev, "member_slow"), 1);
	/* the p99 helper */
	{
		uint64_t h[RAID_MEMBER_LAT_BUCKETS] = { 0 };

		ck_assert_uint_eq(slow_hist_p99(h, &cnt), 0);
		ck_assert_uint_eq(cnt, 0);
		h[3] = 99;   /* 99 of 100 in [4, 8) us: p99 is 8 */
		h[10] = 1;
		ck_assert_uint_eq(slow_hist_p99(h, &cnt), 8);
		h[10] = 2;   /* 99 of 101: the 100th is in [512, 1024) */
		ck_assert_uint_eq(slow_hist_p99(h, &cnt), 1024);
		ck_assert_uint_eq(cnt, 101);
	}
	events_destroy(ev);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_parse_samples", t01_parse_samples),
		CK_CASE("02_parse_rules", t02_parse_rules),
		CK_CASE("03_query_standin", t03_query_standin),
		CK_CASE("04_query_hang_missing_garbage", t04_query_hang_missing_garbage),
		CK_CASE("05_loop_device", t05_loop_device),
		CK_CASE("06_slow_member", t06_slow_member),
	};

	int rc, fd;
	char dev[160], cmd[200];
	FILE *f;

	snprintf(loop_list, sizeof(loop_list), "/tmp/rtgt-health-loops.XXXXXX");
	fd = mkstemp(loop_list);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	rc = ck_main(&(struct ck_suite_def){ "health", CK_CASES(cases), .setup = setup,
					     .teardown = teardown, .timeout = 60 });
	f = fopen(loop_list, "r");
	while (f && fgets(dev, sizeof(dev), f)) {
		dev[strcspn(dev, "\n")] = '\0';
		snprintf(cmd, sizeof(cmd), "losetup -d %s 2>/dev/null", dev);
		if (system(cmd) != 0) {
			/* detached already by the case's teardown */
		}
	}
	if (f)
		fclose(f);
	unlink(loop_list);
	return rc;
}
