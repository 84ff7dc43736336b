/*
 * tests/net/test_net_reshape.c - a pool grown by one member, or a raid1
 * converted to raid5, while it serves I/O (raid/reshape.c: `rtgtctl grow
 * POOL --add PATH`, `rtgtctl convert POOL raid5 --add PATH`), through a
 * real bin/rtgtd driven with libiscsi and rtgtctl. Member files of 24 MiB
 * (23 MiB of data after the 1 MiB header), chunk 64K, the first ones
 * created by the pool (create_size), the added one full of random bytes (a
 * disk that held something else); rebuild_mbps paces each reshape to about
 * 6 s. The loader below writes and reads back a 64 KiB piece in each MiB
 * of LUN 0 from a second session; the rest of the LUN keeps a pattern
 * written before, and it runs while `grow` / `convert` is answered too
 * (rtgtd once hung there: the control thread, which serves connections as
 * well, waited for the reshape's start, which waited for its requests).
 *
 * 01 raid5 of 4 -> 5 under the loader: `rtgtctl grow p --add d4.img`; status
 *    shows "reshape" (from raid5 on 4, total = the old usable bytes, done
 *    rising, progress = done / total, strictly between 0 and 1 at least
 *    once, no error); meanwhile `scrub` and `replace` are refused; once the
 *    reshape is gone (at most 120 s): the loader had no error and no
 *    miscompare and kept going during it, every piece holds its last
 *    generation and the pattern around them is intact, usable_bytes x4/3
 *    exactly, 5 members, `rtgtctl events --json` lists reshape_started
 *    (d4.img, slot 4, raid5) then reshape_done (raid5, 5 members). SIGTERM,
 *    a start with 5 members and a 24 MiB LUN 1 that only fits in the space
 *    gained: no reshape, the same data, LUN 1 takes a pattern.
 * 02 raid1 of 2 -> raid5 of 3 (`rtgtctl convert p raid5 --add d2.img`), the
 *    same checks: from raid1 on 2, usable x2, level raid5 on 3 members;
 *    restart with level = "raid5" and 3 members, a 20 MiB LUN 1 beside the
 *    old data.
 * 03 SIGKILL inside the reshape (raid5 4 -> 5, the loader writing), at a
 *    random point between 15% and 75% (RESHAPE_SEED=N repeats it; seen
 *    between 5% and 90%); a start with 5 members: "not shut down cleanly",
 *    the reshape resumes (status: progress > 0, done at most 17 MiB behind
 *    what was seen before the kill), the whole LUN reads right while it
 *    runs and after it ended (each piece its last acknowledged generation,
 *    the one in flight at the kill that or the new one, whole), x4/3; then
 *    the new member failed: the whole LUN still reads right.
 * 04 refused over the control socket ({"cmd","args"} as rtgtctl sends it,
 *    and through rtgtctl: exit 1, the same text), nothing changed (both
 *    pools' level, members and usable bytes, no reshape, no reshape event,
 *    the files offered untouched): grow of a raid10 pool, convert raid5 ->
 *    raid1, an unknown level, a path already in the pool, a file 1 MiB too
 *    small, a missing file, a pool that does not exist; then a grow that
 *    starts, a second one refused while it runs, SIGTERM during it (exit
 *    0): a start with the old 4-member configuration exits 1 naming the
 *    reshape and the configuration; with 5 members (unpaced) it resumes,
 *    ends, and the data reads back.
 * 05 (loop: 0 raid5 4 -> 5, 1 raid1 2 -> raid5 3) rtgt-bench --verify
 *    stamps the whole LUN; three times during the reshape: a second of
 *    verified random reads and writes, SIGKILL at a random moment, a start
 *    with the new members (the reshape resumes, progress > 0); at the end
 *    rtgt-bench seqread --verify passes, and again with member 0 failed.
 * 06 raid10 4 -> 6 by a mirror pair (two --add) under the loader, x1.5, a
 *    restart with 6 members, then a member of the new pair failed: every
 *    block right.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <json-c/json.h>

#include "tests/lib/ckmain.h"
#include "tests/lib/harness.h"
#include "tests/lib/lun_grow.h"
#include "tests/lib/lun_io.h"
#include "tests/lib/net_fixture.h"
#include "tests/lib/rtgtctl_json.h"

#define MIB     (1u << 20)
#define MEMBER  (24ull << 20)       /* every member file (create_size) */
#define DATA    (MEMBER - MIB)      /* its data: 23 MiB, whole chunks */
#define PIECE   65536u              /* the loader's unit: one chunk */
#define NPIECE  64u                 /* one in each of the first MiBs */
#define V64     (64ull << 20)       /* LUN 0 of the raid5 pools */

static struct harness_daemon D;
static struct iscsi_context *C;

static void setup(void)
{
	nf_setup(&D);
	C = NULL;
}

static void teardown(void)
{
	if (C)
		iscsi_destroy_context(C);
	C = NULL;
	harness_fini(&D);
}

/* ---- daemon ---- */

/* Pool "p" of @level over dN.img for N < @n (created at 24 MiB when
 * missing), paced at @mbps (0: not at all), @more_pools after it in the
 * list, @luns the body of the LUN list. */
static void write_conf(const char *level, unsigned n, unsigned mbps, const char *luns,
		       const char *more_pools)
{
	char members[256];

	ck_assert_int_eq(harness_img_list(members, sizeof(members), "d", n), 0);
	ck_assert_int_eq(harness_write_file(&D, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; };\n"
		"pools = ( { name = \"p\"; level = \"%s\"; chunk = \"64K\";\n"
		"            members = ( %s ); create_size = \"24M\"; rebuild_mbps = %u; }%s );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( { iqn = \"" HARNESS_TARGET "\"; portals = ( \"lo\" );\n"
		"  luns = ( %s );\n"
		"  allow = ( \"ALL\" ); } );\n",
		level, members, mbps, more_pools ? more_pools : "", D.port, luns), 0);
}

/* D.dir/@name into @buf: the absolute path rtgtctl would send */
static const char *dpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", D.dir, name);
	return buf;
}

