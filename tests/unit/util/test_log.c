/* SPDX-License-Identifier: MIT */
/*
 * Tests of util/log.c: what reaches the host's log callback can never hold a line break, a
 * terminal escape or invalid UTF-8, whatever a peer put in the strings a message quotes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/log.h"

static char g_line[4096];
static int g_calls;

static void capture(void *cb_arg, enum scsitgt_log_level level, const char *subsystem,
		    const char *fmt, va_list ap)
{
	(void)cb_arg;
	(void)level;
	(void)subsystem;
	vsnprintf(g_line, sizeof(g_line), fmt, ap);
	g_calls++;
}

static const char *logged(const char *fmt, const char *arg)
{
	struct scsitgt__logger lg = { capture, NULL, SCSITGT_LOG_DEBUG };

	g_line[0] = '\0';
	scsitgt__log(&lg, SCSITGT_LOG_NOTICE, "iscsi", fmt, arg);
	return g_line;
}

/* A name from the wire with a line break cannot start a second log line (issue 17, 3). */
static void test_no_forged_line(void **state)
{
	const char *forged = "iqn.x\n2026-12-01 iscsi: login of iqn.admin accepted\r\x1b[2K";
	const char *line = logged("login of %s refused: authentication failure", forged);

	(void)state;
	assert_null(strchr(line, '\n'));
	assert_null(strchr(line, '\r'));
	assert_null(strchr(line, 0x1b));
	assert_string_equal(line, "login of iqn.x\\x0a2026-12-01 iscsi: login of iqn.admin "
				  "accepted\\x0d\\x1b[2K refused: authentication failure");
	/* Plain messages pass unchanged; a literal backslash doubles (no fake escapes). */
	assert_string_equal(logged("%s", "conn 1 127.0.0.1:3260: ok"), "conn 1 127.0.0.1:3260: ok");
	assert_string_equal(logged("%s", "a\\x0ab"), "a\\\\x0ab");
	/* Below the level: nothing, and no formatting. */
	struct scsitgt__logger quiet = { capture, NULL, SCSITGT_LOG_ERROR };
	int calls = g_calls;

	scsitgt__log(&quiet, SCSITGT_LOG_DEBUG, "iscsi", "%s", "x");
	assert_int_equal(g_calls, calls);
}

static void esc(const char *in, size_t len, const char *want)
{
	char out[256];

	assert_int_equal(scsitgt__log_escape(out, sizeof(out), in, len), strlen(want));
	assert_string_equal(out, want);
}

static void test_escape(void **state)
{
	(void)state;
	esc("abc", 3, "abc");
	esc("a\0b", 3, "a\\x00b");
	esc("\x7f", 1, "\\x7f");
	/* UTF-8 stays when valid and harmless. */
	esc("caf\xc3\xa9 \xe6\x97\xa5", 9, "caf\xc3\xa9 \xe6\x97\xa5");
	/* Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/'. */
	esc("\x80", 1, "\\x80");
	esc("\xe6\x97", 2, "\\xe6\\x97");
	esc("\xc0\xaf", 2, "\\xc0\\xaf");
	esc("\xed\xa0\x80", 3, "\\xed\\xa0\\x80"); /* a surrogate */
	/* C1 NEL and CSI, LINE SEPARATOR, RIGHT-TO-LEFT OVERRIDE, as UTF-8. */
	esc("\xc2\x85", 2, "\\xc2\\x85");
	esc("\xc2\x9b", 2, "\\xc2\\x9b");
	esc("\xe2\x80\xa8", 3, "\\xe2\\x80\\xa8");
	esc("\xe2\x80\xae", 3, "\\xe2\\x80\\xae");
	/* A raw 8-bit CSI byte. */
	esc("\x9b"
	    "31m",
	    4, "\\x9b31m");

	/* Too small: cut, marked, NUL-terminated, never overrun. */
	char small[8];

	memset(small, 'Z', sizeof(small));
	assert_true(scsitgt__log_escape(small, sizeof(small), "abcdefghijk", 11) < sizeof(small));
	assert_string_equal(small, "abcd...");
	assert_int_equal(scsitgt__log_escape(small, sizeof(small), "\n\n\n", 3), 7);
	assert_string_equal(small, "\\x0a...");
	assert_int_equal(scsitgt__log_escape(small, 1, "abc", 3), 0);
	assert_string_equal(small, "");
	assert_int_equal(scsitgt__log_escape(small, 0, "abc", 3), 0);
}

/* A message longer than the buffer is cut, still escaped and terminated. */
static void test_long_message(void **state)
{
	char big[3000];

	(void)state;
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	const char *line = logged("%s", big);

	assert_null(strchr(line, '\n'));
	assert_true(strlen(line) < 2048);
	assert_true(strlen(line) > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_forged_line),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_long_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
