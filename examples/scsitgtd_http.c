/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's HTTP request head parser and answer heads (scsitgtd_http.h). Grammar: RFC 9112
 * §2.2 (message format, leading empty lines ignored, bare LF accepted as a line end), §3
 * (request line), §5 (field lines: no whitespace before the colon, no obsolete line folding);
 * tokens RFC 9110 §5.6.2.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scsitgtd_http.h"

/* tchar (RFC 9110 §5.6.2). */
static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte of a request-target: visible ASCII (RFC 3986 characters; we do not decode). */
static bool is_target_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/*
 * The line starting at @p (of @n bytes): its length without the terminator in *@linelen and
 * the length with it as the return value; 0 when no terminator yet; -1 for a CR not followed
 * by LF.
 */
static long line_end(const char *p, size_t n, size_t *linelen)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			*linelen = i;
			return (long)i + 1;
		}
		if (p[i] == '\r') {
			if (i + 1 == n)
				return 0;
			if (p[i + 1] != '\n')
				return -1;
			*linelen = i;
			return (long)i + 2;
		}
	}
	return 0;
}

/* method SP request-target SP HTTP-version: a status as scsitgtd_http_request() returns. */
static int request_line(const char *p, size_t n, bool *head)
{
	size_t m = 0, t0, t, v;
	bool get, is_head, ours;

	while (m < n && is_tchar((unsigned char)p[m]))
		m++;
	if (m == 0 || m == n || p[m] != ' ')
		return 400;
	t0 = t = m + 1;
	while (t < n && is_target_char((unsigned char)p[t]))
		t++;
	if (t == t0 || t == n || p[t] != ' ' || p[t0] != '/')
		return 400;
	v = t + 1;
	/* HTTP-version = "HTTP/" DIGIT "." DIGIT (case-sensitive, §2.3). */
	if (n - v != 8 || memcmp(p + v, "HTTP/", 5) != 0 || p[v + 5] < '0' || p[v + 5] > '9' ||
	    p[v + 6] != '.' || p[v + 7] < '0' || p[v + 7] > '9')
		return 400;
	if (p[v + 5] != '1')
		return 505;
	get = m == 3 && memcmp(p, "GET", 3) == 0;
	is_head = m == 4 && memcmp(p, "HEAD", 4) == 0;
	ours = t - t0 >= strlen(SCSITGTD_HTTP_PATH) &&
	       memcmp(p + t0, SCSITGTD_HTTP_PATH, strlen(SCSITGTD_HTTP_PATH)) == 0 &&
	       (t - t0 == strlen(SCSITGTD_HTTP_PATH) || p[t0 + strlen(SCSITGTD_HTTP_PATH)] == '?');
	if (!ours)
		return 404;
	if (!get && !is_head)
		return 405;
	*head = is_head;
	return 200;
}

/* field-name ":" OWS field-value OWS (§5.1): the value is not interpreted. */
static bool field_line(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ':')
		return false;
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

int scsitgtd_http_request(const char *buf, size_t len, bool *head)
{
	size_t off = 0, ll;
	long e;
	bool is_head = false;
	int status;

	*head = false;
	if (len > SCSITGTD_HTTP_MAX_REQUEST)
		len = SCSITGTD_HTTP_MAX_REQUEST;
	/* At most a few empty lines before the request line (§2.2 "at least one"). */
	for (int empties = 0;; empties++) {
		e = line_end(buf + off, len - off, &ll);
		if (e < 0)
			return 400;
		if (e == 0)
			goto more;
		if (ll != 0)
			break;
		if (empties == 4)
			return 400;
		off += (size_t)e;
	}
	status = request_line(buf + off, ll, &is_head);
	if (status >= 400 && status != 404 && status != 405)
		return status;
	off += (size_t)e;
	/* Field lines up to the empty line; a malformed one is 400 whatever the path. */
	for (;;) {
		e = line_end(buf + off, len - off, &ll);
		if (e < 0)
			return 400;
		if (e == 0)
			goto more;
		if (ll == 0) {
			/* HEAD only for a whole, good request: a bad field line after a good
			 * request line answers 400 with a body. */
			*head = status == 200 && is_head;
			return status;
		}
		if (buf[off] == ' ' || buf[off] == '\t' || !field_line(buf + off, ll))
			return 400; /* obs-fold, or not a field line */
		off += (size_t)e;
	}
more:
	return len >= SCSITGTD_HTTP_MAX_REQUEST ? 431 : 0;
}

const char *scsitgtd_http_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

int scsitgtd_http_response_head(char *buf, size_t size, int status, size_t content_length)
{
	return snprintf(buf, size,
			"HTTP/1.1 %d %s\r\n"
			"Content-Type: %s\r\n"
			"%s"
			"Content-Length: %zu\r\n"
			"Connection: close\r\n"
			"\r\n",
			status, scsitgtd_http_reason(status),
			status == 200 ? "text/plain; version=0.0.4; charset=utf-8" :
					"text/plain; charset=utf-8",
			status == 405 ? "Allow: GET, HEAD\r\n" : "", content_length);
}
