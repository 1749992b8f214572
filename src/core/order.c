/* SPDX-License-Identifier: MIT */
/*
 * Task attributes (SAM-5 §8.6, §8.8 task set management; the control mode page's QUEUE
 * ALGORITHM MODIFIER 1h lets SIMPLE tasks run in any order among themselves).
 *   - SIMPLE (and untagged) starts once no older ORDERED or HEAD OF QUEUE task remains;
 *   - ORDERED starts once no older task of any kind remains, and holds back every newer
 *     SIMPLE and ORDERED task until it completes;
 *   - HEAD OF QUEUE starts at once, and holds back the newer tasks like ORDERED does
 *     (SAM-5 §8.6.4: it goes ahead of every waiting task).
 * ACA is refused at parse time: we support neither NACA nor ACA (SAM-5 §5.9).
 *
 * The task set is the LUN's, shared by the commands of every loop (issue 18,
 * docs/threading.md). Without a barrier (the common case) a task only counts itself in its
 * shard's part of the LUN (part->tasks, its loop's alone): no lock, no list, one branch on
 * the flags parse loaded. An ORDERED or HEAD OF QUEUE task arms SCSITGT__LUN_XF_BARRIER under
 * lun->xlock: from then on every new task of any loop joins the LUN's list (lun->order, under
 * xlock) in arrival order, HEAD OF QUEUE ones at its head, until no ORDERED or HEAD OF QUEUE
 * task is left on it (the SIMPLE ones still listed then leave it as they complete). The
 * tasks counted before are older than the barrier: a quiescence round asks every shard's loop
 * (its part's message) to report once its count is zero, and an ORDERED task also waits for
 * that round. A task that may not start yet is PARKED by cmd.c; when one leaves the list or
 * the round ends, the loops of the parked tasks that may now start are asked by message to
 * start them (never from inside another command's completion).
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

static bool cmd_at_head(const struct scsitgt__cmd *cmd)
{
	return cmd->task_attr == SCSITGT__TASK_HEAD_OF_QUEUE || cmd_forced_head(cmd);
}

/*
 * The barrier is armed (under xlock): newer tasks of every loop join the list from now on,
 * and every shard reports once the tasks it counted before are gone. @self (this loop's part)
 * looks at once; the others are asked by message.
 */
static void order_arm_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *self)
{
	unsigned int n = lun->engine->nshards;

	if (lun->order.tasks.next == NULL)
		scsitgt__list_init(&lun->order.tasks);
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_BARRIER, true);
	lun->order.quiesce_pending = n;
	for (unsigned int i = 0; i < n; i++)
		lun->shard_part[i].order_quiesced = false;
	scsitgt__lun_xround(lun, self);
	if (scsitgt__order_quiesce_locked(lun, self))
		self->xwait = true;
}

void scsitgt__order_enter_slow(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, cmd->shard);

	uv_mutex_lock(&lun->xlock);
	if (!(atomic_load_explicit(&lun->xflags, memory_order_relaxed) & SCSITGT__LUN_XF_BARRIER)) {
		if (!cmd_is_barrier(cmd)) {
			/* The barrier left since parse loaded the flags: the fast path. */
			uv_mutex_unlock(&lun->xlock);
			part->tasks++;
			cmd->in_task_set = SCSITGT__TS_COUNTED;
			return;
		}
		order_arm_locked(lun, part);
	}
	if (cmd_at_head(cmd))
		/* Inserted before the first task: at the head. */
		scsitgt__list_add_tail(lun->order.tasks.next, &cmd->order_node);
	else
		scsitgt__list_add_tail(&lun->order.tasks, &cmd->order_node);
	cmd->in_task_set = SCSITGT__TS_LISTED;
	cmd->order_parked = false;
	if (cmd_is_barrier(cmd))
		lun->order.barriers++;
	uv_mutex_unlock(&lun->xlock);
}

