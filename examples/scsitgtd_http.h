/* SPDX-License-Identifier: MIT */
/*
 * The little HTTP/1.1 of scsitgtd's metrics listener (scsitgtd_metrics.c): what to answer to a
 * request head, and the head of the answer. Pure functions of their input (unit test
 * tests/unit/scsitgtd/test_http.c, fuzz target tests/fuzz/fuzz_http.c).
 *
 * Only GET and HEAD of /metrics are served; every answer ends the connection ("Connection:
 * close"), so that requests are never pipelined and bodies are never read.
 */
#ifndef SCSITGTD_HTTP_H
#define SCSITGTD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* Longest request head (request line and header fields) a client may send. */
#define SCSITGTD_HTTP_MAX_REQUEST 8192u

/* The path served (origin-form, RFC 9112 §3.2.1; a query is ignored). */
#define SCSITGTD_HTTP_PATH "/metrics"

/*
 * What to answer to the @len bytes received so far: 0 when the head is not complete yet (more
 * must be read), else an HTTP status: 200 (GET or HEAD of the path; *@head says which), 400
 * (malformed request line or header field), 404 (another path), 405 (another method on the
 * path), 431 (no end of the head within SCSITGTD_HTTP_MAX_REQUEST bytes), 505 (an HTTP version
 * other than 1.x). A malformed request line is answered as soon as it is complete.
 */
int scsitgtd_http_request(const char *buf, size_t len, bool *head);

/*
 * The head of the answer with @status and a body of @content_length bytes (Content-Type the
 * Prometheus text format 0.0.4 for 200, plain text otherwise; Allow for 405; Connection:
 * close). Returns its length (snprintf's: >= @size means truncated).
 */
int scsitgtd_http_response_head(char *buf, size_t size, int status, size_t content_length);

/* The reason phrase of @status ("Not Found"), "Error" for one not listed above. */
const char *scsitgtd_http_reason(int status);

#endif /* SCSITGTD_HTTP_H */
