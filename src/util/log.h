/* SPDX-License-Identifier: MIT */
/* Logging through the host's callback; nothing is ever printed by the library. */
#ifndef SCSITGT_UTIL_LOG_H
#define SCSITGT_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libscsitgt/common.h"

struct scsitgt__logger {
	scsitgt_log_cb cb;
	void *arg;
	enum scsitgt_log_level level;
};

void scsitgt__log(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		  const char *subsystem, const char *fmt, ...) SCSITGT_PRINTF(4, 5);

/**
 * A public call refuses its arguments: log one line at SCSITGT_LOG_ERROR that names the
 * argument (or option field), its value and the rule it breaks, e.g.
 * "scsitgt_lun_create: LUN 20000: id above 16383", and return @p rc (docs: scsitgt(3),
 * "Conventions"). The host builds options from its own configuration and must learn which
 * one it got wrong without reading the header (userx D10).
 *
 * @param lg        The logger (NULL or one without a callback: nothing is logged).
 * @param subsystem As for scsitgt__log().
 * @param rc        What the call returns (-EINVAL as a rule).
 * @return @p rc.
 */
int scsitgt__log_refused(const struct scsitgt__logger *lg, const char *subsystem, int rc,
			 const char *fmt, ...) SCSITGT_PRINTF(4, 5);

/**
 * Escape @p len bytes of text for a log line: printable ASCII and valid UTF-8 stay, a
 * backslash doubles, every other byte (controls, DEL, invalid UTF-8, C1 controls, line and
 * paragraph separators, bidirectional overrides) becomes "\xNN". Pure, for the fuzz target.
 *
 * @param dst      Receives the text, always NUL-terminated; cut with "..." when too small.
 * @param dst_size Size of @p dst (> 0 to write anything).
 * @param src      The text (need not be NUL-terminated).
 * @param len      Its length.
 * @return Length written to @p dst, without the NUL.
 */
size_t scsitgt__log_escape(char *dst, size_t dst_size, const char *src, size_t len);

#define scsitgt__log_enabled(lg, lvl) ((lg) != NULL && (lg)->cb != NULL && (lvl) <= (lg)->level)

#endif /* SCSITGT_UTIL_LOG_H */
