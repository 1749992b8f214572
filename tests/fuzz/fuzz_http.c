/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of scsitgtd's metrics listener request parser (examples/scsitgtd_http.c): any
 * bytes give 0 (more) or one of the statuses scsitgtd_http.h lists; the answer never depends
 * on bytes past SCSITGTD_HTTP_MAX_REQUEST; feeding the input in two pieces, as a socket
 * would, never answers differently once complete; the answer head is well formed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/scsitgtd_http.c"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	bool head = false, h2;
	int st = scsitgtd_http_request(buf, size, &head), st2;
	char out[512];
	int n;

	CHECK(st == 0 || st == 200 || st == 400 || st == 404 || st == 405 || st == 431 ||
	      st == 505);
	CHECK(st != 0 || size < SCSITGTD_HTTP_MAX_REQUEST);
	CHECK(st == 200 || !head);
	if (size > SCSITGTD_HTTP_MAX_REQUEST) {
		st2 = scsitgtd_http_request(buf, SCSITGTD_HTTP_MAX_REQUEST, &h2);
		CHECK(st2 == st && h2 == head);
	}
	/* A prefix answers "more" or what the whole answers: the listener decides early only
	 * where the rest cannot change the answer. Checked at a few cut points. */
	for (size_t cut = 0; cut < size; cut += 1 + size / 8) {
		st2 = scsitgtd_http_request(buf, cut, &h2);
		CHECK(st2 == 0 || st2 == st);
	}
	if (st != 0) {
		n = scsitgtd_http_response_head(out, sizeof(out), st, size);
		CHECK(n > 0 && (size_t)n < sizeof(out));
		CHECK(memcmp(out, "HTTP/1.1 ", 9) == 0);
		CHECK(n >= 4 && memcmp(out + n - 4, "\r\n\r\n", 4) == 0);
	}
	return 0;
}
