/* SPDX-License-Identifier: MIT */
/* scsitgtd's log line prefixes: see scsitgtd_log.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsitgtd_log.h"

/* One decimal number of at most 20 digits, ending at @end; NULL when it is not. */
static const char *dec(const char *s, uintmax_t *v)
{
	const char *p = s;

	*v = 0;
	while (*p >= '0' && *p <= '9' && p - s < 20) {
		uintmax_t d = (uintmax_t)(*p - '0');

		if (*v > (UINTMAX_MAX - d) / 10)
			return NULL;
		*v = *v * 10 + d;
		p++;
	}
	return p == s ? NULL : p;
}

bool scsitgtd_log_is_journal(const char *env, dev_t dev, ino_t ino)
{
	uintmax_t d, i;
	const char *p;

	if (env == NULL)
		return false;
	p = dec(env, &d);
	if (p == NULL || *p != ':')
		return false;
	p = dec(p + 1, &i);
	if (p == NULL || *p != '\0')
		return false;
	return d == (uintmax_t)dev && i == (uintmax_t)ino;
}

int scsitgtd_log_prefix(char *buf, size_t size, bool journal, int level, const struct timespec *now)
{
	struct tm tm;

	if (level < 0)
		level = 0;
	if (level > 7)
		level = 7;
	if (journal)
		return snprintf(buf, size, "<%d>", level);
	if (gmtime_r(&now->tv_sec, &tm) == NULL)
		return snprintf(buf, size, "%lld.%03ld ", (long long)now->tv_sec,
				now->tv_nsec / 1000000);
	return snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			now->tv_nsec / 1000000);
}
