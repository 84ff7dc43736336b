/*
 * tests/lib/ckmain.h - the Check runner every test program shares: a suite
 * built from a table of cases, run with CK_NORMAL (Check's own CK_RUN_CASE,
 * CK_RUN_SUITE, CK_VERBOSITY, CK_FORK and CK_DEFAULT_TIMEOUT work as
 * usual), and the exit code (EXIT_FAILURE when any check failed).
 *
 * The table lives in the function (a TTest is a pointer variable, not a
 * constant) and CK_CASE names the fields, so that a case sets only the
 * options it needs:
 *
 *	int main(void)
 *	{
 *		const struct ck_case cases[] = {
 *			CK_CASE("01_first", t01_first),
 *			CK_CASE("02_loop", t02_loop, .loop_end = 4),
 *			CK_CASE("03_slow", t03_slow, .timeout = 120),
 *		};
 *
 *		return ck_main(&(struct ck_suite_def){ "name", CK_CASES(cases),
 *			.setup = setup, .teardown = teardown, .timeout = 60 });
 *	}
 */
#ifndef RTGT_TESTS_CKMAIN_H
#define RTGT_TESTS_CKMAIN_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

/* One test in a table. Check keeps @name's pointer until the runner is
 * freed: a literal or static storage. */
struct ck_case {
	const char *name;      /* the tcase's name; NULL: @fn joins the previous tcase */
	const TTest *fn;
	int timeout;           /* seconds; 0: the suite's timeout */
	int loop_start;        /* loop_end > loop_start: a loop test over */
	int loop_end;          /* [loop_start, loop_end), else a plain one */
	bool no_fixture;       /* without the suite's checked and unchecked fixtures */
};

struct ck_suite_def {
	const char *name;                 /* the suite's name */
	const struct ck_case *cases;      /* not owned, read by ck_suite() only */
	size_t ncases;
	SFun setup, teardown;             /* checked fixture (in the forked test); NULL: none */
	SFun usetup, uteardown;           /* unchecked fixture (once per tcase); NULL: none */
	int timeout;                      /* seconds for every tcase; 0: Check's default */
};

/* A table row: CK_CASE("01_name", t01_name, .timeout = 120, ...). */
#define CK_CASE(n, f, ...) { .name = (n), .fn = (f), __VA_ARGS__ }
/* .cases and .ncases from an array. */
#define CK_CASES(arr) .cases = (arr), .ncases = sizeof(arr) / sizeof((arr)[0])

/* The suite of @def: one tcase a named case, with @def's fixtures and
 * timeouts. */
Suite *ck_suite(const struct ck_suite_def *def);
/* Runs @s (CK_NORMAL), frees the runner (and @s with it). Returns
 * EXIT_SUCCESS, or EXIT_FAILURE when a test failed or errored. */
int ck_run(Suite *s);
/* ck_run(ck_suite(@def)). */
int ck_main(const struct ck_suite_def *def);

#endif
