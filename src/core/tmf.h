/* SPDX-License-Identifier: MIT */
/* Task management internals shared with the reservation code (core/tmf.c). */
#ifndef SCSITGT_CORE_TMF_H
#define SCSITGT_CORE_TMF_H

#include "core/fabric.h"

/* Default of scsitgt_engine_set_tmf_timeout(). */
#define SCSITGT__TMF_TIMEOUT_MS_DEFAULT 30000u

/*
 * Abort, without a response, every live command of @sess on LUN @lun_id except @except
 * (PREEMPT AND ABORT, SPC-5 §5.13.11.5). Returns how many were aborted.
 */
unsigned int scsitgt__tmf_abort_nexus_lun(struct scsitgt__session *sess, uint64_t lun_id,
					  const struct scsitgt__cmd *except);

/*
 * An aborted command left its backend (cmd.c calls this from cmd_finish for a command with
 * cmd->tmf_wait set, before handing it to the fabric): the TMF that aborted it may answer.
 */
void scsitgt__tmf_cmd_released(struct scsitgt__cmd *cmd);

/* The TMF @op waits for @cmd, just aborted inside its backend (scsitgt__cmd_abort()). */
void scsitgt__tmf_wait_for(struct scsitgt__tmf_op *op, struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_TMF_H */