/* Whether listed @cmd may start given the tasks ahead of it (under xlock). */
static bool order_eligible(const struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	bool ordered = cmd->task_attr == SCSITGT__TASK_ORDERED;

	if (cmd_at_head(cmd))
		return true;
	/* ORDERED: the tasks counted before the barrier as well. */
	if (ordered && lun->order.quiesce_pending)
		return false;
	for (const struct scsitgt__list *p = lun->order.tasks.next; p != &cmd->order_node;
	     p = p->next) {
		const struct scsitgt__cmd *older =
			scsitgt__container_of(p, struct scsitgt__cmd, order_node);

		if (ordered || cmd_is_barrier(older))
			return false;
	}
	return true;
}

bool scsitgt__order_may_start_slow(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	bool ok;

	uv_mutex_lock(&lun->xlock);
	ok = order_eligible(cmd);
	/* Parked by the caller (cmd.c): a kick asks this loop to start it. */
	cmd->order_parked = !ok;
	uv_mutex_unlock(&lun->xlock);
	return ok;
}

/*
 * Ask the loops of the parked tasks that may start now to start them (under xlock). One
 * pass: a task may start when it is at the head, or SIMPLE with no barrier ahead, or ORDERED
 * with nothing ahead and the round over.
 */
static void order_kick_locked(struct scsitgt_lun *lun)
{
	bool barrier_ahead = false, any_ahead = false;

	for (struct scsitgt__list *p = lun->order.tasks.next; p != &lun->order.tasks; p = p->next) {
		struct scsitgt__cmd *c = scsitgt__container_of(p, struct scsitgt__cmd, order_node);
		bool ok;

		if (cmd_at_head(c))
			ok = true;
		else if (c->task_attr == SCSITGT__TASK_ORDERED)
			ok = !any_ahead && lun->order.quiesce_pending == 0;
		else
			ok = !barrier_ahead;
		if (ok && c->order_parked)
			scsitgt__lun_xpoke(lun, scsitgt__lun_part(lun, c->shard));
		any_ahead = true;
		if (cmd_is_barrier(c))
			barrier_ahead = true;
	}
}

bool scsitgt__order_quiesce_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	if (lun->order.quiesce_pending == 0 || part->order_quiesced)
		return false;
	if (part->tasks)
		return true;
	part->order_quiesced = true;
	if (--lun->order.quiesce_pending == 0)
		order_kick_locked(lun);
	return false;
}

void scsitgt__order_start_ready(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	for (;;) {
		struct scsitgt__cmd *found = NULL;

		uv_mutex_lock(&lun->xlock);
		for (struct scsitgt__list *p = lun->order.tasks.next;
		     p != NULL && p != &lun->order.tasks; p = p->next) {
			struct scsitgt__cmd *c =
				scsitgt__container_of(p, struct scsitgt__cmd, order_node);

			if (c->shard == part->shard && c->order_parked && order_eligible(c)) {
				c->order_parked = false;
				found = c;
				break;
			}
		}
		uv_mutex_unlock(&lun->xlock);
		if (found == NULL)
			return;
		/* An aborted parked command is on its way out through cmd_aborted/destroy. Its
		 * start may change the set (it may even complete): look again from the start. */
		if (found->state == SCSITGT__CMD_PARKED)
			scsitgt__cmd_unpark(found);
	}
}

void scsitgt__order_done_slow(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;

	cmd->in_task_set = SCSITGT__TS_NONE;
	uv_mutex_lock(&lun->xlock);
	scsitgt__list_remove(&cmd->order_node);
	cmd->order_parked = false;
	if (cmd_is_barrier(cmd) && --lun->order.barriers == 0) {
		/*
		 * No task holds a newer one back any more: new tasks take the fast path again
		 * (a busy LUN's list may never be empty). The SIMPLE tasks still listed are
		 * older than any later barrier, which waits for them on the list; a round
		 * still going on concerned only an ORDERED task.
		 */
		lun->order.quiesce_pending = 0;
		scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_BARRIER, false);
	}
	order_kick_locked(lun);
	uv_mutex_unlock(&lun->xlock);
}