/* D.dir/@name: @bytes (whole MiBs) of random bytes from @seed */
static void random_file(const char *name, uint64_t bytes, uint64_t seed)
{
	static uint8_t buf[MIB];
	char path[256];
	int fd;

	fd = open(dpath(path, sizeof(path), name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	for (uint64_t off = 0; off < bytes; off += MIB) {
		harness_fill_random(buf, MIB, seed + off / MIB);
		ck_assert_int_eq(pwrite(fd, buf, MIB, (off_t)off), MIB);
	}
	close(fd);
}

/* D.dir/@name still is what random_file(@name, @bytes, @seed) wrote */
static void expect_file(const char *name, uint64_t bytes, uint64_t seed)
{
	static uint8_t want[MIB], got[MIB];
	char path[256];
	struct stat st;
	int fd;

	fd = open(dpath(path, sizeof(path), name), O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0 && fstat(fd, &st) == 0, "%s: %s", path, strerror(errno));
	ck_assert_msg((uint64_t)st.st_size == bytes, "%s is %lld bytes now, was %llu", path,
		      (long long)st.st_size, (unsigned long long)bytes);
	for (uint64_t off = 0; off < bytes; off += MIB) {
		harness_fill_random(want, MIB, seed + off / MIB);
		ck_assert_int_eq(pread(fd, got, MIB, (off_t)off), MIB);
		ck_assert_msg(!memcmp(got, want, MIB), "%s changed in MiB %llu", path,
			      (unsigned long long)(off / MIB));
	}
	close(fd);
}

static struct iscsi_context *login_isid(uint32_t isid)
{
	return nf_login(&D, 0, &(struct harness_login){ .isid_rnd = isid });
}

static void stop_expect_0(void)
{
	harness_iscsi_logout(C);
	C = NULL;
	nf_stop_expect_0(&D, NULL);
}

static unsigned log_count(const char *needle)
{
	return harness_log_count(&D, needle);
}

/* `rtgtctl grow p --add D.dir/@file` must start the reshape */
static void grow_ok(const char *file)
{
	char out[4096], path[256];
	uint64_t t0 = harness_now_ms();
	int rc = rj_ctl(&D, out, sizeof(out), "grow", "p", "--add",
			dpath(path, sizeof(path), file), NULL);

	if (rc != 0)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0 && strstr(out, "reshape started"),
		      "rtgtctl grow p --add %s exited %d after %llu ms: %s", path, rc,
		      (unsigned long long)(harness_now_ms() - t0), out);
}

/*
 * One request {"cmd": @cmd, "args": [@args...]} on the control socket, as
 * rtgtctl sends it: the reply's "ok"; its "error" into @err ("" when none).
 */
static bool ctl_args(const char *cmd, const char *const *args, unsigned nargs, char *err,
		     size_t errlen)
{
	static char line[8192];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct json_object *req = json_object_new_object(), *a = json_object_new_array(), *rep, *ok;
	size_t len = 0;
	bool res;
	int fd, n;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	for (unsigned i = 0; i < nargs; i++)
		json_object_array_add(a, json_object_new_string(args[i]));
	json_object_object_add(req, "args", a);
	n = snprintf(line, sizeof(line), "%s\n", json_object_to_json_string_ext(req,
		     JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(req);
	ck_assert(n > 0 && (size_t)n < sizeof(line));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/rtgtd.sock", D.dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s",
		      sa.sun_path, strerror(errno));
	ck_assert_int_eq(send(fd, line, (size_t)n, MSG_NOSIGNAL), n);
	line[0] = '\0';
	while (!memchr(line, '\n', len)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		ck_assert_msg(len + 1 < sizeof(line) && poll(&pfd, 1, 30000) == 1,
			      "%s: no reply line on the control socket (%zu bytes)", cmd, len);
		r = recv(fd, line + len, sizeof(line) - 1 - len, 0);
		ck_assert_msg(r > 0, "%s: the control socket closed before the reply", cmd);
		len += (size_t)r;
		line[len] = '\0';
	}
	close(fd);
	rep = json_tokener_parse(line);
	ck_assert_msg(rep && json_object_object_get_ex(rep, "ok", &ok),
		      "%s: the reply is not an object with \"ok\": %s", cmd, line);
	res = json_object_get_boolean(ok);
	snprintf(err, errlen, "%s", rj_str(rep, "error"));
	json_object_put(rep);
	return res;
}

/* ---- status and events ---- */

struct pool_st {
	char level[16];
	unsigned members;
	int64_t usable;
	char scrub[16];          /* scrub_state */
	bool reshaping;          /* a "reshape" object, and what it says: */
	char from_level[16];
	int64_t from_members, done, total;
	double progress, eta;    /* eta -1 when not given */
	char error[96];          /* "" when none */
};

static struct pool_st pool_status(const char *pool)
{
	struct json_object *root, *p = rj_status_pool(&D, pool, &root), *ms, *r, *v;
	struct pool_st s;

	memset(&s, 0, sizeof(s));
	snprintf(s.level, sizeof(s.level), "%s", rj_str(p, "level"));
	ck_assert_msg(json_object_object_get_ex(p, "members", &ms), "status: pool %s: no members",
		      pool);
	s.members = (unsigned)json_object_array_length(ms);
	s.usable = rj_int(p, "usable_bytes");
	snprintf(s.scrub, sizeof(s.scrub), "%s", rj_str(p, "scrub_state"));
	if (json_object_object_get_ex(p, "reshape", &r)) {
		s.reshaping = true;
		snprintf(s.from_level, sizeof(s.from_level), "%s", rj_str(r, "from_level"));
		s.from_members = rj_int(r, "from_members");
		s.done = rj_int(r, "done_bytes");
		s.total = rj_int(r, "total_bytes");
		ck_assert_msg(json_object_object_get_ex(r, "progress", &v),
			      "status: a reshape without progress: %s", json_object_to_json_string(r));
		s.progress = json_object_get_double(v);
		s.eta = json_object_object_get_ex(r, "eta_s", &v) ? json_object_get_double(v) : -1;
		snprintf(s.error, sizeof(s.error), "%s", rj_str(r, "error"));
	}
	json_object_put(root);
	return s;
}

/* The pool as it should be when nothing reshapes it */
static void expect_pool(const struct pool_st *s, const char *level, unsigned members,
			int64_t usable, const char *when)
{
	ck_assert_msg(!s->reshaping, "%s: status still shows a reshape (%.3f)", when, s->progress);
	ck_assert_msg(!strcmp(s->level, level) && s->members == members && s->usable == usable,
		      "%s: pool is %s on %u members, %lld bytes usable; expected %s on %u, %lld",
		      when, s->level, s->members, (long long)s->usable, level, members,
		      (long long)usable);
}

/* A reshape from @from_level on @from_n members, @total bytes, as the
 * status polls saw it */
struct watch {
	const char *from_level;
	unsigned from_n;
	int64_t total;
	unsigned samples, mid;   /* polls that showed it; those with 0 < progress < 1 */
	int64_t last_done;
};

/* One poll into *@s: false when the pool shows no reshape. A sample must
 * describe the reshape watched, its done bytes never going back. */
static bool watch_poll(struct watch *w, struct pool_st *s)
{
	double want;

	*s = pool_status("p");
	if (!s->reshaping)
		return false;
	w->samples++;
	ck_assert_msg(!strcmp(s->from_level, w->from_level) && s->from_members == w->from_n,
		      "status: reshape from %s on %lld members, expected from %s on %u",
		      s->from_level, (long long)s->from_members, w->from_level, w->from_n);
	ck_assert_msg(s->total == w->total, "status: reshape of %lld bytes, expected %lld",
		      (long long)s->total, (long long)w->total);
	ck_assert_msg(s->done >= w->last_done && s->done <= s->total,
		      "status: reshape done_bytes %lld after %lld, of %lld", (long long)s->done,
		      (long long)w->last_done, (long long)s->total);
	want = (double)s->done / (double)s->total;
	ck_assert_msg(s->progress >= 0 && s->progress <= 1 && s->progress > want - 1e-9 &&
		      s->progress < want + 1e-9, "status: reshape progress %f with %lld of %lld done",
		      s->progress, (long long)s->done, (long long)s->total);
	ck_assert_msg(s->eta == -1 || s->eta >= 0, "status: reshape eta_s %f", s->eta);
	ck_assert_msg(!s->error[0], "status: the reshape is stalled: %s", s->error);
	if (s->progress > 0 && s->progress < 1)
		w->mid++;
	w->last_done = s->done;
	return true;
}

/* Polls every 50 ms until the progress reaches @at (true; *@s is that
 * sample) or the reshape is gone (false), for at most @wait_ms. */
static bool watch_until(struct watch *w, double at, struct pool_st *s, int wait_ms)
{
	uint64_t end = harness_now_ms() + (uint64_t)wait_ms;

	while (watch_poll(w, s)) {
		if (s->progress >= at)
			return true;
		if (harness_now_ms() > end) {
			harness_dump_log(&D, stderr, 20);
			ck_abort_msg("the reshape is at %.3f after %d ms, waiting for %.3f", s->progress,
				     wait_ms, at);
		}
		usleep(50000);
	}
	return false;
}

/* Polls until the reshape is gone (at most @wait_ms); *@s then */
static void watch_to_end(struct watch *w, struct pool_st *s, int wait_ms)
{
	if (watch_until(w, 2.0, s, wait_ms))
		ck_abort_msg("status: reshape progress %f", s->progress);
}

/* `rtgtctl events --json` (one object a line): the events of @kind, each a
 * new reference into @out (at most @max); how many there are. */
static unsigned events_of(const char *kind, struct json_object **out, unsigned max)
{
	static char buf[1 << 16];
	unsigned n = 0;
	int rc = rj_ctl(&D, buf, sizeof(buf), "events", "--json", NULL);

	ck_assert_msg(rc == 0, "rtgtctl events --json exited %d: %s", rc, buf);
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct json_object *e = json_tokener_parse(l);

		ck_assert_msg(e != NULL, "rtgtctl events --json: not JSON: %s", l);
		if (!strcmp(rj_str(e, "kind"), kind) && n++ < max)
			out[n - 1] = e;
		else
			json_object_put(e);
	}
	return n;
}

/* One reshape_started (the new member @member at @slot, to @level) and one
 * reshape_done (@level on @slot + 1 members) after it in the events */
static void expect_events(const char *member, int slot, const char *level)
{
	struct json_object *st, *dn;
	const char *m;

	ck_assert_uint_eq(events_of("reshape_started", &st, 1), 1);
	ck_assert_uint_eq(events_of("reshape_done", &dn, 1), 1);
	m = rj_str(st, "member");
	ck_assert_msg(strlen(m) >= strlen(member) && !strcmp(m + strlen(m) - strlen(member), member),
		      "reshape_started names member %s, expected .../%s", m, member);
	ck_assert_int_eq(rj_int(st, "slot"), slot);
	ck_assert_str_eq(rj_str(st, "level"), level);
	ck_assert_str_eq(rj_str(st, "pool"), "p");
	ck_assert_str_eq(rj_str(dn, "level"), level);
	ck_assert_int_eq(rj_int(dn, "members"), slot + 1);
	ck_assert_str_eq(rj_str(dn, "pool"), "p");
	ck_assert_int_lt(rj_int(st, "seq"), rj_int(dn, "seq"));
	json_object_put(st);
	json_object_put(dn);
}

/* ---- data ---- */

/* What the tests write: every 512-byte sector a function of its LBA and
 * @seed, so any range can be made again from its offset. */
static void pat_fill(uint8_t *buf, uint64_t off, uint64_t len, uint64_t seed)
{
	for (uint64_t s = 0; s < len / 512; s++)
		harness_fill_random(buf + s * 512, 512,
				    seed * 0x9E3779B97F4A7C15ull ^ (off / 512 + s + 1));
}

static const char *task_err(struct iscsi_context *c, const struct scsi_task *t)
{
	static char b[160];

	if (!t)
		return iscsi_get_error(c);
	snprintf(b, sizeof(b), "status %d sense key %d asc/ascq 0x%04x", t->status, t->sense.key,
		 t->sense.ascq);
	return b;
}

static void write_good(struct iscsi_context *c, int lun, uint64_t off, const uint8_t *buf,
		       uint32_t len)
{
	struct scsi_task *t = iscsi_write16_sync(c, lun, off / 512, (unsigned char *)buf, len, 512,
						 0, 0, 0, 0, 0);

	if (!t || t->status != SCSI_STATUS_GOOD)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(t && t->status == SCSI_STATUS_GOOD, "WRITE 16 of LUN %d at %llu len %u: %s",
		      lun, (unsigned long long)off, len, task_err(c, t));
	scsi_free_scsi_task(t);
}

/* @len bytes of pat_fill(@seed) at @off, in commands of 1 MiB */
static void write_pat(struct iscsi_context *c, int lun, uint64_t off, uint64_t len,
		      uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		pat_fill(buf, off + o, MIB, seed);
		write_good(c, lun, off + o, buf, MIB);
	}
}

