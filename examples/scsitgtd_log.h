/* SPDX-License-Identifier: MIT */
/*
 * How scsitgtd's log lines begin (scsitgtd_log.c): under journald a syslog priority prefix
 * ("<3>" .. "<7>", sd-daemon(3)) that journald turns into the entry's PRIORITY, otherwise a
 * timestamp. Pure functions, unit-tested in tests/unit/scsitgtd.
 */
#ifndef SCSITGTD_LOG_H
#define SCSITGTD_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/*
 * Whether @env (the value of JOURNAL_STREAM, "DEVICE:INODE" in decimal, systemd.exec(5); may be
 * NULL) names the file @dev/@ino that stderr is: then stderr is journald's stream. A value that
 * is not exactly two decimal numbers around one colon is not.
 */
bool scsitgtd_log_is_journal(const char *env, dev_t dev, ino_t ino);

/*
 * Write the prefix of a line of syslog @level (3 error .. 7 debug; others are clamped) into
 * @buf: "<LEVEL>" when @journal, else "YYYY-MM-DDTHH:MM:SS.mmmZ " (UTC, milliseconds) of @now.
 * Returns the length written (snprintf's).
 */
int scsitgtd_log_prefix(char *buf, size_t size, bool journal, int level,
			const struct timespec *now);

#endif /* SCSITGTD_LOG_H */
