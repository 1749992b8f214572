/* SPDX-License-Identifier: MIT */
/*
 * The self-tests of SEND DIAGNOSTIC and their log (SPC-5 §6.42, Self-Test Results log page
 * 10h), run by spc_selftest.c in the background of a LUN.
 */
#ifndef SCSITGT_CORE_SPC_SELFTEST_H
#define SCSITGT_CORE_SPC_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cmd.h"
#include "core/sense.h"

struct scsitgt_lun;
struct scsitgt__cdb_def;

/* SELF-TEST CODE values (SPC-5 §6.42). */
enum {
	SCSITGT__SELFTEST_BG_SHORT = 1,
	SCSITGT__SELFTEST_BG_EXTENDED = 2,
	SCSITGT__SELFTEST_ABORT = 4,
	SCSITGT__SELFTEST_FG_SHORT = 5,
	SCSITGT__SELFTEST_FG_EXTENDED = 6,
};
/* start a test (or abort the background one, code 4); completes @cmd (foreground: at the end) */
void scsitgt__selftest_start(struct scsitgt__cmd *cmd, uint8_t code);
/* a command meeting a test in progress (SCSITGT__LUN_XF_SELFTEST in cmd->xflags): NOT READY,
 * SELF-TEST IN PROGRESS, or SCSITGT__SR_OK (START STOP UNIT and FORMAT UNIT end a background
 * test) */
enum scsitgt__sense_reason scsitgt__selftest_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row);
/* the same, the caller holding lun->xlock (a start that must be atomic with it: SANITIZE) */
enum scsitgt__sense_reason scsitgt__selftest_check_locked(struct scsitgt__cmd *cmd,
							  const struct scsitgt__cdb_def *row);
/* a logical unit or target reset aborts the test in progress */
void scsitgt__selftest_reset(struct scsitgt_lun *lun);
/* whether a test runs, and its progress in 1/65536ths (REQUEST SENSE) */
bool scsitgt__selftest_progress(const struct scsitgt_lun *lun, uint16_t *progress);
/* the parameters of log page 10h from @first on after a 4-byte header left to the caller;
 * returns the page length so far (header included) */
size_t scsitgt__selftest_log_page(const struct scsitgt_lun *lun, uint8_t *buf, size_t cap,
				  uint16_t first);
/* advisory seconds an extended self-test takes (control mode page, VPD 86h) */
uint32_t scsitgt__selftest_extended_seconds(const struct scsitgt_lun *lun);
/* the self-test state of a LUN being freed (no test runs any more) */
void scsitgt__selftest_free(struct scsitgt_lun *lun);

#endif /* SCSITGT_CORE_SPC_SELFTEST_H */
