/* SPDX-License-Identifier: MIT */
/*
 * SPC-5 commands every logical unit supports (the spc_*.c files): their parse and exec
 * functions, which the CDB table (cdb.c) names, and the little the rest of the core asks of
 * them. The self-tests of SEND DIAGNOSTIC have their own header, spc_selftest.h.
 */
#ifndef SCSITGT_CORE_SPC_H
#define SCSITGT_CORE_SPC_H

#include <stddef.h>
#include <stdint.h>

#include "core/cmd.h"
#include "core/sense.h"

struct scsitgt_lun;

/* spc.c: TEST UNIT READY and REPORT LUNS. */
void scsitgt__spc_test_unit_ready(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_report_luns(struct scsitgt__cmd *cmd);
void scsitgt__spc_report_luns(struct scsitgt__cmd *cmd);

/* spc_inquiry.c: standard INQUIRY data and the dispatch to VPD pages. */
enum scsitgt__sense_reason scsitgt__spc_parse_inquiry(struct scsitgt__cmd *cmd);
void scsitgt__spc_inquiry(struct scsitgt__cmd *cmd);

/*
 * spc_vpd.c: build VPD page @page for @cmd's LUN into @buf (at least SCSITGT__VPD_MAX bytes).
 * Returns the page length in bytes, or 0 when the page is not supported.
 */
#define SCSITGT__VPD_MAX 1024
size_t scsitgt__vpd_build(const struct scsitgt__cmd *cmd, uint8_t page, uint8_t *buf);

/* spc_opcodes.c: REPORT SUPPORTED OPERATION CODES and TASK MANAGEMENT FUNCTIONS. */
enum scsitgt__sense_reason scsitgt__spc_parse_rsoc(struct scsitgt__cmd *cmd);
void scsitgt__spc_rsoc(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_rstmf(struct scsitgt__cmd *cmd);
void scsitgt__spc_rstmf(struct scsitgt__cmd *cmd);

/* spc_request_sense.c: REQUEST SENSE. */
enum scsitgt__sense_reason scsitgt__spc_parse_request_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_request_sense(struct scsitgt__cmd *cmd);

/* spc_mode.c: MODE SENSE (6)/(10) and MODE SELECT (6)/(10). */
enum scsitgt__sense_reason scsitgt__spc_parse_mode_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_mode_sense(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_mode_select(struct scsitgt__cmd *cmd);
void scsitgt__spc_mode_select(struct scsitgt__cmd *cmd);

/* spc_log.c: LOG SENSE and LOG SELECT (SPC-5 §6.8, §6.7). */
enum scsitgt__sense_reason scsitgt__spc_parse_log_sense(struct scsitgt__cmd *cmd);
void scsitgt__spc_log_sense(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_log_select(struct scsitgt__cmd *cmd);
void scsitgt__spc_log_select(struct scsitgt__cmd *cmd);
/* Free a LUN's log page state (lun.c, when the LUN is freed). */
void scsitgt__spc_log_free(struct scsitgt_lun *lun);

/* spc_diag.c: SEND DIAGNOSTIC and RECEIVE DIAGNOSTIC RESULTS (SPC-5 §6.42, §6.29). */
enum scsitgt__sense_reason scsitgt__spc_parse_send_diag(struct scsitgt__cmd *cmd);
void scsitgt__spc_send_diag(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__spc_parse_receive_diag(struct scsitgt__cmd *cmd);
void scsitgt__spc_receive_diag(struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_SPC_H */
