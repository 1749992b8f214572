/* SPDX-License-Identifier: MIT */
/* scsitgtd's log line prefixes (examples/scsitgtd_log.c): journald detection, formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "scsitgtd_log.h"

static void test_is_journal(void **state)
{
	(void)state;
	assert_true(scsitgtd_log_is_journal("8:1234", 8, 1234));
	assert_true(scsitgtd_log_is_journal("0:0", 0, 0));
	assert_true(scsitgtd_log_is_journal("18446744073709551615:42", (dev_t)UINT64_MAX, 42));
	/* Another file (stderr redirected by the unit, or inherited by a child). */
	assert_false(scsitgtd_log_is_journal("8:1234", 8, 1235));
	assert_false(scsitgtd_log_is_journal("9:1234", 8, 1234));
	/* Not the form systemd writes. */
	assert_false(scsitgtd_log_is_journal(NULL, 8, 1234));
	assert_false(scsitgtd_log_is_journal("", 0, 0));
	assert_false(scsitgtd_log_is_journal(":", 0, 0));
	assert_false(scsitgtd_log_is_journal("8:", 8, 0));
	assert_false(scsitgtd_log_is_journal(":1234", 0, 1234));
	assert_false(scsitgtd_log_is_journal("8:1234 ", 8, 1234));
	assert_false(scsitgtd_log_is_journal(" 8:1234", 8, 1234));
	assert_false(scsitgtd_log_is_journal("8:12:34", 8, 12));
	assert_false(scsitgtd_log_is_journal("-8:1234", 8, 1234));
	assert_false(scsitgtd_log_is_journal("+8:1234", 8, 1234));
	assert_false(scsitgtd_log_is_journal("0x8:1234", 8, 1234));
	/* Too long to be a 64-bit number (would wrap to a match). */
	assert_false(scsitgtd_log_is_journal("18446744073709551616:1", 0, 1));
	assert_false(scsitgtd_log_is_journal("000000000000000000008:1", 8, 1));
}

static void test_prefix(void **state)
{
	struct timespec t = { .tv_sec = 1796153826, .tv_nsec = 123999999 }; /* 2026-12-01 */
	char buf[64];

	(void)state;
	for (int l = 3; l <= 7; l++) {
		char want[8];

		snprintf(want, sizeof(want), "<%d>", l);
		assert_int_equal(scsitgtd_log_prefix(buf, sizeof(buf), true, l, &t), 3);
		assert_string_equal(buf, want);
	}
	scsitgtd_log_prefix(buf, sizeof(buf), true, 99, &t);
	assert_string_equal(buf, "<7>");
	scsitgtd_log_prefix(buf, sizeof(buf), true, -1, &t);
	assert_string_equal(buf, "<0>");
	assert_int_equal(scsitgtd_log_prefix(buf, sizeof(buf), false, 3, &t), 25);
	assert_string_equal(buf, "2026-12-01T19:37:06.123Z ");
	t.tv_sec = 0;
	t.tv_nsec = 0;
	scsitgtd_log_prefix(buf, sizeof(buf), false, 6, &t);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z ");
	/* Truncated, still terminated. */
	assert_int_equal(scsitgtd_log_prefix(buf, 5, false, 6, &t), 25);
	assert_string_equal(buf, "1970");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_journal),
		cmocka_unit_test(test_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
