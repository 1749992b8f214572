/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A formatted message and its escaped form; longer messages are cut (marked "..."). */
#define LOG_MSG_MAX 1024
#define LOG_OUT_MAX 2048

/* Length of a valid UTF-8 sequence at @p s (strict), its code point in *cp; 0 when invalid. */
static size_t utf8_seq(const uint8_t *s, size_t len, uint32_t *cp)
{
	static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
	size_t n = (s[0] & 0xe0) == 0xc0 ? 2 :
		   (s[0] & 0xf0) == 0xe0 ? 3 :
		   (s[0] & 0xf8) == 0xf0 ? 4 :
					   0;
	uint32_t c;

	if (n == 0 || n > len)
		return 0;
	c = s[0] & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3fu);
	}
	if (c < min[n - 1] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/*
 * Code points that end or rewrite a line on a terminal or in a log viewer: C1 controls (NEL,
 * CSI, ...), the line and paragraph separators, and the bidirectional overrides and isolates
 * that reorder what follows them.
 */
static bool cp_unsafe(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

size_t scsitgt__log_escape(char *dst, size_t dst_size, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *s = (const uint8_t *)src;
	size_t o = 0;

	if (dst_size == 0)
		return 0;
	for (size_t i = 0; i < len;) {
		char tmp[40];
		size_t n = 1, t = 0;
		uint32_t cp = 0;

		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') {
			tmp[t++] = (char)s[i];
		} else if (s[i] == '\\') {
			tmp[t++] = '\\';
			tmp[t++] = '\\';
		} else if (s[i] >= 0x80 && (n = utf8_seq(s + i, len - i, &cp)) != 0 &&
			   !cp_unsafe(cp)) {
			memcpy(tmp, s + i, n);
			t = n;
		} else {
			/* Control bytes, bytes of invalid UTF-8, unsafe code points: \xNN each. */
			if (n == 0)
				n = 1;
			for (size_t k = 0; k < n; k++) {
				tmp[t++] = '\\';
				tmp[t++] = 'x';
				tmp[t++] = hex[s[i + k] >> 4];
				tmp[t++] = hex[s[i + k] & 15];
			}
		}
		if (o + t + 1 > dst_size) {
			/* Cut at a character boundary and say so. */
			size_t written = o;

			while (o > 0 && o + 4 > dst_size)
				o--;
			while (o > 0 && o < written && ((uint8_t)dst[o] & 0xc0) == 0x80)
				o--;
			if (o + 4 <= dst_size) {
				memcpy(dst + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(dst + o, tmp, t);
		o += t;
		i += n;
	}
	dst[o] = '\0';
	return o;
}

static void log_emit(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		     const char *subsystem, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lg->cb(lg->arg, level, subsystem, fmt, ap);
	va_end(ap);
}

void scsitgt__log(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		  const char *subsystem, const char *fmt, ...)
{
	char msg[LOG_MSG_MAX], out[LOG_OUT_MAX];
	va_list ap;
	int n;

	if (!scsitgt__log_enabled(lg, level))
		return;
	/*
	 * Messages carry strings from the wire (names, aliases, keys): the host gets the message
	 * with every control character, invalid UTF-8 byte and line-breaking code point escaped,
	 * so that no peer can end a log line and forge the next one.
	 */
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg)) {
		n = (int)sizeof(msg) - 1;
		memcpy(msg + n - 3, "...", 3);
	}
	scsitgt__log_escape(out, sizeof(out), msg, (size_t)n);
	log_emit(lg, level, subsystem, "%s", out);
}

int scsitgt__log_refused(const struct scsitgt__logger *lg, const char *subsystem, int rc,
			 const char *fmt, ...)
{
	char msg[LOG_MSG_MAX];
	va_list ap;

	if (!scsitgt__log_enabled(lg, SCSITGT_LOG_ERROR))
		return rc;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	scsitgt__log(lg, SCSITGT_LOG_ERROR, subsystem, "%s", msg);
	return rc;
}