/* [off, off + len) holds pat_fill(@seed) */
static void expect_pat(struct iscsi_context *c, int lun, uint64_t off, uint64_t len,
		       uint64_t seed)
{
	static uint8_t buf[MIB];

	for (uint64_t o = 0; o < len; o += MIB) {
		pat_fill(buf, off + o, MIB, seed);
		lio_expect(c, lun, off + o, buf, MIB);
	}
}

/* ---- the loader ---- */

/* Piece @i: 64 KiB in MiB @i, at a different chunk of it for each */
static uint64_t piece_off(unsigned i)
{
	return (uint64_t)i * MIB + (uint64_t)(i * 5u % 16u) * PIECE;
}

/*
 * A thread on a session of its own: writes piece (k * 37) % n with
 * lg_pattern(generation k + 1) and reads it back, k = 0, 1, ..., until
 * stop. Never asserts: the test checks the counts after joining it. Once
 * killed is set (rtgtd is about to die) the first failure ends it.
 */
struct loader {
	struct iscsi_context *c;
	unsigned n;                 /* pieces, at most NPIECE */
	atomic_bool stop, killed;
	atomic_uint ops;            /* pieces written and read back */
	unsigned errors, wrong, gen[NPIECE];   /* gen: last acknowledged, 0 none */
	int inflight;               /* the piece of the write not answered, -1 */
	unsigned inflight_gen;
	bool error_after_kill;      /* the first error came once killed was set */
	char first_error[200];
	pthread_t th;
};

