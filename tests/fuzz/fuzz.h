/*
 * tests/fuzz/fuzz.h - what every libFuzzer target in tests/fuzz/ shares: the
 * two entry points libFuzzer calls (declared here so -Wmissing-prototypes
 * holds) and a check macro that aborts, so that a broken invariant becomes a
 * crash libFuzzer saves as a reproducer, exactly like a sanitizer report.
 */
#ifndef RTGT_FUZZ_H
#define RTGT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sanitizer/common_interface_defs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* assert() that survives -DNDEBUG and says which property broke. The
 * message goes through the sanitizer's report channel too, because
 * scripts/fuzz.sh runs with -close_fd_mask=2 (the code under test logs every
 * bad input to stderr). */
#define FUZZ_STR2(x) #x
#define FUZZ_STR(x) FUZZ_STR2(x)
#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			static const char msg_[] = "fuzz invariant broken at " \
				__FILE__ ":" FUZZ_STR(__LINE__) ": " #cond;    \
			fprintf(stderr, "%s\n", msg_);                         \
			__sanitizer_report_error_summary(msg_);                \
			abort();                                               \
		}                                                              \
	} while (0)

#endif
