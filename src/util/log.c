/* SPDX-License-Identifier: MIT */
#include "util/log.h"

void scsitgt__log(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		  const char *subsystem, const char *fmt, ...)
{
	va_list ap;

	if (!scsitgt__log_enabled(lg, level))
		return;
	va_start(ap, fmt);
	lg->cb(lg->arg, level, subsystem, fmt, ap);
	va_end(ap);
}