static void *load_main(void *arg)
{
	struct loader *l = arg;
	uint8_t w[PIECE], r[PIECE];

	for (unsigned k = 0; !atomic_load(&l->stop); k++) {
		unsigned i = (k * 37u) % l->n;
		uint64_t lba = piece_off(i) / 512;
		int st, ascq = 0;

		lg_pattern(w, sizeof(w), lba, k + 1);
		l->inflight = (int)i;
		l->inflight_gen = k + 1;
		st = lg_xfer(l->c, true, lba, w, sizeof(w), &ascq);
		if (st == SCSI_STATUS_GOOD) {
			l->gen[i] = k + 1;
			l->inflight = -1;
			st = lg_xfer(l->c, false, lba, r, sizeof(r), &ascq);
		}
		if (st != SCSI_STATUS_GOOD) {
			if (!l->errors++) {
				l->error_after_kill = atomic_load(&l->killed);
				snprintf(l->first_error, sizeof(l->first_error),
					 "piece %u gen %u: status 0x%x ascq 0x%04x (%s%s)", i, k + 1,
					 (unsigned)st, ascq, st == -2 ? "a short read" :
					 "libiscsi's last error: ", st == -2 ? "" : iscsi_get_error(l->c));
			}
			if (atomic_load(&l->killed))
				break;
		} else if (memcmp(w, r, sizeof(w))) {
			l->wrong++;
		}
		atomic_fetch_add(&l->ops, 1);
	}
	return NULL;
}

/* @l over @n pieces, on its own session, running: 20 pieces done */
static void loader_start(struct loader *l, unsigned n)
{
	uint64_t end = harness_now_ms() + 30000;

	memset(l, 0, sizeof(*l));
	l->n = n;
	l->inflight = -1;
	l->c = login_isid(0x2222);
	ck_assert_int_eq(pthread_create(&l->th, NULL, load_main, l), 0);
	while (atomic_load(&l->ops) < 20) {
		ck_assert_msg(harness_now_ms() < end && !l->errors, "the loader does not get going "
			      "(%u pieces, %u errors)", atomic_load(&l->ops), l->errors);
		usleep(10000);
	}
}

/* Stops and joins @l, logs its session out: no error, nothing read wrong */
static void loader_stop(struct loader *l)
{
	atomic_store(&l->stop, true);
	pthread_join(l->th, NULL);
	harness_iscsi_logout(l->c);
	l->c = NULL;
	ck_assert_msg(l->errors == 0, "loader: %u errors, the first: %s", l->errors, l->first_error);
	ck_assert_msg(l->wrong == 0, "loader: %u pieces read back differently", l->wrong);
}

/* Offset of the first 512-byte sector where @a and @b differ */
static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t o = 0; o < len; o += 512)
		if (memcmp(a + o, b + o, 512))
			return o;
	return len;
}

/*
 * Every MiB of the first @bytes of LUN 0 holds pat_fill(@seed) but for the
 * loader's piece in it (@l NULL: none), which holds lg_pattern of its last
 * acknowledged generation (pat_fill when none); the piece of a write in
 * flight at a kill may hold that write's generation instead, whole (counted
 * in *@settled).
 */
static void verify_lun(struct iscsi_context *c, uint64_t bytes, uint64_t seed,
		       const struct loader *l, const char *when, unsigned *settled)
{
	static uint8_t want[MIB], alt[PIECE];

	for (unsigned m = 0; m < bytes / MIB; m++) {
		struct scsi_task *t = iscsi_read16_sync(c, 0, (uint64_t)m * MIB / 512, MIB, 512, 0, 0,
							0, 0, 0);
		bool has_piece = l && m < l->n;
		size_t po = has_piece ? (size_t)(piece_off(m) - (uint64_t)m * MIB) : MIB, d;
		const uint8_t *got;

		ck_assert_msg(t && t->status == SCSI_STATUS_GOOD && t->datain.size == (int)MIB,
			      "%s: READ 16 of MiB %u: %s", when, m, task_err(c, t));
		got = t->datain.data;
		pat_fill(want, (uint64_t)m * MIB, MIB, seed);
		if (has_piece && l->gen[m])
			lg_pattern(want + po, PIECE, piece_off(m) / 512, l->gen[m]);
		d = first_diff(got, want, po);
		if (d == po && has_piece)
			d = po + PIECE + first_diff(got + po + PIECE, want + po + PIECE,
						    MIB - po - PIECE);
		ck_assert_msg(d >= MIB, "%s: the pattern of LUN 0 differs at byte %llu (MiB %u)",
			      when, (unsigned long long)m * MIB + d, m);
		if (has_piece && memcmp(got + po, want + po, PIECE)) {
			bool in = l->inflight == (int)m;

			if (in)
				lg_pattern(alt, PIECE, piece_off(m) / 512, l->inflight_gen);
			ck_assert_msg(in && !memcmp(got + po, alt, PIECE),
				      "%s: loader piece %u (byte %llu) differs from generation %u, its "
				      "last acknowledged write, at byte %zu of it%s", when, m,
				      (unsigned long long)piece_off(m), l->gen[m],
				      first_diff(got + po, want + po, PIECE),
				      in ? ", and from the write in flight at the kill" : "");
			(*settled)++;
		}
		scsi_free_scsi_task(t);
	}
}

/* ---- 01 ---- */

