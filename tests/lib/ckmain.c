/*
 * tests/lib/ckmain.c - see ckmain.h.
 */
#include <stdlib.h>

#include "tests/lib/ckmain.h"

Suite *ck_suite(const struct ck_suite_def *def)
{
	Suite *s = suite_create(def->name);
	TCase *tc = NULL;

	for (size_t i = 0; i < def->ncases; i++) {
		const struct ck_case *c = &def->cases[i];

		/* a nameless first case would have no tcase to join */
		if (c->name || !tc) {
			int timeout = c->timeout ? c->timeout : def->timeout;

			tc = tcase_create(c->name ? c->name : def->name);
			if (!c->no_fixture && (def->usetup || def->uteardown))
				tcase_add_unchecked_fixture(tc, def->usetup, def->uteardown);
			if (!c->no_fixture && (def->setup || def->teardown))
				tcase_add_checked_fixture(tc, def->setup, def->teardown);
			if (timeout)
				tcase_set_timeout(tc, timeout);
			suite_add_tcase(s, tc);
		}
		if (c->loop_end > c->loop_start)
			tcase_add_loop_test(tc, c->fn, c->loop_start, c->loop_end);
		else
			tcase_add_test(tc, c->fn);
	}
	return s;
}

int ck_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int ck_main(const struct ck_suite_def *def)
{
	return ck_run(ck_suite(def));
}
