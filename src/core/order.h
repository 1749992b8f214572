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

/* cmd->in_task_set: not in the task set, counted in its shard's part, or on the LUN's list. */
enum {
	SCSITGT__TS_NONE = 0,
	SCSITGT__TS_COUNTED = 1,
	SCSITGT__TS_LISTED = 2,
};

/* The slow paths of the three calls below (core/order.c). */
void scsitgt__order_enter_slow(struct scsitgt__cmd *cmd);
bool scsitgt__order_may_start_slow(struct scsitgt__cmd *cmd);
void scsitgt__order_done_slow(struct scsitgt__cmd *cmd);

/*
 * A parsed command joins its LUN's task set (end of CDB parsing, in the loop callback that
 * loaded cmd->xflags). HEAD OF QUEUE goes first. Without a barrier armed, and for a SIMPLE
 * task, it only counts itself in its shard's part of the LUN (inline: the plain path).
 */
static inline void scsitgt__order_enter(struct scsitgt__cmd *cmd)
{
	if (cmd->lun == NULL || cmd->in_task_set)
		return;
	if (!(cmd->xflags & SCSITGT__LUN_XF_BARRIER) && cmd->task_attr != SCSITGT__TASK_ORDERED &&
	    cmd->task_attr != SCSITGT__TASK_HEAD_OF_QUEUE) {
		scsitgt__lun_part(cmd->lun, cmd->shard)->tasks++;
		cmd->in_task_set = SCSITGT__TS_COUNTED;
		return;
	}
	scsitgt__order_enter_slow(cmd);
}

/*
 * Whether @cmd (about to run) may start now: SIMPLE once no older ORDERED or HEAD OF QUEUE
 * command is in the task set, ORDERED once no older command is, HEAD OF QUEUE at once. One
 * that may not is PARKED by cmd.c and started later from its loop (scsitgt__cmd_unpark()).
 */
static inline bool scsitgt__order_may_start(struct scsitgt__cmd *cmd)
{
	return cmd->in_task_set != SCSITGT__TS_LISTED || scsitgt__order_may_start_slow(cmd);
}

/* @cmd left the task set (completed, aborted out of its backend, or destroyed); idempotent.
 * On @cmd's loop. */
static inline void scsitgt__order_done(struct scsitgt__cmd *cmd)
{
	if (cmd->in_task_set == SCSITGT__TS_COUNTED) {
		struct scsitgt__lun_part *part = scsitgt__lun_part(cmd->lun, cmd->shard);

		cmd->in_task_set = SCSITGT__TS_NONE;
		/* A quiescence round waits for this shard's older tasks to be gone. */
		if (--part->tasks == 0 && part->xwait)
			scsitgt__lun_xcheck(cmd->lun, part);
		return;
	}
	if (cmd->in_task_set)
		scsitgt__order_done_slow(cmd);
}

struct scsitgt__lun_part;
/*
 * The barrier's quiescence round as @part's owner sees it (core/lun.c, under lun->xlock):
 * report the part once its counted tasks are gone (the last report lets the ORDERED task
 * start). Returns whether the part must report later.
 */
bool scsitgt__order_quiesce_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *part);
/* @part's owner, xlock dropped: start its parked tasks that may run now, one at a time. */
void scsitgt__order_start_ready(struct scsitgt_lun *lun, struct scsitgt__lun_part *part);

#endif /* SCSITGT_CORE_ORDER_H */