START_TEST(t01_grow_raid5)
{
	struct watch w = { .from_level = "raid5", .from_n = 4, .total = 3 * DATA };
	static struct loader l;
	struct pool_st s;
	char out[4096];
	unsigned ops0, ops1, settled = 0;
	uint64_t t0, t1;
	int rc;

	write_conf("raid5", 4, 3, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; }",
		   NULL);
	random_file("d4.img", MEMBER, 0x0104);
	nf_start(&D);
	s = pool_status("p");
	expect_pool(&s, "raid5", 4, 3 * DATA, "before the grow");
	C = login_isid(0);
	write_pat(C, 0, 0, V64, 1);
	loader_start(&l, NPIECE);

	grow_ok("d4.img");
	t0 = harness_now_ms();
	ops0 = atomic_load(&l.ops);
	ck_assert_msg(watch_until(&w, 0.02, &s, 60000), "the reshape ended before status showed "
		      "it at 2%% (%u samples)", w.samples);
	ck_assert_msg(s.progress < 0.9, "the reshape was at %.3f when first seen", s.progress);
	ck_assert_uint_eq(s.members, 5);

	/* refused while it runs */
	rc = rj_ctl(&D, out, sizeof(out), "scrub", "p", NULL);
	printf("01_grow_raid5: scrub during the reshape: exit %d: %s", rc, out);
	ck_assert_msg(rc == 1 && strstr(out, "scrub p: the pool must be optimal, not rebuilding or reshaping"),
		      "rtgtctl scrub during the reshape exited %d: %s", rc, out);
	ck_assert_uint_eq(log_count("scrub needs an optimal pool, not rebuilding or reshaping"), 1);
	rc = rj_ctl(&D, out, sizeof(out), "replace", "p", "d0.img", NULL);
	printf("01_grow_raid5: replace during the reshape: exit %d: %s", rc, out);
	ck_assert_msg(rc == 1 && strstr(out, "replace p d0.img:"),
		      "rtgtctl replace during the reshape exited %d: %s", rc, out);
	ck_assert_uint_eq(log_count("replace d0.img: a reshape is running"), 1);
	if (watch_poll(&w, &s))   /* (a slow machine may have finished it meanwhile) */
		ck_assert_msg(strcmp(s.scrub, "running"), "a scrub runs beside the reshape");

	watch_to_end(&w, &s, 120000);
	t1 = harness_now_ms();
	ops1 = atomic_load(&l.ops);
	loader_stop(&l);
	printf("01_grow_raid5: reshape seen in %u status polls (%u strictly between 0 and 1), "
	       "over about %.1f s; the loader did %u pieces meanwhile, %u in all\n", w.samples, w.mid,
	       (t1 - t0) / 1e3, ops1 - ops0, ops1);
	ck_assert_uint_ge(w.mid, 1);
	ck_assert_uint_ge(ops1 - ops0, 20);
	expect_pool(&s, "raid5", 5, 4 * DATA, "after the reshape");
	ck_assert_int_eq(s.usable * 3, (int64_t)(3 * DATA) * 4);
	ck_assert_str_ne(s.scrub, "running");
	expect_events("d4.img", 4, "raid5");
	ck_assert_uint_eq(log_count("reshape done: raid5 on 5 members, 96468992 bytes usable "
				    "(was 72351744)"), 1);
	verify_lun(C, V64, 1, &l, "after the reshape", &settled);
	ck_assert_uint_eq(settled, 0);
	stop_expect_0();

	/* 5 members; LUN 1 fits only in the space gained */
	write_conf("raid5", 5, 3,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"k1\"; size = \"24M\"; }", NULL);
	nf_start(&D);
	s = pool_status("p");
	expect_pool(&s, "raid5", 5, 4 * DATA, "after the restart");
	ck_assert_uint_eq(log_count("resuming the reshape"), 0);
	C = login_isid(0);
	verify_lun(C, V64, 1, &l, "after the restart", &settled);
	lg_drain_ua(C, 1);
	write_pat(C, 1, 0, 24ull << 20, 2);
	expect_pat(C, 1, 0, 24ull << 20, 2);
	verify_lun(C, V64, 1, &l, "after LUN 1 was written", &settled);
	ck_assert_uint_eq(settled, 0);
	stop_expect_0();
}
END_TEST

/* ---- 02 ---- */

#define V20 (20ull << 20)

START_TEST(t02_convert_raid1)
{
	struct watch w = { .from_level = "raid1", .from_n = 2, .total = DATA };
	static struct loader l;
	struct pool_st s;
	char out[4096], path[256];
	unsigned ops0, ops1, settled = 0;
	uint64_t t0, t1;
	int rc;

	write_conf("raid1", 2, 2, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"20M\"; }",
		   NULL);
	random_file("d2.img", MEMBER, 0x0202);
	nf_start(&D);
	s = pool_status("p");
	expect_pool(&s, "raid1", 2, DATA, "before the conversion");
	C = login_isid(0);
	write_pat(C, 0, 0, V20, 5);
	loader_start(&l, 20);

	rc = rj_ctl(&D, out, sizeof(out), "convert", "p", "raid5", "--add",
		    dpath(path, sizeof(path), "d2.img"), NULL);
	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0 && strstr(out, "reshape to raid5 started") &&
		      strstr(out, "and set its level"), "rtgtctl convert exited %d: %s", rc, out);
	t0 = harness_now_ms();
	ops0 = atomic_load(&l.ops);
	ck_assert_msg(watch_until(&w, 0.02, &s, 60000), "the conversion ended before status "
		      "showed it at 2%% (%u samples)", w.samples);
	ck_assert_msg(s.progress < 0.9, "the conversion was at %.3f when first seen", s.progress);
	ck_assert_str_eq(s.level, "raid5");
	ck_assert_uint_eq(s.members, 3);
	rc = rj_ctl(&D, out, sizeof(out), "scrub", "p", NULL);
	ck_assert_msg(rc == 1 && strstr(out, "scrub p: the pool must be optimal, not rebuilding or reshaping"),
		      "rtgtctl scrub during the conversion exited %d: %s", rc, out);

	watch_to_end(&w, &s, 120000);
	t1 = harness_now_ms();
	ops1 = atomic_load(&l.ops);
	loader_stop(&l);
	printf("02_convert_raid1: conversion seen in %u status polls (%u strictly between 0 and 1), "
	       "over about %.1f s; the loader did %u pieces meanwhile, %u in all\n", w.samples, w.mid,
	       (t1 - t0) / 1e3, ops1 - ops0, ops1);
	ck_assert_uint_ge(w.mid, 1);
	ck_assert_uint_ge(ops1 - ops0, 20);
	expect_pool(&s, "raid5", 3, 2 * DATA, "after the conversion");
	expect_events("d2.img", 2, "raid5");
	ck_assert_uint_eq(log_count("reshape done: raid5 on 3 members, 48234496 bytes usable "
				    "(was 24117248)"), 1);
	verify_lun(C, V20, 5, &l, "after the conversion", &settled);
	stop_expect_0();

	/* level raid5, 3 members; LUN 1 in the space gained */
	write_conf("raid5", 3, 2,
		   "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"20M\"; },\n"
		   "{ lun = 1; pool = \"p\"; volume = \"k1\"; size = \"20M\"; }", NULL);
	nf_start(&D);
	s = pool_status("p");
	expect_pool(&s, "raid5", 3, 2 * DATA, "after the restart");
	C = login_isid(0);
	verify_lun(C, V20, 5, &l, "after the restart", &settled);
	lg_drain_ua(C, 1);
	write_pat(C, 1, 0, V20, 6);
	expect_pat(C, 1, 0, V20, 6);
	verify_lun(C, V20, 5, &l, "after LUN 1 was written", &settled);
	ck_assert_uint_eq(settled, 0);
	stop_expect_0();
}
END_TEST

/* ---- 03 ---- */

