/* SPDX-License-Identifier: MIT */
/* Logging through the host's callback; nothing is ever printed by the library. */
#ifndef SCSITGT_UTIL_LOG_H
#define SCSITGT_UTIL_LOG_H

#include "libscsitgt/common.h"

struct scsitgt__logger {
	scsitgt_log_cb cb;
	void *arg;
	enum scsitgt_log_level level;
};

void scsitgt__log(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		  const char *subsystem, const char *fmt, ...) SCSITGT_PRINTF(4, 5);

#define scsitgt__log_enabled(lg, lvl) ((lg) != NULL && (lg)->cb != NULL && (lvl) <= (lg)->level)

#endif /* SCSITGT_UTIL_LOG_H */
