/* SPDX-License-Identifier: MIT */
/* scsitgtd's metrics listener HTTP head parser and answers (examples/scsitgtd_http.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "scsitgtd_http.h"

static int req(const char *s, bool *head)
{
	return scsitgtd_http_request(s, strlen(s), head);
}

/* @s answered @want, and every proper prefix of it answered 0 (need more) or @want. */
static void expect(const char *s, int want, bool want_head)
{
	bool head = !want_head;
	int got = req(s, &head);

	if (got != want)
		fail_msg("\"%s\": %d, expected %d", s, got, want);
	/* HEAD (no body) only for a request served: an error answer carries its body. */
	if (head != want_head)
		fail_msg("\"%s\": head %d, expected %d", s, head, want_head);
	for (size_t n = 0; n < strlen(s); n++) {
		int p = scsitgtd_http_request(s, n, &head);

		if (p != 0 && p != want)
			fail_msg("\"%.*s\" (prefix of \"%s\"): %d", (int)n, s, s, p);
	}
}

static void test_served(void **state)
{
	(void)state;
	expect("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, false);
	expect("GET /metrics HTTP/1.0\r\n\r\n", 200, false);
	expect("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, true);
	/* What Prometheus sends. */
	expect("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\nUser-Agent: Prometheus/2.42.0\r\n"
	       "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
	       "\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
	       200, false);
	expect("GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 200, false);
	/* Bare LF line ends, leading empty lines, empty values, tabs in values. */
	expect("GET /metrics HTTP/1.1\nHost: x\n\n", 200, false);
	expect("\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n", 200, false);
	expect("GET /metrics HTTP/1.1\r\nX-Empty:\r\nX-Tab:\ta\tb\r\n\r\n", 200, false);
}

static void test_refused(void **state)
{
	(void)state;
	expect("GET / HTTP/1.1\r\n\r\n", 404, false);
	expect("GET /metricsx HTTP/1.1\r\n\r\n", 404, false);
	expect("GET /metric HTTP/1.1\r\n\r\n", 404, false);
	expect("GET /metrics/ HTTP/1.1\r\n\r\n", 404, false);
	expect("POST / HTTP/1.1\r\n\r\n", 404, false);
	expect("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 405, false);
	expect("get /metrics HTTP/1.1\r\n\r\n", 405, false); /* methods are case-sensitive */
	expect("DELETE /metrics HTTP/1.1\r\n\r\n", 405, false);
	expect("GET /metrics HTTP/2.0\r\n\r\n", 505, false);
	expect("GET /metrics HTTP/0.9\r\n\r\n", 505, false);
	/* Malformed request lines: answered once the line is complete. */
	expect("GET /metrics\r\n", 400, false);
	/* A good HEAD request line, then a bad field line (found by fuzz_http). */
	expect("HEAD /metrics HTTP/1.0\n\xff\xff\n", 400, false);
	expect("HEAD /metrics HTTP/1.1\r\nHost x\r\n\r\n", 400, false);
	expect("GET  /metrics HTTP/1.1\r\n", 400, false);
	expect("GET /metrics  HTTP/1.1\r\n", 400, false);
	expect("GET /metrics HTTP/1.1 \r\n", 400, false);
	expect("GET metrics HTTP/1.1\r\n", 400, false);
	expect("GET http://x/metrics HTTP/1.1\r\n", 400, false);
	expect("GET /metrics http/1.1\r\n", 400, false);
	expect("GET /metrics HTTP/1.10\r\n", 400, false);
	expect("GET /metrics HTTP/1.x\r\n", 400, false);
	expect("GET /met\x01rics HTTP/1.1\r\n", 400, false);
	expect("G(T /metrics HTTP/1.1\r\n", 400, false);
	expect(" GET /metrics HTTP/1.1\r\n", 400, false);
	expect("GET /metrics HTTP/1.1\rX\r\n", 400, false);
	expect("\x16\x03\x01\x02\x05\x01\x01\xfc\x03\x03\r\n", 400, false); /* TLS hello */
	expect("\r\n\r\n\r\n\r\n\r\n\r\n", 400, false);
	/* Malformed field lines, whatever the path. */
	expect("GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", 400, false);
	expect("GET /metrics HTTP/1.1\r\nHost x\r\n\r\n", 400, false);
	expect("GET /metrics HTTP/1.1\r\n: x\r\n\r\n", 400, false);
	expect("GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, false);
	expect("GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400, false);
	{
		static const char nul[] = "GET /metrics HTTP/1.1\r\nA: \0\r\n\r\n";
		bool head;

		assert_int_equal(scsitgtd_http_request(nul, sizeof(nul) - 1, &head), 400);
	}
}

static void test_limits(void **state)
{
	size_t n = SCSITGTD_HTTP_MAX_REQUEST + 100;
	char *big = malloc(n);
	bool head;
	int len;

	(void)state;
	assert_non_null(big);
	/* A head that never ends: more until the limit, then 431 (never reading past it). */
	len = snprintf(big, n, "GET /metrics HTTP/1.1\r\n");
	for (size_t i = (size_t)len; i < n; i++)
		big[i] = (i % 64 == 63) ? '\n' : 'a';
	memcpy(big + len, "X:", 2);
	for (size_t i = (size_t)len; i + 64 < n; i += 64)
		memcpy(big + i, "X:", 2);
	assert_int_equal(scsitgtd_http_request(big, SCSITGTD_HTTP_MAX_REQUEST - 1, &head), 0);
	assert_int_equal(scsitgtd_http_request(big, SCSITGTD_HTTP_MAX_REQUEST, &head), 431);
	assert_int_equal(scsitgtd_http_request(big, n, &head), 431);
	/* A request line longer than the limit. */
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', n - 5);
	assert_int_equal(scsitgtd_http_request(big, n, &head), 431);
	/* Nothing yet. */
	assert_int_equal(scsitgtd_http_request(big, 0, &head), 0);
	free(big);
}

static void test_response_head(void **state)
{
	char buf[512];
	int n;

	(void)state;
	n = scsitgtd_http_response_head(buf, sizeof(buf), 200, 1234);
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "HTTP/1.1 200 OK\r\n"
				 "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
				 "Content-Length: 1234\r\n"
				 "Connection: close\r\n\r\n");
	scsitgtd_http_response_head(buf, sizeof(buf), 405, 0);
	assert_string_equal(buf, "HTTP/1.1 405 Method Not Allowed\r\n"
				 "Content-Type: text/plain; charset=utf-8\r\n"
				 "Allow: GET, HEAD\r\n"
				 "Content-Length: 0\r\n"
				 "Connection: close\r\n\r\n");
	scsitgtd_http_response_head(buf, sizeof(buf), 404, 10);
	assert_non_null(strstr(buf, "HTTP/1.1 404 Not Found\r\n"));
	assert_null(strstr(buf, "Allow"));
	assert_string_equal(scsitgtd_http_reason(431), "Request Header Fields Too Large");
	assert_string_equal(scsitgtd_http_reason(505), "HTTP Version Not Supported");
	assert_string_equal(scsitgtd_http_reason(599), "Error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_served),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_response_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