START_TEST(t03_sigkill)
{
	struct watch w = { .from_level = "raid5", .from_n = 4, .total = 3 * DATA };
	static struct loader l;
	const char *env = getenv("RESHAPE_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) :
			(uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	double at = 0.15 + (double)(seed % 61) / 100.0;   /* 0.15 .. 0.75 */
	struct pool_st s, seen;
	unsigned settled = 0, ops;
	uint64_t t0;

	printf("03_sigkill: seed %llu (RESHAPE_SEED=%llu repeats it): SIGKILL at %.0f%%\n",
	       (unsigned long long)seed, (unsigned long long)seed, at * 100);
	write_conf("raid5", 4, 3, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; }",
		   NULL);
	random_file("d4.img", MEMBER, 0x0304);
	nf_start(&D);
	C = login_isid(0);
	write_pat(C, 0, 0, V64, 7);
	loader_start(&l, NPIECE);
	grow_ok("d4.img");
	ck_assert_msg(watch_until(&w, at, &seen, 60000), "the reshape ended before %.0f%%",
		      at * 100);
	ck_assert_msg(seen.progress >= 0.05 && seen.progress <= 0.9,
		      "the reshape was at %.3f when seen past %.3f", seen.progress, at);

	/* the kill, the loader writing */
	atomic_store(&l.killed, true);
	kill(D.pid, SIGKILL);
	atomic_store(&l.stop, true);
	pthread_join(l.th, NULL);
	ops = atomic_load(&l.ops);
	iscsi_destroy_context(l.c);
	l.c = NULL;
	iscsi_destroy_context(C);
	C = NULL;
	for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
		usleep(10000);
	ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");
	printf("03_sigkill: SIGKILL with the reshape seen at %.1f%% (%lld bytes), the loader at %u "
	       "pieces, %s in flight; its first error: %s\n", seen.progress * 100,
	       (long long)seen.done, ops, l.inflight >= 0 ? "a write" : "no write",
	       l.errors ? l.first_error : "none");
	ck_assert_msg(!l.errors || l.error_after_kill, "loader error before the kill: %s",
		      l.first_error);
	ck_assert_uint_eq(l.wrong, 0);

	/* 5 members: the reshape resumes from its checkpoint */
	write_conf("raid5", 5, 3, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; }",
		   NULL);
	nf_start(&D);
	ck_assert_uint_eq(log_count("not shut down cleanly"), 1);
	ck_assert_uint_eq(log_count("resuming the reshape from raid5 on 4 members to raid5 on 5"), 1);
	w.last_done = 0;   /* from the checkpoint: behind what was seen */
	ck_assert_msg(watch_poll(&w, &s) || (harness_dump_log(&D, stderr, 20), false),
		      "no reshape in the status after the restart");
	printf("03_sigkill: resumed at %.1f%% (%lld bytes)\n", s.progress * 100, (long long)s.done);
	ck_assert_msg(s.progress > 0, "the reshape resumed from 0");
	/* checkpointed at least every 16 MiB (and a window of 1 MiB) */
	ck_assert_msg(s.done + (17ll << 20) >= seen.done, "resumed at %lld bytes, %lld were seen "
		      "done before the kill", (long long)s.done, (long long)seen.done);
	C = login_isid(0);
	t0 = harness_now_ms();
	verify_lun(C, V64, 7, &l, "after the restart", &settled);
	{
		bool still = watch_poll(&w, &s);

		if (still)
			printf("03_sigkill: LUN 0 read back in %.1f s after the restart; the reshape "
			       "then at %.1f%%\n", (harness_now_ms() - t0) / 1e3, s.progress * 100);
		else
			printf("03_sigkill: LUN 0 read back in %.1f s after the restart; the reshape "
			       "ended meanwhile\n", (harness_now_ms() - t0) / 1e3);
	}
	watch_to_end(&w, &s, 120000);
	printf("03_sigkill: resumed reshape seen in %u status polls in all, %u blocks found with "
	       "the write in flight done\n", w.samples, settled);
	expect_pool(&s, "raid5", 5, 4 * DATA, "after the resumed reshape");
	verify_lun(C, V64, 7, &l, "after the resumed reshape", &settled);
	ck_assert_uint_le(settled, 2);   /* the one in flight, found in both passes */
	/* then a member lost: every block still right (from parity), once
	 * the crash's dirty regions are resynced (after the reshape) */
	{
		char out[1024];
		uint64_t end = harness_now_ms() + 120000;
		int rc;

		for (;;) {
			struct json_object *root, *p = rj_status_pool(&D, "p", &root);

			rc = json_object_object_get_ex(p, "unsynced_bytes", NULL);
			json_object_put(root);
			if (!rc)
				break;
			ck_assert_msg(harness_now_ms() < end, "the resync after the reshape did not end");
			usleep(50000);
		}
		rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "4", NULL);

		ck_assert_msg(rc == 0, "rtgtctl fail p 4: exit %d: %s", rc, out);
	}
	verify_lun(C, V64, 7, &l, "with the new member lost", &settled);
	ck_assert_uint_le(settled, 3);
	stop_expect_0();
}
END_TEST

/* ---- 04 ---- */

struct refusal {
	const char *cmd, *pool, *file, *level;   /* file: in D.dir */
	const char *text;                         /* in the error */
};

