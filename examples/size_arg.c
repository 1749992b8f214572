/* SPDX-License-Identifier: MIT */
#include "size_arg.h"

#include <errno.h>
#include <stddef.h>

static unsigned int suffix_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	case 't':
	case 'T':
		return 40;
	default:
		return 0;
	}
}

int size_arg_parse(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift;
	const char *p = s;

	/* Digits only: strtoull would take a sign ("-1" wraps) and leading spaces. */
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	shift = suffix_shift(*p);
	if (shift) {
		p++;
		if (*p == 'i' || *p == 'I')
			p++;
		if (*p == 'b' || *p == 'B')
			p++;
	}
	if (*p != '\0')
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}
