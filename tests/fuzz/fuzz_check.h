/* SPDX-License-Identifier: MIT */
/* CHECK(): an invariant of a fuzz target, checked in every build type (assert() vanishes under
 * NDEBUG); a violation aborts, which libFuzzer and the corpus replay report as a crash. */
#ifndef SCSITGT_TESTS_FUZZ_CHECK_H
#define SCSITGT_TESTS_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

#endif /* SCSITGT_TESTS_FUZZ_CHECK_H */