START_TEST(t04_refused)
{
	static const struct refusal rf[] = {
		{ "grow", "q", "e4.img", NULL, "grow q: a raid10 pool grows by a mirror pair: give two --add" },
		{ "convert", "p", "d4.img", "raid1",
		  "convert p: raid5 -> raid1 is not a conversion this version makes" },
		{ "convert", "p", "d4.img", "raid7", "convert p: unknown level 'raid7'" },
		{ "grow", "p", "d0.img", NULL, "/d0.img is already in the pool" },
		{ "grow", "p", "small.img", NULL,
		  "/small.img is too small (24117248 bytes, need 25165824)" },
		{ "grow", "p", "none.img", NULL, "/none.img: No such file or directory" },
		{ "grow", "nope", "d4.img", NULL, "no pool named 'nope'" },
	};
	const char *q = ",\n  { name = \"q\"; level = \"raid10\"; chunk = \"64K\"; create_size = \"8M\";\n"
			"    members = ( \"e0.img\", \"e1.img\", \"e2.img\", \"e3.img\" ); }";
	const char *lun = "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"64M\"; }";
	struct watch w = { .from_level = "raid5", .from_n = 4, .total = 3 * DATA };
	struct pool_st s, p0, q0;
	struct json_object *ev;
	char out[4096], err[512], path[256], small[256];
	unsigned settled = 0;
	int rc;

	write_conf("raid5", 4, 3, lun, q);
	random_file("d4.img", MEMBER, 0x0404);
	random_file("small.img", MEMBER - MIB, 0x0405);
	random_file("e4.img", 8ull << 20, 0x0406);
	nf_start(&D);
	C = login_isid(0);
	write_pat(C, 0, 0, V64, 8);
	p0 = pool_status("p");
	q0 = pool_status("q");
	expect_pool(&p0, "raid5", 4, 3 * DATA, "before");
	ck_assert_str_eq(q0.level, "raid10");

	for (unsigned i = 0; i < sizeof(rf) / sizeof(rf[0]); i++) {
		const char *args[3] = { rf[i].pool, dpath(path, sizeof(path), rf[i].file),
					rf[i].level };

		ck_assert_msg(!ctl_args(rf[i].cmd, args, rf[i].level ? 3 : 2, err, sizeof(err)),
			      "%s %s %s %s: accepted", rf[i].cmd, rf[i].pool, rf[i].file,
			      rf[i].level ? rf[i].level : "");
		printf("04_refused: %s %s %s%s%s: \"%s\"\n", rf[i].cmd, rf[i].pool, rf[i].file,
		       rf[i].level ? " " : "", rf[i].level ? rf[i].level : "", err);
		ck_assert_msg(strstr(err, rf[i].text), "%s %s %s: error \"%s\", expected \"%s\"",
			      rf[i].cmd, rf[i].pool, rf[i].file, err, rf[i].text);
		if (rf[i].level)
			rc = rj_ctl(&D, out, sizeof(out), rf[i].cmd, rf[i].pool, rf[i].level, "--add",
				    path, NULL);
		else
			rc = rj_ctl(&D, out, sizeof(out), rf[i].cmd, rf[i].pool, "--add", path, NULL);
		ck_assert_msg(rc == 1 && !strncmp(out, "rtgtctl: ", 9) && strstr(out, rf[i].text),
			      "rtgtctl %s %s ... %s: exit %d: %s", rf[i].cmd, rf[i].pool, rf[i].file,
			      rc, out);
	}
	/* nothing changed */
	s = pool_status("p");
	expect_pool(&s, "raid5", 4, 3 * DATA, "after the refusals");
	s = pool_status("q");
	expect_pool(&s, "raid10", q0.members, q0.usable, "pool q after the refusals");
	ck_assert_uint_eq(events_of("reshape_started", &ev, 1), 0);
	ck_assert_uint_eq(log_count("reshape to raid"), 0);
	expect_file("d4.img", MEMBER, 0x0404);
	expect_file("small.img", MEMBER - MIB, 0x0405);
	expect_file("e4.img", 8ull << 20, 0x0406);
	expect_pat(C, 0, 0, V64, 8);

	/* a grow that starts; a second one refused meanwhile */
	{
		const char *args[2] = { "p", dpath(path, sizeof(path), "d4.img") };
		const char *args2[2] = { "p", dpath(small, sizeof(small), "small.img") };

		ck_assert_msg(ctl_args("grow", args, 2, err, sizeof(err)), "grow p: %s", err);
		ck_assert(!ctl_args("grow", args2, 2, err, sizeof(err)));
		ck_assert_msg(strstr(err, "grow p: a reshape is already running"), "%s", err);
	}
	ck_assert_msg(watch_until(&w, 0.02, &s, 60000), "the reshape ended before 2%%");
	ck_assert_msg(s.progress < 0.9, "the reshape was at %.3f when first seen", s.progress);
	stop_expect_0();   /* SIGTERM inside the reshape: it checkpoints and stops */
	ck_assert_uint_eq(log_count("reshape done"), 0);

	/* the old configuration: refused */
	rc = harness_start(&D);
	if (rc != -ECHILD)
		harness_dump_log(&D, stderr, 20);
	ck_assert_msg(rc == -ECHILD && D.last_status == 1,
		      "rtgtd with the 4-member configuration after the grow: start %d, exit %d", rc,
		      D.last_status);
	ck_assert_uint_eq(log_count("pool p: on-disk pool is raid5, 5 members, chunk 65536 (being "
				    "reshaped); the configuration says raid5, 4 members"), 1);
	ck_assert_uint_eq(log_count("after rtgtctl grow or convert, list the new member and the "
				    "level in the configuration"), 1);
	ck_assert_uint_eq(log_count("pool p: cannot assemble"), 1);

	/* 5 members, not paced: it resumes and ends */
	write_conf("raid5", 5, 0, lun, q);
	nf_start(&D);
	ck_assert_uint_eq(log_count("resuming the reshape from raid5 on 4 members to raid5 on 5"), 1);
	ck_assert_uint_eq(log_count("not shut down cleanly"), 0);
	w.last_done = 0;
	watch_to_end(&w, &s, 120000);
	expect_pool(&s, "raid5", 5, 4 * DATA, "after the resumed reshape");
	s = pool_status("q");
	expect_pool(&s, "raid10", q0.members, q0.usable, "pool q at the end");
	C = login_isid(0);
	verify_lun(C, V64, 8, NULL, "after the resumed reshape", &settled);
	stop_expect_0();
}
END_TEST

/* ---- 05 ---- */

/* bin/rtgt-bench (or $RTGT_BENCH) on LUN 0 with stamps of @seed: its exit
 * code; its output into @out */
static int bench(const char *pattern, const char *bs, const char *amount, const char *value,
		 unsigned seed, char *out, size_t outlen)
{
	const char *bin = getenv("RTGT_BENCH") && *getenv("RTGT_BENCH") ? getenv("RTGT_BENCH")
									 : "bin/rtgt-bench";
	char url[256], sd[16];
	char *argv[] = { (char *)bin, "--url", url, "--pattern", (char *)pattern, "--bs", (char *)bs,
			 "--qd", "8", (char *)amount, (char *)value, "--verify", "--seed", sd,
			 "--quiet", NULL };

	ck_assert_int_eq(harness_url(url, sizeof(url), D.port, HARNESS_TARGET, 0), 0);
	snprintf(sd, sizeof(sd), "%u", seed);
	return harness_run_out(argv, out, outlen, 120000);
}

