/* SPDX-License-Identifier: MIT */
/*
 * Task attributes (SAM-5 §8.6): the order in which the commands of a LUN's task set may
 * start. The task set is shared by every I_T nexus of the LUN (control mode page TST 000b).
 */
#ifndef SCSITGT_CORE_ORDER_H
#define SCSITGT_CORE_ORDER_H

#include "core/fabric.h"

/*
 * The task attribute values a fabric passes to scsitgt__cmd_setup(): those of the iSCSI
 * SCSI Command PDU's ATTR field (RFC 7143 §11.3.1), which other fabrics map to.
 */
enum {
	SCSITGT__TASK_UNTAGGED = 0, /* treated as SIMPLE */
	SCSITGT__TASK_SIMPLE = 1,
	SCSITGT__TASK_ORDERED = 2,
	SCSITGT__TASK_HEAD_OF_QUEUE = 3,
	SCSITGT__TASK_ACA = 4,
};

/* A parsed command joins its LUN's task set (end of CDB parsing). HEAD OF QUEUE goes first. */
void scsitgt__order_enter(struct scsitgt__cmd *cmd);
/*
 * Whether @cmd (about to run) may start now: SIMPLE once no older ORDERED or HEAD OF QUEUE
 * command is in the task set, ORDERED once no older command is, HEAD OF QUEUE at once. One
 * that may not is PARKED by cmd.c and started later from the loop (scsitgt__cmd_unpark()).
 */
bool scsitgt__order_may_start(struct scsitgt__cmd *cmd);
/* @cmd left the task set (completed, aborted out of its backend, or destroyed); idempotent. */
void scsitgt__order_done(struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_ORDER_H */
