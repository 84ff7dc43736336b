/* tests/unit/test_util.c - conf/util.h and conf/util.c: the big-endian
 * accessors (known byte patterns, round trips, unaligned places) and the
 * invariant policy: a release failure logs and counts, a debug failure
 * aborts with FILE:LINE and the expression. */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "tests/lib/ckmain.h"

START_TEST(t01_be_known_patterns)
{
	static const uint8_t p[8] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	uint8_t b[9];

	ck_assert_uint_eq(conf_get_be16(p), 0x0123);
	ck_assert_uint_eq(conf_get_be24(p), 0x012345);
	ck_assert_uint_eq(conf_get_be32(p), 0x01234567);
	ck_assert_uint_eq(conf_get_be64(p), 0x0123456789abcdefull);
	/* top bits set: no sign extension through int promotion */
	ck_assert_uint_eq(conf_get_be16(p + 4), 0x89ab);
	ck_assert_uint_eq(conf_get_be24(p + 4), 0x89abcd);
	ck_assert_uint_eq(conf_get_be32(p + 4), 0x89abcdefu);

	memset(b, 0xee, sizeof(b));
	conf_put_be16(b + 1, 0xbeef);
	ck_assert(b[0] == 0xee && b[1] == 0xbe && b[2] == 0xef && b[3] == 0xee);
	memset(b, 0xee, sizeof(b));
	conf_put_be24(b + 1, 0xff123456u);   /* the top byte is dropped */
	ck_assert(b[0] == 0xee && b[1] == 0x12 && b[2] == 0x34 && b[3] == 0x56 && b[4] == 0xee);
	memset(b, 0xee, sizeof(b));
	conf_put_be32(b + 1, 0xdeadbeefu);
	ck_assert_int_eq(memcmp(b + 1, "\xde\xad\xbe\xef", 4), 0);
	ck_assert(b[0] == 0xee && b[5] == 0xee);
	memset(b, 0xee, sizeof(b));
	conf_put_be64(b + 1, 0x0123456789abcdefull);
	ck_assert_int_eq(memcmp(b + 1, p, 8), 0);
	ck_assert(b[0] == 0xee);
}
END_TEST

START_TEST(t02_be_round_trip)
{
	uint64_t x = 0x243f6a8885a308d3ull;
	uint8_t b[16];

	for (int i = 0; i < 10000; i++) {
		unsigned off = (unsigned)i % 8;   /* unaligned places too */

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		conf_put_be16(b + off, (uint16_t)x);
		ck_assert_uint_eq(conf_get_be16(b + off), (uint16_t)x);
		conf_put_be24(b + off, (uint32_t)x);
		ck_assert_uint_eq(conf_get_be24(b + off), (uint32_t)x & 0xffffffu);
		conf_put_be32(b + off, (uint32_t)x);
		ck_assert_uint_eq(conf_get_be32(b + off), (uint32_t)x);
		conf_put_be64(b + off, x);
		ck_assert_uint_eq(conf_get_be64(b + off), x);
		/* the 64-bit form is the two 32-bit halves, high first */
		ck_assert_uint_eq(conf_get_be32(b + off), (uint32_t)(x >> 32));
		ck_assert_uint_eq(conf_get_be32(b + off + 4), (uint32_t)x);
	}
}
END_TEST

/* Runs @fn in a child with stderr into a pipe; returns the wait status and
 * the child's stderr in @out. */
static int in_child(void (*fn)(void), char *out, size_t len)
{
	int fds[2], st = 0;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got + 1 < len && (n = read(fds[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static int always_false(void)
{
	return 0;
}

static void release_failure(void)
{
	uint64_t before = conf_invariant_failures();

	conf_invariant_failed("raid/x.c", 12, "a == b");
	conf_invariant_failed("raid/x.c", 13, "c");
	_exit(conf_invariant_failures() == before + 2 ? 0 : 3);
}

/* release: one ERROR line "FILE:LINE: invariant failed: expr", counted, and
 * the caller goes on */
START_TEST(t03_release_logs_and_counts)
{
	char out[4096];
	int st = in_child(release_failure, out, sizeof(out));

	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_ptr_nonnull(strstr(out, "ERROR [check] raid/x.c:12: invariant failed: a == b\n"));
	ck_assert_ptr_nonnull(strstr(out, "raid/x.c:13: invariant failed: c\n"));
}
END_TEST

static void debug_failure(void)
{
	conf_invariant_abort("target/y.c", 77, "n <= max");
}

/* debug: the assert-like line on stderr, then SIGABRT */
START_TEST(t04_debug_aborts)
{
	char out[4096];
	int st = in_child(debug_failure, out, sizeof(out));

	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(WTERMSIG(st), SIGABRT);
	ck_assert_str_eq(out, "target/y.c:77: invariant failed: n <= max\n");
}
END_TEST

static int evaluated;

static int count_eval(int v)
{
	evaluated++;
	return v;
}

/* the line of the RTGT_CHECK below, for the message it must print */
enum { MACRO_LINE = __LINE__ + 4 };

static void macro_failure(void)
{
	RTGT_CHECK(always_false());
	_exit(conf_invariant_failures() == 1 ? 0 : 3);
}

/* RTGT_CHECK in the flavour this file is built in (RTGT_DEBUG in the
 * sanitizer builds): the expression is evaluated once either way, a true
 * one costs nothing, a false one goes where the build says */
START_TEST(t05_macro_follows_the_build)
{
	char out[4096], want[128];
	uint64_t before = conf_invariant_failures();
	int st;

	evaluated = 0;
	RTGT_CHECK(count_eval(1));
	ck_assert_int_eq(evaluated, 1);
	ck_assert_uint_eq(conf_invariant_failures(), before);
	st = in_child(macro_failure, out, sizeof(out));
	snprintf(want, sizeof(want), "%s:%d: invariant failed: always_false()\n", __FILE__,
		 (int)MACRO_LINE);
	ck_assert_ptr_nonnull(strstr(out, want));
#ifdef RTGT_DEBUG
	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(WTERMSIG(st), SIGABRT);
#else
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
#endif
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_be_known_patterns", t01_be_known_patterns),
		CK_CASE("02_be_round_trip", t02_be_round_trip),
		CK_CASE("03_release_logs_and_counts", t03_release_logs_and_counts),
		CK_CASE("04_debug_aborts", t04_debug_aborts),
		CK_CASE("05_macro_follows_the_build", t05_macro_follows_the_build),
	};

	return ck_main(&(struct ck_suite_def){ "util", CK_CASES(cases) });
}