START_TEST(t05_sigkill_three)
{
	bool r1 = _i == 1;
	const char *lvl0 = r1 ? "raid1" : "raid5";
	unsigned n0 = r1 ? 2 : 4, mbps = r1 ? 1 : 2;
	uint64_t lun_bytes = r1 ? V20 : V64;
	char lun[128], out[8192], sz[32], seed_msg[64];
	struct watch w = { .from_level = lvl0, .from_n = n0, .total = (r1 ? 1 : 3) * (int64_t)DATA };
	struct pool_st s;
	unsigned seed;
	int rc;

	ck_assert_int_eq(getrandom(&seed, sizeof(seed), 0), (ssize_t)sizeof(seed));
	seed = seed % 100000 + 1;
	snprintf(lun, sizeof(lun), "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"%lluM\"; }",
		 (unsigned long long)(lun_bytes >> 20));
	snprintf(sz, sizeof(sz), "%lluM", (unsigned long long)(lun_bytes >> 20));
	write_conf(lvl0, n0, mbps, lun, NULL);
	random_file(r1 ? "d2.img" : "d4.img", MEMBER, 0x0500 + (unsigned)_i);
	nf_start(&D);
	rc = bench("seqwrite", "1M", "--bytes", sz, seed, out, sizeof(out));
	ck_assert_msg(rc == 0, "rtgt-bench seqwrite --verify: exit %d: %s", rc, out);
	{
		char path[256];

		rc = r1 ? rj_ctl(&D, out, sizeof(out), "convert", "p", "raid5", "--add",
				 dpath(path, sizeof(path), "d2.img"), NULL)
			: rj_ctl(&D, out, sizeof(out), "grow", "p", "--add",
				 dpath(path, sizeof(path), "d4.img"), NULL);
		ck_assert_msg(rc == 0, "grow/convert: exit %d: %s", rc, out);
	}
	for (unsigned k = 0; k < 3; k++) {
		long ms = 100 + (long)((seed * 7919u + k * 3331u) % 700);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		rc = bench("randrw", "64K", "--time", "1", seed, out, sizeof(out));
		ck_assert_msg(rc == 0, "round %u: rtgt-bench randrw --verify: exit %d: %s", k, rc, out);
		nanosleep(&ts, NULL);
		ck_assert_msg(watch_poll(&w, &s), "round %u: the reshape ended before the kill", k);
		kill(D.pid, SIGKILL);
		for (unsigned i = 0; i < 500 && harness_alive(&D); i++)
			usleep(10000);
		ck_assert_msg(!harness_alive(&D), "rtgtd survived SIGKILL");
		write_conf("raid5", n0 + 1, mbps, lun, NULL);
		nf_start(&D);
		w.last_done = 0;
		ck_assert_msg(watch_poll(&w, &s), "round %u: no reshape after the restart", k);
		printf("05_sigkill_three/%s: seed %u: kill %u at +%ld ms, resumed at %.1f%%\n", lvl0, seed,
		       k + 1, ms, s.progress * 100);
		ck_assert_msg(s.progress > 0, "round %u: the reshape resumed from 0", k);
	}
	/* to the end, unpaced; the crashes' dirty regions resynced after it */
	write_conf("raid5", n0 + 1, 0, lun, NULL);
	ck_assert_int_eq(harness_stop(&D), 0);
	nf_start(&D);
	watch_to_end(&w, &s, 120000);
	expect_pool(&s, "raid5", n0 + 1, (r1 ? 2 : 4) * (int64_t)DATA, "after the reshape");
	for (uint64_t end = harness_now_ms() + 120000;;) {
		struct json_object *root, *p = rj_status_pool(&D, "p", &root);
		bool left = json_object_object_get_ex(p, "unsynced_bytes", NULL);

		json_object_put(root);
		if (!left)
			break;
		ck_assert_msg(harness_now_ms() < end, "the resync after the reshape did not end");
		usleep(50000);
	}
	snprintf(seed_msg, sizeof(seed_msg), "seed %u", seed);
	rc = bench("seqread", "1M", "--bytes", sz, seed, out, sizeof(out));
	ck_assert_msg(rc == 0, "%s: rtgt-bench seqread --verify after the reshape: exit %d: %s",
		      seed_msg, rc, out);
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "0", NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p 0: exit %d: %s", rc, out);
	rc = bench("seqread", "1M", "--bytes", sz, seed, out, sizeof(out));
	ck_assert_msg(rc == 0, "%s: rtgt-bench seqread --verify with member 0 failed: exit %d: %s",
		      seed_msg, rc, out);
	nf_stop_expect_0(&D, NULL);
}
END_TEST

/*
 * 06 raid10 of 4 -> 6 by a mirror pair (`rtgtctl grow p --add d4.img --add
 *    d5.img`) under the loader: status shows the reshape from raid10 on 4,
 *    it ends with no loader error, usable x1.5, the pattern intact; a
 *    start with 6 members serves the same data; with one member of the new
 *    pair failed every block still reads right.
 */
START_TEST(t06_raid10_pair)
{
	struct watch w = { .from_level = "raid10", .from_n = 4, .total = 2 * (int64_t)DATA };
	static struct loader l;
	struct pool_st s;
	char out[4096], p4[256], p5[256];
	unsigned settled = 0;
	int rc;

	write_conf("raid10", 4, 3, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"40M\"; }",
		   NULL);
	random_file("d4.img", MEMBER, 0x0604);
	random_file("d5.img", MEMBER, 0x0605);
	nf_start(&D);
	C = login_isid(0);
	write_pat(C, 0, 0, 40ull << 20, 6);
	loader_start(&l, 40);
	rc = rj_ctl(&D, out, sizeof(out), "grow", "p", "--add", dpath(p4, sizeof(p4), "d4.img"),
		    "--add", dpath(p5, sizeof(p5), "d5.img"), NULL);
	if (rc)
		harness_dump_log(&D, stderr, 30);
	ck_assert_msg(rc == 0 && strstr(out, "reshape started") && strstr(out, "Add them"),
		      "rtgtctl grow with a pair exited %d: %s", rc, out);
	ck_assert_msg(watch_until(&w, 0.02, &s, 60000), "the reshape ended before status showed it");
	ck_assert_str_eq(s.level, "raid10");
	ck_assert_uint_eq(s.members, 6);
	watch_to_end(&w, &s, 120000);
	loader_stop(&l);
	expect_pool(&s, "raid10", 6, 3 * (int64_t)DATA, "after the pair grow");
	verify_lun(C, 40ull << 20, 6, &l, "after the pair grow", &settled);
	stop_expect_0();
	write_conf("raid10", 6, 0, "{ lun = 0; pool = \"p\"; volume = \"v0\"; size = \"40M\"; }",
		   NULL);
	nf_start(&D);
	s = pool_status("p");
	expect_pool(&s, "raid10", 6, 3 * (int64_t)DATA, "after a restart");
	rc = rj_ctl(&D, out, sizeof(out), "fail", "p", "5", NULL);
	ck_assert_msg(rc == 0, "rtgtctl fail p 5: exit %d: %s", rc, out);
	C = login_isid(0);
	verify_lun(C, 40ull << 20, 6, &l, "with d5.img failed", &settled);
	stop_expect_0();
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_grow_raid5", t01_grow_raid5),
		CK_CASE("02_convert_raid1", t02_convert_raid1),
		CK_CASE("03_sigkill", t03_sigkill),
		CK_CASE("04_refused", t04_refused),
		CK_CASE("05_sigkill_three", t05_sigkill_three, .loop_end = 2),
		CK_CASE("06_raid10_pair", t06_raid10_pair),
	};

	/* the figures printed survive a failing (forked) case */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return ck_main(&(struct ck_suite_def){ "net_reshape", CK_CASES(cases),
		.setup = setup, .teardown = teardown, .timeout = 150 });
}
