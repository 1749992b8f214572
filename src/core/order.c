/* SPDX-License-Identifier: MIT */
/*
 * Task attributes (SAM-5 §8.6, §8.8 task set management with QUEUE ALGORITHM MODIFIER 0).
 *
 * Each LUN keeps its task set as a list in arrival order, HEAD OF QUEUE commands at its head
 * (SAM-5 §8.6.4: they go ahead of every waiting task). A command enters the set when its CDB
 * is accepted and leaves it when it completes, or when an aborted command leaves its backend.
 *   - SIMPLE (and untagged) starts once no older ORDERED or HEAD OF QUEUE task remains;
 *   - ORDERED starts once no older task of any kind remains, and holds back every newer
 *     SIMPLE and ORDERED task until it completes;
 *   - HEAD OF QUEUE starts at once, and holds back the newer tasks like ORDERED does.
 * ACA is refused at parse time: we support neither NACA nor ACA (SAM-5 §5.9).
 *
 * order.barriers counts the ORDERED and HEAD OF QUEUE tasks in the set, so that with none (the
 * common case) a command starts without looking at the list. Held-back commands start from a
 * deferred pass on the loop, never from inside another command's completion.
 */
#include "core/cdb.h"
#include "core/order.h"

static bool cmd_is_barrier(const struct scsitgt__cmd *cmd)
{
	return cmd->task_attr == SCSITGT__TASK_ORDERED ||
	       cmd->task_attr == SCSITGT__TASK_HEAD_OF_QUEUE;
}

/*
 * A command the standard puts at the head whatever attribute it was sent with: SANITIZE (SBC-4
 * §5.28.1 "as if it has a HEAD OF QUEUE task attribute"). It starts at once, but holds no newer
 * task back: while it runs every media command is refused NOT READY before it joins the task
 * set, and INQUIRY, REPORT LUNS and REQUEST SENSE must go on (SBC-4 §4.33).
 */
static bool cmd_forced_head(const struct scsitgt__cmd *cmd)
{
	return cmd->def && (cmd->def->flags & SCSITGT__CDB_F_HEAD_OF_QUEUE);
}

static void task_set_init(struct scsitgt_lun *lun)
{
	if (lun->order.tasks.next == NULL)
		scsitgt__list_init(&lun->order.tasks);
}

void scsitgt__order_enter(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;

	/* Commands of worker shards stay out of the task set until ordering works across
	 * shards (issue 18): the list is home's. Only in-process fabrics put sessions there. */
	if (lun == NULL || cmd->in_task_set || cmd->shard->index != 0)
		return;
	task_set_init(lun);
	if (cmd->task_attr == SCSITGT__TASK_HEAD_OF_QUEUE || cmd_forced_head(cmd))
		/* Inserted before the first task: at the head. */
		scsitgt__list_add_tail(lun->order.tasks.next, &cmd->order_node);
	else
		scsitgt__list_add_tail(&lun->order.tasks, &cmd->order_node);
	cmd->in_task_set = true;
	if (cmd_is_barrier(cmd))
		lun->order.barriers++;
}

/* Whether @cmd may start given the tasks ahead of it in the set. */
static bool order_eligible(const struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;

	if (cmd->task_attr == SCSITGT__TASK_HEAD_OF_QUEUE || cmd_forced_head(cmd))
		return true;
	for (const struct scsitgt__list *p = lun->order.tasks.next; p != &cmd->order_node;
	     p = p->next) {
		const struct scsitgt__cmd *older =
			scsitgt__container_of(p, struct scsitgt__cmd, order_node);

		if (cmd->task_attr == SCSITGT__TASK_ORDERED || cmd_is_barrier(older))
			return false;
	}
	return true;
}

bool scsitgt__order_may_start(struct scsitgt__cmd *cmd)
{
	return !cmd->in_task_set || cmd->lun->order.barriers == 0 || order_eligible(cmd);
}

/* Start the first parked command that may run now; false when there is none. */
static bool order_start_one(struct scsitgt_lun *lun)
{
	for (struct scsitgt__list *p = lun->order.tasks.next; p != &lun->order.tasks; p = p->next) {
		struct scsitgt__cmd *c = scsitgt__container_of(p, struct scsitgt__cmd, order_node);

		/* An aborted parked command is on its way out through cmd_aborted/destroy. */
		if (c->state != SCSITGT__CMD_PARKED || !order_eligible(c))
			continue;
		/* Its completion may change the set: the caller scans again from the start. */
		scsitgt__cmd_unpark(c);
		return true;
	}
	return false;
}

static void order_kick(struct scsitgt__deferred *d)
{
	struct scsitgt_lun *lun = scsitgt__container_of(d, struct scsitgt_lun, order.kick);

	lun->order.kick_pending = false;
	while (order_start_one(lun))
		;
	/* The pass held the LUN (see order_schedule). */
	scsitgt__lun_inflight_drop(lun, scsitgt__shard_home(lun->engine));
}

static void order_schedule(struct scsitgt_lun *lun)
{
	if (lun->order.kick_pending)
		return;
	lun->order.kick_pending = true;
	/* Hold the LUN until the pass ran: the commands it would start may all be gone by then
	 * and a LUN destroy must not free it under the pending pass. */
	scsitgt__lun_hold(lun, scsitgt__shard_home(lun->engine));
	lun->order.kick.fn = order_kick;
	scsitgt__engine_defer(lun->tgt->engine, &lun->order.kick);
}

void scsitgt__order_done(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	bool barrier;

	if (!cmd->in_task_set)
		return;
	cmd->in_task_set = false;
	scsitgt__list_remove(&cmd->order_node);
	barrier = cmd_is_barrier(cmd);
	if (barrier)
		lun->order.barriers--;
	/* Only a barrier can hold a command back, so with none left and none removed there is
	 * nobody to start. */
	if (barrier || lun->order.barriers)
		order_schedule(lun);
}
